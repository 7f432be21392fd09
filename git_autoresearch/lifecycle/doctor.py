"""``git autoresearch doctor``: reconcile the ledger, the branch's trailers, the attempt refs and
the state ref, say every disagreement in plain words, and rebuild what can be rebuilt.

A repair only ever adds: a ledger line rebuilt from a trailer or an attempt commit, the state ref
mirrored again, a malformed line moved aside. No record is deleted.
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import ledger as ledger_mod
from ..git import temporary_objects
from ..git.objects import resolve_many
from ..git.repo import lock_files
from ..history.refs import attempt_ref, attempts_prefix, scope_prefix, session_branch
from ..history.remote_ledger import run_lines
from ..history.state_ref import behind as behind_state
from ..history.state_ref import forget as forget_state_cache
from ..history.state_ref import lines_in_history, mirrored_keeps, saved_ledger
from ..history.state_ref import read as read_state
from ..history.trailers import (
    TrailerCommit,
    bad_trailers,
    commit_info,
    read_trailers,
    reconcile,
    rewritten,
    trailer_log,
)
from ..ledger.jsontext import is_whole
from ..ledger.records import run_record
from ..ledger.repairs import (
    has_our_header,
    insert_runs,
    lost_lines,
    replace_commits,
    run_numbers,
    set_aside,
    with_lost_entries,
    with_lost_header,
)
from ..record import intents
from ..runtime.atomic import write_atomic
from ..session.branches import branch_problem, finished
from ..session.session import Session


@dataclass
class Finding:
    """One disagreement: what is wrong, and whether ``--fix`` can repair it (and how)."""

    problem: str
    fix: str | None = None
    fixed: bool = False
    done: str | None = None  # what the fix did, when it can be one of several things


@dataclass
class Examination:
    """What doctor found, and the warnings of its repairs (why a fix did not take)."""

    findings: list[Finding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what is as it should be, but worth saying
    # The session finished off its branch (a squash merge, cherry-picks): the sentence.
    finished: str | None = None

    def add(self, problem: str, fix: str | None = None) -> Finding:
        finding = Finding(problem, fix)
        self.findings.append(finding)
        return finding


def _attempts(session: Session) -> dict[int, str]:
    """The attempt refs of the session, by run number: their commits."""
    prefix = attempts_prefix(session.config.session_id)
    found = {}
    for name, oid in session.repo.ref_objects(prefix):
        tail = name[len(prefix):]
        if is_whole(tail):
            found[int(tail)] = oid
    return found


def examine(session: Session, *, fix: bool = False) -> Examination:
    """Find every disagreement; with ``fix``, repair what can be repaired (adding only). Runs
    under the session lock, so no command records a run in between."""
    with session.lock("doctor", header_lost_ok=True):
        return _examine(session, fix)


class SavedLines(dict[int, bytes]):
    """Run lines a repair can put back, by run number, with where each was found
    (:meth:`source`)."""

    def __init__(self) -> None:
        super().__init__()
        self.sources: dict[int, str] = {}

    def source(self, number: int) -> str:
        """Where run ``number``'s line was found: ``the state ref`` unless said."""
        return self.sources.get(number, "the state ref")


def _state_lines(session: Session) -> SavedLines:
    """The run lines of the ledger the state ref holds, by run number."""
    state = read_state(session.repo, session.config.session_id)
    saved = state[0] if state else {}
    found = SavedLines()
    for raw in saved.get("log.jsonl", b"").split(b"\n"):
        # Only a line the ledger reads as a run: one set aside as malformed must not come back.
        book = ledger_mod.parse(raw)
        if book.runs and not book.malformed:
            found.setdefault(book.runs[0].number, raw)
    return found


def _from_history(session: Session, saved_lines: SavedLines, lost: list[int]) -> None:
    """Add to ``saved_lines`` (the state ref's tip's lines, by run number) the lines of the
    runs ``lost`` that only an earlier state commit holds (a ledger that lost a line and was
    mirrored since, by an older version or with the mirror's cache gone), and, in a work tree
    that did not join the session through a remote, those that only the ledger refs of the
    clones that did hold (a ledger pulled by an older version)."""
    sid = session.config.session_id
    wanted = [number for number in lost if number not in saved_lines]
    if wanted:
        saved_lines.update(lines_in_history(session.repo, sid, wanted))
    wanted = [number for number in wanted if number not in saved_lines]
    if wanted and session.remote is None:
        for number, (line, worker) in run_lines(session.repo, sid, wanted).items():
            saved_lines[number] = line
            saved_lines.sources[number] = f"the ledger ref of worker {worker}"


