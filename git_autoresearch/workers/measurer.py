"""A measuring host: a clone joined to the session's remote (``worker join``) that measures the
candidates agents queued there (:mod:`history.queue`), one at a time, on this machine.

For each candidate, oldest first: take it (a lease on the remote, so no other host measures
it), put its change on this clone's work tree (replayed onto the incumbent when the incumbent
moved since the agent built it), then measure, decide, keep or revert and record it exactly as
``run`` does (:func:`record.iteration.iterate`: the incumbent measured beside it on this same
machine, a keep landed on the remote by compare-and-swap), and send the run's record back as
the candidate's verdict. A candidate whose change conflicts with the incumbent (or is in it
already) is answered with ``{"refused": "<why>"}``: nothing is measured or recorded.

A host killed while measuring leaves its claim on the remote: restarted under the same name
it takes its own claims back first, and another host takes them over once they are older than
``stale_after``. A candidate whose run was recorded before the kill (the verdict not yet sent)
is answered from the ledger, never measured twice.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..git.objects import hash_files, temporary_index
from ..history.queue import (
    Candidate,
    claimant,
    publish,
    queued,
    release,
    stale,
    submit,
    take,
    watch,
)
from ..record.iteration import iterate
from ..review.apply import Applied, ChangeRefused, Retry, bring_back
from ..runtime.errors import Refused
from ..runtime.faults import checkpoint
from ..session.session import Session
from .replay import follow
from .upstream import sync

# What the host says as it works: (the candidate, what happened: "taken", "measured",
# "conflict", "answered", "lost"), and the run record when there is one.
Report = Callable[[Candidate, str, "dict[str, Any] | None"], None]


@dataclass
class Queued(Retry):
    """A queued candidate as the loop measures it: its change (``attempt``: the candidate's
    commit) put on the work tree like a retried run's, and its record naming where it came
    from (``queued``: its key and agent)."""

    candidate: Candidate | None = None

    @property
    def name(self) -> str:
        assert self.candidate is not None
        return f"candidate {self.candidate.key}"

    @property
    def origin(self) -> dict[str, Any]:
        assert self.candidate is not None
        return {"queued": {"key": self.candidate.key, "agent": self.candidate.agent}}

    def apply(self, session: Session) -> Applied:
        session.check_baseline()
        session.preflight()
        self.applied = bring_back(session, 0, self.attempt, "measure", name=self.name)
        return self.applied


@dataclass
class Served:
    """What a host did: the records it sent back as verdicts, in order."""

    answered: list[dict[str, Any]] = field(default_factory=list)


def recorded_for(session: Session, key: str) -> dict[str, Any] | None:
    """The run recorded for candidate ``key`` already (by this host before it was killed, or
    by one that took it over), from the ledger as read with every worker's runs."""
    for run in reversed(session.ledger.runs):
        queued_from = run.data.get("queued")
        if isinstance(queued_from, dict) and queued_from.get("key") == key:
            return dict(run.data)
    return None


def _changed(session: Session) -> list[str]:
    return sorted(p for p in session.changes().changed() if not session.bounds.is_protected(p))


def _check_work_tree(session: Session, own: Sequence[Candidate]) -> None:
    """Refuse (exit 3), before anything is taken, a work tree with changes other than those of
    a candidate this host holds (``own``: killed while measuring it, its change is still on
    the work tree, unrecorded)."""
    changed = _changed(session)
    if not changed:
        return
    theirs = {p for c in own for p in session.repo.changed_paths(c.base, c.commit)}
    if not set(changed) <= theirs:
        raise Refused(f"the work tree of this measuring host has changes ({', '.join(changed[:5])}"
                      "): a host measures in a clone of its own; commit or revert them")


def _take_back_killed(session: Session) -> None:
    """Before measuring a candidate this host held when it was killed: its change, still on
    the work tree and unrecorded (it is safe on the remote), put back as HEAD has it."""
    changed = _changed(session)
    if changed:
        session.repo.restore_from_head(changed)


