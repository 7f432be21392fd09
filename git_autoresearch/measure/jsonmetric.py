"""Metrics read from a JSON document: ``metric_json = "FILE:PATH"`` and the ``metrics_json``
table (name -> ``[FILE:]PATH``), without ``jq``.

A spec is ``FILE:PATH`` (a file the command wrote, relative to the top of the work tree) or a
bare ``PATH`` (the command's standard output; in ``metrics_json``, the file of ``metric_json``
when it names one). A path is keys and indexes: ``results[0].mean`` (hyperfine
``--export-json``, sharkdp/hyperfine src/export/json.rs), ``benchmarks[0].stats.median``
(pytest-benchmark ``--benchmark-json``), ``["key.with.dots"]``, ``[-1]`` (the last element), and
``[name=test_sort]`` (the first element of a list whose ``name`` is ``test_sort``). A document
that is not one JSON value is read as JSON lines (``go test -json``): the last line where the
path leads to a value wins.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

STEP_RE = re.compile(
    r"""\.?(?P<key>[A-Za-z_µ][\w-]*)"""          # .key (or key first)
    r"""|\[(?P<index>-?\d+)\]"""                  # [0], [-1]
    r"""|\["(?P<quoted>[^"]*)"\]"""               # ["any key"]
    r"""|\[(?P<field>[\w.-]+)=(?P<match>[^\]]*)\]""")  # [name=value]

Step = tuple[str, Any]  # ("key", str) | ("index", int) | ("where", (field, value))


class JsonMetricError(Exception):
    """A JSON metric could not be read; ``str()`` is the run's crash reason."""


def parse_path(path: str) -> list[Step]:
    """The steps of a path (``results[0].mean`` -> key, index, key); raises ValueError naming
    the first character that is not a step."""
    steps: list[Step] = []
    at = 0
    while at < len(path):
        m = STEP_RE.match(path, at)
        if not m or (m.group("key") is not None and at > 0 and path[at] != "."):
            raise ValueError(f"path '{path}' is not keys and [indexes] at character {at + 1}")
        if m.group("key") is not None:
            steps.append(("key", m.group("key")))
        elif m.group("index") is not None:
            steps.append(("index", int(m.group("index"))))
        elif m.group("quoted") is not None:
            steps.append(("key", m.group("quoted")))
        else:
            steps.append(("where", (m.group("field"), m.group("match"))))
        at = m.end()
    if not steps:
        raise ValueError("path is empty")
    return steps


def split_spec(spec: str, default_file: str | None = None) -> tuple[str | None, str]:
    """``FILE:PATH`` -> ``(FILE, PATH)``; a bare ``PATH`` -> ``(default_file, PATH)`` (None:
    standard output). ``-:PATH`` names standard output explicitly."""
    if ":" in spec:
        file, path = spec.split(":", 1)
        return (None if file == "-" else file), path
    return default_file, spec


def check_spec(spec: object) -> str | None:
    """Why a spec is invalid, or None."""
    if not isinstance(spec, str) or not spec.strip():
        return "must be a non-empty string 'FILE:PATH' or 'PATH'"
    file, path = split_spec(spec)
    if file is not None and (not file.strip() or file.startswith("/") or ".." in
                             file.split("/")):
        return f"'{spec}': the file must be a path inside the repository"
    try:
        parse_path(path)
    except ValueError as exc:
        return f"'{spec}': {exc}"
    return None


def _step(node: Any, step: Step) -> tuple[bool, Any]:
    kind, arg = step
    if kind == "key":
        return (True, node[arg]) if isinstance(node, dict) and arg in node else (False, None)
    if kind == "index":
        if isinstance(node, list) and -len(node) <= arg < len(node):
            return True, node[arg]
        return False, None
    field, wanted = arg
    for item in node if isinstance(node, list) else []:
        if isinstance(item, dict) and field in item and _text(item[field]) == wanted:
            return True, item
    return False, None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def resolve(document: Any, path: str) -> tuple[bool, Any]:
    """Follow ``path`` into a parsed document: ``(True, value)`` or ``(False, None)`` when a
    step leads nowhere."""
    node = document
    for step in parse_path(path):
        found, node = _step(node, step)
        if not found:
            return False, None
    return True, node


def documents(text: str) -> list[Any]:
    """The JSON values of a text: one when it parses whole, else one per line that parses
    (JSON lines), else the text from its first line that opens an object or a list (a document
    printed after other output); empty when nothing parses."""
    try:
        return [json.loads(text)]
    except ValueError:
        pass
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("{", "[")):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    opening = re.search(r"^[{\[]", text, re.M)
    if not out and opening:
        try:
            out.append(json.loads(text[opening.start():]))
        except ValueError:
            pass
    return out


def read_value(docs: list[Any], path: str, where: str) -> float:
    """The number at ``path`` in the last document where it resolves. ``where`` names the source
    in errors (``bench.json``, ``the command's output``). Raises :class:`JsonMetricError`:
    nothing parsed, the path not found, or a value that is no finite number."""
    if not docs:
        raise JsonMetricError(f"{where} holds no JSON")
    for doc in reversed(docs):
        found, value = resolve(doc, path)
        if found:
            break
    else:
        raise JsonMetricError(f"JSON path '{path}' leads nowhere in {where}")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise JsonMetricError(f"JSON path '{path}' in {where} is the string "
                                  f"'{value[:40]}', not a number") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        kind = {dict: "an object", list: "a list", bool: "a boolean", type(None): "null"}.get(
            type(value), type(value).__name__)
        raise JsonMetricError(f"JSON path '{path}' in {where} is {kind}, not a number")
    if not math.isfinite(value):
        raise JsonMetricError(f"JSON path '{path}' in {where} is not a finite number")
    return float(value)
