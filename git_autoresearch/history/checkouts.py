"""Detached checkouts of the session's commits under the scratch folder, measured beside the
work tree (``audit``: a keep and its parent; ``finalize``; the incumbent beside a candidate):
what a checkout lacks is brought from the work tree, and what a process killed outright left
behind is swept. The session's work tree, index and HEAD are never touched."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..git import Repo, worktrees
from ..ledger.jsontext import is_whole
from ..measure.runner import process_alive
from ..runtime import signals
from ..runtime.scope import literal_path
from ..session.config import Config
from ..session.session import Session

SIDES = ("parent", "commit")  # an audit's two worktrees, the default of sweep


def sweep(session: Session, prefix: str, trees: tuple[str, ...] = SIDES) -> list[Path]:
    """Remove what a command killed outright (SIGKILL, a machine that went down) left under
    the scratch folder: each ``<prefix><pid>`` folder (``audit-``, ``final-``,
    ``incumbent-``) whose process is gone, with its worktrees (the subfolders ``trees``).
    Returns the folders removed."""
    repo = session.repo
    removed = []
    for folder in left_behind(session, prefix):
        with signals.deferred():
            for tree in trees:
                worktrees.remove(repo, folder / tree)
            shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def left_behind(session: Session, prefix: str) -> list[Path]:
    """The ``<prefix><pid>`` folders under the scratch folder whose process is gone (killed
    outright), sorted: what :func:`sweep` removes."""
    try:
        folders = sorted(session.repo.scratch.glob(f"{prefix}*"))
    except OSError:
        return []
    return [folder for folder in folders if is_whole(pid := folder.name.removeprefix(prefix))
            and not process_alive(int(pid))]


def untracked_inputs(repo: Repo, cfg: Config) -> list[str]:
    """The files the measurement command (and the metric command) of ``cfg`` name by a path
    inside ``repo``'s work tree (relative, or absolute) that git does not track: a
    ``.auto/measure.sh`` (never committed) or an ignored data file, which a checkout of a
    commit lacks. A tracked file is never among them: a keep that deleted it must be measured
    without it."""
    from ..session.command_files import named_paths

    named = list(dict.fromkeys(
        path for command in (cfg.command, cfg.metric_command)
        for path in named_paths(repo, command or "") if (repo.top / path).is_file()))
    tracked = set(repo.indexed(named))
    return [path for path in named if path not in tracked]


# The largest file :func:`input_digests` reads (a script, a configuration), in bytes: a data
# file the command names can be gigabytes, which every start would read.
INPUT_DIGEST_LIMIT = 16 << 20


def input_digests(repo: Repo, cfg: Config) -> dict[str, str]:
    """The ``sha256:<hex>`` digest of each of :func:`untracked_inputs` up to
    :data:`INPUT_DIGEST_LIMIT` bytes (path -> digest): what a segment's header records, so that
    its keeps are not measured later with other bytes."""
    from ..session.config import file_hash

    found = {}
    for path in untracked_inputs(repo, cfg):
        try:
            if (repo.top / path).stat().st_size <= INPUT_DIGEST_LIMIT:
                found[path] = file_hash((repo.top / path).read_bytes())
        except OSError:
            continue
    return found


def check_inputs(session: Session, number: int, segment: int) -> None:
    """Refuse (exit 3) to measure run ``number`` of ``segment`` when a file its commands named
    that git does not track (a ``.auto/measure.sh``) has changed since the segment began, as
    its header's ``inputs`` digests say: the keep cannot be measured as it was kept. Nothing
    is checked for the current segment, or a header that records no digests."""
    if segment == session.segment.index:
        return
    from ..runtime.errors import Refused
    from ..session.config import file_hash

    recorded = (session.ledger.segments[segment].header or {}).get("inputs")
    for path, digest in (recorded.items() if isinstance(recorded, dict) else ()):
        try:
            now = file_hash((session.repo.top / path).read_bytes())
        except OSError:
            now = None
        if now != digest:
            raise Refused(f"run {number} was measured with {path} as it was when segment "
                          f"{segment} began, and it has "
                          f"{'changed' if now else 'gone'} since: it cannot be measured as "
                          "it was kept (put that version back to measure it)")


def bring(session: Session, paths: list[str], tree: Path) -> None:
    """Copy ``paths`` from the session's work tree into the checkout ``tree``, so that both
    sides run the same benchmark."""
    for path in paths:
        target = tree / path
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(session.repo.top / path, target)


def link_shared(session: Session, tree: Path, config: Config | None = None) -> list[str]:
    """Link each of the ``shared_paths`` of ``config`` (the session's when None: an earlier
    segment's keeps are measured with that segment's) into ``tree`` (a symbolic link to the
    work tree's); returns a note for each that is not: missing in the work tree, or present in
    the checkout (a tracked path: the incumbent's own is measured)."""
    notes = []
    top = session.repo.top
    for rule in (config or session.config).shared_paths:
        rel = (literal_path(rule) or rule).strip("/")  # (da[\\]ta names da\\ta)
        source, target = top / rel, tree / rel
        if not source.exists():
            notes.append(f"shared path {rel} is not in the work tree: not linked into the "
                         "incumbent's worktree")
            continue
        if os.path.lexists(target):
            notes.append(f"shared path {rel} is in the incumbent's checkout (tracked): its "
                         "own is used")
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(source, target, target_is_directory=source.is_dir())
        except OSError as exc:
            notes.append(f"shared path {rel} could not be linked into the incumbent's "
                         f"worktree: {exc.strerror or exc.__class__.__name__}")
    return notes