def serve(session: Session, host: str, *, drain: bool, poll: float = 2.0,
          stale_after: float = 3600.0, report: Report | None = None,
          should_stop: Callable[[], bool] | None = None,
          warn: Callable[[str], None] | None = None) -> Served:
    """Measure the queued candidates of ``session`` (a joined clone, whose worker name is
    ``host``) until ``should_stop`` says so, or, with ``drain``, until no candidate is left
    that this host may take. Between looks at an empty queue it waits ``poll`` seconds. A keep
    or revert a kill left half-done is finished first (``warn`` is told what was).
    Raises :class:`Refused` (exit 3) when this is not a joined clone, the remote cannot be
    reached, or the work tree has changes; :class:`runtime.errors.StopLoop` (exit 4) when the
    loop should stop (STOP, a stop rule)."""
    if session.remote is None:
        raise Refused("a measuring host runs in a clone joined to the session's remote (git "
                      "autoresearch worker join REMOTE SESSION): this work tree has none")
    if session.worker is not None and session.worker.on_host:
        raise Refused("this clone was joined with --measure-on-host: a host measures its "
                      "candidates; run the measurer in a clone joined without it")
    from ..decide.stopping import check_stop
    from ..record.recovery import locked

    remote, sid = session.remote, session.config.session_id
    served = Served()
    # A keep or revert a kill left half-done is finished first (a keep landed on the remote
    # too), so that its run is in the ledger and its candidate answered from there.
    with locked(session, "measurer") as recovered:
        if recovered.note and warn is not None:
            warn(recovered.note)
    say = report or (lambda candidate, what, record: None)
    looked = False
    while not (should_stop and should_stop()):
        found = queued(session.repo, remote, sid)
        own = [c for c in found if c.taken is not None and c.taken.get("host") == host]
        free = own + [c for c in found if c.taken is None or (
            c.taken.get("host") != host and stale(c, older_than=stale_after))]
        if free or not looked:  # (a work tree with changes: refused before anything is taken)
            _check_work_tree(session, own)
            looked = True
        if not free:
            if drain:
                return served
            time.sleep(poll)
            continue
        candidate = free[0]  # one this host held when it was killed first: its change is here
        check_stop(session, "measurer")  # (STOP, a stop rule: exit 4 before taking anything)
        claim = take(session.repo, remote, sid, candidate, host)
        if claim is None:  # another host was first
            continue
        say(candidate, "taken", None)
        try:
            sync(session)  # the incumbent, and every worker's runs, as the remote has them now
            record = recorded_for(session, candidate.key)
            if record is None:
                if candidate in own:  # (any other was taken on a work tree checked clean)
                    _take_back_killed(session)
                record = _measured(session, candidate, say)
        except BaseException:
            # Nothing recorded for it (the ledger read again to be sure): it goes back to the
            # queue for another host, or this one. Recorded, or unsure, the claim stays: this
            # host restarted answers it from the ledger, another takes it over once stale.
            try:
                session.reload()
                unrecorded = recorded_for(session, candidate.key) is None
            except Exception:  # noqa: BLE001 (unsure: the claim stays)
                unrecorded = False
            if unrecorded:
                release(session.repo, remote, sid, candidate, claim)
            raise
        if _send_verdict(session, candidate, claim, record):
            served.answered.append(record)
            say(candidate, "answered", record)
        else:
            say(candidate, "lost", record)
    return served


def _send_verdict(session: Session, candidate: Candidate, claim: str,
                  record: dict[str, Any]) -> bool:
    """Send ``record`` as the verdict on ``candidate`` (:func:`history.queue.publish`: False
    when another host took it over) and forget the runs this command recorded, in one deferred
    section: a signal that arrives meanwhile is raised once the verdict is sent, and then names
    no run (its verdict is on the remote)."""
    from ..runtime import signals

    assert session.remote is not None
    checkpoint("measurer:before-verdict")
    with signals.deferred():
        sent = publish(session.repo, session.remote, session.config.session_id, candidate,
                       claim, record)
        checkpoint("measurer:after-verdict")
        signals.forget_recorded()
    return sent


