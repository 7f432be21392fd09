"""measure, run, keep, discard, crash, stop, hook: the loop itself."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from ..runtime.errors import Refused, UsageError

if TYPE_CHECKING:
    from ..hooks.user import HookReport
    from ..measure.samples import Measurement
    from ..record.recovery import Recovery
    from ..review.apply import Retry
    from ..session.session import Session
    from ..workers.measurer import Sent
from .common import (
    CONTEXT,
    WHOLE,
    clear_progress,
    complete_runs,
    emit_json,
    json_option,
    left_to_exit,
    number,
    paths_text,
    print_steer,
    progress,
    record_options,
    run_record_options,
    said_once,
    warn,
    warn_each,
)

# --- measure / run -----------------------------------------------------------------------------


# What a measurement of a work tree with no change in the scope was, for people.
NOISE_PROBE = ("nothing in the scope changed, so this measured the incumbent again: a noise "
               "probe, never kept")


def _measurement_json(result: Measurement, status: str, session: Session) -> dict[str, Any]:
    """A measurement as ``measure --json`` and ``run --dry-run --json`` print it: what a run
    would record, in the run document's names: ``status`` (the loop's decision), ``decision``
    (the rule's object), ``reason``, ``commit`` (measured on, 7 digits), ``tail`` (the end of
    the log), ``command_exit_code`` (the measured command's, not the tool's)."""
    from ..ledger import json_metric, json_number

    data = result.to_dict()
    for internal in ("fingerprint", "warnings", "log_tail", "head", "exit_code", "reason",
                     "hooks"):
        data.pop(internal, None)  # (warnings, hooks: the document's own say them)
    if data.get("slot") is None:  # named, as in the run record, only with slots or pinning
        data.pop("slot", None)
    cfg = session.config
    data.update({
        "status": status, "decision": result.decision,
        "reason": result.reason_for(status, cfg.min_effect or 0.0, cfg.direction),
        "metric": json_metric(result.metric),
        "metrics": {k: json_number(v) for k, v in result.metrics.items()},
        "samples": [json_number(s) for s in result.samples],
        "commit": result.head[:7] if result.head else None, "tail": result.log_tail,
        "command_exit_code": result.exit_code})
    return data


def _print_measurement(result: Measurement, metric_name: str, *, recorded: bool = False
                       ) -> None:
    """The measurement for people; when it is about to be recorded, the run line that follows
    gives the crash reason, so only the log's tail is shown here."""
    if result.metric is None:
        if not recorded:
            click.echo(f"crash: {result.reason}")
        if result.log_tail:
            click.echo("---- tail of .auto/run.log ----")
            click.echo(result.log_tail)
            click.echo("----")
        return
    samples = f" (samples: {', '.join(number(s) for s in result.samples)})" \
        if len(result.samples) > 1 else ""
    click.echo(f"{metric_name} = {number(result.metric)}{samples} in {result.duration_s:.1f}s")
    for name, value in result.metrics.items():
        click.echo(f"  {name} = {number(value)}")
    if result.checks is not None:
        verdict = "passed" if result.checks["passed"] else f"FAILED: {result.checks['reason']}"
        click.echo(f"checks {verdict}")
        if not result.checks["passed"] and result.checks.get("tail"):
            click.echo(result.checks["tail"])


@click.command("measure", context_settings=CONTEXT,
               short_help="measure the work tree and decide, recording nothing")
@json_option
def measure_cmd(as_json: bool) -> None:
    """Run the experiment and print the result; record nothing (keep or discard uses it)."""
    from ..record.iteration import measure_candidate
    from ..session.branches import open_on_branch

    session = open_on_branch()
    session.check_recordable()  # the scope revert before measuring must not meet a merge
    try:
        before, result = measure_candidate(session, progress())
    finally:
        clear_progress()
    notes = said_once(session.warnings, _measurement_notes(before, result))
    decision = session.decide(result)
    if as_json:
        data = _measurement_json(result, decision, session)
        data.update({"dry_run": False, "steer": before.steer or None, "warnings": notes})
        emit_json("measurement", data)
        return
    print_steer("before", before)
    _print_measurement(result, session.config.metric_name)
    probe = isinstance(result.decision, dict) and result.decision.get("verdict") == "no_change"
    click.echo(f"decision: {decision} (" + (f"{NOISE_PROBE}; " if probe else "")
               + "nothing recorded: keep or discard records it)")
    for note in notes:
        warn(note)


