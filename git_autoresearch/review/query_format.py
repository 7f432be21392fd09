"""How ``log`` writes the rows of a query (:mod:`git_autoresearch.review.query`): the choice of
columns and the formats (``table``, ``markdown``, ``json``, ``jsonl``, ``csv``, ``tsv``, or a
``{field}`` template as ``git log --format`` takes one). Returns text; no click, no git."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from ..ledger import STATUSES, Ledger, Run, finite, shown_record, status_as_read
from ..ledger.jsontext import ObjectText, nulled, plain_numbers
from ..runtime.errors import UsageError
from .query import Row, check_field, scalar, shown, text, value
from .report import audits, decision_text, delta_pct, fmt, one_line, touched

FORMATS = ("table", "markdown", "json", "jsonl", "csv", "tsv")
# The columns of a table or Markdown table when --columns is not given.
DEFAULT_COLUMNS = ("run", "status", "metric", "delta_pct", "decision", "commit", "description")
# The columns of CSV when --columns is not given (report.csv_text's, then the secondary metrics).
CSV_COLUMNS = ("run", "segment", "status", "metric", "delta_pct", "confidence", "commit",
               "duration_s", "description")
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


def parse_columns(spec: str) -> list[str]:
    """``--columns`` (comma-separated field names, :func:`review.query.value`) as a list; raises
    :class:`UsageError` for an empty list or a bad name."""
    names = [check_field(part, "--columns") for part in spec.split(",")]
    if not names:
        raise UsageError("--columns: no column named")
    return names


def parse_template(template: str) -> list[str | tuple[str]]:
    """A ``--format`` template as its pieces: literal text, and ``(field,)`` for each
    ``{field}`` placeholder; ``{{`` and ``}}`` are literal braces. Raises :class:`UsageError`
    for an unmatched brace or a bad field name."""
    pieces: list[str | tuple[str]] = []
    at = 0
    for found in _PLACEHOLDER.finditer(template):
        literal = template[at:found.start()]
        if "{" in literal or "}" in literal:
            break
        pieces.append(literal)
        if found.group(1) is None:
            pieces.append(found.group(0)[0])
        else:
            pieces.append((check_field(found.group(1), f"--format {shown(template)!r}"),))
        at = found.end()
    rest = template[at:]
    if "{" in rest or "}" in rest:
        raise UsageError(f"--format {shown(template)!r}: an unmatched brace (write {{{{ or }}}} "
                         "for a literal one)")
    pieces.append(rest)
    return [p for p in pieces if p != ""]


def is_template(spec: str) -> bool:
    """Whether a ``--format`` value is a template rather than a format's name."""
    return spec not in FORMATS and ("{" in spec or "}" in spec)


def _row_text(row: Row, columns: list[str] | None, all_sessions: bool) -> str:
    """One row of ``--json`` as text: :func:`run_text` for a whole record, or just
    ``columns`` (numbers as the ledger writes them: 9, not 9.0), compact."""
    if columns is not None:
        return _dumps({name: _as_written(value(row, name)) for name in columns})
    base = row.segment.baseline
    found = row.audited.get(row.run.number)
    return run_text(row.run, row.segment.index, base.metric if base is not None else None,
                    found[-1] if found else None, row.source,
                    row.session if all_sessions else None)


# The fields log --json adds to a record (beside segment, and session across sessions).
_ADDED = frozenset({"delta_pct", "touched", "audit", "source"})
# The text of each ``touched`` value (report.touched) a run can have.
_TOUCHED_TEXT: dict[tuple[str, ...] | None, str] = {
    None: "null", (): "[]", ("readonly",): '["readonly"]', ("outside",): '["outside"]',
    ("readonly", "outside"): '["readonly","outside"]'}


def default_columns(rows: list[Row], all_sessions: bool) -> list[str]:
    """The columns of a table or Markdown table when ``--columns`` is not given:
    :data:`DEFAULT_COLUMNS` (``session`` first across sessions), with ``touched`` after the
    decision when a run of ``rows`` changed a readonly file or one outside the scope."""
    names = (["session"] if all_sessions else []) + list(DEFAULT_COLUMNS)
    if any(touched(row.run.data) for row in rows):
        names.insert(names.index("decision") + 1, "touched")
    return names


@cache
def _source_tail(source: str) -> str:
    """The end of a run's text in ``log --json`` when it has no audit, once per source."""
    return ',"audit":null,"source":' + _string_text(source) + "}"


@cache
def _string_text(value: str) -> str:
    """``value`` as JSON text, written once for every run that names it (a source)."""
    return _dumps(value)


