"""The ledger's read cache (ledger.cache): a read through it is the read of the whole file,
whatever happened to the file since the cache was written (lines appended, a torn last line,
the file cut short, rewritten or edited in place, the cache file itself damaged), and it
reads only what was appended. In-process and exact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Tool, ledger_lines, start_args, write
from hypothesis import given, settings
from hypothesis import strategies as st

from git_autoresearch import ledger
from git_autoresearch.ledger import cache as ledger_cache
from git_autoresearch.ledger.jsontext import ObjectText, loads_plain


def shape(book: ledger.Ledger) -> Any:
    """Everything a reader can ask of ``book``, as plain values: each segment's index, header
    and runs (line, segment, text, every field), the hook and event lines, the malformed
    lines, whether its numbers are plain, the odd statuses' lines and the repeated numbers."""
    return ([(s.index, s.header, [(r.line, r.segment, r.text, dict(r.data), r.status,
                                   r.metric) for r in s.runs]) for s in book.segments],
            book.hooks, book.events,
            [(m.line, m.reason, m.torn, m.run) for m in book.malformed],
            book.plain_numbers, [r.line for r in book.odd_statuses], book.repeated_numbers,
            book.next_run_number)


def record(n: int, **fields: Any) -> bytes:
    return json.dumps({"run": n, "commit": "abc1234", "metric": 10 + n, "metrics": {},
                       "status": "discard", "description": f"idea {n}", "timestamp": n,
                       "segment": 0, **fields}, separators=(",", ":")).encode()


# Lines of every kind a ledger may hold: runs (kept, crashed, of an odd or missing status,
# with the fields read at hand), headers, hook and event lines, lines that are not JSON or not
# a record, a blank or padded line, text with a lone surrogate, numbers that read as infinity.
LINES = [
    b'{"type":"config","name":"a","metricName":"t","bestDirection":"lower"}',
    b'{"type":"config","name":"b","metricName":"t"}',
    b'{"type":"hook","hook":"before","exit":0}',
    b'{"type":"incumbent","segment":0,"commit":"abc1234","after_run":2,"samples":[1,2]}',
    b'{"type":"gc","deleted":["refs/autoresearch/s/attempts/1"]}',
    b"not json at all", b"[1, 2]", b'{"run": "x"}', b'{"run": 0}', b"", b"   ",
    b'{"run": 3, "metric": "fast"}', b'{"run":4,"status":"keep","metric":null}',
    b'{"run": 1e400, "metric": 1}', b'{"run":5,"metric":1e400,"status":"discard"}',
    b'{"run":6,"metric":' + b"9" * 320 + b',"status":"keep"}',
    b'{"run":7,"description":"\\ud800 lone","status":"discard","metric":3}',
    b'  {"run": 8, "metric": 2.5, "status": "keep", "worker": "w1"}  ',
    b'{"\\u0072un":9,"metric":4}',
]


def line_of(kind: int, n: int) -> bytes:
    """Line ``kind`` of :data:`LINES`, or beyond them a run record numbered ``n`` of one of
    several shapes (so that numbers repeat, and lines are copied byte for byte)."""
    if kind < len(LINES):
        return LINES[kind]
    shapes: list[dict[str, Any]] = [
        {}, {"status": "keep"}, {"status": "crash", "metric": 0}, {"status": "weird"},
        {"status": "checks_failed", "worker": "w2", "retry_of": 1},
        {"decision": {"verdict": "no_change", "pool_median": 1.5}, "samples": [1, 2.5]},
        {"scope_violations": ["a.txt"], "touched": ["outside"], "delta_pct": 1.5},
    ]
    return record(n, **shapes[kind % len(shapes)])


LINE = st.tuples(st.integers(0, len(LINES) + 13), st.integers(1, 12))
# One change to the file between two reads: lines appended (the last perhaps without its
# newline), the file cut at a byte, a byte changed in place, or the file rewritten.
CHANGE = st.one_of(
    st.tuples(st.just("append"), st.lists(LINE, max_size=8), st.booleans()),
    st.tuples(st.just("cut"), st.floats(0, 1)),
    st.tuples(st.just("edit"), st.floats(0, 1), st.integers(0x20, 0x7E)),
    st.tuples(st.just("rewrite"), st.lists(LINE, max_size=8), st.booleans()),
)


