"""The write-ahead journal of a recording: one intent record, ``intent.json`` in the scratch
folder, written before a keep, a revert or a set-aside changes anything and cleared once the
run is recorded (for a run whose after hooks are still to fire: once they fired).

A command killed in between leaves it behind, and the next command that takes the session
lock finishes or rolls back the operation from it (:mod:`git_autoresearch.record.recovery`). The
file is JSON; a keep's or revert's holds the run record to append (``record``). Files written by
older versions lack ``id``, ``had_index`` or ``staged_preexisting``: they read as empty.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..git import DiskFull, GitError, NotStaged, Repo, said_why
from ..ledger.records import RunRecord
from ..runtime.atomic import write_atomic
from ..runtime.errors import AutoresearchError, Refused

# The operations an intent record stands for; "unknown" is a record that cannot be read.
OPERATIONS = ("keep", "revert", "set-aside")


@dataclass(frozen=True)
class Intent:
    """What a keep, revert or set-aside is about to do, for finishing it after a kill.

    ``op``: ``keep``, ``revert``, ``set-aside`` (or ``unknown``); ``run``: its run number;
    ``id``: a random token, also in the ``Autoresearch-Intent`` trailer of the commit it makes;
    ``head``: HEAD before; ``ref``: the attempt or scope ref it writes; ``record``: the run record
    to append (keep and revert); ``untracked_after``: the files untracked before the next
    experiment; ``staged_preexisting``: new files staged before the experiment, which stay;
    ``to_stage``, ``had_index``: what a keep stages, and whether ``.git/index`` existed;
    ``created``, ``tracked``: the paths to restore (new files to remove, tracked ones to put
    back); ``readable``: False for a record that is not JSON, or lacks what its operation
    always wrote, or names an operation no version wrote (never finished, only set aside)."""

    op: str
    run: int | None
    id: str = ""
    head: str = ""
    ref: str = ""
    record: RunRecord | None = None
    untracked_after: list[str] = field(default_factory=list)
    staged_preexisting: list[str] = field(default_factory=list)
    to_stage: list[str] = field(default_factory=list)
    had_index: bool = False
    created: list[str] = field(default_factory=list)
    tracked: list[str] = field(default_factory=list)
    readable: bool = True

    def interrupted_text(self) -> str:
        """What a command reports of this intent: ``a keep of run 4 was interrupted``, or for
        one that is not ``readable``, that it cannot be read (with the operation and run it
        names, when it names them)."""
        named = f"a {self.op} of run {self.run}"
        if self.readable:
            return f"{named} was interrupted"
        known = f" ({named})" if self.op != "unknown" and self.run is not None else ""
        return f"an interrupted command left an intent record that cannot be read{known}"

    def but(self, **changes: Any) -> Intent:
        """This intent with ``changes`` (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """The JSON object of ``intent.json``: the keys its operation uses, in the order the
        versions before this type wrote them."""
        out: dict[str, Any] = {"op": self.op, "run": self.run, "id": self.id, "head": self.head,
                               "ref": self.ref}
        if self.op == "set-aside":
            out.update({"created": self.created, "tracked": self.tracked,
                        "staged_preexisting": self.staged_preexisting})
            return out
        out.update({"record": self.record, "untracked_after": self.untracked_after,
                    "staged_preexisting": self.staged_preexisting})
        if self.op == "keep":
            out.update({"to_stage": self.to_stage, "had_index": self.had_index})
        out.update({"created": self.created, "tracked": self.tracked})
        return out

    @classmethod
    def from_json(cls, data: Any) -> Intent:
        """An intent from the object of ``intent.json``. One that lacks what its operation
        always wrote (``head``, ``ref``, the paths to restore; a keep's or revert's ``record``
        and ``untracked_after``; a keep's ``to_stage``) is op ``unknown``, never finished; the
        keys older versions did not write (``id``, ``had_index``, ``staged_preexisting``) read
        as empty."""
        if not isinstance(data, dict):
            return cls("unknown", None, readable=False)
        op, run = data.get("op"), data.get("run")
        number = run if isinstance(run, int) and not isinstance(run, bool) else None
        if op not in OPERATIONS or not _complete(data, str(op)):
            # Kept as written for messages ("a merge of run 7 was interrupted").
            return cls(op if isinstance(op, str) else "unknown", number, readable=False)

        def paths(key: str) -> list[str]:
            return [str(p) for p in data.get(key) or []]

        return cls(op=str(op), run=number, id=str(data.get("id") or ""),
                   head=str(data["head"]), ref=str(data["ref"]),
                   record=cast(RunRecord, data["record"]) if op != "set-aside" else None,
                   untracked_after=paths("untracked_after"),
                   staged_preexisting=paths("staged_preexisting"),
                   to_stage=paths("to_stage"), had_index=bool(data.get("had_index")),
                   created=paths("created"), tracked=paths("tracked"))


def _complete(data: dict[str, Any], op: str) -> bool:
    """Whether ``data`` holds every key operation ``op`` has always written, of its type."""
    lists = ["created", "tracked", *(["untracked_after"] if op != "set-aside" else []),
             *(["to_stage"] if op == "keep" else [])]
    optional = [k for k in ("staged_preexisting",) if k in data]
    return (isinstance(data.get("head"), str) and isinstance(data.get("ref"), str)
            and all(isinstance(data.get(k), list) for k in [*lists, *optional])
            and (op == "set-aside" or isinstance(data.get("record"), dict)))


def write(path: Path, intent: Intent) -> None:
    """Write ``intent`` whole (atomically, synced); a failure here is before anything changed.
    ``\\u`` escapes keep any file name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(intent.to_json(), allow_nan=False).encode())


def read(path: Path) -> Intent | None:
    """The intent record at ``path``; None when there is none; op ``unknown`` when it cannot
    be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError):  # a folder in its place, say
        return Intent("unknown", None, readable=False)
    return Intent.from_json(data)


