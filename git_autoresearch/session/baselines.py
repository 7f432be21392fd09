"""A segment's baseline, questioned: why experiments cannot be compared with it (it failed,
or was never measured), and the warning when an experiment was kept in its place."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .session import Session


def problem(session: Session) -> str | None:
    """Why the current segment has no baseline to compare experiments with, and the way
    out, or None when it has one (or was started with ``--no-baseline``, so that its first
    kept run is the baseline). The way out names how to set aside an experiment in the
    work tree first, since ``start --new-segment`` refuses a dirty tree."""
    if session.layout.start_intent.exists():
        return (f"the start of session {session.config.session_id} was interrupted: git "
                "autoresearch resume finishes it (git autoresearch start --new-segment "
                "finishes it and measures the baseline)")
    seg = session.segment
    if seg.kept:
        return None
    failed = next((r for r in seg.runs if r.data.get("baseline")), None)
    if failed is not None:
        why = failed.data.get("reason") or failed.status
        return (f"the baseline of this segment failed (run {failed.number}: {why}); fix "
                f"the command, then {new_segment_way(session)}")
    if (seg.header or {}).get("no_baseline") is False:
        return ("the baseline of this segment was never measured (start was interrupted); "
                f"{new_segment_way(session)}")
    return None


def doubt(session: Session) -> str | None:
    """A warning when the segment wanted a baseline but its first kept run is not one (a
    keep recorded after an interrupted start, before keep refused that), else None."""
    seg = session.segment
    first = seg.baseline
    if first is None or (seg.header or {}).get("no_baseline") is not False:
        return None
    if any(r.data.get("baseline") for r in seg.runs):
        return None
    return (f"the baseline of this segment was never measured: run {first.number}, an "
            "experiment, was kept in its place, and improvements are computed against it; "
            f"to compare with the unmodified code, {new_segment_way(session)}")


def new_segment_way(session: Session) -> str:
    """How to start a new segment from here: ``start --new-segment``, after setting aside
    the unrecorded experiment in the work tree (which it would refuse) when there is one."""
    changes = session.changes()
    changed = [p for p in changes.changed() if not session.bounds.is_protected(p)]
    if not changed:
        return "run git autoresearch start --new-segment"
    shown = ", ".join(changed[:3]) + (" ..." if len(changed) > 3 else "")
    return (f"set aside the experiment in the work tree ({shown}) with git autoresearch "
            "discard -d DESCRIPTION (it is recorded and kept at an attempt ref), then run "
            "git autoresearch start --new-segment")
