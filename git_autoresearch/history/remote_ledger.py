"""What a worker that joined a session through a git remote (``worker join``) sends and reads:
its ledger as a ref, run numbers taken on the remote, and the ledgers of the others merged
into its own when it reads.

- ``refs/autoresearch/<id>/ledgers/<worker>``: a commit whose tree holds ``log.jsonl``, the
  worker's ledger file as it was after its last run; each commit on the previous one, pushed
  with a lease on the value last fetched, after every run.
- ``refs/autoresearch/<id>/runs/<n>``: run ``n`` taken; created on the remote with a lease
  that it must not exist yet, so two machines never give one number to two runs.
- ``refs/autoresearch/<id>/upstream``: the remote's session branch as last fetched (here only).

The ledger file of a joined worker holds what it wrote (and the runs it found when it
joined); :func:`read_merged` adds, in time order, every run record of the other workers'
ledger refs fetched here whose number it does not hold. Nothing here writes the ledger file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import ledger as ledger_mod
from ..git import ABSENT, GitError, Repo
from ..git.objects import cat_named_blobs, make_tree, write_blob
from ..git.remote import fetch_refspecs, push_atomic, remote_refs, remote_refusal
from ..ledger.jsontext import is_whole
from ..runtime.errors import Refused
from .refs import (
    attempt_ref,
    attempts_prefix,
    ledgers_prefix,
    namespace,
    runs_prefix,
    scope_prefix,
    session_branch,
    upstream_ref,
)

LEDGER_FILE = "log.jsonl"
# How many taken numbers a claim steps over before it gives up (others claim as fast).
CLAIM_TRIES = 20


def fetch(repo: Repo, remote: str, session_id: str) -> str:
    """Fetch from ``remote`` the session branch (to :func:`~history.refs.upstream_ref`), every
    worker's ledger ref, every run number taken, and the attempt and scope refs the runs name,
    in one ``git fetch``; returns the
    remote's session branch tip. Raises :class:`Refused` when the remote cannot be read."""
    branch = f"refs/heads/{session_branch(session_id)}"
    travel = [ledgers_prefix(session_id), runs_prefix(session_id),
              attempts_prefix(session_id), scope_prefix(session_id)]
    problem = fetch_refspecs(repo, remote, [f"+{branch}:{upstream_ref(session_id)}",
                                            *(f"+{p}*:{p}*" for p in travel)])
    repo.forget_refs()
    tip = repo.resolve(upstream_ref(session_id))
    if problem is not None or tip is None:
        raise Refused(f"cannot fetch session {session_id} from {remote}: "
                      f"{problem or 'no session branch there'}")
    return tip


# --- reading ------------------------------------------------------------------------------

def _stamp(raw: bytes, before: int) -> int:
    """A ledger line's ``timestamp`` (epoch ms), or ``before`` when it has none."""
    try:
        value = json.loads(raw).get("timestamp")
    except (ValueError, AttributeError):
        return before
    return value if isinstance(value, int) and not isinstance(value, bool) else before


def merged(local: bytes, foreign: Sequence[bytes], book: ledger_mod.Ledger | None = None
           ) -> bytes:
    """``local`` ledger bytes with the run records of the ``foreign`` ledgers whose run number
    ``local`` (or an earlier foreign ledger) does not hold, each placed before the first local
    line stamped later than it (runs in time order; a line without a timestamp goes with the
    one before it). A last local line cut short stays last. The bytes are ``local`` as they
    are when nothing is added. ``book``: ``local`` read already (:func:`ledger.parse`)."""
    if not foreign:
        return local
    known = {run.number for run in (book or ledger_mod.parse(local)).runs}
    extra: list[tuple[int, bytes]] = []
    for blob in foreign:
        lines = blob.split(b"\n")
        for run in ledger_mod.parse(blob).runs:
            if run.number in known:
                continue
            known.add(run.number)
            extra.append((_stamp(lines[run.line - 1], 0), lines[run.line - 1].strip()))
    if not extra:
        return local
    extra.sort(key=lambda item: item[0])
    cut = local.rfind(b"\n") + 1  # what follows the last newline is a line cut short
    body, torn = local[:cut], local[cut:]
    out: list[bytes] = []
    at, stamp = 0, 0
    for raw in body.split(b"\n")[:-1]:
        stamp = _stamp(raw, stamp) if raw.strip() else stamp
        while at < len(extra) and extra[at][0] < stamp:
            out.append(extra[at][1])
            at += 1
        out.append(raw)
    out += [line for _, line in extra[at:]]
    return b"".join(line + b"\n" for line in out) + torn