def _recovered_steer(recovered: Recovery) -> list[str]:
    """The steer of the after hooks fired for a run that this command's recovery finished."""
    return [recovered.hooks.steer] if recovered.hooks else []


def _print_recovered(recovered: Recovery) -> None:
    """Say what recovery finished before this command's own run, and its after hooks' steer."""
    if recovered.note:
        warn(recovered.note)
    if recovered.hooks:
        print_steer("after (the interrupted run)", recovered.hooks)


def _record_json(record: Mapping[str, Any], steer: list[str], warnings: list[str],
                 after: HookReport | None = None, removed: Sequence[str] = ()
                 ) -> dict[str, Any]:
    from ..ledger import shown_record

    out = shown_record(record)
    # Every run says whether it made a commit (the ledger writes it on keeps only), how a
    # rule decided it (null: none did, a crash or a metric given by hand), and why it ended so.
    out.setdefault("committed", False)
    out.setdefault("decision", None)
    out.setdefault("reason", None)  # (a keep has none: null, so that every run has the key)
    # The hooks fired around it: the ledger line lists those before it was written.
    fired = [*(out.get("hooks") or []), *(after.summary() if after is not None else [])]
    if fired:
        out["hooks"] = fired
    out["steer"] = "\n".join(s for s in steer if s) or None
    out["warnings"] = warnings
    out["removed"] = list(removed)
    return out


def _incumbent_aside(session: Any, record: Mapping[str, Any], previous_best: float) -> str:
    """What the run was judged against, when the line would otherwise read as a contradiction:
    a number better than the best discarded, or one not better kept. The rule compares the
    samples with the incumbent's (:func:`_judged_against`), whose median the best kept number
    need not be."""
    found = _judged_against(record.get("decision") or {})
    metric = record.get("metric")
    if found is None or not isinstance(metric, (int, float)) \
            or record.get("status") not in ("keep", "discard") \
            or _figure(found[0]) == _figure(previous_best):
        return ""  # (a run the checks failed was not judged on its number)
    better = session.segment.better(metric, previous_best)
    if better == (record["status"] == "keep"):
        return ""
    against = f"against {found[1]}, median {number(_figure(found[0]))}"
    compared = _compared_samples(record)
    if compared is None:
        return f"; judged {against}"
    from ..ledger.stats import median

    return (f"; judged on its last {len(compared)} samples, median "
            f"{number(_figure(median(compared)))}, {against}")


def _figure(value: float) -> float:
    """``value`` to 10 significant digits: a median of two, or a quotient, without the float
    noise of its last digits."""
    return float(f"{value:.10g}")


def _compared_samples(record: Mapping[str, Any]) -> list[float] | None:
    """The candidate's samples a decision on samples taken side by side compared (the last
    ``candidate_samples`` of the run's, taken beside the incumbent's), when they are fewer
    than all of them (the median shown is of all); None otherwise."""
    from ..ledger.jsontext import numbers

    decision = record.get("decision") or {}
    samples = numbers(record.get("samples"))
    count = decision.get("candidate_samples")
    if decision.get("evidence") != "fresh" or not isinstance(count, int) \
            or not 0 < count < len(samples):
        return None
    return samples[-count:]


