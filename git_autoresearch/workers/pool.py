"""Several agents at once on one machine: ``worker add``, ``worker list``, ``worker remove``.

A worker is a linked worktree of the repository on its own worker branch
(``autoresearch-workers/<id>/<name>``), at ``<folder of the work tree>/<name of the work
tree>.workers/<name>`` unless told otherwise. It shares the main work tree's ``.auto/`` (one
configuration, one ledger) and takes the same commands; its keeps advance the session branch
by compare-and-swap (:mod:`workers.replay`). Once workers exist, the main work tree is worker
``main``, on its own worker branch too: the session branch is then checked out nowhere, so
that a keep by any worker can move it without changing a work tree under someone's feet.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..git import ABSENT, GitError, Repo
from ..git.merge import add_on_branch, is_ancestor, move_work_tree, point_head
from ..git.worktrees import remove as remove_worktree
from ..history.experiment import save_snapshot, take_snapshot
from ..history.refs import (
    WORKER_BRANCH_PREFIX,
    ledgers_prefix,
    namespace,
    session_branch,
    worker_branch,
)
from ..runtime.errors import Refused, UsageError
from ..runtime.scope import AUTO
from ..session.layout import Layout, exclude_auto_link
from ..session.lock import busy
from ..session.session import Session
from ..session.shared import (
    MAIN,
    Worker,
    check_name,
    current,
    mark,
    release,
    reservations,
    unmark,
    worktree_path,
)


@dataclass(frozen=True)
class WorkerInfo:
    """A worker as ``worker list`` shows it: ``name``, ``branch``, ``path`` (None: its folder
    is gone), its ``commit``, whether it is ``behind`` the incumbent, its ``last_run`` and the
    run number it is measuring (``measuring``)."""

    name: str
    branch: str
    path: Path | None
    commit: str | None
    behind: bool
    last_run: dict[str, Any] | None
    measuring: int | None
    elsewhere: bool = False  # a clone that joined through the remote, known by its ledger ref

    def to_json(self) -> dict[str, Any]:
        return {"worker": self.name, "branch": self.branch,
                "path": str(self.path) if self.path else None, "commit": self.commit,
                "behind": self.behind, "last_run": self.last_run, "measuring": self.measuring,
                "elsewhere": self.elsewhere}


def default_folder(session: Session) -> Path:
    """Where ``worker add`` puts worktrees: ``<folder of the work tree>/<its name>.workers``."""
    top = session.repo.top
    return top.parent / f"{top.name}.workers"


def _names(session: Session) -> list[str]:
    prefix = "refs/heads/" + WORKER_BRANCH_PREFIX + session.config.session_id + "/"
    return [ref[len(prefix):] for ref in session.repo.for_each_ref(prefix)]


def _main_repo(session: Session) -> Repo:
    found = session.worker
    if found is not None and found.remote is not None:
        raise Refused(f"this clone is worker {found.name} of session {found.session_id}, "
                      f"joined through {found.remote}: its other workers are clones that "
                      "joined too (git autoresearch worker list); it adds and removes none")
    if found is not None and found.name != MAIN:
        raise Refused(f"this is worker {found.name}'s worktree: add, list and remove workers "
                      f"from the main work tree, {found.main}")
    return session.repo


def enlist_main(session: Session) -> None:
    """Make the main work tree worker ``main``: its own worker branch at HEAD (HEAD pointed at
    it; nothing in the work tree or index changes), and its marker."""
    repo = session.repo
    sid = session.config.session_id
    if session.worker is not None:
        return
    head = session.head()
    if repo.resolve("refs/heads/" + session_branch(sid)) != head:
        raise Refused(f"the work tree is not at the tip of the session branch "
                      f"{session_branch(sid)}: workers start from the incumbent")
    ref = "refs/heads/" + worker_branch(sid, MAIN)
    repo.update_ref(ref, head, ABSENT, "git-autoresearch: the main work tree becomes worker main")
    point_head(repo, ref)
    mark(repo, Worker(MAIN, sid, repo.top))
    session.worker = current(repo)


def add(session: Session, count: int, folder: Path | None = None,
        names: list[str] | None = None) -> list[WorkerInfo]:
    """Add ``count`` workers (or those ``names``), each a linked worktree at ``folder/<name>``
    (:func:`default_folder`) on a new worker branch at the incumbent. Refuses (exit 3) in a
    worker's worktree, off the session's tip, in a clone that joined the session through a
    remote (or pulled one that joined clones run: their workers would take numbers on no
    remote), or when a name or folder is taken; a bad name is a usage error."""
    sid = session.config.session_id
    if session.remote is not None:
        raise Refused(f"this clone joined session {sid} through {session.remote}: a worker "
                      "added here would take its run numbers on no remote; clone the "
                      f"repository again and join from there (git autoresearch worker join "
                      f"{session.remote} {sid} --name NAME)")
    session.check_not_joined_elsewhere()
    repo = _main_repo(session)
    if names:
        for name in names:
            check_name(name)
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise UsageError(f"worker {twice[0]} is named twice")
    taken = set(_names(session))
    if names is None:
        names, n = [], 1
        while len(names) < count:
            if f"w{n}" not in taken:
                names.append(f"w{n}")
            n += 1
    clash = sorted(set(names) & taken)
    if clash:
        raise Refused(f"worker {clash[0]} exists already (git autoresearch worker list)")
    where = (folder or default_folder(session)).resolve()
    if where == repo.top or repo.top in where.parents:
        raise Refused(f"{where} is inside the work tree: put the workers outside it (--path "
                      f"{default_folder(session)})")
    for name in names:
        if (where / name).exists():
            raise Refused(f"{where / name} exists already: choose another folder (--path)")
    with session.shared("add workers"):
        exclude_auto_link(repo)
        enlist_main(session)
        incumbent = repo.resolve("refs/heads/" + session_branch(sid))
        assert incumbent is not None
        made = []
        for name in names:
            path = where / name
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                add_on_branch(repo, path, worker_branch(sid, name), incumbent)
            except GitError as exc:
                raise Refused(f"git could not add the worktree {path}: "
                              f"{exc.message}") from None
            there = Repo.discover(path)
            mark(there, Worker(name, sid, repo.top))
            # .auto/measure.sh and the like, as the measured command names them.
            (path / AUTO).symlink_to(Layout(repo).auto, target_is_directory=True)
            save_snapshot(Layout(there).untracked, take_snapshot(there))
            made.append(name)
    return [w for w in listing(session) if w.name in made]


def listing(session: Session) -> list[WorkerInfo]:
    """Every worker of the session, ``main`` first; the clones that joined through a remote
    (their ledger refs fetched here) after them, ``elsewhere``."""
    repo, sid = session.repo, session.config.session_id
    incumbent = repo.resolve("refs/heads/" + session_branch(sid))
    held = reservations(repo, sid)
    last: dict[str, dict[str, Any]] = {}
    for run in session.ledger.runs:
        last[str(run.data.get("worker") or MAIN)] = {
            "run": run.number, "status": run.status, "description": run.description}
    out = []
    for name in sorted(_names(session), key=lambda n: (n != MAIN, n)):
        branch = worker_branch(sid, name)
        commit = repo.resolve("refs/heads/" + branch)
        if name == (session.worker.name if session.worker else MAIN):
            path: Path | None = repo.top
        else:
            path = worktree_path(repo, sid, name,
                                 session.worker.main if session.worker else repo.top)
        if path is not None and not path.exists():
            path = None
        behind = bool(incumbent and commit and commit != incumbent
                      and is_ancestor(repo, commit, incumbent))
        number = held.get(name)
        # A number held by a command still running there (one killed leaves it, idle).
        measuring = number if number is not None and path is not None and session.ledger.find(
            number, ours=True) is None and busy(_scratch(path)) else None
        out.append(WorkerInfo(name, branch, path, repo.short(commit) if commit else None,
                              behind, last.get(name), measuring))
    prefix = ledgers_prefix(sid)
    for ref in repo.for_each_ref(prefix):
        name = ref[len(prefix):]
        if name not in {w.name for w in out}:
            out.append(WorkerInfo(name, worker_branch(sid, name), None, None, False,
                                  last.get(name), None, elsewhere=True))
    return out


def check_removable(session: Session, name: str, *, force: bool = False) -> None:
    """Refuse (exit 3) what :func:`remove` would refuse for worker ``name``, before any worker
    of a list is removed: in a joined clone (:func:`_main_repo`), an unknown name, ``main``
    while others exist, a worker running a command, or one with unrecorded changes (without
    ``force``)."""
    sid = session.config.session_id
    _main_repo(session)
    if name == MAIN:
        if not set(_names(session)) <= {MAIN}:
            raise Refused("worker main is the main work tree: remove the others, and it goes "
                          "back to the session branch")
        return
    if name not in _names(session):
        raise Refused(f"no worker {name} in session {sid} (git autoresearch worker list)")
    path = session.repo.worktree_of(worker_branch(sid, name))
    if path is None or not path.exists():
        return
    running = busy(_scratch(path))
    if running:
        raise Refused(f"worker {name} is running a command ({running}): stop it first; nothing "
                      "was removed")
    changed = [] if force else unrecorded(path)
    if changed:
        shown = ", ".join(changed[:3]) + (" ..." if len(changed) > 3 else "")
        raise Refused(f"worker {name} has unrecorded changes or files ({shown}): record them "
                      "(git autoresearch discard, in its worktree), or remove it with --force, "
                      "which saves them on a ref first")


def _scratch(path: Path) -> Path:
    """The scratch folder of the worktree at ``path``."""
    return Repo.discover(path).scratch


def remove(session: Session, name: str, *, force: bool = False, checked: bool = False) -> str:
    """Remove worker ``name``: its worktree and its branch (its runs, attempts and keeps stay).
    Refuses (exit 3) a worker with unrecorded changes unless ``force``, and ``main``. When
    no other worker is left, the main work tree goes back to the session branch. Returns what
    was done, for the user. ``checked``: the caller has just run :func:`check_removable`
    (which surveys the worker's work tree: not done twice)."""
    repo = _main_repo(session)
    sid = session.config.session_id
    if not checked:
        check_removable(session, name, force=force)
    if name == MAIN:
        if repo.current_branch() == session_branch(sid):
            return f"the main work tree is on {session_branch(sid)} already"
        back = _back_to_session_branch(session)
        return back.removeprefix("; ") if back else \
            "the main work tree stays on its worker branch"
    branch = worker_branch(sid, name)
    path = repo.worktree_of(branch)
    saved = ""
    if path is not None and path.exists():
        # Without --force, check_removable found nothing unrecorded.
        changed = unrecorded(path) if force else []
        if changed:
            saved = "; its unrecorded changes are saved at " + _save_leftovers(
                session, path, name, changed)
    with session.shared("remove a worker"):
        if path is not None:
            remove_worktree(repo, path)
            try:
                path.parent.rmdir()  # the workers' folder, once it is empty
            except OSError:
                pass
        ref = "refs/heads/" + branch
        commit = repo.resolve(ref)
        incumbent = repo.resolve("refs/heads/" + session_branch(sid))
        if commit and incumbent and is_ancestor(repo, commit, incumbent):
            repo.delete_ref(ref, commit)
        release(repo, sid, name)
        from .claims import release_worker

        release_worker(repo, sid, name)
        said = f"removed worker {name}" + (f" ({path})" if path else "") + saved
        if set(_names(session)) <= {MAIN}:
            said += _back_to_session_branch(session)
    return said


def unrecorded(path: Path) -> list[str]:
    """What removing the worker's worktree at ``path`` would lose: its changed tracked files
    (protected ones too) and its untracked files (ignored files aside), sorted."""
    there = Session.open(path, check_config=False)
    changes = there.changes()
    return sorted({*changes.tracked, *changes.created, *changes.preexisting} - {AUTO.rstrip("/")})


def _save_leftovers(session: Session, path: Path, name: str, paths: list[str]) -> str:
    """Save ``paths`` of the worker's worktree at ``path`` as a commit on
    ``refs/autoresearch/<id>/removed/<worker>[.n]``; returns the ref."""
    from ..history.experiment import record_attempt
    from ..measure.worktree import free_ref

    there = Repo.discover(path)
    head = there.head()
    assert head is not None
    ref = free_ref(session.repo, f"{namespace(session.config.session_id)}/removed/{name}")
    record_attempt(there, head, paths, ref=ref,
                   message=f"git-autoresearch: what worker {name} left unrecorded")
    return ref


def _back_to_session_branch(session: Session) -> str:
    """The last worker gone: the main work tree back on the session branch (moved to the
    incumbent first, when it is behind and nothing in the way changes)."""
    repo, sid = session.repo, session.config.session_id
    ref = "refs/heads/" + worker_branch(sid, MAIN)
    head = repo.resolve("HEAD")
    incumbent = repo.resolve("refs/heads/" + session_branch(sid))
    if repo.current_branch() != worker_branch(sid, MAIN) or head is None or incumbent is None:
        return ""
    if head != incumbent:
        if not is_ancestor(repo, head, incumbent):
            return "; the main work tree stays on its worker branch (it is not behind the " \
                "session branch)"
        try:
            move_work_tree(repo, head, incumbent)
        except GitError:
            return ("; the main work tree stays on its worker branch: a changed or untracked "
                    "file is in the way of the incumbent")
    point_head(repo, "refs/heads/" + session_branch(sid))
    repo.delete_ref(ref, head)
    unmark(repo)
    return f"; the main work tree is back on {session_branch(sid)}"
