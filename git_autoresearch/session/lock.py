"""The session lock: one recording command at a time per work tree.

An exclusive ``flock`` on ``<git-path autoresearch>/lock``. The kernel drops the lock when its
holder dies, so a lock left by a killed process is simply free again. The holder writes its pid
and command into the file so that a waiting caller can name it.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from pathlib import Path
from types import TracebackType

from ..runtime.errors import Refused
from .config import lock_wait_seconds

# A wait for the lock longer than this is said on stderr, once, naming the holder.
SAY_AFTER = 1.0


class SessionLock:
    """Context manager holding the lock; raises :class:`Refused` after waiting ``wait`` seconds
    (a wait past :data:`SAY_AFTER` seconds is said on stderr, naming the holder)."""

    def __init__(self, folder: Path, what: str, wait: float | None = None) -> None:
        self.path = folder / "lock"
        self.what = what
        self.wait = lock_wait_seconds() if wait is None else wait
        self.fd: int | None = None

    def __enter__(self) -> SessionLock:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise Refused(unusable(self.path, exc)) from None
        started = time.monotonic()
        deadline = started + self.wait
        delay, said = 0.01, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not said and time.monotonic() - started >= SAY_AFTER < self.wait:
                    sys.stderr.write(f"waiting for the session lock, which another "
                                     f"git-autoresearch command holds ({self._holder()}), "
                                     f"{self.wait:g}s at most\n")
                    sys.stderr.flush()
                    said = True
                if time.monotonic() >= deadline:
                    holder = self._holder()
                    os.close(fd)
                    raise Refused(f"another git-autoresearch command holds the session lock "
                                  f"({holder}); waited {self.wait:g}s") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.2)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} {self.what}\n".encode(), 0)
        except OSError:
            pass  # a full disk: the lock holds all the same, only its holder goes unnamed
        self.fd = fd
        return self

    def _holder(self) -> str:
        try:
            text = self.path.read_text(errors="replace").strip()
        except OSError:
            text = ""
        return text or "holder unknown"

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def unusable(path: Path, exc: OSError) -> str:
    """Why the lock file ``path`` cannot be opened (``exc``), and what clears it: a folder
    or another non-file in its place is removed by hand; nothing was changed."""
    what = exc.strerror or exc.__class__.__name__
    if os.path.isdir(path) and not os.path.islink(path):
        return (f"{path} is a folder, where git-autoresearch keeps its lock file: remove it "
                f"(rmdir {path}, after checking it holds nothing of yours), then run the "
                "command again; nothing was changed")
    return f"cannot open the lock file {path} ({what}); nothing was changed"


def busy(folder: Path) -> str | None:
    """Who holds the session lock of ``folder`` (its pid and command), when a live process
    does; None when it is free (it is not taken: the probe lets go at once)."""
    path = folder / "lock"
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            text = path.read_text(errors="replace").strip()
        except OSError:
            text = ""
        return text or "holder unknown"
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
