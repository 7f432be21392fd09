"""finalize, apply, diff: from a night of runs to a branch a person reviews."""

from __future__ import annotations

from typing import Any

import click

from ..errors import EXIT_FINAL_CHECKS, EXIT_REFUSED
from .common import CONTEXT, emit_json, json_option, number, warn


@click.command("finalize", context_settings=CONTEXT)
@click.option("--drop", "drop", multiple=True, type=int, metavar="RUN",
              help="Leave this keep out (repeatable).")
@click.option("--only", "only", multiple=True, type=int, metavar="RUN",
              help="Replay only these keeps (repeatable).")
@click.option("--include-noise", is_flag=True,
              help="Also replay the keeps an audit found within noise or a regression.")
@click.option("--split", is_flag=True,
              help="Also make one branch per keep, alone on the base "
                   "(autoresearch/<id>-final-<run>).")
@click.option("--checks-command", metavar="SHELL",
              help="Run this on the final branch instead of final_checks_command (default: "
                   "the checks command).")
@click.option("--samples", type=click.IntRange(min=0), default=5, show_default=True,
              metavar="N", help="Measurements of the base and of the final branch, "
                                "interleaved (0: do not measure).")
@click.option("--force", is_flag=True, help="Replace the final branches of an earlier finalize.")
@json_option
def finalize_cmd(drop: tuple[int, ...], only: tuple[int, ...], include_noise: bool,
                 split: bool, checks_command: str | None, samples: int, force: bool,
                 as_json: bool) -> None:
    """Replay the session's keeps onto its base commit as the branch autoresearch/<id>-final
    (one commit per keep, trailers kept), in a temporary worktree: the session branch and the
    work tree are never touched. Then run the final checks on it, measure it against the base,
    and write .auto/final.md, a pull-request body. A keep that conflicts is named and no
    branch is made."""
    from ..finalize import choose, finalize, keeps, record
    from ..review import render
    from ..session import Session

    session = Session.open(on_branch=False)
    for w in session.warnings:
        warn(w)
    chosen, dropped = choose(session, keeps(session), drop=list(drop), only=list(only),
                             include_noise=include_noise)
    for number_, why in dropped:
        if why.startswith("audit"):
            warn(f"run {number_} left out ({why}); --include-noise replays it")
    final = finalize(session, chosen, dropped, split=split, checks_command=checks_command,
                     samples=samples, force=force, progress=_said, measure_progress=_sample)
    cfg = session.config
    line = final.record(cfg.direction)
    if final.conflicts:
        message = "; ".join(f"run {r.keep.number} conflicts in {', '.join(r.paths)}"
                            for r in final.conflicts)
        message = (f"{message}: no branch was made (leave them out with --drop, or replay "
                   "only some with --only)")
        if as_json:
            emit_json({"error": message, "exit_code": EXIT_REFUSED, **line},
                      interruptible=False)
        click.echo(f"git autoresearch: {message}", err=True)
        raise click.exceptions.Exit(EXIT_REFUSED)
    notes = render(session.ledger, line, goal=cfg.goal, metric_name=cfg.metric_name,
                   unit=cfg.metric_unit, direction=cfg.direction, command=cfg.command,
                   session_id=cfg.session_id)
    for w in record(session, final, notes):
        warn(w)
    if as_json:
        emit_json({**line, "notes": str(session.layout.final_notes)})
    else:
        for text in _lines(line, cfg.metric_unit):
            click.echo(text)
        click.echo(f"wrote {session.layout.final_notes}")
    if final.checks is not None and not final.checks["passed"]:
        click.echo(f"git autoresearch: the final checks failed on {final.branch} "
                   f"({final.checks['reason']}); fix them before it is merged", err=True)
        raise click.exceptions.Exit(EXIT_FINAL_CHECKS)


def _said(text: str) -> None:
    click.echo(f"  {text}", err=True)


def _sample(_run: int, side: str, sample: int, value: float | None) -> None:
    side = {"parent": "base", "commit": "final"}.get(side, side)
    click.echo(f"  {side:<5} sample {sample}: {'no metric' if value is None else number(value)}",
               err=True)


def _lines(line: dict[str, Any], unit: str) -> list[str]:
    """What finalize made, for people."""
    u = f" {unit}" if unit else ""
    applied = [r for r in line["replayed"] if r["outcome"] == "applied"]
    out = [f"branch {line['branch']} at {line['commit']}: {len(applied)} keep(s) on "
           f"{line['base']} (runs {', '.join(str(r['run']) for r in applied) or '-'})"]
    for r in line["replayed"]:
        if r["outcome"] == "empty":
            out.append(f"  run {r['run']}: nothing left to change (already in the tree)")
    for d in line["dropped"]:
        out.append(f"  run {d['run']} left out: {d['why']}")
    for r in line["split"]:
        out.append(f"  run {r['run']}: " + (f"branch {r['branch']}" if r["branch"] else
                   "does not apply alone" + (f" (depends on run(s) "
                   f"{', '.join(str(n) for n in r['depends_on'])})" if r["depends_on"] else "")))
    checks = line["checks"]
    if checks is None:
        out.append("final checks: none (no final_checks_command or checks_command)")
    else:
        out.append(f"final checks: {'passed' if checks['passed'] else 'FAILED'} "
                   f"({checks['command']})" + ("" if checks["passed"] else
                                               f": {checks['reason']}"))
    effect = line["effect"]
    if line["verdict"] is not None and isinstance(effect, dict):
        rel = effect.get("relative")
        text = f"measured: {line['verdict']}, final minus base {effect['value']:+.6g}{u}"
        if isinstance(rel, (int, float)):
            text += (f" ({rel * 100:+.2f}% [{effect['relative_low'] * 100:+.2f}%, "
                     f"{effect['relative_high'] * 100:+.2f}%])")
        out.append(text)
    elif line["reason"]:
        out.append(f"measured: failed ({line['reason']})")
    return out
