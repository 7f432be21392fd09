"""Bounds on what a caller passes (descriptions, asi, ideas), so that every record the tool writes
can be read back by the tool: under the ledger reader's line limit and without deep nesting."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .. import ledger as ledger_mod
from ..ledger.jsontext import reject_constant
from ..ledger.records import RunRecord
from .errors import UsageError

# Bounds on what a caller passes, so that every record the tool writes stays well under the
# ledger reader's line limit (ledger.MAX_LINE_BYTES, 1 MiB) and every JSON it writes can be read
# back without deep recursion.
MAX_DESCRIPTION_BYTES = 384 * 1024  # a run's description
MAX_TEXT_BYTES = 64 * 1024  # an idea, one --asi key or value
MAX_ASI_BYTES = 256 * 1024  # the whole asi object, as JSON
MAX_JSON_DEPTH = 64  # nesting of --asi-json
# What a run record may take; the rest of the line's budget is for fields added later.
RECORD_BUDGET = ledger_mod.MAX_LINE_BYTES - 64 * 1024
SHOWN_VIOLATIONS = 1000
VIOLATIONS_BUDGET = 128 * 1024  # bytes of paths each list of violations may take in a record


def check_text(what: str, text: str, limit: int = MAX_TEXT_BYTES) -> str:
    """``text`` if it can be stored (valid UTF-8, no NUL, at most ``limit`` bytes as a JSON
    string in the ledger, escapes counted); else :class:`UsageError` naming ``what`` and the
    limit."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{what} is not valid UTF-8") from None
    if "\0" in text:
        raise UsageError(f"{what} contains a NUL character")
    size = len(json.dumps(text, ensure_ascii=False).encode("utf-8")) - 2  # without quotes
    if size > limit:
        raise UsageError(f"{what} takes {size} bytes in the ledger; at most {limit} bytes are "
                         "accepted")
    return text


def json_depth(text: str) -> int:
    """How deeply the arrays and objects of JSON ``text`` nest (0 for a scalar), counted
    without parsing, so that a deep document is refused before a parser recurses into it."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def parse_asi(pairs: list[str], raw_json: str | None) -> dict[str, Any]:
    """``asi`` from ``KEY=VALUE`` pairs and/or a JSON object (finite numbers only, nested at
    most :data:`MAX_JSON_DEPTH` deep, at most :data:`MAX_ASI_BYTES` in all); raises
    :class:`UsageError` naming the option and the limit."""
    asi: dict[str, Any] = {}
    if raw_json:
        check_text("--asi-json", raw_json, MAX_ASI_BYTES)
        if json_depth(raw_json) > MAX_JSON_DEPTH:
            raise UsageError(f"--asi-json nests deeper than {MAX_JSON_DEPTH} levels")
        try:
            value = json.loads(raw_json, parse_constant=reject_constant)
            json.dumps(value, allow_nan=False)
        except (ValueError, RecursionError):
            raise UsageError("--asi-json is not valid JSON with finite numbers") from None
        if not isinstance(value, dict):
            raise UsageError("--asi-json must be a JSON object")
        asi.update(value)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--asi '{pair}' is not KEY=VALUE")
        asi[check_text("--asi", key.strip())] = check_text("--asi", value)
    size = len(ledger_mod.dumps(asi).encode("utf-8"))
    if size > MAX_ASI_BYTES:
        raise UsageError(f"--asi/--asi-json come to {size} bytes of JSON; at most "
                         f"{MAX_ASI_BYTES} bytes are accepted")
    return asi


def fit_record(record: RunRecord) -> None:
    """Make run ``record`` fit the ledger's line limit before it is written: a list of scope or
    readonly violations longer than :data:`SHOWN_VIOLATIONS` paths or
    :data:`VIOLATIONS_BUDGET` bytes is cut (its length kept in ``scope_violations_total`` or
    ``readonly_violations_total``; the paths stay in the scope or attempt ref). Raises
    :class:`UsageError` naming the largest field when it still does not fit."""
    if _size(record) <= RECORD_BUDGET:
        return
    scope = record.get("scope_violations") or []
    kept = _shown(scope)
    if len(kept) < len(scope):
        record["scope_violations_total"] = len(scope)
        record["scope_violations"] = kept
    readonly = record.get("readonly_violations") or []
    kept = _shown(readonly)
    if len(kept) < len(readonly):
        record["readonly_violations_total"] = len(readonly)
        record["readonly_violations"] = kept
    size = _size(record)
    if size <= RECORD_BUDGET:
        return
    fields: Mapping[str, object] = record
    largest = max(fields, key=lambda k: len(ledger_mod.dumps({k: fields[k]})))
    raise UsageError(f"run {record['run']}'s record would be {size} bytes, more than the "
                     f"{RECORD_BUDGET} a ledger line may hold; its largest field is {largest!r}; "
                     "nothing was recorded")


def _size(record: Mapping[str, object]) -> int:
    return len(ledger_mod.dumps(record).encode("utf-8"))


def _shown(paths: list[str]) -> list[str]:
    """The first of ``paths`` that fit :data:`SHOWN_VIOLATIONS` and :data:`VIOLATIONS_BUDGET`."""
    kept: list[str] = []
    used = 2
    for path in paths:
        used += len(ledger_mod.dumps({"": path}).encode("utf-8")) - 6
        if used > VIOLATIONS_BUDGET or len(kept) >= SHOWN_VIOLATIONS:
            break
        kept.append(path)
    return kept