def foreign_ledgers(repo: Repo, session_id: str, own: str) -> list[bytes]:
    """The ledgers of the other workers' ledger refs fetched here (not ``own``'s)."""
    return [data for _, data in ledgers_by_worker(repo, session_id, own)]


def ledgers_by_worker(repo: Repo, session_id: str, own: str = "") -> list[tuple[str, bytes]]:
    """(worker name, ledger bytes) of each ledger ref of session ``session_id`` fetched here,
    but worker ``own``'s, in the order of the refs' names
    (:func:`session.shared.joined_workers`)."""
    from ..session.shared import joined_workers

    names = [name for name in joined_workers(repo, session_id) if name != own]
    found = cat_named_blobs(repo, [f"{ledgers_prefix(session_id)}{name}:{LEDGER_FILE}"
                                   for name in names])
    return [(name, data) for name, data in zip(names, found, strict=True) if data is not None]


def worker_ledger(repo: Repo, session_id: str, worker: str) -> bytes | None:
    """The ledger worker ``worker``'s ledger ref holds here (None: no such ref)."""
    return cat_named_blobs(repo, [f"{ledgers_prefix(session_id)}{worker}:{LEDGER_FILE}"])[0]


def run_lines(repo: Repo, session_id: str, wanted: Sequence[int]) -> dict[int, tuple[bytes, str]]:
    """The lines of the runs ``wanted`` that the ledger refs of session ``session_id`` fetched
    here hold, by run number, each with the worker whose ref holds it (the first ref's, by
    name, when two do)."""
    found: dict[int, tuple[bytes, str]] = {}
    left = set(wanted)
    for worker, data in ledgers_by_worker(repo, session_id) if left else []:
        lines = data.split(b"\n")
        for run in ledger_mod.parse(data).runs:
            if run.number in left:
                left.discard(run.number)
                found[run.number] = (lines[run.line - 1].strip(), worker)
    return found


def read_merged(repo: Repo, session_id: str, path: Path, own: str, *, data: bytes | None = None,
                book: ledger_mod.Ledger | None = None) -> ledger_mod.Ledger:
    """The ledger at ``path`` with the other workers' runs merged in (:func:`merged`).
    ``data`` and ``book``: that file's bytes, and those bytes read, when the caller has them
    (``book`` is returned as it is when the other ledgers add no run). The file alone (no
    other ledger, or none adding a run) is read through its read cache, as every reader reads
    it (:func:`ledger.cache.parse_cached`)."""
    from ..ledger.cache import cache_path, parse_cached

    if data is None:
        data, book = ledger_mod.read_bytes(path), None
    out = merged(data, foreign_ledgers(repo, session_id, own), book)
    if out is not data:
        return ledger_mod.parse(out)
    return book if book is not None else parse_cached(data, cache_path(repo.scratch, path))


# --- sending ------------------------------------------------------------------------------

def _taken(repo: Repo, session_id: str) -> int:
    """The highest run number taken on the remote, as last fetched (0: none)."""
    prefix = runs_prefix(session_id)
    numbers = [int(ref[len(prefix):]) for ref in
               repo.for_each_ref(prefix, within=namespace(session_id) + "/")
               if is_whole(ref[len(prefix):])]
    return max(numbers, default=0)