def _age(seconds: float) -> str:
    """``45s``, ``12m``, ``3h`` or ``2d`` (whole units, rounded down)."""
    for unit, size, below in (("s", 1, 120), ("m", 60, 7200), ("h", 3600, 172800)):
        if seconds < below:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds // 86400)}d"


def _git_locks(session: Session, exam: Examination) -> None:
    """A finding for each lock file of git's (never removed here: a git process may be
    running and holding it)."""
    for path, age in lock_files(session.repo):
        exam.add(f"git's lock file {path} is {_age(age)} old: a git process is running here, "
                 "or one was killed and left it; once no git process is running, remove it "
                 f"(rm {path})")


def _left_slots(session: Session, exam: Examination, fix: bool) -> None:
    """Measurement slots held by what a measurement left running: a killed command's process
    group, which ``--fix`` ends as the next measurement would; processes that left it, which
    are a person's to end (the next measurement only takes the slot back)."""
    from ..measure.runner import end_process_group
    from ..measure.slots import left_slots

    for text, group in left_slots(session.repo, session.config.session_id):
        finding = exam.add(text, None if group is None else
                           "end the process group, as the next measurement would")
        if fix and group is not None:
            end_process_group(group)
            finding.fixed = True


def _killed_outright(session: Session, exam: Examination, fix: bool) -> None:
    """A finding for what a command killed outright (SIGKILL) left: the worktree folder of a
    finalize, audit, measurement beside the incumbent or apply whose process is gone
    (:func:`history.checkouts.left_behind`: removed by that command's next run, and by
    ``--fix``), and a final branch a finalize made but did not record
    (:func:`review.finalize.left_by_a_killed_finalize`: its next run replaces it)."""
    from ..history.checkouts import left_behind, sweep
    from ..history.refs import final_branch
    from ..measure import incumbent
    from ..review import apply, audit, finalize

    # Each command's scratch folders, the worktrees in them, and the command named.
    folders = ((finalize.FOLDER_PREFIX, ("tree",), "finalize"),
               (audit.FOLDER_PREFIX, audit.SIDES, "audit"),
               (incumbent.FOLDER_PREFIX, (incumbent.TREE,), "run or measure"),
               (apply.FOLDER_PREFIX, ("tree",), "apply or run --retry"))
    for prefix, trees, command in folders:
        dead = left_behind(session, prefix)
        found = [exam.add(f"{folder} holds the worktrees of {command} killed outright (pid "
                          f"{folder.name.removeprefix(prefix)}): the next {command} removes "
                          "them", "remove them (git worktree remove, then the folder)")
                 for folder in dead]
        if fix and dead:
            removed = sweep(session, prefix, trees)
            for folder, finding in zip(dead, found, strict=True):
                finding.fixed = folder in removed
    final = final_branch(session.config.session_id)
    for ref in session.repo.for_each_ref(f"refs/heads/{final}*"):  # (a glob: no folder)
        name = ref.removeprefix("refs/heads/")
        if (name == final or is_whole(name.removeprefix(f"{final}-"))) \
                and finalize.left_by_a_killed_finalize(session, name):
            exam.add(f"branch {name} was made by a finalize killed before it recorded it (no "
                     "ledger line records it): the next finalize replaces it; or delete it (git "
                     f"branch -D {name})")


# A temporary object file of git's older than this is garbage, not one being written now.
STALE_OBJECT_SECONDS = 3600


def _git_garbage(session: Session, exam: Examination) -> None:
    """A finding for each temporary object file of git's older than an hour
    (:func:`temporary_objects`): left by a git that failed on a full disk or was killed, and
    taking space until ``git gc`` prunes it (two weeks later, by default)."""
    now = time.time()
    for path, mtime, size in temporary_objects(session.repo.common_dir):
        age = now - mtime
        if age >= STALE_OBJECT_SECONDS:
            exam.add(f"git's temporary object file {path} ({size} bytes) is {_age(age)} old: a "
                     "git process that failed (a full disk) or was killed left it; once no "
                     f"git process is running, remove it (rm {path})")


