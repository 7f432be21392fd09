"""The session's files mirrored in git, at ``refs/autoresearch/<session-id>/state``.

After each recorded run the session files (``config.toml``, ``log.jsonl``, ``prompt.md``,
``ideas.md``, ``final.md`` and ``hooks/``; not ``run.log``) become a commit on that ref, so the
session survives ``git clean -xfd``, a lost ``.auto/`` or a fresh clone that fetched
``refs/autoresearch/*``.

Tree layout (format version 1): the files at their ``.auto/`` paths, except the ledger, which is
split into ``log/00000.jsonl``, ``log/00001.jsonl``, ... of 1,000 lines each: an append touches
only the last piece, so a long session adds small objects, not a whole ledger per run. A
symbolic link under ``hooks/`` (to a hook file or a stage folder) is kept as a link (mode
``120000``, its target as the blob), as git keeps one in a commit.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Collection
from pathlib import Path
from typing import Any

from ..git import ABSENT, DiskFull, GitError, Repo
from ..git.objects import cat_blobs, make_tree, tree_files, write_blobs
from ..ledger import read_bytes
from ..runtime.atomic import read_whole, write_atomic
from ..runtime.errors import Refused
from .refs import NAMESPACE, session_of_state_ref, state_ref

LINES_PER_PIECE = 1000
FILES = ("config.toml", "prompt.md", "ideas.md", "final.md")
FORMAT_VERSION = 1
# The mode :func:`read` gives a symbolic link (git's tree mode for one, ``120000``); its
# content is the link's target.
LINK = 0o120000


class LedgerShrank(Refused):
    """The ledger is shorter than the one the state ref holds: it is not mirrored."""


def _storable(path: str) -> bool:
    """Whether git can be handed ``path`` (one per line, UTF-8) and keep it under its name."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\n" not in path


def _pieces(ledger: bytes, known: dict[int, list[Any]]) -> tuple[int, list[bytes]]:
    """The ledger in pieces of :data:`LINES_PER_PIECE` lines (``bytes.splitlines``' lines) as
    ``(same, rest)``: the first ``same`` pieces are those of ``known`` (the mirror's cache, as
    :func:`_read_cache` checked it: piece index 0 to n - 1 -> [size in bytes, blob id,
    digest]) as they were, and ``rest`` the pieces
    after them. The whole pieces the cache knows (all but its last, which lines appended
    since may have grown) are matched at their place by their size and digest, each holding
    :data:`LINES_PER_PIECE` newlines and no carriage return, its last byte a newline (so its
    lines are those a split of the whole ledger finds there, whatever the cache says); the
    ledger is split into lines only from the first that differs. So a long ledger is not
    split into its 100,000 lines at every mirror, only its last piece."""
    same = start = 0
    for index in range(len(known) - 1):  # (pieces 0 to n - 1, as _read_cache checked)
        size, _, digest = known[index][:3]
        end = start + size
        if end > len(ledger) or ledger[end - 1] != 0x0A \
                or ledger.count(b"\n", start, end) != LINES_PER_PIECE \
                or ledger.find(b"\r", start, end) >= 0 \
                or _digest(memoryview(ledger)[start:end]) != digest:
            break
        same, start = index + 1, end
    lines = ledger[start:].splitlines(keepends=True)
    return same, [b"".join(lines[i:i + LINES_PER_PIECE])
                  for i in range(0, len(lines), LINES_PER_PIECE)]


def mirror(repo: Repo, auto: Path, session_id: str, message: str, *,
           use_cache: bool = True, kept: Collection[int] | None = None
           ) -> tuple[str, list[str]]:
    """Commit the session files of ``auto`` on the state ref (compare-and-swap on its old
    value); returns the new commit id, and the files under ``hooks/`` that could not be
    mirrored (a newline in the name, or a name that is not UTF-8). Raises GitError if another
    writer moved the ref, :class:`LedgerShrank` when the ledger lost lines the ref holds, or
    lost the line of a kept run that the ref holds (``kept``: the numbers of the kept runs
    whose lines the ledger holds now; None: not checked, and not remembered). ``use_cache``
    False: ``auto`` is not this work tree's session folder (a copy of another session's
    files): the cache of what was last mirrored is neither read nor written."""
    ref = state_ref(session_id)
    repo.scratch.mkdir(parents=True, exist_ok=True)
    cache = _read_cache(repo) if use_cache else {}
    try:
        return _mirrored(repo, auto, ref, message, cache, use_cache, kept)
    except DiskFull:
        raise
    except GitError:
        if not cache:
            raise
        # The cache names objects git no longer has (the state ref deleted and its objects
        # pruned, say), or the ref moved under it: mirrored once more, knowing nothing.
        return _mirrored(repo, auto, ref, message, {}, use_cache, kept)


