"""Linked worktrees, and replaying commits in one: a detached checkout of a commit beside the
user's work tree, and its removal (``git worktree add --detach``, ``remove --force``,
``prune``: git-worktree(1)); commits replayed one at a time onto its detached HEAD (``git
cherry-pick``: git-cherry-pick(1)). The user's work tree, index and HEAD are never touched: a
linked worktree has its own. A pick that conflicts is taken back (``--abort``) after its
unmerged paths are read (``git diff --name-only -z --diff-filter=U``, a machine format), and
one that has nothing left to change (the change is already there) is skipped; either way the
worktree is at the last pick that applied. A replayed change is brought onto the user's work
tree only as uncommitted changes (:func:`restore_worktree`)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .process import (
    GITLINK,
    GitError,
    Result,
    clock,
    failure_in,
    join_z,
    literal,
    run_git,
    split_z,
)
from .repo import Repo


def add_detached(repo: Repo, path: Path, commit: str) -> None:
    """Check out ``commit`` at ``path`` (absolute; must not exist or be empty) as a linked
    worktree with a detached HEAD, with the submodules the work tree has checked out
    (:func:`_add_submodules`). Raises :class:`GitError` when git refuses."""
    repo.run("worktree", "add", "--detach", "--quiet", str(path), commit)
    _add_submodules(repo, path, commit)


def _add_submodules(repo: Repo, path: Path, commit: str) -> None:
    """In the worktree of ``commit`` at ``path``, each submodule that ``commit`` records and
    the work tree has a checkout of (:func:`_checked_out_submodules`), checked out at the
    commit recorded for it: a detached worktree of the submodule's own repository (``git -C
    <submodule> worktree add``), so that nothing is fetched or cloned. One that cannot be (its
    repository lacks the commit) is left as git left it, an empty folder. Nested submodules
    are not."""
    subs = _checked_out_submodules(repo)
    for name, (mode, oid) in repo.tree_entries(commit, subs).items():
        if mode == GITLINK:
            run_git(["worktree", "add", "--detach", "--quiet", str(path / name), oid],
                    cwd=repo.top / name, allow_non_zero=True)


def move_detached(repo: Repo, path: Path, commit: str) -> None:
    """Make the linked worktree at ``path`` (one :func:`add_detached` made, kept between
    uses) what a new checkout of ``commit`` would be: HEAD, index and tracked files at
    ``commit`` (``git reset --hard``), and no untracked or ignored file left (each removed,
    a symbolic link without following it). Only the files that differ
    are written, where :func:`add_detached` writes every one. Raises :class:`GitError` when it
    cannot: ``path`` is not a worktree of this repository (a copied or moved repository), or
    git refuses (a lock a killed git left); the caller then removes it and makes it anew."""
    if not (path / ".git").is_file():
        raise GitError(["git", "worktree", "move-detached", str(path)], 128, b"",
                       b"fatal: not a linked worktree")
    common = Path(_git(path, ("rev-parse", "--path-format=absolute", "--git-common-dir")).text)
    if common.resolve() != repo.common_dir.resolve():
        raise GitError(["git", "worktree", "move-detached", str(path)], 128, b"",
                       f"fatal: a worktree of {common}, not of {repo.common_dir}".encode())
    _git(path, ("reset", "--hard", "--quiet", commit))
    # What git does not track there, ignored files and folders as one entry each (``git
    # ls-files --others --directory``, no exclude rules: nothing is ignored), removed by us:
    # a symbolic link unlinked, never followed.
    for name in split_z(_git(path, ("ls-files", "--others", "--directory", "-z")).stdout):
        left = path / name.rstrip("/")
        if left.is_dir() and not left.is_symlink():
            remove_folder(left)
        else:
            left.unlink(missing_ok=True)


def forget_copies(repo: Repo, path: Path) -> None:
    """Forget the records this repository holds of another repository's linked worktree at
    ``path``'s place: a repository copied whole (``cp -r``) brings along the records of its
    linked worktrees (``worktrees/<id>/gitdir``, the path of the worktree's ``.git`` file:
    gitrepository-layout(5)), which point at the original's folders, and ``git worktree
    prune`` keeps them while those exist. Only a record whose folder is ``path`` relative to
    another git directory (``path`` lies in this repository's git directory) is dropped."""
    try:
        place = path.relative_to(repo.common_dir)
        records = list((repo.common_dir / "worktrees").iterdir())
    except (ValueError, OSError):
        return
    for record in records:
        try:
            folder = Path((record / "gitdir").read_text(encoding="utf-8").strip()).parent
        except (OSError, UnicodeDecodeError):
            continue
        if folder != path and folder.parts[-len(place.parts):] == place.parts \
                and not folder.is_relative_to(repo.common_dir):
            remove_folder(record)


def has_submodules(repo: Repo) -> bool:
    """Whether the work tree has a submodule checked out (which :func:`add_detached` checks
    out too, and :func:`move_detached` does not move)."""
    return bool(_checked_out_submodules(repo))


def _checked_out_submodules(repo: Repo) -> list[str]:
    """The paths ``.gitmodules`` names whose submodule the work tree has a checkout of (none
    without the file: no git is asked)."""
    if not (repo.top / ".gitmodules").is_file():
        return []
    from .submodule import config_entries_in

    return [sub for _, sub in config_entries_in(repo, ".gitmodules", r"^submodule\..*\.path$")
            if sub and repo.checked_out(sub)]


def remove(repo: Repo, path: Path) -> None:
    """Remove the linked worktree at ``path`` however it is (changed or untracked files
    included: ``--force`` twice also removes a locked one), then what is left of its folder,
    and prune git's record of any worktree whose folder is gone, the submodules' own
    (:func:`_add_submodules`) too. Never raises for a worktree that is already gone."""
    repo.run("worktree", "remove", "--force", "--force", str(path), allow_non_zero=True)
    remove_folder(path)
    prune(repo)


def remove_folder(path: Path) -> None:
    """Remove the folder ``path`` and what it holds, what a benchmark left read-only in it
    included (the folder holding it is made writable first). Never raises: what cannot be
    removed is left."""

    def writable(func: Callable[[str], object], name: str, error: object) -> None:
        # (the exception, or before Python 3.12 its exc_info triple)
        if not isinstance(error[1] if isinstance(error, tuple) else error, PermissionError):
            return
        try:
            os.chmod(os.path.dirname(name), 0o700)
            func(name)
        except OSError:
            pass

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=writable)
    else:
        shutil.rmtree(path, onerror=writable)


