"""What reading a ledger gives the commands that answer from it: the warnings about records read
otherwise than they say, the next run number, the run a number finds, the refs gc deleted,
the numbers and texts as written, each segment's direction and best. In-process and exact."""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Tool, git, ledger_lines, start_args

from git_autoresearch import ledger


def ledger_bytes(*records: dict[str, Any] | bytes) -> bytes:
    return b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n"
                    for r in records)


# The longest line a reader reads: 1 MiB (ledger.MAX_LINE_BYTES), written out here so that a
# changed limit fails these tests.
LIMIT = 1 << 20
HEADER = {"type": "config", "name": "a", "metricName": "t", "bestDirection": "higher"}


def test_notices_name_the_first_three_odd_statuses_count_the_rest_and_name_repeated_numbers(
        ) -> None:
    """pi-autoresearch 1.6.2 reads a missing or unknown status as keep (extensions/
    pi-autoresearch/jsonl.ts:74): the warning names the first three such records, how many
    more there are, and each run number held by two records with the lines holding it."""
    book = ledger.parse(ledger_bytes(
        HEADER, {"run": 1, "status": "weird", "metric": 1}, {"run": 2, "metric": 2},
        {"run": 3, "status": "keep", "metric": 3}, {"run": 4, "status": "odd", "metric": 4},
        {"run": 5, "status": "bad", "metric": 5}, {"run": 6, "status": "zzz", "metric": 6},
        {"run": 3, "status": "discard", "metric": 7}))
    assert book.notices("log.jsonl") == [
        "log.jsonl: run 1 ('weird'), run 2 (no status), run 4 ('odd') and 2 more: not one of "
        "keep, discard, crash, checks_failed; read as keep, as pi-autoresearch reads it",
        "log.jsonl: run number 3 is on lines 4, 8 (another tool appended to this ledger); "
        "each is read as a run of its own, and show 3 shows the first"]
    assert [(r.number, r.status) for r in book.odd_statuses] == [
        (1, "keep"), (2, "keep"), (4, "keep"), (5, "keep"), (6, "keep")]
    assert book.repeated_numbers == {3: [4, 8]}
    assert book.next_run_number == 7


def test_three_odd_statuses_are_all_named_and_a_fourth_is_counted() -> None:
    book = ledger.parse(ledger_bytes(HEADER, {"run": 1, "status": "a"},
                                     {"run": 2, "status": "b"}, {"run": 3, "status": "c"}))
    assert book.notices("L") == [
        "L: run 1 ('a'), run 2 ('b'), run 3 ('c'): not one of keep, discard, crash, "
        "checks_failed; read as keep, as pi-autoresearch reads it"]
    assert ledger.parse(ledger_bytes(HEADER, {"run": 1, "status": "keep"})).notices("L") == []
    four = ledger.parse(ledger_bytes(HEADER, {"run": 1, "status": "a"}, {"run": 2},
                                     {"run": 3, "status": "c"}, {"run": 4, "status": 5}))
    assert four.notices("L") == [
        "L: run 1 ('a'), run 2 (no status), run 3 ('c') and 1 more: not one of keep, discard, "
        "crash, checks_failed; read as keep, as pi-autoresearch reads it"]


