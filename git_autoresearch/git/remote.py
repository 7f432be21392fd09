"""A git remote, and refs moved as one transaction: listing a remote's refs, fetching their
objects, an atomic push with a compare-and-swap on each ref, and a local update of several refs
at once.

Only machine formats are read: ``git ls-remote`` (``<oid> TAB <ref>`` a line), ``git push
--porcelain`` (``<flag> TAB <from>:<to> TAB <summary>`` a line, git-push(1) "OUTPUT"), and exit
codes."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..runtime.errors import Refused
from .process import said
from .repo import Repo


def remote_refs(repo: Repo, remote: str, prefixes: Sequence[str]) -> dict[str, str]:
    """The refs of ``remote`` (a remote's name, a URL or a path) whose full name starts with one
    of ``prefixes`` (``refs/heads/x`` matches itself only, ``refs/x/`` everything below),
    mapped to their object ids (``git ls-remote --refs``). Raises :class:`Refused` when the
    remote cannot be listed (no such remote, unreachable)."""
    res = repo.run("ls-remote", "--refs", "--end-of-options", remote, allow_non_zero=True)
    if res.returncode != 0:
        raise Refused(f"cannot list the refs of remote {remote!r}: "
                      + failure(res.stderr, f"git ls-remote exit {res.returncode}"))
    found: dict[str, str] = {}
    for line in res.text.splitlines():
        oid, _, ref = line.partition("\t")
        if any(ref == p or (p.endswith("/") and ref.startswith(p)) for p in prefixes):
            found[ref] = oid
    return found


def fetch_objects(repo: Repo, remote: str, refs: Sequence[str]) -> bool:
    """Bring the objects of ``refs`` (full names on ``remote``) here without writing any ref,
    FETCH_HEAD included; False when git could not (a ref vanished meanwhile, say)."""
    if not refs:
        return True
    res = repo.run("fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                   "--no-recurse-submodules", "--end-of-options", remote, *refs,
                   allow_non_zero=True)
    return res.returncode == 0


def fetch_refspecs(repo: Repo, remote: str, refspecs: Sequence[str], *, prune: bool = False
                   ) -> str | None:
    """Fetch ``refspecs`` (``+src:dst``, globs allowed) from ``remote`` in one ``git fetch``
    that writes no FETCH_HEAD and no tags (``prune``: the refs here that the refspecs' globs
    write and the remote no longer has are deleted, and only those); None when it worked, else
    the last line git said (the remote unreachable, a named source ref missing there)."""
    res = repo.run("fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                   "--no-recurse-submodules", *(["--prune"] if prune else []),
                   "--end-of-options", remote, *refspecs, allow_non_zero=True)
    if res.returncode == 0:
        return None
    return failure(res.stderr, f"git fetch exit {res.returncode}")


def failure(stderr: bytes, otherwise: str) -> str:
    """What git said went wrong talking to a remote: its first ``fatal:`` or ``error:`` line
    (``'x' does not appear to be a git repository``), not the advice after it (``Please make
    sure you have the correct access rights / and the repository exists.``); ``otherwise``
    when it said nothing."""
    lines = [ln.strip() for ln in said(stderr)]
    first = next((ln for ln in lines if ln.startswith(("fatal:", "error:"))),
                 lines[0] if lines else otherwise)
    return first.removeprefix("fatal: ").removeprefix("error: ")


def has_commit(repo: Repo, oid: str) -> bool:
    """Whether the commit ``oid`` is in this repository's object store."""
    return repo.run("cat-file", "-e", f"{oid}^{{commit}}", allow_non_zero=True).returncode == 0


def is_ancestor(repo: Repo, old: str, new: str) -> bool:
    """Whether commit ``old`` is ``new`` or an ancestor of it (``merge-base --is-ancestor``)."""
    return repo.is_ancestor(old, new)


@dataclass(frozen=True)
class Pushed:
    """One ref of a ``git push --porcelain`` answer: its ``flag`` (`` `` fast-forward, ``+``
    forced, ``-`` deleted, ``*`` new, ``!`` rejected, ``=`` up to date) and the remote ``ref``."""

    flag: str
    ref: str
    summary: str = ""  # git's word for it: "[remote rejected] (pre-receive hook declined)"

    @property
    def refused_there(self) -> bool:
        """Whether the remote itself refused the ref (its hooks, its rules), not a lease that
        failed (``[rejected] (stale info)``) or a push that did not fit (``fetch first``)."""
        return self.flag == "!" and self.summary.startswith("[remote rejected]")


# What git's refs code says when a ref moved under a push: another push created or moved it
# after the remote checked this push's expected value and before it locked the ref.
_LOST_RACE = re.compile(r"cannot lock ref '[^']*': (reference already exists|is at [0-9a-f]+ "
                        r"but expected [0-9a-f]+)")


def lost_race(said: str) -> bool:
    """Whether a push was refused because it lost a race for a ref on the remote (what the
    remote said on stderr, ``said``): a lease that failed, in effect, not the remote's
    refusal. Two clones that push at the same moment both pass the remote's check of the
    expected value; the one that locks the ref second gets this instead of ``stale info``."""
    return _LOST_RACE.search(said) is not None


def remote_refusal(answer: list[Pushed], said: str) -> str | None:
    """What a remote that refused a push said (a ref its hooks or rules refused: git's
    summary, and the lines the remote printed, ``remote: ...``), or None when it refused
    none itself (a lease that failed, or a race for a ref it lost: :func:`lost_race`)."""
    refused = [p for p in answer if p.refused_there]
    if not refused or lost_race(said):
        return None
    first = refused[0]
    reason = first.summary.removeprefix("[remote rejected]").strip(" ()") or "no reason given"
    lines = [line.removeprefix("remote:").strip() for line in said.splitlines()
             if line.startswith("remote:") and line.removeprefix("remote:").strip()]
    told = f"; it said: {' / '.join(lines)[-400:]}" if lines else ""
    more = f" (and {len(refused) - 1} more ref(s))" if len(refused) > 1 else ""
    return f"the remote refused {first.ref}{more}: {reason}{told}"


def push_atomic(repo: Repo, remote: str, updates: Mapping[str, tuple[str, str]], *,
                verify: bool = False) -> tuple[int, list[Pushed], str]:
    """Push, all or nothing (``--atomic``), each remote ref of ``updates`` to its new commit,
    on the condition that the remote still holds the expected one: ``{ref: (new, expected)}``,
    ``expected`` empty for a ref that must not exist there yet (``--force-with-lease=<ref>:
    <expected>``, git-push(1)). Returns git's exit code, the refs as ``--porcelain`` lists
    them (a lease that no longer holds makes git refuse every ref: flag ``!``) and what git
    and the remote said on stderr. With ``verify``, the user's ``pre-push`` hook runs, as it
    does for git's own push (the pushes a keep makes in a joined clone skip it)."""
    leases = [f"--force-with-lease={ref}:{expected}"
              for ref, (_, expected) in updates.items()]
    specs = [f"{new}:{ref}" for ref, (new, _) in updates.items()]
    res = repo.run("push", "--atomic", "--porcelain", *([] if verify else ["--no-verify"]),
                   "--no-recurse-submodules", *leases, "--end-of-options", remote, *specs,
                   allow_non_zero=True)
    pushed = []
    for line in res.text.splitlines():
        fields = line.split("\t")
        if len(fields) >= 2 and len(fields[0]) == 1 and ":" in fields[1]:
            pushed.append(Pushed(fields[0], fields[1].rpartition(":")[2],
                                 fields[2].strip() if len(fields) > 2 else ""))
    return res.returncode, pushed, res.stderr.decode("utf-8", "replace")


def update_refs(repo: Repo, changes: Mapping[str, tuple[str | None, str | None]],
                message: str) -> bool:
    """Move several local refs in one transaction (``git update-ref --stdin``): ``{ref: (new,
    old)}``, ``new`` None deletes the ref (only while it is at ``old``, when given); else
    ``old`` None requires that it does not exist yet.
    All or nothing; False when an old value no longer held (another writer)."""
    lines = []
    for ref, (new, old) in changes.items():
        if new is None:  # "delete <ref> " with an empty old value is git's error
            lines.append(f"delete {ref} {old}" if old else f"delete {ref}")
        elif old is None:
            lines.append(f"create {ref} {new}")
        else:
            lines.append(f"update {ref} {new} {old}")
    if not lines:
        return True
    res = repo.run("update-ref", "-m", message, "--stdin",
                   input=("\n".join(lines) + "\n").encode(), allow_non_zero=True)
    return res.returncode == 0


def default_branch(repo: Repo) -> str | None:
    """The full name of the repository's default branch: the one ``origin/HEAD`` points at,
    else ``init.defaultBranch``, else ``main`` or ``master``, if it exists here; else None."""
    res = repo.run("symbolic-ref", "-q", "refs/remotes/origin/HEAD", allow_non_zero=True)
    candidates = []
    if res.returncode == 0 and res.text.startswith("refs/remotes/origin/"):
        candidates.append("refs/heads/" + res.text.removeprefix("refs/remotes/origin/"))
        candidates.append(res.text)
    configured = repo.config_entries(r"^init\.defaultbranch$")
    if configured and configured[-1][1]:
        candidates.append(f"refs/heads/{configured[-1][1]}")
    candidates += ["refs/heads/main", "refs/heads/master"]
    return next((ref for ref in candidates if repo.resolve(ref) is not None), None)
