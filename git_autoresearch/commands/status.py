"""status, show, analyze, summary, dashboard, score: reading a session (log is
:mod:`.log`'s)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..runtime.errors import Refused, UsageError
from .common import (
    CONTEXT,
    WHOLE,
    WholeRange,
    complete_runs,
    emit_json,
    json_option,
    left_to_exit,
    number,
    paths_text,
    warn,
)

if TYPE_CHECKING:
    from ..ledger import Segment
    from ..review.status import Status
    from ..session.session import Session


def open_warned() -> Session:
    """The session, opened to read it, its warnings (an edited configuration, say) on stderr
    as status shows them."""
    from ..review.status import opening_warnings
    from ..session.for_reading import open_for_reading

    session = open_for_reading()
    for w in opening_warnings(session):
        warn(w)
    return session


@click.command("status", context_settings=CONTEXT, short_help="where the session stands")
@click.option("--watch", is_flag=True,
              help="Show it again every --interval seconds, a live view, until Ctrl-C.")
@click.option("--interval", type=click.FloatRange(min=0.1), default=2.0, show_default=True,
              metavar="SECONDS", help="With --watch: seconds between two views.")
@click.option("--times", type=WholeRange(min=1), metavar="N",
              help="With --watch: stop after N views (default: until Ctrl-C).")
@json_option
def status_cmd(watch: bool, interval: float, times: int | None, as_json: bool) -> None:
    """Where the session stands: baseline, best, counts, confidence, STOP, the stop rules
    (max_experiments, max_duration, target_metric, max_runs_without_keep,
    max_failures_in_a_row) with what they count and the one met (the next run exits 4; --json:
    stop_rule, stop_reason), warnings."""
    from ..ledger import collector_paused
    from ..review.status import status
    from ..session.for_reading import open_for_reading

    if watch:
        if as_json:
            raise UsageError("--watch shows a live view for people; --json takes one status")
        _watch(interval, times)
        return
    with collector_paused():  # (the whole ledger read and summed: nothing cyclic is made)
        session = open_for_reading()
        found = status(session)
        left_to_exit(session)
    if as_json:
        emit_json("status", found.to_json())
        return
    _show_status(found)


def _watch(interval: float, times: int | None) -> None:
    """status again and again, the screen cleared between views on a terminal, until Ctrl-C
    (which ends it with exit 0: the view was the point) or ``times`` views."""
    import time

    from ..ledger import collector_paused
    from ..review.status import status
    from ..runtime.signals import Interrupted, handled
    from ..session.for_reading import open_for_reading

    shown = 0
    try:
        while times is None or shown < times:
            with collector_paused():
                found = status(open_for_reading())  # opened anew: the loop records meanwhile
            if sys.stdout.isatty():
                click.echo("\x1b[H\x1b[2J", nl=False)
            click.echo(f"{time.strftime('%H:%M:%S')}  every {interval:g}s, Ctrl-C ends")
            _show_status(found)
            shown += 1
            if times is None or shown < times:
                time.sleep(interval)
    except (Interrupted, KeyboardInterrupt):
        handled()  # Ctrl-C is how a watch ends: exit 0


def _show_status(found: Status) -> None:
    """The human status on stdout, its warnings on stderr."""
    for line in _status_lines(found):
        click.echo(line)
    for w in found.warnings[:20]:
        warn(w)
    if len(found.warnings) > 20:
        warn(f"... and {len(found.warnings) - 20} more (git autoresearch status --json lists "
             "them all)")


def _metric(value: float | None, unit: str) -> str:
    """A run's metric and unit, ``-`` for none (a keep line written by another tool may
    have none)."""
    return "-" if value is None else f"{number(value)}{unit}"


def _status_lines(found: Status) -> list[str]:
    """The human text of status, one line each, without the warnings."""
    from ..review.report import one_line

    seg = found.segment
    unit = f" {found.metric_unit}" if found.metric_unit else ""
    # "ms in ms" says nothing more than "ms" (a pi session whose metric is named by its unit).
    named_in = f" in {found.metric_unit}" if unit and found.metric_unit != found.metric_name \
        else ""
    lines = [f"session     {found.session_id} (branch {found.branch})",
             *([f"finished    {found.finished}"] if found.finished else []),
             f"goal        {found.goal}",
             f"metric      {found.metric_name}{named_in}, "
             f"{found.direction} is better"]
    runs_word = "run" if seg["runs"] == 1 else "runs"
    counts = ", ".join(f"{k} {v}" for k, v in sorted(seg["counts"].items()))
    lines.append(f"segment     {seg['index']}: {seg['runs']} {runs_word}, {seg['kept']} kept"
                 + (f" ({counts})" if counts else ""))
    for key in ("baseline", "best"):
        brief = seg[key]
        if brief:
            extra = ""
            if key == "best" and seg["improvement_pct"] is not None:
                # (two runs' numbers, each taken under its load; an audit measures the best
                # against its parent, which need not be the baseline)
                extra = (f", {seg['improvement_pct']:+.2f}% vs baseline as measured apart "
                         "(finalize measures them side by side)")
            if brief.get("audit"):
                extra += f"; audit: {brief['audit'].get('verdict')}"
            lines.append(f"{key:<11} {_metric(brief['metric'], unit)} (run {brief['run']}, "
                         f"commit {brief['commit'] or '-'}){extra}")
        else:
            lines.append(f"{key:<11} -")
    inc, best = seg.get("incumbent"), seg["best"]
    if inc and best and inc["run"] != best["run"]:
        lines.append(f"incumbent   {_metric(inc['metric'], unit)} (run {inc['run']}, commit "
                     f"{inc['commit'] or '-'}): the last keep, which the next run is compared "
                     "with")
    if found.noise is not None:
        spread = found.noise["relative_spread"]
        lines.append(f"noise       {'-' if spread is None else f'±{spread:.1%}'} (spread of the "
                     f"incumbent's {found.noise['incumbent_samples']} samples; sequential rule)")
        moved = found.noise.get("trend") or found.noise.get("drift")
        if moved:
            how = f" ({moved['relative']:+.1%})" if moved.get("relative") is not None else ""
            what = "runs measure it beside the candidate" if found.noise.get("incumbent_pairs") \
                else "incumbent_pairs = 0: runs compare with these samples all the same"
            lines.append(f"machine     getting {moved['machine']}? the incumbent's samples "
                         f"moved{how}; {what}")
    conf = seg["confidence"]
    lines.append(f"confidence  {f'{conf:.2f}' if conf is not None else '-'} "
                 f"({seg['confidence_label']})")
    if seg["stability"]:
        lines.append(_stability_line(seg["stability"]))
    if seg["last"]:
        last = seg["last"]
        said = f" ({last['decision_text']})" if last.get("decision_text", "-") != "-" else ""
        lines.append(f"last run    {last['run']} {last['status']}{said}: "
                     f"{one_line(last['description'])[:70]}")
    return lines + _status_tail(found, unit)


def _stability_line(found: dict[str, Any]) -> str:
    """The seed's stability label, what it read, and the advice from what measures noise
    (:func:`review.report.stability`)."""
    noise = found.get("noise")
    if noise is None:
        said = "nothing measures the noise yet: no repeat samples, no no-change runs"
    else:
        said = f"the noise, from {noise['source']}, is {noise['relative_spread']:.1%}"
        said += f": {found['advice']}" if found.get("advice") else ""
    return (f"stability   {found['label']} (the last {found['keeps']} keeps spread "
            f"{found['relative_mad']:.1%}, by their gains as by noise; {said})")


def _worker_lines(found: Status) -> list[str]:
    """One line a worker: the slot it measures in, its claims, its last run."""
    from ..review.report import one_line

    lines = []
    for doing in found.workers or []:
        parts = []
        slot = doing["slot"]
        if slot is not None and slot.get("orphaned"):
            parts.append(f"left measuring by a killed command ({slot['what']}, slot "
                         f"{slot['slot']}): the next measurement ends it")
        elif slot is not None:
            parts.append(f"measuring ({slot['what']}, slot {slot['slot']})")
        for held in doing["claims"]:
            idea = f"idea {held['number']}" if held["number"] else "an idea no longer listed"
            stale = f", {held['stale']}" if held["stale"] else ""
            parts.append(f"claims {idea} ({one_line(held['text'])[:50]}{stale})")
        last = doing["last_run"]
        parts.append(f"last run {last['run']} {last['status']}" if last else "no run yet")
        lines.append(f"worker      {doing['worker']}: {'; '.join(parts)}")
    return lines


def _status_tail(found: Status, unit: str) -> list[str]:
    """The workers, the pending measurement, STOP and the limit, as status shows them."""
    from ..review.status import STALE_SHOWN

    lines = _worker_lines(found)
    pending = found.pending
    if pending is not None:
        moved = pending.changed_since
        shown = _metric(pending.metric, unit)
        lines.append(f"pending     {shown}, measured and not yet recorded (the loop's decision: "
                     f"{pending.status})" if not moved else f"pending     {shown}, stale: "
                     f"{', '.join(moved[:STALE_SHOWN])}"
                     f"{' ...' if len(moved) > STALE_SHOWN else ''} changed since")
    if found.queued is not None:
        lines.append(f"queued      candidate {found.queued['key']} "
                     f"({found.queued['description']!r}) on {found.queued['remote']}, its "
                     "verdict not collected: git autoresearch collect")
    if found.stop_pending:
        lines.append("STOP        pending: the next run exits 4")
    if found.limit is not None:
        lines.append(f"limit       {found.experiments} of {found.limit} "
                     f"experiments{' (reached)' if found.limit_reached else ''}")
    if found.max_duration is not None and found.time_left is not None:
        from ..session.config import format_duration

        lines.append(f"time left   {format_duration(found.time_left)} of {found.max_duration}"
                     f"{' (spent: the next run exits 4)' if found.time_left == 0 else ''}")
    return lines + _stop_rule_lines(found, unit)


def _stop_rule_lines(found: Status, unit: str) -> list[str]:
    """The stop rules set, with what they count, and the one the segment meets."""
    lines = []
    if found.target_metric is not None:
        lines.append(f"target      {number(found.target_metric)}{unit}")
    if found.max_runs_without_keep is not None:
        lines.append(f"no keep     {found.runs_without_keep} of {found.max_runs_without_keep} "
                     "runs in a row")
    if found.max_failures_in_a_row is not None:
        lines.append(f"failures    {found.failures_in_a_row} of {found.max_failures_in_a_row} "
                     "runs in a row (crash or checks_failed)")
    if found.stop_reason is not None:
        lines.append(f"stop rule   {found.stop_reason}: the next run exits 4")
    return lines


@click.command("show", context_settings=CONTEXT, short_help="one run's record and diff")
@click.argument("run_number", metavar="RUN", type=WHOLE, shell_complete=complete_runs)
@json_option
def show_cmd(run_number: int, as_json: bool) -> None:
    """One run: its record, the readonly files or those outside the scope its experiment
    changed (set aside before measuring), its diff (the keep commit, or the attempt ref of a
    non-kept run), and the runs it retried or that retried it (run --retry)."""

    from ..review.report import audits, retries, retry_links
    from ..review.run_commits import missing_commit, shown
    from .audit import audit_lines

    session = open_warned()
    found = shown(session, run_number)
    run, diff, set_aside = found.run, found.diff, found.set_aside
    audited = audits(session.ledger).get(run_number, [])
    retried_by = retries(session.ledger.runs)
    if as_json:
        emit_json("show", {**found.to_json(), "audits": audited,
                           "retried_by": retried_by.get(run_number, [])})
        return
    from ..ledger import shown_record
    from ..ledger.jsontext import nulled

    click.echo(json.dumps(nulled(shown_record(run.data)), ensure_ascii=False, indent=2))
    links = retry_links(run, retried_by)
    if links:
        click.echo(links)
    from ..review.report import metric_of

    # (the run's segment's unit: an earlier segment may measure another metric)
    _, unit = metric_of(session.ledger.segments[run.segment], session.config.metric_name,
                        session.config.metric_unit)
    for line in audited:
        click.echo(f"audit {_when(line.get('timestamp'))}: "
                   + "\n".join(audit_lines(line, unit)))
    for text in _touched_lines(run.data, found.aside_before):
        click.echo(text)
    if run.status == "crash" and run.data.get("tail"):
        click.echo(f"---- tail of the output ----\n{run.data['tail']}\n----")
    if diff and found.diff_source == "record":
        click.echo(f"(commit {run.data.get('commit')}, named by the record's commit field: no "
                   "Autoresearch-Run trailer names this run)")
    missing = None if diff or found.diff_source is not None else missing_commit(
        run, found.diff_commit, found.measured)
    if diff:
        click.echo(diff, nl=False)
    elif missing:
        click.echo(f"(no diff: commit {missing} is not in this repository)")
    elif run.status == "keep":
        click.echo("(no commit: the kept measurement changed nothing"
                   + (f"; it measured {found.measured})" if found.measured else ")"))
    elif found.collected:
        click.echo(f"(its attempt ref {run.data['attempt_ref']} was deleted by git "
                   "autoresearch gc)")
    else:
        click.echo("(no attempt ref recorded for this run"
                   + (f"; its record names {found.measured}, the kept commit it started from)"
                      if found.measured else ")"))
    for entry in set_aside:
        if entry["commit"] is None:
            click.echo(f"set aside before measuring at {entry['ref']}, which no longer exists")
            continue
        click.echo(f"set aside before measuring (outside the scope or readonly), at "
                   f"{entry['ref']}: {paths_text(entry['paths'])}")


def _touched_lines(record: Any, aside_before: frozenset[str] | None) -> list[str]:
    """What ``show`` says of the files a run changed that it must not (:func:`review.report.
    touched_paths`), for the readonly files, then those outside the scope: a line for those
    set aside before measuring (``aside_before``; all of them when None: not known), and one
    for those put back when the run was recorded (changed while it was measured, or a run
    not measured), which its attempt ref keeps."""
    from ..review.report import one_line, touched_paths

    said = {"readonly": ("readonly files", "undone"), "outside": ("outside the scope",
                                                                  "set aside")}
    lines = []
    for kind, (paths, count) in (touched_paths(record) or {}).items():
        what, done = said[kind]
        later = [p for p in paths if aside_before is not None and p not in aside_before]
        early = [p for p in paths if p not in later]
        more = f" and {count - len(paths)} more" if paths and count > len(paths) else ""
        if early or not paths:
            named = ", ".join(one_line(p) for p in early) or f"{count} path(s)"
            lines.append(f"touched     {what} {named}{'' if later else more}: {done} before "
                         "measuring, so neither measured nor committed")
        if later:
            lines.append(f"touched     {what} {', '.join(one_line(p) for p in later)}{more}: "
                         "reverted when the run was recorded, so not committed (saved at its "
                         "attempt ref)")
    return lines


def _when(timestamp: object) -> str:
    """Epoch milliseconds as UTC time to the second, or ``-``."""
    import datetime

    if isinstance(timestamp, bool) or not isinstance(timestamp, int):
        return "-"
    try:
        moment = datetime.datetime.fromtimestamp(timestamp / 1000, tz=datetime.timezone.utc)
    except (OverflowError, ValueError, OSError):  # a hostile ledger's number
        return "-"
    return moment.strftime("%Y-%m-%d %H:%M:%SZ")


def segment_of(session: Session, segment: int | None) -> Segment:
    """Segment number ``segment`` of the ledger (None: the current one); :class:`UsageError`
    when there is no such segment."""
    if segment is None:
        return session.ledger.current
    if not 0 <= segment < len(session.ledger.segments):
        raise UsageError(f"no segment {segment} (segments are 0 to "
                         f"{len(session.ledger.segments) - 1})")
    return session.ledger.segments[segment]


@click.command("analyze", context_settings=CONTEXT,
               short_help="keep rate, gains ranked, runs per improvement")
@click.option("--segment", type=WHOLE, help="Analyse this segment (default: the current one).")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Also draw the runs and the running best: FILE.svg, or FILE.png (needs "
                   "matplotlib: the 'plot' extra).")
@json_option
def analyze_cmd(segment: int | None, plot: Path | None, as_json: bool) -> None:
    """Counts per status and keep rate; baseline, best and improvement; kept runs ranked by their
    gain over the best before them; runs spent per improvement; the longest dry streak. One
    segment, in its own metric and unit; --plot draws the segments measured as it is (the same
    command, metric and direction)."""
    from ..review.analysis import analysis_text, analyze
    from ..review.report import metric_of

    session = open_warned()
    seg = segment_of(session, segment)
    result = analyze(seg)
    name, unit = metric_of(seg, session.config.metric_name, session.config.metric_unit)
    if plot is not None:
        from ..review.plot import write_plot

        write_plot(plot, session.ledger.alike(seg), name, unit)
    if as_json:
        emit_json("analyze", result)
        return
    click.echo(analysis_text(result, name, unit), nl=False)
    if plot is not None:
        click.echo(f"plot written to {plot}")


@click.command("summary", context_settings=CONTEXT,
               short_help="a short text to resume from after a context reset")
@click.option("--max-bytes", type=WholeRange(min=1500), default=4000, show_default=True,
              help="Upper bound on the size of the text (UTF-8 bytes; at least 1500, which "
                   "always holds the header, the last run and the best run).")
@click.option("--last", type=WholeRange(min=0), default=30, show_default=True,
              help="How many recent runs to include at most.")
@json_option
def summary_cmd(max_bytes: int, last: int, as_json: bool) -> None:
    """A deterministic text for an agent to resume from after its context was compacted."""
    from ..review.analysis import summary
    from ..runtime.atomic import read_text_whole
    from ..session.ideas import read_ideas, unread_warning

    session = open_warned()
    cfg = session.config
    layout = session.layout
    # pi-autoresearch's older sessions keep these as flat files at the top (paths.ts:21-28).
    prompt_path, ideas_path = layout.session_file("prompt"), layout.session_file("ideas")
    prompt = read_text_whole(prompt_path)
    ideas = read_ideas(ideas_path)
    problem = unread_warning(ideas_path, ideas, str(ideas_path.relative_to(layout.home)))
    if problem:
        warn(problem)
    text = summary(goal=cfg.goal, metric_name=cfg.metric_name, unit=cfg.metric_unit,
                   direction=cfg.direction, segment=session.ledger.current, prompt=prompt,
                   ideas=ideas, max_bytes=max_bytes, last=last)
    if as_json:
        emit_json("summary", {"summary": text, "bytes": len(text.encode("utf-8",
                                                                        "surrogateescape"))})
        return
    click.echo(text, nl=False)


@click.command("dashboard", context_settings=CONTEXT,
               short_help="one offline HTML page of the session")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the page (default: .auto/dashboard.html; - writes it to "
                   "stdout).")
@click.option("--serve", is_flag=True,
              help="Serve the page on 127.0.0.1 and refresh it when the ledger changes.")
@click.option("--port", type=WholeRange(0, 65535), default=8765, show_default=True,
              help="The port for --serve (0: any free port).")
def dashboard_cmd(output: Path | None, serve: bool, port: int) -> None:
    """One self-contained HTML page (no network requests): cards, the chart of every run with the
    running best, and the table of runs with their annotations and patches. A run's patch opens
    on a click in its row; the keeps of the latest finalize are marked, its result in a card.
    The cards are the current segment's, and the whole session's only across the segments
    measured alike (the same command, metric and direction); with several segments, a table
    gives each its own baseline and best, and each way of measuring has its own chart."""
    from ..review.dashboard import render
    from ..review.dashboard import serve as serve_page
    from ..review.run_commits import run_diffs

    session = open_warned()
    cfg = session.config

    def build() -> str:
        session.reload()
        return render(session.ledger, goal=cfg.goal, metric_name=cfg.metric_name,
                      unit=cfg.metric_unit, session_id=cfg.session_id,
                      diffs=run_diffs(session))

    if serve:
        try:
            serve_page(build, session.version, port=port,
                       ready=lambda url: click.echo(f"serving {url} (Ctrl-C to stop)"))
        except OSError as exc:
            raise Refused(f"cannot serve on 127.0.0.1:{port}: {exc.strerror}") from None
        return
    if output == Path("-"):
        click.echo(build(), nl=False)
        return
    target = output or session.layout.auto / "dashboard.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(build(), encoding="utf-8")
    click.echo(f"wrote {target}")


@click.command("score", context_settings=CONTEXT, short_help="explain a run's composite score")
@click.argument("run_number", metavar="RUN", type=WHOLE)
@json_option
def score_cmd(run_number: int, as_json: bool) -> None:
    """Explain a run's composite score term by term (the [score] table of its segment)."""
    from ..measure.scoring import ScoreError, compute
    from ..session.config import DIRECTIONS

    session = open_warned()
    run = session.ledger.find(run_number)
    if run is None:
        raise UsageError(f"no run {run_number} in the ledger (runs are 1 to "
                         f"{session.ledger.next_run_number - 1})")
    segment = next(s for s in session.ledger.segments if run in s.runs)
    recorded = (segment.header or {}).get("config")
    table = recorded.get("score") if isinstance(recorded, dict) else session.config.score
    if not isinstance(table, dict):
        raise Refused(f"run {run_number} has no composite score: its segment's configuration "
                      "has no [score] table")
    found = run.data.get("metrics")
    metrics: dict[str, float] = found if isinstance(found, dict) else {}
    direction = segment.direction
    try:
        score = compute(table, metrics, direction, DIRECTIONS)
        terms, value, error = score.terms, score.value, None
    except ScoreError as exc:
        terms, value, error = [], None, str(exc)
    if as_json:
        emit_json("score", {"run": run_number, "kind": table.get("kind"), "direction": direction,
                   "score": value, "recorded": run.data.get("metric"), "error": error,
                   "terms": [{"term": label, "value": part} for label, part in terms]})
        return
    unit = session.config.metric_unit
    click.echo(f"run {run_number}: {table.get('kind')} score, {direction} is better")
    width = max([len(label) for label, _ in terms] + [10])
    for label, part in terms:
        click.echo(f"  {label:<{width}}  {part:+.6g}")
    if value is None:
        click.echo(f"  not scored: {error}")
    else:
        click.echo(f"  {'= score':<{width}}  {number(value)}{' ' + unit if unit else ''}")
    if run.data.get("metric") is not None and value is not None \
            and run.data["metric"] != value:
        click.echo(f"  (recorded {number(run.data['metric'])}: the aggregate of each "
                   "sample's score, where this sums the aggregated components)")