def _examine(session: Session, fix: bool) -> Examination:
    exam = Examination()
    _git_locks(session, exam)
    _left_slots(session, exam, fix)
    _killed_outright(session, exam, fix)
    linked = session.layout.linked()
    if linked:  # every command that records refuses it
        exam.add(linked.removesuffix("; nothing was changed"))
    _git_garbage(session, exam)
    if _check_files(session, exam):
        return exam
    # Read before any repair forgets the mirror's cache: the keeps the state ref was last
    # mirrored with, whose lines the ledger lost (a loop refuses to go on without them).
    kept_now = session.kept_lines()
    lost_keeps = [] if kept_now is None else mirrored_keeps(session.repo,
                                                           session.config.session_id, kept_now)
    _check_lost_lines(session, exam, fix)
    _check_header(session, exam, fix)
    coming = _check_lost_entries(session, exam, fix)
    saved_lines = _state_lines(session)
    restored = _check_malformed(session, exam, fix, saved_lines)
    _check_interrupted(session, exam, fix)
    _check_replay(session, exam, fix)
    exists, problem = branch_problem(session)
    if problem:
        exam.add(problem)
    unmerged = session.unmerged_problem()
    if unmerged:
        exam.add(unmerged)
    exam.finished = finished(session)
    log = _check_trailers(session, exam, exists)
    _check_rewritten(session, exam, log, fix)
    additions = dict(restored)
    additions.update(_check_kept_runs(session, exam, log, saved_lines, additions))
    additions.update(_check_attempts(session, exam, saved_lines, additions))
    additions.update(_check_lost_keeps(session, exam, lost_keeps, saved_lines, additions))
    _check_named_refs(session, exam)
    _check_scope_refs(session, exam)
    if fix and additions:
        insert_runs(session.layout.ledger, additions)
        for finding in exam.findings:
            if finding.fix and finding.fix.startswith(("restore the run", "rebuild the run")):
                finding.fixed = True
        session.reload()
    baseline = session.baseline_problem() or session.baseline_doubt()
    if baseline and not (not fix and _restores_baseline(session, additions)):
        exam.add(baseline)
    _check_state(session, exam, fix, coming | set(additions))
    return exam


def _restores_baseline(session: Session, additions: dict[int, bytes]) -> bool:
    """Whether a line ``additions`` would restore is a keep of the current segment before its
    first kept run: the segment's baseline, lost, which ``--fix`` puts back."""
    segment = session.segment
    first = segment.baseline.number if segment.baseline is not None else None
    for number, line in additions.items():
        book = ledger_mod.parse(line)
        run = book.runs[0] if book.runs else None
        if run is not None and run.status == "keep" and run.data.get("segment") == segment.index \
                and (first is None or number < first):
            return True
    return False


def _check_files(session: Session, exam: Examination) -> bool:
    """Whether the session's files are not there to be examined: its start was interrupted,
    or its ledger is missing (then a finding says so, and nothing else is checked)."""
    layout = session.layout
    if layout.start_intent.exists():
        # What else looks wrong (no ledger, no state ref) is what the start had not made yet.
        exam.add(f"the start of session {session.config.session_id} was interrupted (git "
                 "autoresearch resume finishes it)")
        return True
    if not layout.ledger.exists():
        # Nothing to reconcile, and a ledger rebuilt here would have no configuration header.
        exam.add(f"the ledger {layout.ledger} is missing (git autoresearch resume restores it "
                 "from the state ref)")
        return True
    return False


def _check_lost_lines(session: Session, exam: Examination, fix: bool) -> None:
    """The ledger lost lines at its end that the state ref holds: restored, the old file
    kept beside it."""
    layout = session.layout
    saved = saved_ledger(session.repo, session.config.session_id)
    if not lost_lines(layout.ledger.read_bytes(), saved):
        return
    finding = exam.add(f"the ledger {layout.ledger} lost its last lines, which the state ref "
                       "holds", "restore them from the state ref")
    if fix:
        _rewrite_ledger(session, finding, saved)


