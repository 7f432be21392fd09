"""Measuring: metric extraction, timeouts that kill the whole process group, samples, checks."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import pytest
from conftest import PYTHON, Tool, assert_dies, commit_all, runs, start_args, write
from hypothesis import given
from hypothesis import strategies as st

from git_autoresearch.measure import clean_line, parse_number, read_log


def metric_of(tmp_path: Path, text: str | bytes, pattern: str = r"total: (\S+)") -> object:
    log = tmp_path / "run.log"
    log.write_bytes(text.encode() if isinstance(text, str) else text)
    reading = read_log(log, 0, pattern, "total")
    return reading.metric if reading.metric is not None else reading.problem


@pytest.mark.parametrize("text,value", [
    ("total: -0.35\n", -0.35),
    ("total: 1.2e-3\n", 1.2e-3),
    ("total: 4.2E+2\n", 420.0),
    ("total: 1\ntotal: 2\ntotal: 3\n", 3.0),
    ("\x1b[32mtotal: \x1b[1m12.5\x1b[0m\n", 12.5),
    ("total: 99\rprogress 10%\rprogress 50%\rtotal: 7.5\n", 7.5),
    ("step 1\rstep 2\rtotal: 3.25", 3.25),
])
def test_metric_values_are_read_right(tmp_path: Path, text: str, value: float) -> None:
    assert metric_of(tmp_path, text) == value


@pytest.mark.parametrize("text,problem", [
    ("total: nan\n", "not a finite number"),
    ("total: inf\n", "not a finite number"),
    ("total: -Infinity\n", "not a finite number"),
    ("total: 14,600\n", "'14,600' has a thousands separator"),
    ("nothing here\n", "matched nothing"),
    ("total: 12abc\n", "is not a number"),
])
def test_bad_metrics_are_refused_with_reason(tmp_path: Path, text: str, problem: str) -> None:
    result = metric_of(tmp_path, text)
    assert isinstance(result, str) and problem in result


def test_thousands_separator_refused_even_when_pattern_stops_at_comma(tmp_path: Path) -> None:
    result = metric_of(tmp_path, "total: 14,600 us\n", r"total: ([0-9.]+)")
    assert isinstance(result, str) and "14,600" in result


def test_metric_lines(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text("METRIC rss_mb=88.1\nMETRIC total_µs=14600\nMETRIC bad=abc\n"
                   "METRIC rss_mb=90\nMETRIC nan_one=nan\n  METRIC spaced=1  \nMETRIC x y=1\n"
                   "METRIC total=5\n")
    reading = read_log(log, 0, None, "total")
    assert reading.metric == 5
    assert reading.metrics == {"rss_mb": 90, "total_µs": 14600, "spaced": 1}


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_parse_number_round_trips_any_finite_float(value: float) -> None:
    assert parse_number(repr(value)) == (value, None)


@given(st.text())
def test_parse_number_never_returns_non_finite(text: str) -> None:
    value, problem = parse_number(text)
    assert (value is None) != (problem is None)
    if value is not None:
        assert math.isfinite(value)


@given(st.lists(st.text(alphabet="ab\r\x1b[0123m;", max_size=20), max_size=5))
def test_clean_line_never_keeps_escape_sequences_of_colour(pieces: list[str]) -> None:
    for piece in clean_line("\x1b[31m" + "".join(pieces) + "\x1b[0m"):
        assert "\r" not in piece


def test_timeout_kills_background_grandchild(repo: Path, ar: Tool, tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    write(repo / "slow.sh", f"#!/bin/sh\n(sleep 300 & echo $! > {pidfile}; wait) &\n"
                            "sleep 300\n")
    commit_all(repo)
    ar(repo, *start_args())
    cfg_args = ["start", "--new-segment", "--command", "sh slow.sh", "--timeout-seconds", "1",
                "--readonly", "slow.sh"]
    started = time.monotonic()
    res = ar(repo, *cfg_args, expect=3)
    assert time.monotonic() - started < 30
    assert "timeout" in res.err
    assert_dies(int(pidfile.read_text()), "the timed-out command's grandchild")
    assert runs(repo)[-1]["status"] == "crash"
    assert runs(repo)[-1]["reason"].startswith("timeout")


def test_samples_are_aggregated_with_median(repo: Path, ar: Tool) -> None:
    counter = write(repo / "count.sh", "#!/bin/sh\nn=$(cat .n 2>/dev/null || echo 0)\n"
                    "n=$((n+1)); echo $n > .n\necho \"score: $((n*n))\"\n")
    write(repo / ".gitignore", ".n\n")
    commit_all(repo)
    data = ar(repo, "start", "--decision", "strict",
              "--goal", "g", "--session-id", "s", "--command", "sh count.sh",
              "--metric-name", "score", "--metric-pattern", r"score: (\d+)",
              "--readonly", "count.sh", "--runs-per-experiment", "3", "--json").json()
    assert data["baseline"]["samples"] == [1, 4, 9]
    assert data["baseline"]["metric"] == 4
    assert counter.exists()


def test_each_sample_knows_its_number_and_run(repo: Path, ar: Tool) -> None:
    """AUTORESEARCH_SAMPLE (1, 2, ...) and AUTORESEARCH_RUN reach every sample's command: a
    training command can take its seed from them."""
    write(repo / "seeded.sh", "#!/bin/sh\n"
          "echo \"score: $((AUTORESEARCH_RUN * 100 + AUTORESEARCH_SAMPLE))\"\n")
    commit_all(repo)
    data = ar(repo, "start", "--decision", "strict",
              "--goal", "g", "--session-id", "s", "--command", "sh seeded.sh",
              "--metric-name", "score", "--metric-pattern", r"score: (\d+)",
              "--runs-per-experiment", "3", "--json").json()
    assert data["baseline"]["samples"] == [101, 102, 103]
    measured = ar(repo, "measure", "--json").json()
    assert measured["samples"] == [201, 202, 203]


def test_metric_command(repo: Path, ar: Tool) -> None:
    write(repo / "score.sh", "#!/bin/sh\necho 'METRIC parts=3'\necho 41.5\n")
    commit_all(repo)
    data = ar(repo, "start", "--goal", "g", "--session-id", "s", "--command", "true",
              "--metric-command", "sh score.sh", "--readonly", "score.sh", "--json").json()
    assert data["baseline"]["metric"] == 41.5
    assert data["baseline"]["metrics"] == {"parts": 3}


def test_files_the_commands_name_are_readonly(repo: Path, ar: Tool) -> None:
    write(repo / "score.sh", "#!/bin/sh\necho $(cat value.txt)\n")
    write(repo / "checks" / "run.sh", "#!/bin/sh\nexit 0\n")
    commit_all(repo)
    ar(repo, "start", "--goal", "g", "--session-id", "s", "--command", "true",
       "--metric-command", "sh ./score.sh", "--checks-command", "sh checks/run.sh")
    write(repo / "score.sh", "#!/bin/sh\necho 1\n")
    os.remove(repo / "checks" / "run.sh")
    write(repo / "value.txt", "120\n")
    record = ar(repo, "run", "-d", "x", "--json").json()
    assert record["status"] == "discard" and record["metric"] == 120
    assert record["readonly_violations"] == ["checks/run.sh", "score.sh"]
    assert (repo / "score.sh").read_text() == "#!/bin/sh\necho $(cat value.txt)\n"
    assert (repo / "checks" / "run.sh").read_text() == "#!/bin/sh\nexit 0\n"


def test_checks_timeout_is_checks_failed(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    ar(repo, "start", "--new-segment", "--checks-command", "sleep 30",
       "--checks-timeout-seconds", "0.5", expect=3)
    record = runs(repo)[-1]
    assert record["status"] == "checks_failed"
    assert record["checks"]["timed_out"] is True


def test_run_log_holds_output(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "strict"))
    assert (repo / ".auto" / "run.log").read_text() == "score: 100\n"


def test_python_command(repo: Path, ar: Tool) -> None:
    write(repo / "b.py", "print('score:', 3.5)\n")
    commit_all(repo)
    data = ar(repo, "start", "--goal", "g", "--command", f"{PYTHON} b.py", "--metric-name",
              "score", "--metric-pattern", r"score: (\S+)", "--readonly", "b.py",
              "--json").json()
    assert data["baseline"]["metric"] == 3.5


def test_live_progress_line_on_a_terminal(repo: Path, ar: Tool) -> None:
    """On a terminal, a long measurement shows the elapsed time and the last log line."""
    import pty
    import subprocess
    import sys

    ar(repo, *start_args())
    ar(repo, "start", "--new-segment", "--command",
       "echo warming up; sleep 2.5; sh bench.sh", "--no-baseline")
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "git_autoresearch", "measure"], cwd=repo,
                            stdin=child, stdout=child, stderr=child)
    os.close(child)
    out = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=30)
    os.close(main)
    text = out.decode("utf-8", "replace")
    assert "s] warming up" in text
    assert "score = 100" in text


PROBE = """
import sys
from git_autoresearch import cli, commands
code = cli.invoke(commands.cli, "git autoresearch", sys.argv[1:])
sys.stderr.write("plumbum imported: %s\\n" % ("plumbum" in sys.modules))
sys.exit(code)
"""


def test_user_commands_run_through_plumbum_which_hot_commands_never_import(repo: Path, ar: Tool
                                                                          ) -> None:
    """keep and discard are hot (and status and log are read all night): they never pay for
    plumbum's import; measuring, which runs the user's commands through it, does."""
    import subprocess
    import sys

    ar(repo, *start_args())

    def imported(*args: str) -> bool:
        res = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=repo, capture_output=True,
                             text=True)
        assert res.returncode == 0, res.stderr
        return res.stderr.strip().endswith("plumbum imported: True")

    write(repo / "value.txt", "90\n")
    assert imported("keep", "-d", "given", "--metric", "90") is False
    write(repo / "value.txt", "80\n")
    assert imported("discard", "-d", "no") is False
    assert imported("status") is False
    assert imported("log") is False
    assert imported("measure") is True
    assert imported("discard", "-d", "measured") is False


def test_the_command_never_sees_the_git_variables_of_a_calling_hook(repo: Path, ar: Tool) -> None:
    """Started from inside a git hook, we inherit GIT_DIR and GIT_INDEX_FILE pointing at the
    caller's state; the experiment must see its own work tree (plumbum's snapshot of the
    environment must not bring them back)."""
    import os
    import subprocess
    import sys

    write(repo / "bench.sh", '#!/bin/sh\necho "dir=${GIT_DIR-unset} index=${GIT_INDEX_FILE-unset}"'
          '\necho "score: $(cat value.txt)"\n', 0o755)
    commit_all(repo, "bench prints its git variables")
    env = {**os.environ, "GIT_DIR": "/nonexistent/.git", "GIT_INDEX_FILE": "/nonexistent/index"}
    res = subprocess.run([sys.executable, "-m", "git_autoresearch", *start_args()], cwd=repo,
                         env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "dir=unset index=unset" in (repo / ".auto" / "run.log").read_text()


def test_the_median_of_two_samples_is_not_a_float_artefact(repo: Path, ar: Tool) -> None:
    write(repo / "two.sh", "#!/bin/sh\n"
          "[ \"$AUTORESEARCH_SAMPLE\" = 1 ] && echo 'score: 1.925' || echo 'score: 1.93'\n")
    commit_all(repo)
    data = ar(repo, "start", "--decision", "strict", "--goal", "g", "--session-id", "s",
              "--command", "sh two.sh", "--metric-name", "score",
              "--metric-pattern", r"score: (\S+)", "--runs-per-experiment", "2",
              "--json").json()
    assert data["baseline"]["metric"] == 1.9275  # not 1.9275000000000002


def test_metric_command_stderr_is_kept_out_of_the_number_and_in_the_run_log(
        repo: Path, ar: Tool) -> None:
    """The metric command's number is read from its stdout alone: a warning it prints on
    stderr (with a number of its own) is no second value, and the run log keeps it."""
    write(repo / "score.sh", "#!/bin/sh\necho 'warning: option 7 is deprecated' >&2\n"
          "echo 41.5\necho 'took 0.3 s' >&2\n")
    commit_all(repo)
    data = ar(repo, "start", "--goal", "g", "--session-id", "s", "--command", "true",
              "--metric-command", "sh score.sh", "--readonly", "score.sh", "--json").json()
    assert data["baseline"]["status"] == "keep"
    assert data["baseline"]["metric"] == 41.5
    log = (repo / ".auto" / "run.log").read_text()
    assert "warning: option 7 is deprecated\n" in log
    assert "took 0.3 s\n" in log
    assert log.index("==== metric_command: sh score.sh ====") < log.index("41.5")


def test_metric_command_that_prints_its_number_on_stderr_only_is_a_crash(
        repo: Path, ar: Tool) -> None:
    """A number on stderr alone is not read: the run crashes, saying stdout held no value."""
    write(repo / "score.sh", "#!/bin/sh\necho 41.5 >&2\n")
    commit_all(repo)
    ar(repo, "start", "--goal", "g", "--session-id", "s", "--command", "true",
       "--metric-command", "sh score.sh", "--readonly", "score.sh", expect=3)
    record = runs(repo)[-1]
    assert record["status"] == "crash"
    assert record["reason"] == ("the metric command printed 0 values on stdout; it must print "
                                "exactly one number")


def test_metric_json_from_the_command_output_reads_stdout_alone(repo: Path, ar: Tool) -> None:
    """A bare metric_json path reads the command's standard output (jsonmetric.split_spec): a
    warning the command prints on stderr after its JSON does not spoil the document, and
    the run log keeps both."""
    write(repo / "bench.sh", "#!/bin/sh\nprintf '{\\n  \"mean\": 1.5\\n}\\n'\n"
          "echo 'warning: slow disk' >&2\n")
    commit_all(repo)
    data = ar(repo, "start", "--goal", "g", "--session-id", "s", "--command", "sh bench.sh",
              "--metric-json", "mean", "--json").json()
    assert data["baseline"]["metric"] == 1.5
    log = (repo / ".auto" / "run.log").read_text()
    assert "warning: slow disk\n" in log and '  "mean": 1.5\n' in log
