"""Picking up a session: ``resume`` (integrity checks and repairs before a loop carries on):
restore lost session files from the state ref, set malformed ledger lines aside, check out the
session branch, finish an interrupted start, keep or revert."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from . import ledger as ledger_mod
from .branches import carry_over, merged_elsewhere, other_worktree
from .config import Config, parse_toml
from .errors import Refused, UsageError
from .files import append_whole, write_atomic
from .git import Repo, said
from .layout import Layout, exclude_auto
from .ledger import Ledger
from .lock import SessionLock
from .refs import session_branch, session_of_branch
from .session import (
    Session,
)
from .start import _dirty, _listing, finish_start
from .state import forget as forget_state_cache

if TYPE_CHECKING:
    from .hooks import HookReport


def _find_session_id(repo: Repo, layout: Layout, given: str | None) -> str:
    from .state import sessions

    if given:
        return given
    if layout.config.is_file():
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
    if not known:
        raise Refused("no session to resume: no .auto/config.toml and no "
                      "refs/autoresearch/*/state ref")
    raise Refused(f"several sessions could be resumed ({', '.join(sorted(known))}); "
                  "name one with --session-id")


def _lost_lines(current: bytes, saved: bytes) -> bool:
    """Whether the ledger on disk is a strict prefix of the saved one (lines were lost), its
    last line possibly torn."""
    whole = current[:current.rfind(b"\n") + 1]
    return len(current) < len(saved) and saved.startswith(whole)


def _restore_files(repo: Repo, layout: Layout, session_id: str) -> list[str]:
    """Bring back session files that are missing (or a ledger that lost lines) from the state
    ref; returns what was restored (``restored .auto/<file>``, with why when it replaced one)."""
    from .state import read

    state = read(repo, session_id)
    if state is None:
        return []
    saved, file_modes = state
    restored = []
    layout.auto.mkdir(exist_ok=True)
    # A session folder that lost its configuration or its ledger gets every saved file back;
    # otherwise a missing hook or note was removed on purpose, and only the configuration (when
    # it no longer parses) and a ledger that lost lines are repaired.
    lost = not layout.config.exists() or not layout.ledger.exists()
    if not lost and "config.toml" in saved:
        why = None
        try:
            values = parse_toml(layout.config.read_bytes(), source="config.toml")
        except (UsageError, OSError):
            why = "it did not parse"
        else:
            try:
                Config.from_mapping(values, source="config.toml")
            except UsageError:
                why = "it was not valid"
        if why:
            broken = layout.config.with_name(f"config.toml.broken.{time.time_ns()}")
            os.replace(layout.config, broken)
            restored.append(f"restored .auto/config.toml ({why}; it is now "
                            f".auto/{broken.name})")
            write_atomic(layout.config, saved["config.toml"], 0o444)
    for name, data in saved.items():
        path = layout.auto / name
        if not lost and name != "log.jsonl":
            continue
        if name == "log.jsonl":
            try:
                current = path.read_bytes()
            except FileNotFoundError:
                current = None
            if current is not None and not _lost_lines(current, data):
                headed = with_lost_header(current, data)
                if headed is None:
                    continue
                kept = path.with_name(f"log.jsonl.before-resume.{time.time_ns()}")
                write_atomic(kept, current)
                write_atomic(path, headed)
                forget_state_cache(repo)
                restored.append("restored the configuration header of .auto/log.jsonl from "
                                f"the state ref (the old file is .auto/{kept.name})")
                continue
            if current is not None:
                kept = path.with_name(f"log.jsonl.before-resume.{time.time_ns()}")
                os.replace(path, kept)
                restored.append(f"restored .auto/log.jsonl (it had lost lines; the old file is "
                                f".auto/{kept.name})")
            else:
                restored.append("restored .auto/log.jsonl")
            write_atomic(path, data)
            continue
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data, 0o444 if name == "config.toml" else file_modes.get(name, 0o644))
        restored.append(f"restored .auto/{name}")
    return restored


def with_lost_header(current: bytes, saved: bytes) -> bytes | None:
    """The ledger ``current`` with the configuration header lines it lost put back from the
    state ref's copy ``saved``, or None when it lost none (it has a header of ours, or the
    saved ledger has none to give). The lines ``saved`` holds before the first line of
    ``current`` are put back when there are any (the header and whatever else went with it),
    else the saved ledger's first header."""
    if _has_our_header(current):
        return None
    saved_lines = [line for line in saved.split(b"\n") if line.strip()]
    headers = [line for line in saved_lines if _our_header(line)]
    if not headers:
        return None
    first = next((line for line in current.split(b"\n") if line.strip()), None)
    if first is not None and first in saved_lines and saved_lines.index(first) > 0:
        before = saved_lines[:saved_lines.index(first)]
        if any(_our_header(line) for line in before):
            return b"".join(line + b"\n" for line in before) + current
    return headers[0] + b"\n" + current


def _our_header(line: bytes) -> bool:
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and obj.get("type") == "config" and "config_hash" in obj


def _has_our_header(ledger: bytes) -> bool:
    return any(_our_header(line) for line in ledger.split(b"\n")
               if b'"config"' in line)