def _rewrite_ledger(session: Session, finding: Finding, data: bytes) -> None:
    """Write ``data`` as the ledger, the old file kept beside it (its name said in
    ``finding``, fixed)."""
    ledger = session.layout.ledger
    kept = ledger.with_name(f"log.jsonl.before-doctor.{time.time_ns()}")
    write_atomic(kept, ledger.read_bytes())
    write_atomic(ledger, data)
    finding.fixed = True
    finding.problem += f" (the old file is .auto/{kept.name})"
    session.reload()


def _check_lost_entries(session: Session, exam: Examination, fix: bool) -> set[int]:
    """Lines lost from between others of the ledger (runs, an incumbent's sample, a hook's
    line, an event), which the state ref holds: put back at their places, the old file kept
    beside it, before the runs are looked at one by one (which put a run back by its number
    alone). Returns the numbers of the runs so put back (without ``fix``: that would be)."""
    layout = session.layout
    current = layout.ledger.read_bytes()
    merged = with_lost_entries(current, saved_ledger(session.repo, session.config.session_id))
    if merged is None:
        return set()
    data, count = merged
    finding = exam.add(f"the ledger {layout.ledger} lost {count} line{'s' if count > 1 else ''} "
                       "from between others, which the state ref holds",
                       "restore them from the state ref")
    if fix:
        _rewrite_ledger(session, finding, data)
    return run_numbers(data) - run_numbers(current)


def _check_header(session: Session, exam: Examination, fix: bool) -> None:
    """The ledger has no configuration header: put back from the state ref when it has one."""
    layout = session.layout
    if has_our_header(layout.ledger.read_bytes()):
        return
    headed = with_lost_header(layout.ledger.read_bytes(),
                              saved_ledger(session.repo, session.config.session_id))
    finding = exam.add(f"the ledger {layout.ledger} has no configuration header line",
                       "restore it from the state ref" if headed is not None else None)
    if headed is None:
        finding.problem += (" and the state ref holds none: start a new segment (git "
                            "autoresearch start --new-segment)")
    elif fix:
        write_atomic(layout.ledger, headed)
        forget_state_cache(session.repo, layout.ledger)
        finding.fixed = True
        session.reload()


def _check_malformed(session: Session, exam: Examination, fix: bool,
                     saved_lines: SavedLines) -> dict[int, bytes]:
    """Ledger lines that are no readable record: moved aside. Returns the lines that put back
    the runs they named (run number -> line), from the state ref's tip or history or the joined
    clones' ledger refs (:func:`_from_history`, added to ``saved_lines``): a run's line damaged
    by hand comes back as it was recorded."""
    book = session.ledger
    if not book.malformed:
        return {}
    named = [bad.run for bad in book.malformed if bad.run is not None
             and book.find(bad.run) is None]
    _from_history(session, saved_lines, named)
    restored = {number: saved_lines[number] for number in named if number in saved_lines}
    found = [exam.add(f"ledger line {bad.line} is not a readable record ({bad.reason})",
                      "move it to .auto/log.rejected.jsonl"
                      + (f" and restore run {bad.run}'s line from "
                         f"{saved_lines.source(bad.run)}" if bad.run is not None
                         and bad.run in restored else "")) for bad in book.malformed]
    if fix:
        set_aside(session.layout.ledger, book.malformed)
        forget_state_cache(session.repo, session.layout.ledger)
        for finding in found:
            finding.fixed = True
        session.reload()
    return restored


def _check_lost_keeps(session: Session, exam: Examination, lost: list[int],
                      saved_lines: SavedLines, known: dict[int, bytes]
                      ) -> dict[int, bytes]:
    """Kept runs the state ref was last mirrored with whose lines the ledger lost, and that
    nothing else here restores (a baseline, a keep that committed nothing: no trailer or
    attempt ref names them); the lines that restore them, from the state ref."""
    wanted = [n for n in lost if n not in known and session.ledger.find(n) is None]
    _from_history(session, saved_lines, wanted)
    additions = {}
    for number in wanted:
        finding = exam.add(f"run {number} was kept and the state ref holds its line, but the "
                           f"ledger lost it")
        if number in saved_lines:
            additions[number] = saved_lines[number]
            finding.fix = f"restore the run's line from {saved_lines.source(number)}"
    return additions


