"""``git autoresearch apply RUN``: bring the change of a run that was not kept (discarded,
crashed, or whose checks failed) back onto the work tree, to retry it or build on it, as DVC's
``exp apply`` does. HEAD and the index never move: the change lands as uncommitted changes of
the work tree, for the next ``run`` to measure. The attempt is taken from its attempt ref
(``refs/autoresearch/<id>/attempts/<run>``); when HEAD has moved since the run (a keep came
after it), its change is replayed onto HEAD first, in a temporary worktree
(:func:`git.replay.cherry_pick`), and a conflict is refused, naming the paths. The agent's
notes (protected paths) and ``.auto/`` are never touched."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from . import signals
from .checkouts import sweep
from .errors import Refused, UsageError
from .git import worktrees
from .git.replay import CONFLICT, EMPTY, cherry_pick, restore_worktree
from .paths import AUTO
from .recovery import locked
from .runcommits import run_commit
from .session import Session

FOLDER_PREFIX = "apply-"  # <scratch>/apply-<pid>: the worktree a replay onto HEAD uses


@dataclass(frozen=True)
class Applied:
    """What ``apply`` did: the ``run``, its attempt ``commit``, the HEAD it was applied
    ``onto`` (full object ids), whether it was ``replayed`` (HEAD had moved since the run) and
    the ``paths`` of the work tree it changed, and the ``warnings`` of finishing what a killed
    command had left."""

    run: int
    commit: str
    onto: str
    replayed: bool
    paths: tuple[str, ...]
    warnings: tuple[str, ...] = ()


def _listing(paths: list[str], limit: int = 5) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def apply_run(session: Session, number: int) -> Applied:
    """Put run ``number``'s change on the work tree (see the module). Raises
    :class:`UsageError` (exit 2) for a run that is unknown, kept, or has no attempt ref, and
    :class:`Refused` (exit 3) for a work tree with changes, a change that conflicts with HEAD
    or is in it already, or an untracked file in the way."""
    found = run_commit(session, number)
    run = found.run
    if run.status == "keep":
        raise UsageError(f"run {number} is kept: its change is on the session branch already")
    if found.source != "attempt_ref" or found.commit is None:
        why = ("its attempt ref was deleted by git autoresearch gc" if found.collected
               else "it has no attempt ref (recorded by another tool, or by discard before "
                    "anything changed)")
        raise UsageError(f"run {number} has no attempt to apply: {why}")
    repo, bounds = session.repo, session.bounds
    attempt = found.commit
    with locked(session, "apply") as recovered:
        head = session.head()
        dirty = [p for p in session.changes().changed() if not bounds.is_protected(p)]
        if dirty:
            raise Refused(f"the work tree has changes ({_listing(dirty)}): run, keep, discard "
                          f"or revert them before applying run {number}")
        parent = repo.resolve(f"{attempt}^")
        target = attempt if parent == head else _replayed(session, number, attempt, head)
        paths = [p for p in repo.changed_paths(head, target)
                 if not bounds.is_protected(p) and p.split("/")[0] != AUTO]
        if not paths:
            raise Refused(f"run {number}'s change is in HEAD already: nothing to apply")
        in_head = repo.blobs(head, paths)
        in_way = [p for p in paths if p not in in_head and os.path.lexists(repo.top / p)]
        if in_way:
            raise Refused(f"untracked files are in the way of run {number}'s change "
                          f"({_listing(in_way)}): move them first")
        with signals.deferred():  # the work tree changed whole or not at all
            restore_worktree(repo, target, paths)
    return Applied(number, attempt, head, target != attempt, tuple(paths),
                   tuple(recovered.warnings))


def _replayed(session: Session, number: int, attempt: str, head: str) -> str:
    """The attempt's change replayed onto ``head`` in a temporary worktree: the new commit's
    id. Refuses (exit 3) a conflict, naming the paths, or a change already in ``head``."""
    repo = session.repo
    sweep(session, FOLDER_PREFIX, ("tree",))
    folder = repo.scratch / f"{FOLDER_PREFIX}{os.getpid()}"
    tree = folder / "tree"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        worktrees.add_detached(repo, tree, head)
        picked = cherry_pick(tree, attempt)
    finally:
        with signals.deferred():
            worktrees.remove(repo, tree)
            shutil.rmtree(folder, ignore_errors=True)
    if picked.outcome == CONFLICT:
        raise Refused(f"run {number}'s change conflicts with HEAD ({repo.short(head)}) in "
                      f"{_listing(list(picked.paths))}: nothing was changed")
    if picked.outcome == EMPTY or picked.commit is None:
        raise Refused(f"run {number}'s change is in HEAD already: nothing to apply")
    return picked.commit
