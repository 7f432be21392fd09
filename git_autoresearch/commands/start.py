"""start: a session, or a new segment of one, from options and a configuration file, and the
questions start asks on a terminal for what the options leave out: the loop seed's nine, one
at a time (loop seed, autoresearch-loop.SKILL.txt, "Parameters")."""

from __future__ import annotations

import glob
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from .common import (
    CONTEXT,
    WHOLE,
    clear_progress,
    emit_json,
    json_option,
    paths_text,
    print_steer,
    progress,
    said_once,
    warn,
    warn_each,
)


def _named_paths(entries: tuple[str, ...]) -> dict[str, str] | None:
    """``NAME=PATH`` options as a table (None when there are none); :class:`UsageError` for an
    entry without ``=``."""
    from ..runtime.errors import UsageError

    table = {}
    for entry in entries:
        name, sep, path = entry.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--metrics-json '{entry}' is not NAME=[FILE:]PATH")
        table[name.strip()] = path
    return table or None


def _inline_table(text: str | None) -> dict[str, object] | None:
    """``--score``'s TOML inline table (None when not given); :class:`UsageError` when it is
    not one."""
    from ..runtime.errors import UsageError
    from ..session.config import parse_toml

    if text is None:
        return None
    table = parse_toml(f"score = {text}\n".encode(), source="--score").get("score")
    if not isinstance(table, dict):
        raise UsageError(f"--score '{text}' is not a TOML inline table {{kind = ...}}")
    return table


def _target(ctx: click.Context, param: click.Parameter, value: str | None
            ) -> float | str | None:
    """``--target-metric``: a number as the ledger writes numbers (80, not 80.0), or the text
    as given (``none`` lifts the target; anything else the configuration refuses, naming
    the key)."""
    from ..ledger import json_number
    from ..measure.samples import parse_number

    if value is None:
        return None
    number, _ = parse_number(value)
    return value if number is None else json_number(number)


@click.command("start", context_settings=CONTEXT,
               short_help="create a session and measure its baseline")
@click.option("--goal", help="What the session optimises, in a few words.")
@click.option("--command", "command_", metavar="SHELL", help="The experiment command.")
@click.option("--metric-name", help="Name of the primary metric (default: metric).")
@click.option("--metric-unit", help="Unit of the primary metric, e.g. ms.")
@click.option("--direction", help="lower or higher is better (default: lower).")
@click.option("--metric-pattern", metavar="REGEX",
              help="Regex with one capture group; its last match in the run log is the metric.")
@click.option("--metric-command", metavar="SHELL",
              help="A command whose stdout is the metric (instead of --metric-pattern).")
@click.option("--metric-json", metavar="FILE:PATH",
              help="Read the metric from JSON: a file the command writes and a path in it, e.g. "
                   "bench.json:results[0].mean (a bare PATH reads the command's output).")
@click.option("--metrics-json", multiple=True, metavar="NAME=[FILE:]PATH",
              help="A secondary metric read from JSON (repeatable; a bare PATH reads "
                   "--metric-json's file).")
@click.option("--score", "score_table", metavar="TOML",
              help="Composite scoring as a TOML inline table, e.g. '{kind = \"gated\", primary "
                   "= \"value\", gates = {accuracy = {min = 0.95}}}' (or a [score] table in "
                   "--config).")
@click.option("--scope", multiple=True, metavar="PATH",
              help="A path an experiment may change (repeatable; none: any path that is "
                   "neither protected nor readonly). Read from the current directory, as git "
                   "reads paths.")
@click.option("--protected", multiple=True, metavar="PATH",
              help="A path for the agent's notes: no revert touches it, no keep commits it "
                   "(repeatable). Read from the current directory, as git reads paths.")
@click.option("--readonly", multiple=True, metavar="PATH",
              help="A path that defines success (benchmark, checks, data, scorer): a change to "
                   "it is saved on a ref, undone before measuring and recorded as a violation "
                   "(repeatable; files the commands name are readonly anyway). Read from the "
                   "current directory, as git reads paths.")
@click.option("--checks-command", metavar="SHELL",
              help="A command that must succeed for a run to be kept.")
@click.option("--final-checks-command", metavar="SHELL",
              help="What finalize runs on the final branch, e.g. the full test suite "
                   "(default: the checks command).")
