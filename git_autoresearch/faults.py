"""A test-only way to kill the tool at a named step of a keep or a revert.

When ``$GIT_AUTORESEARCH_DIE_AT`` names a step, the process sends itself SIGKILL there: no
cleanup handler runs, exactly as when the machine or the agent kills us. ``<step>@TERM`` sends
SIGTERM instead, as a polite ``kill`` does, and the process unwinds from there. The steps, in
order:

keep:   ``keep:saving-index`` (half of the copy of the index written), ``keep:staging`` (index
        partly prepared), ``keep:before-commit``, ``keep:after-commit``,
        ``keep:after-attempt`` (out-of-scope changes recorded, not yet reverted)
revert: ``revert:after-attempt`` (attempt ref written), ``revert:after-remove`` (created files
        removed, tracked files not yet restored)
both:   ``record:before-ledger``, ``record:after-ledger`` (ledger line written, intent not cleared)
start:  ``start:after-intent`` (start intent written, nothing else), ``start:after-branch``
        (session branch checked out), ``start:after-config``, ``start:after-ledger`` (header
        written; notes, snapshot and state ref not yet), ``start:before-baseline`` (session
        complete, baseline not measured)
"""

from __future__ import annotations

import os
import signal

DIE_VARIABLE = "GIT_AUTORESEARCH_DIE_AT"
STEPS = (
    "keep:saving-index",
    "keep:staging",
    "keep:before-commit",
    "keep:after-commit",
    "keep:after-attempt",
    "revert:after-attempt",
    "revert:after-remove",
    "record:before-ledger",
    "record:after-ledger",
    "start:after-intent",
    "start:after-branch",
    "start:after-config",
    "start:after-ledger",
    "start:before-baseline",
)


def checkpoint(step: str) -> None:
    """Die with SIGKILL when ``$GIT_AUTORESEARCH_DIE_AT`` is ``step`` (SIGTERM when it is
    ``step@TERM``); otherwise nothing."""
    wanted = os.environ.get(DIE_VARIABLE)
    if wanted == step:
        os.kill(os.getpid(), signal.SIGKILL)
    elif wanted == f"{step}@TERM":
        os.kill(os.getpid(), signal.SIGTERM)