def _judged_against(decision: Mapping[str, Any]) -> tuple[float, str] | None:
    """The median of the incumbent's samples a decision compared the run with, and what they
    were, by its ``evidence``: those taken beside the candidate (``fresh``); the earlier ones
    levelled with those (``pool+fresh``: the median its ``relative`` effect is of); else the
    earlier ones (``pool_median``)."""
    from ..ledger.jsontext import numbers
    from ..ledger.stats import median

    evidence = decision.get("evidence")
    fresh = numbers(decision.get("incumbent_fresh"))
    if evidence == "fresh" and fresh:
        return median(fresh), "the incumbent measured beside it"
    value, relative = decision.get("effect"), decision.get("relative")
    if evidence == "pool+fresh" and isinstance(value, (int, float)) \
            and isinstance(relative, (int, float)) and relative:
        return abs(value / relative), "the incumbent's samples, earlier and beside it"
    pool = decision.get("pool_median")
    return (pool, "the incumbent's samples") if isinstance(pool, (int, float)) else None


def _print_record(session: Any, record: Mapping[str, Any], previous_best: float | None,
                  removed: Sequence[str] = (), reverted: bool = True) -> None:
    """A recorded run, for people: its status and metric, what became of its change (and of
    ``removed``, the files it created that the revert removed; ``reverted`` False: there was
    nothing to revert), what was set aside."""
    cfg = session.config
    unit = f" {cfg.metric_unit}" if cfg.metric_unit else ""
    status = record["status"]
    line = f"run {record['run']}: {status}"
    if status != "crash" and record.get("metric") is not None:
        line += f"  {cfg.metric_name} = {record['metric']}{unit}"
        if previous_best is not None:
            aside = _incumbent_aside(session, record, previous_best)
            line += f" (best was {number(previous_best)}{aside})"
    if record.get("reason"):
        line += f"  [{record['reason']}]"
    click.echo(line)
    if status == "keep":
        click.echo(f"  committed {record['commit']}" if record.get("committed")
                   else f"  nothing to commit: HEAD stays at {record['commit']}")
    elif record.get("attempt_ref"):
        click.echo(f"  {'reverted' if reverted else 'nothing to revert (no change)'}; the "
                   f"attempt is kept at {record['attempt_ref']}")
        if removed:
            click.echo(f"  removed the files it created: {paths_text(removed)} (kept there"
                       f"{_restore_hint(str(record['attempt_ref']))})")
    decided = record.get("decision")
    if isinstance(decided, dict) and decided.get("verdict") == "no_change" and status != "keep":
        click.echo(f"  {NOISE_PROBE} (it feeds the noise estimate)")
    where = _saved_at(record)
    if record.get("scope_violations"):
        click.echo("  reverted out-of-scope changes: " + paths_text(record["scope_violations"])
                   + f" (saved at {where}{_restore_hint(where)})")
    if record.get("readonly_violations"):
        click.echo("  undid changes to readonly files: "
                   + paths_text(record["readonly_violations"])
                   + f" (saved at {where}{_restore_hint(where)})")


@click.command("run", context_settings=CONTEXT,
               short_help="measure, decide, keep or revert, and record one run")
@run_record_options
@click.option("--retry", "retry_run", type=WHOLE, metavar="RUN", shell_complete=complete_runs,
              help="Try run RUN again, a run that was not kept (discard, crash, "
                   "checks_failed), on the current incumbent: its change, from its attempt "
                   "ref, is put on the work tree (which must be clean; replayed onto HEAD when "
                   "keeps came after it), then measured and decided as a new run whose record "
                   "names it (retry_of). A conflict is refused (exit 3), naming the paths, "
                   "with nothing left in the work tree.")
@click.option("--dry-run", is_flag=True, help="Measure and print the decision; apply nothing "
              "(with --retry, the retried change is taken off the work tree again).")
@click.option("--wait-timeout", type=click.FloatRange(min=0), metavar="SECONDS",
              help="In a clone measured on a host (worker join --measure-on-host): give up "
                   "waiting for the verdict after SECONDS (exit 3; the candidate stays "
                   "queued). Default: wait as long as it takes.")
@click.option("--no-wait", is_flag=True,
              help="In a clone measured on a host: queue the candidate and return (its "
                   "document with --json is git-autoresearch:queued/1); git autoresearch "
                   "collect collects the verdict.")