@click.option("--timeout-seconds", type=float, help="Limit per measurement (default 600).")
@click.option("--checks-timeout-seconds", type=float, help="Limit for the checks (default 300).")
@click.option("--runs-per-experiment", type=WHOLE,
              help="Samples per measurement under the strict rule (default 1; the sequential "
                   "rule takes samples until they decide).")
@click.option("--aggregate", type=click.Choice(["median", "min", "mean"]),
              help="How samples combine (default median).")
@click.option("--max-experiments", type=WHOLE, help="Stop after this many runs in a segment.")
@click.option("--max-duration", metavar="DURATION",
              help="Stop once the segment has run this long: 8h, 90m, 3600s, 1h30m (0 lifts "
                   "the budget).")
@click.option("--target-metric", metavar="NUMBER", callback=_target,
              help="Stop once the segment's best reaches this value of the metric (or beats "
                   "it, in the direction); none lifts it.")
@click.option("--max-runs-without-keep", type=WHOLE, metavar="N",
              help="Stop after N runs in a row without a keep in a segment, a plateau (0 "
                   "lifts it).")
@click.option("--max-failures-in-a-row", type=WHOLE, metavar="N",
              help="Stop after N runs in a row that crashed or failed their checks in a "
                   "segment (0 lifts it).")
@click.option("--decision", type=click.Choice(["sequential", "strict"]),
              help="How a run is decided: sequential (the default: samples against the "
                   "incumbent's, robust to noise) or strict (the aggregate beats the best).")
@click.option("--min-effect", type=float, metavar="FRACTION",
              help="The smallest relative improvement worth a commit, under either rule (0.01: "
                   "1%; default 0).")
@click.option("--max-samples", type=WHOLE,
              help="Sequential: samples of a run against the incumbent's earlier samples at "
                   "most, 2 to 100 (default 16); the side-by-side stage adds up to "
                   "--incumbent-pairs.")
@click.option("--baseline-samples", type=WHOLE,
              help="Sequential: samples of the baseline, 1 to 100 (default 5).")
@click.option("--remeasure-incumbent/--no-remeasure-incumbent", default=None,
              help="Sequential: one more sample of the incumbent after each revert (default on).")
@click.option("--incumbent-pairs", type=WHOLE, metavar="N",
              help="Sequential: pairs of incumbent and candidate samples measured side by side "
                   "before a verdict, at most, 4 to 100 (default 10; 0: the incumbent's earlier "
                   "samples alone decide).")
@click.option("--shared-paths", multiple=True, metavar="PATH",
              help="An ignored file or folder the benchmark needs (a virtual environment, "
                   "build outputs, data), linked into the incumbent's worktree (repeatable).")
@click.option("--measure-slots", type=WHOLE, metavar="N",
              help="Measurements at a time on this machine, across the session's worktrees "
                   "(default 1: one at a time).")
@click.option("--pin-cpus/--no-pin-cpus", default=None,
              help="Pin each measurement slot's commands to its share of the CPUs (Linux).")
@click.option("--claim-timeout", metavar="DURATION",
              help="How long a claim on an idea lasts (ideas claim): 2h (the default), 90m.")
@click.option("--session-id", help="Session id (default: the goal in kebab case plus the date, "
              "then -2, -3, ... when an earlier session has it; an id whose refs exist, or "
              "whose branch would be a folder of branches, is refused; one that is the goal "
              "in kebab case is warned of: pi-autoresearch's finalize.sh, given it as its "
              "goal, could not make its branches).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Read the configuration keys from this TOML file (its paths are read from "
                   "the top of the work tree).")
@click.option("--new-segment", is_flag=True,
              help="Start a new segment of the existing session with changed options. The "
                   "changed files that the --command, --metric-command, --checks-command and "
                   "--readonly given now name (a new benchmark script, a new data file) are "
                   "committed first, as a segment commit, and the baseline is measured on it; "
                   "any other change is refused.")
@click.option("--commit-path", "commit_paths", multiple=True, metavar="PATH",
              help="With --new-segment: also commit this changed file or folder with the new "
                   "segment's files (repeatable). Read from the current directory, as git "
                   "reads paths.")
