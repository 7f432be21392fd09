"""One iteration's record, as ``run`` makes it: the candidate recorded
(:func:`record.recording.record`), and, in a worker whose incumbent moved meanwhile (another
worker kept), replayed onto the new incumbent (:mod:`workers.replaying`), measured again and
decided afresh. Above both the recording and the workers' replay, so that neither imports the
other back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..measure.samples import Measurement
from ..session.session import Session
from ..session.workers import IncumbentMoved
from ..workers.landing import sync
from ..workers.replaying import REPLAYS, conflict_reason, replay
from .recording import Recorded, record


def record_replaying(session: Session, status: str, description: str, *,
                     result: Measurement, asi: Mapping[str, Any] | None,
                     hooks: Sequence[Mapping[str, Any]] | None,
                     measure_again: Callable[[], Measurement],
                     replayed: dict[str, Any] | None = None, retry_of: int | None = None
                     ) -> Recorded:
    """:func:`record.recording.record` for ``run``: a keep whose incumbent moved (another worker
    kept) is replayed onto the new incumbent and measured again (``measure_again``), up to
    :data:`REPLAYS` times, then decided afresh (in a clone that joined through a remote, the
    remote's tip is fetched before each decision, and with it the new incumbent's record);
    a replay that conflicts is a discard naming
    the paths (the candidate saved at its attempt ref, as every discard's), and so is a
    candidate the incumbent kept outrunning. ``retry_of``: the run a retry tries again
    (every record names it)."""
    for _ in range(REPLAYS + 1):
        try:
            # In a joined clone the incumbent is the remote's: its tip is read again before
            # the run is decided, not only before it was measured.
            sync(session)
            # A discard was decided against a best its base may not have had: it is checked
            # too, under the lock the record takes (so no keep lands in between).
            return record(session, status, description, result=result, asi=asi, hooks=hooks,
                          replayed=replayed, recheck_discard=True, retry_of=retry_of)
        except IncumbentMoved as moved:
            # The new incumbent's record (its samples: the pool the candidate is measured
            # against again) comes with it.
            sync(session, before_measuring=True)
            with session.shared("replay a candidate"):
                outcome = replay(session, session.changes(), session.next_run(), moved.base,
                                 moved.tip, moved.kept)
            replayed = outcome.record(session.repo)
            if outcome.conflicts:  # its decision was against an incumbent that is gone
                return record(session, "discard", description,
                              result=dataclasses.replace(result, decision=None), asi=asi,
                              hooks=hooks, replayed=replayed, reason=conflict_reason(outcome),
                              retry_of=retry_of)
            result = measure_again()
            status = session.decide(result)
    return record(session, "discard", description,
                  result=dataclasses.replace(result, decision=None), asi=asi, hooks=hooks,
                  replayed=replayed, retry_of=retry_of,
                  reason=f"the incumbent moved {REPLAYS + 1} times while this candidate was "
                         "measured again; try it again")
