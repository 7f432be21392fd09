"""Workers on several machines, through a git remote every machine can push to: ``worker join
REMOTE SESSION`` makes a clone one (:mod:`workers.upstream` keeps it in step with the remote).

A joined clone is a worker like a worktree's (:mod:`workers.pool`), with its own ``.auto/`` and
its marker's ``remote``. Its session branch is the remote's: fetched before each measurement
(:func:`sync`), the candidate replayed onto it when another worker kept (:mod:`workers.replay`),
and advanced there only by an atomic push with a lease on the commit the keep was made on
(:func:`land`). When the lease fails (another machine kept first) the keep is undone here,
the candidate left in the work tree, and :class:`session.shared.IncumbentMoved` raised, so that
the candidate is replayed onto the new incumbent and measured again, as with workers on one
machine. Run numbers are taken on the remote, and each run's ledger travels as the worker's
ledger ref (:mod:`history.remote_ledger`). No server: the remote is any git remote.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass, field
from typing import Any

from ..git import GitError, Repo
from ..git.merge import switch_new
from ..git.remote import remote_refs
from ..history.refs import ledgers_prefix, session_branch, state_ref, worker_branch
from ..history.remote_ledger import fetch, publish
from ..runtime.errors import Refused
from ..runtime.faults import checkpoint
from ..session.shared import Worker, check_name, current, mark, valid_name
from .upstream import follow_upstream


@dataclass
class Joined:
    """What ``worker join`` did: the ``worker`` name, its ``branch``, the incumbent it starts
    from (``commit``), and notes (session files written, the session sent first)."""

    worker: str
    session_id: str
    remote: str
    branch: str
    commit: str
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"worker": self.worker, "session_id": self.session_id, "remote": self.remote,
                "branch": self.branch, "commit": self.commit, "notes": self.notes}


def default_name() -> str:
    """This machine's short host name, as a worker name (letters, digits, - and _)."""
    host = re.sub(r"[^A-Za-z0-9_-]", "-", socket.gethostname().split(".")[0])[:40].strip("-")
    return host if valid_name(host) else "worker"


def join(repo: Repo | None, remote: str, session_id: str, name: str | None = None, *,
         on_host: bool = False) -> Joined:
    """Make this clone a worker of session ``session_id`` shared through ``remote``: the
    session's refs and files fetched (``pull``; the session sent there first when it was
    started here and the remote lacks it), a worker branch made at the incumbent and checked
    out, the marker written, and the worker's ledger ref created there. Joining again (the
    same name) carries on. Refuses (exit 3) when the remote has no such session, another clone
    joined under ``name``, this work tree holds another session, or a changed file is in the
    way of the checkout; a bad name is a usage error (exit 2). ``repo``: the one around the
    current directory when None. ``on_host``: this clone's candidates are measured by a
    measuring host (``run`` queues them), not here; joining again sets it anew."""
    from .push_pull import pull
    from .push_pull import push as send
    from .sessions import local_session

    repo = repo or Repo.discover()
    name = name or default_name()
    check_name(name)
    here = local_session(repo)
    if here not in (None, session_id):
        raise Refused(f".auto/ here holds session {here}: join from a clone without one")
    marker = current(repo)
    if marker is not None and (marker.session_id != session_id or marker.remote is None
                               or marker.name != name):
        raise Refused(f"this work tree is worker {marker.name} of session "
                      f"{marker.session_id}" + (f" through {marker.remote}" if marker.remote
                                                else "") + ": join from another clone")
    branch = f"refs/heads/{session_branch(session_id)}"
    theirs = remote_refs(repo, remote, [branch, state_ref(session_id),
                                        ledgers_prefix(session_id)])
    joined = Joined(name, session_id, remote, worker_branch(session_id, name), "")
    # The session is there once its files are (the state ref): a session branch pushed there
    # by hand (git push --all) is not the session.
    if branch not in theirs or state_ref(session_id) not in theirs:
        if here != session_id:
            raise Refused(f"{remote} has no session {session_id} (no "
                          + (f"branch {session_branch(session_id)}" if branch not in theirs
                             else f"session files, {state_ref(session_id)}")
                          + "): start it on one machine and join there first, which sends it")
        send(repo, remote, session_id)
        joined.notes.append(f"sent session {session_id} to {remote}")
    prefix = ledgers_prefix(session_id)
    alike = [ref[len(prefix):] for ref in theirs if ref.startswith(prefix)
             and ref[len(prefix):].lower() == name.lower()]
    if alike and marker is None:
        raise Refused(f"a worker named {alike[0]} already joined session {session_id} through "
                      f"{remote}: choose another name (--name)")
    if here is None:
        shared = pull(repo, remote, session_id, joining=True)
        joined.notes += shared.notes + shared.restored
        if local_session(repo) != session_id:
            raise Refused(f"the session files of {session_id} could not be written to .auto/ "
                          "here: " + "; ".join(shared.notes or ["see git autoresearch doctor"]))
    tip = fetch(repo, remote, session_id)
    follow_upstream(repo, session_id, tip)
    from ..session.layout import Layout

    checkpoint("join:before-claim")
    if marker is None:  # the name is taken by creating its ledger ref there, if still free
        taken = publish(repo, remote, session_id, name, Layout(repo).ledger, create=True)
        if taken:
            raise Refused(f"a worker named {name} joined session {session_id} through "
                          f"{remote} meanwhile (or the remote refused its ledger ref): join "
                          "again with another name (--name); this clone is no worker yet")
    try:
        switch_new(repo, joined.branch, tip)
    except GitError as exc:
        raise Refused(f"git could not check out the worker branch {joined.branch}: "
                      f"{exc.message}") from None
    mark(repo, Worker(name, session_id, repo.top, remote, on_host))
    from ..history.experiment import load_snapshot, save_snapshot, take_snapshot

    layout = Layout(repo)
    if load_snapshot(layout.untracked) is None:
        # What is untracked now is the user's: a file the first experiment creates is not.
        save_snapshot(layout.untracked, take_snapshot(repo))
    joined.commit = repo.short(repo.head() or tip)
    joined.notes += publish(repo, remote, session_id, name, layout.ledger)
    return joined
