"""Workers: linked worktrees of one session, each an agent's own work tree on its own worker
branch, sharing the main work tree's ``.auto/`` (one configuration, one ledger) and the
session's shared folder in the common git directory, ``autoresearch-sessions/<id>`` (locks,
run-number reservations, measurement slots).

A worker worktree is marked by ``worker.json`` in its scratch folder (``git rev-parse
--git-path autoresearch``): ``{"worker": NAME, "session_id": ID, "main": PATH}``, and
``"remote": REMOTE`` for a clone that joined the session through a remote (``worker join``).
The main work tree is worker ``main``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..git import Repo
from ..history.refs import WORKER_BRANCH_PREFIX, ledgers_prefix, namespace, worker_branch
from ..ledger.jsontext import is_whole
from ..runtime.errors import Refused, UsageError

MAIN = "main"
# A worker's name: its branch's last part and its folder's name.
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}"


def valid_name(name: str) -> bool:
    """Whether ``name`` may name a worker: letters, digits, ``-`` and ``_``, up to 40, a letter
    or digit first, and neither ``main`` (the main work tree's worker) nor ``HEAD``."""
    import re

    return re.fullmatch(NAME_PATTERN, name) is not None and name not in (MAIN, "HEAD")


def check_name(name: str) -> None:
    """Raise :class:`UsageError` (exit 2) naming ``name`` unless :func:`valid_name`."""
    if not valid_name(name):
        raise UsageError(f"bad worker name {name!r}: letters, digits, - and _, up to 40, a "
                         f"letter or digit first, not {MAIN!r} or 'HEAD'")
WORKER_FILE = "worker.json"


@dataclass(frozen=True)
class Worker:
    """A worker worktree as its marker names it: ``name``, ``session_id`` and ``main``, the top
    of the main work tree (whose ``.auto/`` the worker shares), and the ``remote`` (a remote's
    name or URL) through which a clone joined the session (None: a worktree here), and
    whether its candidates are measured by a measuring host (``on_host``: ``worker join
    --measure-on-host``) rather than here."""

    name: str
    session_id: str
    main: Path
    remote: str | None = None
    on_host: bool = False


def joined_workers(repo: Repo, session_id: str) -> list[str]:
    """The names of the workers of session ``session_id`` whose ledger refs are here (the
    clones that joined it through a remote, as fetched), sorted; from the listing of the
    session's refs (:meth:`Repo.for_each_ref`: no git call when it is read already)."""
    prefix = ledgers_prefix(session_id)
    return [ref[len(prefix):]
            for ref in repo.for_each_ref(prefix, within=namespace(session_id) + "/")]


def run_by_joined(session_id: str, workers: list[str]) -> str:
    """``session s1 is run by clones that joined it through a remote (workers ma, mb)``: what
    a clone that did not join is told before it is refused something (three names at most)."""
    return (f"session {session_id} is run by clones that joined it through a remote "
            f"(worker{'s' if len(workers) > 1 else ''} {', '.join(workers[:3])}"
            f"{', ...' if len(workers) > 3 else ''})")


def joined(repo: Repo, session_id: str) -> bool:
    """Whether this work tree joined session ``session_id`` through a remote (``worker
    join``)."""
    found = current(repo)
    return found is not None and found.remote is not None and found.session_id == session_id


def current(repo: Repo) -> Worker | None:
    """The worker whose worktree ``repo`` is, or None (the main work tree, or no workers):
    its marker says so, or, without a readable marker (a ``worker add`` killed before it wrote
    it), a linked worktree on a worker branch (:func:`from_branch`)."""
    try:
        data = json.loads((repo.scratch / WORKER_FILE).read_bytes())
    except (OSError, ValueError):
        return from_branch(repo)
    if not isinstance(data, dict):
        return None
    name, sid, main = data.get("worker"), data.get("session_id"), data.get("main")
    if not (isinstance(name, str) and isinstance(sid, str) and isinstance(main, str)):
        return None
    remote = data.get("remote")
    return Worker(name, sid, Path(main), remote if isinstance(remote, str) and remote else None,
                  data.get("measure") == "host")


def from_branch(repo: Repo) -> Worker | None:
    """The worker a linked worktree on ``autoresearch-workers/<id>/<name>`` is, its main work
    tree the folder of the common git directory (``<main>/.git``); None otherwise."""
    branch = repo.branch_at_discovery if repo.head_at_discovery else None
    if branch is None:
        try:
            head = (repo.git_dir / "HEAD").read_text().strip()
        except OSError:
            return None
        branch = head.removeprefix("ref: refs/heads/") if head.startswith("ref: ") else None
    if not branch or not branch.startswith(WORKER_BRANCH_PREFIX) \
            or repo.git_dir == repo.common_dir or repo.common_dir.name != ".git":
        return None
    sid, _, name = branch[len(WORKER_BRANCH_PREFIX):].rpartition("/")
    if not sid or not name or name == MAIN:
        return None
    return Worker(name, sid, repo.common_dir.parent)


def worker_name(repo: Repo) -> str:
    """The name of the worker whose worktree ``repo`` is: ``main`` outside a worker."""
    found = current(repo)
    return found.name if found else MAIN


def shared_dir(repo: Repo, session_id: str) -> Path:
    """The folder every worktree of session ``session_id`` shares:
    ``<common git dir>/autoresearch-sessions/<id>`` (not created here), beside the main
    work tree's scratch folder, not in it."""
    return repo.common_dir / "autoresearch-sessions" / session_id


def mark(repo: Repo, worker: Worker) -> None:
    """Write ``repo``'s worker marker (its scratch folder's ``worker.json``)."""
    from ..runtime.atomic import write_atomic

    repo.scratch.mkdir(parents=True, exist_ok=True)
    data = {"worker": worker.name, "session_id": worker.session_id, "main": str(worker.main)}
    if worker.remote:
        data["remote"] = worker.remote
    if worker.on_host:
        data["measure"] = "host"
    write_atomic(repo.scratch / WORKER_FILE, json.dumps(data).encode())


def unmark(repo: Repo) -> None:
    """Remove ``repo``'s worker marker, if any."""
    (repo.scratch / WORKER_FILE).unlink(missing_ok=True)


# --- run numbers reserved by a measurement not yet recorded ------------------------------------

def _reserved_dir(repo: Repo, session_id: str) -> Path:
    return shared_dir(repo, session_id) / "reserved"


def reservations(repo: Repo, session_id: str) -> dict[str, int]:
    """The run number each worker holds for a measurement it has not recorded yet, by worker
    name (``<shared folder>/reserved/<worker>``, one decimal number each); unreadable files are
    skipped."""
    found: dict[str, int] = {}
    try:
        entries = list(_reserved_dir(repo, session_id).iterdir())
    except OSError:
        return found
    for path in entries:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if is_whole(text):
            found[path.name] = int(text)
    return found


def reserve(repo: Repo, session_id: str, worker: str, number: int) -> None:
    """Hold run ``number`` for ``worker`` (under the session's shared lock)."""
    from ..runtime.atomic import write_atomic

    folder = _reserved_dir(repo, session_id)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / worker, f"{number}\n".encode())


