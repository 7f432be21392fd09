"""When the loop stops: a STOP sentinel, ``max_experiments`` reached, ``max_duration`` spent
(each recorded once as a ``stopped`` event), with a note of what the work tree still holds."""

from __future__ import annotations

from . import ledger as ledger_mod
from . import signals
from .errors import StopLoop
from .ledger import now_ms
from .session import Session


def check_stop(session: Session, command: str) -> None:
    """Exit 4 when the loop should stop: a STOP sentinel (recorded as a ``stopped`` event and
    removed), ``max_experiments`` reached or ``max_duration`` spent (each recorded as a
    ``stopped`` event naming the budget)."""
    if session.layout.stop.exists():
        workers = session.worker is not None
        with session.shared("stop"), signals.deferred():  # one stopped event per sentinel
            if not session.layout.stop.exists():  # another worker's command took it
                raise StopLoop("STOP sentinel found: the loop stops here"
                               + _unrecorded_note(session))
            event = {"type": "stopped", "timestamp": now_ms(), "command": command,
                     "next_run": session.ledger.next_run_number}
            if workers:
                event["worker"] = session.worker_name
            ledger_mod.append(session.layout.ledger, [event])
            if not workers:
                session.layout.stop.unlink(missing_ok=True)
            # The loop stops with exit 4 and its own message: a mirror that failed is
            # mirrored again by the next command that records.
            session.mirror_state("stopped")
        raise StopLoop("STOP sentinel found: the loop stops here ("
                       + ("with workers it stays, so that every worker stops; remove it to go "
                          "on: rm .auto/STOP)" if workers else "the sentinel was removed)")
                       + _unrecorded_note(session))
    if session.limit_reached():
        _budget_spent(session, command, "max_experiments")
        raise StopLoop(f"max_experiments ({session.config.max_experiments}) reached in this "
                       "segment: the loop stops here" + _unrecorded_note(session))
    others = measured_elsewhere(session)
    limit = session.config.max_experiments
    if limit is not None and others and session.experiments_in_segment() + len(others) >= limit:
        raise StopLoop(f"max_experiments ({limit}) reached in this segment, counting the runs "
                       f"other workers are measuring ({', '.join(others)}): the loop stops "
                       "here" + _unrecorded_note(session))
    if session.time_left() == 0:
        _budget_spent(session, command, "max_duration")
        raise StopLoop(f"max_duration ({session.config.max_duration}) spent in this segment: "
                       "the loop stops here" + _unrecorded_note(session))

def measured_elsewhere(session: Session) -> list[str]:
    """The other workers of the session measuring a run now (a run number held, not yet
    recorded, by a command still running there), as ``<worker> (run <n>)``; empty without
    workers or without a limit to count them against."""
    if session.worker is None or session.config.max_experiments is None:
        return []
    from .git import Repo
    from .lock import busy
    from .workers import reservations, worktree_path

    found = []
    for name, number in sorted(reservations(session.repo, session.config.session_id).items()):
        if name == session.worker_name or session.ledger.find(number, ours=True) is not None:
            continue
        path = worktree_path(session.repo, session.config.session_id, name,
                             session.worker.main)
        if path is not None and path.exists() and busy(Repo.discover(path).scratch):
            found.append(f"{name} (run {number})")
    return found


def _budget_spent(session: Session, command: str, budget: str) -> None:
    """Record that the loop stopped on ``budget`` (``max_experiments``, ``max_duration``):
    a ``stopped`` event naming it, once per budget and next run."""
    upcoming = session.ledger.next_run_number
    if any(e.get("type") == "stopped" and e.get("budget") == budget
           and e.get("next_run") == upcoming for e in session.ledger.events):
        return
    with session.shared("stop"), signals.deferred():
        ledger_mod.append(session.layout.ledger, [{"type": "stopped", "timestamp": now_ms(),
                                                "command": command, "next_run": upcoming,
                                                "budget": budget}])
        session.mirror_state("stopped")

def _unrecorded_note(session: Session) -> str:
    changes = session.changes()
    changed = [p for p in changes.changed() if not session.bounds.is_protected(p)]
    if not changed:
        return ""
    return (f"; the work tree has unrecorded changes ({', '.join(changed[:3])}"
            f"{' ...' if len(changed) > 3 else ''}): record them with git autoresearch "
            "discard or keep")
