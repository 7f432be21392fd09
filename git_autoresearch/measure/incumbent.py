"""The incumbent measured beside the candidate: a linked worktree of the commit the candidate
is compared with, made when the decision rule first asks for a sample of the incumbent
(:class:`decide.rules.Comparison`), one sample at a time, in the candidate's measurement slot so
that both run under the same load.

The worktree is ``<scratch>/incumbent-<pid>/tree``, a detached checkout of the session's HEAD.
What a checkout lacks is brought in: the untracked files the commands name (copied, as
``audit`` does: a ``.auto/measure.sh``) and the configured ``shared_paths`` (ignored folders
the benchmark needs, such as a virtual environment, build outputs or data, linked by a
symbolic link to the work tree's, never guessed). It is removed when the measurement ends,
however it ends; one left by a process killed outright is swept by the next measurement.
The session's work tree, index and HEAD are never touched.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Mapping
from types import TracebackType

from ..git import GitError
from ..runtime import signals
from ..session.session import Session
from .samples import measure

FOLDER_PREFIX = "incumbent-"
TREE = "tree"


class IncumbentTree:
    """A worktree of ``commit`` to measure the incumbent in, made on the first
    :meth:`sample`; a context manager that removes it. ``env`` is the environment of the
    candidate's commands (the incumbent's have ``AUTORESEARCH_INCUMBENT=1`` besides)."""

    def __init__(self, session: Session, commit: str, env: Mapping[str, str]) -> None:
        self.session, self.commit = session, commit
        self.env = {**env, "AUTORESEARCH_INCUMBENT": "1"}
        self.folder = session.repo.scratch / f"{FOLDER_PREFIX}{os.getpid()}"
        self.tree = self.folder / TREE
        self.made = False
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
        """Check the incumbent out and bring in what a checkout lacks; why not, or None."""
        # (linked worktrees and checkouts): only for a rule that asks for the incumbent
        from ..git import worktrees
        from ..history.checkouts import bring, link_shared, sweep, untracked_inputs

        session = self.session
        sweep(session, FOLDER_PREFIX, (TREE,))
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.made = True  # (whatever follows, close removes it)
            worktrees.add_detached(session.repo, self.tree, self.commit)
            bring(session, untracked_inputs(session), self.tree)
        except GitError as exc:
            return f"the incumbent could not be checked out in a worktree: {exc}"
        except OSError as exc:
            return (f"the incumbent's worktree could not be made: "
                    f"{exc.strerror or exc.__class__.__name__} ({exc.filename or self.folder})")
        self.notes = link_shared(session, self.tree)
        return None

    def close(self) -> None:
        """Remove the worktree and its folder, if made (a signal waits until they are gone)."""
        if not self.made:
            return
        from ..git import worktrees

        with signals.deferred():
            worktrees.remove(self.session.repo, self.tree)
            shutil.rmtree(self.folder, ignore_errors=True)
        self.made = False
