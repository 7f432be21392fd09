"""Running the user's commands (measurement, metric, checks, hooks) through plumbum, each in
a process group of its own: its output streamed to a file descriptor, a timeout, and on timeout
or a signal to us the whole group ended (SIGTERM, then SIGKILL after a grace period), so
grandchildren die too. plumbum is imported only when a command is run, without the parts a
run never uses (:func:`_plumbum_local`).
"""

from __future__ import annotations

import importlib
import os
import select
import signal
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ..runtime import signals
from ..runtime.faults import checkpoint

KILL_GRACE_SECONDS = 2.0


@dataclass
class Outcome:
    """How a shell command ended: ``exit_code`` (negative: killed by that signal), whether it
    ``timed_out``, and its wall time ``duration_s`` in seconds."""

    exit_code: int
    timed_out: bool
    duration_s: float


def shell() -> str:
    """The shell commands run through: bash where there is one, else /bin/sh."""
    import shutil  # (bz2, lzma, ...): only where needed

    return shutil.which("bash") or "/bin/sh"


def command_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for user commands: ours, without the variables that pin git to a
    repository (a command started from inside a git hook must still see its own work tree)
    and without the descriptor of our progress events (:mod:`runtime.events`), which the
    command does not inherit."""
    from ..git import LOCATING_VARIABLES
    from ..runtime.events import ENV as EVENTS

    env = {k: v for k, v in os.environ.items() if k not in LOCATING_VARIABLES and k != EVENTS}
    if extra:
        env.update(extra)
    return env


def _group_alive(proc: subprocess.Popen[bytes]) -> bool:
    proc.poll()  # reap the leader, so that a finished leader does not count as alive
    return group_alive(proc.pid)


def host_name() -> str:
    """This machine's name, as ``gethostname(2)`` gives it (``socket.gethostname``): a
    process's pid means something only on its host. Read from ``uname(2)``'s node name, which
    is what gethostname returns on Linux and macOS, without importing :mod:`socket`."""
    return os.uname().nodename


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs: it exists and is not a zombie (a process that has ended
    but that its parent has not reaped yet, state ``Z`` in Linux's ``/proc/<pid>/stat``)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rpartition(b")")[2].split()[:1]
    except OSError:  # no /proc (macOS): alive, as kill said
        return True
    return state != [b"Z"]


def process_start(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since the machine booted (field 22 of
    Linux's ``/proc/<pid>/stat``): with its pid, it names one process, where a pid alone
    may be reused. None where it cannot be read (no such process, no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rpartition(b")")[2].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def group_alive(pgid: int) -> bool:
    """Whether process group ``pgid`` has a member that is not a zombie."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _only_zombies(pgid)


def _only_zombies(pgid: int) -> bool:
    """Whether the members left in process group ``pgid`` are all zombies: dead, their exit
    status not yet collected by their new parent (an orphan waits for the container's first
    process, which may reap late or never), though ``killpg(pgid, 0)`` still finds them. False
    where it cannot tell (no ``/proc``)."""
    found = group_members(pgid)
    return found is not None and bool(found) and all(zombie for zombie in found.values())


def group_members(pgid: int) -> dict[int, bool] | None:
    """The members of process group ``pgid``, pid -> whether it is a zombie, read from Linux's
    ``/proc/<pid>/stat`` (fields after the name: state, parent, group); None where ``/proc``
    cannot be read."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    found = {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                state, _, group = fh.read().rpartition(b")")[2].split()[:3]
        except (OSError, ValueError):
            continue
        if group == str(pgid).encode():
            found[int(name)] = state == b"Z"
    return found


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def end_group(proc: subprocess.Popen[bytes], grace: float = KILL_GRACE_SECONDS) -> None:
    """End the process group that ``proc`` leads: SIGTERM, then SIGKILL for what is left after
    ``grace`` seconds, then wait (at most 5 s) until no member is left. A member that is
    dead but not yet reaped (a zombie) counts as gone: each wait ends as soon as the others
    are."""
    end_process_group(proc.pid, grace, lambda: _group_alive(proc))


def end_process_group(pgid: int, grace: float = KILL_GRACE_SECONDS,
                      alive: Callable[[], bool] | None = None) -> None:
    """End process group ``pgid`` as :func:`end_group` does, one whose leader we did not start
    (a measurement a killed command left running); ``alive`` tells whether it still has a
    member (:func:`group_alive` by default)."""
    def running() -> bool:
        return alive() if alive is not None else group_alive(pgid)

    if not running():
        return
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and running():
        time.sleep(0.02)
    if running():
        _signal_group(pgid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and running():
            time.sleep(0.02)


# Descriptors every command started here inherits: a measurement slot's lock file, so that
# the slot stays held while any process of the measured command lives, even when we are killed
# (the kernel frees a flock only when the last descriptor of its open file is closed).
_HANDED_DOWN: list[int] = []


# Told the process group of each command started here (its leader's pid): a measurement slot
# notes it, so that a later command can tell the slot's own measurement, still running after
# we were killed, from a process that left the group (a daemon) and holds the slot's file.
_GROUP_WATCHERS: list[Callable[[int], None]] = []


@contextmanager
def handed_down(fd: int, watcher: Callable[[int], None] | None = None) -> Iterator[None]:
    """While the block runs, the commands started here inherit descriptor ``fd``, and
    ``watcher`` is told each one's process group."""
    _HANDED_DOWN.append(fd)
    if watcher is not None:
        _GROUP_WATCHERS.append(watcher)
    try:
        yield
    finally:
        _HANDED_DOWN.remove(fd)
        if watcher is not None:
            _GROUP_WATCHERS.remove(watcher)


