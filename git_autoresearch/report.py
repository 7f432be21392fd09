"""Reading a session for people and scripts: the run table, the status, reconciliation with the
branch's ``Result:`` trailers. Returns data and plain strings; no click."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from .git import Repo
from .ledger import (
    Ledger,
    Run,
    Segment,
    confidence,
    confidence_label,
    mad,
    median,
    reject_constant,
)

TSV_COLUMNS = ("experiment", "commit", "metric", "status", "duration_s", "description")


def fmt(value: float | None) -> str:
    """A metric for people: up to 6 significant digits, ``-`` when there is none."""
    if value is None:
        return "-"
    return f"{value:.6g}"


def delta_pct(value: float | None, baseline: float | None) -> float | None:
    """Change of ``value`` against ``baseline`` in percent (None when undefined)."""
    if value is None or baseline is None or baseline == 0:
        return None
    change = (value - baseline) / abs(baseline) * 100
    return round(change, 2) if math.isfinite(change) else None


_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|[\x00-\x1f\x7f]")


def one_line(text: str) -> str:
    """Tabs, newlines and other control characters (and terminal escapes) folded to single
    spaces, so that stored text cannot break a table or drive a terminal."""
    return " ".join(_CONTROL.sub(" ", text).split())


def run_row(run: Run, segment: Segment) -> dict[str, Any]:
    """A run as ``log --json`` shows it: the record plus ``delta_pct`` against the baseline."""
    base = segment.baseline
    row = dict(run.data)
    row["segment"] = segment.index
    row["delta_pct"] = delta_pct(run.metric, base.metric if base else None)
    return row


def select_runs(book: Ledger, *, segment: int | None, status: str | None,
                last: int | None) -> list[tuple[Run, Segment]]:
    """Runs of the ledger, oldest first, filtered by segment index, status and count."""
    out = []
    for seg in book.segments:
        if segment is not None and seg.index != segment:
            continue
        for run in seg.runs:
            if status is None or run.status == status:
                out.append((run, seg))
    if last is not None:
        out = out[-last:] if last > 0 else []
    return out


def tsv(rows: list[tuple[Run, Segment]]) -> str:
    """The seed's ``results.tsv``: a header and six tab-separated fields per run; ``-`` for the
    commit of a non-kept run and the metric of a crash; secondary metrics appended to the
    description as ``[name=value, ...]``."""
    lines = ["\t".join(TSV_COLUMNS)]
    for run, _ in rows:
        desc = one_line(run.description)
        metrics = run.data.get("metrics") or {}
        if isinstance(metrics, dict) and metrics:
            desc += " [" + ", ".join(f"{one_line(str(k))}={fmt(_num(v))}"
                                     for k, v in metrics.items()) + "]"
        duration = run.data.get("duration_s")
        lines.append("\t".join([
            str(run.number),
            one_line(str(run.data.get("commit", "-"))) if run.status == "keep" else "-",
            fmt(run.metric),
            run.status,
            fmt(_num(duration)) if duration is not None else "-",
            desc.strip() or "-",
        ]))
    return "\n".join(lines) + "\n"


def csv_text(rows: list[tuple[Run, Segment]]) -> str:
    """The runs as CSV (RFC 4180 quoting): fixed columns, then one per secondary metric."""
    import csv
    import io

    names: list[str] = []
    for run, _ in rows:
        listed = run.data.get("metrics")
        if isinstance(listed, dict):
            names.extend(k for k in listed if k not in names)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["run", "segment", "status", "metric", "delta_pct", "confidence", "commit",
                     "duration_s", "description", *names])
    for run, seg in rows:
        row = run_row(run, seg)
        found = run.data.get("metrics")
        values: dict[str, Any] = found if isinstance(found, dict) else {}
        writer.writerow([run.number, seg.index, run.status,
                         "" if run.metric is None else run.metric,
                         "" if row["delta_pct"] is None else row["delta_pct"],
                         "" if run.data.get("confidence") is None else run.data["confidence"],
                         run.data.get("commit", ""), run.data.get("duration_s", ""),
                         run.description, *(values.get(n, "") for n in names)])
    return out.getvalue()


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def table(rows: list[tuple[Run, Segment]], width: int = 100) -> str:
    """The run table for people: run, status, metric, delta vs baseline, confidence, commit,
    description; a line marks where each segment begins."""
    out = []
    header = f"{'run':>5}  {'status':<13} {'metric':>12} {'vs base':>9} {'conf':>6}  " \
             f"{'commit':<7}  description"
    out.append(header)
    current = None
    for run, seg in rows:
        if seg.index != current:
            current = seg.index
            name = (seg.header or {}).get("name", "")
            out.append(f"-- segment {seg.index}: {one_line(str(name))}")
        base = seg.baseline
        delta = delta_pct(run.metric, base.metric if base else None)
        conf = run.data.get("confidence")
        desc = one_line(run.description)
        room = max(20, width - len(header) + len("description"))
        if len(desc) > room:
            desc = desc[:room - 1] + "…"
        out.append(
            f"{run.number:>5}  {run.status:<13} {fmt(run.metric):>12} "
            f"{(f'{delta:+.1f}%' if delta is not None else '-'):>9} "
            f"{(f'{conf:.2f}' if isinstance(conf, (int, float)) else '-'):>6}  "
            f"{str(run.data.get('commit', '-'))[:7]:<7}  {desc}")
    return "\n".join(out) + "\n"


@dataclass
class Reconciliation:
    """Kept runs as the branch's trailers show them, and each disagreement with the ledger."""

    trailer_runs: dict[int, dict[str, Any]]
    problems: list[str]