@json_option
def run_cmd(description: str | None, asi_pairs: tuple[str, ...], asi_json: str | None,
            retry_run: int | None, dry_run: bool, wait_timeout: float | None, no_wait: bool,
            as_json: bool) -> None:
    """One iteration: before hooks, measure, decide, keep or revert, record, after hooks.
    With --retry RUN, the change measured is that of a run not kept, put back first."""
    from ..record.iteration import iterate
    from ..session.branches import open_on_branch

    if description is None and retry_run is None:
        ctx = click.get_current_context()
        raise click.MissingParameter(ctx=ctx, param=next(
            p for p in ctx.command.params if p.name == "description"))
    if retry_run is None:
        asi, text = _record_inputs(asi_pairs, asi_json, str(description))
    session = open_on_branch()
    session.check_recordable()
    if session.worker is not None and session.worker.on_host:
        if retry_run is not None or dry_run:
            raise UsageError("--retry and --dry-run measure here: this clone's candidates are "
                             "measured on a host (worker join --measure-on-host)")
        _run_on_host(session, text, asi, wait_timeout, as_json, no_wait=no_wait)
        return
    if no_wait or wait_timeout is not None:
        raise UsageError("--no-wait and --wait-timeout are for a clone measured on a host "
                         "(worker join --measure-on-host); this one measures here")
    retry = None
    if retry_run is not None:  # (apply's module only then: an ordinary run never loads it)
        from ..review.apply import Retry

        retry = Retry.of(session, retry_run)
        asi, text = _record_inputs(asi_pairs, asi_json, retry.description
                                   if description is None else description)
    try:
        done = iterate(session, text, asi, retry=retry, dry_run=dry_run, progress=progress())
    finally:
        clear_progress()
    if done.recorded is None:
        _dry_run(session, done.before, done.result, done.decision, as_json, retry)
        return
    recorded, recovered, before, after = done.recorded, done.recovered, done.before, done.after
    assert after is not None
    notes = (session.warnings + recovered.warnings + done.result.warnings + recorded.warnings
             + done.notes)
    if as_json:
        emit_json("run", _record_json(recorded.record,
                                      [*_recovered_steer(recovered), before.steer, after.steer],
                                      said_once(before.warnings, notes,
                                                _violation_notes(
                                                    recorded.record,
                                                    recorded.outside_at_record),
                                                after.warnings), after, recorded.removed))
        return
    _print_recovered(recovered)
    told: set[str] = set()
    print_steer("before", before, told)
    _print_retry(retry)
    if done.decision == "crash" or done.decision == "checks_failed":
        _print_measurement(done.result, session.config.metric_name, recorded=True)
    _print_record(session, recorded.record, done.previous_best, recorded.removed,
                  recorded.reverted)
    warn_each(notes, told)
    print_steer("after", after, told)


def _run_on_host(session: Session, description: str, asi: dict[str, Any],
                 timeout: float | None, as_json: bool, *, no_wait: bool = False) -> None:
    """``run`` in a clone measured on a host: the work tree queued as a candidate, then its
    verdict collected (:func:`_collect`), or, with ``no_wait``, the candidate printed."""
    from ..workers.measurer import NeverQueued, pending, send, wait

    sent = pending(session)
    if sent is not None:
        try:  # (two looks: a run killed while it pushed leaves a candidate never queued)
            wait(session, sent, timeout=0.1, poll=0.2)
        except NeverQueued as lost:
            warn(f"{lost.message}; this run's change is queued instead")
            sent = None
    if sent is not None and no_wait:
        raise Refused(f"candidate {sent.candidate.key}, queued by an earlier run, is not "
                      "collected yet: git autoresearch collect, then run again")
    if sent is not None:  # queued by --no-wait, a run killed while waiting, one that gave up
        warn(f"candidate {sent.candidate.key} ({sent.candidate.description!r}), queued by an "
             "earlier run, is collected first; this run's change was not queued")
    else:
        sent = send(session, description, asi)
    if no_wait:
        _print_queued(session, sent, as_json)
        return
    click.echo(f"queued candidate {sent.candidate.key} on {session.remote}; waiting for a "
               "measuring host (git autoresearch measurer)", err=True)
    _collect(session, sent, timeout, as_json)