def release(repo: Repo, session_id: str, worker: str, number: int | None = None) -> None:
    """Give back ``worker``'s reserved run number (only if it is ``number``, when given)."""
    path = _reserved_dir(repo, session_id) / worker
    if number is not None and reservations(repo, session_id).get(worker) != number:
        return
    path.unlink(missing_ok=True)


def relink(repo: Repo, worker: Worker | None, auto: Path) -> None:
    """In a worker's worktree, put back its ``.auto`` link to the main work tree's session
    folder ``auto`` when it is gone (``git clean -xfd``), so that ``.auto/measure.sh`` runs
    there; nothing elsewhere, nor on a read-only work tree."""
    link = repo.top / ".auto"
    if worker is None or worker.main == repo.top or os.path.lexists(link):
        return
    try:
        link.symlink_to(auto, target_is_directory=True)
    except OSError:
        pass  # the commands that need it say what is missing


def worktree_path(repo: Repo, session_id: str, name: str, main: Path) -> Path | None:
    """Where worker ``name`` of session ``session_id`` works: ``main`` (the main work tree)
    for worker ``main``, else the linked worktree that has its branch checked out (None:
    none has)."""
    if name == MAIN:
        return main
    return repo.worktree_of(worker_branch(session_id, name))


class IncumbentMoved(Refused):
    """A keep found the session branch at ``tip``, not at the ``base`` the candidate was
    measured on."""

    def __init__(self, base: str, tip: str, kept: list[int]) -> None:
        runs = ", ".join(str(n) for n in kept) or "?"
        super().__init__(f"the incumbent moved since this candidate was measured (run(s) {runs} "
                         "kept by other workers)")
        self.base, self.tip, self.kept = base, tip, kept


def kept_between(repo: Repo, base: str, now: str) -> list[int]:
    """The runs kept on the session branch after ``base`` up to ``now``."""
    from ..history.trailers import runs_named

    return sorted(runs_named(repo, f"{base}..{now}"))
