"""Keeping when the incumbent moved: a worker's candidate was measured on the incumbent it
started from; when another worker kept since, the session branch has moved on. The keep does
not land on a stale base: the candidate is replayed onto the new incumbent (a three-way merge
with no work tree touched: ``git merge-tree``), the worker's branch and work tree moved there
with the candidate in it, unstaged, to be measured again; a conflict is reported for a discard.
The session branch itself only ever advances by compare-and-swap from the commit a keep was
made on (``update-ref NEW OLD``), under the session's shared lock.

In a session without workers none of this runs: HEAD is the session branch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..git import GitError
from ..git.merge import is_ancestor, leave_unstaged, merge_trees, move_work_tree
from ..history.experiment import finish_revert, record_attempt, revert_targets
from ..history.refs import namespace, session_branch, worker_branch
from ..runtime.atomic import write_atomic
from ..runtime.errors import Refused
from ..runtime.faults import checkpoint
from ..session.session import Session
from ..session.shared import MAIN, IncumbentMoved, kept_between

if TYPE_CHECKING:
    from ..history.experiment import Changes

# The scratch folder's record of a replay under way (for finishing it after a kill).
REPLAY_FILE = "replay.json"

# How many times a run replays its candidate before it gives up (other workers keep faster
# than it can measure).
REPLAYS = 3


@dataclass(frozen=True)
class Replayed:
    """A replay's outcome: ``onto`` the new incumbent, ``base`` the old one, the runs ``kept``
    in between, the ``ref`` the candidate was saved at, and the ``conflicts`` (empty: the
    candidate now sits on ``onto``, unstaged, to be measured again)."""

    base: str
    onto: str
    kept: list[int]
    ref: str
    conflicts: tuple[str, ...] = ()

    def record(self, repo: Any) -> dict[str, Any]:
        """The ``replayed`` object of the run record: ``from``/``onto`` (short ids), the runs
        kept meanwhile, and the paths that conflicted (when it did)."""
        out: dict[str, Any] = {"from": repo.short(self.base), "onto": repo.short(self.onto),
                               "kept_meanwhile": self.kept, "saved_at": self.ref}
        if self.conflicts:
            out["conflicts"] = list(self.conflicts)
        return out


def tip(session: Session) -> str | None:
    """The session branch's commit (the incumbent of every worker)."""
    return session.repo.resolve("refs/heads/" + session_branch(session.config.session_id))


def check_incumbent(session: Session) -> None:
    """In a worker, raise :class:`IncumbentMoved` when the session branch is not HEAD."""
    if session.worker is None:
        return
    check_free(session)
    check_moved(session)


def check_moved(session: Session) -> None:
    """In a worker, raise :class:`IncumbentMoved` when the session branch is not HEAD."""
    now, head = tip(session), session.head()
    if session.worker is not None and now is not None and now != head:
        raise IncumbentMoved(head, now, kept_between(session.repo, head, now))


def check_free(session: Session) -> None:
    """Refuse (exit 3) a worker's keep while some worktree has the session branch checked
    out: moving it would leave that worktree's index and files behind the branch."""
    branch = session_branch(session.config.session_id)
    where = session.repo.worktree_of(branch)
    if where is None and session.repo.current_branch() == branch:
        where = session.repo.top
    if where is not None:
        there = (f"git switch {worker_branch(session.config.session_id, MAIN)} (or the "
                 "worker's own branch)" if session.remote is None else "git switch --detach")
        raise Refused(f"the session branch {branch} is checked out in {where}: with workers, "
                      f"it is checked out nowhere and moves only by keeps; there, {there}; "
                      "nothing was recorded")


def advance(session: Session, old: str, new: str,
            record: Mapping[str, Any] | None = None) -> None:
    """Move the session branch from ``old`` to ``new`` by compare-and-swap (a worker's keep):
    :class:`Refused` when it is no longer at ``old``. In a clone that joined through a remote,
    the keep then lands there, its run ``record`` with it (:func:`workers.upstream.land`)."""
    if session.worker is None or old == new:
        return
    branch = "refs/heads/" + session_branch(session.config.session_id)
    try:
        session.repo.update_ref(branch, new, old,
                                f"git-autoresearch: keep by worker {session.worker_name}")
    except GitError:
        raise Refused(f"the session branch moved while worker {session.worker_name} kept "
                      f"{session.repo.short(new)} (it is on its worker branch); git "
                      "autoresearch doctor reports it") from None
    if session.remote is not None:  # a joined clone: the keep is one once the remote has it
        from .upstream import land

        land(session, old, new, record)


