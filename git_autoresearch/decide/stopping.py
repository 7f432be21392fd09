"""When the loop stops: a STOP sentinel, or a stop rule of the configuration met in the
segment (``max_experiments`` reached, ``max_duration`` spent, ``target_metric`` reached,
``max_runs_without_keep`` or ``max_failures_in_a_row`` runs in a row), each recorded once as a
``stopped`` event, with a note of what the work tree still holds."""

from __future__ import annotations

from ..ledger import Run, now_ms
from ..ledger.jsontext import number_text
from ..runtime import signals
from ..runtime.errors import StopLoop
from ..session.session import Session
from .budget import failures_in_a_row, runs_without_keep, target_reached

# The stop rules, by configuration key, in the order they are checked; the first two are
# budgets (their stopped events name them as ``budget`` too).
RULES = ("max_experiments", "max_duration", "target_metric", "max_runs_without_keep",
         "max_failures_in_a_row")
BUDGETS = RULES[:2]


def check_stop(session: Session, command: str) -> None:
    """Exit 4 (:class:`StopLoop`, its message one line) when the loop should stop: a STOP
    sentinel (recorded as a ``stopped`` event and removed), or a stop rule met
    (:func:`rule_met`, recorded once as a ``stopped`` event naming the rule and why)."""
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
            session.append([event])
            if not workers:
                session.layout.stop.unlink(missing_ok=True)
            # The loop stops with exit 4 and its own message: a mirror that failed is
            # mirrored again by the next command that records.
            session.mirror_state("stopped")
        raise StopLoop("STOP sentinel found: the loop stops here ("
                       + (_kept_note(session) if workers else "the sentinel was removed)")
                       # (removed, it lets the next measure run: keep after it, too)
                       + _unrecorded_note(session, STOPPED if workers else ONE_SHOT))
    met = rule_met(session)
    if met is not None:
        rule, reason = met
        _rule_met(session, command, rule, reason)
        raise StopLoop(f"{reason}: the loop stops here" + _unrecorded_note(session))
    others = measured_elsewhere(session)
    limit = session.config.max_experiments
    if limit is not None and others and session.experiments_in_segment() + len(others) >= limit:
        raise StopLoop(f"max_experiments ({limit}) reached in this segment, counting the runs "
                       f"other workers are measuring ({', '.join(others)}): the loop stops "
                       "here" + _unrecorded_note(session))


def rule_met(session: Session) -> tuple[str, str] | None:
    """The first stop rule of ``session``'s configuration that its current segment meets, in
    the order of :data:`RULES`: (its configuration key, why, one line without the end of the
    sentence); None when the loop may go on. Reads the ledger and the clock only."""
    cfg, seg = session.config, session.segment
    if session.limit_reached():
        return "max_experiments", f"max_experiments ({cfg.max_experiments}) reached in this " \
            "segment"
    if session.time_left() == 0:
        return "max_duration", f"max_duration ({cfg.max_duration}) spent in this segment"
    best = target_reached(cfg, seg)
    if best is not None and cfg.target_metric is not None and best.metric is not None:
        return "target_metric", (f"target_metric ({number_text(cfg.target_metric)}) reached in "
                                 f"this segment: the best so far is {number_text(best.metric)} "
                                 f"(run {best.number})")
    for key, counted, what in (("max_runs_without_keep", runs_without_keep, "without a keep"),
                                ("max_failures_in_a_row", failures_in_a_row,
                                 "crashed or failed their checks")):
        most = getattr(cfg, key)
        if most is None:  # counted only for a rule that is set: check_stop asks on every run
            continue
        runs = counted(seg)
        if len(runs) >= most:
            return key, (f"{key} ({most}) reached in this segment: {len(runs)} run(s) in a row "
                         f"{what} ({_span(runs)})")
    return None


def _kept_note(session: Session) -> str:
    """What the STOP sentinel a worker met does: it stays, for every worker of this
    machine's work trees; a clone joined through a remote has a sentinel of its own."""
    if session.remote is not None:
        return ("it stays, for the workers of this clone; a clone that joined through the "
                "remote has its own .auto/STOP: stop each there; remove this one to go on: "
                "rm .auto/STOP)")
    return "with workers it stays, so that every worker stops; remove it to go on: rm .auto/STOP)"


def _span(runs: list[Run]) -> str:
    """``run 5``, or ``runs 4 to 7``: the first and last of ``runs`` (one at least)."""
    first, last = runs[0].number, runs[-1].number
    return f"run {first}" if first == last else f"runs {first} to {last}"


def measured_elsewhere(session: Session) -> list[str]:
    """The other workers of the session measuring a run now (a run number held, not yet
    recorded, by a command still running there), as ``<worker> (run <n>)``; empty without
    workers or without a limit to count them against."""
    if session.worker is None or session.config.max_experiments is None:
        return []
    from ..git import Repo
    from ..session.lock import busy
    from ..session.shared import reservations, worktree_path

    found = []
    for name, number in sorted(reservations(session.repo, session.config.session_id).items()):
        if name == session.worker_name or session.ledger.find(number, ours=True) is not None:
            continue
        path = worktree_path(session.repo, session.config.session_id, name,
                             session.worker.main)
        if path is not None and path.exists() and busy(Repo.discover(path).scratch):
            found.append(f"{name} (run {number})")
    return found


def _rule_met(session: Session, command: str, rule: str, reason: str) -> None:
    """Record that the loop stopped on ``rule`` (a key of :data:`RULES`) for ``reason``: a
    ``stopped`` event naming both (the budgets also as ``budget``, as they always have), once
    per rule and next run, whichever worker's command meets it first."""
    def said() -> bool:
        upcoming = session.ledger.next_run_number
        return any(e.get("type") == "stopped" and (e.get("rule") or e.get("budget")) == rule
                   and e.get("next_run") == upcoming for e in session.ledger.events)

    if said():
        return
    with session.shared("stop"), signals.deferred():
        if said():  # (another worker's command recorded it meanwhile)
            return
        event = {"type": "stopped", "timestamp": now_ms(), "command": command,
                 "next_run": session.ledger.next_run_number}
        if rule in BUDGETS:
            event["budget"] = rule
        session.append([{**event, "rule": rule, "reason": reason}])
        session.mirror_state("stopped")


# What to do with unrecorded changes once the loop stops: nothing more is measured; after a
# STOP that was removed, the next measure runs.
STOPPED = ("record them with git autoresearch discard, or with keep --metric VALUE for a "
           "number measured elsewhere")
ONE_SHOT = "record them with git autoresearch discard or keep"


def _unrecorded_note(session: Session, then: str = STOPPED) -> str:
    said = unrecorded_text(session, then)
    return f"; {said}" if said else ""


def unrecorded_text(session: Session, then: str = STOPPED) -> str | None:
    """What to say of the changes in the work tree no run recorded (the paths the next run
    would measure, up to three), and ``then`` what to do; a conflict git left unmerged there
    instead, which no run measures (:meth:`Session.unmerged_problem`); None when there is
    none."""
    changes = session.changes()
    if changes.unmerged:
        return session.unmerged_problem(changes)
    changed = [p for p in changes.changed() if not session.bounds.is_protected(p)]
    if not changed:
        return None
    return (f"the work tree has unrecorded changes ({', '.join(changed[:3])}"
            f"{' ...' if len(changed) > 3 else ''}): {then}")