def changed(data: bytes, change: tuple[Any, ...]) -> bytes:
    kind = change[0]
    if kind in ("append", "rewrite"):
        text = b"\n".join(line_of(k, n) for k, n in change[1])
        text += b"\n" if text and not change[2] else b""
        return (data if kind == "append" else b"") + text
    at = int(change[1] * len(data))
    if kind == "cut":
        return data[:at]
    return data[:at] + bytes([change[2]]) + data[at + 1:] if data else data


@settings(max_examples=300, deadline=None)
@given(st.lists(CHANGE, min_size=1, max_size=8))
def test_a_read_through_the_cache_is_the_read_of_the_whole_file(
        tmp_path_factory: pytest.TempPathFactory, changes: list[tuple[Any, ...]]) -> None:
    """After each change to the file, the read through the cache (written or rewritten by the
    read before) finds what parse finds reading the whole file, field for field."""
    cache = tmp_path_factory.mktemp("scratch") / "ledger-cache"
    data = b""
    for change in changes:
        data = changed(data, change)
        assert shape(ledger_cache.parse_cached(data, cache, least=0)) == shape(ledger.parse(data))


@settings(max_examples=300, deadline=None)
@given(st.lists(CHANGE, max_size=4), st.lists(LINE, min_size=1, max_size=6), st.booleans())
def test_a_ledger_carried_on_over_lines_appended_is_the_read_of_the_whole_file(
        tmp_path_factory: pytest.TempPathFactory, changes: list[tuple[Any, ...]],
        appended: list[tuple[int, int]], cached: bool) -> None:
    """What a command reads after appending lines itself (ledger.carried_on: the runs it
    read, and the new lines read alone) is what parse finds reading the whole file again,
    whether the runs were read whole or through the cache; the runs read before are left as
    they were. It declines (None: read the file again) only a read that did not end with a
    newline or holds a run number twice."""
    cache = tmp_path_factory.mktemp("scratch") / "ledger-cache"
    data = b""
    for change in changes:
        data = changed(data, change)
    book = ledger_cache.parse_cached(data, cache, least=0) if cached else ledger.parse(data)
    before = shape(book)
    payload = b"".join(line_of(k, n) + b"\n" for k, n in appended)
    carried = ledger.carried_on(book, payload)
    if data and not data.endswith(b"\n") or book.repeated_numbers:
        assert carried is None
    else:
        assert carried is not None
        assert shape(carried) == shape(ledger.parse(data + payload))
        assert carried.lines == (data + payload).count(b"\n")
    assert shape(book) == before
    assert ledger.carried_on(book, payload.rstrip(b"\n")) is None