def replay(session: Session, changes: Changes, number: int, base: str, onto: str,
           kept: list[int]) -> Replayed:
    """Replay the candidate in the work tree (``changes`` against HEAD ``base``) onto
    ``onto``: saved first at ``refs/autoresearch/<id>/replays/<run>[.n]``; when it merges
    cleanly, the work tree is reverted, moved to ``onto`` (the worker branch with it, by
    compare-and-swap) and the merged change left in it, unstaged. When it conflicts, nothing
    in the work tree changes and the conflicting paths are returned."""
    from ..measure.worktree import free_ref

    repo, bounds = session.repo, session.bounds
    ref = free_ref(repo, f"{namespace(session.config.session_id)}/replays/{number}")
    paths = [p for p in changes.changed() if not bounds.is_protected(p)]
    message = f"git-autoresearch: candidate of run {number}, replayed onto {repo.short(onto)}"
    candidate = record_attempt(repo, base, paths, ref=ref, message=message,
                               reset=changes.staged_preexisting)
    merged = merge_trees(repo, onto, candidate)
    if merged.tree is None:
        return Replayed(base, onto, kept, ref, merged.paths or ("?",))
    created, tracked = revert_targets(bounds, changes)
    marker = session.repo.scratch / REPLAY_FILE
    write_atomic(marker, json.dumps({
        "run": number, "base": base, "onto": onto, "tree": merged.tree, "ref": ref,
        "created": created, "tracked": tracked,
        "staged_preexisting": changes.staged_preexisting}).encode())
    checkpoint("replay:saved")
    _finish(session, base, onto, merged.tree, created, tracked, changes.staged_preexisting)
    marker.unlink()
    return Replayed(base, onto, kept, ref)


def _finish(session: Session, base: str, onto: str, tree: str, created: list[str],
            tracked: list[str], staged_preexisting: list[str]) -> None:
    """The work tree from the candidate on ``base`` to ``tree`` on ``onto``: reverted (the
    candidate is saved), moved with the worker branch, the merged change left unstaged. Each
    step is skipped when a killed replay did it already."""
    repo = session.repo
    head = repo.head()
    if head == base:
        finish_revert(repo, created, tracked, staged_preexisting)
        checkpoint("replay:reverted")
        move_work_tree(repo, base, onto)
        repo.update_ref("HEAD", onto, base,
                        f"git-autoresearch: worker follows {repo.short(onto)}")
        checkpoint("replay:moved")
    session.moved_head(onto)
    leave_unstaged(repo, onto, tree)


def interrupted_replay(session: Session) -> str | None:
    """What a replay a kill interrupted left (its marker in the scratch folder): the
    candidate on its replay ref, maybe not in the work tree, until the next command finishes
    it (:func:`finish_interrupted_replay`); None when there is none."""
    try:
        data = json.loads((session.repo.scratch / REPLAY_FILE).read_bytes())
        run, onto, ref = data["run"], str(data["onto"]), data["ref"]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return "a replay record that cannot be read is in the scratch folder"
    return (f"the replay of run {run}'s candidate onto {session.repo.short(onto)} was "
            f"interrupted: the candidate is saved at {ref}, and may not be in the work tree "
            "until the next command finishes the replay")