def _measured(session: Session, candidate: Candidate, say: Report) -> dict[str, Any]:
    """Measure, decide and record ``candidate`` as ``run`` does: its run's record, or
    ``{"refused": "<why>"}`` when its change conflicts with the incumbent or is in it already
    (nothing measured or recorded)."""
    try:
        done = iterate(session, candidate.description, candidate.asi,
                       retry=Queued(0, candidate.commit, candidate.description,
                                    candidate=candidate))
    except ChangeRefused as refused:
        # Said to the agent, whose HEAD is not this host's, and who records it as a discard
        # (its work tree is what changes there).
        text = refused.message.removesuffix(": nothing was changed")
        why: dict[str, Any] = {"refused": text.replace(" with HEAD (", " with the incumbent (")
                               .replace(" in HEAD already", " in the incumbent already")}
        say(candidate, "conflict", why)
        return why
    assert done.recorded is not None
    record: dict[str, Any] = dict(done.recorded.record)
    say(candidate, "measured", record)
    return record


# --- the agent's side: a candidate queued, and its verdict waited for --------------------------

# What the agent's side says while it waits: (seconds waited, the host measuring it or None).
Waiting = Callable[[float, "str | None"], None]


@dataclass
class Sent:
    """A candidate an agent queued: the ``candidate``, the HEAD it was built on (``head``)
    and the ``paths`` of the work tree it holds."""

    candidate: Candidate
    head: str
    paths: tuple[str, ...]


# In the agent's scratch folder while a candidate it sent waits for its verdict: a ``run``
# killed while waiting (or given up) leaves it, and the next ``run`` collects that verdict
# instead of queueing the same work tree twice.
SENT_FILE = "queued.json"


def _sent_path(session: Session) -> Path:
    return session.repo.scratch / SENT_FILE


