"""``.auto/final.md``: the pull-request body ``finalize`` writes, from its ledger line and the
session's runs. Markdown (CommonMark tables); nothing here runs git or reads files."""

from __future__ import annotations

from typing import Any

from ..ledger import Ledger, Run, Segment
from ..ledger.stats import median
from .plot import axis_label
from .report import (
    DROPPED_VERDICTS,
    audits,
    decision_text,
    effect_of,
    fmt,
    interval_level,
    last_replayed_segment,
    latest_verdict,
    one_line,
    unit_suffix,
)


def _cell(text: str) -> str:
    """Text fit for a Markdown table cell: one line, ``|`` escaped."""
    return one_line(text).replace("|", "\\|")


def _pct(value: Any) -> str:
    return f"{value * 100:+.2f}%" if isinstance(value, (int, float)) \
        and not isinstance(value, bool) else "-"


def render(book: Ledger, final: dict[str, Any], *, goal: str, metric_name: str, unit: str,
           direction: str, command: str, session_id: str, base_commit: str | None = None,
           metric_command: str | None = None,
           again: str = "git autoresearch finalize --force") -> str:
    """The pull-request body for ``final`` (a ``{"type": "final", ...}`` ledger line): the
    goal, the measured gain of the final branch over the base with its interval (or, said
    first and plainly, that the measurement failed), the final checks, a table of the kept
    changes (their effect when kept and against the keep before), the keeps left out, what was
    tried and discarded grouped by idea (the run's ``asi`` ``idea``, else ``hypothesis``), the
    crashes, and how to reproduce the measurement: shell lines that run ``command`` (then
    ``metric_command``) from the top of the work tree at the base (``base_commit``, the full
    id, else the line's ``base``) and at the final branch, and go back to where they began;
    ``again`` is the command that measures both again."""
    u = f" {unit}" if unit else ""
    runs = {run.number: run for run in book.runs}
    replayed = [r for r in final.get("replayed") or [] if r.get("outcome") == "applied"]
    segment = final.get("segment")
    onto = f", the baseline of segment {segment}," if isinstance(segment, int) else ""
    covered = _covered(book, final)
    out = [f"# {goal}", "",
           f"Session `{session_id}`: {axis_label(metric_name, unit)}, {direction} is better. "
           f"{len(covered)} runs; {len(replayed)} kept change(s) replayed onto "
           f"`{final.get('base')}`{onto} as branch `{final.get('branch')}` "
           f"(`{final.get('commit')}`).", ""]
    segments = {run.number: segment for segment in book.segments for run in segment.runs}
    out += _result(final, u) + _kept(replayed, runs, segments, unit, audits(book))
    out += _left_out(final, runs)
    out += _by_hand(final)
    out += _tried(covered) + _crashes(covered)
    measure = [command, *([metric_command] if metric_command else [])]
    out += ["## Reproduce", "", "```sh", 'cd "$(git rev-parse --show-toplevel)"',
            "back=$(git symbolic-ref -q --short HEAD || git rev-parse HEAD)",
            f"git checkout -q --detach {base_commit or final.get('base')}   # before",
            *_benchmark_files(final), *measure,
            f"git checkout -q --detach {final.get('branch')}   # after", *measure,
            'git checkout -q "$back"', "```", "",
            f"`{again}` measures both again, taking turns.", ""]
    return "\n".join(out)


def _covered(book: Ledger, final: dict[str, Any]) -> list[Run]:
    """The runs ``final`` speaks for: those of the segments from the one whose baseline is its
    base (``segment``) to the last one a replayed keep was kept in (``finalize --segment N``:
    segment N's alone); every run when the line does not say."""
    segment = final.get("segment")
    if not isinstance(segment, int) or isinstance(segment, bool):
        return list(book.runs)
    last = max(segment, last_replayed_segment(book, final) or segment)
    return [run for run in book.runs if segment <= run.segment <= last]


def _segment_paths(final: dict[str, Any]) -> list[str]:
    """The paths the segment commits replayed onto the final branch changed (the files that
    define success, committed by ``start --new-segment``), in order, once each."""
    found: list[str] = []
    for entry in final.get("segment_commits") or []:
        if isinstance(entry, dict) and entry.get("outcome") == "applied":
            found += [str(p) for p in entry.get("paths") or []]
    return list(dict.fromkeys(found))


def _benchmark_files(final: dict[str, Any]) -> list[str]:
    """The line that brings the final branch's benchmark files onto the base, to measure it as
    finalize did (none without segment commits)."""
    paths = _segment_paths(final)
    return [f"git checkout -q {final.get('branch')} -- "
            f"{' '.join(_pathspec(p) for p in paths)}   # the benchmark"] \
        if paths and final.get("measured_base") else []


def _pathspec(path: str) -> str:
    """``path`` (from the top of the work tree) as a shell word git takes as that path alone:
    quoted, and with ``:(top,literal)`` when git would read it otherwise (a glob character, or
    a leading ``:``)."""
    import shlex

    literal = path.startswith(":") or any(c in path for c in "*?[\\")
    return shlex.quote(f":(top,literal){path}" if literal else path)


