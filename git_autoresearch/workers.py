"""Workers: linked worktrees of one session, each an agent's own work tree on its own worker
branch, sharing the main work tree's ``.auto/`` (one configuration, one ledger) and the
session's shared folder in the common git directory (locks, run-number reservations,
measurement slots).

A worker worktree is marked by ``worker.json`` in its scratch folder (``git rev-parse
--git-path autoresearch``): ``{"worker": NAME, "session_id": ID, "main": PATH}``. The main work
tree is worker ``main``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .git import Repo

MAIN = "main"
WORKER_FILE = "worker.json"


@dataclass(frozen=True)
class Worker:
    """A worker worktree as its marker names it: ``name``, ``session_id`` and ``main``, the top
    of the main work tree (whose ``.auto/`` the worker shares)."""

    name: str
    session_id: str
    main: Path


def current(repo: Repo) -> Worker | None:
    """The worker whose worktree ``repo`` is, or None (the main work tree, or no workers).
    A marker that cannot be read is no marker."""
    try:
        data = json.loads((repo.scratch / WORKER_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    name, sid, main = data.get("worker"), data.get("session_id"), data.get("main")
    if not (isinstance(name, str) and isinstance(sid, str) and isinstance(main, str)):
        return None
    return Worker(name, sid, Path(main))


def worker_name(repo: Repo) -> str:
    """The name of the worker whose worktree ``repo`` is: ``main`` outside a worker."""
    found = current(repo)
    return found.name if found else MAIN


def shared_dir(repo: Repo, session_id: str) -> Path:
    """The folder every worktree of session ``session_id`` shares:
    ``<common git dir>/autoresearch/sessions/<id>`` (not created here)."""
    return repo.common_dir / "autoresearch" / "sessions" / session_id
