"""Beginning a session: ``start`` (a session, or a new segment of one) in its steps: the
configuration, the refusals before anything changes, the session files (made through the start
record of :mod:`lifecycle.start_intent`, so that a start killed anywhere can be finished), the
baseline."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import ledger as ledger_mod
from ..git import Repo, current_folder
from ..history.experiment import load_snapshot, save_snapshot, take_snapshot, unmerged_problem
from ..history.refs import namespace, session_branch, state_ref, worker_branch
from ..hooks.payload import fire_stage
from ..ledger.records import RunRecord
from ..measure import worktree
from ..measure.samples import Measurement, Progress
from ..record.recovery import locked
from ..record.transaction import record as record_run
from ..runtime import signals
from ..runtime.atomic import WriteFailed, check_writable
from ..runtime.errors import Refused, UsageError
from ..runtime.scope import Boundaries
from ..session.branches import branch_below, other_worktree, refuse_branch_below
from ..session.command_files import command_files, uncommitted_command_files
from ..session.config import Config, parse_toml, write_config
from ..session.layout import Layout
from ..session.lock import SessionLock
from ..session.session import Session
from ..session.shared import MAIN
from ..session.shared import current as current_worker
from .start_intent import (
    StartIntent,
    create_session,
    finish_start,
    goal_slug,
    read_start_intent,
    segment_header,
    write_prompt,
)

if TYPE_CHECKING:
    from ..git.process import Status
    from ..hooks.user import HookReport

# The end of the branch names finalize makes (refs.final_branch, refs.split_branch): a session
# id that ends so would pass for another session's final branch.
FINAL_ID = re.compile(r"-final(-\d+)?$")


def default_session_id(goal: str, today: str | None = None) -> str:
    """The goal's slug (:func:`goal_slug`) plus the date: ``sort-speed-2026-11-29``."""
    return f"{goal_slug(goal)}-{today or time.strftime('%Y-%m-%d')}"


def pi_goal_warning(cfg: Config) -> str | None:
    """A warning when the session id is the goal's slug (:func:`goal_slug`), which an agent
    finalizing with pi-autoresearch's finalize.sh gives it as its goal: its branches
    ``autoresearch/<goal>/...`` cannot be made beside the session branch
    ``autoresearch/<goal>``. None otherwise (a default id ends in the date)."""
    sid = cfg.session_id
    if sid != goal_slug(cfg.goal):
        return None
    branch = session_branch(sid)
    return (f"the session id {sid} is the slug of the goal, as pi-autoresearch names a "
            f"session: its finalize.sh, given it as its goal, cannot make its branches "
            f"{branch}/<NN>-<slug> beside this session's branch {branch} (git keeps a branch "
            f"as a file, not a folder); give finalize.sh another goal ({sid}-pr), or leave "
            "--session-id out: the default id ends in the date")


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
    # ``--commit-path``: more changed files a new segment commits (git-autoresearch-start(1));
    # rules read from the current directory, then relative to the top.
    commit_paths: list[str] = field(default_factory=list)
    # The configuration keys given this time, by option or in the --config file, as given.
    given_now: dict[str, Any] = field(default_factory=dict)
    # A new segment's path rules that the ones given now replace, by key
    # (git-autoresearch-start(1)): said, since a readonly path dropped unseen no longer defines
    # success.
    dropped_paths: dict[str, list[str]] = field(default_factory=dict)


# The configuration keys that hold path rules. On the command line they are read from the
# current directory, as git reads pathspecs; in a --config file, from the top of the work tree.
PATH_KEYS = ("scope", "protected", "readonly", "shared_paths")
# The exclusive ways of reading the primary metric.
READERS = ("metric_pattern", "metric_command", "metric_json")


