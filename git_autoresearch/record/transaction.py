"""Record a run: keep (commit) or revert the work tree, append its ledger line, journaled so
that a kill at any point is finished by the next command (the measurement it records is chosen
by :mod:`git_autoresearch.decide.choice`).

The protocol (gitautoresearch-guarantees(7)): the run record is drafted and checked to fit; an
intent record (:mod:`git_autoresearch.record.intents`) is written before anything changes; the keep
or revert runs (:mod:`git_autoresearch.history.experiment`); the ledger line is appended; the intent
is cleared (once the after hooks fired, when there are any). Signals wait from the intent to the
ledger line. :mod:`git_autoresearch.record.recovery` finishes what a SIGKILL interrupted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from ..git import GitError
from ..history.experiment import (
    Changes,
    plan_keep,
    refuse_missing_objects,
    revert,
    revert_targets,
    scope_violations,
    snapshot_now,
)
from ..history.experiment import keep as git_keep
from ..history.refs import attempt_ref
from ..history.trailers import (
    attempt_message,
    commit_message,
    decision_trailer,
    keep_trailers,
    result_trailer,
    set_aside_message,
)
from ..ledger import Run, Segment, json_number, now_ms
from ..ledger.records import RunRecord, run_record
from ..measure.samples import Measurement
from ..measure.worktree import changed_since, set_asides
from ..runtime import signals
from ..runtime.atomic import WriteFailed
from ..runtime.bounds import fit_record
from ..runtime.errors import Refused
from ..runtime.faults import checkpoint
from ..session.session import Session
from ..session.shared import release
from . import intents

# Keeps commit through plumbing and reverts write only refs, so nothing of git's own runs its
# automatic maintenance during a session: every this many runs, we run it as git commit would.
MAINTENANCE_EVERY = 10


@dataclass(frozen=True)
class Recorded:
    """A recorded run: its ledger record as written, and what the caller should hear (the
    measurement dropped, the state ref not mirrored, ...)."""

    record: RunRecord
    warnings: list[str] = field(default_factory=list)
    # The files the experiment created that the revert removed (its attempt ref keeps them),
    # besides those its violations name.
    removed: list[str] = field(default_factory=list)
    reverted: bool = True  # False: a revert that found nothing to put back
    # The paths outside the scope that the attempt ref saved as the run was recorded (changed
    # while it was measured, or with no measurement), not a set-aside before measuring.
    outside_at_record: list[str] = field(default_factory=list)


def record(session: Session, status: str, description: str, *, result: Measurement | None,
           asi: Mapping[str, Any] | None = None, hooks: Sequence[Mapping[str, Any]] | None = None,
           baseline: bool = False, given: Measurement | None = None,
           force: bool = False, reason: str | None = None,
           replayed: Mapping[str, Any] | None = None, recheck_discard: bool = False,
           origin: Mapping[str, Any] | None = None) -> Recorded:
    """Apply ``status`` to the work tree (keep: commit; otherwise: revert) and append the run
    record. Returns the record as written, and warnings.

    ``result`` is the measurement to record; ``given``, the metrics the caller gave
    (``--metric``), which are recorded alone when the work tree changed since ``result`` was
    measured. A ``discard`` of a measurement that crashed or failed its checks is recorded as
    that; a ``keep`` of one that failed its checks is refused unless ``force``. Refuses (exit
    3) during a merge or the like, on a ledger that cannot be written, and a record that
    cannot fit (exit 2). ``reason`` says why a discard was discarded (a replay that
    conflicted), or why a keep was kept against the loop's decision (``kept by hand: ...``:
    :attr:`decide.choice.Choice.forced`); ``replayed`` what a replay did (:mod:`workers.replay`),
    ``origin`` what the run's record says of where its change came from (``retry_of``: the
    run whose attempt it tried again, ``run --retry``; ``queued``: the candidate a measuring
    host took from the queue). In a worker, a
    keep whose incumbent moved raises :class:`session.shared.IncumbentMoved` before anything
    changes, and so does a discard with ``recheck_discard``."""
    session.check_recordable()
    session.preflight()
    with session.shared(f"record a run ({status})"):
        return _record(session, status, description, result=result, asi=asi, hooks=hooks,
                       baseline=baseline, given=given, force=force, reason=reason,
                       replayed=replayed, recheck_discard=recheck_discard,
                       origin=origin)


def _check_head(session: Session, head: str, changes: Changes, baseline: bool) -> None:
    """Refuse (exit 3) when HEAD is not where the run was measured: ``head`` on the session's
    branch (a worker's own), as ``changes`` found it. A switch, a checkout or a commit made by
    hand while the run measured would have a keep committed on another branch, or a revert
    undo the change against a commit it was not measured on. A ``baseline`` (start's) is
    measured again by start --new-segment."""
    if changes.head is None:
        return  # (git said nothing of HEAD)
    wanted = session.branch
    what = "the baseline" if baseline else "the run"
    if changes.branch != wanted:
        where = f"branch {changes.branch}" if changes.branch else "a detached HEAD"
        way = (f"git switch {wanted}, then git autoresearch start --new-segment measures the "
               "baseline again" if baseline else
               f"go back with git switch --merge {wanted}, then record it (git autoresearch "
               "keep or discard: its measurement is kept) or run again")
        raise Refused(f"HEAD moved to {where} while {what} measured (a switch or checkout "
                      "by hand?): nothing was recorded, and the work tree is as git left it; "
                      + way)
    if changes.head != head:
        way = ("git autoresearch start --new-segment measures the baseline of HEAD as it is "
               "now" if baseline else
               f"the run measured {head[:7]} with the change, which that commit may hold: "
               f"git reset --soft {head[:7]} takes the commit back into the work tree, "
               "where keep or discard records it with its measurement (finalize replays only "
               "keeps), or run again to measure HEAD as it is now")
        raise Refused(f"HEAD moved from {head[:7]} to {changes.head[:7]} while {what} "
                      "measured (a commit made by hand?): nothing was recorded; " + way)


def _record(session: Session, status: str, description: str, *, result: Measurement | None,
            asi: Mapping[str, Any] | None, hooks: Sequence[Mapping[str, Any]] | None,
            baseline: bool, given: Measurement | None, force: bool, reason: str | None,
            replayed: Mapping[str, Any] | None, recheck_discard: bool,
            origin: Mapping[str, Any] | None) -> Recorded:
    """:func:`record`, under the session's shared lock."""
    if session.segment.index != session.began_in and not baseline:
        raise Refused(f"a new segment ({session.segment.index}) began while this run was "
                      "measured (start --new-segment, by another worker?): nothing was "
                      "recorded; measure it again under the new configuration (git "
                      "autoresearch run)")
    head = session.head()
    # Through a remote, a number is taken there before it is written (one measure took it).
    number = session.reserve_run() if session.remote else session.next_run()
    session.check_not_joined_elsewhere()
    changes = session.changes()
    _check_head(session, head, changes, baseline)
    session.check_merged(changes)
    warnings: list[str] = []
    status, chosen, measured = _settle(session, status, result, given, force, changes, warnings)
    if status == "keep" and not baseline:
        # A kept experiment would become the baseline of a segment that wanted one measured.
        session.check_baseline()
    if session.worker is not None:  # its incumbent may have moved: another worker kept
        from ..workers.replay import check_incumbent, check_moved

        if status == "keep":
            check_incumbent(session)
        elif status == "discard" and recheck_discard:
            check_moved(session)
    draft = _draft(session, number, status, description, chosen, asi, hooks, baseline)
    if changes.nested:
        draft["nested_repositories"] = list(changes.nested)
        warnings.append(nested_warning(changes.nested, status))
    if reason:
        draft["reason"] = reason
    if replayed:
        draft["replayed"] = dict(replayed)
    if origin:
        draft.update(cast(RunRecord, dict(origin)))
    if measured is not None and chosen is not measured:
        _carry_dropped(draft, measured)
    _name_set_asides(session, draft)
    aside_before = set(draft["scope_violations"])
    # What defines success and changed since (or without) a measurement: put back too.
    draft["readonly_violations"] = sorted({*draft["readonly_violations"],
                                           *session.readonly_changed(changes)})
    if status != "keep":
        _name_reverted_outside(session, draft, changes)
    fit_record(draft)  # refused here, before anything changes, if it cannot fit
    untracked_after = sorted({*changes.preexisting, *changes.staged_preexisting, *changes.nested,
                              *(p for p in changes.created if session.bounds.is_protected(p))})
    intent = intents.Intent("keep" if status == "keep" else "revert", number,
                            id=os.urandom(8).hex(), head=head,
                            ref=attempt_ref(session.config.session_id, number), record=draft,
                            untracked_after=untracked_after,
                            staged_preexisting=changes.staged_preexisting)
    # From the intent record to the ledger line, a signal waits (about 0.1 s): the run is
    # recorded whole, then the command ends as the signal asks. A SIGKILL is covered by the
    # intent record and recovery.
    with signals.deferred():
        removed, reverted = _apply(session, intent, draft, changes, description)
        written = append_run(session, draft, untracked_after, changes.ignored, warnings)
    session.branch_runs.save()
    if session.worker is not None:  # the worker follows a keep made meanwhile
        from ..workers.replay import follow

        moved = follow(session)
        if moved:
            warnings.append(moved)
    named = {*draft["scope_violations"], *draft["readonly_violations"]}
    return Recorded(written, warnings, [p for p in removed if p not in named], reverted,
                    [p for p in draft["scope_violations"] if p not in aside_before])


def _settle(session: Session, status: str, result: Measurement | None,
            given: Measurement | None, force: bool, changes: Changes, warnings: list[str]
            ) -> tuple[str, Measurement | None, Measurement | None]:
    """The status and measurement to record, and the pending measurement (None: none was),
    kept or dropped when the work tree changed since it was measured."""
    measured: Measurement | None = None
    if result is not None and result.fingerprint is not None:
        measured = result
        moved = changed_since(session, result, changes)
        what = ", ".join(moved[:5]) + (" ..." if len(moved) > 5 else "")
        if moved and given is not None and (status != "keep" or given.metric is not None):
            warnings.append(f"the work tree changed since it was measured ({what}); the run "
                            "is recorded with the metrics you gave alone")
            result = given
        elif moved and status == "keep":
            raise Refused(f"the work tree changed since it was measured ({what}); measure "
                          "again before keeping, or give the metric (--metric)")
        elif moved:
            warnings.append(f"the work tree changed since it was measured ({what}); the run "
                            "is recorded without that measurement")
            result = None
    if status == "keep" and result is not None and result.status == "checks_failed" \
            and not force:
        raise Refused("the pending measurement failed its checks; discard it, or keep it "
                      "anyway with --force")
    if status == "discard" and result is not None and result.status:
        status = result.status
    if status == "keep" and (result is None or result.metric is None):
        raise Refused("a keep needs a metric: measure first or pass --metric")
    return status, result, measured


def _carry_dropped(draft: RunRecord, measured: Measurement) -> None:
    """What a dropped measurement set aside before it ran still belongs to the run."""
    if measured.scope_ref:
        draft["scope_ref"] = measured.scope_ref
        draft["scope_violations"] = sorted({*draft["scope_violations"],
                                            *measured.scope_violations})
    draft["readonly_violations"] = list(measured.readonly_violations)


def _draft(session: Session, number: int, status: str, description: str,
           result: Measurement | None, asi: Mapping[str, Any] | None,
           hooks: Sequence[Mapping[str, Any]] | None, baseline: bool) -> RunRecord:
    """The run record, with ``commit`` at HEAD and no attempt ref yet."""
    metric = result.metric if result else None
    more: dict[str, Any] = {"asi": dict(asi)} if asi else {}
    more.update({
        "duration_s": result.duration_s if result else None,
        "samples": [json_number(s) for s in result.samples] if result else [],
        "checks": result.checks if result else None,
        "attempt_ref": None,
        "scope_violations": list(result.scope_violations) if result else [],
        "readonly_violations": list(result.readonly_violations) if result else [],
        "hooks": [dict(h) for h in hooks or []],
    })
    draft = run_record(
        number, session.repo.short(session.head()),
        # pi-autoresearch's convention: a crash's metric is 0, whatever was measured.
        0 if status == "crash" else (json_number(metric) if metric is not None else None),
        {k: json_number(v) for k, v in (result.metrics if result else {}).items()},
        status, description, now_ms(), session.segment.index, **more)
    if session.worker is not None:
        draft["worker"] = session.worker.name
    why = result.reason_for(status, session.config.min_effect or 0.0,
                            session.config.direction) if result is not None else None
    if result is not None and result.decision is not None and status != "crash":
        # (a crash recorded over a pending measurement: no rule decided it)
        draft["decision"] = dict(result.decision)
        if status == "discard" and result.decision.get("verdict") in ("inconclusive", "worse"):
            draft["reason"] = why  # (a rule's discard says why right after its decision)
    if result is not None and result.scope_ref:
        draft["scope_ref"] = result.scope_ref
    if result is not None and result.slot:
        draft["slot"] = dict(result.slot)
    if baseline:
        draft["baseline"] = True
    if why is not None:
        draft["reason"] = why
    if status == "crash":
        # run.log is overwritten by the next measurement: the record keeps the tail (empty
        # when the command printed nothing, or nothing crashed under measurement).
        draft["tail"] = result.log_tail if result and result.reason else ""
    return draft


def _name_set_asides(session: Session, draft: RunRecord) -> None:
    """Name in run record ``draft`` every set-aside of its run (``scope_refs``) and add their
    paths outside the scope to its violations: nothing set aside goes unnamed."""
    refs = set_asides(session, draft["run"])
    if not refs:
        return
    bounds = session.bounds
    draft["scope_refs"] = [ref for ref, _ in refs]
    outside = {p for _, paths in refs for p in paths
               if not bounds.is_protected(p) and not bounds.in_scope(p)}
    draft["scope_violations"] = sorted({*draft["scope_violations"],
                                        *(p for p in outside if not bounds.is_readonly(p))})
    draft["readonly_violations"] = sorted({*draft["readonly_violations"],
                                           *(p for p in outside if bounds.is_readonly(p))})


def _name_reverted_outside(session: Session, draft: RunRecord, changes: Changes) -> None:
    """A revert's changes outside the scope (made while the run was measured, or with no
    measurement), which its attempt ref saves with the rest: named among the violations of
    run record ``draft``, as a keep names those it sets aside as it commits."""
    bounds = session.bounds
    draft["scope_violations"] = sorted({*draft["scope_violations"], *(
        p for p in scope_violations(bounds, changes) if not bounds.is_readonly(p))})


def _apply(session: Session, intent: intents.Intent, draft: RunRecord, changes: Changes,
           description: str) -> tuple[list[str], bool]:
    """The git side of the run: the keep commit, or the revert with the attempt saved at its
    ref; ``draft`` is completed. Returns the files the experiment created that a revert
    removed (none for a keep), and whether a revert had anything to put back. A failure says
    what was done and what is left to finish."""
    try:
        if intent.op == "keep":
            _keep(session, intent, draft, changes, description)
            return [], True
        else:
            created, tracked = revert_targets(session.bounds, changes)
            intent = intent.but(created=created, tracked=tracked)
            intents.write(session.layout.intent, intent)
            checkpoint("revert:before-attempt")
            message = attempt_message(description, draft["status"], draft["run"],
                                      session.config.session_id, intent.id)
            revert(session.repo, session.bounds, changes, head=intent.head, ref=intent.ref,
                   message=message)
            draft["attempt_ref"] = intent.ref
            # (a new file staged, or marked with git add -N, is tracked, and goes too)
            added = set(changes.added) - set(changes.staged_preexisting)
            return [*created, *(p for p in tracked if p in added)], bool(created or tracked)
    except (Refused, GitError) as exc:
        raise _failed(session, intent, exc) from None


def _failed(session: Session, intent: intents.Intent, exc: Refused | GitError) -> Exception:
    """What to raise when the keep or revert of ``intent`` failed: the intent stays when git
    changed something (the next command finishes it), and goes when nothing changed."""
    number = intent.run
    now = session.repo.head() if intent.op == "keep" else intent.head
    committed = now is not None and now != intent.head
    if isinstance(exc, GitError):
        failed = intents.git_failure(session.repo, session.layout.intent, session.git_locks(),
                                     intent, exc)
        if failed is not exc or not committed:
            return failed
    if committed:
        # Failed after the commit (the out-of-scope changes could not be set aside: a full
        # disk): the intent record stays, and the next command finishes it.
        assert now is not None
        return Refused(f"run {number} was committed as {session.repo.short(now)}, but "
                       f"{exc.message}; git autoresearch resume (or any run, keep or discard) "
                       "finishes recording it")
    # Refused before anything changed (git refused the commit, or could not record the
    # attempt): there is nothing to finish.
    intents.clear(session.layout.intent)
    locks = session.git_locks()
    if locks:  # another git took a lock meanwhile: name it, not git's advice
        said_lines = [*(exc.detail or "").splitlines(), exc.message]
        line = next((ln.strip() for ln in said_lines
                     if ln.strip().startswith(("fatal:", "error:"))), exc.message)
        return Refused(f"git could not finish the {intent.op} of run {number}: its lock file "
                       f"{locks[0]} exists (git said: {line}); nothing was recorded, and the "
                       "experiment is still in the work tree; once no git process is running, "
                       f"remove it (rm {locks[0]}) and run the command again")
    return exc


def _keep(session: Session, intent: intents.Intent, draft: RunRecord, changes: Changes,
          description: str) -> None:
    """The keep of :func:`record`: write the intent, commit, and complete ``draft``."""
    number, head, ref = draft["run"], intent.head, intent.ref
    sid = session.config.session_id
    metric = draft["metric"]
    assert metric is not None  # a keep has a metric (_settle)
    trailer = result_trailer(session.config.metric_name, metric, draft["metrics"])
    bounds = session.bounds
    plan = plan_keep(session.repo, bounds, changes)
    created, tracked = revert_targets(bounds, plan.revert_changes, plan.violations)
    refuse_missing_objects(session.repo, tracked, "kept")
    intents.write(session.layout.intent, intent.but(
        to_stage=plan.to_stage, had_index=(session.repo.git_dir / "index").is_file(),
        created=created, tracked=tracked))
    # A cache: with the stale tree (HEAD moved since discovery) a keep would find nothing to
    # commit only if the candidate recreated the old incumbent, which a replay cannot make.
    head_tree = (session.repo.head_tree_at_discovery
                 if head == session.repo.head_at_discovery else None)
    decided = decision_trailer(draft.get("decision"))
    kept = git_keep(session.repo, bounds, plan, head=head,
                    message=commit_message(description, trailer, number, sid, decided),
                    trailers=keep_trailers(trailer, number, sid, decided),
                    violations_ref=ref, head_tree=head_tree,
                    violations_message=set_aside_message(number, intent.id, kept=True))
    session.moved_head(kept.commit, number if kept.committed else None)
    draft.update({"commit": session.repo.short(kept.commit), "committed": kept.committed,
                  "attempt_ref": kept.attempt_ref})
    if kept.committed:
        checkpoint("keep:before-advance")
        if session.worker is not None:  # the session branch follows a worker's keep
            from ..workers.replay import advance

            advance(session, head, kept.commit, draft)
    draft["scope_violations"] = sorted({*draft["scope_violations"],
                                        *(p for p in kept.scope_violations
                                          if not bounds.is_readonly(p))})


def append_run(session: Session, record: RunRecord, untracked_after: list[str],
               ignored: list[str] | None, warnings: list[str]) -> RunRecord:
    """Compute the confidence, append ``record`` to the ledger, and clear what the run left
    behind; returns the record as written, adding to ``warnings``. The after hooks fire next
    (for every run, a baseline too): with hooks in place, the intent record stays until they
    have fired (``Session.fire_hooks``), so that a kill in between leaves it for recovery,
    which fires them. A ledger that cannot be written is :class:`Refused`, the intent kept."""
    # A keep's own violations came after the first fit: cut again (the lists only shrink).
    fit_record(record)
    segment = session.segment
    probe = Segment(segment.index, segment.header, list(segment.runs))
    probe.runs.append(Run(cast(dict[str, Any], record), 0, probe.index))
    from ..ledger.confidence import confidence

    record["confidence"] = confidence(probe)
    checkpoint("record:before-ledger")
    try:
        session.append([record])
    except WriteFailed as exc:
        # The intent record stays: the next command that takes the lock writes the line.
        raise Refused(f"{run_state(record)}, but its ledger line could not be written to "
                      f"{exc.path}: {exc.reason}; free space (or make it writable), then git "
                      "autoresearch resume (or any run, keep or discard) finishes recording "
                      "it") from None
    checkpoint("record:after-ledger")
    release(session.repo, session.config.session_id, session.worker_name, record["run"])
    signals.note_recorded(record["run"], record["status"], record.get("commit"))
    _after_append(session, record, untracked_after, ignored, warnings)
    if not session.layout.hooks.is_dir():
        intents.clear(session.layout.intent)
    return record


def _after_append(session: Session, record: RunRecord, untracked_after: list[str],
                  ignored: list[str] | None, warnings: list[str]) -> None:
    """What follows a ledger line: the untracked snapshot, the state ref, git's maintenance
    (every :data:`MAINTENANCE_EVERY` runs), and the pending measurement gone."""
    unsaved = snapshot_now(session.repo, session.layout.untracked, untracked_after, ignored)
    if unsaved:
        warnings.append(f"run {record['run']} was recorded, but {unsaved}")
    warnings += session.mirror_state(f"after run {record['run']} ({record['status']})")
    if session.remote is not None:
        from ..history.remote_ledger import publish

        warnings += publish(session.repo, session.remote, session.config.session_id,
                            session.worker_name, session.layout.ledger, record["run"])
    if record["run"] % MAINTENANCE_EVERY == 0:
        session.repo.auto_maintenance()
    try:
        session.layout.pending.unlink(missing_ok=True)
    except OSError as exc:  # a folder in its place, say: read as no measurement
        warnings.append(f"run {record['run']} was recorded, but {session.layout.pending} "
                        f"could not be removed: {exc.strerror or exc}")


def run_state(record: Mapping[str, Any]) -> str:
    """Where run ``record`` (a run record: ``run``, ``status``, ``commit``, ``committed``,
    ``attempt_ref``) stands once its git side is done, for a message: ``run 3 was committed as
    abc1234``, ``... was kept at abc1234 (nothing to commit)``, or ``run 3 (discard) was
    reverted, its attempt saved at <ref>``."""
    number = record["run"]
    if record["status"] == "keep":
        if record.get("committed"):
            return f"run {number} was committed as {record['commit']}"
        return f"run {number} was kept at {record['commit']} (nothing to commit)"
    return (f"run {number} ({record['status']}) was reverted, its attempt saved at "
            f"{record.get('attempt_ref')}")


def nested_warning(paths: list[str], status: str) -> str:
    """What a run says of the git repositories its experiment created (``paths``, each
    ``dir/``): git can neither commit nor save them as files, so the keep left them out, or
    the revert left them in place."""
    shown = ", ".join(paths[:3]) + (" ..." if len(paths) > 3 else "")
    done = "not committed" if status == "keep" else "neither saved in the attempt ref nor reverted"
    return (f"the experiment created a git repository inside the work tree ({shown}): it was "
            f"{done}, since git holds another repository only as a submodule; move it out of "
            "the work tree, or add it as a submodule yourself")