def claim_run(repo: Repo, remote: str, session_id: str, at_least: int, commit: str,
              worker: str) -> int:
    """Take the first free run number from ``at_least`` (and after every number known taken)
    on ``remote``: ``refs/autoresearch/<id>/runs/<n>`` created there only if it does not
    exist (a lease on its absence), then here. It points at a commit of its own (``commit``'s
    tree, on ``commit``, naming the run, the ``worker`` and a random token): a push of a
    commit the remote ref already holds would be "up to date", not refused. A number another
    worker took meanwhile is stepped over (the taken ones fetched again). Raises
    :class:`Refused` when the remote cannot be written or keeps refusing."""
    number = max(at_least, _taken(repo, session_id) + 1)
    for _ in range(CLAIM_TRIES):
        ref = f"{runs_prefix(session_id)}{number}"
        token = repo.commit_tree(repo.tree_of(commit), [commit],
                                 f"git-autoresearch: run {number} taken by worker {worker}\n\n"
                                 f"token {os.urandom(8).hex()}\n")
        code, answer, said = push_atomic(repo, remote, {ref: (token, "")})
        if code == 0:
            try:
                repo.update_ref(ref, token, ABSENT, f"git-autoresearch: run {number} taken")
            except GitError:
                pass  # known here already: the remote's answer is what counts
            return number
        refusal = remote_refusal(answer, said)
        if refusal is not None:
            raise Refused(f"cannot take a run number on {remote}: {refusal}; nothing was "
                          "measured")
        if not any(p.flag == "!" for p in answer):
            raise Refused(f"cannot take a run number on {remote} (git push failed: is it "
                          "reachable and writable?); nothing was measured")
        fetch(repo, remote, session_id)
        number = max(number + 1, _taken(repo, session_id) + 1)
    raise Refused(f"could not take a run number on {remote}: {CLAIM_TRIES} were taken by "
                  "other workers first; try again")


def ledger_commit(repo: Repo, session_id: str, worker: str, data: bytes
                  ) -> tuple[str, str, str | None] | None:
    """A new commit of worker ``worker``'s ledger ref holding ``data`` as ``log.jsonl``, on the
    ref's commit here: (ref, new commit, old commit or None); None when the ref holds ``data``
    already. The run records of the ref's ledger that ``data`` lacks (a line deleted from the
    file by hand) stay in it (:func:`merged`): the other clones read this worker's runs from
    the ref alone, and ``doctor --fix`` puts the line back in the file. Raises
    :class:`GitError`."""
    ref = f"{ledgers_prefix(session_id)}{worker}"
    old = repo.resolve(ref)
    if old is not None:
        (before,) = cat_named_blobs(repo, [f"{old}:{LEDGER_FILE}"])
        if before is not None and not data.startswith(before[:before.rfind(b"\n") + 1]):
            data = merged(data, [before])
    tree = make_tree(repo, [("100644", write_blob(repo, data), LEDGER_FILE)])
    if old is not None and repo.tree_of(old) == tree:
        return None
    # A token of its own: two clones creating the ref with the same content at the same
    # second would make the same commit, and the second push would be "up to date".
    return ref, repo.commit_tree(tree, [old] if old else [],
                                 f"git-autoresearch: ledger of worker {worker}\n\n"
                                 f"token {os.urandom(8).hex()}\n"), old


def with_record(ledger_path: Path, record: Mapping[str, Any]) -> bytes:
    """The ledger file's bytes with ``record`` as one more line (a last line cut short stays
    where it is, on its own line): what the ledger will hold once the record is appended."""
    data = ledger_mod.read_bytes(ledger_path)
    if data and not data.endswith(b"\n"):
        data += b"\n"
    return data + ledger_mod.dumps(record).encode("utf-8") + b"\n"


