"""Measuring: metric extraction, timeouts that kill the whole process group, samples, checks."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    PYTHON,
    Tool,
    assert_dies,
    check_document,
    commit_all,
    git,
    runs,
    start_args,
    write,
)
from hypothesis import given
from hypothesis import strategies as st

from git_autoresearch.measure import runner
from git_autoresearch.measure.samples import clean_line, parse_number, read_log


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


@given(st.lists(st.text(alphabet="ab 01;m[", max_size=20), min_size=1, max_size=5),
       st.sampled_from(["\x1b[31m", "\x1b[1;32m", "\x1b[2K", "\x1b]0;title\x07", "\x1bM"]))
def test_clean_line_never_keeps_escape_sequences_of_colour(pieces: list[str], code: str) -> None:
    """Each piece a carriage return starts, coloured (or cleared, or titled): the pieces come
    back exactly as printed, in order, without a byte of the escape sequences."""
    coloured = "\r".join(f"{code}{piece}\x1b[0m" for piece in pieces)
    assert clean_line(coloured) == pieces


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
    assert res.err.splitlines()[0] == (
        "git autoresearch: the baseline failed (timeout: the command ran past 1s and was "
        "killed); the session is kept: fix the command, then run git autoresearch start "
        "--new-segment")
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
       "echo warming up; sleep 2.5; sh bench.sh", "--no-baseline", "--decision", "strict")
    main, child = pty.openpty()  # (strict: one sample, not the baseline's five)
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



RUN_PROBE = """
import sys
from git_autoresearch import cli, commands
code = cli.invoke(commands.cli, "git autoresearch", sys.argv[1:])
heavy = sorted(m for m in ("urllib.request", "http.client", "ssl", "email.parser", "_hashlib",
                           "socket", "pickle") if m in sys.modules)
import plumbum
import plumbum.commands.daemons as daemons
import plumbum.machines.ssh_machine as ssh
import socket
uri = plumbum.local.path("/tmp").as_uri()
# What plumbum holds of the modules it was spared works as the modules themselves.
same = ssh.socket.gethostname() == socket.gethostname() \
    and daemons.pickle.loads(daemons.pickle.dumps([1])) == [1]
import platform
# No `uname -p` process was started for platform.uname()'s processor field, and plumbum
# read the system's name all the same.
processor = "processor" in platform.uname().__dict__
same = same and type(plumbum.local).uname == platform.system()
sys.stderr.write("heavy: %s; uri: %s; same: %s; processor asked: %s\\n"
                 % (",".join(heavy), uri, same, processor))
sys.exit(code)
"""


MEANWHILE = """
import sys
from git_autoresearch.measure import runner
seen = []
class Meanwhile:
    # Code that imports urllib.request while plumbum is imported (another thread's, say).
    def find_spec(self, name, path=None, target=None):
        if name == "plumbum.path.local" and not seen:
            import urllib.request
            seen.append(urllib.request.Request("http://example.invalid/").full_url)
        return None
sys.meta_path.insert(0, Meanwhile())
runner._plumbum_local()
import urllib.request
print(seen, urllib.request.Request("http://example.invalid/x").full_url)
"""


HELD_PACKAGE = """
import sys
from git_autoresearch.measure import runner
held = []
class Meanwhile:
    # Another thread's import urllib.request while plumbum is imported: it binds the package.
    def find_spec(self, name, path=None, target=None):
        if name == "plumbum.path.local" and not held:
            import urllib.request
            held.append(urllib)
        return None
