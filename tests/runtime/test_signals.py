"""SIGINT, SIGTERM and SIGHUP sent for real to the tool at its critical points, and git's own
lock files: whatever arrives, the experiment's and the hooks' process groups end, git finishes or
undoes its lock, the command exits 128 + N, and a stale lock is named, never half-used."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    BIN,
    TOOL,
    Tool,
    assert_dies,
    check_document,
    git,
    launch,
    runs,
    start_args,
    tool,
    wait_for_file,
    write,
)

# Under nohup (or any parent that ignores SIGHUP) the tool, started with SIGHUP ignored, keeps
# it ignored, as it must: a test that needs a hang-up to reach the tool cannot run there.
NEEDS_HANGUP = pytest.mark.skipif(
    signal.getsignal(signal.SIGHUP) == signal.SIG_IGN,
    reason="SIGHUP is ignored in this process (run under nohup?), and so in the tool it "
           "starts, which keeps an ignored signal ignored")
SIGNALS = [pytest.param(signal.SIGINT, 130, id="INT"),
           pytest.param(signal.SIGTERM, 143, id="TERM"),
           pytest.param(signal.SIGHUP, 129, id="HUP", marks=NEEDS_HANGUP)]


def wait_for_pause(proc: subprocess.Popen[bytes], step: str) -> bytes:
    """Read the tool's stderr until it says it paused at ``step``; returns what it said."""
    assert proc.stderr is not None
    said = b""
    while True:
        line = proc.stderr.readline()
        said += line
        if not line or line.strip() == f"paused at {step}".encode():
            break
    assert line, f"never paused at {step}: {said.decode()}"
    return said


def wait_for_pid(path: Path, seconds: float = 20) -> int:
    """The pid a process writes to ``path`` as one line, once the whole line is there."""
    deadline = time.monotonic() + seconds
    while not (path.exists() and path.read_bytes().endswith(b"\n")):
        assert time.monotonic() < deadline, f"{path} never got a pid"
        time.sleep(0.02)
    return int(path.read_text())


def git_locks(top: Path) -> list[str]:
    return sorted(str(p.relative_to(top)) for p in (top / ".git").rglob("*.lock"))


def error_document(out: bytes, code: int) -> dict[str, Any]:
    """The JSON error document of a command a signal ended; ``recorded`` names the run it
    recorded before the signal was handled (a caller takes non-zero for "not recorded")."""
    data = check_document(json.loads(out))
    assert data["exit_code"] == code
    assert set(data) == {"schema", "error", "exit_code", "recorded"}
    return dict(data)


@pytest.fixture
def slow(repo: Path, ar: Tool, tmp_path: Path) -> Path:
    """A session whose experiment writes its pid to ``<tmp>/pid`` and sleeps for 30 s."""
    pidfile = tmp_path / "pid"
    ar(repo, *start_args("--no-baseline"))
    ar(repo, "start", "--new-segment", "--no-baseline", "--command",
       f"echo $$ > {pidfile}; sleep 30")
    return pidfile


@pytest.mark.parametrize("sig,code", SIGNALS)
def test_a_signal_just_after_the_experiment_started_ends_its_group(
        repo: Path, slow: Path, sig: signal.Signals, code: int) -> None:
    proc = launch(repo, "run", "-d", "slow", "--json",
                  env={"GIT_AUTORESEARCH_PAUSE_AT": "group:started"})
    wait_for_pause(proc, "group:started")
    pid = wait_for_pid(slow)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    error_document(out, code)
    assert_dies(pid, "the experiment of the interrupted command")
    assert [r["run"] for r in runs(repo)] == [], "nothing was recorded"


@pytest.mark.parametrize("sig,code", SIGNALS)
def test_a_signal_during_the_measurement_ends_its_group(
        repo: Path, slow: Path, sig: signal.Signals, code: int) -> None:
    proc = launch(repo, "measure", "--json")
    pid = wait_for_pid(slow)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    error_document(out, code)
    said = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated", signal.SIGHUP: "hung up"}
    assert err.decode().splitlines()[-1] == f"git autoresearch: {said[sig]}"
    assert_dies(pid, "the experiment of the interrupted command")


@pytest.mark.parametrize("sig,code", SIGNALS)
def test_a_signal_while_a_hook_runs_ends_the_hooks_group(
        repo: Path, ar: Tool, tmp_path: Path, sig: signal.Signals, code: int) -> None:
    ar(repo, *start_args())
    pidfile = tmp_path / "hook.pid"
    write(repo / ".auto" / "hooks" / "before.sh",
          f"#!/bin/sh\nsleep 30 &\necho $! > {pidfile}\nwait\n", 0o755)
    proc = launch(repo, "hook", "before", "--json")
    pid = wait_for_pid(pidfile)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    error_document(out, code)
    assert_dies(pid, "the hook of the interrupted command")


