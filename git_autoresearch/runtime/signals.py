"""SIGINT, SIGTERM and SIGHUP: one handling for the three, safe at every point.

A signal raises :class:`Interrupted` at once only where unwinding is safe: the ``finally``
blocks on the way end the experiment's process group, and the command exits 128 + the signal's
number (130, 143, 129). Elsewhere it is *deferred*: while git runs (a git killed half-way leaves
its ``*.lock`` files behind), while a run is being recorded (intent, git, ledger: about 0.1 s), and
inside a finalizer (``__del__``, where Python would print the exception and drop it). A deferred
signal is raised when the section ends, and one that was never raised still makes the command
exit 128 + N at the end (:func:`received`). Only the first signal is raised: a second one while
the first unwinds must not cut its cleanup short.

A signal that was ignored when the process started (a background job of a shell script ignores
SIGINT; ``nohup`` ignores SIGHUP) stays ignored.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
NAMES: dict[int, str] = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated",
                         signal.SIGHUP: "hung up"}

_received: int | None = None  # the first signal that arrived
_raised = False  # whether an Interrupted was raised for it
_depth = 0  # nesting of deferred sections
_installed = False
_holding = False  # deferred from install(hold=True) until release()
_recorded: list[dict[str, object]] = []  # the runs this command recorded, for the exit message


class Interrupted(BaseException):
    """A signal arrived: ``signum`` (SIGINT, SIGTERM or SIGHUP); the command exits
    ``exit_code`` (128 + the signal's number)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def what(self) -> str:
        """``interrupted``, ``terminated`` or ``hung up``."""
        return NAMES.get(self.signum, f"signal {self.signum}")


def _in_finalizer(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def _handler(signum: int, frame: FrameType | None) -> None:
    global _received, _raised
    if _received is None:
        _received = signum
    if _depth == 0 and not _raised and not _in_finalizer(frame):
        _raised = True
        raise Interrupted(_received)


def install(*, hold: bool = False) -> None:
    """Handle SIGINT, SIGTERM and SIGHUP as described above; a signal ignored at start stays
    ignored. With ``hold``, signals are deferred until :func:`release` (a program's start-up:
    its imports). Call at the start of the process; calling again changes nothing."""
    global _installed, _holding, _depth, _received
    if not _installed:
        from .. import early_signals  # (noted by the package's import, when run as a program)

        for signum in HANDLED:
            if signal.getsignal(signum) != signal.SIG_IGN:
                signal.signal(signum, _handler)
        _installed = True
        if early_signals and _received is None:
            _received = early_signals[0]
    if hold and not _holding:
        _holding = True
        _depth += 1


def release() -> None:
    """End the start-up hold of :func:`install`, raising :class:`Interrupted` for a signal that
    arrived during it; nothing when nothing is held."""
    global _holding, _depth
    if _holding:
        _holding = False
        _depth -= 1
        check()


def note_recorded(run: int, status: str, commit: str | None) -> None:
    """Remember that this command recorded ``run`` (its ``status`` and 7-character ``commit``):
    a signal that ends the command afterwards says so, since a caller takes a non-zero exit for
    "nothing was recorded"."""
    _recorded.append({"run": run, "status": status, "commit": commit})


def forget_recorded() -> None:
    """Forget the runs :func:`note_recorded` was told of: a long-lived command (a measuring
    host) whose runs were answered for, so that a signal names only a run it has not."""
    _recorded.clear()


def recorded() -> list[dict[str, object]]:
    """The runs :func:`note_recorded` was told of, in order (``run``, ``status``, ``commit``)."""
    return list(_recorded)


def received() -> int | None:
    """The number of the first handled signal that arrived, or None."""
    return _received


def handled() -> None:
    """The command ended on the signal by design (``status --watch`` runs until Ctrl-C): the
    signal is forgotten, so that the command exits 0, and the next one is raised again."""
    global _received, _raised
    _received, _raised = None, False


def check() -> None:
    """Raise :class:`Interrupted` now if a signal arrived and was not raised yet (a safe
    point: outside deferred sections only)."""
    global _raised
    if _received is not None and not _raised and _depth == 0:
        _raised = True
        raise Interrupted(_received)


@contextmanager
def deferred() -> Iterator[None]:
    """A section that no handled signal cuts short: one that arrives inside it is raised as
    :class:`Interrupted` when the outermost such section ends (instead of an exception that
    ends it, which is chained)."""
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        check()
