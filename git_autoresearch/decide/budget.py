"""The time budget of a segment (``max_duration``): when the segment began, how much of the
budget is left, and how long each kept improvement took; and what the stop rules count (the
runs since the last keep, the crashes and failed checks in a row, the target reached). Pure
functions of a segment and a clock reading, so that they can be checked without waiting."""

from __future__ import annotations

from ..ledger import Run, Segment, finite
from ..session.config import Config


def segment_began_ms(segment: Segment) -> int | None:
    """When ``segment`` began, in epoch milliseconds: its config header's ``timestamp`` (the
    moment ``start`` wrote it), else its first run's; None when neither has one (a session
    pi-autoresearch wrote before any run, say)."""
    stamp = finite((segment.header or {}).get("timestamp"))
    if stamp is None and segment.runs:
        stamp = finite(segment.runs[0].data.get("timestamp"))
    return None if stamp is None else int(stamp)


def time_left(config: Config, segment: Segment, now_ms: int) -> float | None:
    """Seconds of ``config.max_duration`` left in ``segment`` at ``now_ms`` (0 once spent,
    never negative); None when there is no budget or the segment's start is unknown."""
    budget = config.duration_budget
    began = segment_began_ms(segment)
    if budget is None or began is None:
        return None
    return max(0.0, budget - (now_ms - began) / 1000)


# The statuses of a run that failed: the measurement crashed, or its checks failed.
FAILED = ("crash", "checks_failed")


def runs_without_keep(segment: Segment) -> list[Run]:
    """The runs of ``segment`` since its last keep, oldest first (all of them when it kept
    nothing): the plateau ``max_runs_without_keep`` counts."""
    runs = segment.runs
    last = max((i for i, run in enumerate(runs) if run.status == "keep"), default=-1)
    return runs[last + 1:]


def failures_in_a_row(segment: Segment) -> list[Run]:
    """The last runs of ``segment`` that crashed or failed their checks, all in a row, oldest
    first: what ``max_failures_in_a_row`` counts."""
    runs = segment.runs
    first = len(runs)
    while first > 0 and runs[first - 1].status in FAILED:
        first -= 1
    return runs[first:]


def target_reached(config: Config, segment: Segment) -> Run | None:
    """The best kept run of ``segment`` when its metric reaches ``config.target_metric`` (equal
    to it, or better in the segment's direction); None without a target or before."""
    target, best = config.target_metric, segment.best
    if target is None or best is None or best.metric is None:
        return None
    return None if segment.better(target, best.metric) else best
