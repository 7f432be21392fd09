"""sessions, gc, push and pull on real repositories; push and pull against a bare repository
as the remote.

DVC shares experiments as refs (``dvc exp push``/``exp pull`` send ``refs/exps/...``;
iterative/dvc, ``dvc/repo/experiments/push.py`` refuses an experiment that diverged on the
remote unless forced); git-perf pushes its notes ref with ``--porcelain
--force-with-lease=<ref>:<expected>`` and takes a ``!`` line as a refusal (kaihowl/git-perf,
``git_perf/src/git/git_interop.rs``, ``git_push_notes_ref``). Here every ref is pushed with
``git push --atomic`` and ``--force-with-lease=<ref>:<value read from the remote>``
(git-push(1)), so a stale push is refused and the remote is left as it was."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from conftest import Tool, git, ledger_lines, runs, start_args, write

from git_autoresearch.git import Repo
from git_autoresearch.workers import push_pull
from git_autoresearch.workers.sessions import gc

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def session_of_three_runs(repo: Path, ar: Tool) -> None:
    """s1: the baseline (100), a keep (90) and a discard (110, attempt ref of run 3)."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "lower it to 90")
    write(repo / "value.txt", "110\n")
    ar(repo, "run", "-d", "raise it to 110")


def refs_of(top: Path, prefix: str = "") -> dict[str, str]:
    """Every ref of the repository at ``top`` (below ``prefix``), by name: its object id."""
    out = git(top, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
    return dict(line.split(" ") for line in out.splitlines())


def remote_of(top: Path, bare: Path) -> dict[str, str]:
    """The session refs the bare repository holds (``git ls-remote``)."""
    out = git(top, "ls-remote", str(bare))
    found = {}
    for line in out.splitlines():
        oid, ref = line.split("\t")
        if "autoresearch" in ref:
            found[ref] = oid
    return found


def with_remote(repo: Path, tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "origin", "main")
    return bare


# --- sessions ---------------------------------------------------------------------------------


def test_sessions_lists_goal_metric_runs_best_gain_state_and_activity(repo: Path,
                                                                      ar: Tool) -> None:
    """One entry per session; runs count every record, best and gain are the current
    segment's (90 against the baseline 100: -10%)."""
    session_of_three_runs(repo, ar)
    [entry] = ar(repo, "sessions", "--json").json()["sessions"]
    assert ISO.match(entry.pop("last_activity"))
    assert entry == {"id": "s1", "goal": "lower the value", "metric": "score", "unit": "",
                     "direction": "lower", "runs": 3, "kept": 2, "best": 90,
                     "gain_pct": -10.0, "state": "running", "source": ".auto",
                     "branch": "autoresearch/s1", "attempt_refs": 1, "scope_refs": 0}
    line = ar(repo, "sessions").out
    assert line.startswith("s1  running  3 runs, 2 kept  score best 90 (-10.00%)  ")
    assert line.rstrip().endswith("lower the value")


def test_sessions_states_stopped_merged_finalized(repo: Path, ar: Tool) -> None:
    """stopped: a STOP recorded after the last run; merged: the tip is in main; finalized:
    the ledger's latest finalize made autoresearch/<id>-final (no session of its own), and no
    run came after it."""
    session_of_three_runs(repo, ar)
    ar(repo, "stop")
    write(repo / "value.txt", "80\n")
    assert ar(repo, "run", "-d", "stopped before it runs", expect=4).err == (
        "git autoresearch: STOP sentinel found: the loop stops here (the sentinel was removed); "
        "the work tree has unrecorded changes (value.txt): record them with git autoresearch "
        "discard or keep\n")
    assert [s["state"] for s in ar(repo, "sessions", "--json").json()["sessions"]] == ["stopped"]
    git(repo, "checkout", "-q", "value.txt")
    git(repo, "switch", "-q", "main")
    git(repo, "merge", "-q", "--ff-only", "autoresearch/s1")
    assert [s["state"] for s in ar(repo, "sessions", "--json").json()["sessions"]] == ["merged"]
    git(repo, "branch", "autoresearch/s1-final", "autoresearch/s1")  # by hand: no finalize
    assert [s["state"] for s in ar(repo, "sessions", "--json").json()["sessions"]] == ["merged"]
    git(repo, "branch", "-D", "-q", "autoresearch/s1-final")
    ar(repo, "finalize", "--samples", "0")
    listed = ar(repo, "sessions", "--json").json()["sessions"]
    assert [(s["id"], s["state"]) for s in listed] == [("s1", "finalized")]


def test_sessions_reads_a_session_from_its_state_ref_when_auto_is_elsewhere(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    """A session whose .auto/ is in another worktree is read from its state ref; a branch
    whose session is checked out in that worktree is running."""
    other = tmp_path / "other"
    git(repo, "worktree", "add", "-q", "-b", "side", str(other))
    ar(other, *start_args("--session-id", "s2"))
    write(other / "value.txt", "95\n")
    ar(other, "run", "-d", "lower it to 95")
    listed = {s["id"]: s for s in ar(repo, "sessions", "--json").json()["sessions"]}
    assert listed["s2"]["source"] == "state ref"
    assert (listed["s2"]["runs"], listed["s2"]["best"], listed["s2"]["state"]) == \
        (2, 95, "running")
    assert listed["s2"]["gain_pct"] == -5.0


def test_sessions_says_so_when_there_is_none(repo: Path, ar: Tool) -> None:
    assert ar(repo, "sessions").out == "no sessions in this repository\n"
    assert ar(repo, "sessions", "--json").json()["sessions"] == []


# --- gc ---------------------------------------------------------------------------------------


def test_gc_refuses_a_running_session_and_leaves_its_refs(repo: Path, ar: Tool) -> None:
    session_of_three_runs(repo, ar)
    before = refs_of(repo)
    assert ar(repo, "gc").out == ("s1: left alone: running (not merged, not finalized)\n"
                                  "nothing to delete\n")
    res = ar(repo, "gc", "s1", expect=3)
    assert res.err.strip() == ("git autoresearch: session s1 is running (not merged, not "
                               "finalized): gc leaves it alone (--force deletes its attempt "
                               "and scope refs anyway)")
    assert ar(repo, "gc", "--json").json() == {
        "schema": "git-autoresearch:gc/1", "dry_run": False, "deleted": {},
        "skipped": {"s1": "running (not merged, not finalized)"}, "warnings": [], "was": {}}
    assert refs_of(repo) == before


def test_gc_dry_run_prints_and_deletes_nothing(repo: Path, ar: Tool) -> None:
    session_of_three_runs(repo, ar)
    before = refs_of(repo)
    res = ar(repo, "gc", "s1", "--force", "--dry-run")
    at = git(repo, "rev-parse", "--short", "refs/autoresearch/s1/attempts/3")
    assert res.out == ("s1: would delete 1 ref(s)\n"
                       f"  refs/autoresearch/s1/attempts/3 (at {at})\n")
    assert refs_of(repo) == before


def test_gc_of_a_merged_session_deletes_attempts_and_keeps_the_ledger(repo: Path,
                                                                      ar: Tool) -> None:
    """Merged into main: its attempt ref goes; the branch and state ref stay, so log, status
    and sessions still read all three runs."""
    session_of_three_runs(repo, ar)
    git(repo, "switch", "-q", "main")
    git(repo, "merge", "-q", "--ff-only", "autoresearch/s1")
    kept = {r: o for r, o in refs_of(repo).items() if "/attempts/" not in r}
    attempt = git(repo, "rev-parse", "refs/autoresearch/s1/attempts/3")
    assert ar(repo, "gc", "--json").json() == {
        "schema": "git-autoresearch:gc/1", "dry_run": False,
        "deleted": {"s1": ["refs/autoresearch/s1/attempts/3"]},
        "skipped": {}, "warnings": [], "was": {"refs/autoresearch/s1/attempts/3": attempt}}
    # the commit stays until git prunes it: a file can still be brought back from it
    assert git(repo, "cat-file", "-t", attempt) == "commit"
    assert refs_of(repo) == kept
    assert [r["run"] for r in ar(repo, "log", "--json").json()["runs"]] == [1, 2, 3]
    [entry] = ar(repo, "sessions", "--json").json()["sessions"]
    assert (entry["runs"], entry["state"], entry["attempt_refs"]) == (3, "merged", 0)
    assert ar(repo, "gc").out == "nothing to delete\n"
    # The deletion is a ledger event, mirrored: doctor finds nothing missing, show says why
    # there is no diff, and the state ref holds the event too.
    [event] = [line for line in ledger_lines(repo) if line.get("type") == "gc"]
    assert event["deleted"] == ["refs/autoresearch/s1/attempts/3"]
    assert '"type":"gc"' in git(repo, "show", "refs/autoresearch/s1/state:log/00000.jsonl")
    assert ar(repo, "doctor", "--json").json()["findings"] == []
    assert ar(repo, "show", "3").out.rstrip().endswith(
        "(its attempt ref refs/autoresearch/s1/attempts/3 was deleted by git autoresearch gc)")
    assert ar(repo, "show", "3", "--json").json()["collected"] is True


def test_gc_of_a_session_known_by_its_state_ref_records_the_deletion_there(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    """Another worktree's session, finalized: its refs go, and the gc event is written in
    that worktree's ledger and mirrored on its state ref; this work tree gets no .auto/."""
    other = tmp_path / "other"
    git(repo, "worktree", "add", "-q", "-b", "side", str(other))
    ar(other, *start_args("--session-id", "s2"))
    write(other / "value.txt", "120\n")
    ar(other, "run", "-d", "raise it")
    write(other / "value.txt", "90\n")
    ar(other, "run", "-d", "lower it")
    ar(other, "finalize", "--samples", "0")
    state_before = git(repo, "rev-parse", "refs/autoresearch/s2/state")
    done = ar(repo, "gc", "s2", "--json").json()
    assert done["deleted"] == {"s2": ["refs/autoresearch/s2/attempts/2"]}
    assert done["warnings"] == []
    assert git(repo, "rev-parse", "refs/autoresearch/s2/state^") == state_before
    assert '"deleted":["refs/autoresearch/s2/attempts/2"]' in git(
        repo, "show", "refs/autoresearch/s2/state:log/00000.jsonl")
    assert not (repo / ".auto").exists()
    assert ar(other, "doctor", "--json").json()["findings"] == []


def test_gc_older_than_takes_a_stopped_session_only_once_it_is_that_old(
        repo: Path, ar: Tool) -> None:
    session_of_three_runs(repo, ar)
    ar(repo, "stop")
    assert ar(repo, "run", "-d", "stops", expect=4).err == (
        "git autoresearch: STOP sentinel found: the loop stops here (the sentinel was removed)\n")
    top = Repo.discover(repo)
    [entry] = ar(repo, "sessions", "--json").json()["sessions"]
    assert entry["state"] == "stopped"
    from git_autoresearch.ledger import now_ms

    soon = gc(top, older_than_days=1, now_ms=now_ms() + 3_600_000)
    assert soon.deleted == {} and soon.skipped == {
        "s1": "stopped (not merged, not finalized, active within 1 days)"}
    later = gc(top, older_than_days=1, now_ms=now_ms() + 2 * 86_400_000)
    assert later.deleted == {"s1": ["refs/autoresearch/s1/attempts/3"]}
    assert "refs/autoresearch/s1/attempts/3" not in refs_of(repo)


def test_gc_of_an_unknown_session_is_a_usage_error(repo: Path, ar: Tool) -> None:
    session_of_three_runs(repo, ar)
    assert ar(repo, "gc", "nope", expect=2).err.strip() == \
        "git autoresearch: no session 'nope' here (sessions: s1)"


# --- push and pull ----------------------------------------------------------------------------


def test_push_sends_branch_attempts_and_state_atomically(repo: Path, ar: Tool,
                                                          tmp_path: Path) -> None:
    session_of_three_runs(repo, ar)
    bare = with_remote(repo, tmp_path)
    done = ar(repo, "push", "--json").json()
    local = refs_of(repo, "refs/autoresearch") | {
        "refs/heads/autoresearch/s1": git(repo, "rev-parse", "autoresearch/s1")}
    assert sorted(m["ref"] for m in done["moved"]) == sorted(local)
    assert all(m["old"] is None for m in done["moved"])
    assert remote_of(repo, bare) == local
    assert ar(repo, "push", "origin", "--json").json()["up_to_date"] is True


def test_push_sends_notes_edited_since_the_last_run(repo: Path, ar: Tool,
                                                    tmp_path: Path) -> None:
    """ideas.md written after the last run is mirrored before the push: the clone gets it."""
    session_of_three_runs(repo, ar)
    bare = with_remote(repo, tmp_path)
    write(repo / ".auto" / "ideas.md", "- try a smaller value\n")
    ar(repo, "push")
    assert git(repo, "show", "refs/autoresearch/s1/state:ideas.md") == "- try a smaller value"
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(bare), str(clone))
    ar(clone, "pull")
    assert (clone / ".auto" / "ideas.md").read_text() == "- try a smaller value\n"
    assert ar(repo, "push", "--json").json()["up_to_date"] is True


def test_push_sends_a_hook_added_since_the_last_run_and_a_link_as_a_link(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    """A hook written, or linked, by hand after the last run is mirrored before the push: the
    clone gets the file, and the link as a link."""
    session_of_three_runs(repo, ar)
    bare = with_remote(repo, tmp_path)
    write(repo / ".auto" / "hooks" / "before.sh", "#!/bin/sh\n:\n", 0o755)
    os.symlink("before.sh", repo / ".auto" / "hooks" / "after.sh")
    ar(repo, "push")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(bare), str(clone))
    ar(clone, "pull")
    assert (clone / ".auto" / "hooks" / "before.sh").read_text() == "#!/bin/sh\n:\n"
    assert os.readlink(clone / ".auto" / "hooks" / "after.sh") == "before.sh"
    assert ar(repo, "push", "--json").json()["up_to_date"] is True


def test_a_clone_pulls_reads_and_resumes_the_session(repo: Path, ar: Tool,
                                                     tmp_path: Path) -> None:
    """The clone gets the refs and .auto/ back: log, status, show and dashboard read it,
    resume checks out the branch and the loop carries on from run 4."""
    session_of_three_runs(repo, ar)
    bare = with_remote(repo, tmp_path)
    ar(repo, "push")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(bare), str(clone))
    done = ar(clone, "pull", "--json").json()
    assert done["session"] == "s1"
    assert "restored .auto/config.toml" in done["restored"]
    assert "restored .auto/log.jsonl" in done["restored"]
    assert remote_of(clone, bare) == {m["ref"]: m["new"] for m in done["moved"]}
    assert [r["run"] for r in ar(clone, "log", "--json").json()["runs"]] == [1, 2, 3]
    assert runs(clone) == runs(repo)
    status = ar(clone, "status", "--json").json()
    assert status["segment"]["best"]["metric"] == 90
    shown = ar(clone, "show", "3", "--json").json()
    assert "+110" in shown["diff"]
    ar(clone, "dashboard")
    assert "lower it to 90" in (clone / ".auto" / "dashboard.html").read_text()
    assert git(clone, "status", "--porcelain") == ""
    ar(clone, "resume")
    assert git(clone, "symbolic-ref", "--short", "HEAD") == "autoresearch/s1"
    assert ar(clone, "doctor", "--json").json()["findings"] == []
    write(clone / "value.txt", "80\n")
    assert ar(clone, "run", "-d", "lower it to 80", "--json").json()["run"] == 4
    pushed = ar(clone, "push", "--json").json()
    assert {m["ref"] for m in pushed["moved"]} == {"refs/heads/autoresearch/s1",
                                                   "refs/autoresearch/s1/state"}


def continued_elsewhere(ar: Tool, tmp_path: Path, bare: Path) -> Path:
    """A clone of ``bare`` that pulled s1, recorded run 4 (80) and pushed it."""
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(bare), str(clone))
    ar(clone, "pull")
    ar(clone, "resume")
    write(clone / "value.txt", "80\n")
    ar(clone, "run", "-d", "lower it to 80")
    ar(clone, "push")
    return clone


