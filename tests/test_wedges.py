"""What real repositories contain must not wedge the tool: trailers written by other tools or
by hand with odd numbers, ledger lines of the wrong types, a folder where a lock file goes,
NUL bytes in configured commands. Each is recorded, refused with a one-line error naming
the cause, or warned about; never an internal error."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import Tool, check_document, git, runs, start_args, write


@pytest.mark.parametrize("number", ["²", "1²", "٣", "①", "12345678901234567890"])
def test_a_result_commit_with_an_odd_run_number_is_read(repo: Path, ar: Tool,
                                                        number: str) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    git(repo, "add", "value.txt")
    git(repo, "commit", "-q", "-m", f"by hand\n\nResult: {{\"status\":\"keep\",\"score\":90}}\n"
        f"Autoresearch-Run: {number}\n")
    for command in (["status", "--json"], ["doctor", "--json"], ["log", "--json"]):
        res = ar(repo, *command, expect=None)
        assert res.code in (0, 3), res.err  # answered, or refused with a reason: never 1
        assert "internal error" not in res.err
    write(repo / "value.txt", "80\n")
    done = ar(repo, "run", "-d", "after the hand commit", "--json", expect=None)
    assert done.code in (0, 3) and "internal error" not in done.err, done.err


def test_refs_and_files_named_with_odd_digits_are_passed_over(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    head = git(repo, "rev-parse", "HEAD")
    for name in ("attempts/²", "attempts/1²", "runs/①", "scope/1.²", "finals/²"):
        git(repo, "update-ref", f"refs/autoresearch/s1/{name}", head)
    write(repo / "value.txt", "80\n")
    done = ar(repo, "run", "-d", "with odd refs about", "--json").json()
    assert done["run"] == 2 and done["status"] == "keep"
    write(repo / "value.txt", "85\n")
    assert ar(repo, "run", "-d", "worse", "--json").json()["status"] == "discard"
    for command in (["status", "--json"], ["doctor", "--json"], ["log", "--json"],
                    ["show", "3", "--json"], ["gc", "--json"]):
        res = ar(repo, *command, expect=None)
        assert res.code in (0, 3) and "internal error" not in res.err, (command, res.err)


def test_a_process_id_in_odd_digits_is_refused_by_name(repo: Path, ar: Tool,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    ar(repo, *start_args())
    monkeypatch.setenv("AUTORESEARCH_WORKER_PID", "²")
    res = ar(repo, "ideas", "claim", "--text", "an idea", "--json", expect=2)
    assert "AUTORESEARCH_WORKER_PID='²' is not a process id" in res.err


def kept_then_edited(repo: Path, ar: Tool, field: str, value: object) -> None:
    """A session whose run 2 was kept, its ledger line then edited by hand: ``field`` set to
    ``value``."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "a gain")
    ledger = repo / ".auto" / "log.jsonl"
    lines = ledger.read_text().splitlines()
    record = json.loads(lines[-1])
    record[field] = value
    lines[-1] = json.dumps(record)
    ledger.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("field,value", [("metric", "12"), ("metric", [1]), ("metric", True),
                                          ("samples", "1,2"), ("samples", ["a"]),
                                          ("decision", "better"), ("run", "3"),
                                          ("timestamp", "now"), ("segment", "0"),
                                          ("metrics", [1, 2]), ("confidence", "high")])
def test_a_ledger_line_with_a_field_of_the_wrong_type_is_no_internal_error(
        repo: Path, ar: Tool, field: str, value: object) -> None:
    kept_then_edited(repo, ar, field, value)
    for command in (["status", "--json"], ["log", "--json"], ["doctor", "--json"],
                    ["show", "2", "--json"], ["analyze", "--json"], ["summary"],
                    ["dashboard", "-o", str(repo.parent / "page.html")], ["status"], ["log"]):
        res = ar(repo, *command, expect=None)
        assert res.code in (0, 2, 3) and "internal error" not in res.err, (command, res.err)
    write(repo / "value.txt", "80\n")
    res = ar(repo, "run", "-d", "after the edit", "--json", expect=None)
    assert res.code in (0, 3) and "internal error" not in res.err, res.err


def test_a_run_record_whose_metric_is_a_string_is_set_aside_by_doctor(repo: Path,
                                                                       ar: Tool) -> None:
    kept_then_edited(repo, ar, "metric", "90")
    said = ar(repo, "status").err
    assert "'metric' is not a number or null" in said
    found = ar(repo, "doctor", "--json", expect=3).json()["findings"]
    assert any("'metric' is not a number or null" in str(f) for f in found), found
    ar(repo, "doctor", "--fix", expect=None)
    rejected = (repo / ".auto" / "log.rejected.jsonl").read_text()
    assert json.loads(rejected.splitlines()[0])["reason"] == "'metric' is not a number or null"


