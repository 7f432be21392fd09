"""Where a work tree keeps its session: the ``.auto/`` files (gitautoresearch-files(5)) and the
per-worktree scratch folder under ``git rev-parse --git-path autoresearch``."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..git import Repo
from ..runtime.atomic import write_atomic
from ..runtime.errors import Refused
from ..runtime.scope import AUTO
from .shared import current as current_worker


@dataclass
class Layout:
    """Where a work tree keeps its session: ``.auto/`` files and the per-worktree scratch."""

    repo: Repo
    # Where ``.auto/`` is: the top of the work tree, or (a pi-autoresearch session read in
    # place, :func:`find_pi_session`) the folder pi-autoresearch keeps it in.
    root: Path | None = None
    # A worker worktree's ``.auto/`` is the main work tree's (:mod:`session.shared`): its top, and
    # the worker's name; both None in the main work tree.
    shared: Path | None = field(default=None, init=False)
    worker: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.root is None:
            found = current_worker(self.repo)
            if found is not None:
                self.shared, self.worker = found.main, found.name

    @classmethod
    def discover(cls, cwd: str | os.PathLike[str] | None = None) -> Layout:
        """The layout of the work tree that holds ``cwd`` (GitError outside a repository)."""
        return cls(Repo.discover(cwd))

    @property
    def home(self) -> Path:
        """The folder that holds ``.auto/``: the top of the work tree (of the main work tree,
        in a worker's)."""
        return self.root or self.shared or self.repo.top

    @property
    def auto(self) -> Path:
        return self.home / AUTO

    def linked(self) -> str | None:
        """Why the session folder cannot be used when it is a symbolic link (a revert or a
        keep would reach the session's notes, ideas and STOP file through it, wherever it
        points: inside the scope, a discard deletes them), or None when it is not one."""
        if not self.auto.is_symlink():
            return None
        try:
            target = os.readlink(self.auto)
        except OSError:
            target = "?"
        return (f"{AUTO} is a symbolic link (to {target}): the session's files must sit in a "
                f"folder of their own there, which no revert reaches; move them back (rm "
                f"{self.auto} && mv {target} {self.auto}) and run the command again; nothing "
                "was changed")

    @property
    def config(self) -> Path:
        return self.auto / "config.toml"

    @property
    def ledger(self) -> Path:
        return self.auto / "log.jsonl"

    @property
    def run_log(self) -> Path:
        """``.auto/run.log``; a worker's own ``.auto/run.<worker>.log``."""
        return self.auto / (f"run.{self.worker}.log" if self.worker else "run.log")

    @property
    def stop(self) -> Path:
        return self.auto / "STOP"

    @property
    def prompt(self) -> Path:
        return self.auto / "prompt.md" if self.root is None else pi_session_file(self.root,
                                                                                 "prompt")

    @property
    def ideas(self) -> Path:
        """The ideas backlog: ``.auto/ideas.md`` (pi-autoresearch's legacy
        ``autoresearch.ideas.md`` for a pi session in the legacy layout)."""
        return self.auto / "ideas.md" if self.root is None else pi_session_file(self.root,
                                                                                "ideas")

    @property
    def hooks(self) -> Path:
        return self.auto / "hooks"

    @property
    def final_notes(self) -> Path:
        """The pull-request body ``finalize`` writes."""
        return self.auto / "final.md"

    def session_file(self, kind: str) -> Path:
        """Where a reading command finds the session file ``kind`` (a key of
        :data:`PI_FILES`: ``ideas``, ``prompt``, ...): in ``.auto/`` for a session of ours;
        otherwise where pi-autoresearch 1.6.2 finds it (:func:`pi_session_file`), so that the
        older flat files (``autoresearch.ideas.md``) of a pi session with no ``.auto/`` file
        are read."""
        if self.root is None and self.config_exists():
            return self.auto / PI_FILES[kind][0]
        return pi_session_file(self.root or self.repo.top, kind)

    def config_exists(self) -> bool:
        """Whether ``config.toml`` exists; :class:`Refused` (exit 3) when that cannot be told
        (``.auto/`` unreadable: a folder of another user, mode 000), where every caller
        would otherwise fail further on."""
        try:
            return self.config.exists()
        except OSError as exc:
            raise Refused(f"cannot read {self.config}: {exc.strerror}") from None

    def read_config_bytes(self) -> bytes:
        """The bytes of ``config.toml``; :class:`Refused` when there is no readable file."""
        try:
            return self.config.read_bytes()
        except FileNotFoundError:
            raise Refused(f"no session here: {self.config} does not exist "
                          f"({self.missing_hint()})") from None
        except OSError as exc:
            raise Refused(f"cannot read {self.config}: {exc.strerror}") from None

    def holds_runs(self) -> bool:
        """Whether the ledger file has a line (one ``import`` wrote, or another tool)."""
        try:
            return self.ledger.stat().st_size > 0
        except OSError:
            return False

    def missing_hint(self, saved: list[str] | None = None) -> str:
        """What to do when ``config.toml`` is missing: resume a session a state ref holds
        (``saved``: their ids, when the caller has asked already), start one on the runs the
        ledger holds without one (imported), or start one."""
        from ..history.state_ref import sessions

        if self.start_intent.exists():
            return "`git autoresearch resume` finishes the start that was interrupted"
        saved = sessions(self.repo) if saved is None else saved
        if not saved and self.holds_runs():
            return (".auto/log.jsonl holds runs read without a session of ours (imported, or "
                    "another tool's): log, status and analyze read it; git autoresearch start "
                    "makes it a session, its runs kept")
        if not saved:
            remote = self.repo.likely_remote()
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
    def branch_runs(self) -> Path:
        """The highest run number the session branch's trailers name, by tip (a cache:
        ``trailers.highest_run_named``)."""
        return self.repo.scratch / "branch-runs"

    @property
    def head_facts(self) -> Path:
        """What was read of HEAD's commit (the run its trailers name), for the next command (a
        cache: ``git.facts``)."""
        return self.repo.scratch / "head-facts"

    @property
    def start_intent(self) -> Path:
        """What a ``start`` that has not finished is creating (``start_record.finish_start``)."""
        return self.repo.scratch / "start.json"


def exclude_auto_link(repo: Repo) -> None:
    """Add ``/.auto`` to ``info/exclude``: a worker's ``.auto`` is a symbolic link to the main
    work tree's, which ``/.auto/`` (folders only) does not match."""
    _exclude(repo, ("/.auto", ".auto"), "# git-autoresearch: a worker's link to the session "
             "folder\n/.auto\n")


def exclude_auto(repo: Repo) -> None:
    """Add ``/.auto/`` to ``info/exclude`` (not the user's ``.gitignore``)."""
    _exclude(repo, ("/.auto/", ".auto/", ".auto", "/.auto"),
             "# git-autoresearch session folder\n/.auto/\n")


def _exclude(repo: Repo, known: tuple[str, ...], added: str) -> None:
    """Append ``added`` to ``info/exclude`` unless a line of it is one of ``known``."""
    path = repo.common_dir / "info" / "exclude"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        text = path.read_text()
    except FileNotFoundError:
        text = ""
    if any(line.strip() in known for line in text.splitlines()):
        return
    if text and not text.endswith("\n"):
        text += "\n"
    # The user's own exclusions are in this file: replaced whole, never left cut short.
    write_atomic(path, (text + added).encode())


# pi-autoresearch's session files: the current name under .auto/, and the legacy flat name
# (pi-autoresearch 1.6.2, extensions/pi-autoresearch/paths.ts:21-28).
PI_FILES = {"log": ("log.jsonl", "autoresearch.jsonl"),
            "prompt": ("prompt.md", "autoresearch.md"),
            "ideas": ("ideas.md", "autoresearch.ideas.md"),
            "checks": ("checks.sh", "autoresearch.checks.sh"),
            "measure": ("measure.sh", "autoresearch.sh"),
            "config": ("config.json", "autoresearch.config.json")}


def pi_session_file(folder: Path, kind: str) -> Path:
    """The path pi-autoresearch uses for session file ``kind`` (a key of :data:`PI_FILES`) of
    the session in ``folder``: under ``.auto/`` when any current session file (or
    ``.auto/hooks``) exists there, else the legacy flat file when it exists, else under
    ``.auto/`` (pi-autoresearch 1.6.2, extensions/pi-autoresearch/paths.ts:52-75,
    ``sessionFilePath``)."""
    current = folder / AUTO / PI_FILES[kind][0]
    if any((folder / AUTO / name).exists() for name, _ in PI_FILES.values()) \
            or (folder / AUTO / "hooks").exists():
        return current
    legacy = folder / PI_FILES[kind][1]
    return legacy if legacy.exists() else current


@dataclass
class PiSession:
    """A pi-autoresearch session found from a directory: ``config_dir``, where pi was started
    (its ``.auto/config.json`` is read there), ``work_dir``, where its session files are (the
    config's ``workingDir``, else ``config_dir``), the ``ledger`` path, ``max_iterations`` (the
    config's ``maxIterations``: None when unset), and ``warnings`` (a config that could not be
    read)."""

    config_dir: Path
    work_dir: Path
    ledger: Path
    max_iterations: int | None
    warnings: list[str] = field(default_factory=list)


def pi_config(folder: Path) -> tuple[dict[str, Any], str | None]:
    """pi-autoresearch's configuration in ``folder`` (``.auto/config.json``, or the legacy
    ``autoresearch.config.json``), and a warning when the file exists but is no JSON object
    (pi then reads it as ``{}``, silently: pi-autoresearch 1.6.2,
    extensions/pi-autoresearch/index.ts:470-478, ``readConfig``)."""
    path = pi_session_file(folder, "config")
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError, RecursionError):
        return {}, f"{path} is not a readable JSON object; read without its settings"
    if not isinstance(data, dict):
        return {}, f"{path} is not a JSON object; read without its settings"
    return data, None