@dataclass
class TrailerCommit:
    """A commit of the branch with a ``Result:`` trailer: its id, commit time (seconds),
    subject, ``Autoresearch-Run`` (None when absent or not a number), and the ``Result`` value
    parsed (None when it is not a JSON object of finite numbers: not to be trusted)."""

    commit: str
    time: int
    subject: str
    run: int | None
    result: dict[str, Any] | None


def trailer_log(repo: Repo, branch: str, base: str | None = None) -> list[TrailerCommit]:
    """Every commit of ``branch`` (after ``base``) that has a ``Result:`` trailer, oldest
    first, in one git call. Any tool's trailers count: ours, pi-autoresearch's, its ports'."""
    spec = f"{base}..{branch}" if base else branch
    res = repo.run("log", "--reverse", "--format=%H%x1f%ct%x1f%s%x1f"
                   "%(trailers:key=Autoresearch-Run,valueonly)%x1f"
                   "%(trailers:key=Result,valueonly)%x1e", spec, "--", allow_non_zero=True)
    found: list[TrailerCommit] = []
    if res.returncode != 0:
        return found
    for item in res.stdout.decode("utf-8", "replace").split("\x1e"):
        parts = item.strip("\n").split("\x1f")
        if len(parts) != 5 or not parts[4].strip():
            continue
        run_text = parts[3].strip().splitlines()[0] if parts[3].strip() else ""
        try:
            result = json.loads(parts[4].strip().splitlines()[-1], parse_constant=reject_constant)
        except ValueError:
            result = None
        if not isinstance(result, dict) or any(
                isinstance(v, float) and not math.isfinite(v) for v in result.values()):
            result = None
        found.append(TrailerCommit(parts[0], int(parts[1] or 0), parts[2],
                                   int(run_text) if run_text.isdigit() else None, result))
    return found


def read_trailers(repo: Repo, branch: str, base: str | None,
                  log: list[TrailerCommit] | None = None) -> dict[int, dict[str, Any]]:
    """Kept runs as our trailers record them: run number -> ``{"commit", "result"}``; commits
    without ``Autoresearch-Run`` or with an untrusted ``Result`` are left out."""
    entries = trailer_log(repo, branch, base) if log is None else log
    return {c.run: {"commit": c.commit, "result": c.result} for c in entries
            if c.run is not None and c.result is not None}


