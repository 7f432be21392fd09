"""Measurement slots: how many measurements run at a time on this machine, across every
worktree of a session.

Agents edit and think in parallel, but two benchmarks running at once disturb each other's
timings. Everything that runs the user's measured commands (the samples, the checks, the
incumbent's re-measure, an audit's or a finalize's measuring; never the hooks) first takes
one of ``measure_slots`` slots: an exclusive ``flock`` on ``slots/<k>`` (``k`` from 1) in the
session's shared folder (:func:`session.shared.shared_dir`, in the common git directory, so every
linked worktree sees the same slots). The kernel drops a ``flock`` when its holder dies, so
a slot held by a killed process is free again at once. The holder writes who it is into its
slot file, one JSON line (``pid``, ``worker``, ``host``, ``what``, ``since`` in milliseconds
since the epoch), so that a waiting command can say whom it waits for and ``status`` can say
who measures. A command waits as long as it takes, saying so once on stderr; a signal while
it waits ends the command as any other signal does (:mod:`git_autoresearch.runtime.signals`).

With ``pin_cpus``, slot ``k`` of ``n`` runs the measured commands on its share of the CPUs
this process may use (``os.sched_setaffinity``, inherited by the commands it starts; put
back when the slot is released); where the platform has no affinity call, a warning once and
no pinning.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..git import Repo
from ..ledger.jsontext import is_whole
from ..runtime import signals
from ..session.config import Config
from ..session.shared import shared_dir, worker_name
from .runner import (
    end_process_group,
    group_alive,
    group_members,
    handed_down,
    host_name,
    process_alive,
    process_start,
)

SLOTS_DIR = "slots"
# Polling for a free slot: from this delay, doubling up to the next, in seconds.
FIRST_DELAY, LAST_DELAY = 0.01, 0.2

_pin_warned = False


@dataclass(frozen=True)
class Slot:
    """A slot held: its ``index`` (from 1) of ``of`` slots, and the ``cpus`` its commands are
    pinned to (None: not pinned)."""

    index: int
    of: int
    cpus: tuple[int, ...] | None = None

    def record(self) -> dict[str, Any] | None:
        """What a measurement records of its slot: ``{"slot": k, "of": n}``, and ``cpus`` (a
        list of CPU numbers) when pinned; None for the one slot of a session that did not
        ask for more, unpinned (a record stays as it was before there were slots)."""
        if self.of == 1 and self.cpus is None:
            return None
        found: dict[str, Any] = {"slot": self.index, "of": self.of}
        if self.cpus is not None:
            found["cpus"] = list(self.cpus)
        return found


def slots_dir(repo: Repo, session_id: str) -> Path:
    """``<shared folder>/slots``: the slot files of session ``session_id``."""
    return shared_dir(repo, session_id) / SLOTS_DIR


def cpu_share(cpus: list[int], index: int, of: int) -> tuple[int, ...]:
    """The CPUs of slot ``index`` (from 1) of ``of``: ``cpus`` cut into ``of`` runs as even
    as whole CPUs allow (the first slots get the remainder); with fewer CPUs than slots, one
    CPU each, shared round the list."""
    if not cpus:
        return ()
    if len(cpus) < of:
        return (cpus[(index - 1) % len(cpus)],)
    start, end = (index - 1) * len(cpus) // of, index * len(cpus) // of
    return tuple(cpus[start:end])


def _holder(path: Path) -> dict[str, Any] | None:
    """The holder a slot file names (its JSON line), or None when it names none."""
    try:
        data = json.loads(path.read_bytes() or b"null")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def describe_holder(holder: dict[str, Any] | None) -> str:
    """``pid 4242 (worker w1): measure run 7``, or ``holder unknown``."""
    if holder is None:
        return "holder unknown"
    what = f": {holder['what']}" if holder.get("what") else ""
    return f"pid {holder.get('pid')} (worker {holder.get('worker')}){what}"


def held(repo: Repo, session_id: str) -> dict[int, dict[str, Any]]:
    """The slots held now, by index: what each holder wrote (``pid``, ``worker``, ``host``,
    ``what``, ``since``; ``{}`` when it wrote nothing yet). A slot is held when a shared lock
    on its file cannot be taken; taking one for a moment never blocks a holder (who polls)."""
    folder = slots_dir(repo, session_id)
    found: dict[int, dict[str, Any]] = {}
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return found
    for name in names:
        if not is_whole(name):
            continue
        try:
            fd = os.open(folder / name, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BlockingIOError:
            found[int(name)] = _holder(folder / name) or {}
        finally:
            os.close(fd)
    return found


def left_slots(repo: Repo, session_id: str) -> list[tuple[str, int | None]]:
    """A sentence for each slot held only by processes a measurement left running: the
    measured command's own process group, its command killed outright (:func:`orphaned`), or
    processes that left the group (:func:`left_running`); who holds it, and what clears it
    (the next measurement ends the group, or takes the slot back; ending the processes frees
    it too). Each with the process group the next measurement would end (None: processes it
    leaves alone). For ``status`` and ``doctor``."""
    folder = slots_dir(repo, session_id)
    out: list[tuple[str, int | None]] = []
    for index, holder in sorted(held(repo, session_id).items()):
        found = orphaned(holder or None, folder / str(index))
        if found is not None:
            group, members = found
            out.append((f"measurement slot {index} is held by "
                        f"{_orphan_text(holder, group, members)}: the next measurement ends it "
                        f"(or end it now: kill -- -{group})", group))
            continue
        left = left_running(holder or None, folder / str(index))
        if left:
            pids = " ".join(str(pid) for pid, _ in left)
            out.append((f"measurement slot {index} is held by {describe_left(left)}, left "
                        f"running by an earlier measurement ({holder.get('what')}), not by a "
                        "git-autoresearch command: the next measurement takes the slot back; "
                        f"end the process if it disturbs the timings (kill {pids})", None))
    return out


def _try(fds: list[int]) -> int | None:
    """The index (from 1) of the first slot whose lock could be taken now, or None."""
    for index, fd in enumerate(fds, start=1):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return index
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
    return None


def _say(message: str) -> None:
    sys.stderr.write(f"{message}\n")
    sys.stderr.flush()


@contextmanager
def measuring(repo: Repo, cfg: Config, what: str) -> Iterator[Slot]:
    """Hold a measurement slot of session ``cfg.session_id`` for the block: the first free
    one of ``cfg.slots``, waiting as long as it takes (said once on stderr, naming the
    holders); with ``cfg.pin_cpus``, this process (and so the commands it starts) is pinned to
    the slot's CPUs until the block ends. ``what`` names the measurement in the slot file
    (``measure run 7``). A signal while waiting raises
    :class:`~git_autoresearch.runtime.signals.Interrupted`; the slot is released however the block
    ends (and by the kernel when the process dies). Raises ``OSError`` when the shared folder
    cannot be written."""
    folder = slots_dir(repo, cfg.session_id)
    folder.mkdir(parents=True, exist_ok=True)
    count = cfg.slots
    fds: list[int] = []
    try:
        for k in range(1, count + 1):
            fds.append(os.open(folder / str(k), os.O_RDWR | os.O_CREAT, 0o644))
        index = _wait(folder, fds, what)
        fd = fds[index - 1]
        for other in fds:
            if other != fd:
                os.close(other)
        fds = [fd]
        holder = {"pid": os.getpid(), "start": process_start(os.getpid()),
                  "worker": worker_name(repo), "host": host_name(), "what": what,
                  "since": int(time.time() * 1000)}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(holder) + "\n").encode(), 0)
        except OSError:
            pass  # a full disk: the slot holds all the same, only its holder goes unnamed
        written = [len(json.dumps(holder)) + 1]

        def note_group(pgid: int) -> None:
            # Written over the line in place, never shorter (padded with blanks, which JSON
            # takes): a reader never finds the file empty or ending in an older line's tail.
            line = json.dumps({**holder, "group": pgid}).ljust(written[0] - 1) + "\n"
            written[0] = len(line)
            try:
                os.pwrite(fd, line.encode(), 0)
            except OSError:
                pass

        with _pinned(index, count, bool(cfg.pin_cpus)) as cpus, handed_down(fd, note_group):
            yield Slot(index, count, cpus)
    finally:
        # The holder's line stays: only the lock says whether a slot is held (and emptying
        # the file would free a page that a full disk's next write takes by surprise).
        for fd in fds:
            os.close(fd)  # closing the last descriptor of the file releases the flock


def _wait(folder: Path, fds: list[int], what: str) -> int:
    """The index of a slot taken, polling until one is free; the first wait is said on
    stderr with the holders."""
    delay, said = FIRST_DELAY, False
    while True:
        signals.check()
        index = _try(fds)
        if index is not None:
            return index
        taken = _take_back(folder, fds)
        if taken is not None:
            return taken
        if not said:
            holders = "; ".join(f"slot {k}: {describe_holder(_holder(folder / str(k)))}"
                                for k in range(1, len(fds) + 1))
            _say(f"waiting for a measurement slot for {what} ({len(fds)} in use: {holders})")
            said = True
        time.sleep(delay)
        delay = min(delay * 2, LAST_DELAY)


def _here(holder: dict[str, Any] | None) -> bool:
    """Whether a slot file's ``holder`` line names a process of this host (one whose
    liveness can be asked here)."""
    return holder is not None and isinstance(holder.get("pid"), int) \
        and holder.get("host") in (None, host_name())


def _holder_alive(holder: dict[str, Any]) -> bool:
    """Whether the process a slot file's ``holder`` line names still runs: its pid, with the
    same start time when the line has one (a pid may be reused)."""
    pid = holder["pid"]
    start = holder.get("start")
    return process_alive(pid) and (not isinstance(start, int)
                                   or process_start(pid) in (None, start))


def orphaned(holder: dict[str, Any] | None, path: Path
             ) -> tuple[int, list[tuple[int, str]]] | None:
    """The process group of the measurement that took slot file ``path`` (``holder``: its
    line), still running and holding the file though the command that took the slot is gone
    (killed outright: SIGKILL, which nothing can catch): ``(group, members holding the file)``,
    each member ``(pid, command line)``. None when that command runs, the slot is another
    host's, the group is gone or holds nothing, or ``/proc`` cannot be read."""
    if holder is None or not _here(holder):
        return None
    group = holder.get("group")
    if not isinstance(group, int) or _holder_alive(holder) or not group_alive(group):
        return None
    members = group_members(group) or {}
    holding = [(pid, command) for pid, command in fd_holders(path)
               if pid in members and not members[pid]]
    return (group, holding) if holding else None


