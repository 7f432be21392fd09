"""Writing the session's files so that a full disk, a read-only folder or a kill never leaves
one torn: a whole file is written to a temporary name, flushed and renamed over the old one; an
append that cannot be written whole is cut back to the old size. Every failure is a
:class:`WriteFailed` (exit 3) naming the path and the reason.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from .errors import Refused
from .faults import checkpoint


class WriteFailed(Refused):
    """A session file could not be written (whole): ``path`` and ``reason`` (the system's
    words, ``No space left on device``). Nothing was left half-written."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"cannot write {path}: {reason}")
        self.path = path
        self.reason = reason


def _reason(exc: OSError) -> str:
    return exc.strerror or exc.__class__.__name__


def write_atomic(path: Path, data: bytes, mode: int | None = None, *,
                 step: str | None = None, durable: bool = True) -> None:
    """Replace ``path`` by ``data`` (bytes) whole or not at all: write a temporary file beside
    it, ``fsync``, rename. ``mode`` (e.g. ``0o444``) is set before the rename. ``step`` names a
    kill point of :mod:`runtime.faults` reached with half the data written. ``durable`` False skips
    the ``fsync``, for a file nothing reads after a crash of the machine (a scratch file this
    command consumes and removes, a cache checked when read): a killed process still leaves
    the old file or the new one whole. Raises :class:`WriteFailed`; the old file is then
    untouched and no temporary file is left."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            if step is not None:
                _write_all(fd, data[:len(data) // 2], tmp)
                checkpoint(step)
                _write_all(fd, data[len(data) // 2:], tmp)
            else:
                _write_all(fd, data, tmp)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise WriteFailed(path, _reason(exc)) from None
    except BaseException:  # SIGTERM or Ctrl-C mid-write: no half file left behind
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _write_all(fd: int, data: bytes, path: Path) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:  # a write that makes no progress: the disk is full
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        view = view[written:]


def append_whole(path: Path, payload: bytes) -> tuple[os.stat_result, os.stat_result]:
    """Append ``payload`` (whole lines) to ``path`` in one ``write`` and ``fsync``, creating the
    file. A last line without its newline is never glued onto: a newline goes first. When the
    bytes cannot all be written, the file is cut back to its old size, so no torn line is
    left; raises :class:`WriteFailed`. Returns the file's status before and after the write,
    as the descriptor written to saw it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise WriteFailed(path, _reason(exc)) from None
    try:
        before = os.fstat(fd)
        size = before.st_size
        if size:
            with open(path, "rb") as fh:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    payload = b"\n" + payload
        try:
            _write_all(fd, payload, path)
            os.fsync(fd)
            return before, os.fstat(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
                os.fsync(fd)
            raise WriteFailed(path, _reason(exc)) from None
    finally:
        os.close(fd)


def read_whole(path: Path, missing: bytes = b"") -> bytes:
    """The bytes of the session file at ``path``, ``missing`` when there is none;
    :class:`~git_autoresearch.runtime.errors.Refused` (exit 3) naming it when it cannot be
    read (another user's, mode 000, a folder in its place)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return missing
    except OSError as exc:
        raise Refused(f"cannot read {path}: {_reason(exc)}") from None


def read_text_whole(path: Path) -> str:
    """:func:`read_whole` as UTF-8 text, its line ends read as ``Path.read_text`` reads them
    (``\\r\\n`` and ``\\r`` as ``\\n``); "" when there is no file."""
    return read_whole(path).decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def check_writable(folder: Path, *files: Path) -> None:
    """Refuse (:class:`WriteFailed`) unless ``folder`` (created if missing) and each existing
    file of ``files`` can be written and the filesystem has free space: what a command checks
    before it changes anything, so that a read-only or full disk stops it there."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteFailed(folder, _reason(exc)) from None
    for path in (folder, *files):
        if path.exists() and not os.access(path, os.W_OK):
            ro = _read_only(path)
            raise WriteFailed(path, os.strerror(errno.EROFS if ro else errno.EACCES))
    try:
        st = os.statvfs(folder)
    except OSError:
        return
    # Root may write into the blocks a filesystem reserves for it; others may not.
    free = st.f_bfree if os.geteuid() == 0 else st.f_bavail
    if free == 0 and st.f_blocks:
        raise WriteFailed(folder, os.strerror(errno.ENOSPC))


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def whole_index(path: Path) -> bool:
    """Whether ``path`` holds a whole git index file: the ``DIRC`` signature and git's trailing
    checksum (the SHA-1 or SHA-256 of everything before it; all zeros when
    ``index.skipHash`` is set), as gitformat-index(5) describes it."""
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if len(data) < 12 + 20 or not data.startswith(b"DIRC"):
        return False
    version, entries = int.from_bytes(data[4:8], "big"), int.from_bytes(data[8:12], "big")
    if version not in (2, 3, 4) or 12 + entries * 40 > len(data):  # an entry is >= 40 bytes
        return False
    import hashlib  # (OpenSSL): only where an index is checked

    for digest in (hashlib.sha1, hashlib.sha256):
        width = digest().digest_size
        if len(data) >= 12 + width and (
                digest(data[:-width]).digest() == data[-width:]
                or data[-width:] == bytes(width)):
            return True
    return False