# Modules plumbum imports that running a command never uses: ``urllib.request`` (for
# ``LocalPath.as_uri`` and ``RemotePath.as_uri`` only) brings ``http.client``, ``ssl`` and the
# ``email`` package, about 40 % of plumbum's import (17 ms of a run on a slow machine). plumbum
# 2 names it in its modules' ``__lazy_modules__`` (PEP 810's lazy imports, Python 3.15); this
# does the same on the Pythons before. ``socket`` (for ``SshMachine``) and ``pickle`` (for
# daemonizing a command) are used only inside functions a run never calls: 2-3 ms more.
_UNUSED_BY_RUNS = ("urllib.request", "socket", "pickle")


class _LoadedOnUse(types.ModuleType):
    """Stands in for a module while plumbum is imported (:func:`_plumbum_local`): the first
    attribute read of it imports the real module and reads it there, so whatever plumbum (or
    another thread meanwhile) does with it still works, only later."""

    def __getattr__(self, name: str) -> Any:
        _stand_down(self)
        return getattr(importlib.import_module(self.__name__), name)


def _stand_down(stand_in: _LoadedOnUse) -> None:
    """``stand_in`` no longer found as its module in ``sys.modules``, so that the next import
    of that module imports the real one (which then takes its place as an attribute of its
    package too). Till then it stays that attribute: code that imported the module while it
    stood in holds only the package (``import urllib.request`` binds ``urllib``), and reads
    the module there, through the stand-in, which imports the real one."""
    if sys.modules.get(stand_in.__name__) is stand_in:
        del sys.modules[stand_in.__name__]


def _plumbum_local() -> Any:
    """plumbum's ``local`` machine, importing plumbum the first time: lazily, since its import
    costs about 35 ms, which only commands that run the user's commands pay, and without the
    modules of :data:`_UNUSED_BY_RUNS`: each stands in as a :class:`_LoadedOnUse` while
    plumbum is imported (in ``sys.modules`` and as an attribute of its package, where
    ``import urllib.request`` finds it in any thread), and is imported for real when read;
    nor the ``uname -p`` process of ``platform.uname()``'s processor field."""
    if "plumbum" not in sys.modules:
        import platform

        standing = [_LoadedOnUse(name) for name in _UNUSED_BY_RUNS if name not in sys.modules]
        for stand_in in standing:
            package, _, attribute = stand_in.__name__.rpartition(".")
            if package:
                setattr(importlib.import_module(package), attribute, stand_in)
            sys.modules[stand_in.__name__] = stand_in
        # plumbum's LocalMachine reads platform.uname()[0] (the system's name) as it is
        # defined; indexing the real answer asks for its processor field too, which Linux
        # answers by running ``uname -p`` (a process, 2 ms). Its first five fields do, by
        # index or by name (platform.system(), which plumbum's colours ask on a terminal).
        uname = platform.uname
        fields = platform.uname_result.__bases__[0](*tuple.__getitem__(uname(), slice(0, 5)))
        platform.uname = lambda: fields
        try:
            import plumbum  # noqa: F401
        finally:
            platform.uname = uname
            for stand_in in standing:
                _stand_down(stand_in)
    from plumbum import local

    return local


