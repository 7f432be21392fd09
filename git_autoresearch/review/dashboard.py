"""``git autoresearch dashboard``: one self-contained HTML file (no network requests), or served on
127.0.0.1 and refreshed when the ledger changes."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..ledger import Ledger, Run, Segment
from .plot import COLOURS, svg
from .report import (
    as_number,
    audit_mark,
    audits,
    decision_text,
    delta_pct,
    effect_of,
    fmt,
    interval_level,
    last_replayed_segment,
    linked_description,
    measured_by,
    metric_of,
    one_line,
    retries,
    segment_list,
    segment_summary,
    touched_paths,
    unit_suffix,
    utf8_text,
)

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#202124;background:#fafafa}
h1{font-size:20px;margin:0 0 4px} .sub{color:#5f6368;margin-bottom:16px}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin-bottom:16px}
.card{background:#fff;border:1px solid #e0e0e0;border-radius:8px;padding:10px 14px;min-width:150px}
.card .k{color:#5f6368;font-size:12px} .card .v{font-size:20px;font-weight:600}
.chart{width:100%;max-width:1100px;height:auto;background:#fff;border:1px solid #e0e0e0}
.legend span{display:inline-block;margin-right:14px;font-size:12px}
.legend i{display:inline-block;width:10px;height:10px;border-radius:5px;margin-right:4px}
table{border-collapse:collapse;background:#fff;margin-top:16px;font-size:13px;width:100%}
th,td{border-bottom:1px solid #eee;padding:4px 8px;text-align:left;vertical-align:top}
th{position:sticky;top:0;background:#f1f3f4} tr{content-visibility:auto}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.keep{color:#1e8e3e}.discard{color:#5f6368}.crash{color:#d93025}.checks_failed{color:#e37400}
details.diff summary{cursor:pointer;color:#1a73e8} .nodiff,.final-out{color:#5f6368;font-size:12px}
details.diff pre{max-width:80vw;max-height:60vh;overflow:auto;background:#f8f9fa;padding:6px;
font-size:12px;white-space:pre} .final{color:#1e8e3e;font-weight:600}
.final-card{background:#fff;border:1px solid #1e8e3e;border-radius:8px;padding:10px 14px;
margin-bottom:16px} .final-card .k{color:#5f6368;font-size:12px}
.final-card .v{font-size:16px;font-weight:600}
.note{color:#5f6368;margin:-8px 0 12px} table.segments{margin:0 0 16px}
h2.chart-title{font-size:14px;margin:16px 0 4px} .touched{color:#d93025;font-size:12px}
"""

SCRIPT = """
(function(){
  var errors = 0;
  function count(){ errors++; document.body.setAttribute('data-errors', String(errors)); }
  window.addEventListener('error', count);
  document.addEventListener('securitypolicyviolation', count);
  document.body.setAttribute('data-errors', '0');
  document.body.setAttribute('data-requests',
    String(performance.getEntriesByType('resource').length));
  document.body.setAttribute('data-marks',
    String(document.querySelectorAll('svg.chart g.mark').length));
  if (location.protocol === 'http:') {
    var seen = null;
    setInterval(function(){
      fetch('/version').then(function(r){ return r.text(); }).then(function(v){
        if (seen !== null && v !== seen) { location.reload(); }
        seen = v;
      }).catch(function(){});
    }, 2000);
  }
})();
"""


NOTE_COLUMNS = (("hypothesis",), ("rollback_reason",),
                ("next_action_hint", "next_action", "next_focus"))


