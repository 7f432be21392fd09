"""What ``git autoresearch status`` (and ``resume``, once it has repaired, and ``show`` of one
run) reports: where an open session stands, computed once and returned as a value the command
renders (human text or ``--json``, git-autoresearch(1), EXIT STATUS).

No click here, and no git argv: the reconciliation comes from :func:`history.trailers.reconcile`,
the rest from the session's own questions (its branch, baseline, pending measurement, readonly
files and intent record).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..history.experiment import Changes
    from ..hooks.user import HookReport
    from ..ledger import Run
    from ..lifecycle.resume import Picked
    from ..session.session import Session

# How many changed paths a stale pending measurement names in the human text.
STALE_SHOWN = 3


@dataclass(frozen=True)
class Pending:
    """A measurement taken and not yet recorded: its ``metric`` (as the ledger writes numbers;
    None for a crash), the ``status`` the loop would record for it (``keep``, ``discard``,
    ``crash``, ``checks_failed``), the rule's ``decision`` object (as a run record holds it;
    None when the rule gave none), and the paths ``changed_since`` it was taken (non-empty:
    stale)."""

    metric: int | float | None
    status: str
    decision: dict[str, Any] | None
    changed_since: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "status": self.status, "decision": self.decision,
                "changed_since": self.changed_since}


@dataclass(frozen=True)
class Status:
    """Where a session stands. ``segment`` is :func:`review.report.segment_summary` of the current
    segment; ``branch`` the session branch (the current branch, or ``HEAD``, for a session read
    in place); ``experiments`` the runs after the baseline in this segment (counted only when
    ``limit``, ``max_experiments``, is set); ``time_left`` the seconds of ``max_duration`` left
    in this segment (None: no budget); ``stop_rule`` the stop rule the segment meets
    (:func:`decide.stopping.rule_met`: the next run exits 4) and ``stop_reason`` why; ``warnings``
    every problem, in the order status has always given them."""

    session_id: str
    branch: str
    goal: str
    metric_name: str
    metric_unit: str
    direction: str
    segment: dict[str, Any]
    total_runs: int
    pending: Pending | None
    stop_pending: bool
    limit: int | None
    limit_reached: bool
    experiments: int | None
    readonly_changed: list[str]
    warnings: list[str]
    # Under the sequential rule: the incumbent's pool, its relative spread and drift.
    noise: dict[str, Any] | None = None
    # The time budget (max_duration as written) and the seconds of it left (0: spent).
    max_duration: str | None = None
    time_left: float | None = None
    # The stop rules (None: not set) and what they count in this segment: the runs since the
    # last keep, the runs that crashed or failed their checks in a row.
    target_metric: float | None = None
    max_runs_without_keep: int | None = None
    runs_without_keep: int = 0
    max_failures_in_a_row: int | None = None
    failures_in_a_row: int = 0
    # The stop rule the segment meets (its key, and why): the next run exits 4.
    stop_rule: str | None = None
    stop_reason: str | None = None
    # What each worker is doing (:func:`workers_doing`); empty: nothing to say.
    workers: list[dict[str, Any]] | None = None
    # The session finished off its branch (a squash merge, cherry-picks): the sentence.
    finished: str | None = None
    # In a clone measured on a host: the candidate it queued whose verdict it has not
    # collected (``key``, ``remote``, ``base``, ``description``), or None.
    queued: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``status --json`` document (its keys in this order; ``noise`` only under the
        sequential rule; ``workers`` only when a worker claims an idea or measures, or the
        ledger names a worker besides ``main``; ``queued`` only while a candidate this clone
        queued for a measuring host awaits collecting)."""
        return {
            "session_id": self.session_id,
            "branch": self.branch,
            "goal": self.goal,
            "metric_name": self.metric_name,
            "metric_unit": self.metric_unit,
            "direction": self.direction,
            "segment": self.segment,
            "total_runs": self.total_runs,
            "pending": None if self.pending is None else self.pending.to_json(),
            "stop_pending": self.stop_pending,
            "limit": self.limit,
            "limit_reached": self.limit_reached,
            "max_duration": self.max_duration,
            "time_left_seconds": None if self.time_left is None else round(self.time_left, 3),
            "target_metric": self.target_metric,
            "max_runs_without_keep": self.max_runs_without_keep,
            "runs_without_keep": self.runs_without_keep,
            "max_failures_in_a_row": self.max_failures_in_a_row,
            "failures_in_a_row": self.failures_in_a_row,
            "stop_rule": self.stop_rule,
            "stop_reason": self.stop_reason,
            "readonly_changed": self.readonly_changed,
            "warnings": self.warnings,
            "finished": self.finished,
        } | ({} if self.noise is None else {"noise": self.noise}) \
            | ({"workers": self.workers} if self.workers else {}) \
            | ({"queued": self.queued} if self.queued else {})


