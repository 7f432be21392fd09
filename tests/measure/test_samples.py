"""measure/samples.py called in-process: the values a record is made of (the log's tail, the
samples, the reasons, the checks), each asserted exactly. The commands run are real shell
commands."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, write

from git_autoresearch.measure.samples import (
    MAX_METRICS,
    TAIL_CHARS,
    TAIL_LINES,
    LogReading,
    Measurement,
    json_files_state,
    last_line,
    measure,
    parse_number,
    read_log,
    tail,
)
from git_autoresearch.session.config import Config


def config(command: str, **more: Any) -> Config:
    more.setdefault("metric_pattern", r"score: (\S+)")
    return Config(goal="g", command=command, session_id="s1", metric_name="score", **more)


def run(tmp_path: Path, command: str, **more: Any) -> Measurement:
    options = {k: more.pop(k) for k in ("samples_at_most", "enough", "checks", "first_sample")
               if k in more}
    return measure(config(command, **more), top=tmp_path, log_path=tmp_path / "auto" / "run.log",
                   env=dict(os.environ), **options)


def logged(tmp_path: Path) -> str:
    return (tmp_path / "auto" / "run.log").read_bytes().decode()  # (\r kept)


# --- reading numbers and logs -------------------------------------------------------------------

def test_a_separator_anywhere_is_named_as_one() -> None:
    assert parse_number("1,5") == (None, "metric '1,5' has a thousands separator; print it "
                                         "without one")
    assert parse_number("1e400") == (None, "metric '1e400' is not a finite number")
    assert parse_number(" 2.5 ") == (2.5, None)


def test_a_found_metric_has_no_problem(tmp_path: Path) -> None:
    log = write(tmp_path / "run.log", "METRIC score=3\n")
    reading = read_log(log, 0, None, "score")
    assert (reading.metric, reading.problem, reading.metrics) == (3.0, None, {})
    assert LogReading().problem is None and LogReading().metrics == {}
    missing = read_log(write(tmp_path / "other.log", "score 3\n"), 0, None, "score")
    assert (missing.metric, missing.problem) == (None, "no 'METRIC score=<number>' line in the "
                                                       "log")


@pytest.mark.parametrize("value, why", [
    ("1e400", "metric '1e400' is not a finite number"),
    ("9" * 400, f"metric '{'9' * 400}' is not a finite number"),
    ("nan", "metric 'nan' is not a finite number"),
    ("14,600", "metric '14,600' has a thousands separator; print it without one")])
def test_a_metric_line_whose_value_is_refused_says_why(tmp_path: Path, value: str,
                                                       why: str) -> None:
    """The METRIC line is there, its value refused: the reason is the value's (it said there
    was no METRIC line); an earlier good line still wins over a later refused one."""
    log = write(tmp_path / "run.log", f"METRIC score={value}\n")
    reading = read_log(log, 0, None, "score")
    assert (reading.metric, reading.problem) == (None, why)
    both = write(tmp_path / "both.log", f"METRIC score=3\nMETRIC score={value}\n")
    assert read_log(both, 0, None, "score").metric == 3.0


def test_the_log_is_read_from_the_sample_offset(tmp_path: Path) -> None:
    first = "score: 1\n"
    log = write(tmp_path / "run.log", first + "no number here\n")
    reading = read_log(log, len(first), r"score: (\S+)", "score")
    assert (reading.metric, reading.problem) == (
        None, r"metric pattern 'score: (\S+)' matched nothing in the log")


def test_a_pattern_alternative_without_the_group_is_skipped(tmp_path: Path) -> None:
    log = write(tmp_path / "run.log", "score: 5\ndone\n")
    assert read_log(log, 0, r"score: (\S+)|done", "score").metric == 5.0


def test_a_separator_after_the_group_is_found_and_quoted(tmp_path: Path) -> None:
    """The digits after the capture are looked at where the group ends, not the match, and
    the quoted value is the number with its separator (four characters: ``,ddd``)."""
    log = write(tmp_path / "run.log", "score: 14,600.\n")
    reading = read_log(log, 0, r"score: (\d+)\S*", "score")
    assert reading.problem == ("metric '14,600' has a thousands separator; print it without "
                               "one")


def test_at_most_max_metrics_names_are_kept(tmp_path: Path) -> None:
    lines = [f"METRIC m{i}={i}" for i in range(MAX_METRICS + 10)] + ["METRIC m0=-1"]
    log = write(tmp_path / "run.log", "\n".join(lines) + "\nscore: 1\n")
    metrics = read_log(log, 0, r"score: (\S+)", "score").metrics
    assert MAX_METRICS == 256 and len(metrics) == 256
    assert metrics["m255"] == 255 and "m256" not in metrics and metrics["m0"] == -1


# --- the tail and the live line -------------------------------------------------------------

def test_tail_keeps_the_last_lines_and_characters(tmp_path: Path) -> None:
    assert (TAIL_LINES, TAIL_CHARS) == (30, 4000)
    log = write(tmp_path / "run.log", "".join(f"line {i}\n" for i in range(100)))
    assert tail(log) == "\n".join(f"line {i}" for i in range(70, 100))
    wide = write(tmp_path / "wide.log", "x" * 10 + "\U0001F600" * 5000 + "\n")
    assert tail(wide) == "\U0001F600" * 4000  # 4 bytes each, none cut in two
    short = write(tmp_path / "short.log", "ab\ncd\n")
    assert tail(short) == "ab\ncd"
    assert tail(short, offset=3) == "cd"
    assert tail(tmp_path / "absent.log") == ""


def test_last_line_is_the_last_visible_piece(tmp_path: Path) -> None:
    assert last_line(write(tmp_path / "a.log", "text\n\n\n\n\n")) == "text"
    assert last_line(write(tmp_path / "b.log", "text\n\n\n\n\n\n")) == ""
    assert last_line(write(tmp_path / "c.log", "old\r new \r\n")) == "new"
    assert last_line(write(tmp_path / "d.log", "y" * 1000 + "\n")) == "y" * 400
    assert last_line(write(tmp_path / "e.log", "")) == ""


# --- measure ----------------------------------------------------------------------------------

def test_a_measurement_in_a_new_folder_twice(tmp_path: Path) -> None:
    fds = len(os.listdir("/proc/self/fd"))
    for _ in range(2):
        result = run(tmp_path, "echo 'score: 4'")
        assert (result.metric, result.samples, result.exit_code, result.reason) == (
            4.0, [4.0], 0, None)
    assert len(os.listdir("/proc/self/fd")) == fds  # the run log's descriptor is closed
    umask = os.umask(0)
    os.umask(umask)
    mode = stat.S_IMODE((tmp_path / "auto" / "run.log").stat().st_mode)
    assert mode == 0o644 & ~umask
    assert logged(tmp_path) == "score: 4\n"  # one sample: no sample header
    assert result.duration_s is not None and result.duration_s == round(result.duration_s, 3)


def test_samples_have_headers_and_a_late_failure_names_its_sample(tmp_path: Path) -> None:
    n = "$AUTORESEARCH_SAMPLE"
    result = run(tmp_path, f'test "{n}" -lt 3 && echo "score: {n}"', runs_per_experiment=3)
    assert (result.metric, result.samples, result.exit_code) == (None, [1.0, 2.0], 1)
    assert result.reason == "sample 3: the command exited with code 1"
    assert logged(tmp_path) == ("==== sample 1 of 3 ====\nscore: 1\n==== sample 2 of 3 ====\n"
                                "score: 2\n==== sample 3 of 3 ====\n")
    first = run(tmp_path, "exit 2", runs_per_experiment=3)
    assert first.reason == "the command exited with code 2"


def test_enough_stops_the_sampling(tmp_path: Path) -> None:
    result = run(tmp_path, 'echo "score: $AUTORESEARCH_SAMPLE"', runs_per_experiment=5,
                 enough=lambda samples: len(samples) >= 2, first_sample=7)
    assert result.samples == [7.0, 8.0] and result.metric == 7.5


def test_a_command_killed_by_a_signal_says_so(tmp_path: Path) -> None:
    result = run(tmp_path, "echo 'score: 1'; kill -9 $$")
    assert result.reason == "the command was killed by signal 9"
    assert result.metric is None and result.log_tail == "score: 1"


def test_a_crash_keeps_the_last_lines_of_the_log(tmp_path: Path) -> None:
    result = run(tmp_path, "seq 1 50; exit 3")
    assert result.log_tail == "\n".join(str(i) for i in range(21, 51))


def test_the_checks_record_their_own_tail(tmp_path: Path) -> None:
    result = run(tmp_path, "echo 'score: 1'", checks_command="seq 1 30; exit 4")
    checks = result.checks
    assert checks is not None
    assert (checks["passed"], checks["exit_code"], checks["timed_out"]) == (False, 4, False)
    assert checks["tail"] == "\n".join(str(i) for i in range(11, 31))
    assert checks["reason"] == "the checks command exited with code 4"
    assert logged(tmp_path).startswith("score: 1\n==== checks: seq 1 30; exit 4 ====\n1\n")
    long = run(tmp_path, "echo 'score: 1'", checks_command=f"{PYTHON} -c \"print('z' * 3000)\"; "
                                                           "exit 1")
    assert long.checks is not None and long.checks["tail"] == "z" * 2000
    fine = run(tmp_path, "echo 'score: 1'", checks_command="echo fine")
    assert fine.checks is not None
    assert (fine.checks["passed"], fine.checks["tail"], fine.checks["reason"]) == (
        True, "", None)
    assert run(tmp_path, "echo 'score: 1'", checks_command="false", checks=False).checks is None


def test_a_metric_command_reads_its_own_stdout(tmp_path: Path) -> None:
    result = run(tmp_path, "echo bench", metric_pattern=None,
                 metric_command="echo warm >&2; echo 'METRIC rss=3'; printf 'old\\r 2.5 \\n'; "
                                "echo 'METRIC score=9'")
    assert (result.metric, result.metrics, result.reason) == (2.5, {"rss": 3.0}, None)
    assert not (tmp_path / "auto" / "metric.out").exists()
    assert logged(tmp_path).endswith("warm\nMETRIC rss=3\nold\r 2.5 \nMETRIC score=9\n")
    two = run(tmp_path, "true", metric_pattern=None, metric_command="echo 1; echo 2")
    assert two.reason == ("the metric command printed 2 values on stdout; it must print "
                          "exactly one number")


def test_json_on_stdout_is_read_apart_from_stderr(tmp_path: Path) -> None:
    result = run(tmp_path, 'echo "noise {" >&2; echo \'{"score": 6, "mem": 2}\'',
                 metric_pattern=None, metric_json="score", metrics_json={"mem": "mem"})
    assert (result.metric, result.metrics, result.reason) == (6.0, {"mem": 2.0}, None)
    assert not (tmp_path / "auto" / "command.out").exists()
    assert logged(tmp_path) == 'noise {\n{"score": 6, "mem": 2}\n'


def test_json_metrics_from_a_file_beside_a_pattern(tmp_path: Path) -> None:
    command = """echo 'score: 3'; echo '{"mem": 5}' > out.json"""
    result = run(tmp_path, command, metrics_json={"mem": "out.json:mem"})
    assert (result.metric, result.metrics, result.reason) == (3.0, {"mem": 5.0}, None)
    stale = run(tmp_path, "echo 'score: 3'", metrics_json={"mem": "out.json:mem"})
    assert stale.reason == ("metrics_json 'mem': out.json was not rewritten by the command (it "
                            "is left from before)")


def test_each_json_file_is_looked_at_once(tmp_path: Path) -> None:
    write(tmp_path / "out.json", "{}")
    cfg = config("true", metric_pattern=None, metric_json="out.json:score",
                 metrics_json={"mem": "out.json:mem", "io": "b.json:io", "rss": "rss"})
    states = json_files_state(cfg, tmp_path)
    assert list(states) == ["out.json", "b.json"] and states["b.json"] is None
    st = (tmp_path / "out.json").stat()
    assert states["out.json"] == (st.st_ino, st.st_mtime_ns, st.st_size)


def test_a_metric_command_is_read_to_its_first_mebibyte(tmp_path: Path) -> None:
    """The number at 0.75 MiB is read; the one past 1.5 MiB is not (else two values)."""
    script = write(tmp_path / "metric.py", (
        "import sys\n"
        "pad = (' ' * 1023 + '\\n') * 256\n"  # a quarter of a MiB of blank lines
        "sys.stdout.write(pad * 3 + '7\\n' + pad * 3 + '8\\n')\n"))
    result = run(tmp_path, "true", metric_pattern=None, metric_command=f"{PYTHON} {script}")
    assert (result.metric, result.reason) == (7.0, None)


def test_json_on_stdout_is_read_to_its_first_8_mebibytes(tmp_path: Path) -> None:
    """JSON lines at 0, 7.5 and 8.5 MiB: the last one read is the one at 7.5 MiB."""
    script = write(tmp_path / "bench.py", (
        "import sys\n"
        "pad = (' ' * 1023 + '\\n') * 512\n"  # half a MiB of blank lines
        "sys.stdout.write('{\"score\": 1}\\n' + pad * 15 + '{\"score\": 2}\\n' + pad * 2"
        " + '{\"score\": 3}\\n')\n"))
    result = run(tmp_path, f"{PYTHON} {script}", metric_pattern=None, metric_json="score")
    assert (result.metric, result.reason) == (2.0, None)
