"""What a night of runs did, for people and for an agent that lost its context: the analysis
(counts, keep rate, improvement, ranked gains, runs per improvement, dry streaks), the bounded
summary (the backlog it lists is :mod:`git_autoresearch.session.ideas`). No click, no git."""

from __future__ import annotations

import math
import re
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..ledger import STATUSES, Run, Segment, finite, json_metric
from ..session.config import format_duration
from .report import delta_pct, fmt, one_line, utf8_text

if TYPE_CHECKING:
    from ..session.ideas import Idea


def analyze(segment: Segment) -> dict[str, Any]:
    """The analysis of one segment.

    ``counts`` per status and ``keep_rate`` (kept / runs), and ``keep_rate_decided``: kept /
    the runs that did not crash, the keep rate karpathy/autoresearch's ``analysis.ipynb``
    prints (``n_keep / (n_keep + n_discard)``); ``baseline``, ``best``,
    ``improvement`` (best - baseline) and ``improvement_pct``; ``gains``: each kept run that
    beat the best before it, with ``gain`` (its improvement over that best, positive is better)
    ranked largest first; ``runs_per_improvement``: runs spent since the previous improvement,
    per improvement, and ``seconds`` between the two keeps' timestamps (None: a timestamp is
    missing), with ``mean_seconds_per_improvement`` (None unless every one is known);
    ``longest_streak_without_keep``.
    """
    runs = segment.runs
    counts = {status: 0 for status in STATUSES}
    for run in runs:
        counts[run.status] = counts.get(run.status, 0) + 1
    baseline = segment.baseline
    best = segment.best
    gains, spent = _gains(segment)
    decided = len(runs) - counts["crash"]
    improvement = None
    if best is not None and baseline is not None:
        assert best.metric is not None and baseline.metric is not None
        change = best.metric - baseline.metric
        improvement = round(change, 12) if math.isfinite(change) else None
    return {
        "segment": segment.index,
        "direction": segment.direction,
        "runs": len(runs),
        "counts": counts,
        "keep_rate": round(counts["keep"] / len(runs), 4) if runs else None,
        "keep_rate_decided": round(counts["keep"] / decided, 4) if decided else None,
        "baseline": _brief(baseline),
        "best": _brief(best),
        "improvement": improvement,
        "improvement_pct": delta_pct(best.metric if best else None,
                                     baseline.metric if baseline else None),
        "gains": gains,
        "runs_per_improvement": spent,
        "mean_runs_per_improvement": round(sum(s["runs"] for s in spent) / len(spent), 2)
        if spent else None,
        "mean_seconds_per_improvement": _mean_seconds(spent),
        "longest_streak_without_keep": _longest_streak_without_keep(runs),
    }


def _gains(segment: Segment) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each kept run that beat the best before it (largest gain first; a gain too large for a
    float, None, comes first of all), and the runs spent on each improvement, in run order."""
    sign = 1.0 if segment.direction == "higher" else -1.0
    gains: list[dict[str, Any]] = []
    spent: list[dict[str, Any]] = []
    incumbent: float | None = None
    since = 0
    since_ms: float | None = None
    for run in segment.runs:
        since += 1
        if run.status != "keep" or run.metric is None:
            continue
        stamp = finite(run.data.get("timestamp"))
        if incumbent is None:
            incumbent, since, since_ms = run.metric, 0, stamp
            continue
        if segment.better(run.metric, incumbent):
            pct = delta_pct(run.metric, incumbent)
            gain = sign * (run.metric - incumbent)
            gains.append({"run": run.number, "metric": json_metric(run.metric),
                          "previous_best": json_metric(incumbent),
                          "gain": round(gain, 12) if math.isfinite(gain) else None,
                          "gain_pct": None if pct is None else round(sign * pct, 2),
                          "description": run.description})
            took = None if stamp is None or since_ms is None else round(
                max(0.0, stamp - since_ms) / 1000, 3)
            spent.append({"run": run.number, "runs": since, "seconds": took})
            incumbent, since, since_ms = run.metric, 0, stamp
    gains.sort(key=lambda g: g["gain"] if g["gain"] is not None else math.inf, reverse=True)
    return gains, spent


def _mean_seconds(spent: list[dict[str, Any]]) -> float | None:
    """The mean of the improvements' ``seconds`` (None when any is unknown, or none)."""
    seconds: list[float | None] = [s["seconds"] for s in spent]
    known = [t for t in seconds if t is not None]
    if not known or len(known) < len(seconds):
        return None
    return round(sum(known) / len(known), 3)


