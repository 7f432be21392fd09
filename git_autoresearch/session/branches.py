"""Where the work tree is against the session branch: the checks that refuse a recording
command off the branch, the problem ``status`` reports, and the advice for getting there."""

from __future__ import annotations

import os

from ..git import Repo
from ..git.repo import HEX_NAME, likely_remote
from ..history.refs import session_branch
from ..runtime.errors import Refused
from .session import Session


def carry_over(repo: Repo, branch: str) -> str:
    """How to get onto ``branch`` with uncommitted changes in the work tree: ``git switch
    --merge`` carries them over (a conflicting file is left with conflict markers to resolve),
    or they are committed on the current branch first."""
    current = repo.current_branch()
    if current is None:  # (a commit on a detached HEAD would be left behind by the switch)
        return f"carry them over with git switch --merge {branch}"
    return (f"carry them over with git switch --merge {branch}, or commit them on {current} "
            f"first and then git switch {branch}")


def pull_hint(repo: Repo, session_id: str) -> str:
    """How to bring session ``session_id`` here from a remote, with its runs (its branch,
    attempt refs and state ref): ``git autoresearch pull <remote> <id>``, naming the remotes;
    or that this repository has none."""
    remotes = repo.remotes()
    remote = likely_remote(remotes)
    if remote is None:
        return "this repository has no remote to fetch it from"
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


def branch_below(repo: Repo, branch: str) -> str | None:
    """A branch named below ``branch`` (``<branch>/...``, as pi-autoresearch's finalize.sh
    makes them), beside which git cannot make ``branch`` (it keeps a branch as a file, not a
    folder); None when there is none."""
    inside = repo.for_each_ref(f"refs/heads/{branch}/")
    return inside[0].removeprefix("refs/heads/") if inside else None


def refuse_branch_below(repo: Repo, branch: str, what: str, advice: str) -> None:
    """Refuse (exit 3) to make ``branch`` (``what`` says which: "the session branch") when a
    branch below it is in the way (:func:`branch_below`), ending with ``advice``."""
    below = branch_below(repo, branch)
    if below is not None:
        raise Refused(f"branch {below} exists (pi-autoresearch's finalize.sh makes such "
                      f"branches): git cannot make {what} {branch} beside it; {advice}")


def open_on_branch(cwd: str | os.PathLike[str] | None = None) -> Session:
    """The session of the work tree containing ``cwd`` (:meth:`Session.open`), refused (exit
    3, :func:`check_branch`) when the work tree is not on the session branch: what a command
    that records, or measures to record, opens."""
    session = Session.open(cwd)
    check_branch(session)
    return session


def check_branch(session: Session) -> None:
    """Refuse (exit 3) when the work tree is not on the session branch, saying why and how
    to get there (a missing branch, another worktree, uncommitted changes to carry over)."""
    branch = session.repo.branch_at_discovery
    wanted = session.branch  # (a worker works on its own branch)
    if branch != wanted:
        session.check_not_joined_elsewhere()  # (a pulled clone: a join, not a switch, helps)
        where = f"branch {branch}" if branch else "a detached HEAD"
        done = finished(session) if session.worker is None else None
        if done is not None:  # squash-merged or cherry-picked here, its branch kept or not
            raise Refused(f"{done}: the session is over (to go on with it, git switch "
                          f"{wanted}; to start another here, move .auto/ aside and run git "
                          "autoresearch start --force)")
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
    HEAD. A session merged into the branch checked out, or whose keeps' changes are in it by
    patch id (:func:`picked_into_head`: a squash merge, cherry-picks), is finished, not in
    trouble."""
    branch = session_branch(session.config.session_id)
    current = session.repo.branch_at_discovery
    if session.worker is not None and current == session.branch:
        return session.repo.resolve(branch) is not None, None  # a worker on its own branch
    if current != branch and session.repo.resolve(branch) is None:
        if merged_elsewhere(session):
            return False, None
        return False, (f"the session branch {branch} does not exist, and its last keep is "
                       "not in HEAD (not fetched? "
                       f"{pull_hint(session.repo, session.config.session_id)})")
    if current is None:
        return True, (f"the work tree is on a detached HEAD, not on the session branch {branch} "
                      f"({_way_back(session, branch)})")
    if current != branch and not session.repo.merged(branch) \
            and picked_into_head(session) is None:
        return True, (f"the work tree is on branch {current}, not on the session branch "
                      f"{branch} ({_way_back(session, branch)})")
    return True, None


def _way_back(session: Session, branch: str) -> str:
    """How to get back onto the session branch ``branch``: ``resume`` checks it out, once no
    uncommitted change is in the way (it refuses those)."""
    changed = uncommitted(session)
    if not changed:
        return "git autoresearch resume checks it out"
    shown = ", ".join(changed[:3]) + (" ..." if len(changed) > 3 else "")
    return (f"uncommitted changes in {shown}: {carry_over(session.repo, branch)}; or git "
            "autoresearch resume checks it out once they are gone")

def merged_elsewhere(session: Session) -> bool:
    """Whether the last kept commit of the ledger is in HEAD (a session merged into the
    branch checked out, its own branch perhaps deleted since), or its keeps' changes are
    (:func:`picked_into_head`: a squash merge, cherry-picks)."""
    commit = _last_keep(session)
    return commit is not None and (session.repo.merged(commit)
                                   or picked_into_head(session) is not None)


def _last_keep(session: Session) -> str | None:
    """The commit of the ledger's last keep (full id), None when there is none here."""
    kept = [r for r in session.ledger.runs if r.status == "keep" and r.data.get("commit")]
    recorded = str(kept[-1].data["commit"]).strip() if kept else ""
    return session.repo.resolve(recorded) if HEX_NAME.fullmatch(recorded) else None


def picked_into_head(session: Session) -> str | None:
    """How the session's kept changes came into HEAD without its commits, by patch id
    (git-patch-id(1)): ``a squash merge: commit <id>`` when a commit after the session's base
    has the whole difference from the base to the last keep, ``cherry-picks: commits <id>,
    ...`` when every kept commit's change is in a commit after the base; None otherwise (no
    keep, the keeps' commits themselves in HEAD, or a change missing). The session branch's
    tip is the last keep; without the branch, the ledger's last keep."""
    repo = session.repo
    base = (session.ledger.segments[0].header or {}).get("base_commit")
    tip = repo.resolve(session_branch(session.config.session_id)) or _last_keep(session)
    if not isinstance(base, str) or not base or tip is None or repo.merged(tip) \
            or not repo.is_ancestor(base, tip):
        return None
    found = repo.picked_into(base, tip)
    if found is None:
        return None
    kind, commits = found
    if kind == "squash":
        return f"a squash merge: commit {repo.short(commits[0])}"
    return "cherry-picks: commits " + ", ".join(repo.short(c) for c in commits)


def finished(session: Session) -> str | None:
    """The sentence saying the session is finished, when the work tree is off its branch
    and the keeps' changes are in the branch checked out by patch id
    (:func:`picked_into_head`); None otherwise."""
    current = session.repo.branch_at_discovery
    if current is None or current == session_branch(session.config.session_id):
        return None
    how = picked_into_head(session)
    if how is None:
        return None
    return (f"session {session.config.session_id} is finished: its kept changes are in "
            f"{current} by patch id ({how})")
