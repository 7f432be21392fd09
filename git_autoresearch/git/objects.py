"""Objects read and written without the index: the entries of a tree, blobs in batch (``git
cat-file --batch``, ``git hash-object -w``), for the readonly scripts and the state ref; many
commits resolved (``git cat-file --batch-check``) and their patches read (``git diff-tree
--stdin``) on one process each, for the dashboard."""

from __future__ import annotations

from collections.abc import Sequence

from .history import HEX_NAME
from .process import split_z
from .repo import Repo
from .trees import absent_blobs


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
    has not sent (:func:`~.trees.absent_blobs`) and does not send now, asked for all at once
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
    at = 0  # mutation: equivalent only `0` -> `1`: the first header's id is never read
    for _ in names:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) == 3 and header[2].isdigit():
            size = int(header[2])
            found.append(out[at:at + size] if header[1] == b"blob" else None)
            # mutation: equivalent only `1` -> `2`: it skips the next header's id, never read
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
                   # mutation: equivalent only `True` -> `False`: a missing commit is no error
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
    # mutation: equivalent only `True` -> `False`: count-objects does not fail in a repository
    res = repo.run("count-objects", "-v", allow_non_zero=True)
    fields = dict(line.partition(": ")[::2] for line in res.text.splitlines())
    return res.returncode != 0 or "alternate" in fields or \
        fields.get("count", "1") != "0" or fields.get("in-pack", "1") != "0"


def resolve_many(repo: Repo, names: Sequence[str]) -> dict[str, str]:
    """The commit each of ``names`` (object ids, full or abbreviated, or ref names) names,
    in one ``git cat-file --batch-check``: name -> full object id; a name that names no
    commit here (missing, ambiguous, another kind of object, blank or with spaces) is
    left out."""
    wanted = [n for n in dict.fromkeys(names) if n and not any(c.isspace() for c in n)]
    # mutation: equivalent only `or` -> `and`: a shortcut; git finds nothing either way
    if not wanted or not has_objects(repo):
        return {}  # git would look each name up among refs and packs, to find nothing
    res = repo.run("cat-file", "--buffer", "--batch-check=%(objectname) %(objecttype)",
                   input="".join(f"{n}^{{commit}}\n" for n in wanted).encode(),
                   # mutation: equivalent only `True` -> `False`: --batch-check does not fail
                   allow_non_zero=True)
    found: dict[str, str] = {}
    # mutation: equivalent only `False` -> `True`: --batch-check answers each name once
    for name, line in zip(wanted, res.text.splitlines(), strict=False):
        oid, _, kind = line.partition(" ")
        # mutation: equivalent only `and` -> `or`: a line of no object names it with ^{commit}
        if kind == "commit" and HEX_NAME.fullmatch(oid):
            found[name] = oid
    return found