def _print_queued(session: Session, sent: Sent, as_json: bool) -> None:
    """A candidate queued and not answered yet: its document (git-autoresearch:queued/1), or a
    line saying how to collect it."""
    assert session.remote is not None
    if as_json:
        emit_json("queued", {"key": sent.candidate.key, "agent": sent.candidate.agent,
                             "remote": session.remote, "base": sent.head,
                             "description": sent.candidate.description})
        return
    click.echo(f"queued candidate {sent.candidate.key} on {session.remote}; git autoresearch "
               "collect collects its verdict")


def _collect(session: Session, sent: Sent, timeout: float | None, as_json: bool, *,
             or_queued: bool = False) -> None:
    """The verdict on ``sent`` waited for (progress on stderr; exit 3 after ``timeout``
    seconds, or, with ``or_queued``, the candidate printed as still queued), then the work
    tree left as a local run leaves it and the run's record printed as a local run prints
    it (a refused candidate recorded here as a discard saying why)."""
    from ..workers.measurer import collect, wait

    said: list[str | None] = []

    def waiting(seconds: float, host: str | None) -> None:
        if not said or said[-1] != host:
            click.echo(f"[{seconds:.0f}s] " + (f"taken by host {host}" if host else
                                                "queued, no host has taken it yet"), err=True)
            said.append(host)

    found = wait(session, sent, timeout=timeout, waiting=None if or_queued else waiting)
    if found is None and or_queued:
        _print_queued(session, sent, as_json)
        return
    if found is None:
        raise Refused(f"no verdict on candidate {sent.candidate.key} after {timeout:g} s: it "
                      "stays queued and the work tree as it is")
    found, note = collect(session, sent, found)  # (a conflict: recorded here as a discard)
    notes = [note] if note else []
    if as_json:
        emit_json("run", _record_json(found, [], notes))
        return
    best = session.segment.best_before(int(found["run"]))  # (as the host judged it)
    _print_record(session, found, best.metric if best else None)
    for message in notes:
        warn(message)


@click.command("collect", context_settings=CONTEXT,
               short_help="collect the verdict on the candidate run --no-wait queued")
@click.option("--wait-timeout", type=click.FloatRange(min=0), metavar="SECONDS",
              help="Give up waiting after SECONDS (exit 3; the candidate stays queued). "
                   "Default: wait as long as it takes.")
@click.option("--no-wait", is_flag=True,
              help="Look once: the verdict when a host has sent it, else the candidate, still "
                   "queued (git-autoresearch:queued/1 with --json), exit 0.")
@json_option
def collect_cmd(wait_timeout: float | None, no_wait: bool, as_json: bool) -> None:
    """In a clone measured on a host (worker join --measure-on-host): wait for the verdict on
    the candidate this clone queued (run --no-wait, or a run that gave up waiting), leave the
    work tree as run leaves it, and print the run's record as run prints it."""
    from ..session.branches import open_on_branch
    from ..workers.measurer import pending

    if no_wait and wait_timeout is not None:
        raise UsageError("--no-wait and --wait-timeout exclude each other")
    session = open_on_branch()
    session.check_recordable()
    if session.worker is None or not session.worker.on_host:
        raise Refused("this clone measures its own candidates: collect is for a clone "
                      "measured on a host (worker join --measure-on-host)")
    sent = pending(session)
    if sent is None:
        raise Refused("no candidate queued from this clone awaits its verdict (run --no-wait "
                      "queues one)")
    _collect(session, sent, 0.0 if no_wait else wait_timeout, as_json, or_queued=no_wait)


