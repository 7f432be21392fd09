"""``git autoresearch apply RUN``: bring the change of a run that was not kept (discarded,
crashed, or whose checks failed) back onto the work tree, to retry it or build on it, as DVC's
``exp apply`` does. HEAD and the index never move: the change lands as uncommitted changes of
the work tree, for the next ``run`` to measure. The attempt is taken from its attempt ref
(``refs/autoresearch/<id>/attempts/<run>``); when HEAD has moved since the run (a keep came
after it), its change is replayed onto HEAD first, in a temporary worktree
(:func:`git.worktrees.cherry_pick`), and a conflict is refused, naming the paths. The agent's
notes (protected paths) and ``.auto/`` are never touched."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
from dataclasses import dataclass
from typing import Any

from ..git import worktrees
from ..git.worktrees import CONFLICT, EMPTY, cherry_pick, restore_worktree
from ..history.checkouts import sweep
from ..record.recovery import locked
from ..runtime import signals
from ..runtime.errors import Refused, UsageError
from ..runtime.scope import AUTO
from ..session.session import Session
from .run_commits import run_commit

FOLDER_PREFIX = "apply-"  # <scratch>/apply-<pid>: the worktree a replay onto HEAD uses


class ChangeRefused(Refused):
    """The change cannot go on the work tree: it conflicts with HEAD, is in HEAD already, or
    an untracked file is in its way (exit 3)."""


GERUNDS = {"apply": "applying", "retry": "retrying", "measure": "measuring"}  # in the errors


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


def _set_aside_hint(session: Session, number: int) -> str:
    """Where run ``number``'s set-aside changes are, and how to bring a file back; empty when
    it set none aside."""
    from ..measure.worktree import set_asides

    found = set_asides(session, number)
    if not found:
        return ""
    ref, paths = found[-1]
    return (f"; what it set aside as outside the scope is at {ref} ({_listing(paths)}): git "
            f"restore --source={ref} -- ':(top,literal)<path>' brings a file back")


def apply_run(session: Session, number: int) -> Applied:
    """Put run ``number``'s change on the work tree (see the module), under the session lock.
    Raises :class:`UsageError` (exit 2) for a run that is unknown, kept, or has no attempt
    ref, and :class:`Refused` (exit 3) for a work tree with changes, a change that conflicts
    with HEAD or is in it already, or an untracked file in the way."""
    attempt = attempt_of(session, number)
    with locked(session, "apply") as recovered:
        done = bring_back(session, number, attempt)
    return dataclasses.replace(done, warnings=tuple(recovered.warnings))


def attempt_of(session: Session, number: int, verb: str = "apply") -> str:
    """The attempt commit (full object id) of run ``number``, a run not kept; ``verb``
    (``apply``, ``retry``) names what is asked in the errors. Raises :class:`UsageError`
    (exit 2) for a run that is unknown, kept, or has no attempt ref (another tool's run, a
    discard that changed nothing, or one whose ref ``gc`` deleted)."""
    found = run_commit(session, number)
    if found.run.status == "keep":
        raise UsageError(f"run {number} is kept: its change is on the session branch already"
                         + ("" if verb == "apply" else "; only a run not kept (discard, crash, "
                                                        "checks_failed) can be retried"))
    if found.source != "attempt_ref" or found.commit is None:
        why = ("its attempt ref was deleted by git autoresearch gc" if found.collected
               else "it has no attempt ref (recorded by another tool, or by discard before "
                    "anything changed)")
        raise UsageError(f"run {number} has no attempt to {verb}: {why}")
    return found.commit


def bring_back(session: Session, number: int, attempt: str, verb: str = "apply", *,
               name: str | None = None) -> Applied:
    """Put run ``number``'s change (its ``attempt`` commit: :func:`attempt_of`) on the work
    tree, replayed onto HEAD when HEAD moved since; the caller holds the session lock.
    ``verb`` (``apply``, ``retry``, ``measure``) names what is asked in the errors, and
    ``name`` the change (default ``run <number>``: a queued candidate's is its own). Raises
    :class:`Refused` (exit 3), with nothing changed, for a work tree with changes, a change
    that conflicts with HEAD (naming the paths) or is in it already, or an untracked file in
    the way."""
    repo, bounds = session.repo, session.bounds
    what = name or f"run {number}"
    head = session.head()
    dirty = [p for p in session.changes().changed() if not bounds.is_protected(p)]
    if dirty:
        raise Refused(f"the work tree has changes ({_listing(dirty)}): run, keep, discard "
                      f"or revert them before {GERUNDS[verb]} {what}")
    parent = repo.resolve(f"{attempt}^")
    own = repo.changed_paths(parent, attempt) if parent is not None else None
    if own == []:
        raise ChangeRefused(f"{what} recorded no change (nothing in the scope had changed): "
                            f"nothing to {verb}" + _set_aside_hint(session, number))
    target = attempt if parent == head else _replayed(session, what, attempt, head, verb)
    # On the HEAD it was tried on, the change is the attempt's own (no second diff).
    changed = own if target == attempt and own is not None else \
        repo.changed_paths(head, target)
    paths = [p for p in changed if not bounds.is_protected(p) and p.split("/")[0] != AUTO]
    if not paths:
        raise ChangeRefused(f"{what}'s change is in HEAD already: nothing to {verb}")
    in_head = repo.blobs(head, paths)
    in_way = [p for p in paths if p not in in_head and os.path.lexists(repo.top / p)]
    if in_way:
        raise ChangeRefused(f"untracked files are in the way of {what}'s change "
                      f"({_listing(in_way)}): move them first")
    with signals.deferred():  # the work tree changed whole or not at all
        restore_worktree(repo, target, paths)
    return Applied(number, attempt, head, target != attempt, tuple(paths))


def take_back(session: Session, applied: Applied) -> None:
    """Put the paths :func:`bring_back` changed back as they are in the commit it applied
    onto (``applied.onto``): a retry that is not recorded (a dry run, a measurement that
    failed) leaves the work tree as it found it. Raises :class:`GitError`."""
    with signals.deferred():
        restore_worktree(session.repo, applied.onto, applied.paths)


def _replayed(session: Session, what: str, attempt: str, head: str, verb: str) -> str:
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
        raise ChangeRefused(f"{what}'s change conflicts with HEAD ({repo.short(head)}) in "
                      f"{_listing(list(picked.paths))}: nothing was changed")
    if picked.outcome == EMPTY or picked.commit is None:
        raise ChangeRefused(f"{what}'s change is in HEAD already: nothing to {verb}")
    return picked.commit


# What the description of a retry begins with, unless the caller gives one (``run -d``).
RETRY_MARK = "retry of run {number}: "
_MARK = re.compile(r"\Aretry of run \d+: ")


def retry_description(description: str, number: int) -> str:
    """The description of a retry of run ``number`` whose description is ``description``:
    ``retry of run 12: <description>``; a retry of a retry names the run it retries, not
    every run before it."""
    return RETRY_MARK.format(number=number) + _MARK.sub("", description, count=1)


@dataclass
class Retry:
    """``run --retry RUN``: run ``number``'s ``attempt`` (:func:`attempt_of`), put on the work
    tree by :meth:`apply` (``applied``: what it did) and taken off again by
    :meth:`take_back` when the run is not recorded."""

    number: int
    attempt: str
    description: str
    applied: Applied | None = None

    @classmethod
    def of(cls, session: Session, number: int) -> Retry:
        """The retry of run ``number``; :class:`UsageError` (exit 2) for a run that is
        unknown, kept, or has no attempt (:func:`attempt_of`)."""
        attempt = attempt_of(session, number, "retry")
        run = session.ledger.find(number)
        assert run is not None  # (attempt_of found it)
        return cls(number, attempt, retry_description(run.description, number))

    @property
    def name(self) -> str:
        """The change, as the messages name it."""
        return f"run {self.number}"

    @property
    def origin(self) -> dict[str, Any]:
        """What the record of the run says of where its change came from."""
        return {"retry_of": self.number}

    def apply(self, session: Session) -> Applied:
        """Under the session lock, with the refusals of a measurement made first (a segment
        without its baseline, a ledger that cannot be written), put the change on the work
        tree (:func:`bring_back`); :class:`Refused` (exit 3) with nothing changed."""
        session.check_baseline()
        session.preflight()
        self.applied = bring_back(session, self.number, self.attempt, "retry")
        return self.applied

    def take_back(self, session: Session) -> bool:
        """Take the applied change off the work tree again (:func:`take_back`), and the
        measurement of it that is pending (it measured a tree that is gone), unless HEAD
        moved since (a worker's candidate replayed onto a new incumbent: it is then the
        replay's to keep); whether it did."""
        applied = self.applied
        if applied is None or session.head() != applied.onto:
            return False
        take_back(session, applied)
        with contextlib.suppress(OSError):  # a folder in its place: read as no measurement
            session.layout.pending.unlink(missing_ok=True)
        return True
