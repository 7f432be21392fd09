"""A segment's ``confidence``: how far its best kept metric stands from its baseline, in
units of the runs' spread, exactly as pi-autoresearch computes it, and the label shown beside
it."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .stats import mad

if TYPE_CHECKING:
    from . import Segment


def confidence(segment: Segment, count: int | None = None) -> float | None:
    """The ledger's ``confidence`` field, bit for bit pi-autoresearch 1.6.2's
    (``computeConfidence``, extensions/pi-autoresearch/index.ts:426), over the segment's first
    ``count`` runs (all when None): ``|best kept - baseline| / MAD``, where the MAD and the best
    kept metric are over the runs whose metric (:attr:`ledger.Run.pi_metric`) is above 0, whatever
    their status, and the baseline is the segment's first run's metric, whatever its status
    (``findBaselineMetric``, index.ts:580). None with fewer than 3 runs above 0, a MAD of 0,
    no kept run above 0, a best equal to the baseline, or a quotient too large for a double
    (which ``JSON.stringify`` writes as null). Not rounded. A unitless float."""
    runs = segment.runs if count is None else segment.runs[:count]
    positive = [r for r in runs if r.pi_metric > 0]
    if len(positive) < 3:
        return None
    spread = mad([r.pi_metric for r in positive])
    if spread == 0:
        return None
    baseline = runs[0].pi_metric
    best: float | None = None
    for run in positive:
        if run.status == "keep" and (best is None or segment.better(run.pi_metric, best)):
            best = run.pi_metric
    if best is None or best == baseline:
        return None
    value = abs(best - baseline) / spread
    return value if math.isfinite(value) else None


def confidence_label(value: float | None) -> str:
    """*likely real* (>= 2), *marginal* (1 to 2), *within noise* (< 1), or *n/a*."""
    if value is None:
        return "n/a"
    if value >= 2:
        return "likely real"
    if value >= 1:
        return "marginal"
    return "within noise"
