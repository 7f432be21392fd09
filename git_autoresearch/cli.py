"""The commands: option parsing, exit codes, and human or ``--json`` output.

Each subcommand is reachable as ``git autoresearch <cmd>`` and as its own executable
``git-autoresearch-<cmd>``; both go through :func:`invoke`, which maps errors to the exit codes of
DESIGN.md section 5 (0 done, 1 internal error, 2 usage, 3 refused, 4 stop) and never shows a
traceback unless ``GIT_AUTORESEARCH_DEBUG`` is set.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from . import __version__
from .errors import (
    EXIT_INTERNAL,
    EXIT_REFUSED,
    EXIT_USAGE,
    AutoresearchError,
    Refused,
    UsageError,
)
from .measure import Measurement

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False))


def warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


def _progress() -> Callable[[float, str], None] | None:
    """A live ``[12s] last log line`` on stderr while a measurement runs on a terminal."""
    if not sys.stderr.isatty():
        return None
    width = shutil.get_terminal_size((80, 20)).columns

    def show(elapsed: float, line: str) -> None:
        text = f"[{elapsed:5.0f}s] {line}"[: width - 1]
        sys.stderr.write("\r\x1b[K" + text)
        sys.stderr.flush()

    return show


def _clear_progress() -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()


json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print one JSON document on stdout.")


def _description_option(required: bool = True) -> Callable[[Callable[..., Any]], Any]:
    return click.option("-d", "--description", required=required,
                        help="One sentence saying what this run tried.")


def _asi_options(f: Callable[..., Any]) -> Any:
    f = click.option("--asi-json", metavar="JSON",
                     help="Annotations for the run as a JSON object.")(f)
    return click.option("--asi", "asi_pairs", multiple=True, metavar="KEY=VALUE",
                        help="An annotation for the run (hypothesis=..., rollback_reason=..., "
                             "next_action_hint=...). Repeatable.")(f)


# --- start --------------------------------------------------------------------------------------


@click.command("start", context_settings=CONTEXT)
@click.option("--goal", help="What the session optimises, in a few words.")
@click.option("--command", "command_", metavar="SHELL", help="The experiment command.")
@click.option("--metric-name", help="Name of the primary metric (default: metric).")
@click.option("--metric-unit", help="Unit of the primary metric, e.g. ms.")
@click.option("--direction", help="lower or higher is better (default: lower).")
@click.option("--metric-pattern", metavar="REGEX",
              help="Regex with one capture group; its last match in the run log is the metric.")
@click.option("--metric-command", metavar="SHELL",
              help="A command whose stdout is the metric (instead of --metric-pattern).")
@click.option("--scope", multiple=True, metavar="PATH",
              help="A path an experiment may change (repeatable; none: any unprotected path).")
@click.option("--protected", multiple=True, metavar="PATH",
              help="A path no revert may touch and no keep may commit (repeatable).")
@click.option("--checks-command", metavar="SHELL",
              help="A command that must succeed for a run to be kept.")
@click.option("--timeout-seconds", type=float, help="Limit per measurement (default 600).")
@click.option("--checks-timeout-seconds", type=float, help="Limit for the checks (default 300).")
@click.option("--runs-per-experiment", type=int, help="Samples per measurement (default 1).")
@click.option("--aggregate", type=click.Choice(["median", "min", "mean"]),
              help="How samples combine (default median).")
@click.option("--max-experiments", type=int, help="Stop after this many runs in a segment.")
@click.option("--session-id", help="Session id (default: the goal in kebab case plus the date).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Read the configuration keys from this TOML file.")
@click.option("--new-segment", is_flag=True,
              help="Start a new segment of the existing session with changed options.")
@click.option("--no-baseline", is_flag=True, help="Do not measure the baseline now.")
@click.option("--force", is_flag=True,
              help="Start despite untracked files (they are then never touched).")
@json_option
def start_cmd(goal: str | None, command_: str | None, metric_name: str | None,
              metric_unit: str | None, direction: str | None, metric_pattern: str | None,
              metric_command: str | None, scope: tuple[str, ...], protected: tuple[str, ...],
              checks_command: str | None, timeout_seconds: float | None,
              checks_timeout_seconds: float | None, runs_per_experiment: int | None,
              aggregate: str | None, max_experiments: int | None, session_id: str | None,
              config_file: Path | None, new_segment: bool, no_baseline: bool, force: bool,
              as_json: bool) -> None:
    """Create a session: branch autoresearch/<id>, .auto/, the ledger, and the baseline run."""
    from .session import StartOptions, start

    values = {
        "goal": goal, "command": command_, "metric_name": metric_name,
        "metric_unit": metric_unit, "direction": direction, "metric_pattern": metric_pattern,
        "metric_command": metric_command, "scope": list(scope) or None,
        "protected": list(protected) or None, "checks_command": checks_command,
        "timeout_seconds": timeout_seconds, "checks_timeout_seconds": checks_timeout_seconds,
        "runs_per_experiment": runs_per_experiment, "aggregate": aggregate,
        "max_experiments": max_experiments, "session_id": session_id,
    }
    opts = StartOptions(values=values, config_file=config_file, new_segment=new_segment,
                        no_baseline=no_baseline, force=force)
    try:
        session, record, result = start(opts, progress=_progress())
    finally:
        _clear_progress()
    cfg = session.config
    if as_json:
        emit_json({"session_id": cfg.session_id, "branch": f"autoresearch/{cfg.session_id}",
                   "segment": session.segment.index, "config": cfg.to_dict(),
                   "baseline": record})
        return
    click.echo(f"session {cfg.session_id} on branch autoresearch/{cfg.session_id}, "
               f"segment {session.segment.index}")
    click.echo(f"metric {cfg.metric_name} ({cfg.direction} is better)")
    if record:
        click.echo(f"baseline: {cfg.metric_name} = {record['metric']}"
                   f"{' ' + cfg.metric_unit if cfg.metric_unit else ''} (run {record['run']})")
    else:
        click.echo("no baseline measured yet: the first run of the segment will be kept as it")


# --- measure / run -----------------------------------------------------------------------------


def _measurement_json(result: Measurement) -> dict[str, Any]:
    from .experiment import json_number

    data = result.to_dict()
    data.pop("fingerprint", None)
    data["status"] = result.status
    if result.metric is not None:
        data["metric"] = json_number(result.metric)
    data["metrics"] = {k: json_number(v) for k, v in result.metrics.items()}
    data["samples"] = [json_number(s) for s in result.samples]
    return data


def _print_measurement(result: Measurement, metric_name: str) -> None:
    if result.metric is None:
        click.echo(f"crash: {result.reason}")
        if result.log_tail:
            click.echo("---- tail of .auto/run.log ----")
            click.echo(result.log_tail)
            click.echo("----")
        return
    samples = f" (samples: {', '.join(f'{s:g}' for s in result.samples)})" \
        if len(result.samples) > 1 else ""
    click.echo(f"{metric_name} = {result.metric:g}{samples} in {result.duration_s:.1f}s")
    for name, value in result.metrics.items():
        click.echo(f"  {name} = {value:g}")
    if result.checks is not None:
        verdict = "passed" if result.checks["passed"] else f"FAILED: {result.checks['reason']}"
        click.echo(f"checks {verdict}")
        if not result.checks["passed"] and result.checks.get("tail"):
            click.echo(result.checks["tail"])


def _print_steer(stage: str, report: Any) -> None:
    for message in report.warnings:
        warn(message)
    if report.steer:
        click.echo(f"==== steer from {stage} hooks ====")
        click.echo(report.steer)
        click.echo("==== end of steer ====")


@click.command("measure", context_settings=CONTEXT)
@json_option
def measure_cmd(as_json: bool) -> None:
    """Run the experiment and print the result; record nothing (keep or discard uses it)."""
    from .session import Session

    session = Session.open()
    with session.lock("measure"):
        session.check_stop("measure")
        before = session.fire_hooks("before")
        try:
            result = session.measure(_progress())
        finally:
            _clear_progress()
    if as_json:
        data = _measurement_json(result)
        data["steer"] = before.steer or None
        data["warnings"] = before.warnings
        emit_json(data)
        return
    _print_steer("before", before)
    _print_measurement(result, session.config.metric_name)


def _record_json(record: dict[str, Any], steer: list[str], warnings: list[str]) -> dict[str, Any]:
    out = dict(record)
    out["steer"] = "\n".join(s for s in steer if s) or None
    out["warnings"] = warnings
    return out


def _print_record(session: Any, record: dict[str, Any], previous_best: float | None) -> None:
    cfg = session.config
    unit = f" {cfg.metric_unit}" if cfg.metric_unit else ""
    status = record["status"]
    line = f"run {record['run']}: {status}"
    if status != "crash" and record.get("metric") is not None:
        line += f"  {cfg.metric_name} = {record['metric']}{unit}"
        if previous_best is not None:
            line += f" (best was {previous_best:g})"
    if record.get("reason"):
        line += f"  [{record['reason']}]"
    click.echo(line)
    if status == "keep":
        click.echo(f"  committed {record['commit']}" if record.get("committed")
                   else f"  nothing to commit: HEAD stays at {record['commit']}")
    elif record.get("attempt_ref"):
        click.echo(f"  reverted; the attempt is kept at {record['attempt_ref']}")
    if record.get("scope_violations"):
        click.echo("  reverted out-of-scope changes: " + ", ".join(record["scope_violations"]))


@click.command("run", context_settings=CONTEXT)
@_description_option()
@_asi_options
@click.option("--dry-run", is_flag=True, help="Measure and print the decision; apply nothing.")
@json_option
def run_cmd(description: str, asi_pairs: tuple[str, ...], asi_json: str | None, dry_run: bool,
            as_json: bool) -> None:
    """One iteration: before hooks, measure, decide, keep or revert, record, after hooks."""
    from .session import Session, check_text, parse_asi

    asi = parse_asi(list(asi_pairs), asi_json)
    check_text("--description", description)
    session = Session.open()
    session.check_recordable()
    with session.lock("run"):
        session.check_stop("run")
        before = session.fire_hooks("before")
        try:
            result = session.measure(_progress(), pending=dry_run)
        finally:
            _clear_progress()
        decision = session.decide(result)
        best = session.segment.best
        previous_best = best.metric if best else None
        if dry_run:
            if as_json:
                data = _measurement_json(result)
                data.update({"decision": decision, "dry_run": True,
                             "steer": before.steer or None, "warnings": before.warnings})
                emit_json(data)
            else:
                _print_steer("before", before)
                _print_measurement(result, session.config.metric_name)
                click.echo(f"decision: {decision} (dry run: nothing applied)")
            return
        hooks = [{"stage": f.stage, "hook": f.hook, "exit_code": f.exit_code,
                  "timed_out": f.timed_out} for f in before.firings]
        record = session.record(decision, description, result=result, asi=asi, hooks=hooks)
        after = session.fire_hooks("after", run_entry=record)
    if as_json:
        emit_json(_record_json(record, [before.steer, after.steer],
                               before.warnings + after.warnings))
        return
    _print_steer("before", before)
    if decision == "crash" or decision == "checks_failed":
        _print_measurement(result, session.config.metric_name)
    _print_record(session, record, previous_best)
    _print_steer("after", after)


def _record_command(status: str) -> Callable[..., None]:
    def body(description: str, metric: float | None, metrics: tuple[str, ...],
             asi_pairs: tuple[str, ...], asi_json: str | None, force: bool,
             as_json: bool) -> None:
        from .session import Session, check_text, parse_asi

        asi = parse_asi(list(asi_pairs), asi_json)
        check_text("--description", description)
        session = Session.open()
        session.check_recordable()
        with session.lock(status):
            result = session.pending()
            given = _given_metrics(metrics)
            if metric is not None or given:
                if result is None:
                    result = Measurement(None, {}, [], 0.0)
                if metric is not None:
                    result.metric = metric
                    result.samples = [metric]
                result.metrics.update(given)
                name = session.config.metric_name
                if name in result.metrics:
                    result.metric = result.metrics.pop(name)
                    result.samples = [result.metric]
            chosen = status
            if status == "keep":
                if result is None or result.metric is None:
                    raise Refused("nothing to keep: no pending measurement with a metric "
                                  "(run git autoresearch measure, or pass --metric VALUE)")
                if result.status == "checks_failed" and not force:
                    raise Refused("the pending measurement failed its checks; discard it, or "
                                  "keep it anyway with --force")
                best_run = session.segment.best
                if best_run is not None and best_run.metric is not None and \
                        not session.segment.better(result.metric, best_run.metric):
                    warn(f"{result.metric:g} does not beat the best so far ({best_run.metric:g}, "
                         f"run {best_run.number}); kept because you asked")
            elif status == "discard" and result is not None and result.status:
                chosen = result.status
            best = session.segment.best
            previous_best = best.metric if best else None
            record = session.record(chosen, description, result=result, asi=asi)
            after = session.fire_hooks("after", run_entry=record)
        if as_json:
            emit_json(_record_json(record, [after.steer], after.warnings))
            return
        _print_record(session, record, previous_best)
        _print_steer("after", after)

    return body


def _given_metrics(pairs: tuple[str, ...]) -> dict[str, float]:
    from .measure import parse_number

    out = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--metrics '{pair}' is not NAME=VALUE")
        value, problem = parse_number(raw)
        if value is None:
            raise UsageError(f"--metrics {name}: {problem}")
        out[name] = value
    return out


def _finite_metric(ctx: click.Context, param: click.Parameter, value: str | None
                   ) -> float | None:
    from .measure import parse_number

    if value is None:
        return None
    number, problem = parse_number(value)
    if number is None:
        raise click.BadParameter(problem or "not a number")
    return number


def _make_record_command(status: str, help_text: str) -> click.Command:
    params: list[click.Parameter] = [
        click.Option(["-d", "--description", "description"], required=True,
                     help="One sentence saying what this run tried."),
        click.Option(["--metric", "metric"], callback=_finite_metric, metavar="VALUE",
                     help="The primary metric, measured by the caller."),
        click.Option(["--metrics", "metrics"], multiple=True, metavar="NAME=VALUE",
                     help="A metric measured by the caller (repeatable)."),
        click.Option(["--asi", "asi_pairs"], multiple=True, metavar="KEY=VALUE",
                     help="An annotation for the run (repeatable)."),
        click.Option(["--asi-json", "asi_json"], metavar="JSON",
                     help="Annotations as a JSON object."),
        click.Option(["--force", "force"], is_flag=True,
                     help="Keep a measurement that failed its checks." if status == "keep"
                     else "Accepted for symmetry with keep; changes nothing."),
        click.Option(["--json", "as_json"], is_flag=True,
                     help="Print one JSON document on stdout."),
    ]
    return click.Command(status, callback=_record_command(status), params=params,
                         help=help_text, context_settings=CONTEXT)


keep_cmd = _make_record_command(
    "keep", "Record a keep and commit the experiment's in-scope changes with a Result: trailer.")
discard_cmd = _make_record_command(
    "discard", "Record a discard (or checks_failed) and revert, keeping the attempt under "
               "refs/autoresearch/.")
crash_cmd = _make_record_command(
    "crash", "Record a crash and revert, keeping the attempt under refs/autoresearch/.")


# --- log / status / show / stop ---------------------------------------------------------------


@click.command("log", context_settings=CONTEXT)
@click.option("--segment", type=int, help="Only runs of this segment (0 is the first).")
@click.option("--status", type=click.Choice(["keep", "discard", "crash", "checks_failed"]),
              help="Only runs with this status.")
@click.option("--last", type=click.IntRange(min=0), metavar="N", help="Only the last N runs.")
@click.option("--tsv", is_flag=True,
              help="Write the seed's results.tsv columns: experiment commit metric status "
                   "duration_s description.")
@click.option("--csv", "as_csv", is_flag=True,
              help="Write CSV: run, segment, status, metric, delta_pct, confidence, commit, "
                   "duration_s, description, then one column per secondary metric.")
@json_option
def log_cmd(segment: int | None, status: str | None, last: int | None, tsv: bool,
            as_csv: bool, as_json: bool) -> None:
    """The runs of the ledger, newest last (our session, a pi-autoresearch session read in
    place, or the Result: trailers of the current branch)."""
    from . import report
    from .session import Session

    session = Session.open_for_reading()
    if segment is not None and not 0 <= segment < len(session.ledger.segments):
        raise UsageError(f"no segment {segment} (segments are 0 to "
                         f"{len(session.ledger.segments) - 1})")
    for bad in session.ledger.malformed:
        warn(f"{session.layout.ledger}:{bad.line}: set aside: {bad.reason}"
             + (" (an append that was cut short)" if bad.torn else ""))
    rows = report.select_runs(session.ledger, segment=segment, status=status, last=last)
    if as_json:
        emit_json([report.run_row(run, seg) for run, seg in rows])
    elif tsv:
        click.echo(report.tsv(rows), nl=False)
    elif as_csv:
        click.echo(report.csv_text(rows), nl=False)
    else:
        width = shutil.get_terminal_size((120, 20)).columns
        click.echo(report.table(rows, width), nl=False)


@click.command("status", context_settings=CONTEXT)
@json_option
def status_cmd(as_json: bool) -> None:
    """Where the session stands: baseline, best, counts, confidence, STOP or limit, warnings."""
    from . import report
    from .session import Session, session_branch

    session = Session.open_for_reading()
    cfg = session.config
    seg = report.segment_summary(session.segment)
    branch = session_branch(cfg.session_id)
    warnings = list(session.warnings)
    if not session.read_only:
        base = (session.ledger.segments[0].header or {}).get("base_commit")
        warnings += report.reconcile(session.repo, session.ledger, branch, base).problems
        current = session.repo.current_branch()
        if current != branch:
            where = f"branch {current}" if current else "a detached HEAD"
            warnings.append(f"the work tree is on {where}, not on {branch}")
    warnings.extend(f"ledger line {m.line} is not readable ({m.reason}); git autoresearch "
                    "resume sets it aside" for m in session.ledger.malformed)
    interrupted = session.interrupted()
    if interrupted is not None:
        warnings.append(f"a {interrupted.get('op')} of run {interrupted.get('run')} was "
                        "interrupted; the next recording command (or resume) finishes it")
    data = {
        "session_id": cfg.session_id,
        "branch": branch,
        "goal": cfg.goal,
        "metric_name": cfg.metric_name,
        "metric_unit": cfg.metric_unit,
        "direction": cfg.direction,
        "segment": seg,
        "total_runs": len(session.ledger.runs),
        "stop_pending": session.layout.stop.exists(),
        "limit": cfg.max_experiments,
        "limit_reached": session.limit_reached(),
        "warnings": warnings,
    }
    if as_json:
        emit_json(data)
        return
    unit = f" {cfg.metric_unit}" if cfg.metric_unit else ""
    click.echo(f"session     {cfg.session_id} (branch {branch})")
    click.echo(f"goal        {cfg.goal}")
    click.echo(f"metric      {cfg.metric_name}{' in ' + cfg.metric_unit if unit else ''}, "
               f"{cfg.direction} is better")
    runs_word = "run" if seg["runs"] == 1 else "runs"
    click.echo(f"segment     {seg['index']}: {seg['runs']} {runs_word}, {seg['kept']} kept "
               f"({', '.join(f'{k} {v}' for k, v in sorted(seg['counts'].items()))})")
    for key in ("baseline", "best"):
        brief = seg[key]
        if brief:
            extra = ""
            if key == "best" and seg["improvement_pct"] is not None:
                extra = f", {seg['improvement_pct']:+.2f}% vs baseline"
            click.echo(f"{key:<11} {brief['metric']:g}{unit} (run {brief['run']}, commit "
                       f"{brief['commit']}){extra}")
        else:
            click.echo(f"{key:<11} -")
    conf = seg["confidence"]
    click.echo(f"confidence  {f'{conf:.2f}' if conf is not None else '-'} "
               f"({seg['confidence_label']})")
    if seg["stability"]:
        hint = " (consider raising runs_per_experiment)" if seg["stability"]["label"] == "low" \
            else ""
        click.echo(f"stability   {seg['stability']['label']}{hint}")
    if seg["last"]:
        last = seg["last"]
        from .report import one_line

        click.echo(f"last run    {last['run']} {last['status']}: "
                   f"{one_line(last['description'])[:70]}")
    if data["stop_pending"]:
        click.echo("STOP        pending: the next run exits 4")
    if cfg.max_experiments is not None:
        click.echo(f"limit       {session.experiments_in_segment()} of {cfg.max_experiments} "
                   f"experiments{' (reached)' if data['limit_reached'] else ''}")
    for w in warnings:
        warn(w)


@click.command("show", context_settings=CONTEXT)
@click.argument("run_number", metavar="RUN", type=int)
@json_option
def show_cmd(run_number: int, as_json: bool) -> None:
    """One run: its record and its diff (the keep commit, or the attempt ref of a non-kept run)."""
    from .session import Session

    session = Session.open_for_reading()
    run = session.ledger.find(run_number)
    if run is None:
        last = session.ledger.next_run_number - 1
        raise UsageError(f"no run {run_number} in the ledger (runs are 1 to {last})"
                         if last else f"no run {run_number}: the ledger has no runs yet")
    repo = session.repo
    target = None
    if run.status == "keep":
        from .report import read_trailers

        base = (session.ledger.segments[0].header or {}).get("base_commit")
        info = read_trailers(repo, f"autoresearch/{session.config.session_id}", base)
        if run_number in info:
            target = info[run_number]["commit"]
    elif run.data.get("attempt_ref"):
        target = repo.resolve(str(run.data["attempt_ref"]))
    diff = ""
    if target:
        diff = repo.run("show", "--no-ext-diff", "--stat", "--patch", "--format=commit %H%n%n%B",
                        target).stdout.decode("utf-8", "replace")
    if as_json:
        emit_json({"record": run.data, "diff_commit": target, "diff": diff})
        return
    click.echo(json.dumps(run.data, ensure_ascii=False, indent=2))
    if diff:
        click.echo(diff, nl=False)
    elif run.status == "keep":
        click.echo("(no commit: the kept measurement changed nothing)")
    else:
        click.echo("(no attempt ref recorded for this run)")


@click.command("resume", context_settings=CONTEXT)
@click.option("--session-id", help="The session to resume when it cannot be told from the "
                                   "work tree (several state refs, no .auto/).")
@json_option
def resume_cmd(session_id: str | None, as_json: bool) -> None:
    """Check and repair the session, then say where the loop stands: restore lost session files
    from the state ref, set malformed ledger lines aside, check the configuration, check out the
    session branch, finish or roll back an interrupted keep or revert."""
    from . import report
    from .session import resume

    session, actions = resume(session_id)
    seg = report.segment_summary(session.segment)
    data = {"session_id": session.config.session_id, "actions": actions, "segment": seg,
            "next_run": session.ledger.next_run_number,
            "stop_pending": session.layout.stop.exists(),
            "limit_reached": session.limit_reached(), "warnings": session.warnings}
    if as_json:
        emit_json(data)
        return
    for action in actions:
        click.echo(f"- {action}")
    best, last = seg["best"], seg["last"]
    click.echo(f"session {session.config.session_id}, segment {seg['index']}: {seg['runs']} "
               f"run(s), {seg['kept']} kept; next run {data['next_run']}")
    if best:
        click.echo(f"best {best['metric']:g} (run {best['run']}, commit {best['commit']})")
    if last:
        click.echo(f"last run {last['run']}: {last['status']}")
    if data["stop_pending"]:
        click.echo("STOP is pending: the next run exits 4")
    if data["limit_reached"]:
        click.echo("max_experiments is reached: the next run exits 4")
    for w in session.warnings:
        warn(w)


@click.command("doctor", context_settings=CONTEXT)
@click.option("--fix", is_flag=True, help="Rebuild what can be rebuilt (never deletes a record).")
@json_option
def doctor_cmd(fix: bool, as_json: bool) -> None:
    """Reconcile the ledger, the trailers on the branch, the attempt refs and the state ref.
    Exits 3 when a problem is left that it did not fix."""
    from .doctor import examine, render
    from .session import Session

    session = Session.open(on_branch=False, check_config=False)
    found = render(examine(session, fix=fix))
    left = [f for f in found if not f["fixed"]]
    if as_json:
        emit_json({"findings": found, "fix": fix})
    else:
        if not found:
            click.echo("no problems found")
        for item in found:
            mark = "fixed" if item["fixed"] else ("fixable with --fix" if item["fix"] else
                                                 "needs a person")
            click.echo(f"- {item['problem']} [{mark}]")
    if left:
        raise click.exceptions.Exit(EXIT_REFUSED)


@click.command("stop", context_settings=CONTEXT)
@json_option
def stop_cmd(as_json: bool) -> None:
    """Create .auto/STOP: the next run or measure exits 4 and removes it."""
    from .git import Repo
    from .session import Layout

    layout = Layout(Repo.discover())
    if not layout.config.exists():
        raise Refused("no session here (no .auto/config.toml)")
    layout.stop.write_text(f"stop requested at {time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n")
    if as_json:
        emit_json({"stop": str(layout.stop)})
    else:
        click.echo(f"created {layout.stop}: the loop stops before its next run")


@click.command("hook", context_settings=CONTEXT)
@click.argument("stage", type=click.Choice(["before", "after"]))
@json_option
def hook_cmd(stage: str, as_json: bool) -> None:
    """Fire the before or after hooks by hand, for agents that drive their own loop."""
    from .session import Session

    session = Session.open()
    last = session.ledger.last_run
    if stage == "after" and last is None:
        raise Refused("no run recorded yet: after hooks need a run entry")
    report = session.fire_hooks(stage, run_entry=last.data if last else None)
    if as_json:
        emit_json({"stage": stage, "steer": report.steer or None, "warnings": report.warnings,
                   "firings": [f.ledger_line() for f in report.firings]})
        return
    _print_steer(stage, report)


def _mirror(message: str) -> None:
    """Mirror the session files on the state ref after a change outside a run, if there is a
    session here."""
    from .session import Session

    try:
        session = Session.open(on_branch=False, check_config=False)
    except AutoresearchError:
        return
    session.mirror_state(message)
    for w in session.warnings:
        warn(w)


@click.group("hooks", context_settings=CONTEXT)
def hooks_cmd() -> None:
    """The example hooks shipped with git-autoresearch: list them, install one."""


@hooks_cmd.command("list", context_settings=CONTEXT)
@json_option
def hooks_list_cmd(as_json: bool) -> None:
    """Show the example hooks with a one-line description each."""
    from .hooks import examples

    found = examples()
    if as_json:
        emit_json([{"name": e.name, "stage": e.stage, "summary": e.summary} for e in found])
        return
    width = max(len(e.name) for e in found)
    for e in found:
        click.echo(f"{e.stage:<6}  {e.name:<{width}}  {e.summary}")


@hooks_cmd.command("install", context_settings=CONTEXT)
@click.argument("name")
@click.option("--force", is_flag=True, help="Replace an installed hook of the same name.")
@json_option
def hooks_install_cmd(name: str, force: bool, as_json: bool) -> None:
    """Copy the example hook NAME into .auto/hooks/<stage>.d/, executable."""
    from .git import Repo
    from .hooks import install
    from .session import Layout

    layout = Layout(Repo.discover())
    if not layout.config.exists():
        raise Refused("no session here (no .auto/config.toml): run git autoresearch start first")
    target = install(name, layout.hooks, force=force)
    rel = target.relative_to(layout.repo.top)
    _mirror(f"hooks install {name}")
    if as_json:
        emit_json({"installed": str(rel)})
    else:
        click.echo(f"installed {rel}")


def _segment_of(session: Any, segment: int | None) -> Any:
    if segment is None:
        return session.ledger.current
    if not 0 <= segment < len(session.ledger.segments):
        raise UsageError(f"no segment {segment} (segments are 0 to "
                         f"{len(session.ledger.segments) - 1})")
    return session.ledger.segments[segment]


@click.command("analyze", context_settings=CONTEXT)
@click.option("--segment", type=int, help="Analyse this segment (default: the current one).")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Also draw the runs and the running best: FILE.svg, or FILE.png (needs "
                   "matplotlib: the 'plot' extra).")
@json_option
def analyze_cmd(segment: int | None, plot: Path | None, as_json: bool) -> None:
    """Counts per status and keep rate; baseline, best and improvement; kept runs ranked by their
    gain over the best before them; runs spent per improvement; the longest dry streak."""
    from .insight import analysis_text, analyze
    from .session import Session

    session = Session.open_for_reading()
    seg = _segment_of(session, segment)
    result = analyze(seg)
    if plot is not None:
        from .plot import write_plot

        write_plot(plot, session.ledger.segments, session.config.metric_name,
                   session.config.metric_unit)
    if as_json:
        emit_json(result)
        return
    click.echo(analysis_text(result, session.config.metric_name, session.config.metric_unit),
               nl=False)
    if plot is not None:
        click.echo(f"plot written to {plot}")


@click.command("summary", context_settings=CONTEXT)
@click.option("--max-bytes", type=click.IntRange(min=200), default=4000, show_default=True,
              help="Upper bound on the size of the text (UTF-8 bytes).")
@click.option("--last", type=click.IntRange(min=0), default=30, show_default=True,
              help="How many recent runs to include at most.")
def summary_cmd(max_bytes: int, last: int) -> None:
    """A deterministic text for an agent to resume from after its context was compacted."""
    from .insight import read_ideas, summary
    from .session import Session

    session = Session.open_for_reading()
    cfg = session.config
    try:
        prompt = session.layout.prompt.read_text(encoding="utf-8")
    except FileNotFoundError:
        prompt = ""
    text = summary(goal=cfg.goal, metric_name=cfg.metric_name, unit=cfg.metric_unit,
                   direction=cfg.direction, segment=session.ledger.current, prompt=prompt,
                   ideas=read_ideas(session.layout.auto / "ideas.md"), max_bytes=max_bytes,
                   last=last)
    click.echo(text, nl=False)


@click.group("ideas", context_settings=CONTEXT)
def ideas_cmd() -> None:
    """The ideas backlog, .auto/ideas.md, as Markdown checkboxes."""


def _ideas_path() -> Path:
    from .git import Repo
    from .session import Layout

    return Layout(Repo.discover()).auto / "ideas.md"


def _idea_json(idea: Any) -> dict[str, Any]:
    return {"number": idea.number, "state": idea.state, "text": idea.text}


@ideas_cmd.command("add", context_settings=CONTEXT)
@click.argument("text", nargs=-1, required=True)
@json_option
def ideas_add_cmd(text: tuple[str, ...], as_json: bool) -> None:
    """Add an open idea."""
    from .insight import add_idea

    idea = add_idea(_ideas_path(), " ".join(text))
    _mirror("ideas add")
    if as_json:
        emit_json(_idea_json(idea))
    else:
        click.echo(f"idea {idea.number}: {idea.text}")


@ideas_cmd.command("list", context_settings=CONTEXT)
@click.option("--all", "show_all", is_flag=True, help="Also the ideas already tried.")
@json_option
def ideas_list_cmd(show_all: bool, as_json: bool) -> None:
    """The open ideas (and those a hook offered), numbered."""
    from .insight import read_ideas

    ideas = [i for i in read_ideas(_ideas_path()) if show_all or i.state != "done"]
    if as_json:
        emit_json([_idea_json(i) for i in ideas])
        return
    marks = {"open": "[ ]", "taken": "[~]", "done": "[x]"}
    for idea in ideas:
        click.echo(f"{idea.number:>3} {marks[idea.state]} {idea.text}")


@ideas_cmd.command("next", context_settings=CONTEXT)
@json_option
def ideas_next_cmd(as_json: bool) -> None:
    """The first open idea (exit 0 with nothing printed when there is none)."""
    from .insight import read_ideas

    found = next((i for i in read_ideas(_ideas_path()) if i.state == "open"), None)
    if as_json:
        emit_json(_idea_json(found) if found else None)
    elif found:
        click.echo(f"{found.number}: {found.text}")


@ideas_cmd.command("done", context_settings=CONTEXT)
@click.argument("number", type=int)
@click.option("--run", "run_number", type=int,
              help="The run that tried it: its status and metric are noted.")
@click.option("--note", help="Free text to note instead of (or after) the run.")
@json_option
def ideas_done_cmd(number: int, run_number: int | None, note: str | None,
                   as_json: bool) -> None:
    """Mark idea NUMBER as tried: - [x] ~~idea~~ → run N, status, metric."""
    from .insight import mark_done
    from .report import fmt

    parts = []
    if run_number is not None:
        from .session import Session

        session = Session.open_for_reading()
        run = session.ledger.find(run_number)
        if run is None:
            raise UsageError(f"no run {run_number} in the ledger")
        parts.append(f"run {run.number}, {run.status}, {fmt(run.metric)}")
    if note:
        parts.append(note)
    idea = mark_done(_ideas_path(), number, "; ".join(parts) or None)
    _mirror("ideas done")
    if as_json:
        emit_json(_idea_json(idea))
    else:
        click.echo(f"idea {idea.number}: {idea.text}")


@click.command("import", context_settings=CONTEXT)
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the ledger here instead of .auto/log.jsonl.")
@json_option
def import_cmd(source: Path, output: Path | None, as_json: bool) -> None:
    """Read another tool's session into a ledger: a pi-autoresearch .auto/log.jsonl or
    autoresearch.jsonl, a karpathy/autoresearch results.tsv, or a loop seed .autoresearch/
    folder (or a repository holding one). log, status, analyze and dashboard then read it."""
    from .git import Repo
    from .importers import convert
    from .session import Layout, _exclude_auto

    lines, what = convert(source)
    if output is None:
        repo = Repo.discover()
        layout = Layout(repo)
        if layout.ledger.exists():
            raise Refused(f"{layout.ledger} exists already; name another file with --output")
        layout.auto.mkdir(exist_ok=True)
        _exclude_auto(repo)
        output = layout.ledger
    elif output.exists():
        raise Refused(f"{output} exists already")
    output.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    runs = sum(1 for line in lines if '"type"' not in line.split(",", 1)[0])
    if as_json:
        emit_json({"source": what, "output": str(output), "lines": len(lines)})
    else:
        click.echo(f"imported {what}: {len(lines)} lines ({runs} runs) into {output}")


@click.command("dashboard", context_settings=CONTEXT)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the page (default: .auto/dashboard.html).")
@click.option("--serve", is_flag=True,
              help="Serve the page on 127.0.0.1 and refresh it when the ledger changes.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="The port for --serve (0: any free port).")
def dashboard_cmd(output: Path | None, serve: bool, port: int) -> None:
    """One self-contained HTML page (no network requests): cards, the chart of every run with the
    running best, and the table of runs with their annotations."""
    from .dashboard import ledger_version, render
    from .dashboard import serve as serve_page
    from .session import Session

    session = Session.open_for_reading()
    cfg = session.config

    def build() -> str:
        session.reload()
        return render(session.ledger, goal=cfg.goal, metric_name=cfg.metric_name,
                      unit=cfg.metric_unit, session_id=cfg.session_id)

    if serve:
        serve_page(build, lambda: ledger_version(session.ledger_path), port=port,
                   ready=lambda url: click.echo(f"serving {url} (Ctrl-C to stop)"))
        return
    target = output or session.layout.auto / "dashboard.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(build(), encoding="utf-8")
    click.echo(f"wrote {target}")


@click.command("demo", context_settings=CONTEXT)
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
def demo_cmd(directory: Path | None) -> None:
    """Copy the bundled example project into DIRECTORY and run a whole session on it."""
    from .demo import run_demo

    run_demo(directory, echo=click.echo)


COMMANDS: dict[str, click.Command] = {
    "start": start_cmd,
    "measure": measure_cmd,
    "run": run_cmd,
    "keep": keep_cmd,
    "discard": discard_cmd,
    "crash": crash_cmd,
    "log": log_cmd,
    "status": status_cmd,
    "show": show_cmd,
    "stop": stop_cmd,
    "resume": resume_cmd,
    "doctor": doctor_cmd,
    "hook": hook_cmd,
    "hooks": hooks_cmd,
    "analyze": analyze_cmd,
    "summary": summary_cmd,
    "ideas": ideas_cmd,
    "import": import_cmd,
    "dashboard": dashboard_cmd,
    "demo": demo_cmd,
}


@click.group("git-autoresearch", context_settings=CONTEXT)
@click.version_option(__version__, "--version", prog_name="git-autoresearch")
def cli() -> None:
    """Git plumbing for autoresearch loops: measure a change, keep it with a Result: trailer or
    revert it without losing anything, and record every run in .auto/log.jsonl."""


for _name, _command in COMMANDS.items():
    cli.add_command(_command, _name)


def _wants_json(args: list[str]) -> bool:
    return "--json" in args


def invoke(command: click.Command, prog_name: str, args: list[str]) -> int:
    """Run ``command`` with ``args`` and return the exit code of DESIGN.md section 5."""
    try:
        returned = command.main(args=args, prog_name=prog_name, standalone_mode=False)
        code = returned if isinstance(returned, int) else 0
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        code = 130
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        code = 130
    except Terminated:
        click.echo("terminated", err=True)
        code = 143
    except click.ClickException as exc:
        code = EXIT_USAGE if isinstance(exc, click.UsageError) else exc.exit_code
        message = " ".join(exc.format_message().split())
        if _wants_json(args):
            emit_json({"error": message, "exit_code": code})
        hint = ""
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            hint = f" (see {exc.ctx.command_path} -h)"
        click.echo(f"{prog_name}: {message}{hint}", err=True)
    except AutoresearchError as exc:
        code = exc.exit_code
        if _wants_json(args):
            emit_json({"error": exc.message, "exit_code": code})
        click.echo(f"{prog_name}: {exc.message}", err=True)
        if exc.detail:
            click.echo(exc.detail, err=True)
    except Exception as exc:  # noqa: BLE001 - the one place that turns surprises into exit 1
        if os.environ.get("GIT_AUTORESEARCH_DEBUG"):
            raise
        code = EXIT_INTERNAL
        click.echo(f"{prog_name}: internal error: {exc.__class__.__name__}: {exc} "
                   "(set GIT_AUTORESEARCH_DEBUG=1 for the traceback)", err=True)
    sys.stdout.flush()
    return code


class Terminated(BaseException):
    """SIGTERM arrived: unwind like Ctrl-C, so a running experiment's process group is ended."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated()


def main() -> NoReturn:
    """``git-autoresearch``: the command group."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    sys.exit(invoke(cli, "git autoresearch", sys.argv[1:]))


def _entry(name: str) -> Callable[[], NoReturn]:
    def entry() -> NoReturn:
        signal.signal(signal.SIGTERM, _on_sigterm)
        sys.exit(invoke(COMMANDS[name], f"git autoresearch {name}", sys.argv[1:]))

    entry.__name__ = f"{name}_main"
    entry.__doc__ = f"``git-autoresearch-{name}``."
    return entry


start_main = _entry("start")
measure_main = _entry("measure")
run_main = _entry("run")
keep_main = _entry("keep")
discard_main = _entry("discard")
crash_main = _entry("crash")
log_main = _entry("log")
status_main = _entry("status")
show_main = _entry("show")
stop_main = _entry("stop")
resume_main = _entry("resume")
doctor_main = _entry("doctor")
hook_main = _entry("hook")
hooks_main = _entry("hooks")
demo_main = _entry("demo")
analyze_main = _entry("analyze")
summary_main = _entry("summary")
ideas_main = _entry("ideas")
import_main = _entry("import")
dashboard_main = _entry("dashboard")