REFERENCE_HOOK = """#!/bin/sh
input=$(cat)
if [ "$1" = prepared ] && printf '%s\\n' "$input" | grep -q ' HEAD$'; then
    : > {marker}
    sleep 1
fi
exit 0
"""


@pytest.fixture
def slow_head(repo: Path, ar: Tool, tmp_path: Path) -> Path:
    """A session whose git takes a second to move HEAD (a reference-transaction hook, run
    while git holds HEAD.lock and the branch's lock); an experiment that improves the metric
    waits in the work tree. Returns the file the hook creates when it starts waiting."""
    ar(repo, *start_args())
    marker = tmp_path / "moving-head"
    write(repo / ".git" / "hooks" / "reference-transaction",
          REFERENCE_HOOK.format(marker=marker), 0o755)
    write(repo / "value.txt", "50\n")
    return marker


@pytest.mark.parametrize("sig,code", SIGNALS)
def test_a_signal_while_git_moves_head_lets_the_keep_finish(
        repo: Path, ar: Tool, slow_head: Path, sig: signal.Signals, code: int) -> None:
    head = git(repo, "rev-parse", "HEAD")
    proc = launch(repo, "keep", "-d", "better", "--metric", "50", "--json")
    wait_for_file(slow_head)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    commit = git(repo, "rev-parse", "--short=7", "HEAD")
    assert error_document(out, code)["recorded"] == {"run": 2, "status": "keep",
                                                      "commit": commit}
    said = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated", signal.SIGHUP: "hung up"}
    assert err.decode().splitlines()[-1] == \
        f"git autoresearch: {said[sig]} after run 2 was recorded (keep)"
    assert git_locks(repo) == []
    assert [(r["run"], r["status"]) for r in runs(repo)] == [(1, "keep"), (2, "keep")]
    assert git(repo, "rev-parse", "HEAD^") == head
    assert git(repo, "log", "-1", "--format=%(trailers:key=Autoresearch-Run,valueonly)") == "2"
    assert not (repo / ".git" / "autoresearch" / "intent.json").exists()
    assert ar(repo, "status", "--json").json()["warnings"] == []
    write(repo / "value.txt", "40\n")
    assert ar(repo, "keep", "-d", "later", "--metric", "40", "--json").json()["run"] == 3


