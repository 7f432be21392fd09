"""The time budget of a segment (``max_duration``): when the segment began, how much of the
budget is left, and how long each kept improvement took. Pure functions of a segment and a
clock reading, so that they can be checked without waiting."""

from __future__ import annotations

from .config import Config
from .ledger import Segment, finite


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
