"""``git autoresearch doctor``: reconcile the ledger, the branch's trailers, the attempt refs and
the state ref, say every disagreement in plain words, and rebuild what can be rebuilt.

A repair only ever adds: a ledger line rebuilt from a trailer or an attempt commit, the state ref
mirrored again, a malformed line moved aside. No record is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import ledger as ledger_mod
from .report import read_trailers
from .session import Session, _set_aside_malformed, session_branch
from .state import read as read_state


@dataclass
class Finding:
    """One disagreement: what is wrong, and whether ``--fix`` can repair it (and how)."""

    problem: str
    fix: str | None = None
    fixed: bool = False


@dataclass
class Examination:
    findings: list[Finding] = field(default_factory=list)

    def add(self, problem: str, fix: str | None = None) -> Finding:
        finding = Finding(problem, fix)
        self.findings.append(finding)
        return finding


def _attempts(session: Session) -> dict[int, str]:
    prefix = f"refs/autoresearch/{session.config.session_id}/attempts/"
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
    """Find every disagreement; with ``fix``, repair what can be repaired (adding only)."""
    exam = Examination()
    repo = session.repo
    sid = session.config.session_id
    branch = session_branch(sid)
    layout = session.layout
    book = session.ledger

    if book.malformed:
        for bad in book.malformed:
            exam.add(f"ledger line {bad.line} is not a readable record ({bad.reason})",
                     "move it to .auto/log.rejected.jsonl")
        if fix:
            _set_aside_malformed(layout, book)
            for finding in exam.findings:
                finding.fixed = True
            session.reload()
            book = session.ledger

    intent = session.interrupted()
    if intent is not None:
        finding = exam.add(f"a {intent.get('op')} of run {intent.get('run')} was interrupted",
                           "finish or roll it back")
        if fix:
            with session.lock("doctor"):
                finding.fixed = session.recovered is not None
            book = session.ledger

    if repo.current_branch() != branch:
        exam.add(f"the work tree is not on the session branch {branch}",
                 None)

    header = book.segments[0].header or {}
    trailers = read_trailers(repo, branch, header.get("base_commit"))
    rebuilt: list[dict[str, Any]] = []
    for number, info in sorted(trailers.items()):
        run = book.find(number)
        result = info["result"]
        if run is None:
            finding = exam.add(f"commit {info['commit'][:7]} records run {number} as kept, but "
                               "the ledger has no run " + str(number),
                               "add the run to the ledger from the trailer")
            metric_name = next((k for k in result if k != "status"), None)
            value = ledger_mod.finite(result.get(metric_name)) if metric_name else None
            if value is None:
                finding.fix = None
                finding.problem += " (and its Result trailer has no finite metric)"
                continue
            meta = _commit_info(session, info["commit"])
            rebuilt.append({
                "run": number, "commit": info["commit"][:7], "metric": result[metric_name],
                "metrics": {k: v for k, v in result.items()
                            if k not in ("status", metric_name)
                            and ledger_mod.finite(v) is not None},
                "status": "keep", "description": meta["description"],
                "timestamp": meta["time"] * 1000, "segment": session.segment.index,
                "confidence": None, "rebuilt_from": "trailer", "committed": True})
            finding.fixed = fix
        elif run.status != "keep":
            exam.add(f"commit {info['commit'][:7]} records run {number} as kept, but the "
                     f"ledger says {run.status}")

    for number, oid in sorted(_attempts(session).items()):
        run = book.find(number)
        if run is not None or any(r["run"] == number for r in rebuilt):
            continue
        meta = _commit_info(session, oid)
        status = meta["status"] if meta["status"] in ledger_mod.STATUSES else None
        finding = exam.add(f"attempt ref of run {number} has no ledger line",
                           "add the run to the ledger from the attempt commit"
                           if status else None)
        if status:
            rebuilt.append({
                "run": number, "commit": repo.short(repo.resolve(f"{oid}^") or oid),
                "metric": 0 if status == "crash" else None, "metrics": {}, "status": status,
                "description": meta["description"], "timestamp": meta["time"] * 1000,
                "segment": session.segment.index, "confidence": None,
                "attempt_ref": f"refs/autoresearch/{sid}/attempts/{number}",
                "rebuilt_from": "attempt"})
            finding.fixed = fix

    for run in book.runs:
        ref = run.data.get("attempt_ref")
        if isinstance(ref, str) and ref and repo.resolve(ref) is None:
            exam.add(f"run {run.number} names {ref}, which does not exist")

    if fix and rebuilt:
        ledger_mod.append(layout.ledger, sorted(rebuilt, key=lambda r: r["run"]))
        session.reload()

    saved = read_state(repo, sid)
    on_disk = layout.ledger.read_bytes() if layout.ledger.exists() else b""
    if saved is None or saved.get("log.jsonl", b"") != on_disk or (
            layout.config.exists() and saved.get("config.toml") != layout.config.read_bytes()):
        finding = exam.add("the state ref does not hold the current session files"
                           if saved is not None else "there is no state ref",
                           "mirror the session files on the state ref")
        if fix:
            session.warnings.clear()
            session.mirror_state("doctor --fix")
            finding.fixed = not session.warnings
    return exam


def render(exam: Examination) -> list[dict[str, Any]]:
    return [{"problem": f.problem, "fix": f.fix, "fixed": f.fixed} for f in exam.findings]

