"""The ledger's read cache: what :func:`ledger.parse` read of a long ledger, kept in the
scratch folder, so that the next command that reads it (``status``, ``log``, a ``keep`` after
a night of 100,000 runs) reads only the lines appended since.

A cache file holds, as :mod:`marshal` writes it: the prefix of the ledger it covers (its
length in bytes, always ending with a newline, its number of lines, and its SHA-1), whether
that prefix holds a number that could read as infinity (:attr:`Ledger.plain_numbers`), its
segments' headers, each run's line number, segment, the fields of :data:`CACHED_AT_HAND` it
has and its status and metric as read (:meth:`Run.found`), the hook and event lines whole,
the malformed lines, and the line numbers of each run number read more than once, after the
SHA-1 of all that. It is used only when it is whole (that SHA-1), the ledger begins with the
very bytes it covers, and it was written in this layout (:data:`FORMAT`) by this version of
the package and this Python's ``marshal``, with the same fields; otherwise, or when it
cannot be read, the ledger is parsed whole and the cache written again. So a ledger
rewritten, cut short or edited in place is read as it now stands: the cache can make a read
quicker, never different (the runs are :class:`~git_autoresearch.ledger.jsontext.ObjectText`,
decoding their line for any other field).

Layer 6 of CONTRIBUTING.md, as :mod:`git_autoresearch.ledger`: no git, no session.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
from pathlib import Path
from typing import Any

from .. import __version__
from ..runtime.atomic import WriteFailed, write_atomic
from ..runtime.digests import hexdigest
from . import (
    AT_HAND,
    STATUSES,
    Ledger,
    Malformed,
    Reader,
    Run,
    Segment,
    collector_paused,
    parse,
    read_bytes,
    skipping_runs,
)
from .jsontext import ObjectText, number_flags

# What a cache file holds; another number is another layout, never read.
FORMAT = 2
# A ledger shorter than this (bytes; about 10,000 runs) is parsed whole, uncached: its parse
# takes less than the cache's own reading and checking would save.
CACHE_FROM = 4 << 20
# The cache is written again when the lines it does not cover are more than this share of the
# ledger (a keep or discard appends one line: most reads then use the cache as it is).
REWRITE_SHARE = 1 / 32
# The fields a run read through the cache holds at hand: those ``log --json`` writes beside
# each line (:data:`ledger.AT_HAND`), and those ``status``, ``show``, ``log``'s table, ``keep``
# and ``discard`` ask of every run. Any other field decodes the run's line.
CACHED_AT_HAND = AT_HAND | frozenset({"commit", "worker", "decision", "retry_of",
                                      "timestamp", "samples", "confidence"})
_KEYS = tuple(sorted(CACHED_AT_HAND))
# Who wrote a cache: this package's version (its reading rules) and Python's (marshal's).
_MADE_BY = (__version__, *sys.version_info[:2])


def cache_path(scratch: Path, ledger: Path) -> Path:
    """The cache file of the ledger at ``ledger`` in the ``scratch`` folder: one a ledger,
    named by its path."""
    name = hexdigest("sha1", os.fsencode(os.path.abspath(ledger)))[:16]
    return scratch / f"ledger-cache-{name}"


def read_cached(path: Path, cache: Path, *, least: int | None = None) -> Ledger:
    """:func:`ledger.read` of the ledger at ``path`` through the cache file ``cache``
    (:func:`parse_cached`)."""
    return parse_cached(read_bytes(path), cache, least=least)


def parse_cached(data: bytes, cache: Path, *, least: int | None = None) -> Ledger:
    """:func:`ledger.parse` of ``data``, a ledger of ``least`` bytes or more, through the
    cache file ``cache`` (``least``: :data:`CACHE_FROM` when None): the lines it covers
    restored, the rest parsed, and the cache written again when it covered less than all but
    :data:`REWRITE_SHARE` of the whole lines (or nothing). Every run is an
    :class:`~git_autoresearch.ledger.jsontext.ObjectText` holding :data:`CACHED_AT_HAND` (so
    what :func:`ledger.runs_as_text` asks holds too). A shorter ledger, or one read under
    :func:`ledger.only_runs` (a query that skips lines, and so their warnings), is parsed whole,
    uncached. A cache that cannot be written is left as it was, unsaid."""
    if len(data) < (CACHE_FROM if least is None else least) or skipping_runs():
        return parse(data)
    with collector_paused():
        found = _restored(data, cache)
        reader, covered, lines_covered, plain = found or (Reader(CACHED_AT_HAND), 0, 0, True)
        whole = data.rfind(b"\n") + 1  # the end of the last whole line
        body = data[covered:whole]
        if body:
            short, body_plain = number_flags(body)
            plain = plain and body_plain
            pieces = body.split(b"\n")
            pieces.pop()  # (empty: the body ends with its newline)
            reader.read(enumerate(pieces, start=lines_covered + 1), torn=0, short=short)
            lines_covered += len(pieces)
            if found is None or whole - covered > len(data) * REWRITE_SHARE:
                _save(cache, reader, data, whole, lines_covered, plain)
        rest = data[whole:]
        if rest:  # a last line without its newline: read, never cached
            short, rest_plain = number_flags(rest)
            plain = plain and rest_plain
            reader.read([(lines_covered + 1, rest)], torn=lines_covered + 1, short=short)
        return reader.ledger(plain, None if rest else lines_covered)


def _restored(data: bytes, cache: Path) -> tuple[Reader, int, int, bool] | None:
    """The reader of the lines ``cache`` covers, restored, with the length in bytes and lines
    of that prefix and its ``plain_numbers``; None when the cache is missing, unreadable,
    of another format, or covers other bytes than ``data`` begins with."""
    import hashlib  # (OpenSSL, quick on megabytes): only for a ledger long enough to cache

    try:
        raw = cache.read_bytes()
        if hashlib.sha1(memoryview(raw)[20:]).digest() != raw[:20]:
            return None  # (cut short, or changed since it was written)
        state = marshal.loads(memoryview(raw)[20:])
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if type(state) is not tuple or len(state) != 13 or state[:3] != (FORMAT, _MADE_BY, _KEYS):
        return None
    try:
        return _restore(data, state)
    except Exception:  # noqa: BLE001 (a cache is only a cache: anything odd in it, unused)
        return None


def _restore(data: bytes, state: tuple[Any, ...]) -> tuple[Reader, int, int, bool] | None:
    """:func:`_restored` of the cache's ``state``, as :func:`_save` wrote it."""
    import hashlib

    (_, _, _, covered, lines_covered, digest, plain, headers, runs, hooks, events, malformed,
     repeats) = state
    if not 0 < covered <= len(data) or data[covered - 1] != 0x0A \
            or hashlib.sha1(memoryview(data)[:covered]).digest() != digest:
        return None
    lines = data.split(b"\n", lines_covered)
    reader = Reader(CACHED_AT_HAND)
    reader.segments = segments = [Segment(index, header) for index, header in headers]
    reader.hooks, reader.events = hooks, events
    reader.malformed = [Malformed(*fields) for fields in malformed]
    odd = reader.odd
    keys = CACHED_AT_HAND
    restore = ObjectText.restored
    known = Run.known
    for line, segment, at_hand, found in runs:
        text = lines[line - 1].strip()
        run = known(restore(text, at_hand, keys), line, segment, text, at_hand["run"], found)
        segments[segment].runs.append(run)
        if at_hand.get("status") not in STATUSES:
            odd.append(run)
    reader.firsts = None  # (looked up among the runs if a run is read after them)
    reader.repeats = {number: [(line, lines[line - 1].strip()) for line in found]
                      for number, found in repeats.items()}
    return reader, covered, lines_covered, plain


def _save(cache: Path, reader: Reader, data: bytes, covered: int, lines_covered: int,
          plain: bool) -> None:
    """Write the cache of ``reader``, which has read the first ``covered`` bytes of ``data``
    (``lines_covered`` lines), whole or not at all; nothing when it cannot be written."""
    import hashlib

    runs: list[tuple[int, int, dict[str, Any], tuple[str, float | None, float]]] = []
    for segment in reader.segments:
        for run in segment.runs:
            if type(run.data) is not ObjectText:
                return  # (read otherwise than the cache reads: nothing to save)
            runs.append((run.line, run.segment, run.data.at_hand, run.found()))
    state = (FORMAT, _MADE_BY, _KEYS, covered, lines_covered,
             hashlib.sha1(memoryview(data)[:covered]).digest(), plain,
             [(segment.index, segment.header) for segment in reader.segments], runs,
             reader.hooks, reader.events,
             [(m.line, m.reason, m.torn, m.run) for m in reader.malformed],
             {number: [line for line, _ in found] for number, found in reader.repeats.items()})
    with contextlib.suppress(OSError, WriteFailed, ValueError):
        payload = marshal.dumps(state)
        cache.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(cache, hashlib.sha1(payload).digest() + payload, durable=False)
