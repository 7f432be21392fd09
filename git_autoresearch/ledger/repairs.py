"""Repairs of a ledger file, by resume and doctor: lines lost at its end or its header lost
(taken back from the state ref's copy), malformed lines set aside in ``.auto/log.rejected.jsonl``,
and rebuilt run lines put back in order. Each rewrite is whole or not at all; nothing is
dropped. The format itself is :mod:`git_autoresearch.ledger`'s.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..runtime.atomic import append_whole, write_atomic
from . import Malformed, dumps


def insert_runs(path: Path, additions: Mapping[int, bytes]) -> None:
    """Put each added run line (run number -> the line, without its newline) into the ledger
    at ``path`` before the first run line with a greater number (after them all when none
    is), rewriting the file atomically; blank lines are dropped."""
    out: list[bytes] = []
    pending = sorted(additions.items())
    for raw in path.read_bytes().split(b"\n"):
        if not raw.strip():
            continue
        try:
            number = json.loads(raw).get("run")
        except (ValueError, AttributeError):
            number = None
        while pending and isinstance(number, int) and pending[0][0] < number:
            out.append(pending.pop(0)[1])
        out.append(raw)
    out.extend(line for _, line in pending)
    write_atomic(path, b"\n".join(out) + b"\n")


def replace_commits(path: Path, moved: Mapping[int, tuple[str, str]]) -> int:
    """Rewrite the ``commit`` field of run lines of the ledger at ``path``: ``moved`` maps a
    run number to (the commit its line records, the commit to record instead); a line that
    records another commit is left alone. A changed line keeps every other byte (re-encoded
    only when its ``commit`` is not written compactly) and gains ``commit_before_rewrite``
    (the old value) as its last field, so nothing is lost. The file is rewritten whole or not
    at all (:func:`write_atomic`; WriteFailed, exit 3). Returns how many lines changed. The
    caller tells the state mirror first (:func:`git_autoresearch.history.state_ref.forget`)
    and mirrors afterwards."""
    out: list[bytes] = []
    changed = 0
    for raw in path.read_bytes().split(b"\n"):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            obj = None
        number = obj.get("run") if isinstance(obj, dict) else None
        if isinstance(number, int) and number in moved and obj is not None \
                and obj.get("commit") == moved[number][0]:
            old, new = moved[number]
            field = f'"commit":{json.dumps(old)}'.encode()
            if field in raw and raw.rstrip().endswith(b"}"):
                raw = (raw.rstrip()[:-1].replace(field, f'"commit":{json.dumps(new)}'.encode(), 1)
                       + f',"commit_before_rewrite":{json.dumps(old)}}}'.encode())
            else:
                raw = dumps({**obj, "commit": new, "commit_before_rewrite": old}).encode()
            changed += 1
        out.append(raw)
    if changed:
        write_atomic(path, b"\n".join(out) + b"\n")
    return changed


REJECTED_NAME = "log.rejected.jsonl"


def is_our_header(line: bytes) -> bool:
    """Whether one ledger line is a configuration header this tool wrote (it has a
    ``config_hash``; an imported pi-autoresearch header has none)."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and obj.get("type") == "config" and "config_hash" in obj


def has_our_header(data: bytes) -> bool:
    """Whether the ledger bytes ``data`` hold a configuration header of ours
    (:func:`is_our_header`)."""
    return any(is_our_header(line) for line in data.split(b"\n") if b'"config"' in line)


def lost_lines(current: bytes, saved: bytes) -> bool:
    """Whether the ledger bytes ``current`` are a strict prefix of the ``saved`` copy (lines were
    lost), its last line possibly torn."""
    whole = current[:current.rfind(b"\n") + 1]
    return len(current) < len(saved) and saved.startswith(whole)


