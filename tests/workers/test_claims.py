"""Claims on ideas: ``ideas claim`` takes an idea with compare-and-swap on
``refs/autoresearch/<id>/claims/<key>``, so that two workers never try the same idea; a
stale claim (expired, or its process or worktree gone) is taken over; a claim lasts until its
idea is done or released (not a recorded run: an idea may take several); ``ideas`` and
``status`` say who claimed what."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import TOOL, Tool, check_document, git, start_args, write

from git_autoresearch.git import Repo
from git_autoresearch.session.ideas import read_ideas
from git_autoresearch.workers.claims import claim, idea_key, read_claims

IDEAS = ["unroll the loop", "cache the table", "use a bitset", "skip the copy"]
PREFIX = "refs/autoresearch/s1/claims/"


@pytest.fixture
def session(repo: Path, ar: Tool) -> Path:
    """A session with four open ideas."""
    ar(repo, *start_args())
    for text in IDEAS:
        ar(repo, "ideas", "add", text)
    return repo


def claim_refs(top: Path) -> dict[str, dict[str, Any]]:
    """Each claim ref's key and the JSON its commit carries."""
    out = {}
    for line in git(top, "for-each-ref", "--format=%(refname) %(objectname)",
                    PREFIX).splitlines():
        ref, oid = line.split()
        out[ref[len(PREFIX):]] = json.loads(git(top, "log", "-1", "--format=%B", oid))
    return out


def foreign_claim(top: Path, text: str, **fields: object) -> str:
    """A claim on ``text`` made by hand, as another worker's would be: its commit id."""
    data = {"worker": "w9", "pid": None, "host": socket.gethostname(), "worktree": None,
            "since": int(time.time() * 1000), "idea": 1, "text": text, **fields}
    tree = git(top, "hash-object", "-t", "tree", "-w", "--stdin", input=b"")
    oid = git(top, "commit-tree", tree, "-m", json.dumps(data))
    git(top, "update-ref", PREFIX + idea_key(text), oid, "")
    return oid


# A worker process claiming through the library: argv is the work tree and the worker.
CLAIMER = """
import sys
from git_autoresearch.workers.claims import claim
from git_autoresearch.git import Repo
from git_autoresearch.session.ideas import read_ideas
top, worker = sys.argv[1], sys.argv[2]
repo = Repo.discover(top)
taken = claim(repo, "s1", read_ideas(repo.top / ".auto" / "ideas.md"), timeout=7200,
              worker=worker)
print(taken.idea.number)
"""


