"""The ledger, ``.auto/log.jsonl``, and what it is made of: reading it (this module, and how a
read skips the lines a query cannot select: :func:`only_runs`), the lines we write
(``records``), JSON text as JavaScript writes and reads it (``jsontext``), repairs, a segment's
confidence and the statistics under it.

Layer 6 of CONTRIBUTING.md, "How it is built": it imports only from layer 6 or below; no click, and
no git command line (git.Repo's typed methods). Its formats (this module, confidence, jsontext)
import neither git/, the open session nor the session protocol.

The ledger, ``.auto/log.jsonl``: one JSON object per line (gitautoresearch-files(5)).

The format is pi-autoresearch 1.6's: a ``{"type":"config",...}`` line opens a segment (``name``,
``metricName``, ``metricUnit``, ``bestDirection``), a run record has ``run`` (1-based across the
session), ``commit`` (7 characters), ``metric`` (0 for a crash), ``metrics``, ``status``,
``description``, ``timestamp`` (epoch milliseconds), ``segment``, ``confidence`` and ``asi``; our
own fields ride along and readers skip what they do not know. Hook firings are
``{"type":"hook",...}`` lines; a line cut short becomes a ``{"type":"torn_line",...}`` record at
the next append. Lines are written as pi's ``JSON.stringify`` writes them (:func:`dumps`) and read
as its ``reconstructJsonlState`` reads them (:func:`parse`). This module never runs git.
"""

from __future__ import annotations

import gc
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

from ..runtime.atomic import append_whole, write_atomic
from ..runtime.errors import Refused
from .jsontext import ObjectText, loads, loads_plain, number_flags
from .jsontext import dumps as dumps  # (the ledger's line, long read from here)
from .jsontext import finite as finite
from .jsontext import json_metric as json_metric
from .jsontext import json_number as json_number

# A test of every line at once that lets parse skip run lines no reader in this context
# wants (only_runs): False for a line it need not read.
LineTest = Callable[[list[bytes]], list[bool]]
_ONLY: ContextVar[LineTest | None] = ContextVar("only_runs", default=None)
_AS_TEXT: ContextVar[bool] = ContextVar("runs_as_text", default=False)


_T = TypeVar("_T")


class _once(Generic[_T]):  # noqa: N801 (a decorator, named as cached_property is)
    """:func:`functools.cached_property` without its lock, which Python before 3.12 takes on
    each first read: the value is computed on the first read and kept in the instance's
    ``__dict__``, where later reads find it. For the properties a reader asks of each of
    100,000 runs."""

    def __init__(self, compute: Callable[[Any], _T]) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> _once[_T]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> _T: ...

    def __get__(self, instance: object, owner: type | None = None) -> _T | _once[_T]:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.compute(instance)
        return value


@dataclass
class _Baseline:
    """Whether the segment :func:`parse` is reading has its baseline yet (a kept run with a
    metric)."""

    known: bool = False


