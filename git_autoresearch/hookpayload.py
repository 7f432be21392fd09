"""The ``session`` object of a hook's payload (pi-autoresearch 1.6.2's shape)."""

from __future__ import annotations

from typing import Any

from .ledger import json_number
from .session import Session


def session_payload(session: Session) -> dict[str, Any]:
    """The ``session`` object of the hook payload, as pi-autoresearch 1.6.2 builds it
    (``index.ts:1247-1255``; ``seeds/autoresearch-hooks.SKILL.txt``): ``baseline_metric``
    the metric of the current segment's first run, whatever its status (``index.ts:580``;
    0 for a crash), ``best_metric`` the best kept metric of the segment (``index.ts:586``),
    both None before there is one; ``run_count`` every run of the session, all segments
    (``index.ts:1253``), a line set aside that names a run included, as pi reads it. Then
    ours: ``session_id`` and ``segment_run_count`` (the runs of the current segment)."""
    seg = session.segment
    first = seg.runs[0].metric if seg.runs else None

    def number(value: float | None) -> int | float:
        return json_number(value) if value is not None else 0  # pi's jsonl.ts:118

    kept = [number(r.metric) for r in seg.runs if r.status == "keep"]
    best = (max(kept) if session.config.direction == "higher" else min(kept)) if kept else None
    named = [m for m in session.ledger.malformed if m.run is not None]
    return {
        "metric_name": session.config.metric_name,
        "metric_unit": session.config.metric_unit,
        "direction": session.config.direction,
        "baseline_metric": number(first) if seg.runs else None,
        "best_metric": best,
        "run_count": len(session.ledger.runs) + len(named),
        "goal": session.config.goal,
        "session_id": session.config.session_id,
        "segment_run_count": len(seg.runs),
    }
