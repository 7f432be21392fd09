"""The session: its files, its configuration, its ledger, and the decisions of the loop.

No click here: functions take plain values, return data, and raise the errors of
:mod:`git_autoresearch.errors`.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import ledger as ledger_mod
from . import signals
from .config import (
    SESSION_ID_RE,
    Config,
    describe_changes,
    file_hash,
    hook_timeout_seconds,
    lock_wait_seconds,
    parse_toml,
)
from .errors import AutoresearchError, Refused, StopLoop, UsageError
from .experiment import (
    Changes,
    finish_revert,
    index_backup,
    load_snapshot,
    moved_out,
    plan_keep,
    revert_targets,
    save_snapshot,
    scope_violations,
    survey,
    take_snapshot,
)
from .experiment import (
    keep as git_keep,
)
from .experiment import (
    revert as git_revert,
)
from .faults import checkpoint
from .files import WriteFailed, check_writable, whole_index, write_atomic
from .git import DiskFull, GitError, Repo, said
from .inputs import fit_record
from .layout import Layout
from .ledger import Ledger, Run, Segment, json_number, now_ms
from .lock import SessionLock
from .measure import Measurement, Progress, command_environment
from .measure import measure as run_measurement
from .paths import AUTO, Boundaries
from .refs import (
    BRANCH_PREFIX,
    attempt_ref,
    attempts_prefix,
    scope_prefix,
    session_branch,
    state_ref,
)
from .refs import namespace as ref_namespace
from .scripts import command_files
from .trailers import commit_message, keep_trailers, result_trailer

if TYPE_CHECKING:
    from .hooks import HookReport

# Keeps commit through plumbing and reverts write only refs, so nothing of git's own runs its
# automatic maintenance during a session: every this many runs, we run it as git commit would.
MAINTENANCE_EVERY = 10
# How long a recording command waits for a lock file of git's to go before refusing.
GIT_LOCK_WAIT_SECONDS = 1.0

def carry_over(repo: Repo, branch: str) -> str:
    """How to get onto ``branch`` with uncommitted changes in the work tree: ``git switch
    --merge`` carries them over (a conflicting file is left with conflict markers to resolve),
    or they are committed on the current branch first."""
    current = repo.current_branch()
    where = f" on {current}" if current else ""
    return (f"carry them over with git switch --merge {branch}, or commit them{where} first "
            f"and then git switch {branch}")


def other_worktree(repo: Repo, branch: str, there: str) -> str | None:
    """Where ``branch`` is checked out when another worktree has it (git allows one at a
    time): ``checked out in another worktree, <path>: <there>`` (``there`` says what to do in
    it; ``{path}`` in it stands for the path), or, when that worktree's folder is gone, how
    to free the branch; None when no other worktree has it."""
    path = repo.worktree_of(branch)
    if path is None:
        return None
    if not path.exists():
        return (f"checked out in a worktree whose folder is gone, {path}: free the branch "
                "with git worktree prune")
    return f"checked out in another worktree, {path}: {there.format(path=path)}"


class Session:
    """An open session: repository, configuration (checked against the ledger) and ledger."""

    def __init__(self, repo: Repo, cfg: Config, cfg_bytes: bytes, book: Ledger) -> None:
        self.repo = repo
        self.layout = Layout(repo)
        self.config = cfg
        self.config_bytes = cfg_bytes
        self.ledger = book
        self._bounds: Boundaries | None = None
        self._head: str | None = None
        self.recovered: str | None = None
        # The after hooks fired for a run that recovery finished (None: none was finished).
        self.recovered_hooks: HookReport | None = None
        self.warnings: list[str] = []
        self.read_only = False
        self.ledger_path = self.layout.ledger
        self.trailer_branch: str | None = None
        self.seen_version: str | None = None
        # Why config.toml could not be used (read with the recorded configuration instead).
        self.invalid_config: str | None = None
        # The highest run number the attempt refs and the branch's trailers name.
        self._git_runs: int | None = None

    @property
    def bounds(self) -> Boundaries:
        """Scope, protected and readonly paths, with the files the configured commands name
        (:func:`command_files`, found once, on first use) readonly."""
        if self._bounds is None:
            cfg = self.config
            scripts = [] if self.read_only else command_files(self.repo, cfg, self.repo.head())
            self._bounds = Boundaries(cfg.scope, cfg.protected, cfg.readonly, scripts)
        return self._bounds

    def readonly_changed(self, changes: Changes | None = None) -> list[str]:
        """Readonly paths whose work tree or index differ from HEAD (new files included),
        sorted; ``changes`` saves surveying the work tree again."""
        if changes is None:
            changes = survey(self.repo, load_snapshot(self.layout.untracked))
        return sorted(p for p in changes.changed() if self.bounds.is_readonly(p))

    def head(self) -> str:
        """HEAD's commit id, asked of git once and then kept up to date by :meth:`record`."""
        if self._head is None:
            head = self.repo.head_at_discovery or self.repo.head()
            if head is None:
                raise Refused("HEAD has no commit yet; commit the project first")
            self._head = head
        return self._head

    # --- opening ----------------------------------------------------------------------------

    @classmethod
    def open(cls, cwd: str | os.PathLike[str] | None = None, *, on_branch: bool = True,
             check_config: bool = True) -> Session:
        """Open the session of the work tree containing ``cwd``.

        Refuses (exit 3) when there is no session, the configuration differs from the one the
        ledger recorded (naming the changed keys), or, with ``on_branch``, HEAD is not the
        session branch.
        """
        repo = Repo.discover(cwd)
        layout = Layout(repo)
        data = layout.read_config_bytes()
        seen = ledger_mod.version(layout.ledger)  # taken first: a later change always shows
        book = ledger_mod.read(layout.ledger)
        header = book.config_header or {}
        recorded = header.get("config")
        invalid: str | None = None
        try:
            if header.get("config_hash") == file_hash(data) and isinstance(recorded, dict):
                # The header holds the very values the file was written from: no TOML to parse.
                cfg = Config.from_mapping(recorded, source=str(layout.config))
            else:
                cfg = Config.from_mapping(parse_toml(data, source=str(layout.config)),
                                          source=str(layout.config))
        except UsageError as exc:
            if check_config or not isinstance(recorded, dict):
                raise Refused(f"{exc.message}; git autoresearch resume restores it from the "
                              "state ref") from None
            # To read the runs, the values the segment began with will do.
            cfg = Config.from_mapping(recorded, source="the ledger's configuration header")
            invalid = (f"{exc.message}; read with the configuration the segment began with "
                       "(git autoresearch resume restores the file from the state ref)")
        lock_wait_seconds()
        hook_timeout_seconds()  # a bad setting is refused before anything runs
        session = cls(repo, cfg, data, book)
        session.seen_version = seen
        if invalid:
            session.invalid_config = invalid
            session.warnings.append(invalid)
        if check_config:
            session.check_config()
            # Reading commands list these themselves (log, status); a loop must hear of them.
            if book.malformed:
                first = book.malformed[0]
                session.warnings.append(
                    f"the ledger {layout.ledger} has {len(book.malformed)} line(s) that cannot "
                    f"be read (line {first.line}: {first.reason}); git autoresearch resume sets "
                    "them aside in .auto/log.rejected.jsonl")
        if on_branch:
            session.check_branch()
        return session

    @classmethod
    def open_for_reading(cls, cwd: str | os.PathLike[str] | None = None) -> Session:
        """Open a session to read it, never refusing what only a recording command must refuse.

        Our session (an edited configuration or another branch is a warning here); else a
        pi-autoresearch session read in place (``.auto/log.jsonl`` without ``config.toml``, or
        the older flat ``autoresearch.jsonl``); else the kept runs of ``Result:`` trailers on
        the current branch. Such sessions are ``read_only``."""
        repo = Repo.discover(cwd)
        layout = Layout(repo)
        if layout.config.exists():
            session = cls.open(cwd, on_branch=False, check_config=False)
            try:
                session.check_config()
            except Refused as exc:
                if exc.message != session.invalid_config:  # said once already
                    session.warnings.append(exc.message)
            return session
        from .state import sessions

        saved = sessions(repo)
        lost = (f"no .auto/config.toml, though a state ref holds a session: "
                f"{layout.missing_hint(saved)}") if saved else None
        for path in (layout.ledger, repo.top / "autoresearch.jsonl"):
            if path.is_file():
                book = ledger_mod.read(path)
                session = cls._foreign(repo, book, path)
                session.warnings += [lost] if lost else []
                return session
        from .trailers import ledger_from_trailers

        branch = repo.current_branch() or "HEAD"
        book = ledger_from_trailers(repo, branch)
        if not book.runs:
            raise Refused("no session here: no .auto/config.toml, no ledger, and no Result: "
                          f"trailers on {branch}" + (f"; {layout.missing_hint(saved)}"
                                                     if saved or layout.start_intent.exists()
                                                     else ""))
        session = cls._foreign(repo, book, None)
        session.trailer_branch = branch
        session.warnings.append(f"read from the Result: trailers on {branch} alone; the "
                                "direction is unknown and taken as lower-is-better")
        session.warnings += [lost] if lost else []
        return session

    @classmethod
    def _foreign(cls, repo: Repo, book: Ledger, path: Path | None) -> Session:
        header = book.config_header or {}
        branch = repo.branch_at_discovery or ""
        sid = str(header.get("session_id") or branch.removeprefix(BRANCH_PREFIX) or "session")
        if not SESSION_ID_RE.match(sid):
            sid = "session"
        cfg = Config(goal=str(header.get("name") or "(unnamed session)"),
                     command="(read only)",
                     metric_name=str(header.get("metricName") or "metric"),
                     metric_unit=str(header.get("metricUnit") or ""),
                     direction="higher" if header.get("bestDirection") == "higher" else "lower",
                     session_id=sid)
        session = cls(repo, cfg, b"", book)
        session.read_only = True
        if path is not None:
            session.ledger_path = path
        return session

    def check_config(self) -> None:
        """Refuse when ``config.toml`` is not the file the ledger's last header recorded."""
        header = self.ledger.config_header
        if header is None or "config_hash" not in header:

            if self.layout.start_intent.exists():
                raise Refused(f"the start of session {self.config.session_id} was interrupted: "
                              "git autoresearch resume finishes it (git autoresearch start "
                              "--new-segment finishes it and measures the baseline)")
            if self.repo.resolve(state_ref(self.config.session_id)):
                raise Refused(f"the ledger {self.layout.ledger} is missing or lost its "
                              "configuration header; git autoresearch resume restores it from "
                              f"{state_ref(self.config.session_id)}")
            raise Refused(f"the ledger {self.layout.ledger} has no configuration header from "
                          "git-autoresearch; start a new segment: git autoresearch start "
                          "--new-segment")
        if header["config_hash"] == file_hash(self.config_bytes):
            return
        if self.invalid_config:
            raise Refused(self.invalid_config)
        recorded = header.get("config") or {}
        changes = describe_changes(recorded, self.config.to_dict()) if recorded else []
        what = "; ".join(changes) if changes else "its bytes differ"
        raise Refused(f"{self.layout.config} was edited since the segment began ({what}); "
                      "to measure under the new configuration run git autoresearch start "
                      "--new-segment (on a clean work tree: commit or restore an experiment in "
                      "progress with git first; it is not recorded); to undo the edit: chmod "
                      f"u+w {AUTO}/config.toml && git show "
                      f"{state_ref(self.config.session_id)}:config.toml > {AUTO}/config.toml "
                      f"&& chmod 0444 {AUTO}/config.toml")

    def check_branch(self) -> None:
        branch = self.repo.branch_at_discovery
        wanted = session_branch(self.config.session_id)
        if branch != wanted:
            where = f"branch {branch}" if branch else "a detached HEAD"
            if self.repo.resolve(wanted) is None:
                if self.merged_elsewhere():
                    raise Refused(f"the work tree is on {where}, and the session branch "
                                  f"{wanted} was merged and deleted: the session is over (to "
                                  "start another here, move .auto/ aside and run git "
                                  "autoresearch start --force)")
                raise Refused(f"the work tree is on {where}, and the session branch {wanted} "
                              "does not exist, nor is its last keep in HEAD (not fetched? "
                              f"{self.repo.fetch_hint(wanted)})")
            elsewhere = other_worktree(self.repo, wanted, "carry on there (cd {path})")
            if elsewhere is not None:
                raise Refused(f"the work tree is on {where}, and the session branch {wanted} "
                              f"is {elsewhere}")
            tracked = self.uncommitted()
            if tracked:
                shown = ", ".join(tracked[:3]) + (" ..." if len(tracked) > 3 else "")
                raise Refused(f"the work tree is on {where}, not on the session branch "
                              f"{wanted}, and has uncommitted changes ({shown}): "
                              f"{carry_over(self.repo, wanted)}")
            raise Refused(f"the work tree is on {where}, not on the session branch {wanted} "
                          f"(git switch {wanted})")

    def uncommitted(self) -> list[str]:
        """Tracked paths, outside the protected ones, whose work tree or index differ from
        HEAD (the changes a ``git switch`` has to carry over), sorted."""
        return sorted({e.path for e in self.repo.status()
                       if not e.untracked and not e.ignored
                       and not self.bounds.is_protected(e.path)})

    def branch_problem(self) -> tuple[bool, str | None]:
        """Whether the session branch exists, and what is wrong with where the work tree is
        (None when nothing is): off the session branch and not merged into the branch checked
        out, on a detached HEAD, or the session branch gone while its last keep is not in
        HEAD. A session merged into the branch checked out is finished, not in trouble."""
        branch = session_branch(self.config.session_id)
        current = self.repo.branch_at_discovery
        if current != branch and self.repo.resolve(branch) is None:
            if self.merged_elsewhere():
                return False, None
            return False, (f"the session branch {branch} does not exist, and its last keep is "
                           f"not in HEAD (not fetched? {self.repo.fetch_hint(branch)})")
        if current is None:
            return True, f"the work tree is on a detached HEAD, not on the session branch {branch}"
        if current != branch and not self.repo.merged(branch):
            return True, f"the work tree is on branch {current}, not on the session branch {branch}"
        return True, None

    def merged_elsewhere(self) -> bool:
        """Whether the last kept commit of the ledger is in HEAD: a session merged into the
        branch checked out (its own branch perhaps deleted since)."""
        kept = [r for r in self.ledger.runs if r.status == "keep" and r.data.get("commit")]
        if not kept:
            return False
        commit = self.repo.resolve(str(kept[-1].data["commit"]))
        return commit is not None and self.repo.merged(commit)

    @property
    def namespace(self) -> str:
        """Where the session's own refs live: ``refs/autoresearch/<id>``."""
        return ref_namespace(self.config.session_id)

    def check_recordable(self) -> None:
        """Refuse while a merge, rebase or the like is in progress."""
        op = self.repo.operation_in_progress()
        if op:
            raise Refused(f"a {op} is in progress; finish or abort it first")

    def check_git_locks(self) -> None:
        """Refuse while git's lock file of the index, HEAD or the session branch exists (a file
        check, before anything changes). A lock that goes within
        :data:`GIT_LOCK_WAIT_SECONDS` was a git process at work (``git status`` refreshing the
        index, a concurrent command); one that stays was left behind, or is held by a git
        process that is still running (``git commit`` waiting for its editor)."""
        branch = session_branch(self.config.session_id)
        deadline = time.monotonic() + GIT_LOCK_WAIT_SECONDS
        while True:
            locks = self.repo.recording_locks(branch, self.namespace)
            if not locks or time.monotonic() >= deadline:
                break
            time.sleep(0.02)
        if not locks:
            return
        lock = locks[0]
        intent = self.interrupted()
        if intent is not None:
            raise Refused(f"git's lock file {lock} exists, so the interrupted "
                          f"{intent.get('op')} of run {intent.get('run')} cannot be finished: "
                          "another git process is running here, or one was killed and left it; "
                          f"once no git process is running, remove it (rm {lock}); git "
                          "autoresearch resume then finishes the run")
        raise Refused(f"git's lock file {lock} exists: another git process is running here, or "
                      "one was killed and left it; once no git process is running, remove it "
                      f"(rm {lock}) and run the command again")

    @contextmanager
    def lock(self, what: str, *, recover: bool = True) -> Iterator[None]:
        """Hold the session lock. Once it is held, the ledger and HEAD are read again if another
        command recorded a run while this one waited (HEAD moving under us otherwise is caught
        by the compare-and-swap of the keep commit), and (with ``recover``, for the commands
        that record) git's lock files are checked (:meth:`check_git_locks`) and an interrupted
        keep or revert is finished first."""
        with SessionLock(self.repo.scratch, what):
            if self.seen_version is None or self.version() != self.seen_version:
                # Another command recorded a run meanwhile: HEAD may have moved too.
                self.reload()
                self._head = None
                self.repo.head_at_discovery = self.repo.head_tree_at_discovery = None
            if self.ledger.config_header is not None:
                self.check_config()
            if recover:
                self.check_git_locks()
                with signals.deferred():
                    self.recovered = self.recover()
            yield

    def reload(self) -> None:
        self._git_runs = None
        self.seen_version = None if self.trailer_branch is not None else self.version()
        if self.trailer_branch is not None:
            from .trailers import ledger_from_trailers

            self.ledger = ledger_from_trailers(self.repo, self.trailer_branch)
        else:
            self.ledger = ledger_mod.read(self.ledger_path)

    def version(self) -> str:
        """Changes whenever the runs may have: the ledger's size and time, or the branch tip."""
        if self.trailer_branch is not None:
            return self.repo.resolve(self.trailer_branch) or "none"
        return ledger_mod.version(self.ledger_path)

    # --- state ------------------------------------------------------------------------------

    @property
    def segment(self) -> Segment:
        return self.ledger.current

    def experiments_in_segment(self) -> int:
        """Runs of the current segment after its baseline."""
        seg = self.segment
        base = seg.baseline
        return len([r for r in seg.runs if base is None or r.number != base.number])

    def limit_reached(self) -> bool:
        limit = self.config.max_experiments
        return limit is not None and self.experiments_in_segment() >= limit

    def check_stop(self, command: str) -> None:
        """Exit 4 when the loop should stop: a STOP sentinel (recorded as a ``stopped`` event and
        removed) or ``max_experiments`` reached."""
        if self.layout.stop.exists():
            with signals.deferred():  # one stopped event per sentinel
                ledger_mod.append(self.layout.ledger, [{"type": "stopped",
                                                        "timestamp": now_ms(),
                                                        "command": command,
                                                        "next_run": self.ledger.next_run_number}])
                self.layout.stop.unlink()
                self.mirror_state("stopped")
            raise StopLoop("STOP sentinel found: the loop stops here (the sentinel was removed)"
                           + self._unrecorded_note())
        if self.limit_reached():
            raise StopLoop(f"max_experiments ({self.config.max_experiments}) reached in this "
                           "segment: the loop stops here" + self._unrecorded_note())

    def _unrecorded_note(self) -> str:
        changes = survey(self.repo, load_snapshot(self.layout.untracked))
        changed = [p for p in changes.changed() if not self.bounds.is_protected(p)]
        if not changed:
            return ""
        return (f"; the work tree has unrecorded changes ({', '.join(changed[:3])}"
                f"{' ...' if len(changed) > 3 else ''}): record them with git autoresearch "
                "discard or keep")

    def session_summary(self) -> dict[str, Any]:
        """The ``session`` object of the hook payload (seed contract), within this segment."""
        seg = self.segment
        base, best = seg.baseline, seg.best
        return {
            "metric_name": self.config.metric_name,
            "metric_unit": self.config.metric_unit,
            "direction": self.config.direction,
            "baseline_metric": json_number(base.metric) if base and base.metric is not None
            else None,
            "best_metric": json_number(best.metric) if best and best.metric is not None
            else None,
            "run_count": len(seg.runs),
            "goal": self.config.goal,
        }

    # --- measuring --------------------------------------------------------------------------

    def next_run(self) -> int:
        """The next run number: after the ledger's last run, after every attempt ref, and after
        every ``Autoresearch-Run`` trailer of the session branch (since the session's base
        commit), so a ledger line that was lost or never written never makes a number repeat."""
        if self._git_runs is None:  # asked of git once per command (and after a reload)
            prefix = attempts_prefix(self.config.session_id)
            res = self.repo.run("for-each-ref", "--format=%(refname)", prefix)
            numbers = [int(n[len(prefix):]) for n in res.text.splitlines()
                       if n[len(prefix):].isdigit()]
            branch = session_branch(self.config.session_id)
            base = (self.ledger.segments[0].header or {}).get("base_commit")
            spec = f"{base}..{branch}" if isinstance(base, str) and base else branch
            log = self.repo.run("log", "--format=%(trailers:key=Autoresearch-Run,valueonly)",
                                spec, "--", allow_non_zero=True)
            if log.returncode == 0:
                numbers += [int(w) for w in log.text.split() if w.isdigit() and len(w) < 10]
            self._git_runs = max(numbers, default=0)
        return max(self.ledger.next_run_number, self._git_runs + 1)

    def check_baseline(self) -> None:
        """Refuse to measure or keep experiments against a segment whose baseline failed or was
        never measured (:meth:`baseline_problem`)."""
        problem = self.baseline_problem()
        if problem is not None:
            raise Refused(problem)

    def baseline_problem(self) -> str | None:
        """Why the current segment has no baseline to compare experiments with, and the way
        out, or None when it has one (or was started with ``--no-baseline``, so that its first
        kept run is the baseline). The way out names how to set aside an experiment in the
        work tree first, since ``start --new-segment`` refuses a dirty tree."""
        if self.layout.start_intent.exists():
            return (f"the start of session {self.config.session_id} was interrupted: git "
                    "autoresearch resume finishes it (git autoresearch start --new-segment "
                    "finishes it and measures the baseline)")
        seg = self.segment
        if seg.kept:
            return None
        failed = next((r for r in seg.runs if r.data.get("baseline")), None)
        if failed is not None:
            why = failed.data.get("reason") or failed.status
            return (f"the baseline of this segment failed (run {failed.number}: {why}); fix "
                    f"the command, then {self._new_segment_way()}")
        if (seg.header or {}).get("no_baseline") is False:
            return ("the baseline of this segment was never measured (start was interrupted); "
                    f"{self._new_segment_way()}")
        return None

    def baseline_doubt(self) -> str | None:
        """A warning when the segment wanted a baseline but its first kept run is not one (a
        keep recorded after an interrupted start, before keep refused that), else None."""
        seg = self.segment
        first = seg.baseline
        if first is None or (seg.header or {}).get("no_baseline") is not False:
            return None
        if any(r.data.get("baseline") for r in seg.runs):
            return None
        return (f"the baseline of this segment was never measured: run {first.number}, an "
                "experiment, was kept in its place, and improvements are computed against it; "
                f"to compare with the unmodified code, {self._new_segment_way()}")

    def _new_segment_way(self) -> str:
        """How to start a new segment from here: ``start --new-segment``, after setting aside
        the unrecorded experiment in the work tree (which it would refuse) when there is one."""
        changes = survey(self.repo, load_snapshot(self.layout.untracked))
        changed = [p for p in changes.changed() if not self.bounds.is_protected(p)]
        if not changed:
            return "run git autoresearch start --new-segment"
        shown = ", ".join(changed[:3]) + (" ..." if len(changed) > 3 else "")
        return (f"set aside the experiment in the work tree ({shown}) with git autoresearch "
                "discard -d DESCRIPTION (it is recorded and kept at an attempt ref), then run "
                "git autoresearch start --new-segment")

    def _free_ref(self, base: str) -> str:
        ref, n = base, 1
        while self.repo.resolve(ref):
            n += 1
            ref = f"{base}.{n}"
        return ref

    def fingerprint(self, changes: Changes) -> dict[str, str]:
        """What the experiment's changes are now: path -> ``mode:sha256`` (``deleted``)."""
        out = {}
        for rel in changes.changed():
            if self.bounds.is_protected(rel):
                continue
            path = self.repo.top / rel
            if path.is_dir() and not path.is_symlink():  # a submodule: its commit
                out[rel] = f"commit:{self.repo.submodule_head(rel)}"
                continue
            try:
                st = path.lstat()
                data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
                out[rel] = f"{st.st_mode:o}:{hashlib.sha256(data).hexdigest()}"
            except FileNotFoundError:
                out[rel] = "deleted"
            except OSError:
                out[rel] = "unreadable"
        return out

    def changed_since(self, result: Measurement, changes: Changes | None = None) -> list[str]:
        """The paths whose content or mode differ from when ``result`` was measured (none
        when it has no fingerprint); ``changes`` saves surveying the work tree again."""
        if result.fingerprint is None:
            return []
        if changes is None:
            changes = survey(self.repo, load_snapshot(self.layout.untracked))
        now = self.fingerprint(changes)
        return sorted(p for p in set(now) | set(result.fingerprint)
                      if now.get(p) != result.fingerprint.get(p))

    def measure(self, progress: Progress | None = None, *, pending: bool = True,
                baseline: bool = False) -> Measurement:
        """Run the experiment and, with ``pending``, remember the result for keep/discard.

        Changes outside the scope and changes to readonly paths (what defines success) are
        saved under ``refs/autoresearch/<id>/scope/<run>`` and put back to HEAD first, so that
        they are never measured; the result lists them apart (``scope_violations``,
        ``readonly_violations``)."""
        if not baseline:
            self.check_baseline()
        if pending:
            self.preflight()
        number = self.next_run()
        changes = survey(self.repo, load_snapshot(self.layout.untracked))
        violations = scope_violations(self.bounds, changes)
        if violations:
            violations = sorted({*violations, *moved_out(self.repo, self.bounds, changes,
                                                         violations)})
        scope_ref = None
        if violations:
            scope_ref = self._free_ref(f"{scope_prefix(self.config.session_id)}{number}")
            token = os.urandom(8).hex()
            created, tracked = revert_targets(self.bounds, changes, violations)
            # A SIGKILL half-way (files removed, not all) is finished by the next command
            # from this intent record, as an interrupted revert is.
            aside: dict[str, Any] = {"op": "set-aside", "run": number, "id": token,
                                     "head": self.head(), "ref": scope_ref,
                                     "created": created, "tracked": tracked,
                                     "staged_preexisting": changes.staged_preexisting}
            with signals.deferred():  # saved and reverted whole, or not at all
                self._write_intent(aside)
                try:
                    git_revert(self.repo, self.bounds, changes, head=self.head(),
                               ref=scope_ref, only=violations, stage="set-aside",
                               message=f"changes outside the scope or to readonly paths "
                                       f"before run {number}\n\n"
                                       f"Autoresearch-Intent: {token}\n")
                except GitError as exc:
                    raise self._git_failed(aside, exc) from None
                except Refused:
                    self.layout.intent.unlink(missing_ok=True)
                    raise
                self.layout.intent.unlink(missing_ok=True)
        env = command_environment({
            "AUTORESEARCH_SESSION": self.config.session_id,
            "AUTORESEARCH_RUN": str(number),
            "AUTORESEARCH_RUN_LOG": str(self.layout.run_log),
        })
        try:
            result = run_measurement(self.config, top=self.repo.top,
                                     log_path=self.layout.run_log, env=env, progress=progress)
        except OSError as exc:  # the run log: a full or read-only disk
            raise self._not_measured(f"cannot write {self.layout.run_log}: "
                                     f"{exc.strerror or exc.__class__.__name__}",
                                     scope_ref) from None
        result.head = self.head()
        result.readonly_violations = [p for p in violations if self.bounds.is_readonly(p)]
        result.scope_violations = [p for p in violations if not self.bounds.is_readonly(p)]
        result.scope_ref = scope_ref
        if not pending:
            return result
        try:
            after = survey(self.repo, load_snapshot(self.layout.untracked))
            result.fingerprint = self.fingerprint(after)
            self.repo.scratch.mkdir(parents=True, exist_ok=True)
            data = result.to_dict()
            data["config_hash"] = file_hash(self.config_bytes)
            write_atomic(self.layout.pending, json.dumps(data, allow_nan=False).encode())
        except (WriteFailed, DiskFull) as exc:  # a benchmark that filled the disk, say
            raise self._not_measured(exc.message, scope_ref) from None
        return result

    @staticmethod
    def _not_measured(problem: str, scope_ref: str | None) -> Refused:
        """The refusal of a measurement whose result could not be written: ``problem``, then
        the state (nothing recorded, the experiment intact, what was set aside) and the way
        out."""
        aside = (f", and the changes outside the scope or to readonly files are saved at "
                 f"{scope_ref}" if scope_ref else "")
        return Refused(f"{problem}; nothing was recorded, and the experiment is intact in the "
                       f"work tree{aside}: measure again once there is room")

    def pending(self) -> Measurement | None:
        """The measurement taken since the last recorded run, if it is still valid."""
        try:
            data = json.loads(self.layout.pending.read_text())
        except (FileNotFoundError, ValueError):
            return None
        if data.get("config_hash") != file_hash(self.config_bytes):
            return None
        result = Measurement.from_dict(data)
        if result.head != self.head():
            return None
        return result

    def decide(self, result: Measurement) -> str:
        """The loop's decision: ``crash`` without a metric, ``checks_failed`` when the checks
        failed, ``keep`` when the metric strictly beats the segment's best (or nothing is kept
        yet), else ``discard``."""
        status = result.status
        if status:
            return status
        best = self.segment.best
        assert result.metric is not None
        if best is None or best.metric is None:
            return "keep"
        return "keep" if self.segment.better(result.metric, best.metric) else "discard"

    # --- hooks ------------------------------------------------------------------------------

    def fire_hooks(self, stage: str, *, run_entry: Mapping[str, Any] | None = None
                   ) -> HookReport:
        """Fire ``stage`` hooks with the seed's payload and log each firing in the ledger."""
        from .hooks import HookReport, fire

        if not self.layout.hooks.is_dir():
            self._after_hooks_fired(stage, run_entry)
            return HookReport(stage)
        if stage == "after":
            checkpoint("record:before-after-hooks")
        payload: dict[str, Any] = {"event": stage, "cwd": str(self.repo.top)}
        if stage == "before":
            last = self.ledger.last_run
            payload["next_run"] = self.next_run()
            payload["last_run"] = run_payload(last.data) if last else None
        else:
            payload["run_entry"] = run_payload(run_entry or {})
        payload["session"] = self.session_summary()
        report = fire(self.layout.hooks, stage, payload, cwd=self.repo.top)
        if report.firings:
            ledger_mod.append(self.layout.ledger, [f.ledger_line() for f in report.firings])
            self.mirror_state(f"{stage} hooks")
        self._after_hooks_fired(stage, run_entry)
        return report

    def _after_hooks_fired(self, stage: str, run_entry: Mapping[str, Any] | None) -> None:
        """Clear the intent record of the run whose after hooks just fired (it was kept so
        that a kill before they fired leaves recovery a way to fire them)."""
        if stage != "after" or not run_entry:
            return
        intent = self.interrupted()
        if intent is not None and intent.get("run") == run_entry.get("run") \
                and self.ledger.find(int(run_entry.get("run") or 0)) is not None:
            self.layout.intent.unlink(missing_ok=True)

    # --- recording --------------------------------------------------------------------------

    def record(
        self,
        status: str,
        description: str,
        *,
        result: Measurement | None,
        asi: Mapping[str, Any] | None = None,
        hooks: list[dict[str, Any]] | None = None,
        baseline: bool = False,
        given: Measurement | None = None,
        force: bool = False,
    ) -> dict[str, Any]:
        """Apply ``status`` to the work tree (keep: commit; otherwise: revert) and append the run
        record. Returns the record as written.

        ``result`` is the measurement to record; ``given``, the metrics the caller gave
        (``--metric``), which are recorded alone when the work tree changed since ``result`` was
        measured. A ``discard`` of a measurement that crashed or failed its checks is recorded
        as that; a ``keep`` of one that failed its checks is refused unless ``force``. An
        intent record is written before anything changes and cleared when the
        ledger line is written, so that :meth:`recover` can finish or roll back an operation
        that was killed.
        """
        self.check_recordable()
        self.preflight()
        head = self.head()
        number = self.next_run()
        changes = survey(self.repo, load_snapshot(self.layout.untracked))
        measured: Measurement | None = None  # a pending measurement, kept or dropped below
        if result is not None and result.fingerprint is not None:
            measured = result
            moved = self.changed_since(result, changes)
            what = ", ".join(moved[:5]) + (" ..." if len(moved) > 5 else "")
            if moved and given is not None and (status != "keep" or given.metric is not None):
                self.warnings.append(f"the work tree changed since it was measured ({what}); "
                                     "the run is recorded with the metrics you gave alone")
                result = given
            elif moved and status == "keep":
                raise Refused(f"the work tree changed since it was measured ({what}); measure "
                              "again before keeping, or give the metric (--metric)")
            elif moved:
                self.warnings.append(f"the work tree changed since it was measured ({what}); "
                                     "the run is recorded without that measurement")
                result = None
        if status == "keep" and result is not None and result.status == "checks_failed" \
                and not force:
            raise Refused("the pending measurement failed its checks; discard it, or keep it "
                          "anyway with --force")
        if status == "discard" and result is not None and result.status:
            status = result.status
        metric = result.metric if result else None
        if status == "keep" and metric is None:
            raise Refused("a keep needs a metric: measure first or pass --metric")
        if status == "keep" and not baseline:
            # A kept experiment would become the baseline of a segment that wanted one measured.
            self.check_baseline()
        draft = self._draft(number, status, description, result, asi, hooks, baseline)
        if measured is not None and result is not measured and measured.scope_ref:
            # What the dropped measurement set aside before it ran still belongs to this run.
            draft["scope_ref"] = measured.scope_ref
            draft["scope_violations"] = sorted({*draft["scope_violations"],
                                                *measured.scope_violations})
        if measured is not None and result is not measured:
            draft["readonly_violations"] = list(measured.readonly_violations)
        self._name_set_asides(draft)
        # What defines success and changed since (or without) a measurement: put back too.
        draft["readonly_violations"] = sorted({*draft["readonly_violations"],
                                               *self.readonly_changed(changes)})
        fit_record(draft)  # refused here, before anything changes, if it cannot fit
        ref = attempt_ref(self.config.session_id, number)
        token = os.urandom(8).hex()
        untracked_after = sorted({*changes.preexisting, *changes.staged_preexisting,
                                  *(p for p in changes.created if self.bounds.is_protected(p))})
        intent: dict[str, Any] = {"op": "keep" if status == "keep" else "revert", "run": number,
                                  "id": token, "head": head, "ref": ref, "record": draft,
                                  "untracked_after": untracked_after,
                                  "staged_preexisting": changes.staged_preexisting}
        # From the intent record to the ledger line, a signal waits (about 0.1 s): the run is
        # recorded whole, then the command ends as the signal asks. A SIGKILL is covered by the
        # intent record and recover().
        with signals.deferred():
            try:
                if status == "keep":
                    assert metric is not None
                    self._keep(draft, intent, changes, metric, description, token)
                else:
                    message = (f"{description.strip() or f'run {number}'}\n\n"
                               f"Autoresearch-Status: {status}\nAutoresearch-Run: {number}\n"
                               f"Autoresearch-Session: {self.config.session_id}\n"
                               f"Autoresearch-Intent: {token}\n")
                    intent["created"], intent["tracked"] = revert_targets(self.bounds, changes)
                    self._write_intent(intent)
                    git_revert(self.repo, self.bounds, changes, head=head, ref=ref,
                               message=message)
                    draft["attempt_ref"] = ref
            except (Refused, GitError) as exc:
                now = self.repo.head() if status == "keep" else head
                committed = now is not None and now != head
                if isinstance(exc, GitError):
                    failed = self._git_failed(intent, exc)
                    if failed is not exc or not committed:
                        raise failed from None
                if committed:
                    # Failed after the commit (the out-of-scope changes could not be set aside:
                    # a full disk): the intent record stays, and the next command finishes it.
                    assert now is not None
                    raise Refused(f"run {number} was committed as {self.repo.short(now)}, but "
                                  f"{exc.message}; git autoresearch resume (or any run, keep or "
                                  "discard) finishes recording it") from None
                # Refused before anything changed (git refused the commit, or could not record
                # the attempt): there is nothing to finish.
                self.layout.intent.unlink(missing_ok=True)
                locks = self.repo.recording_locks(session_branch(self.config.session_id),
                                                  self.namespace)
                if locks:  # another git took a lock meanwhile: name it, not git's advice
                    said_lines = [*(exc.detail or "").splitlines(), exc.message]
                    line = next((ln.strip() for ln in said_lines
                                 if ln.strip().startswith(("fatal:", "error:"))), exc.message)
                    raise Refused(f"git could not finish the {intent['op']} of run {number}: its "
                                  f"lock file {locks[0]} exists (git said: {line}); nothing was "
                                  "recorded, and the experiment is still in the work tree; once "
                                  f"no git process is running, remove it (rm {locks[0]}) and "
                                  "run the command again") from None
                raise
            return self._append_record(draft, untracked_after, changes.ignored,
                                       hooks_follow=not baseline)

    def set_asides(self, number: int) -> list[tuple[str, list[str]]]:
        """What the measurements of run ``number`` set aside: each ref ``scope/<number>``,
        ``scope/<number>.2``, ... under :attr:`namespace` that exists (the measurement kept,
        those taken again, a set-aside that failed or was killed), in that order, with the
        paths it changed from the commit it was taken on."""
        prefix = scope_prefix(self.config.session_id)
        found = []
        for ref in self.repo.run("for-each-ref", "--format=%(refname)", prefix).text.split("\n"):
            head, _, rest = ref[len(prefix):].partition(".")
            if ref and head == str(number) and (not rest or rest.isdigit()):
                found.append((int(rest or 1), ref))
        out = []
        for _, ref in sorted(found):
            parent = self.repo.resolve(f"{ref}^")
            out.append((ref, self.repo.changed_paths(parent, ref) if parent else []))
        return out

    def _name_set_asides(self, draft: dict[str, Any]) -> None:
        """Name in run record ``draft`` every set-aside of its run (``scope_refs``) and add
        their paths outside the scope to its violations: nothing set aside goes unnamed."""
        refs = self.set_asides(draft["run"])
        if not refs:
            return
        draft["scope_refs"] = [ref for ref, _ in refs]
        outside = {p for _, paths in refs for p in paths
                   if not self.bounds.is_protected(p) and not self.bounds.in_scope(p)}
        draft["scope_violations"] = sorted({*draft["scope_violations"],
                                            *(p for p in outside
                                              if not self.bounds.is_readonly(p))})
        draft["readonly_violations"] = sorted({*draft["readonly_violations"],
                                               *(p for p in outside
                                                 if self.bounds.is_readonly(p))})

    def _git_failed(self, intent: dict[str, Any], exc: GitError) -> AutoresearchError:
        """What to say when git failed in the middle of a keep or revert. When nothing had
        changed yet (HEAD where it was, no attempt recorded; a keep puts the index back), the
        intent record goes, since there is nothing to finish; otherwise it stays, for resume.
        When a lock file of git's is the reason, a :class:`Refused` names it and what git said;
        otherwise ``exc`` itself."""
        number, op = intent["run"], intent["op"]
        untouched = (self.repo.head() == intent["head"]
                     and not (intent["ref"] and self._ours(intent["ref"], intent)))
        if untouched:
            self.layout.intent.unlink(missing_ok=True)
        locks = self.repo.recording_locks(session_branch(self.config.session_id),
                                          self.namespace)
        if not locks and isinstance(exc, DiskFull):
            if not untouched:
                return Refused(f"{exc.message}; the {op} of run {number} stopped half-way; "
                               "free space on that disk, then git autoresearch resume "
                               "finishes it")
            done = ("nothing was recorded, and the experiment is still in the work tree"
                    if op == "keep" else "nothing was changed or recorded")
            return Refused(f"{exc.message}; {done}; free space on that disk, then run the "
                           "command again")
        if not locks:
            return exc
        lines = said(exc.stderr)
        line = next((ln.strip() for ln in lines if ln.startswith(("fatal:", "error:"))),
                    lines[-1].strip() if lines else f"exit {exc.returncode}")
        message = (f"git could not finish the {op} of run {number}: its lock file {locks[0]} "
                   f"exists (git said: {line}); ")
        if untouched:
            done = ("nothing was recorded, and the experiment is still in the work tree"
                    if op == "keep" else "nothing was reverted or recorded")
            return Refused(f"{message}{done}; once no git process is running, remove it (rm "
                           f"{locks[0]}) and run the command again")
        what = (f"the set-aside before run {number}" if op == "set-aside"
                else f"run {number}")
        return Refused(f"{message}once no git process is running, remove it (rm {locks[0]}); "
                       f"git autoresearch resume then finishes {what}")

    def _keep(self, draft: dict[str, Any], intent: dict[str, Any], changes: Changes,
              metric: float, description: str, token: str) -> None:
        """The keep of :meth:`record`: write the intent, commit, and complete ``draft``."""
        number, head, ref = draft["run"], intent["head"], intent["ref"]
        trailer = result_trailer(self.config.metric_name, metric, draft["metrics"])
        plan = plan_keep(self.repo, self.bounds, changes)
        intent["to_stage"] = plan.to_stage
        intent["had_index"] = (self.repo.git_dir / "index").is_file()
        intent["created"], intent["tracked"] = revert_targets(self.bounds, plan.revert_changes,
                                                              plan.violations)
        self._write_intent(intent)
        head_tree = (self.repo.head_tree_at_discovery
                     if head == self.repo.head_at_discovery else None)
        kept = git_keep(self.repo, self.bounds, plan, head=head,
                        message=commit_message(description, trailer, number,
                                               self.config.session_id),
                        trailers=keep_trailers(trailer, number, self.config.session_id),
                        violations_ref=ref, head_tree=head_tree,
                        violations_message=f"changes outside the scope or to readonly paths "
                                           f"of kept run {number}\n\n"
                                           f"Autoresearch-Intent: {token}\n")
        self._head = kept.commit
        draft.update({"commit": self.repo.short(kept.commit), "committed": kept.committed,
                      "attempt_ref": kept.attempt_ref})
        draft["scope_violations"] = sorted({*draft["scope_violations"],
                                            *(p for p in kept.scope_violations
                                              if not self.bounds.is_readonly(p))})

    def _draft(self, number: int, status: str, description: str, result: Measurement | None,
               asi: Mapping[str, Any] | None, hooks: list[dict[str, Any]] | None,
               baseline: bool) -> dict[str, Any]:
        """The run record, with ``commit`` at HEAD and no attempt ref yet."""
        metric = result.metric if result else None
        record: dict[str, Any] = {
            "run": number,
            "commit": self.repo.short(self.head()),
            # pi-autoresearch's convention: a crash's metric is 0, whatever was measured.
            "metric": 0 if status == "crash" else
            (json_number(metric) if metric is not None else None),
            "metrics": {k: json_number(v) for k, v in (result.metrics if result else {}).items()},
            "status": status,
            "description": description,
            "timestamp": now_ms(),
            "segment": self.segment.index,
            "confidence": None,
        }
        if asi:
            record["asi"] = dict(asi)
        record.update({
            "duration_s": result.duration_s if result else None,
            "samples": [json_number(s) for s in result.samples] if result else [],
            "checks": result.checks if result else None,
            "attempt_ref": None,
            "scope_violations": list(result.scope_violations) if result else [],
            "readonly_violations": list(result.readonly_violations) if result else [],
            "hooks": hooks or [],
        })
        if result is not None and result.scope_ref:
            record["scope_ref"] = result.scope_ref
        if baseline:
            record["baseline"] = True
        if result and result.reason and status == "crash":
            record["reason"] = result.reason
            if result.log_tail:
                # run.log is overwritten by the next measurement: the record keeps the tail.
                record["tail"] = result.log_tail
        elif result and result.checks and not result.checks["passed"]:
            record["reason"] = result.checks.get("reason")
        return record

    def _append_record(self, record: dict[str, Any], untracked_after: list[str],
                       ignored: list[str] | None = None, *, hooks_follow: bool = True
                       ) -> dict[str, Any]:
        """Compute the confidence, append the record, and clear what the run left behind.
        With ``hooks_follow`` (the after hooks fire next) and after hooks in place, the intent
        record stays until they have fired (:meth:`fire_hooks`), so that a kill in between
        leaves it for recovery, which fires them."""
        # A keep's own violations came after the first fit: cut again (the lists only shrink).
        fit_record(record)
        probe = Segment(self.segment.index, self.segment.header, list(self.segment.runs))
        probe.runs.append(Run(record, 0, probe.index))
        record["confidence"] = ledger_mod.confidence(probe)
        checkpoint("record:before-ledger")
        try:
            ledger_mod.append(self.layout.ledger, [record])
        except WriteFailed as exc:
            # The intent record stays: the next command that takes the lock writes the line.
            raise Refused(f"{self._run_state(record)}, but its ledger line could not be "
                          f"written to {exc.path}: {exc.reason}; free space (or make it "
                          "writable), then git autoresearch resume (or any run, keep or "
                          "discard) finishes recording it") from None
        checkpoint("record:after-ledger")
        signals.note_recorded(record["run"], record["status"], record.get("commit"))
        try:
            save_snapshot(self.layout.untracked,
                          take_snapshot(self.repo, untracked_after, ignored))
        except WriteFailed as exc:
            self.warnings.append(f"run {record['run']} was recorded, but {exc.message}: the "
                                 "files untracked before the next experiment are those "
                                 "before this one")
        self.mirror_state(f"after run {record['run']} ({record['status']})")
        if record["run"] % MAINTENANCE_EVERY == 0:
            self.repo.auto_maintenance()
        self.layout.pending.unlink(missing_ok=True)
        if not (hooks_follow and self.layout.hooks.is_dir()):
            self.layout.intent.unlink(missing_ok=True)
        self.reload()
        return record

    def _run_state(self, record: Mapping[str, Any]) -> str:
        """Where run ``record`` stands once its git side is done, for a message."""
        number = record["run"]
        if record["status"] == "keep":
            if record.get("committed"):
                return f"run {number} was committed as {record['commit']}"
            return f"run {number} was kept at {record['commit']} (nothing to commit)"
        return (f"run {number} ({record['status']}) was reverted, its attempt saved at "
                f"{record.get('attempt_ref')}")

    def preflight(self) -> None:
        """Refuse (exit 3) before anything changes when the ledger, the session folder or the
        scratch folder cannot be written (a read-only filesystem, a full disk)."""
        try:
            check_writable(self.layout.auto, self.layout.ledger)
            check_writable(self.repo.scratch)
        except WriteFailed as exc:
            raise Refused(f"{exc.message}; nothing was changed or recorded") from None

    def mirror_state(self, message: str) -> None:
        """Mirror the session files on the state ref; a failure is a warning, not an error."""
        from .state import LedgerShrank, mirror

        try:
            _, skipped = mirror(self.repo, self.layout.auto, self.config.session_id, message)
        except (LedgerShrank, WriteFailed, GitError, OSError, UnicodeError) as exc:
            self.warnings.append(f"the session files were not mirrored on the state ref: {exc}")
            return
        if skipped:
            self.warnings.append("not mirrored on the state ref (rename them): "
                                 + ", ".join(repr(name) for name in skipped))

    # --- interrupted operations --------------------------------------------------------------

    def _write_intent(self, intent: dict[str, Any]) -> None:
        self.repo.scratch.mkdir(parents=True, exist_ok=True)
        # \u escapes: any file name. A failure here is before anything changed.
        write_atomic(self.layout.intent, json.dumps(intent, allow_nan=False).encode())

    def interrupted(self) -> dict[str, Any] | None:
        """The intent record of a keep or revert that did not finish, if any."""
        try:
            data = json.loads(self.layout.intent.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (ValueError, RecursionError):
            return {"op": "unknown", "run": None}
        return data if isinstance(data, dict) else {"op": "unknown", "run": None}

    def _ours(self, ref: str, intent: dict[str, Any]) -> bool:
        """Whether ``ref`` holds the attempt this intent wrote (not an older one)."""
        commit = self.repo.resolve(ref)
        if commit is None:
            return False
        token = intent.get("id")
        if not token:
            return True
        body = self.repo.run("log", "-1", "--format=%(trailers:key=Autoresearch-Intent,"
                             "valueonly)", commit).text
        return token in body.split()

    def _diverged(self, attempt: str, head: str, paths: list[str]) -> list[str]:
        """Paths whose content is neither the attempt's nor HEAD's: changed after the kill."""
        if not paths:
            return []
        in_attempt, in_head = self.repo.blobs(attempt, paths), self.repo.blobs(head, paths)
        now = self.repo.hash_files(paths)
        # A path that cannot be hashed (a newline in its name) counts as changed: left alone.
        return [p for p in paths if "\n" in p or now.get(p) not in (in_attempt.get(p),
                                                                  in_head.get(p))]

    def _finish_targets(self, intent: dict[str, Any], ref: str) -> str:
        """Finish restoring an interrupted revert's paths, unless they changed since."""
        targets = [*intent["created"], *intent["tracked"]]
        moved = self._diverged(ref, intent["head"], targets)
        if moved:
            return (f"; the work tree was left as it is, since {', '.join(moved[:3])} "
                    "changed after the interruption")
        finish_revert(self.repo, intent["created"], intent["tracked"],
                      list(intent.get("staged_preexisting", [])))
        return ""

    def recover(self, *, abandon: bool = False) -> str | None:
        """:meth:`finish_interrupted`, then the after hooks of the run it finished, which the
        killed command never fired (their report is kept in ``recovered_hooks``)."""
        finished: list[dict[str, Any]] = []
        done = self.finish_interrupted(finished, abandon=abandon)
        if finished:
            self.recovered_hooks = self.fire_hooks("after", run_entry=finished[0])
        return done

    def finish_interrupted(self, finished: list[dict[str, Any]], *, abandon: bool = False
                           ) -> str | None:
        """Finish or roll back an interrupted keep or revert; returns what was done, or None.

        A revert whose attempt ref holds its attempt is finished (the run recorded, and the
        paths restored unless they changed after the kill, in which case they are left alone:
        the attempt is safe in its ref); one killed before that is rolled back, since nothing
        had changed. A keep whose commit is HEAD, or that had nothing to commit, is finished;
        one killed before committing is rolled back: the index goes back to HEAD for the
        staged paths and the experiment stays in the work tree, unrecorded. When HEAD moved in
        between, :class:`Refused`, or with ``abandon`` the intent record is set aside. The record
        of a run finished here (or found recorded already, its after hooks not yet fired) is
        appended to ``finished``.
        """
        for pattern in ("attempt-index.*", "state-piece.*", "*.tmp"):
            for leftover in self.repo.scratch.glob(pattern):
                if leftover.name.split(".")[-1] != str(os.getpid()):
                    leftover.unlink(missing_ok=True)
        intent = self.interrupted()
        backup = index_backup(self.repo)
        if intent is None or intent.get("op") != "keep":
            backup.unlink(missing_ok=True)
        if intent is None:
            return None
        number = intent.get("run")
        if intent.get("op") == "set-aside" and isinstance(number, int):
            return self._finish_set_aside(intent, number, abandon=abandon)
        if intent.get("op") not in ("keep", "revert") or not isinstance(number, int):
            self._set_intent_aside()
            return "set aside an unreadable intent record"
        already = self.ledger.find(number)
        if already is not None:
            # The intent is cleared once the after hooks fired: they have not.
            finished.append(already.data)
            return (f"run {number} was already recorded; its after hooks had not fired (they "
                    "fire now)")
        record: dict[str, Any] = intent["record"]
        head = self.repo.head()
        ref = intent["ref"]
        ours = self._ours(ref, intent)
        if intent["op"] == "revert":
            stopped = self._not_to_finish(intent, ours, abandon, f"revert of run {number}",
                                          f"its attempt is at {ref}")
            if stopped:
                return stopped
            note = self._finish_targets(intent, ref)
            record["attempt_ref"] = ref
            finished.append(self._append_record(record, intent["untracked_after"]))
            return f"finished the interrupted revert of run {number} ({record['status']}){note}"
        committed = head != intent["head"]
        if committed:
            parent = self.repo.resolve(f"{head}^")
            run_trailer = self.repo.run("log", "-1", "--format=%(trailers:key=Autoresearch-Run,"
                                        "valueonly)", str(head)).text.strip()
            if parent != intent["head"] or run_trailer != str(number):
                if not abandon:
                    raise Refused(f"HEAD moved since the keep of run {number} was interrupted, "
                                  "and not by that keep (git autoresearch doctor --fix sets the "
                                  "interrupted operation aside)")
                self._set_intent_aside()
                return f"set aside the interrupted keep of run {number} (HEAD had moved)"
        elif intent["to_stage"] and not ours:
            if whole_index(backup):
                os.replace(backup, self.repo.git_dir / "index")  # the index the keep found
            elif intent.get("had_index"):
                # No whole copy: the keep was killed while copying the index, before it staged
                # anything, so the index is still the one it found.
                backup.unlink(missing_ok=True)
            else:
                self.repo.unstage(intent["to_stage"])
            self.layout.intent.unlink()
            return (f"rolled back the interrupted keep of run {number}: nothing was committed, "
                    "and the experiment is still in the work tree")
        backup.unlink(missing_ok=True)
        note = ""
        if intent["created"] or intent["tracked"]:
            if ours:
                note = self._finish_targets(intent, ref)
            else:
                changes = survey(self.repo, load_snapshot(self.layout.untracked))
                git_revert(self.repo, self.bounds, changes, head=intent["head"], ref=ref,
                           only=[*intent["created"], *intent["tracked"]],
                           message=f"changes outside the scope or to readonly paths of kept "
                                   f"run {number}\n", stage="keep")
            record["attempt_ref"] = ref
        assert head is not None
        self._head = head
        record.update({"commit": self.repo.short(head), "committed": committed})
        finished.append(self._append_record(record, intent["untracked_after"]))
        return f"finished the interrupted keep of run {number}{note}"

    def _finish_set_aside(self, intent: dict[str, Any], number: int, *, abandon: bool
                          ) -> str:
        """Finish the set-aside before measuring run ``number`` that was interrupted: when its
        scope ref holds what it saved, remove what is left of the saved changes (unless they
        changed since); otherwise nothing had changed. Returns what was done; :class:`Refused`
        when HEAD moved since (with ``abandon``, the intent record is set aside)."""
        ref = intent["ref"]
        stopped = self._not_to_finish(intent, self._ours(ref, intent), abandon,
                                      f"set-aside before run {number}",
                                      f"the changes are saved at {ref}")
        if stopped:
            return stopped
        note = self._finish_targets(intent, ref)
        self.layout.intent.unlink()
        return (f"finished setting aside the changes outside the scope or to readonly files "
                f"before run {number}: saved at {ref} (see them: git show {ref}){note}")

    def _not_to_finish(self, intent: dict[str, Any], ours: bool, abandon: bool, what: str,
                       saved: str) -> str | None:
        """For an interrupted revert or set-aside (``what``, e.g. ``revert of run 4``): what
        was done instead of finishing it, or None when it is to be finished. Rolled back when
        its ref does not hold its attempt (``ours`` false: nothing had changed); set aside with
        ``abandon`` when HEAD moved since, else :class:`Refused` naming where the changes are
        (``saved``)."""
        if not ours:
            self.layout.intent.unlink()
            return f"rolled back the interrupted {what}: nothing had changed"
        if self.repo.head() != intent["head"]:
            if not abandon:
                raise Refused(f"HEAD moved since the {what} was interrupted; {saved} (git "
                              "autoresearch doctor --fix sets the interrupted operation aside)")
            self._set_intent_aside()
            return f"set aside the interrupted {what} (HEAD had moved)"
        return None

    def _set_intent_aside(self) -> None:
        aside = self.layout.intent.with_name(f"intent.abandoned.{time.time_ns()}.json")
        os.replace(self.layout.intent, aside)

def run_payload(data: Mapping[str, Any]) -> dict[str, Any]:
    """A run as the hook contract shows it: run, status, metric, description, asi."""
    metric = data.get("metric")
    if data.get("status") == "crash":
        metric = None
    return {"run": data.get("run"), "status": data.get("status"), "metric": metric,
            "description": data.get("description"), "asi": data.get("asi") or {}}