def clear(path: Path) -> None:
    """Remove the intent record: its operation is finished, or never began."""
    path.unlink(missing_ok=True)


def set_aside(path: Path) -> None:
    """Keep the intent record as ``intent.abandoned.<ns>.json``, beside it, unfinished."""
    os.replace(path, path.with_name(f"intent.abandoned.{time.time_ns()}.json"))


def written(path: Path) -> list[Intent]:
    """Every intent record this work tree holds: the one at ``path`` (``intent.json``, an
    operation not finished) and those set aside beside it (``intent.abandoned.<ns>.json``,
    :func:`set_aside`), oldest first; unreadable ones are left out."""
    found = [read(p) for p in sorted(path.parent.glob("intent.abandoned.*.json"),
                                     key=lambda p: p.name)]
    found.append(read(path))
    return [i for i in found if i is not None and i.op in OPERATIONS]


def made_by(repo: Repo, ref: str, intent: Intent) -> bool:
    """Whether ``ref`` holds the commit this intent made (not an older one): its
    ``Autoresearch-Intent`` trailer carries the intent's id (an intent without an id: any
    commit at ``ref``)."""
    commit = repo.resolve(ref)
    if commit is None:
        return False
    from ..history.trailers import intent_tokens

    return not intent.id or intent.id in intent_tokens(repo, commit)


def git_failure(repo: Repo, path: Path, locks: list[Path], intent: Intent,
                exc: GitError) -> AutoresearchError:
    """What to say when git failed in the middle of the journaled operation ``intent``.

    When nothing had changed yet (HEAD where it was, no commit at the intent's ref; a keep puts
    the index back), the intent record at ``path`` goes, since there is nothing to finish;
    otherwise it stays, for resume. ``locks``: git's lock files that exist now; when one is
    the reason, a :class:`Refused` names it and what git said. A full disk is a
    :class:`Refused` saying what was done. Otherwise ``exc`` itself."""
    number, op = intent.run, intent.op
    untouched = (repo.head() == intent.head
                 and not (intent.ref and made_by(repo, intent.ref, intent)))
    if untouched:
        clear(path)
    if not locks and isinstance(exc, DiskFull):
        if not untouched:
            return Refused(f"{exc.message}; the {op} of run {number} stopped half-way; "
                           "free space on that disk, then git autoresearch resume "
                           "finishes it")
        done = ("nothing was recorded, and the experiment is still in the work tree"
                if op == "keep" else "nothing was changed or recorded")
        return Refused(f"{exc.message}; {done}; free space on that disk, then run the "
                       "command again")
    if not locks and isinstance(exc, NotStaged) and untouched:
        done = ("nothing was recorded, and the experiment is still in the work tree"
                if op == "keep" else "nothing was changed or recorded")
        return Refused(f"git would not stage a file of the experiment ({exc.said}): a clean "
                       "filter or a line-ending rule (.gitattributes, core.safecrlf) refused "
                       f"it, or it cannot be read; {done}; fix that, or undo the change to "
                       "the file, and run the command again")
    if not locks:
        return exc
    line = said_why(exc.stderr, exc.returncode)
    message = (f"git could not finish the {op} of run {number}: its lock file {locks[0]} "
               f"exists (git said: {line}); ")
    if untouched:
        done = ("nothing was recorded, and the experiment is still in the work tree"
                if op == "keep" else "nothing was reverted or recorded")
        return Refused(f"{message}{done}; once no git process is running, remove it (rm "
                       f"{locks[0]}) and run the command again")
    what = f"the set-aside before run {number}" if op == "set-aside" else f"run {number}"
    return Refused(f"{message}once no git process is running, remove it (rm {locks[0]}); "
                   f"git autoresearch resume then finishes {what}")
