"""Ledger queries (``log``'s filters and sort): the fields of a run, ``--where`` expressions
read by a small hand parser (never ``eval``), ``--grep``, ``--run`` ranges, dates as epoch
seconds, and sorting. Works on :class:`Row` values from any source (a ledger, a state ref, the
``Result:`` trailers); no click, no git (dates are read by git in the command layer). The
output formats are :mod:`git_autoresearch.review.query_format`'s."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..ledger import STATUSES, Ledger, LineTest, Run, Segment, finite
from ..ledger.jsontext import number_text
from ..runtime.errors import UsageError
from .report import delta_pct, one_line, touched

# A field that a run does not have (distinct from a JSON null, which reads the same in tests).
MISSING: Any = None

OPERATORS = ("<=", ">=", "!=", "!~", "==", "=", "<", ">", "~")
ORDERING = ("<", "<=", ">", ">=")
# Where a field ends and its comparison begins: the first operator character.
_SPLIT = re.compile(r"[<>=!~]")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
_FIELD = re.compile(r"[^\s<>=!~.,{}]+(\.[^\s<>=!~.,{}]+)*\Z")
_RANGE = re.compile(r"(?a)\s*(\d{0,9})\s*\.\.\s*(\d{0,9})\s*\Z|\s*(\d{1,9})\s*\Z")


@dataclass(frozen=True)
class Row:
    """One run as a query sees it: the ``run``, its ``segment``, the ``session`` id, the
    ``source`` it was read from (``ledger``, ``state ref`` or ``trailers``) and the audit lines
    of its ledger by run number (:func:`review.report.audits`)."""

    run: Run
    segment: Segment
    session: str
    source: str
    audited: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


def shown(text: str) -> str:
    """``text`` safe to quote in a one-line message (control characters folded, undecodable
    bytes escaped)."""
    return one_line(text.encode("utf-8", "backslashreplace").decode("utf-8")) or text.strip()


def check_field(name: str, option: str) -> str:
    """``name`` stripped, when it names a field: a record field (``status``), a secondary
    metric (``mem_mb``) or a dotted path (``asi.hypothesis``, ``decision.verdict``); raises
    :class:`UsageError` naming ``option`` and the bad name otherwise."""
    name = name.strip()
    if not name:
        raise UsageError(f"{option}: an empty field name")
    if not _FIELD.match(name):
        raise UsageError(f"{option}: bad field name {shown(name)!r} (a name such as status, "
                         "mem_mb or asi.hypothesis)")
    return name


def value(row: Row, name: str) -> Any:
    """Field ``name`` of ``row``, None when the run has none: ``run``, ``status`` (as read:
    :attr:`Run.status`), ``metric`` (None for a crash), ``description``, ``segment``,
    ``session``, ``source``, ``delta_pct`` (percent against the segment's baseline),
    ``touched`` (:func:`review.report.touched`: what it changed that it must not); else a
    field of the record (``commit``, ``timestamp``, ``worker``, ``decision``...), a secondary
    metric by its name (``mem_mb``, or ``metrics.mem_mb``), a dotted path into the record
    (``asi.hypothesis``, ``decision.verdict``), or the primary metric by its own name."""
    run = row.run
    derived = _DERIVED.get(name)
    if derived is not None:
        return derived(row)
    data = run.data
    if name in data:
        return data[name]
    metrics = data.get("metrics")
    if isinstance(metrics, dict) and name in metrics:
        return metrics[name]
    if "." in name:
        found: Any = data
        for part in name.split("."):
            if not isinstance(found, Mapping) or part not in found:  # (the record: a Mapping)
                found = MISSING
                break
            found = found[part]
        if found is not MISSING:
            return found
    if name == (row.segment.header or {}).get("metricName"):
        return run.metric
    return MISSING


def _delta(row: Row) -> float | None:
    base = row.segment.baseline
    return delta_pct(row.run.metric, base.metric if base else None)


_DERIVED: dict[str, Callable[[Row], Any]] = {
    "run": lambda row: row.run.number,
    "status": lambda row: row.run.status,
    "metric": lambda row: row.run.metric,
    "description": lambda row: row.run.description,
    "segment": lambda row: row.segment.index,
    "session": lambda row: row.session,
    "source": lambda row: row.source,
    "delta_pct": _delta,
    "touched": lambda row: touched(row.run.data),
}


def scalar(name: str, found: Any) -> Any:
    """What a comparison or a sort sees of ``found``: a decision's ``verdict`` for the
    ``decision`` field (a record holds the whole decision object), the kinds of ``touched``
    joined by commas (``readonly,outside``; ``""`` for none), else ``found``."""
    if name == "decision" and isinstance(found, dict):
        return found.get("verdict")
    if name == "touched" and isinstance(found, list):
        return ",".join(str(kind) for kind in found)
    return found


def text(found: Any) -> str:
    """``found`` as text: a string as it is, a number as the ledger writes it
    (:func:`ledger.jsontext.number_text`), ``true``/``false``, compact JSON for an object or a list,
    ``""`` for None."""
    if found is None:
        return ""
    if isinstance(found, str):
        return found
    if isinstance(found, bool):
        return "true" if found else "false"
    if isinstance(found, (int, float)):
        return number_text(found) if math.isfinite(found) else ""
    try:
        return json.dumps(found, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(found)


def _number(found: Any) -> float | None:
    return None if isinstance(found, bool) else finite(found)


@dataclass(frozen=True)
class Condition:
    """One ``--where`` expression: ``field``, ``op`` (one of :data:`OPERATORS`, ``==`` read
    as ``=``), the value's ``text``, that value as a ``number`` (None when it is none), and the
    compiled ``pattern`` of ``~`` and ``!~``."""

    field: str
    op: str
    text: str
    number: float | None
    pattern: re.Pattern[str] | None

    def __call__(self, row: Row) -> bool:
        """Whether ``row`` satisfies the condition. A run without the field satisfies only
        ``!=`` and ``!~``; numbers compare as numbers, anything else as text (:func:`text`)."""
        found = scalar(self.field, value(row, self.field))
        if found is None:
            return self.op in ("!=", "!~")
        if self.pattern is not None:
            return (self.pattern.search(text(found)) is not None) == (self.op == "~")
        have = _number(found)
        if self.number is not None and have is not None:
            want = self.number
            return {"=": have == want, "!=": have != want, "<": have < want,
                    "<=": have <= want, ">": have > want, ">=": have >= want}[self.op]
        if self.op in ORDERING:
            return False
        return (text(found) == self.text) == (self.op == "=")


def parse_where(expression: str) -> Condition:
    """An ``--where`` expression, ``FIELD OP VALUE``: OP one of ``< <= = == != >= > ~ !~``
    (``~``: VALUE is a regular expression, Python's syntax, searched in the field's text), the
    VALUE optionally in single or double quotes. ``<``, ``<=``, ``>``, ``>=`` take a number.
    Raises :class:`UsageError` naming the bad part."""
    said = f"--where {shown(expression)!r}"
    found = _SPLIT.search(expression)
    if found is None:
        raise UsageError(f"{said}: no comparison (one of {' '.join(OPERATORS)})")
    start = found.start()
    op = next((o for o in OPERATORS if expression.startswith(o, start)), None)
    if op is None:
        raise UsageError(f"{said}: {shown(expression[start:start + 2])!r} is no comparison "
                         f"(one of {' '.join(OPERATORS)})")
    name = expression[:start]
    if not name.strip():
        raise UsageError(f"{said}: no field before {op}")
    name = check_field(name, said)
    wanted = expression[start + len(op):].strip()
    if len(wanted) >= 2 and wanted[0] == wanted[-1] and wanted[0] in "'\"":
        wanted = wanted[1:-1]
    elif wanted[:1] in ("'", '"'):
        raise UsageError(f"{said}: the quote {wanted[0]} before {shown(wanted[1:21])!r} is "
                         "never closed")
    op = "=" if op == "==" else op
    if name == "status" and op in ("=", "!=") and wanted not in STATUSES:
        raise UsageError(f"{said}: {shown(wanted)!r} is no status (one of "
                         f"{', '.join(STATUSES)})")
    number = float(wanted) if _NUMBER.match(wanted) else None
    huge = number is not None and not math.isfinite(number)
    if huge:
        number = None
    if op in ORDERING and number is None:
        raise UsageError(f"{said}: {op} compares numbers, and {shown(wanted)!r} is "
                         + ("too large for one (no metric is)" if huge else "not a number"))
    pattern = None
    if op in ("~", "!~"):
        pattern = compile_pattern(wanted, said)
    return Condition(name, op, wanted, number, pattern)


def compile_pattern(source: str, said: str, *, ignore_case: bool = False) -> re.Pattern[str]:
    """``source`` compiled as a regular expression (Python's syntax); :class:`UsageError`
    naming ``said`` and the pattern when it is not one."""
    try:
        return re.compile(source, re.IGNORECASE if ignore_case else 0)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        raise UsageError(f"{said}: bad regular expression {shown(source)!r}: "
                         f"{shown(str(exc))}") from None


def parse_range(spec: str) -> tuple[int | None, int | None]:
    """``--run`` as (first, last), both included, None for an open end: ``N``, ``A..B``,
    ``A..`` or ``..B``. Raises :class:`UsageError` otherwise."""
    found = _RANGE.match(spec)
    if found is None or (found.group(3) is None and not found.group(1) and not found.group(2)):
        raise UsageError(f"--run {shown(spec)!r}: a run number or a range (N, A..B, A.. or "
                         "..B)")
    if found.group(3) is not None:
        return int(found.group(3)), int(found.group(3))
    first = int(found.group(1)) if found.group(1) else None
    last = int(found.group(2)) if found.group(2) else None
    if first is not None and last is not None and first > last:
        raise UsageError(f"--run {shown(spec)!r}: the range is empty ({first} is after {last})")
    return first, last


def grep_texts(run: Run) -> list[str]:
    """What ``--grep`` searches in a run: its description and each ``asi`` value's text."""
    texts = [run.description]
    asi = run.data.get("asi")
    if isinstance(asi, dict):
        texts += [text(v) for v in asi.values()]
    return texts


@dataclass
class Query:
    """What ``log`` selects and in what order. Filters (all must hold): ``status``,
    ``segment``, ``runs`` (first, last: both included, None open), ``since``/``until`` (epoch
    seconds against the run's ``timestamp``; a run without one is left out), ``grep``
    (patterns, any of them in :func:`grep_texts`; ``invert_grep`` the runs none matches),
    ``where`` (:class:`Condition`), ``worker``, ``decision`` (the verdict), ``touched``
    (``readonly``, ``outside`` or ``any``: the runs that changed a readonly file, a file
    outside the scope, or either, :func:`review.report.touched`). Then ``last`` (the last N in run
    order), ``sort`` (:func:`parse_sort`) and ``max_count`` (the first N after sorting)."""

    status: str | None = None
    segment: int | None = None
    runs: tuple[int | None, int | None] = (None, None)
    since: int | None = None
    until: int | None = None
    grep: list[re.Pattern[str]] = field(default_factory=list)
    invert_grep: bool = False
    where: list[Condition] = field(default_factory=list)
    worker: str | None = None
    decision: str | None = None
    touched: str | None = None
    last: int | None = None
    sort: list[tuple[str, bool]] = field(default_factory=list)
    max_count: int | None = None

    def matches(self, row: Row) -> bool:
        """Whether ``row`` passes every filter."""
        run = row.run
        if self.status is not None and run.status != self.status:
            return False
        if self.segment is not None and row.segment.index != self.segment:
            return False
        first, last = self.runs
        if (first is not None and run.number < first) or (last is not None and
                                                          run.number > last):
            return False
        if self.since is not None or self.until is not None:
            stamp = _number(run.data.get("timestamp"))
            if stamp is None or (self.since is not None and stamp < self.since * 1000) or \
                    (self.until is not None and stamp > self.until * 1000):
                return False
        if self.worker is not None and run.data.get("worker") != self.worker:
            return False
        if self.decision is not None:
            found = run.data.get("decision")
            if not isinstance(found, dict) or found.get("verdict") != self.decision:
                return False
        if self.touched is not None:
            found = touched(run.data)
            if not found or (self.touched != "any" and self.touched not in found):
                return False
        if self.grep:
            texts = grep_texts(run)
            hit = any(p.search(t) for p in self.grep for t in texts)
            if hit == self.invert_grep:
                return False
        return all(condition(row) for condition in self.where)

    def selects_all(self) -> bool:
        """Whether the query keeps every run in run order (no filter, no sort, no count)."""
        return self.status is None and self.segment is None and self.runs == (None, None) \
            and self.since is None and self.until is None and not self.grep \
            and not self.invert_grep and not self.where and self.worker is None \
            and self.decision is None and self.touched is None and self.last is None \
            and not self.sort and self.max_count is None

    def select(self, rows: Iterable[Row]) -> list[Row]:
        """The rows that pass, in one pass over ``rows`` (keeping only those), then ``last``,
        the sort and ``max_count``."""
        kept = [row for row in rows if self.matches(row)]
        if self.last is not None:
            kept = kept[-self.last:] if self.last > 0 else []
        kept = sort_rows(kept, self.sort)
        if self.max_count is not None:
            kept = kept[:self.max_count]
        return kept


def parse_sort(specs: Iterable[str]) -> list[tuple[str, bool]]:
    """``--sort`` values (each a comma-separated list) as (field, descending) keys, the first
    the most significant: ``-FIELD`` descending, ``best`` the primary metric best first in its
    segment's direction (``-best`` worst first), each way of measuring ranked apart
    (:func:`sort_best`). Raises :class:`UsageError` for a bad name."""
    keys = []
    for spec in specs:
        for part in spec.split(","):
            part = part.strip()
            descending = part.startswith("-")
            name = check_field(part[1:] if part[:1] in "+-" else part, "--sort")
            keys.append((name, descending))
    return keys


def _has(row: Row, name: str) -> bool:
    """Whether ``row`` has field ``name`` at all (its value may be null), as :func:`value`
    looks it up."""
    data = row.run.data
    metrics = data.get("metrics")
    if name in _DERIVED or name == "best" or name in data or (
            isinstance(metrics, dict) and name in metrics) or \
            name == (row.segment.header or {}).get("metricName"):
        return True
    found: Any = data
    for part in name.split("."):
        if not isinstance(found, Mapping) or part not in found:
            return False
        found = found[part]
    return True


def absent(rows: Sequence[Row], names: Iterable[str]) -> list[str]:
    """The ``names`` that no row of ``rows`` has (a misspelt field, most often); none when
    ``rows`` is empty."""
    return [name for name in dict.fromkeys(names)
            if rows and not any(_has(row, name) for row in rows)]


def sort_key(row: Row, name: str) -> tuple[int, Any]:
    """The key of ``row`` for field ``name`` (not ``best``: :func:`sort_best`): numbers before
    text; None (no value) for a run without the field, which always sorts last."""
    found = scalar(name, value(row, name))
    have = _number(found)
    if have is not None:
        return (0, have)
    if found is None or (isinstance(found, float) and not math.isfinite(found)):
        return (0, None)
    return (1, text(found))


# A way of measuring, as :func:`measurements_of` tells them apart: a segment's measurement
# (Segment.measurement), or, when it is not known, its session and number.
Way = str | tuple[str, int]


def _way(session: str, segment: Segment) -> Way:
    found = segment.measurement
    return found if found is not None else (session, segment.index)


def measurements_of(rows: Iterable[Row]) -> list[tuple[Way, list[tuple[str, Segment]]]]:
    """The ways the runs of ``rows`` were measured (the same command, metric and direction:
    :attr:`Segment.measurement`, in one session or several), each with the (session, segment)
    pairs of it that the rows hold, in the order ``--sort best`` ranks them: by the first
    session that holds each (as the rows come), and within one session the way of its newest
    segment first."""
    sessions: dict[str, int] = {}
    found: dict[Way, dict[tuple[str, int], Segment]] = {}
    for row in rows:
        sessions.setdefault(row.session, len(sessions))
        found.setdefault(_way(row.session, row.segment), {})[
            (row.session, row.segment.index)] = row.segment
    ordered = sorted(found.items(), key=lambda item: min(
        (sessions[session], -index) for session, index in item[1]))
    return [(way, [(session, pairs[(session, index)]) for session, index in
                   sorted(pairs, key=lambda pair: (sessions[pair[0]], pair[1]))])
            for way, pairs in ordered]


def sort_best(rows: list[Row], descending: bool = False) -> list[Row]:
    """``rows`` ranked by their primary metric, best first in their segment's direction
    (``descending``: worst first), each way of measuring apart (:func:`measurements_of`, in
    its order): a metric is compared only with those measured the same way. Stable; runs
    without a metric (crashes) last."""
    ranks = {way: i for i, (way, _) in enumerate(measurements_of(rows))}
    present: list[tuple[tuple[int, float], Row]] = []
    absent: list[Row] = []
    for row in rows:
        metric = row.run.metric
        if metric is None:
            absent.append(row)
            continue
        better_first = metric if row.segment.direction == "lower" else -metric
        present.append(((ranks[_way(row.session, row.segment)],
                         -better_first if descending else better_first), row))
    present.sort(key=lambda pair: pair[0])
    return [row for _, row in present] + absent


def sort_rows(rows: list[Row], keys: list[tuple[str, bool]]) -> list[Row]:
    """``rows`` sorted by ``keys`` (stable: equal rows stay in run order); runs without a
    key's field last, whichever its direction; ``best`` by :func:`sort_best`."""
    for name, descending in reversed(keys):
        if name == "best":
            rows = sort_best(rows, descending)
            continue
        keyed = [(sort_key(row, name), row) for row in rows]
        present = [(k, row) for k, row in keyed if k[1] is not None]
        absent = [row for k, row in keyed if k[1] is None]
        present.sort(key=lambda pair: pair[0], reverse=descending)
        rows = [row for _, row in present] + absent
    return rows


def rows_of(book: Ledger, session: str, source: str) -> Iterator[Row]:
    """Every run of ``book`` as a :class:`Row` of session ``session`` read from ``source``,
    oldest first, one at a time."""
    from .report import audits

    audited = audits(book)
    for segment in book.segments:
        for run in segment.runs:
            yield Row(run, segment, session, source, audited)


# --- the quick test of a ledger line (ledger.only_runs) ---------------------------------------

_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "=": lambda a, b: a == b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
# The status of a run record as written (pi-autoresearch's key order, ours after it: run,
# commit, metric, metrics, status), when it is not keep: the record's own status, not a
# nested one.
_OTHER_STATUS = re.compile(rb'\{\s*"run"\s*:\s*\d+\s*,\s*"commit"\s*:\s*"[^"\\]*"\s*,\s*'
                           rb'"metric"\s*:\s*[-+.\deE]+\s*,\s*"metrics"\s*:\s*\{[^{}]*\}\s*,\s*'
                           rb'"status"\s*:\s*"(?:discard|crash|checks_failed)"')
_JSON_NUMBER = rb'\s*:\s*(-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*[,}]'
_RUN_NUMBER = re.compile(rb'\{\s*"run"\s*:\s*([1-9][0-9]{0,8})\s*[,}]')


def _numeric_test(lines: list[bytes], key: str, op: str, want: float,
                  metric_name_ok: bool) -> Callable[[bytes], bool] | None:
    """Whether a line may hold a value of ``key`` that satisfies ``op want``: False only when
    the line names ``key`` nowhere (the field is missing), or once, followed by a number that
    fails; True when unsure. ``metric_name_ok``: the key may be a segment's metric name (which
    names the primary metric): None (no test) when a line of ``lines`` names it so."""
    token = json.dumps(key, ensure_ascii=False).encode("utf-8")
    if metric_name_ok:
        named = re.compile(rb'"metricName"\s*:\s*' + re.escape(token))
        if any(named.search(raw) for raw in lines if b'"metricName"' in raw):
            return None
    after = re.compile(re.escape(token) + _JSON_NUMBER)
    compare = _COMPARE[op]

    def test(raw: bytes) -> bool:
        count = raw.count(token)
        if count != 1:
            return count > 1
        found = after.search(raw)
        if found is None:
            return True
        value = float(found.group(1))
        return not math.isfinite(value) or compare(value, want)

    return test


def line_test(query: Query) -> LineTest | None:
    """A quick test of the ledger's lines for ``query`` (:func:`ledger.only_runs`): False
    only for a run line the query cannot select (another status, a run outside ``--run``, a
    number that fails a numeric ``--where`` or the dates), so that such lines are never
    parsed (nor one that names no ``*_violations`` field under ``--touched``); None when the
    query has nothing to test that way. Each test runs over every line in one comprehension,
    the cheap ones first."""
    first, last = query.runs
    conditions = [c for c in query.where
                  if c.number is not None and c.op in _COMPARE and "." not in c.field
                  and (c.field not in _DERIVED or c.field == "metric")]
    if query.status is None and first is None and last is None and not conditions \
            and query.since is None and query.until is None and query.touched is None:
        return None

    def flags(lines: list[bytes]) -> list[bool]:
        if query.status is not None and query.status != "keep":
            token = json.dumps(query.status).encode()
            found = [token in raw for raw in lines]
        elif query.status == "keep":
            other = _OTHER_STATUS.match
            found = [not other(raw) or raw.count(b'"status"') != 1 for raw in lines]
        else:
            found = [True] * len(lines)
        if query.touched is not None:  # a run that touched any has a list of them
            found = [keep and b"_violations" in raw for keep, raw in
                     zip(found, lines, strict=True)]
        if first is not None or last is not None:
            low, high = first or 0, last if last is not None else math.inf
            number = _RUN_NUMBER.match

            def within(raw: bytes) -> bool:
                named = number(raw)
                return named is None or low <= int(named[1]) <= high
            found = [keep and within(raw) for keep, raw in zip(found, lines, strict=True)]
        tests = [_numeric_test(lines, c.field, c.op, c.number, c.field != "metric")
                 for c in conditions if c.number is not None]
        if query.since is not None:
            tests.append(_numeric_test(lines, "timestamp", ">=", query.since * 1000, False))
        if query.until is not None:
            tests.append(_numeric_test(lines, "timestamp", "<=", query.until * 1000, False))
        for test in tests:
            if test is not None:
                found = [keep and test(raw) for keep, raw in zip(found, lines, strict=True)]
        # A retry is read whatever it is, so that the run it retried says so in the table
        # ("retried by"); the query itself still leaves it out.
        return [keep or b'"retry_of"' in raw for keep, raw in zip(found, lines, strict=True)]

    return flags