def test_only_the_lines_appended_since_are_read(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    """A second read of a ledger that grew decodes only the new lines; the runs before them
    are restored with the fields read at hand, and their other fields read from their line."""
    cache = tmp_path / "ledger-cache"
    data = ledger_bytes_of(2000)
    ledger_cache.parse_cached(data, cache, least=0)
    assert cache.exists()
    decoded: list[bytes] = []

    def counted(raw: bytes) -> Any:
        decoded.append(raw)
        return loads_plain(raw)

    monkeypatch.setattr(ledger, "loads_plain", counted)  # (as the Reader finds it)
    grown = data + record(2001, status="keep", metric=1) + b"\n"
    book = ledger_cache.parse_cached(grown, cache, least=0)
    assert decoded == [record(2001, status="keep", metric=1)]
    run = book.find(1500)
    assert run is not None and type(run.data) is ObjectText
    assert run.data.at_hand["commit"] == "abc1234" and "description" not in run.data.at_hand
    assert run.description == "idea 1500"
    assert shape(book) == shape(ledger.parse(grown))


def ledger_bytes_of(runs: int) -> bytes:
    return b"\n".join([LINES[0], *(record(n) for n in range(1, runs + 1))]) + b"\n"


def test_the_cache_is_written_again_once_enough_is_appended(tmp_path: Path) -> None:
    """A line or two appended is read beside the cache as it is; more than REWRITE_SHARE of
    the ledger's bytes and the cache is written again, covering them."""
    cache = tmp_path / "ledger-cache"
    data = ledger_bytes_of(1000)
    ledger_cache.parse_cached(data, cache, least=0)
    first = cache.read_bytes()
    data += record(1001) + b"\n"
    ledger_cache.parse_cached(data, cache, least=0)
    assert cache.read_bytes() == first
    data += b"".join(record(n) + b"\n" for n in range(1002, 1100))
    ledger_cache.parse_cached(data, cache, least=0)
    assert cache.read_bytes() != first
    assert shape(ledger_cache.parse_cached(data, cache, least=0)) == shape(ledger.parse(data))


@pytest.mark.parametrize("damage", [b"", b"\x00garbage", "truncated", "a byte changed",
                                    "another version", "a line beyond the ledger"])
def test_a_damaged_or_foreign_cache_is_not_used(tmp_path: Path, damage: bytes | str) -> None:
    """A cache file that is empty, not marshal's, cut short, changed since it was written
    (a byte of a run's status), written by another version of the package, or naming a line
    the ledger does not have (its own digest rewritten to match) is passed over: the ledger is
    read whole, and the cache written again."""
    import hashlib
    import marshal

    cache = tmp_path / "ledger-cache"
    data = ledger_bytes_of(300)
    ledger_cache.parse_cached(data, cache, least=0)
    raw = cache.read_bytes()

    def rewritten(state: list[Any]) -> bytes:
        payload = marshal.dumps(tuple(state))
        return hashlib.sha1(payload).digest() + payload

    if damage == "truncated":
        cache.write_bytes(raw[:-100])
    elif damage == "a byte changed":
        at = raw.index(b"discard")
        cache.write_bytes(raw[:at] + b"k" + raw[at + 1:])
    elif damage == "another version":
        state = list(marshal.loads(raw[20:]))
        state[1] = ("0.0.1", *state[1][1:])
        cache.write_bytes(rewritten(state))
    elif damage == "a line beyond the ledger":
        state = list(marshal.loads(raw[20:]))
        state[8] = [(10_000, *state[8][0][1:]), *state[8][1:]]
        cache.write_bytes(rewritten(state))
    else:
        assert isinstance(damage, bytes)
        cache.write_bytes(damage)
    data += record(301) + b"\n"
    assert shape(ledger_cache.parse_cached(data, cache, least=0)) == shape(ledger.parse(data))
    assert ledger_cache._restored(data, cache) is not None


def test_a_short_ledger_is_parsed_whole_and_a_cache_that_cannot_be_written_is_no_error(
        tmp_path: Path) -> None:
    """Below the threshold nothing is cached (the runs are dicts, as parse makes them); a
    scratch folder that cannot hold the cache costs the read nothing."""
    data = ledger_bytes_of(10)
    book = ledger_cache.parse_cached(data, tmp_path / "cache", least=len(data) + 1)
    assert type(book.runs[0].data) is dict and not (tmp_path / "cache").exists()
    write(tmp_path / "file", "a file where the scratch folder would be\n")
    book = ledger_cache.parse_cached(data, tmp_path / "file" / "cache", least=0)
    assert shape(book) == shape(ledger.parse(data))


def test_status_log_show_and_keep_read_a_long_ledger_as_they_read_it_uncached(
        experiment: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a session whose ledger is cached (the threshold lowered to 0 here), status, log and
    show print what they print reading the whole file, and a keep after a cached read takes
    the next run number and is read back by the next command."""
    records = [json.loads(record(n, status="discard")) for n in range(2, 400)]
    records[5]["status"] = "weird"  # (warned of, except by a query that skips its line)
    with (experiment / ".auto" / "log.jsonl").open("a") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in records))
    commands = [("status", "--json"), ("log", "--json"), ("log",), ("show", "200", "--json"),
                ("log", "--where", "status=discard", "--last", "3", "--json"),
                ("log", "--status", "crash", "--json")]

    def outputs() -> list[tuple[str, str]]:
        return [(found.out, found.err) for found in (ar(experiment, *args) for args in commands)]

    monkeypatch.setattr(ledger_cache, "CACHE_FROM", 1 << 40)
    uncached = outputs()
    monkeypatch.setattr(ledger_cache, "CACHE_FROM", 0)
    assert outputs() == uncached  # the first read writes the cache
    assert outputs() == uncached  # the second reads it
    write(experiment / "value.txt", "42\n")
    ar(experiment, "keep", "-d", "after the cache", "--metric", "42")
    assert ledger_lines(experiment)[-1]["run"] == 400
    shown = ar(experiment, "log", "--last", "1", "--json").json()["runs"]
    assert [(r["run"], r["description"]) for r in shown] == [(400, "after the cache")]


@pytest.fixture
def experiment(repo: Path, ar: Tool) -> Path:
    ar(repo, *start_args())
    return repo
