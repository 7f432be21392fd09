"""``git autoresearch finalize``: a night of keeps made into a branch a person can review.

The chosen keeps (every committed keep of the session by default, or of one segment with
``--segment``) are replayed in run order onto the commit they were measured against: the
baseline commit of their segment (its header's ``base_commit``); keeps of several segments go
onto the earliest one's, and only when nothing but keeps lies between it and the later
segments' baselines (a commit made by hand between segments is refused, named, since the
replay would lack it: ``--segment`` then picks one segment). One ``git cherry-pick`` each, in
a linked worktree of ours under the scratch folder, so the session branch, the user's work
tree, index and HEAD are never touched whatever happens; each final commit keeps its keep's
message, trailers included (``Result:``, ``Autoresearch-Run``, ``Autoresearch-Session``). A keep
that conflicts is named with its paths and the others are still tried, so every conflict is
named at once; then no branch is made (nothing half done). Otherwise the branch
``autoresearch/<id>-final`` points at the last commit (``--split`` also makes
``autoresearch/<id>-final-<run>``, each keep alone on the base, and names the keeps a keep
depends on when it does not apply alone), the final checks (``final_checks_command``, else
``checks_command``) run on it in that worktree, and the base and the final commit are measured
against each other, interleaved (:func:`review.audit.run_audit`), with the configuration of the
segment whose keeps were replayed (the latest of them). Before anything is made, the files the
measurement commands name must be in the base commit (refused otherwise). The outcome is one
``{"type": "final", ...}`` line of the ledger and ``.auto/final.md``, a pull-request body
(:mod:`git_autoresearch.review.pr_body`), also when the measurement or the final checks failed
(:meth:`Final.failures` says so, and the command exits non-zero).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..git import ABSENT, GitError, worktrees
from ..git.worktrees import APPLIED, CONFLICT, Picked, cherry_pick, reset
from ..git.worktrees import head as replay_head  # (the replay worktree's HEAD)
from ..history.checkouts import bring, check_inputs, link_shared, sweep, untracked_inputs
from ..history.refs import final_branch, session_branch, split_branch
from ..history.trailers import read_trailers, recorded_keeps
from ..history.trailers import segment_commits as trailer_segment_commits
from ..ledger import Run, json_number, now_ms
from ..ledger.jsontext import is_whole
from ..measure.samples import run_checks
from ..measure.slots import measuring
from ..measure.worktree import run_environment
from ..runtime import signals
from ..runtime.atomic import WriteFailed
from ..runtime.errors import AutoresearchError, Refused, UsageError
from ..session.branches import refuse_branch_below
from ..session.command_files import script_paths
from ..session.config import Config
from ..session.session import Session
from .audit import CRASH, Audit, Target, effect_json, run_audit, segment_config
from .report import DROPPED_VERDICTS, audits, latest_verdict

FOLDER_PREFIX = "final-"  # <scratch>/final-<pid>: one finalize's worktree


@dataclass(frozen=True)
class Keep:
    """A committed keep of the session: its ``run`` record, its keep ``commit`` (full object
    id) and the paths that commit changed."""

    run: Run
    commit: str
    paths: tuple[str, ...]

    @property
    def number(self) -> int:
        return self.run.number


@dataclass
class Replayed:
    """One keep replayed: ``outcome`` (``applied``, ``conflict``, ``empty``: its change was
    already there), the new ``commit``, the conflicting ``paths``; for ``--split``, the
    ``branch`` made and the earlier keeps it ``depends_on`` when it does not apply alone."""

    keep: Keep
    outcome: str
    commit: str | None = None
    paths: tuple[str, ...] = ()
    branch: str | None = None
    depends_on: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"run": self.keep.number, "outcome": self.outcome, "source": self.keep.commit,
                "commit": self.commit, "paths": list(self.paths), "branch": self.branch,
                "depends_on": list(self.depends_on)}


@dataclass(frozen=True)
class Base:
    """Where the chosen keeps are replayed: ``commit`` (full object id), the baseline commit of
    ``segment``, the earliest segment among the chosen keeps; ``config``, the configuration the
    latest of their segments measured with (what the final checks and the measurement use);
    ``swaps``, the segment commits of ``start --new-segment`` (commit, segment) between it and
    the latest segment's baseline, replayed with the keeps (:func:`segment_commits`); ``hand``,
    the commits made by hand among the keeps, not replayed (:func:`hand_commits`)."""

    commit: str
    segment: int
    config: Config
    swaps: tuple[tuple[str, int], ...] = ()
    hand: tuple[tuple[str, str], ...] = ()  # :func:`hand_commits` among the chosen keeps


@dataclass
class SegmentReplayed:
    """A segment commit (the files that define a segment's success, committed by ``start
    --new-segment``) replayed with the keeps: its ``segment``, its ``source`` commit on the
    session branch, the ``outcome`` (``applied``, ``conflict``, ``empty``), the new
    ``commit`` and the ``paths`` it changed (or that conflicted)."""

    segment: int
    source: str
    outcome: str
    commit: str | None = None
    paths: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"segment": self.segment, "source": self.source, "outcome": self.outcome,
                "commit": self.commit, "paths": list(self.paths)}


@dataclass
class Final:
    """What ``finalize`` made: the ``base`` commit (the baseline commit of segment
    ``segment``), the ``branch`` and its ``tip`` (None when a
    keep conflicted: no branch was made), each keep ``replayed``, the keeps ``dropped`` (run,
    why), the ``split`` branches, the final ``checks`` (``passed``, ``exit_code``, ... and the
    ``command``; None without a checks command) and the A/B measurement ``measured`` (None
    with ``--samples 0`` or when the branch was not made; verdict ``crash`` when it failed)."""

    base: str
    branch: str
    tip: str | None
    replayed: list[Replayed]
    dropped: list[tuple[int, str]]
    split: list[Replayed] = field(default_factory=list)
    checks: dict[str, Any] | None = None
    measured: Audit | None = None
    timestamp: int = 0
    # Each branch ref this finalize set, with the value it had before (None: it was new).
    made: list[tuple[str, str | None]] = field(default_factory=list)
    segment: int = 0
    config: Config | None = None  # what it measured with (None: the session's)
    # The segment commits replayed with the keeps, and the commit the base side of the A/B
    # measurement ran on when it is not the base: the base with them (the session's benchmark).
    segments: list[SegmentReplayed] = field(default_factory=list)
    measured_base: str | None = None
    # The commits made by hand among the keeps, not replayed (:func:`hand_commits`), and the
    # branches a finalize killed before it recorded them left, which this one replaces.
    hand: list[tuple[str, str]] = field(default_factory=list)
    replaces: set[str] = field(default_factory=set)

    @property
    def conflicts(self) -> list[Replayed]:
        return [r for r in self.replayed if r.outcome == CONFLICT]

    def failures(self) -> list[str]:
        """Why the branch made is not verified, one phrase each (none: it is): the
        measurement failed (a sample gave no metric, or it could not begin), the final checks
        failed."""
        out = []
        if self.measured is not None and self.measured.verdict == CRASH:
            out.append(f"the measurement failed ({self.measured.reason})")
        if self.checks is not None and not self.checks["passed"]:
            out.append(f"the final checks failed ({self.checks.get('reason')})")
        return out

    @property
    def segment_conflicts(self) -> list[SegmentReplayed]:
        return [r for r in self.segments if r.outcome == CONFLICT]

    def record(self, direction: str | None = None) -> dict[str, Any]:
        """The ledger line (no ``run`` field: an event, never a run record to any reader);
        ``direction``: the metric's, when :attr:`config` does not say."""
        measured = self.measured
        if self.config is not None:
            direction = self.config.direction
        return {
            "type": "final", "timestamp": self.timestamp, "branch": self.branch,
            "base": self.base[:7], "segment": self.segment,
            "commit": self.tip[:7] if self.tip else None,
            "runs": [r.keep.number for r in self.replayed if r.outcome == APPLIED],
            "replayed": [r.to_json() for r in self.replayed],
            "dropped": [{"run": n, "why": why} for n, why in self.dropped],
            "split": [r.to_json() for r in self.split],
            "checks": self.checks,
            "direction": direction,
            "verdict": None if measured is None else measured.verdict,
            "samples": None if measured is None else {
                "base": [json_number(v) for v in measured.samples["parent"]],
                "final": [json_number(v) for v in measured.samples["commit"]]},
            **effect_json(None if measured is None else measured.effect),
            "reason": None if measured is None else measured.reason,
            "segment_commits": [r.to_json() for r in self.segments],
            "measured_base": self.measured_base[:7] if self.measured_base else None,
            "hand_commits": [{"commit": oid[:7], "subject": subject}
                             for oid, subject in self.hand],
        }