def status(session: Session) -> Status:
    """What status reports for ``session`` (opened with :meth:`Session.open_for_reading`).
    Reads the work tree, the session branch's trailers and the scratch folder; changes
    nothing."""
    from ..history.refs import session_branch
    from ..session.branches import finished
    from .report import audits, segment_summary, stability

    cfg = session.config
    branch = session_branch(cfg.session_id)
    if session.read_only:
        branch = session.repo.current_branch() or "HEAD"
    warnings = [*session.warnings, *_session_problems(session, branch)]
    changes = None if session.read_only else session.changes()
    pending = None if changes is None else _pending(session, changes)
    unmerged = None if changes is None else session.unmerged_problem(changes)
    warnings.extend([unmerged] if unmerged else [])
    readonly_changed = [] if changes is None else session.readonly_changed(changes)
    warnings.extend(f"readonly file {path} differs from HEAD: the next measurement undoes the "
                    "change (it is saved on a ref first)" for path in readonly_changed)
    incumbent = None
    done = None if session.read_only else finished(session)
    if not session.read_only:
        from ..measure.worktree import incumbent_run, unkept_head_note

        incumbent = incumbent_run(session)  # (one pass over the runs, for both)
        # (a finished session's HEAD is the branch it went into: no incumbent of its own)
        unkept = unkept_head_note(session, incumbent) \
            if session.trailer_branch is None and done is None else None
        warnings.extend([unkept] if unkept else [])
        incumbent = incumbent if cfg.rule == "sequential" else None
    interrupted = session.interrupted()
    if interrupted is not None:
        warnings.append(f"{interrupted.interrupted_text()}; the next recording command (or "
                        f"resume) {'finishes it' if interrupted.readable else 'sets it aside'}")
    if session.worker is not None and not session.read_only:
        from ..workers.replay import interrupted_replay

        replay = interrupted_replay(session)
        warnings.extend([f"{replay} (or resume)"] if replay else [])
    summary = segment_summary(session.segment)
    noise = _noise(session, incumbent)
    if summary["stability"] and noise and noise["relative_spread"] is not None:
        # The rule's own estimate of the noise, the one its decisions use.
        summary["stability"] = stability(session.segment, {
            "relative_spread": round(noise["relative_spread"], 6),
            "source": f"the sequential rule's pool of {noise['incumbent_samples']} samples "
                      "of the incumbent"})
    audited = audits(session.ledger)
    for key in ("best", "incumbent"):  # the latest audit line of each, as log gives it
        brief = summary.get(key)
        if brief is not None:
            found = audited.get(brief["run"])
            brief["audit"] = found[-1] if found else None
    from ..decide.budget import failures_in_a_row, runs_without_keep
    from ..decide.stopping import rule_met

    met = rule_met(session) or (None, None)
    return Status(
        session_id=cfg.session_id, branch=branch, goal=cfg.goal, metric_name=cfg.metric_name,
        metric_unit=cfg.metric_unit, direction=cfg.direction,
        segment=summary, total_runs=len(session.ledger.runs),
        pending=pending, stop_pending=session.layout.stop.exists(),
        limit=cfg.max_experiments, limit_reached=session.limit_reached(),
        experiments=None if cfg.max_experiments is None else session.experiments_in_segment(),
        readonly_changed=readonly_changed, warnings=list(dict.fromkeys(warnings)),
        noise=noise, max_duration=cfg.max_duration, time_left=session.time_left(),
        target_metric=cfg.target_metric, max_runs_without_keep=cfg.max_runs_without_keep,
        runs_without_keep=len(runs_without_keep(session.segment)),
        max_failures_in_a_row=cfg.max_failures_in_a_row,
        failures_in_a_row=len(failures_in_a_row(session.segment)),
        stop_rule=met[0], stop_reason=met[1],
        finished=done,
        workers=None if session.read_only else workers_doing(session),
        queued=None if session.read_only else _queued(session))