def _orphan_text(holder: dict[str, Any] | None, group: int,
                 members: list[tuple[int, str]]) -> str:
    """``the measurement of run 7 (process group 4242: pid 4242 (sleep 300)), whose command
    was killed (pid 4200)``."""
    holder = holder or {}
    return (f"the measurement of {holder.get('what')} (process group {group}: "
            f"{describe_left(members)}), whose command was killed (pid {holder.get('pid')})")


def left_running(holder: dict[str, Any] | None, path: Path) -> list[tuple[int, str]]:
    """The processes that hold slot file ``path`` though the measurement that took the slot
    is over (``holder``: its line; its process gone and the process group it measured last
    empty): each ``(pid, command line)``, found through Linux's ``/proc/<pid>/fd``. They left
    the measured command's process group (a daemon, a ``setsid``) and inherited the slot's
    descriptor. Empty when the measurement runs, on another host, or where ``/proc`` cannot
    be read."""
    if holder is None or not _here(holder):
        return []
    if _holder_alive(holder) or (isinstance(holder.get("group"), int)
                                 and group_alive(holder["group"])):
        return []
    return fd_holders(path)


def fd_holders(path: Path) -> list[tuple[int, str]]:
    """The processes with a descriptor open on the file ``path`` (same device and inode),
    each ``(pid, command line)``, from Linux's ``/proc``; empty where it cannot be read."""
    try:
        st = os.stat(path)
        pids = [name for name in os.listdir("/proc") if is_whole(name)]
    except OSError:
        return []
    found = []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                other = os.stat(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                found.append((int(pid), _command_line(int(pid))))
                break
    return found


def _command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read(4096)
    except OSError:
        return "?"
    return raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace") or "?"


def describe_left(left: list[tuple[int, str]]) -> str:
    """``pid 4242 (sleep 300)``, comma-separated: processes left running."""
    return ", ".join(f"pid {pid} ({command[:80]})" for pid, command in left)


def _take_back(folder: Path, fds: list[int]) -> int | None:
    """A slot held by the process group of a measurement whose command was killed
    (:func:`orphaned`) has that group ended (its timeout died with the command, and no one
    reads its result), which is said on stderr; a slot held only by processes a measurement
    left running (:func:`left_running`) is taken back: its file is replaced by a new one,
    whose lock they do not hold (theirs stays on the old file, which no one opens again), and
    it is said on stderr. Returns the index of the slot taken, or None."""
    for index in range(1, len(fds) + 1):
        path = folder / str(index)
        holder = _holder(path)
        found = orphaned(holder, path)
        if found is not None:
            group, members = found
            _say(f"warning: measurement slot {index} was held by "
                 f"{_orphan_text(holder, group, members)}: the group is ended")
            end_process_group(group)
            if _try(fds[index - 1:index]) is not None:
                return index
            continue
        left = left_running(holder, path)
        if not left:
            continue
        fresh = folder / f".{index}.{os.getpid()}"
        fd = os.open(fresh, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.replace(fresh, path)
        except OSError:
            os.close(fd)
            try:
                os.unlink(fresh)
            except OSError:
                pass
            continue
        os.close(fds[index - 1])
        fds[index - 1] = fd
        _say(f"warning: measurement slot {index} was held by {describe_left(left)}, left "
             f"running by an earlier measurement ({(holder or {}).get('what')}); the slot is "
             "taken back (the process runs on: end it if it disturbs the timings)")
        return index
    return None


@contextmanager
def _pinned(index: int, count: int, pin: bool) -> Iterator[tuple[int, ...] | None]:
    """Pin this process to slot ``index``'s share of its CPUs for the block (``pin``), and
    put its affinity back after; yields the CPUs, or None when not pinned."""
    global _pin_warned
    if not pin:
        yield None
        return
    getter = getattr(os, "sched_getaffinity", None)
    setter = getattr(os, "sched_setaffinity", None)
    if getter is None or setter is None:
        if not _pin_warned:
            _say("warning: pin_cpus: this platform cannot pin a process to CPUs; measuring "
                 "unpinned")
            _pin_warned = True
        yield None
        return
    before = set(getter(0))
    cpus = cpu_share(sorted(before), index, count)
    setter(0, cpus)
    try:
        yield cpus
    finally:
        setter(0, before)