def _check_interrupted(session: Session, exam: Examination, fix: bool) -> None:
    """A keep or revert that was killed: finished, rolled back or set aside."""
    intent = session.interrupted()
    if intent is None:
        return
    finding = exam.add(intent.interrupted_text(),
                       "finish it, roll it back, or set it aside when HEAD has moved")
    if fix:
        from ..record.recovery import recover

        recovered = recover(session, abandon=True)
        exam.warnings += recovered.warnings
        finding.fixed = recovered.note is not None
        finding.done = recovered.note


def _check_replay(session: Session, exam: Examination, fix: bool) -> None:
    """A worker's replay that was killed: finished (the candidate back in the work tree)."""
    if session.worker is None:
        return
    from ..workers.replay import finish_interrupted_replay, interrupted_replay

    said = interrupted_replay(session)
    if said is None:
        return
    finding = exam.add(said, "finish it: the candidate back in the work tree")
    if fix:
        finding.done = finish_interrupted_replay(session)
        finding.fixed = finding.done is not None


def _check_trailers(session: Session, exam: Examination, exists: bool) -> list[TrailerCommit]:
    """Untrusted ``Result:`` trailers on the session branch, and disagreements between it and
    the ledger (a kept run missing from the ledger is :func:`_check_kept_runs`'); returns the
    branch's trailer log (empty when the branch does not exist)."""
    book = session.ledger
    branch = session_branch(session.config.session_id)
    base = (book.segments[0].header or {}).get("base_commit")
    log = trailer_log(session.repo, branch, base) if exists else []
    for commit in bad_trailers(log):
        exam.add(f"commit {commit} has a Result trailer that is not a JSON object of finite "
                 "numbers; it is not trusted")
    for problem in reconcile(session.repo, book, branch, base, log).problems if exists else []:
        if "but the ledger has no such keep" not in problem:
            exam.add(problem)
    return log


def _check_rewritten(session: Session, exam: Examination, log: list[TrailerCommit],
                     fix: bool) -> None:
    """Runs whose recorded commit is on no branch while a commit of the session branch carries
    their ``Autoresearch-Run`` and ``Autoresearch-Session`` trailers (history rewritten after
    the session: :func:`history.trailers.rewritten`); with ``fix``, the ledger's ``commit`` fields
    are rewritten (the old ids kept in ``commit_before_rewrite``) and the state ref mirrored."""
    if not log:
        return
    sid = session.config.session_id
    branch = session_branch(sid)
    base = (session.ledger.segments[0].header or {}).get("base_commit")
    moved = rewritten(session.repo, session.ledger, branch, sid, base, log)
    findings = [exam.add(m.problem(branch, sid), "update the ledger's commit fields")
                for m in moved]
    if not fix or not moved:
        return
    replace_commits(session.layout.ledger,
                    {m.run: (m.recorded, session.repo.short(m.commit)) for m in moved})
    forget_state_cache(session.repo, session.layout.ledger)
    for finding in findings:
        finding.fixed = True
    session.reload()
    exam.warnings += session.mirror_state("doctor --fix: commits found again by their trailers")


