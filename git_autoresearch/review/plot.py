"""The chart of a session as SVG: one mark per run, coloured by status, the running best of each
segment as a line, segment starts marked; a run measured more than once has a whisker from its
lowest to its highest sample, and the incumbent's noise band (the pool's median plus and minus
its robust spread, from each run's ``decision``) is shaded behind the marks. Used by ``analyze
--plot FILE.svg`` and the dashboard; ``.png`` goes through matplotlib when it is installed (the
``plot`` extra)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from pathlib import Path

from ..ledger import Run, Segment
from ..runtime.errors import Refused, UsageError
from .report import fmt, one_line

COLOURS = {"keep": "#1e8e3e", "discard": "#9aa0a6", "crash": "#d93025",
           "checks_failed": "#f29900"}
WIDTH, HEIGHT = 1000, 380
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 20, 40


def _points(segments: list[Segment]) -> list[tuple[int, Run, Segment]]:
    out: list[tuple[int, Run, Segment]] = []
    for seg in segments:
        for run in seg.runs:
            out.append((len(out), run, seg))
    return out


def _nice(value: float) -> str:
    return f"{value:.4g}"


@dataclass(frozen=True)
class _Frame:
    """Where the plot area is and how runs and values map into it: ``x`` of the ``i``-th of
    ``points`` runs, ``y`` of a metric between ``low`` and ``high``."""

    points: int
    low: float
    high: float
    plot_w: int = WIDTH - LEFT - RIGHT
    plot_h: int = HEIGHT - TOP - BOTTOM

    @classmethod
    def around(cls, points: list[tuple[int, Run, Segment]]) -> _Frame:
        """The frame of these runs: their metrics' range, padded by 5 % each side."""
        values = [r.metric for _, r, _ in points if r.metric is not None]
        low, high = (min(values), max(values)) if values else (0.0, 1.0)
        if high == low:
            high, low = high + 1, low - 1
        pad = (high - low) * 0.05
        return cls(len(points), low - pad, high + pad)

    def x(self, i: int) -> float:
        count = max(1, self.points - 1)
        return LEFT + self.plot_w * (i / count if self.points > 1 else 0.5)

    def clip(self, v: float) -> float:
        """``v`` within the frame's range."""
        return min(self.high, max(self.low, v))

    def y(self, v: float) -> float:
        return TOP + self.plot_h * (1 - (v - self.low) / (self.high - self.low))


def axis_label(metric_name: str, unit: str) -> str:
    """The value axis's label: the metric's name and its unit, the unit once when the name
    already ends in it (``total_ms`` in ms, ``total_µs`` in µs)."""
    if not unit or metric_name.lower().endswith(unit.lower()):
        return metric_name
    return f"{metric_name} ({unit})"


def svg(segments: list[Segment], metric_name: str, unit: str = "", *,
        legend: bool = False) -> str:
    """The chart as a standalone SVG document. Each run is one ``<g class="mark">`` holding its
    shape and a ``<title>`` (shown on hover): run number, status, metric, description."""
    points = _points(segments)
    frame = _Frame.around(points)
    u = f" {unit}" if unit else ""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
           f'class="chart" role="img" aria-label="{escape(metric_name)} per run">',
           f'<rect x="{LEFT}" y="{TOP}" width="{frame.plot_w}" height="{frame.plot_h}" '
           'fill="#fff" stroke="#ddd"/>']
    out += _axes(frame, points, axis_label(metric_name, unit), legend)
    out += _segment_starts(frame, points)
    out += _noise_band(frame, points)
    for seg in segments:
        out += _running_best(frame, points, seg)
    out += _whiskers(frame, points)
    out += _marks(frame, points, u)
    out.append("</svg>")
    return "\n".join(out)