def _spawn(argv: Sequence[str], options: dict[str, Any]) -> subprocess.Popen[bytes]:
    """Start ``argv`` through plumbum (the project's runner for the user's commands) as the
    leader of a new session (plumbum imported by :func:`_plumbum_local`). Its ``local.env`` is
    a snapshot of our environment taken at its import, and it merges that under ``env``: it is
    emptied for the call, so that only ``options["env"]`` counts (no ``GIT_DIR`` of a calling
    hook comes back).
    plumbum's own ``timeout`` is not used: it ends only the direct child, not its group;
    :func:`process_group` ends the whole group instead."""
    local = _plumbum_local()
    env = options.pop("env", None)
    program = local[argv[0]][list(argv[1:])]
    with local.env():
        local.env.clear()
        if _HANDED_DOWN:
            options = {**options, "pass_fds": tuple(_HANDED_DOWN)}
        started = program.popen(env=dict(env if env is not None else os.environ),
                                start_new_session=True, **options)
    # A Popen in all but name: plumbum's wrapper hands every attribute to the Popen it made.
    return cast("subprocess.Popen[bytes]", started)


@contextmanager
def process_group(argv: Sequence[str], *, grace: float = KILL_GRACE_SECONDS,
                  **options: Any) -> Iterator[subprocess.Popen[bytes]]:
    """Start ``argv`` (``subprocess.Popen`` with ``options``) as the leader of a new session and
    process group, and end the whole group (:func:`end_group` with ``grace`` seconds) when the
    block exits, however it exits: normally, by an exception, or by a signal
    (:class:`runtime.signals.Interrupted`). The cleanup is in place before the child exists: a
    signal that arrives while it starts is raised once ``Popen`` has returned, and one that arrives
    while the group is being ended waits until it has ended. Afterwards the leader is reaped
    (``returncode`` is set) and its pipes are closed."""
    proc: subprocess.Popen[bytes] | None = None
    try:
        with signals.deferred():
            proc = _spawn(argv, options)
            for watcher in _GROUP_WATCHERS:
                watcher(proc.pid)
        checkpoint("group:started")
        yield proc
    finally:
        if proc is not None:
            with signals.deferred():
                end_group(proc, grace)
                proc.wait()
                for stream in (proc.stdin, proc.stdout, proc.stderr):
                    try:
                        if stream is not None:
                            stream.close()
                    except OSError:
                        pass


def exit_of(proc: subprocess.Popen[bytes], seconds: float) -> bool:
    """Wait at most ``seconds`` for ``proc`` to exit; whether it did (then it is reaped). On
    Linux the wait ends the moment it exits (``poll`` on a pidfd, pidfd_open(2)); elsewhere
    ``Popen.wait`` polls, with sleeps that double up to 50 ms, so its end is seen up to 50 ms
    late: time that would count in every sample's duration."""
    if proc.returncode is not None:  # reaped: its pid may be another process's by now
        return True
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux 5.3 or later; or reaped already
        try:
            proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        watch = select.poll()
        watch.register(pidfd, select.POLLIN)
        if not watch.poll(max(1, round(seconds * 1000))):
            return False
    finally:
        os.close(pidfd)
    proc.wait()
    return True


def run_shell(
    command: str,
    *,
    cwd: Path,
    stdout: int,
    timeout: float,
    env: Mapping[str, str],
    stdin: int | None = None,
    stderr: int | None = None,
    on_tick: Callable[[float], None] | None = None,
) -> Outcome:
    """Run ``command`` through :func:`shell` in a new process group (:func:`process_group`).

    ``stdout`` is a file descriptor that receives stdout, and stderr too unless ``stderr``
    names another. After ``timeout`` seconds
    the group is ended (:func:`end_group`); members still running when the command itself exits
    are ended too, and so is the group of a command interrupted by a signal, so no experiment
    leaves processes behind. ``on_tick`` is called about once a second with the elapsed seconds.
    """
    started = time.monotonic()
    timed_out = False
    next_tick = started + 1.0
    with process_group([shell(), "-c", command], cwd=cwd,
                       stdin=stdin if stdin is not None else subprocess.DEVNULL,
                       stdout=stdout, stderr=subprocess.STDOUT if stderr is None else stderr,
                       env=dict(env)) as proc:
        while True:
            signals.check()  # one that came in a finalizer is raised here, not after the run
            now = time.monotonic()
            remaining = started + timeout - now
            if remaining <= 0:
                timed_out = True
                break
            if exit_of(proc, min(remaining, max(0.01, next_tick - now), 0.25)):
                break
            if on_tick and time.monotonic() >= next_tick:
                on_tick(time.monotonic() - started)
                next_tick += 1.0
    code = proc.returncode
    return Outcome(code, timed_out, round(time.monotonic() - started, 3))
