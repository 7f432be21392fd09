"""Audit kept runs: measure each keep's commit against its parent again, interleaved, and say
whether the keep holds up.

Each side is checked out in a linked worktree of its own under the scratch folder
(``<scratch>/audit-<pid>/parent`` and ``.../commit``), so the session's work tree, index and
HEAD are never touched; the measurement command runs there once per sample, parent and commit
taking turns (A B A B ...), so that drift of the machine falls on both sides alike. The
worktrees and their folder are removed afterwards, however the audit ends: done, crashed,
or cut short by a signal. The verdict is the sequential rule's last look
(:func:`decide.rules.sequential` with every sample in hand, at ``decision.AUDIT_ALPHA``: the
one-sided rank-sum test at 5 %, stricter than a keep's 10 %, or the exact comparison for a
metric with no spread), the effect its Hodges-Lehmann shift with its 90 % interval. Each
audit is recorded as one ``{"type": "audit", ...}`` line of the ledger.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..decide import rules as decision
from ..git import worktrees
from ..history.checkouts import bring, link_shared, sweep, untracked_inputs
from ..history.refs import session_branch
from ..history.trailers import read_trailers, recorded_keeps
from ..ledger import Ledger, Run, json_number, now_ms
from ..measure.samples import measure
from ..measure.slots import measuring
from ..measure.worktree import run_environment
from ..runtime import signals
from ..runtime.atomic import WriteFailed
from ..runtime.errors import Refused, UsageError
from ..session.config import Config
from ..session.session import Session

SIDES = ("parent", "commit")  # A, then B, in every round
DEFAULT_SAMPLES = 5
# The rule's verdict at its last look -> the audit's word for it.
VERDICTS = {"better": "confirmed", "worse": "regression", "inconclusive": "within noise"}
# Fewer samples a side than this cannot show a difference at the audit's level unless the
# metric has no spread; such an audit's verdict is TOO_FEW instead of "within noise".
MIN_SAMPLES_TO_TELL = 3
TOO_FEW = "too few samples"
CRASH = "crash"  # a sample gave no metric: the audit stopped there
FOLDER_PREFIX = "audit-"  # <scratch>/audit-<pid>: one audit's worktrees

# (run, side, sample number from 1, value or None for a crash)
Progress = Callable[[int, str, int, "float | None"], None]


@dataclass(frozen=True)
class Target:
    """A kept run to audit: its ``run`` number, its keep ``commit`` and that commit's
    ``parent`` (full object ids)."""

    run: int
    commit: str
    parent: str


@dataclass
class Audit:
    """One kept run measured again: the ``samples`` of each side (``parent``, ``commit``, in
    the order taken), the ``verdict`` (``confirmed``, ``regression``, ``within noise``, ``too
    few samples`` (fewer than 3 a side of a metric with spread), or
    ``crash`` with the ``reason`` and the ``tail`` of the output), the ``effect`` (commit minus
    parent, in the metric's unit and relative to the parent's median, with its interval), and
    the rule's one-sided p-values that the commit is better and worse."""

    target: Target
    samples: dict[str, list[float]]
    verdict: str
    effect: decision.Effect | None = None
    p_better: float | None = None
    p_worse: float | None = None
    reason: str | None = None
    tail: str | None = None
    timestamp: int = 0

    def record(self, direction: str, metric: tuple[str, str] | None = None
               ) -> dict[str, Any]:
        """The ledger line: epoch milliseconds, 7-character commits as run records write them;
        ``metric``, the ``(name, unit)`` of the segment the run was kept in, the effect's
        (``metric_name``, ``metric_unit``). The run is ``audited_run``, not ``run``: like the
        hook and stopped lines, an event carries no ``run`` field, so that no reader of the
        format (pi-autoresearch's among them) can take it for a run record."""
        out: dict[str, Any] = {
            "type": "audit", "timestamp": self.timestamp, "audited_run": self.target.run,
            "commit": self.target.commit[:7], "parent": self.target.parent[:7],
            "direction": direction,
            **({"metric_name": metric[0], "metric_unit": metric[1]} if metric else {}),
            "verdict": self.verdict,
            "samples": {side: [json_number(v) for v in values]
                        for side, values in self.samples.items()},
            **effect_json(self.effect),
            "p_better": self.p_better, "p_worse": self.p_worse,
        }
        if self.reason is not None:
            out["reason"] = self.reason
            out["tail"] = self.tail or ""
        return out


