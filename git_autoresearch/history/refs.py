"""Every name a session writes into git: its branch and the refs under ``refs/autoresearch/``.

- ``autoresearch/<session-id>``: the session branch, one commit per kept run;
- ``refs/autoresearch/<session-id>/attempts/<run>``: the work tree of a run that was not kept;
- ``refs/autoresearch/<session-id>/scope/<run>`` (``<run>.2``, ``<run>.3``, ... for a run
  measured again): changes set aside before measuring, outside the scope or to readonly files;
- ``autoresearch-workers/<session-id>/<worker>``: a worker's own branch (``worker add``),
  from which its keeps advance the session branch;
- ``refs/autoresearch/<session-id>/state``: the session files
  (:mod:`git_autoresearch.history.state_ref`);
- ``refs/autoresearch/<session-id>/claims/<key>``: an idea a worker took
  (:mod:`git_autoresearch.workers.claims`), ``<key>`` a short hash of the idea's text;
- ``refs/autoresearch/<session-id>/ledgers/<worker>``: the ledger of a worker that joined
  through a remote (``worker join``), a commit holding its ``log.jsonl``, pushed after each run;
- ``refs/autoresearch/<session-id>/runs/<n>``: run number ``n`` taken by such a worker (created
  on the remote only if it was free, so two machines never number two runs alike);
- ``refs/autoresearch/<session-id>/upstream``: here only, the remote's session branch as a
  joined worker last fetched it;
- ``autoresearch/<session-id>-final``: the keeps replayed onto the session's base for review
  (``finalize``), and ``autoresearch/<session-id>-final-<run>``: one keep alone on the base
  (``finalize --split``).

No branch can exist below ``autoresearch/<session-id>/`` beside the session branch (git keeps a
ref as a file): pi-autoresearch's finalize.sh makes ``autoresearch/<goal>/<NN>-<slug>``, so
``start`` refuses a session id whose branch would be such a folder, and warns when the id is
the goal's slug, the goal finalize.sh would be given.

Only names here: listing refs asks git through :class:`git_autoresearch.git.Repo`.
"""

from __future__ import annotations

BRANCH_PREFIX = "autoresearch/"
WORKER_BRANCH_PREFIX = "autoresearch-workers/"
NAMESPACE = "refs/autoresearch/"


def session_branch(session_id: str) -> str:
    """The short name of the session branch: ``autoresearch/<session-id>``."""
    return BRANCH_PREFIX + session_id


def final_branch(session_id: str) -> str:
    """The short name of the branch ``finalize`` makes: ``autoresearch/<session-id>-final``."""
    return f"{BRANCH_PREFIX}{session_id}-final"


def split_branch(session_id: str, run: int) -> str:
    """The branch of one keep alone on the base (``finalize --split``):
    ``autoresearch/<session-id>-final-<run>``."""
    return f"{final_branch(session_id)}-{run}"


def session_of_branch(branch: str | None) -> str | None:
    """The session id a branch name carries (``autoresearch/<id>``), or None."""
    if branch and branch.startswith(BRANCH_PREFIX):
        return branch[len(BRANCH_PREFIX):] or None
    return None


def namespace(session_id: str) -> str:
    """Where the session's own refs live: ``refs/autoresearch/<session-id>``."""
    return NAMESPACE + session_id


def attempts_prefix(session_id: str) -> str:
    """``refs/autoresearch/<session-id>/attempts/``, followed by a run number."""
    return f"{namespace(session_id)}/attempts/"


def attempt_ref(session_id: str, run: int) -> str:
    """The ref that keeps the work tree of non-kept run ``run``."""
    return f"{attempts_prefix(session_id)}{run}"


def scope_prefix(session_id: str) -> str:
    """``refs/autoresearch/<session-id>/scope/``, followed by ``<run>`` or ``<run>.<n>``."""
    return f"{namespace(session_id)}/scope/"


def claims_prefix(session_id: str) -> str:
    """``refs/autoresearch/<session-id>/claims/``, followed by an idea's key."""
    return f"{namespace(session_id)}/claims/"


def claim_ref(session_id: str, key: str) -> str:
    """The ref of the claim on the idea whose key is ``key``."""
    return f"{claims_prefix(session_id)}{key}"


def ledgers_prefix(session_id: str) -> str:
    """``refs/autoresearch/<session-id>/ledgers/``, followed by a worker's name."""
    return f"{namespace(session_id)}/ledgers/"


def runs_prefix(session_id: str) -> str:
    """``refs/autoresearch/<session-id>/runs/``, followed by a run number taken on a remote."""
    return f"{namespace(session_id)}/runs/"


def queue_prefix(session_id: str) -> str:
    """``refs/autoresearch/<id>/queue/``, followed by a candidate's key."""
    return f"{namespace(session_id)}/queue/"


def measuring_prefix(session_id: str) -> str:
    """``refs/autoresearch/<id>/measuring/``, followed by the key of a candidate taken."""
    return f"{namespace(session_id)}/measuring/"


def verdicts_prefix(session_id: str) -> str:
    """``refs/autoresearch/<id>/verdicts/``, followed by the key of a candidate measured."""
    return f"{namespace(session_id)}/verdicts/"


def upstream_ref(session_id: str) -> str:
    """The remote's session branch as a joined worker last fetched it (never pushed)."""
    return f"{namespace(session_id)}/upstream"


def state_ref(session_id: str) -> str:
    """The ref that mirrors the session files."""
    return f"{namespace(session_id)}/state"


def session_of_state_ref(ref: str) -> str | None:
    """The session id of ``refs/autoresearch/<id>/state``; None for any other ref."""
    parts = ref.split("/")
    if len(parts) == 4 and ref.startswith(NAMESPACE) and parts[3] == "state":
        return parts[2]
    return None


def worker_branch(session_id: str, worker: str) -> str:
    """The short name of a worker's branch: ``autoresearch-workers/<session-id>/<worker>``."""
    return f"{WORKER_BRANCH_PREFIX}{session_id}/{worker}"


def worker_of_branch(branch: str | None, session_id: str) -> str | None:
    """The worker name of ``autoresearch-workers/<session-id>/<worker>``, or None."""
    prefix = f"{WORKER_BRANCH_PREFIX}{session_id}/"
    if branch and branch.startswith(prefix):
        return branch[len(prefix):] or None
    return None