@click.option("--no-baseline", is_flag=True, help="Do not measure the baseline now.")
@click.option("--force", is_flag=True,
              help="Start despite untracked files (they are then never touched).")
@click.option("--allow-missing", is_flag=True,
              help="Accept a --scope, --protected or --readonly path that matches no file yet.")
@json_option
def start_cmd(goal: str | None, command_: str | None, metric_name: str | None,
              metric_unit: str | None, direction: str | None, metric_pattern: str | None,
              metric_command: str | None, metric_json: str | None,
              metrics_json: tuple[str, ...], score_table: str | None,
              scope: tuple[str, ...], protected: tuple[str, ...],
              readonly: tuple[str, ...], checks_command: str | None,
              final_checks_command: str | None, timeout_seconds: float | None,
              checks_timeout_seconds: float | None, runs_per_experiment: int | None,
              aggregate: str | None, max_experiments: int | None,
              max_duration: str | None, target_metric: float | str | None,
              max_runs_without_keep: int | None, max_failures_in_a_row: int | None,
              decision: str | None, min_effect: float | None,
              max_samples: int | None, baseline_samples: int | None,
              remeasure_incumbent: bool | None, incumbent_pairs: int | None,
              shared_paths: tuple[str, ...], measure_slots: int | None,
              pin_cpus: bool | None, claim_timeout: str | None, session_id: str | None,
              config_file: Path | None, new_segment: bool, commit_paths: tuple[str, ...],
              no_baseline: bool, force: bool, allow_missing: bool, as_json: bool) -> None:
    """Create a session: branch autoresearch/<id>, .auto/, the ledger, and the baseline run.

    On a terminal, without --goal or --command (and without --config or --new-segment), the
    loop's questions are asked one at a time for the options not given: the regex is tried on
    a first run of the command, scope paths are checked. Never with --json or without a
    terminal (then the missing option is an error, exit 2).

    The hooks fire around the baseline as around a run, as pi-autoresearch fires them when a
    session starts: before hooks once the session (or segment) is written, before the baseline
    is measured, and after hooks with the baseline's record, a failed one too; their steer is
    printed (and is steer in --json). With --no-baseline no hook fires: the first run fires
    its own."""
    from ..lifecycle.start import BaselineFailed, StartOptions, start

    values = {
        "goal": goal, "command": command_, "metric_name": metric_name,
        "metric_unit": metric_unit, "direction": direction, "metric_pattern": metric_pattern,
        "metric_command": metric_command, "metric_json": metric_json,
        "metrics_json": _named_paths(metrics_json), "score": _inline_table(score_table),
        "scope": list(scope) or None,
        "protected": list(protected) or None, "readonly": list(readonly) or None,
        "checks_command": checks_command, "final_checks_command": final_checks_command,
        "timeout_seconds": timeout_seconds, "checks_timeout_seconds": checks_timeout_seconds,
        "runs_per_experiment": runs_per_experiment, "aggregate": aggregate,
        "max_experiments": max_experiments, "max_duration": max_duration,
        "target_metric": target_metric, "max_runs_without_keep": max_runs_without_keep,
        "max_failures_in_a_row": max_failures_in_a_row,
        "decision": decision, "min_effect": min_effect,
        "max_samples": max_samples, "baseline_samples": baseline_samples,
        "remeasure_incumbent": remeasure_incumbent, "incumbent_pairs": incumbent_pairs,
        "shared_paths": list(shared_paths) or None, "measure_slots": measure_slots,
        "pin_cpus": pin_cpus, "claim_timeout": claim_timeout, "session_id": session_id,
    }
    if config_file is None and not new_segment:

        if needs_asking(values) and can_ask(as_json):
            ask_missing(values)
    opts = StartOptions(values=values, config_file=config_file, new_segment=new_segment,
                        no_baseline=no_baseline, force=force, allow_missing=allow_missing,
                        commit_paths=list(commit_paths))
    try:
        started = start(opts, progress=progress())
    except BaselineFailed as failed:
        _failed_baseline(failed, as_json)
        raise
    finally:
        clear_progress()
    _say_started(started, as_json)