def segment_base(session: Session, index: int) -> str:
    """The full object id of the baseline commit of segment ``index``: the commit it began
    from (its header's ``base_commit``), which its runs were measured against. Refuses (exit
    3) when the ledger does not say or git lacks it."""
    base = (session.ledger.segments[index].header or {}).get("base_commit")
    found = session.repo.resolve(f"{base}^{{commit}}") if isinstance(base, str) and base \
        else None
    if found is None:
        raise Refused(f"the baseline commit of segment {index} "
                      f"({base or 'not recorded'}) is not in this repository: nothing to "
                      "replay the keeps onto")
    return found


def replay_base(session: Session, chosen: list[Keep], every: list[Keep], *,
                measuring: bool) -> Base:
    """Where ``chosen`` (not empty) are replayed (:class:`Base`): the baseline commit of the
    earliest of their segments. Refuses (exit 3) when a commit that is none of ``every``
    keep's nor a segment commit lies between it and a later chosen segment's baseline (the
    replay would lack it), and, when ``measuring``, when a file the measurement commands name
    at the session's tip is not in that commit with the segment commits replayed (base and
    final could not be measured alike)."""
    segments = sorted({k.run.segment for k in chosen})
    commit = segment_base(session, segments[0])
    every_swap = segment_commits(session)
    swaps = tuple((c, n) for c, n in every_swap if segments[0] < n <= segments[-1])
    kept = {k.commit for k in every}
    for later in segments[1:]:
        _refuse_foreign(session, commit, segments[0], later, kept | {c for c, _ in swaps})
    base = Base(commit, segments[0], segment_config(session, segments[-1]), swaps,
                tuple(hand_commits(session, commit, segments[-1],
                                   kept | {c for c, _ in every_swap})))
    if measuring:
        _refuse_missing_inputs(session, base)
        last = max(chosen, key=lambda k: (k.run.segment, k.number))
        check_inputs(session, last.number, segments[-1])
    return base


