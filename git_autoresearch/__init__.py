"""git-autoresearch: git plumbing for autonomous optimisation loops.

Kept results live in ``Result:`` commit trailers on ``autoresearch/<session-id>``, every run in the
JSONL ledger ``.auto/log.jsonl``, and discarded attempts under ``refs/autoresearch/<session-id>/``.
"""

__version__ = "0.1.0"

import _signal  # type: ignore[import-not-found]  # (the C module: no stubs)
import sys as _sys

# Signals that came before git_autoresearch.runtime.signals took over (its install reads them).
early_signals: list[int] = []


def _early(signum: int, frame: object) -> None:
    early_signals.append(signum)


if _sys.argv and (_sys.argv[0] == "-m" or _sys.argv[0].rpartition("/")[2].startswith(
        "git-autoresearch")):
    # Run as a program (an entry point, or python -m git_autoresearch), not imported as a
    # library: SIGINT, SIGTERM and SIGHUP are noted from the first import of the package on
    # (through the C module: the signal module's own import takes milliseconds), and said by
    # the command once it runs, so that a Ctrl-C during the imports exits 130 with one line
    # and no traceback. A signal ignored at start stays ignored.
    for _signum in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP):
        if _signal.getsignal(_signum) != _signal.SIG_IGN:
            _signal.signal(_signum, _early)