def _mirrored(repo: Repo, auto: Path, ref: str, message: str, cache: dict[str, Any],
              use_cache: bool, kept: Collection[int] | None) -> tuple[str, list[str]]:
    """:func:`mirror` with the mirror's ``cache`` as read (empty: nothing known)."""
    entries, links, skipped = _session_files(auto)
    ledger = read_bytes(auto / "log.jsonl")
    known = _known_pieces(cache, ref)
    same, pieces = _pieces(ledger, known)
    if use_cache and not _rewritten_on_purpose(cache, ledger) \
            and not _appended_only(ledger, known, same):
        # Lines missing from the ledger that the ref holds would be lost from it too, from
        # which doctor --fix brings them back. Asked of the ref itself (its tip: another
        # worktree may have mirrored since) only when the ledger is not what was last
        # mirrored with lines after it, or that is not known.
        base = repo.resolve(ref)
        if base and _loses_lines(repo, base, ledger):
            raise LedgerShrank(_lost_lines_text(auto / "log.jsonl", ref))
    lost = lost_keeps(cache, ref, kept)
    if lost and repo.resolve(ref) == cache.get("commit") \
            and (lost := held_keeps(repo, ref, lost)):
        # A kept run's line is gone though the ledger is no shorter (runs recorded since):
        # mirrored, the state ref would lose it too, and doctor could not trust it again.
        raise LedgerShrank(lost_keeps_text(auto / "log.jsonl", lost, ref))
    blob_of = _write_blobs(repo, entries, pieces, same, known, links)
    tree_entries = [("100755" if os.access(file, os.X_OK) else "100644", blob_of[file], name)
                    for name, file in entries]
    tree_entries += [("120000", blob_of[f"link:{name}"], name) for name, _ in links]
    tree_entries += [("100644", known[index][1], f"log/{index:05d}.jsonl")
                     for index in range(same + len(pieces))]
    tree = make_tree(repo, tree_entries)
    # The ref's value as we last wrote it saves asking git; the compare-and-swap catches any
    # other writer, and then the ref is read and the commit made again on top of it.
    old = cache.get("commit") if cache.get("ref") == ref else repo.resolve(ref)
    commit = _commit_state(repo, ref, tree, old, message)
    cache.update({"ref": ref, "commit": commit})
    cache.pop("forgotten", None)
    cache["pieces"] = {str(k): v for k, v in known.items() if k < same + len(pieces)}
    if kept is not None:
        cache["kept"] = sorted(kept)
    else:
        cache.pop("kept", None)
    if use_cache:
        # A cache: one lost or stale after a crash of the machine is read as empty, or its
        # commit fails the compare-and-swap and the ref is read again (no fsync needed).
        write_atomic(repo.scratch / "state-cache.json", json.dumps(cache).encode(),
                     durable=False)
    return commit, [name for name, _ in skipped]


def _appended_only(ledger: bytes, known: dict[int, list[Any]], same: int) -> bool:
    """Whether ``ledger`` is what the mirror's cache ``known`` says was last mirrored, with
    lines after it: every whole piece found at its place (``same`` of :func:`_pieces`), and
    the last one, by its size and CRC-32, at the start of what follows them."""
    if not known or same != len(known) - 1:
        return False
    start, size, digest = _last_piece(known)
    end = start + size
    return end <= len(ledger) and ledger[end - 1] == 0x0A \
        and _digest(memoryview(ledger)[start:end]) == digest


