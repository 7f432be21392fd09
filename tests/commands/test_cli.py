"""The command line as users meet it: errors, exit codes, man pages, the installed executables
through real git, and the demo."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import BIN, Result, Tool, check_document, git, runs, start_args, write

from git_autoresearch.commands import COMMAND_MODULES
from git_autoresearch.commands.manpage import all_pages
from git_autoresearch.git.process import OUR_READING

ROOT = Path(__file__).resolve().parents[2]


def one_line_error(res: Result) -> str:
    lines = [ln for ln in res.err.splitlines() if ln.strip()]
    assert len(lines) == 1, res.err
    assert "Traceback" not in res.err
    return lines[0]


def test_not_a_repository(tmp_path: Path, ar: Tool) -> None:
    res = ar(tmp_path, "status", expect=3)
    assert "not a git repository" in one_line_error(res)
    res = ar(tmp_path, *start_args(), expect=3)
    assert "not a git repository" in one_line_error(res)


def test_a_removed_current_folder_is_named_not_an_internal_error(repo: Path) -> None:
    # A shell left in a folder that a cleanup deleted: os.getcwd() fails for every command.
    gone = repo / "build"
    for args in ("status", "log", shlex.join(start_args())):
        proc = subprocess.run(f"mkdir {gone} && cd {gone} && rmdir {gone} && "
                              f"exec {BIN / 'git-autoresearch'} {args}", shell=True,
                              capture_output=True, text=True)
        assert proc.returncode == 3, proc.stderr
        assert proc.stderr == ("git autoresearch: the current folder no longer exists "
                               "(removed while in use?): No such file or directory; cd to "
                               "the work tree\n")
    assert not (repo / ".auto").exists(), "nothing was started"


def test_no_session(repo: Path, ar: Tool) -> None:
    for args in (["status"], ["log"], ["run", "-d", "x"], ["keep", "-d", "x"], ["show", "1"]):
        res = ar(repo, *args, expect=3)
        assert "no session here" in one_line_error(res)


@pytest.mark.parametrize("session_id", ["has space", "dots..", "slash/inside", "ünicode", "-"])
def test_bad_session_id(repo: Path, ar: Tool, session_id: str) -> None:
    args = start_args()
    args[args.index("s1")] = session_id
    res = ar(repo, *args, expect=2)
    assert "session_id" in one_line_error(res)
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "main"


def test_bad_regex(repo: Path, ar: Tool) -> None:
    res = ar(repo, *start_args("--metric-pattern", "score: ([0-9"), expect=2)
    assert "metric_pattern" in one_line_error(res)
    res = ar(repo, *start_args("--metric-pattern", "score: [0-9]+"), expect=2)
    assert "exactly one capture group" in one_line_error(res)


def test_bad_option_values(repo: Path, ar: Tool) -> None:
    assert "direction" in one_line_error(ar(repo, *start_args("--direction", "up"), expect=2))
    assert "runs_per_experiment" in one_line_error(
        ar(repo, *start_args("--runs-per-experiment", "0"), expect=2))
    assert "timeout_seconds" in one_line_error(
        ar(repo, *start_args("--timeout-seconds", "-1"), expect=2))


def test_unknown_run_number(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    res = ar(repo, "show", "99", expect=2)
    assert "no run 99" in one_line_error(res)


def test_command_that_does_not_exist(repo: Path, ar: Tool) -> None:
    res = ar(repo, *start_args("--command", "no-such-command-xyz"), expect=3)
    assert "baseline failed" in res.err and "exited with code 127" in res.err
    assert runs(repo)[-1]["status"] == "crash"


def test_a_misspelt_subcommand_gets_the_close_ones_suggested(repo: Path, ar: Tool) -> None:
    """As git suggests its own commands: an unknown subcommand close to ours names them
    (exit 2); one close to none is only unknown."""
    assert ar(repo, "statuss", expect=2).err == (
        "git autoresearch: No such command 'statuss'; did you mean 'status' or 'start'? "
        "(see git autoresearch -h)\n")
    assert ar(repo, "zzz", expect=2).err == (
        "git autoresearch: No such command 'zzz'. (see git autoresearch -h)\n")


def test_non_numeric_metric_option(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    for bad in ("abc", "nan", "inf", "14,600"):
        res = ar(repo, "keep", "-d", "x", "--metric", bad, expect=2)
        assert "Traceback" not in res.err
    assert len(runs(repo)) == 1


def test_merge_in_progress_is_refused(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / ".git" / "MERGE_HEAD", git(repo, "rev-parse", "HEAD") + "\n")
    for command in (["run", "-d", "x"], ["measure"], ["discard", "-d", "x"]):
        res = ar(repo, *command, expect=3)
        assert "merge is in progress" in one_line_error(res)


def test_detached_head_is_refused_for_recording(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    git(repo, "checkout", "-q", "--detach")
    res = ar(repo, "run", "-d", "x", expect=3)
    assert "detached HEAD" in one_line_error(res)


def test_existing_session_and_branch_are_refused(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    assert "already exists" in one_line_error(ar(repo, *start_args(), expect=3))


def test_json_error_document(repo: Path, ar: Tool) -> None:
    res = ar(repo, "status", "--json", expect=3)
    assert json.loads(res.out) == {"schema": "git-autoresearch:error/1",
                                   "error": res.err.split(": ", 1)[1].strip(), "exit_code": 3}


def test_usage_error_exit_2(repo: Path, ar: Tool) -> None:
    assert ar(repo, "run", expect=2).err == (
        "git autoresearch: Missing option '-d' / '--description'. (see git autoresearch run -h)\n")
    assert ar(repo, "no-such-subcommand", expect=2).err == (
        "git autoresearch: No such command 'no-such-subcommand'. (see git autoresearch -h)\n")
    # An error click's parser raises without the command's context names the command too.
    assert ar(repo, "run", "-d", expect=2).err == (
        "git autoresearch: Option '-d' requires an argument. (see git autoresearch run -h)\n")
    assert ar(repo, "ideas", "add", "--bogus", expect=2).err == (
        "git autoresearch: No such option '--bogus'. (see git autoresearch ideas add -h)\n")
    # An option given where the description goes is refused, not recorded as the description
    for command in ("run", "keep", "discard", "crash"):
        assert ar(repo, command, "-d", "--json", expect=2).err == (
            "git autoresearch: -d took the option --json for the description: give the "
            "description after -d (-d \"what the run tried\" --json)\n"), command


def _installed_env() -> dict[str, str]:
    env = dict(os.environ)
    scripts = sysconfig.get_paths()["scripts"]
    env["PATH"] = f"{scripts}{os.pathsep}{BIN}{os.pathsep}{env['PATH']}"
    env["MANPAGER"] = "cat"
    env["MANWIDTH"] = "80"
    return env


def test_git_finds_the_installed_commands_and_man_pages(repo: Path) -> None:
    env = _installed_env()
    for name in COMMAND_MODULES:
        proc = subprocess.run(["git", "autoresearch", name, "-h"], cwd=repo, env=env,
                              capture_output=True, text=True)
        assert proc.returncode == 0 and "Usage: git autoresearch" in proc.stdout, name
        dashed = subprocess.run([f"git-autoresearch-{name}", "-h"], cwd=repo, env=env,
                                capture_output=True, text=True)
        assert dashed.returncode == 0 and f"git autoresearch {name}" in dashed.stdout
    data = Path(sysconfig.get_paths()["data"]) / "share" / "man"
    for page in all_pages():
        assert (data / page.output.parent.name / page.output.name).is_file(), \
            f"{page.name} is not installed"
    if subprocess.run(["which", "man"], capture_output=True).returncode == 0:
        # git help opens a command's page as git-autoresearch-<cmd>, a concept's as
        # gitautoresearch-<topic> (git's gitattributes(5) convention), the group's on --help
        for args, title in ((["help", "autoresearch-keep"], "git-autoresearch-keep(1)"),
                            (["help", "autoresearch-log"], "git-autoresearch-log(1)"),
                            (["help", "autoresearch-config"], "gitautoresearch-config(5)"),
                            (["help", "autoresearch-guide"], "gitautoresearch-guide(7)"),
                            (["help", "autoresearch"], "git-autoresearch(1)"),
                            (["autoresearch", "--help"], "git-autoresearch(1)")):
            proc = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True,
                                  text=True)
            assert proc.stdout.startswith(title), (args, proc.stdout[:200], proc.stderr)


def test_loop_through_real_git(repo: Path) -> None:
    env = _installed_env()

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "autoresearch", *args], cwd=repo / "src", env=env,
                              capture_output=True, text=True)

    # from src/, the protected benchmark at the top is ../bench.sh, as git reads paths
    from_src = [a if a != "bench.sh" else "../bench.sh" for a in start_args()]
    assert call(*from_src).returncode == 0
    write(repo / "value.txt", "80\n")
    proc = call("run", "-d", "eighty", "--json")
    assert proc.returncode == 0, proc.stderr
    assert check_document(json.loads(proc.stdout))["status"] == "keep"
    write(repo / "value.txt", "85\n")
    assert call("run", "-d", "worse").returncode == 0
    assert call("stop").returncode == 0
    assert call("run", "-d", "stopped").returncode == 4
    assert call("start", "--new-segment", "--max-experiments", "2").returncode == 0
    loop = subprocess.run("n=0; while git autoresearch run -d loop; do n=$((n+1)); done; "
                          "echo $n", shell=True, cwd=repo, env=env, capture_output=True,
                          text=True)
    assert loop.stdout.strip().splitlines()[-1] == "2"
    log = subprocess.run(["git", "log", "--grep", "Result:", "--format=%s"], cwd=repo,
                         capture_output=True, text=True).stdout.split()
    assert log == ["eighty"]


def test_demo_shows_every_outcome(tmp_path: Path) -> None:
    target = tmp_path / "demo"
    proc = subprocess.run([sys.executable, "-m", "git_autoresearch", "demo", str(target)],
                          env=_installed_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in (target / ".auto" / "log.jsonl").read_text()
               .splitlines() if '"run"' in line and '"type"' not in line]
    statuses = [r["status"] for r in records]
    assert {"keep", "discard", "crash", "checks_failed"} <= set(statuses)
    assert any(r.get("reason", "").startswith("timeout") for r in records)
    trailers = subprocess.run(
        ["git", "log", "--format=%h%x1f%(trailers:key=Result,valueonly)", "--grep", "Result:"],
        cwd=target, capture_output=True, text=True).stdout.split("\n")
    trailers = [t for t in trailers if t.strip()]
    kept = {r["commit"]: r for r in records if r["status"] == "keep" and r["run"] > 1}
    assert len(trailers) == len(kept) >= 2
    for line in trailers:
        commit, value = line.split("\x1f")
        assert json.loads(value)["total_ms"] == kept[commit[:7]]["metric"]
    for r in records:
        if r["status"] != "keep":
            shown = subprocess.run([sys.executable, "-m", "git_autoresearch", "show",
                                    str(r["run"])], cwd=target, capture_output=True, text=True)
            assert shown.returncode == 0 and "sortlib.py" in shown.stdout
    assert "session     sort-demo" in proc.stdout


def test_bad_path_pattern(repo: Path, ar: Tool) -> None:
    res = ar(repo, *start_args("--scope", "[z-a].py"), expect=2)
    assert "'[z-a].py' is not a valid path pattern" in one_line_error(res)


def test_unreadable_config(repo: Path, ar: Tool) -> None:
    (repo / ".auto" / "config.toml").mkdir(parents=True)
    res = ar(repo, "status", expect=3)
    assert "cannot read" in one_line_error(res)


def test_usage_errors_are_one_line_and_json(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    for args in (["show", "abc", "--json"], ["run", "--json"],
                 ["keep", "-d", "x", "--metric", "abc", "--json"]):
        res = ar(repo, *args, expect=2)
        one_line_error(res)
        assert json.loads(res.out)["exit_code"] == 2


def test_unknown_segment(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    assert "no segment 9" in one_line_error(ar(repo, "log", "--segment", "9", expect=2))


def test_bad_environment_settings(repo: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch) -> None:
    ar(repo, *start_args())
    monkeypatch.setenv("GIT_AUTORESEARCH_LOCK_WAIT", "abc")
    assert "GIT_AUTORESEARCH_LOCK_WAIT" in one_line_error(ar(repo, "run", "-d", "x", expect=2))
    monkeypatch.setenv("GIT_AUTORESEARCH_LOCK_WAIT", "5")
    write(repo / ".auto" / "hooks" / "after.sh", "#!/bin/sh\n:\n", 0o755)
    monkeypatch.setenv("GIT_AUTORESEARCH_HOOK_TIMEOUT", "-3")
    res = ar(repo, "run", "-d", "x", expect=2)
    assert "GIT_AUTORESEARCH_HOOK_TIMEOUT" in res.err
    assert len(runs(repo)) == 1, "refused before anything ran"


def test_long_description_from_stdin(repo: Path) -> None:
    env = _installed_env()
    assert subprocess.run(["git", "autoresearch", *start_args()], cwd=repo, env=env,
                          capture_output=True).returncode == 0
    text = "a long description\n\n" + "x" * 300_000
    proc = subprocess.run(["git", "autoresearch", "discard", "-d", "-", "--json"], cwd=repo,
                          env=env, input=text, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert check_document(json.loads(proc.stdout))["description"] == text


def test_a_repository_git_refuses_is_named_as_such(repo: Path, ar: Tool,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # git's safe.directory check, as for a repository owned by another user
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "safe.bareRepository")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "explicit")
    bare = repo.parent / "bare.git"
    git(repo.parent, "init", "-q", "--bare", str(bare))
    res = ar(bare, "status", expect=3)
    assert "not a git repository" not in res.err and "git cannot use" in res.err


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="giving a folder to another user needs root")
def test_a_repository_of_another_user_is_refused_with_the_reason_and_the_way_out(
        repo: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A repository another user owns (an archive unpacked as root keeps its owner): git's
    reason and its way out on one line, where only the way out was said."""
    for folder, _, files in os.walk(repo):
        for name in [folder, *(os.path.join(folder, f) for f in files)]:
            os.lchown(name, 65534, 65534)
    said = ar(repo, "status", expect=3).err
    assert said.count("\n") == 1
    assert f"git cannot use {repo}: detected dubious ownership in repository at '{repo}'" \
        in said
    assert said.rstrip().endswith(f"git config --global --add safe.directory {repo}")
    # What git says before its fatal line (its trace, a warning) is not the reason.
    monkeypatch.setenv("GIT_TRACE", "1")
    assert ar(repo, "status", expect=3).err == said