@pytest.mark.parametrize("name", ["lock", "slots"])
def test_a_folder_or_file_where_our_lock_goes_is_named_not_an_internal_error(
        repo: Path, ar: Tool, name: str) -> None:
    ar(repo, *start_args())
    scratch = repo / git(repo, "rev-parse", "--git-path", "autoresearch")
    target = scratch / name
    if target.exists():
        import shutil

        shutil.rmtree(target) if target.is_dir() else target.unlink()
    if name == "lock":
        target.mkdir()
    else:
        target.write_text("not a folder\n")
    write(repo / "value.txt", "80\n")
    for command in (["run", "-d", "x", "--json"], ["status", "--json"], ["doctor", "--json"],
                    ["log", "--json"], ["measure", "--json"], ["resume", "--json"]):
        res = ar(repo, *command, expect=None)
        assert "internal error" not in res.err, (command, res.err)
        assert res.code in (0, 3), (command, res.code, res.err)
        if res.code == 3:
            assert str(target.name) in res.err, res.err


def test_nul_in_a_configured_command_is_refused_by_name(repo: Path, ar: Tool) -> None:
    write(repo / "cfg.toml", 'goal = "g"\ncommand = "sh bench.sh\\u0000x"\n'
          'metric_pattern = "score: (\\\\S+)"\n')
    res = ar(repo, "start", "--config", "cfg.toml", expect=2)
    assert "command" in res.err and "NUL" in res.err
    res = ar(repo, *start_args("--checks-command", "true\x00"), expect=2)
    assert "checks_command" in res.err or "--checks-command" in res.err
    # An edited configuration with a NUL: every command refuses it by name.
    (repo / "cfg.toml").unlink()
    ar(repo, *start_args())
    config = repo / ".auto" / "config.toml"
    config.chmod(0o644)
    config.write_text(config.read_text().replace('command = "sh bench.sh"',
                                                 'command = "sh bench.sh\\u0000"'))
    for command in (["status"], ["run", "-d", "x"], ["doctor"], ["log"]):
        res = ar(repo, *command, expect=None)
        assert "internal error" not in res.err, (command, res.err)


