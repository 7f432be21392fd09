"""The session's files mirrored in git, at ``refs/autoresearch/<session-id>/state``.

After each recorded run the session files (``config.toml``, ``log.jsonl``, ``prompt.md``,
``ideas.md`` and ``hooks/``; not ``run.log``) become a commit on that ref, so the session
survives ``git clean -xfd``, a lost ``.auto/`` or a fresh clone that fetched
``refs/autoresearch/*``.

Tree layout (format version 1): the files at their ``.auto/`` paths, except the ledger, which is
split into ``log/00000.jsonl``, ``log/00001.jsonl``, ... of 1,000 lines each: an append touches
only the last piece, so a long session adds small objects, not a whole ledger per run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .errors import Refused
from .files import write_atomic
from .git import ABSENT, GitError, Repo, split_z
from .refs import NAMESPACE, session_of_state_ref, state_ref

LINES_PER_PIECE = 1000
FILES = ("config.toml", "prompt.md", "ideas.md")
FORMAT_VERSION = 1


class LedgerShrank(Refused):
    """The ledger is shorter than the one the state ref holds: it is not mirrored."""


def _storable(path: str) -> bool:
    """Whether git can be handed ``path`` (one per line, UTF-8) and keep it under its name."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\n" not in path


def _pieces(ledger: bytes) -> list[bytes]:
    lines = ledger.splitlines(keepends=True)
    return [b"".join(lines[i:i + LINES_PER_PIECE]) for i in range(0, len(lines),
                                                                   LINES_PER_PIECE)]


def mirror(repo: Repo, auto: Path, session_id: str, message: str) -> tuple[str, list[str]]:
    """Commit the session files of ``auto`` on the state ref (compare-and-swap on its old
    value); returns the new commit id, and the files under ``hooks/`` that could not be
    mirrored (a newline in the name, or a name that is not UTF-8). Raises GitError if another
    writer moved the ref."""
    ref = state_ref(session_id)
    scratch = repo.scratch
    scratch.mkdir(parents=True, exist_ok=True)
    cache_path = scratch / "state-cache.json"
    try:
        cache = json.loads(cache_path.read_text())
    except (FileNotFoundError, ValueError):
        cache = {}
    entries: list[tuple[str, str]] = []  # (tree path, file to hash)
    for name in FILES:
        if (auto / name).is_file():
            entries.append((name, str(auto / name)))
    hooks = auto / "hooks"
    skipped: list[tuple[str, str]] = []
    if hooks.is_dir():
        for path in sorted(hooks.rglob("*")):
            if path.is_file() and not path.is_symlink():
                name = path.relative_to(auto).as_posix()
                (entries if _storable(str(path)) else skipped).append((name, str(path)))
    try:
        ledger = (auto / "log.jsonl").read_bytes()
    except FileNotFoundError:
        ledger = b""
    pieces = _pieces(ledger)
    known = {int(k): v for k, v in cache.get("pieces", {}).items()}
    if cache.get("ref") == ref and sum(v[0] for v in known.values()) > len(ledger) \
            and repo.resolve(ref) == cache.get("commit"):
        # Lines are missing from the ledger: mirroring it would lose them from the state ref
        # too, from which resume brings them back.
        raise LedgerShrank(f"{auto / 'log.jsonl'} is shorter than the ledger on {ref} (it lost "
                           "lines?); git autoresearch doctor --fix restores them (or, lost at "
                           "its end, git autoresearch resume)")
    piece_files: list[tuple[int, Path]] = []
    for index, data in enumerate(pieces):
        if known.get(index, [None])[0] == len(data):
            continue
        tmp = scratch / f"state-piece.{os.getpid()}.{index}"
        write_atomic(tmp, data)
        piece_files.append((index, tmp))
    paths = [p for _, p in entries] + [str(p) for _, p in piece_files]
    try:
        ids = repo.run("hash-object", "-w", "--no-filters", "--stdin-paths",
                       input="".join(p + "\n" for p in paths).encode()).text.split() \
            if paths else []
    finally:
        for _, tmp in piece_files:
            tmp.unlink()
    blob_of = dict(zip(paths, ids, strict=True))
    for index, tmp in piece_files:
        known[index] = [len(pieces[index]), blob_of[str(tmp)]]
    tree_entries = [("100755" if os.access(file, os.X_OK) else "100644", blob_of[file], name)
                    for name, file in entries]
    tree_entries += [("100644", known[index][1], f"log/{index:05d}.jsonl")
                     for index in range(len(pieces))]
    tree = repo.make_tree(tree_entries)
    # The ref's value as we last wrote it saves asking git; the compare-and-swap catches any
    # other writer, and then the ref is read and the commit made again on top of it.
    old = cache.get("commit") if cache.get("ref") == ref else repo.resolve(ref)
    for attempt in range(2):
        parents = ["-p", old] if old else []
        commit = repo.run("commit-tree", tree, *parents, "-F", "-", input=(
            f"{message}\n\nAutoresearch-State: {FORMAT_VERSION}\n").encode()).text
        try:
            repo.update_ref(ref, commit, old or ABSENT, "autoresearch: mirror session files")
            break
        except GitError:
            if attempt:
                raise
            old = repo.resolve(ref)
    cache.update({"ref": ref, "commit": commit})
    cache["pieces"] = {str(k): v for k, v in known.items() if k < len(pieces)}
    write_atomic(cache_path, json.dumps(cache).encode())
    return commit, [name for name, _ in skipped]


