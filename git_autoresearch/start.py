"""Beginning a session: ``start`` (a session, or a new segment of one), made so that a start
killed anywhere can be finished (its start record, :func:`finish_start`)."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import ledger as ledger_mod
from . import signals
from .branches import other_worktree
from .config import Config, file_hash, parse_toml, write_config
from .errors import Refused, UsageError
from .experiment import load_snapshot, save_snapshot, take_snapshot
from .faults import checkpoint
from .files import WriteFailed, check_writable, write_atomic
from .git import Repo, said, split_z
from .layout import Layout, exclude_auto
from .ledger import VERSION, now_ms
from .lock import SessionLock
from .measure import Measurement, Progress
from .paths import Boundaries
from .refs import session_branch, state_ref
from .scripts import command_files, uncommitted_command_files
from .session import (
    Session,
)

PROMPT_TEMPLATE = """# Autoresearch session: {goal}

Metric: {metric_name} ({direction} is better{unit})
Command: `{command}`
Scope: {scope}
Readonly: {readonly}

## Rules
- Change only files in scope; never the readonly files (the measure, checks or scoring
  scripts, the data): a change there is undone before measuring and recorded.
- One idea per run; describe it in one sentence with `-d`.

## Learnings

## Dead ends (do not retry)

## Promising directions
"""


def default_session_id(goal: str, today: str | None = None) -> str:
    """The goal in kebab case (at most 40 characters) plus the date: ``sort-speed-2026-11-29``."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", goal).strip("-").lower()[:40].strip("-") or "session"
    return f"{slug}-{today or time.strftime('%Y-%m-%d')}"


@dataclass
class StartOptions:
    """What ``start`` was given: configuration values (None: not given) and switches."""

    values: dict[str, Any] = field(default_factory=dict)
    config_file: Path | None = None
    new_segment: bool = False
    no_baseline: bool = False
    force: bool = False
    allow_missing: bool = False
    # The path rules of ``values`` as the user wrote them and as read from the top, by key.
    shown_paths: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    # The current folder relative to the top (``src/``; empty at the top).
    prefix: str = ""


# The configuration keys that hold path rules. On the command line they are read from the
# current directory, as git reads pathspecs; in a --config file, from the top of the work tree.
PATH_KEYS = ("scope", "protected", "readonly")