def _queued(session: Session) -> dict[str, Any] | None:
    """The candidate this clone queued for a measuring host and has not collected."""
    if session.worker is None or not session.worker.on_host or session.remote is None:
        return None
    from ..workers.measurer import pending

    sent = pending(session)
    if sent is None:
        return None
    return {"key": sent.candidate.key, "remote": session.remote, "base": sent.head,
            "description": sent.candidate.description}


def workers_doing(session: Session) -> list[dict[str, Any]]:
    """What each worker of ``session`` is doing, by name (``main`` first): its ``claims`` (the
    idea's current ``number``, or null when it left the backlog, ``key``, ``text`` and the
    claim's :meth:`~git_autoresearch.workers.claims.Claim.to_json`), its ``last_run`` (``run``,
    ``status``, ``metric``, ``timestamp``: the last run record naming it; a record without a
    ``worker`` field is ``main``'s) and the measurement ``slot`` it holds (``slot``, ``pid``,
    ``what``, ``since``, and ``orphaned``: held by the measured command of a command killed
    outright, :func:`measure.slots.orphaned`; null). Empty when no worker claims or measures
    and the ledger names no worker besides ``main``: a single agent's status stays as it
    was."""
    from ..ledger import json_metric
    from ..measure.slots import held, orphaned, slots_dir
    from ..session.ideas import read_ideas
    from ..workers.claims import idea_key, read_claims

    cfg = session.config
    claims = read_claims(session.repo, cfg.session_id)
    slots = held(session.repo, cfg.session_id)
    folder = slots_dir(session.repo, cfg.session_id)
    last_of: dict[str, Any] = {}  # each worker's last run, in one pass over the ledger
    for run in session.ledger.runs:
        last_of[str(run.data.get("worker") or "main")] = run
    named = set(last_of)
    if not claims and not slots and named <= {"main"}:
        return []
    numbers = {idea_key(i.text): i.number
               for i in read_ideas(session.layout.session_file("ideas"))}
    names = named | {c.worker for c in claims.values()} | \
        {str(h.get("worker")) for h in slots.values() if h.get("worker")}
    out = []
    for name in sorted(names, key=lambda n: (n != "main", n)):
        last = last_of.get(name)
        slot = next(({"slot": k, "pid": h.get("pid"), "what": h.get("what"),
                      "since": h.get("since"), "orphaned": orphaned(h, folder / str(k)) is not None}
                     for k, h in sorted(slots.items()) if h.get("worker") == name), None)
        out.append({
            "worker": name,
            "claims": [{"number": numbers.get(c.key), "key": c.key, "text": c.text,
                        **c.to_json(cfg.claim_seconds)}
                       for c in claims.values() if c.worker == name],
            "last_run": None if last is None else {
                "run": last.number, "status": last.status, "metric": json_metric(last.metric),
                "timestamp": last.data.get("timestamp")},
            "slot": slot})
    return out


