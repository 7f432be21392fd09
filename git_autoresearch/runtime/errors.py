"""The exit codes, what each means (:data:`EXIT_CODES`, printed by the manual pages), and the
error types that carry one.

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

# What each exit code means: (code, what it means in a sentence, the cases it covers). The
# manual pages print the sentence on every command's page and the cases on git-autoresearch(1).
EXIT_CODES: list[tuple[str, str, tuple[str, ...]]] = [
    ("0", "Done. For the commands that record (run, keep, discard, crash), a run that ended in "
          "discard, crash or checks_failed is done: it was recorded.", ()),
    ("1", "An unexpected internal error (GIT_AUTORESEARCH_DEBUG=1 shows the traceback).", ()),
    ("2", "A usage error: nothing was done.", (
        "a bad option or value, an unknown run number",
        "an input over its limit (description, asi, nesting, idea)",
        "a run finalize --drop/--only, apply or diff cannot use",
        "an unknown session for gc, a remote without the session named to pull",
        "a --scope/--protected/--readonly path outside the repository or matching nothing "
        "(without --allow-missing)",
    )),
    ("3", "Refused: the repository or the session is not in a state where the command may "
          "run, and nothing was changed.", (
        "not a git repository, a current folder that was removed (a shell left in a deleted "
        "build folder: the current folder no longer exists), no session",
        "an edited configuration, a merge or rebase in progress, a conflict git left unmerged "
        "in the index (a git switch --merge that conflicted), HEAD not on the session branch",
        "HEAD moved while a run measured (switched, detached or committed by hand): nothing "
        "recorded",
        "the lock held too long by another command (GIT_AUTORESEARCH_LOCK_WAIT seconds, "
        "default 60)",
        "a lock file of git's (index.lock, HEAD.lock, packed-refs.lock, the session branch's, "
        "or one on the session's own refs) in the way",
        "a full or read-only disk (naming the file or the disk, and the run's state)",
        "a submodule with uncommitted changes or lacking the commit HEAD records",
        "a start that was interrupted (resume finishes it), a dirty tree at start, a "
        "--session-id that an earlier session has or whose branch git cannot make, a baseline "
        "that failed",
        "doctor finding problems it did not fix, a missing optional dependency",
        "a keep finalize cannot replay (conflicts), keeps of several segments with a commit made "
        "by hand between their baselines, a base commit that lacks a file the measurement "
        "command runs, a final branch that exists (without --force)",
        "apply onto a work tree with changes, or of a change that conflicts with HEAD",
        "a push that would overwrite a newer state on the remote or whose lease git refused, a "
        "pull of a session that diverged or that would move a checked-out session branch",
        "gc of a named session that is not finished (without --force)",
        "a ledger that lost the line of a kept run (doctor --fix restores it)",
        "a file git will not stage (a clean filter or line-ending rule refused it), a commit "
        "hook that rewrote what a keep commits",
        "a partial clone whose remote cannot send an object a revert needs",
        "a session folder that is a symbolic link, GIT_DIR or GIT_WORK_TREE naming another "
        "repository, a folder where the session's lock file goes",
        "in a joined clone, a remote that cannot be reached or refuses the session's refs",
    )),
    ("4", "The loop should stop: .auto/STOP was found, or a stop rule is met (run and measure).",
     ("max_experiments reached, max_duration spent, target_metric reached",
      "max_runs_without_keep or max_failures_in_a_row runs in a row")),
    ("5", "finalize made its branch (and .auto/final.md), but its measurement or its final "
          "checks failed on it.", ()),
    ("129, 130, 143", "Hung up (SIGHUP: the terminal or ssh session closed), interrupted "
                      "(SIGINT, Ctrl-C) or terminated (SIGTERM): "
                      "128 + the signal's number. The experiment's and hooks' processes are "
                      "ended; git is never killed half-way; a run being recorded when the "
                      "signal came is recorded first, and one the command had begun otherwise "
                      "is finished by the next command.", ()),
]


class AutoresearchError(Exception):
    """A failure the user can act on: ``message`` is one line, ``exit_code`` one of
    :data:`EXIT_CODES`."""

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