# An effect's fields in a line, by the name of :class:`decide.rules.Effect`'s field: the names of a
# run's decision object (gitautoresearch-decisions(7)), so that one name means one thing.
EFFECT_FIELDS = {"value": "effect", "low": "effect_low", "high": "effect_high",
                 "relative": "relative", "relative_low": "relative_low",
                 "relative_high": "relative_high", "confidence": "confidence_level"}


def effect_json(found: decision.Effect | None) -> dict[str, Any]:
    """An effect as an audit or final line keeps it, in a decision object's names
    (:data:`EFFECT_FIELDS`): ``effect``, ``effect_low``, ``effect_high`` in the metric's unit,
    ``relative`` and its bounds (fractions; None when the parent's median is 0), and the
    interval's ``confidence_level`` (a fraction: 0.95 for a 95% interval); each None when
    nothing was measured (``found`` None)."""
    values = dataclasses.asdict(found) if found is not None else {}
    return {name: None if values.get(k) is None else json_number(round(values[k], 12))
            for k, name in EFFECT_FIELDS.items()}


def targets(session: Session, numbers: list[int]) -> list[Target]:
    """The kept runs to audit: ``numbers`` in the order given, or, when empty, every committed
    keep of the current segment after its baseline. Raises :class:`UsageError` (exit 2) for a
    number that is no run, not a keep, or a keep that made no commit (a baseline among them)."""
    repo = session.repo
    base = (session.ledger.segments[0].header or {}).get("base_commit")
    kept = read_trailers(repo, session_branch(session.config.session_id), base,
                         recorded=recorded_keeps(session.ledger))
    if not numbers:
        segment = session.ledger.current
        chosen = [run for run in segment.kept if run is not segment.baseline
                  and run.number in kept]
    else:
        chosen = [_keep(session.ledger, n, kept) for n in dict.fromkeys(numbers)]
    out = []
    for run in chosen:
        commit = str(kept[run.number]["commit"])
        parent = repo.resolve(f"{commit}^")
        if parent is None:
            raise UsageError(f"run {run.number}'s commit {commit[:7]} has no parent to "
                             "measure it against")
        out.append(Target(run.number, commit, parent))
    return out


def _keep(book: Ledger, number: int, kept: dict[int, dict[str, Any]]) -> Run:
    run = book.find(number)
    if run is None:
        last = book.next_run_number - 1
        raise UsageError(f"no run {number} in the ledger (runs are 1 to {last})" if last
                         else f"no run {number}: the ledger has no runs yet")
    if run.status != "keep":
        raise UsageError(f"run {number} is a {run.status}, not a keep: only kept runs are "
                         "audited")
    if number not in kept:
        segment = book.segments[run.segment]
        what = "the baseline of its segment" if run is segment.baseline \
            else "a keep that committed nothing"
        raise UsageError(f"run {number} is {what}: it has no commit to measure against its "
                         "parent")
    return run


def segment_config(session: Session, index: int) -> Config:
    """The configuration segment ``index`` measured with: the session's for the current
    segment, else the one its header records (the session's when it records none that reads,
    as in a ledger of an older version)."""
    data = (session.ledger.segments[index].header or {}).get("config")
    if index == session.segment.index or not isinstance(data, dict):
        return session.config
    try:
        return Config.from_mapping(data, source=f"segment {index}'s configuration")
    except UsageError:
        return session.config