def _check_kept_runs(session: Session, exam: Examination, log: list[TrailerCommit],
                     saved_lines: SavedLines, known: dict[int, bytes]
                     ) -> dict[int, bytes]:
    """Kept runs the branch's trailers record that the ledger lacks (and ``known`` does not
    restore) or calls otherwise; the lines that restore them (run number -> line): from the
    state ref, or rebuilt from the trailer. Past :data:`NAMED_ONE_BY_ONE`, one finding for
    each way they are restored (:func:`_say`)."""
    book = session.ledger
    base = (book.segments[0].header or {}).get("base_commit")
    additions: dict[int, bytes] = {}
    branch = session_branch(session.config.session_id)
    kept = {n: info for n, info in read_trailers(session.repo, branch, base, log).items()
            if n not in known}
    _from_history(session, saved_lines, [n for n in kept if book.find(n, ours=True) is None])
    lacking: list[Told] = []
    for number, info in sorted(kept.items()):
        run = book.find(number, ours=True)
        if run is not None:
            if run.status != "keep":
                exam.add(f"commit {info['commit'][:7]} records run {number} as kept, but the "
                         f"ledger says {run.status}")
            continue
        one = (f"commit {info['commit'][:7]} records run {number} as kept, but the ledger "
               f"has no run {number}")
        many = "{count} commits of the branch record runs as kept that the ledger lacks: runs "\
            "{runs}"
        if number in saved_lines:
            additions[number] = saved_lines[number]
            source = saved_lines.source(number)
            lacking.append(Told(number, one, f"restore the run's line from {source}", many,
                                f"restore the runs' lines from {source}"))
            continue
        result = info["result"]
        metric_name = session.config.metric_name  # the segment the line goes into measures it
        value = ledger_mod.finite(result.get(metric_name))
        if value is None:
            lacking.append(Told(number, f"{one}, and its Result trailer gives no {metric_name}",
                                None, f"{many}, and their Result trailers give no "
                                f"{metric_name}", None))
            continue
        if not _intended(session, number, info["commit"], value):
            lacking.append(Told(
                number, f"{one}, and no keep of this tool made it (no intent record or state "
                "ref knows it): it is not adopted", None, f"{many}, and no keep of this tool "
                "made them (no intent record or state ref knows them): they are not adopted",
                None))
            continue
        meta = commit_info(session.repo, info["commit"])
        lacking.append(Told(number, one, "rebuild the run's line from its trailer", many,
                            "rebuild the runs' lines from their trailers"))
        additions[number] = ledger_mod.dumps(run_record(
            number, info["commit"][:7], result[metric_name],
            {k: v for k, v in result.items() if k not in ("status", metric_name)
             and ledger_mod.finite(v) is not None}, "keep", meta["description"],
            meta["time"] * 1000, session.segment.index, rebuilt_from="trailer",
            committed=True)).encode()
    _say(exam, lacking)
    return additions


@dataclass
class Told:
    """A finding about run ``number``: its ``problem`` and ``fix`` said of it alone, and
    ``many`` (with ``{count}`` and ``{runs}`` to fill) and ``many_fix`` said of several."""

    number: int
    problem: str
    fix: str | None
    many: str
    many_fix: str | None


def _say(exam: Examination, told: list[Told]) -> None:
    """A finding for each of ``told``; past :data:`NAMED_ONE_BY_ONE` of them, one for each way
    of saying them, its runs as ranges (a ledger cut after a long night: a line a run drowned
    what else doctor said)."""
    if len(told) <= NAMED_ONE_BY_ONE:
        for one in told:
            exam.add(one.problem, one.fix)
        return
    groups: dict[tuple[str, str | None], list[Told]] = {}
    for one in told:
        groups.setdefault((one.many, one.many_fix), []).append(one)
    for (many, fix), alike in groups.items():
        if len(alike) == 1:
            exam.add(alike[0].problem, alike[0].fix)
        else:
            exam.add(many.format(count=len(alike), runs=_spans(t.number for t in alike)), fix)


def _intended(session: Session, number: int, commit: str, metric: float) -> bool:
    """Whether a keep of this tool made ``commit`` as run ``number``: an intent record of this
    work tree (:func:`record.intents.written`: one interrupted, or set aside) is the keep of run
    ``number``, from the commit's parent, with the trailer's ``metric``. A commit made by
    hand with our trailers (an agent committing around the loop) matches none."""
    parent = session.repo.resolve(f"{commit}^")
    for intent in intents.written(session.layout.intent):
        recorded = intent.record["metric"] if intent.record is not None else None
        if intent.op == "keep" and intent.run == number and intent.head == parent \
                and ledger_mod.finite(recorded) == metric:
            return True
    return False


