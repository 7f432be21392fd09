"""Trees built outside the user's index: a private index file (after git-revise's ``Index``)
and ``git mktree --batch`` for a tree of blobs."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..runtime import signals
from ..runtime.files import write_atomic
from .process import TRACE, GitError, git_environment, join_z, split_z, trace
from .repo import Repo


@contextmanager
def temporary_index(repo: Repo, *, copy_of_real: bool = True) -> Iterator[Index]:
    """A private index under the scratch folder for building a tree without touching the
    user's: a copy of the real index (its stat data and cache tree spare hashing every
    file again) when ``copy_of_real`` and there is one, else empty. The file and its
    ``.lock`` are removed on leaving, whatever happened."""
    repo.scratch.mkdir(parents=True, exist_ok=True)
    path = repo.scratch / f"attempt-index.{os.getpid()}"
    try:
        index = Index(repo, path)
        real = repo.git_dir / "index"
        if copy_of_real and real.is_file():
            # Scratch, used by this command's git calls and removed on leaving: no fsync.
            write_atomic(path, real.read_bytes(), durable=False)
            index.copied = True
        yield index
    finally:
        for leftover in (path, path.with_name(path.name + ".lock")):
            leftover.unlink(missing_ok=True)


def make_tree(repo: Repo, entries: Iterable[tuple[str, str, str]], *,
              missing_ok: bool = False) -> str:
    """Write the tree of ``entries`` ((mode such as ``100644``, blob id, path with ``/``
    separators)) and the trees of its folders, all through one interactive
    ``git mktree --batch``; returns the top tree's id. ``missing_ok``: blobs this repository
    does not hold may be named (``--missing``; a partial clone's, asked about by
    :func:`absent_blobs`). Raises :class:`GitError`. A signal waits until git is done, as in
    :func:`run_git`."""
    with signals.deferred():
        return _make_tree(repo, entries, missing_ok)


def absent_blobs(repo: Repo, entries: Iterable[tuple[str, str, str]]) -> set[str]:
    """The blob ids of ``entries`` (as :func:`make_tree` takes them) that this repository
    does not hold: in a partial clone (:meth:`Repo.promisor`), objects its promisor remote
    has not sent, which git fetches when a command first reads them (and fails to, while
    that remote is away). Found without fetching: a tree of them, walked by ``git rev-list
    --objects --missing=print`` (a missing one printed as ``?<id>``) with lazy fetching off
    (``GIT_NO_LAZY_FETCH``). Empty at once in a whole clone."""
    entries = [entry for entry in entries if entry[0] != "160000"]  # commits: submodules'
    if not entries or repo.promisor() is None:
        return set()
    tree = make_tree(repo, entries, missing_ok=True)
    listing = repo.run("rev-list", "--objects", "--missing=print", tree,
                       env={"GIT_NO_LAZY_FETCH": "1"}, allow_non_zero=True)
    return {line[1:].strip() for line in listing.text.splitlines() if line.startswith("?")}


def _make_tree(repo: Repo, entries: Iterable[tuple[str, str, str]], missing_ok: bool) -> str:
    folders: dict[str, list[str]] = {"": []}  # folder -> its blob lines
    children: dict[str, set[str]] = {}  # folder -> its subfolders
    for mode, oid, path in entries:
        parent, _, name = path.rpartition("/")
        folders.setdefault(parent, []).append(f"{mode} blob {oid}\t{name}")
        while parent:
            above = parent.rpartition("/")[0]
            folders.setdefault(above, [])
            children.setdefault(above, set()).add(parent)
            parent = above
    argv = ["git", "--literal-pathspecs", "mktree", "--batch",
            *(["--missing"] if missing_ok else [])]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=repo.top, env=git_environment(None),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    made: dict[str, str] = {}
    try:
        # Deepest folders first, so that each parent can name its children's trees.
        for folder in sorted(folders, key=lambda f: (-f.count("/") - bool(f), f)):
            lines = folders[folder] + [f"040000 tree {made[child]}\t"
                                       f"{child.rpartition('/')[2]}"
                                       for child in sorted(children.get(folder, ()))]
            proc.stdin.write(("\n".join(lines) + "\n\n").encode("utf-8", "surrogateescape"))
            proc.stdin.flush()
            made[folder] = proc.stdout.readline().decode().strip()
            if not made[folder]:
                break
        proc.stdin.close()
    except BrokenPipeError:
        pass
    stderr = proc.stderr.read() if proc.stderr else b""
    code = proc.wait()
    if TRACE:
        trace(argv[2:], code, time.perf_counter() - started)
    top = made.get("", "")
    if code != 0 or not top:
        raise GitError(argv[2:], code, b"", stderr)
    return top


def renamed(repo: Repo, gone: Iterable[tuple[str, str, str]],
            arrived: Iterable[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """The (old path, new path) pairs git's rename detection finds between the files ``gone``
    and those ``arrived`` (each a (mode, blob id, path) entry; the blobs must be in the object
    store), whatever their similarity above git's threshold (``diff.renames``'s default, 50%):
    ``git diff-tree -r -z -M --diff-filter=R`` between a tree of each. Raises
    :class:`GitError`."""
    gone, arrived = list(gone), list(arrived)
    # A file whose content is not here (a partial clone's) cannot be compared without
    # fetching it: it is taken as no rename.
    absent = absent_blobs(repo, gone)
    gone = [entry for entry in gone if entry[1] not in absent]
    if not gone or not arrived:
        return []
    old, new = make_tree(repo, gone), make_tree(repo, arrived)
    fields = split_z(repo.run("diff-tree", "-r", "-z", "-M", "--diff-filter=R", "--name-status",
                              old, new).stdout)
    # Each rename is three fields: R<score>, the old path, the new path.
    return [(fields[i + 1], fields[i + 2]) for i in range(0, len(fields) - 2, 3)
            if fields[i].startswith("R")]


class Index:
    """A private index file (:func:`temporary_index`): every git call on it runs with
    ``GIT_INDEX_FILE`` set here and nowhere else. ``copied``: whether it began as a copy of the
    real index."""

    def __init__(self, repo: Repo, path: Path) -> None:
        self.repo = repo
        self.path = path
        self.copied = False
        self.env = {"GIT_INDEX_FILE": str(path)}

    def read_tree(self, rev: str) -> None:
        """Make this index hold the tree of ``rev`` (``git read-tree``)."""
        self.repo.run("read-tree", rev, env=self.env)

    def reset_paths(self, rev: str, paths: Sequence[str]) -> None:
        """Put the entries of ``paths`` back to ``rev``'s (``git reset -q <rev> --``)."""
        if paths:
            self.repo.run("reset", "-q", rev, "--pathspec-from-file=-", "--pathspec-file-nul",
                          input=join_z(paths), env=self.env)

    def add_paths(self, paths: Sequence[str]) -> None:
        """Stage ``paths`` here as :meth:`Repo.add_paths` does in the real index."""
        self.repo.add_paths(paths, env=self.env)

    def write_tree(self) -> str:
        """The tree of this index, written into the object store."""
        return self.repo.run("write-tree", env=self.env).text


def hash_files(repo: Repo, paths: Sequence[str]) -> dict[str, str]:
    """The object ids ``git update-index`` would record for the work tree paths ``paths``
    (filters applied, nothing written): a file's blob, a symlink's blob (its target), a
    submodule's checked-out commit; a path that is none of these, lies beyond a symlink, or
    has a newline in its name is left out."""
    files: list[str] = []
    found: dict[str, str] = {}
    for path in paths:
        full = repo.top / path
        if "\n" in path or not repo.reachable(path):
            continue
        if full.is_symlink():
            target = os.fsencode(os.readlink(full))
            found[path] = repo.run("hash-object", "--stdin", input=target).text
        elif full.is_file():
            files.append(path)
        elif full.is_dir():
            head = repo.submodule_head(path)
            if head is not None:
                found[path] = head
    if files:
        ids = repo.run("hash-object", "--stdin-paths", input="".join(
            p + "\n" for p in files).encode("utf-8", "surrogateescape")).text.split()
        found.update(zip(files, ids, strict=True))
    return found