def _refuse_foreign(session: Session, base: str, first: int, later: int,
                    ours: set[str]) -> None:
    """Refuse when a commit that is no keep lies between ``base`` (segment ``first``'s
    baseline) and segment ``later``'s baseline: one made by hand between segments."""
    between = session.repo.log_fields(f"{base}..{segment_base(session, later)}",
                                      ["%H", "%s"], reverse=True) or []
    foreign = [(oid, subject) for oid, subject in between if oid not in ours]
    if foreign:
        oid, subject = foreign[0]
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        raise Refused(f"commit {oid[:7]} (\"{subject[:60]}\"){more}, between the baselines of "
                      f"segments {first} and {later}, is no kept run: replayed onto segment "
                      f"{first}'s baseline {base[:7]}, the keeps of segment {later} would lack "
                      f"it; finalize one segment's keeps (--segment {later}, or --segment "
                      f"{first})")


def _refuse_missing_inputs(session: Session, base: Base) -> None:
    """Refuse when a committed file that a measurement command names at the tip of the
    session branch is not in the base commit (with its segment commits, the last of which
    has the benchmark its segment measured with): the base could not be measured."""
    repo, cfg = session.repo, base.config
    tip = repo.resolve(f"refs/heads/{session_branch(cfg.session_id)}") or repo.head()
    if tip is None:
        return
    measured = base.swaps[-1][0] if base.swaps else base.commit
    for command in (cfg.command, cfg.metric_command):
        if not command:
            continue
        there = set(script_paths(repo, command, measured))
        missing = [path for path in script_paths(repo, command, tip) if path not in there]
        if missing:
            raise Refused(f"the measurement command ({command}) runs {', '.join(missing)}, "
                          f"which the base commit {base.commit[:7]} (the baseline of segment "
                          f"{base.segment}) lacks: it cannot be measured against the final "
                          "branch; finalize the keeps of a segment whose baseline has it "
                          "(--segment N), or make the branch without measuring (--samples 0)")