def run_text(run: Run, index: int, base_metric: float | None, audit: dict[str, Any] | None,
             source: str, session: str | None = None, *, plain: bool = False) -> str:
    """A run as ``log --json`` writes it: the record with ``segment`` (its index), ``delta_pct``
    against ``base_metric`` (:func:`review.report.delta_pct`; None for a crash), ``touched``
    (:func:`review.report.touched`), ``audit`` and then ``source``, ``session`` first when given, as
    one compact JSON object; a missing or unknown
    ``status`` shows as read (``keep``), the one written in ``recorded_status``.

    A record read from the ledger (:attr:`Run.text`) is written as the ledger holds it, byte
    for byte (pi-autoresearch's and this tool's text: ``JSON.stringify``'s), the added fields
    put after its last, so a line of the output greps as the ledger line does and 100,000
    runs are not encoded again. A record that must be changed to be shown (an unknown or
    missing status, a ``segment`` other than ``index``, a field named as one that is added, a
    number whose text could read as infinity), that is not UTF-8, or that has no text, is
    written anew by json's encoder, compact, non-finite numbers as null. ``plain``: the
    ledger is known to hold no such number (:attr:`Ledger.plain_numbers`)."""
    data = run.data
    if session is None or "session" not in data:
        end = _source_tail(source) if audit is None else _audit_tail(audit, source)
        text = _as_it_stands(run, index, base_metric, end, plain)
        if text is not None:
            return text if session is None else '{"session":' + _dumps(session) + "," + text[1:]
    status = data.get("status")
    out = shown_record(data)  # (an ObjectText's whole record; a crash's metric null)
    out["segment"] = index
    status_as_read(out)  # (read as keep, as pi reads it; what was written beside)
    out["delta_pct"] = None if base_metric is None or status == "crash" else \
        delta_pct(finite(out.get("metric")), base_metric)
    out["touched"] = touched(data)
    out["audit"] = audit
    out["source"] = source
    if session is not None:
        out = {"session": session, **out}
    return _dumps(out)


def _as_it_stands(run: Run, index: int, base_metric: float | None, end: str,
                  plain: bool) -> str | None:
    """:func:`run_text` of a run whose line can be written as it stands (its ``text``), the
    fields added after its last (``segment`` when it lacks it, ``delta_pct``, ``touched``, then
    ``end``: the audit, the source and the closing brace); None when it must be written
    anew."""
    data = run.data
    fields = data.at_hand if type(data) is ObjectText else data
    raw = run.text
    status = fields.get("status")
    # A number whose text may read as infinity (an exponent of three digits or more, or 309
    # digits in a row) is never written as it stands: a strict reader, Go's or Rust's, would
    # refuse the document; the record is written anew, with null for it.
    if raw is None or status not in STATUSES \
            or not _ADDED.isdisjoint(fields) \
            or not raw.startswith(b"{") or not raw.endswith(b"}") \
            or not (plain or plain_numbers(raw)):
        return None
    if status == "crash" and (raw := _crash_text(raw, fields)) is None:
        return None
    if "segment" in fields:
        segment = fields["segment"]
        if type(segment) is not int or segment != index:
            return None
        head = ""
    else:
        head = f',"segment":{index}'
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    metric: Any = fields.get("metric")
    change = (metric - base_metric) / abs(base_metric) * 100 \
        if status != "crash" and base_metric and type(metric) in (int, float) \
        else math.inf  # (report.delta_pct, inlined: a metric read is finite)
    kinds = touched(fields)
    said = _TOUCHED_TEXT[None if kinds is None else tuple(kinds)]
    if math.isfinite(change):
        return f'{text[:-1]}{head},"delta_pct":{round(change, 2)!r},"touched":{said}{end}'
    return f'{text[:-1]}{head},"delta_pct":null,"touched":{said}{end}'


def _crash_text(raw: bytes, fields: Mapping[str, Any]) -> bytes | None:
    """The line of a crash as :func:`ledger.shown_record` shows it: its recorded ``0`` as
    ``null`` (or the line as it is when its ``metric`` is null or missing); None when the
    text cannot be changed so with certainty (a ``metric`` written otherwise than ``0``, or
    a ``"metric":`` key in the line besides the record's own), and the run is written anew."""
    if "metric" not in fields or fields["metric"] is None:
        return raw
    if type(fields["metric"]) is not int or fields["metric"] != 0:
        return None
    keys = _METRIC_KEY.findall(raw)
    found = _METRIC_ZERO.search(raw) if len(keys) == 1 else None
    return None if found is None else raw[:found.start(1)] + b"null" + raw[found.end(1):]


