"""start's questions on a terminal: the loop seed's nine, one at a time, for what options leave
out (loop seed, autoresearch-loop.SKILL.txt, "Parameters")."""

from __future__ import annotations

import glob
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

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
    from ..measure.running import run_shell

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
