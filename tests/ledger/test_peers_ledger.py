"""The ledger as pi-autoresearch 1.6.2 reads and writes it: segments, the
``confidence`` field, statuses, torn lines, run numbers shared with pi, and number text.

Every expected value is what pi's own code gives for the input: its ledger reconstruction
(``reconstructJsonlState``, extensions/pi-autoresearch/jsonl.ts), ``computeConfidence``
(extensions/pi-autoresearch/index.ts:426), its export dashboard's reader
(assets/template.html) and JavaScript's ``JSON.stringify``, run under node.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES_DIR, Tool, commit_all, git, runs, start_args, write
from hypothesis import given, settings
from hypothesis import strategies as st

from git_autoresearch import ledger
from git_autoresearch.ledger import jsontext
from git_autoresearch.ledger.confidence import confidence

PI_WRITTEN = FIXTURES_DIR / "pi-1.6.2-written-log.jsonl"
PI_LOG = FIXTURES_DIR / "pi-autoresearch-log.jsonl"
HEADER = '{"type":"config","name":"%s","metricName":"ms","metricUnit":"ms","bestDirection":"%s"}'


def run_line(number: int, metric: float, status: str | None, commit: str = "aaaaaaa",
             **more: Any) -> str:
    """A run record as pi-autoresearch 1.6.2 writes it (index.ts:2421)."""
    record: dict[str, Any] = {"run": number, "commit": commit, "metric": metric, "metrics": {}}
    if status is not None:
        record["status"] = status
    record.update({"description": f"run {number}", "timestamp": 1796060393000 + number,
                   "segment": 0, "confidence": None, **more})
    return json.dumps(record, separators=(",", ":"))


def pi_session(repo: Path, *lines: str) -> Path:
    return write(repo / ".auto" / "log.jsonl", "".join(line + "\n" for line in lines))


def test_pi_written_ledger_reads_as_pi_reconstructs_it(repo: Path, ar: Tool) -> None:
    """A ledger written by pi-autoresearch 1.6.2's own log_experiment: every reading command
    gives pi's segments, baselines, bests, run counts and confidences.

    pi-autoresearch 1.6.2, extensions/pi-autoresearch/jsonl.ts:169 (segments), index.ts:580
    (baseline: the segment's first run), index.ts:426 (confidence: 4.9995 and
    4.000666777796299 for runs 6 and 7, 4 for the throughput segment, under node)."""
    write(repo / ".auto" / "log.jsonl", PI_WRITTEN.read_bytes())
    rows = ar(repo, "log", "--json").json()["runs"]
    assert [(r["run"], r["segment"], r["status"], r["confidence"]) for r in rows] == [
        (1, 0, "keep", None), (2, 0, "keep", None), (3, 0, "discard", 3), (4, 0, "crash", 3),
        (5, 0, "checks_failed", 3), (6, 0, "keep", 4.9995), (7, 0, "keep", 4.000666777796299),
        (8, 1, "keep", None), (9, 1, "keep", None), (10, 1, "discard", 2),
        (11, 1, "discard", 4)]
    status = ar(repo, "status", "--json").json()["segment"]
    assert (status["index"], status["runs"], status["baseline"]["run"],
            status["baseline"]["metric"], status["best"]["run"], status["best"]["metric"],
            status["confidence"]) == (1, 4, 8, 50, 9, 60, 4)
    first = ar(repo, "analyze", "--segment", "0", "--json").json()
    assert (first["runs"], first["baseline"]["metric"], first["best"]["metric"],
            first["best"]["run"]) == (7, 1500, 900, 7)
    second = ar(repo, "analyze", "--json").json()
    assert (second["segment"], second["runs"], second["baseline"]["metric"],
            second["best"]["metric"]) == (1, 4, 50, 60)
    book = ledger.read(PI_WRITTEN)
    for segment in book.segments:
        for count, run in enumerate(segment.runs, start=1):
            assert confidence(segment, count) == run.data["confidence"], run.number


def test_pi_fixture_log_and_status_agree_on_confidence(repo: Path, ar: Tool) -> None:
    """status's confidence is the one pi computes for the segment, which is the last run's
    ``confidence`` field; the fixture rounds it to 4 decimals (tests/fixtures/README.md).

    pi-autoresearch 1.6.2, extensions/pi-autoresearch/index.ts:1340: state.confidence =
    computeConfidence(results, currentSegment, ...) = 2.0792951541850226 for segment 0."""
    write(repo / ".auto" / "log.jsonl", PI_LOG.read_bytes())
    book = ledger.read(PI_LOG)
    assert confidence(book.segments[0]) == 2.0792951541850226
    assert ar(repo, "status", "--json").json()["segment"]["confidence"] is None
    assert [r["segment"] for r in ar(repo, "log", "--json").json()["runs"]] == [0] * 6 + [1] * 2


def test_config_lines_before_the_first_run_open_one_segment(repo: Path, ar: Tool) -> None:
    """pi-autoresearch 1.6.2, extensions/pi-autoresearch/jsonl.ts:108 (nextSegment): a config
    line opens a new segment only once some run was read; the later config's fields win
    (jsonl.ts:101). Under node the runs below get segments 0, 0, 1."""
    pi_session(repo, HEADER % ("first", "higher"), HEADER % ("second", "lower"),
               run_line(1, 100, "keep"), run_line(2, 90, "keep"),
               HEADER % ("third", "lower"), run_line(3, 50, "keep"))
    rows = ar(repo, "log", "--json", "--segment", "0").json()["runs"]
    assert [(r["run"], r["segment"]) for r in rows] == [(1, 0), (2, 0)]
    assert [r["run"] for r in ar(repo, "log", "--json", "--segment", "1").json()["runs"]] == [3]
    status = ar(repo, "status", "--json").json()
    assert (status["segment"]["index"], status["segment"]["name"]) == (1, "third")
    book = ledger.read(repo / ".auto" / "log.jsonl")
    assert [(s.header or {}).get("name") for s in book.segments] == ["second", "third"]
    assert book.segments[0].direction == "lower"


def test_confidence_when_the_first_run_crashed_is_pis(repo: Path, ar: Tool) -> None:
    """pi-autoresearch 1.6.2, extensions/pi-autoresearch/index.ts:580: the baseline is the
    segment's first run whatever its status (a crash's metric 0), and index.ts:431 leaves out
    the runs with a metric not above 0: computeConfidence gives 9 here under node (was 1.0)."""
    pi_session(repo, HEADER % ("crashed baseline", "lower"), run_line(1, 0, "crash"),
               run_line(2, 10, "keep"), run_line(3, 11, "discard"), run_line(4, 9, "keep"),
               run_line(5, 12, "discard"))
    book = ledger.read(repo / ".auto" / "log.jsonl")
    assert [confidence(book.current, n) for n in range(1, 6)] == [
        None, None, None, 9, 9]
    assert ar(repo, "status", "--json").json()["segment"]["confidence"] == 9


def test_confidence_of_metrics_not_above_zero_is_null(repo: Path, ar: Tool) -> None:
    """pi-autoresearch 1.6.2, extensions/pi-autoresearch/index.ts:431: only runs with a metric
    above 0 count, so a session of negative metrics has no confidence (null under node; we
    wrote 2.0 and 3.0), in the records this tool writes, in log and in status alike."""
    write(repo / "value.txt", "-5\n")
    commit_all(repo)
    ar(repo, *start_args())
    for value in ("-6", "-4", "-7"):
        write(repo / "value.txt", value + "\n")
        ar(repo, "run", "-d", value)
    assert [r["confidence"] for r in runs(repo)] == [None] * 4
    assert [r["confidence"] for r in ar(repo, "log", "--json").json()["runs"]] == [None] * 4
    assert ar(repo, "status", "--json").json()["segment"]["confidence"] is None


def test_a_missing_or_unknown_status_reads_as_keep_with_one_warning(repo: Path, ar: Tool,
                                                                    tmp_path: Path) -> None:
    """pi-autoresearch 1.6.2, extensions/pi-autoresearch/jsonl.ts:74 (statusFrom): a missing or
    unknown status is keep. No run is dropped, log and status warn once, import copies the
    lines and warns."""
    path = pi_session(repo, HEADER % ("odd statuses", "lower"), run_line(1, 100, "keep"),
                      run_line(2, 90, None), run_line(3, 95, "weird"),
                      run_line(4, 99, "discard"))
    res = ar(repo, "log", "--json")
    assert [(r["run"], r["status"], r.get("recorded_status", "-"))
            for r in res.json()["runs"]] == [
        (1, "keep", "-"), (2, "keep", None), (3, "keep", "weird"), (4, "discard", "-")]
    warnings = [ln for ln in res.err.splitlines() if "read as keep" in ln]
    assert len(warnings) == 1 and "run 2 (no status), run 3 ('weird')" in warnings[0]
    status = ar(repo, "status", "--json").json()
    assert status["segment"]["counts"] == {"keep": 3, "discard": 1}
    assert status["segment"]["best"]["run"] == 2
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    out = ar(other, "import", str(path))
    assert "read as keep" in out.err
    assert (other / ".auto" / "log.jsonl").read_bytes() == path.read_bytes()


def test_import_skips_torn_lines_as_pi_does(repo: Path, ar: Tool) -> None:
    """pi-autoresearch 1.6.2, extensions/pi-autoresearch/jsonl.ts:175: a line that is not a
    JSON object is skipped (parseJsonlEntry gives null); the rest of the ledger is read."""
    lines = [HEADER % ("torn", "lower"), run_line(1, 100, "keep"), '{"run":2,"comm',
             run_line(3, 90, "keep"), '{"run":4,"commit":"aaa']
    source = write(repo.parent / "pi-log.jsonl", "\n".join(lines))
    res = ar(repo, "import", str(source), "--json")
    assert res.json()["lines"] == 3
    assert f"{source}:3: not JSON: skipped, as pi-autoresearch skips it" in res.err
    assert f"{source}:5: not JSON: skipped, as pi-autoresearch skips it" in res.err
    assert [r["run"] for r in ar(repo, "log", "--json").json()["runs"]] == [1, 3]


def test_a_torn_line_becomes_its_own_record_at_the_next_append(repo: Path, ar: Tool) -> None:
    """pi-autoresearch 1.6.2's export dashboard (assets/template.html:394) refuses a whole
    ledger over one line that is not JSON: the torn last line is kept as a record of its own
    at the next append, and every line stays JSON."""
    ar(repo, *start_args())
    path = repo / ".auto" / "log.jsonl"
    with open(path, "ab") as fh:
        fh.write(b'{"run":2,"commit":"abc","metric":9\xc3')  # cut inside a character
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "after a torn line")
    records = [json.loads(line) for line in path.read_bytes().splitlines()]
    torn = [r for r in records if r.get("type") == "torn_line"]
    assert len(torn) == 1 and torn[0]["line"] == 3
    assert torn[0]["text"].encode("utf-8", "surrogateescape") == \
        b'{"run":2,"commit":"abc","metric":9\xc3'
    assert [r["run"] for r in records if "run" in r] == [1, 2]
    assert ledger.read(path).malformed == []


def test_a_peers_run_with_a_number_we_used_is_never_set_aside(repo: Path, ar: Tool) -> None:
    """pi-autoresearch 1.6.2, extensions/pi-autoresearch/index.ts:2422 numbers a run by the
    count of runs it read (run: state.results.length); after a lost line pi writes a number
    this tool gave already. pi reads both records as runs (jsonl.ts:184), and so do log,
    status, resume and doctor; the next number of ours is after both."""
    ar(repo, *start_args())
    for value in ("90", "95"):
        write(repo / "value.txt", value + "\n")
        ar(repo, "run", "-d", value)
    path = repo / ".auto" / "log.jsonl"
    with open(path, "a") as fh:
        fh.write(run_line(3, 91, "discard", commit="1234567") + "\n")
    res = ar(repo, "log", "--json")
    assert [r["run"] for r in res.json()["runs"]] == [1, 2, 3, 3]
    assert "run number 3 is on lines 4, 6 (another tool appended" in res.err
    ar(repo, "resume")
    ar(repo, "doctor", "--fix", expect=None)
    assert [r["run"] for r in runs(repo)] == [1, 2, 3, 3]
    assert not (repo / ".auto" / "log.rejected.jsonl").exists()
    assert ar(repo, "status", "--json").json()["segment"]["runs"] == 4
    write(repo / "value.txt", "80\n")
    assert ar(repo, "run", "-d", "next", "--json").json()["run"] == 4


def test_a_copied_line_is_still_set_aside(tmp_path: Path) -> None:
    """A line written twice byte for byte is one record (a repeated append), not a peer's
    run."""
    line = run_line(1, 100, "keep")
    book = ledger.parse(f"{line}\n{line}\n".encode())
    assert [r.number for r in book.runs] == [1]
    assert [(m.line, m.reason) for m in book.malformed] == [(2, "a copy of line 1 (run 1)")]


def test_numbers_are_written_as_javascript_writes_them(repo: Path, ar: Tool) -> None:
    """pi-autoresearch 1.6.2 writes its ledger and its Result: trailer with JSON.stringify
    (extensions/pi-autoresearch/index.ts:2383, :2426); under node JSON.stringify gives
    0.000015, 1e-7, 10000000000000000, 1e+21, 2584610000 and 0 for -0."""
    assert [jsontext.number_text(v) for v in (0.000015, 1e-7, 1e16, 1e21, 2584610000.0, -0.0,
                                            -2.5e-9, 1000.05, 2**60)] == [
        "0.000015", "1e-7", "10000000000000000", "1e+21", "2584610000", "0", "-2.5e-9",
        "1000.05", "1152921504606847000"]
    write(repo / "value.txt", "0.000015\n")
    commit_all(repo)
    ar(repo, *start_args())
    write(repo / "value.txt", "1e-7\n")
    ar(repo, "run", "-d", "tiny")
    text = (repo / ".auto" / "log.jsonl").read_text()
    assert '"metric":0.000015,' in text and '"metric":1e-7,' in text
    message = git(repo, "log", "-1", "--format=%B")
    assert 'Result: {"status":"keep","score":1e-7}' in message
    assert ledger.dumps({"m": 1e16, "s": [1.5e-5]}) == '{"m":10000000000000000,"s":[0.000015]}'


def test_our_interrupted_run_is_recorded_though_a_peer_took_its_number(repo: Path,
                                                                        ar: Tool) -> None:
    """A run of ours killed before its ledger line, then pi-autoresearch appends a run numbered
    by its count (extensions/pi-autoresearch/index.ts:2422: run 2, the number ours holds):
    resume still writes our run 2, pi's run stays, and neither is taken for the other."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    killed = subprocess.run([sys.executable, "-m", "git_autoresearch", "discard", "-d", "ours"],
                            cwd=repo, capture_output=True, text=True,
                            env={**os.environ, "GIT_AUTORESEARCH_DIE_AT": "record:before-ledger"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    path = repo / ".auto" / "log.jsonl"
    with open(path, "a") as fh:
        fh.write(run_line(2, 91, "discard", commit="1234567") + "\n")
    ar(repo, "resume")
    assert [(r["run"], r["description"]) for r in runs(repo)] == [
        (1, "baseline"), (2, "run 2"), (2, "ours")]
    assert ar(repo, "doctor", expect=None).out.count("run 2") == 0


@given(st.floats(allow_nan=False, allow_infinity=False))
@settings(max_examples=500, deadline=None)
def test_number_text_reads_back_and_takes_javascripts_notation(value: float) -> None:
    """ECMAScript's Number::toString, which JSON.stringify uses (pi-autoresearch 1.6.2 writes
    its ledger and trailers with it): the number reads back unchanged, in positional notation
    from 1e-6 up to below 1e21 and exponential outside it, the exponent with its sign and no
    leading zero, and -0 as 0."""
    text = jsontext.number_text(value)
    assert float(json.loads(text)) == value  # as JavaScript reads it: a double
    positional = value == 0 or 1e-6 <= abs(value) < 1e21
    assert ("e" not in text) == positional, text
    if not positional:
        exponent = text.split("e")[1]
        assert exponent[0] in "+-" and not exponent[1:].startswith("0"), text
    assert not text.startswith("-0") or text.startswith("-0.")
    assert ledger.dumps({"x": value}) == '{"x":' + text + "}"


CONFIDENCE_CASES = [
    # (direction, [(metric, status), ...], pi's confidence, pi's label, pi's per-run values)
    ("lower", [(100, "keep"), (80, "keep"), (90, "discard"), (110, "discard"),
               (120, "discard")], 2, "likely real", [None, None, 2, 2, 2]),
    ("lower", [(100, "keep"), (81, "keep"), (90, "discard"), (110, "discard"),
               (120, "discard")], 1.9, "marginal", [None, None, 2.111111111111111, 2, 1.9]),
    ("lower", [(100, "keep"), (90, "keep"), (80, "discard"), (110, "discard"),
               (120, "discard")], 1, "marginal", [None, None, 1, 1, 1]),
    ("lower", [(100, "keep"), (91, "keep"), (80, "discard"), (110, "discard"),
               (120, "discard")], 0.9, "within noise", [None, None, 1, 0.9473684210526315, 0.9]),
    ("lower", [(100, "keep"), (90, "keep")], None, "n/a", [None, None]),
    ("lower", [(100, "discard"), (90, "discard"), (80, "crash"), (110, "discard")], None,
     "n/a", [None] * 4),
    ("higher", [(100, "keep"), (120, "keep"), (120, "keep"), (90, "discard"), (80, "discard")],
     1, "marginal", [None, None, None, 2, 1]),
    ("higher", [(100, "keep"), (100, "keep"), (90, "discard"), (80, "discard")], None, "n/a",
     [None] * 4),
]


@pytest.mark.parametrize("direction, rows, value, label, per_run", CONFIDENCE_CASES)
def test_confidence_and_its_label_are_pis_at_each_edge(repo: Path, ar: Tool, direction: str,
                                                       rows: list[tuple[int, str]],
                                                       value: float | None, label: str,
                                                       per_run: list[float | None]) -> None:
    """Both thresholds (exactly 2 and just under, exactly 1 and just under) and all three
    labels, fewer than 3 runs, a segment with runs but no keep, a best kept tied with another
    when higher is better, and a best kept equal to the baseline.

    pi-autoresearch 1.6.2, extensions/pi-autoresearch/index.ts:426 (computeConfidence) and
    index.ts:580 (findBaselineMetric), run under node for each ledger below; the labels are
    index.ts:2360-2365 (>= 2.0 likely real, >= 1.0 marginal, else within noise)."""
    pi_session(repo, HEADER % ("edges", direction),
               *(run_line(n, metric, status) for n, (metric, status) in enumerate(rows, 1)))
    segment = ar(repo, "status", "--json").json()["segment"]
    assert (segment["confidence"], segment["confidence_label"]) == (value, label)
    shown = "-" if value is None else f"{value:.2f}"
    assert f"\nconfidence  {shown} ({label})\n" in ar(repo, "status").out
    book = ledger.read(repo / ".auto" / "log.jsonl")
    assert [confidence(book.current, n) for n in range(1, len(rows) + 1)] == per_run


def test_the_best_of_tied_keeps_is_the_first_when_higher_is_better(repo: Path, ar: Tool) -> None:
    """Two keeps tie for the best when higher is better: the best is the first of them (pi's
    isBetter is strict, extensions/pi-autoresearch/index.ts:398), as status and analyze say."""
    pi_session(repo, HEADER % ("ties", "higher"), run_line(1, 100, "keep"),
               run_line(2, 120, "keep"), run_line(3, 120, "keep"), run_line(4, 90, "discard"))
    best = ar(repo, "status", "--json").json()["segment"]["best"]
    assert (best["run"], best["metric"]) == (2, 120)
    analyzed = ar(repo, "analyze", "--json").json()["best"]
    assert (analyzed["run"], analyzed["metric"]) == (2, 120)


def test_a_peers_config_line_after_the_runs_names_the_way_on(repo: Path, ar: Tool) -> None:
    """A configuration line another tool appended after the runs (pi-autoresearch's
    init_experiment writes one) opens a segment without this tool's configuration. Every
    command said "resume restores it", and resume and doctor --fix refused with the same
    words: now they name start --new-segment, which opens a segment of the session's
    configuration after it, and the loop goes on."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "first")
    with (repo / ".auto" / "log.jsonl").open("a") as ledger:
        ledger.write('{"type":"config","name":"re-init","metricName":"score","metricUnit":"",'
                     '"bestDirection":"lower"}\n')
    write(repo / "value.txt", "80\n")
    for command in (["run", "-d", "next"], ["resume"], ["doctor", "--fix"]):
        said = ar(repo, *command, expect=3).err
        assert "another tool" in said and "start --new-segment" in said, said
        assert "resume restores it" not in said, said
    git(repo, "checkout", "--", "value.txt")
    ar(repo, "start", "--new-segment")
    write(repo / "value.txt", "80\n")
    assert ar(repo, "run", "-d", "next", "--json").json()["status"] == "keep"