sys.meta_path.insert(0, Meanwhile())
runner._plumbum_local()
print(held[0].request.Request("http://example.invalid/y").full_url)
"""


def test_a_package_bound_while_plumbum_was_imported_still_reads_its_module() -> None:
    """Code that ran ``import urllib.request`` while the stand-in was in place holds only
    ``urllib``: after plumbum's import it still finds ``urllib.request`` there, working as
    the real module (it found nothing: the stand-in was taken off the package)."""
    res = subprocess.run([sys.executable, "-c", HELD_PACKAGE], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["http://example.invalid/y"]


def test_urllib_request_imported_while_plumbum_is_works_as_ever() -> None:
    """While plumbum is imported, urllib.request is a stand-in: code that imports it then
    (import urllib.request; urllib.request.Request) gets the real module's answers, and an
    import of it afterwards the real module."""
    res = subprocess.run([sys.executable, "-c", MEANWHILE], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["['http://example.invalid/']", "http://example.invalid/x"]


def test_a_run_loads_neither_the_modules_plumbum_never_uses_in_one_nor_openssl(repo: Path,
                                                                              ar: Tool) -> None:
    """plumbum imports urllib.request (and through it http.client, ssl and email) for its
    paths' as_uri alone, socket for SshMachine and pickle to daemonize: a run that measures
    does not pay for them, and they still work when first used, imported then. Nor does a run
    load OpenSSL (hashlib) for the digests of a few small files, nor start ``uname -p`` for
    the processor field of platform.uname(), of which plumbum reads the system's name."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    res = subprocess.run([sys.executable, "-c", RUN_PROBE, "run", "-d", "measured"], cwd=repo,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip().splitlines()[-1] == \
        "heavy: ; uri: file:///tmp; same: True; processor asked: False"


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


def _metric_session(repo: Path, ar: Tool, script: str, *extra: str, expect: int = 3
                    ) -> dict[str, Any]:
    """Start a session whose metric comes from ``sh score.sh`` (``script``); the baseline's
    record."""
    write(repo / "score.sh", script)
    commit_all(repo)
    ar(repo, "start", "--goal", "g", "--session-id", "s", "--command", "true",
       "--metric-command", "sh score.sh", "--readonly", "score.sh", *extra, expect=expect)
    return runs(repo)[-1]


def test_a_metric_command_that_exits_non_zero_is_a_crash(repo: Path, ar: Tool) -> None:
    """A metric command that fails is no measurement, even when it printed a number first."""
    record = _metric_session(repo, ar, "#!/bin/sh\necho 41.5\nexit 3\n")
    assert (record["status"], record["metric"], record["reason"]) == (
        "crash", 0, "the metric command exited with code 3")