def shared_and_continued_elsewhere(repo: Path, ar: Tool, tmp_path: Path) -> tuple[Path, Path]:
    """s1 pushed from ``repo``, pulled by a clone that recorded run 4 (80) and pushed it."""
    session_of_three_runs(repo, ar)
    bare = with_remote(repo, tmp_path)
    ar(repo, "push")
    return bare, continued_elsewhere(ar, tmp_path, bare)


def test_push_behind_the_remote_is_refused_naming_the_runs(repo: Path, ar: Tool,
                                                           tmp_path: Path) -> None:
    bare, _ = shared_and_continued_elsewhere(repo, ar, tmp_path)
    before = remote_of(repo, bare)
    res = ar(repo, "push", expect=3)
    assert res.err.strip() == (
        "git autoresearch: origin holds a newer state of session s1 (run 4 is on origin only) "
        "(and 1 more ref(s) differ); nothing was pushed: git autoresearch pull origin s1, "
        "then push again")
    assert remote_of(repo, bare) == before


def test_push_of_a_diverged_session_is_refused_and_the_remote_kept(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    """Both sides recorded a run 4: the push would overwrite the remote's; refused, naming
    the run that differs, the remote's refs unchanged."""
    bare, _ = shared_and_continued_elsewhere(repo, ar, tmp_path)
    before = remote_of(repo, bare)
    write(repo / "value.txt", "85\n")
    ar(repo, "run", "-d", "lower it to 85")
    res = ar(repo, "push", "origin", "s1", expect=3)
    assert "origin holds a newer state of session s1 (run 4 differs)" in res.err
    assert "nothing was pushed: runs were recorded on both sides" in res.err
    assert remote_of(repo, bare) == before
    assert ar(repo, "pull", expect=3).err.strip() == (
        "git autoresearch: the state of session s1 (run 4 differs) here diverged from "
        "origin's (and 1 more ref(s)); nothing was changed here")


def test_a_stale_lease_is_refused_by_git_and_nothing_is_pushed(
        repo: Path, ar: Tool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The remote moves between reading its refs and pushing (the read is replayed stale):
    git refuses the lease of every ref (--atomic) and the remote keeps the clone's run 4."""
    session_of_three_runs(repo, ar)
    bare = with_remote(repo, tmp_path)
    ar(repo, "push")
    stale = remote_of(repo, bare)
    continued_elsewhere(ar, tmp_path, bare)
    moved = remote_of(repo, bare)
    write(repo / "value.txt", "85\n")
    ar(repo, "run", "-d", "lower it to 85")
    monkeypatch.setattr(push_pull, "remote_refs", lambda *_: dict(stale))
    res = ar(repo, "push", expect=3)
    assert res.err.startswith("git autoresearch: origin refused the push of ")
    assert "nothing was pushed: run git autoresearch push again" in res.err
    assert remote_of(repo, bare) == moved


def test_pull_brings_runs_recorded_elsewhere_into_the_same_session(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    """Behind the remote and off the session branch: pull moves every ref forward and the
    ledger here gains run 4."""
    _, clone = shared_and_continued_elsewhere(repo, ar, tmp_path)
    write(clone / ".auto" / "ideas.md", "- from the clone\n")
    ar(clone, "push")
    git(repo, "switch", "-q", "main")
    done = ar(repo, "pull", "--json").json()
    assert {m["ref"] for m in done["moved"]} == {"refs/heads/autoresearch/s1",
                                                 "refs/autoresearch/s1/state"}
    assert done["restored"] == ["added run(s) 4 to .auto/log.jsonl", "updated .auto/ideas.md"]
    assert (repo / ".auto" / "ideas.md").read_text() == "- from the clone\n"
    assert [r["run"] for r in runs(repo)] == [1, 2, 3, 4]
    assert sorted(p.name for p in (repo / ".auto").iterdir() if "log.jsonl" in p.name) \
        == ["log.jsonl"]
    assert ar(repo, "resume", "--json").json()["next_run"] == 5


def test_pull_refuses_to_move_the_checked_out_session_branch(repo: Path, ar: Tool,
                                                             tmp_path: Path) -> None:
    shared_and_continued_elsewhere(repo, ar, tmp_path)
    before = refs_of(repo)
    res = ar(repo, "pull", expect=3)
    assert res.err.strip().startswith("git autoresearch: the session branch autoresearch/s1 is "
                                      "checked out (here or in another worktree)")
    assert refs_of(repo) == before


def test_a_fresh_clone_is_told_to_pull_the_session(repo: Path, ar: Tool,
                                                   tmp_path: Path) -> None:
    """Before the pull, resume and status in the clone point at it."""
    session_of_three_runs(repo, ar)
    bare = with_remote(repo, tmp_path)
    ar(repo, "push")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(bare), str(clone))
    assert ar(clone, "resume", expect=3).err == (
        "git autoresearch: no session to resume: no .auto/config.toml and no "
        "refs/autoresearch/*/state ref (git autoresearch pull origin brings one from a remote)\n")
    assert ar(clone, "stop", expect=3).err == (
        "git autoresearch: no session here (no .auto/config.toml): start one with `git "
        "autoresearch start`, or bring one from a remote with `git autoresearch pull origin`\n")
    ar(clone, "pull")
    assert ar(clone, "resume", "--json").json()["next_run"] == 4


def test_pull_of_a_session_the_remote_lacks_is_a_usage_error(repo: Path, ar: Tool,
                                                             tmp_path: Path) -> None:
    with_remote(repo, tmp_path)
    assert ar(repo, "pull", "origin", "s9", expect=2).err.strip() == \
        "git autoresearch: origin has no session 's9' (no autoresearch/s9, no refs below " \
        "refs/autoresearch/s9/)"
    assert ar(repo, "pull", expect=2).err.strip() == \
        "git autoresearch: name the session to pull: origin holds none"
    assert ar(repo, "pull", "nowhere", "s1", expect=3).err.startswith(
        "git autoresearch: cannot list the refs of remote 'nowhere': ")
    assert ar(repo, "push", "--", "-x", "s1", expect=2).err.strip() == \
        "git autoresearch: bad remote name '-x'"
    assert ar(repo, "push", "origin", "s1", expect=2).err.strip() == \
        "git autoresearch: no session 's1' here: no branch autoresearch/s1 and no refs below " \
        "refs/autoresearch/s1/"


def test_push_runs_the_pre_push_hook_and_says_what_a_refusing_remote_said(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    """push runs the user's pre-push hook, as git's own push does (a refusal there is named,
    nothing pushed), and a remote whose hooks refuse the refs is quoted, not mistaken for
    another clone's push."""
    session_of_three_runs(repo, ar)
    bare = with_remote(repo, tmp_path)
    ran = tmp_path / "pre-push-ran"
    hook = repo / ".git" / "hooks" / "pre-push"
    write(hook, f"#!/bin/sh\ntouch {ran}\necho 'tests must pass first' >&2\nexit 1\n", 0o755)
    res = ar(repo, "push", expect=3)
    assert ran.exists()
    assert "refused before it was sent (the pre-push hook?): tests must pass first" in res.err
    assert remote_of(repo, bare) == {}
    hook.unlink()
    write(bare / "hooks" / "pre-receive", "#!/bin/sh\necho 'no pushes on Fridays'\nexit 1\n",
          0o755)
    res = ar(repo, "push", expect=3)
    assert "origin refused the push: the remote refused " in res.err
    assert "pre-receive hook declined" in res.err and "no pushes on Fridays" in res.err
    assert "try again" not in res.err and "moved since" not in res.err
    assert remote_of(repo, bare) == {}
    (bare / "hooks" / "pre-receive").unlink()
    done = ar(repo, "push", "--json").json()
    assert done["moved"] and remote_of(repo, bare)