# The key "metric" in a line's text (a string's own quotes are escaped, so never inside one),
# and the key with the value 0.
_METRIC_KEY = re.compile(rb'"metric"\s*:')
_METRIC_ZERO = re.compile(rb'"metric"\s*:\s*(0)\s*[,}]')


def _audit_tail(audit: dict[str, Any], source: str) -> str:
    """The end of a run's text in ``log --json`` with its latest audit."""
    return ',"audit":' + _dumps(audit) + ',"source":' + _string_text(source) + "}"


def _log_head() -> str:
    """The opening of ``log --json``'s document, up to its list of runs."""
    from ..runtime.schemas import schema_id

    return '{"schema":' + _dumps(schema_id("log")) + ',"runs":['


def json_text(rows: list[Row], columns: list[str] | None, all_sessions: bool) -> str:
    """The rows as ``log --json``'s document: ``{"schema": ..., "runs": [`` on the first line,
    each row as one compact object on its own line (:func:`run_text`; a comma after each but
    the last), ``]}`` on the last; one line when there is none. So a run can be picked out
    with ``grep`` and the document still reads as one."""
    if not rows:
        return _log_head() + "]}\n"
    return _log_head() + "\n" + ",\n".join(_row_text(r, columns, all_sessions)
                                          for r in rows) + "\n]}\n"


def jsonl_text(rows: list[Row], columns: list[str] | None, all_sessions: bool) -> str:
    """The rows as JSON Lines: one compact object a line (:func:`run_text`)."""
    return "".join(_row_text(r, columns, all_sessions) + "\n" for r in rows)


def ledger_json_chunks(book: Ledger, source: str, *, lines: bool,
                       size: int = 1000) -> Iterator[str]:
    """Every run of ``book`` (read from ``source``) as ``log --json`` writes it
    (:func:`json_text`; ``lines``: as ``--format jsonl``, :func:`jsonl_text`) when no filter,
    no sort and no ``--columns`` is asked for: byte for byte the same text, in pieces of
    ``size`` runs to be written one after the other, made in one loop over the records as
    read (no :class:`review.query.Row` per run). Each record read from the ledger is written as it
    is (:func:`run_text`), and a piece is freed once written, so 100,000 runs take no more
    memory than their records."""
    audited = audits(book)
    plain = book.plain_numbers
    end = _source_tail(source)
    texts: list[str] = []
    add = texts.append
    started = False  # (whether a piece of the array was given)
    for segment in book.segments:
        base = segment.baseline
        base_metric = base.metric if base is not None else None
        index = segment.index
        for run in segment.runs:
            found = audited.get(run.number) if audited else None
            text = _as_it_stands(run, index, base_metric, end, plain) if found is None \
                else None
            add(text if text is not None else
                run_text(run, index, base_metric, found[-1] if found else None, source))
            if len(texts) == size:
                yield _piece(texts, started, lines)
                texts.clear()
                started = True
    if texts:
        yield _piece(texts, started, lines)
        started = True
    if not lines:
        yield "\n]}\n" if started else _log_head() + "]}\n"


def _piece(texts: list[str], started: bool, lines: bool) -> str:
    """Runs' texts as a piece of :func:`ledger_json_chunks`' text, ``started``: after one."""
    if lines:
        return "".join(text + "\n" for text in texts)
    return (_log_head() + "\n" if not started else ",\n") + ",\n".join(texts)


def _as_written(found: Any) -> Any:
    """A float with no fraction as the integer the ledger's JSON text has."""
    if isinstance(found, float) and math.isfinite(found) and found.is_integer() \
            and abs(found) < 2 ** 53:
        return int(found)
    return found


# One encoder for every row (json.dumps with options makes one per call); compact, as the
# ledger's lines are; no indent, so that its C implementation writes; no check for cycles,
# which decoded JSON cannot hold (it costs a dictionary entry per object written).
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, check_circular=False,
                            separators=(",", ":"))
_ASCII_ENCODER = json.JSONEncoder(allow_nan=False, check_circular=False, separators=(",", ":"))


def _dumps(data: Any) -> str:
    """``data`` as compact JSON text: a non-finite number of a hostile ledger as null, and
    text holding a lone surrogate (a name that is not UTF-8, as the ledger keeps it) with
    ``\\u`` escapes, as the ledger writes it (:func:`ledger.dumps`), since UTF-8 cannot hold
    it."""
    try:
        text = _ENCODER.encode(data)
    except ValueError:
        text = _ENCODER.encode(nulled(data))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _ASCII_ENCODER.encode(nulled(data))
    return text