def keeps(session: Session) -> list[Keep]:
    """Every committed keep of the session, in run order: the commits of the session branch
    after its base that carry our trailers and have a kept run in the ledger (the baselines
    made no commit)."""
    repo, cfg = session.repo, session.config
    base = (session.ledger.segments[0].header or {}).get("base_commit")
    kept = read_trailers(repo, session_branch(cfg.session_id), base,
                         recorded=recorded_keeps(session.ledger))
    out = []
    for number in sorted(kept):
        run = session.ledger.find(number)
        if run is None or run.status != "keep":
            continue
        commit = str(kept[number]["commit"])
        out.append(Keep(run, commit, tuple(repo.changed_paths(f"{commit}^", commit))))
    return out


def of_segment(session: Session, found: list[Keep], segment: int | None) -> list[Keep]:
    """The keeps of ``found`` in ``segment`` (all of them when None). Raises
    :class:`UsageError` (exit 2) for a segment the session does not have."""
    if segment is None:
        return found
    last = len(session.ledger.segments) - 1
    if segment > last:
        raise UsageError(f"--segment {segment}: the session has segment"
                         + (f"s 0 to {last}" if last else " 0 alone"))
    return [k for k in found if k.run.segment == segment]
def segment_commits(session: Session) -> list[tuple[str, int]]:
    """The session's segment commits on its branch after its base, oldest first: (commit,
    segment index), :func:`history.trailers.segment_commits`."""
    repo, cfg = session.repo, session.config
    base = (session.ledger.segments[0].header or {}).get("base_commit")
    return trailer_segment_commits(repo, session_branch(cfg.session_id), base, cfg.session_id)


def hand_commits(session: Session, base: str, last: int, ours: set[str]
                 ) -> list[tuple[str, str]]:
    """The commits of the session branch after ``base`` and up to the end of segment ``last``
    (the next segment's baseline, or the branch's tip) that are none of ``ours`` (the kept
    runs' and the segment commits): made by hand, so the replay lacks them, though the keeps
    after them were measured with them. Each ``(full id, subject)``, oldest first."""
    repo = session.repo
    end = None
    if last + 1 < len(session.ledger.segments):
        try:
            end = segment_base(session, last + 1)
        except Refused:  # not in this repository: up to the tip, then
            pass
    end = end or repo.resolve(f"refs/heads/{session_branch(session.config.session_id)}")
    if end is None:
        return []
    listed = repo.log_fields(f"{base}..{end}", ["%H", "%s"], reverse=True) or []
    return [(oid, subject) for oid, subject in listed if oid not in ours]


def off_branch(session: Session, found: list[Keep], segment: int | None
               ) -> list[tuple[int, str]]:
    """The runs the ledger records as kept with a commit of their own (of ``segment``, or of
    every segment when None) that ``found`` (the keeps on the session branch) lacks: the
    branch lost their commits (a reset, a rebase). Each ``(run, why)``, as ``dropped`` has
    them."""
    on = {k.number for k in found}
    ours = {seg.index for seg in session.ledger.segments if "config_hash" in (seg.header or {})}
    return [(run.number, f"not on the session branch: its keep commit "
                         f"{str(run.data.get('commit'))[:7]} is not there")
            for run in session.ledger.runs
            if run.status == "keep" and run.data.get("committed") is True
            and run.segment in ours and (segment is None or run.segment == segment)
            and run.number not in on]


