"""The error types that carry an exit code (README, "Exit codes").

The command layer turns each into a one-line message on stderr and its exit code; the core raises
them and never prints.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_STOP = 4
EXIT_UNVERIFIED = 5  # finalize made its branch, but its measurement or final checks failed


class AutoresearchError(Exception):
    """A failure the user can act on: ``message`` is one line, ``exit_code`` is from section 5."""

    exit_code = EXIT_INTERNAL

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class UsageError(AutoresearchError):
    """Bad arguments or configuration values: exit 2."""

    exit_code = EXIT_USAGE


class Refused(AutoresearchError):
    """The repository or session is not in a state where the command may run: exit 3."""

    exit_code = EXIT_REFUSED


class StopLoop(AutoresearchError):
    """The loop should stop (STOP sentinel, or a stop rule met: ``stopping.RULES``): exit 4."""

    exit_code = EXIT_STOP