def with_lost_entries(current: bytes, saved: bytes) -> tuple[bytes, int] | None:
    """The ledger ``current`` with the lines it lost from between others of the saved copy
    ``saved`` (the state ref's) put back at their places: run records whose run it lacks, and
    lines that are no run (an incumbent's sample, a hook's line, an event); with how many.
    None when it lost none, or when its lines are not the saved ones in their order (lines
    moved). Lines are compared as a reader reads them (surrounding white space, a carriage
    return, aside). A line edited in place (the same record: a run's number, or the same
    type, time and run of another line) stays as it is now; blank lines are dropped; the
    lines after the saved ones (recorded since) stay at the end."""
    now = [line for line in current.split(b"\n") if line.strip()]
    old = [line for line in saved.split(b"\n") if line.strip()]
    now_keys = [line.strip() for line in now]
    ahead = Counter(now_keys)  # the lines of now from ``at`` on
    known = {line.strip() for line in old}
    runs_now: set[int] | None = None  # (read at the first need)
    out: list[bytes] = []
    at = restored = 0
    for line in old:
        key = line.strip()
        here = now_keys[at] if at < len(now) else None
        if here == key or here is not None and here not in known and _same_record(key, here):
            out.append(now[at])  # (as it is, or edited in place)
            ahead[now_keys[at]] -= 1
            at += 1
            continue
        if ahead[key] > 0:
            return None  # (its lines moved, or others went in between: not a loss alone)
        number = _run_number(key)
        if number is not None:
            if runs_now is None:
                runs_now = run_numbers(current)
            if number in runs_now:
                return None  # (the run is elsewhere now)
        out.append(line)
        restored += 1
    if not restored or not known.isdisjoint(now_keys[at:]):
        return None
    return b"".join(line + b"\n" for line in [*out, *now[at:]]), restored


def run_numbers(data: bytes) -> set[int]:
    """The run numbers of the ledger bytes ``data``'s run records."""
    return {n for n in map(_run_number, data.split(b"\n")) if n is not None}


def _record(line: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _run_number(line: bytes) -> int | None:
    """The run number of one ledger line that is a run record (an integer ``run``); None for
    any other line."""
    if b'"run"' not in line:
        return None
    obj = _record(line)
    number = obj.get("run") if obj is not None else None
    return number if type(number) is int else None


def _same_record(old: bytes, new: bytes) -> bool:
    """Whether the ledger line ``new`` is ``old`` edited: the same run's record, or a line of
    the same type, time, run and stage (an incumbent's sample after the same run, say)."""
    a, b = _record(old), _record(new)
    if a is None or b is None:
        return False
    if type(a.get("run")) is int and "type" not in a:
        return a.get("run") == b.get("run") and "type" not in b
    identity = ("type", "timestamp", "run", "after_run", "stage", "segment")
    return all(a.get(k) == b.get(k) for k in identity)


def with_lost_header(current: bytes, saved: bytes) -> bytes | None:
    """The ledger ``current`` with the configuration header lines it lost put back from the
    saved copy ``saved`` (the state ref's), or None when it lost none (it has a header of ours,
    or the saved ledger has none to give). The lines ``saved`` holds before the first line of
    ``current`` are put back when there are any (the header and whatever else went with it),
    else the saved ledger's first header."""
    if has_our_header(current):
        return None
    saved_lines = [line for line in saved.split(b"\n") if line.strip()]
    headers = [line for line in saved_lines if is_our_header(line)]
    if not headers:
        return None
    first = next((line for line in current.split(b"\n") if line.strip()), None)
    if first is not None and first in saved_lines and saved_lines.index(first) > 0:
        before = saved_lines[:saved_lines.index(first)]
        if any(is_our_header(line) for line in before):
            return b"".join(line + b"\n" for line in before) + current
    return headers[0] + b"\n" + current


def set_aside(path: Path, malformed: list[Malformed]) -> list[str]:
    """Move the ``malformed`` lines (:attr:`Ledger.malformed`, read from ``path``) to
    :data:`REJECTED_NAME` beside the ledger, one JSON object each (``line``, ``reason``,
    ``text``), and rewrite the ledger whole without them; every readable line stays, in order.
    Returns one note per line set aside (none when there is nothing to do). Raises
    :class:`~git_autoresearch.runtime.atomic.WriteFailed` when a file cannot be written. The caller
    must tell the state mirror that the shorter ledger is on purpose."""
    if not malformed:
        return []
    bad = {m.line: m for m in malformed}
    keep, rejected, notes = [], [], []
    for number, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        if number in bad:
            rejected.append(json.dumps({"line": number, "reason": bad[number].reason,
                                        "text": raw.decode("utf-8", "replace")},
                                       ensure_ascii=False) + "\n")
            notes.append(f"ledger line {number} set aside ({bad[number].reason}) in "
                         f".auto/{REJECTED_NAME}")
        elif raw.strip():
            keep.append(raw + b"\n")
    append_whole(path.with_name(REJECTED_NAME), "".join(rejected).encode("utf-8"))
    write_atomic(path, b"".join(keep))
    return notes