def _set_aside_malformed(layout: Layout, book: Ledger) -> list[str]:
    """Move malformed ledger lines to ``.auto/log.rejected.jsonl`` (with their line numbers and
    reasons) and rewrite the ledger without them; every readable line stays, in order."""
    if not book.malformed:
        return []
    bad = {m.line: m for m in book.malformed}
    lines = layout.ledger.read_bytes().split(b"\n")
    keep, rejected, notes = [], [], []
    for number, raw in enumerate(lines, start=1):
        if number in bad:
            rejected.append(json.dumps({"line": number, "reason": bad[number].reason,
                                        "text": raw.decode("utf-8", "replace")},
                                       ensure_ascii=False) + "\n")
            notes.append(f"ledger line {number} set aside ({bad[number].reason}) in "
                         ".auto/log.rejected.jsonl")
        elif raw.strip():
            keep.append(raw + b"\n")
    append_whole(layout.auto / "log.rejected.jsonl", "".join(rejected).encode("utf-8"))
    write_atomic(layout.ledger, b"".join(keep))
    # The ledger is shorter on purpose: the state ref must take it as it is now.
    forget_state_cache(layout.repo)
    return notes


def missing_scripts(repo: Repo, cfg: Config) -> list[str]:
    """Script-like words of the configured commands (``x.sh``, ``x.py``, ``./x``, ``dir/x``)
    that name no file."""
    import shlex

    missing = []
    for command in (cfg.command, cfg.checks_command, cfg.metric_command):
        if not command:
            continue
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        for word in words:
            looks_like_script = word.endswith((".sh", ".py")) or word.startswith("./")
            if looks_like_script and not word.startswith("-") and "=" not in word:
                path = Path(word) if os.path.isabs(word) else repo.top / word
                if not path.exists():
                    missing.append(word)
    return missing


def _checked_out_elsewhere(repo: Repo, session_id: str) -> str | None:
    """Why this worktree cannot take the session branch of ``session_id``: it is checked out
    in another worktree (git allows one at a time), or None."""
    wanted = session_branch(session_id)
    if repo.current_branch() == wanted:
        return None
    elsewhere = other_worktree(repo, wanted, "carry on there (cd {path} && git autoresearch "
                               "resume)")
    return f"the session branch {wanted} is {elsewhere}" if elsewhere else None


def resume(session_id: str | None = None, cwd: str | os.PathLike[str] | None = None
           ) -> tuple[Session, list[str], HookReport | None]:
    """Integrity checks and repairs before a loop carries on: restore missing session files
    from the state ref, set malformed ledger lines aside, check the configuration against the
    ledger (refusing with the changed keys), check out the session branch, finish or roll back
    an interrupted keep or revert, and check that the configured scripts exist. Returns the
    session, the list of what was done, and the report of the after hooks fired for a run
    recovery finished (None: none)."""
    repo = Repo.discover(cwd)
    layout = Layout(repo)
    with SessionLock(repo.scratch, "resume"):
        finished = finish_start(repo, layout)
    sid = _find_session_id(repo, layout, session_id)
    elsewhere = _checked_out_elsewhere(repo, sid)
    if elsewhere is not None:
        raise Refused(elsewhere + "; nothing was changed here")
    with SessionLock(repo.scratch, "resume"):
        actions = [finished] if finished else []
        actions += _restore_files(repo, layout, sid)
        if not layout.config.exists():
            raise Refused(f"session {sid} has no .auto/config.toml and no state ref to restore "
                          "it from")
        exclude_auto(repo)
        actions += _set_aside_malformed(layout, ledger_mod.read(layout.ledger))
    session = Session.open(cwd, on_branch=False)
    wanted = session_branch(session.config.session_id)
    if repo.current_branch() != wanted:
        tracked, _ = _dirty(repo, session.bounds)
        if tracked:
            raise Refused(f"cannot check out {wanted}: uncommitted changes in "
                          f"{_listing(tracked)}; {carry_over(repo, wanted)}, then run git "
                          "autoresearch resume again")
        # git switch also creates the branch from a single remote-tracking one (a fresh clone).
        switched = repo.run("switch", "-q", wanted, allow_non_zero=True)
        if switched.returncode != 0:
            if repo.resolve(f"refs/heads/{wanted}") is not None:
                lines = said(switched.stderr)
                raise Refused(f"git could not check out the session branch {wanted}: "
                              + (lines[-1].strip() if lines else f"exit {switched.returncode}"))
            over = ("; or, merged and deleted, the session is over: to start another here, "
                    "move .auto/ aside and run git autoresearch start --force"
                    if merged_elsewhere(session) else "")
            raise Refused(f"the session branch {wanted} does not exist here "
                          f"({repo.fetch_hint(wanted)}{over})")
        actions.append(f"checked out {wanted}")
        session = Session.open(cwd)
    from .recovery import locked

    with locked(session, "resume") as recovered:
        if recovered.note:
            actions.append(recovered.note)
    session.warnings += recovered.warnings
    missing = missing_scripts(repo, session.config)
    if missing:
        raise Refused(f"the configuration names {', '.join(missing)}, which does not exist")
    baseline = session.baseline_problem() or session.baseline_doubt()
    if baseline:
        session.warnings.append(baseline)
    if actions:
        session.warnings += session.mirror_state("resume: " + "; ".join(actions)[:200])
    return session, actions, recovered.hooks
