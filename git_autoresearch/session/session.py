"""The session: its files, its configuration, its ledger, and the decisions of the loop.

No click here: functions take plain values, return data, and raise the errors of
:mod:`git_autoresearch.runtime.errors`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .. import ledger as ledger_mod
from ..git import GitError, Repo
from ..git.repo import recording_locks
from ..history.experiment import Changes, load_snapshot, survey, unmerged_problem
from ..history.refs import attempts_prefix, session_branch, state_ref, worker_branch
from ..history.refs import namespace as ref_namespace
from ..ledger import Ledger, Segment, now_ms
from ..ledger.cache import cache_path, parse_cached, read_cached
from ..ledger.jsontext import is_whole
from ..record import intents
from ..runtime.atomic import WriteFailed, check_writable
from ..runtime.errors import Refused, UsageError
from ..runtime.scope import AUTO, Boundaries
from .config import (
    Config,
    describe_changes,
    file_hash,
    hook_timeout_seconds,
    lock_wait_seconds,
    parse_toml,
)
from .layout import Layout
from .lock import SessionLock
from .shared import current as current_worker
from .shared import joined_workers, relink, reservations, reserve, run_by_joined, shared_dir

if TYPE_CHECKING:
    from ..git.facts import CommitFacts
    from ..measure.samples import Measurement
    from ..record.intents import Intent

T = TypeVar("T")

# How long a recording command waits for a lock file of git's to go before refusing.
GIT_LOCK_WAIT_SECONDS = 1.0

def _configuration(layout: Layout, data: bytes, book: Ledger, *, strict: bool
                   ) -> tuple[Config, str | None]:
    """The configuration of ``config.toml`` (``data``), and why it could not be used (None: it
    could). Unless ``strict``, an invalid file is read with the values the ledger's header
    recorded instead; :class:`Refused` when it must be refused."""
    header = book.config_header or {}
    recorded = header.get("config")
    try:
        if header.get("config_hash") == file_hash(data) and isinstance(recorded, dict):
            # The header holds the very values the file was written from: no TOML to parse.
            return Config.from_mapping(recorded, source=str(layout.config)), None
        return Config.from_mapping(parse_toml(data, source=str(layout.config)),
                                   source=str(layout.config)), None
    except UsageError as exc:
        if strict or not isinstance(recorded, dict):
            raise Refused(f"{exc.message}; git autoresearch resume restores it from the "
                          "state ref") from None
        # To read the runs, the values the segment began with will do.
        return (Config.from_mapping(recorded, source="the ledger's configuration header"),
                f"{exc.message}; read with the configuration the segment began with (git "
                "autoresearch resume restores the file from the state ref)")


class HeaderLost(Refused):
    """The ledger lost the configuration header of the current segment, which the state ref
    holds (:meth:`Session.check_config`): the configuration looks edited, and is not."""


class Session:
    """An open session: repository, configuration (checked against the ledger) and ledger."""

    def __init__(self, repo: Repo, cfg: Config, cfg_bytes: bytes, book: Ledger) -> None:
        self.repo = repo
        self.layout = Layout(repo)
        self.config = cfg
        self.config_bytes = cfg_bytes
        self._ledger: Ledger | None = book
        self._bounds: Boundaries | None = None
        self._head: str | None = None
        # What opening the session found (an invalid configuration, unreadable ledger lines, a
        # foreign session read in place); set while opening, never added to afterwards: every
        # later step returns its own warnings.
        self.warnings: list[str] = []
        self.read_only = False
        self.ledger_path = self.layout.ledger
        self.trailer_branch: str | None = None
        self.seen_version: str | None = None
        # Why config.toml could not be used (read with the recorded configuration instead).
        self.invalid_config: str | None = None
        # The highest run number the attempt refs and the branch's trailers name (None: not
        # asked of git yet in this command; runnumbers.next_run asks).
        self.git_runs: int | None = None
        self.alone_checked = False  # (check_not_joined_elsewhere passed in this command)
        from ..history.trailers import BranchRuns

        self.branch_runs = BranchRuns(self.layout.branch_runs)  # saved once a run is recorded
        # The limit counts every run of the segment, the baseline too (pi-autoresearch's
        # maxIterations: extensions/pi-autoresearch/index.ts:1713), not the runs after it.
        self.limit_counts_baseline = False
        # The worker this work tree is (None: a session without workers), and how deep the
        # shared lock is held by this process (:meth:`shared`).
        self.worker = current_worker(repo)
        # Whether every read of the ledger merges the runs of the clones that joined through a
        # remote (their ledger refs fetched here), as a clone that joined always does: set by
        # reader.open_for_reading, so that a view read again (the dashboard) reads them too.
        self.reads_others = False
        self._shared_depth = 0
        # The segment this command began under: a run measured under it is never recorded
        # into a later one (another worker's start --new-segment meanwhile).
        self.began_in = book.current.index
        # Hook links already said to point at untracked files: said once per command.
        self._links_told: set[str] = set()
        self._facts: CommitFacts | None = None  # (:meth:`commit_fact`)

    @property
    def bounds(self) -> Boundaries:
        """Scope, protected and readonly paths, with the files the configured commands name
        (:func:`command_files`, found once, on first use) readonly, and a path of the three
        through a linked folder followed to where it leads (:func:`linked_paths`; the link
        itself readonly or protected too, never in the scope)."""
        if self._bounds is None:
            cfg = self.config
            from .command_files import command_files, linked_paths

            head = self.known_head or self.repo.head()
            scripts = [] if self.read_only else command_files(self.repo, cfg, head)
            scope, readonly, protected = list(cfg.scope), list(cfg.readonly), list(cfg.protected)
            if head is not None and not self.read_only:
                scope += linked_paths(self.repo, head, cfg.scope, links=False)
                readonly += linked_paths(self.repo, head, cfg.readonly)
                protected += linked_paths(self.repo, head, cfg.protected)
            self._bounds = Boundaries(scope, protected, readonly, scripts)
        return self._bounds

    def readonly_changed(self, changes: Changes | None = None) -> list[str]:
        """Readonly paths whose work tree or index differ from HEAD (new files included),
        sorted; ``changes`` saves surveying the work tree again."""
        if changes is None:
            changes = self.changes()
        return sorted(p for p in changes.changed() if self.bounds.is_readonly(p))

    def changes(self) -> Changes:
        """What the work tree and index change from HEAD now, against the snapshot of the files
        that were untracked before the experiment (``experiment.survey``); the files this
        command writes its output to there are said once, in :attr:`warnings`."""
        changes = survey(self.repo, load_snapshot(self.layout.untracked))
        if changes.outputs:
            said = (f"{' and '.join(changes.outputs)}, where this command writes its output, "
                    f"{'are' if len(changes.outputs) > 1 else 'is'} in the work tree: "
                    f"{'they are' if len(changes.outputs) > 1 else 'it is'} no part of the "
                    "experiment (never committed, set aside or reverted); write the output "
                    "outside the work tree, or under .auto/")
            if said not in self.warnings:
                self.warnings.append(said)
        return changes

    def moved_head(self, commit: str, run: int | None = None) -> None:
        """HEAD is ``commit`` now: a keep committed it (``run``: the number its
        ``Autoresearch-Run`` trailer names, on the session branch's tip, which was HEAD)."""
        if run is not None:
            self.branch_runs.kept(self.known_head, commit, run)
            # (the keep read its trailers back as written: the next command need not ask)
            self._kept_at(commit, lambda: run)
        self._head = commit

    @property
    def known_head(self) -> str | None:
        """HEAD's commit id as known without asking git (None when not known yet)."""
        return self._head or self.repo.head_at_discovery

    def commit_fact(self, commit: str, question: str, read: Callable[[], T]) -> T:
        """``read()``'s answer to ``question`` about ``commit`` (HEAD's), kept in the scratch
        folder for the commands after this one (:class:`git.facts.CommitFacts`)."""
        if self._facts is None or self._facts.commit != commit:
            from .. import __version__
            from ..git.facts import CommitFacts

            self._facts = CommitFacts(self.layout.head_facts, commit, __version__)
        return self._facts.answer(question, read)

    def _kept_at(self, commit: str, read: Callable[[], int | None]) -> int | None:
        """The run this session's keep made ``commit`` for (``history.trailers.kept_at``),
        kept for the commands after this one, or ``read()``."""
        return self.commit_fact(commit, "kept_at " + self.config.session_id, read)

    @property
    def branch(self) -> str:
        """The branch this work tree records on: the session branch, or a worker's own."""
        if self.worker is not None:
            return worker_branch(self.config.session_id, self.worker.name)
        return session_branch(self.config.session_id)

    def head(self) -> str:
        """HEAD's commit id, asked of git once and then kept up to date by :meth:`moved_head`."""
        if self._head is None:
            head = self.repo.head_at_discovery or self.repo.head()
            if head is None:
                raise Refused("HEAD has no commit yet; commit the project first")
            self._head = head
        return self._head

    # --- opening ----------------------------------------------------------------------------

    @classmethod
    def open(cls, cwd: str | os.PathLike[str] | None = None, *,
             check_config: bool = True) -> Session:
        """Open the session of the work tree containing ``cwd``, wherever HEAD is
        (:func:`session.branches.open_on_branch` also checks that it is on the session
        branch, as a recording command must).

        Refuses (exit 3) when there is no session, or the configuration differs from the one
        the ledger recorded (naming the changed keys).
        """
        repo = Repo.discover(cwd)
        layout = Layout(repo)
        data = layout.read_config_bytes()
        seen = ledger_mod.version(layout.ledger)  # taken first: a later change always shows
        raw = ledger_mod.read_bytes(layout.ledger)
        book = parse_cached(raw, cache_path(repo.scratch, layout.ledger))
        cfg, invalid = _configuration(layout, data, book, strict=check_config)
        lock_wait_seconds()
        hook_timeout_seconds()  # a bad setting is refused before anything runs
        session = cls(repo, cfg, data, book)
        if session.remote:  # a clone that joined through a remote reads every worker's runs
            session.ledger = session.read_ledger(raw, book)
        session.seen_version = seen
        relink(repo, session.worker, session.layout.auto)
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
        return session

    def check_config(self) -> None:
        """Refuse when ``config.toml`` is not the file the ledger's last header recorded."""
        header = self.ledger.config_header
        if header is None or "config_hash" not in header:

            if self.layout.start_intent.exists():
                raise Refused(f"the start of session {self.config.session_id} was interrupted: "
                              "git autoresearch resume finishes it (git autoresearch start "
                              "--new-segment finishes it and measures the baseline)")
            if header is not None and self.ledger.runs:
                # (pi-autoresearch's init_experiment writes one: a segment is open, not lost)
                raise Refused(f"the ledger {self.layout.ledger} ends in a segment opened by a "
                              "configuration line another tool wrote (pi-autoresearch's "
                              "init_experiment?), without this tool's configuration; git "
                              "autoresearch start --new-segment opens one under "
                              f"{AUTO}/config.toml after it")
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
        if self._header_lost(file_hash(self.config_bytes)):
            raise HeaderLost(f"the ledger {self.layout.ledger} lost the configuration header of "
                          f"the current segment, which {state_ref(self.config.session_id)} "
                          "holds; git autoresearch doctor --fix puts it back")
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

    def _header_lost(self, config_hash: str) -> bool:
        """Whether the state ref's ledger holds a configuration header of ``config_hash`` (the
        configuration as it is) that the ledger lacks: the ledger lost the header of the
        segment this configuration began, and the configuration was not edited. Read only
        when the configuration differs from the ledger's last header."""
        from ..history.state_ref import saved_ledger

        saved = saved_ledger(self.repo, self.config.session_id)
        held = set(self.layout.ledger.read_bytes().split(b"\n")) if saved else set()
        for line in saved.split(b"\n"):
            if b'"config"' in line and line not in held:
                book = ledger_mod.parse(line)
                if book.config_header is not None \
                        and book.config_header.get("config_hash") == config_hash:
                    return True
        return False

    @property
    def namespace(self) -> str:
        """Where the session's own refs live: ``refs/autoresearch/<id>``."""
        return ref_namespace(self.config.session_id)

    def check_recordable(self) -> None:
        """Refuse while a merge, rebase or the like is in progress, and when the session
        folder is a symbolic link (:meth:`Layout.linked`); and (exit 2) when this command
        writes its output into a tracked file of the work tree (``run > run.log``), which a
        run would commit or revert (an untracked one is left alone: ``Changes.outputs``)."""
        linked = self.layout.linked()
        if linked:
            raise Refused(linked)
        op = self.repo.operation_in_progress()
        if op:
            raise Refused(f"a {op} is in progress; finish or abort it first")
        from ..history.experiment import own_outputs

        outputs = own_outputs(self.repo.top)
        tracked = self.repo.indexed(outputs) if outputs else []
        if tracked:
            raise UsageError(f"{' and '.join(tracked)}, where this command writes its output, "
                             f"{'are tracked files' if len(tracked) > 1 else 'is a tracked file'}"
                             " of the work tree, which a run would commit or revert: write the "
                             "output outside the work tree, or under .auto/; nothing was "
                             "measured or changed")

    def kept_lines(self) -> set[int] | None:
        """The numbers of the kept runs whose lines the session's ledger file holds; None in
        a clone that joined through a remote (its ledger merges the other workers' runs)."""
        if self.remote is not None or self.trailer_branch is not None:
            return None
        return {run.number for run in self.ledger.runs if run.status == "keep"}

    def check_kept_lines(self, *, head: bool = False) -> None:
        """Refuse (exit 3) when the ledger lost the line of a kept run: one the state ref was
        last mirrored with, or, with ``head``, the run HEAD's trailers record as this
        session's keep (one git call, or none when the command before asked it of the same
        commit: :meth:`commit_fact`). Deciding on such a ledger compares with the wrong
        incumbent, and mirroring it would lose the line from the state ref too."""
        from ..history.state_ref import lost_keeps_text, mirrored_keeps

        kept = self.kept_lines()
        if kept is None:
            return
        lost = mirrored_keeps(self.repo, self.config.session_id, kept)
        ref = state_ref(self.config.session_id)
        if not lost and head:
            from ..history.trailers import kept_at

            commit = self.head()
            number = self._kept_at(commit,
                                   lambda: kept_at(self.repo, commit, self.config.session_id))
            # (a segment that kept HEAD's commit, its baseline measured there, decides
            # against it: no line lost can make it compare with the wrong incumbent)
            if number is not None and self.ledger.find(number) is None \
                    and not any(run.made(commit) for run in self.segment.kept):
                lost, ref = [number], f"HEAD's commit ({self.repo.short(commit)})"
                raise Refused(lost_keeps_text(self.layout.ledger, lost, ref)
                              + ", or, when doctor says the keep needs a person, git "
                              "autoresearch start --new-segment measures HEAD as a new "
                              "baseline; nothing was measured or changed")
        if lost:
            raise Refused(lost_keeps_text(self.layout.ledger, lost, ref)
                          + "; nothing was measured or changed")

    def check_git_locks(self) -> None:
        """Refuse while git's lock file of the index, HEAD or the session branch exists (a file
        check, before anything changes). A lock that goes within
        :data:`GIT_LOCK_WAIT_SECONDS` was a git process at work (``git status`` refreshing the
        index, a concurrent command); one that stays was left behind, or is held by a git
        process that is still running (``git commit`` waiting for its editor)."""
        deadline = time.monotonic() + GIT_LOCK_WAIT_SECONDS
        while True:
            locks = self.git_locks()
            if not locks or time.monotonic() >= deadline:
                break
            time.sleep(0.02)
        if not locks:
            return
        lock = locks[0]
        intent = self.interrupted()
        if intent is not None:
            raise Refused(f"git's lock file {lock} exists, so the interrupted "
                          f"{intent.op} of run {intent.run} cannot be finished: "
                          "another git process is running here, or one was killed and left it; "
                          f"once no git process is running, remove it (rm {lock}); git "
                          "autoresearch resume then finishes the run")
        raise Refused(f"git's lock file {lock} exists: another git process is running here, or "
                      "one was killed and left it; once no git process is running, remove it "
                      f"(rm {lock}) and run the command again")

    @contextmanager
    def lock(self, what: str, *, header_lost_ok: bool = False) -> Iterator[None]:
        """Hold the session lock. Once it is held, the ledger and HEAD are read again if another
        command recorded a run while this one waited (HEAD moving under us otherwise is caught
        by the compare-and-swap of the keep commit), and the configuration checked against
        the ledger's (:meth:`check_config`; with ``header_lost_ok``, for doctor, which puts
        it back, a ledger that lost the current segment's header passes). Recording commands
        take it through ``recovery.locked``, which also finishes an interrupted keep or
        revert."""
        with SessionLock(self.repo.scratch, what):
            self.repo.forget_refs()  # read before the wait: others may have written since
            if self.seen_version is None or self.version() != self.seen_version:
                # Another command recorded a run meanwhile: HEAD may have moved too.
                self.reload()
                self._head = None
                self.repo.head_at_discovery = self.repo.head_tree_at_discovery = None
                self.began_in = self.ledger.current.index
            if self.ledger.config_header is not None:
                try:
                    self.check_config()
                except HeaderLost:
                    if not header_lost_ok:
                        raise
            yield

    @contextmanager
    def shared(self, what: str) -> Iterator[None]:
        """Hold the lock every worktree of the session shares
        (``<common git dir>/autoresearch-sessions/<id>/lock``) while the ledger, the session
        branch or the state ref change: run numbers, keeps, ledger lines and mirrors of all
        workers one at a time. Taken again
        by the same process, it is already held. Once taken, the ledger is read again if
        another worker recorded meanwhile."""
        if self._shared_depth:
            self._shared_depth += 1
            try:
                yield
            finally:
                self._shared_depth -= 1
            return
        with SessionLock(shared_dir(self.repo, self.config.session_id), what):
            # Other workers may have written refs while this one waited (none of the
            # set-asides of the run it holds, which only it writes).
            self.repo.forget_refs(others=True)
            if self.trailer_branch is None and self.seen_version is not None \
                    and self.version() != self.seen_version:
                self.reload()
            self._shared_depth = 1
            try:
                yield
            finally:
                self._shared_depth = 0

    @property
    def worker_name(self) -> str:
        """This work tree's worker name (``main`` when it is no worker's)."""
        return self.worker.name if self.worker else "main"

    @property
    def remote(self) -> str | None:
        """The remote through which this clone joined the session (``worker join``), or None."""
        return self.worker.remote if self.worker else None

    def reserve_run(self) -> int:
        """The number of the run this work tree measures next, held for it so that no other
        worker takes it until it is recorded (:func:`session.shared.reserve`); in a clone
        that joined through a remote, taken there first
        (:func:`history.remote_ledger.claim_run`)."""
        with self.shared("reserve a run number"):
            number = self.next_run()
            self.check_not_joined_elsewhere()  # (a joined clone: no check)
            held = reservations(self.repo, self.config.session_id).get(self.worker_name)
            if held != number and self.remote is not None:
                from ..history.remote_ledger import claim_run

                number = claim_run(self.repo, self.remote, self.config.session_id, number,
                                   self.head(), self.worker_name)
            if held != number:
                reserve(self.repo, self.config.session_id, self.worker_name, number)
            return number

    def joined_elsewhere(self) -> tuple[str, str] | None:
        """In a work tree that did not join the session through a remote, while clones that
        did record its runs (their ledger refs were fetched here, by ``pull``): who they are
        (``session s1 is run by clones that joined it through a remote (workers ma, mb)``) and
        the command that joins this one (``git autoresearch worker join origin s1``); None
        otherwise. Asks git nothing after :meth:`next_run` (the session's refs are read once)."""
        if self.remote is not None:
            return None
        sid = self.config.session_id
        workers = joined_workers(self.repo, sid)
        if not workers:
            return None
        return (run_by_joined(sid, workers),
                f"git autoresearch worker join {self.repo.likely_remote() or '<remote>'} {sid}")

    def check_not_joined_elsewhere(self) -> None:
        """Refuse (exit 3) a run in a work tree that did not join the session through a
        remote while clones that did record its runs (:meth:`joined_elsewhere`): its run
        number would be taken on no remote and its keep would reach none of them (their next
        run would meet a keep they hold no line of)."""
        if self.alone_checked:
            return
        found = self.joined_elsewhere()
        if found is None:
            self.alone_checked = True
            return
        who, join = found
        raise Refused(f"{who}: a run here would take its number on no remote and its keep "
                      f"would reach none of them; join it to run here ({join}); nothing was "
                      "measured or recorded")

    @property
    def ledger(self) -> Ledger:
        """The session's runs: read on open, and again on first use after :meth:`reload` (a
        command that records its run and reads no more never reads the ledger twice)."""
        if self._ledger is None:
            if self.trailer_branch is not None:
                from ..history.trailers import ledger_from_trailers

                self.seen_version = None
                self._ledger = ledger_from_trailers(self.repo, self.trailer_branch)
            else:
                self.seen_version = self.version()  # taken first: a later change always shows
                self._ledger = self.read_ledger()
        return self._ledger

    @ledger.setter
    def ledger(self, book: Ledger) -> None:
        self._ledger = book

    def reload(self) -> None:
        """Forget the runs read: the ledger (or the branch's trailers) is read again when
        :attr:`ledger` is next used."""
        self.git_runs = None
        self._ledger = None

    def append(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Append ``records`` to the session's ledger file (:func:`ledger.append`: one write
        and fsync, :class:`WriteFailed` when it cannot be written) and read them on top of the
        runs read (:func:`ledger.carried_on`) when the file held just what was read before;
        otherwise the ledger is read again on next use, as after :meth:`reload`. So a command
        that records a run and then reads its runs again (``run`` taking one more sample of
        the incumbent) reads a long ledger once."""
        written = ledger_mod.append(self.layout.ledger, records)
        book = self._ledger
        self.reload()
        if written is None or book is None or self.trailer_branch is not None \
                or self.remote is not None or self.reads_others \
                or written[0] != self.seen_version:
            return
        carried = ledger_mod.carried_on(book, written[2])
        if carried is not None:
            self._ledger, self.seen_version = carried, written[1]

    def read_ledger(self, data: bytes | None = None, book: Ledger | None = None) -> Ledger:
        """The ledger file; in a clone that joined through a remote (or opened to read it,
        :attr:`reads_others`), with the runs of the other workers' ledger refs merged in
        (:func:`history.remote_ledger.read_merged`). ``data`` and ``book``: the file's bytes and
        those bytes read, when the caller has them."""
        if self.remote is None and not self.reads_others:
            return book if book is not None else \
                read_cached(self.ledger_path, cache_path(self.repo.scratch, self.ledger_path))
        from ..history.remote_ledger import read_merged

        return read_merged(self.repo, self.config.session_id, self.ledger_path,
                           self.worker_name, data=data, book=book)

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
        """Runs of the current segment after its baseline (every run of it, for a limit that
        counts the baseline: :attr:`limit_counts_baseline`)."""
        seg = self.segment
        if self.limit_counts_baseline:
            return len(seg.runs)
        base = seg.baseline
        return len([r for r in seg.runs if base is None or r.number != base.number])

    def limit_reached(self) -> bool:
        limit = self.config.max_experiments
        return limit is not None and self.experiments_in_segment() >= limit

    def time_left(self) -> float | None:
        """Seconds of ``max_duration`` left in the current segment (0: spent); None: no
        budget (:func:`decide.budget.time_left`)."""
        from ..decide.budget import time_left

        return time_left(self.config, self.segment, now_ms())

    # --- measuring --------------------------------------------------------------------------

    def next_run(self) -> int:
        """The next run number: after the ledger's last run, after every attempt ref, and
        after every ``Autoresearch-Run`` trailer of the session branch (since the session's
        base commit), so a ledger line that was lost or never written never makes a number
        repeat; or the number this work tree holds and no one recorded yet."""
        sid = self.config.session_id
        if self.git_runs is None:  # asked of git once per command (and after a reload)
            # One for-each-ref over the session's refs answers set_asides too; the trailers
            # of the branch are read again only when its tip moved (trailers.BranchRuns).
            prefix = attempts_prefix(sid)
            numbers = [int(n[len(prefix):]) for n in
                       self.repo.for_each_ref(prefix, within=self.namespace + "/")
                       if is_whole(n[len(prefix):])]
            branch = session_branch(sid)
            base = (self.ledger.segments[0].header or {}).get("base_commit")
            spec = f"{base}..{branch}" if isinstance(base, str) and base else branch
            tip = self.known_head if self.repo.branch_at_discovery == branch else None
            numbers.append(self.branch_runs.highest(self.repo, spec, tip))
            self.git_runs = max(numbers, default=0)
        base_number = max(self.ledger.next_run_number, self.git_runs + 1)
        held = reservations(self.repo, sid)
        own = held.pop(self.worker_name, None)
        if own is not None and own not in held.values() and (own >= base_number or (
                self.ledger.find(own, ours=True) is None
                and self.repo.resolve(f"{attempts_prefix(sid)}{own}") is None)):
            return own  # held by this work tree, and recorded by no one yet
        return max(base_number, max(held.values(), default=0) + 1)

    def check_baseline(self) -> None:
        """Refuse to measure or keep experiments against a segment whose baseline failed or was
        never measured (:meth:`baseline_problem`)."""
        problem = self.baseline_problem()
        if problem is not None:
            raise Refused(problem)

    def baseline_problem(self) -> str | None:
        """Why the current segment has no baseline to compare experiments with, and the way
        out, or None when it has one (or was started with ``--no-baseline``, so that its
        first kept run is the baseline). The way out names how to set aside an experiment in
        the work tree first, since ``start --new-segment`` refuses a dirty tree."""
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
                    f"the command, then {self.new_segment_way()}")
        if (seg.header or {}).get("no_baseline") is False:
            return ("the baseline of this segment was never measured (start was "
                    f"interrupted or refused); {self.new_segment_way()}")
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
                f"to compare with the unmodified code, {self.new_segment_way()}")

    def new_segment_way(self) -> str:
        """How to start a new segment from here: ``start --new-segment``, after setting aside
        the unrecorded experiment in the work tree (which it would refuse) when there is
        one."""
        changed = [p for p in self.changes().changed() if not self.bounds.is_protected(p)]
        if not changed:
            return "run git autoresearch start --new-segment"
        shown = ", ".join(changed[:3]) + (" ..." if len(changed) > 3 else "")
        return (f"set aside the experiment in the work tree ({shown}) with git autoresearch "
                "discard -d DESCRIPTION (it is recorded and kept at an attempt ref), then run "
                "git autoresearch start --new-segment")

    def decide(self, result: Measurement) -> str:
        """The loop's decision, the one judgement that ``measure``, ``run``, ``status`` and
        ``keep`` give: ``crash`` without a metric, ``checks_failed`` when the checks failed;
        else ``keep`` for the verdict ``better`` (or a baseline) of the rule that decided when
        measuring, and ``discard`` for any other. A metric the caller gave (no verdict) is
        ``keep`` when it :meth:`beats_best`."""
        status = result.status
        if status:
            return status
        verdict = (result.decision or {}).get("verdict")
        if verdict is not None:  # the rule decided when measuring
            return "keep" if verdict in ("better", "baseline") else "discard"
        assert result.metric is not None
        return "keep" if self.beats_best(result.metric) else "discard"

    def beats_best(self, metric: float) -> bool:
        """Whether one number, ``metric``, beats the segment's best as the strict rule judges
        it (:func:`decide.rules.strict`, without importing the statistics): strictly, and by more
        than ``min_effect`` of the best's magnitude; True when nothing is kept yet."""
        best = self.segment.best
        if best is None or best.metric is None:
            return True
        bar = (self.config.min_effect or 0.0) * abs(best.metric)
        return self.segment.better(metric, best.metric) and abs(metric - best.metric) > bar

    def unmerged_problem(self, changes: Changes | None = None) -> str | None:
        """:func:`history.experiment.unmerged_problem` of the work tree (``changes`` saves
        surveying it)."""
        return unmerged_problem((self.changes() if changes is None else changes).unmerged)

    def check_merged(self, changes: Changes) -> None:
        """Refuse (exit 3) while ``changes`` holds paths git left unmerged
        (:meth:`unmerged_problem`), before anything is measured or recorded."""
        problem = self.unmerged_problem(changes)
        if problem:
            raise Refused(f"{problem}; nothing was measured or recorded")

    def preflight(self) -> None:
        """Refuse (exit 3) before anything changes when the ledger, the session folder, the
        scratch folder or git's own folders (the index, HEAD, refs and objects: a repository
        of another user, a read-only mount) cannot be written (a read-only filesystem, a full
        disk)."""
        try:
            check_writable(self.layout.auto, self.layout.ledger)
            check_writable(self.repo.scratch)
            for folder in self.repo.own_folders:
                check_writable(folder)
        except WriteFailed as exc:
            raise Refused(f"{exc.message}; nothing was changed or recorded") from None

    def mirror_state(self, message: str) -> list[str]:
        """Mirror the session files on the state ref (``message``: the commit's subject);
        returns warnings (a failure is a warning, not an error), none when it worked."""
        from ..history.state_ref import LedgerShrank, mirror, unkept_links

        try:
            with self.shared("mirror the session files"):
                _, skipped = mirror(self.repo, self.layout.auto, self.config.session_id,
                                    message, kept=self.kept_lines())
            unkept = [link for link in unkept_links(self.repo, self.layout.auto)
                      if link not in self._links_told]
            self._links_told.update(unkept)
        except (LedgerShrank, WriteFailed, GitError, OSError, UnicodeError, Refused) as exc:
            return [f"the session files were not mirrored on the state ref: {exc}"]
        warnings = [f"hook link {link} points at a file git does not track: the state ref "
                    "keeps the link, not the file (commit it, or make the hook a file)"
                    for link in unkept]
        if skipped:
            warnings.append("not mirrored on the state ref (rename them): "
                            + ", ".join(repr(name) for name in skipped))
        return warnings

    # --- the journal ---------------------------------------------------------------------------

    def interrupted(self) -> Intent | None:
        """The intent record of a keep, revert or set-aside that did not finish, if any."""
        return intents.read(self.layout.intent)

    def git_locks(self) -> list[Path]:
        """git's lock files that a keep, revert or measurement of this session would meet."""
        return recording_locks(self.repo, session_branch(self.config.session_id),
                                         self.namespace)