def test_four_workers_claiming_at_once_get_four_ideas(session: Path) -> None:
    """Four processes, four workers, started together: each takes a different idea (the
    losers of a compare-and-swap read again and take the next), and a fifth finds nothing."""
    procs = [subprocess.Popen([sys.executable, "-c", CLAIMER, str(session), f"w{n}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for n in range(1, 5)]
    got = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, got
    assert sorted(int(out) for out, _ in got) == [1, 2, 3, 4]
    workers = {data["text"]: data["worker"] for data in claim_refs(session).values()}
    assert sorted(workers) == sorted(IDEAS) and sorted(workers.values()) == ["w1", "w2", "w3",
                                                                            "w4"]
    fifth = subprocess.run([sys.executable, "-c", CLAIMER, str(session), "w5"],
                           capture_output=True, text=True)
    assert fifth.returncode == 1
    assert "Refused: nothing left to claim: of 4 ideas, 4 claimed (idea 1 by w" in fifth.stderr


def test_two_claims_at_once_from_the_command_line_get_different_ideas(session: Path,
                                                                      ar: Tool) -> None:
    """``git autoresearch ideas claim --json`` twice at once in one work tree: two ideas, each
    printed with its claim; a worker's own claim is not taken again without its number."""
    procs = [subprocess.Popen([*TOOL, "ideas", "claim", "--json"], cwd=session,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    got = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert sorted(g["number"] for g in got) == [1, 2]
    first = min(got, key=lambda g: g["number"])
    assert {k: first[k] for k in ("number", "state", "text", "key", "replaced")} == {
        "number": 1, "state": "open", "text": "unroll the loop",
        "key": idea_key("unroll the loop"), "replaced": None}
    assert (first["claim"]["worker"], first["claim"]["host"], first["claim"]["stale"]) == \
        ("main", socket.gethostname(), None)
    assert first["claim"]["expires"] - first["claim"]["since"] == 7200 * 1000
    again = ar(session, "ideas", "claim", "1").out
    assert again == "claimed idea 1 (already yours): unroll the loop\n"


def test_an_expired_claim_is_taken_over(session: Path, ar: Tool) -> None:
    """Another worker's claim older than ``claim_timeout`` (default 2h) no longer holds: a
    claim takes it over by compare-and-swap on its old value, the new claim's commit having
    the old one as parent, and says so."""
    old = foreign_claim(session, "unroll the loop", since=int(time.time() * 1000) - 3 * 3600_000)
    listed = ar(session, "ideas", "list", "--json").json()["ideas"]
    assert listed[0]["claim"]["worker"] == "w9" and listed[0]["claim"]["stale"] == "expired"
    taken = ar(session, "ideas", "claim", "--json").json()
    assert taken["number"] == 1
    assert (taken["replaced"]["worker"], taken["replaced"]["stale"]) == ("w9", "expired")
    assert taken["claim"]["worker"] == "main"
    new = git(session, "rev-parse", PREFIX + idea_key("unroll the loop"))
    assert git(session, "rev-parse", f"{new}^") == old


def test_a_live_claim_of_another_worker_is_refused(session: Path, ar: Tool) -> None:
    """Idea 1 held by another worker whose claim holds: ``ideas claim 1`` is refused (exit
    3) naming the worker; ``ideas claim`` takes idea 2; ``ideas release 1`` refuses too,
    unless --force."""
    foreign_claim(session, "unroll the loop")
    refused = ar(session, "ideas", "claim", "1", expect=3).err
    assert refused.startswith(f"git autoresearch: idea 1 is claimed by w9 (on "
                              f"{socket.gethostname()}, ")
    assert refused.endswith(" ago)\n")
    assert ar(session, "ideas", "claim").out == "claimed idea 2: cache the table\n"
    assert "not by this worker; --force releases it anyway" in \
        ar(session, "ideas", "release", "1", expect=3).err
    assert ar(session, "ideas", "release", "1", "--force").out == \
        "released idea 1: unroll the loop\n"
    assert sorted(d["worker"] for d in claim_refs(session).values()) == ["main"]


def test_a_claim_by_a_dead_worker_is_taken_over(session: Path, ar: Tool, tmp_path: Path) -> None:
    """A worker's agent (here a Python process that runs the claim through a child, as an
    agent's tool does) claims idea 1 and dies: its pid is gone on this host, so the claim no
    longer holds, and the next claim takes the idea over."""
    agent = write(tmp_path / "agent.py",
                  "import subprocess, sys\n"
                  f"subprocess.run([sys.executable, '-c', {CLAIMER!r}, {str(session)!r}, 'w1'],"
                  " check=True)\n")
    done = subprocess.run([sys.executable, str(agent)], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "1\n"), done.stderr
    (held,) = claim_refs(session).values()
    assert held["worker"] == "w1"
    listed = ar(session, "ideas", "list").out.splitlines()
    assert listed[0].startswith(f"  1 [ ] unroll the loop  (claimed by w1 (pid {held['pid']} on "
                                f"{socket.gethostname()}, ")
    assert listed[0].endswith("; process gone))")
    taken = ar(session, "ideas", "claim", "--json").json()
    assert (taken["number"], taken["replaced"]["worker"], taken["replaced"]["stale"]) == \
        (1, "w1", "process gone")


def test_a_claim_whose_worktree_is_gone_is_taken_over(session: Path, ar: Tool,
                                                      tmp_path: Path) -> None:
    """A worker's worktree removed from this host: its claims no longer hold."""
    other = tmp_path / "w1"
    git(session, "worktree", "add", "-q", "--detach", str(other))
    ideas = read_ideas(session / ".auto" / "ideas.md")
    claim(Repo.discover(other), "s1", ideas, timeout=7200, worker="w1")
    assert read_claims(Repo.discover(session), "s1")[idea_key(IDEAS[0])].stale(7200) is None
    git(session, "worktree", "remove", str(other))
    taken = ar(session, "ideas", "claim", "--json").json()
    assert (taken["number"], taken["replaced"]["stale"]) == (1, "worktree gone")


def test_a_claim_lasts_until_the_idea_is_done(session: Path, ar: Tool) -> None:
    """A run does not end a claim (an idea may take several runs, and a second worker must
    not take it up again); ideas done does, for that idea alone."""
    foreign_claim(session, "use a bitset")
    first = ar(session, "ideas", "claim", "--json").json()["number"]
    ar(session, "ideas", "claim")
    write(session / "value.txt", "90\n")
    ar(session, "run", "-d", "unrolled")
    assert sorted(d["worker"] for d in claim_refs(session).values()) == ["main", "main", "w9"]
    ar(session, "ideas", "done", str(first), "--run", "2")
    assert sorted(d["worker"] for d in claim_refs(session).values()) == ["main", "w9"]


def test_nothing_left_to_claim_says_why(repo: Path, ar: Tool) -> None:
    """Exit 3 naming why: no ideas at all; every idea done or held; idea N done; exit 2 for
    a number that names no idea."""
    ar(repo, *start_args())
    assert ar(repo, "ideas", "claim", expect=3).err == (
        "git autoresearch: nothing to claim: the backlog has no ideas (git autoresearch ideas "
        "add TEXT)\n")
    ar(repo, "ideas", "add", "one")
    ar(repo, "ideas", "add", "two")
    ar(repo, "ideas", "done", "1")
    ar(repo, "ideas", "claim")
    assert ar(repo, "ideas", "claim", expect=3).err == (
        "git autoresearch: nothing left to claim: of 2 ideas, 1 done and 1 claimed (idea 2 by "
        "main (this worker))\n")
    assert ar(repo, "ideas", "claim", "1", expect=3).err == (
        "git autoresearch: idea 1 was tried already (marked done): nothing to claim\n")
    assert ar(repo, "ideas", "claim", "7", expect=2).err == \
        "git autoresearch: no idea 7 (there are 2)\n"
    assert ar(repo, "ideas", "claim", "1", "--text", "x", expect=2).err == \
        "git autoresearch: give an idea's NUMBER or --text, not both\n"


def test_claim_by_text_adds_the_idea_or_finds_it(session: Path, ar: Tool) -> None:
    """``--text``: an idea of the backlog by its text (white space and case aside), else a
    new idea added and claimed."""
    assert ar(session, "ideas", "claim", "--text", "Cache  the TABLE").out == \
        "claimed idea 2: cache the table\n"
    assert ar(session, "ideas", "claim", "--text", "inline the hash").out == \
        "claimed idea 5: inline the hash\n"
    assert (session / ".auto" / "ideas.md").read_text().endswith("- [ ] inline the hash\n")


def test_status_shows_what_each_worker_does(session: Path, ar: Tool) -> None:
    """``status`` names each worker's claims, last run and slot, once anyone claims; a
    single agent without claims sees the status it always saw."""
    assert "workers" not in ar(session, "status", "--json").json()
    assert "worker " not in ar(session, "status").out
    foreign_claim(session, "use a bitset")
    ar(session, "ideas", "claim", "2")
    found = ar(session, "status", "--json").json()["workers"]
    assert [(w["worker"], [c["number"] for c in w["claims"]], w["last_run"] and
             w["last_run"]["run"], w["slot"]) for w in found] == [
        ("main", [2], 1, None), ("w9", [3], None, None)]
    assert found[0]["claims"][0]["text"] == "cache the table"
    lines = [line for line in ar(session, "status").out.splitlines()
             if line.startswith("worker ")]
    assert lines == ["worker      main: claims idea 2 (cache the table); last run 1 keep",
                     "worker      w9: claims idea 3 (use a bitset); no run yet"]


def test_release_without_a_number_releases_this_workers_claims(session: Path,
                                                               ar: Tool) -> None:
    ar(session, "ideas", "claim")
    ar(session, "ideas", "claim")
    released = ar(session, "ideas", "release", "--json").json()["released"]
    assert sorted(r["idea"] for r in released) == [1, 2]
    assert claim_refs(session) == {}
    assert ar(session, "ideas", "release", "1", expect=3).err == \
        "git autoresearch: idea 1 is not claimed\n"


def test_the_idea_key_ignores_what_a_tried_mark_adds() -> None:
    assert idea_key("~~Cache the table~~ → run 4, discard, 41") == idea_key("cache the table")
    assert idea_key("cache the table (offered before run 3)") == idea_key("cache  the table")
    assert idea_key("cache the table") != idea_key("cache the tables")
    assert len(idea_key("x")) == 12


def test_claimant_pid_skips_git_and_shells(session: Path) -> None:
    """The pid a claim records is the agent's, not that of the shell its tool started for
    the one command, nor git's."""
    if not os.path.exists("/proc/self/stat"):
        pytest.skip("no /proc: no pid is recorded")
    done = subprocess.run(["sh", "-c", f"bash -c '{' '.join(TOOL)} ideas claim --json'"],
                          cwd=session, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert check_document(json.loads(done.stdout))["claim"]["pid"] == os.getpid()


def test_ideas_next_leaves_out_another_workers_claim(session: Path, ar: Tool) -> None:
    """``ideas next`` offers what this worker may try: not an idea another worker's live
    claim holds (its own claims, and stale ones, it still offers)."""
    foreign_claim(session, "unroll the loop")
    assert ar(session, "ideas", "next").out == "2: cache the table\n"
    ar(session, "ideas", "claim", "2")
    assert ar(session, "ideas", "next", "--json").json()["idea"]["number"] == 2


def test_gc_deletes_the_claims_of_a_session_it_collects(session: Path, ar: Tool) -> None:
    """A session's claims go with its attempt and scope refs when gc collects it."""
    ar(session, "ideas", "claim")
    ref = PREFIX + idea_key("unroll the loop")
    assert ar(session, "gc", "s1", "--force", "--dry-run").out == (
        f"s1: would delete 1 ref(s)\n  {ref} (at {git(session, 'rev-parse', '--short', ref)})\n")
    ar(session, "gc", "s1", "--force")
    assert claim_refs(session) == {}


def test_the_worker_pid_can_be_named(session: Path, ar: Tool,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """``AUTORESEARCH_WORKER_PID`` names the worker's process outright (0: none, and then only
    the timeout ends the claim); anything else is a usage error."""
    monkeypatch.setenv("AUTORESEARCH_WORKER_PID", "0")
    assert ar(session, "ideas", "claim", "--json").json()["claim"]["pid"] is None
    monkeypatch.setenv("AUTORESEARCH_WORKER_PID", str(os.getpid()))
    assert ar(session, "ideas", "claim", "--json").json()["claim"]["pid"] == os.getpid()
    monkeypatch.setenv("AUTORESEARCH_WORKER_PID", "me")
    assert ar(session, "ideas", "claim", expect=2).err == (
        "git autoresearch: AUTORESEARCH_WORKER_PID='me' is not a process id (0: none)\n")
