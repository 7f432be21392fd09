"""Run numbers: the next one of a session, never given twice (after the ledger's last run,
every attempt ref and every ``Autoresearch-Run`` trailer), and holding it for the work tree
that measures it (:mod:`git_autoresearch.session.workers`' reservations)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..history.refs import attempts_prefix, session_branch
from ..ledger.jsontext import is_whole
from ..session.workers import reservations, reserve

if TYPE_CHECKING:
    from ..session.session import Session


def reserve_run(session: Session) -> int:
    """The number of the run this work tree measures next, held for it so that no other
    worker takes it until it is recorded (:func:`session.workers.reserve`); in a clone that joined
    through a remote, taken there first (:func:`history.remoteledger.claim_run`)."""
    with session.shared("reserve a run number"):
        number = session.next_run()
        held = reservations(session.repo, session.config.session_id).get(session.worker_name)
        if held != number and session.remote is not None:
            from ..history.remoteledger import claim_run

            number = claim_run(session.repo, session.remote, session.config.session_id, number,
                               session.head(), session.worker_name)
        if held != number:
            reserve(session.repo, session.config.session_id, session.worker_name, number)
        return number


def next_run(session: Session) -> int:
    """The next run number: after the ledger's last run, after every attempt ref, and after
    every ``Autoresearch-Run`` trailer of the session branch (since the session's base
    commit), so a ledger line that was lost or never written never makes a number repeat."""
    if session.git_runs is None:  # asked of git once per command (and after a reload)
        # One for-each-ref over the session's refs answers set_asides too; the trailers
        # of the branch are read again only when its tip moved (trailers.BranchRuns).
        prefix = attempts_prefix(session.config.session_id)
        numbers = [int(n[len(prefix):]) for n in
                   session.repo.for_each_ref(prefix, within=session.namespace + "/")
                   if is_whole(n[len(prefix):])]
        branch = session_branch(session.config.session_id)
        base = (session.ledger.segments[0].header or {}).get("base_commit")
        spec = f"{base}..{branch}" if isinstance(base, str) and base else branch
        tip = session.known_head if session.repo.branch_at_discovery == branch else None
        numbers.append(session.branch_runs.highest(session.repo, spec, tip))
        session.git_runs = max(numbers, default=0)
    base = max(session.ledger.next_run_number, session.git_runs + 1)
    held = reservations(session.repo, session.config.session_id)
    own = held.pop(session.worker_name, None)
    if own is not None and own not in held.values() and (own >= base or (
            session.ledger.find(own, ours=True) is None
            and session.repo.resolve(f"{attempts_prefix(session.config.session_id)}{own}")
            is None)):
        return own  # held by this work tree, and recorded by no one yet
    return max(base, max(held.values(), default=0) + 1)