def _merge_values(opts: StartOptions, base: Mapping[str, Any]
                  ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The configuration values: ``base``, then the ``--config`` file, then the options. Also
    the path rules given this time, as (how the user wrote it, the rule)."""
    merged = dict(base)
    given: list[tuple[str, str]] = []
    if opts.config_file is not None:
        try:
            data = opts.config_file.read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read --config {opts.config_file}: {exc.strerror}") from None
        values = parse_toml(data, source=str(opts.config_file))
        merged.update(values)
        for key in PATH_KEYS:
            rules = values.get(key)
            if isinstance(rules, list):
                given += [(f"{key} entry {r!r} of {opts.config_file} (read from the top of "
                           "the work tree)", r) for r in rules if isinstance(r, str)]
    merged.update({k: v for k, v in opts.values.items() if v is not None})
    for key in PATH_KEYS:
        option = "--" + key.replace("_", "-")
        given += [(f"{option} {shown}" + (f" (read from the current directory as {rule})"
                                          if rule != shown else ""), rule)
                  for shown, rule in opts.shown_paths.get(key, [])]
    return merged, given


def _paths_from_directory(opts: StartOptions, where: Path, top: Path) -> None:
    """Make the path rules of the options relative to the top, read from ``where`` (the
    current directory) as git reads pathspecs; :class:`UsageError` for one outside."""
    from .git import run_git
    from .paths import from_directory

    prefix = opts.prefix = run_git(["rev-parse", "--show-prefix"], cwd=where).text
    for key in PATH_KEYS:
        entries = opts.values.get(key)
        if not entries:
            continue
        option = "--" + key.replace("_", "-")
        rules = [from_directory(e, prefix, top, what=option) for e in entries]
        opts.shown_paths[key] = list(zip(entries, rules, strict=True))
        opts.values[key] = rules


def _check_matches(repo: Repo, given: list[tuple[str, str]]) -> None:
    """Refuse (:class:`UsageError`) a path rule given this time that matches no tracked,
    untracked or ignored path: a typo would make a scope that matches nothing, and every
    edit would be reverted as out of scope."""
    if not given:
        return
    from .paths import unmatched

    names: list[str] = []
    if any(c in rule for _, rule in given for c in "*?["):
        names = [e.path for e in repo.status()] + split_z(repo.run("ls-files", "-z").stdout)
    missing = set(unmatched([rule for _, rule in given], repo.top, names))
    for shown, rule in given:
        if rule in missing:
            raise UsageError(f"{shown} matches no file in the work tree; fix it, or pass "
                             "--allow-missing to keep it")


def _dirty(repo: Repo, bounds: Boundaries) -> tuple[list[str], list[str]]:
    tracked: list[str] = []
    untracked: list[str] = []
    for entry in repo.status():
        if entry.ignored or bounds.is_protected(entry.path):
            continue
        (untracked if entry.untracked else tracked).append(entry.path)
    return tracked, untracked


def _listing(paths: list[str], limit: int = 5) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def start(opts: StartOptions, cwd: str | os.PathLike[str] | None = None,
          progress: Progress | None = None) -> tuple[Session, dict[str, Any] | None,
                                                     Measurement | None]:
    """Create a session (or, with ``new_segment``, a new segment of the existing one), and run
    the baseline unless ``no_baseline``. Returns the session, the baseline record and its
    measurement. Raises :class:`Refused` (exit 3) for a dirty tree, an existing session, an
    existing branch, or a baseline that crashed or failed its checks (the session is kept)."""
    repo = Repo.discover(cwd)
    layout = Layout(repo)
    _paths_from_directory(opts, Path(cwd) if cwd is not None else Path.cwd(), repo.top)
    op = repo.operation_in_progress()
    if op:
        raise Refused(f"a {op} is in progress; finish or abort it first")
    head = repo.head()
    if head is None:
        raise Refused("HEAD has no commit yet; commit the project first")
    interrupted = read_start_intent(layout)
    if opts.new_segment:
        finished = finish_start(repo, layout, baseline_hint=False) if interrupted else None
        if not layout.config.exists():
            raise Refused("no session to start a new segment of (no .auto/config.toml): "
                          + layout.missing_hint())
        try:
            old_data = parse_toml(layout.read_config_bytes(), source=str(layout.config))
        except UsageError as exc:
            raise Refused(f"{exc.message}; git autoresearch resume restores the file from the "
                          "state ref") from None

        if ledger_mod.read(layout.ledger).config_header is None and repo.resolve(
                state_ref(str(old_data.get("session_id", "")))):
            raise Refused("the ledger is missing or lost its header while the state ref holds "
                          "the session: run git autoresearch resume first")
        given_id = opts.values.get("session_id")
        if given_id and given_id != old_data.get("session_id"):
            raise UsageError(f"--session-id cannot change with --new-segment (the session is "
                             f"{old_data.get('session_id')})")
        merged, given = _merge_values(opts, old_data)
        merged["session_id"] = old_data.get("session_id", "")
        cfg = Config.from_mapping(merged, source="configuration")
        branch = repo.current_branch()
        if branch != session_branch(cfg.session_id):
            wanted = session_branch(cfg.session_id)
            elsewhere = other_worktree(repo, wanted, "start the new segment there")
            raise Refused(f"check out the session branch {wanted} before starting a new "
                          "segment" + (f" (it is {elsewhere})" if elsewhere else
                                       f" (git switch {wanted})"))
    else:
        if interrupted:
            raise Refused(f"the start of session {interrupted['config'].get('session_id')} was "
                          "interrupted: git autoresearch resume finishes it (git autoresearch "
                          "start --new-segment finishes it and measures the baseline)")
        if layout.config.exists():
            old = parse_toml(layout.read_config_bytes(), source=str(layout.config))
            raise Refused(f"a session already exists here ({old.get('session_id', '?')}); "
                          "continue it, run git autoresearch start --new-segment, or move "
                          ".auto/ aside to start another")
        merged, given = _merge_values(opts, {})
        if not merged.get("command") and (layout.auto / "measure.sh").is_file():
            merged["command"] = "bash .auto/measure.sh"
        if not merged.get("checks_command") and (layout.auto / "checks.sh").is_file():
            merged["checks_command"] = "bash .auto/checks.sh"
        cfg = Config.from_mapping(merged, source="configuration")
        cfg.session_id = cfg.session_id or default_session_id(cfg.goal)
        cfg.created_at = cfg.created_at or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        cfg.validate("configuration")
        branch = session_branch(cfg.session_id)
        if not repo.ref_format_ok(f"refs/heads/{branch}"):
            raise UsageError(f"session id '{cfg.session_id}' does not make a valid branch name")
        if repo.resolve(f"refs/heads/{branch}"):
            raise Refused(f"branch {branch} already exists (from an earlier session); pick "
                          "another --session-id")
    if not opts.allow_missing:
        _check_matches(repo, given)
    scripts = command_files(repo, cfg, head)
    bounds = Boundaries(cfg.scope, cfg.protected, cfg.readonly, scripts)
    unsaved = uncommitted_command_files(repo, cfg, scripts)
    tracked, untracked = _dirty(repo, bounds)
    if opts.new_segment:
        known = load_snapshot(layout.untracked)
        untracked = [p for p in untracked if known is None or not known.covers(p)]
    if tracked:
        also = (f" (and untracked files: {_listing(untracked)}, which --force would accept)"
                if untracked and not opts.force else "")
        raise Refused(f"the work tree has uncommitted changes: {_listing(tracked)}{also}; "
                      "commit or remove them first")
    if untracked and not opts.force:
        raise Refused(f"the work tree has untracked files: {_listing(untracked)}; commit or "
                      "remove them, or pass --force (they are then never touched)")
    problem = repo.identity_problem()
    if problem:
        raise Refused(problem)
    try:
        # The session folder itself is made only once the start is under way.
        check_writable(layout.auto if layout.auto.exists() else repo.top, layout.ledger)
        check_writable(repo.scratch)
    except WriteFailed as exc:
        raise Refused(f"{exc.message}; nothing was changed") from None
    # Under the lock: a new segment's header must not land in the middle of a run's recording.
    # A signal waits until the session (or segment) is made whole (a SIGKILL is covered by the
    # start record).
    with SessionLock(repo.scratch, "start"), signals.deferred():
        if opts.new_segment:
            session = _new_segment_files(repo, layout, cfg, head, opts, untracked)
            if finished:
                session.warnings.append(finished)
        else:
            intent = {"session_id": cfg.session_id, "head": head, "config": cfg.to_dict(),
                      "no_baseline": opts.no_baseline,
                      "untracked": sorted(untracked) if opts.force else []}
            _write_start_intent(layout, intent)
            checkpoint("start:after-intent")
            try:
                session = _create_session(repo, layout, intent)
            except Exception:
                if repo.resolve(f"refs/heads/{session_branch(cfg.session_id)}") is None:
                    layout.start_intent.unlink(missing_ok=True)  # nothing was made
                raise
            checkpoint("start:before-baseline")
    if unsaved:
        session.warnings.append(
            f"the configured commands run {', '.join(unsaved)}, which is not committed: an "
            "experiment could change it unseen (only committed files are readonly): commit it")
    if opts.no_baseline:
        return session, None, None
    from . import pending
    from .recording import record as record_run
    from .recovery import locked

    with locked(session, "start") as recovered:
        result = pending.measure(session, progress, pending=False, baseline=True)
        status = result.status or "keep"
        save_snapshot(layout.untracked, take_snapshot(repo))
        recorded = record_run(session, status, "baseline", result=result, baseline=True)
    session.warnings += recovered.warnings + recorded.warnings
    record = recorded.record
    if status != "keep":
        tail = result.checks["tail"] if status == "checks_failed" and result.checks \
            else result.log_tail
        raise Refused(f"the baseline failed ({record.get('reason') or status}); the session is "
                      "kept: fix the command, then run git autoresearch start --new-segment",
                      detail=tail)
    return session, record, result


def _header(cfg: Config, data: bytes, head: str, no_baseline: bool) -> dict[str, Any]:
    """The ledger line that opens a segment (DESIGN.md section 6)."""
    return {
        "type": "config",
        "name": cfg.goal,
        "metricName": cfg.metric_name,
        "metricUnit": cfg.metric_unit,
        "bestDirection": cfg.direction,
        "config_hash": file_hash(data),
        "session_id": cfg.session_id,
        "version": VERSION,
        "config": cfg.to_dict(),
        "base_commit": head,
        "no_baseline": no_baseline,
        "timestamp": now_ms(),
    }


def _write_prompt(repo: Repo, layout: Layout, cfg: Config, head: str) -> None:
    if not layout.prompt.exists():
        scripts = command_files(repo, cfg, head)
        write_atomic(layout.prompt, PROMPT_TEMPLATE.format(
            goal=cfg.goal, metric_name=cfg.metric_name, direction=cfg.direction,
            unit=f", in {cfg.metric_unit}" if cfg.metric_unit else "", command=cfg.command,
            scope=", ".join(cfg.scope) or "any path that is neither protected nor readonly",
            readonly=", ".join(dict.fromkeys([*scripts, *cfg.readonly])) or "none").encode())


def _new_segment_files(repo: Repo, layout: Layout, cfg: Config, head: str, opts: StartOptions,
                       untracked: list[str]) -> Session:
    """Write a new segment's configuration and ledger header; returns the session."""
    data = write_config(layout.config, cfg)
    ledger_mod.append(layout.ledger, [_header(cfg, data, head, opts.no_baseline)])
    _write_prompt(repo, layout, cfg, head)
    layout.pending.unlink(missing_ok=True)
    session = Session(repo, cfg, data, ledger_mod.read(layout.ledger))
    if opts.force:
        known = load_snapshot(layout.untracked) or take_snapshot(repo, [])
        known.untracked.update(untracked)
        save_snapshot(layout.untracked, known)
    session.warnings += session.mirror_state("new segment")
    return session


def _write_start_intent(layout: Layout, intent: dict[str, Any]) -> None:
    """Record what ``start`` is about to create, before it changes anything, so that a start
    that is killed can be finished (:func:`finish_start`)."""
    layout.start_intent.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(layout.start_intent, json.dumps(intent, allow_nan=False).encode())


def read_start_intent(layout: Layout) -> dict[str, Any] | None:
    """The record of a ``start`` that did not finish, or None (an unreadable one is None too:
    it was torn before anything changed, since it is written before the branch)."""
    try:
        data = json.loads(layout.start_intent.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        return None
    return data


def _create_session(repo: Repo, layout: Layout, intent: dict[str, Any]) -> Session:
    """Create the session that ``intent`` (:func:`_write_start_intent`) describes: the branch
    checked out, ``.auto/`` excluded, the configuration, the ledger header, the notes, the
    snapshot of untracked files and the state ref; then clear the intent. Each step is skipped
    when already done, so a start killed anywhere is finished by running this again. Raises
    :class:`Refused` when HEAD moved since (nothing is changed then)."""
    cfg = Config.from_mapping(intent["config"], source="the interrupted start")
    head = str(intent["head"])
    branch = session_branch(cfg.session_id)
    if repo.current_branch() != branch:
        at = repo.resolve(f"refs/heads/{branch}")
        if repo.head() != head or at not in (None, head):
            raise Refused(f"HEAD moved since the start of session {cfg.session_id} was "
                          f"interrupted; check out {branch} (or the commit {head[:7]}) and run "
                          "git autoresearch resume again")
        switched = repo.run("switch", "-q", *(["-c"] if at is None else []), branch,
                            allow_non_zero=True)
        if switched.returncode != 0:
            lines = said(switched.stderr)
            raise Refused(f"git could not {'create' if at is None else 'check out'} the branch "
                          f"{branch}: " + (lines[-1].strip() if lines else
                                           f"exit {switched.returncode}"))
    checkpoint("start:after-branch")
    exclude_auto(repo)
    layout.auto.mkdir(exist_ok=True)
    data = layout.config.read_bytes() if layout.config.exists() else \
        write_config(layout.config, cfg)
    checkpoint("start:after-config")
    if ledger_mod.read(layout.ledger).config_header is None:
        ledger_mod.append(layout.ledger, [_header(cfg, data, head, bool(intent["no_baseline"]))])
    checkpoint("start:after-ledger")
    _write_prompt(repo, layout, cfg, head)
    layout.pending.unlink(missing_ok=True)
    save_snapshot(layout.untracked, take_snapshot(repo, list(intent.get("untracked") or [])))
    session = Session(repo, cfg, data, ledger_mod.read(layout.ledger))
    session.warnings += session.mirror_state("session started")
    layout.start_intent.unlink()
    return session


def finish_start(repo: Repo, layout: Layout, *, baseline_hint: bool = True) -> str | None:
    """Finish a ``start`` that was killed before it had created the session; returns what was
    done (with ``baseline_hint``, how to measure a baseline it did not), or None when there was
    nothing to finish. An intent that a finished session
    contradicts (``config.toml`` of another session) is set aside. Raises :class:`Refused`
    (:func:`_create_session`)."""
    intent = read_start_intent(layout)
    if intent is None:
        layout.start_intent.unlink(missing_ok=True)
        return None
    sid = intent["config"].get("session_id")
    if layout.config.exists():
        try:
            current = parse_toml(layout.read_config_bytes(), source=str(layout.config))
        except UsageError:
            current = {}
        if current.get("session_id") != sid:
            os.replace(layout.start_intent,
                       layout.start_intent.with_name(f"start.abandoned.{time.time_ns()}.json"))
            return f"set aside the record of an interrupted start of session {sid}"
    _create_session(repo, layout, intent)
    how = "" if intent.get("no_baseline") or not baseline_hint else (
        "; its baseline was not measured: git autoresearch start --new-segment measures it")
    return f"finished the interrupted start of session {sid}{how}"