def run_audit(session: Session, target: Target, samples: int = DEFAULT_SAMPLES,
              progress: Progress | None = None, config: Config | None = None) -> Audit:
    """Measure ``target``'s parent and commit ``samples`` times each, interleaved, in two
    linked worktrees under the scratch folder, removed afterwards whatever happens (a signal's
    :class:`runtime.signals.Interrupted` passes through once they are gone), with ``config``'s
    commands and direction. A sample that gives no
    metric ends the audit as ``crash``. ``config`` is, when None, that of the segment the run
    was kept in (:func:`segment_config`). Raises ValueError for ``samples`` below 1 and
    :class:`GitError` when a worktree cannot be made."""
    if samples < 1:
        raise ValueError(f"an audit needs at least one sample a side, not {samples}")
    repo = session.repo
    sweep(session, FOLDER_PREFIX, SIDES)
    folder = repo.scratch / f"{FOLDER_PREFIX}{os.getpid()}"
    trees = {side: folder / side for side in SIDES}
    commits = {"parent": target.parent, "commit": target.commit}
    values: dict[str, list[float]] = {side: [] for side in SIDES}
    config = config or segment_config(session, segment_of(session, target.run))
    cfg = dataclasses.replace(config, runs_per_experiment=1, checks_command=None)
    log = folder / "run.log"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        inputs = untracked_inputs(session.repo, config)
        for side in SIDES:
            worktrees.add_detached(repo, trees[side], commits[side])
            bring(session, inputs, trees[side])
            link_shared(session, trees[side], config)
        env = run_environment(session, target.run, log)
        # (run 0: finalize's measurement of the final branch against its base)
        what = f"audit of run {target.run}" if target.run else "the final branch against its base"
        for index in range(samples):
            # Both sides of a sample in one slot: they compare under the same load.
            with measuring(repo, cfg, what):
                for side in SIDES:
                    result = measure(cfg, top=trees[side], log_path=log, env=env,
                                     first_sample=index + 1, event=f"{side}_sample")
                    if progress is not None:
                        progress(target.run, side, index + 1, result.metric)
                    if result.metric is None:
                        return Audit(target, values, CRASH, reason=f"{side} "
                                     f"{commits[side][:7]}, sample {index + 1}: "
                                     f"{result.reason}", tail=result.log_tail,
                                     timestamp=now_ms())
                    values[side].append(result.metric)
    finally:
        with signals.deferred():  # a second signal must not leave a worktree behind
            for path in trees.values():
                worktrees.remove(repo, path)
            shutil.rmtree(folder, ignore_errors=True)
    return judge(target, values, config.direction)


def segment_of(session: Session, number: int) -> int:
    """The segment run ``number`` was recorded in (the current one for a run not in the
    ledger: run 0, finalize's measurement)."""
    run = session.ledger.find(number) if number else None
    return run.segment if run is not None else session.segment.index


def judge(target: Target, values: dict[str, list[float]], direction: str) -> Audit:
    """The verdict on a complete audit: the sequential rule at its last look, the parent's
    samples as the incumbent's pool and the commit's as the candidate's."""
    ruled = decision.sequential(values["parent"], values["commit"], direction=direction,
                                max_samples=len(values["commit"]),
                                alpha=decision.AUDIT_ALPHA,
                                confidence=decision.AUDIT_CONFIDENCE)
    verdict = VERDICTS[ruled.verdict]
    exact = ruled.effect is not None and ruled.effect.low == ruled.effect.high
    if ruled.verdict == "inconclusive" and not exact \
            and min(len(values["parent"]), len(values["commit"])) < MIN_SAMPLES_TO_TELL:
        # Two samples against two can never reach the audit's 5% (the rank test's smallest
        # p-value is 1/6): not "within noise", which drops a keep, but too few to say.
        verdict = TOO_FEW
    return Audit(target, values, verdict, ruled.effect, ruled.p_better,
                 ruled.p_worse, timestamp=now_ms())


def record(session: Session, audit: Audit, line: dict[str, Any]) -> list[str]:
    """Append ``audit``'s ``line`` (:meth:`Audit.record`) to the ledger under the session
    lock and mirror the session files on the state ref; returns the mirror's warnings.
    Refuses (exit 3) when the lock is held too long or the ledger cannot be written, saying
    the verdict that was not recorded."""
    lost = f"the audit of run {audit.target.run} ({audit.verdict}) was not recorded"
    try:
        with session.lock("audit"):
            session.append([line])
            return session.mirror_state(f"audit of run {audit.target.run}")
    except WriteFailed as exc:
        raise Refused(f"{exc.message}; {lost}") from None
    except Refused as exc:
        raise Refused(f"{exc.message}; {lost}") from None