def _axes(frame: _Frame, points: list[tuple[int, Run, Segment]], label: str,
          legend: bool) -> list[str]:
    """The value ticks and grid, the run ticks, the legend (when asked) and the axis labels."""
    x, y, plot_w, plot_h = frame.x, frame.y, frame.plot_w, frame.plot_h
    out = []
    for k in range(5):
        v = frame.low + (frame.high - frame.low) * k / 4
        out.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end" '
                   f'font-size="11" fill="#555">{escape(_nice(v))}</text>')
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                   'stroke="#f0f0f0"/>')
    out.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 8}" text-anchor="middle" '
               f'font-size="12" fill="#333">run</text>')
    if points:
        for k in sorted({0, len(points) // 2, len(points) - 1}):
            out.append(f'<text x="{x(k):.1f}" y="{TOP + plot_h + 14}" text-anchor="middle" '
                       f'font-size="11" fill="#555">{points[k][1].number}</text>')
    if legend:
        for k, (status, colour) in enumerate(COLOURS.items()):
            lx = LEFT + 10 + k * 110
            # In the margin above the plot, clear of the data.
            out.append(f'<circle cx="{lx}" cy="{TOP - 9}" r="4" fill="{colour}"/>'
                       f'<text x="{lx + 8}" y="{TOP - 5}" font-size="11" fill="#333">'
                       f"{status}</text>")
    out.append(f'<text x="14" y="{TOP + plot_h / 2}" font-size="12" fill="#333" '
               f'transform="rotate(-90 14 {TOP + plot_h / 2})" text-anchor="middle">'
               f'{escape(label)}</text>')
    return out


def _segment_starts(frame: _Frame, points: list[tuple[int, Run, Segment]]) -> list[str]:
    """A dashed line and a label where each segment's first run is."""
    out = []
    previous = None
    for i, _run, seg in points:
        if seg.index != previous:
            previous = seg.index
            out.append(f'<line class="segment" x1="{frame.x(i):.1f}" x2="{frame.x(i):.1f}" '
                       f'y1="{TOP}" y2="{TOP + frame.plot_h}" stroke="#1a73e8" '
                       'stroke-dasharray="4 3"/>')
            out.append(f'<text x="{frame.x(i) + 3:.1f}" y="{TOP + 12}" font-size="11" '
                       f'fill="#1a73e8">segment {seg.index}</text>')
    return out


def _running_best(frame: _Frame, points: list[tuple[int, Run, Segment]], seg: Segment
                  ) -> list[str]:
    """The running best of ``seg`` as a step line to its last run (nothing before a keep)."""
    x, y = frame.x, frame.y
    line: list[str] = []
    best = None
    for i, run, s in points:
        if s is not seg or run.status != "keep" or run.metric is None:
            continue
        if best is None or seg.better(run.metric, best):
            if best is not None:
                line.append(f"{x(i):.1f},{y(best):.1f}")
            best = run.metric
        line.append(f"{x(i):.1f},{y(best):.1f}")
    last_i = max((i for i, _, s in points if s is seg), default=None)
    if best is not None and last_i is not None:
        line.append(f"{x(last_i):.1f},{y(best):.1f}")
    if not line:
        return []
    return [f'<polyline class="best" points="{" ".join(line)}" fill="none" '
            'stroke="#1e8e3e" stroke-width="1.5"/>']


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _noise_band(frame: _Frame, points: list[tuple[int, Run, Segment]]) -> list[str]:
    """The incumbent's noise band: for each run decided against a pool, a shaded column from
    ``pool_median - pool_spread`` to ``pool_median + pool_spread`` (clipped to the frame), one
    polygon per stretch of consecutive such runs."""
    out: list[str] = []
    stretch: list[tuple[float, float, float]] = []
    half = frame.plot_w / max(1, frame.points - 1) / 2 if frame.points > 1 else 6

    def close() -> None:
        if stretch:
            top = " ".join(f"{x:.1f},{hi:.1f}" for x, hi, _ in stretch)
            bottom = " ".join(f"{x:.1f},{lo:.1f}" for x, _, lo in reversed(stretch))
            out.append(f'<polygon class="noise" points="{top} {bottom}" fill="#1e8e3e" '
                       'fill-opacity="0.10" stroke="none"/>')
            stretch.clear()

    for i, run, _ in points:
        found = run.data.get("decision")
        centre = _finite(found.get("pool_median")) if isinstance(found, dict) else None
        spread = _finite(found.get("pool_spread")) if isinstance(found, dict) else None
        if centre is None or spread is None:
            close()
            continue
        hi, lo = frame.clip(centre + spread), frame.clip(centre - spread)
        x = frame.x(i)
        stretch += [(x - half, frame.y(hi), frame.y(lo)), (x + half, frame.y(hi), frame.y(lo))]
    close()
    return out


def _whiskers(frame: _Frame, points: list[tuple[int, Run, Segment]]) -> list[str]:
    """A line from the lowest to the highest sample of each run measured more than once
    (clipped to the frame)."""
    out = []
    for i, run, _ in points:
        samples = [v for v in (_finite(x) for x in run.data.get("samples") or []) if v is not None]
        if len(samples) < 2 or run.metric is None:
            continue
        colour = COLOURS.get(run.status, "#000")
        low, high = frame.clip(min(samples)), frame.clip(max(samples))
        out.append(f'<line class="whisker" x1="{frame.x(i):.1f}" x2="{frame.x(i):.1f}" '
                   f'y1="{frame.y(high):.1f}" y2="{frame.y(low):.1f}" stroke="{colour}" '
                   'stroke-opacity="0.6"/>')
    return out


def _marks(frame: _Frame, points: list[tuple[int, Run, Segment]], u: str) -> list[str]:
    """One mark per run: a dot at its metric (hollow for a noise probe, ringed for a keep by
    hand against the rule), or a cross at the bottom for a run without one."""
    out = []
    radius = 4 if len(points) <= 300 else 2.5 if len(points) <= 2000 else 1.6
    several = len({seg.index for _, _, seg in points}) > 1
    for i, run, seg in points:
        colour = COLOURS.get(run.status, "#000")
        where = f" (segment {seg.index})" if several else ""
        title = escape(f"run {run.number}{where}: {run.status} {fmt(run.metric)}{u}: "
                       f"{one_line(run.description)[:160]}")
        if run.metric is None:
            cx, cy, r = frame.x(i), TOP + frame.plot_h - 6, radius + 1
            shape = (f'<path d="M{cx - r:.1f},{cy - r:.1f}L{cx + r:.1f},{cy + r:.1f}'
                     f'M{cx - r:.1f},{cy + r:.1f}L{cx + r:.1f},{cy - r:.1f}" '
                     f'stroke="{colour}" stroke-width="1.5"/>')
        else:
            found = run.data.get("decision")
            verdict = found.get("verdict") if isinstance(found, dict) else None
            forced = isinstance(found, dict) and found.get("forced") is True
            # A noise probe (no change) is hollow; a keep by hand against the rule is ringed.
            fill = "none" if verdict == "no_change" else colour
            ring = (f' stroke="{colour if verdict == "no_change" else "#202124"}" '
                    'stroke-width="1.5"' if verdict == "no_change" or forced else "")
            shape = (f'<circle cx="{frame.x(i):.1f}" cy="{frame.y(run.metric):.1f}" '
                     f'r="{radius}" fill="{fill}"{ring}/>')
            if verdict == "no_change" or forced:
                note = "no change: a noise probe" if verdict == "no_change" else "kept by hand"
                title = f"{title} ({escape(note)})"
        out.append(f'<g class="mark {run.status}" data-run="{run.number}">'
                   f'<title>{title}</title>{shape}</g>')
    return out


def write_plot(path: Path, segments: list[Segment], metric_name: str, unit: str = "") -> None:
    """Write the chart to ``path``: SVG for ``.svg``, PNG (via matplotlib) for ``.png``.
    Raises :class:`Refused` for another suffix, or for PNG without matplotlib."""
    suffix = path.suffix.lower()
    if suffix not in (".svg", ".png"):
        raise UsageError(f"--plot {path}: write .svg or .png")
    if not path.parent.is_dir():
        raise Refused(f"--plot {path}: the folder {path.parent} does not exist")
    if suffix == ".svg":
        path.write_text(svg(segments, metric_name, unit, legend=True), encoding="utf-8")
        return
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise Refused("a .png plot needs matplotlib: pip install 'git-autoresearch[plot]' "
                      "(or write .svg, which needs nothing)") from None
    points = _points(segments)
    fig, ax = plt.subplots(figsize=(10, 3.8), dpi=100)
    values = [r.metric for _, r, _ in points if r.metric is not None]
    floor = min(values) if values else 0.0
    for status, colour in COLOURS.items():
        xs = [r.number for _, r, _ in points if r.status == status]
        ys = [r.metric if r.metric is not None else floor for _, r, _ in points
              if r.status == status]
        ax.scatter(xs, ys, s=12, c=colour, label=status, marker="x" if status == "crash" else "o")
    for seg in segments[1:]:
        if seg.runs:
            ax.axvline(seg.runs[0].number, color="#1a73e8", linestyle="--", linewidth=1)
    for seg in segments:
        best, bx, by = None, [], []
        for _i, run, s in points:
            if s is seg and run.status == "keep" and run.metric is not None and (
                    best is None or seg.better(run.metric, best)):
                best = run.metric
            if s is seg and best is not None:
                bx.append(run.number)
                by.append(best)
        ax.step(bx, by, where="post", color="#1e8e3e", linewidth=1)
    ax.set_xlabel("run")
    ax.set_ylabel(metric_name + (f" ({unit})" if unit else ""))
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
