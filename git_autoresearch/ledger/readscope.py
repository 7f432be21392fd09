"""How :func:`ledger.parse` reads in a context: the run lines a query cannot select left
unparsed (:func:`only_runs`), each run held as its line (:func:`runs_as_text`). The context
variables, and the walk over the lines that ``only_runs`` makes. No git, no files."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

# A test of every line at once that lets parse skip run lines no reader in this context
# wants (only_runs): False for a line it need not read.
LineTest = Callable[[list[bytes]], list[bool]]  # mutation: equivalent only annotations name it
_ONLY: ContextVar[LineTest | None] = ContextVar("only_runs", default=None)
_AS_TEXT: ContextVar[bool] = ContextVar("runs_as_text", default=False)


def wanted() -> LineTest | None:
    """The line test of the :func:`only_runs` in force, or None."""
    return _ONLY.get()


def as_text() -> bool:
    """Whether a :func:`runs_as_text` is in force."""
    return _AS_TEXT.get()


@dataclass
class Baseline:
    """Whether the segment :func:`ledger.parse` is reading has its baseline yet (a kept run with a
    metric)."""

    known: bool = False


def visited(lines: list[bytes], flags: list[bool], based: Baseline
             ) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of the lines :func:`ledger.parse` reads under :func:`only_runs`: each
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
    """While it lasts, :func:`ledger.parse` (and so :func:`ledger.read` and opening a session)
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


@contextmanager
def runs_as_text() -> Iterator[None]:
    """While it lasts, :func:`ledger.parse` (and so :func:`ledger.read` and opening a session)
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
