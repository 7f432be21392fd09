"""What a commit hook asks of git: the hooks folder, the paths the commit changes, the trailers
of its message."""

from __future__ import annotations

import os
from pathlib import Path

from .process import join_z, split_z
from .repo import Repo


def hooks_folder(repo: Repo) -> Path:
    """The folder git runs ``repo``'s hooks from: ``core.hooksPath`` (``~`` expanded,
    relative to the top) or the common git directory's ``hooks/``."""
    folder = repo.common_dir / "hooks"
    for _, value in repo.config_entries(r"^core\.hookspath$"):
        # An empty value is taken as unset (git 2.39 then looks for hooks at the root of the
        # file system, /pre-commit: never a folder to install hooks in).
        if value:
            folder = repo.top / os.path.expanduser(value)
    return folder


def staged_paths(repo: Repo, index_file: str | None = None) -> list[str]:
    """The paths whose index entry differs from HEAD, renames as a deletion and an addition;
    empty when HEAD has no commit yet. ``index_file`` reads another index than the
    repository's (the one ``git commit <paths>`` or ``git commit -a`` hands its hooks as
    ``$GIT_INDEX_FILE``; relative to the current folder)."""
    if repo.head() is None:
        return []
    env = {"GIT_INDEX_FILE": os.path.abspath(index_file)} if index_file else None
    return split_z(repo.run("diff-index", "--cached", "-z", "--name-only", "--no-renames",
                            "HEAD", "--", env=env).stdout)


def message_trailers(repo: Repo, message: bytes) -> list[tuple[str, str]]:
    """The trailers of commit message ``message`` as git reads them (``git interpret-trailers
    --parse``: comment lines ignored), as (key, value) pairs in order."""
    out = repo.run("interpret-trailers", "--parse", input=message).stdout
    found: list[tuple[str, str]] = []
    for line in out.decode("utf-8", "replace").splitlines():
        key, colon, value = line.partition(":")
        if colon:
            found.append((key.strip(), value.strip()))
    return found


def visible(repo: Repo, paths: list[str]) -> list[str]:
    """Those of ``paths`` (relative to the top, existing or not) that the work tree's status
    would show: tracked, or not ignored (``git ls-files``, ``git check-ignore --no-index``)."""
    if not paths:
        return []
    tracked = set(split_z(repo.run("ls-files", "-z", "--", *paths).stdout))
    # check-ignore refuses the literal pathspecs every other call runs with.
    ignored = set(split_z(repo.run("--no-literal-pathspecs", "check-ignore", "-z", "--stdin",
                                   "--no-index", input=join_z(paths),
                                   allow_non_zero=True).stdout))
    return [p for p in paths if p in tracked or p not in ignored]