def publish(repo: Repo, remote: str, session_id: str, worker: str, ledger_path: Path,
            run: int | None = None, *, create: bool = False) -> list[str]:
    """Push this worker's ledger (the file at ``ledger_path``) as its ledger ref, a commit on
    the previous one, with a lease on the value last fetched; with it, run ``run``'s attempt
    ref and its set-aside refs (``scope/<run>``, ``scope/<run>.2``, ...: what was undone
    before measuring, which may be another clone's work on a measuring host) when there are
    and the remote lacks them. Returns warnings (the next run pushes the whole ledger again, so
    nothing is lost when this one fails). ``create``: the ref must not exist on the remote yet
    (a worker's name taken as it joins)."""
    warnings = [] if run is None else _send_set_asides(repo, remote, session_id, run)
    try:
        made = ledger_commit(repo, session_id, worker, ledger_path.read_bytes()
                             if ledger_path.is_file() else b"")
    except (GitError, OSError) as exc:
        return [*warnings, f"the ledger of worker {worker} was not sent to {remote}: {exc}"]
    if made is None:
        return warnings
    ref, new, old = made
    updates = {ref: (new, "" if create else old or "")}
    attempt = attempt_ref(session_id, run) if run is not None else None
    oid = repo.resolve(attempt) if attempt else None
    if attempt and oid:
        updates[attempt] = (oid, "")
    code, answer, said = push_atomic(repo, remote, updates)
    if code != 0 and attempt and oid and any(p.flag == "!" and p.ref == attempt
                                             and not p.refused_there for p in answer):
        del updates[attempt]  # sent already (a push after a kill): the ledger alone
        code, answer, said = push_atomic(repo, remote, updates)
    if code != 0:
        refusal = remote_refusal(answer, said)
        if refusal is not None:
            return [f"the ledger of worker {worker} was not sent to {remote}: {refusal}; "
                    "the next run sends it"]
        taken = any(p.flag == "!" for p in answer)
        return [f"the ledger of worker {worker} was not sent to {remote}: "
                + ("its ledger ref there moved (another clone joined as the same worker? "
                   "join with another --name)" if taken else "the push failed (unreachable?)")
                + "; the next run sends it"]
    repo.update_ref(ref, new, old or ABSENT, f"git-autoresearch: ledger of worker {worker} sent")
    return warnings


def _send_set_asides(repo: Repo, remote: str, session_id: str, run: int) -> list[str]:
    """Push run ``run``'s set-aside refs here (``scope/<run>``, ``scope/<run>.2``, ...: what
    was undone before measuring, which on a measuring host is another clone's work), each only
    if absent there (one sent before stays). Returns warnings."""
    aside = f"{scope_prefix(session_id)}{run}"
    found = repo.ref_fields([aside, f"{aside}.*"], ["refname", "objectname"])
    if not found:
        return []
    code, answer, said = push_atomic(repo, remote, {ref: (oid, "") for ref, oid in found})
    if code == 0 or all(p.flag == "!" and not p.refused_there for p in answer):
        return []  # (sent already, by a push a kill cut short)
    refusal = remote_refusal(answer, said)
    return [f"what run {run} set aside ({', '.join(ref for ref, _ in found)}) was not sent to "
            f"{remote}" + (f" ({refusal})" if refusal else "") + "; it is kept here"]


def send_attempts(repo: Repo, remote: str, session_id: str, ledger_path: Path) -> list[str]:
    """Push the attempt refs that this clone's own ledger names and the remote lacks (a run
    killed after its ledger line, before its push), each only if still absent there. Returns
    warnings."""
    try:
        named = {str(run.data.get("attempt_ref")) for run in ledger_mod.read(ledger_path).runs
                 if isinstance(run.data.get("attempt_ref"), str)}
    except OSError:
        return []
    prefix = attempts_prefix(session_id)
    try:
        there = remote_refs(repo, remote, [prefix])
    except Refused as exc:
        return [exc.message]
    updates = {ref: (oid, "") for ref in sorted(named - set(there))
               if ref.startswith(prefix) and (oid := repo.resolve(ref)) is not None}
    if not updates:
        return []
    code, answer, said = push_atomic(repo, remote, updates)
    refusal = remote_refusal(answer, said)
    return [] if code == 0 else [f"the attempt refs {', '.join(sorted(updates))} were not sent "
                                 f"to {remote}" + (f" ({refusal})" if refusal else "")
                                 + "; the next sync sends them"]
