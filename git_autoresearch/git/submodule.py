"""Submodules of the work tree: which paths are, and their checkouts (dirty, has a commit, check
out, reinstate from ``modules/<name>``)."""

from __future__ import annotations

from .process import literal, run_git, split_z
from .repo import Repo


def has_commit(repo: Repo, path: str, commit: str) -> bool:
    """Whether submodule ``path`` has ``commit`` in its object store (true when it has no
    checkout: there is nothing to check out then)."""
    if not repo.checked_out(path):
        return True
    return run_git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=repo.top / path,
                   allow_non_zero=True).returncode == 0

def is_dirty(repo: Repo, path: str) -> bool:
    """Whether submodule ``path`` has changes that its commit does not hold: edits, staged
    changes or untracked files (not ignored ones)."""
    if not repo.checked_out(path):
        return False
    res = run_git(["status", "--porcelain=v1", "-z", "--untracked-files=all",
                   "--ignore-submodules=none"], cwd=repo.top / path)
    return bool(res.stdout)

def reinstate(repo: Repo, path: str) -> None:
    """Check out submodule ``path`` again at the commit the index records, from its own
    repository under the git directory (``modules/<name>``), when it has one; never
    fetched (``git submodule update --init --no-fetch``). Without one, nothing is done:
    the submodule's history is not here."""
    names = [key[len("submodule."):-len(".path")]
             for key, value in config_entries_in(repo, ".gitmodules",
                                                      r"^submodule\..*\.path$")
             if value == path]
    if not any((repo.common_dir / "modules" / name).is_dir() for name in names):
        return
    repo.run("submodule", "--quiet", "update", "--init", "--no-fetch", "--", literal(path))

def config_entries_in(repo: Repo, file: str, pattern: str) -> list[tuple[str, str | None]]:
    """As :meth:`Repo.config_entries`, from the file ``file`` of the work tree (such as
    ``.gitmodules``); none when it does not exist."""
    if not (repo.top / file).is_file():
        return []
    res = repo.run("config", "-z", "-f", file, "--get-regexp", pattern, allow_non_zero=True)
    found: list[tuple[str, str | None]] = []
    for item in split_z(res.stdout):
        key, newline, value = item.partition("\n")
        found.append((key, value if newline else None))
    return found

def checkout(repo: Repo, path: str, commit: str) -> None:
    """Check out ``commit`` (detached) in submodule ``path``, as ``git submodule update``
    does. Raises :class:`GitError` (the commit is not in its object store, say)."""
    run_git(["checkout", "-q", "--detach", commit], cwd=repo.top / path)