def _visited(lines: list[bytes], flags: list[bool], based: _Baseline
             ) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of the lines :func:`parse` reads under :func:`only_runs`: each
    line ``flags`` keeps, and each it rules out that is not a run record as written (it
    begins ``{"run":``, has no ``"type"`` key and no ``\\u`` escape that could hide one), or
    that comes before its segment's baseline (``based.known``, which parse sets; a config line,
    which opens a segment and resets it, is always read)."""
    skip = [not keep and raw.startswith(b'{"run":') and b'"type"' not in raw
            and b"\\u" not in raw for keep, raw in zip(flags, lines, strict=True)]
    after = 0  # the index of the first line not yet given
    for index in [i for i, skipped in enumerate(skip) if not skipped]:
        while not based.known and after < index:  # the baseline is not known yet: read on
            yield after + 1, lines[after]
            after += 1
        yield index + 1, lines[index]
        after = index + 1
    while not based.known and after < len(lines):
        yield after + 1, lines[after]
        after += 1


@contextmanager
def only_runs(wanted: LineTest | None) -> Iterator[None]:
    """While it lasts, :func:`parse` (and so :func:`ledger.read` and opening a session)
    skips the
    run lines for which ``wanted(lines)`` (every line of the ledger, as bytes) says False,
    unparsed: a query's quick test of the lines' bytes, which must say True for every line
    the query could select. Lines before a segment's baseline, lines that do not begin
    ``{"run":`` as a written record does, lines with a ``"type"`` key or a ``\\u`` escape
    (which could hide a key) are always read. A ledger read so holds fewer runs: for
    answering that query only."""
    token = _ONLY.set(wanted)
    try:
        yield
    finally:
        _ONLY.reset(token)


def skipping_runs() -> bool:
    """Whether an :func:`only_runs` is in force (a read then skips lines)."""
    return _ONLY.get() is not None


@contextmanager
def runs_as_text() -> Iterator[None]:
    """While it lasts, :func:`parse` (and so :func:`ledger.read` and opening a session)
    holds each
    run record as an :class:`~git_autoresearch.ledger.jsontext.ObjectText`: its line and the few
    fields that ``log --json`` reads of every run (:data:`ledger.AT_HAND`), the rest decoded
    again when asked for. For a reader that writes every line as it stands: ``log --json``
    on 100,000 runs then takes about 150 MB instead of 480."""
    token = _AS_TEXT.set(True)
    try:
        yield
    finally:
        _AS_TEXT.reset(token)


# A run record as :func:`dumps` (or json.dumps) writes it begins with its number.
_RUN_PREFIX = re.compile(rb'\{\s*"run"\s*:\s*([1-9][0-9]{0,8})\s*[,}]')
STATUSES = ("keep", "discard", "crash", "checks_failed")
# Fields of the run records this tool writes (or doctor rebuilds) that pi-autoresearch's lack.
OUR_RUN_FIELDS = frozenset({"attempt_ref", "samples", "duration_s", "hooks", "checks",
                            "rebuilt_from"})
MAX_LINE_BYTES = 1 << 20  # a longer line is reported, not parsed
# The ``version`` of the config header this implementation writes.
VERSION = 1
# The keys of a segment's recorded configuration that say what its metric is: two segments
# whose headers agree on them (and on the direction) measure the same number the same way, so
# their figures may be compared (git-autoresearch-log(1)).
MEASURE_KEYS = ("command", "metric_name", "metric_pattern", "metric_command", "metric_json",
                "score", "aggregate")


def now_ms() -> int:
    """Now, in epoch milliseconds (the ledger's ``timestamp``)."""
    return int(time.time() * 1000)


# The fields a run record read under runs_as_text holds at hand (ObjectText): those that log
# --json reads of every run, and the names of the fields it adds.
AT_HAND = frozenset({"run", "status", "metric", "segment", "delta_pct", "audit", "source",
                     "session", "touched", "scope_violations", "readonly_violations",
                     "scope_violations_total", "readonly_violations_total"})


@dataclass
class Run:
    """A run record and where it stands: ``line`` is its 1-based line number in the ledger;
    ``text`` is the line as written (its bytes, surrounding whitespace stripped) when it was
    read from a ledger, None for a record made otherwise (from a trailer, say). ``data`` is
    a dict, or a :class:`~git_autoresearch.ledger.jsontext.ObjectText` holding :data:`AT_HAND` when
    read under :func:`runs_as_text`."""

    data: dict[str, Any] | ObjectText
    line: int
    segment: int
    text: bytes | None = None

    @_once
    def number(self) -> int:
        return int(self.data["run"])

    def made(self, commit: str) -> bool:
        """Whether the run's recorded ``commit`` (a short id) names ``commit`` (a full one)."""
        at = self.data.get("commit")
        return isinstance(at, str) and bool(at) and commit.startswith(at)

    @classmethod
    def known(cls, data: dict[str, Any] | ObjectText, line: int, segment: int, text: bytes,
              number: int, found: tuple[str, float | None, float]) -> Run:
        """The run of ``data`` read before, numbered ``number``, whose :attr:`status`,
        :attr:`metric` and :attr:`pi_metric` are ``found`` (as :meth:`found` gave them): for
        a read cache, sparing each run the first reads of its properties."""
        run = cls.__new__(cls)
        status, metric, pi_metric = found
        run.__dict__ = {"data": data, "line": line, "segment": segment, "text": text,
                        "number": number, "status": status, "metric": metric,
                        "pi_metric": pi_metric}
        return run

    def found(self) -> tuple[str, float | None, float]:
        """``(status, metric, pi_metric)``, as :meth:`known` takes them."""
        return self.status, self.metric, self.pi_metric

    @_once  # (asked for again and again by readers; a record read is not changed)
    def status(self) -> str:
        """The status, one of :data:`STATUSES`: a missing or unknown one reads as ``keep``, as
        pi-autoresearch 1.6.2's extension reads it (``statusFrom``, extensions/pi-autoresearch/
        jsonl.ts:74); :attr:`Ledger.odd_statuses` lists such records."""
        value = self.data.get("status")
        return value if isinstance(value, str) and value in STATUSES else "keep"

    @property
    def ours(self) -> bool:
        """Whether this tool wrote the record (it has a field of ours that pi-autoresearch's
        records lack: :data:`OUR_RUN_FIELDS`), not pi-autoresearch."""
        return not OUR_RUN_FIELDS.isdisjoint(self.data)

    @_once  # (confidence asks twice for each run of the segment)
    def pi_metric(self) -> float:
        """The metric as pi-autoresearch reads it (jsonl.ts:118): the recorded number, a
        crash's 0 included, and 0 when the record holds none."""
        return finite(self.data.get("metric")) or 0.0

    @_once
    def metric(self) -> float | None:
        """The primary metric, or None for a crash (whose recorded 0 is no measurement)."""
        if self.status == "crash":
            return None
        return finite(self.data.get("metric"))

    @property
    def description(self) -> str:
        value = self.data.get("description", "")
        return value if isinstance(value, str) else json.dumps(value)


def shown_record(data: Mapping[str, Any]) -> dict[str, Any]:
    """A run record as a JSON document shows it (``run``, ``log``, ``show``): as written, but
    ``metric`` null for a crash, whose recorded 0 is pi-autoresearch's placeholder
    (``index.ts:241``), no measurement; a reader of the ledger itself still finds the 0."""
    out = dict(data)
    if out.get("status") == "crash" and "metric" in out:
        out["metric"] = None
    return out


def status_as_read(shown: dict[str, Any]) -> dict[str, Any]:
    """``shown`` (a record as :func:`shown_record` shows it) with a missing or unknown
    ``status`` shown as read, ``keep`` (:attr:`Run.status`), and the one written, or null, in
    ``recorded_status`` after its other fields: as ``log --json`` and ``show --json`` show
    it. Changed in place, and returned."""
    written = shown.get("status")
    if written not in STATUSES:
        shown["status"], shown["recorded_status"] = "keep", written
    return shown


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

    @cached_property
    def measurement(self) -> str | None:
        """What the segment's metric measures, as a text that every segment measured the same
        way shares: the direction and the :data:`MEASURE_KEYS` of the configuration its header
        records, as compact JSON. None when the header records no configuration (a
        pi-autoresearch ledger, an import, the ``Result:`` trailers): such a segment is
        measured like no other, since nothing says what its command was."""
        config = (self.header or {}).get("config")
        if not isinstance(config, dict):
            return None
        return json.dumps([self.direction, *(config.get(key) for key in MEASURE_KEYS)],
                          sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    def measured_like(self, other: Segment) -> bool:
        """Whether ``other`` is this segment, or measures its metric the same way
        (:attr:`measurement`)."""
        return other is self or (self.measurement is not None
                                 and other.measurement == self.measurement)

    # Cached: a segment is read whole before anyone asks, and a new run makes a new Segment.
    @cached_property
    def kept(self) -> list[Run]:
        return [r for r in self.runs if r.status == "keep" and r.metric is not None]

    @cached_property
    def baseline(self) -> Run | None:
        """The first kept run of the segment: the measurement of the unmodified code."""
        return next((r for r in self.runs if r.status == "keep" and r.metric is not None), None)

    @cached_property
    def best(self) -> Run | None:
        """The kept run with the best metric; the earliest one wins a tie."""
        return self.best_before(None)

    def best_before(self, number: int | None) -> Run | None:
        """:attr:`best` among the kept runs numbered below ``number`` (None: all of them): the
        best a run was judged against."""
        best: Run | None = None
        for run in self.kept:
            if number is not None and run.number >= number:
                continue
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
    # Whether the file holds no number whose text could read as infinity (an exponent of
    # three digits, 309 digits in a row: jsontext.number_flags), so no line is read so.
    plain_numbers: bool = False
    # odd_statuses and repeated_numbers as parse found them (None: found when asked).
    odd_found: list[Run] | None = None
    repeats_found: dict[int, list[int]] | None = None
    # The lines read, when the bytes read ended with a newline (or were empty): where lines
    # appended after them begin (:func:`carried_on`). None otherwise, or when not read from
    # bytes (the trailers, say).
    lines: int | None = None

    @property
    def current(self) -> Segment:
        return self.segments[-1]

    @property
    def runs(self) -> list[Run]:
        """Every run, segment after segment (a new list)."""
        return list(chain.from_iterable(s.runs for s in self.segments))

    def alike(self, segment: Segment) -> list[Segment]:
        """The segments measured as ``segment`` is (:meth:`Segment.measured_like`), itself
        included, oldest first: those whose figures may be compared with its own."""
        return [s for s in self.segments if segment.measured_like(s)]

    def measurements(self) -> list[list[Segment]]:
        """The segments grouped by how they measure (:meth:`alike`): each group oldest first,
        the groups in the order of their first segment."""
        groups: list[list[Segment]] = []
        for segment in self.segments:
            group = next((g for g in groups if g[0].measured_like(segment)), None)
            if group is None:
                groups.append([segment])
            else:
                group.append(segment)
        return groups

    @property
    def last_run(self) -> Run | None:
        for seg in reversed(self.segments):
            if seg.runs:
                return seg.runs[-1]
        return None

    @property
    def odd_statuses(self) -> list[Run]:
        """The runs whose ``status`` is missing or unknown (read as keep: :attr:`Run.status`)."""
        if self.odd_found is not None:
            return self.odd_found
        return [r for r in self.runs if r.data.get("status") not in STATUSES]

    @property
    def repeated_numbers(self) -> dict[int, list[int]]:
        """Run numbers held by more than one run record, each with the lines that hold it (two
        tools appending to one ledger: pi numbers a run by the count of runs, this tool by the
        last number + 1). Every such record is read as a run of its own."""
        if self.repeats_found is not None:
            return self.repeats_found
        runs = self.runs
        if len({r.data["run"] for r in runs}) == len(runs):  # the common case, at once
            return {}
        lines: dict[int, list[int]] = {}
        for run in runs:
            lines.setdefault(run.number, []).append(run.line)
        return {n: found for n, found in lines.items() if len(found) > 1}

    def notices(self, path: Path | str) -> list[str]:
        """One warning for the records read otherwise than they say (a missing or unknown
        status), and one per run number held twice, naming the ledger ``path``."""
        out = []
        odd = self.odd_statuses
        if odd:
            shown = ", ".join(f"run {r.number} ({r.data.get('status', 'missing')!r})"
                              if "status" in r.data else f"run {r.number} (no status)"
                              for r in odd[:3])
            more = f" and {len(odd) - 3} more" if len(odd) > 3 else ""
            out.append(f"{path}: {shown}{more}: not one of {', '.join(STATUSES)}; read as "
                       "keep, as pi-autoresearch reads it")
        for number, lines in self.repeated_numbers.items():
            out.append(f"{path}: run number {number} is on lines "
                       f"{', '.join(map(str, lines))} (another tool appended to this ledger); "
                       f"each is read as a run of its own, and show {number} shows the first")
        return out

    @property
    def next_run_number(self) -> int:
        """One after the highest run number of a record, or of a line that could not be read
        but names one (too long, say): a number is never given twice."""
        numbers = [r.number for r in self.runs]
        numbers += [m.run for m in self.malformed if m.run is not None]
        return max(numbers) + 1 if numbers else 1

    def find(self, number: int, *, ours: bool = False) -> Run | None:
        """The first run numbered ``number``; with ``ours``, the first that this tool wrote
        (:attr:`Run.ours`), since another tool may have written the same number
        (:attr:`repeated_numbers`). None when there is none."""
        for run in self.runs:
            if run.number == number and (run.ours or not ours):
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


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off while it lasts: for reading or writing a whole ledger,
    which makes hundreds of thousands of acyclic objects that it would walk again at every few
    thousand made. If it was on, what exists then is frozen (gc.freeze: never walked again,
    still freed when unused) and it is back on: its first pass would walk all of it once more."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.freeze()
            gc.enable()


def parse(data: bytes) -> Ledger:
    """Read ledger bytes as pi-autoresearch 1.6.2 reconstructs them (``reconstructJsonlState``,
    extensions/pi-autoresearch/jsonl.ts:169). A ``config`` line opens a segment only once a
    run was read (jsonl.ts:108: the config lines before the first run make one segment, the
    later ones' fields winning); a missing or unknown ``status`` reads as keep
    (:attr:`Run.status`); a ``metric`` that is no number reads as none; a run number seen
    before is read as another run (:attr:`Ledger.repeated_numbers`) unless the line is a
    byte-for-byte copy of the earlier one. Unknown fields and line types are kept or skipped,
    never fatal; a line that is not JSON, or a run record whose ``run`` is no positive whole
    number, is listed in ``malformed`` and set aside."""
    with collector_paused():
        return _parse(data)


def _parse(data: bytes) -> Ledger:
    lines = data.split(b"\n")
    short, plain = number_flags(data)
    wanted = _ONLY.get()  # the line test of the only_runs in force
    reader = Reader(AT_HAND if _AS_TEXT.get() else None)
    based = reader.based
    visited = enumerate(lines, start=1) if wanted is None else \
        _visited(lines, wanted(lines), based)
    reader.read(visited, torn=len(lines) if lines[-1] else 0, short=short,
                watch_baseline=wanted is not None)
    return reader.ledger(plain, None if lines[-1] else len(lines) - 1)


def carried_on(book: Ledger, payload: bytes) -> Ledger | None:
    """The ledger of the bytes ``book`` was read from followed by ``payload`` (whole lines,
    each with its newline), reading only ``payload``: what a command that appended those
    lines reads, without reading the file again. Equal to :func:`parse` of both, field for
    field. ``book`` itself is left as it was (the last segment, whose figures are cached,
    is a new one). None when ``book`` cannot be carried on: the bytes it was read from did
    not end with a newline (:attr:`Ledger.lines`), it holds a run number twice (only a whole
    read compares such records), or ``payload`` does not end with one."""
    if book.lines is None or book.repeated_numbers or not payload.endswith(b"\n"):
        return None
    with collector_paused():
        reader = Reader(None)
        reader.segments = [*book.segments[:-1], Segment(book.current.index,
                                                        book.current.header,
                                                        list(book.current.runs))]
        reader.hooks, reader.events = list(book.hooks), list(book.events)
        reader.malformed, reader.odd = list(book.malformed), list(book.odd_statuses)
        reader.firsts = None  # (a run read after them is looked up among the runs)
        pieces = payload.split(b"\n")
        pieces.pop()  # (empty: the payload ends with its newline)
        short, plain = number_flags(payload)
        reader.read(enumerate(pieces, start=book.lines + 1), torn=0, short=short)
        return reader.ledger(book.plain_numbers and plain, book.lines + len(pieces))


class Reader:
    """What :func:`parse` has read of a ledger's lines, in order, and what it must remember
    to read the lines that follow them (the first record of each run number, the records of
    a number read more than once): a parse that can be carried on, as the read cache does
    (:mod:`ledger.cache`). ``keys``: the fields a run record holds at hand as an
    :class:`~git_autoresearch.ledger.jsontext.ObjectText`; None, each run's record a dict."""

    def __init__(self, keys: frozenset[str] | None) -> None:
        self.keys = keys
        self.segments = [Segment(0, None)]
        self.hooks: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.malformed: list[Malformed] = []
        # A run number: the line and text of its first record read (None: restored by the
        # read cache, whose runs hold one record a number: see :meth:`first`).
        self.firsts: dict[int, tuple[int, bytes]] | None = {}
        self.restored: set[int] | None = None  # (the numbers of the runs restored)
        self.appended: dict[int, tuple[int, bytes]] = {}  # (:attr:`firsts` of those since)
        self.repeats: dict[int, list[tuple[int, bytes]]] = {}  # one read twice: its records
        self.odd: list[Run] = []
        self.based = _Baseline()

    def first(self, named: int, entry: tuple[int, bytes]) -> tuple[int, bytes]:
        """The (line number, text) of the first record of run ``named`` read so far, or
        ``entry`` (remembered as that first record) when there is none. After a restore
        (:attr:`firsts` None), the numbers of the runs restored are gathered once, a set (a
        dict of 100,000 records took 30 ms), and the record of one read again is looked up
        among the runs."""
        if self.firsts is not None:
            return self.firsts.setdefault(named, entry)
        if self.restored is None:
            self.restored = {run.number for segment in self.segments for run in segment.runs}
        if named in self.restored:
            return next((run.line, run.text or b"") for segment in self.segments
                        for run in segment.runs if run.number == named)
        return self.appended.setdefault(named, entry)

    def read(self, visited: Iterable[tuple[int, bytes]], *, torn: int, short: bool,
             watch_baseline: bool = False) -> None:
        """Read the ``(line number, line)`` pairs of ``visited``, in order. ``torn``: the
        number of a last line without its newline (0: none); ``short``: the lines hold no
        integer too large for a float (:func:`jsontext.number_flags`); ``watch_baseline``:
        keep :attr:`based` up to date (for :func:`only_runs`)."""
        segments, malformed = self.segments, self.malformed
        read = loads_plain if short else loads
        keys = self.keys
        based = self.based
        current = segments[-1]
        for number, raw in visited:
            copy = raw.strip()
            if not copy:
                continue
            is_torn = number == torn
            if len(raw) > MAX_LINE_BYTES:
                named = _RUN_PREFIX.match(raw[:40])
                malformed.append(Malformed(number, f"line of {len(raw)} bytes is too long",
                                           is_torn, int(named.group(1)) if named else None))
                continue
            try:
                obj = read(raw)
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                # A cut-off line's number is not counted: its run's attempt ref or trailer is.
                malformed.append(Malformed(number, f"not JSON ({exc.__class__.__name__})",
                                           is_torn))
                continue
            if not isinstance(obj, dict):
                malformed.append(Malformed(number, "not a JSON object", is_torn))
                continue
            kind = obj.get("type")
            if kind == "config":
                if len(segments) == 1 and not segments[0].runs:
                    merged = {**(segments[0].header or {}), **obj}
                    if "bestDirection" not in obj:  # pi resets it (jsonl.ts:105)
                        merged.pop("bestDirection", None)
                    segments[0].header = merged
                else:
                    current = Segment(len(segments), obj)
                    segments.append(current)
                    based.known = False
            elif kind == "hook":
                self.hooks.append(obj)
            elif kind is not None:
                self.events.append(obj)
            elif "run" in obj:
                named = obj["run"]  # (JSON makes no int subclass but bool)
                if type(named) is not int or named < 1:
                    problem: str | None = "'run' is not a positive whole number"
                elif (problem := field_problem(obj)) is not None:
                    pass
                else:
                    entry = (number, copy)
                    first = self.first(named, entry)
                    problem = None if first is entry else \
                        _repeated(self.repeats, named, first, entry)
                if problem:
                    malformed.append(Malformed(number, problem, is_torn,
                                               named if type(named) is int else None))
                else:
                    run = Run(ObjectText(copy, obj, keys) if keys is not None else obj,
                              number, current.index, copy)
                    current.runs.append(run)
                    if obj.get("status") not in STATUSES:
                        self.odd.append(run)
                    if watch_baseline and not based.known:
                        based.known = run.status == "keep" and run.metric is not None

    def ledger(self, plain: bool, lines: int | None = None) -> Ledger:
        """The :class:`Ledger` read so far; ``plain``: :attr:`Ledger.plain_numbers`;
        ``lines``: :attr:`Ledger.lines`."""
        return Ledger(self.segments, self.hooks, self.events, self.malformed, plain, self.odd,
                      {n: [line for line, _ in found] for n, found in self.repeats.items()
                       if len(found) > 1}, lines)


_NUMBER: frozenset[type] = frozenset({int, float})
_NUMBER_OR_NULL: frozenset[type] = frozenset({int, float, type(None)})
_OBJECT_OR_NULL: frozenset[type] = frozenset({dict, type(None)})
_ABSENT = object()

# The fields of a run record every reader relies on, and the types each may hold when present
# (exact types: JSON's true is no number here): pi-autoresearch's (jsonl.ts) and ours. A
# record with another type there is malformed (set aside, as a line that is not JSON is), not
# read by half the readers and crashing the rest. (A status of any other value or type reads
# as keep, as pi-autoresearch reads it.) ``samples`` is checked apart: a list of numbers.
FIELD_TYPES: tuple[tuple[str, frozenset[type], str], ...] = (
    ("metric", _NUMBER_OR_NULL, "a number or null"),
    ("metrics", frozenset({dict}), "an object"),
    ("timestamp", _NUMBER_OR_NULL, "a number or null"),
    ("segment", _NUMBER, "a number"),
    ("confidence", _NUMBER_OR_NULL, "a number or null"),
    ("commit", frozenset[type]({str, type(None)}), "a string or null"),
    ("decision", _OBJECT_OR_NULL, "an object or null"),
    ("checks", _OBJECT_OR_NULL, "an object or null"),
    ("duration_s", _NUMBER_OR_NULL, "a number or null"),
    ("asi", _OBJECT_OR_NULL, "an object or null"),
)


def field_problem(record: Mapping[str, Any]) -> str | None:
    """Why run ``record`` cannot be read (a field of :data:`FIELD_TYPES`, or ``samples``,
    holding another type: ``'metric' is not a number or null``), or None. On every run line
    read: kept to exact type lookups."""
    get = record.get
    for name, kinds, wanted in FIELD_TYPES:
        value = get(name, _ABSENT)
        if value is not _ABSENT and type(value) not in kinds:
            return f"'{name}' is not {wanted}"
    samples = get("samples", _ABSENT)
    if samples is not _ABSENT and (type(samples) is not list
                                   or any(type(v) not in _NUMBER for v in samples)):
        return "'samples' is not a list of numbers"
    if "metric" in record and get("metric") is None and get("status", "keep") == "keep":
        # No writer records a keep without its figure (a failed measurement is a crash).
        return "a kept run with a null 'metric'"
    return None


def _repeated(repeats: dict[int, list[tuple[int, bytes]]], named: int,
              first: tuple[int, bytes], entry: tuple[int, bytes]) -> str | None:
    """For :func:`parse`, a run number read before (its first record ``first``): why the
    line ``entry`` (its number and text) is set aside, a byte-for-byte copy of an earlier
    record's line, or None when it is a run of its own (then kept in ``repeats``)."""
    found = repeats.setdefault(named, [first])
    line = next((line for line, text in found if text == entry[1]), None)
    if line is not None:
        return f"a copy of line {line} (run {named})"
    found.append(entry)
    return None


def read_bytes(path: Path) -> bytes:
    """The bytes of the ledger at ``path``; a missing file reads as none (``b""``).
    :class:`Refused` (exit 3) when it cannot be read (a folder in its place, say)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""
    except OSError as exc:
        raise Refused(unreadable_ledger(path, exc)) from None


def unreadable_ledger(path: Path, exc: OSError) -> str:
    """What to say of the ledger at ``path`` that ``exc`` says cannot be read: the way out
    (resume puts back its copy; a file another user owns, or that lost its read permission,
    is given back to this one first, since resume cannot read it either)."""
    if isinstance(exc, PermissionError):
        return (f"cannot read the ledger {path}: {exc.strerror or exc} (make it this user's "
                f"again: chown or chmod u+rw {path})")
    return (f"cannot read the ledger {path}: {exc.strerror or exc} (git autoresearch resume "
            "puts back its copy on the state ref)")


def read(path: Path) -> Ledger:
    """Read the ledger at ``path``; a missing file reads as an empty ledger."""
    return parse(read_bytes(path))


# What :func:`append` wrote: the file's :func:`version` before and after, and the lines.
Appended = tuple[str, str, bytes]


def append(path: Path, records: Iterable[Mapping[str, Any]]) -> Appended | None:
    """Append records in one ``write`` and ``fsync``; returns what was written
    (:data:`Appended`) when the lines went after the file's last newline, as they are (for
    :func:`carried_on`), None when the file was rewritten or its last line given a newline.

    A last line without its newline that is not a whole JSON object (an append that was cut
    short) is never glued onto, nor left torn in the middle of the ledger, where
    pi-autoresearch's export dashboard would refuse the whole file (assets/template.html:394):
    it is set aside as a record of its own, :func:`torn_record`, and the file rewritten whole
    with the new lines after it; a whole one, or a blank one, gets its newline. A line
    longer than :data:`MAX_LINE_BYTES` is refused (ValueError) before anything is written,
    since no reader would read it; an append that cannot be written whole (a full disk) leaves
    the file as it was and raises :class:`~git_autoresearch.runtime.atomic.WriteFailed`.
    """
    lines = [dumps(r).encode("utf-8") for r in records]
    for line in lines:
        if len(line) > MAX_LINE_BYTES:
            raise ValueError(f"a ledger line of {len(line)} bytes is longer than the "
                             f"{MAX_LINE_BYTES} bytes a reader reads")
    payload = b"".join(line + b"\n" for line in lines)
    if _ends_torn(path):
        data = path.read_bytes()
        cut = data.rfind(b"\n") + 1
        if _whole(data[cut:]) or not data[cut:].strip():
            # Only its newline is missing (an editor that drops the last one), or it is blank
            # (spaces, which every reader skips): the line stays as it is, and append_whole
            # puts the newline before the new lines.
            append_whole(path, payload)
            return None
        torn = dumps(torn_record(data[cut:], data.count(b"\n") + 1)).encode("utf-8")
        write_atomic(path, data[:cut] + torn + b"\n" + payload)
        return None
    before, after = append_whole(path, payload)
    if after.st_size - before.st_size != len(payload):
        return None  # (a newline went first: the file ended without one meanwhile)
    return stamp(before), stamp(after), payload


TORN = "torn_line"


def torn_record(raw: bytes, line: int) -> dict[str, Any]:
    """The record a torn last line becomes at the next append: ``{"type": "torn_line", "line":
    its line number, "text": its bytes (UTF-8, a byte that is not kept as a lone surrogate
    escape), "timestamp": now}``; pi-autoresearch reads no run in it (no ``run`` key), and its
    export dashboard reads the file."""
    return {"type": TORN, "line": line, "text": raw.decode("utf-8", "surrogateescape"),
            "timestamp": now_ms()}


def _whole(raw: bytes) -> bool:
    """Whether ``raw`` is a whole JSON object (a line that lost only its newline)."""
    try:
        return isinstance(loads(raw), dict)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False


def _ends_torn(path: Path) -> bool:
    """Whether the file at ``path`` ends with a line without its newline."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            if fh.tell() == 0:
                return False
            fh.seek(-1, 2)
            return fh.read(1) != b"\n"
    except FileNotFoundError:
        return False


def version(path: Path) -> str:
    """A stamp that changes whenever the file does: its size, inode, and times of
    modification and of status change. The last is set by the kernel on every write, and
    also when a writer puts the modification time back (``touch -r``, ``cp -p``, ``rsync
    -t``), which no program can undo; a file written anew and renamed over it is another
    inode. What no stamp shows is a rewrite in place of the same size within one tick of a
    file system that keeps its times to the second. "none" when there is no file;
    :class:`Refused` (exit 3) when it cannot be told (a folder that cannot be read)."""
    try:
        return stamp(path.stat())
    except FileNotFoundError:
        return "none"
    except OSError as exc:  # (as read_bytes says it)
        raise Refused(unreadable_ledger(path, exc)) from None


def stamp(st: os.stat_result) -> str:
    """:func:`version` of a file whose status is ``st``."""
    return f"{st.st_mtime_ns}-{st.st_ctime_ns}-{st.st_size}-{st.st_ino}"

