"""Candidates queued on a session's remote for a measuring host: agents that only think send
their candidates there, a host takes each one, measures it and sends back its verdict. The
remote is the only coordination; every step is a push with a lease, so two hosts never take one
candidate and nothing is lost when either side dies.

- ``refs/autoresearch/<id>/queue/<key>``: a candidate, a commit on the incumbent the agent
  built on (its parent) holding the agent's work tree; its message is a subject line and the
  candidate's JSON (``agent``, ``description``, ``asi``, ``submitted``: epoch seconds).
  Created only if absent.
- ``refs/autoresearch/<id>/measuring/<key>``: a host has taken the candidate: a commit on it
  whose message is the host's JSON (``host``, ``machine``, ``pid``, ``since``). Created only if
  absent; a stale one (its host gone) is taken over with a lease on its value.
- ``refs/autoresearch/<id>/verdicts/<key>``: the run recorded for the candidate, a commit on it
  whose message holds the run record's JSON. Created in the same atomic push that deletes the
  candidate's ``queue`` and ``measuring`` refs, so a candidate is in exactly one of the
  three states on the remote.

A key is ``<agent>-<epoch ms>-<4 hex digits>``: unique without asking anyone, and sorting
the keys of one agent sorts its candidates in time.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..git import Repo
from ..git.remote import failure, fetch_refspecs, push_atomic, remote_refusal
from ..runtime.errors import Refused
from .refs import measuring_prefix, queue_prefix, verdicts_prefix

SUBJECT = "git-autoresearch: "


@dataclass(frozen=True)
class Candidate:
    """A candidate queued on the remote: its ``key``, its ``commit`` and the ``base`` it was
    built on (full object ids), the ``agent`` that sent it, its ``description`` and ``asi``,
    when it was ``submitted`` (epoch seconds), and the host that ``taken`` it (its
    ``measuring`` ref's JSON with ``commit``, or None)."""

    key: str
    commit: str
    base: str
    agent: str
    description: str
    asi: Mapping[str, Any]
    submitted: float
    taken: Mapping[str, Any] | None = None


def new_key(agent: str) -> str:
    return f"{agent}-{int(time.time() * 1000)}-{os.urandom(2).hex()}"


def _json(body: str) -> dict[str, Any] | None:
    """A commit message's body (what follows its subject line) read as a JSON object, or
    None."""
    try:
        found = json.loads(body)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _document(repo: Repo, commit: str) -> dict[str, Any] | None:
    """The JSON after a commit message's subject line, or None."""
    return _json(repo.commit_fields(commit, ["%B"])[0].partition("\n\n")[2])


def _push(repo: Repo, remote: str, updates: Mapping[str, tuple[str, str]], what: str
          ) -> bool:
    """Push ``updates`` all or nothing (``{ref: (new or "" to delete, expected or "" for
    absent)}``): True when it landed, False when a lease failed (another side was first);
    :class:`Refused` when the remote refused or could not be reached."""
    code, answer, said = push_atomic(repo, remote, updates)
    if code == 0:
        return True
    refusal = remote_refusal(answer, said)
    if refusal is not None:
        raise Refused(f"cannot {what} on {remote}: {refusal}")
    if not any(p.flag == "!" for p in answer):
        raise Refused(f"cannot {what} on {remote}: "
                      + failure(said.encode(), "git push failed: is it reachable and writable?"))
    return False


def submit(repo: Repo, remote: str, session_id: str, candidate_commit: str, *, agent: str,
           description: str, asi: Mapping[str, Any],
           before_push: Callable[[Candidate], None] | None = None) -> Candidate:
    """Queue ``candidate_commit`` (the agent's work tree, a commit on the incumbent it built
    on) on ``remote``: a commit of the same tree on the same parent whose message carries the
    candidate's JSON, pushed to a new ``queue/<key>`` ref; ``before_push`` is given the
    candidate first (to remember it: a kill during the push leaves it known). Returns the
    candidate; raises :class:`Refused` when the remote refuses or cannot be reached."""
    base = repo.resolve(f"{candidate_commit}^")
    assert base is not None
    submitted = time.time()
    data = {"agent": agent, "description": description, "asi": dict(asi),
            "submitted": round(submitted, 3)}
    key = new_key(agent)
    commit = repo.commit_tree(repo.tree_of(candidate_commit), [base],
                              f"{SUBJECT}candidate {key}\n\n{json.dumps(data)}\n")
    candidate = Candidate(key, commit, base, agent, description, dict(asi), submitted)
    if before_push is not None:
        before_push(candidate)
    if not _push(repo, remote, {queue_prefix(session_id) + key: (commit, "")},
                 "queue the candidate"):
        raise Refused(f"cannot queue the candidate on {remote}: its key {key} is taken")
    return candidate


def queued(repo: Repo, remote: str, session_id: str) -> list[Candidate]:
    """Fetch the queued candidates and the hosts' claims on them from ``remote`` (a local copy
    of each, pruned of those gone there) and list the candidates, oldest first: one fetch and
    one listing, however long the queue. Raises :class:`Refused` when the remote cannot be
    read."""
    queue, measuring = queue_prefix(session_id), measuring_prefix(session_id)
    problem = fetch_refspecs(repo, remote, [f"+{p}*:{p}*" for p in (queue, measuring)],
                             prune=True)
    repo.forget_refs()
    if problem is not None:
        raise Refused(f"cannot fetch the queue of session {session_id} from {remote}: "
                      f"{problem}")
    rows = repo.ref_fields([queue, measuring],
                           ["refname", "objectname", "parent", "contents:body"])
    claims = {ref[len(measuring):]: (commit, _json(body))
              for ref, commit, _, body in rows if ref.startswith(measuring)}
    out = []
    for ref, commit, parents, body in rows:
        data = _json(body)
        if not ref.startswith(queue) or data is None or len(parents.split()) != 1:
            continue  # not ours to read: left alone
        key = ref[len(queue):]
        taken = None
        if key in claims:
            taken = {**(claims[key][1] or {}), "commit": claims[key][0]}
        asi = data.get("asi")
        out.append(Candidate(key, commit, parents, str(data.get("agent", "")),
                             str(data.get("description", "")),
                             asi if isinstance(asi, dict) else {},
                             float(data.get("submitted") or 0), taken))
    return sorted(out, key=lambda c: (c.submitted, c.key))


def take(repo: Repo, remote: str, session_id: str, candidate: Candidate, host: str
         ) -> str | None:
    """Take ``candidate`` for measuring host ``host``: its ``measuring/<key>`` ref created on
    ``remote`` if absent, or moved from the claim the candidate was read with (a stale one,
    or this host's own from before it was restarted). Returns the claim's commit, or None when
    another host took it first."""
    data = {"host": host, "machine": socket.gethostname(), "pid": os.getpid(),
            "since": round(time.time(), 3)}
    claim = repo.commit_tree(repo.tree_of(candidate.commit), [candidate.commit],
                             f"{SUBJECT}measuring {candidate.key}\n\n{json.dumps(data)}\n")
    expected = str(candidate.taken["commit"]) if candidate.taken else ""
    ref = measuring_prefix(session_id) + candidate.key
    return claim if _push(repo, remote, {ref: (claim, expected)}, "take the candidate") \
        else None


def publish(repo: Repo, remote: str, session_id: str, candidate: Candidate, claim: str,
            record: Mapping[str, Any]) -> bool:
    """Send the verdict on ``candidate``, the ``record`` of its run: ``verdicts/<key>``
    created, its ``queue`` and ``measuring`` refs deleted (with leases on the candidate and on
    this host's ``claim``), all in one push. False when the claim is no longer this host's
    (another host took the candidate over): then nothing changed there."""
    verdict = repo.commit_tree(repo.tree_of(candidate.commit), [candidate.commit],
                               f"{SUBJECT}verdict {candidate.key}\n\n"
                               f"{json.dumps(dict(record))}\n")
    return _push(repo, remote, {
        verdicts_prefix(session_id) + candidate.key: (verdict, ""),
        queue_prefix(session_id) + candidate.key: ("", candidate.commit),
        measuring_prefix(session_id) + candidate.key: ("", claim),
    }, "send the verdict")


def release(repo: Repo, remote: str, session_id: str, candidate: Candidate, claim: str) -> bool:
    """Give candidate ``candidate`` back to the queue: this host's ``claim`` deleted on
    ``remote`` with a lease on it (a host that stops before recording anything for it). False
    when the claim is no longer there as it was, or the remote cannot be reached: then it goes
    stale in its time."""
    try:
        return _push(repo, remote, {measuring_prefix(session_id) + candidate.key: ("", claim)},
                     "give the candidate back")
    except Refused:
        return False


@dataclass(frozen=True)
class Watched:
    """Candidate ``key`` as the remote holds it now: the run record its verdict holds
    (``record``, or ``{"refused": ...}``; None while there is none) and the commit of the
    host's claim on it (``claim``, None while no host measures it), and whether it waits in
    the queue (``queued``)."""

    record: dict[str, Any] | None
    claim: str | None
    queued: bool  # whether its queue ref is there (none of the three: never queued)


def watch(repo: Repo, remote: str, session_id: str, key: str) -> Watched:
    """Look at candidate ``key`` on ``remote``: its verdict, claim and queue refs fetched in one
    ``git fetch`` of those three names alone (the remote lists only them, however many verdicts
    a night left there; the local copies pruned with the remote's), then read here. Raises
    :class:`Refused` when the remote cannot be read."""
    ref, claim_ref = verdicts_prefix(session_id) + key, measuring_prefix(session_id) + key
    queue_ref = queue_prefix(session_id) + key
    names = (ref, claim_ref, queue_ref)
    problem = fetch_refspecs(repo, remote, [f"+{name}*:{name}*" for name in names],
                             prune=True)
    repo.forget_refs()
    if problem is not None:
        raise Refused(f"cannot fetch candidate {key} of session {session_id} from {remote}: "
                      f"{problem}")
    found = dict(repo.ref_fields(list(names), ["refname", "objectname"]))
    record = _document(repo, found[ref]) if ref in found else None
    return Watched(record, found.get(claim_ref), queue_ref in found)


def verdict(repo: Repo, remote: str, session_id: str, key: str) -> dict[str, Any] | None:
    """The run record the verdict on candidate ``key`` holds, fetched from ``remote``; None
    while there is none. Raises :class:`Refused` when the remote cannot be read."""
    return watch(repo, remote, session_id, key).record


def claimant(repo: Repo, claim: str) -> str | None:
    """The name of the host whose claim is commit ``claim`` (:attr:`Watched.claim`), or None
    when it names none."""
    host = (_document(repo, claim) or {}).get("host")
    return str(host) if host else None


def stale(candidate: Candidate, *, older_than: float, now: float | None = None) -> bool:
    """Whether the host that took ``candidate`` has held it longer than ``older_than``
    seconds (a host that died while measuring): another may take it over."""
    if candidate.taken is None:
        return False
    since = candidate.taken.get("since")
    return not isinstance(since, (int, float)) or \
        (time.time() if now is None else now) - since > older_than
