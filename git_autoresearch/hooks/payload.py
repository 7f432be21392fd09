"""Firing a session's hooks: the payload (pi-autoresearch 1.6.2's shape, its ``session``
object), the ledger lines of the firings, and the intent record they release."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..ledger import json_number
from ..record import intents
from ..runtime.faults import checkpoint
from ..session.session import Session

if TYPE_CHECKING:
    from .user import HookReport


def session_payload(session: Session) -> dict[str, Any]:
    """The ``session`` object of the hook payload, as pi-autoresearch 1.6.2 builds it
    (``index.ts:1247-1255``; gitautoresearch-hooks(5)): ``baseline_metric``
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


def fire_stage(session: Session, stage: str, run_entry: Mapping[str, Any] | None
               ) -> HookReport:
    """Fire ``stage`` hooks of ``session`` with the seed's payload (``next_run`` and
    ``last_run`` before a run, ``run_entry`` after it) and log each firing in the ledger,
    naming the worker; then, after a run, clear its intent record."""
    from .user import HookReport, fire, run_payload

    if not session.layout.hooks.is_dir():
        _after_hooks_fired(session, stage, run_entry)
        return HookReport(stage)
    if stage == "after":
        checkpoint("record:before-after-hooks")
    from ..runtime.schemas import schema_id  # (the schema files): only where hooks fire

    payload: dict[str, Any] = {"schema": schema_id(f"hook-{stage}"), "event": stage,
                               "cwd": str(session.repo.top)}
    if stage == "before":
        last = session.ledger.last_run
        payload["next_run"] = session.next_run()
        payload["last_run"] = run_payload(last.data) if last else None
    else:
        payload["run_entry"] = run_payload(run_entry or {})
    payload["session"] = session_payload(session)
    report = fire(session.layout.hooks, stage, payload, cwd=session.repo.top)
    if report.firings:
        with session.shared(f"{stage} hooks"):
            # In a worker, each line names it, as its run records do.
            named = {"worker": session.worker.name} if session.worker else {}
            session.append([{**f.ledger_line(), **named} for f in report.firings])
            report.warnings += session.mirror_state(f"{stage} hooks")
    _after_hooks_fired(session, stage, run_entry)
    return report

def _after_hooks_fired(session: Session, stage: str, run_entry: Mapping[str, Any] | None) -> None:
    """Clear the intent record of the run whose after hooks just fired (it was kept so
    that a kill before they fired leaves recovery a way to fire them)."""
    if stage != "after" or not run_entry:
        return
    intent = session.interrupted()
    if intent is not None and intent.run == run_entry.get("run") \
            and session.ledger.find(int(run_entry.get("run") or 0), ours=True) is not None:
        intents.clear(session.layout.intent)
