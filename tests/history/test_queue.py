"""The queue of candidates on a session's remote (``history.queue``): an agent's candidate
queued, taken by exactly one of two measuring hosts, its verdict sent back in one push that
empties the queue, a host that died taken over, and a remote that refuses the refs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import git, write

from git_autoresearch.git import Repo
from git_autoresearch.history import queue
from git_autoresearch.runtime.errors import Refused

SID = "s1"


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Repo, Repo, Repo, Path]:
    """A bare remote, an agent's clone and two measuring hosts' clones of one project."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    agent = tmp_path / "agent"
    git(tmp_path, "init", "-q", "-b", "main", str(agent))
    write(agent / "value.txt", "100\n")
    git(agent, "add", "-A")
    git(agent, "commit", "-q", "-m", "project")
    git(agent, "remote", "add", "origin", str(remote))
    git(agent, "push", "-q", "origin", "main")
    hosts = []
    for name in ("h1", "h2"):
        git(tmp_path, "clone", "-q", str(remote), str(tmp_path / name))
        hosts.append(Repo.discover(tmp_path / name))
    return Repo.discover(agent), hosts[0], hosts[1], remote


def candidate_of(repo: Repo, text: str) -> str:
    """A commit on HEAD whose tree has value.txt = ``text``, as the agent's work tree."""
    write(repo.top / "value.txt", text)
    git(repo.top, "add", "value.txt")
    tree = repo.write_tree()
    git(repo.top, "reset", "-q")
    head = repo.head()
    assert head is not None
    return repo.commit_tree(tree, [head], "work tree")


def remote_refs(remote: Path) -> list[str]:
    return sorted(git(remote, "for-each-ref", "--format=%(refname)").split())


def test_a_candidate_is_queued_and_read_by_a_host(sides: tuple[Repo, Repo, Repo, Path]) -> None:
    agent, h1, _, remote = sides
    sent = queue.submit(agent, "origin", SID, candidate_of(agent, "90\n"), agent="a1",
                        description="ninety", asi={"hypothesis": "lower"})
    assert sent.key.startswith("a1-") and sent.base == agent.head()
    assert f"refs/autoresearch/s1/queue/{sent.key}" in remote_refs(remote)
    [found] = queue.queued(h1, "origin", SID)
    assert (found.key, found.commit, found.base, found.agent, found.description,
            dict(found.asi), found.taken) == (sent.key, sent.commit, sent.base, "a1", "ninety",
                                              {"hypothesis": "lower"}, None)
    assert git(h1.top, "show", f"{found.commit}:value.txt") == "90"


def test_two_hosts_never_take_one_candidate(sides: tuple[Repo, Repo, Repo, Path]) -> None:
    """Both read the candidate free; the first to push its claim has it, the other is told
    another was first (a lease on the claim's absence), and then reads who."""
    agent, h1, h2, _ = sides
    queue.submit(agent, "origin", SID, candidate_of(agent, "90\n"), agent="a1",
                 description="ninety", asi={})
    [seen1], [seen2] = queue.queued(h1, "origin", SID), queue.queued(h2, "origin", SID)
    assert queue.take(h1, "origin", SID, seen1, "h1") is not None
    assert queue.take(h2, "origin", SID, seen2, "h2") is None
    [again] = queue.queued(h2, "origin", SID)
    assert again.taken is not None and again.taken["host"] == "h1"


def test_the_verdict_empties_the_queue_in_one_push(sides: tuple[Repo, Repo, Repo, Path]) -> None:
    agent, h1, h2, remote = sides
    sent = queue.submit(agent, "origin", SID, candidate_of(agent, "90\n"), agent="a1",
                        description="ninety", asi={})
    assert queue.verdict(agent, "origin", SID, sent.key) is None
    [found] = queue.queued(h1, "origin", SID)
    claim = queue.take(h1, "origin", SID, found, "h1")
    assert claim is not None
    record = {"run": 2, "status": "keep", "metric": 190}
    assert queue.publish(h1, "origin", SID, found, claim, record)
    assert remote_refs(remote) == ["refs/autoresearch/s1/verdicts/" + sent.key,
                                   "refs/heads/main"]
    assert queue.verdict(agent, "origin", SID, sent.key) == record
    assert queue.queued(h2, "origin", SID) == []
    assert queue.queued(h1, "origin", SID) == []  # the copies here follow the remote's


def test_a_host_that_died_is_taken_over_and_its_late_verdict_refused(
        sides: tuple[Repo, Repo, Repo, Path]) -> None:
    """h1 took the candidate and died; once its claim is stale h2 takes it over (a lease on
    h1's claim), and a verdict h1 would send late is refused: the candidate is measured and
    answered once."""
    agent, h1, h2, _ = sides
    queue.submit(agent, "origin", SID, candidate_of(agent, "90\n"), agent="a1",
                 description="ninety", asi={})
    [found] = queue.queued(h1, "origin", SID)
    dead = queue.take(h1, "origin", SID, found, "h1")
    assert dead is not None
    [held] = queue.queued(h2, "origin", SID)
    since = float(held.taken["since"]) if held.taken else 0.0
    assert not queue.stale(held, older_than=60, now=since + 59)
    assert queue.stale(held, older_than=60, now=since + 61)
    claim = queue.take(h2, "origin", SID, held, "h2")
    assert claim is not None
    assert not queue.publish(h1, "origin", SID, found, dead, {"run": 2, "status": "discard"})
    assert queue.publish(h2, "origin", SID, held, claim, {"run": 2, "status": "keep"})
    assert queue.verdict(agent, "origin", SID, held.key) == {"run": 2, "status": "keep"}


def test_a_remote_that_refuses_the_refs_is_said(sides: tuple[Repo, Repo, Repo, Path]) -> None:
    agent, _, _, remote = sides
    write(remote / "hooks" / "pre-receive", "#!/bin/sh\necho 'no queues here'\nexit 1\n", 0o755)
    with pytest.raises(Refused) as refused:
        queue.submit(agent, "origin", SID, candidate_of(agent, "90\n"), agent="a1",
                     description="ninety", asi={})
    assert "cannot queue the candidate on origin" in refused.value.message
    assert "no queues here" in refused.value.message
    assert "queue" not in json.dumps(remote_refs(remote))