def _say_started(started: Any, as_json: bool) -> None:
    """What ``start`` made (a :class:`lifecycle.start.Started`), for people or as the JSON document,
    with the steer of the hooks fired around the baseline."""
    from ..history.refs import session_branch

    session, record = started.session, started.record
    cfg = session.config
    hooks = [r for r in (started.before, started.after) if r is not None]
    told: set[str] = set()
    warn_each(started.warnings, told)
    swapped = started.swapped
    if as_json:
        emit_json("start", {
            "session_id": cfg.session_id, "branch": session_branch(cfg.session_id),
            "segment": session.segment.index, "config": cfg.to_dict(), "baseline": record,
            "steer": _steer(hooks),
            "warnings": said_once(started.warnings, *(r.warnings for r in hooks)),
            "segment_commit": swapped.commit[:7] if swapped else None,
            "committed_paths": list(swapped.paths) if swapped else []})
        return
    click.echo(f"session {cfg.session_id} on branch autoresearch/{cfg.session_id}, "
               f"segment {session.segment.index}")
    if swapped:
        click.echo(f"committed {paths_text(swapped.paths)} as {swapped.commit[:7]}, the segment "
                   "commit the new segment starts from")
    click.echo(f"metric {cfg.metric_name} ({cfg.direction} is better)")
    if started.before is not None:
        print_steer("before", started.before, told)
    if record:
        click.echo(f"baseline: {cfg.metric_name} = {record['metric']}"
                   f"{' ' + cfg.metric_unit if cfg.metric_unit else ''} (run {record['run']})")
    else:
        click.echo("no baseline measured yet: the first run of the segment will be kept as it")
    if started.after is not None:
        print_steer("after", started.after, told)


def _steer(reports: list[Any]) -> str | None:
    """The steer of hook reports, joined in firing order (None: they printed nothing)."""
    return "\n".join(r.steer for r in reports if r.steer) or None


def _failed_baseline(failed: Any, as_json: bool) -> None:
    """Say the steer of the hooks fired around a baseline that failed (a
    :class:`lifecycle.start.BaselineFailed`), before the refusal itself: on stdout for people; with
    ``--json``, the error document here, with ``steer``, and exit 3 after the message."""
    if not as_json:
        print_steer("before", failed.before)
        print_steer("after", failed.after)
        return
    for message in failed.before.warnings + failed.after.warnings:
        warn(message)
    emit_json("error", {"error": failed.message, "exit_code": failed.exit_code,
                        "steer": _steer([failed.before, failed.after])}, interruptible=False)
    click.echo(f"git autoresearch: {failed.message}", err=True)
    if failed.detail:
        click.echo(failed.detail, err=True)
    raise click.exceptions.Exit(failed.exit_code)


# --- the questions on a terminal ------------------------------------------------------------------

# A first run of the command, for trying the regex, stops after this many seconds at most.
TRIAL_SECONDS = 600.0


def can_ask(as_json: bool) -> bool:
    """True when questions may be asked: not ``--json``, and stdin and stdout are terminals."""
    return not as_json and sys.stdin.isatty() and sys.stdout.isatty()


def needs_asking(values: dict[str, Any]) -> bool:
    """True when a required option (goal, command) is missing from ``values``."""
    return not values.get("goal") or not values.get("command")


def _optional(text: str) -> str | None:
    return text.strip() or None


def _first_output(command: str, top: Path, timeout: float) -> str:
    """The output (stdout and stderr) of one run of ``command`` at the top of the work tree
    ``top``, where measuring runs it, as text; at most ``timeout`` seconds."""
    from ..measure.runner import run_shell

    with tempfile.TemporaryFile() as log:
        outcome = run_shell(command, cwd=top, stdout=log.fileno(),
                            timeout=min(timeout, TRIAL_SECONDS), env=os.environ)
        log.seek(0)
        output = log.read().decode("utf-8", "replace")
    if outcome.timed_out:
        click.echo(f"the command ran out of time ({min(timeout, TRIAL_SECONDS):g} s)")
    elif outcome.exit_code != 0:
        click.echo(f"the command exited {outcome.exit_code}")
    return output