def ledger_from_trailers(repo: Repo, branch: str) -> Ledger:
    """Kept runs rebuilt from the ``Result:`` trailers on ``branch`` alone, oldest first,
    numbered by their ``Autoresearch-Run`` trailer where it has one (and it comes after the
    previous number), else one after the previous; a trailer whose status is not ``keep`` is
    no kept run."""
    from .ledger import Ledger, Run, Segment

    segment = Segment(0, None)
    for entry in trailer_log(repo, branch):
        result = entry.result
        if result is None or result.get("status", "keep") != "keep":
            continue
        name = next((k for k in result if k != "status"), None)
        value = result.get(name) if name else None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if segment.header is None:
            segment.header = {"type": "config", "name": f"kept runs on {branch}",
                              "metricName": name, "metricUnit": "", "bestDirection": "lower"}
        last = segment.runs[-1].number if segment.runs else 0
        number = entry.run if entry.run is not None and entry.run > last else last + 1
        data = {"run": number, "commit": entry.commit[:7], "metric": value,
                "metrics": {k: v for k, v in result.items() if k not in ("status", name)},
                "status": "keep", "description": entry.subject,
                "timestamp": entry.time * 1000, "segment": 0, "confidence": None}
        segment.runs.append(Run(data, number, 0))
    return Ledger([segment], [], [], [])


def bad_trailers(log: list[TrailerCommit]) -> list[str]:
    """Short ids of the commits whose ``Result:`` trailer is not to be trusted."""
    return [c.commit[:7] for c in log if c.result is None]


def reconcile(repo: Repo, book: Ledger, branch: str, base: str | None,
              log: list[TrailerCommit] | None = None) -> Reconciliation:
    """Compare the ledger's kept runs with the branch: a trailer run missing from the ledger, a
    ledger keep whose commit is not on the branch, a metric that differs."""
    trailers = read_trailers(repo, branch, base, log)
    problems = []
    on_branch = {v["commit"][:7] for v in trailers.values()}
    if base:
        on_branch.add(base[:7])
    kept = {r.number: r for r in book.runs if r.status == "keep"}
    for number, info in sorted(trailers.items()):
        run = kept.get(number)
        if run is None:
            problems.append(f"commit {info['commit'][:7]} on {branch} records run {number} as "
                            "kept, but the ledger has no such keep")
            continue
        metric_name = next((k for k in info["result"] if k != "status"), None)
        value = info["result"].get(metric_name) if metric_name else None
        if isinstance(value, (int, float)) and run.metric is not None and value != run.metric:
            problems.append(f"run {number}: the trailer says {value}, the ledger {run.metric}")
    unsure = {number: str(run.data.get("commit", ""))[:7] for number, run in kept.items()
              if number not in trailers and str(run.data.get("commit", ""))[:7] not in on_branch}
    if unsure:
        # A keep that committed nothing (or a baseline) sits on a commit without a trailer:
        # ask the branch's history itself, once.
        spec = f"{base}..{branch}" if base else branch
        listed = repo.run("rev-list", spec, "--", allow_non_zero=True).text.split()
        on_branch.update(oid[:7] for oid in listed)
    for number, commit in sorted(unsure.items()):
        if commit not in on_branch:
            problems.append(f"run {number} is recorded as kept at {commit}, which is not on "
                            f"{branch}")
    return Reconciliation(trailers, problems)


def stability(segment: Segment) -> dict[str, Any] | None:
    """The loop seed's stability label over the last 5 kept metrics (from 3 keeps on):
    relative MAD < 1 % *high*, < 5 % *medium*, else *low*."""
    values = [r.metric for r in segment.kept if r.metric is not None][-5:]
    if len(values) < 3:
        return None
    centre = median(values)
    rel = mad(values) / abs(centre) if centre else 0.0
    label = "high" if rel < 0.01 else "medium" if rel < 0.05 else "low"
    return {"label": label, "relative_mad": round(rel, 6)}


def segment_summary(segment: Segment) -> dict[str, Any]:
    """Baseline, best, improvement, counts and confidence of one segment."""
    base, best = segment.baseline, segment.best
    counts: dict[str, int] = {}
    for run in segment.runs:
        counts[run.status] = counts.get(run.status, 0) + 1
    conf = confidence(segment)
    return {
        "index": segment.index,
        "name": (segment.header or {}).get("name"),
        "direction": segment.direction,
        "runs": len(segment.runs),
        "counts": counts,
        "kept": counts.get("keep", 0),
        "baseline": _run_brief(base),
        "best": _run_brief(best),
        "improvement_pct": delta_pct(best.metric if best else None,
                                     base.metric if base else None),
        "confidence": conf,
        "confidence_label": confidence_label(conf),
        "stability": stability(segment),
        "last": _run_brief(segment.runs[-1]) if segment.runs else None,
    }


def _run_brief(run: Run | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {"run": run.number, "status": run.status, "metric": run.metric,
            "commit": run.data.get("commit"), "description": run.description}
