"""Claims on ideas: which worker is trying which idea of the backlog, so that two workers of a
session never try the same one.

A claim is a ref, ``refs/autoresearch/<id>/claims/<key>`` (:func:`history.refs.claim_ref`), where
``<key>`` is a short hash of the idea's normalised text (:func:`idea_key`: the same idea keeps
its key when the backlog is renumbered or the idea is struck through). The ref points at a
commit of the empty tree whose message is one JSON object: ``worker``, ``pid`` (the process
that claimed for the worker: see :func:`claimant_pid`; null when it cannot be told), ``host``,
``worktree`` (its top), ``since`` (milliseconds since the epoch), ``idea`` (its number then)
and ``text``. Taking an idea is git's compare-and-swap: ``update-ref REF NEW <absent>``
creates the ref only if no one else did first; a stale claim (older than ``claim_timeout``, or
whose process or worktree is gone on this host) is taken over by ``update-ref REF NEW OLD``,
the new claim's commit having the old one as parent. Releasing deletes the ref if it still
points at the claim read. No lock, no server: the losers of a race re-read and try the next
idea.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..git import GitError, Repo
from ..git.cas import commit_messages, create_ref, note_commit, swap_ref
from ..history.refs import claim_ref, claims_prefix
from ..ledger.jsontext import is_whole
from ..measure.runner import process_alive
from ..runtime.errors import Refused, UsageError
from ..session.ideas import Idea
from ..session.shared import worker_name

if TYPE_CHECKING:
    from ..session.layout import Layout

KEY_LENGTH = 12
# Lost races before a claim gives up (each one means another worker took an idea meanwhile).
ATTEMPTS = 16
# Processes between us and the one that claims for a worker: git itself, and the shells and
# wrappers an agent's tool runs a command through (a process name as the kernel gives it, at
# most 15 characters).
PASS_THROUGH = frozenset({"git", "git-autoresearc", "sh", "bash", "dash", "zsh", "ksh", "mksh",
                          "fish", "env", "nohup", "timeout", "nice", "xargs", "sudo", "time",
                          "stdbuf", "make", "uv", "uvx", "pipx", "poetry", "pdm", "hatch"})
# Names the worker's process outright (a number; 0: none, the timeout alone ends its claims),
# for an agent that runs the tool through a program the walk up the ancestry cannot see past.
PID_VARIABLE = "AUTORESEARCH_WORKER_PID"


def idea_key(text: str) -> str:
    """The key of an idea: the first 12 hex digits of the SHA-1 of its normalised text (what a
    struck-through ``~~idea~~ → note`` held between the marks, without ``(offered before run
    N)``, white space collapsed, case folded)."""
    text = text.strip()
    if text.startswith("~~") and "~~" in text[2:]:
        text = text[2:text.index("~~", 2)]
    text = re.sub(r" \(offered before run \d+\)$", "", text.strip())
    normal = " ".join(text.split()).casefold()
    return hashlib.sha1(normal.encode("utf-8")).hexdigest()[:KEY_LENGTH]


@dataclass(frozen=True)
class Claim:
    """A claim read from its ref: ``key``, ``ref``, ``oid`` (the commit it points at) and what
    the commit's message says (see the module's docstring)."""

    key: str
    ref: str
    oid: str
    worker: str
    pid: int | None
    host: str
    worktree: str | None
    since: int
    idea: int | None
    text: str

    def stale(self, timeout: float, now: int | None = None) -> str | None:
        """Why the claim no longer holds, or None: ``expired`` (older than ``timeout``
        seconds), ``process gone`` (its pid is not running on this host), ``worktree gone``
        (its worktree is not on this host's disk). ``now``: milliseconds since the epoch."""
        now = int(time.time() * 1000) if now is None else now
        if now - self.since > timeout * 1000:
            return "expired"
        if self.host == socket.gethostname():
            if self.pid is not None and not process_alive(self.pid):
                return "process gone"
            if self.worktree is not None and not Path(self.worktree).is_dir():
                return "worktree gone"
        return None

    def mine(self, worker: str) -> bool:
        """Whether the claim is worker ``worker``'s on this host."""
        return self.worker == worker and self.host == socket.gethostname()

    def to_json(self, timeout: float) -> dict[str, Any]:
        """The claim as ``ideas --json`` and ``status --json`` show it: ``worker``, ``pid``,
        ``host``, ``since`` and ``expires`` (milliseconds since the epoch), and ``stale``
        (:meth:`stale`, null while it holds)."""
        return {"worker": self.worker, "pid": self.pid, "host": self.host,
                "since": self.since, "expires": self.since + int(timeout * 1000),
                "stale": self.stale(timeout)}

    def describe(self, timeout: float) -> str:
        """``w1 (pid 4242 on box, 5m ago)``, with why it no longer holds."""
        from ..session.config import format_duration

        ago = format_duration(time.time() - self.since / 1000)
        pid = f"pid {self.pid} on {self.host}" if self.pid else f"on {self.host}"
        why = self.stale(timeout)
        return f"{self.worker} ({pid}, {ago} ago{'; ' + why if why else ''})"


@dataclass(frozen=True)
class Board:
    """Where a work tree's session keeps its claims: its ``repo``, ``session_id`` and the
    claim ``timeout`` in seconds (``claim_timeout``)."""

    repo: Repo
    session_id: str
    timeout: float

    @classmethod
    def of(cls, layout: Layout) -> Board:
        """The board of the session whose ``.auto/config.toml`` ``layout`` has. Raises
        :class:`Refused` when it cannot be read, :class:`UsageError` when it is not valid."""
        from ..session.config import Config, parse_toml

        cfg = Config.from_mapping(parse_toml(layout.read_config_bytes(), source="config.toml"),
                                  source="config.toml")
        return cls(layout.repo, cfg.session_id, cfg.claim_seconds)


def _parse(key: str, ref: str, oid: str, message: str) -> Claim | None:
    try:
        data = json.loads(message)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    pid, since, idea = data.get("pid"), data.get("since"), data.get("idea")
    worktree = data.get("worktree")
    return Claim(key, ref, oid, str(data.get("worker") or "?"),
                 pid if isinstance(pid, int) and pid > 0 else None, str(data.get("host") or ""),
                 worktree if isinstance(worktree, str) else None,
                 since if isinstance(since, int) else 0,
                 idea if isinstance(idea, int) else None, str(data.get("text") or ""))


def read_claims(repo: Repo, session_id: str) -> dict[str, Claim]:
    """Every claim of session ``session_id``, by key (one ``for-each-ref`` and one
    ``cat-file --batch``). A ref whose commit does not hold a claim reads as a claim by
    ``?`` made at the epoch: expired, so any worker takes it over."""
    prefix = claims_prefix(session_id)
    found = repo.ref_objects(prefix)
    messages = commit_messages(repo, [oid for _, oid in found])
    claims = {}
    for ref, oid in found:
        key = ref[len(prefix):]
        claims[key] = _parse(key, ref, oid, messages.get(oid, "")) or Claim(
            key, ref, oid, "?", None, "", None, 0, None, "")
    return claims


def claimant_pid() -> int | None:
    """The process that claims for this worker: the nearest ancestor of this one that is not
    git or a shell or wrapper (:data:`PASS_THROUGH`), so that the claim lives as long as the
    agent (or the script) that called us, not as long as the shell its tool started for one
    command. ``$AUTORESEARCH_WORKER_PID`` names it outright (0: none). None where process
    ancestry cannot be read (no ``/proc``) or the walk reaches init: then only the timeout
    and the worktree end the claim. Raises :class:`UsageError` for a variable that is not a
    whole number."""
    given = os.environ.get(PID_VARIABLE, "").strip()
    if given:
        if not is_whole(given):
            raise UsageError(f"{PID_VARIABLE}={given!r} is not a process id (0: none)")
        return int(given) or None
    pid = os.getppid()
    for _ in range(32):
        if pid <= 1:
            return None
        try:
            stat = Path(f"/proc/{pid}/stat").read_text(errors="replace")
        except OSError:
            return None
        name = stat[stat.find("(") + 1:stat.rfind(")")]
        if name not in PASS_THROUGH:
            return pid
        pid = int(stat[stat.rfind(")") + 2:].split()[1])
    return None


@dataclass(frozen=True)
class Taken:
    """A claim made: the ``idea``, the ``claim`` now on it, and the stale claim it
    ``replaced`` (None: the idea was free, or already this worker's: ``again``)."""

    idea: Idea
    claim: Claim
    replaced: Claim | None = None
    again: bool = False

    def to_json(self, timeout: float) -> dict[str, Any]:
        """What ``ideas claim --json`` prints: the idea (``number``, ``state``, ``text``),
        its ``key`` and ``claim`` (:meth:`Claim.to_json`), and the stale claim it
        ``replaced`` (or null)."""
        return {**self.idea.to_json(), "key": self.claim.key,
                "claim": self.claim.to_json(timeout),
                "replaced": None if self.replaced is None else self.replaced.to_json(timeout)}


def _new_claim(repo: Repo, session_id: str, idea: Idea, worker: str,
               parent: Claim | None) -> Claim:
    key = idea_key(idea.text)
    since = int(time.time() * 1000)
    data = {"worker": worker, "pid": claimant_pid(), "host": socket.gethostname(),
            "worktree": str(repo.top), "since": since, "idea": idea.number, "text": idea.text}
    message = json.dumps(data, ensure_ascii=False)
    oid = note_commit(repo, message, [parent.oid] if parent else [])
    found = _parse(key, claim_ref(session_id, key), oid, message)
    assert found is not None
    return found


def claim(repo: Repo, session_id: str, ideas: list[Idea], *, timeout: float,
          number: int | None = None, worker: str | None = None) -> Taken:
    """Take idea ``number`` of ``ideas`` for ``worker`` (default: this worktree's,
    :func:`session.shared.worker_name`), or with no number the first idea not done that no other
    live claim holds (open ideas first, then those a hook offered). A stale claim (see
    :meth:`Claim.stale`, ``timeout`` in seconds) is taken over. Idea ``number`` already this
    worker's is returned again (``again``). Raises :class:`UsageError` for a number that names
    no idea, and :class:`Refused` (exit 3) when there is nothing to take, saying why: no
    ideas, idea ``number`` done or held by another worker, every idea done or held."""
    worker = worker or worker_name(repo)
    if number is not None and not any(i.number == number for i in ideas):
        raise UsageError(f"no idea {number} (there are {len(ideas)})")
    for _ in range(ATTEMPTS):
        claims = read_claims(repo, session_id)
        if number is not None:
            candidates = [i for i in ideas if i.number == number]
            if candidates[0].state == "done":
                raise Refused(f"idea {number} was tried already (marked done): nothing to claim")
        else:
            candidates = [i for i in ideas if i.state == "open"] + \
                [i for i in ideas if i.state == "taken"]
        lost = False
        for idea in candidates:
            key = idea_key(idea.text)
            held = claims.get(key)
            if held is not None and held.mine(worker) and held.stale(timeout) is None:
                if number is not None:
                    return Taken(idea, held, again=True)
                continue
            if held is not None and held.stale(timeout) is None:
                continue
            made = _new_claim(repo, session_id, idea, worker, held)
            message = f"autoresearch: {worker} claims idea {idea.number}"
            if held is None and create_ref(repo, made.ref, made.oid, message):
                return Taken(idea, made)
            if held is not None and swap_ref(repo, made.ref, made.oid, held.oid, message):
                return Taken(idea, made, replaced=held)
            lost = True  # another worker was faster: read the claims again
            break
        if not lost:
            raise Refused(_nothing_left(ideas, claims, number, worker, timeout))
    raise Refused(f"lost the race for an idea {ATTEMPTS} times in a row (other workers took "
                  "them first); try again")


def _nothing_left(ideas: list[Idea], claims: dict[str, Claim], number: int | None,
                  worker: str, timeout: float) -> str:
    """Why no idea could be taken, for the refusal."""
    if number is not None:
        holder = claims[idea_key(next(i for i in ideas if i.number == number).text)]
        return f"idea {number} is claimed by {holder.describe(timeout)}"
    if not ideas:
        return "nothing to claim: the backlog has no ideas (git autoresearch ideas add TEXT)"
    done = sum(1 for i in ideas if i.state == "done")
    held = [(i.number, claims[idea_key(i.text)]) for i in ideas if i.state != "done"]
    who = ", ".join(f"idea {n} by {c.worker}{' (this worker)' if c.mine(worker) else ''}"
                    for n, c in held)
    parts = [f"{done} done"] if done else []
    if held:
        parts.append(f"{len(held)} claimed ({who})")
    return f"nothing left to claim: of {len(ideas)} ideas, {' and '.join(parts)}"


def release(repo: Repo, found: Claim) -> bool:
    """Delete the ref of claim ``found`` if it still points at it: whether it did (False: it
    changed meanwhile, taken over or released by another)."""
    return repo.delete_ref(found.ref, found.oid)


def release_worker(repo: Repo, session_id: str, worker: str) -> list[Claim]:
    """Release every claim of worker ``worker`` on this host (a run it recorded: its idea was
    tried); the claims released. Never raises for git: a claim that cannot be released now
    expires later."""
    try:
        mine = [c for c in read_claims(repo, session_id).values() if c.mine(worker)]
        return [c for c in mine if release(repo, c)]
    except GitError:
        return []


def of_ideas(claims: dict[str, Claim], ideas: list[Idea]) -> dict[int, Claim]:
    """The claim on each idea that has one, by the idea's number."""
    found = {}
    for idea in ideas:
        held = claims.get(idea_key(idea.text))
        if held is not None:
            found[idea.number] = held
    return found