def choose(session: Session, found: list[Keep], *, drop: list[int], only: list[int],
           include_noise: bool, where: str = "the session"
           ) -> tuple[list[Keep], list[tuple[int, str]]]:
    """The keeps to replay and those left out (run, why): ``only`` (when given) picks, then
    ``drop`` removes, then a keep whose latest audit found it within noise or a regression is
    dropped unless ``include_noise`` or ``only`` names it. Raises :class:`UsageError` (exit 2)
    for a number that is not a committed keep of ``found`` (``where`` names them: the session,
    or one segment), or one given to both."""
    numbers = {k.number for k in found}
    for option, given in (("--drop", drop), ("--only", only)):
        bad = [n for n in given if n not in numbers]
        if bad:
            listing = ", ".join(str(k) for k in sorted(numbers)) or "none"
            raise UsageError(f"{option} {bad[0]}: not a committed keep of {where} (they "
                             f"are: {listing})")
    both = sorted(set(drop) & set(only))
    if both:
        raise UsageError(f"run {both[0]} is given to both --drop and --only: give it to one")
    audited = audits(session.ledger)
    chosen, dropped = [], []
    for keep in found:
        latest = latest_verdict(audited, keep.number)
        if only and keep.number not in only:
            dropped.append((keep.number, "not among --only"))
        elif keep.number in drop:
            dropped.append((keep.number, "--drop"))
        elif latest in DROPPED_VERDICTS and not include_noise and keep.number not in only:
            dropped.append((keep.number, f"audit: {latest}"))
        else:
            chosen.append(keep)
    return chosen, dropped


Progress = Callable[[str], None]


def finalize(session: Session, chosen: list[Keep], dropped: list[tuple[int, str]], *,
             split: bool = False, checks_command: str | None = None, samples: int = 5,
             force: bool = False, progress: Progress | None = None,
             measure_progress: Callable[[int, str, int, float | None], None] | None = None,
             every: list[Keep] | None = None, where: str = "the session"
             ) -> Final:
    """Replay ``chosen`` onto the baseline commit they were measured against
    (:func:`replay_base`; ``every``: all the session's committed keeps, ``chosen`` when None)
    and make the final branch (and, with ``split``, one branch per keep), run the final checks
    on it and measure it against the base ``samples`` times a side (0: not). Refuses (exit 3)
    when nothing is chosen (``where`` names where keeps were looked for), the base cannot be
    replayed onto or measured, or a branch it would make exists (``force`` replaces it) or
    belongs to another session. The
    returned :class:`Final` has no ``tip`` when a keep conflicted; a measurement that failed
    is its verdict ``crash``, never an exception."""
    say = progress or (lambda _text: None)
    if not chosen:
        raise Refused("no keep to finalize" + (
            f" (left out: {', '.join(str(n) for n, _ in dropped)})" if dropped else
            f": {where} has no committed keep after its baseline"))
    repo = session.repo
    found = replay_base(session, chosen, every or chosen, measuring=samples > 0)
    base, cfg = found.commit, found.config
    branch = final_branch(cfg.session_id)
    names = [branch, *(split_branch(cfg.session_id, k.number) for k in chosen if split)]
    sweep(session, FOLDER_PREFIX, ("tree",))  # what a finalize killed outright left
    final = Final(base, branch, None, [], dropped, timestamp=now_ms(), segment=found.segment,
                  config=cfg, hand=list(found.hand),
                  replaces=_refuse_taken(session, names, force))
    for name in sorted(final.replaces):
        say(f"replacing branch {name}: a finalize killed before it recorded it made it")
    folder = repo.scratch / f"{FOLDER_PREFIX}{os.getpid()}"
    tree = folder / "tree"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        worktrees.add_detached(repo, tree, base)
        _replay_all(session, final, tree, chosen, found.swaps, say)
        if final.conflicts or final.segment_conflicts:
            return final
        if not any(r.outcome == APPLIED for r in final.replayed):
            raise Refused(f"every keep replayed is empty on the base {base[:7]}: its change "
                          "is already there" + (
                              f", or it undoes {hand_text(final.hand)}, which is not replayed"
                              if final.hand else "") + "; no branch was made")
        final.tip = replay_head(tree)  # the last keep or segment commit that applied
        _set_branch(session, final, branch, final.tip, force)
        if split:
            final.split = _split(session, final, tree, base, chosen, force)
        if force:
            _drop_stale_splits(session, final)
        command = checks_command or cfg.final_checks_command or cfg.checks_command
        if command:
            say(f"final checks: {command}")
            reset(tree, final.tip)
            final.checks = _checks(session, tree, dataclasses.replace(
                cfg, checks_command=command))
        if samples > 0 and final.tip != base:
            final.measured_base = _with_segments(final, tree)
            say(f"measuring the base {base[:7]} against the final {final.tip[:7]}, "
                f"{samples} sample(s) each" + (
                    f" (the base with the session's segment commits: {final.measured_base[:7]})"
                    if final.measured_base else ""))
            final.measured = _measure(session, cfg, Target(0, final.tip,
                                                           final.measured_base or base),
                                      samples, measure_progress)
    except BaseException:  # a signal, a crash: no branch is left without its record
        undo(session, final)
        raise
    finally:
        with signals.deferred():  # a second signal must not leave the worktree behind
            worktrees.remove(repo, tree)
            shutil.rmtree(folder, ignore_errors=True)
    return final