def _result(final: dict[str, Any], u: str) -> list[str]:
    out = ["## Result", ""]
    samples, effect = final.get("samples"), effect_of(final)
    if final.get("verdict") == "crash":
        out.append(f"**The measurement failed**: {final.get('reason')}. The final branch was "
                   "not measured against the base: its effect is unknown.")
    elif isinstance(samples, dict) and samples.get("base") and samples.get("final"):
        base, tip = samples["base"], samples["final"]
        out.append(f"Measured by `finalize`, base and final taking turns, {len(tip)} sample(s) "
                   f"each: base median {fmt(median(base))}{u}, final median "
                   f"{fmt(median(tip))}{u}.")
        if final.get("measured_base"):
            out.append(f"The base was measured with the files that define success as the "
                       f"session left them ({', '.join(_segment_paths(final))}, committed by "
                       f"`start --new-segment`): `{final['measured_base']}`.")
        if isinstance(effect, dict):
            level = interval_level(effect)
            out.append(f"Effect (final minus base): **{_pct(effect.get('relative'))}** "
                       f"[{_pct(effect.get('relative_low'))}, "
                       f"{_pct(effect.get('relative_high'))}]"
                       + (f", {level * 100:.0f}% interval" if level is not None else "")
                       + f": {final.get('verdict')}.")
    else:
        out.append("Not measured (`--samples 0`).")
    checks = final.get("checks")
    if isinstance(checks, dict):
        state = "passed" if checks.get("passed") else (
            f"**failed** ({checks.get('reason') or 'exit ' + str(checks.get('exit_code'))})")
        out.append(f"Final checks `{checks.get('command')}`: {state}.")
    else:
        out.append("No final checks were run (no `final_checks_command` or `checks_command`).")
    return [*out, ""]


def _kept(replayed: list[dict[str, Any]], runs: dict[int, Run], segments: dict[int, Segment],
          unit: str, audited: dict[int, list[dict[str, Any]]]) -> list[str]:
    """The table of the kept changes replayed: each one's metric in its segment's unit
    (``unit`` where the header records none), its change against the keep before it, when
    that one was measured alike (:meth:`Segment.measured_like`; ``- (another measurement)``
    otherwise), and its latest audit's verdict (``audited``: :func:`report.audits`); below
    it, the keeps replayed although an audit found them within noise or a regression."""
    out = ["## Kept changes", "", "| run | commit | metric | vs keep before | decision | "
           "audit | description |", "|---:|---|---:|---:|---|---|---|"]
    doubted: dict[str, list[int]] = {}
    before: Run | None = None
    for entry in replayed:
        run = runs.get(entry.get("run", -1))
        if run is None:
            continue
        segment = segments[run.number]
        change = "-"
        if before is not None and not segment.measured_like(segments[before.number]):
            change = "- (another measurement)"
        elif before is not None and before.metric and run.metric is not None:
            change = f"{(run.metric - before.metric) / abs(before.metric) * 100:+.2f}%"
        verdict = latest_verdict(audited, run.number) or "-"
        if verdict in DROPPED_VERDICTS:
            doubted.setdefault(verdict, []).append(run.number)
        out.append(f"| {run.number} | `{str(entry.get('commit') or '')[:7]}` | "
                   f"{fmt(run.metric)}{unit_suffix(segment, unit)} | {change} | "
                   f"{_cell(decision_text(run))} | {_cell(verdict)} | "
                   f"{_cell(run.description)} |")
        before = run if run.metric is not None else before
    out.append("")
    for verdict, numbers in doubted.items():
        named = ", ".join(map(str, numbers[:-1])) + (" and " if len(numbers) > 1 else "") \
            + str(numbers[-1])
        out += [f"{'Runs' if len(numbers) > 1 else 'Run'} {named} "
                f"{'were' if len(numbers) > 1 else 'was'} found "
                f"{'a ' if verdict == 'regression' else ''}{verdict} by an audit and "
                "replayed all the same (--include-noise or --only).", ""]
    return out


def _left_out(final: dict[str, Any], runs: dict[int, Run]) -> list[str]:
    dropped = final.get("dropped") or []
    if not dropped:
        return []
    out = ["## Keeps left out", ""]
    for entry in dropped:
        run = runs.get(entry.get("run", -1))
        text = _cell(run.description) if run else ""
        out.append(f"- run {entry.get('run')} ({entry.get('why')}): {text}")
    return [*out, ""]


def _by_hand(final: dict[str, Any]) -> list[str]:
    """The commits made by hand on the session branch among the keeps, which the final branch
    lacks."""
    hand = [e for e in final.get("hand_commits") or [] if isinstance(e, dict)]
    if not hand:
        return []
    return ["## Commits made by hand, not replayed", "",
            *(f"- `{e.get('commit')}` {_cell(str(e.get('subject') or ''))}" for e in hand), "",
            "This branch lacks each; any keep made after one was measured with it.", ""]


def _idea(run: Run) -> str:
    asi = run.data.get("asi")
    if isinstance(asi, dict):
        for key in ("idea", "hypothesis"):
            if isinstance(asi.get(key), str) and asi[key].strip():
                return one_line(asi[key])
    return "other ideas"


def _tried(runs: list[Run]) -> list[str]:
    groups: dict[str, list[Run]] = {}
    for run in runs:
        if run.status in ("discard", "checks_failed"):
            groups.setdefault(_idea(run), []).append(run)
    if not groups:
        return []
    out = ["## Tried and discarded", ""]
    for idea in sorted(groups, key=lambda k: (k == "other ideas", k)):
        out += [f"### {_cell(idea)}", ""]
        for run in groups[idea]:
            said = decision_text(run)
            extra = f", {said}" if said != "-" else ""
            out.append(f"- run {run.number} ({run.status}{extra}): {_cell(run.description)}")
        out.append("")
    return out


def _crashes(runs: list[Run]) -> list[str]:
    crashed = [run for run in runs if run.status == "crash"]
    if not crashed:
        return []
    out = ["## Crashes", ""]
    for run in crashed:
        reason = run.data.get("reason")
        out.append(f"- run {run.number}: {_cell(run.description)}"
                   + (f" ({_cell(str(reason))})" if reason else ""))
    return [*out, ""]
