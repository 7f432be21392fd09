"""Measure the work tree as it is, and keep the result pending until a run is recorded.

Before measuring, changes outside the scope and changes to readonly paths (what defines
success) are saved under ``refs/autoresearch/<id>/scope/<run>`` and put back to HEAD, so that
they are never measured; the result lists them apart (``scope_violations``,
``readonly_violations``, ``scope_ref``). The result is kept in ``pending.json`` in the scratch
folder (the :class:`~git_autoresearch.measure.samples.Measurement` fields plus ``config_hash``),
with a fingerprint of the experiment's files, for the ``keep`` or ``discard`` that records it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import ledger as ledger_mod
from ..git import DiskFull, GitError, Repo
from ..history.experiment import Changes, moved_out, revert, revert_targets, scope_violations
from ..history.refs import scope_prefix, session_branch
from ..history.trailers import set_aside_message
from ..ledger import json_number, now_ms
from ..ledger.jsontext import is_whole, numbers
from ..ledger.records import RunRecord
from ..ledger.stats import mad, median
from ..record import intents
from ..runtime import signals
from ..runtime.atomic import WriteFailed, write_atomic
from ..runtime.errors import Refused
from ..session.config import file_hash, sha256_hex
from ..session.session import Session
from .runner import command_environment
from .samples import AGGREGATORS, Measurement, Progress
from .samples import measure as run_measurement

if TYPE_CHECKING:
    from ..decide import rules as decision


def measure(session: Session, progress: Progress | None = None, *, pending: bool = True,
            baseline: bool = False, hooks: Sequence[Mapping[str, Any]] = ()) -> Measurement:
    """Run the experiment (``measure.measure``) on the work tree with what is outside the scope
    or readonly set aside first, and, with ``pending``, keep the result for keep or discard,
    with ``hooks``, the before hooks fired for it (``HookReport.summary``).

    Refuses (exit 3) a segment without a baseline (unless measuring it: ``baseline``), a
    scratch folder or ledger that cannot be written, and a result that cannot be kept (a full
    disk), saying what was set aside."""
    if not baseline:
        session.check_baseline()
    if pending:
        session.preflight()
    number = session.reserve_run() if pending else session.next_run()
    changes = session.changes()
    session.check_merged(changes)
    violations, scope_ref = _set_aside(session, number, changes)
    env = run_environment(session, number, session.layout.run_log)
    # What is left to measure once the set-aside is done: nothing makes the run a noise probe.
    aside = set(violations)
    left = [p for p in changes.changed() if not session.bounds.is_protected(p) and p not in aside]
    rule = Rule.of(session, baseline=baseline, changed=bool(left))
    before = fingerprint(session, changes, only=set(left)) if pending else {}
    from .incumbent import IncumbentTree
    from .slots import measuring  # (the slot's lock): only where a command is measured

    try:
        with measuring(session.repo, session.config, f"run {number}") as slot, \
                IncumbentTree(session, session.head(), env) as beside:
            rule.incumbent = beside.sample
            result = run_measurement(session.config, top=session.repo.top,
                                     log_path=session.layout.run_log, env=env,
                                     progress=progress, samples_at_most=rule.samples,
                                     enough=rule.enough)
            if result.metric is not None:
                rule.measure_head(len(result.samples), AGGREGATORS[session.config.aggregate])
            rule.notes += beside.notes
    except OSError as exc:  # the run log or the slot: a full or read-only disk
        raise _not_measured(f"cannot write {exc.filename or session.layout.run_log}: "
                            f"{exc.strerror or exc.__class__.__name__}", scope_ref) from None
    bounds = session.bounds
    far = rule.fresh_far_from_pool(result.samples)
    result = dataclasses.replace(
        result, head=session.head(), scope_ref=scope_ref, decision=rule.verdict(result),
        slot=slot.record(), warnings=rule.notes + ([far] if far else []),
        hooks=[dict(h) for h in hooks],
        readonly_violations=[p for p in violations if bounds.is_readonly(p)],
        scope_violations=[p for p in violations if not bounds.is_readonly(p)])
    if pending:
        result = _keep_pending(session, result, changes)
        result.warnings.extend(_edited_while_measured(before, result))
    return result


def _outputs_set_apart(session: Session, before: Changes, after: Changes) -> None:
    """The untracked files the measurement created (its benchmark's or checks' output: a
    build, Python's ``__pycache__``, a results file), counted from now on as untracked before
    the experiment: added to its snapshot, and moved so in ``after`` (the work tree surveyed
    after measuring). So, like the files that were there before it, a keep never commits
    them, a discard never removes them, and they are never set aside as outside the scope:
    they are what measuring made, not the experiment. A snapshot that cannot be read (every
    untracked file the user's already) or written (a full disk: they stay the experiment's,
    as before) is left as it is."""
    from ..history.experiment import load_snapshot, save_snapshot

    began = set(before.created)
    made = [path for path in after.created if path not in began]
    # (the untracked files this command writes its output to: left alone by the commands
    # after it too, a keep of this measurement among them)
    outputs = [path for path in after.outputs if path in after.preexisting]
    if not made and not outputs:
        return
    snap = load_snapshot(session.layout.untracked)
    if snap is None:
        return
    snap.untracked.update([*made, *outputs])
    try:
        save_snapshot(session.layout.untracked, snap)
    except WriteFailed:
        return
    after.created = [path for path in after.created if path in began]
    after.preexisting.extend(made)


def _edited_while_measured(before: dict[str, str], result: Measurement) -> list[str]:
    """A warning when a file changed while the run was measured (``before``: the
    fingerprints of the files the experiment had changed then, every other one being HEAD's;
    ``result``: the measurement, with the fingerprint of the work tree after it): one the
    experiment had changed, changed again, or a tracked one changed for the first time (an
    agent's edit before the run ended, or a benchmark that rewrites a committed file). What a
    keep commits is then not all what was measured. A file the commands created is no such
    change (a build's output)."""
    after = result.fingerprint or {}
    moved = sorted(path for path in {*before, *after} if after.get(path) != before.get(path))
    if not moved:
        return []
    shown = ", ".join(moved[:5]) + (" ..." if len(moved) > 5 else "")
    rewritten = "; a file the commands rewrite belongs outside git, in .gitignore" \
        if any(path not in before for path in moved) else ""
    return [f"{shown} changed while the run was measured: what is recorded is the work tree "
            "as it is now, not all of which was measured (leave the work tree alone until a "
            f"run ends{rewritten})"]


def run_environment(session: Session, run: int, log: Path) -> dict[str, str]:
    """The environment of the user's commands measuring run ``run`` of ``session``, its output
    going to ``log``: ours (:func:`measure.runner.command_environment`) with
    ``AUTORESEARCH_SESSION``, ``AUTORESEARCH_RUN`` and ``AUTORESEARCH_RUN_LOG``."""
    return command_environment({"AUTORESEARCH_SESSION": session.config.session_id,
                                "AUTORESEARCH_RUN": str(run), "AUTORESEARCH_RUN_LOG": str(log)})


# How far (relative) the incumbent measured now must be from its earlier samples' median for
# a run to warn that it may not measure its worktree's code (:meth:`Rule.fresh_far_from_pool`).
FAR_FROM_POOL = 0.5


@dataclass
class Rule:
    """How many samples a measurement takes and when it stops: the configuration's
    ``runs_per_experiment`` under the strict rule; under the sequential rule, one at a time
    against the incumbent (``baseline_samples`` for a baseline, or when there is no incumbent
    yet; one for a noise probe: a work tree with no change): a ``comparison``
    (:class:`decide.rules.Comparison`) that asks for samples of the candidate and, beside them, of
    the incumbent, which ``incumbent`` takes (a value, or why there is none: then the pool
    alone decides, and ``notes`` says so)."""

    name: str
    direction: str
    pool: tuple[float, ...] = ()
    samples: int | None = None
    min_effect: float = 0.0
    probe: bool = False
    comparison: decision.Comparison | None = None
    incumbent: Callable[[], float | str] | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    # strict, HEAD no kept run's commit: HEAD is measured beside the candidate, and the
    # better of the best kept number and HEAD's is the bar (:meth:`measure_head`)
    beside: bool = False
    head_samples: tuple[float, ...] = ()
    # sequential, HEAD no kept run's commit: the pool measured other code than HEAD
    other_code: bool = False
    # How many of the pool's first samples are a number given by hand (keep --metric), not
    # measured: the incumbent's own, when it was kept so.
    given: int = 0

    @classmethod
    def of(cls, session: Session, *, baseline: bool = False, changed: bool = True) -> Rule:
        """The rule of the next measurement of ``session``; ``changed``: whether the work tree
        holds a change to measure (without one, the run is a noise probe)."""
        cfg = session.config
        if cfg.rule != "sequential":
            best = None if baseline else session.segment.best
            bar = () if best is None or best.metric is None else (best.metric,)
            # A work tree with no change measures the incumbent: never kept, even when its
            # aggregate beats the best (noise), which would raise the bar for every run after.
            other = None if baseline or not bar else unkept_head_note(session)
            return cls("strict", cfg.direction, bar, min_effect=cfg.min_effect or 0.0,
                       probe=bool(bar) and not changed, notes=[other] if other else [],
                       beside=other is not None and changed)
        incumbent = incumbent_run(session)
        if baseline or not (pool := incumbent_samples(session, incumbent)):
            return cls("sequential", cfg.direction, samples=cfg.samples_of_baseline)
        other = unkept_head_note(session, incumbent)
        from ..decide import rules as decision

        if not changed:
            window = decision.incumbent(pool, cfg.direction).samples
            return cls("sequential", cfg.direction, window, 1, cfg.min_effect or 0.0, True,
                       notes=[other] if other else [])
        comparison = decision.Comparison(pool, direction=cfg.direction,
                                         min_effect=cfg.min_effect or 0.0,
                                         max_samples=cfg.samples_at_most,
                                         pairs=cfg.pairs_at_most, stale=other is not None)
        notes = [moving_note(comparison.trend, cfg.direction, len(comparison.pool))] \
            if comparison.moving and comparison.trend is not None else []
        notes += [other] if other else []
        # The comparison decides before this many samples of the candidate (its first stage,
        # then one each pair at most).
        most = cfg.samples_at_most + cfg.pairs_at_most + 1
        last = incumbent[0]
        # (a keep by hand records the number given as its one sample, and no duration; the
        # comparison's pool is the full pool's most recent part, the incumbent's own first)
        given = len(last.data.get("samples") or []) \
            if last is not None and last.data.get("duration_s") is None else 0
        given = max(0, given - (len(pool) - len(comparison.pool)))
        return cls("sequential", cfg.direction, tuple(comparison.pool), most,
                   cfg.min_effect or 0.0, False, comparison, notes=notes,
                   other_code=other is not None, given=given)

    def enough(self, samples: list[float]) -> bool:
        """Whether the samples so far decide (always False without a pool: take them all);
        the incumbent's samples the comparison asks for are taken here, between two of the
        candidate's."""
        if self.comparison is None:  # strict, a baseline or a probe: take them all
            return False
        from ..decide import rules as decision

        self.comparison.add("candidate", samples[-1])
        while (step := self.comparison.next()) == "incumbent":
            got = self.incumbent() if self.incumbent is not None else \
                "no worktree of the incumbent was offered"
            if isinstance(got, str):
                self.notes.append(f"{got}: this run was decided on the incumbent's earlier "
                                  "samples alone, " + (
                                      "which measured other code than HEAD (the last kept "
                                      "run's): its verdict may mislead" if self.other_code
                                      else "which a machine whose load moves makes "
                                      "unreliable"))
                self.comparison.pool_only()
            else:
                self.comparison.add("incumbent", got)
        return isinstance(step, decision.Decision)

    def measure_head(self, samples: int, aggregate: Callable[[list[float]], float]) -> None:
        """Under strict with :attr:`beside`: take ``samples`` samples of HEAD (the incumbent),
        and make the bar their ``aggregate`` when it beats the best kept number (a commit made
        by hand that did better), so that no change worse than HEAD is kept."""
        if not self.beside or self.incumbent is None:
            return
        taken = []
        for _ in range(max(samples, 1)):
            got = self.incumbent()
            if isinstance(got, str):
                self.notes.append(f"{got}: this run was judged against the best kept number "
                                  "alone, which HEAD may beat")
                return
            taken.append(got)
        self.head_samples = tuple(taken)
        head = float(aggregate(taken))
        best = self.pool[0]
        if (head < best) if self.direction == "lower" else (head > best):
            self.pool = (head,)

    def fresh_far_from_pool(self, samples: Sequence[float]) -> str | None:
        """A warning when the incumbent measured beside the run is far from its earlier
        samples (:data:`FAR_FROM_POOL` and five times their spread) and nearer the run's
        ``samples``: the machine's speed moved that much, or the benchmark runs the work
        tree's code wherever it is started (an editable install, an absolute path), and the
        incumbent's worktree measured the candidate's code; None otherwise. A number given by
        hand (:attr:`given`) is no earlier sample here: only measured ones are."""
        fresh = self.comparison.fresh if self.comparison is not None else []
        measured = list(self.pool[self.given:])
        if not fresh or not samples or not measured:
            return None
        was, now, run = median(measured), median(fresh), median(list(samples))
        spread = 1.4826 * mad(measured)
        if not was or abs(now - was) < max(FAR_FROM_POOL * abs(was), 5 * spread) \
                or abs(now - run) >= abs(now - was):
            return None
        return (f"the incumbent measured now ({now:.6g}) is far from its "
                f"{len(measured)} earlier samples ({was:.6g}) and near this run's "
                f"({run:.6g}): either the machine's speed moved that much, or the "
                "benchmark does not measure the code of its worktree: does the benchmark run "
                "the code of the folder it is started in? An editable install (pip install "
                "-e) or an absolute path makes it run the work tree's code in the "
                "incumbent's worktree too (import from the folder it runs in)")

    def verdict(self, result: Measurement) -> dict[str, Any] | None:
        """The ``decision`` object of the run record of ``result`` (None without a metric).
        Under strict, the pool is the best kept metric and the candidate is ``result``'s
        aggregate."""
        from ..decide import rules as decision

        samples = result.samples
        if result.metric is None or not samples:
            return None
        if not self.pool:
            return {"rule": self.name, "verdict": "baseline", "candidate_samples": len(samples)}
        if self.name != "sequential" and self.probe:
            return {"rule": self.name, "verdict": "no_change", "candidate_samples": len(samples)}
        if self.name != "sequential":
            out = decision_record(decision.strict(list(self.pool), [result.metric],
                                                  direction=self.direction,
                                                  min_effect=self.min_effect), self.pool)
            if self.head_samples:
                out["incumbent_fresh"] = [json_number(v) for v in self.head_samples]
            return out
        if self.probe:
            return {"rule": "sequential", "verdict": "no_change",
                    "incumbent_samples": len(self.pool), "candidate_samples": len(samples),
                    **pool_record(self.pool)}
        found = self.comparison.result if self.comparison is not None else None
        if found is None:  # (samples that ran out before a verdict: the last look)
            found = decision.sequential(list(self.pool), samples, direction=self.direction,
                                        min_effect=self.min_effect,
                                        max_samples=max(self.samples or 1, len(samples)))
        out = decision_record(found, self.pool)
        out["evidence"] = found.evidence
        out["stopped_early"] = found.stopped_early
        if self.comparison is not None:
            if self.comparison.fresh:
                out["incumbent_fresh"] = [json_number(v) for v in self.comparison.fresh]
            moved = self.comparison.trend
            if self.comparison.moving and moved is not None:
                out["trend"] = {"relative": tidy(moved.relative), "p": tidy(moved.p),
                                "samples": len(decision.window(list(self.pool)))}
        return out


def given_verdict(session: Session, result: Measurement) -> dict[str, Any] | None:
    """The ``decision`` object of a metric the caller gave (``keep --metric``), which no rule
    judged when measuring: one number is judged as the strict rule judges it, against the best
    kept so far of ``session``'s segment, by ``min_effect``, under either rule (the sequential
    rule tests samples the tool took itself): the verdict :meth:`Session.beats_best` gives;
    ``baseline`` when nothing is kept yet. None without a metric or samples."""
    cfg = session.config
    best = session.segment.best
    bar = () if best is None or best.metric is None else (best.metric,)
    return Rule("strict", cfg.direction, bar, min_effect=cfg.min_effect or 0.0).verdict(result)


def moving_note(moved: decision.Trend, direction: str, count: int) -> str:
    """A warning that the incumbent's recent samples trend (the machine's load moves), either
    way, and what the run did about it."""
    worse = (moved.s > 0) == (direction == "lower")
    # Sen's slope is 0 when most pairs tie (a metric that moves in steps): the test still
    # finds the trend, and the amount, 0.0%, would say nothing (and its sign could be wrong).
    shown = moved.relative is not None and round(abs(moved.relative), 3) > 0
    how = f" ({moved.relative:+.1%} over its last {count} samples)" if shown \
        else f" (over its last {count} samples)"
    cause = "slower" if worse else "faster"
    return (f"the incumbent's samples have been getting {'worse' if worse else 'better'}{how}: "
            f"the machine got {cause}? Its earlier samples are not compared; this run is "
            "decided on samples of both taken side by side")


def decision_record(found: decision.Decision, pool: tuple[float, ...]) -> dict[str, Any]:
    """A :class:`decide.rules.Decision` as the run record's ``decision`` object: ``rule``,
    ``verdict`` (``inconclusive`` for a ``continue`` the samples ran out on), the ``effect``
    (candidate minus incumbent, in the metric's unit, with its interval and the interval's
    ``confidence_level``, and relative), the samples of each side, and the incumbent's ``pool``
    (:func:`pool_record`): the noise band a reviewer sees."""
    eff = found.effect
    return {"rule": found.rule,
            "verdict": "inconclusive" if found.verdict == "continue" else found.verdict,
            "effect": tidy(eff.value), "effect_low": tidy(eff.low),
            "effect_high": tidy(eff.high), "relative": tidy(eff.relative),
            "relative_low": tidy(eff.relative_low), "relative_high": tidy(eff.relative_high),
            "confidence_level": tidy(eff.confidence), "incumbent_samples": found.incumbent_samples,
            "candidate_samples": found.candidate_samples, **pool_record(pool)}


def tidy(value: float | None) -> float | int | None:
    """A computed figure as the ledger keeps it: 12 significant digits, so that the float
    error of a subtraction (``-132.15499999999997``) is not shown; a whole number as an
    integer (:func:`ledger.json_number`)."""
    return None if value is None else json_number(float(f"{value:.12g}"))


def pool_record(pool: tuple[float, ...]) -> dict[str, Any]:
    """The incumbent's pool in a run's ``decision`` object: ``pool_median`` and ``pool_spread``
    (1.4826 times the median absolute deviation: the standard deviation of Gaussian noise,
    estimated robustly), in the metric's unit."""
    return {"pool_median": tidy(median(pool)), "pool_spread": tidy(1.4826 * mad(list(pool)))}


def incumbent_run(session: Session) -> tuple[ledger_mod.Run | None, bool]:
    """The segment's kept run whose commit is HEAD (the incumbent measured against), else its
    last kept run (in a clone that joined through a remote, the runs of the others come in
    their order), and whether HEAD is its commit; (None, False) when the segment kept
    nothing. A work tree off the session branch (a reading command run from ``main``) reads
    the session branch's tip as HEAD: the commit it is on may be an earlier kept run's (the
    baseline's)."""
    kept = [r for r in session.segment.runs if r.status == "keep"]
    if not kept:
        return None, False
    try:
        head = session.head()  # (asked of git once per command)
    except Refused:  # a clone whose HEAD is unborn
        head = ""
    sid = session.config.session_id
    branch = session_branch(sid)
    own = session.branch if session.worker is not None else None
    if session.repo.branch_at_discovery not in (branch, own):
        head = session.repo.resolve(f"refs/heads/{branch}") or head
    here = [r for r in kept if r.made(head)]
    return (here[-1], True) if here else (kept[-1], False)


def unkept_head_note(session: Session,
                     incumbent: tuple[ledger_mod.Run | None, bool] | None = None
                     ) -> str | None:
    """Why the incumbent's samples may not describe HEAD: HEAD is the commit of no kept run of
    the segment (a commit made by hand, or the branch moved), so they are the last kept run's,
    which measured other code. None when HEAD is a kept run's commit, holds the same code as
    the last one's (a keep reworded by hand: its tree), or nothing was kept. ``incumbent``:
    :func:`incumbent_run`'s answer, when the caller has it."""
    run, at_head = incumbent or incumbent_run(session)
    if run is None or at_head:
        return None
    try:
        head = session.head()
    except Refused:  # a clone whose HEAD is unborn: nothing measured there yet
        return None
    repo = session.repo
    kept = str(run.data.get("commit") or "")
    try:
        head_tree = repo.head_tree_at_discovery if head == repo.head_at_discovery \
            else repo.tree_of(head)
        if kept and head_tree == repo.tree_of(kept):
            return None
    except GitError:  # (a commit no longer here: other code)
        pass
    cfg = session.config
    then = ("a decision against them may mislead" if cfg.rule == "sequential"
            and cfg.pairs_at_most == 0 else "each run measures HEAD beside it until a keep")
    return (f"HEAD ({session.repo.short(head)}) is the commit of no kept run (a "
            f"commit made by hand, or the branch moved): the incumbent's samples are run "
            f"{run.number}'s ({run.data.get('commit')}), which measured other code, so {then}; "
            "git autoresearch start --new-segment measures HEAD as a new baseline")


def incumbent_samples(session: Session,
                      incumbent: tuple[ledger_mod.Run | None, bool] | None = None
                      ) -> list[float]:
    """The incumbent's samples, oldest first: those of the segment's kept run whose commit is
    HEAD (else its last kept run), of noise probes after it (runs with no change) on its
    commit, and of its re-measures (``incumbent`` lines of the ledger after a revert). Empty
    when the segment has kept nothing. ``incumbent``: :func:`incumbent_run`'s answer, when the
    caller has it."""
    seg = session.segment
    last, _ = incumbent or incumbent_run(session)
    if last is None:
        return []
    found: list[tuple[float, list[Any]]] = [(last.number, list(last.data.get("samples") or []))]
    for run in seg.runs:
        # (a probe on a commit made by hand measured other code)
        if run.number > last.number and run.data.get("commit") == last.data.get("commit") \
                and (run.data.get("decision") or {}).get("verdict") == "no_change":
            found.append((run.number, list(run.data.get("samples") or [])))
    for event in session.ledger.events:
        if event.get("type") == "incumbent" and event.get("segment") == seg.index \
                and event.get("commit") == last.data.get("commit") \
                and isinstance(event.get("after_run"), int) and event["after_run"] > last.number:
            found.append((event["after_run"] + 0.5, list(event.get("samples") or [])))
    return [float(x) for _, xs in sorted(found, key=lambda item: item[0]) for x in xs
            if isinstance(x, (int, float)) and not isinstance(x, bool)]


def _set_aside(session: Session, number: int, changes: Changes) -> tuple[list[str], str | None]:
    """Save the changes outside the scope or to readonly paths at a free ``scope/<number>``
    ref and put them back to HEAD, journaled (a SIGKILL half-way is finished by the next
    command, as an interrupted revert is). Returns the paths and the ref (None: nothing)."""
    bounds = session.bounds
    violations = scope_violations(bounds, changes)
    if not violations:
        return [], None
    violations = sorted({*violations, *moved_out(session.repo, bounds, changes, violations)})
    scope_ref = free_ref(session.repo, f"{scope_prefix(session.config.session_id)}{number}")
    token = os.urandom(8).hex()
    created, tracked = revert_targets(bounds, changes, violations)
    aside = intents.Intent("set-aside", number, id=token, head=session.head(), ref=scope_ref,
                           created=created, tracked=tracked,
                           staged_preexisting=changes.staged_preexisting)
    path = session.layout.intent
    with signals.deferred():  # saved and reverted whole, or not at all
        intents.write(path, aside)
        try:
            revert(session.repo, bounds, changes, head=session.head(), ref=scope_ref,
                   only=violations, stage="set-aside",
                   message=set_aside_message(number, token, kept=False))
        except GitError as exc:
            raise intents.git_failure(session.repo, path, session.git_locks(), aside,
                                      exc) from None
        except Refused:
            intents.clear(path)
            raise
        intents.clear(path)
    return violations, scope_ref


def _keep_pending(session: Session, result: Measurement, before: Changes) -> Measurement:
    """``result`` with the fingerprint of the work tree, written to ``pending.json``; what the
    measurement created in it (since ``before``, the survey it began with) set apart
    (:func:`_outputs_set_apart`)."""
    try:
        after = session.changes()
        _outputs_set_apart(session, before, after)
        # A commit made meanwhile holds what was measured: once taken back (git reset
        # --soft), the work tree is the measured one again, and its paths are the change's.
        committed = set(session.repo.changed_paths(result.head, after.head)) \
            if result.head and after.head and after.head != result.head else set()
        result = dataclasses.replace(result, fingerprint=fingerprint(session, after,
                                                                     also=committed),
                                     warnings=[*result.warnings, *_head_moved(session, result,
                                                                             after)])
        session.repo.scratch.mkdir(parents=True, exist_ok=True)
        data = result.to_dict()
        data["config_hash"] = file_hash(session.config_bytes)
        write_atomic(session.layout.pending, json.dumps(data, allow_nan=False).encode())
    except (WriteFailed, DiskFull) as exc:  # a benchmark that filled the disk, say
        raise _not_measured(exc.message, result.scope_ref) from None
    return result


def _head_moved(session: Session, result: Measurement, after: Changes) -> list[str]:
    """A warning when HEAD moved while ``result`` was measured (``after``: the survey that
    ended it): keep and discard use it only on the commit it was measured on, and how to get
    back there."""
    if not (result.head and after.head) or after.head == result.head:
        return []
    was, now = result.head[:7], after.head[:7]
    way = (f"git switch --merge {session.branch} goes back" if after.branch != session.branch
           else f"git reset --soft {was} takes back what was committed meanwhile")
    return [f"HEAD moved from {was} to {now} while this measured (by hand?): keep and discard "
            f"use the measurement only once HEAD is at {was} again ({way})"]


def _not_measured(problem: str, scope_ref: str | None) -> Refused:
    """The refusal of a measurement whose result could not be written: ``problem``, then the
    state (nothing recorded, the experiment intact, what was set aside) and the way out."""
    aside = (f", and the changes outside the scope or to readonly files are saved at "
             f"{scope_ref}" if scope_ref else "")
    return Refused(f"{problem}; nothing was recorded, and the experiment is intact in the "
                   f"work tree{aside}: measure again once there is room")


def free_ref(repo: Repo, base: str) -> str:
    """``base``, or ``base.2``, ``base.3``, ...: the first that does not exist."""
    ref, n = base, 1
    while repo.resolve(ref):
        n += 1
        ref = f"{base}.{n}"
    return ref


def read(session: Session) -> Measurement | None:
    """The measurement taken since the last recorded run, if it is still valid (same
    configuration, same HEAD)."""
    data = _pending_data(session)
    if data is None or _dropped_why(session, data) is not None:
        return None
    return Measurement.from_dict(data)


def dropped(session: Session) -> str | None:
    """Why the measurement ``pending.json`` holds is no longer pending (:func:`read` gives
    None for it): HEAD moved since it was taken, or the configuration changed; None when
    there is none, or it is pending."""
    data = _pending_data(session)
    return None if data is None else _dropped_why(session, data)


def _pending_data(session: Session) -> dict[str, Any] | None:
    """What ``pending.json`` holds, or None: none, or one that cannot be read."""
    try:
        data = json.loads(session.layout.pending.read_text())
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _dropped_why(session: Session, data: dict[str, Any]) -> str | None:
    """Why the pending measurement ``data`` no longer counts: the configuration changed, or
    HEAD moved, since it was taken; None when it still counts."""
    if data.get("config_hash") != file_hash(session.config_bytes):
        return "the measurement taken was dropped: the configuration changed since"
    head, now = data.get("head"), session.head()
    if head != now:
        taken = f" on {head[:7]}" if isinstance(head, str) else ""
        back = f"; git reset --soft {head[:7]} takes back what was committed since, where it " \
            "counts again" if isinstance(head, str) and now is not None \
            and session.repo.is_ancestor(head, now) else ""
        return (f"the measurement taken{taken} was dropped: HEAD moved since (to "
                f"{session.repo.short(now)}{back})")
    return None


def fingerprint(session: Session, changes: Changes, *, only: set[str] | None = None,
                also: Collection[str] = ()) -> dict[str, str]:
    """What the experiment's changes are now (``only``: those of these paths; ``also``: these
    paths too, changed or not): path -> ``<mode in octal>:<sha256>``, ``commit:<id>`` for a
    submodule, ``deleted`` or ``unreadable``; a path renamed in case only
    (``Changes.case_renames``) is read under its name on disk, which the value ends with."""
    out = {}
    repo = session.repo
    for rel in sorted({*changes.changed(), *also}) if also else changes.changed():
        if session.bounds.is_protected(rel) or only is not None and rel not in only:
            continue
        if rel in changes.case_renames:
            new = changes.case_renames[rel]
            out[rel] = f"{_fingerprint_of(repo.top / new)}:{new}"
            continue
        path = repo.top / rel
        if path.is_dir() and not path.is_symlink():  # a submodule: its commit
            out[rel] = f"commit:{repo.submodule_head(rel)}"
            continue
        out[rel] = _fingerprint_of(path)
    return out


def _fingerprint_of(path: Path) -> str:
    """A file's or symlink's ``<mode in octal>:<sha256>``, ``deleted`` or ``unreadable``."""
    try:
        st = path.lstat()
        data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
        return f"{st.st_mode:o}:{sha256_hex(data)}"
    except FileNotFoundError:
        return "deleted"
    except OSError:
        return "unreadable"


def changed_since(session: Session, result: Measurement, changes: Changes | None = None
                  ) -> list[str]:
    """The paths whose content or mode differ from when ``result`` was measured (none when it
    has no fingerprint), sorted; ``changes`` saves surveying the work tree again."""
    if result.fingerprint is None:
        return []
    now = fingerprint(session, session.changes() if changes is None else changes)
    return sorted(p for p in set(now) | set(result.fingerprint)
                  if now.get(p) != result.fingerprint.get(p))


def set_asides(session: Session, number: int) -> list[tuple[str, list[str]]]:
    """What the measurements of run ``number`` set aside: each ref ``scope/<number>``,
    ``scope/<number>.2``, ... that exists (the measurement kept, those taken again, a
    set-aside that failed or was killed), in that order, with the paths it changed from the
    commit it was taken on."""
    repo = session.repo
    prefix = scope_prefix(session.config.session_id)
    found = []
    # (only this work tree writes the set-asides of a number it holds: no other listing)
    for ref in repo.for_each_ref(prefix, within=session.namespace + "/", own=True):
        head, _, rest = ref[len(prefix):].partition(".")
        if head == str(number) and (not rest or is_whole(rest)):
            found.append((int(rest or 1), ref))
    out = []
    for _, ref in sorted(found):
        parent = repo.resolve(f"{ref}^")
        out.append((ref, repo.changed_paths(parent, ref) if parent else []))
    return out


def remeasure_incumbent(session: Session, after: RunRecord) -> list[str]:
    """After run ``after`` was reverted, the work tree is the incumbent again: take one more
    sample of it (as many as bring its pool up to ``baseline_samples`` when it holds fewer),
    with no checks and ``AUTORESEARCH_INCUMBENT=1`` in the command's environment, and append
    it to the ledger as an ``incumbent`` line, which the pool (:func:`incumbent_samples`)
    reads; this tracks drift of the machine for the cost of one run. Only under the sequential
    rule with ``remeasure_incumbent`` (the default), for a discard or checks_failed in a
    segment that has kept a run; ``run`` takes it (``discard`` by hand does not: it runs none
    of the user's commands). The incumbent's samples measured beside the candidate, when run
    ``after`` took some, are appended instead, without measuring again (whatever
    ``remeasure_incumbent`` says: they cost nothing more). Returns warnings: a failed sample
    is not recorded, and an incumbent that drifted (either way) is named."""
    beside = numbers((after.get("decision") or {}).get("incumbent_fresh"))
    if not (session.config.remeasures or beside) \
            or after["status"] not in ("discard", "checks_failed"):
        return []
    pool = incumbent_samples(session)
    if not pool:
        return []
    # A pool smaller than the baseline's (after a keep by hand, or a keep decided early) is
    # topped up to baseline_samples: one or two samples cannot prove any gain against them;
    # unless the keep was decided as a metric with no spread (an exact comparison: its effect
    # is a point), whose one sample is as good as many.
    kept = [run for run in session.segment.runs if run.status == "keep"]
    found = kept[-1].data.get("decision") if kept else None
    exact = isinstance(found, dict) and found.get("effect_low") is not None \
        and found.get("effect_low") == found.get("effect_high")
    count = 1 if exact else max(1, session.config.samples_of_baseline - len(pool) - len(beside))
    from ..decide import rules as decision
    from .slots import measuring

    if beside and (len(pool) + len(beside) >= session.config.samples_of_baseline
                   or not session.config.remeasures):
        taken = beside  # measured beside the candidate: the freshest samples there are
    else:
        env = {**run_environment(session, after["run"], session.layout.run_log),
               "AUTORESEARCH_INCUMBENT": "1"}
        with measuring(session.repo, session.config, f"incumbent after run {after['run']}"):
            result = run_measurement(session.config, top=session.repo.top,
                                     log_path=session.layout.run_log, env=env,
                                     samples_at_most=count, checks=False)
        if result.metric is None:
            return [f"the incumbent could not be measured again after run {after['run']} "
                    f"({result.reason}); its pool is as it was"]
        taken = [*beside, *result.samples]
    with session.shared("measure the incumbent again"):
        session.append([{
            "type": "incumbent", "segment": session.segment.index,
            "commit": session.repo.short(session.head()), "after_run": after["run"],
            "samples": [json_number(s) for s in taken], "timestamp": now_ms()}])
        warnings = session.mirror_state(f"incumbent measured again after run {after['run']}")
    moved = decision.incumbent(incumbent_samples(session), session.config.direction).drift
    if moved is not None:
        how = f" ({moved.relative:+.1%})" if moved.relative is not None else ""
        worse, cause = ("worse", "slower") if moved.against else ("better", "faster")
        warnings.append(f"the incumbent drifted{how}: its recent samples are {worse} than its "
                        f"older ones (the machine got {cause}?); only the recent ones are "
                        "compared")
    return warnings
