"""One iteration of the loop, as ``run`` makes it (:func:`iterate`): under the session lock,
stop when asked to, fire the before hooks, measure, decide, keep or revert and record
(:func:`record.transaction.record`), take one more sample of the incumbent after a discard, fire
the after hooks. The command line (``commands.loop``) parses the options and prints what the
:class:`Iteration` holds; ``measure`` shares the first half (:func:`hooks_and_measure`).

In a session without workers the run goes straight to the recording. In a worker whose
incumbent moved meanwhile (another worker kept), the candidate is replayed onto the new
incumbent (:mod:`workers.replay`), measured again and decided afresh; those modules are
imported only then.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..decide.stopping import check_stop
from ..hooks.payload import fire_stage
from ..hooks.user import HookReport
from ..measure import worktree
from ..measure.samples import Measurement
from ..runtime.errors import AutoresearchError, Refused
from ..runtime.faults import checkpoint
from ..session.session import Session
from ..session.shared import IncumbentMoved
from .recovery import Recovery, locked
from .transaction import Recorded, record

if TYPE_CHECKING:
    from ..review.apply import Retry
    from ..workers.replay import Replayed

# A measurement's progress: seconds elapsed and the command's last line of output.
Progress = Callable[[float, str], None]


@dataclass
class Iteration:
    """What one ``run`` did: the run ``recovered`` first (a kill's leftovers), the ``before``
    hooks, the ``result`` measured and the loop's ``decision`` on it, the best metric before
    the run (``previous_best``), the run ``recorded`` and the ``after`` hooks (None for a dry
    run: nothing recorded), and ``notes``, warnings of the incumbent sampled again."""

    recovered: Recovery
    before: HookReport
    result: Measurement
    decision: str
    previous_best: float | None
    recorded: Recorded | None = None
    after: HookReport | None = None
    notes: list[str] = field(default_factory=list)


def iterate(session: Session, description: str, asi: Mapping[str, Any], *,
            retry: Retry | None = None, dry_run: bool = False,
            progress: Progress | None = None) -> Iteration:
    """One iteration of the loop on ``session``'s work tree: lock, stop rules, before hooks,
    measure, decide, keep or revert, record, sample the incumbent again, after hooks.

    ``retry``: the change of a run not kept, put on the work tree before measuring (and taken
    off again when the run is not recorded); ``dry_run``: measure and decide, record nothing.
    Raises :class:`runtime.errors.StopLoop` (exit 4) when the loop should stop and the
    refusals of a measurement and a record (exit 3)."""
    origin = retry.origin if retry else None
    with locked(session, "run") as recovered:
        session.check_kept_lines(head=True)
        before, result, caught, decision = _measured(session, retry, progress,
                                                     catch_up=not dry_run)
        checkpoint("run:measured")
        best = session.segment.best
        done = Iteration(recovered, before,
                         result if result is not None else Measurement.empty(), decision,
                         best.metric if best else None)
        if dry_run:
            if retry is not None:
                retry.take_back(session)
            return done
        if result is None:  # a worker's candidate conflicts with a keep made meanwhile
            assert caught is not None
            done.recorded = _conflicted(session, description, asi, before, caught, origin)
        elif session.worker is None:
            done.recorded = record(session, decision, description, result=result, asi=asi,
                                   hooks=before.summary(), origin=origin)
        else:
            done.recorded = record_replaying(
                session, decision, description, result=result, asi=asi,
                hooks=before.summary(), progress=progress,
                replayed=caught.record(session.repo) if caught else None, origin=origin)
        done.notes = worktree.remeasure_incumbent(session, done.recorded.record)
        done.after = fire_stage(session, "after", done.recorded.record)
    return done


def record_by_hand(session: Session, status: str, description: str, asi: Mapping[str, Any], *,
                   metric: float | None, given: Callable[[], dict[str, float]],
                   force: bool) -> Iteration:
    """``keep`` or ``discard`` (``status``) by hand: under the session lock, the measurement
    to record chosen (:func:`decide.choice.choose_measurement`: the pending one, or the
    ``metric`` and ``given`` metrics, NAME -> value, read once the lock is held), recorded
    with the before hooks fired for the pending one, the after hooks fired. The
    :class:`Iteration`'s ``result`` is the measurement recorded (empty when none) and
    ``notes`` what the choice says. Refuses (exit 3) a worker's keep whose incumbent moved,
    saying what to do."""
    from ..decide.choice import choose_measurement

    with locked(session, status) as recovered:
        session.check_kept_lines()
        # Before what there is to record is asked; the session's refs are read once, by
        # next_run, which the record asks again (its answer kept).
        session.next_run()
        session.check_not_joined_elsewhere()
        pending = worktree.read(session)
        choice = choose_measurement(session, status, pending, metric, given())
        best = session.segment.best
        result = choice.result if choice.result is not None else Measurement.empty()
        done = Iteration(recovered, HookReport("before"), result, status,
                         best.metric if best else None, notes=list(choice.notes))
        try:
            done.recorded = record(session, status, description, result=choice.result, asi=asi,
                                   hooks=pending.hooks if pending is not None else None,
                                   given=choice.given, force=force, reason=choice.forced)
        except IncumbentMoved as moved:
            from ..workers.replay import keep_refused

            raise keep_refused(session, moved) from None
        done.after = fire_stage(session, "after", done.recorded.record)
    return done


def measure_candidate(session: Session, progress: Progress | None = None
                      ) -> tuple[HookReport, Measurement]:
    """``measure``: under the session lock, :func:`hooks_and_measure`, the measurement left
    pending for keep or discard. Refuses (exit 3) a worker's candidate that conflicts with a
    keep made meanwhile, saying where it is saved."""
    with locked(session, "measure"):
        session.check_kept_lines(head=True)
        before, result, caught = hooks_and_measure(session, "measure", catch_up=True,
                                                   progress=progress)
    if result is None:
        assert caught is not None
        from ..workers.replay import conflict_reason

        raise Refused(f"the incumbent moved since this worker's base, and the candidate "
                      f"{conflict_reason(caught).removeprefix('conflicts ')}: nothing was "
                      f"measured; it is saved at {caught.ref}: discard it (git autoresearch "
                      "discard -d ...)")
    return before, result


def hooks_and_measure(session: Session, command: str, *, catch_up: bool,
                      progress: Progress | None = None,
                      prepare: Callable[[], object] | None = None
                      ) -> tuple[HookReport, Measurement | None, Replayed | None]:
    """Under the session lock: stop if asked to, ``prepare`` (a retry's change put on the
    work tree), fire the before hooks, then, in a worker with ``catch_up``, replay its
    candidate onto an incumbent that moved (:func:`workers.replay.catch_up`: None for the
    measurement when it conflicts), then measure. The measurement stays pending until a run
    is recorded (a keep that git refuses leaves it for discard or keep)."""
    check_stop(session, command)
    if prepare is not None:
        prepare()
    before = fire_stage(session, "before", None)
    caught = None
    if catch_up and session.worker is not None:
        from ..workers.replay import catch_up as replay_first

        caught = replay_first(session)
        if caught is not None and caught.conflicts:
            return before, None, caught
    return before, worktree.measure(session, progress, hooks=before.summary()), caught


def _measured(session: Session, retry: Retry | None, progress: Progress | None, *,
              catch_up: bool) -> tuple[HookReport, Measurement | None, Replayed | None, str]:
    """:func:`hooks_and_measure` for ``run``, with the loop's decision (``discard`` when
    there is no measurement: the candidate conflicted). A ``retry``'s change is put on the
    work tree once the loop is known not to stop, and taken off again when the run cannot
    be measured (a refusal, a signal): nothing of it is left unrecorded."""
    try:
        before, result, caught = hooks_and_measure(
            session, "run", catch_up=catch_up, progress=progress,
            prepare=(lambda: retry.apply(session)) if retry is not None else None)
        return before, result, caught, "discard" if result is None else session.decide(result)
    except AutoresearchError as exc:
        if retry is not None and retry.take_back(session):
            exc.message = (f"{exc.message}; {retry.name}'s change was taken off the "
                           "work tree again")
            exc.args = (exc.message,)
        raise
    except BaseException:
        if retry is not None:
            retry.take_back(session)
        raise


def _conflicted(session: Session, description: str, asi: Mapping[str, Any],
                before: HookReport, caught: Replayed, origin: Mapping[str, Any] | None
                ) -> Recorded:
    """The discard of a worker's candidate that could not be replayed onto the incumbent."""
    from ..workers.replay import conflict_reason

    return record(session, "discard", description, result=None, asi=asi,
                  hooks=before.summary(), replayed=caught.record(session.repo),
                  reason=conflict_reason(caught), origin=origin)