def forget(repo: Repo) -> None:
    """Forget what the state ref was last mirrored from: after the ledger was rewritten on
    purpose (malformed lines set aside, a lost header put back), a shorter ledger is no loss,
    and the next :func:`mirror` must not refuse it as one."""
    (repo.scratch / "state-cache.json").unlink(missing_ok=True)


def read(repo: Repo, session_id: str) -> tuple[dict[str, bytes], dict[str, int]] | None:
    """The session files as the state ref holds them (``log.jsonl`` joined again), keyed by
    their path under ``.auto/``, and their modes (0o755 or 0o644); None when there is no state
    ref. Two git calls, whatever the number of files."""
    ref = state_ref(session_id)
    if repo.resolve(ref) is None:
        return None
    entries: list[tuple[str, str, int]] = []
    for item in split_z(repo.run("ls-tree", "-r", "-z", "--full-tree", ref).stdout):
        meta, _, path = item.partition("\t")
        kind, _, oid = meta.split()
        entries.append((path, oid, 0o755 if kind == "100755" else 0o644))
    contents = _cat_blobs(repo, [oid for _, oid, _ in entries])
    files: dict[str, bytes] = {}
    modes: dict[str, int] = {}
    pieces = []
    for path, oid, file_mode in entries:
        if path.startswith("log/"):
            pieces.append((path, contents[oid]))
        else:
            files[path], modes[path] = contents[oid], file_mode
    if pieces:
        files["log.jsonl"] = b"".join(data for _, data in sorted(pieces))
    return files, modes


def _cat_blobs(repo: Repo, oids: list[str]) -> dict[str, bytes]:
    """Blob contents by id, through one ``git cat-file --batch``."""
    if not oids:
        return {}
    out = repo.run("cat-file", "--batch", input="".join(o + "\n" for o in oids).encode()).stdout
    found: dict[str, bytes] = {}
    at = 0
    while at < len(out):
        end = out.index(b"\n", at)
        oid, _, size = out[at:end].decode().split()
        found[oid] = out[end + 1:end + 1 + int(size)]
        at = end + 1 + int(size) + 1
    return found


def sessions(repo: Repo) -> list[str]:
    """Session ids that have a state ref."""
    res = repo.run("for-each-ref", "--format=%(refname)", NAMESPACE)
    return [sid for sid in map(session_of_state_ref, res.text.splitlines()) if sid]