# The audit's names of the two sides, as finalize names them.
SIDE_NAMES = {"parent": "base", "commit": "final"}


def _measure(session: Session, cfg: Config, target: Target, samples: int,
             progress: Callable[[int, str, int, float | None], None] | None) -> Audit:
    """The base (``target.parent``) and the final commit measured against each other with
    ``cfg`` (:func:`review.audit.run_audit`); one that could not begin (git could not make a
    worktree, a file could not be written, no measurement slot) is a ``crash`` saying why, as
    one whose sample gave no metric, with the sides named ``base`` and ``final``."""
    try:
        measured = run_audit(session, target, samples, progress=progress, config=cfg)
    except (AutoresearchError, OSError) as exc:
        why = exc.message if isinstance(exc, AutoresearchError) else \
            f"{exc.strerror or exc} ({exc.filename})" if exc.filename else str(exc)
        return Audit(target, {"parent": [], "commit": []}, CRASH,
                     reason=f"it could not begin: {why}", tail="", timestamp=now_ms())
    side, _, rest = (measured.reason or "").partition(" ")
    if side in SIDE_NAMES:
        measured.reason = f"{SIDE_NAMES[side]} {rest}"
    return measured
def _replay_all(session: Session, final: Final, tree: Path, chosen: list[Keep],
                swaps: tuple[tuple[str, int], ...], say: Progress) -> None:
    """Replay ``chosen`` in run order onto the worktree at ``tree``, each segment commit of
    ``swaps`` (:attr:`Base.swaps`) before the first keep of its segment or a later one, into
    ``final``: so the final branch holds the files that define the success its keeps were
    measured by."""
    waiting = list(swaps)
    for keep in [*chosen, None]:
        while waiting and (keep is None or waiting[0][1] <= keep.run.segment):
            source, segment = waiting.pop(0)
            picked = cherry_pick(tree, source)
            paths = picked.paths or (tuple(session.repo.changed_paths(f"{source}^", source))
                                     if picked.outcome == APPLIED else ())
            final.segments.append(SegmentReplayed(segment, source, picked.outcome,
                                                  picked.commit, paths))
            say(f"segment {segment}'s commit {source[:7]}: {picked.outcome}"
                + (f" ({', '.join(paths)})" if paths else ""))
        if keep is None:
            break
        picked = cherry_pick(tree, keep.commit)
        final.replayed.append(_replayed(keep, picked))
        say(f"run {keep.number}: {picked.outcome}"
            + (f" ({', '.join(picked.paths)})" if picked.paths else ""))


