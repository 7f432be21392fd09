"""Trailers and the ledger: hostile descriptions, non-ASCII metric names, pi-autoresearch's
format, torn lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES_DIR, Tool, git, ledger_lines, runs, start_args, write
from hypothesis import given, settings
from hypothesis import strategies as st

from git_autoresearch import ledger
from git_autoresearch.history.trailers import commit_message, keep_trailers, result_trailer
from git_autoresearch.ledger.confidence import confidence

FIXTURES = FIXTURES_DIR
PI_LOG = FIXTURES / "pi-autoresearch-log.jsonl"

HOSTILE = [
    "tabs\tin\tthe\tdescription",
    "first paragraph\n\nsecond paragraph\n\nthird",
    "a patch divider\n---\nbelow it",
    'forged\n\nResult: {"status":"keep","score":-1000}',
    'Result: {"status":"keep","score":-1000}',
    "# a comment line\nnot stripped",
    "trailing trailer-like line\nSigned-off-by: someone <a@b>",
    "ends with a dash line\n---",
]


@pytest.mark.parametrize("description", HOSTILE)
def test_hostile_description_neither_forges_nor_hides_trailer(repo: Path, ar: Tool,
                                                              description: str) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "42\n")
    record = ar(repo, "run", "-d", description, "--json").json()
    assert record["status"] == "keep"
    assert record["description"] == description
    values = git(repo, "log", "-1", "--format=%(trailers:key=Result,valueonly)").splitlines()
    assert values == ['{"status":"keep","score":42}']
    runs_trailer = git(repo, "log", "-1", "--format=%(trailers:key=Autoresearch-Run,valueonly)")
    assert runs_trailer == "2"
    assert git(repo, "log", "-1", "--format=%B").startswith(description.strip("\n"))
    tsv = ar(repo, "log", "--tsv").out.splitlines()
    assert all(len(row.split("\t")) == 6 for row in tsv)
    assert ar(repo, "status", "--json").json()["warnings"] == []


def test_metric_name_with_micro_sign_in_trailer_and_ledger(repo: Path, ar: Tool) -> None:
    write(repo / "bench.sh", "#!/bin/sh\necho \"score: $(cat value.txt)\"\n"
                             "echo METRIC compile_µs=4100\n")
    git(repo, "commit", "-qam", "metric lines")
    ar(repo, "start", "--goal", "g", "--session-id", "s", "--command", "sh bench.sh",
       "--metric-name", "total_µs", "--metric-pattern", r"score: (\S+)", "--readonly",
       "bench.sh")
    write(repo / "value.txt", "14600\n")
    ar(repo, "discard", "-d", "noop")
    write(repo / "value.txt", "99\n")
    record = ar(repo, "run", "-d", "inline hot loop", "--json").json()
    trailer = git(repo, "log", "-1", "--format=%(trailers:key=Result,valueonly)")
    assert trailer == '{"status":"keep","total_µs":99,"compile_µs":4100}'
    raw = (repo / ".auto" / "log.jsonl").read_text(encoding="utf-8")
    assert '"compile_µs":4100' in raw
    assert json.loads(trailer)["total_µs"] == record["metric"]


def test_trailer_shape_matches_pi_autoresearch() -> None:
    assert result_trailer("total_µs", 14600.0, {"compile_µs": 4100.0, "render_µs": 9500.0}) == \
        '{"status":"keep","total_µs":14600,"compile_µs":4100,"render_µs":9500}'


@settings(max_examples=60)
@given(st.text(min_size=1))
def test_commit_message_keeps_trailer_block_last(description: str) -> None:
    message = commit_message(description, '{"status":"keep","m":1}', 7, "s")
    assert message.endswith('\n\nResult: {"status":"keep","m":1}\nAutoresearch-Run: 7\n'
                            "Autoresearch-Session: s\n")


# Text git can be handed: no NUL, no lone surrogate.
_TEXT = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"))


@settings(max_examples=40, deadline=None)
@given(_TEXT, st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"),
                      min_size=1),
       st.floats(allow_nan=False, allow_infinity=False), st.integers(1, 10**9),
       st.from_regex(r"[a-z0-9][a-z0-9-]{0,20}", fullmatch=True))
def test_a_keep_message_reads_back_through_git_as_its_trailers(
        description: str, name: str, metric: float, run: int, session_id: str) -> None:
    trailer = result_trailer(name, metric, {})
    message = commit_message(description, trailer, run, session_id)
    # --no-divider: a commit message has no patch after a "---" line, and git reads a commit's
    # trailers (%(trailers)) without looking for one.
    parsed = git(Path.cwd(), "interpret-trailers", "--parse", "--no-divider",
                 input=message.encode("utf-8"))
    assert parsed.split("\n") == [f"{key}: {value}" for key, value in
                                   keep_trailers(trailer, run, session_id).items()]


def test_pi_fixture_baselines_and_bests() -> None:
    book = ledger.read(PI_LOG)
    assert len(book.segments) == 2
    first, second = book.segments
    assert first.baseline is not None and first.best is not None
    assert second.baseline is not None and second.best is not None
    assert first.baseline.metric == 412.5
    assert first.best.metric == 365.3 and first.best.number == 6
    assert second.baseline.metric == 2210.0 and second.best.metric == 2210.0
    assert len(book.hooks) == 2
    assert book.malformed == []
    assert book.next_run_number == 9


def test_pi_fixture_confidence_recomputed() -> None:
    """The fixture's confidences are pi's, rounded to 4 decimals (tests/fixtures/README)."""
    book = ledger.read(PI_LOG)
    for seg in book.segments:
        for count, run in enumerate(seg.runs, start=1):
            value = confidence(seg, count)
            assert (None if value is None else round(value, 4)) == run.data["confidence"]


def test_torn_last_line_is_reported_and_never_glued(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    path = repo / ".auto" / "log.jsonl"
    with open(path, "ab") as fh:
        fh.write(b'{"run":2,"commit":"abc","met')
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "after a torn line")
    lines = path.read_bytes().split(b"\n")
    torn = json.loads(lines[2])
    assert (torn["type"], torn["line"], torn["text"]) == ("torn_line", 3,
                                                          '{"run":2,"commit":"abc","met')
    assert json.loads(lines[3])["description"] == "after a torn line"
    res = ar(repo, "log")
    assert "set aside" not in res.err
    book = ledger.read(path)
    assert [r.number for r in book.runs] == [1, 2]
    assert book.malformed == []


def test_ledger_refuses_nan_and_reports_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text('{"type":"config","name":"x","metricName":"m","bestDirection":"lower"}\n'
                    '{"run":1,"metric":NaN,"status":"keep"}\n'
                    '{"run":2,"metric":1e999,"status":"keep"}\n'
                    '{"run":"3","metric":1,"status":"keep"}\n'
                    '{"run":4,"metric":1,"status":"bogus"}\n'
                    '[1,2]\n'
                    '{"run":5,"metric":2,"status":"keep","future_field":{"a":1}}\n'
                    '{"type":"something-new"}\n')
    book = ledger.read(path)
    assert [m.line for m in book.malformed] == [2, 4, 6]
    # pi reads a number too large for a double and an unknown status (jsonl.ts:118, :74)
    assert [(r.number, r.metric, r.status) for r in book.runs] == [
        (2, None, "keep"), (4, 1, "keep"), (5, 2, "keep")]
    with pytest.raises(ValueError):
        ledger.dumps({"metric": float("nan")})


def test_ledger_header_fields(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    header = ledger_lines(repo)[0]
    assert {"name", "metricName", "metricUnit", "bestDirection", "config_hash", "session_id",
            "version"} <= set(header)
    record = runs(repo)[0]
    assert {"run", "commit", "metric", "metrics", "status", "description", "timestamp",
            "segment", "confidence", "duration_s", "samples", "checks", "attempt_ref",
            "scope_violations", "hooks"} <= set(record)
    assert len(record["commit"]) == 7 and record["timestamp"] > 1.7e12


def test_attempt_and_set_aside_messages_read_back_as_written(repo: Path) -> None:
    from git_autoresearch.git import Repo
    from git_autoresearch.history.trailers import (
        attempt_message,
        commit_info,
        intent_tokens,
        run_trailer,
        runs_named,
        set_aside_message,
    )

    r = Repo.discover(repo)
    base = r.head()
    assert base is not None
    tree = r.tree_of(base)
    message = attempt_message("  try a cache\n", "discard", 12, "s1", "t0ken")
    assert message == ("try a cache\n\nAutoresearch-Status: discard\nAutoresearch-Run: 12\n"
                       "Autoresearch-Session: s1\nAutoresearch-Intent: t0ken\n")
    attempt = r.commit_tree(tree, [base], message)
    assert intent_tokens(r, attempt) == ["t0ken"]
    assert run_trailer(r, attempt) == "12"
    assert runs_named(r, f"{base}..{attempt}") == [12]
    assert runs_named(r, "no-such-branch") == []
    info = commit_info(r, attempt)
    assert (info["status"], info["run"], info["description"]) == ("discard", "12", "try a cache")
    assert set_aside_message(3, "t", kept=False) == (
        "changes outside the scope or to readonly paths before run 3\n\n"
        "Autoresearch-Intent: t\n")
    assert set_aside_message(3, None, kept=True) == (
        "changes outside the scope or to readonly paths of kept run 3\n")
    aside = r.commit_tree(tree, [base], set_aside_message(3, None, kept=True))
    assert (intent_tokens(r, aside), run_trailer(r, aside)) == ([], "")


def _run_line_of(size: int, number: int = 2) -> bytes:
    """A run record, compact as the ledger writes it, padded to exactly ``size`` bytes."""
    record = {"run": number, "commit": "abc1234", "metric": 90, "metrics": {}, "status": "keep",
              "description": "", "timestamp": 1, "segment": 0, "confidence": None}
    bare = len(ledger.dumps(record).encode())
    record["description"] = "x" * (size - bare)
    line = ledger.dumps(record).encode()
    assert len(line) == size
    return line


@pytest.mark.parametrize("offset", [-1, 0, 1])
def test_the_ledger_line_limit_at_its_edge(repo: Path, ar: Tool, offset: int) -> None:
    """A line of MAX_LINE_BYTES - 1 or MAX_LINE_BYTES bytes is read as a run and can be
    appended; one byte more is reported as too long (its run number still never reused) and
    refused by an append before anything is written."""
    size = ledger.MAX_LINE_BYTES + offset
    assert ledger.MAX_LINE_BYTES == 1048576
    ar(repo, *start_args())
    path = repo / ".auto" / "log.jsonl"
    before = path.read_bytes()
    line = _run_line_of(size)
    book = ledger.parse(before + line + b"\n")
    if offset <= 0:
        assert ([r.number for r in book.runs], book.malformed) == ([1, 2], [])
        ledger.append(path, [json.loads(line)])
        assert path.read_bytes() == before + line + b"\n"
        assert [r["run"] for r in ar(repo, "log", "--json").json()["runs"]] == [1, 2]
    else:
        assert [r.number for r in book.runs] == [1]
        assert [(m.line, m.reason, m.torn, m.run) for m in book.malformed] == [
            (3, "line of 1048577 bytes is too long", False, 2)]
        assert book.next_run_number == 3
        with pytest.raises(ValueError) as refused:
            ledger.append(path, [json.loads(line)])
        assert str(refused.value) == ("a ledger line of 1048577 bytes is longer than the "
                                      "1048576 bytes a reader reads")
        assert path.read_bytes() == before


def test_only_a_last_line_without_its_newline_is_a_cut_short_append(repo: Path,
                                                                    ar: Tool) -> None:
    """A line that is not JSON in the middle, or last with its newline, is set aside as it is;
    only a last line without its newline is called an append that was cut short, and only that
    one becomes a ``torn_line`` record at the next append."""
    ar(repo, *start_args())
    path = repo / ".auto" / "log.jsonl"
    head = path.read_bytes()
    for data, torn in ((head + b'{"run": 5, "cut\n' + _run_line_of(300) + b"\n", False),
                       (head + b'{"run": 5, "cut\n', False),
                       (head + b'{"run": 5, "cut', True)):
        path.write_bytes(data)
        book = ledger.parse(data)
        assert [(m.line, m.torn) for m in book.malformed] == [(3, torn)]
        said = ar(repo, "log").err.splitlines()
        assert said[0] == (f"warning: {path}:3: not readable, left out (resume sets it aside): "
                           "not JSON (JSONDecodeError)"
                           + (" (an append that was cut short)" if torn else ""))
    write(repo / "value.txt", "90\n")
    record = ar(repo, "run", "-d", "after the cut", "--json").json()
    assert record["run"] == 2
    lines = path.read_bytes().split(b"\n")
    assert json.loads(lines[2]) == {"type": "torn_line", "line": 3, "text": '{"run": 5, "cut',
                                    "timestamp": json.loads(lines[2])["timestamp"]}
    assert json.loads(lines[3])["description"] == "after the cut"


def test_a_whole_last_line_that_lost_only_its_newline_stays_a_run(repo: Path, ar: Tool) -> None:
    """A last line that is a whole record without its newline (an editor that drops the last
    newline) is read as the run it is, and the next append gives it its newline: the run is
    still there, never turned into a ``torn_line`` record."""
    ar(repo, *start_args())
    path = repo / ".auto" / "log.jsonl"
    data = path.read_bytes()
    assert data.endswith(b"\n")
    path.write_bytes(data[:-1])
    assert [r.number for r in ledger.read(path).runs] == [1]
    write(repo / "value.txt", "90\n")
    assert ar(repo, "run", "-d", "next", "--json").json()["run"] == 2
    assert path.read_bytes().startswith(data)
    assert [r["run"] for r in runs(repo)] == [1, 2]
    assert [r for r in ledger_lines(repo) if r.get("type") == "torn_line"] == []


def test_blanks_after_the_last_newline_are_no_torn_line(repo: Path, ar: Tool) -> None:
    """Spaces or a tab after the ledger's last newline (an editor, ``echo -n``) are a blank
    line that lost its newline, which every reader skips: the next append gives it its
    newline, where it became a ``torn_line`` record; the ledger reads no line as malformed."""
    ar(repo, *start_args())
    path = repo / ".auto" / "log.jsonl"
    data = path.read_bytes()
    path.write_bytes(data + b" \t ")
    assert not ledger.read(path).malformed
    write(repo / "value.txt", "90\n")
    assert ar(repo, "run", "-d", "next", "--json").json()["run"] == 2
    assert path.read_bytes().startswith(data + b" \t \n")
    assert [r for r in ledger_lines(repo) if r.get("type") == "torn_line"] == []
    assert [r["run"] for r in runs(repo)] == [1, 2]