def regex_reading(pattern: str, output: str) -> tuple[str, str] | str:
    """Try ``pattern`` on ``output`` as measuring reads a log (the last match of its one capture
    group): (the matched line, the capture), or a one-line reason it cannot be used."""
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        return f"'{pattern}' is not a valid regex: {exc}"
    if regex.groups != 1:
        return f"'{pattern}' must have exactly one capture group"
    found: tuple[str, str] | None = None
    for line in output.splitlines():
        for match in regex.finditer(line):
            if match.group(1) is not None:
                found = (line.strip(), match.group(1))
    return found or f"'{pattern}' matched nothing in the command's output"


def _ask_regex(command: str, top: Path, timeout: float) -> str | None:
    """Question 3, the metric regex, tried against a first run of ``command`` until it matches
    (an empty answer: no regex)."""
    output: str | None = None
    while True:
        answer = click.prompt("Metric regex, one capture group (empty: a metric command or "
                              "METRIC lines)", default="", show_default=False)
        if not answer.strip():
            return None
        if output is None:
            click.echo(f"running '{command}' once to try it...")
            output = _first_output(command, top, timeout)
        reading = regex_reading(answer, output)
        if isinstance(reading, str):
            click.echo(f"{reading}; try again")
            continue
        click.echo(f"matched: {reading[0]} -> {reading[1]}")
        return answer


def unmatched_paths(paths: list[str]) -> list[str]:
    """The paths of ``paths`` (read from the current directory; a glob may be one) that match
    nothing in the work tree."""
    return [p for p in paths
            if not (glob.glob(p, recursive=True) if any(c in p for c in "*?[")
                    else os.path.lexists(p))]


def _ask_scope() -> list[str] | None:
    """Question 5, the files in scope, comma-separated, asked again while one matches nothing
    (an empty answer: any path)."""
    while True:
        answer = click.prompt("Files in scope, comma-separated (empty: any path)", default="",
                              show_default=False)
        paths = [p.strip() for p in answer.split(",") if p.strip()]
        missing = unmatched_paths(paths)
        if not missing:
            return paths or None
        click.echo(f"'{missing[0]}' matches no file in the work tree; try again")


def _ask_number(text: str, default: str, kind: type) -> Any:
    """A number (``kind``), or None for an empty answer when ``default`` is empty."""
    while True:
        answer = click.prompt(text, default=default, show_default=bool(default))
        if not answer.strip():
            return None
        try:
            value = kind(answer)
        except ValueError:
            click.echo(f"'{answer}' is not a number; try again")
            continue
        if value < 0:
            click.echo(f"'{answer}' is negative; try again")
            continue
        return value


def ask_missing(values: dict[str, Any]) -> None:
    """Ask, in the loop seed's order, the questions whose option is missing from ``values`` and
    store the answers in it (keys as :class:`~git_autoresearch.session.config.Config`'s). Outside a
    repository, the error :meth:`Layout.discover` raises, before any question."""
    from ..session.layout import Layout

    top = Layout.discover().repo.top
    if not values.get("goal"):
        values["goal"] = click.prompt("Goal: what metric to optimise")
    if not values.get("command"):
        values["command"] = click.prompt("Experiment command")
    timeout = values.get("timeout_seconds") or 600.0
    if not any(values.get(k) for k in ("metric_pattern", "metric_command", "metric_json")):
        values["metric_pattern"] = _ask_regex(values["command"], top, timeout)
        if values["metric_pattern"] is None:
            values["metric_command"] = _optional(click.prompt(
                "Metric command, its stdout the metric (empty: METRIC name=value lines)",
                default="", show_default=False))
    if not values.get("direction"):
        values["direction"] = click.prompt("Direction", default="lower",
                                           type=click.Choice(["lower", "higher"]))
    if values.get("scope") is None:
        values["scope"] = _ask_scope()
    if values.get("timeout_seconds") is None:
        values["timeout_seconds"] = _ask_number("Timeout in seconds per run", "600", float)
    if values.get("checks_command") is None:
        values["checks_command"] = _optional(click.prompt(
            "Checks command, must succeed for a keep (empty: none)", default="",
            show_default=False))
    if values.get("runs_per_experiment") is None:
        values["runs_per_experiment"] = _ask_number("Runs per experiment", "1", int)
    if values.get("max_experiments") is None:
        values["max_experiments"] = _ask_number("Max experiments (empty: no limit)", "", int)