def test_a_metric_command_that_runs_past_the_timeout_is_killed_and_a_crash(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    """The metric command has the measurement's timeout: past it, its group is killed (a
    grandchild too) and the run is a crash saying so."""
    pidfile = tmp_path / "metric.pid"
    record = _metric_session(repo, ar, f"#!/bin/sh\nsleep 300 &\necho $! > {pidfile}\nwait\n"
                             "echo 41.5\n", "--timeout-seconds", "1")
    assert (record["status"], record["reason"]) == (
        "crash", "timeout: the metric command ran past 1s and was killed")
    assert_dies(int(pidfile.read_text()), "the timed-out metric command's child")


@pytest.mark.parametrize("script, metric, reason", [
    ("echo\necho 41.5\necho '   '\n", 41.5, None),
    ("echo\n", 0, "the metric command printed 0 values on stdout; it must print exactly one "
                  "number"),
    ("echo 41.5\necho 42\n", 0, "the metric command printed 2 values on stdout; it must "
                                "print exactly one number"),
])
def test_blank_lines_from_a_metric_command_are_no_values(repo: Path, ar: Tool, script: str,
                                                         metric: float,
                                                         reason: str | None) -> None:
    record = _metric_session(repo, ar, "#!/bin/sh\n" + script,
                             expect=0 if reason is None else 3)
    assert (record["metric"], record.get("reason")) == (metric, reason)
    assert record["status"] == ("keep" if reason is None else "crash")


def test_metric_and_checks_commands_slower_than_a_second(repo: Path, ar: Tool) -> None:
    """Commands that outlast the once-a-second progress tick: the metric command's number is
    read, and the checks' verdict, exit code and last lines are recorded."""
    # (one sample a measurement: the strict rule's, so that the slow commands run once each)
    record = _metric_session(repo, ar, "#!/bin/sh\nsleep 1.2\necho 41.5\n", "--checks-command",
                             "sleep 1.2; echo 'test_x failed'; exit 4", "--decision", "strict",
                             expect=3)
    assert (record["status"], record["metric"]) == ("checks_failed", 41.5)
    checks = record["checks"]
    assert (checks["passed"], checks["exit_code"], checks["timed_out"], checks["tail"],
            checks["reason"]) == (False, 4, False, "test_x failed",
                                  "the checks command exited with code 4")
    assert checks["duration_s"] >= 1.2
    ar(repo, "start", "--new-segment", "--checks-command", "sleep 1.2")
    passed = runs(repo)[-1]
    assert (passed["status"], passed["checks"]["passed"], passed["checks"]["tail"],
            passed["checks"]["reason"]) == ("keep", True, "", None)


def test_the_measured_command_reads_dev_null_not_the_callers_stdin(repo: Path) -> None:
    """The experiment, the metric command and the checks read an empty standard input, never
    what the caller's stdin holds (an agent's pipe), which they could block on or eat."""
    write(repo / "bench.sh", "#!/bin/sh\nif read line; then echo \"score: $line\"; "
          "else echo 'score: 100'; fi\n")
    write(repo / "score.sh", "#!/bin/sh\nif read line; then echo \"$line\"; else echo 7; fi\n")
    write(repo / "checks.sh", "#!/bin/sh\nif read line; then exit 9; fi\n")
    commit_all(repo)
    base = ["start", "--goal", "g", "--session-id", "s", "--command", "sh bench.sh",
            "--metric-pattern", r"score: (\S+)", "--checks-command", "sh checks.sh",
            "--readonly", "checks.sh", "--readonly", "score.sh"]
    for args, metric in ((base, 100), (["start", "--new-segment", "--metric-command",
                                        "sh score.sh"], 7)):
        started = subprocess.run([sys.executable, "-m", "git_autoresearch", *args, "--json"],
                                 cwd=repo, input="5\n6\n", capture_output=True, text=True)
        assert started.returncode == 0, started.stderr
        baseline = check_document(json.loads(started.stdout))["baseline"]
        assert (baseline["metric"], baseline["checks"]["passed"]) == (metric, True)


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="pidfd_open(2): Linux only")
def test_a_commands_end_is_seen_as_it_ends_not_on_a_sleeping_poll(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """exit_of blocks on the process itself (a pidfd) rather than polling with sleeps that
    double up to 50 ms (Popen.wait with a timeout), which counted up to 50 ms late in every
    sample's duration: it returns False while the command runs, True once it ended, reaped,
    and never sleeps."""
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    proc = subprocess.Popen(["sleep", "0.3"])
    assert runner.exit_of(proc, 0.01) is False
    assert proc.returncode is None
    assert runner.exit_of(proc, 30.0) is True
    assert proc.returncode == 0
    assert slept == []


def test_without_pidfds_a_commands_end_is_waited_for_as_before(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where pidfd_open(2) is missing or refused (macOS, an old kernel, a seccomp filter),
    exit_of waits with Popen.wait: False while the command runs, True once it ended, reaped."""

    def refused(pid: int) -> int:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", refused, raising=False)
    proc = subprocess.Popen(["sleep", "0.3"])
    assert runner.exit_of(proc, 0.01) is False
    assert proc.returncode is None
    assert runner.exit_of(proc, 30.0) is True
    assert proc.returncode == 0


def test_ending_a_group_waits_the_grace_then_only_until_it_is_gone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """end_group on a clock that moves only when it sleeps: a group that obeys SIGTERM is
    gone long before the grace is over; one that ignores it gets the whole grace, then
    SIGKILL, and end_group returns once every member is gone, not after its 5 s cap."""
    clock = [0.0]
    real_sleep = time.sleep

    def sleep(seconds: float) -> None:
        real_sleep(0.005)
        clock[0] += seconds

    for script, grace, least, most, code in (
            ("sleep 300 & sleep 300 & wait", 30.0, 0.0, 30.0, -signal.SIGTERM),
            ("trap '' TERM; sleep 300 & sleep 300 & wait", 1.0, 1.0, 6.0, -signal.SIGKILL)):
        proc = subprocess.Popen(["/bin/sh", "-c", script], start_new_session=True)
        while len(_members(proc.pid)) < 3:
            real_sleep(0.01)
        clock[0] = 0.0
        with monkeypatch.context() as patched:
            patched.setattr(time, "monotonic", lambda: clock[0])
            patched.setattr(time, "sleep", sleep)
            runner.end_group(proc, grace)
        assert least <= clock[0] < most, script
        assert _members(proc.pid) == [], script
        assert proc.wait(timeout=5) == code, script


def _members(pgid: int) -> list[int]:
    """The live processes of process group ``pgid`` (zombies left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def test_a_runs_duration_is_the_wall_time_of_its_measurement(repo: Path, ar: Tool) -> None:
    """``duration_s``: the seconds the measurement took (every sample; at least the command's
    own sleep, to the millisecond), in the record and in log; null for a run recorded without
    a measurement."""
    write(repo / "bench.sh", "#!/bin/sh\nsleep 0.3\necho \"score: $(cat value.txt)\"\n")
    commit_all(repo)
    ar(repo, *start_args("--decision", "strict", "--runs-per-experiment", "2"))
    write(repo / "value.txt", "90\n")
    measured = ar(repo, "run", "-d", "measured", "--json").json()
    write(repo / "value.txt", "95\n")
    unmeasured = ar(repo, "discard", "-d", "not measured", "--json").json()
    durations = [r["duration_s"] for r in runs(repo)]
    assert durations[2] is None and unmeasured["duration_s"] is None
    for seconds in durations[:2]:
        assert isinstance(seconds, float) and seconds >= 0.6 and round(seconds, 3) == seconds
    assert measured["duration_s"] == durations[1]
    assert [r["duration_s"] for r in ar(repo, "log", "--json").json()["runs"]] == durations


def test_a_file_changed_again_while_the_run_is_measured_is_said(repo: Path, ar: Tool) -> None:
    """A file the experiment changed that changes again while the run is measured (an agent
    that edits before the run ends) is named in the run's warnings: what is recorded is not
    all what was measured. A file the commands create while measuring (a build's output) is
    no such change, and a run left alone says nothing."""
    command = ("sh bench.sh; if [ -f src/again ]; then echo built > out.txt; "
               "echo '# again' >> src/lib.py; fi")
    ar(repo, "start", "--goal", "g", "--session-id", "s1", "--command", command,
       "--metric-pattern", r"score: (\S+)", "--direction", "lower", "--decision", "strict")
    write(repo / "value.txt", "90\n")
    quiet = ar(repo, "run", "-d", "left alone", "--json").json()
    assert quiet["status"] == "keep" and quiet["warnings"] == []
    write(repo / "value.txt", "80\n")
    write(repo / "src" / "lib.py", "def f():\n    return 2\n")
    write(repo / "src" / "again", "")
    edited = ar(repo, "run", "-d", "edited while measured", "--json").json()
    assert edited["status"] == "keep"
    assert [w for w in edited["warnings"] if "while the run was measured" in w] == [
        "src/lib.py changed while the run was measured: what is recorded is the work tree as "
        "it is now, not all of which was measured (leave the work tree alone until a run "
        "ends)"]


@pytest.mark.parametrize("scope", [[], ["--scope", "value.txt"]])
def test_a_file_first_changed_while_the_run_is_measured_is_said(repo: Path, ar: Tool,
                                                               scope: list[str]) -> None:
    """A tracked file the experiment had not changed that changes while the run is measured
    (an agent's edit made before the run ended, or a benchmark that rewrites a committed
    results file) said nothing: a keep committed it unmeasured, or set it aside as the
    agent's change outside the scope. Now it is named, as a file changed again is."""
    write(repo / "results.txt", "none yet\n")
    commit_all(repo)
    command = "sh bench.sh; date +%N > results.txt"
    ar(repo, "start", "--goal", "g", "--session-id", "s1", "--command", command,
       "--metric-pattern", r"score: (\S+)", "--direction", "lower", "--decision", "strict",
       *scope)
    git(repo, "checkout", "-q", "--", "results.txt")  # (the baseline's rewrite)
    write(repo / "value.txt", "90\n")
    record = ar(repo, "run", "-d", "a gain", "--json").json()
    assert record["status"] == "keep"
    assert [w for w in record["warnings"] if "while the run was measured" in w] == [
        "results.txt changed while the run was measured: what is recorded is the work tree "
        "as it is now, not all of which was measured (leave the work tree alone until a run "
        "ends; a file the commands rewrite belongs outside git, in .gitignore)"]
