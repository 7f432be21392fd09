"""``git autoresearch doctor``: reconcile the ledger, the branch's trailers, the attempt refs and
the state ref, say every disagreement in plain words, and rebuild what can be rebuilt.

A repair only ever adds: a ledger line rebuilt from a trailer or an attempt commit, the state ref
mirrored again, a malformed line moved aside. No record is deleted.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from . import ledger as ledger_mod
from .files import write_atomic
from .git import temporary_objects
from .ledger import has_our_header, lost_lines, set_aside, with_lost_header
from .refs import attempt_ref, attempts_prefix, scope_prefix, session_branch
from .report import bad_trailers, read_trailers, reconcile, trailer_log
from .session import Session
from .state import FILES as STATE_FILES
from .state import forget as forget_state_cache
from .state import read as read_state


@dataclass
class Finding:
    """One disagreement: what is wrong, and whether ``--fix`` can repair it (and how)."""

    problem: str
    fix: str | None = None
    fixed: bool = False


@dataclass
class Examination:
    """What doctor found, and the warnings of its repairs (why a fix did not take)."""

    findings: list[Finding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def add(self, problem: str, fix: str | None = None) -> Finding:
        finding = Finding(problem, fix)
        self.findings.append(finding)
        return finding


def _attempts(session: Session) -> dict[int, str]:
    prefix = attempts_prefix(session.config.session_id)
    res = session.repo.run("for-each-ref", "--format=%(refname)%00%(objectname)", prefix)
    found = {}
    for line in res.text.splitlines():
        name, _, oid = line.partition("\0")
        tail = name[len(prefix):]
        if tail.isdigit():
            found[int(tail)] = oid
    return found


def _commit_info(session: Session, oid: str) -> dict[str, Any]:
    fmt = ("%H%x00%ct%x00%(trailers:key=Autoresearch-Status,valueonly)%x00"
           "%(trailers:key=Autoresearch-Run,valueonly)%x00%B")
    parts = session.repo.run("log", "-1", f"--format={fmt}", oid).stdout.decode(
        "utf-8", "replace").split("\0")
    body = parts[4] if len(parts) > 4 else ""
    description = body.split("\n\nAutoresearch-", 1)[0].split("\n\nResult:", 1)[0].strip()
    return {"commit": parts[0], "time": int(parts[1] or 0), "status": parts[2].strip(),
            "run": parts[3].strip(), "description": description}


def examine(session: Session, *, fix: bool = False) -> Examination:
    """Find every disagreement; with ``fix``, repair what can be repaired (adding only). Runs
    under the session lock, so no command records a run in between."""
    with session.lock("doctor"):
        return _examine(session, fix)


def _state_lines(session: Session) -> dict[int, bytes]:
    """The run lines of the ledger the state ref holds, by run number."""
    state = read_state(session.repo, session.config.session_id)
    saved = state[0] if state else {}
    found: dict[int, bytes] = {}
    for raw in saved.get("log.jsonl", b"").split(b"\n"):
        # Only a line the ledger reads as a run: one set aside as malformed must not come back.
        book = ledger_mod.parse(raw)
        if book.runs and not book.malformed:
            found.setdefault(book.runs[0].number, raw)
    return found


def _insert_in_order(path: Any, additions: dict[int, bytes]) -> None:
    """Put each added run line before the first run line with a greater number."""
    lines = path.read_bytes().split(b"\n")
    out: list[bytes] = []
    pending = sorted(additions.items())
    for raw in lines:
        if not raw.strip():
            continue
        try:
            number = json.loads(raw).get("run")
        except (ValueError, AttributeError):
            number = None
        while pending and isinstance(number, int) and pending[0][0] < number:
            out.append(pending.pop(0)[1])
        out.append(raw)
    out.extend(line for _, line in pending)
    write_atomic(path, b"\n".join(out) + b"\n")


def _age(seconds: float) -> str:
    """``45s``, ``12m``, ``3h`` or ``2d`` (whole units, rounded down)."""
    for unit, size, below in (("s", 1, 120), ("m", 60, 7200), ("h", 3600, 172800)):
        if seconds < below:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds // 86400)}d"


def _git_locks(session: Session, exam: Examination) -> None:
    """A finding for each lock file of git's (never removed here: a git process may be
    running and holding it)."""
    for path, age in session.repo.lock_files():
        exam.add(f"git's lock file {path} is {_age(age)} old: a git process is running here, "
                 "or one was killed and left it; once no git process is running, remove it "
                 f"(rm {path})")


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
    repo = session.repo
    _git_locks(session, exam)
    _git_garbage(session, exam)
    sid = session.config.session_id
    branch = session_branch(sid)
    layout = session.layout
    book = session.ledger

    if layout.start_intent.exists():
        # What else looks wrong (no ledger, no state ref) is what the start had not made yet.
        exam.add(f"the start of session {sid} was interrupted (git autoresearch resume "
                 "finishes it)")
        return exam

    if not layout.ledger.exists():
        # Nothing to reconcile, and a ledger rebuilt here would have no configuration header.
        exam.add(f"the ledger {layout.ledger} is missing (git autoresearch resume restores it "
                 "from the state ref)")
        return exam

    state = read_state(repo, sid)
    saved_ledger = state[0].get("log.jsonl", b"") if state else b""
    if lost_lines(layout.ledger.read_bytes(), saved_ledger):
        finding = exam.add(f"the ledger {layout.ledger} lost its last lines, which the state ref "
                           "holds", "restore them from the state ref")
        if fix:
            kept = layout.ledger.with_name(f"log.jsonl.before-doctor.{time.time_ns()}")
            write_atomic(kept, layout.ledger.read_bytes())
            write_atomic(layout.ledger, saved_ledger)
            finding.fixed = True
            finding.problem += f" (the old file is .auto/{kept.name})"
            session.reload()
            book = session.ledger

    if not has_our_header(layout.ledger.read_bytes()):
        state = read_state(repo, sid)
        headed = with_lost_header(layout.ledger.read_bytes(),
                                  state[0].get("log.jsonl", b"")) if state else None
        finding = exam.add(f"the ledger {layout.ledger} has no configuration header line",
                           "restore it from the state ref" if headed is not None else None)
        if headed is None:
            finding.problem += (" and the state ref holds none: start a new segment (git "
                                "autoresearch start --new-segment)")
        elif fix:
            write_atomic(layout.ledger, headed)
            forget_state_cache(repo)
            finding.fixed = True
            session.reload()
            book = session.ledger

    if book.malformed:
        found = [exam.add(f"ledger line {bad.line} is not a readable record ({bad.reason})",
                          "move it to .auto/log.rejected.jsonl") for bad in book.malformed]
        if fix:
            set_aside(layout.ledger, book.malformed)
            forget_state_cache(repo)
            for finding in found:
                finding.fixed = True
            session.reload()
            book = session.ledger

    intent = session.interrupted()
    if intent is not None:
        finding = exam.add(f"a {intent.op} of run {intent.run} was interrupted",
                           "finish it, roll it back, or set it aside when HEAD has moved")
        if fix:
            from .recovery import recover

            recovered = recover(session, abandon=True)
            exam.warnings += recovered.warnings
            finding.fixed = recovered.note is not None
            book = session.ledger

    from .branches import branch_problem

    exists, problem = branch_problem(session)
    if problem:
        exam.add(problem)
    baseline = session.baseline_problem() or session.baseline_doubt()
    if baseline:
        exam.add(baseline)

    base = (book.segments[0].header or {}).get("base_commit")
    log = trailer_log(repo, branch, base) if exists else []
    for commit in bad_trailers(log):
        exam.add(f"commit {commit} has a Result trailer that is not a JSON object of finite "
                 "numbers; it is not trusted")
    for problem in reconcile(repo, book, branch, base, log).problems if exists else []:
        if "but the ledger has no such keep" not in problem:
            exam.add(problem)

    saved_lines = _state_lines(session)
    additions: dict[int, bytes] = {}
    trailers = read_trailers(repo, branch, base, log)
    for number, info in sorted(trailers.items()):
        run = book.find(number)
        if run is not None:
            if run.status != "keep":
                exam.add(f"commit {info['commit'][:7]} records run {number} as kept, but the "
                         f"ledger says {run.status}")
            continue
        finding = exam.add(f"commit {info['commit'][:7]} records run {number} as kept, but "
                           f"the ledger has no run {number}", "restore the run's line")
        if number in saved_lines:
            additions[number] = saved_lines[number]
            finding.fix = "restore the run's line from the state ref"
            continue
        result = info["result"]
        metric_name = next((k for k in result if k != "status"), None)
        value = ledger_mod.finite(result.get(metric_name)) if metric_name else None
        if value is None:
            finding.fix = None
            continue
        meta = _commit_info(session, info["commit"])
        finding.fix = "rebuild the run's line from its trailer"
        additions[number] = ledger_mod.dumps({
            "run": number, "commit": info["commit"][:7], "metric": result[metric_name],
            "metrics": {k: v for k, v in result.items() if k not in ("status", metric_name)
                        and ledger_mod.finite(v) is not None},
            "status": "keep", "description": meta["description"],
            "timestamp": meta["time"] * 1000, "segment": session.segment.index,
            "confidence": None, "rebuilt_from": "trailer", "committed": True}).encode()

    for number, oid in sorted(_attempts(session).items()):
        if book.find(number) is not None or number in additions:
            continue
        finding = exam.add(f"attempt ref of run {number} has no ledger line")
        if number in saved_lines:
            additions[number] = saved_lines[number]
            finding.fix = "restore the run's line from the state ref"
            continue
        meta = _commit_info(session, oid)
        if meta["status"] not in ledger_mod.STATUSES:
            continue
        finding.fix = "rebuild the run's line from its attempt commit"
        additions[number] = ledger_mod.dumps({
            "run": number, "commit": repo.short(repo.resolve(f"{oid}^") or oid),
            "metric": 0 if meta["status"] == "crash" else None, "metrics": {},
            "status": meta["status"], "description": meta["description"],
            "timestamp": meta["time"] * 1000, "segment": session.segment.index,
            "confidence": None, "attempt_ref": attempt_ref(sid, number),
            "rebuilt_from": "attempt"}).encode()

    named = set()
    for run in book.runs:
        ref = run.data.get("attempt_ref")
        if isinstance(ref, str) and ref and repo.resolve(ref) is None:
            exam.add(f"run {run.number} names {ref}, which does not exist")
        if isinstance(run.data.get("scope_ref"), str):
            named.add(run.data["scope_ref"])
        if isinstance(run.data.get("scope_refs"), list):
            named.update(str(ref) for ref in run.data["scope_refs"])
    prefix = scope_prefix(sid)
    # ... and those of the run about to be recorded (a pending measurement) belong to it;
    # a record that names its set-asides (scope_refs) names them all.
    recorded = {str(run.number) for run in book.runs
                if not isinstance(run.data.get("scope_refs"), list)} | {str(session.next_run())}
    for ref in repo.run("for-each-ref", "--format=%(refname)", prefix).text.splitlines():
        # scope/N.2, scope/N.3, ...: measurements of run N taken again (or dropped as stale)
        # before it was recorded; they belong to run N as much as the one it names.
        if ref not in named and ref[len(prefix):].split(".")[0] not in recorded:
            exam.add(f"{ref} holds changes set aside (outside the scope or to readonly files) "
                     f"that no recorded run names (see them: git show {ref})")

    if fix and additions:
        _insert_in_order(layout.ledger, additions)
        for finding in exam.findings:
            if finding.fix and finding.fix.startswith(("restore the run", "rebuild the run")):
                finding.fixed = True
        session.reload()

    state = read_state(repo, sid)
    saved = state[0] if state else None
    on_disk = layout.ledger.read_bytes() if layout.ledger.exists() else b""
    behind = [name for name in STATE_FILES if (layout.auto / name).is_file()
              and (saved or {}).get(name) != (layout.auto / name).read_bytes()]
    if saved is None or saved.get("log.jsonl", b"") != on_disk or behind:
        finding = exam.add("the state ref does not hold the current session files"
                           if saved is not None else "there is no state ref",
                           "mirror the session files on the state ref")
        if fix:
            problems = session.mirror_state("doctor --fix")
            exam.warnings += problems
            finding.fixed = not problems
    return exam


def render(exam: Examination) -> list[dict[str, Any]]:
    return [{"problem": f.problem, "fix": f.fix, "fixed": f.fixed} for f in exam.findings]

