"""The ledger, ``.auto/log.jsonl``: one JSON object per line (DESIGN.md section 6).

The format is pi-autoresearch 1.6's: a ``{"type":"config",...}`` line opens a segment (``name``,
``metricName``, ``metricUnit``, ``bestDirection``), a run record has ``run`` (1-based across the
session), ``commit`` (7 characters), ``metric`` (0 for a crash), ``metrics``, ``status``,
``description``, ``timestamp`` (epoch milliseconds), ``segment``, ``confidence`` and ``asi``; our
own fields ride along and readers skip what they do not know. Hook firings are
``{"type":"hook",...}`` lines. This module never runs git.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypedDict, cast

from .files import append_whole

# A run record as :func:`dumps` (or json.dumps) writes it begins with its number.
_RUN_PREFIX = re.compile(rb'\{\s*"run"\s*:\s*([1-9][0-9]{0,8})\s*[,}]')
STATUSES = ("keep", "discard", "crash", "checks_failed")
MAX_LINE_BYTES = 1 << 20  # a longer line is reported, not parsed
# The ``version`` of the config header this implementation writes.
VERSION = 1


def now_ms() -> int:
    """Now, in epoch milliseconds (the ledger's ``timestamp``)."""
    return int(time.time() * 1000)


def number_text(value: float) -> str:
    """A metric as the ledger writes it, as text: whole numbers without ``.0`` and every digit
    kept (``2584610000``, where ``:g`` would print ``2.58461e+09``)."""
    return str(json_number(value))


def json_number(value: float) -> int | float:
    """A metric as JSON writes it: whole numbers without ``.0`` (``14600``, as the seed shows)."""
    if math.isfinite(value) and value == int(value) and abs(value) < 2**53:
        return int(value)
    return value


def dumps(record: Mapping[str, Any]) -> str:
    """One ledger line (no newline): compact JSON, non-ASCII kept, NaN and infinity refused.
    A record holding a file name that is not UTF-8 (its bytes kept as lone surrogates) is
    written with ``\\u`` escapes instead, which read back as the same name."""
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(record, separators=(",", ":"), allow_nan=False)
    return text


def finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite JSON number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass
class Run:
    """A run record and where it stands: ``line`` is its 1-based line number in the ledger."""

    data: dict[str, Any]
    line: int
    segment: int

    @property
    def number(self) -> int:
        return int(self.data["run"])

    @property
    def status(self) -> str:
        return str(self.data.get("status", ""))

    @property
    def metric(self) -> float | None:
        """The primary metric, or None for a crash (whose recorded 0 is no measurement)."""
        if self.status == "crash":
            return None
        return finite(self.data.get("metric"))

    @property
    def description(self) -> str:
        value = self.data.get("description", "")
        return value if isinstance(value, str) else json.dumps(value)


@dataclass
class Segment:
    """The runs under one configuration header (``header`` is None for runs before any)."""

    index: int
    header: dict[str, Any] | None
    runs: list[Run] = field(default_factory=list)

    @property
    def direction(self) -> str:
        value = (self.header or {}).get("bestDirection", "lower")
        return "higher" if value == "higher" else "lower"

    def better(self, a: float, b: float) -> bool:
        """Whether metric ``a`` beats ``b`` strictly in this segment's direction."""
        return a > b if self.direction == "higher" else a < b

    # Cached: a segment is read whole before anyone asks, and a new run makes a new Segment.
    @cached_property
    def kept(self) -> list[Run]:
        return [r for r in self.runs if r.status == "keep" and r.metric is not None]

    @cached_property
    def baseline(self) -> Run | None:
        """The first kept run of the segment: the measurement of the unmodified code."""
        kept = self.kept
        return kept[0] if kept else None

    @cached_property
    def best(self) -> Run | None:
        """The kept run with the best metric; the earliest one wins a tie."""
        best: Run | None = None
        for run in self.kept:
            assert run.metric is not None
            if best is None or self.better(run.metric, best.metric):  # type: ignore[arg-type]
                best = run
        return best


@dataclass
class Malformed:
    """A line that is not a readable ledger entry: its number, a reason, and whether it is the
    last line without a newline (a torn append)."""

    line: int
    reason: str
    torn: bool
    run: int | None = None  # the run number a whole line names, though it cannot be read


@dataclass
class Ledger:
    """Everything read from a ledger file."""

    segments: list[Segment]
    hooks: list[dict[str, Any]]
    events: list[dict[str, Any]]
    malformed: list[Malformed]

    @property
    def current(self) -> Segment:
        return self.segments[-1]

    @property
    def runs(self) -> list[Run]:
        return [r for s in self.segments for r in s.runs]

    @property
    def last_run(self) -> Run | None:
        for seg in reversed(self.segments):
            if seg.runs:
                return seg.runs[-1]
        return None

    @property
    def next_run_number(self) -> int:
        """One after the highest run number of a record, or of a line that could not be read
        but names one (too long, say): a number is never given twice."""
        numbers = [r.number for r in self.runs]
        numbers += [m.run for m in self.malformed if m.run is not None]
        return max(numbers) + 1 if numbers else 1

    def find(self, number: int) -> Run | None:
        for run in self.runs:
            if run.number == number:
                return run
        return None

    @property
    def config_header(self) -> dict[str, Any] | None:
        return self.current.header


def collected_refs(book: Ledger) -> set[str]:
    """The refs that ``git autoresearch gc`` deleted on purpose: those its ``{"type": "gc",
    "deleted": [ref, ...]}`` events name."""
    found: set[str] = set()
    for event in book.events:
        deleted = event.get("deleted")
        if event.get("type") == "gc" and isinstance(deleted, list):
            found.update(ref for ref in deleted if isinstance(ref, str))
    return found


def _check_run(obj: dict[str, Any]) -> str | None:
    run = obj.get("run")
    if isinstance(run, bool) or not isinstance(run, int) or run < 1:
        return "'run' is not a positive whole number"
    if obj.get("status") not in STATUSES:
        return f"unknown status {obj.get('status')!r}"
    metric = obj.get("metric")
    if metric is not None and finite(metric) is None:
        return "'metric' is not a finite number"
    return None


def parse(data: bytes) -> Ledger:
    """Read ledger bytes. Unknown fields and line types are kept or skipped, never fatal; a line
    that is not JSON, or a run record with a bad ``run``, ``status`` or ``metric``, is listed in
    ``malformed`` and set aside."""
    segments = [Segment(0, None)]
    hooks: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    malformed: list[Malformed] = []
    seen: dict[int, int] = {}
    lines = data.split(b"\n")
    torn_last = bool(lines and lines[-1])
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        is_torn = torn_last and number == len(lines)
        if len(raw) > MAX_LINE_BYTES:
            named = _RUN_PREFIX.match(raw[:40])
            malformed.append(Malformed(number, f"line of {len(raw)} bytes is too long", is_torn,
                                       int(named.group(1)) if named else None))
            continue
        try:
            obj = json.loads(raw, parse_constant=reject_constant)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            # A cut-off line's number is not counted: its run's attempt ref or trailer is.
            malformed.append(Malformed(number, f"not JSON ({exc.__class__.__name__})", is_torn))
            continue
        if not isinstance(obj, dict):
            malformed.append(Malformed(number, "not a JSON object", is_torn))
            continue
        kind = obj.get("type")
        if kind == "config":
            if segments[-1].header is None and not segments[-1].runs and len(segments) == 1:
                segments[-1].header = obj
            else:
                segments.append(Segment(len(segments), obj))
        elif kind == "hook":
            hooks.append(obj)
        elif kind is not None:
            events.append(obj)
        elif "run" in obj:
            problem = _check_run(obj)
            if problem is None and obj["run"] in seen:
                problem = f"run {obj['run']} again (first on line {seen[obj['run']]})"
            if problem:
                run_value = obj.get("run")
                malformed.append(Malformed(number, problem, is_torn,
                                           run_value if isinstance(run_value, int)
                                           and not isinstance(run_value, bool) else None))
            else:
                seen[obj["run"]] = number
                segments[-1].runs.append(Run(obj, number, segments[-1].index))
    return Ledger(segments, hooks, events, malformed)


def reject_constant(name: str) -> float:
    """``json.loads``' ``parse_constant``: NaN and infinity are not JSON numbers."""
    raise ValueError(f"non-finite number {name}")


class _RunFields(TypedDict):
    run: int
    commit: str
    metric: int | float | None
    metrics: dict[str, Any]
    status: str
    description: str
    timestamp: int | None
    segment: int
    confidence: float | None


class RunRecord(_RunFields, total=False):
    """A run line of the ledger (pi-autoresearch's ``log.jsonl`` run record): ``run`` number,
    7-character ``commit`` (HEAD's, or the keep's), primary ``metric`` (0 for a crash) and
    secondary ``metrics``, ``status`` (:data:`STATUSES`), ``description``, ``timestamp``
    (milliseconds since the epoch; None when imported without one), ``segment`` index and
    ``confidence``; then ours, each optional: what the measurement gave, where the attempt or
    the set-aside changes are kept, and, for a rebuilt or imported line, where it came from."""

    asi: dict[str, Any]
    duration_s: float | None
    samples: list[int | float]
    checks: dict[str, Any] | None
    attempt_ref: str | None
    scope_violations: list[str]
    readonly_violations: list[str]
    scope_violations_total: int
    readonly_violations_total: int
    hooks: list[dict[str, Any]]
    decision: dict[str, Any]
    scope_ref: str
    scope_refs: list[str]
    baseline: bool
    reason: str | None
    tail: str
    committed: bool
    rebuilt_from: str
    imported_from: str
    source_row: dict[str, str | None]
    experiment: str | None


def run_record(run: int, commit: str, metric: int | float | None, metrics: dict[str, Any],
               status: str, description: str, timestamp: int | None, segment: int,
               **more: Any) -> RunRecord:
    """A :class:`RunRecord` with pi-autoresearch's fields first, in its order (``confidence``
    None: computed when the line is appended), then ``more`` in the order given: the order
    the line is written in."""
    record: dict[str, Any] = {"run": run, "commit": commit, "metric": metric,
                              "metrics": metrics, "status": status,
                              "description": description, "timestamp": timestamp,
                              "segment": segment, "confidence": None}
    record.update(more)
    return cast(RunRecord, record)


def read(path: Path) -> Ledger:
    """Read the ledger at ``path``; a missing file reads as an empty ledger."""
    try:
        return parse(path.read_bytes())
    except FileNotFoundError:
        return parse(b"")


def append(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Append records in one ``write`` and ``fsync``.

    A last line without its newline (an append that was cut short) is never glued onto: a newline
    goes first, so the torn line stays a line of its own that readers report and set aside. A
    line longer than :data:`MAX_LINE_BYTES` is refused (ValueError) before anything is written,
    since no reader would read it; an append that cannot be written whole (a full disk) leaves
    the file as it was and raises :class:`~git_autoresearch.files.WriteFailed`.
    """
    lines = [dumps(r).encode("utf-8") for r in records]
    for line in lines:
        if len(line) > MAX_LINE_BYTES:
            raise ValueError(f"a ledger line of {len(line)} bytes is longer than the "
                             f"{MAX_LINE_BYTES} bytes a reader reads")
    append_whole(path, b"".join(line + b"\n" for line in lines))


def median(values: Iterable[float]) -> float:
    """The median of a non-empty sequence. (``statistics`` costs ~5 ms of start-up, which every
    command would pay; this is all of it we need.)"""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def mad(values: list[float]) -> float:
    """Median absolute deviation from the median."""
    centre = median(values)
    return median(abs(v - centre) for v in values)


def confidence(segment: Segment, upto: int | None = None) -> float | None:
    """pi-autoresearch's confidence: ``|best kept - baseline| / MAD`` over the segment's runs.

    The MAD is over the finite metrics of non-crashed runs (up to and including run ``upto`` when
    given). None with fewer than 3 such runs, a MAD of 0, or no kept run better than the baseline.
    """
    runs = segment.runs if upto is None else [r for r in segment.runs if r.number <= upto]
    values = [m for m in (r.metric for r in runs) if m is not None]
    kept = [r for r in runs if r.status == "keep" and r.metric is not None]
    if len(values) < 3 or not kept:
        return None
    baseline = kept[0].metric
    best = baseline
    for r in kept:
        assert r.metric is not None and best is not None
        if segment.better(r.metric, best):
            best = r.metric
    assert best is not None and baseline is not None
    spread = mad(values)
    if spread == 0 or best == baseline:
        return None
    value = abs(best - baseline) / spread
    return round(value, 4) if math.isfinite(value) else None


def confidence_label(value: float | None) -> str:
    """*likely real* (>= 2), *marginal* (1 to 2), *within noise* (< 1), or *n/a*."""
    if value is None:
        return "n/a"
    if value >= 2:
        return "likely real"
    if value >= 1:
        return "marginal"
    return "within noise"


def version(path: Path) -> str:
    """A stamp that changes whenever the file does (modification time and size)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return "none"
    return f"{st.st_mtime_ns}-{st.st_size}"


class ConfigHeader(TypedDict):
    """The ledger line that opens a segment (DESIGN.md section 6): pi-autoresearch's ``name``,
    ``metricName``, ``metricUnit`` and ``bestDirection``, then ours; built by
    :func:`config_header`. (A TypedDict, not a dataclass: every command imports this module,
    and defining a dataclass costs start-up time.)"""

    type: str
    name: str
    metricName: str
    metricUnit: str
    bestDirection: str
    config_hash: str
    session_id: str
    version: int
    config: dict[str, Any]
    base_commit: str
    no_baseline: bool
    timestamp: int


def config_header(*, name: str, metric_name: str, metric_unit: str, direction: str,
                  config_hash: str, session_id: str, config: dict[str, Any], base_commit: str,
                  no_baseline: bool) -> ConfigHeader:
    """A segment's header line, keys in the order every version wrote: the goal (``name``),
    the metric and its ``direction`` (``lower``/``higher``), the SHA-256 of ``config.toml``'s
    bytes (``sha256:<hex>``), the session id, this format's :data:`VERSION`, the
    configuration's keys as written, the commit the segment starts from, whether its baseline
    was skipped, and now (:func:`now_ms`, epoch milliseconds)."""
    return {"type": "config", "name": name, "metricName": metric_name,
            "metricUnit": metric_unit, "bestDirection": direction, "config_hash": config_hash,
            "session_id": session_id, "version": VERSION, "config": config,
            "base_commit": base_commit, "no_baseline": no_baseline, "timestamp": now_ms()}


# Repairs: how a ledger that lost lines, lost its header or holds malformed lines is put right.
# They work on bytes and files only; the caller decides where the saved copy comes from (the
# state ref) and tells the state mirror that a shorter ledger is on purpose.