def _note(asi: dict[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = asi.get(key)
        if value not in (None, ""):
            return one_line(value if isinstance(value, str) else json.dumps(value))
    return ""


def _others(asi: dict[str, Any]) -> str:
    shown = {k for keys in NOTE_COLUMNS for k in keys}
    return "; ".join(f"{k}: {one_line(v if isinstance(v, str) else json.dumps(v))}"
                     for k, v in asi.items() if k not in shown and v not in (None, ""))


def _card(key: str, value: str) -> str:
    return f'<div class="card"><div class="k">{escape(key)}</div><div class="v">{escape(value)}' \
           "</div></div>"


def render(book: Ledger, *, goal: str, metric_name: str, unit: str, session_id: str,
           diffs: Mapping[int, tuple[str, str]] | None = None) -> str:
    """The dashboard page: the headline cards of the current segment (baseline -> best,
    improvement, runs, kept; :func:`_whole_session` across the segments measured as it is),
    the card of the latest ``finalize`` (its ``{"type": "final"}`` ledger line: branch,
    checks, A/B result), the table of segments (each with its own baseline and best) when
    there are several, a chart per way of measuring (one mark per run, hover for details), and
    the table of runs with their annotations, the keeps finalize replayed or left out marked.
    ``diffs`` (run number -> (patch text, ``""``) or (``""``, why there is none), as
    ``runcommits.run_diffs`` gives them) puts each run's patch one click away in its row;
    without it the page has no patches."""
    seg = segment_summary(book.current)
    u = f" {unit}" if unit else ""
    several = len(book.segments) > 1
    cards = _cards(seg, len(book.runs), u, several)
    legend = "".join(f'<span><i style="background:{c}"></i>{escape(s)}</span>'
                     for s, c in COLOURS.items())
    legend += '<span><i style="background:#1e8e3e;height:2px;border-radius:0"></i>' \
              "running best</span>"
    legend += '<span><i style="background:#1e8e3e;opacity:0.15;border-radius:0"></i>' \
              "incumbent's noise (median ± spread)</span>"
    legend += '<span><i style="background:#9aa0a6;width:2px;border-radius:0"></i>' \
              "a run's samples, lowest to highest</span>"
    whole = _whole_session(book)
    if whole is not None:
        cards.insert(1, _card(*whole))
    audited = audits(book)
    final = latest_final(book)
    if final is not None:
        # (in the unit of the segment its keeps were last measured in: finalize --segment N)
        last = last_replayed_segment(book, final)
        cards.insert(0, _final_card(final, unit_suffix(
            book.segments[book.current.index if last is None else last], unit)))
    marks = _final_marks(final)
    retried_by = retries(book.runs)
    rows = [(run.number, _row(segment, run, audited.get(run.number), marks.get(run.number, ""),
                              (diffs or {}).get(run.number), retried_by))
            for segment in book.segments
            for run in reversed(segment.runs)]
    rows.sort(key=lambda row: -row[0])
    # One metric's name heads the column only when every segment measures it alike.
    named = escape(metric_name) if len(book.measurements()) < 2 else "metric"
    header = "".join(f"<th>{h}</th>" for h in (
        "run", "seg", "status", named, "vs baseline", "decision", "confidence",
        "commit",
        "description", "hypothesis", "rollback reason", "next action", "other notes"))
    above = _not_compared(book) + (_segments_table(book, unit) if several else "")
    return utf8_text(_page(book, seg, goal=goal, metric_name=metric_name, unit=unit,
                           session_id=session_id, cards=cards, legend=legend, header=header,
                           rows=[row for _, row in rows], above=above))


def _whole_session(book: Ledger) -> tuple[str, str] | None:
    """The card of the session across the segments measured as the current one is (the same
    command, metric and direction: :meth:`Ledger.alike`), when there are several with runs:
    (its label, naming them, and the first baseline → the best kept run of any of them, and
    the change); None otherwise (one segment, or none measured alike: the headline is the
    current segment's alone)."""
    segments = [seg for seg in book.alike(book.current) if seg.runs]
    if len(segments) < 2:
        return None
    first = segments[0].baseline
    bests = [seg.best for seg in segments if seg.best is not None and seg.best.metric is not None]
    if first is None or first.metric is None or not bests:
        return None
    best = bests[0]
    for run in bests[1:]:
        assert run.metric is not None and best.metric is not None
        if segments[0].better(run.metric, best.metric):
            best = run
    change = delta_pct(best.metric, first.metric)
    named = segment_list([seg.index for seg in segments])
    everyone = len(segments) == len([seg for seg in book.segments if seg.runs])
    label = f"whole session ({named}, measured alike)" if everyone else \
        f"{named}, measured alike: first baseline → best"
    return label, (f"{fmt(first.metric)} → {fmt(best.metric)} (run {best.number})"
                   + (f", {change:+.2f}%" if change is not None else ""))


def _not_compared(book: Ledger) -> str:
    """The note under the cards naming the segments measured otherwise than the current one
    (another command, metric or direction), which the headline leaves out; ``""`` when there
    are none."""
    current = book.current
    others = [seg.index for seg in book.segments if seg.runs and not current.measured_like(seg)]
    if not others:
        return ""
    return (f'<div class="note">The headline is segment {current.index}\'s: '
            f"{segment_list(others)} measured otherwise (another command, metric or "
            "direction), so their figures are not compared with it; each has its own line in "
            "the table of segments and its own chart.</div>")


def _segments_table(book: Ledger, unit: str) -> str:
    """The table of segments: for each, its name, how it measured (:func:`measured_by`), the
    segments measured alike, its runs and keeps, and its own baseline → best (in its own
    unit; ``unit`` where its header records none) and improvement."""
    rows = []
    for segment in book.segments:
        u = unit_suffix(segment, unit)
        found = segment_summary(segment)
        base, best = found["baseline"], found["best"]
        alike = [s.index for s in book.alike(segment) if s is not segment and s.runs]
        cells = [str(segment.index), one_line(str(found["name"] or "")), measured_by(segment),
                 segment_list(alike) if alike else "-", str(found["runs"]), str(found["kept"]),
                 f"{fmt(base['metric']) if base else '-'} → "
                 f"{fmt(best['metric']) if best else '-'}{u}"
                 + (f" (run {best['run']})" if best else ""),
                 f"{found['improvement_pct']:+.2f}%" if found["improvement_pct"] is not None
                 else "-"]
        rows.append(f'<tr data-segment="{segment.index}">'
                    + "".join(f"<td>{escape(cell)}</td>" for cell in cells) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in (
        "segment", "name", "measured", "measured alike", "runs", "kept", "baseline → best",
        "improvement"))
    return (f'<table class="segments"><thead><tr>{head}</tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>")


def _charts(book: Ledger, metric_name: str, unit: str) -> str:
    """The chart of the runs: one for every way of measuring (:meth:`Ledger.measurements`)
    that has runs, titled with its segments and how they measured when there are several, so
    that no axis mixes two measurements."""
    groups = [group for group in book.measurements() if any(s.runs for s in group)]
    if len(groups) < 2:
        return svg(book.segments, metric_name, unit)
    out = []
    for group in groups:
        name, said = metric_of(group[0], metric_name, unit)
        title = f"{segment_list([s.index for s in group if s.runs])}: {measured_by(group[0])}"
        out.append(f'<h2 class="chart-title">{escape(title)}</h2>\n{svg(group, name, said)}')
    return "\n".join(out)


def _cards(seg: dict[str, Any], total_runs: int, u: str, several: bool = False) -> list[str]:
    """The cards above the chart, from :func:`review.report.segment_summary` of the segment; the
    figures' labels name it when the session has ``several`` segments."""
    base, best = seg["baseline"], seg["best"]
    named = f"segment {seg['index']}: " if several else ""
    return [
        _card(f"{named}baseline → best", f"{fmt(base['metric']) if base else '-'} → "
                                         f"{fmt(best['metric']) if best else '-'}{u}"),
        _card(f"{named}improvement", f"{seg['improvement_pct']:+.2f}%"
              if seg["improvement_pct"] is not None else "-"),
        _card("runs (segment / all)", f"{seg['runs']} / {total_runs}"),
        _card("kept", str(seg["kept"])),
        _card(f"{named}confidence", f"{seg['confidence']:.2f} ({seg['confidence_label']})"
              if seg["confidence"] is not None else "-"),
    ]


def _audit_marker(found: list[dict[str, Any]] | None) -> str:
    """The marker of a run's latest audit after its status (the verdict and the effect on
    hover), or ``""``."""
    mark = audit_mark(found)
    if not found or not mark:
        return ""
    last = found[-1]
    effect = effect_of(last)
    title = f"audit: {last.get('verdict')}"
    if isinstance(effect, dict) and isinstance(effect.get("relative"), (int, float)):
        title += f", effect {effect['relative'] * 100:+.2f}%"
    return f' <span class="audit" title="{escape(title)}">{escape(mark)}</span>'


def _touched_marker(run: Run) -> str:
    """The marker after a run's status when its experiment changed a readonly file or one
    outside the scope (:func:`review.report.touched_paths`), the paths on hover; or ``""``."""
    found = touched_paths(run.data)
    if not found:
        return ""
    said = {"readonly": "readonly files", "outside": "outside the scope"}
    title = "; ".join(f"changed {said[kind]}: {', '.join(paths) or count}"
                      + (f" and {count - len(paths)} more" if paths and count > len(paths)
                         else "")
                      for kind, (paths, count) in found.items())
    return (f' <span class="touched" title="{escape(title)} (set aside, never committed)">'
            f"⚑ {escape(' + '.join(found))}</span>")


def _decision_cell(run: Run) -> str:
    """The run's decision (:func:`review.report.decision_text`), with its interval and the samples
    of each side on hover."""
    text = decision_text(run)
    found = run.data.get("decision")
    if text == "-" or not isinstance(found, dict):
        return "<td></td>"
    parts = [f"rule: {found.get('rule')}"]
    low, high = (as_number(found.get(k)) for k in ("relative_low", "relative_high"))
    level = interval_level(found)
    if low is not None and high is not None and level is not None:
        parts.append(f"effect {low * 100:+.2f}% to {high * 100:+.2f}% "
                     f"({level * 100:.0f}% interval)")
    parts.append(f"samples: {found.get('candidate_samples')} against the incumbent's "
                 f"{found.get('incumbent_samples', 0)}")
    if found.get("forced") is True:
        parts.append("kept by hand against the rule")
    return f'<td title="{escape("; ".join(parts))}">{escape(text)}</td>'


def _row(segment: Segment, run: Run, audited: list[dict[str, Any]] | None = None,
         mark: str = "", diff: tuple[str, str] | None = None,
         retried_by: dict[int, list[int]] | None = None) -> str:
    """One run's row of the table, its annotations (``asi``) in the note columns, the marker
    of its latest audit (``audited``: its audit lines) and its finalize ``mark`` (HTML) after
    its status, its ``diff`` (patch, or why none) under its commit, and its description headed
    by its retry links (``retried_by``: :func:`review.report.retries` of the ledger)."""
    baseline = segment.baseline
    found = run.data.get("asi")
    asi: dict[str, Any] = found if isinstance(found, dict) else {}
    delta = delta_pct(run.metric, baseline.metric if baseline else None)
    conf = run.data.get("confidence")
    cells = [
        f'<td class="n">{run.number}</td>', f'<td class="n">{segment.index}</td>',
        f'<td class="{escape(run.status)}">{escape(run.status)}{_audit_marker(audited)}{mark}'
        f"{_touched_marker(run)}</td>",
        f'<td class="n">{escape(fmt(run.metric))}</td>',
        f'<td class="n">{"" if delta is None else f"{delta:+.1f}%"}</td>',
        _decision_cell(run),
        f'<td class="n">{f"{conf:.2f}" if isinstance(conf, (int, float)) else ""}</td>',
        f"<td><code>{escape(str(run.data.get('commit', '')))}</code>{_diff(diff)}</td>",
        f"<td>{escape(linked_description(run, retried_by or {}))}</td>",
        *(f"<td>{escape(_note(asi, keys))}</td>" for keys in NOTE_COLUMNS),
        f"<td>{escape(_others(asi))}</td>",
    ]
    return f'<tr data-run="{run.number}">{"".join(cells)}</tr>'


def _diff(diff: tuple[str, str] | None) -> str:
    """A run's patch, escaped, in a ``<details>`` opened by a click; or why it has none."""
    if diff is None:
        return ""
    patch, why = diff
    if not patch:
        return f' <span class="nodiff">no diff: {escape(why)}</span>'
    return f'<details class="diff"><summary>diff</summary><pre>{escape(patch)}</pre></details>'


def latest_final(book: Ledger) -> dict[str, Any] | None:
    """The ledger's latest ``{"type": "final", ...}`` line (written by ``git autoresearch
    finalize``, review/finalize.py ``Final.record``), or None."""
    return next((e for e in reversed(book.events) if e.get("type") == "final"), None)


def _final_marks(final: dict[str, Any] | None) -> dict[int, str]:
    """Run number -> the HTML mark of the keeps ``final`` replayed (the final commit on
    hover) or left out (why)."""
    marks: dict[int, str] = {}
    if final is None:
        return marks
    branch = str(final.get("branch") or "")
    for entry in final.get("replayed") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("run"), int):
            continue
        if entry.get("outcome") == "applied":
            title = f"replayed as {str(entry.get('commit') or '')[:7]} on {branch}"
            marks[entry["run"]] = f' <span class="final" title="{escape(title)}">⇢ final</span>'
        else:
            paths = ", ".join(str(p) for p in entry.get("paths") or [])
            why = f"{entry.get('outcome')}" + (f" ({paths})" if paths else "")
            marks[entry["run"]] = (' <span class="final-out">not in the final branch: '
                                   f"{escape(why)}</span>")
    for entry in final.get("dropped") or []:
        if isinstance(entry, dict) and isinstance(entry.get("run"), int):
            marks[entry["run"]] = (' <span class="final-out">left out of the final branch: '
                                   f"{escape(str(entry.get('why')))}</span>")
    return marks


def _final_card(final: dict[str, Any], u: str) -> str:
    """The card of the latest finalize: the branch and its commit, the final checks, and the
    A/B result (effect with its interval, verdict, samples per side)."""
    lines = []
    checks = final.get("checks")
    if isinstance(checks, dict):
        state = "passed" if checks.get("passed") is True else (
            f"failed ({checks.get('reason') or 'exit ' + str(checks.get('exit_code'))})")
        lines.append(f"checks {state}: {checks.get('command')}")
    else:
        lines.append("no final checks were run")
    effect, samples = effect_of(final), final.get("samples")
    if isinstance(effect, dict) and isinstance(effect.get("relative"), (int, float)):
        text = f"effect {effect['relative'] * 100:+.2f}%"
        low, high = (as_number(effect.get(k)) for k in ("relative_low", "relative_high"))
        level = interval_level(effect)
        if low is not None and high is not None:
            text += f" [{low * 100:+.2f}%, {high * 100:+.2f}%]"
            text += f" ({level * 100:.0f}% interval)" if level is not None else ""
        value = as_number(effect.get("value"))
        lines.append(text + (f"; final minus base {fmt(value)}{u}" if value is not None else ""))
    elif final.get("reason"):
        lines.append(f"not measured: {final['reason']}")
    if final.get("verdict"):
        lines.append(f"verdict: {final['verdict']}")
    if isinstance(samples, dict):
        lines.append(f"samples: {len(samples.get('base') or [])} base, "
                     f"{len(samples.get('final') or [])} final")
    runs = ", ".join(str(n) for n in final.get("runs") or [])
    head = f"{final.get('branch')} at {final.get('commit') or '(not made)'}"
    return ('<div class="final-card"><div class="k">finalized: runs '
            f'{escape(runs or "none")} replayed onto {escape(str(final.get("base")))}</div>'
            f'<div class="v">{escape(head)}</div>'
            f'<div>{"<br>".join(escape(line) for line in lines)}</div></div>')


def _page(book: Ledger, seg: dict[str, Any], *, goal: str, metric_name: str, unit: str,
          session_id: str, cards: list[str], legend: str, header: str, rows: list[str],
          above: str = "") -> str:
    """The whole HTML document around the pieces :func:`render` made (``above``: what goes
    between the cards and the chart's legend)."""
    u = f" {unit}" if unit else ""
    data = json.dumps({"session": session_id, "runs": len(book.runs)})
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'\">"
        f"<title>autoresearch: {escape(goal)}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{STYLE}</style></head>\n<body>"
        f"<h1>{escape(goal)}</h1>"
        f'<div class="sub">session {escape(session_id)} · {escape(metric_name)}{escape(u)}, '
        f"{escape(seg['direction'])} is better · segment {seg['index']}</div>"
        f'<div class="cards">{"".join(cards)}</div>{above}'
        f'<div class="legend">{legend}</div>\n'
        f"{_charts(book, metric_name, unit)}\n"
        f"<table><thead><tr>{header}</tr></thead><tbody>\n" + "\n".join(rows) +
        "\n</tbody></table>"
        f'<script type="application/json" id="session">{escape(data)}</script>'
        f"<script>{SCRIPT}</script></body></html>\n"
    )


LOCAL_HOST_NAMES = ("127.0.0.1", "localhost", "[::1]")


def _local_host(header: str | None, port: int) -> bool:
    """Whether a ``Host`` header names this machine's loopback on ``port`` (the port may be left
    out only when it is 80, as browsers do)."""
    if not header:
        return False
    host = header.strip().lower()
    name, colon, given = host.rpartition(":")
    if not colon or host.endswith("]"):  # no port (an IPv6 literal has colons of its own)
        name, given = host, "80"
    return name in LOCAL_HOST_NAMES and given == str(port)


def serve(build: Callable[[], str], version: Callable[[], str], *, port: int,
          ready: Callable[[str], None], stop: threading.Event | None = None) -> None:
    """Serve the page on 127.0.0.1:``port`` (0: any free port) until interrupted (or ``stop``
    is set); ``/version`` changes when the ledger does, and the page reloads itself then.

    Only requests whose ``Host`` header is ``127.0.0.1``, ``localhost`` or ``[::1]`` with the
    served port are answered; any other gets 403, so a web page that rebinds its own DNS name
    to 127.0.0.1 cannot read the session."""
    served: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
            if not _local_host(self.headers.get("Host"), served[0]):
                self.send_error(403, "only 127.0.0.1, localhost and [::1] are served")
                return
            if self.path == "/version":
                body, kind = version().encode(), "text/plain"
            elif self.path in ("/", "/index.html"):
                body, kind = build().encode("utf-8"), "text/html; charset=utf-8"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    served.append(server.server_address[1])
    ready(f"http://127.0.0.1:{server.server_address[1]}/")
    if stop is not None:
        def watch() -> None:
            stop.wait()
            server.shutdown()

        threading.Thread(target=watch, daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
