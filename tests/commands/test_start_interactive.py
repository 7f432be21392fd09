"""Interactive ``start``: the loop seed's questions on a terminal, never without one.

The questions and their order come from the loop seed, autoresearch-loop.SKILL.txt, "Parameters"
(1 goal, 2 command, 3 metric extraction, 4 direction, 5 files in scope, 6 timeout, 7 validation
command, 8 runs per experiment, 9 max experiments). The tests drive the real executable through
a pseudo-terminal and feed it answers.
"""

from __future__ import annotations

import os
import select
import subprocess
from pathlib import Path

from conftest import BIN, git, write

from git_autoresearch.session.config import parse_toml


def converse(cwd: Path, args: list[str], steps: list[tuple[str, str]]) -> tuple[int, str]:
    """Run ``git-autoresearch`` with stdin, stdout and stderr on a pseudo-terminal; for each
    (prompt, answer) step wait until ``prompt`` has been shown since the last answer, then type
    ``answer`` and Enter. Returns the exit status and everything shown."""
    master, slave = os.openpty()
    proc = subprocess.Popen([str(BIN / "git-autoresearch"), *args], cwd=cwd, stdin=slave,
                            stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    shown = ""
    seen = 0

    def read_some() -> bool:
        nonlocal shown
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            return False
        try:
            data = os.read(master, 4096)
        except OSError:
            return False
        if not data:
            return False
        shown += data.decode("utf-8", "replace").replace("\r\n", "\n")
        return True

    try:
        for prompt, answer in steps:
            while prompt not in shown[seen:]:
                assert read_some(), f"no prompt {prompt!r}; shown so far:\n{shown}"
            seen = shown.index(prompt, seen) + len(prompt)
            os.write(master, answer.encode() + b"\r")
        while read_some():
            pass
        code = proc.wait(timeout=60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, shown


def test_start_on_a_terminal_asks_the_seed_questions_and_creates_the_session(repo: Path) -> None:
    """A wrong regex is tried against a first run of the command and asked again; a scope path
    that matches nothing is asked again; the defaults are shown; the session is then made with
    the answers (loop seed, autoresearch-loop.SKILL.txt, "Parameters", questions 1 to 9)."""
    code, shown = converse(repo, ["start", "--metric-name", "score"], [
        ("Goal", "lower the value"),
        ("Experiment command", "sh bench.sh"),
        ("Metric regex", r"time: (\d+)"),
        ("Metric regex", r"score: (\d+)"),
        ("Direction (lower, higher) [lower]", ""),
        ("Files in scope", "nope.py"),
        ("Files in scope", "src/lib.py, value.txt"),
        ("Timeout in seconds per run [600]", "120"),
        ("Checks command", ""),
        ("Runs per experiment [1]", ""),
        ("Max experiments", "7"),
    ])
    assert code == 0, shown
    assert "matched nothing in the command's output" in shown
    assert "matched: score: 100 -> 100" in shown
    assert "'nope.py' matches no file" in shown
    assert "session lower-the-value-" in shown
    assert "baseline: score = 100 (run 1)" in shown
    cfg = parse_toml((repo / ".auto" / "config.toml").read_bytes(), source="config.toml")
    assert cfg["goal"] == "lower the value"
    assert cfg["command"] == "sh bench.sh"
    assert cfg["metric_pattern"] == r"score: (\d+)"
    assert cfg["direction"] == "lower"
    assert cfg["scope"] == ["src/lib.py", "value.txt"]
    assert cfg["timeout_seconds"] == 120
    assert cfg["max_experiments"] == 7
    assert "checks_command" not in cfg


def test_start_asks_only_what_the_options_leave_out(repo: Path) -> None:
    """Options given on the command line are not asked again: only the goal is missing here."""
    code, shown = converse(repo, [
        "start", "--command", "sh bench.sh", "--metric-name", "score",
        "--metric-pattern", r"score: (\S+)", "--direction", "lower", "--timeout-seconds", "60",
        "--checks-command", "true", "--runs-per-experiment", "1", "--max-experiments", "3",
        "--scope", "src"], [("Goal", "faster")])
    assert code == 0, shown
    for question in ("Experiment command", "Metric regex", "Direction", "Files in scope",
                     "Timeout", "Checks command", "Runs per experiment", "Max experiments"):
        assert question not in shown
    assert "baseline: score = 100 (run 1)" in shown


def test_start_with_json_on_a_terminal_does_not_ask(repo: Path) -> None:
    """``--json`` never prompts, even on a terminal: the one-line error, exit 2."""
    code, shown = converse(repo, ["start", "--json"], [])
    assert code == 2
    assert "Goal" not in shown
    assert '"error": "configuration: \'goal\' is required"' in shown
    assert shown.endswith("git autoresearch: configuration: 'goal' is required\n")
    assert not (repo / ".auto").exists()


def test_start_without_a_terminal_does_not_ask(repo: Path) -> None:
    """Input not from a terminal: no prompt, the one-line error, exit 2."""
    proc = subprocess.run([str(BIN / "git-autoresearch"), "start"], cwd=repo,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == "git autoresearch: configuration: 'goal' is required\n"
    assert not (repo / ".auto").exists()


def test_start_asked_in_a_subfolder_runs_the_trial_at_the_top(repo: Path) -> None:
    """The first run that tries the regex runs where measuring does, at the top of the work
    tree; scope answers are read from the current directory, as ``--scope`` is."""
    code, shown = converse(repo / "src", ["start", "--metric-name", "score", "--no-baseline"], [
        ("Goal", "lower the value"),
        ("Experiment command", "sh bench.sh"),
        ("Metric regex", r"score: (\d+)"),
        ("Direction", "higher"),
        ("Files in scope", "lib.py"),
        ("Timeout", ""),
        ("Checks command", "true"),
        ("Runs per experiment", "3"),
        ("Max experiments", ""),
    ])
    assert code == 0, shown
    assert "matched: score: 100 -> 100" in shown
    cfg = parse_toml((repo / ".auto" / "config.toml").read_bytes(), source="config.toml")
    assert cfg["scope"] == ["src/lib.py"]
    assert cfg["direction"] == "higher"
    assert cfg["checks_command"] == "true"
    assert cfg["runs_per_experiment"] == 3
    assert "max_experiments" not in cfg


def test_start_questions_ended_by_end_of_input_leave_nothing(repo: Path) -> None:
    """End of input (Ctrl-D) at a question: "aborted", exit 130, no session, no branch."""
    code, shown = converse(repo, ["start"], [("Goal", "\x04")])
    assert code == 130
    assert shown.endswith("aborted\n")
    assert not (repo / ".auto").exists()
    assert git(repo, "branch", "--list", "autoresearch/*") == ""


def test_start_questions_say_when_the_trial_run_fails(repo: Path) -> None:
    """A first run that exits non-zero is named, and its output still tried."""
    write(repo / "fail.sh", "echo 'score: 5'\nexit 4\n")
    git(repo, "add", "fail.sh")
    git(repo, "commit", "-q", "-m", "failing bench")
    code, shown = converse(repo, ["start", "--metric-name", "score", "--no-baseline",
                                  "--scope", "src", "--timeout-seconds", "30",
                                  "--checks-command", "true", "--runs-per-experiment", "1",
                                  "--max-experiments", "2", "--direction", "lower"], [
        ("Goal", "g"),
        ("Experiment command", "sh fail.sh"),
        ("Metric regex", r"score: (\d+)"),
    ])
    assert code == 0, shown
    assert "the command exited 4\nmatched: score: 5 -> 5" in shown
