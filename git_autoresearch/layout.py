"""Where a work tree keeps its session: the ``.auto/`` files (DESIGN.md section 3) and the
per-worktree scratch folder under ``git rev-parse --git-path autoresearch``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .errors import Refused
from .files import write_atomic
from .git import Repo
from .paths import AUTO


@dataclass
class Layout:
    """Where a work tree keeps its session: ``.auto/`` files and the per-worktree scratch."""

    repo: Repo

    @classmethod
    def discover(cls, cwd: str | os.PathLike[str] | None = None) -> Layout:
        """The layout of the work tree that holds ``cwd`` (GitError outside a repository)."""
        return cls(Repo.discover(cwd))

    @property
    def auto(self) -> Path:
        return self.repo.top / AUTO

    @property
    def config(self) -> Path:
        return self.auto / "config.toml"

    @property
    def ledger(self) -> Path:
        return self.auto / "log.jsonl"

    @property
    def run_log(self) -> Path:
        return self.auto / "run.log"

    @property
    def stop(self) -> Path:
        return self.auto / "STOP"

    @property
    def prompt(self) -> Path:
        return self.auto / "prompt.md"

    @property
    def hooks(self) -> Path:
        return self.auto / "hooks"

    def read_config_bytes(self) -> bytes:
        """The bytes of ``config.toml``; :class:`Refused` when there is no readable file."""
        try:
            return self.config.read_bytes()
        except FileNotFoundError:
            raise Refused(f"no session here: {self.config} does not exist "
                          f"({self.missing_hint()})") from None
        except OSError as exc:
            raise Refused(f"cannot read {self.config}: {exc.strerror}") from None

    def missing_hint(self, saved: list[str] | None = None) -> str:
        """What to do when ``config.toml`` is missing: resume a session a state ref holds
        (``saved``: their ids, when the caller has asked already), or start one."""
        from .state import sessions

        if self.start_intent.exists():
            return "`git autoresearch resume` finishes the start that was interrupted"
        saved = sessions(self.repo) if saved is None else saved
        if not saved:
            remotes = self.repo.remotes()
            remote = "origin" if "origin" in remotes else (remotes or [""])[0]
            return "start one with `git autoresearch start`" + (
                f", or bring one from a remote with `git autoresearch pull {remote}`"
                if remote else "")
        if len(saved) == 1:
            return f"`git autoresearch resume` restores session {saved[0]} from its state ref"
        return ("`git autoresearch resume --session-id ID` restores one from its state ref: "
                + ", ".join(saved))

    @property
    def pending(self) -> Path:
        return self.repo.scratch / "pending.json"

    @property
    def untracked(self) -> Path:
        return self.repo.scratch / "untracked"

    @property
    def intent(self) -> Path:
        return self.repo.scratch / "intent.json"

    @property
    def start_intent(self) -> Path:
        """What a ``start`` that has not finished is creating (``start_record.finish_start``)."""
        return self.repo.scratch / "start.json"


def exclude_auto(repo: Repo) -> None:
    """Add ``/.auto/`` to ``info/exclude`` (not the user's ``.gitignore``)."""
    path = repo.common_dir / "info" / "exclude"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        text = path.read_text()
    except FileNotFoundError:
        text = ""
    if any(line.strip() in ("/.auto/", ".auto/", ".auto", "/.auto") for line in text.splitlines()):
        return
    if text and not text.endswith("\n"):
        text += "\n"
    # The user's own exclusions are in this file: replaced whole, never left cut short.
    write_atomic(path, (text + "# git-autoresearch session folder\n/.auto/\n").encode())
