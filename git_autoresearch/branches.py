"""Where the work tree is against the session branch: the checks that refuse a recording
command off the branch, the problem ``status`` reports, and the advice for getting there."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import Refused
from .git import Repo
from .refs import session_branch, worker_branch

if TYPE_CHECKING:
    from .session import Session


def carry_over(repo: Repo, branch: str) -> str:
    """How to get onto ``branch`` with uncommitted changes in the work tree: ``git switch
    --merge`` carries them over (a conflicting file is left with conflict markers to resolve),
    or they are committed on the current branch first."""
    current = repo.current_branch()
    where = f" on {current}" if current else ""
    return (f"carry them over with git switch --merge {branch}, or commit them{where} first "
            f"and then git switch {branch}")


def pull_hint(repo: Repo, session_id: str) -> str:
    """How to bring session ``session_id`` here from a remote, with its runs (its branch,
    attempt refs and state ref): ``git autoresearch pull <remote> <id>``, naming the remotes;
    or that this repository has none."""
    remotes = repo.remotes()
    if not remotes:
        return "this repository has no remote to fetch it from"
    remote = "origin" if "origin" in remotes else remotes[0]
    return (f"bring it with its runs from a remote ({', '.join(remotes)}): git autoresearch "
            f"pull {remote} {session_id}")


def other_worktree(repo: Repo, branch: str, there: str) -> str | None:
    """Where ``branch`` is checked out when another worktree has it (git allows one at a
    time): ``checked out in another worktree, <path>: <there>`` (``there`` says what to do in
    it; ``{path}`` in it stands for the path), or, when that worktree's folder is gone, how
    to free the branch; None when no other worktree has it."""
    path = repo.worktree_of(branch)
    if path is None:
        return None
    if not path.exists():
        return (f"checked out in a worktree whose folder is gone, {path}: free the branch "
                "with git worktree prune")
    return f"checked out in another worktree, {path}: {there.format(path=path)}"


def check_branch(session: Session) -> None:
    """Refuse (exit 3) when the work tree is not on the session branch, saying why and how
    to get there (a missing branch, another worktree, uncommitted changes to carry over)."""
    branch = session.repo.branch_at_discovery
    wanted = session_branch(session.config.session_id)
    if session.worker is not None:  # a worker works on its own branch
        wanted = worker_branch(session.config.session_id, session.worker.name)
    if branch != wanted:
        where = f"branch {branch}" if branch else "a detached HEAD"
        if session.repo.resolve(wanted) is None:
            if merged_elsewhere(session):
                raise Refused(f"the work tree is on {where}, and the session branch "
                              f"{wanted} was merged and deleted: the session is over (to "
                              "start another here, move .auto/ aside and run git "
                              "autoresearch start --force)")
            raise Refused(f"the work tree is on {where}, and the session branch {wanted} "
                          "does not exist, nor is its last keep in HEAD (not fetched? "
                          f"{pull_hint(session.repo, session.config.session_id)})")
        elsewhere = other_worktree(session.repo, wanted, "carry on there (cd {path})")
        if elsewhere is not None:
            raise Refused(f"the work tree is on {where}, and the session branch {wanted} "
                          f"is {elsewhere}")
        tracked = uncommitted(session)
        if tracked:
            shown = ", ".join(tracked[:3]) + (" ..." if len(tracked) > 3 else "")
            raise Refused(f"the work tree is on {where}, not on the session branch "
                          f"{wanted}, and has uncommitted changes ({shown}): "
                          f"{carry_over(session.repo, wanted)}")
        raise Refused(f"the work tree is on {where}, not on the session branch {wanted} "
                      f"(git switch {wanted})")

def uncommitted(session: Session) -> list[str]:
    """Tracked paths, outside the protected ones, whose work tree or index differ from
    HEAD (the changes a ``git switch`` has to carry over), sorted."""
    return sorted({e.path for e in session.repo.status()
                   if not e.untracked and not e.ignored
                   and not session.bounds.is_protected(e.path)})

def branch_problem(session: Session) -> tuple[bool, str | None]:
    """Whether the session branch exists, and what is wrong with where the work tree is
    (None when nothing is): off the session branch and not merged into the branch checked
    out, on a detached HEAD, or the session branch gone while its last keep is not in
    HEAD. A session merged into the branch checked out is finished, not in trouble."""
    branch = session_branch(session.config.session_id)
    current = session.repo.branch_at_discovery
    if session.worker is not None \
            and current == worker_branch(session.config.session_id, session.worker.name):
        return session.repo.resolve(branch) is not None, None  # a worker on its own branch
    if current != branch and session.repo.resolve(branch) is None:
        if merged_elsewhere(session):
            return False, None
        return False, (f"the session branch {branch} does not exist, and its last keep is "
                       "not in HEAD (not fetched? "
                       f"{pull_hint(session.repo, session.config.session_id)})")
    if current is None:
        return True, f"the work tree is on a detached HEAD, not on the session branch {branch}"
    if current != branch and not session.repo.merged(branch):
        return True, f"the work tree is on branch {current}, not on the session branch {branch}"
    return True, None

def merged_elsewhere(session: Session) -> bool:
    """Whether the last kept commit of the ledger is in HEAD: a session merged into the
    branch checked out (its own branch perhaps deleted since)."""
    kept = [r for r in session.ledger.runs if r.status == "keep" and r.data.get("commit")]
    if not kept:
        return False
    commit = session.repo.resolve(str(kept[-1].data["commit"]))
    return commit is not None and session.repo.merged(commit)
