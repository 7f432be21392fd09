"""Linked worktrees: a detached checkout of a commit beside the user's work tree, and its
removal (``git worktree add --detach``, ``remove --force``, ``prune``: git-worktree(1)). The
user's work tree, index and HEAD are never touched: a linked worktree has its own."""

from __future__ import annotations

import shutil
from pathlib import Path

from .process import split_z
from .repo import Repo


def add_detached(repo: Repo, path: Path, commit: str) -> None:
    """Check out ``commit`` at ``path`` (absolute; must not exist or be empty) as a linked
    worktree with a detached HEAD. Raises :class:`GitError` when git refuses."""
    repo.run("worktree", "add", "--detach", "--quiet", str(path), commit)


def remove(repo: Repo, path: Path) -> None:
    """Remove the linked worktree at ``path`` however it is (changed or untracked files
    included: ``--force`` twice also removes a locked one), then what is left of its folder,
    and prune git's record of any worktree whose folder is gone. Never raises for a worktree
    that is already gone."""
    repo.run("worktree", "remove", "--force", "--force", str(path), allow_non_zero=True)
    shutil.rmtree(path, ignore_errors=True)
    prune(repo)


def prune(repo: Repo) -> None:
    """Forget the linked worktrees whose folders no longer exist (``git worktree prune``)."""
    repo.run("worktree", "prune", allow_non_zero=True)


def listed(repo: Repo) -> list[Path]:
    """The folders of every worktree git knows of, the main one first (``git worktree list
    --porcelain -z``)."""
    res = repo.run("worktree", "list", "--porcelain", "-z")
    return [Path(field.partition(" ")[2]) for field in split_z(res.stdout)
            if field.startswith("worktree ")]