def _noise(session: Session, incumbent: tuple[Run | None, bool] | None = None
           ) -> dict[str, Any] | None:
    """The noise level of the metric under the sequential rule: how many samples the
    incumbent's pool holds, their relative spread (median absolute deviation over the median's
    magnitude; None without two samples or with a median of 0), its drift (its recent third
    against the older samples) and its trend (Mann-Kendall, at the level that makes a run
    measure the incumbent beside the candidate from the start), each with the way the
    machine seems to have gone (``faster``, ``slower``), or None. ``incumbent``:
    :func:`measure.worktree.incumbent_run`'s answer, when the caller has it."""
    from ..decide import rules as decision
    from ..ledger.stats import mad, median
    from ..measure.worktree import incumbent_samples

    if session.read_only or session.config.rule != "sequential":
        return None
    found = incumbent_samples(session, incumbent)
    pool = decision.incumbent(found, session.config.direction) if found else decision.Pool(())
    samples = list(pool.samples)
    centre = median(samples) if samples else None
    spread = (mad(samples) / abs(centre) if len(samples) > 1 and centre else None)
    moved = pool.drift
    direction = session.config.direction
    trend = decision.trend(decision.window(found)) if found else None
    moving = trend is not None and trend.p <= decision.TREND_ALPHA
    return {"incumbent_samples": len(samples), "relative_spread": spread,
            "incumbent_pairs": session.config.pairs_at_most,
            "drift": None if moved is None else {
                "relative": moved.relative, "against": moved.against,
                "machine": "slower" if moved.against else "faster"},
            "trend": None if not moving or trend is None else {
                "relative": trend.relative, "p": trend.p,
                "machine": "slower" if (trend.s > 0) == (direction == "lower") else "faster"}}


def opening_warnings(session: Session) -> list[str]:
    """What a reading command (log, show, analyze, summary, dashboard) warns of on opening:
    the session's warnings (an edited configuration, say), the ledger's records read otherwise
    than they say (:meth:`Ledger.notices`), a start that was interrupted (its baseline
    problem names resume), and lines the ledger lost that the state ref holds."""
    warnings = list(session.warnings) + session.ledger.notices(session.layout.ledger)
    if not session.read_only and session.layout.start_intent.exists():
        problem = session.baseline_problem()
        if problem:
            warnings.append(problem)
    if not session.read_only:
        warnings += _lost_lines(session)
    return warnings


def _session_problems(session: Session, branch: str) -> list[str]:
    """The branch against the ledger (trailers that disagree with it), the branch itself, the
    baseline, the ledger lines that cannot be read, and those it lost that the state ref
    holds."""
    from ..history.trailers import reconcile
    from ..session.branches import branch_problem

    problems: list[str] = []
    if not session.read_only:
        exists, problem = branch_problem(session)
        if exists:
            from ..history.trailers import rewritten, trailer_log

            base = (session.ledger.segments[0].header or {}).get("base_commit")
            log = trailer_log(session.repo, branch, base)
            problems += reconcile(session.repo, session.ledger, branch, base, log).problems
            problems += [moved.problem(branch, session.config.session_id) for moved in
                         rewritten(session.repo, session.ledger, branch,
                                   session.config.session_id, base, log)
                         if moved.of_run is None]
        problems += [problem] if problem else []
        baseline = session.baseline_problem() or session.baseline_doubt()
        problems += [baseline] if baseline else []
    else:
        problems += _kept_off_branches(session)
    repair = ("git autoresearch resume sets it aside" if not session.read_only
              else "it is left out")
    problems.extend(f"ledger line {m.line} is not readable ({m.reason}); {repair}"
                    for m in session.ledger.malformed)
    problems += session.ledger.notices(session.layout.ledger)
    if not session.read_only:
        from ..measure.slots import left_slots

        problems += [text for text, _ in left_slots(session.repo, session.config.session_id)]
        problems += _lost_lines(session)
        problems += [f"git's lock file {lock} exists: a git process is at work here, or one was "
                     "killed and left it; recording commands wait a moment for it, then "
                     f"refuse: once no git process is running, remove it (rm {lock})"
                     for lock in session.git_locks()]
        linked = session.layout.linked()
        problems += [linked.removesuffix("; nothing was changed")] if linked else []
    return problems