def record_replaying(session: Session, status: str, description: str, *,
                     result: Measurement, asi: Mapping[str, Any] | None,
                     hooks: Sequence[Mapping[str, Any]] | None,
                     progress: Progress | None = None,
                     replayed: dict[str, Any] | None = None,
                     origin: Mapping[str, Any] | None = None
                     ) -> Recorded:
    """:func:`record.transaction.record` for a worker's ``run``: a keep whose incumbent moved
    (another worker kept) is replayed onto the new incumbent and measured again (with
    ``progress``), up to :data:`workers.replay.REPLAYS` times, then decided afresh
    (in a clone that joined through a remote, the remote's tip is fetched before each
    decision, and with it the new incumbent's record); a replay that conflicts is a discard
    naming the paths (the candidate saved at its attempt ref, as every discard's), and so is a
    candidate the incumbent kept outrunning. ``origin``: where the change came from (a
    retry's run, a queued candidate: every record names it)."""
    from ..workers.replay import REPLAYS, carried, conflict_reason, replay
    from ..workers.upstream import sync

    for _ in range(REPLAYS + 1):
        try:
            # In a joined clone the incumbent is the remote's: its tip is read again before
            # the run is decided, not only before it was measured.
            sync(session)
            # A discard was decided against a best its base may not have had: it is checked
            # too, under the lock the record takes (so no keep lands in between).
            return record(session, status, description, result=result, asi=asi, hooks=hooks,
                          replayed=replayed, recheck_discard=True, origin=origin)
        except IncumbentMoved as moved:
            # The new incumbent's record (its samples: the pool the candidate is measured
            # against again) comes with it.
            sync(session, before_measuring=True)
            with session.shared("replay a candidate"):
                outcome = replay(session, session.changes(), session.next_run(), moved.base,
                                 moved.tip, moved.kept)
            replayed = carried(replayed, outcome.record(session.repo))
            if outcome.conflicts:  # its decision was against an incumbent that is gone
                return record(session, "discard", description,
                              result=dataclasses.replace(result, decision=None), asi=asi,
                              hooks=hooks, replayed=replayed, reason=conflict_reason(outcome),
                              origin=origin)
            result = worktree.measure(session, progress)  # (no hooks fire again)
            status = session.decide(result)
    return record(session, "discard", description,
                  result=dataclasses.replace(result, decision=None), asi=asi, hooks=hooks,
                  replayed=replayed, origin=origin,
                  reason=f"the incumbent moved {REPLAYS + 1} times while this candidate was "
                         "measured again; try it again")
