"""The incumbent measured beside the candidate: a linked worktree of the commit the candidate
is compared with, checked out when the decision rule first asks for a sample of the incumbent
(:class:`decide.rules.Comparison`), one sample at a time, in the candidate's measurement slot so
that both run under the same load.

The worktree is kept between runs, at ``<scratch>/incumbent/tree``: each use moves it to the
commit asked for as a new checkout would have it (:func:`git.worktrees.move_detached`: only the
files that differ are written, and every untracked or ignored file the last benchmark left is
removed), under an exclusive ``flock`` on ``<scratch>/incumbent/lock``. When that lock is
held (another measurement of this work tree), or the work tree has submodules checked out, the
measurement uses a worktree of its own, ``<scratch>/incumbent-<pid>/tree``, removed when the
measurement ends, however it ends; one left by a process killed outright is swept by the next
measurement. ``finalize`` removes the kept one (:func:`remove_kept`).

What a checkout lacks is brought in: the untracked files the commands name (copied, as
``audit`` does: a ``.auto/measure.sh``) and the configured ``shared_paths`` (ignored folders
the benchmark needs, such as a virtual environment, build outputs or data, linked by a
symbolic link to the work tree's, never guessed). The session's work tree, index and HEAD are
never touched.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from ..git import GitError, Repo
from ..runtime import signals
from ..session.session import Session
from .samples import measure

FOLDER_PREFIX = "incumbent-"  # <scratch>/incumbent-<pid>: one measurement's own worktree
TREE = "tree"
KEPT = "incumbent"  # <scratch>/incumbent: the worktree kept between runs, and its lock
LOCK = "lock"


class IncumbentTree:
    """A worktree of ``commit`` to measure the incumbent in, checked out on the first
    :meth:`sample`; a context manager that releases the kept worktree, or removes this
    measurement's own. ``env`` is the environment of the
    candidate's commands (the incumbent's have ``AUTORESEARCH_INCUMBENT=1`` besides)."""

    def __init__(self, session: Session, commit: str, env: Mapping[str, str]) -> None:
        self.session, self.commit = session, commit
        self.env = {**env, "AUTORESEARCH_INCUMBENT": "1"}
        self.folder = session.repo.scratch / f"{FOLDER_PREFIX}{os.getpid()}"
        self.tree = self.folder / TREE
        self.made = False
        self.held: int | None = None  # the kept worktree's lock, while this one uses it
        self.samples = 0
        # One sample a measurement, no checks: the candidate's run has them.
        self.config = dataclasses.replace(session.config, runs_per_experiment=1,
                                          checks_command=None)
        self.notes: list[str] = []  # shared paths that could not be linked

    def __enter__(self) -> IncumbentTree:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def sample(self) -> float | str:
        """One sample of the incumbent's metric, or why there is none: the worktree could not
        be made, or the command gave no metric there (a sentence for the run's warnings)."""
        if not self.made:
            problem = self._make()
            if problem is not None:
                return problem
        self.samples += 1
        result = measure(self.config, top=self.tree, log_path=self.folder / "run.log", env=self.env,
                         samples_at_most=1, checks=False, first_sample=self.samples,
                         event="incumbent_sample")
        if result.metric is None:
            shown = " | ".join(result.log_tail.strip().splitlines()[-3:])[-400:] or "none"
            return (f"the incumbent gave no metric in its worktree ({result.reason}; the last "
                    f"lines of its output: {shown}); a benchmark that needs ignored files (a "
                    "virtual environment, data, build outputs) has them there once they are "
                    "named in shared_paths (git autoresearch start --new-segment "
                    "--shared-paths PATH)")
        return result.metric

    def _make(self) -> str | None:
        """Check the incumbent out (the kept worktree moved to it when this measurement can
        take it, else, or when that fails, a worktree of its own) and bring in what a checkout
        lacks; why not, or None."""
        # (linked worktrees and checkouts): only for a rule that asks for the incumbent
        from ..git import worktrees
        from ..history.checkouts import bring, link_shared, sweep, untracked_inputs

        session, repo = self.session, self.session.repo
        sweep(session, FOLDER_PREFIX, (TREE,))
        try:
            self.made = True  # (whatever follows, close removes or releases it)
            if not (self._take_kept() and self._move_kept()):
                self.folder.mkdir(parents=True, exist_ok=True)
                worktrees.add_detached(repo, self.tree, self.commit)
            bring(session, untracked_inputs(session.repo, session.config), self.tree)
        except GitError as exc:
            return f"the incumbent could not be checked out in a worktree: {exc}"
        except OSError as exc:
            return (f"the incumbent's worktree could not be made: "
                    f"{exc.strerror or exc.__class__.__name__} ({exc.filename or self.folder})")
        self.notes = link_shared(session, self.tree)
        return None

    def _move_kept(self) -> bool:
        """Move the kept worktree (its lock held) to the incumbent; one git cannot move (not
        there, a lock a killed git left, a copied repository's) is made anew. False, the
        lock released, when neither can be done (what a benchmark left there cannot be
        removed): this measurement then makes a worktree of its own."""
        from ..git import worktrees

        repo = self.session.repo
        try:
            worktrees.move_detached(repo, self.tree, self.commit)
            return True
        except GitError:
            pass
        try:
            worktrees.forget_copies(repo, self.tree)  # (a copied repository's records of it)
            worktrees.remove(repo, self.tree)
            worktrees.add_detached(repo, self.tree, self.commit)
            return True
        except (GitError, OSError):
            if self.held is not None:
                os.close(self.held)
                self.held = None
            self.folder = repo.scratch / f"{FOLDER_PREFIX}{os.getpid()}"
            self.tree = self.folder / TREE
            return False

    def _take_kept(self) -> bool:
        """Take the kept worktree's lock (never waiting), and measure there; False when
        another measurement holds it, or the work tree has submodules checked out (the kept
        worktree does not move them). Raises :class:`OSError` when its folder cannot be
        made."""
        from ..git import worktrees

        if worktrees.has_submodules(self.session.repo):
            return False
        folder = self.session.repo.scratch / KEPT
        folder.mkdir(parents=True, exist_ok=True)
        fd = _lock(folder, os.O_CREAT)
        if fd is None:
            return False
        self.held, self.folder, self.tree = fd, folder, folder / TREE
        _clear_beside(folder)
        return True

    def close(self) -> None:
        """Release the kept worktree, or remove this measurement's own worktree and its
        folder (a signal waits until they are gone); nothing when none was made."""
        if not self.made:
            return
        self.made = False
        if self.held is not None:
            os.close(self.held)  # (the lock goes with it)
            self.held = None
            return
        from ..git import worktrees

        with signals.deferred():
            worktrees.remove(self.session.repo, self.tree)
            shutil.rmtree(self.folder, ignore_errors=True)


def _clear_beside(folder: Path) -> None:
    """Remove everything in the kept worktree's ``folder`` but the worktree and its lock:
    what the last measurement wrote beside the worktree (its run log, and a benchmark's
    ``../build``), which a new checkout would not have."""
    from ..git import worktrees

    for entry in folder.iterdir():
        if entry.name in (LOCK, TREE):
            continue
        if entry.is_dir() and not entry.is_symlink():
            worktrees.remove_folder(entry)
        else:
            entry.unlink(missing_ok=True)


def remove_kept(repo: Repo) -> str | None:
    """Remove the worktree kept between runs in ``repo``'s work tree and what lies beside
    it, its lock left for the measurements after (a signal waits until they are gone); a
    sentence saying it was left when a measurement holds it now, else None (``finalize`` and
    ``gc``: the session's runs are over)."""
    from ..git import worktrees

    folder = repo.scratch / KEPT
    try:
        fd = _lock(folder)
    except OSError:  # (none was ever made here)
        return None
    if fd is None:
        return (f"the incumbent's worktree {folder / TREE} was left: a measurement is using "
                f"it (git worktree remove --force {folder / TREE}, once it is done)")
    try:
        with signals.deferred():
            worktrees.remove(repo, folder / TREE)
            _clear_beside(folder)
    finally:
        os.close(fd)
    return None


def _lock(folder: Path, create: int = 0) -> int | None:
    """The kept worktree's lock (an exclusive ``flock`` on ``folder``'s ``lock``, never
    waiting), as an open file descriptor that holds it; None when another process holds it.
    ``create``: ``os.O_CREAT`` to make the file. Raises :class:`OSError` when it cannot be
    opened."""
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CLOEXEC | create, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd
