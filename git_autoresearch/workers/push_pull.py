"""Sharing a session through a git remote: ``git autoresearch push`` and ``pull``.

A session travels as its refs: the session branch ``autoresearch/<id>``, and everything below
``refs/autoresearch/<id>/`` (attempt and scope refs, and the state ref, whose commits hold the
ledger and the session files, :mod:`git_autoresearch.history.state_ref`). As DVC's
``exp push``/``exp pull`` send ``refs/exps/...`` (iterative/dvc, ``dvc/repo/experiments/push.py``:
refuses a remote experiment that diverged unless forced), a push sends them all or nothing (``git
push
--atomic``), and never rewrites what the remote has: every ref is pushed with
``--force-with-lease=<ref>:<the value read from the remote>`` (git-push(1); the compare-and-swap
git-perf pushes its notes ref with, reading ``--porcelain``'s ``!`` flag for a refusal:
kaihowl/git-perf, ``git_perf/src/git/git_interop.rs``, ``git_push_notes_ref``), and only when
the remote's value is an ancestor of ours. A state ref chains each mirror on the previous one,
so "the remote's state is not an ancestor of ours" is "the remote holds runs we have not": the
push is refused, naming them. A pull is the mirror image: each ref moves here only forward,
all in one local ref transaction, and the session files are written to ``.auto/`` when this
work tree has none (or holds the same session with fewer runs), so that ``log``, ``status``,
``show`` and ``dashboard`` read it and ``resume`` carries it on.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from .. import ledger as ledger_mod
from ..git import GitError, Repo
from ..git.remote import (
    fetch_objects,
    has_commit,
    is_ancestor,
    push_atomic,
    remote_refs,
    remote_refusal,
)
from ..git.remote import update_refs as move_refs
from ..history.refs import (
    NAMESPACE,
    ledgers_prefix,
    namespace,
    runs_prefix,
    session_branch,
    session_of_branch,
    session_of_state_ref,
    state_ref,
    upstream_ref,
)
from ..history.state_ref import FILES, read_at
from ..ledger.repairs import lost_lines
from ..lifecycle.resume import joined_runs, restore_files
from ..runtime.atomic import write_atomic
from ..runtime.errors import Refused, UsageError
from ..session.config import SESSION_ID_RE
from ..session.layout import Layout, exclude_auto
from ..session.lock import SessionLock
from ..session.shared import joined, joined_workers
from .sessions import local_session


@dataclass
class Moved:
    """One ref a push or pull moved: full name, ``old`` value (None: it was created) and
    ``new`` value."""

    ref: str
    old: str | None
    new: str

    def to_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "old": self.old, "new": self.new}


@dataclass
class Shared:
    """What a push or pull did: the ``remote``, the ``session`` id, the refs ``moved``, the refs
    that are newer on this side than on the other (left as they are: ``ahead``), the session
    files ``restored`` into ``.auto/`` (pull), and ``notes``."""

    remote: str
    session: str
    moved: list[Moved] = field(default_factory=list)
    ahead: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"remote": self.remote, "session": self.session,
                "moved": [m.to_json() for m in self.moved], "up_to_date": not self.moved,
                "ahead": self.ahead, "restored": self.restored, "notes": self.notes}


def default_remote(repo: Repo) -> str:
    """``origin`` when it is configured, else the only remote; :class:`UsageError` otherwise."""
    remotes = repo.remotes()
    if "origin" in remotes:
        return "origin"
    if len(remotes) == 1:
        return remotes[0]
    raise UsageError("name the remote: " + (f"this repository has several ({', '.join(remotes)})"
                                            if remotes else "this repository has none"))


def _check_names(remote: str, session: str | None) -> None:
    if remote.startswith("-") or not remote:
        raise UsageError(f"bad remote name {remote!r}")
    if session is not None and not SESSION_ID_RE.match(session):
        raise UsageError(f"bad session id {session!r} (letters, digits, '-' and '_')")


def _here(repo: Repo) -> str | None:
    """The session of this work tree: ``.auto/``'s, else the checked-out session branch's."""
    return local_session(repo) or session_of_branch(repo.current_branch())


def _session_refs(sid: str) -> list[str]:
    """The prefixes of a session's refs: its branch, and its namespace."""
    return [f"refs/heads/{session_branch(sid)}", namespace(sid) + "/"]


def _local_refs(repo: Repo, sid: str, *, sending: bool = False) -> dict[str, str]:
    """The session's refs here, by full name. ``sending``: without those a push never sends:
    what a joined clone last saw on its remote, and the ledger refs and run numbers of joined
    clones, which travel by themselves (:mod:`history.remote_ledger`), each pushed by its own
    clone."""
    travel = (ledgers_prefix(sid), runs_prefix(sid)) if sending else ()
    found = {ref: oid for ref, oid in repo.ref_objects(namespace(sid) + "/")
             if ref != upstream_ref(sid) and not (travel and ref.startswith(travel))}
    if joined(repo, sid):  # its state ref mirrors this clone's own ledger: it stays here
        found.pop(state_ref(sid), None)
    tip = repo.resolve(f"refs/heads/{session_branch(sid)}")
    if tip is not None:
        found[f"refs/heads/{session_branch(sid)}"] = tip
    return found


def _runs_of(repo: Repo, state: str) -> dict[int, str]:
    """The run records of the ledger in state commit ``state``, by number (their JSON)."""
    saved = read_at(repo, state)
    if saved is None:
        return {}
    book = ledger_mod.parse(saved[0].get("log.jsonl", b""))
    return {run.number: ledger_mod.dumps(run.data) for run in book.runs}


def _span(numbers: list[int]) -> str:
    if not numbers:
        return "none"
    return ", ".join(str(n) for n in numbers) if len(numbers) <= 6 else \
        f"{numbers[0]} to {numbers[-1]} ({len(numbers)} runs)"


def _runs(numbers: list[int]) -> str:
    """``run 4`` or ``runs 4, 5``."""
    return f"run {numbers[0]}" if len(numbers) == 1 else f"runs {_span(numbers)}"


def _be(numbers: list[int]) -> str:
    return "is" if len(numbers) == 1 else "are"


def _differs(repo: Repo, sid: str, ref: str, ours: str | None, theirs: str,
             where: str) -> str:
    """What differs between our value of ``ref`` and the other side's (``where``), for a
    refusal: runs for the state ref, the ref's name for any other."""
    if session_of_state_ref(ref) == sid and ours is not None and has_commit(repo, theirs):
        mine, other = _runs_of(repo, ours), _runs_of(repo, theirs)
        only_there = sorted(n for n in other if n not in mine)
        changed = sorted(n for n in other if n in mine and mine[n] != other[n])
        only_here = sorted(n for n in mine if n not in other)
        parts = []
        if only_there:
            parts.append(f"{_runs(only_there)} {_be(only_there)} {where} only")
        if changed:
            parts.append(f"{_runs(changed)} {'differs' if len(changed) == 1 else 'differ'}")
        if only_here:
            parts.append(f"{_runs(only_here)} {_be(only_here)} here only")
        return f"state of session {sid} ({'; '.join(parts) or 'its session files differ'})"
    return ref


def _target(repo: Repo | None, remote: str | None, session: str | None
            ) -> tuple[Repo, str, str | None]:
    """The repository (the current directory's when None), the remote (:func:`default_remote`
    when None) and the session (this work tree's when None: None when it has none) a push or
    pull is for; the names are checked first."""
    repo = repo or Repo.discover()
    remote = remote or default_remote(repo)
    _check_names(remote, session)
    return repo, remote, session or _here(repo)


def push(repo: Repo | None, remote: str | None = None, session: str | None = None) -> Shared:
    """Send session ``session`` (default: this work tree's) to ``remote`` (default:
    :func:`default_remote`): its branch and every ref below ``refs/autoresearch/<id>/``, in one
    atomic push where each ref moves only from the value read from the remote to a descendant
    of it. Raises :class:`Refused` (exit 3), nothing pushed, when a remote ref is not an
    ancestor of ours (naming the runs the remote's state holds that ours does not), or when
    the remote moved between reading and pushing. ``repo``: the one around the current
    directory when None."""
    repo, remote, sid = _target(repo, remote, session)
    if sid is None:
        raise UsageError("name the session to push: this work tree has none "
                         "(git autoresearch sessions lists them)")
    shared = Shared(remote, sid)
    if local_session(repo) == sid:
        shared.notes += _mirror_first(repo, sid)
    ours = _local_refs(repo, sid, sending=True)
    if not ours:
        raise UsageError(f"no session {sid!r} here: no branch {session_branch(sid)} and no "
                         f"refs below {namespace(sid)}/")
    theirs = remote_refs(repo, remote, _session_refs(sid))
    unknown = [ref for ref, oid in theirs.items()
               if ref in ours and oid != ours[ref] and not has_commit(repo, oid)]
    fetch_objects(repo, remote, unknown)  # what cannot be fetched counts as diverged below
    updates: dict[str, tuple[str, str]] = {}
    conflicts: list[str] = []
    for ref, oid in sorted(ours.items()):
        there = theirs.get(ref)
        if there == oid:
            continue
        if there is None:
            updates[ref] = (oid, "")
        elif has_commit(repo, there) and is_ancestor(repo, there, oid):
            updates[ref] = (oid, there)
        else:
            conflicts.append(_differs(repo, sid, ref, oid, there, f"on {remote}"))
    if conflicts:
        behind = all(has_commit(repo, theirs[r]) and is_ancestor(repo, ours[r], theirs[r])
                     for r in ours if r in theirs and theirs[r] != ours[r])
        advice = (f"git autoresearch pull {remote} {sid}, then push again" if behind else
                  "runs were recorded on both sides since they parted; keep one side's "
                  "session (or start a new session id on this side)")
        raise Refused(f"{remote} holds a newer {conflicts[0]}"
                      + (f" (and {len(conflicts) - 1} more ref(s) differ)"
                         if len(conflicts) > 1 else "")
                      + f"; nothing was pushed: {advice}")
    if not updates:
        return shared
    code, answer, said = push_atomic(repo, remote, updates, verify=True)
    if code != 0:
        refusal = remote_refusal(answer, said)
        if refusal is not None:
            raise Refused(f"{remote} refused the push: {refusal}; nothing was pushed (an "
                          "atomic push is all or nothing): once it takes these refs, push again")
        if not answer:  # refused before anything was sent: the pre-push hook
            told = " / ".join(line.strip() for line in said.splitlines()
                              if line.strip() and not line.startswith("error: failed to push"))
            raise Refused(f"the push to {remote} was refused before it was sent (the "
                          f"pre-push hook?): {told[-400:] or 'git said nothing'}; nothing was "
                          "pushed")
        rejected = [p.ref for p in answer if p.flag == "!"] or sorted(updates)
        raise Refused(f"{remote} refused the push of {rejected[0]}"
                      + (f" and {len(rejected) - 1} more" if len(rejected) > 1 else "")
                      + " (its refs moved since they were read, or the remote refuses these "
                      "refs); nothing was pushed: run git autoresearch push again")
    shared.moved = [Moved(ref, old or None, new) for ref, (new, old) in updates.items()]
    return shared


def _mirror_first(repo: Repo, sid: str) -> list[str]:
    """Mirror ``.auto/`` (this work tree's session ``sid``) on the state ref when the state
    ref does not hold its ledger, configuration, prompt, ideas and hooks as they are (a mirror
    that failed, notes edited since the last run, a hook added by hand), so that the push sends
    them. Returns warnings."""
    from ..history.state_ref import LINK, LedgerShrank, current, mirror, read

    layout = Layout(repo)
    saved = read(repo, sid)
    held = {name: (data, saved[1].get(name) == LINK)
            for name, data in saved[0].items()} if saved else {}
    if held == current(layout.auto):
        return []
    try:
        with SessionLock(repo.scratch, "push"):
            mirror(repo, layout.auto, sid, "push: the session files as they are")
    except (LedgerShrank, GitError, OSError) as exc:
        return [f"the session files were not mirrored before pushing: {exc}"]
    return []


def pull(repo: Repo | None, remote: str | None = None, session: str | None = None, *,
         joining: bool = False) -> Shared:
    """Fetch session ``session`` from ``remote`` (defaults: this work tree's session, else the
    only session the remote holds; :func:`default_remote`): each of its refs moves here only
    forward, all in one transaction, then its session files are written to ``.auto/`` when
    this work tree has none or holds the same session with fewer runs (as ``resume`` restores
    them). Raises :class:`Refused` (exit 3), nothing changed, when a ref diverged (naming the
    runs) or the session branch to move is checked out; :class:`UsageError` when the remote
    has no such session, or several and none was named. ``repo``: the one around the current
    directory when None. ``joining``: for ``worker join``, which makes this clone one of the
    joined clones next (no note says to join)."""
    repo, remote, sid = _target(repo, remote, session)
    if sid is None:
        there = sorted({s for s in map(session_of_state_ref,
                                       remote_refs(repo, remote, [NAMESPACE])) if s})
        if len(there) != 1:
            raise UsageError(f"name the session to pull: {remote} holds "
                             + (f"several ({', '.join(there)})" if there else "none"))
        sid = there[0]
    theirs = remote_refs(repo, remote, _session_refs(sid))
    if not theirs:
        raise UsageError(f"{remote} has no session {sid!r} (no {session_branch(sid)}, no refs "
                         f"below {namespace(sid)}/)")
    if joined(repo, sid):  # this clone's state ref mirrors its own ledger: left alone
        theirs.pop(state_ref(sid), None)
    elif state_ref(sid) not in theirs and local_session(repo) != sid:  # (nothing to write)
        raise Refused(f"{remote} holds the branch of session {sid} but not its files "
                      f"({state_ref(sid)}): git autoresearch push (or the first worker join) "
                      "where the session was started sends them; nothing was changed")
    missing = [ref for ref, oid in theirs.items() if not has_commit(repo, oid)]
    if not fetch_objects(repo, remote, missing) or not all(
            has_commit(repo, theirs[ref]) for ref in missing):
        raise Refused(f"could not fetch session {sid} from {remote} (its refs moved while "
                      "they were read?); nothing was changed: run git autoresearch pull again")
    ours = _local_refs(repo, sid)
    shared = Shared(remote, sid)
    changes: dict[str, tuple[str | None, str | None]] = {}
    conflicts = []
    for ref, oid in sorted(theirs.items()):
        here = ours.get(ref)
        if here == oid:
            continue
        if here is None or is_ancestor(repo, here, oid):
            changes[ref] = (oid, here)
        elif is_ancestor(repo, oid, here):
            shared.ahead.append(ref)
        else:
            conflicts.append(_differs(repo, sid, ref, here, oid, f"on {remote}"))
    if conflicts:
        raise Refused(f"the {conflicts[0]} here diverged from {remote}'s"
                      + (f" (and {len(conflicts) - 1} more ref(s))" if len(conflicts) > 1
                         else "") + "; nothing was changed here")
    branch = session_branch(sid)
    moving_branch = f"refs/heads/{branch}" in changes and ours.get(f"refs/heads/{branch}")
    if moving_branch and (repo.current_branch() == branch
                          or repo.worktree_of(branch) is not None):
        raise Refused(f"the session branch {branch} is checked out (here or in another "
                      f"worktree) and {remote} has newer commits on it; nothing was changed: "
                      "switch that worktree to another branch (git switch -), pull again, "
                      "then git autoresearch resume")
    with SessionLock(repo.scratch, "pull"):
        if not move_refs(repo, changes, f"autoresearch pull: {sid} from {remote}"):
            raise Refused(f"the refs of session {sid} moved here while pulling; nothing was "
                          "changed: run git autoresearch pull again")
        shared.moved = [Moved(ref, old, new) for ref, (new, old) in changes.items()
                        if new is not None]
        _files_here(repo, sid, shared)
    workers = [] if joining else joined_workers(repo, sid)
    if workers and not joined(repo, sid):
        shared.notes.append(f"session {sid} is run by clones that joined it through {remote} "
                            f"({', '.join(workers)}): to run it here, join it (git "
                            f"autoresearch worker join {remote} {sid})")
    return shared


def _files_here(repo: Repo, sid: str, shared: Shared) -> None:
    """Write the session files of ``sid`` from its state ref into ``.auto/`` when this work
    tree holds no session, or the same one (its ledger extended when it lost lines: runs
    recorded elsewhere); say so in ``shared``."""
    layout = Layout(repo)
    here = local_session(repo)
    if here is None and layout.config_exists():
        shared.notes.append(".auto/config.toml here cannot be read: the session files were "
                            "not written (git autoresearch resume --session-id "
                            f"{sid} restores what is missing)")
        return
    if here not in (None, sid):
        shared.notes.append(f".auto/ here holds session {here}: the files of session {sid} "
                            "stay on its state ref (move .auto/ aside, then git autoresearch "
                            f"resume --session-id {sid})")
        return
    if here == sid and layout.ledger.is_file():
        _extend_ledger(repo, layout, sid, shared)
    else:
        shared.restored = restore_files(repo, layout, sid)
        if shared.restored:
            exclude_auto(repo)
    added = joined_runs(repo, layout, sid)
    shared.restored += added
    if added:  # the state ref holds what .auto/ holds now, as after any command that writes it
        from ..history.state_ref import LedgerShrank, mirror

        try:
            mirror(repo, layout.auto, sid, "pull: the runs of the clones that joined")
        except (LedgerShrank, GitError, OSError) as exc:
            shared.notes.append(f"the session files were not mirrored on the state ref: {exc}")


def _extend_ledger(repo: Repo, layout: Layout, sid: str, shared: Shared) -> None:
    """This work tree holds session ``sid``: when its ledger is the beginning of the pulled
    one (runs were recorded elsewhere), it becomes the pulled one, and the configuration,
    prompt and ideas become the pulled ones (a local copy that differs is kept beside)."""
    saved = read_at(repo, state_ref(sid))
    if saved is None:
        return
    pulled = saved[0].get("log.jsonl", b"")
    current = layout.ledger.read_bytes()
    if not lost_lines(current, pulled):
        return
    known = {run.number for run in ledger_mod.parse(current).runs}
    added = sorted(run.number for run in ledger_mod.parse(pulled).runs
                   if run.number not in known)
    write_atomic(layout.ledger, pulled)
    shared.restored.append(f"added run(s) {_span(added)} to .auto/log.jsonl")
    # The runs came with the configuration, prompt and ideas they were recorded under; a
    # local copy that differs is kept beside it.
    for name in FILES:
        data = saved[0].get(name)
        path = layout.auto / name
        if data is None or (path.is_file() and path.read_bytes() == data):
            continue
        note = f"updated .auto/{name}"
        if path.is_file():
            kept = path.with_name(f"{name}.before-pull.{time.time_ns()}")
            os.replace(path, kept)
            note += f" (the old file is .auto/{kept.name})"
        write_atomic(path, data, 0o444 if name == "config.toml" else saved[1].get(name, 0o644))
        shared.restored.append(note)
