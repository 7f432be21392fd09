"""Objects read and written without the index: the entries of a tree, blobs in batch (``git
cat-file --batch``, ``git hash-object -w``), for the readonly scripts and the state ref."""

from __future__ import annotations

from collections.abc import Sequence

from .process import split_z
from .repo import Repo


def ls_tree(repo: Repo, commit: str, paths: Sequence[str]) -> list[tuple[str, str, str, str]]:
    """The (mode, type, object id, path) of the entries of ``commit`` named by ``paths``,
    not recursing into folders (``git ls-tree -z``); paths it does not hold are left out."""
    found = []
    for item in repo.run("ls-tree", "-z", commit, "--", *paths).stdout.split(b"\0"):
        if item:
            meta, _, raw = item.partition(b"\t")
            mode, kind, oid = meta.decode().split()
            found.append((mode, kind, oid, raw.decode("utf-8", "surrogateescape")))
    return found


def tree_files(repo: Repo, rev: str) -> list[tuple[str, str, str]]:
    """The (mode, object id, path) of every file in the tree of ``rev``, recursively
    (``git ls-tree -r -z --full-tree``)."""
    found = []
    for item in split_z(repo.run("ls-tree", "-r", "-z", "--full-tree", rev).stdout):
        meta, _, path = item.partition("\t")
        mode, _, oid = meta.split()
        found.append((mode, oid, path))
    return found


def cat_blob(repo: Repo, oid: str) -> bytes:
    """The content of blob ``oid`` (``git cat-file blob``). Raises :class:`GitError`."""
    return repo.run("cat-file", "blob", oid).stdout


def cat_blobs(repo: Repo, oids: Sequence[str]) -> dict[str, bytes]:
    """Blob contents by id, through one ``git cat-file --batch`` (its output: a
    ``<oid> <type> <size>`` line, the content, a newline, for each)."""
    if not oids:
        return {}
    out = repo.run("cat-file", "--batch",
                   input="".join(o + "\n" for o in oids).encode()).stdout
    found: dict[str, bytes] = {}
    at = 0
    while at < len(out):
        end = out.index(b"\n", at)
        oid, _, size = out[at:end].decode().split()
        found[oid] = out[end + 1:end + 1 + int(size)]
        at = end + 1 + int(size) + 1
    return found


def write_blobs(repo: Repo, files: Sequence[str]) -> list[str]:
    """Write the files ``files`` (absolute paths, as they are: no filters) into the object
    store; their blob ids, in order (``git hash-object -w --no-filters --stdin-paths``)."""
    if not files:
        return []
    return repo.run("hash-object", "-w", "--no-filters", "--stdin-paths",
                    input="".join(p + "\n" for p in files).encode()).text.split()