def _with_segments(final: Final, tree: Path) -> str | None:
    """The base with the segment commits ``final`` replayed on it alone (no keep), made in
    the worktree at ``tree``: what the base side of the A/B measurement runs on, so that both
    sides run the session's benchmark; None when there are none (or one no longer applies
    alone: the base is measured as it is)."""
    applied = [r.source for r in final.segments if r.outcome == APPLIED]
    if not applied:
        return None
    reset(tree, final.base)
    for source in applied:
        if cherry_pick(tree, source).outcome != APPLIED:
            return None
    return replay_head(tree)


def undo(session: Session, final: Final) -> None:
    """Put back every branch ``final`` set (delete a new one, restore a replaced one), as if
    this finalize had never run; what cannot be put back is left (git refused)."""
    repo = session.repo
    with signals.deferred():
        for ref, old in reversed(final.made):
            now = repo.resolve(ref)
            if now is None:
                continue
            if old is None:
                repo.delete_ref(ref, now)
            else:
                try:
                    repo.update_ref(ref, old, now, "autoresearch finalize undone")
                except GitError:
                    pass  # moved by someone else meanwhile: theirs now
        final.made.clear()


def _drop_stale_splits(session: Session, final: Final) -> None:
    """With ``--force``: delete the branches ``autoresearch/<id>-final-<run>`` an earlier
    ``--split`` made that this finalize did not make again (recorded in ``final.made``, so
    that an interruption puts them back)."""
    repo = session.repo
    prefix = f"refs/heads/{split_branch(session.config.session_id, 0)[:-1]}"
    kept = {ref for ref, _ in final.made}
    for ref in repo.for_each_ref(prefix + "*"):  # a glob: the names share no folder
        number = ref.removeprefix(prefix)
        old = repo.resolve(ref)
        if is_whole(number) and ref not in kept and old is not None:
            final.made.append((ref, old))
            repo.delete_ref(ref, old)


def _replayed(keep: Keep, picked: Picked) -> Replayed:
    return Replayed(keep, picked.outcome, picked.commit, picked.paths)


def hand_text(hand: list[tuple[str, str]]) -> str:
    """``commit 1a2b3c4 ("hand: add NOTES.md")``, and how many more: commits made by hand."""
    oid, subject = hand[0]
    more = f" and {len(hand) - 1} more" if len(hand) > 1 else ""
    return f"commit {oid[:7]} (\"{subject[:60]}\"){more}"


def _refuse_taken(session: Session, names: list[str], force: bool) -> set[str]:
    """Refuse a branch name that exists (unless ``force``, or a finalize killed before it
    recorded it made it: :func:`left_by_a_killed_finalize`), is another session's branch, or
    is a folder of branches (``autoresearch/<id>-final/...``, as pi-autoresearch's finalize.sh
    makes given that goal), beside which git cannot make it. Returns the names that exist
    and were left by a killed finalize (replaced without ``force``)."""
    repo = session.repo
    left: set[str] = set()
    for name in names:
        other = name.removeprefix("autoresearch/")
        if repo.resolve(f"refs/autoresearch/{other}/state") is not None:
            raise Refused(f"branch {name} is the session branch of session {other}; finalize "
                          "never replaces it")
        refuse_branch_below(repo, name, "the branch", "rename or delete it first")
        if repo.resolve(f"refs/heads/{name}") is None:
            continue
        if left_by_a_killed_finalize(session, name):
            left.add(name)
        elif not force:
            raise Refused(f"branch {name} exists (an earlier finalize?); pass --force to "
                          "replace it")
    return left


