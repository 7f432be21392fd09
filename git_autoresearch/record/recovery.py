"""Finish what a killed command left: the keep, revert or set-aside its intent record names.

Every recording command takes the session lock through :func:`locked`, which finishes or rolls
back an interrupted operation first (and fires the after hooks of a run it finished, which the
killed command never fired). A revert whose attempt ref holds its attempt is finished; one
killed before that is rolled back, since nothing had changed. A keep whose commit is HEAD, or
that had nothing to commit, is finished; one killed before committing is rolled back (the
index back to what the keep found; the experiment stays in the work tree, unrecorded). When
HEAD moved in between, it is :class:`Refused`, or set aside with ``abandon`` (doctor --fix).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..git.objects import hash_files
from ..history.experiment import finish_revert, index_backup, revert
from ..history.trailers import run_trailer, set_aside_message
from ..hooks.payload import fire_stage
from ..runtime import signals
from ..runtime.atomic import whole_index
from ..runtime.errors import Refused
from ..session.session import Session
from . import intents
from .intents import Intent
from .transaction import append_run

if TYPE_CHECKING:
    from ..hooks.user import HookReport


@dataclass(frozen=True)
class Recovery:
    """What :func:`locked` finished before the command's own work: ``note`` (None: nothing),
    the report of the after hooks it fired for that run (None: none fired), and warnings."""

    note: str | None = None
    hooks: HookReport | None = None
    warnings: list[str] = field(default_factory=list)


@contextmanager
def locked(session: Session, what: str) -> Iterator[Recovery]:
    """Hold the session lock for a recording command (``what``: its name, for the lock file),
    with git's lock files checked (``Session.check_git_locks``) and an interrupted keep, revert
    or set-aside finished first; yields what was finished."""
    with session.lock(what):
        session.check_git_locks()
        with signals.deferred():
            if session.interrupted() is None:
                recovered = recover(session)
            else:
                with session.shared(f"{what}: finish an interrupted run"):
                    recovered = recover(session)
        yield recovered


def recover(session: Session, *, abandon: bool = False) -> Recovery:
    """:func:`finish_interrupted`, then the after hooks of the run it finished, which the
    killed command never fired."""
    finished: list[Mapping[str, Any]] = []
    warnings: list[str] = []
    note = finish_interrupted(session, finished, warnings, abandon=abandon)
    if session.worker is not None:  # only a worker replays its candidate
        from ..workers.replay import finish_interrupted_replay

        replayed = finish_interrupted_replay(session)
        if replayed:
            note = f"{note}; {replayed}" if note else replayed
    hooks = fire_stage(session, "after", finished[0]) if finished else None
    return Recovery(note, hooks, warnings)


def _clean_scratch(session: Session) -> None:
    """Remove what killed commands left in the scratch folder (not this process's files)."""
    for pattern in ("attempt-index.*", "state-piece.*", "*.tmp"):
        for leftover in session.repo.scratch.glob(pattern):
            if leftover.name.split(".")[-1] != str(os.getpid()):
                leftover.unlink(missing_ok=True)


def finish_interrupted(session: Session, finished: list[Mapping[str, Any]], warnings: list[str],
                       *, abandon: bool) -> str | None:
    """Finish or roll back an interrupted keep, revert or set-aside; returns what was done, or
    None when nothing was interrupted. The record of a run finished here (or found recorded
    already, its after hooks not yet fired) is appended to ``finished``."""
    _clean_scratch(session)
    intent = session.interrupted()
    backup = index_backup(session.repo)
    if intent is None or intent.op != "keep":
        backup.unlink(missing_ok=True)
    if intent is None:
        return None
    number = intent.run
    if not intent.readable or number is None or (intent.op != "set-aside"
                                                  and intent.record is None):
        intents.set_aside(session.layout.intent)
        return "set aside an unreadable intent record"
    if intent.op == "set-aside":
        return _finish_set_aside(session, intent, number, abandon=abandon)
    already = session.ledger.find(number, ours=True)
    if already is not None:
        # The intent is cleared once the after hooks fired: they have not.
        finished.append(already.data)
        return (f"run {number} was already recorded; its after hooks had not fired (they "
                "fire now)")
    if intent.op == "revert":
        return _finish_revert(session, intent, number, finished, warnings, abandon=abandon)
    return _finish_keep(session, intent, number, finished, warnings, abandon=abandon)


def _finish_revert(session: Session, intent: Intent, number: int,
                   finished: list[Mapping[str, Any]], warnings: list[str], *, abandon: bool
                   ) -> str:
    assert intent.record is not None  # finish_interrupted set aside an intent without one
    record = intent.record.copy()
    ref = intent.ref
    stopped = _not_to_finish(session, intent, intents.made_by(session.repo, ref, intent),
                             abandon, f"revert of run {number}", f"its attempt is at {ref}")
    if stopped:
        return stopped
    note = _finish_targets(session, intent, ref)
    record["attempt_ref"] = ref
    finished.append(append_run(session, record, intent.untracked_after, None, warnings))
    return f"finished the interrupted revert of run {number} ({record['status']}){note}"


def _finish_keep(session: Session, intent: Intent, number: int,
                 finished: list[Mapping[str, Any]], warnings: list[str], *, abandon: bool) -> str:
    assert intent.record is not None  # finish_interrupted set aside an intent without one
    record = intent.record.copy()
    repo = session.repo
    head = repo.head()
    ref = intent.ref
    ours = intents.made_by(repo, ref, intent)
    committed = head != intent.head
    if committed:
        stopped = _keep_moved(session, intent, number, str(head), abandon=abandon)
        if stopped:
            return stopped
    elif intent.to_stage and not ours:
        return _roll_back_keep(session, intent, number)
    index_backup(repo).unlink(missing_ok=True)
    note = ""
    if intent.created or intent.tracked:
        if ours:
            note = _finish_targets(session, intent, ref)
        else:
            revert(repo, session.bounds, session.changes(), head=intent.head, ref=ref,
                   only=[*intent.created, *intent.tracked],
                   message=set_aside_message(number, None, kept=True), stage="keep")
        record["attempt_ref"] = ref
    assert head is not None
    session.moved_head(head)
    if committed and session.worker is not None:
        from ..workers.replay import advance, tip

        landing = {**record, "commit": repo.short(head), "committed": committed}
        now = tip(session)
        try:
            if now == intent.head:  # killed between the commit and the advance
                advance(session, intent.head, head, landing)
            elif session.remote is not None:  # killed between the advance and the push
                from ..workers.upstream import land

                land(session, intent.head, head, landing)
            elif now != head:  # killed before the advance, and another worker kept since
                return _undo_unlanded(session, intent, number, str(head), now)
        except Refused as exc:
            if session.repo.head() != intent.head:  # not undone: the intent stays
                raise
            session.layout.intent.unlink(missing_ok=True)
            return (f"the interrupted keep of run {number} could not land on "
                    f"{session.remote}: {exc.message}; it was undone here, and the "
                    "candidate is in the work tree, to be measured again (git autoresearch "
                    "run)")
    record.update({"commit": repo.short(head), "committed": committed})
    finished.append(append_run(session, record, intent.untracked_after, None, warnings))
    return f"finished the interrupted keep of run {number}{note}"


def _undo_unlanded(session: Session, intent: Intent, number: int, head: str,
                   now: str | None) -> str:
    """A worker's keep ``head`` of run ``number``, killed before the session branch's
    advance, which another worker moved to ``now`` since: it cannot go onto it (two keeps on
    one incumbent), so it is undone here, the candidate left in the work tree for the next
    run to replay and measure again, and nothing recorded."""
    from ..workers.upstream import undo_keep

    undo_keep(session, intent.head, head)
    session.layout.intent.unlink(missing_ok=True)
    moved = f" (now {session.repo.short(now)})" if now else ""
    aside = (f"; what it set aside outside the scope is at {intent.ref}"
             if intent.created or intent.tracked else "")
    return (f"the interrupted keep of run {number} could not land: another worker kept on the "
            f"session branch since{moved}; it was undone here, and the candidate is in the "
            f"work tree, to be measured again (git autoresearch run){aside}")


def _keep_moved(session: Session, intent: Intent, number: int, head: str, *, abandon: bool
                ) -> str | None:
    """For a keep whose HEAD moved: None when the move is that keep's commit (its parent the
    HEAD it found, its ``Autoresearch-Run`` trailer this run); else set aside with ``abandon``,
    or :class:`Refused`."""
    parent = session.repo.resolve(f"{head}^")
    if parent == intent.head and run_trailer(session.repo, head) == str(number):
        return None
    if not abandon:
        raise Refused(f"HEAD moved since the keep of run {number} was interrupted, and not by "
                      "that keep (git autoresearch doctor --fix sets the interrupted operation "
                      "aside)")
    intents.set_aside(session.layout.intent)
    return f"set aside the interrupted keep of run {number} (HEAD had moved)"


def _roll_back_keep(session: Session, intent: Intent, number: int) -> str:
    """Roll back a keep killed before it committed: the index it found comes back."""
    repo = session.repo
    backup = index_backup(repo)
    if whole_index(backup):
        os.replace(backup, repo.git_dir / "index")  # the index the keep found
    elif intent.had_index:
        # No whole copy: the keep was killed while copying the index, before it staged
        # anything, so the index is still the one it found.
        backup.unlink(missing_ok=True)
    else:
        repo.unstage(intent.to_stage)
    session.layout.intent.unlink()
    return (f"rolled back the interrupted keep of run {number}: nothing was committed, and the "
            "experiment is still in the work tree")


def _finish_set_aside(session: Session, intent: Intent, number: int, *, abandon: bool) -> str:
    """Finish the set-aside before measuring run ``number`` that was interrupted: when its
    scope ref holds what it saved, remove what is left of the saved changes (unless they
    changed since); otherwise nothing had changed. :class:`Refused` when HEAD moved since
    (with ``abandon``, the intent record is set aside)."""
    ref = intent.ref
    stopped = _not_to_finish(session, intent, intents.made_by(session.repo, ref, intent),
                             abandon, f"set-aside before run {number}",
                             f"the changes are saved at {ref}")
    if stopped:
        return stopped
    note = _finish_targets(session, intent, ref)
    session.layout.intent.unlink()
    return (f"finished setting aside the changes outside the scope or to readonly files "
            f"before run {number}: saved at {ref} (see them: git show {ref}){note}")


def _not_to_finish(session: Session, intent: Intent, ours: bool, abandon: bool, what: str,
                   saved: str) -> str | None:
    """For an interrupted revert or set-aside (``what``, e.g. ``revert of run 4``): what was
    done instead of finishing it, or None when it is to be finished. Rolled back when its ref
    does not hold its attempt (``ours`` false: nothing had changed); set aside with
    ``abandon`` when HEAD moved since, else :class:`Refused` naming where the changes are
    (``saved``)."""
    if not ours:
        session.layout.intent.unlink()
        return f"rolled back the interrupted {what}: nothing had changed"
    if session.repo.head() != intent.head:
        if not abandon:
            raise Refused(f"HEAD moved since the {what} was interrupted; {saved} (git "
                          "autoresearch doctor --fix sets the interrupted operation aside)")
        intents.set_aside(session.layout.intent)
        return f"set aside the interrupted {what} (HEAD had moved)"
    return None


def _diverged(session: Session, attempt: str, head: str, paths: list[str]) -> list[str]:
    """Paths whose content is neither the attempt's nor HEAD's: changed after the kill."""
    if not paths:  # no git calls for no paths
        return []
    repo = session.repo
    in_attempt, in_head = repo.blobs(attempt, paths), repo.blobs(head, paths)
    now = hash_files(repo, paths)
    # A path that cannot be hashed (a newline in its name) counts as changed: left alone.
    return [p for p in paths if "\n" in p or now.get(p) not in (in_attempt.get(p),
                                                              in_head.get(p))]


def _finish_targets(session: Session, intent: Intent, ref: str) -> str:
    """Finish restoring an interrupted revert's paths, unless they changed since."""
    moved = _diverged(session, ref, intent.head, [*intent.created, *intent.tracked])
    if moved:
        return (f"; the work tree was left as it is, since {', '.join(moved[:3])} changed "
                "after the interruption")
    finish_revert(session.repo, intent.created, intent.tracked, intent.staged_preexisting)
    return ""