def cell(row: Row, name: str) -> Any:
    """Field ``name`` of ``row`` for a text format: a decision as its verdict, None for
    none."""
    return scalar(name, value(row, name))


def _shown_cell(row: Row, name: str) -> str:
    """A table or Markdown cell: ``-`` for none, a float to 6 significant digits, the run
    table's words for a decision."""
    if name == "decision":
        return decision_text(row.run)
    if name == "touched":
        return scalar(name, value(row, name)) or "-"
    found = value(row, name)
    if found is None:
        return "-"
    if isinstance(found, float):
        return fmt(found) if math.isfinite(found) else "-"
    return one_line(text(found)) or "-"


def _numeric(rows: list[Row], name: str) -> bool:
    found = [cell(r, name) for r in rows]
    known = [v for v in found if v is not None]
    return bool(known) and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                               for v in known)


def table_text(rows: list[Row], columns: list[str], width: int = 100) -> str:
    """The rows as an aligned table for people: a header of the column names, numbers right
    aligned, the last column cut to the terminal's ``width`` (at least 20 characters) and
    the others to 60."""
    grid = [[_shown_cell(r, name) for name in columns] for r in rows]
    right = [_numeric(rows, name) for name in columns]
    widths = []
    for i, name in enumerate(columns):
        grid_width = max([len(line[i]) for line in grid] + [len(name)])
        widths.append(min(grid_width, 60) if i < len(columns) - 1 else grid_width)
    used = sum(widths[:-1]) + 2 * (len(columns) - 1)
    room = max(20, width - used)

    def line(cells: list[str]) -> str:
        parts = []
        for i, value_text in enumerate(cells):
            limit = widths[i] if i < len(cells) - 1 else room
            if len(value_text) > limit:
                value_text = value_text[:limit - 1] + "…"
            if i == len(cells) - 1 and not right[i]:
                parts.append(value_text)
            else:
                parts.append(value_text.rjust(widths[i]) if right[i]
                             else value_text.ljust(widths[i]))
        return "  ".join(parts).rstrip()

    return "".join(line(cells) + "\n" for cells in [list(columns), *grid])


def markdown_text(rows: list[Row], columns: list[str]) -> str:
    """The rows as a GitHub Markdown table (``|`` in a cell escaped, numbers right
    aligned), to paste into a review."""
    right = [_numeric(rows, name) for name in columns]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("\\", "\\\\").replace("|", "\\|")
                                 for c in cells) + " |\n"

    rule = "|" + "|".join("---:" if r else "---" for r in right) + "|\n"
    return line(list(columns)) + rule + "".join(
        line([_shown_cell(r, name) for name in columns]) for r in rows)


def delimited_text(rows: list[Row], columns: list[str], delimiter: str) -> str:
    """The rows as CSV (RFC 4180 quoting) or, with a tab ``delimiter``, TSV (tabs and
    newlines inside a value folded to spaces): a header of the column names, then one line a
    run, an empty field for none."""
    import csv
    import io

    if delimiter == "\t":
        def field_text(found: Any) -> str:
            return one_line(text(found))
        return "".join("\t".join(line) + "\n" for line in [
            [one_line(c) for c in columns],
            *([field_text(cell(r, name)) for name in columns] for r in rows)])
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow([text(cell(r, name)) for name in columns])
    return out.getvalue()


def csv_columns(rows: list[Row], all_sessions: bool) -> list[str]:
    """The default CSV columns: :data:`CSV_COLUMNS` (``session`` first across sessions), then
    each secondary metric a run has (``metrics.NAME``), in the order first seen."""
    names: list[str] = []
    for r in rows:
        listed = r.run.data.get("metrics")
        if isinstance(listed, dict):
            names.extend(f"metrics.{k}" for k in listed
                         if f"metrics.{k}" not in names and "." not in k)
    return (["session"] if all_sessions else []) + list(CSV_COLUMNS) + names


def template_text(rows: list[Row], pieces: list[str | tuple[str]]) -> str:
    """Each row through the template (:func:`parse_template`), a newline after each: a
    placeholder's value as :func:`review.query.text` writes it on one line, empty for none."""
    out = []
    for r in rows:
        out.append("".join(p if isinstance(p, str) else one_line(text(cell(r, p[0])))
                           for p in pieces) + "\n")
    return "".join(out)