def left_by_a_killed_finalize(session: Session, name: str) -> bool:
    """Whether branch ``name`` was made by a finalize of this session that was killed before
    it recorded it: its tip is a commit the replay made (it carries this session's
    ``Autoresearch-Session`` trailer, as every keep and segment commit does) that no ``final``
    line of the ledger records. A branch a recorded finalize made, and one a person committed
    on since, are neither."""
    repo = session.repo
    tip = repo.resolve(f"refs/heads/{name}")
    if tip is None:
        return False
    recorded = set()
    for line in (e for e in session.ledger.events if e.get("type") == "final"):
        for entry in [line, *(line.get("split") or [])]:
            if isinstance(entry, dict) and isinstance(entry.get("commit"), str):
                recorded.add(entry["commit"][:7])
    if tip[:7] in recorded:
        return False
    found = repo.log_fields(f"{tip}^!", ["%(trailers:key=Autoresearch-Session,valueonly,unfold)"])
    return found is not None and bool(found) and session.config.session_id in found[0][0].split()


def _set_branch(session: Session, final: Final, name: str, commit: str, force: bool) -> None:
    """Point branch ``name`` at ``commit`` (recorded in ``final.made`` for :func:`undo`)."""
    repo = session.repo
    ref = f"refs/heads/{name}"
    old = repo.resolve(ref)
    if old is not None and not force and name not in final.replaces:
        raise Refused(f"branch {name} exists (an earlier finalize?); pass --force to replace it")
    final.made.append((ref, old))
    repo.update_ref(ref, commit, old or ABSENT, "autoresearch finalize")


def _split(session: Session, final: Final, tree: Path, base: str, chosen: list[Keep],
           force: bool) -> list[Replayed]:
    """Each keep alone on the base, as its own branch; a keep that does not apply alone names
    the earlier chosen keeps that changed the paths it conflicts on."""
    out = []
    for index, keep in enumerate(chosen):
        reset(tree, base)
        picked = cherry_pick(tree, keep.commit)
        done = _replayed(keep, picked)
        if picked.outcome == APPLIED and picked.commit is not None:
            done.branch = split_branch(session.config.session_id, keep.number)
            _set_branch(session, final, done.branch, picked.commit, force)
        elif picked.outcome == CONFLICT:
            done.depends_on = tuple(k.number for k in chosen[:index]
                                    if set(k.paths) & set(picked.paths))
        out.append(done)
    return out


def _checks(session: Session, tree: Path, cfg: Config) -> dict[str, Any]:
    """Run ``cfg``'s checks command in the worktree at ``tree`` as the checks run (the checks'
    time limit, the environment of a measurement of run 0), with the untracked inputs the
    commands name copied in; the outcome of :func:`measure.samples.run_checks` with the
    ``command``."""
    bring(session, untracked_inputs(session.repo, cfg), tree)
    link_shared(session, tree, cfg)
    log = tree.parent / "checks.log"
    log.touch()
    with measuring(session.repo, cfg, "finalize's checks"):
        found = run_checks(cfg, top=tree, log_path=log, env=run_environment(session, 0, log))
    return {"command": cfg.checks_command, **found}


def record(session: Session, final: Final, notes: str) -> list[str]:
    """Append ``final``'s ledger line and write ``notes`` to ``.auto/final.md``, under the
    session lock, and mirror the session files on the state ref; returns the mirror's
    warnings. Then removes the incumbent's worktree kept between runs
    (:func:`measure.incumbent.remove_kept`): the session's runs are over. Refuses (exit 3)
    when the lock is held too long or a file cannot be written."""
    from ..measure.incumbent import remove_kept
    from ..runtime.atomic import write_atomic

    try:
        with session.lock("finalize"):
            with signals.deferred():  # all three, or none
                session.append([final.record(session.config.direction)])
                write_atomic(session.layout.final_notes, notes.encode())
                warnings = session.mirror_state("finalize")
            left = remove_kept(session.repo)
    except WriteFailed as exc:
        raise Refused(f"{exc.message}; the branch {final.branch} was made, but the ledger "
                      "line or .auto/final.md was not written") from None
    return warnings + ([left] if left else [])
