"""The session's files mirrored in git, at ``refs/autoresearch/<session-id>/state``.

After each recorded run the session files (``config.toml``, ``log.jsonl``, ``prompt.md``,
``ideas.md``, ``final.md`` and ``hooks/``; not ``run.log``) become a commit on that ref, so the
session survives ``git clean -xfd``, a lost ``.auto/`` or a fresh clone that fetched
``refs/autoresearch/*``.

Tree layout (format version 1): the files at their ``.auto/`` paths, except the ledger, which is
split into ``log/00000.jsonl``, ``log/00001.jsonl``, ... of 1,000 lines each: an append touches
only the last piece, so a long session adds small objects, not a whole ledger per run.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .errors import Refused
from .files import write_atomic
from .git import ABSENT, GitError, Repo
from .git.objects import cat_blobs, tree_files, write_blobs
from .git.trees import make_tree
from .refs import NAMESPACE, session_of_state_ref, state_ref

LINES_PER_PIECE = 1000
FILES = ("config.toml", "prompt.md", "ideas.md", "final.md")
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


def mirror(repo: Repo, auto: Path, session_id: str, message: str, *,
           use_cache: bool = True) -> tuple[str, list[str]]:
    """Commit the session files of ``auto`` on the state ref (compare-and-swap on its old
    value); returns the new commit id, and the files under ``hooks/`` that could not be
    mirrored (a newline in the name, or a name that is not UTF-8). Raises GitError if another
    writer moved the ref, :class:`LedgerShrank` when the ledger lost lines the ref holds.
    ``use_cache`` False: ``auto`` is not this work tree's session folder (a copy of another
    session's files): the cache of what was last mirrored is neither read nor written."""
    ref = state_ref(session_id)
    repo.scratch.mkdir(parents=True, exist_ok=True)
    cache_path = repo.scratch / "state-cache.json"
    try:
        cache = json.loads(cache_path.read_text()) if use_cache else {}
    except (FileNotFoundError, ValueError):
        cache = {}
    entries, skipped = _session_files(auto)
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
    blob_of = _write_blobs(repo, entries, pieces, known)
    tree_entries = [("100755" if os.access(file, os.X_OK) else "100644", blob_of[file], name)
                    for name, file in entries]
    tree_entries += [("100644", known[index][1], f"log/{index:05d}.jsonl")
                     for index in range(len(pieces))]
    tree = make_tree(repo, tree_entries)
    # The ref's value as we last wrote it saves asking git; the compare-and-swap catches any
    # other writer, and then the ref is read and the commit made again on top of it.
    old = cache.get("commit") if cache.get("ref") == ref else repo.resolve(ref)
    commit = _commit_state(repo, ref, tree, old, message)
    cache.update({"ref": ref, "commit": commit})
    cache["pieces"] = {str(k): v for k, v in known.items() if k < len(pieces)}
    if use_cache:
        write_atomic(cache_path, json.dumps(cache).encode())
    return commit, [name for name, _ in skipped]


def _session_files(auto: Path) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The files of ``auto`` to mirror besides the ledger, as (tree path, file) pairs, and
    those under ``hooks/`` that git cannot be handed by name (:func:`_storable`)."""
    entries = [(name, str(auto / name)) for name in FILES if (auto / name).is_file()]
    skipped: list[tuple[str, str]] = []
    hooks = auto / "hooks"
    if hooks.is_dir():
        for path in sorted(hooks.rglob("*")):
            if path.is_file() and not path.is_symlink():
                name = path.relative_to(auto).as_posix()
                (entries if _storable(str(path)) else skipped).append((name, str(path)))
    return entries, skipped


def _digest(data: bytes) -> str:
    """The content hash the cache keeps of a ledger piece (SHA-256, hex)."""
    return hashlib.sha256(data).hexdigest()


def _write_blobs(repo: Repo, entries: list[tuple[str, str]], pieces: list[bytes],
                 known: dict[int, list[Any]]) -> dict[str, str]:
    """Write the files of ``entries`` and the ledger pieces that changed since the cache
    ``known`` (piece index -> [size in bytes, blob id, SHA-256 of the content], updated here)
    as blobs, in one git call; the blob id of each file, by its path. A piece is compared by
    its content hash, not its length: a hand fix of one character changes no length."""
    piece_files: list[tuple[int, Path]] = []
    for index, data in enumerate(pieces):
        cached = known.get(index, [])
        if len(cached) >= 3 and cached[0] == len(data) and cached[2] == _digest(data):
            continue
        tmp = repo.scratch / f"state-piece.{os.getpid()}.{index}"
        write_atomic(tmp, data)
        piece_files.append((index, tmp))
    paths = [p for _, p in entries] + [str(p) for _, p in piece_files]
    try:
        ids = write_blobs(repo, paths)
    finally:
        for _, tmp in piece_files:
            tmp.unlink()
    blob_of = dict(zip(paths, ids, strict=True))
    for index, tmp in piece_files:
        known[index] = [len(pieces[index]), blob_of[str(tmp)], _digest(pieces[index])]
    return blob_of


def _commit_state(repo: Repo, ref: str, tree: str, old: str | None, message: str) -> str:
    """Commit ``tree`` on top of ``old`` and move ``ref`` there by compare-and-swap; when
    another writer moved it meanwhile, once more on top of what it holds now. Raises
    :class:`GitError`."""
    text = f"{message}\n\nAutoresearch-State: {FORMAT_VERSION}\n"
    commit = repo.commit_tree(tree, [old] if old else [], text)
    try:
        repo.update_ref(ref, commit, old or ABSENT, "autoresearch: mirror session files")
    except GitError:
        old = repo.resolve(ref)
        commit = repo.commit_tree(tree, [old] if old else [], text)
        repo.update_ref(ref, commit, old or ABSENT, "autoresearch: mirror session files")
    return commit


def forget(repo: Repo) -> None:
    """Forget what the state ref was last mirrored from: after the ledger was rewritten on
    purpose (malformed lines set aside, a lost header put back), a shorter ledger is no loss,
    and the next :func:`mirror` must not refuse it as one."""
    (repo.scratch / "state-cache.json").unlink(missing_ok=True)


def read(repo: Repo, session_id: str) -> tuple[dict[str, bytes], dict[str, int]] | None:
    """The session files as the state ref holds them (``log.jsonl`` joined again), keyed by
    their path under ``.auto/``, and their modes (0o755 or 0o644); None when there is no state
    ref. Two git calls, whatever the number of files."""
    return read_at(repo, state_ref(session_id))


def read_at(repo: Repo, rev: str) -> tuple[dict[str, bytes], dict[str, int]] | None:
    """:func:`read` of the state commit ``rev`` (a state ref, or a commit fetched from a
    remote's); None when ``rev`` names no commit."""
    if repo.resolve(rev) is None:
        return None
    entries = [(path, oid, 0o755 if mode == "100755" else 0o644)
               for mode, oid, path in tree_files(repo, rev)]
    contents = cat_blobs(repo, [oid for _, oid, _ in entries])
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


def sessions(repo: Repo) -> list[str]:
    """Session ids that have a state ref."""
    return [sid for sid in map(session_of_state_ref, repo.for_each_ref(NAMESPACE)) if sid]