def find_pi_session(start: Path, top: Path) -> PiSession | None:
    """The pi-autoresearch session seen from ``start``: in ``start``, then each folder above it
    up to ``top`` (the work tree's top), the first folder whose session ledger exists, read as
    pi does from the folder it was started in: its ``.auto/config.json`` ``workingDir``
    (relative to that folder, or absolute) names where the session files are
    (pi-autoresearch 1.6.2, extensions/pi-autoresearch/index.ts:493-499, ``resolveWorkDir``),
    and ``maxIterations`` a limit (a positive number, rounded down: index.ts:481-486). None
    when no folder has one. Raises :class:`Refused` for a ``workingDir`` that does not exist or
    is not a folder (pi's own words: index.ts:565-576)."""
    folder = start
    while True:
        config, problem = pi_config(folder)
        work = folder
        wanted = config.get("workingDir")
        if isinstance(wanted, str) and wanted:
            work = Path(os.path.normpath(folder / wanted))
            if not work.is_dir():
                what = "is not a directory" if work.exists() else "does not exist"
                raise Refused(f'workingDir "{work}" (from {pi_session_file(folder, "config")}) '
                              f"{what}")
        ledger = pi_session_file(work, "log")
        if ledger.is_file():
            limit = config.get("maxIterations")
            number = (math.floor(limit) if isinstance(limit, (int, float))
                      and not isinstance(limit, bool) and math.isfinite(limit) and limit > 0
                      else None)
            return PiSession(folder, work, ledger, number, [problem] if problem else [])
        if folder == top or folder.parent == folder:
            return None
        folder = folder.parent