def pending(session: Session) -> Sent | None:
    """The candidate this clone sent whose verdict it has not collected yet, or None."""
    import json

    try:
        data = json.loads(_sent_path(session).read_bytes())
        found = data["candidate"]
        candidate = Candidate(str(found["key"]), str(found["commit"]), str(found["base"]),
                              str(found["agent"]), str(found["description"]),
                              dict(found["asi"]), float(found["submitted"]))
        return Sent(candidate, str(data["head"]), tuple(str(p) for p in data["paths"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def send(session: Session, description: str, asi: dict[str, Any]) -> Sent:
    """Queue the work tree of ``session`` (a clone joined to its remote) as a candidate: its
    changed paths (protected ones aside) committed on HEAD through a temporary index (the
    user's index untouched) and pushed to the remote's queue. The work tree stays as it is."""
    if session.remote is None:
        raise Refused("measuring on a host needs a clone joined to the session's remote (git "
                      "autoresearch worker join REMOTE SESSION --measure-on-host)")
    repo, head = session.repo, session.head()
    paths = sorted(p for p in session.changes().changed() if not session.bounds.is_protected(p))
    with temporary_index(repo, copy_of_real=False) as index:
        index.read_tree(head)
        index.add_paths(paths)
        tree = index.write_tree()
    commit = repo.commit_tree(tree, [head], "git-autoresearch: a work tree to queue")
    # Remembered before it is pushed: a run killed during the push leaves it known, and the
    # next run finds out whether it reached the queue (wait), never queueing it twice.
    try:
        candidate = submit(repo, session.remote, session.config.session_id, commit,
                           agent=session.worker_name, description=description, asi=asi,
                           before_push=lambda found: _remember(
                               session, Sent(found, head, tuple(paths))))
    except Refused:
        forget(session)
        raise
    return Sent(candidate, head, tuple(paths))


def forget(session: Session) -> None:
    """Forget the candidate this clone sent (:func:`pending`)."""
    _sent_path(session).unlink(missing_ok=True)


class NeverQueued(Refused):
    """The candidate this clone remembers is not on the remote: not in its queue, not taken,
    no verdict (its run was killed while it pushed it). It is forgotten."""


def _remember(session: Session, sent: Sent) -> None:
    import dataclasses
    import json

    from ..runtime.atomic import write_atomic

    data = {"candidate": {**dataclasses.asdict(sent.candidate), "asi": dict(sent.candidate.asi),
                          "taken": None},
            "head": sent.head, "paths": list(sent.paths)}
    session.repo.scratch.mkdir(parents=True, exist_ok=True)
    write_atomic(_sent_path(session), json.dumps(data).encode())


def wait(session: Session, sent: Sent, *, timeout: float | None, poll: float = 1.0,
         waiting: Waiting | None = None) -> dict[str, Any] | None:
    """The verdict on ``sent`` once a host has sent it (the run record, or ``{"refused":
    ...}``), looking every ``poll`` seconds; None after ``timeout`` seconds (None: no limit).
    :class:`NeverQueued` when two looks in a row find it nowhere on the remote."""
    assert session.remote is not None
    repo, remote, sid, key = session.repo, session.remote, session.config.session_id, \
        sent.candidate.key
    began = time.monotonic()
    claim, host = None, None  # the host's claim last seen, and the host that holds it
    absent = 0  # looks in a row that found the candidate nowhere on the remote
    while True:
        seen = watch(repo, remote, sid, key)
        if seen.record is not None:
            return seen.record
        absent = absent + 1 if seen.claim is None and not seen.queued else 0
        if absent == 2:  # (twice: never between a host's two pushes)
            forget(session)
            raise NeverQueued(f"candidate {key} ({sent.candidate.description!r}) never reached "
                              f"the queue on {remote}: its run was killed while sending it; "
                              "it is forgotten, and the work tree is as it was")
        waited = time.monotonic() - began
        if timeout is not None and waited >= timeout:
            return None
        if waiting is not None:
            if seen.claim != claim:
                claim = seen.claim
                host = claimant(repo, claim) if claim else None
            waiting(waited, host)
        time.sleep(poll)


def collect(session: Session, sent: Sent, found: dict[str, Any]
            ) -> tuple[dict[str, Any], str | None]:
    """Collect the verdict ``found`` on ``sent`` (what :func:`wait` returned), under the
    session lock, so that of two commands collecting one candidate (a ``run`` left waiting and
    a ``collect``) one does and the other is refused (exit 3), nothing changed. A candidate the
    host refused is recorded here (:func:`_record_refused`); then the work tree is settled
    (:func:`settle`). Returns the run's record and a warning, or None."""
    from ..record.recovery import locked

    with locked(session, "collect"):
        now = pending(session)
        if now is None or now.candidate.key != sent.candidate.key:
            raise Refused(f"the verdict on candidate {sent.candidate.key} was collected by "
                          "another command meanwhile; nothing was changed here")
        refused = "refused" in found
        if refused:
            found = _record_refused(session, sent, str(found["refused"]))
        return found, settle(session, sent, reverted=refused)


def _record_refused(session: Session, sent: Sent, why: str) -> dict[str, Any]:
    """A candidate the host refused (its change conflicts with the incumbent, or is in it
    already) recorded here as a discard saying why, as a worker's candidate that conflicts is:
    its work tree saved at its attempt ref and reverted, nothing measured (the session lock
    held). Returns the record."""
    from ..hooks.payload import fire_stage
    from ..record.transaction import record

    recorded = record(session, "discard", sent.candidate.description, result=None,
                      asi=sent.candidate.asi, reason=f"not measured: {why}",
                      origin={"queued": {"key": sent.candidate.key,
                                         "agent": sent.candidate.agent}})
    fire_stage(session, "after", recorded.record)
    return dict(recorded.record)


def settle(session: Session, sent: Sent, *, reverted: bool = False) -> str | None:
    """After the verdict on ``sent``: the candidate's paths put back as HEAD has them (the
    host kept or saved it), then the session branch fetched and the worker moved to the
    incumbent, as after a run recorded here (``reverted``: the run was recorded here, which
    reverted the work tree already). A work tree that changed since the candidate was queued
    is left as it is. Returns a warning when it could not follow."""
    repo = session.repo
    _sent_path(session).unlink(missing_ok=True)
    if reverted:  # recorded here (a refused candidate): the record reverted the work tree
        sync(session)
        return follow(session)
    if session.head() != sent.head:
        return None
    paths = list(sent.paths)
    if hash_files(repo, [p for p in paths if os.path.lexists(repo.top / p)]) != \
            repo.blobs(sent.candidate.commit, paths):
        return ("the work tree changed since its candidate was queued: it was left as it is "
                "(the candidate is saved on the remote); revert or record it")
    repo.restore_from_head(paths)  # index and work tree as HEAD has them, as a revert leaves
    sync(session)
    note = follow(session)
    from ..history.experiment import snapshot_now

    # As after a run recorded here (else a file the next experiment creates would be taken
    # for the user's).
    return snapshot_now(repo, session.layout.untracked) or note