def _check_attempts(session: Session, exam: Examination, saved_lines: SavedLines,
                    known: dict[int, bytes]) -> dict[int, bytes]:
    """Attempt refs of runs the ledger lacks (and ``known`` does not restore); the lines that
    restore them: from the state ref, or rebuilt from the attempt commit. Past
    :data:`NAMED_ONE_BY_ONE`, one finding for each way they are restored (:func:`_say`)."""
    repo, sid = session.repo, session.config.session_id
    base = (session.ledger.segments[0].header or {}).get("base_commit")
    additions: dict[int, bytes] = {}
    lacking: list[Told] = []
    attempts = _attempts(session)
    # ledger.find's test, at once; asked only of runs with an attempt ref (it decodes the line).
    ours = {run.number for run in session.ledger.runs if run.number in attempts and run.ours}
    _from_history(session, saved_lines, [n for n in attempts
                                         if n not in ours and n not in known])
    for number, oid in sorted(attempts.items()):
        if number in ours or number in known:
            continue
        if isinstance(base, str) and base and not repo.is_ancestor(base, f"{oid}^"):
            # An earlier session's, left under the same id (older versions reused ids).
            exam.add(f"attempt ref {attempt_ref(sid, number)} is not of this session (its "
                     "commit is not after the session's base commit): not imported")
            continue
        one, many = (f"attempt ref of run {number} has no ledger line",
                     "{count} attempt refs have no ledger line: runs {runs}")
        if number in saved_lines:
            additions[number] = saved_lines[number]
            source = saved_lines.source(number)
            lacking.append(Told(number, one, f"restore the run's line from {source}", many,
                                f"restore the runs' lines from {source}"))
            continue
        meta = commit_info(repo, oid)
        if meta["status"] not in ledger_mod.STATUSES:
            lacking.append(Told(number, one, None, many, None))
            continue
        lacking.append(Told(number, one, "rebuild the run's line from its attempt commit", many,
                            "rebuild the runs' lines from their attempt commits"))
        additions[number] = ledger_mod.dumps(run_record(
            number, repo.short(repo.resolve(f"{oid}^") or oid),
            0 if meta["status"] == "crash" else None, {}, meta["status"],
            meta["description"], meta["time"] * 1000, session.segment.index,
            attempt_ref=attempt_ref(sid, number), rebuilt_from="attempt")).encode()
    _say(exam, lacking)
    return additions


# More runs than this that name refs that do not exist are one finding, not one each.
NAMED_ONE_BY_ONE = 10
# A ref name as this tool writes one (refs/autoresearch/<session>/attempts/<run>): no
# revision syntax (``^``, ``~``, ``@{``, ``:``) that git would read as something else.
PLAIN_REF = re.compile(r"refs/[A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)*")


def _check_named_refs(session: Session, exam: Examination) -> None:
    """Attempt refs that ledger lines name and that do not exist (and that no ``gc`` event
    says it deleted): a finding each, or one for them all when there are more than
    :data:`NAMED_ONE_BY_ONE` (a clone that fetched the branch and the state ref alone lacks
    every one)."""
    collected = ledger_mod.collected_refs(session.ledger)
    # The session's refs listed once, not a git call per run: a plain ref name below them
    # that is not listed does not exist; the others (another session's, a ref to a tag, a
    # name git reads otherwise) are looked up together.
    prefix = session.namespace + "/"
    listed = session.repo.ref_kinds(prefix)
    named = [(run.number, ref) for run in session.ledger.runs
             if isinstance(ref := run.data.get("attempt_ref"), str) and ref
             and ref not in collected and listed.get(ref) != "commit"]
    asked = [ref for _, ref in named
             if ref in listed or not (ref.startswith(prefix) and PLAIN_REF.fullmatch(ref))]
    found = resolve_many(session.repo, asked) if asked else {}
    missing = [(number, ref) for number, ref in named if ref not in found]
    numbers = {number for number, _ in missing}
    if len(numbers) > NAMED_ONE_BY_ONE:
        number, ref = min(missing)
        exam.add(f"{len(numbers)} runs name attempt refs that do not exist: runs "
                 f"{_spans(numbers)} (run {number} names {ref}); a clone brings them from a "
                 "remote that has them with git autoresearch pull")
        return
    for number, ref in missing:
        exam.add(f"run {number} names {ref}, which does not exist")


def _spans(numbers: Iterable[int]) -> str:
    """Run numbers as ascending ranges, ``10-39, 45, 50-59`` (a number once)."""
    parts: list[str] = []
    ordered = sorted(set(numbers))
    start = 0
    for index, number in enumerate(ordered):
        if index + 1 == len(ordered) or ordered[index + 1] != number + 1:
            first = ordered[start]
            parts.append(str(first) if first == number else f"{first}-{number}")
            start = index + 1
    return ", ".join(parts)