def _print_retry(retry: Retry | None) -> None:
    """Which run a retry tried again, and how its change was put on the work tree."""
    applied = retry.applied if retry is not None else None
    if applied is None:
        return
    how = f"replayed onto HEAD {applied.onto[:7]}" if applied.replayed \
        else f"on HEAD {applied.onto[:7]}"
    click.echo(f"retried run {applied.run}'s change ({applied.commit[:7]}, {how}): "
               f"{len(applied.paths)} file(s): {paths_text(applied.paths[:10])}"
               + (" ..." if len(applied.paths) > 10 else ""))


def _dry_run(session: Session, before: HookReport, result: Measurement, decision: str,
             as_json: bool, retry: Retry | None = None) -> None:
    """Print what ``run --dry-run`` measured and would decide (for a ``retry``, which run it
    tried again: its change is off the work tree again)."""
    notes = _measurement_notes(before, result)
    if as_json:
        data = _measurement_json(result, decision, session)
        data.update({"dry_run": True, "steer": before.steer or None, "warnings": notes})
        if retry is not None:
            data["retry_of"] = retry.number
        emit_json("measurement", data)
        return
    print_steer("before", before)
    if retry is not None:
        click.echo(f"retrying run {retry.number} (dry run: its change is off the work tree "
                   "again)")
    _print_measurement(result, session.config.metric_name)
    click.echo(f"decision: {decision} (dry run: nothing recorded; changes outside the scope or "
               "to readonly files were set aside)"
               if result.scope_violations or result.readonly_violations else
               f"decision: {decision} (dry run: nothing applied)")
    for note in notes:
        warn(note)


def _record_inputs(asi_pairs: tuple[str, ...], asi_json: str | None, description: str
                   ) -> tuple[dict[str, Any], str]:
    """The ``--asi``/``--asi-json`` annotations and the description, checked (exit 2)."""
    from ..runtime.bounds import MAX_DESCRIPTION_BYTES, check_text, parse_asi

    asi = parse_asi(list(asi_pairs), asi_json)
    return asi, check_text("--description", _read_description(description),
                           MAX_DESCRIPTION_BYTES)


def _record_command(status: str) -> Callable[..., None]:
    def body(description: str, asi_pairs: tuple[str, ...], asi_json: str | None,
             metric: float | None, metrics: tuple[str, ...], force: bool,
             as_json: bool) -> None:
        from ..record.iteration import record_by_hand
        from ..session.branches import open_on_branch

        asi, description = _record_inputs(asi_pairs, asi_json, description)
        session = open_on_branch()
        left_to_exit(session)  # (its whole ledger: freed by the exit, not run by run)
        session.check_recordable()
        done = record_by_hand(session, status, description, asi, metric=metric,
                              given=lambda: _given_metrics(metrics, metric,
                                                           session.config.metric_name),
                              force=force)
        recorded, recovered, after, previous_best = (done.recorded, done.recovered, done.after,
                                                     done.previous_best)
        assert recorded is not None and after is not None
        notes = (done.notes + session.warnings + recovered.warnings + recorded.warnings
                 + _violation_notes(recorded.record, recorded.outside_at_record))
        if as_json:
            emit_json("run", _record_json(recorded.record,
                                          [*_recovered_steer(recovered), after.steer],
                                          said_once(notes, after.warnings), after,
                                          recorded.removed))
            return
        _print_recovered(recovered)
        told: set[str] = set()
        warn_each(notes, told)
        _print_record(session, recorded.record, previous_best, recorded.removed,
                      recorded.reverted)
        print_steer("after", after, told)

    return body


def _read_description(value: str) -> str:
    """The description, never empty; ``-d -`` reads it from stdin (for long or generated
    texts)."""
    if value != "-":
        text = value
    else:
        text = sys.stdin.read().rstrip("\n")
    if not text.strip():
        raise UsageError("the description is empty" + (" (stdin gave none)" if value == "-"
                                                         else "") + ": say what the run tried")
    context = click.get_current_context(silent=True)
    if value.startswith("-") and context is not None and any(
            value in param.opts for param in context.command.params):
        # (-d --json: click gave the option to -d as its value, and the run would be recorded
        # with the option for its description and without the option)
        raise UsageError(f"-d took the option {value} for the description: give the "
                         f"description after -d (-d \"what the run tried\" {value})")
    return text


