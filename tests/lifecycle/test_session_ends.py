"""How a session ends and the next one begins: a session finished by a squash merge or by
cherry-picks, a second session with the same goal on the same day, and ``doctor --fix``
adopting only the keeps this tool made."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import Tool, git, runs, start_args, write

GOAL = ["--goal", "lower the value", "--command", "sh bench.sh", "--metric-name", "score",
        "--metric-pattern", r"score: (\S+)", "--direction", "lower", "--decision", "strict"]


def _first_session(repo: Path, ar: Tool) -> str:
    """A session with a default id: a keep (run 2), a discard (run 3), another keep (run 4);
    merged into main with a merge commit, its branch deleted, ``.auto/`` moved aside (the
    README's recipe for starting another session). Returns its id."""
    sid = str(ar(repo, "start", *GOAL, "--json").json()["session_id"])
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "ninety")
    write(repo / "value.txt", "95\n")
    ar(repo, "run", "-d", "worse")
    write(repo / "value.txt", "80\n")
    ar(repo, "run", "-d", "eighty")
    git(repo, "switch", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge the session", f"autoresearch/{sid}")
    git(repo, "branch", "-q", "-D", f"autoresearch/{sid}")
    shutil.move(repo / ".auto", repo.parent / f".auto-{sid}")
    return sid


def test_a_second_session_with_the_same_goal_gets_a_fresh_id(repo: Path, ar: Tool) -> None:
    """The default id of a second session with the same goal on the same day
    was the first one's; its runs were numbered past the old attempt refs and the old
    session's state ref was overwritten."""
    sid = _first_session(repo, ar)
    old_state = git(repo, "rev-parse", f"refs/autoresearch/{sid}/state")
    data = ar(repo, "start", *GOAL, "--force", "--json").json()
    assert data["session_id"] == f"{sid}-2"
    assert git(repo, "rev-parse", f"refs/autoresearch/{sid}/state") == old_state
    write(repo / "value.txt", "70\n")
    assert ar(repo, "run", "-d", "seventy", "--json").json()["run"] == 2
    assert [r["run"] for r in runs(repo)] == [1, 2]
    assert ar(repo, "doctor", "--fix", "--json").json()["findings"] == []
    assert [r["run"] for r in runs(repo)] == [1, 2]


def test_an_explicit_id_with_refs_is_refused(repo: Path, ar: Tool) -> None:
    """``--session-id`` of a session whose refs exist is refused (exit 3),
    naming it; nothing is written."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "ninety")
    git(repo, "switch", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge", "autoresearch/s1")
    git(repo, "branch", "-q", "-D", "autoresearch/s1")
    shutil.move(repo / ".auto", repo.parent / ".auto-s1")
    res = ar(repo, *start_args("--force"), expect=3)
    assert res.err.strip().splitlines()[-1] == (
        "git autoresearch: session s1 already exists: refs/autoresearch/s1/ holds its runs "
        "(its state ref: git autoresearch sessions lists it); pick another --session-id, or "
        "leave it out for a fresh one")
    assert not (repo / ".auto").exists()
    assert git(repo, "branch", "--list", "autoresearch/s1") == ""


def test_doctor_never_imports_another_sessions_attempts(repo: Path, ar: Tool) -> None:
    """Attempt refs left under the same id by an earlier session (one started
    before ids were never reused) are not this session's runs: doctor names them and
    ``--fix`` does not bring them into the ledger."""
    ar(repo, *start_args())
    write(repo / "value.txt", "120\n")
    ar(repo, "run", "-d", "worse")          # run 2: discard, attempt ref
    old_attempt = git(repo, "rev-parse", "refs/autoresearch/s1/attempts/2")
    git(repo, "switch", "-q", "main")
    git(repo, "branch", "-q", "-D", "autoresearch/s1")
    shutil.rmtree(repo / ".auto")
    git(repo, "update-ref", "-d", "refs/autoresearch/s1/state")
    git(repo, "commit", "-q", "--allow-empty", "-m", "later work")
    # The refs of the old attempt stay; a session of the same id starts after it (as older
    # versions did), then its own runs are recorded.
    git(repo, "update-ref", "-d", "refs/autoresearch/s1/attempts/2")
    ar(repo, *start_args("--force"))
    git(repo, "update-ref", "refs/autoresearch/s1/attempts/7", old_attempt)
    findings = ar(repo, "doctor", "--fix", "--json", expect=3).json()["findings"]
    assert [f["problem"] for f in findings] == [
        "attempt ref refs/autoresearch/s1/attempts/7 is not of this session (its commit is "
        "not after the session's base commit): not imported"]
    assert [r["run"] for r in runs(repo)] == [1]


def _commit_by_hand(repo: Path, run: int, metric: int) -> str:
    """A commit made around the loop (an agent's), with our three trailers and a forged
    metric; returns its short id."""
    write(repo / "value.txt", "1\n")
    git(repo, "add", "value.txt")
    git(repo, "commit", "-q", "-m", f"by hand\n\nResult: {{\"status\":\"keep\",\"score\":"
        f"{metric}}}\nAutoresearch-Run: {run}\nAutoresearch-Session: s1\n")
    return git(repo, "rev-parse", "--short=7", "HEAD")


def test_doctor_does_not_adopt_a_commit_made_by_hand(repo: Path, ar: Tool) -> None:
    """A commit carrying our three trailers that no keep of this tool made
    (no intent record, no state ref knows it) is reported, not rebuilt into a run."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "ninety")        # run 2, kept
    forged = _commit_by_hand(repo, 3, 1)
    res = ar(repo, "doctor", "--fix", "--json", expect=3).json()
    assert {"problem": f"commit {forged} records run 3 as kept, but the ledger has no run 3, "
            "and no keep of this tool made it (no intent record or state ref knows it): it is "
            "not adopted", "fix": None, "fixed": False} in res["findings"]
    assert [r["run"] for r in runs(repo)] == [1, 2]


def test_doctor_rebuilds_a_keep_its_intent_record_knows(repo: Path, ar: Tool) -> None:
    """A keep killed after its commit, HEAD moved by hand since: doctor sets
    the intent aside, and its commit's trailers match the intent, so the run is rebuilt."""
    import os
    import subprocess
    import sys

    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    killed = subprocess.run([sys.executable, "-m", "git_autoresearch", "keep", "-d", "k",
                             "--metric", "90"], cwd=repo, capture_output=True,
                            env={**os.environ, "GIT_AUTORESEARCH_DIE_AT": "keep:after-commit"})
    assert killed.returncode < 0
    git(repo, "commit", "-q", "--allow-empty", "-m", "by hand on top")
    ar(repo, "doctor", "--fix", "--json", expect=None)
    records = {r["run"]: r for r in runs(repo)}
    assert records[2]["metric"] == 90 and records[2]["rebuilt_from"] == "trailer"
    assert records[2]["commit"] == git(repo, "rev-parse", "--short=7", "HEAD~1")


def test_doctor_does_not_take_a_hand_made_commit_for_a_rewritten_keep(repo: Path, ar: Tool
                                                                       ) -> None:
    """Once a keep's commit left the branch, a commit made by
    hand with its run's trailers and another metric is not taken for the keep rewritten:
    the ledger's commit field stays."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "ninety")        # run 2, kept
    kept = git(repo, "rev-parse", "--short=7", "HEAD")
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    forged = _commit_by_hand(repo, 2, 1)
    findings = ar(repo, "doctor", "--fix", "--json", expect=3).json()["findings"]
    assert [f["problem"] for f in findings if f["fix"] == "update the ledger's commit fields"] \
        == []
    assert "run 2: the trailer says 1, the ledger 90" in [f["problem"] for f in findings]
    assert runs(repo)[1]["commit"] == kept != forged


def _two_keeps(repo: Path, ar: Tool) -> list[str]:
    """Session s1 with two kept runs (2 and 3), then main checked out; the keeps' commits."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "ninety")
    write(repo / "src" / "lib.py", "def f():\n    return 2\n")
    write(repo / "value.txt", "80\n")
    ar(repo, "run", "-d", "eighty")
    git(repo, "switch", "-q", "main")
    return git(repo, "rev-list", "--reverse", "main..autoresearch/s1").split()


def _said_finished(repo: Path, ar: Tool, how: str) -> None:
    """status and doctor say the session is finished, once, and nothing else."""
    finished = f"session s1 is finished: its kept changes are in main by patch id ({how})"
    found = ar(repo, "status", "--json").json()
    assert found["warnings"] == [] and found["finished"] == finished
    assert ar(repo, "status").out.count("is finished") == 1
    doctor = ar(repo, "doctor", "--json").json()
    assert doctor["findings"] == [] and doctor["finished"] == finished
    assert ar(repo, "doctor").out.splitlines() == [finished, "no problems found"]


def test_a_session_finished_by_a_squash_merge(repo: Path, ar: Tool) -> None:
    """After ``git merge --squash`` of the session branch, status and doctor
    said "not on the session branch" forever; the squash commit holds the keeps' changes, by
    patch id: the session is finished, said once. With its branch deleted too."""
    _two_keeps(repo, ar)
    git(repo, "merge", "-q", "--squash", "autoresearch/s1")
    git(repo, "commit", "-q", "-m", "the session, squashed")
    squash = git(repo, "rev-parse", "--short=7", "HEAD")
    _said_finished(repo, ar, f"a squash merge: commit {squash}")
    # sessions calls it merged (and gc may collect its refs), as after a merge commit.
    assert [s["state"] for s in ar(repo, "sessions", "--json").json()["sessions"]] == ["merged"]
    # With its branch still there, a recording command and resume say so too, change nothing.
    assert "the session is over" in ar(repo, "run", "-d", "x", expect=3).err
    assert "the session is over" in ar(repo, "resume", expect=3).err
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "main"
    git(repo, "branch", "-q", "-D", "autoresearch/s1")
    _said_finished(repo, ar, f"a squash merge: commit {squash}")
    assert "the session is over" in ar(repo, "run", "-d", "x", expect=3).err
    assert "the session is over" in ar(repo, "resume", expect=3).err


def test_a_session_finished_by_cherry_picks(repo: Path, ar: Tool) -> None:
    """Each keep cherry-picked onto main (their patch ids there): finished."""
    keeps = _two_keeps(repo, ar)
    git(repo, "commit", "-q", "--allow-empty", "-m", "other work on main")
    git(repo, "cherry-pick", *keeps)
    picked = git(repo, "rev-list", "--reverse", "--abbrev-commit", "HEAD~2..HEAD").split()
    _said_finished(repo, ar, f"cherry-picks: commits {', '.join(picked)}")
    assert [s["state"] for s in ar(repo, "sessions", "--json").json()["sessions"]] == ["merged"]
    git(repo, "branch", "-q", "-D", "autoresearch/s1")
    _said_finished(repo, ar, f"cherry-picks: commits {', '.join(picked)}")


def test_a_half_picked_session_is_not_finished(repo: Path, ar: Tool) -> None:
    """One keep of two cherry-picked is not a finished session."""
    keeps = _two_keeps(repo, ar)
    git(repo, "cherry-pick", keeps[0])
    found = ar(repo, "status", "--json").json()
    assert found["warnings"] == ["the work tree is on branch main, not on the session branch "
                                 "autoresearch/s1 (git autoresearch resume checks it out)"]
    assert found.get("finished") is None
    # With uncommitted changes, resume refuses to check it out: the hint says what first.
    git(repo, "switch", "-q", "--detach")
    write(repo / "README.md", "edited\n")
    said = ("the work tree is on a detached HEAD, not on the session branch autoresearch/s1 "
            "(uncommitted changes in README.md: carry them over with git switch --merge "
            "autoresearch/s1; or git autoresearch resume checks it out once they are gone)")
    assert ar(repo, "status", "--json").json()["warnings"] == [said]
    assert "cannot check out autoresearch/s1: uncommitted changes in README.md" in \
        ar(repo, "resume", expect=3).err


def test_show_keeps_the_recorded_keep_over_a_hand_made_commit(repo: Path, ar: Tool) -> None:
    """A commit made by hand that repeats a kept run's trailers
    is not taken for that run's commit by show, the dashboard's run table (run_commits),
    finalize or audit: the keep the ledger records is."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "ninety")        # run 2, kept
    kept = git(repo, "rev-parse", "HEAD")
    _commit_by_hand(repo, 2, 1)
    shown = ar(repo, "show", "2", "--json").json()
    assert (shown["diff_commit"], shown["diff_source"]) == (kept, "trailer")
    from git_autoresearch.review.audit import targets
    from git_autoresearch.review.finalize import keeps
    from git_autoresearch.review.run_commits import run_commits
    from git_autoresearch.session.session import Session

    session = Session.open(repo)
    assert run_commits(session)[2].commit == kept
    assert [k.commit for k in keeps(session)] == [kept], "finalize replays the keep"
    assert [t.commit for t in targets(session, [2])] == [kept], "audit measures the keep"