def _check_scope_refs(session: Session, exam: Examination) -> None:
    """Set-aside refs (``scope/<run>``) that no recorded run names."""
    book = session.ledger
    named = set()
    for run in book.runs:
        if isinstance(run.data.get("scope_ref"), str):
            named.add(run.data["scope_ref"])
        if isinstance(run.data.get("scope_refs"), list):
            named.update(str(ref) for ref in run.data["scope_refs"])
    prefix = scope_prefix(session.config.session_id)
    # ... and those of the run about to be recorded (a pending measurement) belong to it;
    # a record that names its set-asides (scope_refs) names them all.
    recorded = {str(run.number) for run in book.runs
                if not isinstance(run.data.get("scope_refs"), list)} | {str(session.next_run())}
    for ref in session.repo.for_each_ref(prefix):
        # scope/N.2, scope/N.3, ...: measurements of run N taken again (or dropped as stale)
        # before it was recorded; they belong to run N as much as the one it names.
        if ref not in named and ref[len(prefix):].split(".")[0] not in recorded:
            exam.add(f"{ref} holds changes set aside (outside the scope or to readonly files) "
                     f"that no recorded run names (see them: git show {ref})")


def _check_state(session: Session, exam: Examination, fix: bool,
                 coming: Collection[int] = ()) -> None:
    """The state ref is missing or behind the session files: mirrored again (and once more
    without the mirror's cache when that did not make it hold them: a cache that names other
    blobs than the ledger's pieces, edited by hand)."""
    problem = _state_problem(session, exam)
    if problem is None:
        if fix and exam.notes:
            problems = session.mirror_state("doctor --fix")
            exam.warnings += problems
            if not problems:
                exam.notes.clear()
        return
    kept = session.kept_lines()
    # (the kept runs whose lines --fix puts back, ``coming``, block nothing)
    blocked = [] if kept is None else [
        n for n in mirrored_keeps(session.repo, session.config.session_id, kept)
        if fix or n not in coming]
    if blocked:
        # (the mirror refuses to lose those lines: a person puts them back or starts over)
        runs = ", ".join(map(str, blocked))
        exam.add(f"{problem}, and is not mirrored while the ledger lacks the line of kept "
                 f"run{'s' if len(blocked) > 1 else ''} {runs}, which it holds")
        return
    finding = exam.add(problem, "mirror the session files on the state ref")
    if fix:
        problems = session.mirror_state("doctor --fix")
        if not problems and _state_problem(session) is not None:
            forget_state_cache(session.repo, session.layout.ledger)
            problems = session.mirror_state("doctor --fix")
        exam.warnings += problems
        finding.fixed = not problems


# The session files an agent edits between runs: a state ref behind them is no problem.
_NOTES = ("prompt.md", "ideas.md", "final.md")


def _state_problem(session: Session, exam: Examination | None = None) -> str | None:
    """What is wrong with the state ref: there is none, or it does not hold the ledger, the
    configuration or the hooks as they are; None when it does. The notes an agent edits
    between runs (``prompt.md``, ``ideas.md``, ``final.md``), which the next recorded run
    mirrors, are no problem: ``exam`` notes them."""
    found = behind_state(session.repo, session.layout.auto, session.config.session_id)
    if found is None:
        return "there is no state ref"
    if any(name not in _NOTES for name in found):
        return "the state ref does not hold the current session files"
    if found and exam is not None:
        them = "them" if len(found) > 1 else "it"
        exam.notes.append(f"the state ref holds {', '.join(found)} as a command last mirrored "
                          f"{them}: the next recorded run mirrors {them} (git autoresearch "
                          "resume, or doctor --fix, does now)")
    return None


def render(exam: Examination) -> list[dict[str, Any]]:
    """The findings as ``doctor --json`` gives them: ``problem``, ``fix`` (None: needs a
    person), ``fixed``, and ``done`` when the fix was one of several (an interrupted keep
    finished, rolled back or set aside)."""
    return [{"problem": f.problem, "fix": f.fix, "fixed": f.fixed,
             **({"done": f.done} if f.done else {})} for f in exam.findings]