def _measurement_notes(before: HookReport, result: Measurement) -> list[str]:
    """The before hooks' warnings, and what the measurement set aside: changes outside the
    scope, and changes to readonly files."""
    return before.warnings + result.warnings + _violation_notes(
        {"scope_violations": result.scope_violations,
         "readonly_violations": result.readonly_violations, "scope_ref": result.scope_ref})


def _saved_at(record: Mapping[str, Any]) -> str:
    """Where a run's changes outside the scope or to readonly files are saved: every
    set-aside of the run (``scope_refs``), else its ``scope_ref``, else its attempt ref."""
    refs = record.get("scope_refs")
    if isinstance(refs, list) and refs:
        return ", ".join(str(ref) for ref in refs)
    return str(record.get("scope_ref") or record.get("attempt_ref"))


def _restore_hint(where: str) -> str:
    """How to bring back a file set aside at ``where`` (:func:`_saved_at`: one ref, or several
    joined by commas), from any folder of the work tree, whatever the file's name
    (``:(top,literal)``: a path from the top, as the paths are listed, taken as it is), and
    what keeps it from the next run's experiment."""
    ref = where if ", " not in where else "<ref>"
    return (f"; git restore --source={ref} -- ':(top,literal)<path>' brings one back (the next "
            "run takes it again unless it is committed on its own, or kept in .auto/ or "
            ".gitignore)")


def _violation_notes(record: Mapping[str, Any], at_record: Sequence[str] = ()) -> list[str]:
    """A warning for an agent when some of its changes were outside the scope, or changed
    what defines success (readonly files), and were reverted: where they are saved, and the
    command that brings a file back. ``at_record``: those outside the scope that the attempt
    ref saved as the run was recorded (``Recorded.outside_at_record``), not a set-aside
    before measuring."""
    where = _saved_at(record)
    back = _restore_hint(where)
    notes = []
    late = set(at_record)
    before = [p for p in record.get("scope_violations") or [] if p not in late]
    if before:
        notes.append(f"reverted changes outside the scope: "
                     f"{paths_text(before)} (saved at {where}{back})")
    if late:
        ref = str(record.get("attempt_ref"))
        notes.append(f"reverted changes outside the scope as the run was recorded: "
                     f"{paths_text(sorted(late))} (saved at {ref}"
                     f"{_restore_hint(ref)})")
    if record.get("readonly_violations"):
        notes.append(f"undid changes to readonly files, which define success: "
                     f"{paths_text(record['readonly_violations'])} (saved at {where}{back})")
    return notes


def _given_metrics(pairs: tuple[str, ...], metric: float | None, metric_name: str
                   ) -> dict[str, float]:
    """The ``--metrics NAME=VALUE`` pairs; :class:`UsageError` for a name the ledger and the
    trailer cannot hold as given (as the configuration's metric names), a value that is not
    a finite number, or the primary metric given twice."""
    from ..measure.samples import parse_number
    from ..session.config import METRIC_NAME_RE

    out = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--metrics '{pair}' is not NAME=VALUE")
        if name == "status" or not METRIC_NAME_RE.match(name):
            raise UsageError(f"--metrics '{name}' is not a metric name (letters, digits, _ . - "
                             "and µ; not 'status')")
        value, problem = parse_number(raw)
        if value is None:
            raise UsageError(f"--metrics {name}: {problem}")
        if name in out:
            raise UsageError(f"--metrics {name} is given twice")
        out[name] = value
    if metric is not None and metric_name in out:
        raise UsageError(f"the primary metric {metric_name} is given twice (--metric and "
                         "--metrics)")
    return out


def _finite_metric(ctx: click.Context, param: click.Parameter, value: str | None
                   ) -> float | None:
    from ..measure.samples import parse_number

    if value is None:
        return None
    number, problem = parse_number(value)
    if number is None:
        raise click.BadParameter(problem or "not a number")
    return number