def test_a_run_number_on_a_line_too_long_to_read_is_never_given_again() -> None:
    """A line past 1 MiB is set aside unparsed, but the run number at its start
    still counts: the next run is numbered after it."""
    long_line = b'{"run": 7, "description": "' + b"x" * LIMIT + b'"}'
    book = ledger.parse(ledger_bytes(HEADER, {"run": 1, "status": "keep", "metric": 5},
                                     long_line, {"run": 2, "status": "discard", "metric": 6}))
    assert [r.number for r in book.runs] == [1, 2]
    assert [(m.line, m.run, m.torn) for m in book.malformed] == [(3, 7, False)]
    # A long line within the limit is an ordinary run.
    within = b'{"run": 3, "description": "' + b"y" * (LIMIT * 3 // 4) + b'"}'
    assert [r.number for r in ledger.parse(ledger_bytes(HEADER, within)).runs] == [3]
    assert book.malformed[0].reason == f"line of {len(long_line)} bytes is too long"
    assert book.next_run_number == 8
    assert ledger.parse(b"").next_run_number == 1
    assert ledger.parse(ledger_bytes(HEADER)).next_run_number == 1


def test_a_run_record_with_a_bad_number_is_set_aside_naming_why() -> None:
    book = ledger.parse(ledger_bytes(
        HEADER, {"run": 0}, {"run": True}, {"run": "3"}, {"run": 4, "status": "keep"},
        {"run": 4, "status": "keep"}, b"[1, 2]", b"{not json"))
    assert [(m.line, m.reason, m.run) for m in book.malformed] == [
        (2, "'run' is not a positive whole number", 0),
        (3, "'run' is not a positive whole number", None),
        (4, "'run' is not a positive whole number", None),
        (6, "a copy of line 5 (run 4)", 4),
        (7, "not a JSON object", None),
        (8, "not JSON (JSONDecodeError)", None)]
    assert [r.number for r in book.runs] == [4]
    assert book.next_run_number == 5


def test_a_copy_of_any_record_of_a_repeated_number_is_set_aside_and_the_rest_counted() -> None:
    """A run number written by two tools is read as two runs; a byte-for-byte copy of either
    line (the second included) is set aside naming the line it copies, and counts in no
    notice. What parse finds as it reads (odd statuses, repeated numbers) is what a ledger
    of the same runs gives when asked afterwards, under runs_as_text too."""
    a = {"run": 3, "status": "keep", "metric": 1}
    b = {"run": 3, "status": "weird", "metric": 2}
    data = ledger_bytes(HEADER, a, b, b, {"run": 3, "metric": 4}, a, {"run": 4, "status": "keep"})
    for context in (contextlib.nullcontext(), ledger.runs_as_text()):
        with context:
            book = ledger.parse(data)
        assert [(m.line, m.reason) for m in book.malformed] == [
            (4, "a copy of line 3 (run 3)"), (6, "a copy of line 2 (run 3)")]
        assert book.repeated_numbers == {3: [2, 3, 5]}
        assert [r.line for r in book.odd_statuses] == [3, 5]
        asked = ledger.Ledger(book.segments, book.hooks, book.events, book.malformed)
        assert (asked.repeated_numbers, asked.odd_statuses) == \
            (book.repeated_numbers, book.odd_statuses)
    plain = ledger.parse(ledger_bytes(HEADER, a, {"run": 4, "status": "keep"}))
    assert (plain.repeated_numbers, plain.odd_statuses, plain.notices("L")) == ({}, [], [])


def test_find_gives_the_first_record_or_the_first_this_tool_wrote() -> None:
    """Another tool may number a run as this tool did (:attr:`Ledger.repeated_numbers`):
    ``find(n, ours=True)`` skips its record for ours, which has a field pi's records lack."""
    book = ledger.parse(ledger_bytes(
        HEADER, {"run": 2, "status": "keep", "metric": 1, "description": "pi's"},
        {"run": 2, "status": "keep", "metric": 2, "description": "ours", "duration_s": 1.5}))
    first, ours = book.find(2), book.find(2, ours=True)
    assert first is not None and first.description == "pi's" and not first.ours
    assert ours is not None and ours.description == "ours" and ours.ours
    assert book.find(3) is None and book.find(3, ours=True) is None
    assert ledger.parse(ledger_bytes(HEADER, {"run": 1, "metric": 1})).find(1, ours=True) \
        is None


def test_gc_events_name_the_refs_deleted_on_purpose() -> None:
    book = ledger.parse(ledger_bytes(
        HEADER, {"type": "gc", "deleted": ["refs/a", 3, "refs/b"]},
        {"type": "gc", "deleted": "refs/c"}, {"type": "other", "deleted": ["refs/d"]},
        {"type": "gc", "deleted": ["refs/e"]}))
    assert ledger.collected_refs(book) == {"refs/a", "refs/b", "refs/e"}
    assert [e["type"] for e in book.events] == ["gc", "gc", "other", "gc"]


def test_a_name_that_is_not_utf8_is_written_with_escapes_and_other_text_as_it_is() -> None:
    """A file name kept as lone surrogates cannot be written as UTF-8: the whole line is
    written with ``\\u`` escapes, which read back as the same name; other text is written as
    pi's JSON.stringify writes it, non-ASCII kept."""
    assert ledger.dumps({"path": "a\udcff\u00e9", "n": 1}) == \
        '{"path":"a\\udcff\\u00e9","n":1}'
    assert ledger.dumps({"d": "\u00e9"}) == '{"d":"\u00e9"}'
    line = ledger.dumps({"run": 1, "path": "a\udcff"}).encode("ascii")
    assert ledger.parse(line + b"\n").runs[0].data["path"] == "a\udcff"


def test_whole_metrics_are_written_without_a_fraction_and_others_as_they_are() -> None:
    """The seed shows ``14600``, not ``14600.0``; a float beyond 2**53 or not finite stays a
    float (JSON.stringify's own shortest form)."""
    assert ledger.dumps({"metric": ledger.json_number(14600.0)}) == '{"metric":14600}'
    assert type(ledger.json_number(-3.0)) is int
    assert ledger.json_number(1.5) == 1.5
    big = float(2**53)
    assert type(ledger.json_number(big)) is float
    assert type(ledger.json_number(big - 2)) is int
    assert type(ledger.json_number(float("inf"))) is float
    assert [ledger.finite(v) for v in (True, 3, 2.5, float("nan"), "4", None)] == [
        None, 3.0, 2.5, None, None, None]


def test_run_fields_read_as_pi_reads_them() -> None:
    """A description that is no string is shown as its JSON; a crash has no metric though pi
    reads its 0 (jsonl.ts:118); a metric that is no number makes the line malformed (set
    aside with its reason, as a line that is not JSON is): every reader would take it
    otherwise."""
    book = ledger.parse(ledger_bytes(
        HEADER, {"run": 1, "status": "crash", "metric": 0, "description": ["a", 1]},
        {"run": 2, "status": "discard", "metric": "12"},
        {"run": 3, "status": "checks_failed", "metric": 4.5}))
    crash, failed = book.runs
    assert crash.description == '["a", 1]'
    assert (crash.metric, crash.pi_metric) == (None, 0.0)
    assert (failed.metric, failed.pi_metric, failed.status) == (4.5, 4.5, "checks_failed")
    assert [r.segment for r in book.runs] == [0, 0]
    assert [(m.line, m.reason, m.run) for m in book.malformed] == [
        (3, "'metric' is not a number or null", 2)]


def test_config_lines_before_the_first_run_make_one_header_and_later_ones_open_segments(
        ) -> None:
    """jsonl.ts:105-108: config lines before any run merge into one header, a later line's
    fields winning and a missing ``bestDirection`` reset; a config line after a run opens the
    next segment, whose best is its own."""
    book = ledger.parse(ledger_bytes(
        {"type": "config", "name": "first", "metricUnit": "ms", "bestDirection": "higher"},
        {"type": "config", "name": "second"},
        {"run": 1, "status": "keep", "metric": 10}, {"run": 2, "status": "keep", "metric": 5},
        {"type": "config", "name": "third", "bestDirection": "higher"},
        {"run": 3, "status": "keep", "metric": 1}, {"run": 4, "status": "keep", "metric": 9},
        {"run": 5, "status": "keep", "metric": 9}))
    first, second = book.segments
    assert first.header == {"type": "config", "name": "second", "metricUnit": "ms"}
    assert first.direction == "lower"
    assert first.best is not None and first.best.number == 2
    assert first.baseline is not None and first.baseline.number == 1
    assert second.direction == "higher" and book.current is second
    assert second.best is not None and second.best.number == 4  # the earliest of a tie
    assert [r.segment for r in book.runs] == [0, 0, 1, 1, 1]
    assert book.config_header == second.header
    alone = ledger.parse(ledger_bytes(HEADER, {"run": 1, "status": "keep", "metric": 1}))
    assert alone.current.header == HEADER and alone.current.direction == "higher"
    turned = ledger.parse(ledger_bytes(
        {"type": "config", "name": "x", "bestDirection": "lower"}, HEADER))
    assert turned.current.header == HEADER and turned.current.direction == "higher"
    assert book.last_run is not None and book.last_run.number == 5


def test_an_unknown_direction_reads_as_lower_and_a_segment_without_keeps_has_no_best() -> None:
    book = ledger.parse(ledger_bytes(
        {"type": "config", "name": "x", "bestDirection": "sideways"},
        {"run": 1, "status": "discard", "metric": 3}, {"run": 2, "status": "crash", "metric": 0}))
    segment = book.current
    assert segment.direction == "lower"
    assert (segment.baseline, segment.best, segment.kept) == (None, None, [])
    assert segment.better(1.0, 2.0) and not segment.better(2.0, 2.0)
    assert ledger.parse(b"").last_run is None


def test_version_changes_with_the_file_and_reads_none_without_one(tmp_path: Path) -> None:
    """The stamp stays while the file does, and changes with its size, with a rewrite in
    place that keeps the size and puts the modification time back (touch -r), and with a
    file of the same size and times renamed over it."""
    import os

    path = tmp_path / "log.jsonl"
    assert ledger.version(path) == "none"
    path.write_bytes(b"{}\n")
    first = ledger.version(path)
    assert ledger.version(path) == first
    path.write_bytes(b"{}\n{}\n")
    grown = ledger.version(path)
    assert grown != first
    before = path.stat()
    path.write_bytes(b"[]\n[]\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    edited = ledger.version(path)
    assert edited != grown
    other = tmp_path / "other"
    other.write_bytes(b"{}\n{}\n")
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    other.replace(path)
    assert ledger.version(path) not in (first, grown, edited)


def test_start_writes_the_header_with_this_formats_version_and_its_config(
        repo: Path, ar: Tool) -> None:
    """The ledger's header (README, "Files"): pi-autoresearch's header fields as written,
    plus ``config_hash`` (the SHA-256 of config.toml's bytes), ``session_id`` and this
    format's ``version``, 1."""
    ar(repo, *start_args())
    header = ledger_lines(repo)[0]
    config = (repo / ".auto" / "config.toml").read_bytes()
    assert header["version"] == 1 == ledger.VERSION
    assert {k: header[k] for k in ("type", "name", "metricName", "metricUnit", "bestDirection",
                                   "session_id", "no_baseline")} == {
        "type": "config", "name": "lower the value", "metricName": "score", "metricUnit": "",
        "bestDirection": "lower", "session_id": "s1", "no_baseline": False}
    assert header["config_hash"] == "sha256:" + hashlib.sha256(config).hexdigest()
    assert header["base_commit"] == git(repo, "rev-parse", "main")


def test_the_header_and_the_baseline_are_stamped_with_now_in_milliseconds(
        repo: Path, ar: Tool) -> None:
    """The ledger's ``timestamp`` is epoch milliseconds, as pi-autoresearch writes
    ``Date.now()`` (extensions/pi-autoresearch/index.ts:2282): between the clock read before the
    command and after it."""
    before = int(time.time() * 1000)
    ar(repo, *start_args())
    after = int(time.time() * 1000) + 1
    header, baseline = ledger_lines(repo)[:2]
    assert before <= header["timestamp"] <= baseline["timestamp"] <= after
    assert before <= ledger.now_ms() and isinstance(ledger.now_ms(), int)


def test_only_the_last_line_without_its_newline_is_torn_and_the_length_limit_is_inclusive(
        ) -> None:
    """A cut-short append is the last line without its newline, even after an empty first
    line; a bad line before it is not torn. A line of exactly 1 MiB is read; one byte
    more is set aside, its run number read from its first 40 bytes only."""
    data = b"\n" + ledger_bytes(HEADER, b"{bad", {"run": 1, "status": "keep"}) + b'{"run": 2'
    book = ledger.parse(data)
    assert [(m.line, m.torn) for m in book.malformed] == [(3, False), (5, True)]
    assert ledger.parse(ledger_bytes(HEADER, b"{bad")).malformed[0].torn is False

    def line_of(size: int, prefix: bytes) -> bytes:
        head = prefix + b'"description": "'
        return head + b"x" * (size - len(head) - 2) + b'"}'

    exact = line_of(LIMIT, b'{"run": 3, ')
    assert len(exact) == LIMIT == ledger.MAX_LINE_BYTES
    assert [r.number for r in ledger.parse(ledger_bytes(exact)).runs] == [3]
    forty = b'{"run":' + b" " * 31 + b"7,"  # the number and its comma end at byte 40
    over = line_of(LIMIT + 1, forty)
    book = ledger.parse(ledger_bytes(over))
    assert (book.runs, [m.run for m in book.malformed], book.next_run_number) == ([], [7], 8)
    beyond = line_of(LIMIT + 1, b'{"run":' + b" " * 32 + b"7,")
    assert [m.run for m in ledger.parse(ledger_bytes(beyond)).malformed] == [None]


def test_only_runs_skips_exactly_the_run_lines_a_query_rules_out_after_each_baseline() -> None:
    """Under ``only_runs`` a run line the query's quick test rules out is left unparsed, unless
    it comes before or is its segment's baseline (the first kept run with a metric), or holds
    a ``"type"`` key or a ``\\u`` escape that could hide one; config lines are always read.
    Every other line is read as a full read reads it."""
    records = [
        {"type": "config", "name": "a", "metricName": "t"},
        {"run": 1, "status": "crash", "metric": 0}, {"run": 2, "status": "keep", "metric": 5},
        {"run": 3, "status": "discard", "metric": 6},
        {"run": 4, "status": "keep", "metric": 4, "asi": {"type": "x"}},
        {"type": "config", "name": "b", "metricName": "t"},
        {"run": 5, "status": "discard", "metric": 1}, {"run": 6, "status": "keep", "metric": 2},
        {"run": 7, "status": "discard", "metric": 3}]
    data = b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records)
    data += b'{"run":8,"status":"discard","description":"\\u00e9"}\n'
    data += b'{"run":9,"status":"keep","metric":1}\n'
    asked: list[int] = []

    def nothing(lines: list[bytes]) -> list[bool]:
        asked.append(len(lines))
        return [False] * len(lines)

    with ledger.only_runs(nothing):
        book = ledger.parse(data)
    assert asked == [12]
    assert [[(r.number, r.line) for r in s.runs] for s in book.segments] == [
        [(1, 2), (2, 3), (4, 5)], [(5, 7), (6, 8), (8, 10)]]
    assert book.malformed == []
    with ledger.only_runs(lambda lines: [b'"run":9' in x or b'"run":3' in x for x in lines]):
        assert [r.number for r in ledger.parse(data).runs] == [1, 2, 3, 4, 5, 6, 8, 9]
    assert [r.number for r in ledger.parse(data).runs] == list(range(1, 10))
    # A ledger whose first run is its baseline and whose last line is a skipped run.
    data = ledger_bytes(HEADER, b'{"run":1,"status":"keep","metric":3}',
                        b'{"run":2,"status":"discard","metric":4}')
    with ledger.only_runs(nothing):
        assert [r.number for r in ledger.parse(data).runs] == [1]
    # A line that could hide a key, before the baseline, is read once; a ledger without a
    # header is read from its first line.
    data = ledger_bytes(HEADER, b'{"run":1,"status":"crash","metric":0,"asi":{"type":1}}',
                        b'{"run":2,"status":"keep","metric":3}')
    with ledger.only_runs(nothing):
        book = ledger.parse(data)
    assert ([(r.number, r.line) for r in book.runs], book.malformed) == ([(1, 2), (2, 3)], [])
    data = ledger_bytes(b'{"run":1,"status":"crash","metric":0}',
                        b'{"run":2,"status":"keep","metric":3}',
                        b'{"run":3,"status":"discard","metric":4}')
    with ledger.only_runs(nothing):
        assert [(r.number, r.line) for r in ledger.parse(data).runs] == [(1, 1), (2, 2)]
    # No baseline yet and the last line a run without its newline: every line is read.
    data = ledger_bytes(HEADER, b'{"run":1,"status":"crash","metric":0}') \
        + b'{"run":2,"status":"discard","metric":4}'
    with ledger.only_runs(nothing):
        assert [(r.number, r.line) for r in ledger.parse(data).runs] == [(1, 2), (2, 3)]


def test_append_writes_whole_lines_refuses_a_line_past_the_limit_and_reads_a_missing_file(
        tmp_path: Path) -> None:
    """An empty ledger is not a torn one: the records go in as they are. A record whose line
    would pass 1 MiB is refused before anything is written, naming its size. A ledger that
    does not exist reads as empty."""
    path = tmp_path / "log.jsonl"
    assert ledger.read(path).runs == [] and ledger.read(path).next_run_number == 1
    path.write_bytes(b"")
    ledger.append(path, [HEADER, {"run": 1, "status": "keep", "metric": 2.0}])
    assert path.read_bytes() == (b'{"type":"config","name":"a","metricName":"t",'
                                 b'"bestDirection":"higher"}\n'
                                 b'{"run":1,"status":"keep","metric":2}\n')
    before = path.read_bytes()
    record = {"run": 2, "description": "x" * LIMIT}
    size = len(ledger.dumps(record).encode())
    with pytest.raises(ValueError) as refused:
        ledger.append(path, [{"run": 2}, record])
    assert str(refused.value) == (f"a ledger line of {size} bytes is longer than the {LIMIT} "
                                  "bytes a reader reads")
    assert path.read_bytes() == before
    exact = {"run": 2, "description": "y" * (LIMIT - len('{"run":2,"description":""}'))}
    assert len(ledger.dumps(exact)) == LIMIT
    ledger.append(path, [exact])
    assert [r.number for r in ledger.read(path).runs] == [1, 2]


def test_find_takes_any_tool_s_record_unless_asked_for_ours() -> None:
    """``find(n)`` is the first record numbered n, whoever wrote it (pi-autoresearch's records
    have none of our fields); ``find(n, ours=True)`` only one of this tool's."""
    pi_run = {"run": 3, "commit": "abc1234", "metric": 9, "status": "keep"}
    our_run = {**pi_run, "metric": 8, "duration_s": 1.0}
    book = ledger.parse(ledger_bytes({"type": "config", "bestDirection": "lower"}, pi_run,
                                     our_run))
    found = book.find(3)
    assert found is not None and found.data == pi_run and not found.ours
    ours = book.find(3, ours=True)
    assert ours is not None and ours.data == our_run and ours.line == 3
    assert ledger.parse(ledger_bytes(pi_run)).find(3, ours=True) is None
    assert book.find(4) is None