def _merge_values(opts: StartOptions, base: Mapping[str, Any]
                  ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The configuration values: ``base``, then the ``--config`` file, then the options. Also
    the path rules given this time, as (how the user wrote it, the rule)."""
    merged = dict(base)
    given: list[tuple[str, str]] = []
    values: dict[str, Any] = {}
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
    opts.given_now = {**values, **{k: v for k, v in opts.values.items() if v is not None}}
    # One way of reading the metric: the one given now replaces the base's (a new segment).
    named = {k for k in READERS if opts.values.get(k) is not None
             or (opts.config_file is not None and values.get(k) is not None)}
    for key in READERS if named else ():
        if key not in named:
            merged.pop(key, None)
    for key in PATH_KEYS:
        option = "--" + key.replace("_", "-")
        given += [(f"{option} {shown}" + (f" (read from the current directory as {rule})"
                                          if rule != shown else ""), rule)
                  for shown, rule in opts.shown_paths.get(key, [])]
    return merged, given


def _paths_from_directory(opts: StartOptions, where: Path, top: Path) -> None:
    """Make the path rules of the options relative to the top, read from ``where`` (the
    current directory) as git reads pathspecs; :class:`UsageError` for one outside."""
    from ..git import show_prefix
    from ..runtime.scope import from_directory

    prefix = opts.prefix = show_prefix(where)
    for key in PATH_KEYS:
        entries = opts.values.get(key)
        if not entries:
            continue
        option = "--" + key.replace("_", "-")
        rules = [from_directory(e, prefix, top, what=option) for e in entries]
        opts.shown_paths[key] = list(zip(entries, rules, strict=True))
        opts.values[key] = rules
    opts.commit_paths = [from_directory(e, prefix, top, what="--commit-path")
                         for e in opts.commit_paths]


def _scope_closed(cfg: Config, bounds: Boundaries) -> str | None:
    """A warning when every path of the scope is readonly or protected (``--scope bench.sh``
    of a benchmark the command runs, ``--scope src --readonly src``): every change would be
    undone before measuring. Glob rules are not judged."""
    rules = [rule.rstrip("/") for rule in cfg.scope]
    if not rules or any(c in rule for rule in rules for c in "*?["):
        return None
    if not all(bounds.is_readonly(rule) or bounds.is_protected(rule) for rule in rules):
        return None
    return (f"every path of the scope ({', '.join(cfg.scope)}) is readonly or protected: each "
            "change an experiment makes there is undone before measuring, and every run "
            "measures the incumbent again; widen --scope or narrow --readonly")


def _check_matches(repo: Repo, given: list[tuple[str, str]]) -> None:
    """Refuse (:class:`UsageError`) a path rule given this time that matches no tracked,
    untracked or ignored path: a typo would make a scope that matches nothing, and every
    edit would be reverted as out of scope."""
    if not given:
        return
    from ..runtime.scope import unmatched

    names: list[str] = []
    if any(c in rule for _, rule in given for c in "*?["):
        names = [e.path for e in repo.status()] + repo.ls_files()
    missing = set(unmatched([rule for _, rule in given], repo.top, names))
    for shown, rule in given:
        if rule in missing:
            # (a backslash outside a bracket was read as /: a name holding one is a[\]b)
            hint = (" (a backslash is read as /: name a file whose name holds one with "
                    "a[\\]b.py)" if "\\" in shown and "\\" not in rule else "")
            raise UsageError(f"{shown} matches no file in the work tree{hint}; fix it, or "
                             "pass --allow-missing to keep it")


def uncommitted(repo: Repo, bounds: Boundaries, status: Status | None = None
                ) -> tuple[list[str], list[str]]:
    """The changed tracked paths and the untracked paths of the work tree (``status``: git's
    listing of it, asked here when None), leaving out ignored and protected ones, each in
    git's order."""
    tracked: list[str] = []
    untracked: list[str] = []
    for entry in repo.status() if status is None else status:
        if entry.ignored or bounds.is_protected(entry.path):
            continue
        (untracked if entry.untracked else tracked).append(entry.path)
    return tracked, untracked


def listing(paths: list[str], limit: int = 5) -> str:
    """The first ``limit`` paths joined with commas, and how many more there are:
    ``a, b, c, d, e and 2 more``."""
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


@dataclass(frozen=True)
class Swapped:
    """The segment commit a new segment made (git-autoresearch-start(1)): its
    ``commit`` (full object id) and the ``paths`` it committed."""

    commit: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class Started:
    """A started session (or segment): the ``session``, the baseline's ``record`` and
    ``result`` (None: not measured, ``--no-baseline``), warnings for the caller, and the
    ``before`` and ``after`` hooks fired around the baseline (None without one), and the
    segment commit of the files that define success (None: none was made)."""

    session: Session
    record: RunRecord | None
    result: Measurement | None
    warnings: list[str]
    before: HookReport | None = None
    after: HookReport | None = None
    swapped: Swapped | None = None


class BaselineFailed(Refused):
    """The baseline crashed or failed its checks (exit 3; the session is kept): the refusal,
    with the ``before`` and ``after`` hooks fired around it, whose steer the caller says."""

    def __init__(self, message: str, *, detail: str | None, before: HookReport,
                 after: HookReport) -> None:
        super().__init__(message, detail=detail)
        self.before = before
        self.after = after


def _refuse_joined_elsewhere(repo: Repo, session_id: str) -> None:
    """Refuse (exit 3) a new segment in a clone that did not join session ``session_id``
    while clones that joined it through a remote record its runs (their ledger refs are here,
    fetched by ``pull``): the segment's header would reach none of them."""
    from ..session.shared import joined_workers, run_by_joined

    workers = joined_workers(repo, session_id)
    if workers:
        raise Refused(f"{run_by_joined(session_id, workers)}: a new segment here would reach "
                      "none of them; start a new session (git autoresearch start --session-id "
                      "NEW) and have them join it; nothing was changed")


def start(opts: StartOptions, cwd: str | os.PathLike[str] | None = None,
          progress: Progress | None = None) -> Started:
    """Create a session (or, with ``new_segment``, a new segment of the existing one), and run
    the baseline unless ``no_baseline``. Raises :class:`Refused` (exit 3) for a dirty tree, an
    existing session, an existing branch, or a baseline that crashed or failed its checks (the
    session is kept)."""
    if opts.commit_paths and not opts.new_segment:
        raise UsageError("--commit-path is for start --new-segment (a new session starts from "
                         "a clean work tree): commit the files first")
    repo = Repo.discover(cwd)
    layout = Layout(repo)
    _paths_from_directory(opts, Path(cwd) if cwd is not None else current_folder(), repo.top)
    head = _starting_commit(repo)
    interrupted = read_start_intent(layout)
    finished = None
    if opts.new_segment:
        from ..session.shared import current

        joined = current(repo)
        if joined is not None and joined.remote:
            raise Refused(f"this clone joined session {joined.session_id} through "
                          f"{joined.remote}: a new segment would not reach the other clones; "
                          "start a new session (git autoresearch start --session-id NEW) and "
                          "have them join it")
        finished = finish_start(repo, layout, baseline_hint=False) if interrupted else None
        cfg, given = _config_for_segment(repo, layout, opts)
        _refuse_joined_elsewhere(repo, cfg.session_id)
    else:
        cfg, given = _config_for_session(repo, layout, opts, interrupted)
    if not opts.allow_missing:
        _check_matches(repo, given)
    linked = layout.linked()
    if linked:
        raise Refused(linked)
    scripts = command_files(repo, cfg, head)
    untracked, swapped = _refuse_dirty_tree(
        repo, layout, opts, Boundaries(cfg.scope, cfg.protected, cfg.readonly, scripts), cfg)
    _refuse_unwritable(repo, layout)
    if opts.new_segment:
        head = _follow_incumbent(repo, cfg.session_id, head, swapped)
    session, warnings, committed = _write_session_files(repo, layout, cfg, head, opts,
                                                        untracked, scripts, swapped)
    if committed is not None:
        scripts = command_files(repo, cfg, committed)
    unsaved = uncommitted_command_files(repo, cfg, scripts)
    if finished:
        warnings.append(finished)
    if unsaved:
        warnings.append(
            f"the configured commands run {', '.join(unsaved)}, which is not committed: an "
            "experiment could change it unseen (only committed files are readonly): commit it")
    closed = _scope_closed(cfg, Boundaries(cfg.scope, cfg.protected, cfg.readonly, scripts))
    if closed:
        warnings.append(closed)
    clash = None if opts.new_segment else pi_goal_warning(cfg)
    if clash:
        warnings.append(clash)
    for key, gone in opts.dropped_paths.items():
        option = "--" + key.replace("_", "-")
        one = len(gone) == 1
        warnings.append(f"{option} given now replaces the segment's list: {', '.join(gone)} "
                        f"{'is' if one else 'are'} no longer {key.replace('_', ' ')} (give "
                        f"{'it' if one else 'them'} again with {option} to keep "
                        f"{'it' if one else 'them'})")
    made = Swapped(committed, tuple(swapped)) if committed is not None else None
    if opts.no_baseline:
        return Started(session, None, None, warnings, swapped=made)
    return replace(_measure_baseline(session, progress, warnings), swapped=made)


def _follow_incumbent(repo: Repo, session_id: str, head: str, swapped: list[str]) -> str:
    """With workers, the main work tree (worker ``main``, its tree clean: checked before)
    moves to the incumbent before a new segment begins, so that its baseline is measured on
    the session's tip; returns the commit the segment starts from. Files to commit for the
    new segment (``swapped``) are refused there (exit 3): the segment commit would land on
    worker main's branch, not on the session branch the workers follow."""
    from ..git.merge import is_ancestor, move_work_tree

    found = current_worker(repo)
    if found is not None and swapped:
        raise Refused(f"this session has workers: a new segment cannot commit "
                      f"{listing(swapped)} here (the workers follow the session branch); "
                      "start a new session with the new benchmark committed")
    tip = repo.resolve(f"refs/heads/{session_branch(session_id)}")
    if found is None or tip is None or tip == head or not is_ancestor(repo, head, tip):
        return head
    move_work_tree(repo, head, tip)
    repo.update_ref("HEAD", tip, head, "git-autoresearch: worker main follows the incumbent "
                    "for a new segment")
    repo.head_at_discovery = repo.head_tree_at_discovery = None
    return tip


def _starting_commit(repo: Repo) -> str:
    """The commit the session starts from (HEAD's); :class:`Refused` when a merge (or the
    like) is in progress or there is no commit yet."""
    op = repo.operation_in_progress()
    if op:
        raise Refused(f"a {op} is in progress; finish or abort it first")
    head = repo.head()
    if head is None:
        raise Refused("HEAD has no commit yet; commit the project first")
    return head


def _config_for_session(repo: Repo, layout: Layout, opts: StartOptions,
                        interrupted: StartIntent | None) -> tuple[Config, list[tuple[str, str]]]:
    """The configuration of a new session, with the path rules given this time
    (:func:`_merge_values`). Refuses when a start was interrupted, a session exists, or its
    branch does; :class:`UsageError` for an id that makes no branch name."""
    if interrupted:
        raise Refused(f"the start of session {interrupted.config_session_id} was "
                      "interrupted: git autoresearch resume finishes it (git autoresearch "
                      "start --new-segment finishes it and measures the baseline)")
    if layout.config_exists():
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
    if cfg.session_id:
        _refuse_taken(repo, cfg.session_id)
    else:
        cfg.session_id = fresh_session_id(repo, default_session_id(cfg.goal))
    cfg.decision = cfg.decision or "sequential"  # the default of new sessions
    cfg.created_at = cfg.created_at or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    cfg.validate("configuration")
    branch = session_branch(cfg.session_id)
    if not repo.ref_format_ok(f"refs/heads/{branch}"):
        raise UsageError(f"session id '{cfg.session_id}' does not make a valid branch name")
    if FINAL_ID.search(cfg.session_id):
        raise UsageError(f"session id '{cfg.session_id}' ends like the branches finalize makes "
                         "(<id>-final, <id>-final-<run>); pick another --session-id")
    if repo.resolve(f"refs/heads/{branch}"):
        raise Refused(f"branch {branch} already exists (from an earlier session); pick "
                      "another --session-id")
    refuse_branch_below(repo, branch, "the session branch", "pick another --session-id")
    return cfg, given


def session_taken(repo: Repo, session_id: str) -> bool:
    """Whether session id ``session_id`` is in use here: refs exist under
    ``refs/autoresearch/<id>/`` (its state, attempts or set-asides, kept after its branch was
    merged and deleted), its branch ``autoresearch/<id>`` exists, or branches below
    ``autoresearch/<id>/`` do (pi-autoresearch's finalize.sh makes such branches), beside
    which git cannot make that branch."""
    branch = session_branch(session_id)
    return bool(repo.for_each_ref(f"{namespace(session_id)}/")) or \
        repo.resolve(f"refs/heads/{branch}") is not None or \
        branch_below(repo, branch) is not None


def fresh_session_id(repo: Repo, wanted: str) -> str:
    """``wanted``, or when a session has it (:func:`session_taken`) the first of
    ``<wanted>-2``, ``<wanted>-3``, ... that none has: a new session never takes over the runs
    and the state ref of an earlier one."""
    candidate, suffix = wanted, 1
    while session_taken(repo, candidate):
        suffix += 1
        candidate = f"{wanted}-{suffix}"
    return candidate


def _refuse_taken(repo: Repo, session_id: str) -> None:
    """Refuse (exit 3) an explicit ``--session-id`` that an earlier session has: its refs
    would be taken for the new session's (run numbers, doctor's repairs, the state ref)."""
    if repo.for_each_ref(f"{namespace(session_id)}/"):
        raise Refused(f"session {session_id} already exists: {namespace(session_id)}/ holds "
                      "its runs (its state ref: git autoresearch sessions lists it); pick "
                      "another --session-id, or leave it out for a fresh one")


def _config_for_segment(repo: Repo, layout: Layout, opts: StartOptions
                        ) -> tuple[Config, list[tuple[str, str]]]:
    """The configuration of a new segment: the session's, changed by what was given this
    time, with the path rules given (:func:`_merge_values`). Refuses without a readable
    session, with a ledger that lost its header, or off the session branch;
    :class:`UsageError` for another ``--session-id``."""
    if not layout.config_exists():
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
    for key in PATH_KEYS:
        before, now = old_data.get(key), merged.get(key)
        if isinstance(before, list) and isinstance(now, list):
            gone = [rule for rule in before if rule not in now]
            if gone:
                opts.dropped_paths[key] = gone
    cfg = Config.from_mapping(merged, source="configuration")
    wanted = session_branch(cfg.session_id)
    found = current_worker(repo)
    if found is not None:  # with workers, the main work tree starts it on its worker branch
        if found.name != MAIN:
            raise Refused(f"this is worker {found.name}'s worktree: start a new segment from "
                          f"the main work tree, {found.main}")
        wanted = worker_branch(cfg.session_id, MAIN)
    if repo.current_branch() != wanted:
        elsewhere = other_worktree(repo, wanted, "start the new segment there")
        raise Refused(f"check out the session branch {wanted} before starting a new "
                      "segment" + (f" (it is {elsewhere})" if elsewhere else
                                   f" (git switch {wanted})"))
    return cfg, given


def _refuse_dirty_tree(repo: Repo, layout: Layout, opts: StartOptions, bounds: Boundaries,
                       cfg: Config) -> tuple[list[str], list[str]]:
    """The untracked paths the session must never touch (accepted with ``force``; for a new
    segment, those the snapshot of untracked files does not know already), and, for a new
    segment, the changed paths it commits (:func:`lifecycle.segment_commit.segment_paths`). Refuses
    other changed tracked files, and other untracked ones without ``force``; protected and ignored
    paths are left out."""
    from .segment_commit import segment_paths

    status = repo.status()
    conflict = unmerged_problem({path: code for path, code in status.unmerged.items()
                                 if not bounds.is_protected(path)})
    if conflict:
        raise Refused(f"{conflict}; nothing was changed")
    tracked, untracked = uncommitted(repo, bounds, status)
    swapped: list[str] = []
    hint = ""
    if opts.new_segment:
        swapped = segment_paths(repo, cfg, opts.given_now, opts.commit_paths,
                                [*tracked, *untracked], bounds)
        tracked = [p for p in tracked if p not in swapped]
        known = load_snapshot(layout.untracked)
        untracked = [p for p in untracked if p not in swapped
                     and (known is None or not known.covers(p))]
        hint = ("; a new segment commits only the changed files its options name now "
                "(--command, --metric-command, --checks-command, --readonly, --commit-path)")
    if tracked:
        also = (f" (and untracked files: {listing(untracked)}, which --force would accept)"
                if untracked and not opts.force else "")
        raise Refused(f"the work tree has uncommitted changes: {listing(tracked)}{also}; "
                      f"commit or remove them first{hint}")
    if untracked and not opts.force:
        raise Refused(f"the work tree has untracked files: {listing(untracked)}; commit or "
                      "remove them, ignore them (.gitignore), or pass --force (they are then "
                      "never touched)" + hint)
    return untracked, swapped


def _refuse_unwritable(repo: Repo, layout: Layout) -> None:
    """Refuse before anything is changed when git has no identity to commit with, or the
    session folder, the scratch folder or git's own folders cannot be written."""
    problem = repo.identity_problem()
    if problem:
        raise Refused(problem)
    try:
        # The session folder itself is made only once the start is under way.
        check_writable(layout.auto if layout.auto.exists() else repo.top, layout.ledger)
        check_writable(repo.scratch)
        for folder in repo.own_folders:
            check_writable(folder)
    except WriteFailed as exc:
        raise Refused(f"{exc.message}; nothing was changed") from None


def _write_session_files(repo: Repo, layout: Layout, cfg: Config, head: str,
                         opts: StartOptions, untracked: list[str], scripts: list[str],
                         swapped: list[str]) -> tuple[Session, list[str], str | None]:
    """Under the session lock, make the session (through its start record, so that a start
    killed anywhere can be finished) or the new segment (its files, ``swapped``, committed
    first); returns the open session, warnings, and the segment commit (None: none)."""
    # Under the lock: a new segment's header must not land in the middle of a run's recording.
    # A signal waits until the session (or segment) is made whole (a SIGKILL is covered by the
    # start record).
    with SessionLock(repo.scratch, "start"), signals.deferred():
        if opts.new_segment:
            committed = None
            if swapped:
                from .segment_commit import commit_segment_files

                book = ledger_mod.read(layout.ledger)
                # A header before any run of the session takes the place of the first one.
                segment = 0 if len(book.segments) == 1 and not book.segments[0].runs \
                    else len(book.segments)
                committed = head = commit_segment_files(repo, cfg, head, swapped, segment)
                scripts = command_files(repo, cfg, head)
            session, warnings = _new_segment_files(repo, layout, cfg, head, opts, untracked,
                                                   scripts)
            return session, warnings, committed
        intent = StartIntent(session_id=cfg.session_id, head=head, config=cfg.to_dict(),
                             no_baseline=opts.no_baseline,
                             untracked=tuple(sorted(untracked)) if opts.force else ())
        return (*create_session(repo, layout, intent, scripts), None)


def _measure_baseline(session: Session, progress: Progress | None, warnings: list[str]
                      ) -> Started:
    """Fire the ``before`` hooks, measure the unchanged tree, record it as the segment's
    baseline and fire the ``after`` hooks with its record, as pi-autoresearch fires them around
    the run that follows ``init_experiment`` (gitautoresearch-hooks(5)); returns the started
    session, adding to ``warnings``. Raises :class:`BaselineFailed` when it crashed or failed its
    checks (the session is kept)."""
    with locked(session, "start") as recovered:
        before = fire_stage(session, "before", None)
        result = worktree.measure(session, progress, pending=False, baseline=True)
        status = result.status or "keep"
        save_snapshot(session.layout.untracked, take_snapshot(session.repo))
        recorded = record_run(session, status, "baseline", result=result, baseline=True,
                              hooks=before.summary())
        after = fire_stage(session, "after", recorded.record)
    warnings += recovered.warnings + recorded.warnings
    record = recorded.record
    if status != "keep":
        tail = result.checks["tail"] if status == "checks_failed" and result.checks \
            else result.log_tail
        raise BaselineFailed(f"the baseline failed ({record.get('reason') or status}); the "
                             "session is kept: fix the command, then run git autoresearch "
                             "start --new-segment", detail=tail, before=before, after=after)
    return Started(session, record, result, warnings, before, after)


def _new_segment_files(repo: Repo, layout: Layout, cfg: Config, head: str, opts: StartOptions,
                       untracked: list[str], scripts: list[str]) -> tuple[Session, list[str]]:
    """Write a new segment's configuration and ledger header; returns the session and the
    warnings of its state-ref mirror."""
    data = write_config(layout.config, cfg)
    ledger_mod.append(layout.ledger, [segment_header(repo, cfg, data, head, opts.no_baseline)])
    write_prompt(repo, layout, cfg, head, scripts)
    layout.pending.unlink(missing_ok=True)
    session = Session(repo, cfg, data, ledger_mod.read(layout.ledger))
    if opts.force:
        known = load_snapshot(layout.untracked) or take_snapshot(repo, [])
        known.untracked.update(untracked)
        save_snapshot(layout.untracked, known)
    return session, session.mirror_state("new segment")


