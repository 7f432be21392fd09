"""Compare-and-swap on refs, and the small commits such refs point at: git's atomic ref update
(``git update-ref REF NEW OLD``, which moves ``REF`` only while it still points at ``OLD``, and
with an empty ``OLD`` creates it only while it does not exist) as a yes-or-no answer, for
callers that race other processes on purpose and lose as a matter of course."""

from __future__ import annotations

from collections.abc import Sequence

from .objects import cat_blobs
from .process import ABSENT
from .repo import Repo


def swap_ref(repo: Repo, ref: str, new: str, old: str, message: str) -> bool:
    """Point ``ref`` at ``new`` if it still points at ``old`` (:data:`ABSENT`: if it does not
    exist): whether it did. A ref moved by another process meanwhile (or locked by one right
    now) is a lost race, False, never an error."""
    res = repo.run("update-ref", "-m", message, ref, new, old, allow_non_zero=True)
    return res.returncode == 0


def create_ref(repo: Repo, ref: str, new: str, message: str) -> bool:
    """Create ``ref`` at ``new`` if it does not exist yet: whether it did (:func:`swap_ref`
    with an absent old value)."""
    return swap_ref(repo, ref, new, ABSENT, message)


def note_commit(repo: Repo, message: str, parents: Sequence[str] = ()) -> str:
    """A commit of the empty tree that carries ``message`` (UTF-8), with ``parents``: a note
    a ref can point at and a fetch or a push can carry like any commit. Raises
    :class:`GitError` (no committer identity, say)."""
    empty = repo.run("hash-object", "-t", "tree", "-w", "--stdin", input=b"").text
    return repo.commit_tree(empty, parents, message)


def commit_messages(repo: Repo, oids: Sequence[str]) -> dict[str, str]:
    """The message of each commit in ``oids`` (one ``git cat-file --batch``: the raw commit
    object, whose message follows the first empty line), by id; an object that is not a
    commit has none."""
    found = {}
    for oid, raw in cat_blobs(repo, list(dict.fromkeys(oids))).items():
        head, sep, body = raw.partition(b"\n\n")
        if sep and head.startswith(b"tree "):
            found[oid] = body.decode("utf-8", "replace")
    return found
