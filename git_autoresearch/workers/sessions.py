"""Every session of a repository (``git autoresearch sessions``) and the clean-up of finished
ones (``git autoresearch gc``).

A session is known by its branch (``autoresearch/<id>``), its state ref
(``refs/autoresearch/<id>/state``) or the ``.auto/`` folder of this work tree. What it holds is
read from ``.auto/`` when that folder is this session's (it is the freshest copy), else from the
state ref, else from the ``Result:`` trailers of its branch. Its state is, first that applies:

- ``finalized``: the branch ``autoresearch/<id>-final`` exists (what ``finalize`` makes);
- ``merged``: the session branch has commits beyond its base and its tip is an ancestor of the
  current branch's HEAD (not the session branch itself) or of the default branch, or their
  changes are there by patch id (a squash merge, cherry-picks);
- ``stopped``: the last thing recorded after the last run is a ``stopped`` event (the STOP
  sentinel), or a STOP sentinel waits in this work tree, or the session is at work nowhere here
  (neither ``.auto/``'s session nor its branch checked out in a worktree);
- ``running``: anything else.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import ledger as ledger_mod
from ..git import Repo
from ..git.remote import default_branch, is_ancestor, update_refs
from ..history.refs import (
    BRANCH_PREFIX,
    NAMESPACE,
    WORKER_BRANCH_PREFIX,
    attempts_prefix,
    claims_prefix,
    final_branch,
    namespace,
    scope_prefix,
    session_branch,
    session_of_state_ref,
)
from ..runtime.atomic import WriteFailed, check_writable
from ..runtime.errors import Refused, UsageError
from ..session.config import SESSION_ID_RE, parse_toml
from ..session.layout import Layout

# The end of a branch finalize makes: autoresearch/<id>-final, autoresearch/<id>-final-<run>.
FINAL_NAME = re.compile(r"-final(-\d+)?$")
STATES = ("running", "stopped", "merged", "finalized")
FINISHED = ("merged", "finalized")


@dataclass
class SessionInfo:
    """One session as ``sessions`` lists it: ``id``, ``goal``, ``metric`` (name), ``unit``,
    ``direction``, ``runs`` (recorded runs, all segments), ``kept``, ``best`` (the current
    segment's best metric, None: no keep), ``gain_pct`` (best against baseline, percent),
    ``state`` (one of :data:`STATES`), ``last_activity`` (epoch milliseconds of the newest
    ledger line, None: unknown), ``source`` (``.auto``, ``state ref`` or ``trailers``), the
    ``branch`` tip (None: no branch) and its ``refs`` below ``refs/autoresearch/<id>/``."""

    id: str
    goal: str | None = None
    metric: str | None = None
    unit: str = ""
    direction: str = "lower"
    runs: int = 0
    kept: int = 0
    best: float | None = None
    gain_pct: float | None = None
    state: str = "running"
    last_activity: int | None = None
    source: str = "none"
    branch: str | None = None
    refs: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``sessions --json`` entry; ``last_activity`` as ISO 8601 UTC."""
        return {"id": self.id, "goal": self.goal, "metric": self.metric, "unit": self.unit,
                "direction": self.direction, "runs": self.runs, "kept": self.kept,
                "best": self.best, "gain_pct": self.gain_pct, "state": self.state,
                "last_activity": iso(self.last_activity), "source": self.source,
                "branch": session_branch(self.id) if self.branch else None,
                "attempt_refs": len(self.collectable(attempts_only=True)),
                "scope_refs": len([r for r in self.refs if r.startswith(scope_prefix(self.id))])}

    def collectable(self, *, attempts_only: bool = False) -> dict[str, str]:
        """The attempt and scope refs of the session, and its claims on ideas (what ``gc``
        deletes), by full name."""
        prefixes = (attempts_prefix(self.id),) if attempts_only else (
            attempts_prefix(self.id), scope_prefix(self.id), claims_prefix(self.id))
        return {ref: oid for ref, oid in self.refs.items() if ref.startswith(prefixes)}


def iso(ms: int | None) -> str | None:
    """Epoch milliseconds as ``2026-11-29T12:00:00Z``; None stays None."""
    if ms is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def session_ids(repo: Repo) -> list[str]:
    """Every session id of the repository, sorted: session branches (not the ``-final``
    branch of a known session), state refs, and the session of ``.auto/`` here."""
    ids: set[str] = set()
    branches = []
    for ref in repo.for_each_ref("refs/heads/" + BRANCH_PREFIX):
        name = ref.removeprefix("refs/heads/" + BRANCH_PREFIX)
        if SESSION_ID_RE.match(name):
            branches.append(name)
    ids.update(sid for sid in map(session_of_state_ref, repo.for_each_ref(NAMESPACE)) if sid)
    local = local_session(repo)
    if local:
        ids.add(local)
    ids.update(branches)
    return sorted(sid for sid in ids if not (
        (found := FINAL_NAME.search(sid)) and sid[:found.start()] in ids
        and session_of_branch_only(repo, sid)))


def session_ids_here() -> list[str]:
    """:func:`session_ids` of the repository of the current directory (raises
    :class:`~git_autoresearch.git.GitError` outside one)."""
    return session_ids(Repo.discover())


def session_of_branch_only(repo: Repo, sid: str) -> bool:
    """Whether ``sid`` is known by a branch alone (no state ref, not ``.auto/``'s)."""
    return repo.resolve(f"{namespace(sid)}/state") is None and local_session(repo) != sid


def local_session(repo: Repo) -> str | None:
    """The session id of ``.auto/config.toml`` in this work tree, or None."""
    layout = Layout(repo)
    try:
        found = parse_toml(layout.config.read_bytes(), source=str(layout.config))
    except (OSError, UsageError):
        return None
    sid = found.get("session_id")
    return sid if isinstance(sid, str) and SESSION_ID_RE.match(sid) else None


def session_home(repo: Repo, sid: str) -> Repo | None:
    """The work tree of this repository (this one first, then its other worktrees) whose
    ``.auto/`` holds session ``sid``, or None."""
    for path in repo.worktree_paths():
        other = repo if path == repo.top else Repo.discover(path)
        if local_session(other) == sid:
            return other
    return None


def describe(repo: Repo, sid: str) -> SessionInfo:
    """What ``sessions`` says of session ``sid`` (:class:`SessionInfo`)."""
    info = SessionInfo(sid)
    info.branch = repo.resolve(f"refs/heads/{session_branch(sid)}")
    info.refs = dict(repo.ref_objects(namespace(sid) + "/"))
    layout = Layout(repo)
    info.source, config_bytes, book = session_ledger(repo, sid, info.branch is not None)
    if config_bytes is not None:
        try:
            cfg = parse_toml(config_bytes, source="config.toml")
        except UsageError:
            cfg = {}
        info.goal = cfg.get("goal") if isinstance(cfg.get("goal"), str) else None
        info.metric = cfg.get("metric_name") if isinstance(cfg.get("metric_name"), str) \
            else None
        info.unit = str(cfg.get("metric_unit") or "")
        info.direction = "higher" if cfg.get("direction") == "higher" else "lower"
    if book is not None:
        _summarize(info, book)
    info.state = _state(repo, info, book, layout)
    return info


def session_ledger(repo: Repo, sid: str, has_branch: bool = True
                   ) -> tuple[str, bytes | None, ledger_mod.Ledger | None]:
    """Where session ``sid`` is read from, its ``config.toml`` bytes (None: none) and its
    ledger (None: nothing to read): ``.auto`` (this work tree's, the freshest copy), else
    ``state ref`` (``refs/autoresearch/<id>/state``, pushed or pulled ones included), else
    ``trailers`` (the ``Result:`` trailers of its branch, when ``has_branch``), else
    ``none``. A ledger is read with the runs of the other clones that joined the session
    through a remote merged in (their ledger refs fetched here:
    :func:`history.remote_ledger.merged`), as every reading command reads it."""
    from ..history.remote_ledger import foreign_ledgers, merged
    from ..history.state_ref import read
    from ..session.shared import current

    if local_session(repo) == sid:
        layout = Layout(repo)
        worker = current(repo)
        own = worker.name if worker is not None and worker.session_id == sid else "main"
        data = ledger_mod.read_bytes(layout.ledger)
        return ".auto", layout.config.read_bytes(), ledger_mod.parse(
            merged(data, foreign_ledgers(repo, sid, own)))
    saved = read(repo, sid)
    if saved is not None:
        data = saved[0].get("log.jsonl", b"")
        return ("state ref", saved[0].get("config.toml"),
                ledger_mod.parse(merged(data, foreign_ledgers(repo, sid, ""))))
    if has_branch:
        from ..history.trailers import ledger_from_trailers

        return "trailers", None, ledger_from_trailers(repo, session_branch(sid))
    return "none", None, None


def every_ledger(repo: Repo) -> Iterator[tuple[str, str, ledger_mod.Ledger]]:
    """(id, source, ledger) of every session of the repository (:func:`session_ids`, sorted
    by id), each read where :func:`session_ledger` finds it, one at a time; a session with
    nothing to read is left out. Raises :class:`Refused` when there is no session."""
    ids = session_ids(repo)
    if not ids:
        raise Refused("no session in this repository (no autoresearch/* branch, no "
                      "refs/autoresearch/ state ref, no .auto/config.toml)")
    for sid in ids:
        source, _, book = session_ledger(repo, sid)
        if book is not None:
            yield sid, source, book


def _summarize(info: SessionInfo, book: ledger_mod.Ledger) -> None:
    from ..review.report import delta_pct

    header = book.config_header or {}
    info.goal = info.goal or (str(header["name"]) if header.get("name") else None)
    info.metric = info.metric or (str(header["metricName"]) if header.get("metricName")
                                  else None)
    if header.get("bestDirection") in ("lower", "higher"):
        info.direction = str(header["bestDirection"])
    info.runs = len(book.runs)
    info.kept = sum(1 for run in book.runs if run.status == "keep")
    seg = book.current
    best, base = seg.best, seg.baseline
    info.best = best.metric if best else None
    info.gain_pct = delta_pct(best.metric if best else None, base.metric if base else None)
    stamps = [ledger_mod.finite(line.get("timestamp")) for line in
              [*(run.data for run in book.runs), *book.events, *book.hooks,
               *(s.header for s in book.segments if s.header)]]
    known = [int(s) for s in stamps if s is not None]
    info.last_activity = max(known) if known else None


def _finalized(repo: Repo, info: SessionInfo, book: ledger_mod.Ledger | None) -> bool:
    """Whether the session is finalized: its ledger's latest ``final`` line names the commit
    the branch ``autoresearch/<id>-final`` points at, and no run was recorded after it (a
    session that went on after its finalize is not finished; a branch of that name that the
    ledger does not name is not its final branch)."""
    tip = repo.resolve(f"refs/heads/{final_branch(info.id)}")
    finals = [e for e in book.events if e.get("type") == "final"] if book else []
    if tip is None or not finals or not isinstance(finals[-1].get("commit"), str) \
            or not tip.startswith(finals[-1]["commit"]):
        return False
    made = ledger_mod.finite(finals[-1].get("timestamp")) or 0
    return book is not None and all(
        (ledger_mod.finite(run.data.get("timestamp")) or 0) <= made for run in book.runs)


def _state(repo: Repo, info: SessionInfo, book: ledger_mod.Ledger | None,
           layout: Layout) -> str:
    if _finalized(repo, info, book):  # (no run after it, whoever has worker branches)
        return "finalized"
    if repo.for_each_ref(f"refs/heads/{WORKER_BRANCH_PREFIX}{info.id}/"):
        # Workers at work: their branches hold the session tip, which is no merge.
        return "running"
    if info.branch is not None and _merged(repo, info, book):
        return "merged"
    if book is not None:
        last_run = max((ledger_mod.finite(r.data.get("timestamp")) or 0 for r in book.runs),
                       default=0)
        if any(e.get("type") == "stopped" and (ledger_mod.finite(e.get("timestamp")) or 0)
               >= last_run for e in book.events):
            return "stopped"
    if info.source == ".auto" and layout.stop.exists():
        return "stopped"
    branch = session_branch(info.id)
    if info.source == ".auto" or repo.current_branch() == branch \
            or repo.worktree_of(branch) is not None:
        return "running"
    return "stopped"  # neither its session files nor its branch are at work anywhere here


def _merged(repo: Repo, info: SessionInfo, book: ledger_mod.Ledger | None) -> bool:
    """Whether the session branch has commits beyond its base and its tip is an ancestor of
    HEAD (when HEAD is not the session branch) or of the default branch."""
    assert info.branch is not None
    base = (book.segments[0].header or {}).get("base_commit") if book else None
    if isinstance(base, str) and base and repo.resolve(base) == info.branch:
        return False  # nothing was kept: the branch is its base
    targets = []
    current = repo.current_branch() or ""
    if current != session_branch(info.id) \
            and not current.startswith(f"{WORKER_BRANCH_PREFIX}{info.id}/"):
        head = repo.head()
        if head:
            targets.append(head)
    default = default_branch(repo)
    if default and default != f"refs/heads/{session_branch(info.id)}":
        targets.append(default)
    if any(is_ancestor(repo, info.branch, target) for target in targets):
        return True
    # Squash-merged or cherry-picked: the keeps' changes are there by patch id.
    return isinstance(base, str) and bool(base) and is_ancestor(repo, base, info.branch) \
        and any(repo.picked_into(base, info.branch, target) for target in targets)


def all_sessions(repo: Repo | None = None) -> list[SessionInfo]:
    """:func:`describe` of every session of :func:`session_ids`, sorted by id (``repo``: the
    one around the current directory when None)."""
    repo = repo or Repo.discover()
    return [describe(repo, sid) for sid in session_ids(repo)]


@dataclass
class Collected:
    """What ``gc`` did (or, ``dry_run``, would do): the ``deleted`` refs (full names, by
    session), the sessions ``skipped`` and why, whether it was a ``dry_run``, ``warnings``,
    and the commit each deleted ref held (``was``: full name -> object id), which stays in
    the repository until git prunes it."""

    deleted: dict[str, list[str]]
    skipped: dict[str, str]
    dry_run: bool
    warnings: list[str] = field(default_factory=list)
    was: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "deleted": self.deleted, "skipped": self.skipped,
                "warnings": self.warnings, "was": self.was}


