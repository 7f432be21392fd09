"""Moving a work tree between commits and replaying a change onto another commit, for workers
of one session: ``git merge-tree --write-tree`` (git-merge-tree(1), git 2.38 or later: a
three-way merge with no work tree or index touched), ``git read-tree -m -u`` (the two-tree
form: the index and work tree moved from one tree to another, refusing to overwrite a local
change or an untracked file in the way) and ``git symbolic-ref``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..runtime.errors import Refused
from .process import GitError, split_z
from .repo import Repo


@dataclass(frozen=True)
class Merged:
    """A three-way merge's outcome: ``tree`` (None: it conflicted) and the conflicted
    ``paths``."""

    tree: str | None
    paths: tuple[str, ...] = ()


def merge_trees(repo: Repo, ours: str, theirs: str) -> Merged:
    """Merge commit ``theirs`` into commit ``ours`` at their merge base, writing only objects
    (``merge-tree --write-tree -z --name-only --no-messages``: the tree id, then the
    conflicted paths, each ended by a NUL). Raises :class:`GitError` when git fails
    otherwise (exit above 1, or no tree printed: a name of no commit)."""
    res = repo.run("merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", ours,
                   theirs, allow_non_zero=True)
    if res.returncode == 129:  # git's usage error: a git older than 2.38 knows no --write-tree
        raise Refused("replaying a worker's change onto a moved incumbent needs git 2.38 or "
                      "newer (git merge-tree --write-tree); this git is older")
    fields = split_z(res.stdout)
    # git 2.39 also exits 1, printing no tree, when a name names no commit.
    if res.returncode not in (0, 1) or not fields:
        raise GitError(["git", "merge-tree", "--write-tree", ours, theirs], res.returncode,
                       res.stdout, res.stderr)
    tree = fields[0]
    if res.returncode == 0:
        return Merged(tree)
    return Merged(None, tuple(dict.fromkeys(fields[1:])))


def move_work_tree(repo: Repo, old: str, new: str) -> None:
    """Move the index and work tree from tree-ish ``old`` to ``new`` (``read-tree -m -u``:
    a file changed locally and by the move, or an untracked file in the way, makes git refuse
    with nothing changed: :class:`GitError`). HEAD is not moved."""
    repo.run("read-tree", "-m", "-u", old, new)


def leave_unstaged(repo: Repo, old: str, new: str) -> None:
    """Make the work tree ``new``'s files while the index stays ``old``'s: the change from
    ``old`` to ``new`` left in the work tree, unstaged (files new in ``new`` untracked)."""
    move_work_tree(repo, old, new)
    index_to(repo, old)


def index_to(repo: Repo, commit: str) -> None:
    """Make the index hold ``commit``'s tree (``git read-tree``); HEAD and the work tree are
    untouched, so what differs from ``commit`` in the work tree shows as unstaged."""
    repo.run("read-tree", commit)


def switch_new(repo: Repo, branch: str, commit: str) -> None:
    """Check out ``branch`` (short name), created at ``commit`` unless it exists (then it is
    checked out as it is): ``git switch [-c]``. Raises :class:`GitError` when git refuses (a
    changed file in the way)."""
    exists = repo.resolve(f"refs/heads/{branch}") is not None
    repo.run("switch", "-q", *([] if exists else ["-c"]), branch,
             *([] if exists else [commit]))


def point_head(repo: Repo, branch_ref: str) -> None:
    """Make HEAD the symbolic ref ``branch_ref`` (``refs/heads/...``): the work tree and index
    are untouched, so the branch should point at HEAD's commit."""
    repo.run("symbolic-ref", "-m", "git-autoresearch: worker branch", "HEAD", branch_ref)


def add_on_branch(repo: Repo, path: Path, branch: str, commit: str) -> None:
    """Check out a new branch ``branch`` (short name) at ``commit`` in a new linked worktree at
    ``path`` (``worktree add -b``). Raises :class:`GitError` when git refuses (the branch or
    the folder exists)."""
    repo.run("worktree", "add", "--quiet", "-b", branch, str(path), commit)


def is_ancestor(repo: Repo, rev: str, of: str) -> bool:
    """Whether commit ``rev`` is ``of`` or an ancestor of it (``merge-base --is-ancestor``)."""
    return repo.run("merge-base", "--is-ancestor", rev, of,
                    allow_non_zero=True).returncode == 0