def prune(repo: Repo) -> None:
    """Forget the linked worktrees whose folders no longer exist (``git worktree prune``), in
    this repository and in each submodule the work tree has checked out."""
    repo.run("worktree", "prune", allow_non_zero=True)
    for sub in _checked_out_submodules(repo):
        run_git(["worktree", "prune"], cwd=repo.top / sub, allow_non_zero=True)


def listed(repo: Repo) -> list[Path]:
    """The folders of every worktree git knows of, the main one first (``git worktree list
    --porcelain -z``)."""
    res = repo.run("worktree", "list", "--porcelain", "-z")
    return [Path(field.partition(" ")[2]) for field in split_z(res.stdout)
            if field.startswith("worktree ")]


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
    for another reason (the worktree is then left as git left it): :class:`DiskFull` on a
    full disk."""
    started = clock()
    picked = _git(tree, ("cherry-pick", "--no-rerere-autoupdate", "--allow-empty", commit),
                  allow_non_zero=True)
    if picked.returncode == 0:
        return Picked(APPLIED, head(tree))
    unmerged = split_z(_git(tree, ("diff", "--name-only", "-z", "--diff-filter=U")).stdout)
    in_progress = _git(tree, ("rev-parse", "-q", "--verify", "CHERRY_PICK_HEAD"),
                       allow_non_zero=True).returncode == 0
    if unmerged:
        _git(tree, ("cherry-pick", "--abort"))
        return Picked(CONFLICT, paths=tuple(dict.fromkeys(unmerged)))
    if in_progress:  # nothing left to commit: the change is already in the tree
        _git(tree, ("cherry-pick", "--skip"))
        return Picked(EMPTY)
    raise failure_in(GitError(["git", "cherry-pick", commit], picked.returncode,
                              picked.stdout, picked.stderr), _common_dir(tree), started)


def head(tree: Path) -> str:
    """The full object id of the worktree's HEAD."""
    return _git(tree, ("rev-parse", "--verify", "HEAD^{commit}")).text


def reset(tree: Path, commit: str) -> None:
    """Put the worktree at ``tree`` (a linked worktree of ours, never the user's) at
    ``commit``: HEAD, index and files (``git reset --hard``)."""
    _git(tree, ("reset", "--hard", "--quiet", commit))


def _git(tree: Path, args: Sequence[str], *, allow_non_zero: bool = False) -> Result:
    """``git args`` in the worktree at ``tree``; a failure on a full disk raised as
    :class:`DiskFull` (:func:`process.failure_in`), as :meth:`Repo.run` raises it."""
    started = clock()
    try:
        return run_git(args, cwd=tree, allow_non_zero=allow_non_zero)
    except GitError as exc:
        raise failure_in(exc, _common_dir(tree), started) from None


def _common_dir(tree: Path) -> Path:
    """The git directory the worktree at ``tree`` shares with its repository."""
    return Path(run_git(("rev-parse", "--path-format=absolute", "--git-common-dir"),
                        cwd=tree).text)


def restore_worktree(repo: Repo, commit: str, paths: Sequence[str]) -> None:
    """Make the work tree's ``paths`` what they are in ``commit`` (a path absent from it is
    removed), leaving the index and HEAD as they are (``git restore --source --worktree
    --no-overlay``): a change replayed onto the user's work tree as uncommitted changes.
    Raises :class:`GitError`."""
    if paths:
        repo.run("restore", f"--source={commit}", "--worktree", "--no-overlay",
                 "--pathspec-from-file=-", "--pathspec-file-nul",
                 input=join_z(map(literal, paths)))