def _longest_streak_without_keep(runs: list[Run]) -> int:
    streak = longest = 0
    for run in runs:
        if run.status == "keep":
            streak = 0
        else:
            streak += 1
            longest = max(longest, streak)
    return longest


def _brief(run: Any) -> dict[str, Any] | None:
    if run is None:
        return None
    return {"run": run.number, "metric": json_metric(run.metric), "commit": run.data.get("commit"),
            "description": run.description}


def analysis_text(result: dict[str, Any], metric_name: str, unit: str) -> str:
    """The analysis for people."""
    u = f" {unit}" if unit else ""
    decided = result["runs"] - result["counts"].get("crash", 0)
    lines = [f"segment {result['segment']} ({result['direction']} is better): {result['runs']} "
             f"runs, keep rate {_pct(result['keep_rate'])}"
             + (f" ({_pct(result['keep_rate_decided'])} of the {decided} that did not crash)"
                if result["counts"].get("crash") and decided else "")]
    lines.append("  " + ", ".join(f"{k} {v}" for k, v in result["counts"].items()))
    base, best = result["baseline"], result["best"]
    if base and best:
        pct = result["improvement_pct"]
        lines.append(f"baseline {fmt(base['metric'])}{u} (run {base['run']}) -> best "
                     f"{fmt(best['metric'])}{u} (run {best['run']}): "
                     f"{fmt(result['improvement'])}{u}" + (f", {pct:+.2f}%" if pct is not None
                                                            else ""))
    if result["gains"]:
        lines.append("kept runs by gain over the best before them:")
        for g in result["gains"]:
            lines.append(f"  run {g['run']:>5}  {metric_name} {fmt(g['metric'])}{u}  gain "
                         f"{fmt(g['gain'])}{u} ({_signed(g['gain_pct'])} better)  "
                         f"{one_line(g['description'])[:60]}")
        lines.append(f"runs per improvement: {result['mean_runs_per_improvement']} on average "
                     f"({', '.join(str(s['runs']) for s in result['runs_per_improvement'])})")
        if result["mean_seconds_per_improvement"] is not None:
            lines.append("time per improvement: "
                         f"{format_duration(result['mean_seconds_per_improvement'])} on average ("
                         + ", ".join(format_duration(s["seconds"])
                                     for s in result["runs_per_improvement"]) + ")")
    lines.append(f"longest streak without a keep: {result['longest_streak_without_keep']} runs")
    return "\n".join(lines) + "\n"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}%"


# --- summary -----------------------------------------------------------------------------


def _section(text: str, heading: str) -> str:
    """The body of a ``## heading`` section of a Markdown file, or ''."""
    match = re.search(rf"^##\s+{re.escape(heading)}\s*$(.*?)(?=^##\s|\Z)", text, re.M | re.S)
    return match.group(1).strip() if match else ""


def summary(*, goal: str, metric_name: str, unit: str, direction: str, segment: Segment,
            prompt: str, ideas: list[Idea], max_bytes: int, last: int) -> str:
    """A deterministic text to resume from: goal, metric, the rules, learnings and dead ends of
    ``prompt`` (prompt.md), baseline and best, the last ``last`` runs (newest first, with
    annotations) and the open ideas, within ``max_bytes`` (UTF-8). When it must cut, older runs
    go first, then ideas, then learnings and dead ends, then rules; the header, the best run and
    the last run always stay."""
    u = f" {unit}" if unit else ""
    base, best = segment.baseline, segment.best
    head = [f"# Autoresearch summary: {_cap(one_line(goal), 150)}",
            f"metric: {metric_name}{f' ({unit})' if unit else ''}, {direction} is better; "
            f"segment {segment.index}, "
            f"{len(segment.runs)} runs, {len(segment.kept)} kept"]
    if base is not None:
        head.append(f"baseline: {fmt(base.metric)}{u} (run {base.number})")
    if best is not None:
        pct = delta_pct(best.metric, base.metric if base else None)
        head.append(f"best: {fmt(best.metric)}{u} (run {best.number}, commit "
                    f"{best.data.get('commit')}{', ' + _signed(pct) if pct is not None else ''})"
                    f": {_cap(one_line(best.description), 150)}")
    runs = list(reversed(segment.runs[-last:])) if last > 0 else []
    text = _Summary(head, runs, [_run_line(r) for r in runs], best,
                    _run_line(best) if best is not None else "", len(segment.runs),
                    _section(prompt, "Rules"), _section(prompt, "Learnings"),
                    _section(prompt, "Dead ends (do not retry)") or _section(prompt, "Dead ends"),
                    [i for i in ideas if i.state != "done"])
    return utf8_text(text.fit(max_bytes))