def test_ctrl_c_reaching_git_too_leaves_no_lock_and_no_phantom_keep(
        repo: Path, ar: Tool, slow_head: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    proc = launch(repo, "keep", "-d", "better", "--metric", "50", "--json", new_group=True)
    wait_for_file(slow_head)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal does: to the whole foreground group
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    error_document(out, 130)
    assert git_locks(repo) == []
    assert git(repo, "rev-parse", "HEAD") == head, "git was interrupted before HEAD moved"
    assert [r["run"] for r in runs(repo)] == [1]
    assert ar(repo, "status", "--json").json()["warnings"] == []
    assert (repo / "value.txt").read_text() == "50\n", "the experiment is still there"
    (repo / ".git" / "hooks" / "reference-transaction").unlink()
    assert ar(repo, "keep", "-d", "again", "--metric", "50", "--json").json()["run"] == 2


def test_a_signal_inside_a_finalizer_still_ends_the_command(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    script = (
        "import os, signal, sys\n"
        "from git_autoresearch import cli\n"
        "class Finalized:\n"
        "    def __del__(self):\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        for _ in range(1000):  # the handler runs here, inside __del__\n"
        "            pass\n"
        "command = cli._start('status')\n"
        "Finalized()\n"
        "sys.exit(cli.invoke(command, 'git autoresearch status', ['--json']))\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=repo, capture_output=True)
    assert proc.returncode == 143, proc.stderr
    error_document(proc.stdout, 143)
    assert b"Exception ignored" not in proc.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP], ids=["INT", "HUP"])
@pytest.mark.parametrize("through_git", [False, True], ids=["dashed", "git"])
def test_a_signal_ignored_from_the_start_stays_ignored(repo: Path, ar: Tool, slow: Path,
                                                       sig: signal.Signals,
                                                       through_git: bool) -> None:
    # A shell script's background job ignores SIGINT; nohup ignores SIGHUP: such a job must
    # record its run when the signal reaches its process group.
    ar(repo, "start", "--new-segment", "--no-baseline", "--decision", "strict", "--command",
       f"echo $$ > {slow}; sleep 1; sh bench.sh")
    argv = ["git", "autoresearch", "run"] if through_git else [str(BIN / "git-autoresearch-run")]
    proc = launch(repo, "-d", "in the background", "--json", argv=argv, ignore=[sig],
                  new_group=True)
    wait_for_pid(slow)
    os.killpg(proc.pid, sig)
    out, err = proc.communicate(timeout=30)
    assert check_document(json.loads(out))["run"] == 1, err
    assert [r["run"] for r in runs(repo)] == [1]
    if not through_git:
        assert proc.returncode == 0, err
    # Through git's wrapper, git itself catches the signal although it was ignored when git
    # started, waits for the tool in its handler, and then (git 2.39) exits 128 with "waitpid
    # for git-autoresearch failed: No child processes": that exit status is git's, the run
    # was recorded and printed all the same.


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_PDEATHSIG)")
def test_a_command_whose_git_was_killed_ends_with_it(repo: Path, ar: Tool) -> None:
    """A background job (SIGINT ignored) started through git: SIGINT to git, which git passes
    on and waits, then SIGTERM, which kills git: the command ends too (as if terminated),
    instead of going on alone and racing the next command."""
    ar(repo, *start_args())
    proc = launch(repo, "--watch", "--interval", "0.2",
                  argv=["git", "autoresearch", "status"], ignore=[signal.SIGINT])
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    deadline = time.monotonic() + 20
    while not children.read_text().split():
        assert time.monotonic() < deadline, "git started no command"
        time.sleep(0.05)
    tool_pid = int(children.read_text().split()[0])
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)

    def alive() -> bool:
        try:
            state = Path(f"/proc/{tool_pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return state != "Z"

    deadline = time.monotonic() + 20
    while alive():
        assert time.monotonic() < deadline, "the command outlived its git"
        time.sleep(0.05)


# --- git's lock files ------------------------------------------------------------------------


@pytest.fixture
def experiment(repo: Path, ar: Tool) -> Path:
    ar(repo, *start_args())
    write(repo / "value.txt", "50\n")
    write(repo / "src" / "new.py", "x = 1\n")
    return repo


KEEP = ["keep", "-d", "x", "--metric", "50"]


@pytest.mark.parametrize("lock,command", [
    ("index.lock", ["run", "-d", "x"]), ("index.lock", KEEP),
    ("index.lock", ["discard", "-d", "x"]), ("index.lock", ["crash", "-d", "x"]),
    ("index.lock", ["measure"]), ("HEAD.lock", KEEP),
    ("refs/heads/autoresearch/s1.lock", KEEP), ("packed-refs.lock", ["discard", "-d", "x"]),
    ("refs/autoresearch/s1/attempts/2.lock", ["run", "-d", "x"]),
    ("refs/autoresearch/s1/attempts/2.lock", ["discard", "-d", "x"]),
    ("refs/autoresearch/s1/scope/2.lock", ["measure"]),
    ("refs/autoresearch/s1/state.lock", KEEP)], ids=lambda v: v if isinstance(v, str) else v[0])
def test_a_stale_git_lock_is_refused_before_anything_changes(
        experiment: Path, ar: Tool, lock: str, command: list[str]) -> None:
    top = experiment
    path = top / ".git" / lock
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    ledger = (top / ".auto" / "log.jsonl").read_bytes()
    scratch = sorted(p.name for p in (top / ".git" / "autoresearch").iterdir())
    # status says so before a recording command refuses (it said nothing)
    assert f"git's lock file {path} exists: a git process is at work here, or one was " \
        "killed and left it; recording commands wait a moment for it, then refuse: once no " \
        f"git process is running, remove it (rm {path})" \
        in ar(top, "status", "--json").json()["warnings"]
    res = ar(top, *command, "--json", expect=3)
    assert res.json()["error"] == (
        f"git's lock file {path} exists: another git process is running here, or one was "
        f"killed and left it; once no git process is running, remove it (rm {path}) and run "
        "the command again")
    assert (top / "value.txt").read_text() == "50\n"
    assert (top / "src" / "new.py").read_text() == "x = 1\n"
    assert (top / ".auto" / "log.jsonl").read_bytes() == ledger
    assert sorted(p.name for p in (top / ".git" / "autoresearch").iterdir()) == scratch
    path.unlink()
    assert ar(top, *command, "--json").code == 0


def test_a_lock_taken_during_a_revert_is_named_and_resume_finishes(experiment: Path,
                                                                   ar: Tool) -> None:
    top = experiment
    lock = top / ".git" / "index.lock"
    proc = tool(top, "discard", "-d", "blocked",
                env={"GIT_AUTORESEARCH_CREATE_AT": "revert:after-attempt",
                     "GIT_AUTORESEARCH_CREATE_FILE": str(lock)})
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.splitlines()[0] == (
        f"git autoresearch: git could not finish the revert of run 2: its lock file "
        f"{lock} exists (git said: fatal: Unable to create '{lock}': File exists.); once no git "
        "process is running, remove it (rm " f"{lock}); git autoresearch resume then finishes "
        "run 2")
    assert "Traceback" not in proc.stderr
    assert ar(top, "resume", expect=3).err == (
        f"git autoresearch: git's lock file {lock} exists, so the interrupted revert of run 2 "
        "cannot be finished: another git process is running here, or one was killed and left "
        f"it; once no git process is running, remove it (rm {lock}); git autoresearch resume "
        "then finishes the run\n")
    lock.unlink()
    actions = ar(top, "resume", "--json").json()["actions"]
    assert "finished the interrupted revert of run 2 (discard)" in actions
    assert [(r["run"], r["status"]) for r in runs(top)] == [(1, "keep"), (2, "discard")]
    assert (top / "value.txt").read_text() == "100\n"
    assert not (top / "src" / "new.py").exists()
    assert git(top, "show", "refs/autoresearch/s1/attempts/2:value.txt") == "50"
    assert git(top, "status", "--porcelain") == ""


def refused_with_lock(top: Path, step: str, lock: Path, *args: str) -> str:
    """Run ``args`` with ``--json``, git's lock file ``lock`` created at kill point ``step``;
    the error it is refused with (exit 3)."""
    proc = tool(top, *args, "--json", env={"GIT_AUTORESEARCH_CREATE_AT": step,
                                           "GIT_AUTORESEARCH_CREATE_FILE": str(lock)})
    assert proc.returncode == 3, proc.stderr
    error: str = check_document(json.loads(proc.stdout))["error"]
    return error


@pytest.mark.parametrize("step, name", [("keep:staging", "index.lock"),
                                        ("keep:before-commit", "index.lock"),
                                        ("keep:before-commit", "HEAD.lock")])
def test_a_keep_blocked_by_a_lock_before_committing_leaves_no_intent(experiment: Path,
                                                                     ar: Tool, step: str,
                                                                     name: str) -> None:
    """Another git takes a lock between our check and our commit: the lock file is named (not
    git's 'remove the file manually'), nothing is recorded, and the experiment stays."""
    top = experiment
    lock = top / ".git" / name
    head = git(top, "rev-parse", "HEAD")
    staged = git(top, "diff", "--cached", "--name-status")
    error = refused_with_lock(top, step, lock, "keep", "-d", "blocked", "--metric", "50")
    assert error.startswith(f"git could not finish the keep of run 2: its lock file {lock} "
                            "exists (git said: ")
    assert error.endswith("nothing was recorded, and the experiment is still in the work tree; "
                          f"once no git process is running, remove it (rm {lock}) and run the "
                          "command again")
    assert not (top / ".git" / "autoresearch" / "intent.json").exists()
    lock.unlink()
    assert ar(top, "status", "--json").json()["warnings"] == []
    assert git(top, "rev-parse", "HEAD") == head
    assert git(top, "diff", "--cached", "--name-status") == staged
    assert (top / "value.txt").read_text() == "50\n"
    assert ar(top, "keep", "-d", "again", "--metric", "50", "--json").json()["run"] == 2


def test_doctor_names_stale_git_locks(experiment: Path, ar: Tool) -> None:
    top = experiment
    ar(top, "discard", "-d", "one")
    planted = [".git/index.lock", ".git/HEAD.lock", ".git/packed-refs.lock",
               ".git/refs/heads/autoresearch/s1.lock", ".git/refs/autoresearch/s1/attempts/2.lock"]
    three_hours_ago = time.time() - 3 * 3600 - 30
    for rel in planted:
        (top / rel).write_bytes(b"")
        os.utime(top / rel, (three_hours_ago, three_hours_ago))
    findings = ar(top, "doctor", "--json", expect=3).json()["findings"]
    assert [f["problem"] for f in findings] == [
        f"git's lock file {top / rel} is 3h old: a git process is running here, or one was "
        f"killed and left it; once no git process is running, remove it (rm {top / rel})"
        for rel in sorted(planted)]
    assert all(f["fix"] is None for f in findings)
    human = ar(top, "doctor", expect=3).out
    assert f"- git's lock file {top / '.git/index.lock'} is 3h old" in human
    for rel in planted:
        (top / rel).unlink()
    assert ar(top, "doctor").out == "no problems found\n"


@NEEDS_HANGUP
def test_a_closed_terminal_ends_the_run_and_its_experiment(repo: Path, slow: Path) -> None:
    import fcntl
    import pty
    import termios

    master, slave = pty.openpty()

    def controlling_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen([*TOOL, "run", "-d", "on a terminal"], cwd=repo, stdin=slave,
                            stdout=slave, stderr=slave, preexec_fn=controlling_terminal)
    os.close(slave)
    pid = wait_for_pid(slow)
    time.sleep(1.2)  # the live progress line is on the terminal by now
    os.close(master)  # the terminal hangs up: SIGHUP, and every later write fails
    assert proc.wait(timeout=30) == 129
    assert_dies(pid, "the experiment of a run whose terminal closed")
    assert runs(repo) == []


def test_a_signal_that_came_in_a_finalizer_during_a_measurement_ends_it(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from git_autoresearch.measure import samples as measure\n"
        "from git_autoresearch.runtime import signals\n"
        "class Finalized:\n"
        "    def __del__(self):\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        for _ in range(1000):  # the handler runs here, inside __del__\n"
        "            pass\n"
        "signals.install()\n"
        "try:\n"
        f"    measure.run_shell('echo $$ > {pidfile}; sleep 20; : > finished', cwd=Path('.'),\n"
        "                      stdout=2,\n"
        "                      timeout=60, env=os.environ, on_tick=lambda s: Finalized())\n"
        "except signals.Interrupted as exc:\n"
        "    sys.exit(exc.exit_code)\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True)
    assert proc.returncode == 143, proc.stderr
    assert b"Exception ignored" not in proc.stderr
    assert_dies(wait_for_pid(pidfile), "the experiment")
    assert not (tmp_path / "finished").exists(), "the experiment was ended, not waited for"


def test_a_lock_on_our_attempt_ref_taken_during_the_measurement_is_named(experiment: Path,
                                                                        ar: Tool) -> None:
    """A lock file on the run's attempt ref appears while the experiment runs: the revert
    that follows is refused naming the file, nothing is reverted or recorded, and once the
    file is gone the pending measurement is recorded."""
    top = experiment
    write(top / "value.txt", "500\n")  # worse than the baseline: a discard
    lock = top / ".git" / "refs" / "autoresearch" / "s1" / "attempts" / "2.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    error = refused_with_lock(top, "group:started", lock, "run", "-d", "blocked")
    assert error.startswith(f"git could not finish the revert of run 2: its lock file {lock} "
                            "exists (git said: ")
    assert error.endswith("nothing was reverted or recorded; once no git process is running, "
                          f"remove it (rm {lock}) and run the command again")
    assert (top / "value.txt").read_text() == "500\n"
    assert (top / "src" / "new.py").read_text() == "x = 1\n"
    assert [r["run"] for r in runs(top)] == [1]
    lock.unlink()
    record = ar(top, "discard", "-d", "after", "--json").json()
    assert (record["run"], record["status"], record["metric"]) == (2, "discard", 500)
    assert (top / "value.txt").read_text() == "100\n"


@pytest.mark.parametrize("step,command", [("revert:after-attempt", ["discard", "-d", "x"]),
                                          ("keep:staging", ["keep", "-d", "x", "--metric",
                                                            "50"])])
def test_a_lock_another_git_holds_for_a_moment_does_not_fail_a_revert_or_keep(
        experiment: Path, ar: Tool, step: str, command: list[str]) -> None:
    """A git status of an editor or of a concurrent command takes the index's lock for a
    moment, mid-way through our revert or keep: the step that met it is run again once the
    lock is gone, and the run is recorded."""
    import threading

    top = experiment
    lock = top / ".git" / "index.lock"

    def release() -> None:
        deadline = time.monotonic() + 20
        while not lock.exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.15)
        lock.unlink(missing_ok=True)

    other = threading.Thread(target=release)
    other.start()
    proc = tool(top, *command, "--json", env={"GIT_AUTORESEARCH_CREATE_AT": step,
                                              "GIT_AUTORESEARCH_CREATE_FILE": str(lock)})
    other.join()
    assert proc.returncode == 0, proc.stderr
    assert check_document(json.loads(proc.stdout))["status"] == command[0]
    assert git(top, "status", "--porcelain") == ("" if command[0] == "discard"
                                                 else git(top, "status", "--porcelain"))
    assert not (top / ".git" / "autoresearch" / "intent.json").exists()