@pytest.mark.parametrize("when", ["after the package", "after the command line module"])
def test_a_signal_during_the_imports_exits_130_with_one_line(repo: Path, when: str) -> None:
    # As an entry point runs: the package first (its import notes the signal from then on),
    # then the command line module and the command. The signal arrives in between.
    import subprocess
    import sys

    code = ("import os, signal, sys\n"
            "sys.argv = ['git-autoresearch-status']\n"
            "import git_autoresearch\n"
            + ("import git_autoresearch.cli\n" if when != "after the package" else "")
            + "os.kill(os.getpid(), signal.SIGINT)\n"
            "from git_autoresearch.cli import status_main\n"
            "status_main()\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == "git autoresearch status: interrupted"


def test_a_benchmark_that_leaves_a_daemon_does_not_wedge_later_runs(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    """A daemon started by the benchmark (a new session: it escapes the measurement's process
    group) inherits the slot's lock descriptor; it must not make every later run wait for
    as long as it lives. status names the process that holds the slot."""
    import os
    import signal
    import subprocess
    import sys

    pids = tmp_path / "daemons"
    # The benchmark waits until its daemon runs (on a loaded machine the daemon could start
    # after the measurement ended, and then hold nothing); the daemon reads no stdin, so it
    # never holds the test runner's pipes open.
    write(repo / "bench.sh", "#!/bin/sh\n"
          f"setsid sh -c 'echo $$ >> {pids}; exec sleep 300' < /dev/null > /dev/null 2>&1 &\n"
          f"while [ ! -s {pids} ]; do sleep 0.01; done\n"
          "echo \"score: $(cat value.txt)\"\n", 0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a benchmark that leaves a daemon")
    def tool(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "git_autoresearch", *args], cwd=repo,
                              capture_output=True, text=True, timeout=60)

    try:
        assert tool(*start_args("--decision", "strict")).returncode == 0
        held = ar(repo, "status", "--json").json()
        said = json.dumps(held)
        assert "sleep 300" in said or "left running" in said, said
        write(repo / "value.txt", "80\n")
        doctor = ar(repo, "doctor", "--json", expect=3).json()["findings"]
        assert any("left running by an earlier measurement" in f["problem"] for f in doctor)
        done = tool("run", "-d", "x", "--json")
        assert done.returncode == 0, done.stderr
        assert check_document(json.loads(done.stdout))["status"] == "keep"
        assert "left running" in done.stderr and "sleep 300" in done.stderr
    finally:
        for pid in pids.read_text().split() if pids.exists() else []:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.parametrize("way", ["run", "doctor --fix"])
def test_a_benchmark_left_running_by_a_killed_run_is_ended_by_the_next_measurement(
        repo: Path, ar: Tool, tmp_path: Path, way: str) -> None:
    """A run killed outright (SIGKILL: a harness's timeout) while its benchmark hangs leaves
    the benchmark's process group running, past its timeout, holding the slot's lock. status
    and doctor name it; the next measurement ends it and takes the slot, instead of waiting
    for it for ever, and so does doctor --fix (doctor called it a person's to end)."""
    import os
    import signal
    import subprocess
    import sys

    pids = tmp_path / "benchmark"
    write(repo / "bench.sh", "#!/bin/sh\n"
          f"if [ \"$(cat value.txt)\" = hang ]; then echo $$ > {pids}; exec sleep 300; fi\n"
          "echo \"score: $(cat value.txt)\"\n", 0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a benchmark that hangs")
    ar(repo, *start_args("--decision", "strict", "--timeout-seconds", "60"))
    write(repo / "value.txt", "hang\n")
    killed = subprocess.Popen([sys.executable, "-m", "git_autoresearch", "run", "-d", "hangs"],
                              cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (pids.exists() and pids.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.02)
        killed.kill()
        killed.wait()
        left = int(pids.read_text())
        said = json.dumps(ar(repo, "status", "--json").json())
        assert "whose command was killed" in said and "sleep 300" in said, said
        assert "main: left measuring by a killed command (run 2, slot 1): the next " \
            "measurement ends it" in ar(repo, "status").out
        doctor = ar(repo, "doctor", "--json", expect=3).json()["findings"]
        assert [f["fix"] for f in doctor if "whose command was killed" in f["problem"]] == [
            "end the process group, as the next measurement would"], doctor
        if way == "doctor --fix":
            fixed = ar(repo, "doctor", "--fix", "--json").json()["findings"]
            assert all(f["fixed"] for f in fixed), fixed
            assert ar(repo, "doctor", "--json").json()["findings"] == []
        write(repo / "value.txt", "80\n")
        done = subprocess.run([sys.executable, "-m", "git_autoresearch", "run", "-d", "next",
                               "--json"], cwd=repo, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        assert check_document(json.loads(done.stdout))["status"] == "keep"
        if way == "run":
            assert f"process group {left}" in done.stderr and "ended" in done.stderr, \
                done.stderr
        stat = Path(f"/proc/{left}/stat")  # gone, or dead and not yet reaped by init
        assert not stat.exists() or stat.read_text().rpartition(")")[2].split()[0] == "Z"
    finally:
        if pids.exists() and pids.read_text().strip():
            try:
                os.killpg(int(pids.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_keep_commit_replaced_with_git_replace_is_read_as_it_is(repo: Path,
                                                                  ar: Tool) -> None:
    """``git replace`` swaps what a commit shows for another's; our reading and replaying of
    the session's keeps use the objects themselves, so finalize replays the keeps as kept."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "lower")
    write(repo / "value.txt", "80\n")
    ar(repo, "run", "-d", "lower again")
    keep = git(repo, "rev-parse", "autoresearch/s1~1")
    git(repo, "replace", keep, "main")  # the first keep now shows as the project's first commit
    done = ar(repo, "finalize", "--samples", "0", "--json").json()
    assert done["runs"] == [2, 3]
    assert git(repo, "show", "autoresearch/s1-final:value.txt") == "80"
    assert ar(repo, "doctor", "--json").json()["findings"] == []


def test_a_session_folder_that_is_a_symbolic_link_is_refused(repo: Path, ar: Tool) -> None:
    """``.auto`` linked into the scope: a discard would revert the session's notes, ideas and
    STOP file through the link. start refuses the layout, and so does every command that
    measures or records once a session's folder has been made a link."""
    import os
    import shutil

    (repo / "src" / "notes").mkdir()
    os.symlink("src/notes", repo / ".auto")
    res = ar(repo, *start_args("--force"), expect=3)
    assert ".auto is a symbolic link" in res.err
    (repo / ".auto").unlink()
    shutil.rmtree(repo / "src" / "notes")
    ar(repo, *start_args())
    # The session folder moved into the scope and linked back.
    shutil.move(str(repo / ".auto"), str(repo / "src" / "auto"))
    os.symlink("src/auto", repo / ".auto")
    ar(repo, "stop")
    write(repo / "value.txt", "120\n")
    for command in (["run", "-d", "x"], ["discard", "-d", "x"], ["measure"]):
        res = ar(repo, *command, expect=3)
        assert ".auto is a symbolic link" in res.err, (command, res.err)
    assert (repo / "src" / "auto" / "STOP").exists()
    assert (repo / "src" / "auto" / "prompt.md").exists()
    findings = ar(repo, "doctor", "--json", expect=3).json()["findings"]
    assert any(".auto is a symbolic link" in f["problem"] and "mv src/auto" in f["problem"]
               for f in findings), findings
    assert any(".auto is a symbolic link" in w
               for w in ar(repo, "status", "--json").json()["warnings"])


@pytest.mark.parametrize("variable", ["GIT_DIR", "GIT_WORK_TREE"])
def test_a_callers_git_dir_or_work_tree_naming_another_repository_is_refused(
        repo: Path, ar: Tool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        variable: str) -> None:
    """GIT_DIR or GIT_WORK_TREE set by the caller and naming another repository than the
    current folder's: refused naming the variable, nothing recorded or reverted in either.
    Set to the current folder's own (as git does for its hooks), they change nothing."""
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    write(other / "f", "x\n")
    git(other, "add", "f")
    git(other, "commit", "-q", "-m", "other")
    ar(repo, *start_args())
    write(repo / "value.txt", "80\n")
    same = {"GIT_DIR": str(repo / ".git"), "GIT_WORK_TREE": str(repo)}[variable]
    monkeypatch.setenv(variable, same)
    assert ar(repo, "status", "--json").json()["session_id"] == "s1"
    monkeypatch.setenv(variable, str(other / ".git") if variable == "GIT_DIR" else str(other))
    for command in (["run", "-d", "x"], ["discard", "-d", "x"], ["status"]):
        res = ar(repo, *command, expect=3)
        assert f"{variable}=" in res.err and "another repository" in res.err, res.err
    assert (repo / "value.txt").read_text() == "80\n"
    assert git(other, "status", "--porcelain") == ""


@pytest.mark.parametrize("keep", [False, True])
def test_a_git_repository_the_experiment_creates_is_named(repo: Path, ar: Tool,
                                                          keep: bool) -> None:
    """git holds another repository only as a submodule: one the experiment creates inside
    the work tree is neither committed by a keep nor saved or removed by a revert, and the
    run says so, in its record and its warnings. One that was there before is the user's."""
    (repo / "before").mkdir()
    git(repo / "before", "init", "-q")
    ar(repo, *start_args("--decision", "strict", "--force"))
    sub = repo / "src" / "sub"
    sub.mkdir()
    git(sub, "init", "-q")
    write(sub / "f", "y\n")
    git(sub, "add", "f")
    git(sub, "commit", "-q", "-m", "inside")
    write(repo / "value.txt", "90\n" if keep else "120\n")
    done = ar(repo, "run", "-d", "with a nested repository", "--json").json()
    assert done["status"] == ("keep" if keep else "discard")
    assert done["nested_repositories"] == ["src/sub/"]
    said = [w for w in done["warnings"] if "created a git repository" in w]
    assert len(said) == 1 and "src/sub/" in said[0] and "before/" not in said[0]
    assert (sub / "f").read_text() == "y\n"  # nothing of it lost
    assert git(repo, "ls-tree", "-r", "--name-only", "HEAD").count("src/sub") == 0
    assert runs(repo)[-1]["nested_repositories"] == ["src/sub/"]


def lose_line(repo: Path, number: int) -> None:
    """Remove run ``number``'s line from the ledger, as a crash of an editor or a bad hand
    edit would."""
    ledger = repo / ".auto" / "log.jsonl"
    kept = [line for line in ledger.read_text().splitlines()
            if json.loads(line).get("run") != number or "type" in json.loads(line)]
    ledger.write_text("\n".join(kept) + "\n")


def test_a_lost_ledger_line_of_a_keep_stops_the_loop_until_doctor_restores_it(
        repo: Path, ar: Tool) -> None:
    """Run 2 was kept (80), its line then lost: the next run must not decide against the
    baseline (100), keep a 90 as a gain, and mirror the ledger without run 2 into the state
    ref. It is refused naming the lost run and doctor --fix, which restores the line."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "80\n")
    assert ar(repo, "run", "-d", "a gain", "--json").json()["status"] == "keep"
    lose_line(repo, 2)
    write(repo / "value.txt", "90\n")
    for command in (["run", "-d", "worse than run 2"], ["measure"],
                    ["discard", "-d", "worse than run 2"]):
        res = ar(repo, *command, expect=3)
        assert "run 2" in res.err and "doctor --fix" in res.err, (command, res.err)
    assert (repo / "value.txt").read_text() == "90\n"  # nothing reverted
    said = ar(repo, "status", "--json").json()["warnings"]
    assert any("run 2" in w and "doctor --fix" in w for w in said), said
    held = git(repo, "show", "refs/autoresearch/s1/state:log/00000.jsonl")
    assert '"run":2,' in held.replace(" ", "")
    ar(repo, "doctor", "--fix")
    assert [r["run"] for r in runs(repo)] == [1, 2]
    assert ar(repo, "run", "-d", "worse than run 2", "--json").json()["status"] == "discard"


def test_a_keep_lost_from_the_state_ref_tip_comes_back_from_its_history(
        repo: Path, ar: Tool) -> None:
    """The state ref's tip lost run 2's line too (mirrored without it after a rewrite the
    mirror was told was on purpose; with its cache merely gone, the mirror asks the ref and
    refuses): doctor finds the line in an earlier state commit and restores it, not a
    rebuild that no intent record vouches for."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "80\n")
    ar(repo, "run", "-d", "a gain")
    full = [r for r in runs(repo)]
    write(repo / "value.txt", "70\n")
    ar(repo, "run", "-d", "another gain")
    scratch = repo / git(repo, "rev-parse", "--git-path", "autoresearch")
    lose_line(repo, 2)
    (scratch / "state-cache.json").unlink()
    (scratch / "intent.json.done").unlink(missing_ok=True)
    for old in scratch.glob("intent*"):
        old.unlink()
    said = ar(repo, "ideas", "add", "an idea").err
    assert "lost lines that refs/autoresearch/s1/state holds" in said
    from git_autoresearch.git import Repo
    from git_autoresearch.history import state_ref

    state_ref.forget(Repo.discover(repo), repo / ".auto" / "log.jsonl")  # (as a repair does)
    ar(repo, "ideas", "add", "another idea")  # mirrors the session files: the tip lacks run 2
    assert '"run":2,' not in git(repo, "show",
                                 "refs/autoresearch/s1/state:log/00000.jsonl").replace(" ", "")
    findings = ar(repo, "doctor", "--json", expect=3).json()["findings"]
    assert any("run 2" in f["problem"] and f["fix"] and "state ref" in f["fix"]
               for f in findings), findings
    ar(repo, "doctor", "--fix")
    restored = {r["run"]: r for r in runs(repo)}
    assert restored[2] == full[1]
    assert ar(repo, "doctor", "--json").json()["findings"] == []


@pytest.mark.parametrize("command,scope,delete", [
    (["run", "-d", "worse"], None, False), (["run", "-d", "outside"], "value.txt", False),
    (["keep", "-d", "outside", "--metric", "80"], "value.txt", False),
    (["discard", "-d", "outside"], "value.txt", False),
    (["run", "-d", "deleted"], "src", True), (["discard", "-d", "deleted"], None, True)])
def test_a_partial_clone_whose_remote_is_away_refuses_before_changing_anything(
        repo: Path, ar: Tool, tmp_path: Path, command: list[str], scope: str | None,
        delete: bool) -> None:
    """A sparse partial clone holds no blob of the files outside its cone; an experiment
    that writes one (or deletes it) changes a file whose HEAD version git must fetch to put
    it back, or to look for a rename. With the promisor remote away, every keep, revert and
    set-aside that needs it is refused before anything changes, naming the file and the
    object; the experiment is left as it was."""
    import shutil

    git(repo, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--filter=blob:none", "--sparse", f"file://{repo}",
        str(clone))
    shutil.move(str(repo), str(tmp_path / "away"))
    blob = git(clone, "rev-parse", "HEAD:src/lib.py")
    ar(clone, *start_args("--allow-missing", *(["--scope", scope] if scope else [])))
    write(clone / "src" / "lib.py", "def f():\n    return 2\n")
    if delete:  # a file of the sparse cone's outside, once checked out, deleted
        git(clone, "update-index", "--no-skip-worktree", "src/lib.py")
        (clone / "src" / "lib.py").unlink()
    write(clone / "value.txt", "120\n")
    before = git(clone, "for-each-ref")
    lines = (clone / ".auto" / "log.jsonl").read_text()
    res = ar(clone, *command, expect=3)
    assert "src/lib.py" in res.err and blob in res.err and "partial clone" in res.err
    assert (clone / "src" / "lib.py").exists() != delete
    assert delete or (clone / "src" / "lib.py").read_text() == "def f():\n    return 2\n"
    assert (clone / "value.txt").read_text() == "120\n" or scope == "src"
    assert git(clone, "for-each-ref") == before or scope == "src"
    assert (clone / ".auto" / "log.jsonl").read_text() == lines
    assert ar(clone, "doctor", "--json").json()["findings"] == []
    shutil.move(str(tmp_path / "away"), str(repo))  # the remote back: the objects come
    ar(clone, *command, expect=None)
    assert ar(clone, "doctor", "--json").json()["findings"] == []
    assert len(runs(clone)) == 2


@pytest.mark.parametrize("tool", ["lint-staged", "commit-msg"])
def test_a_commit_hook_that_rewrites_what_is_committed_keeps_nothing(repo: Path, ar: Tool,
                                                                     tool: str) -> None:
    """A formatter run by a pre-commit hook that stages its rewrite (as lint-staged does)
    would commit content that was never measured under the measured metric. The keep is
    refused, HEAD and the index as they were, the hook's rewrite left in the work tree to
    be measured; a commit-msg hook that only edits the message is fine."""
    ar(repo, *start_args("--decision", "strict"))
    head = git(repo, "rev-parse", "HEAD")
    if tool == "lint-staged":
        write(repo / ".git" / "hooks" / "pre-commit",
              "#!/bin/sh\nsed -i 's/^80$/81/' value.txt\ngit add value.txt\n", 0o755)
    else:
        write(repo / ".git" / "hooks" / "commit-msg",
              "#!/bin/sh\nsed -i '1s/^/[perf] /' \"$1\"\n", 0o755)
    write(repo / "value.txt", "80\n")
    if tool == "commit-msg":
        assert ar(repo, "run", "-d", "a gain", "--json").json()["status"] == "keep"
        assert git(repo, "log", "-1", "--format=%s").startswith("[perf] ")
        return
    res = ar(repo, "run", "-d", "a gain", expect=3)
    assert "commit hook changed value.txt" in res.err and "not measured" in res.err, res.err
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "diff", "--cached", "--name-only") == ""
    assert (repo / "value.txt").read_text() == "81\n"
    assert [r["run"] for r in runs(repo)] == [1]
    (repo / ".git" / "hooks" / "pre-commit").unlink()
    done = ar(repo, "run", "-d", "the hook's rewrite, measured", "--json").json()
    assert (done["status"], done["metric"]) == ("keep", 81)


def test_the_users_hooks_run_under_the_users_own_git_settings(repo: Path, ar: Tool,
                                                             tmp_path: Path) -> None:
    """The hooks git runs for us (pre-commit at a keep, post-checkout when start switches
    branch) are the user's code: they got our reading settings, among them literal
    pathspecs, so a pre-commit hook that refuses ``*.secret`` files by a glob matched nothing
    and the keep committed one. Now they run with none of ours: the glob refuses the keep,
    nothing is recorded, and the hook's environment holds no variable of ours (but, around a
    checkout, the switch that checks out the objects themselves, not their replacements)."""
    seen = tmp_path / "seen"
    for hook in ("pre-commit", "post-checkout"):
        write(repo / ".git" / "hooks" / hook,
              f"#!/bin/sh\n(echo {hook}; env | grep -E '^(GIT_(LITERAL|GLOB|NOGLOB|ICASE)_"
              f"PATHSPECS|GIT_NO_REPLACE_OBJECTS|GIT_CONFIG_PARAMETERS|GIT_CONFIG_COUNT)=' "
              f"| sort) >> '{seen}'\n", 0o755)
    with (repo / ".git" / "hooks" / "pre-commit").open("a") as fh:
        fh.write("if git diff --cached --name-only -- '*.secret' | grep -q .; then\n"
                 "  echo 'refusing *.secret' >&2; exit 1\nfi\n")
    ar(repo, *start_args("--decision", "strict"))
    head = git(repo, "rev-parse", "HEAD")
    write(repo / "src" / "api.secret", "TOKEN=abc\n")
    write(repo / "value.txt", "80\n")
    res = ar(repo, "run", "-d", "a gain", expect=3)
    assert "refusing *.secret" in res.err, res.err
    assert git(repo, "rev-parse", "HEAD") == head
    assert (repo / "src" / "api.secret").read_text() == "TOKEN=abc\n"
    assert [r["run"] for r in runs(repo)] == [1]
    assert seen.read_text() == "post-checkout\nGIT_NO_REPLACE_OBJECTS=1\npre-commit\n"
    # a revert's git restore fires post-checkout too, and gets the paths literally all the
    # same (a name git would read as a glob)
    seen.write_text("")
    write(repo / "src" / "a*b.py", "x = 1\n")
    git(repo, "add", "src/a*b.py")
    git(repo, "commit", "-qm", "a file named with a glob character", "--no-verify")
    write(repo / "src" / "api.secret", "")
    (repo / "src" / "api.secret").unlink()
    write(repo / "src" / "a*b.py", "x = 2\n")
    write(repo / "src" / "axb.py", "untouched\n")
    ar(repo, "discard", "-d", "reverted")
    assert (repo / "src" / "a*b.py").read_text() == "x = 1\n"
    assert (repo / "value.txt").read_text() == "100\n"
    assert "post-checkout\nGIT_NO_REPLACE_OBJECTS=1\n" in seen.read_text()
    assert "GIT_LITERAL" not in seen.read_text() and "GIT_CONFIG" not in seen.read_text()


@pytest.mark.parametrize("rule", ["filter", "safecrlf"])
@pytest.mark.parametrize("command", [["run", "-d", "x"], ["keep", "-d", "x", "--metric", "80"],
                                     ["discard", "-d", "x"]])
def test_a_file_git_will_not_stage_is_refused_by_name(repo: Path, ar: Tool, rule: str,
                                                      command: list[str]) -> None:
    """A required clean filter that fails, or core.safecrlf refusing a file's line endings:
    git will not stage the file, so neither a keep nor the attempt of a revert can be
    recorded. Refused (exit 3) quoting git's line, which names the file; nothing changed."""
    ar(repo, *start_args("--decision", "strict"))
    if rule == "filter":
        write(repo / ".gitattributes", "*.dat filter=broken\n")
        git(repo, "config", "filter.broken.clean", "false")
        git(repo, "config", "filter.broken.required", "true")
        write(repo / "src" / "table.dat", "1\n")
        named = "src/table.dat"
    else:
        write(repo / ".gitattributes", "*.txt text=auto\n")
        git(repo, "config", "core.safecrlf", "true")
        write(repo / "src" / "notes.txt", b"a\r\nb\n")
        named = "src/notes.txt"
    git(repo, "add", ".gitattributes") if rule == "safecrlf" else None
    write(repo / "value.txt", "80\n" if command[0] != "discard" else "120\n")
    before = git(repo, "status", "--porcelain")
    res = ar(repo, *command, expect=3)
    assert "git would not stage" in res.err and named in res.err, res.err
    assert "internal error" not in res.err and "git failed" not in res.err
    assert git(repo, "status", "--porcelain") == before
    assert [r["run"] for r in runs(repo)] == [1]
    assert not list((repo / ".git" / "autoresearch").glob("intent.json"))


HOSTILE_CONFIG = [
    ("trailer.separators", "="), ("trailer.where", "start"), ("trailer.ifexists", "replace"),
    ("log.showSignature", "true"), ("color.ui", "always"), ("core.pager", "false"),
    ("core.quotePath", "true"), ("format.pretty", "fuller"), ("log.decorate", "full"),
    ("diff.noprefix", "true"), ("diff.external", "false"), ("diff.renames", "copies"),
    ("status.showUntrackedFiles", "no"), ("status.relativePaths", "true"),
    ("core.abbrev", "12"), ("log.abbrevCommit", "true"), ("log.follow", "true"),
    ("format.signOff", "true"), ("log.date", "relative"), ("core.commentChar", ";"),
    ("commit.verbose", "true"), ("commit.cleanup", "verbatim"), ("status.short", "true"),
    ("core.untrackedCache", "true"), ("i18n.logOutputEncoding", "ISO-8859-1"),
    ("log.mailmap", "true"), ("diff.algorithm", "patience"), ("grep.patternType", "perl")]


@pytest.mark.parametrize("hooks", [False, True])
def test_user_configuration_that_changes_what_git_prints_changes_nothing(
        repo: Path, ar: Tool, hooks: bool) -> None:
    """Configuration that changes what git prints or how it reads trailers (colour, pagers,
    signatures in log, quoting, trailer separators, encodings): the loop records, reads back
    and finalizes as without it, through the plumbing keep and through git commit."""
    for key, value in HOSTILE_CONFIG:
        git(repo, "config", key, value)
    if hooks:
        write(repo / ".git" / "hooks" / "commit-msg", "#!/bin/sh\ntrue\n", 0o755)
    write(repo / "src" / "é dir" / "f ü.txt", "1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a file with an odd name")
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "src" / "é dir" / "f ü.txt", "2\n")
    write(repo / "value.txt", "80\n")
    assert ar(repo, "run", "-d", "a gain é", "--json").json()["status"] == "keep"
    write(repo / "src" / "é dir" / "f ü.txt", "3\n")
    write(repo / "value.txt", "120\n")
    assert ar(repo, "run", "-d", "worse", "--json").json()["status"] == "discard"
    assert (repo / "src" / "é dir" / "f ü.txt").read_text() == "2\n"
    said = ar(repo, "status", "--json").json()
    assert said["segment"]["best"]["run"] == 2 and said["warnings"] == []
    assert [r["run"] for r in ar(repo, "log", "--json").json()["runs"]] == [1, 2, 3]
    assert ar(repo, "doctor", "--json").json()["findings"] == []
    shown = ar(repo, "show", "2", "--json").json()
    assert shown["record"]["metric"] == 80 and "f ü.txt" in shown["diff"]
    assert ar(repo, "finalize", "--samples", "0", "--json").json()["runs"] == [2]


def test_trailers_of_different_metrics_on_one_branch_are_not_compared(repo: Path,
                                                                      ar: Tool) -> None:
    """A branch read from its Result: trailers alone, whose commits measured one metric and
    then another (time, then memory): each metric is a segment of its own, so 12 MB is not
    taken for the best time."""
    for value, result in (("90", '"time_ms":100'), ("80", '"time_ms":90'),
                          ("70", '"memory_mb":12,"time_ms":300')):
        write(repo / "value.txt", f"{value}\n")
        git(repo, "commit", "-q", "-am", f"step {value}\n\nResult: {{\"status\":\"keep\","
            f"{result}}}\n")
    found = ar(repo, "log", "--json").json()["runs"]
    assert [(r["metric"], r["segment"]) for r in found] == [(100, 0), (90, 0), (12, 1)]
    said = ar(repo, "status", "--json").json()
    assert said["metric_name"] == "memory_mb" and said["segment"]["best"]["metric"] == 12


def test_a_result_trailer_that_lists_another_metric_first_is_read_by_the_sessions_metric(
        repo: Path, ar: Tool) -> None:
    """A keep's message amended by another tool that put a metric of its own first in the
    Result trailer: the session's metric (score) is still what the trailer is read by, so
    doctor finds the amended keep, not a disagreement of 5 against 80."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "80\n")
    ar(repo, "run", "-d", "a gain")
    message = git(repo, "log", "-1", "--format=%B")
    git(repo, "commit", "-q", "--amend", "-m", message.replace(
        '{"status":"keep","score":80}', '{"status":"keep","memory_mb":5,"score":80}'))
    findings = ar(repo, "doctor", "--json", expect=3).json()["findings"]
    assert [f["fix"] for f in findings] == ["update the ledger's commit fields"], findings
    ar(repo, "doctor", "--fix")
    assert ar(repo, "doctor", "--json").json()["findings"] == []


def test_a_lost_baseline_line_comes_back_from_the_state_ref(repo: Path, ar: Tool) -> None:
    """The baseline committed nothing, so no trailer or attempt ref names it: the state ref's
    ledger is what holds it. A loop refused for its loss is cleared by doctor --fix."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "120\n")
    ar(repo, "run", "-d", "worse")
    lose_line(repo, 1)
    write(repo / "value.txt", "90\n")
    assert "kept run 1" in ar(repo, "run", "-d", "x", expect=3).err
    findings = ar(repo, "doctor", "--json", expect=3).json()["findings"]
    assert any("run 1" in f["problem"] and f["fix"] for f in findings), findings
    ar(repo, "doctor", "--fix")
    assert [r["run"] for r in runs(repo)] == [1, 2]
    assert ar(repo, "run", "-d", "x", "--json").json()["status"] == "keep"
    assert ar(repo, "doctor", "--json").json()["findings"] == []


@pytest.mark.parametrize("field,value", [("samples", "100"), ("metric", None)])
@pytest.mark.parametrize("by_resume", [False, True])
def test_a_run_line_made_unreadable_comes_back_from_the_state_ref(repo: Path, ar: Tool,
                                                                  by_resume: bool, field: str,
                                                                  value: object) -> None:
    """A kept run's line given a field of the wrong type is set aside by doctor --fix (or
    resume), as any malformed line is, and its good version comes back from the state ref:
    the baseline stays the baseline."""
    kept_then_edited(repo, ar, "metric", "12")
    ledger = repo / ".auto" / "log.jsonl"
    lines = ledger.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if json.loads(line).get("run") == 1)
    good = lines[first]
    record = json.loads(good)
    record[field] = value  # a kept run without a metric is no readable record either
    lines[first] = json.dumps(record)
    ledger.write_text("\n".join(lines) + "\n")
    ar(repo, "resume" if by_resume else "doctor", *([] if by_resume else ["--fix"]))
    assert [json.loads(x) for x in ledger.read_text().splitlines()
            if json.loads(x).get("run") == 1] == [json.loads(good)]
    assert [r["run"] for r in runs(repo)] == [1, 2]
    assert "12" in (repo / ".auto" / "log.rejected.jsonl").read_text()
    assert ar(repo, "doctor", "--json").json()["findings"] == []
    write(repo / "value.txt", "70\n")
    assert ar(repo, "run", "-d", "after the repair", "--json").json()["status"] == "keep"
