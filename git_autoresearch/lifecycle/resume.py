"""Picking up a session: ``resume`` (integrity checks and repairs before a loop carries on):
restore lost session files from the state ref, set malformed ledger lines aside, check out the
session branch, finish an interrupted start, keep or revert."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import ledger as ledger_mod
from ..git import Repo, said
from ..history.refs import session_branch, session_of_branch
from ..history.state_ref import forget as forget_state_cache
from ..history.state_ref import lines_in_history
from ..ledger import repairs
from ..record.recovery import locked
from ..runtime.atomic import write_atomic
from ..runtime.errors import Refused, UsageError
from ..session.branches import (
    carry_over,
    merged_elsewhere,
    open_on_branch,
    other_worktree,
    pull_hint,
)
from ..session.branches import finished as finished_elsewhere
from ..session.config import Config, missing_scripts, parse_toml
from ..session.layout import Layout, exclude_auto
from ..session.lock import SessionLock
from ..session.session import Session
from .start import listing, uncommitted
from .start_intent import finish_start

if TYPE_CHECKING:
    from ..hooks.user import HookReport


def _find_session_id(repo: Repo, layout: Layout, given: str | None) -> str:
    from ..history.state_ref import sessions

    if given:
        return given
    if layout.config_exists() and layout.config.is_file():
        try:
            found = parse_toml(layout.read_config_bytes(), source=str(layout.config))
            if isinstance(found.get("session_id"), str) and found["session_id"]:
                return str(found["session_id"])
        except UsageError:
            pass
    branch = repo.current_branch()
    if session_of_branch(branch):
        return str(session_of_branch(branch))
    known = sessions(repo)
    if len(known) == 1:
        return known[0]
    if not known and layout.holds_runs():
        raise Refused(f"no session to resume: no .auto/config.toml; {layout.missing_hint([])}")
    if not known:
        remote = repo.likely_remote()
        raise Refused("no session to resume: no .auto/config.toml and no "
                      "refs/autoresearch/*/state ref"
                      + (f" (git autoresearch pull {remote} brings one from a remote)"
                         if remote else ""))
    raise Refused(f"several sessions could be resumed ({', '.join(sorted(known))}); "
                  "name one with --session-id")


def restore_files(repo: Repo, layout: Layout, session_id: str) -> list[str]:
    """Bring back session files that are missing (or a ledger that lost lines) from the state
    ref; returns what was restored (``restored .auto/<file>``, with why when it replaced one)."""
    from ..history.state_ref import read

    state = read(repo, session_id)
    if state is None:
        return []
    saved, file_modes = state
    layout.auto.mkdir(exist_ok=True)
    # A session folder that lost its configuration or its ledger gets every saved file back;
    # otherwise a missing hook or note was removed on purpose, and only the configuration (when
    # it no longer parses) and a ledger that lost lines are repaired.
    lost = not layout.config_exists() or not layout.ledger.exists()
    restored = []
    if not lost and "config.toml" in saved:
        restored += _repair_config(layout, saved["config.toml"])
    for name, data in saved.items():
        if name == "log.jsonl":
            restored += _repair_ledger(repo, layout.auto / name, data)
        elif lost:
            restored += _restore_missing(layout, name, data, 0o444 if name == "config.toml"
                                         else file_modes.get(name, 0o644))
    return restored


def joined_runs(repo: Repo, layout: Layout, session_id: str) -> list[str]:
    """In a work tree that did not join session ``session_id`` through a remote: add to its
    ledger file the runs of the ledger refs of the clones that did (fetched here by ``pull``
    or by hand) that it lacks, in time order, as every reading command reads them
    (:func:`history.remote_ledger.merged`). The state ref holds the ledger the session had
    when it was first sent; the branch holds the joined clones' keeps; a loop here goes on
    from both. Returns what was done."""
    from ..history.remote_ledger import ledgers_by_worker, merged
    from ..session.shared import joined

    if joined(repo, session_id):
        return []  # (its ledger file holds its own runs; the others' are read from their refs)
    others = [data for _, data in ledgers_by_worker(repo, session_id)]
    if not others or not layout.ledger.is_file():
        return []
    data = layout.ledger.read_bytes()
    book = ledger_mod.parse(data)
    out = merged(data, others, book)
    if out is data:
        return []
    known = {run.number for run in book.runs}
    added = sorted(run.number for run in ledger_mod.parse(out).runs if run.number not in known)
    write_atomic(layout.ledger, out)
    return [f"added run{'s' if len(added) > 1 else ''} {', '.join(map(str, added))} to "
            ".auto/log.jsonl (recorded by the clones that joined the session)"]


def _repair_config(layout: Layout, saved: bytes) -> list[str]:
    """Replace a ``config.toml`` that does not parse or is not valid by the ``saved`` one; the
    old file is kept beside it. Returns what was done."""
    try:
        values = parse_toml(layout.config.read_bytes(), source="config.toml")
    except (UsageError, OSError):
        why = "it did not parse"
    else:
        try:
            Config.from_mapping(values, source="config.toml")
            return []
        except UsageError:
            why = "it was not valid"
    broken = layout.config.with_name(f"config.toml.broken.{time.time_ns()}")
    os.replace(layout.config, broken)
    write_atomic(layout.config, saved, 0o444)
    return [f"restored .auto/config.toml ({why}; it is now .auto/{broken.name})"]


def _repair_ledger(repo: Repo, path: Path, saved: bytes) -> list[str]:
    """Put back the ledger at ``path`` from the ``saved`` copy when it is missing or lost
    lines, or put back the header lines it lost; the old file is kept beside it. Returns what
    was done."""
    kept = path.with_name(f"log.jsonl.before-resume.{time.time_ns()}")
    try:
        current = path.read_bytes()
    except FileNotFoundError:
        write_atomic(path, saved)
        return ["restored .auto/log.jsonl"]
    except IsADirectoryError:
        os.replace(path, kept)
        write_atomic(path, saved)
        return [f"restored .auto/log.jsonl (a folder was in its place; it is now "
                f".auto/{kept.name})"]
    except OSError as exc:
        raise Refused(ledger_mod.unreadable_ledger(path, exc)) from None
    if repairs.lost_lines(current, saved):
        os.replace(path, kept)
        write_atomic(path, saved)
        return [f"restored .auto/log.jsonl (it had lost lines; the old file is "
                f".auto/{kept.name})"]
    headed = repairs.with_lost_header(current, saved)
    if headed is None:
        return []
    write_atomic(kept, current)
    write_atomic(path, headed)
    forget_state_cache(repo, path)
    return ["restored the configuration header of .auto/log.jsonl from the state ref (the old "
            f"file is .auto/{kept.name})"]


def _restore_missing(layout: Layout, name: str, saved: bytes, mode: int) -> list[str]:
    """Write the ``saved`` session file ``.auto/<name>`` with ``mode``
    (:data:`history.state_ref.LINK`: a symbolic link to ``saved``) unless it exists. Returns what
    was done."""
    from ..history.state_ref import write_file

    path = layout.auto / name
    if path.exists() or path.is_symlink():
        return []
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file(path, saved, mode)  # a hook that was a symbolic link comes back as one
    return [f"restored .auto/{name}"]


def _checked_out_elsewhere(repo: Repo, session_id: str) -> str | None:
    """Why this worktree cannot take the session branch of ``session_id``: it is checked out
    in another worktree (git allows one at a time), or None."""
    wanted = session_branch(session_id)
    if repo.current_branch() == wanted:
        return None
    elsewhere = other_worktree(repo, wanted, "carry on there (cd {path} && git autoresearch "
                               "resume)")
    return f"the session branch {wanted} is {elsewhere}" if elsewhere else None


@dataclass(frozen=True)
class Picked:
    """A session picked up by :func:`resume`: the open ``session``, what was done
    (``actions``), the report of the after hooks fired for a run recovery finished
    (``finished``; None: none), and warnings beyond those of opening the session."""

    session: Session
    actions: list[str]
    finished: HookReport | None
    warnings: list[str]


def resume(session_id: str | None = None, cwd: str | os.PathLike[str] | None = None
           ) -> Picked:
    """Integrity checks and repairs before a loop carries on: restore missing session files
    from the state ref, set malformed ledger lines aside, check the configuration against the
    ledger (refusing with the changed keys), check out the session branch, finish or roll back
    an interrupted keep or revert, and check that the configured scripts exist. Returns the
    :class:`Picked`. Raises :class:`Refused` (exit 3) when the session
    cannot be picked up here, saying what to do."""
    repo = Repo.discover(cwd)
    layout = Layout(repo)
    with SessionLock(repo.scratch, "resume"):
        finished = finish_start(repo, layout)
    sid = _find_session_id(repo, layout, session_id)
    elsewhere = _checked_out_elsewhere(repo, sid)
    if elsewhere is not None:
        raise Refused(elsewhere + "; nothing was changed here")
    actions = [finished] if finished else []
    actions += _repair_session_files(repo, layout, sid)
    session = Session.open(cwd)
    wanted = session.branch  # (a worker's home is its own branch)
    if repo.current_branch() != wanted:
        done = finished_elsewhere(session) if session.worker is None else None
        if done is not None:
            raise Refused(f"{done}: the session is over, nothing was changed (to go on with "
                          f"it, git switch {wanted}; to start another here, move .auto/ aside "
                          "and run git autoresearch start --force)")
        _switch_to_session_branch(repo, session, wanted)
        actions.append(f"checked out {wanted}")
        session = open_on_branch(cwd)
    with locked(session, "resume") as recovered:
        if recovered.note:
            actions.append(recovered.note)
    warnings = list(recovered.warnings)
    missing = missing_scripts(session.config, repo.top)
    if missing:
        raise Refused(f"the configuration names {', '.join(missing)}, which does not exist")
    baseline = session.baseline_problem() or session.baseline_doubt()
    if baseline:
        warnings.append(baseline)
    joined = session.joined_elsewhere()
    if joined is not None:
        warnings.append(f"{joined[0]}: to run it here, join it ({joined[1]})")
    from ..history.state_ref import behind

    # Notes, hooks or the configuration changed since the last mirror are mirrored now; a
    # ledger the state ref does not hold as it is is left to doctor, which says why.
    stale = behind(repo, session.layout.auto, session.config.session_id) or []
    if actions or (stale and "log.jsonl" not in stale):
        warnings += session.mirror_state("resume: " + ("; ".join(actions)[:200]
                                                       or "the session files as they are"))
    return Picked(session, actions, recovered.hooks, warnings)


def _repair_session_files(repo: Repo, layout: Layout, sid: str) -> list[str]:
    """Under the session lock: restore lost files from the state ref, exclude ``.auto/``, and
    set malformed ledger lines aside. Returns what was done; :class:`Refused` when there is
    no configuration to be had."""
    with SessionLock(repo.scratch, "resume"):
        actions = restore_files(repo, layout, sid)
        actions += joined_runs(repo, layout, sid)
        if not layout.config_exists():
            raise Refused(f"session {sid} has no .auto/config.toml and no state ref to restore "
                          "it from")
        exclude_auto(repo)
        book = ledger_mod.read(layout.ledger)
        notes = repairs.set_aside(layout.ledger, book.malformed)
        if notes:
            # A run's line damaged by hand comes back as it was recorded, when the state
            # ref's history holds it.
            named = [bad.run for bad in book.malformed
                     if bad.run is not None and book.find(bad.run) is None]
            back = lines_in_history(repo, sid, named) if named else {}
            if back:
                repairs.insert_runs(layout.ledger, back)
                notes.append(f"the line{'s' if len(back) > 1 else ''} of run"
                             f"{'s' if len(back) > 1 else ''} "
                             f"{', '.join(map(str, sorted(back)))} restored from the state ref")
            # The ledger is shorter on purpose: the state ref must take it as it is now.
            forget_state_cache(repo, layout.ledger)
        return actions + notes


def _switch_to_session_branch(repo: Repo, session: Session, wanted: str) -> None:
    """Check out the session branch ``wanted``; :class:`Refused` saying what to do when
    uncommitted changes are in the way or git cannot (the branch is gone or never fetched)."""
    tracked, _ = uncommitted(repo, session.bounds)
    if tracked:
        raise Refused(f"cannot check out {wanted}: uncommitted changes in "
                      f"{listing(tracked)}; {carry_over(repo, wanted)}, then run git "
                      "autoresearch resume again")
    # git switch also creates the branch from a single remote-tracking one (a fresh clone).
    switched = repo.switch(wanted)
    if switched.returncode == 0:
        return
    if repo.resolve(f"refs/heads/{wanted}") is not None:
        lines = said(switched.stderr)
        raise Refused(f"git could not check out the session branch {wanted}: "
                      + (lines[-1].strip() if lines else f"exit {switched.returncode}"))
    over = ("; or, merged and deleted, the session is over: to start another here, "
            "move .auto/ aside and run git autoresearch start --force"
            if merged_elsewhere(session) else "")
    raise Refused(f"the session branch {wanted} does not exist here "
                  f"({pull_hint(repo, session.config.session_id)}{over})")