def _make_record_command(status: str, short_help: str, help_text: str
                         ) -> click.Command:
    command = click.command(status, help=help_text, short_help=short_help,
                            context_settings=CONTEXT)
    options = [
        record_options,
        click.option("--metric", callback=_finite_metric, metavar="VALUE",
                     help="The primary metric, measured by the caller: recorded as given "
                          "(no checks run), instead of a pending measurement."
                     if status != "crash" else "A number the caller measured, instead of a "
                     "pending measurement: recorded as the run's sample (a crash's metric "
                     "is null)."),
        click.option("--metrics", multiple=True, metavar="NAME=VALUE",
                     help="A metric measured by the caller (repeatable); without --metric, "
                          "added to the pending measurement."),
        click.option("--force", is_flag=True,
                     help="Keep a measurement that failed its checks." if status == "keep"
                     else "Accepted for symmetry with keep; changes nothing."),
        json_option,
    ]
    callback: Any = _record_command(status)
    for option in reversed(options):
        callback = option(callback)
    return command(callback)  # type: ignore[no-any-return]


keep_cmd = _make_record_command(
    "keep", "commit the experiment with a Result: trailer and record it",
    "Record a keep and commit the experiment's in-scope changes with a Result: trailer. "
            "A keep the loop would not make (measure's decision) is recorded as forced, with "
            "the reason.")
discard_cmd = _make_record_command(
    "discard", "record a discard and revert the experiment",
    "Record a discard (or checks_failed) and revert, keeping the attempt under "
               "refs/autoresearch/.")
crash_cmd = _make_record_command(
    "crash", "record a crash and revert the experiment",
    "Record a crash and revert, keeping the attempt under refs/autoresearch/.")


# --- log / status / show / stop ---------------------------------------------------------------


@click.command("stop", context_settings=CONTEXT, short_help="ask the loop to stop")
@json_option
def stop_cmd(as_json: bool) -> None:
    """Create .auto/STOP: the next run or measure exits 4 and removes it (with workers it
    stays, so that each of them stops; a clone that joined through a remote has its own
    .auto/STOP: stop each clone)."""
    from ..runtime.atomic import write_atomic
    from ..session.layout import Layout

    layout = Layout.discover()
    if not layout.config_exists():
        raise Refused(f"no session here (no .auto/config.toml): {layout.missing_hint()}")
    # Not under the session lock: a run holds it while it measures, which is when a stop is
    # asked for. The sentinel is one whole file, and the run that removes it holds the lock.
    there = layout.stop.is_file()
    if not there:
        write_atomic(layout.stop,
                     f"stop requested at {time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n".encode())
    if as_json:
        emit_json("stop", {"stop": str(layout.stop)})
    else:
        click.echo(f"{'already there' if there else 'created'} {layout.stop}: the loop stops "
                   "before its next run (this work tree's and its workers'; a clone joined "
                   "through a remote has its own)")


@click.command("hook", context_settings=CONTEXT,
               short_help="fire the before or after hooks by hand")
@click.argument("stage", type=click.Choice(["before", "after"]))
@json_option
def hook_cmd(stage: str, as_json: bool) -> None:
    """Fire the before or after hooks by hand, for agents that drive their own loop."""
    from ..hooks.payload import fire_stage
    from ..record.recovery import locked
    from ..session.branches import open_on_branch

    session = open_on_branch()
    with locked(session, f"hook {stage}"):  # its firings are ledger lines
        last = session.ledger.last_run
        if stage == "after" and last is None:
            raise Refused("no run recorded yet: after hooks need a run entry")
        report = fire_stage(session, stage, last.data if last else None)
    if as_json:
        emit_json("hook", {"stage": stage, "steer": report.steer or None,
                           "warnings": report.warnings,
                           "firings": [f.ledger_line() for f in report.firings]})
        return
    print_steer(stage, report)
