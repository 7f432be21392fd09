"""A new project repository, as a person would make one: for the bundled demo."""

from __future__ import annotations

from pathlib import Path

from .process import run_git
from .repo import Repo


def init_project(folder: Path, message: str, name: str, email: str) -> Repo:
    """``git init`` in ``folder``, then one commit of everything in it with ``message``; the
    identity ``name`` and ``email`` is set in the repository only when git has none. Raises
    :class:`~git_autoresearch.git.process.GitError`."""
    run_git(["init", "-q"], cwd=folder)
    if run_git(["var", "GIT_COMMITTER_IDENT"], cwd=folder, allow_non_zero=True).returncode:
        run_git(["config", "user.name", name], cwd=folder)
        run_git(["config", "user.email", email], cwd=folder)
    run_git(["add", "-A"], cwd=folder)
    run_git(["commit", "-q", "-m", message], cwd=folder)
    return Repo.discover(folder)


def oneline_log(repo: Repo, grep: str) -> str:
    """``git log --oneline --grep <grep>``: the matching commits, one line each, newest first."""
    return repo.run("log", "--oneline", "--grep", grep).text
