"""Replaying commits, one at a time, onto the detached HEAD of a linked worktree
(``git cherry-pick``: git-cherry-pick(1)), never in the user's own work tree. A pick that
conflicts is taken back (``--abort``) after its unmerged paths are read (``git diff
--name-only -z --diff-filter=U``, a machine format), and one that has nothing left to change
(the change is already there) is skipped; either way the worktree is at the last pick that
applied."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .process import GitError, join_z, run_git, split_z
from .repo import Repo

APPLIED, CONFLICT, EMPTY = "applied", "conflict", "empty"


@dataclass(frozen=True)
class Picked:
    """What one pick did: ``outcome`` (``applied``, ``conflict`` or ``empty``), the new
    ``commit`` (full object id, for ``applied``) and the ``paths`` that conflicted."""

    outcome: str
    commit: str | None = None
    paths: tuple[str, ...] = ()


def cherry_pick(tree: Path, commit: str) -> Picked:
    """Apply ``commit``'s change (against its first parent) on top of the worktree at ``tree``
    as a new commit with the same message and author. Raises :class:`GitError` when git fails
    for another reason (the worktree is then left as git left it)."""
    picked = run_git(("cherry-pick", "--no-rerere-autoupdate", "--allow-empty", commit),
                     cwd=tree, allow_non_zero=True)
    if picked.returncode == 0:
        return Picked(APPLIED, head(tree))
    unmerged = split_z(run_git(("diff", "--name-only", "-z", "--diff-filter=U"),
                               cwd=tree).stdout)
    in_progress = run_git(("rev-parse", "-q", "--verify", "CHERRY_PICK_HEAD"), cwd=tree,
                          allow_non_zero=True).returncode == 0
    if unmerged:
        run_git(("cherry-pick", "--abort"), cwd=tree)
        return Picked(CONFLICT, paths=tuple(dict.fromkeys(unmerged)))
    if in_progress:  # nothing left to commit: the change is already in the tree
        run_git(("cherry-pick", "--skip"), cwd=tree)
        return Picked(EMPTY)
    raise GitError(["git", "cherry-pick", commit], picked.returncode, picked.stdout,
                   picked.stderr)


def head(tree: Path) -> str:
    """The full object id of the worktree's HEAD."""
    return run_git(("rev-parse", "--verify", "HEAD^{commit}"), cwd=tree).text


def reset(tree: Path, commit: str) -> None:
    """Put the worktree at ``tree`` (a linked worktree of ours, never the user's) at
    ``commit``: HEAD, index and files (``git reset --hard``)."""
    run_git(("reset", "--hard", "--quiet", commit), cwd=tree)


def restore_worktree(repo: Repo, commit: str, paths: Sequence[str]) -> None:
    """Make the work tree's ``paths`` what they are in ``commit`` (a path absent from it is
    removed), leaving the index and HEAD as they are (``git restore --source --worktree
    --no-overlay``): a change replayed onto the user's work tree as uncommitted changes.
    Raises :class:`GitError`."""
    if paths:
        repo.run("restore", f"--source={commit}", "--worktree", "--no-overlay",
                 "--pathspec-from-file=-", "--pathspec-file-nul", input=join_z(paths))