def gc(repo: Repo | None, session: str | None = None, *, older_than_days: float | None = None,
       dry_run: bool = False, force: bool = False, now_ms: int | None = None) -> Collected:
    """Delete the attempt and scope refs of finished sessions: merged or finalized ones, and
    those whose last activity is older than ``older_than_days`` (days) unless they are
    running; ``force`` takes any session. The branch and the state ref (the ledger) stay, so
    ``log``, ``status`` and ``sessions`` still read the session. One ref transaction per
    session (compare-and-swap on each ref's value). Raises :class:`UsageError` for an unknown
    ``session``, :class:`Refused` when the named ``session`` is not finished and not
    ``force``. ``repo``: the one around the current directory when None."""
    repo = repo or Repo.discover()
    now = ledger_mod.now_ms() if now_ms is None else now_ms
    ids = session_ids(repo)
    if session is not None:
        if session not in ids:
            raise UsageError(f"no session {session!r} here (sessions: "
                             f"{', '.join(ids) or 'none'})")
        ids = [session]
    if not dry_run:
        try:
            for folder in repo.own_folders:
                check_writable(folder)
        except WriteFailed as exc:
            raise Refused(f"{exc.message}; nothing was deleted") from None
    deleted: dict[str, list[str]] = {}
    skipped: dict[str, str] = {}
    warnings: list[str] = []
    was: dict[str, str] = {}
    for sid in ids:
        info = describe(repo, sid)
        why = _not_collectable(info, older_than_days, now)
        if why and not force:
            if session is not None:
                raise Refused(f"session {sid} is {why}: gc leaves it alone (--force deletes "
                              "its attempt and scope refs anyway)")
            skipped[sid] = why
            continue
        if not dry_run:
            _remove_incumbent_tree(repo, sid, warnings)
        refs = info.collectable()
        if not refs:
            continue
        if not dry_run:
            if not update_refs(repo, {ref: (None, oid) for ref, oid in refs.items()},
                               f"autoresearch gc: {sid}"):
                raise Refused(f"the refs of session {sid} moved while gc ran; nothing of it "
                              "was deleted: run gc again")
            warnings += record_collected(repo, sid, sorted(refs), now)
        deleted[sid] = sorted(refs)
        was.update(refs)
    return Collected(deleted, skipped, dry_run, warnings, was)