def _lost_lines(session: Session) -> list[str]:
    """That the ledger lost lines the state ref holds (``history.state_ref.lost_lines``), which
    every recording command then warns of, or nothing."""
    from ..history.state_ref import lost_lines

    lost = lost_lines(session.repo, session.layout.ledger, session.config.session_id)
    return [lost] if lost else []


def _kept_off_branches(session: Session) -> list[str]:
    """For a session another tool recorded (read in place): each kept run whose recorded commit
    exists and is on no branch (history rewritten after the session: a rebase, an amend, a
    squash merge). A commit this repository does not have at all is not named: a ledger
    brought from another clone names such commits."""
    kept = {r.number: str(r.data.get("commit") or "") for r in session.ledger.runs
            if r.status == "keep"}
    gone = session.repo.off_branches([c for c in kept.values() if c])
    return [f"run {number} is recorded as kept at {commit}, which is on no branch (history "
            "rewritten after the session: a rebase, an amend or a squash merge?)"
            for number, commit in kept.items() if gone.get(commit)]


def _pending(session: Session, changes: Changes) -> Pending | None:
    """The measurement waiting in the scratch folder, if any, with the loop's decision
    (``changes``: the work tree, surveyed once for status)."""
    from ..ledger import json_metric
    from ..measure import worktree as pending_mod

    measured = pending_mod.read(session)
    if measured is None:
        return None
    return Pending(
        metric=json_metric(measured.metric),
        status=session.decide(measured), decision=measured.decision,
        changed_since=pending_mod.changed_since(session, measured, changes))


@dataclass(frozen=True)
class Resumed:
    """Where the loop stands after ``resume``: the ``actions`` it took (sentences), the current
    ``segment`` (:func:`review.report.segment_summary`), the ``next_run`` number, STOP and the
    limit, the session's ``warnings``, and the after hooks of a run that its recovery finished
    (``finished``, None when there was none)."""

    session_id: str
    actions: list[str]
    segment: dict[str, Any]
    next_run: int
    stop_pending: bool
    limit_reached: bool
    warnings: list[str]
    finished: HookReport | None
    # Seconds of max_duration left in the segment (0: spent; None: no budget).
    time_left: float | None = None
    # The stop rule the segment meets (its key, and why): the next run exits 4.
    stop_rule: str | None = None
    stop_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``resume --json`` document: its ``warnings`` include the finished hooks' own,
        and ``steer`` is their steer (None when there is none)."""
        finished = self.finished
        return {
            "session_id": self.session_id, "actions": self.actions, "segment": self.segment,
            "next_run": self.next_run, "stop_pending": self.stop_pending,
            "limit_reached": self.limit_reached,
            "time_left_seconds": None if self.time_left is None else round(self.time_left, 3),
            "stop_rule": self.stop_rule, "stop_reason": self.stop_reason,
            "warnings": [*self.warnings, *finished.warnings] if finished else self.warnings,
            "steer": (finished.steer or None) if finished else None}


def resumed(picked: Picked) -> Resumed:
    """Where a session just picked up by :func:`lifecycle.resume.resume` stands."""
    session, finished = picked.session, picked.finished
    from ..decide.stopping import rule_met, unrecorded_text
    from .report import segment_summary

    met = rule_met(session) or (None, None)
    unrecorded = unrecorded_text(session, "the next run measures them (or record them with "
                                          "git autoresearch discard or keep)")
    return Resumed(
        session_id=session.config.session_id, actions=picked.actions,
        segment=segment_summary(session.segment), next_run=session.ledger.next_run_number,
        stop_pending=session.layout.stop.exists(), limit_reached=session.limit_reached(),
        warnings=[*session.warnings, *picked.warnings, *([unrecorded] if unrecorded else []),
                  *_lost_lines(session)],
        finished=finished, time_left=session.time_left(), stop_rule=met[0],
        stop_reason=met[1])
