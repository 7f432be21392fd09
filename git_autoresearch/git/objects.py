"""Objects read and written without the user's index: the entries of a tree, blobs in batch
(``git cat-file --batch``, ``git hash-object -w``), for the readonly scripts and the state ref;
many commits resolved (``git cat-file --batch-check``) and their patches read (``git diff-tree
--stdin``) on one process each, for the dashboard; and trees built outside the user's index: a
private index file (after git-revise's ``Index``) and ``git mktree --batch`` for a tree of
blobs."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..runtime import signals
from ..runtime.atomic import write_atomic
from .process import TRACE, GitError, clock, failure_in, git_environment, join_z, split_z, trace
from .repo import HEX_NAME, Repo


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


def missing_at(repo: Repo, commit: str, paths: Sequence[str]) -> dict[str, str]:
    """The files of ``paths`` (folders name the files below them) whose blob in ``commit``
    is not in this repository, path -> blob id: in a partial clone, those its promisor remote
    has not sent (:func:`absent_blobs`) and does not send now, asked for all at once
    as git's own prefetch asks (``git fetch`` of the ids, with the noop negotiation and
    nothing written but the objects); empty at once in a whole clone."""
    remote = repo.promisor()
    if not paths or remote is None:
        return {}
    entries = repo.tree_entries(commit, paths)
    listed = [(mode, oid, path) for path, (mode, oid) in entries.items()]
    absent = absent_blobs(repo, listed)
    if absent:
        repo.run("-c", "fetch.negotiationAlgorithm=noop", "fetch", "--quiet", "--no-tags",
                 "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none",
                 "--stdin", remote, input="".join(f"{oid}\n" for oid in sorted(absent)).encode(),
                 allow_non_zero=True)
        absent = absent_blobs(repo, [entry for entry in listed if entry[1] in absent])
    return {path: oid for path, (_, oid) in entries.items() if oid in absent}


def cat_blob(repo: Repo, oid: str) -> bytes:
    """The content of blob ``oid`` (``git cat-file blob``). Raises :class:`GitError`."""
    return repo.run("cat-file", "blob", oid).stdout


def cat_blobs(repo: Repo, oids: Sequence[str]) -> dict[str, bytes]:
    """Object contents by id, through one ``git cat-file --batch`` (its output: a
    ``<oid> <type> <size>`` line, the content, a newline, for each; ``<name> missing`` for a
    name of nothing here, which is left out)."""
    if not oids:
        return {}
    out = repo.run("cat-file", "--batch",
                   input="".join(o + "\n" for o in oids).encode()).stdout
    found: dict[str, bytes] = {}
    at = 0
    while at < len(out):
        end = out.index(b"\n", at)
        header = out[at:end].decode().split()
        at = end + 1
        if len(header) == 3:
            size = int(header[2])
            found[header[0]] = out[at:at + size]
            at += size + 1
    return found


def cat_named_blobs(repo: Repo, names: Sequence[str]) -> list[bytes | None]:
    """The contents of the blobs ``names`` name (``<rev>:<path>`` and the like), in order, through
    one ``git cat-file --batch``; None for a name that names no blob (missing, ambiguous, or
    another type of object). Raises :class:`GitError`."""
    if not names:
        return []
    out = repo.run("cat-file", "--batch",
                   input="".join(n + "\n" for n in names).encode()).stdout
    found: list[bytes | None] = []
    at = 0
    for _ in names:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) == 3 and header[2].isdigit():
            size = int(header[2])
            found.append(out[at:at + size] if header[1] == b"blob" else None)
            at += size + 1
        else:  # "<name> missing" or "<name> ambiguous": no content follows
            found.append(None)
    return found


def write_blobs(repo: Repo, files: Sequence[str]) -> list[str]:
    """Write the files ``files`` (absolute paths, as they are: no filters) into the object
    store; their blob ids, in order (``git hash-object -w --no-filters --stdin-paths``)."""
    if not files:
        return []
    return repo.run("hash-object", "-w", "--no-filters", "--stdin-paths",
                    input="".join(p + "\n" for p in files).encode()).text.split()


def write_blob(repo: Repo, data: bytes) -> str:
    """Write ``data`` into the object store as it is; its blob id (``git hash-object -w
    --no-filters --stdin``)."""
    return repo.run("hash-object", "-w", "--no-filters", "--stdin", input=data).text


def patches(repo: Repo, commits: Sequence[str]) -> dict[str, str]:
    """Each commit's patch against its first parent (a root commit: against nothing), as
    ``git diff-tree --stdin -p --stat`` gives it for all of them on one process: commit id
    (full, as given) -> the diffstat and patch text (invalid bytes replaced; ``""`` for a
    commit that changes nothing); a commit git does not have is left out."""
    wanted = [c for c in dict.fromkeys(commits) if HEX_NAME.fullmatch(c)]
    if not wanted:
        return {}
    res = repo.run("diff-tree", "--stdin", "--root", "--no-ext-diff", "--no-color",
                   "--diff-merges=first-parent", "--always", "--stat", "--patch",
                   "--format=%x00%H", input="".join(f"{c}\n" for c in wanted).encode(),
                   allow_non_zero=True)
    found: dict[str, str] = {}
    for chunk in res.stdout.decode("utf-8", "replace").split("\0")[1:]:
        oid, _, patch = chunk.partition("\n")
        patch = patch.strip("\n").removeprefix("---\n")  # the line before the diffstat
        found[oid.strip()] = patch + "\n" if patch else ""
    return found


def has_objects(repo: Repo) -> bool:
    """Whether the object store may hold any object: loose or packed, or borrowed from an
    alternate store (``git count-objects -v``: its ``count``, ``in-pack`` and
    ``alternate`` fields)."""
    res = repo.run("count-objects", "-v", allow_non_zero=True)
    fields = dict(line.partition(": ")[::2] for line in res.text.splitlines())
    return res.returncode != 0 or "alternate" in fields or \
        fields.get("count", "1") != "0" or fields.get("in-pack", "1") != "0"


# Names git may stop at in one resolve_many before the rest are left out (a repository that
# fails every call would otherwise be asked once per name).
MAX_STOPS = 64


def resolve_many(repo: Repo, names: Sequence[str]) -> dict[str, str]:
    """The commit each of ``names`` (object ids, full or abbreviated, or ref names) names,
    in one ``git cat-file --batch-check`` (one more, and one for each name git stops at, when
    git cannot read one): name -> full object id; a name that names no commit here (missing,
    ambiguous, another kind of object, blank or with spaces, or one git cannot read) is left
    out, as are all the names after the :data:`MAX_STOPS`-th git stopped at."""
    wanted = [n for n in dict.fromkeys(names) if n and not any(c.isspace() for c in n)]
    if not wanted or not has_objects(repo):
        return {}  # git would look each name up among refs and packs, to find nothing
    found: dict[str, str] = {}
    buffered = True
    stops = 0
    while wanted and stops <= MAX_STOPS:
        # git stops at a name it cannot read (HEAD@{99} past the reflog's end, @{u} with no
        # upstream), and what it buffered is lost: then asked again unbuffered, each answer
        # written as it is found, so the name it stopped at is the one after the last answer,
        # and the names after that are asked again.
        res = repo.run("cat-file", *(["--buffer"] if buffered else []),
                       "--batch-check=%(objectname) %(objecttype)",
                       input="".join(f"{n}^{{commit}}\n" for n in wanted).encode(),
                       allow_non_zero=True)
        lines = res.text.splitlines()
        if res.returncode != 0 and buffered:
            buffered = False
            continue
        stops += res.returncode != 0
        for name, line in zip(wanted, lines, strict=False):
            oid, _, kind = line.partition(" ")
            if kind == "commit" and HEX_NAME.fullmatch(oid):
                found[name] = oid
        wanted = wanted[len(lines) + 1:] if res.returncode != 0 else []
    return found


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
    began = clock()
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
        raise failure_in(GitError(argv[2:], code, b"", stderr), repo.common_dir, began)
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
