"""git's own lock files: those a recording would meet, and every one there is (for doctor)."""

from __future__ import annotations

import time
from pathlib import Path

from .repo import Repo


def recording_locks(repo: Repo, branch: str, namespace: str | None = None) -> list[Path]:
    """The lock files of what a keep, a revert or a measurement changes that exist now:
    the index's, HEAD's, branch ``branch``'s (``refs/heads/<branch>.lock``),
    ``packed-refs.lock``, and, with ``namespace`` (a folder of refs), those of
    our own refs below it (``attempts/<run>.lock``, ``scope/<run>.lock``, ``state.lock``).
    git creates each while it changes that file and removes it when done; one that stays
    was left by a git process that was killed (or is one that is still running). Sorted
    as listed, those under ``namespace`` by path."""
    wanted = [repo.git_dir / "index.lock", repo.git_dir / "HEAD.lock",
              repo.common_dir / "refs" / "heads" / f"{branch}.lock",
              repo.common_dir / "packed-refs.lock"]
    found = [path for path in wanted if path.is_file()]
    if namespace is not None:
        folder = repo.common_dir / namespace
        if folder.is_dir():
            found.extend(sorted((p for p in folder.glob("**/*.lock") if p.is_file()),
                                key=str))
    return found

def lock_files(repo: Repo) -> list[tuple[Path, float]]:
    """Every git lock file in the git directories, with its age in seconds: ``*.lock``
    files at their top (``index.lock``, ``HEAD.lock``, ``packed-refs.lock``,
    ``config.lock``, ...), under ``refs/``, and those of linked worktrees
    (``worktrees/<name>/*.lock``); sorted by path."""
    found: set[Path] = set()
    for folder in {repo.git_dir, repo.common_dir}:
        found.update(folder.glob("*.lock"))
        found.update(folder.glob("worktrees/*/*.lock"))
        found.update(folder.glob("refs/**/*.lock"))
    now = time.time()
    out = []
    for path in sorted(found, key=str):
        try:
            out.append((path, max(0.0, now - path.lstat().st_mtime)))
        except FileNotFoundError:  # git finished meanwhile
            continue  # mutation: equivalent the loop's last statement
    return out
