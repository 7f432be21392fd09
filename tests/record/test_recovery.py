"""Nothing is lost, whatever is interrupted: a kill at every step of keep and revert, resume
after `git clean -xfd`, doctor, concurrent callers, stale locks and hostile input."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import (
    HOST_STEPS,
    REMOTE_STEPS,
    TAKEN_AGAIN,
    TOOL,
    WORKER_STEPS,
    Tool,
    assert_dies,
    check_document,
    git,
    ledger_lines,
    left_behind,
    runs,
    start_args,
    tool,
    write,
)

from git_autoresearch import ledger
from git_autoresearch.ledger import records
from git_autoresearch.session.lock import SessionLock


def files_of(top: Path, names: list[str]) -> dict[str, tuple[bytes, int]]:
    return {n: ((top / n).read_bytes(), (top / n).stat().st_mode & 0o777) for n in names}


@pytest.fixture
def experiment(repo: Path, ar: Tool) -> Path:
    """A session with user files, ignored files, protected files, and an experiment in the
    work tree: an in-scope edit, a new in-scope file, and an out-of-scope edit."""
    write(repo / ".gitignore", ".env\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore")
    write(repo / ".env", "SECRET=1\n", 0o600)
    write(repo / "notes.txt", "user notes\n")
    ar(repo, *start_args("--force", "--scope", "value.txt", "--scope", "src/"))
    write(repo / ".auto" / "hooks" / "after.sh", "#!/bin/sh\n:\n", 0o755)
    write(repo / ".auto" / "prompt.md", "agent notes\n")
    write(repo / "value.txt", "50\n")
    write(repo / "src" / "new.py", "x = 1\n")
    write(repo / "README.md", "out of scope\n")
    return repo


PRECIOUS = [".env", "notes.txt", ".auto/hooks/after.sh", ".auto/prompt.md"]

REVERT_STEPS = ["revert:after-attempt", "revert:after-remove", "record:before-ledger",
                "record:after-ledger", "record:before-after-hooks"]
KEEP_STEPS = ["keep:saving-index", "keep:staging", "keep:before-commit", "keep:after-commit",
              "keep:after-attempt",
              "record:before-ledger", "record:after-ledger", "record:before-after-hooks"]


def test_every_named_step_is_in_the_kill_matrix() -> None:

    from git_autoresearch.runtime.faults import STEPS

    assert set(REVERT_STEPS) | set(KEEP_STEPS) | set(START_STEPS) | set(SET_ASIDE_STEPS) \
        | set(WORKER_STEPS) | set(REMOTE_STEPS) | set(HOST_STEPS) | {"revert:before-attempt"} \
        == set(STEPS)


SET_ASIDE_STEPS = ["set-aside:after-attempt", "set-aside:after-remove"]


@pytest.mark.parametrize("step", SET_ASIDE_STEPS)
def test_kill_during_the_set_aside_before_measuring(experiment: Path, ar: Tool, step: str) -> None:
    """A run killed while it sets aside the changes outside the scope (some created files
    removed, the tracked one not yet restored): the next command finishes the set-aside and
    says so, and the run recorded next names the scope ref and every path in it."""
    top = experiment
    write(top / "extra" / "a.txt", "a\n")
    write(top / "extra" / "b.txt", "b\n")
    precious = files_of(top, PRECIOUS)
    killed = tool(top, "run", "-d", "killed", env={"GIT_AUTORESEARCH_DIE_AT": step})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    ref = "refs/autoresearch/s1/scope/2"
    assert ar(top, "status", "--json").json()["warnings"] == [
        "a set-aside of run 2 was interrupted; the next recording command (or resume) "
        "finishes it"]
    assert ar(top, "resume", "--json").json()["actions"] == [
        "finished setting aside the changes outside the scope or to readonly files before "
        f"run 2: saved at {ref} (see them: git show {ref})"]
    assert left_behind(top) == []
    assert not (top / "extra").exists()
    assert (top / "README.md").read_text() == "project\n"
    assert (top / "value.txt").read_text() == "50\n", "the experiment is intact"
    assert (top / "src" / "new.py").read_text() == "x = 1\n"
    assert git(top, "show", f"{ref}:extra/a.txt") == "a"
    assert git(top, "show", f"{ref}:README.md") == "out of scope"
    record = ar(top, "run", "-d", "carries on", "--json").json()
    assert (record["run"], record["status"]) == (2, "keep")
    assert record["scope_refs"] == [ref]
    assert record["scope_violations"] == ["README.md", "extra/a.txt", "extra/b.txt"]
    assert record["warnings"] == [
        f"reverted changes outside the scope: README.md, extra/a.txt, extra/b.txt (saved at "
        f"{ref}; git restore --source={ref} -- ':(top,literal)<path>' brings one back "
        f"{TAKEN_AGAIN})"]
    assert files_of(top, PRECIOUS) == precious
    assert ar(top, "doctor", "--json").json()["findings"] == []


def test_a_set_aside_killed_then_head_moved_is_refused_then_set_aside_by_doctor(
        experiment: Path, ar: Tool) -> None:
    """A set-aside killed after its scope ref holds the changes, then HEAD moved by hand: the
    next command refuses, naming where the changes are saved; doctor --fix sets the intent
    record aside (saying so), leaves the work tree as it is, and the loop carries on. Files
    left in the scratch folder by killed commands are removed; one of a live process is not."""
    top = experiment
    write(top / "extra" / "a.txt", "a\n")
    killed = tool(top, "run", "-d", "killed",
                  env={"GIT_AUTORESEARCH_DIE_AT": "set-aside:after-attempt"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    ref = "refs/autoresearch/s1/scope/2"
    write(top / "by-hand.txt", "x\n")
    git(top, "add", "by-hand.txt")
    git(top, "commit", "-q", "-m", "by hand")
    assert ar(top, "run", "-d", "x", expect=3).err == (
        "git autoresearch: HEAD moved since the set-aside before run 2 was interrupted; the "
        f"changes are saved at {ref} (git autoresearch doctor --fix sets the interrupted "
        "operation aside)\n")
    scratch = top / ".git" / "autoresearch"  # (git rev-parse --git-path autoresearch)
    left = [scratch / "attempt-index.1", scratch / "state-piece.x.2", scratch / "y.tmp"]
    alive = scratch / f"attempt-index.{os.getpid()}"
    for path in [*left, alive]:
        path.write_text("")
    fixed = ar(top, "doctor", "--fix", "--json", expect=None).json()["findings"]
    assert fixed[0]["done"] == \
        "set aside the interrupted set-aside before run 2 (HEAD had moved)"
    assert not any(path.exists() for path in left) and alive.exists()
    assert (top / "extra" / "a.txt").read_text() == "a\n", "left as it is"
    assert git(top, "show", f"{ref}:extra/a.txt") == "a"
    warned = ar(top, "status", "--json").json()["warnings"]  # (only of the commit by hand)
    assert len(warned) == 1 and "is the commit of no kept run" in warned[0]


def test_every_set_aside_of_a_run_is_named_by_its_record(experiment: Path, ar: Tool) -> None:
    """A run measured twice with changes outside the scope each time (the first measurement
    left pending): its record names both scope refs, the union of their paths, and show
    lists them."""
    top = experiment
    ar(top, "measure")
    write(top / "more.txt", "more\n")
    record = ar(top, "run", "-d", "again", "--json").json()
    first, second = "refs/autoresearch/s1/scope/2", "refs/autoresearch/s1/scope/2.2"
    assert record["scope_ref"] == second
    assert record["scope_refs"] == [first, second]
    assert record["scope_violations"] == ["README.md", "more.txt"]
    shown = ar(top, "show", "2", "--json").json()["set_aside"]
    assert [(e["ref"], e["paths"]) for e in shown] == [(first, ["README.md"]),
                                                      (second, ["more.txt"])]
    human = ar(top, "show", "2").out
    assert f"set aside before measuring (outside the scope or readonly), at {first}: " \
           "README.md\n" in human
    assert ar(top, "doctor", "--json").json()["findings"] == []


START_STEPS = ["start:after-intent", "start:after-branch", "start:after-config",
               "start:after-ledger", "start:before-baseline"]


@pytest.mark.parametrize("step", START_STEPS)
def test_kill_during_start_then_resume(repo: Path, ar: Tool, step: str) -> None:
    write(repo / "notes.txt", "user notes\n")
    killed = tool(repo, *start_args("--force", "--scope", "value.txt"),
                  env={"GIT_AUTORESEARCH_DIE_AT": step})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    if step != "start:before-baseline":
        # Every command a user tries first points at the way out that finishes the start.
        for command in (["run", "-d", "x"], ["status"], ["log"]):
            res = ar(repo, *command, expect=None)
            text = " ".join((res.out + res.err).split())
            assert "resume` finishes" in text.replace("resume finishes", "resume` finishes"), \
                (step, command, text)
    actions = ar(repo, "resume", "--json").json()["actions"]
    assert actions == ([] if step == "start:before-baseline" else [
        "finished the interrupted start of session s1; its baseline was not measured: git "
        "autoresearch start --new-segment measures it"])
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "autoresearch/s1"
    assert "/.auto/" in (repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert ar(repo, "run", "-d", "too early", expect=3).err == (
        "git autoresearch: the baseline of this segment was never measured (start was "
        "interrupted or refused); run git autoresearch start --new-segment\n")
    baseline = ar(repo, "start", "--new-segment", "--json").json()["baseline"]
    assert baseline["run"] == 1 and baseline["metric"] == 100
    write(repo / "value.txt", "50\n")
    write(repo / "README.md", "out of scope\n")
    record = ar(repo, "run", "-d", "better", "--json").json()
    assert (record["run"], record["status"], record["scope_violations"]) == \
        (2, "keep", ["README.md"])
    assert (repo / "notes.txt").read_text() == "user notes\n"
    assert ar(repo, "status", "--json").json()["warnings"] == []


@pytest.mark.parametrize("step", ["start:after-intent", "start:after-branch",
                                  "start:after-config", "start:after-ledger"])
def test_a_sigterm_during_start_lets_it_make_the_session_whole(repo: Path, ar: Tool, step: str
                                                               ) -> None:
    """A polite kill waits until the session is made whole: nothing is left for resume to
    finish, and the baseline that was not measured is what the next command names."""
    stopped = tool(repo, *start_args(), env={"GIT_AUTORESEARCH_DIE_AT": f"{step}@TERM"})
    assert (stopped.returncode, stopped.stderr) == (143, "git autoresearch: terminated\n")
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "autoresearch/s1"
    assert not (repo / ".git" / "autoresearch" / "start.json").exists()
    assert git(repo, "rev-parse", "--verify", "-q", "refs/autoresearch/s1/state")
    assert ar(repo, "resume", "--json").json()["actions"] == []
    assert "start --new-segment" in ar(repo, "run", "-d", "too early", expect=3).err
    assert ar(repo, "start", "--new-segment", "--json").json()["baseline"]["metric"] == 100


def test_resume_finishes_a_start_record_written_by_the_previous_version(repo: Path,
                                                                       ar: Tool) -> None:
    """A start.json left by the version before the start record was a typed value (the same
    keys, written by json.dumps of a plain dict) is still finished."""
    head = git(repo, "rev-parse", "HEAD")
    config = ('{"goal": "lower the value", "command": "sh bench.sh", "metric_name": "score", '
              '"metric_unit": "", "direction": "lower", "metric_pattern": "score: (\\\\S+)", '
              '"scope": ["value.txt"], "protected": [], "timeout_seconds": 600, '
              '"checks_timeout_seconds": 300, "runs_per_experiment": 1, '
              '"aggregate": "median", "session_id": "s1", '
              '"created_at": "2026-11-30T00:00:00Z"}')
    write(repo / ".git" / "autoresearch" / "start.json",
          f'{{"session_id": "s1", "head": "{head}", "config": {config}, '
          '"no_baseline": false, "untracked": []}')
    actions = ar(repo, "resume", "--json").json()["actions"]
    assert actions[0] == ("finished the interrupted start of session s1; its baseline was "
                          "not measured: git autoresearch start --new-segment measures it")
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "autoresearch/s1"
    assert not (repo / ".git" / "autoresearch" / "start.json").exists()
    header = ledger_lines(repo)[0]
    assert (header["type"], header["session_id"], header["base_commit"], header["no_baseline"],
            header["config"]["metric_pattern"]) == ("config", "s1", head, False, r"score: (\S+)")
    assert list(header) == ["type", "name", "metricName", "metricUnit", "bestDirection",
                            "config_hash", "session_id", "version", "config", "base_commit",
                            "no_baseline", "timestamp"]
    assert ar(repo, "start", "--new-segment", "--json").json()["baseline"]["metric"] == 100


@pytest.mark.parametrize("step", REVERT_STEPS)
def test_kill_during_revert_then_resume(experiment: Path, ar: Tool, step: str) -> None:
    top = experiment
    precious = files_of(top, PRECIOUS)
    head = git(top, "rev-parse", "HEAD")
    killed = tool(top, "discard", "-d", "killed", env={"GIT_AUTORESEARCH_DIE_AT": step})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    res = ar(top, "resume", "--json").json()
    assert left_behind(top) == [], res["actions"]
    assert files_of(top, PRECIOUS) == precious
    assert git(top, "rev-parse", "HEAD") == head
    numbers = [r["run"] for r in runs(top)]
    assert numbers == [1, 2], f"{step}: {numbers} ({res['actions']})"
    assert res["actions"] == [
        "finished the interrupted revert of run 2 (discard)" if step.startswith(
            ("revert:", "record:before-ledger")) else
        "run 2 was already recorded; its after hooks had not fired (they fire now)"]
    ref = "refs/autoresearch/s1/attempts/2"
    assert (runs(top)[-1]["status"], runs(top)[-1]["attempt_ref"]) == ("discard", ref)
    assert git(top, "show", f"{ref}:value.txt") == "50"
    assert git(top, "show", f"{ref}:src/new.py") == "x = 1"
    assert (top / "value.txt").read_text() == "100\n"
    assert not (top / "src" / "new.py").exists()
    assert (top / "README.md").read_text() == "project\n"
    assert ar(top, "status", "--json").json()["warnings"] == []
    assert ar(top, "run", "-d", "carries on", "--json").json()["run"] == 3


def test_a_revert_killed_before_its_attempt_ref_was_written_is_rolled_back(
        experiment: Path, ar: Tool) -> None:
    """A discard killed once its intent record was written but before its attempt ref: nothing
    had changed, so resume rolls it back, records nothing, and the experiment is still in the
    work tree for the next discard, which records it as run 2."""
    top = experiment
    precious = files_of(top, PRECIOUS)
    head = git(top, "rev-parse", "HEAD")
    killed = tool(top, "discard", "-d", "killed",
                  env={"GIT_AUTORESEARCH_DIE_AT": "revert:before-attempt"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert (top / ".git" / "autoresearch" / "intent.json").exists()
    assert ar(top, "status", "--json").json()["warnings"] == [
        "a revert of run 2 was interrupted; the next recording command (or resume) finishes it"]
    assert ar(top, "resume", "--json").json()["actions"] == [
        "rolled back the interrupted revert of run 2: nothing had changed"]
    assert not (top / ".git" / "autoresearch" / "intent.json").exists()
    assert [r["run"] for r in runs(top)] == [1]
    assert subprocess.run(["git", "rev-parse", "-q", "--verify",
                           "refs/autoresearch/s1/attempts/2"], cwd=top).returncode == 1
    assert git(top, "rev-parse", "HEAD") == head
    assert (top / "value.txt").read_text() == "50\n"
    assert (top / "src" / "new.py").read_text() == "x = 1\n"
    assert (top / "README.md").read_text() == "out of scope\n"
    assert files_of(top, PRECIOUS) == precious
    assert ar(top, "status", "--json").json()["warnings"] == []
    record = ar(top, "discard", "-d", "again", "--json").json()
    assert (record["run"], record["attempt_ref"]) == (2, "refs/autoresearch/s1/attempts/2")
    assert git(top, "show", "refs/autoresearch/s1/attempts/2:value.txt") == "50"
    assert (top / "value.txt").read_text() == "100\n"


@pytest.mark.parametrize("written, named", [
    ("{not json", ""),
    ('["keep"]', ""),
    ('{"op": "merge", "run": 2, "head": "h", "ref": "r", "created": [], "tracked": [], '
     '"untracked_after": [], "record": {}}', " (a merge of run 2)"),
    ('{"op": "set-aside", "run": 2, "head": "h", "ref": "refs/autoresearch/s1/scope/2", '
     '"tracked": ["README.md"]}', " (a set-aside of run 2)"),
])
def test_an_intent_record_that_cannot_be_finished_is_set_aside(
        experiment: Path, ar: Tool, written: str, named: str) -> None:
    """An intent record that is not JSON, not an object, or names an operation no version
    wrote: status names it, resume sets it aside as it was (never finishes or rolls back
    anything), records nothing, and leaves the work tree alone."""
    top = experiment
    head = git(top, "rev-parse", "HEAD")
    path = top / ".git" / "autoresearch" / "intent.json"
    write(path, written)
    assert ar(top, "status", "--json").json()["warnings"] == [
        f"an interrupted command left an intent record that cannot be read{named}; the next "
        "recording command (or resume) sets it aside"]
    assert ar(top, "resume", "--json").json()["actions"] == [
        "set aside an unreadable intent record"]
    assert not path.exists()
    [aside] = (top / ".git" / "autoresearch").glob("intent.abandoned.*.json")
    assert aside.read_text() == written
    assert [r["run"] for r in runs(top)] == [1]
    assert git(top, "rev-parse", "HEAD") == head
    assert (top / "value.txt").read_text() == "50\n"
    assert (top / "README.md").read_text() == "out of scope\n"
    assert ar(top, "status", "--json").json()["warnings"] == []
    assert ar(top, "resume", "--json").json()["actions"] == []


@pytest.mark.parametrize("op", ["discard", "keep"])
def test_resume_finishes_an_intent_record_written_by_an_older_version(experiment: Path,
                                                                        ar: Tool,
                                                                        op: str) -> None:
    """intent.json as versions before journal.Intent wrote it (json.dumps of a plain dict, its
    keys in their order), and as the oldest wrote it, without ``id``, ``had_index`` or
    ``staged_preexisting``: still finished, the run recorded once."""
    top = experiment
    args = ["keep", "-d", "killed", "--metric", "50"] if op == "keep" else ["discard", "-d", "x"]
    step = "keep:after-commit" if op == "keep" else "record:before-ledger"
    killed = tool(top, *args, env={"GIT_AUTORESEARCH_DIE_AT": step})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    path = top / ".git" / "autoresearch" / "intent.json"
    written = json.loads(path.read_text())
    order = ["op", "run", "id", "head", "ref", "record", "untracked_after", "staged_preexisting",
             "to_stage", "had_index", "created", "tracked"]
    oldest = {k: written[k] for k in order if k in written
              and k not in ("id", "had_index", "staged_preexisting")}
    path.write_text(json.dumps(oldest))
    res = ar(top, "resume", "--json").json()
    assert res["actions"] == [f"finished the interrupted {'keep' if op == 'keep' else 'revert'} "
                              f"of run 2{'' if op == 'keep' else ' (discard)'}"]
    assert [(r["run"], r["status"]) for r in runs(top)] == [(1, "keep"), (2, op)]
    assert not path.exists()


@pytest.mark.parametrize("step", KEEP_STEPS)
def test_kill_during_keep_then_resume(experiment: Path, ar: Tool, step: str) -> None:
    top = experiment
    precious = files_of(top, PRECIOUS)
    head = git(top, "rev-parse", "HEAD")
    git(top, "add", "README.md", "src/new.py")  # the user's staging, out of scope and in
    staged = git(top, "diff", "--cached", "--name-status")
    killed = tool(top, "keep", "-d", "killed keep", "--metric", "50",
                  env={"GIT_AUTORESEARCH_DIE_AT": step})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    res = ar(top, "resume", "--json").json()
    assert left_behind(top) == [], res["actions"]
    assert files_of(top, PRECIOUS) == precious
    numbers = [r["run"] for r in runs(top)]
    if step in ("keep:saving-index", "keep:staging", "keep:before-commit"):
        # Rolled back: nothing committed or recorded; work tree and index as the keep found them.
        assert res["actions"] == [
            "rolled back the interrupted keep of run 2: nothing was committed, and the "
            "experiment is still in the work tree"]
        assert numbers == [1]
        assert git(top, "rev-parse", "HEAD") == head
        assert git(top, "diff", "--cached", "--name-status") == staged
        assert (top / "value.txt").read_text() == "50\n"
        assert (top / "src" / "new.py").read_text() == "x = 1\n"
        assert (top / "README.md").read_text() == "out of scope\n"
        assert ar(top, "keep", "-d", "again", "--metric", "50", "--json").json()["run"] == 2
    else:
        assert res["actions"] == [
            "finished the interrupted keep of run 2" if step.startswith(
                ("keep:", "record:before-ledger")) else
            "run 2 was already recorded; its after hooks had not fired (they fire now)"]
        assert numbers == [1, 2]
        record = runs(top)[-1]
        assert record["status"] == "keep" and record["committed"] is True
        # The out-of-scope change went to the attempt ref, which the record names.
        assert record["attempt_ref"] == "refs/autoresearch/s1/attempts/2"
        assert git(top, "rev-parse", "HEAD^") == head
        assert git(top, "log", "-1", "--format=%(trailers:key=Autoresearch-Run,valueonly)") \
            == "2"
        assert record["commit"] == git(top, "rev-parse", "--short=7", "HEAD")
        assert sorted(git(top, "show", "--name-only", "--format=", "HEAD").split()) == \
            ["src/new.py", "value.txt"]
        assert (top / "README.md").read_text() == "project\n"
        assert git(top, "show", "refs/autoresearch/s1/attempts/2:README.md") == "out of scope"
    assert ar(top, "status", "--json").json()["warnings"] == []
    assert not (top / ".git" / "autoresearch" / "index-before-keep").exists()


def test_next_command_finishes_an_interrupted_revert(experiment: Path, ar: Tool) -> None:
    killed = tool(experiment, "discard", "-d", "killed",
                  env={"GIT_AUTORESEARCH_DIE_AT": "revert:after-remove"})
    assert killed.returncode == -signal.SIGKILL
    assert "interrupted" in " ".join(ar(experiment, "status", "--json").json()["warnings"])
    record = ar(experiment, "run", "-d", "next", "--json").json()
    assert record["run"] == 3
    assert [r["run"] for r in runs(experiment)] == [1, 2, 3]


def test_clean_xfd_then_resume_restores_the_session(experiment: Path, ar: Tool) -> None:
    top = experiment
    ar(top, "discard", "-d", "one")
    write(top / "value.txt", "20\n")
    ar(top, "run", "-d", "two")
    before = {n: (top / ".auto" / n).read_bytes() for n in
              ("config.toml", "log.jsonl", "prompt.md", "hooks/after.sh")}
    git(top, "clean", "-xfdq")
    assert not (top / ".auto").exists()
    hint = "git autoresearch resume` restores session s1"
    assert hint in ar(top, "doctor", expect=3).err
    for command in (["stop"], ["hooks", "install", "notify"], ["start", "--new-segment"],
                    ["ideas", "add", "a new idea"]):
        assert hint in ar(top, *command, expect=3).err, command
    assert any(hint in w for w in ar(top, "status", "--json").json()["warnings"])
    actions = ar(top, "resume", "--json").json()["actions"]
    assert "restored .auto/config.toml" in actions and "restored .auto/log.jsonl" in actions
    after = {n: (top / ".auto" / n).read_bytes() for n in before}
    assert after == before
    assert (top / ".auto" / "config.toml").stat().st_mode & 0o777 == 0o444
    assert os.access(top / ".auto" / "hooks" / "after.sh", os.X_OK)
    assert ar(top, "run", "-d", "three", "--json").json()["run"] == 4


def test_deleted_ledger_is_restored(experiment: Path, ar: Tool) -> None:
    ar(experiment, "discard", "-d", "one")
    ledger_path = experiment / ".auto" / "log.jsonl"
    saved = ledger_path.read_bytes()
    ledger_path.unlink()
    assert ar(experiment, "run", "-d", "x", expect=3).err == (
        f"git autoresearch: the ledger {ledger_path} is missing or lost its configuration "
        "header; git autoresearch resume restores it from refs/autoresearch/s1/state\n")
    assert not ledger_path.exists()
    actions = ar(experiment, "resume", "--json").json()["actions"]
    assert actions[0] == "restored .auto/log.jsonl"
    assert ledger_path.read_bytes() == saved


def test_truncated_ledger_is_restored_and_the_old_one_kept(experiment: Path, ar: Tool) -> None:
    ar(experiment, "discard", "-d", "one")
    path = experiment / ".auto" / "log.jsonl"
    saved = path.read_bytes()
    path.write_bytes(saved[: saved.index(b"\n") + 1])
    actions = ar(experiment, "resume", "--json").json()["actions"]
    assert "it had lost lines" in actions[0]
    assert path.read_bytes() == saved


def test_resume_from_a_fresh_clone(experiment: Path, ar: Tool, tmp_path: Path) -> None:
    ar(experiment, "discard", "-d", "one")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "-b", "main", str(experiment), str(clone))
    git(clone, "fetch", "-q", "origin", "refs/autoresearch/*:refs/autoresearch/*")
    git(clone, "branch", "-q", "autoresearch/s1", "origin/autoresearch/s1")
    data = ar(clone, "resume", "--json").json()
    assert "checked out autoresearch/s1" in data["actions"]
    assert data["next_run"] == 3
    assert ar(clone, "run", "-d", "in the clone", "--json").json()["run"] == 3


def test_resume_refuses_edited_config_naming_the_key(experiment: Path, ar: Tool) -> None:
    cfg = experiment / ".auto" / "config.toml"
    cfg.chmod(0o644)
    cfg.write_text(cfg.read_text().replace("timeout_seconds = 600", "timeout_seconds = 5"))
    res = ar(experiment, "resume", expect=3)
    assert "timeout_seconds: 600 -> 5" in res.err


def test_resume_sets_malformed_lines_aside(experiment: Path, ar: Tool) -> None:
    path = experiment / ".auto" / "log.jsonl"
    with open(path, "ab") as fh:
        fh.write(b'{"run": "bad"}\n{"torn":')
    actions = ar(experiment, "resume", "--json").json()["actions"]
    assert actions == ["ledger line 3 set aside ('run' is not a positive whole number) in "
                       ".auto/log.rejected.jsonl",
                       "ledger line 4 set aside (not JSON (JSONDecodeError)) in "
                       ".auto/log.rejected.jsonl"]
    rejected = [json.loads(x) for x in (experiment / ".auto" / "log.rejected.jsonl")
                .read_text().splitlines()]
    assert [r["line"] for r in rejected] == [3, 4] and rejected[1]["text"] == '{"torn":'
    assert ledger.read(path).malformed == []
    assert len(ledger.read(path).runs) == 1


def test_resume_reports_a_missing_script(repo: Path, ar: Tool) -> None:
    write(repo / "measure.sh", "echo score: 1\n")
    git(repo, "add", "measure.sh")
    git(repo, "commit", "-qm", "script")
    ar(repo, "start", "--goal", "g", "--session-id", "s", "--command", "sh ./measure.sh",
       "--metric-pattern", r"score: (\d+)", "--readonly", "measure.sh")
    git(repo, "rm", "-q", "measure.sh")
    git(repo, "commit", "-qm", "gone")
    res = ar(repo, "resume", expect=3)
    assert "./measure.sh, which does not exist" in res.err


# --- doctor ------------------------------------------------------------------------------


def _drop_runs(path: Path, numbers: tuple[int, ...], extra: list[str]) -> dict[int, str]:
    lines = path.read_text().splitlines(keepends=True)
    dropped = {n: ln for ln in lines for n in numbers if f'"run":{n},' in ln}
    path.write_text("".join(ln for ln in lines if ln not in dropped.values()) + "".join(extra))
    return dropped


def test_doctor_finds_and_fixes_planted_problems(experiment: Path, ar: Tool) -> None:
    top = experiment
    ar(top, "run", "-d", "kept")           # run 2: keep, with a trailer
    write(top / "value.txt", "300\n")
    ar(top, "run", "-d", "discarded")      # run 3: discard, with an attempt ref
    write(top / "value.txt", "400\n")
    ar(top, "run", "-d", "later")          # run 4
    assert ar(top, "doctor", "--json").json()["findings"] == []
    path = top / ".auto" / "log.jsonl"
    ghost = ('{"run":9,"commit":"abcdef0","metric":1,"status":"discard","description":'
             '"ghost","attempt_ref":"refs/autoresearch/s1/attempts/99"}\n')
    original = _drop_runs(path, (2, 3), [ghost, "not json\n"])
    res = ar(top, "doctor", "--json", expect=3)
    problems = [f["problem"] for f in res.json()["findings"]]
    assert any("records run 2 as kept, but the ledger has no run 2" in p for p in problems)
    assert any("attempt ref of run 3 has no ledger line" in p for p in problems)
    assert any("is not a readable record" in p for p in problems)
    assert any("attempts/99, which does not exist" in p for p in problems)
    assert any("state ref" in p for p in problems)
    fixed = ar(top, "doctor", "--fix", "--json", expect=3).json()["findings"]
    assert all(f["fixed"] for f in fixed if f["fix"])
    lines = path.read_text().splitlines(keepends=True)
    assert original[2] in lines and original[3] in lines, "restored from the state ref"
    assert [r["run"] for r in runs(top)] == [1, 2, 3, 4, 9], "in order, none deleted"
    # Without the state ref, the run not kept is rebuilt from its attempt commit; the keep's
    # commit carries our trailers, but no intent record or state ref knows it any more (a
    # commit made by hand looks the same): reported, not adopted.
    _drop_runs(path, (2, 3), [])
    git(top, "update-ref", "-d", "refs/autoresearch/s1/state")
    ar(top, "doctor", "--fix", "--json", expect=3)
    records = {r["run"]: r for r in runs(top)}
    assert 2 not in records
    assert records[3]["status"] == "discard" and records[3]["rebuilt_from"] == "attempt"
    assert records[3]["description"] == "discarded"
    left = [f["problem"] for f in ar(top, "doctor", "--json", expect=3).json()["findings"]]
    kept = git(top, "rev-parse", "--short=7", "autoresearch/s1")
    assert left == [
        f"commit {kept} records run 2 as kept, but the ledger has no run 2, and no keep of "
        "this tool made it (no intent record or state ref knows it): it is not adopted",
        "run 9 names refs/autoresearch/s1/attempts/99, which does not exist",
        "refs/autoresearch/s1/scope/2 holds changes set aside (outside the scope or to "
        "readonly files) that no recorded run names (see them: git show "
        "refs/autoresearch/s1/scope/2)"]


def test_doctor_asks_git_no_more_for_more_runs(experiment: Path, ar: Tool) -> None:
    """doctor lists the session's refs once: the git calls it makes do not grow with the runs
    whose attempt refs it checks (16,000 calls, 40 s, on 20,000 runs before), and a run that
    names a ref that is gone is still found."""
    top = experiment
    ar(top, "run", "-d", "first")
    head = git(top, "rev-parse", "HEAD")
    path = top / ".auto" / "log.jsonl"

    def calls(first: int, count: int) -> tuple[int, list[str]]:
        lines = []
        for n in range(first, first + count):
            ref = f"refs/autoresearch/s1/attempts/{n}"
            git(top, "update-ref", ref, head)
            lines.append(json.dumps({"run": n, "commit": head[:7], "metric": 1,
                                     "status": "discard", "description": f"r{n}",
                                     "attempt_ref": ref, "samples": [1]}) + "\n")
        with path.open("a") as fh:
            fh.writelines(lines)
        done = subprocess.run([sys.executable, "-m", "git_autoresearch", "doctor", "--json"],
                              cwd=top, capture_output=True, text=True,
                              env={**os.environ, "GIT_AUTORESEARCH_TRACE": "1"})
        traced = [ln for ln in done.stderr.splitlines() if "trace:" in ln]
        found = check_document(json.loads(done.stdout))["findings"]
        return len(traced), [f["problem"] for f in found]

    calls(100, 2)
    git(top, "update-ref", "-d", "refs/autoresearch/s1/attempts/100")
    few, _ = calls(150, 2)
    many, problems = calls(200, 40)
    assert many == few
    assert [p for p in problems if "which does not exist" in p] == [
        "run 100 names refs/autoresearch/s1/attempts/100, which does not exist"]


def test_doctor_names_many_missing_refs_in_one_finding_and_one_call(experiment: Path,
                                                                     ar: Tool) -> None:
    """Runs that name attempt refs that do not exist (a clone that fetched the branch and the
    state ref alone) are looked up in one git call, not one per run (1.4 ms each: 140 s on
    100,000 runs), and more than ten are one finding that names them as ranges, not a line
    per run."""
    top = experiment
    ar(top, "run", "-d", "first")
    path = top / ".auto" / "log.jsonl"
    head = git(top, "rev-parse", "--short=7", "HEAD")

    def doctor(numbers: list[int]) -> tuple[int, list[str]]:
        with path.open("a") as fh:
            fh.writelines(json.dumps({
                "run": n, "commit": head, "metric": 1, "status": "discard",
                "description": f"r{n}", "samples": [1],
                "attempt_ref": f"refs/autoresearch/s1/attempts/{n}"}) + "\n" for n in numbers)
        done = subprocess.run([sys.executable, "-m", "git_autoresearch", "doctor", "--json"],
                              cwd=top, capture_output=True, text=True,
                              env={**os.environ, "GIT_AUTORESEARCH_TRACE": "1"})
        traced = [ln for ln in done.stderr.splitlines() if "trace:" in ln]
        found = check_document(json.loads(done.stdout))["findings"]
        return len(traced), [f["problem"] for f in found if "not exist" in f["problem"]]

    # Refs that exist otherwise than as a commit ref of the session are not reported: another
    # session's, and one of ours that names an annotated tag of a commit.
    git(top, "update-ref", "refs/autoresearch/other/attempts/8", "HEAD")
    git(top, "tag", "-a", "-m", "a tag", "tagged", "HEAD")
    git(top, "update-ref", "refs/autoresearch/s1/attempts/9", git(top, "rev-parse", "tagged"))
    with path.open("a") as fh:
        fh.writelines(json.dumps({
            "run": n, "commit": head, "metric": 1, "status": "discard", "description": f"r{n}",
            "samples": [1], "attempt_ref": ref}) + "\n"
            for n, ref in ((7, "HEAD@{99}"), (8, "refs/autoresearch/other/attempts/8"),
                           (9, "refs/autoresearch/s1/attempts/9")))
    # (git stops at HEAD@{99}, past the reflog's end: the refs after it are still found.)
    few, problems = doctor([10, 11])
    assert problems == ["run 7 names HEAD@{99}, which does not exist"] + [
        f"run {n} names refs/autoresearch/s1/attempts/{n}, which does not exist"
        for n in (10, 11)]
    # (a run on two lines is one run, and the example named is the lowest run)
    many, problems = doctor([*range(12, 40), 45, *range(50, 60), 7, 12])
    assert many == few
    assert problems == [
        "42 runs name attempt refs that do not exist: runs 7, 10-39, 45, 50-59 (run 7 names "
        "HEAD@{99}); a clone brings them from a remote that has them with git autoresearch "
        "pull"]
    text = ar(top, "doctor", expect=3).out
    assert text.count("do not exist") == 1 and "which does not exist" not in text


def test_doctor_says_many_runs_a_ledger_lacks_in_one_finding_a_fix(repo: Path,
                                                                  ar: Tool) -> None:
    """A ledger cut to its first lines with no state ref to restore them from (deleted, or a
    clone of the refs alone): the runs its attempt refs and its keeps' trailers name are one
    finding for each way --fix restores them, with ranges, where doctor printed a line a run
    (1,509 lines for 1,507 runs); --fix restores them all."""
    ar(repo, *start_args())
    for n in range(2, 14):
        write(repo / "value.txt", f"{200 + n}\n")
        ar(repo, "discard", "-d", f"try {n}", "--metric", str(200 + n))
    for n in range(14, 26):
        write(repo / "value.txt", f"{100 - n}\n")
        ar(repo, "keep", "-d", f"keep {n}", "--metric", str(100 - n))
    ledger = repo / ".auto" / "log.jsonl"
    whole = ledger.read_bytes()
    ledger.write_bytes(b"".join(whole.splitlines(keepends=True)[:2]))
    git(repo, "update-ref", "-d", "refs/autoresearch/s1/state")
    found = ar(repo, "doctor", "--json", expect=3).json()["findings"]
    assert [(f["problem"], f["fix"]) for f in found if "no state ref" not in f["problem"]] == [
        ("12 commits of the branch record runs as kept that the ledger lacks: runs 14-25, "
         "and no keep of this tool made them (no intent record or state ref knows them): they "
         "are not adopted", None),
        ("12 attempt refs have no ledger line: runs 2-13", "rebuild the runs' lines from "
         "their attempt commits")]
    ar(repo, "doctor", "--fix", expect=3)
    assert [r["run"] for r in runs(repo)] == [1, *range(2, 14)]
    # No record is left to adopt HEAD's keeps from: run says so and names the way out that
    # works, a new segment measured from HEAD, after which the loop goes on (it refused for
    # ever, naming doctor --fix, which could not help).
    write(repo / "value.txt", "60\n")
    refused = ar(repo, "run", "-d", "after the cut", expect=3)
    short = git(repo, "rev-parse", "--short", "HEAD")
    assert refused.err.strip().endswith(
        f"lost the line of kept run 25, which HEAD's commit ({short}) holds; git autoresearch "
        "doctor --fix restores it, or, when doctor says the keep needs a person, git "
        "autoresearch start --new-segment measures HEAD as a new baseline; nothing was "
        "measured or changed")
    write(repo / "value.txt", "75\n")
    ar(repo, "start", "--new-segment")
    write(repo / "value.txt", "60\n")
    assert ar(repo, "run", "-d", "after the cut", "--json").json()["status"] == "keep"


@pytest.mark.parametrize("lost", [("incumbent",), ("incumbent", "to 130"), ("to 120",)])
def test_doctor_restores_lines_lost_in_the_middle_at_their_places(repo: Path, ar: Tool,
                                                                  lost: tuple[str, ...]) -> None:
    """Lines deleted from between others of the ledger (the incumbent's sample after a
    discard, a discarded run's line, or both): every command warned that it lost lines and
    doctor said --fix would mirror the files, which it refused (or put a run back after the
    sample that followed it); now --fix puts each back at its place from the state ref, and
    doctor ends clean. status and resume say so too (they said nothing, while every run
    warned), and say nothing once it is fixed."""
    ar(repo, *start_args())
    for value in ("120", "130"):
        write(repo / "value.txt", f"{value}\n")
        ar(repo, "run", "-d", f"to {value}")
    ledger = repo / ".auto" / "log.jsonl"
    whole = ledger.read_bytes()
    lines = whole.splitlines(keepends=True)
    gone = {next(n for n, line in enumerate(lines) if f'"{word}"'.encode() in line)
            for word in lost}
    ledger.write_bytes(b"".join(line for n, line in enumerate(lines) if n not in gone))
    lost_lines = f"{ledger} lost lines that refs/autoresearch/s1/state holds; git " \
        "autoresearch doctor --fix restores them"
    assert ar(repo, "status").err == f"warning: {lost_lines}\n"
    assert ar(repo, "status", "--json").json()["warnings"] == [lost_lines]
    assert ar(repo, "resume", "--json").json()["warnings"] == [lost_lines]
    for reading in (["log"], ["summary"]):
        assert f"warning: {lost_lines}\n" in ar(repo, *reading).err
    assert lost_lines in ar(repo, "ideas", "add", "an idea").err
    said = f"- the ledger {ledger} lost {len(gone)} line{'s' if len(gone) > 1 else ''} from " \
        "between others, which the state ref holds"
    assert ar(repo, "doctor", expect=3).out.startswith(said + " [fixable with --fix]\n")
    fixed = ar(repo, "doctor", "--fix").out
    assert fixed.startswith(said + " (the old file is .auto/log.jsonl.before-doctor.")
    assert "not fixed" not in fixed
    assert ledger.read_bytes() == whole
    assert ar(repo, "doctor").out == "no problems found\n"
    assert ar(repo, "status", "--json").json()["warnings"] == []
    write(repo / "value.txt", "90\n")
    assert ar(repo, "run", "-d", "to 90", "--json").json()["warnings"] == []


def test_a_segment_header_lost_from_the_ledger_is_named_and_doctor_puts_it_back(
        repo: Path, ar: Tool) -> None:
    """The header line of the current segment deleted from the ledger: the configuration then
    looks edited since the segment before began, and every command, doctor included, refused
    as if it were, naming ways out that changed nothing; now the loss is named with doctor
    --fix as the way out, which puts the line back."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "first segment")
    ar(repo, "start", "--new-segment", "--goal", "the second goal")
    write(repo / "value.txt", "80\n")
    ar(repo, "run", "-d", "second segment")
    ledger = repo / ".auto" / "log.jsonl"
    whole = ledger.read_bytes()
    lines = whole.splitlines(keepends=True)
    header = max(n for n, line in enumerate(lines) if b'"type":"config"' in line)
    ledger.write_bytes(b"".join(lines[:header] + lines[header + 1:]))
    write(repo / "value.txt", "70\n")
    said = ar(repo, "run", "-d", "after the loss", expect=3).err
    assert said == (f"git autoresearch: the ledger {ledger} lost the configuration header of "
                    "the current segment, which refs/autoresearch/s1/state holds; git "
                    "autoresearch doctor --fix puts it back\n")
    ar(repo, "doctor", "--fix")
    assert ledger.read_bytes() == whole
    assert ar(repo, "run", "-d", "after the fix", "--json").json()["segment"] == 1


def test_doctor_promises_no_mirror_it_cannot_make(repo: Path, ar: Tool) -> None:
    """A kept run's line edited into a discard by hand: the state ref is not mirrored over
    it (it holds the keep), so doctor names that for a person instead of saying --fix would
    mirror the files, which every --fix then failed to do."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "keep", "-d", "kept", "--metric", "90")
    ledger = repo / ".auto" / "log.jsonl"
    ledger.write_bytes(ledger.read_bytes().replace(b'"status":"keep","description":"kept"',
                                                   b'"status":"discard","description":"kept"'))
    ar(repo, "ideas", "add", "an idea")  # (not mirrored: the state ref holds the keep)
    for args in (["doctor"], ["doctor", "--fix"]):
        found = ar(repo, *args, "--json", expect=3).json()["findings"]
        state = [f for f in found if "state ref does not hold" in f["problem"]]
        assert state == [{"problem": "the state ref does not hold the current session files, "
                          "and is not mirrored while the ledger lacks the line of kept run 2, "
                          "which it holds", "fix": None, "fixed": False}], found


def test_doctor_calls_fixable_a_mirror_its_fix_unblocks(repo: Path, ar: Tool) -> None:
    """A kept run's line deleted, which doctor --fix puts back: the state ref's finding is
    fixable too (once the line is back, the files are mirrored), not one for a person."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "keep", "-d", "kept", "--metric", "90")
    write(repo / "value.txt", "95\n")
    ar(repo, "discard", "-d", "worse")
    ledger = repo / ".auto" / "log.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    ledger.write_bytes(b"".join(line for line in lines if b'"description":"kept"' not in line))
    found = ar(repo, "doctor", "--json", expect=3).json()["findings"]
    assert found and all(f["fix"] for f in found), found
    ar(repo, "doctor", "--fix")
    assert ledger.read_bytes() == b"".join(lines)
    assert ar(repo, "doctor").out == "no problems found\n"


def test_doctor_leaves_an_edited_sample_as_it_is(repo: Path, ar: Tool) -> None:
    """The incumbent's last sample edited by hand is no loss: doctor --fix mirrors it and
    never puts the old line back beside it (the pool would count the sample twice)."""
    ar(repo, *start_args())
    write(repo / "value.txt", "120\n")
    ar(repo, "run", "-d", "to 120")
    ledger = repo / ".auto" / "log.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    assert b'"type":"incumbent"' in lines[-1]
    edited = lines[-1].replace(b'"samples":[100', b'"samples":[101')
    assert edited != lines[-1]
    ledger.write_bytes(b"".join(lines[:-1]) + edited)
    ar(repo, "doctor", "--fix")
    assert ledger.read_bytes() == b"".join(lines[:-1]) + edited
    assert ar(repo, "doctor").out == "no problems found\n"


def test_doctor_reports_a_branch_that_lost_a_keep(experiment: Path, ar: Tool) -> None:
    ar(experiment, "run", "-d", "kept")
    git(experiment, "reset", "-q", "--hard", "HEAD~1")
    findings = ar(experiment, "doctor", "--json", expect=3).json()["findings"]
    assert any("run 2 is recorded as kept" in f["problem"] for f in findings)


def test_doctor_sets_aside_a_stuck_interrupted_keep(experiment: Path, ar: Tool) -> None:
    killed = tool(experiment, "keep", "-d", "k", "--metric", "50",
                  env={"GIT_AUTORESEARCH_DIE_AT": "keep:after-commit"})
    assert killed.returncode == -signal.SIGKILL
    git(experiment, "commit", "-q", "--amend", "-m", "rewritten by hand")
    assert ar(experiment, "run", "-d", "x", expect=3).err == (
        "git autoresearch: HEAD moved since the keep of run 2 was interrupted, and not by that "
        "keep (git autoresearch doctor --fix sets the interrupted operation aside)\n")
    fixed = ar(experiment, "doctor", "--fix", "--json", expect=None).json()["findings"]
    assert fixed[0] == {"problem": "a keep of run 2 was interrupted",
                        "fix": "finish it, roll it back, or set it aside when HEAD has moved",
                        "fixed": True,
                        "done": "set aside the interrupted keep of run 2 (HEAD had moved)"}
    assert [r["run"] for r in runs(experiment)] == [1], "the keep is not finished"
    kept = sorted(p.name for p in (experiment / ".git" / "autoresearch").iterdir()
                  if p.name.startswith("intent"))
    assert len(kept) == 1 and kept[0].startswith("intent.abandoned."), kept
    carried = ar(experiment, "discard", "-d", "carries on", "--json").json()
    assert (carried["run"], carried["status"]) == (2, "discard")


def test_a_run_number_written_twice_is_two_runs(experiment: Path, ar: Tool) -> None:
    """pi-autoresearch 1.6.2 reads every record with a numeric ``run`` as a run
    (extensions/pi-autoresearch/jsonl.ts:184), whatever its number: so does status, and it
    says that the number is held twice."""
    with open(experiment / ".auto" / "log.jsonl", "a") as fh:
        fh.write('{"run":1,"commit":"abc","metric":1,"status":"keep"}\n')
    status = ar(experiment, "status", "--json").json()
    assert (status["segment"]["runs"], status["segment"]["best"]["metric"]) == (2, 1)
    assert any("run number 1 is on lines 2, 3" in w for w in status["warnings"])


# --- concurrency and locks ----------------------------------------------------------------


def test_eight_callers_at_once(experiment: Path) -> None:
    top = experiment
    env = {**os.environ, "GIT_AUTORESEARCH_LOCK_WAIT": "120"}
    calls = []
    for i in range(8):
        args = ["run", "-d", f"call {i}"] if i % 2 else ["keep", "-d", f"call {i}",
                                                          "--metric", str(40 - i)]
        calls.append(subprocess.Popen([*TOOL, *args], cwd=top, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    codes = [p.wait(timeout=300) for p in calls]
    assert codes == [0] * 8, [p.stderr.read() for p in calls if p.stderr]
    numbers = [r["run"] for r in runs(top)]
    assert numbers == list(range(1, 10))
    assert sorted(r["description"] for r in runs(top)[1:]) == sorted(f"call {i}"
                                                                      for i in range(8))
    status = json.loads(tool(top, "status", "--json").stdout)
    assert status["warnings"] == []


def test_lock_holder_is_named(experiment: Path) -> None:
    scratch = Path(git(experiment, "rev-parse", "--path-format=absolute", "--git-path",
                       "autoresearch"))
    with SessionLock(scratch, "test holder", wait=0):
        started = time.monotonic()
        res = tool(experiment, "discard", "-d", "x", env={"GIT_AUTORESEARCH_LOCK_WAIT": "0.5"})
        assert time.monotonic() - started < 10
    assert res.returncode == 3
    assert f"pid {os.getpid()} test holder" in res.stderr
    assert len(runs(experiment)) == 1


def test_lock_of_a_killed_process_is_taken_over(experiment: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; "
        "from git_autoresearch.session.lock import SessionLock\n"
        f"with SessionLock(Path({str(experiment / '.git' / 'autoresearch')!r}), 'doomed'):\n"
        "    print('held', flush=True); time.sleep(300)")], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait()
    res = tool(experiment, "discard", "-d", "after the kill",
               env={"GIT_AUTORESEARCH_LOCK_WAIT": "2"})
    assert res.returncode == 0, res.stderr


# --- hostile input ------------------------------------------------------------------------


def test_descriptions_and_annotations_never_reach_a_shell(experiment: Path, ar: Tool,
                                                          tmp_path: Path) -> None:
    hostile = [f"$(touch {tmp_path}/p1)", f"`touch {tmp_path}/p2`", f"x; touch {tmp_path}/p3",
               f"' \"; touch {tmp_path}/p4 #"]
    write(experiment / ".auto" / "hooks" / "after.sh", "#!/bin/sh\ncat > /dev/null\n", 0o755)
    for text in hostile:
        ar(experiment, "discard", "-d", text, "--asi", f"hypothesis={text}",
           "--asi", f"{text}=value")
    assert not any((tmp_path / f"p{i}").exists() for i in range(1, 5))
    assert [r["description"] for r in runs(experiment)[1:]] == hostile
    assert runs(experiment)[1]["asi"] == {"hypothesis": hostile[0], hostile[0]: "value"}


def test_untrusted_trailers_are_not_trusted(experiment: Path, ar: Tool) -> None:
    git(experiment, "commit", "-q", "--allow-empty", "-m",
        'forged\n\nResult: {"status":"keep","score":NaN}\nAutoresearch-Run: 7')
    git(experiment, "commit", "-q", "--allow-empty", "-m",
        'forged\n\nResult: ["not", "an", "object"]\nAutoresearch-Run: 8')
    findings = [f["problem"] for f in
                ar(experiment, "doctor", "--json", expect=3).json()["findings"]]
    assert not any("run 7" in f or "run 8" in f for f in findings)
    assert sum("is not a JSON object of finite numbers; it is not trusted" in f
               for f in findings) == 2


def test_huge_ledger_line_is_reported(experiment: Path, ar: Tool) -> None:
    with open(experiment / ".auto" / "log.jsonl", "a") as fh:
        fh.write('{"run":2,"description":"' + "x" * (2 << 20) + '"}\n')
    res = ar(experiment, "log")
    assert res.err == (
        f"warning: {experiment / '.auto' / 'log.jsonl'}:3: not readable, left out (resume sets "
        "it aside): line of 2097178 bytes is too long\n")
    assert len(runs_of(experiment)) == 1


def runs_of(top: Path) -> list[ledger.Run]:
    return ledger.read(top / ".auto" / "log.jsonl").runs


# --- found by trying to break it ----------------------------------------------------------


def test_recovery_never_destroys_work_done_after_the_kill(experiment: Path, ar: Tool) -> None:
    killed = tool(experiment, "discard", "-d", "killed",
                  env={"GIT_AUTORESEARCH_DIE_AT": "revert:after-attempt"})
    assert killed.returncode == -signal.SIGKILL
    write(experiment / "value.txt", "70\n")
    write(experiment / "src" / "new.py", "precious new work\n")
    record = ar(experiment, "run", "-d", "next idea", "--json").json()
    assert record["run"] == 3 and record["metric"] == 70
    assert [r["run"] for r in runs(experiment)] == [1, 2, 3]
    found = git(experiment, "show", "HEAD:src/new.py") if record["status"] == "keep" else \
        git(experiment, "show", f"{record['attempt_ref']}:src/new.py")
    assert found == "precious new work"


def test_a_lost_last_ledger_line_never_reuses_a_run_number(experiment: Path, ar: Tool) -> None:
    ar(experiment, "discard", "-d", "bad idea")
    path = experiment / ".auto" / "log.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[:-40])
    write(experiment / "value.txt", "160\n")
    write(experiment / "src" / "new.py", "precious work\n")
    record = ar(experiment, "run", "-d", "another idea", "--json").json()
    assert record["run"] == 3
    assert git(experiment, "show", f"{record['attempt_ref']}:src/new.py") == "precious work"
    assert git(experiment, "show", "refs/autoresearch/s1/attempts/2:value.txt") == "50"


@pytest.mark.parametrize("op", ["discard", "keep"])
def test_a_lost_ledger_line_the_state_ref_cannot_restore_never_reuses_its_number(
        experiment: Path, ar: Tool, op: str) -> None:
    """The last ledger line gone whole (newline and all) and the state ref gone too, so nothing
    can restore the line: the next run is still numbered after the lost one, found from its
    attempt ref (a discard) or the ``Autoresearch-Run`` trailer of its commit (a keep), and
    that attempt is not overwritten."""
    top = experiment
    extra = ["--metric", "50"] if op == "keep" else []
    if op == "keep":
        write(top / "README.md", "project\n")  # nothing set aside: no attempt ref for run 2
    ar(top, op, "-d", "lost line", *extra)
    path = top / ".auto" / "log.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if json.loads(line).get("run") == 2)
    path.write_bytes(b"".join(lines[:last]))  # run 2's line and the after hook's after it
    git(top, "update-ref", "-d", "refs/autoresearch/s1/state")
    attempt = git(top, "rev-parse", "-q", "--verify", "refs/autoresearch/s1/attempts/2") \
        if op == "discard" else None
    write(top / "value.txt", "40\n")
    record = ar(top, "discard", "-d", "next idea", "--json").json()
    assert (record["run"], record["attempt_ref"]) == (3, "refs/autoresearch/s1/attempts/3")
    assert [r["run"] for r in runs(top)] == [1, 3]
    if attempt is not None:
        assert git(top, "rev-parse", "refs/autoresearch/s1/attempts/2") == attempt
        assert git(top, "show", "refs/autoresearch/s1/attempts/2:value.txt") == "50"
    else:
        assert git(top, "log", "-1", "--format=%(trailers:key=Autoresearch-Run,valueonly)") \
            == "2"
    assert git(top, "show", "refs/autoresearch/s1/attempts/3:value.txt") == "40"


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupting_a_measurement_ends_the_experiment(repo: Path, ar: Tool, tmp_path: Path,
                                                        sig: int, code: int) -> None:
    ar(repo, *start_args())
    pidfile = tmp_path / "pid"
    ar(repo, "start", "--new-segment", "--command",
       f"echo $$ > {pidfile}; sleep 30; sh bench.sh", "--no-baseline")
    proc = subprocess.Popen([*TOOL, "run", "-d", "slow", "--json"], cwd=repo,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code
    assert check_document(json.loads(out))["exit_code"] == code, \
        "one JSON document, even when interrupted"
    assert b"interrupted" in err or b"terminated" in err
    assert_dies(int(pidfile.read_text()), "the experiment of the interrupted command")


def test_a_start_killed_during_the_baseline(repo: Path, ar: Tool) -> None:
    killed = tool(repo, *start_args(), env={"GIT_AUTORESEARCH_DIE_AT": "record:before-ledger"})
    assert killed.returncode == -signal.SIGKILL
    assert ar(repo, "resume", "--json").json()["actions"] == [
        "finished the interrupted keep of run 1"]
    record = runs(repo)[0]
    assert record["run"] == 1 and record["status"] == "keep" and record["baseline"] is True


def test_a_baseline_never_measured_is_refused(repo: Path, ar: Tool) -> None:
    write(repo / "slow.sh", "sleep 30\n")
    git(repo, "add", "slow.sh")
    git(repo, "commit", "-qm", "slow")
    proc = subprocess.Popen([*TOOL, *start_args("--command", "sh slow.sh", "--readonly",
                                                 "slow.sh")], cwd=repo)
    deadline = time.monotonic() + 20
    while not (repo / ".auto" / "run.log").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    assert ar(repo, "run", "-d", "x", expect=3).err == (
        "git autoresearch: the baseline of this segment was never measured (start was "
        "interrupted or refused); run git autoresearch start --new-segment\n")


def test_resume_leaves_a_deleted_hook_deleted(experiment: Path, ar: Tool) -> None:
    ar(experiment, "hooks", "install", "notify")
    (experiment / ".auto" / "hooks" / "after.d" / "notify.py").unlink()
    ar(experiment, "resume")
    assert not (experiment / ".auto" / "hooks" / "after.d" / "notify.py").exists()
    git(experiment, "clean", "-xfdq")
    ar(experiment, "resume")
    assert (experiment / ".auto" / "hooks" / "after.sh").exists()


def test_resume_restores_a_config_that_does_not_parse(experiment: Path, ar: Tool) -> None:
    cfg = experiment / ".auto" / "config.toml"
    good = cfg.read_bytes()
    cfg.chmod(0o644)
    cfg.write_text("this is = = not toml")
    said = ar(experiment, "run", "-d", "x", expect=3).err
    assert said.startswith(f"git autoresearch: {cfg}: not valid TOML: ")
    assert said.endswith("; git autoresearch resume restores it from the state ref\n")
    assert said.count("\n") == 1
    actions = ar(experiment, "resume", "--json").json()["actions"]
    assert len(actions) == 1 and re.fullmatch(
        r"restored \.auto/config\.toml \(it did not parse; it is now "
        r"\.auto/config\.toml\.broken\.\d+\)", actions[0]), actions
    assert cfg.read_bytes() == good


BAD_ANNOTATIONS = [
    (["-d", "bad \udc80 bytes"], "--description is not valid UTF-8"),
    (["--asi", "novalue"], "--asi 'novalue' is not KEY=VALUE"),
    (["--asi", " =v"], "--asi ' =v' is not KEY=VALUE"),
    (["--asi", "k=a\0b"], "--asi contains a NUL character"),
    (["--asi", "k=" + "x" * 65537], "--asi takes 65537 bytes in the ledger; at most 65536 bytes "
                                    "are accepted"),
    (["--asi-json", "[1]"], "--asi-json must be a JSON object"),
    (["--asi-json", '{"a": NaN}'], "--asi-json is not valid JSON with finite numbers"),
    (["--asi-json", '{"a": 1e999}'], "--asi-json is not valid JSON with finite numbers"),
    (["--asi-json", '{"a": '], "--asi-json is not valid JSON with finite numbers"),
    (["--asi-json", '{"a": "' + "x" * 200000 + '"}', "--asi", "b=" + "x" * 63000],
     "--asi/--asi-json come to 263015 bytes of JSON; at most 262144 bytes are accepted"),
]


@pytest.mark.parametrize("command", ["run", "discard"])
@pytest.mark.parametrize("args, said", BAD_ANNOTATIONS)
def test_bad_text_is_refused_before_measuring(experiment: Path, ar: Tool, command: str,
                                             args: list[str], said: str) -> None:
    """A description or annotation that cannot be stored is refused with exit 2 and one line
    naming the option and the limit, before anything is measured, reverted or recorded."""
    top = experiment
    ledger_before = (top / ".auto" / "log.jsonl").read_bytes()
    status = git(top, "status", "--porcelain")
    extra = [] if "-d" in args else ["-d", "x"]
    res = ar(top, command, *extra, *args, expect=2)
    assert (res.out, res.err) == ("", f"git autoresearch: {said}\n")
    assert (top / ".auto" / "log.jsonl").read_bytes() == ledger_before
    assert git(top, "status", "--porcelain") == status
    assert (top / "value.txt").read_text() == "50\n"
    assert "score: 50" not in (top / ".auto" / "run.log").read_text()


def test_asi_pairs_win_over_asi_json(experiment: Path, ar: Tool) -> None:
    """--asi-json gives the object, each --asi pair is added to it (a key of both: the
    pair's), and the record keeps it as given."""
    record = ar(experiment, "discard", "-d", "x", "--asi-json", '{"h": "json", "n": 1.5, '
                '"deep": {"k": [1, "two"]}}', "--asi", "h=pair", "--asi", "why=a = b",
                "--json").json()
    assert record["asi"] == {"h": "pair", "n": 1.5, "deep": {"k": [1, "two"]}, "why": "a = b"}
    assert runs(experiment)[-1]["asi"] == record["asi"]


def test_reserved_metric_name(repo: Path, ar: Tool) -> None:
    res = ar(repo, *start_args("--metric-name", "status"), expect=2)
    assert "'status' is taken" in res.err


def test_make_tree_writes_nested_folders_as_git_would(repo: Path) -> None:
    from git_autoresearch.git import Repo
    from git_autoresearch.git.objects import make_tree

    r = Repo.discover(repo)
    blob = git(repo, "hash-object", "-w", "--stdin", input=b"data\n")
    entries = [("100644", blob, "config.toml"), ("100755", blob, "hooks/after.d/notify.py"),
               ("100644", blob, "hooks/after.d/z/deep.txt"), ("100755", blob, "hooks/after.sh"),
               ("100644", blob, "log/00000.jsonl"), ("100644", blob, "log/00001.jsonl")]
    index = repo.parent / "scratch-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    info = "".join(f"{mode} {oid}\t{path}\n" for mode, oid, path in entries).encode()
    subprocess.run(["git", "update-index", "--index-info"], cwd=repo, env=env, input=info,
                   check=True)
    expected = subprocess.run(["git", "write-tree"], cwd=repo, env=env, check=True,
                              capture_output=True, text=True).stdout.strip()
    assert make_tree(r, reversed(entries)) == expected


def test_doctor_after_the_session_was_merged(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "50\n")
    ar(repo, "run", "-d", "better")
    git(repo, "switch", "-q", "main")
    assert "not on the session branch" in ar(repo, "doctor", expect=3).out
    git(repo, "merge", "-q", "--no-edit", "autoresearch/s1")
    assert ar(repo, "doctor").code == 0
    assert ar(repo, "status", "--json").json()["warnings"] == []
    git(repo, "checkout", "-q", "--detach", "autoresearch/s1")
    assert "detached HEAD" in ar(repo, "doctor", expect=3).out
    git(repo, "switch", "-q", "main")
    git(repo, "branch", "-q", "-d", "autoresearch/s1")
    assert ar(repo, "doctor").code == 0, "merged and deleted: the session is over"
    assert ar(repo, "status", "--json").json()["warnings"] == []
    assert "session is over" in ar(repo, "run", "-d", "x", expect=3).err
    git(repo, "reset", "-q", "--hard", "HEAD~1")  # the merge undone: the keep is lost
    problems = [f["problem"] for f in ar(repo, "doctor", "--json", expect=3).json()["findings"]]
    assert len(problems) == 1 and "autoresearch/s1 does not exist" in problems[0]
    assert "nor is its last keep in HEAD" in ar(repo, "run", "-d", "x", expect=3).err


def test_a_config_edited_into_an_invalid_value(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    cfg = repo / ".auto" / "config.toml"
    original = cfg.read_bytes()
    cfg.chmod(0o644)
    cfg.write_text(cfg.read_text().replace('direction = "lower"', 'direction = "sideways"'))
    assert ar(repo, "run", "-d", "x", expect=3).err == (
        f"git autoresearch: {cfg}: direction 'sideways' is not 'lower' or 'higher'; git "
        "autoresearch resume restores it from the state ref\n")
    res = ar(repo, "status")
    assert "segment began with" in res.err and "baseline" in res.out
    assert "--new-segment" not in res.err, "a new segment cannot take an invalid file"
    assert ar(repo, "doctor", expect=3).err == (
        f"git autoresearch: {cfg}: direction 'sideways' is not 'lower' or 'higher'; read with "
        "the configuration the segment began with (git autoresearch resume restores the file "
        "from the state ref)\n")
    assert ar(repo, "log", "--json").json()["runs"][0]["run"] == 1
    actions = ar(repo, "resume", "--json").json()["actions"]
    assert len(actions) == 1 and re.fullmatch(
        r"restored \.auto/config\.toml \(it was not valid; it is now "
        r"\.auto/config\.toml\.broken\.\d+\)", actions[0]), actions
    assert cfg.read_bytes() == original
    write(repo / "value.txt", "50\n")
    assert ar(repo, "run", "-d", "after resume", "--json").json()["status"] == "keep"


def test_a_new_segment_after_a_commit_by_hand_reconciles(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "bench.sh", "#!/bin/sh\necho \"score: $(cat value.txt)\"\necho tuned\n", 0o755)
    git(repo, "commit", "-qam", "tune the benchmark by hand")
    ar(repo, "start", "--new-segment")
    assert ar(repo, "status", "--json").json()["warnings"] == []
    assert ar(repo, "doctor").code == 0


def test_a_finished_revert_of_a_staged_new_file_killed_before_its_ledger_line(
        repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "200\n")
    write(repo / "src" / "staged.py", "x = 1\n")
    git(repo, "add", "src/staged.py")
    killed = tool(repo, "discard", "-d", "killed", env={
        "GIT_AUTORESEARCH_DIE_AT": "record:before-ledger"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert ar(repo, "resume", "--json").json()["actions"] == [
        "finished the interrupted revert of run 2 (discard)"]
    assert [r["run"] for r in runs(repo)] == [1, 2]
    assert not (repo / "src" / "staged.py").exists()
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "show", "refs/autoresearch/s1/attempts/2:src/staged.py") == "x = 1"


def test_upkeep_commands_never_mirror_damaged_session_files(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    for value in ("90", "95"):
        write(repo / "value.txt", value + "\n")
        ar(repo, "run", "-d", f"value {value}")
    cfg, ledger_path = repo / ".auto" / "config.toml", repo / ".auto" / "log.jsonl"
    good_cfg, good_ledger = cfg.read_bytes(), ledger_path.read_bytes()

    def saved(name: str) -> bytes:
        return subprocess.run(["git", "show", f"refs/autoresearch/s1/state:{name}"], cwd=repo,
                              capture_output=True, check=True).stdout

    cfg.chmod(0o644)
    cfg.write_text(cfg.read_text().replace('direction = "lower"', 'direction = "sideways"'))
    assert "state ref was not updated" in ar(repo, "ideas", "add", "one").err
    assert saved("config.toml") == good_cfg
    ar(repo, "resume")
    assert cfg.read_bytes() == good_cfg
    ledger_path.unlink()
    assert "is missing (git autoresearch resume" in ar(repo, "doctor", "--fix", expect=3).out
    ledger_path.write_bytes(b"".join(good_ledger.splitlines(keepends=True)[:2]))
    assert "lost lines that refs/autoresearch/s1/state holds" in \
        ar(repo, "ideas", "add", "two").err
    assert saved("log/00000.jsonl") == good_ledger
    ar(repo, "resume")
    assert [r["run"] for r in runs(repo)] == [1, 2, 3]


@pytest.mark.parametrize("op, step", [("keep", "keep:after-commit"),
                                      ("keep", "record:after-ledger"),
                                      ("discard", "revert:after-remove"),
                                      ("discard", "record:after-ledger"),
                                      ("discard", "record:before-after-hooks"),
                                      ("keep", "record:before-after-hooks")])
def test_a_run_finished_after_a_kill_fires_its_after_hooks(experiment: Path, ar: Tool,
                                                           tmp_path: Path, op: str,
                                                           step: str) -> None:
    """The after hooks (a tag, a journal line) see every recorded run once, also one that a
    kill interrupted and resume (or the next command) finished."""
    top = experiment
    fired = tmp_path / "fired.jsonl"
    write(top / ".auto" / "hooks" / "after.sh", f"#!/bin/sh\ncat >> {fired}\necho >> {fired}\n"
          "echo 'journal updated'\n", 0o755)
    extra = ["--metric", "50"] if op == "keep" else []
    killed = tool(top, op, "-d", "killed", *extra, env={"GIT_AUTORESEARCH_DIE_AT": step})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not fired.exists()
    res = ar(top, "resume", "--json").json()
    assert res["actions"] == [
        "finished the interrupted keep of run 2" if step == "keep:after-commit" else
        "finished the interrupted revert of run 2 (discard)" if step == "revert:after-remove"
        else "run 2 was already recorded; its after hooks had not fired (they fire now)"]
    payloads = [json.loads(line) for line in fired.read_text().splitlines() if line.strip()]
    assert [(p["event"], p["run_entry"]["run"], p["run_entry"]["status"]) for p in payloads] \
        == [("after", 2, "keep" if op == "keep" else "discard")]
    assert res["steer"] == "journal updated"
    ar(top, "status")
    ar(top, "resume")
    assert len(fired.read_text().splitlines()) == 2  # once: the payload line and the blank line


def test_a_resume_killed_before_the_after_hooks_leaves_them_to_the_next(
        experiment: Path, ar: Tool, tmp_path: Path) -> None:
    """Recovery is itself journaled: a resume killed after it wrote the ledger line of the
    run it finished, before that run's after hooks fired, leaves the intent record, and the
    next resume fires them, once."""
    top = experiment
    fired = tmp_path / "fired.jsonl"
    write(top / ".auto" / "hooks" / "after.sh", f"#!/bin/sh\ncat >> {fired}\necho >> {fired}\n",
          0o755)
    killed = tool(top, "keep", "-d", "killed", "--metric", "50",
                  env={"GIT_AUTORESEARCH_DIE_AT": "keep:after-commit"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    again = tool(top, "resume", env={"GIT_AUTORESEARCH_DIE_AT": "record:before-after-hooks"})
    assert again.returncode == -signal.SIGKILL, again.stderr
    assert [r["run"] for r in runs(top)] == [1, 2] and not fired.exists()
    assert ar(top, "resume", "--json").json()["actions"] == [
        "run 2 was already recorded; its after hooks had not fired (they fire now)"]
    payloads = [json.loads(line) for line in fired.read_text().splitlines() if line.strip()]
    assert [(p["run_entry"]["run"], p["run_entry"]["status"]) for p in payloads] == [
        (2, "keep")]


def test_the_next_command_fires_the_after_hooks_of_the_run_it_finished(experiment: Path, ar: Tool,
                                                                        tmp_path: Path) -> None:
    top = experiment
    fired = tmp_path / "fired.jsonl"
    write(top / ".auto" / "hooks" / "after.sh", f"#!/bin/sh\ncat >> {fired}\necho >> {fired}\n",
          0o755)
    killed = tool(top, "discard", "-d", "killed",
                  env={"GIT_AUTORESEARCH_DIE_AT": "revert:after-attempt"})
    assert killed.returncode == -signal.SIGKILL
    record = ar(top, "discard", "-d", "nothing left", "--json").json()
    assert record["run"] == 3
    runs_seen = [json.loads(line)["run_entry"]["run"]
                 for line in fired.read_text().splitlines() if line.strip()]
    assert runs_seen == [2, 3]


def test_an_intent_record_missing_what_its_operation_always_wrote_is_set_aside(
        experiment: Path, ar: Tool) -> None:
    """A keep intent without ``to_stage`` (no version wrote one) is never finished as a keep:
    resume sets it aside, records nothing, and says so; the operation's name is kept for the
    message."""
    killed = tool(experiment, "keep", "-d", "killed", "--metric", "50",
                  env={"GIT_AUTORESEARCH_DIE_AT": "keep:before-commit"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    path = experiment / ".git" / "autoresearch" / "intent.json"
    written = json.loads(path.read_text())
    del written["to_stage"]
    path.write_text(json.dumps(written))
    assert ar(experiment, "status", "--json").json()["warnings"] == [
        "an interrupted command left an intent record that cannot be read (a keep of run 2); "
        "the next recording command (or resume) sets it aside"]
    res = ar(experiment, "resume", "--json").json()
    assert res["actions"] == ["set aside an unreadable intent record"]
    assert [r["run"] for r in runs(experiment)] == [1]
    assert list((experiment / ".git" / "autoresearch").glob("intent.abandoned.*.json"))


def test_the_intent_record_keeps_the_key_order_of_earlier_versions() -> None:
    from git_autoresearch.record.intents import Intent

    aside = Intent("set-aside", 3, id="t", head="h", ref="r", created=["a"], tracked=["b"])
    assert list(aside.to_json()) == ["op", "run", "id", "head", "ref", "created", "tracked",
                                     "staged_preexisting"]
    record = records.run_record(3, "abc1234", 1, {}, "keep", "d", 0, 0)
    keep = Intent("keep", 3, id="t", head="h", ref="r", record=record)
    assert list(keep.to_json()) == ["op", "run", "id", "head", "ref", "record",
                                    "untracked_after", "staged_preexisting", "to_stage",
                                    "had_index", "created", "tracked"]
    assert Intent.from_json(keep.to_json()) == keep


def test_an_index_backup_left_without_a_keep_to_roll_back_is_removed(experiment: Path,
                                                                     ar: Tool) -> None:
    """The index a keep saved is needed only to roll that keep back: with no operation
    interrupted, or a revert, the next recording command removes a copy left behind."""
    top = experiment
    backup = top / ".git" / "autoresearch" / "index-before-keep"
    backup.write_bytes(b"left behind")
    ar(top, "discard", "-d", "first")
    assert not backup.exists()
    write(top / "value.txt", "40\n")
    killed = tool(top, "discard", "-d", "killed",
                  env={"GIT_AUTORESEARCH_DIE_AT": "revert:after-attempt"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    backup.write_bytes(b"left behind")
    assert ar(top, "resume", "--json").json()["actions"] == [
        "finished the interrupted revert of run 3 (discard)"]
    assert not backup.exists()


def test_a_revert_finished_after_an_edit_leaves_the_work_tree_as_it_is(experiment: Path,
                                                                      ar: Tool) -> None:
    """A path edited after the kill (neither the attempt's content nor HEAD's) is the user's
    now: resume records the run, names the path, and restores nothing."""
    top = experiment
    killed = tool(top, "discard", "-d", "killed",
                  env={"GIT_AUTORESEARCH_DIE_AT": "revert:after-attempt"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    write(top / "value.txt", "45\n")
    assert ar(top, "resume", "--json").json()["actions"] == [
        "finished the interrupted revert of run 2 (discard); the work tree was left as it is, "
        "since value.txt changed after the interruption"]
    assert (top / "value.txt").read_text() == "45\n"
    assert (top / "src" / "new.py").read_text() == "x = 1\n"
    assert [r["run"] for r in runs(top)] == [1, 2]
    assert git(top, "show", "refs/autoresearch/s1/attempts/2:value.txt") == "50"


def test_a_keep_killed_while_staging_into_no_index_is_rolled_back(repo: Path,
                                                                   ar: Tool) -> None:
    """The repository had no index file when the keep began (deleted by hand): with no copy to
    put back, the rollback unstages what the keep staged, and the experiment stays."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    (repo / ".git" / "index").unlink()
    killed = tool(repo, "keep", "-d", "killed", "--metric", "90",
                  env={"GIT_AUTORESEARCH_DIE_AT": "keep:staging"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    done = ar(repo, "resume", "--json").json()
    assert done["actions"] == ["rolled back the interrupted keep of run 2: nothing was "
                               "committed, and the experiment is still in the work tree"]
    assert git(repo, "diff", "--cached", "--name-only", "--", "value.txt") == "", \
        "unstaged: the index holds HEAD's value.txt"
    assert (repo / "value.txt").read_text() == "90\n"
    assert [r["run"] for r in runs(repo)] == [1]


def test_an_interrupted_keep_waits_for_gits_lock_file(repo: Path, ar: Tool) -> None:
    """git's index.lock left behind: the interrupted keep is not finished under it (resume
    refuses, naming it, and changes nothing); once it is gone, resume finishes the keep."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    killed = tool(repo, "keep", "-d", "killed", "--metric", "90",
                  env={"GIT_AUTORESEARCH_DIE_AT": "keep:after-commit"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    lock = repo / ".git" / "index.lock"
    lock.write_text("")
    refused = ar(repo, "resume", expect=3)
    assert refused.err.strip() == (
        f"git autoresearch: git's lock file {lock} exists, so the interrupted keep of run 2 "
        "cannot be finished: another git process is running here, or one was killed and left "
        f"it; once no git process is running, remove it (rm {lock}); git autoresearch resume "
        "then finishes the run")
    assert [r["run"] for r in runs(repo)] == [1]
    lock.unlink()
    assert ar(repo, "resume", "--json").json()["actions"] == [
        "finished the interrupted keep of run 2"]
    assert [r["run"] for r in runs(repo)] == [1, 2]