def _known_pieces(cache: dict[str, Any], ref: str) -> dict[int, list[Any]]:
    """The pieces the mirror's ``cache`` (as :func:`_read_cache` checked it) holds of the
    state ref ``ref``, by index: [size, blob id, digest]; none of another ref."""
    return {int(k): v for k, v in cache.get("pieces", {}).items()} \
        if cache.get("ref") == ref else {}


def _last_piece(known: dict[int, list[Any]]) -> tuple[int, int, str]:
    """Where the last piece the mirror's cache ``known`` (not empty) holds begins in the
    ledger (its pieces before it end to end), its size and its digest."""
    last = len(known) - 1
    size, _, digest = known[last][:3]
    return sum(int(known[index][0]) for index in range(last)), int(size), str(digest)


def _lost_lines_text(ledger: Path, ref: str) -> str:
    """What is said of lines ``ledger`` lost that the state ref ``ref`` holds."""
    return f"{ledger} lost lines that {ref} holds; git autoresearch doctor --fix restores them"


def lost_lines(repo: Repo, ledger: Path, session_id: str) -> str | None:
    """What a reading command says when the ledger file ``ledger`` lost lines that the state
    ref holds, which the next mirror refuses to lose from it too (:class:`LedgerShrank`);
    None when it did not, or nothing is known of the last mirror (no cache: doctor reads the
    ref). One read of the last piece mirrored, at its place, while the ledger is what was
    last mirrored with lines after it (a line lost before it moves it); only otherwise are
    the whole ledger and the ref's own read."""
    cache = _read_cache(repo)
    ref = state_ref(session_id)
    known = _known_pieces(cache, ref)
    if not known:
        return None
    start, size, digest = _last_piece(known)
    try:
        with open(ledger, "rb") as fh:
            fh.seek(start)
            piece = fh.read(size)
            if len(piece) == size and piece.endswith(b"\n") and _digest(piece) == digest:
                return None
            fh.seek(0)
            whole = fh.read()
    except OSError:
        return None  # (the ledger itself is missing or unreadable: the commands say so)
    if _rewritten_on_purpose(cache, whole):
        return None
    base = repo.resolve(ref)
    return _lost_lines_text(ledger, ref) if base and _loses_lines(repo, base, whole) else None


def _loses_lines(repo: Repo, commit: str, ledger: bytes) -> bool:
    """Whether mirroring ``ledger`` would lose lines that the ledger of the state commit
    ``commit`` holds: lines it lacks that doctor --fix puts back at their places
    (:func:`~git_autoresearch.ledger.repairs.with_lost_entries`; a line edited in place is
    no loss), or a run it lacks wherever its lines went (moved lines cannot be put back at
    their places, but the run is, by its number)."""
    from ..ledger.repairs import run_numbers, with_lost_entries

    saved = ledger_at(repo, commit)
    return bool(saved) and (with_lost_entries(ledger, saved) is not None
                            or not run_numbers(saved) <= run_numbers(ledger))


def _rewritten_on_purpose(cache: dict[str, Any], ledger: bytes) -> bool:
    """Whether the mirror was told (:func:`forget`) that ``ledger`` was rewritten on purpose,
    and it holds the bytes it was told of, with lines after them at most."""
    mark = cache.get("forgotten")
    if not (isinstance(mark, list) and len(mark) == 2 and type(mark[0]) is int):
        return False
    return mark[0] <= len(ledger) and _digest(memoryview(ledger)[:mark[0]]) == mark[1]


