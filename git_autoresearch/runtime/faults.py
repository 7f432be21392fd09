"""Test-only ways to interrupt the tool at a named step of a keep, a revert or a child process.

When ``$GIT_AUTORESEARCH_DIE_AT`` names a step, the process sends itself SIGKILL there: no
cleanup handler runs, exactly as when the machine or the agent kills us. ``<step>@TERM`` sends
SIGTERM instead, as a polite ``kill`` does, and the process unwinds from there. The steps, in
order:

keep:   ``keep:saving-index`` (half of the copy of the index written), ``keep:staging`` (index
        partly prepared), ``keep:before-commit``, ``keep:after-commit``,
        ``keep:after-attempt`` (out-of-scope changes recorded, not yet reverted)
revert: ``revert:before-attempt`` (intent written, attempt ref not yet), ``revert:after-attempt``
        (attempt ref written), ``revert:after-remove`` (created files removed, tracked files not
        yet restored)
set-aside (before a measurement, of the changes outside the scope or to readonly files):
        ``set-aside:after-attempt`` (scope ref written), ``set-aside:after-remove`` (created
        files removed, tracked files not yet restored)
both:   ``record:before-ledger``, ``record:after-ledger`` (ledger line written, intent not cleared),
        ``record:before-after-hooks`` (recorded, its after hooks not fired yet)
start:  ``start:after-intent`` (start intent written, nothing else), ``start:after-branch``
        (session branch checked out), ``start:after-config``, ``start:after-ledger`` (header
        written; notes, snapshot and state ref not yet), ``start:before-baseline`` (session
        complete, baseline not measured)

worker: ``keep:before-advance`` (a worker's keep committed on its branch, the session branch not
        yet advanced), ``replay:saved`` (a candidate saved for its replay onto a new
        incumbent, the work tree untouched), ``replay:reverted`` (reverted, not yet moved),
        ``replay:moved`` (moved onto the incumbent, the candidate not yet put back);
        through a remote (``worker join``): ``keep:before-push`` (the keep made and the session
        branch advanced here, not yet pushed), ``keep:after-push`` (landed on the remote, not
        yet in the ledger), ``land:undone-branch`` (a keep the remote refused, half undone:
        the index and the session branch back, HEAD not yet), ``join:before-claim`` (a
        ``worker join`` that fetched the session, its name not yet taken on the remote)
measurer: ``measurer:before-verdict`` (a candidate's run recorded, its verdict not yet sent),
        ``measurer:after-verdict`` (the verdict sent, the host not yet told it was)

Two more seams let a test act at a step without killing: ``$GIT_AUTORESEARCH_CREATE_AT`` names a
step where the file ``$GIT_AUTORESEARCH_CREATE_FILE`` is created (as another git process taking
``index.lock`` would), and ``$GIT_AUTORESEARCH_PAUSE_AT`` names a step where the process says
``paused at <step>`` on stderr and waits (at most 10 s, less once a signal has arrived), so that a
test can send a signal at exactly that point, or act and then create the file
``$GIT_AUTORESEARCH_GO_FILE``, which ends the wait. Besides the steps above,
``group:started`` is the moment after an experiment's or a hook's process group was started.
"""

from __future__ import annotations

import os
import signal
import sys
import time

DIE_VARIABLE = "GIT_AUTORESEARCH_DIE_AT"
CREATE_VARIABLE = "GIT_AUTORESEARCH_CREATE_AT"
CREATE_FILE_VARIABLE = "GIT_AUTORESEARCH_CREATE_FILE"
PAUSE_VARIABLE = "GIT_AUTORESEARCH_PAUSE_AT"
PAUSE_SECONDS = 10.0
STEPS = (
    "keep:saving-index",
    "keep:staging",
    "keep:before-commit",
    "keep:after-commit",
    "keep:after-attempt",
    "revert:before-attempt",
    "revert:after-attempt",
    "revert:after-remove",
    "set-aside:after-attempt",
    "set-aside:after-remove",
    "record:before-ledger",
    "record:after-ledger",
    "record:before-after-hooks",
    "start:after-intent",
    "start:after-branch",
    "start:after-config",
    "start:after-ledger",
    "start:before-baseline",
    "keep:before-advance",
    "replay:saved",
    "replay:reverted",
    "replay:moved",
    "keep:before-push",
    "keep:after-push",
    "land:undone-branch",
    "join:before-claim",
    "measurer:before-verdict",
    "measurer:after-verdict",
)


def checkpoint(step: str) -> None:
    """Act at ``step`` as the variables above ask: die with SIGKILL (SIGTERM when the die
    variable is ``step@TERM``), create a file, or pause; otherwise nothing."""
    wanted = os.environ.get(DIE_VARIABLE)
    if wanted == step:
        os.kill(os.getpid(), signal.SIGKILL)
    elif wanted == f"{step}@TERM":
        os.kill(os.getpid(), signal.SIGTERM)
    if os.environ.get(CREATE_VARIABLE) == step:
        with open(os.environ[CREATE_FILE_VARIABLE], "x"):
            pass
    if os.environ.get(PAUSE_VARIABLE) == step:
        from . import signals

        sys.stderr.write(f"paused at {step}\n")
        sys.stderr.flush()
        deadline = time.monotonic() + PAUSE_SECONDS
        go = os.environ.get("GIT_AUTORESEARCH_GO_FILE")
        while time.monotonic() < deadline and signals.received() is None \
                and not (go and os.path.exists(go)):
            time.sleep(0.01)
