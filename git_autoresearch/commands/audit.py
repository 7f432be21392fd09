"""audit: measure kept runs against their parents again, and say which keeps hold up."""

from __future__ import annotations

from typing import Any

import click

from .common import (
    CONTEXT,
    WHOLE,
    WholeRange,
    complete_runs,
    emit_json,
    json_option,
    number,
    warn,
)


@click.command("audit", context_settings=CONTEXT,
               short_help="measure each keep against its parent again")
@click.argument("run_numbers", metavar="[RUN]...", nargs=-1, type=WHOLE,
                shell_complete=complete_runs)
@click.option("--samples", type=WholeRange(min=1), default=5, show_default=True,
              metavar="N", help="Measurements of each side (the parent and the commit).")
@json_option
def audit_cmd(run_numbers: tuple[int, ...], samples: int, as_json: bool) -> None:
    """Measure each kept run's commit against its parent again, interleaved (parent, commit,
    parent, ...), each checked out in a temporary git worktree so the work tree is never
    touched; say whether the keep is confirmed, within noise or a regression, with its effect
    and interval, and record an audit line in the ledger. Default: every kept run of the
    current segment after its baseline."""
    from ..history.checkouts import check_inputs
    from ..review.audit import record, run_audit, segment_config, segment_of, targets
    from ..session.session import Session

    session = Session.open()
    for w in session.warnings:
        warn(w)
    found = targets(session, list(run_numbers))
    session.preflight()  # before measuring: its verdict is a ledger line and a mirror
    direction, unit = session.config.direction, session.config.metric_unit
    done: list[dict[str, Any]] = []
    if not found:
        warn("no committed keep after the baseline in the current segment: nothing to audit")
    for target in found:
        # Measured, and judged, as its own segment measured (a keep of an earlier one too),
        # and refused before it is announced when that segment's files changed since.
        segment = segment_of(session, target.run)
        check_inputs(session, target.run, segment)
        click.echo(f"auditing run {target.run}: {target.commit[:7]} against its parent "
                   f"{target.parent[:7]}, {samples} sample(s) each", err=True)
        cfg = segment_config(session, segment)
        audit = run_audit(session, target, samples, progress=_said, config=cfg)
        line = audit.record(cfg.direction, (cfg.metric_name, cfg.metric_unit))
        for w in record(session, audit, line):
            warn(w)
        done.append(line)
        if not as_json:
            for text in audit_lines(line, cfg.metric_unit):
                click.echo(text)
    if as_json:
        emit_json("audit", {"direction": direction, "metric_name": session.config.metric_name,
                   "metric_unit": unit, "audits": done})


def _said(run: int, side: str, sample: int, value: float | None) -> None:
    """One sample's progress line on stderr."""
    click.echo(f"  run {run} {side:<6} sample {sample}: "
               f"{'no metric' if value is None else number(value)}", err=True)


def audit_lines(line: dict[str, Any], unit: str) -> list[str]:
    """An audit line of the ledger for people: the verdict, each side's median, the effect
    with its interval (in the unit and relative)."""
    from ..ledger.stats import median

    u = f" {unit}" if unit else ""
    head = (f"run {line.get('audited_run')}: {line.get('verdict')} ({line.get('commit')} "
            f"against its parent {line.get('parent')})")
    out = [head]
    found = line.get("samples")
    samples: dict[str, Any] = found if isinstance(found, dict) else {}
    sides = []
    for side in ("commit", "parent"):
        values = [v for v in samples.get(side) or [] if isinstance(v, (int, float))]
        if values:
            # a median of two samples is computed: cut float noise (4.0600000000000005)
            middle = float(f"{median(values):.12g}")
            sides.append(f"{side} median {number(middle)}{u} ({len(values)})")
    if sides:
        out.append("  " + ", ".join(sides))
    from ..review.report import effect_of

    effect = effect_of(line)
    if isinstance(effect, dict) and isinstance(effect.get("value"), (int, float)):
        text = (f"  effect {effect['value']:+.6g}{u} [{effect['low']:+.6g}, "
                f"{effect['high']:+.6g}]")
        if isinstance(effect.get("relative"), (int, float)):
            text += (f" ({effect['relative'] * 100:+.2f}% [{effect['relative_low'] * 100:+.2f}%"
                     f", {effect['relative_high'] * 100:+.2f}%])")
        from ..review.report import interval_level

        level = interval_level(effect)
        if level is not None:
            text += f", {level * 100:.0f}% interval"
        out.append(text)
    if line.get("reason"):
        out.append(f"  {line['reason']}")
    return out
