"""finalize, apply, diff: from a night of runs to a branch a person reviews."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..runtime.errors import EXIT_REFUSED, EXIT_UNVERIFIED
from .common import (
    CONTEXT,
    WHOLE,
    WholeRange,
    complete_runs,
    emit_json,
    json_option,
    number,
    paths_text,
    warn,
)

if TYPE_CHECKING:
    from ..ledger import Run
    from ..review.finalize import Final
    from ..session.session import Session


def _again(drop: tuple[int, ...], only: tuple[int, ...], include_noise: bool,
           segment: int | None, split: bool, checks_command: str | None) -> str:
    """The finalize command line that replays the same keeps and measures them again."""
    import shlex

    words = ["--force"]
    words += [w for n in drop for w in ("--drop", str(n))]
    words += [w for n in only for w in ("--only", str(n))]
    words += ["--include-noise"] * include_noise + ["--split"] * split
    words += ["--segment", str(segment)] if segment is not None else []
    words += ["--checks-command", checks_command] if checks_command else []
    return "git autoresearch finalize " + shlex.join(words)


@click.command("finalize", context_settings=CONTEXT,
               short_help="replay the keeps onto their base as a branch to review")
@click.option("--drop", "drop", multiple=True, type=WHOLE, metavar="RUN",
              help="Leave this keep out (repeatable).")
@click.option("--only", "only", multiple=True, type=WHOLE, metavar="RUN",
              help="Replay only these keeps (repeatable).")
@click.option("--include-noise", is_flag=True,
              help="Also replay the keeps an audit found within noise or a regression.")
@click.option("--segment", type=WHOLE, metavar="N",
              help="Replay only the keeps of segment N, onto its baseline commit, and measure "
                   "with its configuration (default: every segment's keeps, onto the earliest "
                   "one's baseline).")
@click.option("--split", is_flag=True,
              help="Also make one branch per keep, alone on the base "
                   "(autoresearch/<id>-final-<run>).")
@click.option("--checks-command", metavar="SHELL",
              help="Run this on the final branch instead of final_checks_command (default: "
                   "the checks command).")
@click.option("--samples", type=WholeRange(min=0), default=5, show_default=True,
              metavar="N", help="Measurements of the base and of the final branch, "
                                "interleaved (0: do not measure).")
@click.option("--force", is_flag=True, help="Replace the final branches of an earlier finalize.")
@json_option
def finalize_cmd(drop: tuple[int, ...], only: tuple[int, ...], include_noise: bool,
                 segment: int | None, split: bool, checks_command: str | None, samples: int,
                 force: bool, as_json: bool) -> None:
    """Replay the session's keeps onto the commit they were measured against, the baseline
    commit of their segment, as the branch autoresearch/<id>-final (one commit per keep,
    trailers kept; with the segment commits of start --new-segment, the files that define
    success, each before its segment's keeps), in a temporary worktree: the session branch
    and the work tree are never touched. Then run the final checks on it, measure it against
    the base (with the segment commits, so both run the same benchmark), and write
    .auto/final.md, a pull-request body.

    Keeps of several segments go onto the earliest one's baseline, refused (exit 3) when a
    commit that is no kept run nor segment commit (one made by hand) lies between the
    segments' baselines: --segment then picks one segment. Refused too, before anything is
    made, when a file the measurement command runs is not in the base commit, or a keep
    conflicts (each is named). When the measurement fails (a sample gives no metric) or the
    final checks fail, the branch, .auto/final.md and the ledger line stay for review, and
    the exit is 5.

    pi-autoresearch's own finalize.sh makes branches autoresearch/<goal>/...: give it a goal
    other than the session id (<id>-pr), since git cannot make them beside the session
    branch autoresearch/<id>."""
    from ..review.finalize import (
        choose,
        finalize,
        keeps,
        of_segment,
        off_branch,
        record,
        undo,
    )
    from ..review.pr_body import render
    from ..session.session import Session
    from ..workers.upstream import sync

    session = Session.open()
    session.preflight()  # a branch, .auto/final.md, a ledger line and a mirror: all or none
    sync(session)  # a clone that joined through a remote: every worker's keeps, as they are
    for w in session.warnings:
        warn(w)
    every = keeps(session)
    where = "the session" if segment is None else f"segment {segment}"
    chosen, dropped = choose(session, of_segment(session, every, segment), drop=list(drop),
                             only=list(only), include_noise=include_noise, where=where)
    lost = off_branch(session, every, segment) if not only else []
    dropped = sorted([*dropped, *lost])
    for number_, why in dropped:
        if why.startswith("audit"):
            warn(f"run {number_} left out ({why}); --include-noise replays it")
        elif (number_, why) in lost:
            warn(f"run {number_} left out ({why}; git autoresearch doctor says more)")
    final = finalize(session, chosen, dropped, split=split, checks_command=checks_command,
                     samples=samples, force=force, progress=_said, measure_progress=_sample,
                     every=every, where=where)
    _warn_hand(session, final, chosen)
    cfg = final.config or session.config
    line = final.record(cfg.direction)
    if final.conflicts or final.segment_conflicts:
        message = _conflicts_text(final)
        if as_json:
            emit_json("error", {"error": message, "exit_code": EXIT_REFUSED, **line},
                      interruptible=False)
        click.echo(f"git autoresearch: {message}", err=True)
        raise click.exceptions.Exit(EXIT_REFUSED)
    notes = render(session.ledger, line, goal=cfg.goal, metric_name=cfg.metric_name,
                   unit=cfg.metric_unit, direction=cfg.direction, command=cfg.command,
                   session_id=cfg.session_id, base_commit=final.base,
                   metric_command=cfg.metric_command,
                   again=_again(drop, only, include_noise, segment, split, checks_command))
    try:
        said = record(session, final, notes)
    except BaseException:  # not recorded: the branches go too, nothing is half done
        undo(session, final)
        raise
    for w in said:
        warn(w)
    _report(final, line, str(session.layout.final_notes), cfg.metric_unit, as_json)


def _warn_hand(session: Any, final: Final, chosen: list[Any]) -> None:
    """A warning for each commit made by hand among the keeps, which the final branch lacks,
    naming the keeps replayed after it (measured with it)."""
    from ..review.finalize import hand_text

    for commit in final.hand:
        after = [k.number for k in chosen if session.repo.is_ancestor(commit[0], k.commit)]
        warn(f"{hand_text([commit])} on the session branch is no kept run: it is not "
             "replayed" + (f", though run {after[0]} after it was measured with it"
                           if len(after) == 1 else
                           f", though runs {', '.join(map(str, after))} after it were "
                           "measured with it" if after else ""))


def _conflicts_text(final: Final) -> str:
    """The refusal of a replay that conflicted: each conflict with its paths, and the runs
    left out and commits made by hand that were not replayed (a keep that builds on one
    conflicts)."""
    message = "; ".join([*(f"segment {r.segment}'s commit {r.source[:7]} conflicts in "
                           f"{paths_text(r.paths)}" for r in final.segment_conflicts),
                         *(f"run {r.keep.number} conflicts in {paths_text(r.paths)}"
                           for r in final.conflicts)])
    message = (f"{message}: no branch was made (leave them out with --drop, or replay only "
               "some with --only)")
    lacking = [f"{what} ({', '.join(names[:5])}{', ...' if len(names) > 5 else ''})"
               for what, names in (("runs left out", [str(n) for n, _ in final.dropped]),
                                   ("commits made by hand", [o[:7] for o, _ in final.hand]))
               if names]
    if lacking:
        message += (f"; {' and '.join(lacking)} are not replayed: a keep that builds on one "
                    "conflicts")
    return message


def _report(final: Final, line: dict[str, Any], notes: str, unit: str, as_json: bool) -> None:
    """Say what finalize made (``line``: its ledger line; ``notes``: the path of final.md);
    exit 5 when the measurement or the final checks failed, saying why on stderr (and as the
    document's ``error`` with ``--json``)."""
    failures = final.failures()
    unverified = (f"{'; '.join(failures)}: the branch {final.branch} is not verified (it and "
                  f"{Path(notes).name} are left for review); fix this before it is merged"
                  ) if failures else None
    if as_json:
        error = {"error": unverified, "exit_code": EXIT_UNVERIFIED} if unverified else {}
        emit_json("finalize", {**error, **line, "notes": notes})
    else:
        for text in _lines(line, unit):
            click.echo(text)
        click.echo(f"wrote {notes}")
    if unverified:
        click.echo(f"git autoresearch: {unverified}", err=True)
        raise click.exceptions.Exit(EXIT_UNVERIFIED)


def _number(value: float | None) -> float | int | None:
    from ..ledger import json_number

    return None if value is None else json_number(value)


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
    for r in line["segment_commits"]:
        out.append(f"  segment {r['segment']}'s commit {r['source'][:7]} (the files that define "
                   f"success: {paths_text(r['paths'])}): {r['outcome']}")
    if line["measured_base"]:
        out.append(f"  the base was measured with them: {line['measured_base']}")
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
    from ..review.report import effect_of

    effect = effect_of(line)
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


@click.command("apply", context_settings=CONTEXT,
               short_help="bring a run that was not kept back onto the work tree")
@click.argument("run_number", metavar="RUN", type=WHOLE, shell_complete=complete_runs)
@json_option
def apply_cmd(run_number: int, as_json: bool) -> None:
    """Bring the change of a run that was not kept (from its attempt ref) back onto the work
    tree, to retry it or build on it; replayed onto HEAD when a keep came after it. HEAD and
    the index do not move; a work tree with changes is refused."""
    from ..review.apply import apply_run
    from ..session.branches import open_on_branch

    session = open_on_branch()
    for w in session.warnings:
        warn(w)
    done = apply_run(session, run_number)
    for w in done.warnings:
        warn(w)
    if as_json:
        emit_json("apply", {"run": done.run, "commit": done.commit[:7], "onto": done.onto[:7],
                   "replayed": done.replayed, "paths": list(done.paths)})
        return
    how = f"replayed onto HEAD {done.onto[:7]}" if done.replayed else f"on HEAD {done.onto[:7]}"
    click.echo(f"applied run {done.run}'s change ({done.commit[:7]}, {how}) to the work tree: "
               f"{len(done.paths)} file(s): {paths_text(done.paths[:10])}"
               + (" ..." if len(done.paths) > 10 else ""))
    click.echo('next: edit it further, then git autoresearch run -d "..."')


def _metric_of(session: Session, run: Run) -> str:
    """``run``'s metric with the unit of the metric its segment measured, ``-`` alone for
    none (a crash)."""
    from ..review.report import fmt, unit_suffix

    if run.metric is None:
        return "-"
    return fmt(run.metric) + unit_suffix(session.ledger.segments[run.segment],
                                         session.config.metric_unit)


@click.command("diff", context_settings=CONTEXT, short_help="the code between two runs")
@click.argument("runs", metavar="RUN [RUN]", type=WHOLE, nargs=-1, required=True,
                shell_complete=complete_runs)
@click.option("--stat", is_flag=True, help="A diffstat instead of the patch.")
@click.option("--name-only", is_flag=True, help="Only the names of the files that differ.")
@json_option
def diff_cmd(runs: tuple[int, ...], stat: bool, name_only: bool, as_json: bool) -> None:
    """The code difference between two runs (keeps or attempts), or between a run and its
    parent (the commit it was tried on), with the metric's change in the header."""
    from ..review.report import delta_pct
    from ..review.run_commits import missing_commit, run_commit
    from ..runtime.errors import UsageError
    from ..session.session import Session

    if len(runs) > 2:
        raise UsageError(f"diff takes one or two runs, not {len(runs)}")
    if stat and name_only:
        raise UsageError("--stat and --name-only are exclusive: give one")
    session = Session.open()
    found = [run_commit(session, number) for number in runs]
    # A run without a commit of its own that names the commit it measured (a baseline) is
    # that commit's code.
    found = [dataclasses.replace(one, commit=session.repo.resolve(one.measured))
             if one.commit is None and one.measured else one for one in found]
    for one in found:
        if one.commit is None:
            missing = missing_commit(one.run, one.commit, one.measured)
            why = ("its attempt ref was deleted by git autoresearch gc" if one.collected
                   else f"commit {missing} is not in this repository" if missing
                   else "the kept measurement changed nothing" if one.run.status == "keep"
                   else "it has no commit (no attempt ref recorded)")
            raise UsageError(f"run {one.run.number} has no commit to compare: {why}")
    repo = session.repo
    if len(found) == 1:
        new, new_run = str(found[0].commit), found[0].run
        old = repo.resolve(f"{new}^")
        if old is None:
            raise UsageError(f"run {new_run.number}'s commit {new[:7]} has no parent")
        old_label = f"its parent {old[:7]}"
        old_metric = None
    else:
        old, new, new_run = str(found[0].commit), str(found[1].commit), found[1].run
        old_label = (f"run {found[0].run.number} ({found[0].run.status}, "
                     f"{_metric_of(session, found[0].run)}) {old[:7]}")
        old_metric = found[0].run.metric
    segments = session.ledger.segments
    # (no change between two runs of segments that measure differently: other metrics)
    change = delta_pct(new_run.metric, old_metric) if len(found) == 1 or segments[
        found[0].run.segment].measured_like(segments[new_run.segment]) else None
    text = repo.diff_text(old, new, stat=stat, name_only=name_only)
    header = (f"# {old_label} -> run {new_run.number} ({new_run.status}, "
              f"{_metric_of(session, new_run)}) {new[:7]}"
              + (f": {change:+.2f}%" if change is not None else ""))
    if as_json:
        emit_json("diff", {"from": {"run": found[0].run.number if len(found) == 2 else None,
                            "commit": old[:7], "metric": _number(old_metric)},
                   "to": {"run": new_run.number, "commit": new[:7],
                          "metric": _number(new_run.metric)},
                   "change_pct": change, "diff": text})
        return
    click.echo(header)
    click.echo(text, nl=False)