def _remove_incumbent_tree(repo: Repo, sid: str, warnings: list[str]) -> None:
    """Remove the worktree the incumbent was measured in, kept between runs in the work tree
    holding session ``sid`` (:func:`measure.incumbent.remove_kept`), adding to ``warnings``
    when a measurement holds it."""
    from ..measure.incumbent import remove_kept

    home = session_home(repo, sid)
    left = remove_kept(home) if home is not None else None
    if left:
        warnings.append(f"session {sid}: {left}")


def record_collected(repo: Repo, sid: str, refs: list[str], now: int) -> list[str]:
    """Append a ``{"type": "gc", "deleted": [refs], "timestamp": ms}`` event to the ledger of
    session ``sid`` (``.auto/log.jsonl`` of the work tree that holds it, this one or another
    worktree, :func:`session_home`; else a copy of the state ref's files) and mirror it on
    the state ref, so that ``doctor`` and ``show`` know these refs were deleted on purpose.
    Returns warnings (the state ref could not be written)."""
    import tempfile

    from ..git import GitError
    from ..history.state_ref import LedgerShrank, mirror, read, write_file
    from ..runtime.atomic import WriteFailed
    from ..session.lock import SessionLock

    event = {"type": "gc", "timestamp": now, "deleted": refs}
    try:
        home = session_home(repo, sid)
        if home is not None:
            with SessionLock(home.scratch, "gc"):
                ledger_mod.append(Layout(home).ledger, [event])
                mirror(home, Layout(home).auto, sid, "gc: deleted attempt and scope refs")
            return []
        saved = read(repo, sid)
        if saved is None:
            return []  # known by its branch alone: no ledger to record it in
        files, modes = saved
        repo.scratch.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=repo.scratch, prefix="gc-") as tmp:
            for name, data in files.items():
                path = Path(tmp) / name
                path.parent.mkdir(parents=True, exist_ok=True)
                write_file(path, data, modes.get(name, 0o644))
            ledger_mod.append(Path(tmp) / "log.jsonl", [event])
            mirror(repo, Path(tmp), sid, "gc: deleted attempt and scope refs", use_cache=False)
    except (GitError, LedgerShrank, WriteFailed, OSError) as exc:
        return [f"session {sid}: the deletion was not recorded in its ledger: {exc}"]
    return []


def _not_collectable(info: SessionInfo, older_than_days: float | None, now: int) -> str | None:
    """Why gc leaves ``info`` alone without ``--force`` (its state, and its age when asked),
    or None."""
    if info.state in FINISHED:
        return None
    if info.state == "running":
        return "running (not merged, not finalized)"
    if older_than_days is not None and info.last_activity is not None \
            and now - info.last_activity > older_than_days * 86_400_000:
        return None
    age = "" if older_than_days is None else f", active within {older_than_days:g} days"
    return f"{info.state} (not merged, not finalized{age})"


def repository() -> Repo:
    """The repository around the current directory (raises
    :class:`~git_autoresearch.git.GitError` outside one)."""
    return Repo.discover()