def _run_line(run: Run) -> str:
    """One run in the summary: status, metric, description, failure reason, annotations."""
    found = run.data.get("asi")
    asi: dict[str, Any] = found if isinstance(found, dict) else {}
    notes = "; ".join(f"{k}: {one_line(str(v))[:160]}" for k, v in asi.items()
                      if v not in (None, ""))[:300]
    reason = run.data.get("reason")
    # (cut at a word, marked: a reason's figures must not be cut in two)
    extra = f" [{textwrap.shorten(one_line(str(reason)), 120, placeholder=' …')}]" \
        if reason else ""
    return _cap(f"- run {run.number} {run.status} {fmt(run.metric)}: "
                f"{one_line(run.description)[:200]}{extra}"
                + (f" ({notes})" if notes else ""), 400)


@dataclass(frozen=True)
class _Summary:
    """The parts of a summary (``runs`` newest first, each as its ``run_lines``), to render
    with fewer of them until the text fits."""

    head: list[str]
    runs: list[Run]
    run_lines: list[str]
    best: Run | None
    best_line: str
    total_runs: int
    rules: str
    learnings: str
    dead: str
    open_ideas: list[Idea]

    def render(self, n_runs: int, n_ideas: int, with_rules: bool, with_dead: bool) -> str:
        parts = list(self.head)
        if with_rules and self.rules:
            parts += ["", "## Rules", self.rules]
        if with_dead and self.learnings:  # the agent's notes: learnings, then dead ends
            parts += ["", "## Learnings", self.learnings]
        if with_dead and self.dead:
            parts += ["", "## Dead ends", self.dead]
        shown = self.run_lines[:n_runs]
        heading = f"## Last runs, newest first ({n_runs} of {self.total_runs}"
        best = self.best
        if best is not None and n_runs and \
                best.number not in {r.number for r in self.runs[:n_runs]}:
            shown = [*shown, self.best_line]
            heading += f"; then the best, run {best.number}"
        if shown:
            parts += ["", heading + ")"]
            parts += shown
        if n_ideas and self.open_ideas:
            parts += ["", "## Open ideas"] + [f"- {i.text}" for i in self.open_ideas[:n_ideas]]
        return "\n".join(parts) + "\n"

    def fit(self, max_bytes: int) -> str:
        """The text within ``max_bytes``: the most recent runs that fit (by bisection), then
        fewer ideas, then no learnings and dead ends, then no rules, then whole lines off the
        end."""

        def fits(text: str) -> bool:
            return len(text.encode("utf-8", "backslashreplace")) <= max_bytes  # (utf8_text)

        n_runs, n_ideas, with_rules, with_dead = len(self.runs), len(self.open_ideas), True, True
        text = self.render(n_runs, n_ideas, with_rules, with_dead)
        if not fits(text) and n_runs > 1:
            low, high = 1, n_runs  # the most runs that fit, by bisection
            while low < high:
                middle = (low + high + 1) // 2
                if fits(self.render(middle, n_ideas, with_rules, with_dead)):
                    low = middle
                else:
                    high = middle - 1
            n_runs = low
            text = self.render(n_runs, n_ideas, with_rules, with_dead)
        while not fits(text) and n_ideas:
            n_ideas -= 1
            text = self.render(n_runs, n_ideas, with_rules, with_dead)
        if not fits(text):
            with_dead = False
            text = self.render(n_runs, n_ideas, with_rules, with_dead)
        if not fits(text):
            with_rules = False
            text = self.render(n_runs, n_ideas, with_rules, with_dead)
        while not fits(text) and "\n" in text.rstrip("\n"):
            text = text.rstrip("\n").rsplit("\n", 1)[0] + "\n"  # whole lines, never mid-word
        return text


def _cap(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, at a character boundary, marked by …."""
    data = text.encode("utf-8", "backslashreplace")  # (utf8_text)
    if len(data) <= limit:
        return text
    return data[:limit - 3].decode("utf-8", "ignore") + "…"
