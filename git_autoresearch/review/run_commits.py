"""Where each run's change is in git, and what ``show`` and the dashboard report of it: the keep
commit whose ``Autoresearch-Run`` trailer names the run, the attempt ref of a run not kept, or
the record's own ``commit`` field (a run another tool recorded), for one run
(:func:`run_commit`, :func:`shown`) or every run in a few git calls (:func:`run_commits`,
:func:`run_diffs`). No click here, and no git argv."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..git.repo import HEX_NAME
from ..runtime.errors import UsageError

if TYPE_CHECKING:
    from ..ledger import Run
    from ..session.session import Session


@dataclass(frozen=True)
class Shown:
    """What ``show`` reports of one run: its ``run``, the commit its diff is of (None: none),
    where that commit was found (``diff_source``: ``trailer``, the keep commit whose
    ``Autoresearch-Run`` trailer names the run; ``attempt_ref``, the attempt commit of a run not
    kept; ``record``, the record's own ``commit`` field, for a run another tool recorded; None),
    that ``diff`` (``git show`` text), each set-aside (``ref``, ``commit``, the ``paths``
    outside the scope it took away), ``measured``: the record's commit when it names the
    code the run started from rather than a commit of its own (None otherwise), and
    ``aside_before``: every path the set-asides took away before measuring (readonly ones in
    the scope too; None when a set-aside ref no longer exists: not known), so that the
    violations not among them were put back when the run was recorded."""

    run: Run
    diff_commit: str | None
    diff: str
    set_aside: list[dict[str, Any]]
    diff_source: str | None = None
    measured: str | None = None
    collected: bool = False  # its attempt ref was deleted by git autoresearch gc
    aside_before: frozenset[str] | None = frozenset()

    def to_json(self) -> dict[str, Any]:
        """The ``show --json`` document (``touched``: :func:`review.report.touched` of the
        record; a missing or unknown ``status`` shown as read, ``keep``, the one written in
        ``recorded_status``, as ``log --json`` shows it)."""
        from ..ledger import shown_record, status_as_read
        from .report import touched

        return {"record": status_as_read(shown_record(self.run.data)),
                "diff_commit": self.diff_commit,
                "diff_source": self.diff_source, "diff": self.diff,
                "set_aside": self.set_aside, "collected": self.collected,
                "touched": touched(self.run.data)}


def same_commit(a: str, b: str) -> bool:
    """Whether two commit ids, full or abbreviated (pi-autoresearch records 7 characters),
    name the same commit: one is a prefix of the other (both non-empty)."""
    a, b = a.strip().lower(), b.strip().lower()
    return bool(a) and bool(b) and (a.startswith(b) or b.startswith(a))


def missing_commit(run: Run, commit: str | None, measured: str | None) -> str | None:
    """The ``commit`` ``run``'s record names when it is not in this repository (or is no
    object id, ``HEAD~1``), for a run whose change is nowhere else: no ``commit``
    (:func:`run_commit` found for it, which looked the record's up), no attempt ref, no
    commit it was ``measured`` on; None otherwise."""
    recorded = run.data.get("commit")
    if commit is not None or measured or run.data.get("attempt_ref") \
            or not isinstance(recorded, str) or not recorded.strip():
        return None
    return recorded.strip()


def _record_commit(session: Session, run: Run) -> tuple[str | None, str | None]:
    """The commit of a run found from its record's own ``commit`` field (a run recorded by
    another tool: pi-autoresearch, karpathy/autoresearch), as (its own commit, the commit it
    started from), at most one of them set. A keep that committed nothing (``committed``
    false, or the same commit as an earlier run: pi-autoresearch 1.6.2,
    extensions/pi-autoresearch/index.ts:2393 keeps HEAD then) and a run not kept whose commit
    is a kept run's (pi's discard records HEAD, index.ts:2277) started from that commit; any
    other commit that exists is the run's own (karpathy/autoresearch program.md:98 commits each
    experiment before running it)."""
    recorded = run.data.get("commit")
    if not isinstance(recorded, str) or not HEX_NAME.fullmatch(recorded.strip()):
        return None, None
    commit = session.repo.resolve(recorded.strip())
    if commit is None:
        return None, None
    earlier = [r for r in session.ledger.runs if r.number != run.number
               and (r.status == "keep" or run.status == "keep")
               and (run.status != "keep" or r.number < run.number)]
    shared = any(same_commit(str(r.data.get("commit") or ""), recorded) for r in earlier)
    if run.data.get("committed") is False or shared or (run.status == "keep" and _baseline(
            session, run, commit)):
        return None, recorded.strip()
    return commit, None


def _baseline(session: Session, run: Run, commit: str) -> bool:
    """Whether ``run`` is the first run of the ledger and ``commit``, which it records, is no
    keep commit (no ``Result:`` trailer): a baseline, which measured the code as it was and
    committed nothing."""
    from ..history.trailers import has_result

    first = session.ledger.runs[0] if session.ledger.runs else None
    return first is not None and first.number == run.number and not has_result(
        session.repo, commit)


@dataclass(frozen=True)
class RunCommit:
    """Where a run's change is in git: its ``commit`` (full object id; None: none), the
    ``source`` of it (``trailer``: the keep commit whose ``Autoresearch-Run`` trailer names the
    run; ``attempt_ref``; ``record``: the record's own ``commit`` field; None), the commit the
    run was ``measured`` on when the record names that instead of a commit of its own, and
    whether ``git autoresearch gc`` deleted its attempt ref (``collected``)."""

    run: Run
    commit: str | None
    source: str | None
    measured: str | None = None
    collected: bool = False


def run_commit(session: Session, number: int) -> RunCommit:
    """Run ``number`` of ``session`` and its commit (:class:`RunCommit`); :class:`UsageError`
    (exit 2) when the ledger has no such run. The commit is the keep commit whose
    ``Autoresearch-Run`` trailer names the run, else the attempt ref's (a run not kept), else
    the record's own ``commit`` field (:func:`_record_commit`)."""
    from ..history.refs import session_branch
    from ..history.trailers import read_trailers
    from ..ledger import collected_refs

    run = session.ledger.find(number)
    if run is None:
        last = session.ledger.next_run_number - 1
        raise UsageError(f"no run {number} in the ledger (runs are 1 to {last})"
                         if last else f"no run {number}: the ledger has no runs yet")
    repo = session.repo
    target, source, measured = None, None, None
    if run.status == "keep" and not session.read_only:
        base = (session.ledger.segments[0].header or {}).get("base_commit")
        info = read_trailers(repo, session_branch(session.config.session_id), base,
                             recorded={number: str(run.data.get("commit") or "")})
        if number in info:
            target, source = info[number]["commit"], "trailer"
    elif run.status != "keep" and run.data.get("attempt_ref"):
        target = repo.resolve(str(run.data["attempt_ref"]))
        source = "attempt_ref" if target else None
    # (a keep's attempt ref holds what it set aside, not its change)
    if target is None and (run.status == "keep" or not run.data.get("attempt_ref")):
        target, measured = _record_commit(session, run)
        source = "record" if target else None
    collected = target is None and run.data.get("attempt_ref") in collected_refs(session.ledger)
    return RunCommit(run, target, source, measured, collected)


def shown(session: Session, number: int) -> Shown:
    """Run ``number`` of ``session`` with its diff (of its commit: :func:`run_commit`);
    :class:`UsageError` (exit 2) when the ledger has no such run."""
    found = run_commit(session, number)
    run, repo = found.run, session.repo
    refs = run.data.get("scope_refs") or (
        [run.data["scope_ref"]] if isinstance(run.data.get("scope_ref"), str) else [])
    set_aside = []
    bounds = session.bounds
    aside_before: set[str] | None = set()
    for ref in refs:
        commit = repo.resolve(str(ref))
        # The set-aside commit holds the whole experiment; only these paths were removed.
        changed = repo.changed_paths(f"{commit}^", commit) if commit else []
        set_aside.append({"ref": ref, "commit": commit,
                          "paths": [p for p in changed if not bounds.in_scope(p)]})
        if aside_before is not None and commit is not None:
            aside_before.update(p for p in changed
                                if not bounds.in_scope(p) or bounds.is_readonly(p))
        else:
            aside_before = None
    target = found.commit
    return Shown(run, target, repo.show_patch(target) if target else "", set_aside,
                 found.source, found.measured, found.collected,
                 None if aside_before is None else frozenset(aside_before))


# The page's caps on embedded patches: one run's (cut at a line) and all runs' together (the
# oldest runs go without).
DIFF_RUN_BYTES = 64 * 1024
DIFF_TOTAL_BYTES = 8 * 1024 * 1024


def run_commits(session: Session) -> dict[int, RunCommit]:
    """:func:`run_commit` of every run of the ledger at once (run number -> :class:`RunCommit`),
    in three git calls whatever the number of runs: the session branch's trailers, and one
    ``cat-file --batch-check`` for the attempt refs and recorded commits."""
    from ..git.objects import resolve_many
    from ..history.refs import session_branch
    from ..history.trailers import has_result, read_trailers, recorded_keeps
    from ..ledger import collected_refs

    book, repo = session.ledger, session.repo
    runs = book.runs
    info: dict[int, dict[str, Any]] = {}
    if not session.read_only and any(r.status == "keep" for r in runs):
        base = (book.segments[0].header or {}).get("base_commit")
        info = read_trailers(repo, session_branch(session.config.session_id), base,
                             recorded=recorded_keeps(book))
    refs = {r.number: str(r.data["attempt_ref"]) for r in runs
            if r.status != "keep" and r.data.get("attempt_ref")}
    recorded = {r.number: r.data["commit"].strip() for r in runs
                if isinstance(r.data.get("commit"), str)
                and HEX_NAME.fullmatch(r.data["commit"].strip())}
    wanted = [*refs.values(), *(c for n, c in recorded.items() if n not in refs
                                and n not in info)]
    resolved = resolve_many(repo, wanted)
    shared = _shared_commits(runs, recorded)
    collected = collected_refs(book)
    found: dict[int, RunCommit] = {}
    for index, run in enumerate(runs):
        target, source, measured = None, None, None
        if run.status == "keep" and run.number in info:
            target, source = info[run.number]["commit"], "trailer"
        elif run.number in refs:
            target = resolved.get(refs[run.number])
            source = "attempt_ref" if target else None
        ref = run.data.get("attempt_ref")
        if target is None and not ref and run.number in recorded:
            commit = resolved.get(recorded[run.number])
            if commit is None:
                pass
            elif run.data.get("committed") is False or run.number in shared or (
                    run.status == "keep" and index == 0 and not has_result(repo, commit)):
                measured = recorded[run.number]
            else:
                target, source = commit, "record"
        found[run.number] = RunCommit(run, target, source, measured,
                                      target is None and ref in collected)
    return found


def _shared_commits(runs: list[Run], recorded: dict[int, str]) -> set[int]:
    """The runs whose recorded commit is another's (:func:`same_commit`) as
    :func:`_record_commit` reads it: for a keep, any earlier run's; for a run not kept, a
    keep's. Runs are bucketed by the shortest recorded length, so a ledger of distinct commits
    is read in linear time."""
    if not recorded:
        return set()
    shortest = min(len(c) for c in recorded.values())
    buckets: dict[str, list[Run]] = {}
    for run in runs:
        if run.number in recorded:
            buckets.setdefault(recorded[run.number][:shortest].lower(), []).append(run)
    found = set()
    for run in runs:
        mine = recorded.get(run.number)
        if mine is None:
            continue
        for other in buckets[mine[:shortest].lower()]:
            if other.number == run.number or not same_commit(recorded[other.number], mine):
                continue
            if (run.status == "keep" and other.number < run.number) or (
                    run.status != "keep" and other.status == "keep"):
                found.add(run.number)
                break
    return found


def run_diffs(session: Session, *, per_run: int | None = None,
              total: int | None = None) -> dict[int, tuple[str, str]]:
    """Every run's patch for the dashboard: run number -> (patch text, ``""``) or (``""``, why
    there is none). The patches (:func:`run_commits`, then one ``git diff-tree --stdin``) are
    headed by ``commit <id>`` and cut at a line past ``per_run`` bytes (UTF-8), saying how many
    lines were left; newest runs first, once ``total`` bytes are spent the older runs get no
    patch, and say so. The caps default to :data:`DIFF_RUN_BYTES` and
    :data:`DIFF_TOTAL_BYTES`."""
    per_run = DIFF_RUN_BYTES if per_run is None else per_run
    total = DIFF_TOTAL_BYTES if total is None else total
    room = f"{total // 2**20} MiB" if total % 2**20 == 0 else f"{total / 1024:g} KiB"
    from ..git.objects import patches as read_patches

    commits = run_commits(session)
    patches = read_patches(session.repo, [c.commit for c in commits.values() if c.commit])
    first = session.ledger.runs[0].number if session.ledger.runs else None
    spent = 0
    found: dict[int, tuple[str, str]] = {}
    for number in sorted(commits, reverse=True):
        where = commits[number]
        patch = patches.get(where.commit or "")
        if not patch:
            found[number] = ("", "its commit changes no file" if patch == "" else
                             _no_diff(where, number == first))
            continue
        patch = f"commit {where.commit}\n\n" + _capped(patch, per_run)
        size = len(patch.encode("utf-8"))
        if spent + size > total:
            found[number] = ("", f"left out: the page holds at most {room} of diffs, spent "
                                 "on newer runs")
            spent = total
            continue
        spent += size
        found[number] = (patch, "")
    return found


def _no_diff(where: RunCommit, first: bool) -> str:
    """Why a run has no patch to show."""
    run = where.run
    ref, recorded = run.data.get("attempt_ref"), run.data.get("commit")
    if where.collected:
        return "its attempt ref was deleted by gc"
    if where.commit is not None:
        return f"commit {where.commit[:7]} has no patch"
    if where.measured is not None:
        return "the baseline kept no change" if first and run.status == "keep" else \
            f"no change of its own (measured on {where.measured[:7]})"
    if ref:
        return f"its attempt ref {ref} is gone"
    if isinstance(recorded, str) and recorded.strip():
        return f"commit {recorded.strip()} is not in this repository"
    return "recorded without a commit"


def _capped(patch: str, limit: int) -> str:
    """``patch`` whole, or its first lines within ``limit`` bytes and ``… cut, N more
    lines``."""
    data = patch.encode("utf-8")
    if len(data) <= limit:
        return patch
    head = data[:limit]
    head = head[:head.rfind(b"\n") + 1]
    kept = head.decode("utf-8", "ignore")
    return kept + f"… cut, {patch.count(chr(10)) - kept.count(chr(10))} more lines\n"
