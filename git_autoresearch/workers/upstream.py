"""A clone that joined a session through a remote (``worker join``) in step with it: the
remote's session branch and runs fetched before measuring (:func:`sync`), and a keep that is
one only once the remote holds it (:func:`land`).

The session branch advances on the remote only by an atomic push with a lease on the commit
the keep was made on. When the lease fails (another machine kept first) the keep is undone here,
the candidate left in the work tree, and :class:`session.shared.IncumbentMoved` raised, so that
the candidate is replayed onto the new incumbent and measured again, as with workers on one
machine (:mod:`workers.replay`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import ledger as ledger_mod
from ..git import ABSENT, Repo
from ..git.merge import index_to, is_ancestor
from ..git.remote import push_atomic, remote_refusal, update_refs
from ..history.refs import session_branch, upstream_ref
from ..history.remote_ledger import (
    fetch,
    ledger_commit,
    publish,
    send_attempts,
    with_record,
    worker_ledger,
)
from ..runtime.errors import Refused
from ..runtime.faults import checkpoint

if TYPE_CHECKING:
    from ..session.session import Session

# How many fetches a measurement waits for the incumbent's record (half a second apart).
RECORD_TRIES = 5


def follow_upstream(repo: Repo, session_id: str, tip: str) -> None:
    """Move the session branch here to the remote's ``tip`` when it is behind it (or absent).
    Refuses when the two have parted (keeps here that the remote does not hold), or when the
    branch is checked out, here or in another worktree (moving its ref would leave that work
    tree's files and index as they were, staged against the new commit: the next keep there
    would undo what the remote's commits did)."""
    name = session_branch(session_id)
    branch = f"refs/heads/{name}"
    here = repo.resolve(branch)
    if here == tip:
        return
    if here is not None and not is_ancestor(repo, here, tip):
        raise Refused(f"the session branch {name} here holds commits the remote's does not "
                      "(keeps that never landed there): git autoresearch doctor; nothing was "
                      "changed")
    if here is not None and repo.current_branch() == name:
        raise Refused(f"the session branch {name} is checked out here and the remote has "
                      "newer commits on it; the branch and the work tree were left as they are "
                      "(the remote's refs fetched): switch to another branch (git switch -), "
                      "then run this again")
    elsewhere = repo.worktree_of(name) if here is not None else None
    if elsewhere is not None:
        raise Refused(f"the session branch {name} is checked out in the worktree {elsewhere} "
                      "and the remote has newer commits on it; the branch and that worktree were "
                      "left as they are (the remote's refs fetched): switch that worktree to "
                      "another branch, then run this again")
    repo.update_ref(branch, tip, here or ABSENT,
                    f"git-autoresearch: session branch follows {repo.short(tip)}")


def sync(session: Session, *, before_measuring: bool = False) -> None:
    """In a joined clone: fetch the session branch, the ledger refs, the run numbers taken and
    the attempt refs (:func:`history.remote_ledger.fetch`), move the session branch here to the
    remote's, read the ledger again (with the runs the others recorded), and send this clone's
    ledger when the remote's copy lags (a push that failed). Nothing elsewhere.

    ``before_measuring``: the incumbent's own record must be in the ledger read, since a
    candidate is judged against it; a keep and its record travel in one push, so this waits
    only for a clone whose keep predates that (a few fetches, half a second apart), then
    refuses (exit 3) rather than judge against an older best."""
    if session.remote is None:
        return
    repo, sid = session.repo, session.config.session_id
    with session.shared("fetch the session from its remote"):
        for attempt in range(RECORD_TRIES if before_measuring else 1):
            if attempt:
                time.sleep(0.5)
            tip = fetch(repo, session.remote, sid)
            follow_upstream(repo, sid, tip)
            session.reload()
            if not before_measuring or has_record(session, tip):
                break
            if not attempt:  # (no fetch brings back a line this clone's file lost)
                _lost_own_record(session, tip)
        else:
            raise Refused(f"the record of the incumbent {repo.short(tip)} (the session branch "
                          f"on {session.remote}) is in no worker's ledger yet: judged against "
                          "an older best, a candidate could be kept for nothing; git "
                          "autoresearch worker sync, then run again")
        session.warnings += publish(repo, session.remote, sid, session.worker_name,
                                    session.layout.ledger)
        session.warnings += send_attempts(repo, session.remote, sid, session.layout.ledger)


def _lost_own_record(session: Session, tip: str) -> None:
    """Refuse (exit 3), naming ``doctor --fix``, when the incumbent ``tip``'s record is missing
    because this clone's own ledger file lost it: its own ledger ref holds it (a line
    deleted by hand), and no sync brings it back."""
    sent = worker_ledger(session.repo, session.config.session_id, session.worker_name)
    for run in ledger_mod.parse(sent or b"").runs:
        if run.status == "keep" and run.made(tip):
            raise Refused(f"{session.layout.ledger} lost the line of kept run {run.number}, "
                          "the incumbent, which this clone's ledger ref holds; git "
                          "autoresearch doctor --fix restores it; nothing was measured or "
                          "changed")


def has_record(session: Session, commit: str) -> bool:
    """Whether the ledger read holds the kept run (or baseline) whose commit is ``commit``."""
    return any(run.status == "keep" and run.made(commit) for run in session.ledger.runs)


def land(session: Session, old: str, new: str,
         record: Mapping[str, Any] | None = None) -> None:
    """Advance the remote's session branch from ``old`` to ``new`` (this clone's keep, the
    branch here moved already) by an atomic push with a lease on ``old``; with ``record`` (the
    keep's run record), the worker's ledger ref holding it goes in the same push, so that no
    clone ever fetches the keep without its record. When the lease fails (another worker kept
    first), the keep is undone here (:func:`undo_keep`: the candidate stays in the work tree,
    unstaged) and :class:`session.shared.IncumbentMoved` is raised naming the new incumbent; when
    ``new`` is on the remote's branch already (pushed by a command killed before it knew), it
    landed. When the remote cannot be reached, the keep is undone here too and
    :class:`Refused` raised: nothing is kept that the remote does not hold."""
    from ..session.shared import IncumbentMoved, kept_between

    assert session.remote is not None
    repo, sid = session.repo, session.config.session_id
    branch = f"refs/heads/{session_branch(sid)}"
    updates = {branch: (new, old)}
    ledger = None
    if record is not None:
        ledger = ledger_commit(repo, sid, session.worker_name,
                               with_record(session.layout.ledger, record))
        if ledger is not None:
            updates[ledger[0]] = (ledger[1], ledger[2] or "")
    checkpoint("keep:before-push")
    code, answer, said = push_atomic(repo, session.remote, updates)
    if code == 0:
        moved: dict[str, tuple[str | None, str | None]] = {
            upstream_ref(sid): (new, repo.resolve(upstream_ref(sid)))}
        if ledger is not None:
            moved[ledger[0]] = (ledger[1], ledger[2])
        update_refs(repo, moved, "git-autoresearch: a keep landed")
        checkpoint("keep:after-push")
        return
    refusal = remote_refusal(answer, said)  # its hooks or rules: no other clone's keep
    if refusal is None and not any(p.flag == "!" for p in answer):
        undo_keep(session, old, new)
        raise Refused(f"the keep could not be sent to {session.remote} (git push failed: is "
                      "it reachable and writable?); nothing was recorded, and the candidate "
                      "is in the work tree: measure it again once the remote can be reached")
    tip = fetch(repo, session.remote, sid)
    if tip == new or is_ancestor(repo, new, tip):  # it landed (a push after a kill)
        follow_upstream(repo, sid, tip)
        return
    undo_keep(session, old, new)
    follow_upstream(repo, sid, tip)
    if refusal is not None:
        raise Refused(f"the keep could not land on {session.remote}: {refusal}; nothing was "
                      "recorded, and the candidate is in the work tree: once the remote takes "
                      "it, measure it again")
    if tip == old:  # the branch did not move: the lease on the ledger ref failed
        raise Refused(f"the ledger ref of worker {session.worker_name} on {session.remote} "
                      "moved (another clone joined under the same name?); nothing was "
                      "recorded, and the candidate is in the work tree")
    raise IncumbentMoved(old, tip, kept_between(session.repo, old, tip))


def undo_keep(session: Session, old: str, new: str) -> None:
    """Undo this worker's keep ``new`` on ``old`` that could not land (on the remote, or on
    a session branch another worker moved meanwhile): the index back to ``old``, then the
    session branch when it is at ``new``, then HEAD (the worker branch), each by
    compare-and-swap; the work tree keeps the candidate, unstaged."""
    repo = session.repo
    index_to(repo, old)
    branch = f"refs/heads/{session_branch(session.config.session_id)}"
    if repo.resolve(branch) == new:
        repo.update_ref(branch, old, new, "git-autoresearch: a keep that did not land")
    checkpoint("land:undone-branch")
    if repo.head() == new:
        repo.update_ref("HEAD", old, new, "git-autoresearch: a keep that did not land")
    session.moved_head(old)