def finish_interrupted_replay(session: Session) -> str | None:
    """Finish a replay a kill interrupted (its marker in the scratch folder); returns what was
    done, or None when there was none. When git refuses (the work tree changed since), the
    marker is set aside and the message says where the candidate is."""
    marker = session.repo.scratch / REPLAY_FILE
    try:
        data = json.loads(marker.read_bytes())
        run, base, onto, tree, ref = (data[k] for k in ("run", "base", "onto", "tree", "ref"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        marker.unlink(missing_ok=True)
        return "removed an unreadable replay record"
    head = session.repo.head()
    try:
        if head in (base, onto):
            _finish(session, base, onto, tree, list(data.get("created") or []),
                    list(data.get("tracked") or []), list(data.get("staged_preexisting") or []))
    except GitError:
        head = None
    if head not in (base, onto):
        marker.unlink(missing_ok=True)
        return (f"the replay of run {run}'s candidate onto {session.repo.short(onto)} was "
                f"interrupted and could not be finished (the work tree changed since); the "
                f"candidate is saved at {ref} (see it: git show {ref})")
    marker.unlink(missing_ok=True)
    return (f"finished the interrupted replay of run {run}'s candidate onto "
            f"{session.repo.short(onto)}: it is in the work tree, to be measured")


def follow(session: Session) -> str | None:
    """After a run is recorded in a worker: move the worker (branch, index and work tree) to
    the incumbent when another worker kept since and nothing tracked is changed here; returns a
    warning when it could not (None otherwise)."""
    if session.worker is None:
        return None
    head, now = session.head(), tip(session)
    if now is None or now == head:
        return None
    repo = session.repo
    if not is_ancestor(repo, head, now):
        return (f"the worker branch is not behind the session branch "
                f"{session_branch(session.config.session_id)}; it was left where it is")
    try:
        move_work_tree(repo, head, now)
        repo.update_ref("HEAD", now, head, f"git-autoresearch: worker follows {repo.short(now)}")
    except GitError:
        return (f"the work tree could not follow the incumbent {repo.short(now)} (a changed or "
                "untracked file is in the way); the next keep replays onto it")
    session.moved_head(now)
    return None


def catch_up(session: Session) -> Replayed | None:
    """Before a worker measures: when another worker kept since this one's base, the
    candidate in the work tree is replayed onto the incumbent first (:func:`replay`), so that
    it is measured and decided on the commit it would be kept on (in a clone that joined
    through a remote, the remote's session branch fetched first); returns what was done (its
    ``conflicts`` set when it could not be replayed; nothing moved then), or None when the
    worker is on the incumbent (or holds no change: it then simply follows it)."""
    if session.worker is None:
        return None
    if session.remote is not None:  # a joined clone: the incumbent is the remote's
        from .upstream import sync

        check_free(session)  # (before a number is taken on the remote and the run measured)
        sync(session, before_measuring=True)
    now, head = tip(session), session.head()
    if now is None or now == head or not is_ancestor(session.repo, head, now):
        return None
    changes = session.changes()
    if not [p for p in changes.changed() if not session.bounds.is_protected(p)]:
        follow(session)
        return None
    with session.shared("replay a candidate before measuring"):
        return replay(session, changes, session.reserve_run(), head, now,
                      kept_between(session.repo, head, now))


def carried(before: Mapping[str, Any] | None, now: Mapping[str, Any]) -> dict[str, Any]:
    """The ``replayed`` object of a candidate replayed again (``now``: the last replay's,
    :meth:`Replayed.record`) after the replays ``before`` (None: none): ``from`` the first
    base, ``kept_meanwhile`` the runs kept over every hop, in order, and the rest the last
    replay's (``onto``, ``saved_at``, ``conflicts``)."""
    if not before:
        return dict(now)
    kept = list(before.get("kept_meanwhile") or [])
    kept += [n for n in now.get("kept_meanwhile") or [] if n not in kept]
    return {**now, "from": before.get("from", now.get("from")), "kept_meanwhile": kept}


def conflict_reason(outcome: Replayed) -> str:
    """Why a candidate that could not be replayed is discarded."""
    runs = ", ".join(str(n) for n in outcome.kept) or "?"
    shown = ", ".join(outcome.conflicts[:3]) + (" ..." if len(outcome.conflicts) > 3 else "")
    return f"conflicts with run(s) {runs} kept meanwhile by other workers ({shown})"


def keep_refused(session: Session, moved: IncumbentMoved) -> Refused:
    """What ``keep`` says when the incumbent moved: the candidate replayed onto it, to be
    measured again, or the paths that conflict (then it is for a discard)."""
    with session.shared("replay a candidate"):
        outcome = replay(session, session.changes(), session.next_run(), moved.base,
                         moved.tip, moved.kept)
    runs = ", ".join(str(n) for n in outcome.kept) or "?"
    if outcome.conflicts:
        return Refused(f"{moved.message}, and this candidate conflicts with them "
                       f"({', '.join(outcome.conflicts[:3])}): nothing was recorded; discard "
                       "it (git autoresearch discard -d ...)")
    return Refused(f"{moved.message}: the candidate was replayed onto the incumbent "
                   f"{session.repo.short(outcome.onto)} (run(s) {runs}; saved at "
                   f"{outcome.ref}) and must be measured against it: git autoresearch measure, "
                   "then keep")