def test_a_reader_that_closes_the_pipe_gets_no_complaint(repo: Path, ar: Tool) -> None:
    """``show 2 | head -1``: git says nothing when its reader goes away, and neither do we."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n" + "filler line\n" * 20000)
    ar(repo, "run", "-d", "a long diff")
    proc = subprocess.run(f"{BIN / 'git-autoresearch'} show 2 | head -1", shell=True,
                          cwd=repo, capture_output=True, text=True)
    assert proc.stdout == "{\n" and proc.stderr == ""


def long_session(repo: Path, ar: Tool) -> None:
    """A session whose ledger holds 2,001 runs of long descriptions: about 2 MB of ``log
    --json``, more than even a widened pipe holds (1 MiB)."""
    ar(repo, *start_args())
    line = json.loads((repo / ".auto" / "log.jsonl").read_text().splitlines()[-1])
    with open(repo / ".auto" / "log.jsonl", "a") as ledger:
        for n in range(2, 2002):
            ledger.write(json.dumps({**line, "run": n, "status": "discard",
                                     "description": f"idea {n} " + "x" * 800}) + "\n")


@pytest.mark.parametrize("args", [["--json", "--where", "status=discard"], ["--format", "csv"]])
def test_output_a_disk_takes_only_part_of_is_said_not_cut_short_unsaid(
        repo: Path, ar: Tool, tmp_path: Path, args: list[str]) -> None:
    """A file that can take only part of the output (a disk nearly full; here a file size
    limit, RLIMIT_FSIZE, which makes a write take what fits and the next one fail): exit 0,
    the run's work done, and stderr says the output could not be written. (Python's text
    layer passed over the short write: the output cut at the limit, exit 0, nothing said.)"""
    import resource

    long_session(repo, ar)
    limit = 256 << 10

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    with open(tmp_path / "out", "wb") as out:
        proc = subprocess.run([str(BIN / "git-autoresearch-log"), *args], cwd=repo,
                              stdout=out, stderr=subprocess.PIPE, text=True,
                              preexec_fn=limited)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ("git autoresearch log: the output could not be written (File too "
                           "large); the command itself finished with exit code 0\n")
    assert (tmp_path / "out").stat().st_size == limit


def test_a_non_blocking_stdout_gets_the_whole_output(repo: Path, ar: Tool) -> None:
    """A caller whose pipe is non-blocking (``O_NONBLOCK`` on the descriptor it hands down)
    and reads slowly gets every byte, as from a blocking one: a write that takes part waits
    for the reader, and goes on. (It got the first 1 MiB, exit 0, nothing said.)"""
    import fcntl
    import time

    long_session(repo, ar)
    for args in (["--json"], ["--json", "--where", "status=discard"]):  # (in pieces; whole)
        read, written = os.pipe()
        fcntl.fcntl(written, fcntl.F_SETFL, fcntl.fcntl(written, fcntl.F_GETFL) | os.O_NONBLOCK)
        with subprocess.Popen([str(BIN / "git-autoresearch-log"), *args], cwd=repo,
                              stdout=written, stderr=subprocess.PIPE) as proc:
            os.close(written)
            time.sleep(0.3)  # (the pipe fills meanwhile: the writer meets EAGAIN)
            with os.fdopen(read, "rb") as pipe:
                out = pipe.read()
            _, err = proc.communicate()
        assert (proc.returncode, err) == (0, b""), args
        assert out.decode() == ar(repo, "log", *args).out, args


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_an_encoding_with_a_byte_order_mark_writes_it_once(repo: Path, ar: Tool,
                                                            encoding: str) -> None:
    """stdout in an encoding that begins with a byte-order mark holds one, at its start, as
    Python's text layer writes it: the JSON document reads in that encoding, and the table's
    lines begin with no mark of their own."""
    ar(repo, *start_args())
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    document = subprocess.run([str(BIN / "git-autoresearch-status"), "--json"], cwd=repo,
                              capture_output=True, env=env, check=True).stdout
    assert json.loads(document.decode(encoding))["session_id"] == \
        ar(repo, "status", "--json").json()["session_id"]
    table = subprocess.run([str(BIN / "git-autoresearch-log")], cwd=repo,
                           capture_output=True, env=env, check=True).stdout.decode(encoding)
    assert "\ufeff" not in table and table == ar(repo, "log").out


def test_a_signal_ends_a_command_whose_output_nobody_reads(repo: Path, ar: Tool) -> None:
    """``log --json`` blocked on a full pipe that nobody reads, then SIGTERM: the command ends
    (143) within a few seconds, though the error document it owes cannot be written either;
    stderr says both. (It waited on the pipe for good: the signal had been spent.)"""
    import time

    long_session(repo, ar)
    read, written = os.pipe()
    with subprocess.Popen([str(BIN / "git-autoresearch-log"), "--json"], cwd=repo,
                          stdout=written, stderr=subprocess.PIPE, text=True) as proc:
        os.close(written)
        try:
            time.sleep(1)  # (the pipe fills: the write blocks)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=20)
        finally:
            proc.kill()
            os.close(read)
    assert proc.returncode == 143, err
    assert err.splitlines() == [
        "git autoresearch log: terminated",
        "git autoresearch log: the output could not be written (nobody read it for 2 s); the "
        "command itself finished with exit code 143"]


def test_a_line_buffered_stream_gets_each_line_as_it_is_written() -> None:
    """A command's stdout or stderr that is line-buffered (a terminal; stderr always) gets a
    line, or a progress line's carriage return, the moment it is written, as Python's own
    text layer gives it; what follows without either waits for the next flush."""
    import fcntl

    from git_autoresearch.cli import _Output

    read, written = os.pipe()
    fcntl.fcntl(read, fcntl.F_SETFL, fcntl.fcntl(read, fcntl.F_GETFL) | os.O_NONBLOCK)
    with open(written, "w", buffering=1, encoding="utf-8") as stream, \
            os.fdopen(read, "rb") as pipe:
        out = _Output(stream)
        out.write("first line\n")
        assert pipe.read() == b"first line\n"
        out.write("\r[    3s] measuring")
        assert pipe.read() == b"\r[    3s] measuring"
        out.write("held")
        assert pipe.read() is None  # (nothing yet)
        out.flush()
        assert pipe.read() == b"held"


@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_a_reader_that_closes_the_pipe_early_leaves_the_exit_code_alone(
        repo: Path, ar: Tool, encoding: str) -> None:
    """``log --json | head -1`` on a ledger whose document overflows even a widened pipe:
    exit 0 and not a word on stderr, whatever stdout's encoding (with ASCII, click writes to
    the binary layer beneath the text one, which our guard covers too)."""
    long_session(repo, ar)
    proc = subprocess.run(f"{BIN / 'git-autoresearch-log'} --json | head -1; "
                          'echo "exit ${PIPESTATUS[0]}"', shell=True, executable="bash",
                          cwd=repo, capture_output=True, text=True,
                          env={**os.environ, "PYTHONIOENCODING": encoding})
    assert proc.stdout.splitlines() == ['{"schema":"git-autoresearch:log/1","runs":[', "exit 0"]
    assert proc.stderr == ""


@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_stderr_whose_reader_is_gone_leaves_the_exit_code_alone(repo: Path, ar: Tool,
                                                                encoding: str) -> None:
    """A warning or an error written to a stderr whose reader has gone (``2>&1 | true``)
    leaves the exit code the command's own: 0 for a query that warned, 2 for a usage
    error, not 1."""
    ar(repo, *start_args())
    for args, code in (("--where stauts=keep", 0), ("--bogus", 2)):
        proc = subprocess.run(f"{BIN / 'git-autoresearch-log'} {args} 2>&1 >/dev/null | true; "
                              'echo "exit ${PIPESTATUS[0]}"', shell=True, executable="bash",
                              cwd=repo, capture_output=True, text=True,
                              env={**os.environ, "PYTHONIOENCODING": encoding})
        assert (proc.stdout, proc.stderr) == (f"exit {code}\n", ""), args


def test_status_watch_shows_the_status_again_until_told_to_stop(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    out = ar(repo, "status", "--watch", "--interval", "0.1", "--times", "2").out
    assert out.count("session     s1 (branch autoresearch/s1)") == 2
    assert out.count("every 0.1s, Ctrl-C ends") == 2
    assert ar(repo, "status", "--watch", "--json", expect=2).err == (
        "git autoresearch: --watch shows a live view for people; --json takes one status\n")
    proc = subprocess.Popen([str(BIN / "git-autoresearch-status"), "--watch", "--interval",
                             "0.2"], cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the first view has begun
    assert b"every 0.2s, Ctrl-C ends" in first
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()  # Ctrl-C is how a watch ends


def test_trace_names_each_git_call_with_its_time(repo: Path) -> None:
    """GIT_AUTORESEARCH_TRACE=1 writes one stderr line per git call (exit code, wall time,
    arguments) and changes nothing else; unset, nothing is traced."""
    import re

    env = {**os.environ, "GIT_AUTORESEARCH_TRACE": "1"}
    traced = subprocess.run([sys.executable, "-m", "git_autoresearch", "sessions"], cwd=repo,
                            capture_output=True, text=True, env=env)
    plain = subprocess.run([sys.executable, "-m", "git_autoresearch", "sessions"], cwd=repo,
                           capture_output=True, text=True)
    lines = traced.stderr.splitlines()
    assert lines and all(re.fullmatch(r"git-autoresearch trace: \d+\.\d ms exit \d+ git .+", ln)
                         for ln in lines), traced.stderr
    assert lines[0].endswith("--abbrev-ref HEAD") and " git rev-parse " in lines[0]
    assert (traced.returncode, traced.stdout) == (plain.returncode, plain.stdout)
    assert "trace" not in plain.stderr


def test_trace_names_every_git_process_of_a_keep_and_a_discard(repo: Path,
                                                               tmp_path: Path) -> None:
    """Every git process a keep and a discard start is in the trace, in order (``mktree``, run
    outside the store's one call, included): a ``git`` first on ``PATH`` that notes its
    arguments, then runs the real git, sees exactly the calls the trace names."""
    import shutil

    env = {**os.environ, "GIT_AUTORESEARCH_TRACE": "1"}
    subprocess.run([sys.executable, "-m", "git_autoresearch", *start_args(), "--no-baseline"],
                   cwd=repo, env=env, check=True, capture_output=True)
    shim = tmp_path / "shim"
    shim.mkdir()
    noted = tmp_path / "noted"
    write(shim / "git", f'#!/bin/sh\nprintf "%s\\n" "$*" >> {noted}\n'
          f'exec {shutil.which("git")} "$@"\n', 0o755)
    env["PATH"] = f"{shim}{os.pathsep}{env['PATH']}"
    for args in (["keep", "-d", "faster", "--metric", "90"], ["discard", "-d", "slower"]):
        write(repo / "value.txt", "95\n")
        noted.unlink(missing_ok=True)
        done = subprocess.run([sys.executable, "-m", "git_autoresearch", *args], cwd=repo,
                              env=env, capture_output=True, text=True, check=True)
        traced = [line.split(" git ", 1)[1] for line in done.stderr.splitlines()
                  if line.startswith("git-autoresearch trace: ")]
        # (the trace names a call's arguments after git's own options, cut at 200 characters)
        ours = " ".join(OUR_READING) + " "
        called = [line.removeprefix("--literal-pathspecs ").removeprefix(ours) for line in
                  noted.read_text().splitlines()]
        called = [line if len(line) <= 200 else line[:197] + "..." for line in called]
        assert traced == called and any("mktree" in c for c in called), (traced, called)


HELP_PROBE = """
import atexit, sys
from git_autoresearch import cli
atexit.register(lambda: sys.stderr.write("\\nimported: " + " ".join(sorted(sys.modules))))
entry = sys.argv[1]
sys.argv[1:] = ["-h"]
getattr(cli, entry)()
"""
# What a command's help may import of the package besides the command modules: the programs,
# and the two leaves every program needs to say how it ended.
HELP_MAY_IMPORT = {"git_autoresearch", "git_autoresearch.cli", "git_autoresearch.runtime",
                   "git_autoresearch.runtime.signals", "git_autoresearch.runtime.errors"}
# What a keep's, a discard's or a log's work pulls in (git, the ledger, the configuration) and
# their help needs none of: click and Python bring the rest.
HEAVY = {"subprocess", "pathlib", "json", "dataclasses", "hashlib", "tomllib", "plumbum",
         "tempfile", "urllib.parse", "shlex", "glob"}


@pytest.mark.parametrize("name", [*COMMAND_MODULES, None])
def test_help_imports_only_the_command_line(name: str | None) -> None:
    """``git-autoresearch-<name> -h`` (the entry point's own call, in a fresh interpreter)
    imports the command's module and none of the session, recording, measuring or reading
    code; the loop's commands and log (run all night) none of the heavy standard modules
    either, so that the start-up every command pays stays Python's and click's. The group's
    help (``name`` None) imports every command module, to list them, and nothing below."""
    entry = f"{name}_main" if name else "main"
    proc = subprocess.run([sys.executable, "-c", HELP_PROBE, entry], capture_output=True,
                          text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert f"git autoresearch{' ' + name if name else ''} [OPTIONS]" in proc.stdout
    imported = set(proc.stderr.rsplit("imported: ", 1)[1].split())
    ours = {m for m in imported if m.startswith("git_autoresearch")}
    assert {m for m in ours - HELP_MAY_IMPORT
            if not m.startswith("git_autoresearch.commands")} == set()
    if name is not None:
        assert f"git_autoresearch.commands.{COMMAND_MODULES[name]}" in ours
    if name is not None and COMMAND_MODULES[name] in ("loop", "querying"):
        assert imported & HEAVY == set()


WORK_PROBE = """
import atexit, sys
from git_autoresearch import cli
atexit.register(lambda: sys.stderr.write("\\nimported: " + " ".join(sorted(sys.modules))))
entry = sys.argv[1]
del sys.argv[1]
getattr(cli, entry)()
"""
# What measuring needs and a keep or discard of a session without JSON metrics, a score or
# hooks does not: the sequential rule's statistics, the measurement slots, the JSON metric
# and score readers, and what those pull in.
NOT_FOR_RECORDING = {"git_autoresearch.decide.rules", "git_autoresearch.measure.slots",
                     "git_autoresearch.measure.jsonmetric", "git_autoresearch.measure.scoring",
                     "socket", "shutil", "bz2", "lzma", "plumbum"}


def test_keep_and_discard_import_only_what_recording_needs(repo: Path, ar: Tool) -> None:
    """``git-autoresearch-keep`` and ``-discard`` (the entry points' own calls, in a fresh
    interpreter) record a run without importing what only measuring needs: their start-up
    above click's is the recording code alone."""
    ar(repo, *start_args())
    for entry, args in (("keep_main", ["-d", "kept", "--metric", "90"]),
                        ("discard_main", ["-d", "not kept"])):
        write(repo / "value.txt", f"{len(entry)}\n")
        proc = subprocess.run([sys.executable, "-c", WORK_PROBE, entry, *args],
                              capture_output=True, text=True, cwd=repo)
        assert proc.returncode == 0, proc.stderr
        imported = set(proc.stderr.rsplit("imported: ", 1)[1].split())
        assert "git_autoresearch.record.transaction" in imported
        assert imported & NOT_FOR_RECORDING == set(), entry
    assert [r["status"] for r in runs(repo)][-2:] == ["keep", "discard"]


FINISHING = """
import atexit, sys, threading, time
from pathlib import Path
from git_autoresearch import cli
out = Path(sys.argv[1])
atexit.register(lambda: (out / "atexit").write_text("ran"))
def later():
    time.sleep(0.3)
    (out / "thread").write_text("done")
if sys.argv[2] == "thread":
    threading.Thread(target=later).start()
sys.argv = ["git-autoresearch-status", "--json"]
cli.status_main()
"""


@pytest.mark.parametrize("thread", ["thread", "none"])
def test_a_command_ends_as_sys_exit_would(repo: Path, ar: Tool, tmp_path: Path,
                                         thread: str) -> None:
    """A program of ours ends without the interpreter's teardown, but as sys.exit would for
    what matters: its exit code, its whole output, the atexit functions run, and a thread that
    is not a daemon waited for."""
    ar(repo, *start_args())
    script = tmp_path / "git-autoresearch-probe"  # (named as our programs are)
    script.write_text(FINISHING)
    res = subprocess.run([sys.executable, str(script), str(tmp_path), thread], cwd=repo,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["schema"].startswith("git-autoresearch:status/")
    assert (tmp_path / "atexit").read_text() == "ran"
    assert (tmp_path / "thread").exists() is (thread == "thread")
    if thread == "thread":
        assert (tmp_path / "thread").read_text() == "done"
    gone = subprocess.run([sys.executable, str(script), str(tmp_path), thread],
                          cwd=tmp_path, capture_output=True, text=True)
    assert gone.returncode == 3, gone.stderr  # (no repository: refused, exit 3)


def test_an_entry_point_called_in_process_raises_system_exit(repo: Path, ar: Tool) -> None:
    """A program that calls an entry point in-process (a test, a tool embedding ours) gets
    SystemExit with the exit code, and lives on."""
    ar(repo, *start_args())
    code = ("import sys\nfrom git_autoresearch import cli\nfound = []\n"
            "for argv in (['git-autoresearch-status', '--json'], ['git-autoresearch-show', "
            "'999']):\n    sys.argv = argv\n    try:\n        cli.status_main() if "
            "argv[0].endswith('status') else cli.show_main()\n"
            "    except SystemExit as exc:\n        found.append(exc.code)\n"
            "print('alive', found, file=sys.stderr)\n")
    res = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines()[-1] == "alive [0, 2]"


@pytest.mark.parametrize("closed", ["2>&-", ">&-", "<&-", ">&- 2>&-"])
def test_a_closed_standard_stream_changes_no_exit_code_and_swallows_no_file(
        repo: Path, ar: Tool, closed: str) -> None:
    """A caller that closed stdout, stderr or stdin (``2>&-``) gets the command's own exit
    code (a run recorded: 0; a refusal: 3; a usage error: 2), as git gives its own, and no file
    the command writes takes the closed stream's place: the run is recorded, the ledger holds
    records alone."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")

    def code(args: str) -> int:
        return subprocess.run(f"{BIN / 'git-autoresearch-run'} {args} {closed}", shell=True,
                              cwd=repo, capture_output=True).returncode

    assert code("-d closed") == 0
    assert [r["description"] for r in runs(repo)][-1] == "closed"
    ledger = (repo / ".auto" / "log.jsonl").read_text().splitlines()
    assert all(json.loads(line) for line in ledger)
    for args, expected in (("--bogus", 2), ("-d again", 0)):
        assert code(args) == expected
    status = subprocess.run(f"{BIN / 'git-autoresearch-show'} 999 {closed}", shell=True,
                            cwd=repo, capture_output=True)
    assert status.returncode == 2


def test_a_run_line_that_would_read_as_a_contradiction_says_what_it_was_judged_against(
) -> None:
    """'score = 19.5 (best was 20) [worse (+5.4%)]' reads as a contradiction: the rule compared
    the samples with the incumbent's, whose median the best kept number need not be. Such a
    line names that median; a line that reads right as it is gets nothing more."""
    from types import SimpleNamespace

    from git_autoresearch.commands.loop import _incumbent_aside

    lower = SimpleNamespace(segment=SimpleNamespace(better=lambda a, b: a < b))
    said = "; judged against the incumbent's samples, median 18.5"
    discarded = {"status": "discard", "metric": 19.5, "decision": {"pool_median": 18.5}}
    assert _incumbent_aside(lower, discarded, 20.0) == said
    kept = {"status": "keep", "metric": 21.0, "decision": {"pool_median": 22.0}}
    assert _incumbent_aside(lower, kept, 20.0) == "; judged against the incumbent's samples, " \
                                                  "median 22"
    assert _incumbent_aside(lower, {**discarded, "metric": 21.0}, 20.0) == ""
    assert _incumbent_aside(lower, {**kept, "metric": 19.0}, 20.0) == ""
    assert _incumbent_aside(lower, {**discarded, "decision": None}, 20.0) == ""
    # Decided on samples of both taken side by side: the median of the incumbent's taken
    # beside it, though the pool's is the best (the line said nothing, or quoted the pool's).
    beside = {"status": "discard", "metric": 8.2, "decision": {
        "pool_median": 8.8, "evidence": "fresh", "incumbent_fresh": [8.0, 8.1, 8.1]}}
    assert _incumbent_aside(lower, beside, 8.8) == \
        "; judged against the incumbent measured beside it, median 8.1"
    blended = {"status": "discard", "metric": 6.54, "decision": {
        "pool_median": 7.716, "evidence": "pool+fresh", "incumbent_fresh": [6.5, 6.51],
        "effect": 0.1, "relative": 0.016}}
    assert _incumbent_aside(lower, blended, 8.8) == \
        "; judged against the incumbent's samples, earlier and beside it, median 6.25"
    # The figures without float noise (a median of two, a quotient); when the rule compared
    # fewer of the candidate's samples than the median shown is of (its last ones, taken
    # beside the incumbent's), their median too.
    noisy = {"status": "discard", "metric": 59.4, "decision": {
        "pool_median": 61.0, "evidence": "pool+fresh", "effect": 1.0092859999999372,
        "relative": 0.01}}
    assert _incumbent_aside(lower, noisy, 61.0).endswith("median 100.9286")
    # a run the checks failed was not judged on its number; a median that is the best but
    # for float noise (a quotient) is the best
    assert _incumbent_aside(lower, {**noisy, "status": "checks_failed"}, 61.0) == ""
    assert _incumbent_aside(lower, noisy, 100.92859999999) == ""
    fewer = {"status": "discard", "metric": 82.49, "samples": [90.0, 91.0, 80.1, 80.2, 80.3],
             "decision": {"pool_median": 85.0, "evidence": "fresh", "candidate_samples": 3,
                          "incumbent_fresh": [77.1, 77.2, 77.3]}}
    assert _incumbent_aside(lower, fewer, 85.0) == (
        "; judged on its last 3 samples, median 80.2, against the incumbent measured beside "
        "it, median 77.2")
