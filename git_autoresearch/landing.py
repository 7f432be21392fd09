"""A clone that joined a session through a remote (``worker join``) in step with it: the
remote's session branch and runs fetched before measuring (:func:`sync`), and a keep that is
one only once the remote holds it (:func:`land`).

The session branch advances on the remote only by an atomic push with a lease on the commit
the keep was made on. When the lease fails (another machine kept first) the keep is undone here,
the candidate left in the work tree, and :class:`replaying.IncumbentMoved` raised, so that the
candidate is replayed onto the new incumbent and measured again, as with workers on one
machine (:mod:`replaying`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import Refused
from .faults import checkpoint
from .git import ABSENT, Repo
from .git.moving import index_to, is_ancestor
from .git.remote import push_atomic, update_refs
from .refs import session_branch, upstream_ref
from .remoteledger import fetch

if TYPE_CHECKING:
    from .session import Session


def follow_upstream(repo: Repo, session_id: str, tip: str) -> None:
    """Move the session branch here to the remote's ``tip`` when it is behind it (or absent).
    Refuses when the two have parted (keeps here that the remote does not hold)."""
    branch = f"refs/heads/{session_branch(session_id)}"
    here = repo.resolve(branch)
    if here == tip:
        return
    if here is not None and not is_ancestor(repo, here, tip):
        raise Refused(f"the session branch {session_branch(session_id)} here holds commits "
                      "the remote's does not (keeps that never landed there): git autoresearch "
                      "doctor; nothing was changed")
    repo.update_ref(branch, tip, here or ABSENT,
                    f"git-autoresearch: session branch follows {repo.short(tip)}")


def sync(session: Session) -> None:
    """In a joined clone: fetch the session branch, the ledger refs and the run numbers taken
    (:func:`remoteledger.fetch`), move the session branch here to the remote's, and read the
    ledger again (with the runs the others recorded). Nothing elsewhere."""
    if session.remote is None:
        return
    with session.shared("fetch the session from its remote"):
        tip = fetch(session.repo, session.remote, session.config.session_id)
        follow_upstream(session.repo, session.config.session_id, tip)
        session.reload()


def land(session: Session, old: str, new: str) -> None:
    """Advance the remote's session branch from ``old`` to ``new`` (this clone's keep, the
    branch here moved already) by an atomic push with a lease on ``old``. When the lease fails
    (another worker kept first), the keep is undone here (:func:`_undo`: the candidate stays in
    the work tree, unstaged) and :class:`replaying.IncumbentMoved` is raised naming the new
    incumbent. When the remote cannot be reached, the keep is undone here too and
    :class:`Refused` raised: nothing is kept that the remote does not hold."""
    from .replaying import IncumbentMoved, kept_between

    assert session.remote is not None
    sid = session.config.session_id
    branch = f"refs/heads/{session_branch(sid)}"
    checkpoint("keep:before-push")
    code, answer = push_atomic(session.repo, session.remote, {branch: (new, old)})
    if code == 0:
        update_refs(session.repo, {upstream_ref(sid): (new, session.repo.resolve(
            upstream_ref(sid)))}, "git-autoresearch: a keep landed")
        checkpoint("keep:after-push")
        return
    if not any(p.flag == "!" for p in answer):
        _undo(session, old, new)
        raise Refused(f"the keep could not be sent to {session.remote} (git push failed: is "
                      "it reachable and writable?); nothing was recorded, and the candidate "
                      "is in the work tree: measure it again once the remote can be reached")
    tip = fetch(session.repo, session.remote, sid)
    if tip == new:  # it landed, the answer lost (a push after a kill)
        return
    _undo(session, old, new)
    follow_upstream(session.repo, sid, tip)
    raise IncumbentMoved(old, tip, kept_between(session, old, tip))


def _undo(session: Session, old: str, new: str) -> None:
    """Undo this clone's keep ``new`` on ``old`` that could not land: the index back to
    ``old``, then the session branch, then HEAD (the worker branch), each by compare-and-swap;
    the work tree keeps the candidate, unstaged."""
    repo = session.repo
    index_to(repo, old)
    branch = f"refs/heads/{session_branch(session.config.session_id)}"
    if repo.resolve(branch) == new:
        repo.update_ref(branch, old, new, "git-autoresearch: a keep that did not land")
    checkpoint("land:undone-branch")
    if repo.head() == new:
        repo.update_ref("HEAD", old, new, "git-autoresearch: a keep that did not land")
    session.moved_head(old)