def _read_cache(repo: Repo) -> dict[str, Any]:
    """What :func:`mirror` last wrote of the state ref (``state-cache.json`` in the scratch
    folder); empty when it is missing or torn."""
    try:
        cache = json.loads((repo.scratch / "state-cache.json").read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(cache, dict):
        return {}
    # Read by the mirror without a second look: a file of another shape (edited by hand, by
    # an agent, or by another version) is read as no cache, as a torn one is.
    pieces = cache.get("pieces", {})
    if not isinstance(pieces, dict) or set(pieces) != {str(n) for n in range(len(pieces))} \
            or not all(isinstance(v, list) and len(v) >= 3 and type(v[0]) is int and v[0] > 0
                       and isinstance(v[1], str) and isinstance(v[2], str)
                       for v in pieces.values()) \
            or not all(isinstance(cache.get(key), (str, type(None)))
                       for key in ("ref", "commit")):
        return {}
    return cache


def lost_keeps(cache: dict[str, Any], ref: str, kept: Collection[int] | None) -> list[int]:
    """The kept runs the state ref ``ref`` was last mirrored with, by ``cache`` (the mirror's
    cache, read), whose lines the ledger lacks now (``kept``: the kept runs it holds)."""
    if kept is None or cache.get("ref") != ref or not isinstance(cache.get("kept"), list):
        return []
    return sorted(set(n for n in cache["kept"] if isinstance(n, int)) - set(kept))


def lost_keeps_text(ledger: Path, lost: Collection[int], ref: str) -> str:
    """What :class:`LedgerShrank` says of the kept runs ``lost`` from ``ledger``."""
    runs = ", ".join(map(str, lost))
    return (f"{ledger} lost the line of kept run{'s' if len(lost) > 1 else ''} {runs}, which "
            f"{ref} holds; git autoresearch doctor --fix restores it")


def mirrored_keeps(repo: Repo, session_id: str, kept: Collection[int]) -> list[int]:
    """The kept runs the state ref of ``session_id`` was last mirrored with (by the mirror's
    cache; none when it is gone, or the ref has moved or gone since) that are not in
    ``kept``: lines the ledger lost since."""
    cache = _read_cache(repo)
    ref = state_ref(session_id)
    lost = lost_keeps(cache, ref, kept)
    # The cache describes the ref only while it still points where the cache says, and a loss
    # it claims is one only if the ref holds the line (a number added to it by hand is not).
    return held_keeps(repo, ref, lost) if lost and repo.resolve(ref) == cache.get("commit") \
        else []


def held_keeps(repo: Repo, ref: str, numbers: Collection[int]) -> list[int]:
    """Those of the run ``numbers`` whose line the ledger on the state commit ``ref`` holds as
    a kept run's, sorted: the losses the mirror's cache claims, checked against the ref itself
    (read whole: only when the cache claims one)."""
    from ..ledger import parse

    held = {run.number for run in parse(ledger_at(repo, ref)).runs if run.status == "keep"}
    return sorted(n for n in numbers if n in held)


def _session_files(auto: Path) -> tuple[list[tuple[str, str]], list[tuple[str, bytes]],
                                         list[tuple[str, str]]]:
    """The files of ``auto`` to mirror besides the ledger, as (tree path, file) pairs; the
    symbolic links under ``hooks/`` (to a file or a folder, never followed) as (tree path,
    target) pairs; and the files and links under ``hooks/`` that git cannot be handed by name
    (:func:`_storable`)."""
    entries = [(name, str(auto / name)) for name in FILES if (auto / name).is_file()]
    links: list[tuple[str, bytes]] = []
    skipped: list[tuple[str, str]] = []
    hooks = auto / "hooks"
    if hooks.is_dir() and not hooks.is_symlink():
        for folder, dirs, files in os.walk(hooks):
            for item in sorted([*dirs, *files]):
                path = Path(folder) / item
                name = path.relative_to(auto).as_posix()
                if path.is_symlink():
                    if _storable(str(path)):
                        links.append((name, os.fsencode(os.readlink(path))))
                    else:
                        skipped.append((name, str(path)))
                elif item in files and path.is_file():
                    (entries if _storable(str(path)) else skipped).append((name, str(path)))
    return entries, sorted(links), skipped


def current(auto: Path) -> dict[str, tuple[bytes, bool]]:
    """What :func:`mirror` would store of ``auto`` now, keyed by the path under ``.auto/`` as
    :func:`read` gives it: each file's content (a link's: its target) and whether it is a
    symbolic link. Files git cannot be handed by name are left out."""
    entries, links, _ = _session_files(auto)
    found = {name: (read_whole(Path(file)), False) for name, file in entries}
    found.update((name, (target, True)) for name, target in links)
    if (auto / "log.jsonl").is_file():
        found["log.jsonl"] = ((auto / "log.jsonl").read_bytes(), False)
    return found


def unkept_links(repo: Repo, auto: Path) -> list[str]:
    """The symbolic links under ``auto/hooks/`` whose target git does not keep: a path in the
    work tree, outside ``hooks/``, that is not tracked (``git clean -xfd`` removes it, and the
    state ref holds only the link). Each as ``.auto/hooks/<name> -> <target>``."""
    _, links, _ = _session_files(auto)
    hooks = (auto / "hooks").resolve()
    top = repo.top.resolve()
    outside: dict[str, str] = {}
    for name, target in links:
        pointed = (auto / name).parent / os.fsdecode(target)
        try:
            real = Path(os.path.normpath(Path(os.path.abspath(pointed)))).resolve()
        except (OSError, RuntimeError):
            continue
        if real == hooks or hooks in real.parents or top not in real.parents \
                or not real.exists():  # a link to nothing is said when its stage fires
            continue
        outside[real.relative_to(top).as_posix()] = f".auto/{name} -> {os.fsdecode(target)}"
    kept = set(repo.indexed(sorted(outside))) if outside else set()
    return [said for rel, said in sorted(outside.items()) if rel not in kept]


def write_file(path: Path, data: bytes, mode: int) -> None:
    """Write a session file as :func:`read` gives it: ``data`` with ``mode``, or, for
    :data:`LINK`, a symbolic link to ``data`` (what is at ``path`` replaced whole)."""
    if mode != LINK:
        write_atomic(path, data, mode)
        return
    temporary = path.with_name(f".{path.name}.link.{os.getpid()}")
    temporary.unlink(missing_ok=True)
    os.symlink(os.fsdecode(data), temporary)
    os.replace(temporary, path)


def _digest(data: bytes | memoryview) -> str:
    """The content check the cache keeps of a ledger piece: its CRC-32, as ``crc32:<hex>``.
    Every piece of the ledger is checked at every run (a hand fix of one character changes no
    length), so the check must cost little: CRC-32 reads 37 MB in a few milliseconds, SHA-256
    by Python's own code took 0.15 s. It tells a hand edit from the piece mirrored, which is
    all it is for (a digest of another kind, such as an older cache's, reads as changed)."""
    return f"crc32:{zlib.crc32(data):08x}"


def _write_blobs(repo: Repo, entries: list[tuple[str, str]], pieces: list[bytes], same: int,
                 known: dict[int, list[Any]], links: list[tuple[str, bytes]]
                 ) -> dict[str, str]:
    """Write the files of ``entries``, the targets of ``links`` and the ledger pieces that
    changed since the cache ``known`` (piece index -> [size in bytes, blob id, digest of the
    content], updated here) as blobs, in one git call; the blob id of each file by its path,
    and of each link by ``link:<tree path>``. ``pieces`` are the ledger's from index ``same``
    on (those before are the cache's: :func:`_pieces`). A piece is compared by its digest,
    not its length: a hand fix of one character changes no length."""
    link_files: list[tuple[str, Path]] = []
    for number, (name, target) in enumerate(links):
        tmp = repo.scratch / f"state-link.{os.getpid()}.{number}"
        write_atomic(tmp, target, durable=False)  # read by git below, then removed
        link_files.append((name, tmp))
    piece_files: list[tuple[int, Path]] = []
    for index, data in enumerate(pieces, start=same):
        cached = known.get(index, [])
        if len(cached) >= 3 and cached[0] == len(data) and cached[2] == _digest(data):
            continue
        tmp = repo.scratch / f"state-piece.{os.getpid()}.{index}"
        write_atomic(tmp, data, durable=False)  # read by git below, then removed
        piece_files.append((index, tmp))
    paths = [p for _, p in entries] + [str(p) for _, p in piece_files]
    paths += [str(p) for _, p in link_files]
    try:
        ids = write_blobs(repo, paths)
    finally:
        for tmp in [*(p for _, p in piece_files), *(p for _, p in link_files)]:
            tmp.unlink()
    blob_of = dict(zip(paths, ids, strict=True))
    for name, tmp in link_files:
        blob_of[f"link:{name}"] = blob_of[str(tmp)]
    for index, tmp in piece_files:
        data = pieces[index - same]
        known[index] = [len(data), blob_of[str(tmp)], _digest(data)]
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


def forget(repo: Repo, ledger: Path) -> None:
    """Forget what the state ref was last mirrored from, once the ledger at ``ledger`` was
    rewritten on purpose (malformed lines set aside, a lost header put back, commit ids
    replaced): lines it no longer holds are no loss, and the next :func:`mirror` must not
    refuse it as one, while it holds the bytes it holds now (lines appended since
    included). A missing cache, by contrast, is asked of the ref itself."""
    repo.scratch.mkdir(parents=True, exist_ok=True)
    data = read_bytes(ledger)
    write_atomic(repo.scratch / "state-cache.json",
                 json.dumps({"forgotten": [len(data), _digest(data)]}).encode(), durable=False)


def behind(repo: Repo, auto: Path, session_id: str) -> list[str] | None:
    """The session files of ``auto`` (paths under ``.auto/``: ``log.jsonl``, those of
    :data:`FILES` and the hooks) that the state ref of ``session_id`` does not hold as they
    are now (changed, added, removed, turned into a link); None when there is no state ref."""
    state = read(repo, session_id)
    if state is None:
        return None
    saved, modes = state
    held = {name: (data, modes.get(name) == LINK) for name, data in saved.items()}
    now = current(auto)
    out = ["log.jsonl"] if saved.get("log.jsonl", b"") != now.get("log.jsonl", (b"", False))[0] \
        else []
    out += [name for name in FILES if name in now and held.get(name) != now[name]]
    # The hooks as they are: one added, changed, turned into a link or removed since.
    hooks = {name for name in [*now, *held] if name.startswith("hooks/")}
    return out + sorted(name for name in hooks if held.get(name) != now.get(name))


def read(repo: Repo, session_id: str) -> tuple[dict[str, bytes], dict[str, int]] | None:
    """The session files as the state ref holds them (``log.jsonl`` joined again), keyed by
    their path under ``.auto/``, and their modes (0o755 or 0o644); None when there is no state
    ref (:data:`LINK` for a symbolic link, whose content is its target). Two git calls, whatever
    the number of files."""
    return read_at(repo, state_ref(session_id))


def saved_ledger(repo: Repo, session_id: str) -> bytes:
    """The ledger the state ref of ``session_id`` holds (its pieces joined); empty when
    there is no state ref."""
    return ledger_at(repo, state_ref(session_id))


def ledger_at(repo: Repo, rev: str) -> bytes:
    """The ledger the state commit ``rev`` holds (its pieces joined); empty when ``rev``
    names no commit."""
    state = read_at(repo, rev)
    return state[0].get("log.jsonl", b"") if state is not None else b""


def read_at(repo: Repo, rev: str) -> tuple[dict[str, bytes], dict[str, int]] | None:
    """:func:`read` of the state commit ``rev`` (a state ref, or a commit fetched from a
    remote's); None when ``rev`` names no commit."""
    if repo.resolve(rev) is None:
        return None
    modes_of = {"100755": 0o755, "120000": LINK}
    entries = [(path, oid, modes_of.get(mode, 0o644)) for mode, oid, path in tree_files(repo, rev)]
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


def lines_in_history(repo: Repo, session_id: str, wanted: Collection[int],
                     batch: int = 16) -> dict[int, bytes]:
    """The lines of the runs ``wanted`` as the state ref's history holds them (run number ->
    the line's bytes, the newest that reads as one run record): the ledger pieces each state
    commit wrote, newest first, read :data:`batch` at a time until every wanted run is found,
    so a line lost a few commits ago costs a few blobs, not the whole history."""
    from ..ledger import parse

    missing = set(wanted)
    found: dict[int, bytes] = {}
    blobs = repo.blob_versions(state_ref(session_id), "log/") if missing else []
    for start in range(0, len(blobs), batch):
        chunk = blobs[start:start + batch]
        contents = cat_blobs(repo, chunk)
        for oid in chunk:
            for raw in contents.get(oid, b"").split(b"\n"):
                if not missing:
                    return found
                book = parse(raw)
                if book.runs and not book.malformed and book.runs[0].number in missing:
                    found[book.runs[0].number] = raw
                    missing.discard(book.runs[0].number)
    return found


def sessions(repo: Repo) -> list[str]:
    """Session ids that have a state ref."""
    return [sid for sid in map(session_of_state_ref, repo.for_each_ref(NAMESPACE)) if sid]

