"""Which files of the work tree the configured commands name (their scripts, a scorer, data):
they define success, so they are readonly automatically (gitautoresearch-config(5))."""

from __future__ import annotations

import os
from pathlib import Path

from ..git import Repo
from ..git.objects import cat_blob, ls_tree
from ..runtime.scope import AUTO
from .config import Config


def script_paths(repo: Repo, command: str, head: str) -> list[str]:
    """Files that a shell command names (its scripts, a scorer, its data) and that commit
    ``head`` holds: the words of ``command`` that are paths inside the top, and, for a
    symlink, the file it points to in ``head`` (whatever the work tree holds now). Paths are
    relative to the top, with ``/`` separators, in the command's order. A file the command
    names that is not committed (``test ! -e out.txt``) is not one of them, nor is a path
    outside the top."""
    candidates = named_paths(repo, command)
    found: list[str] = []
    for _ in range(8):  # symlinks to symlinks, within reason
        wanted = [p for p in dict.fromkeys(candidates) if p not in found]
        if not wanted:
            break
        candidates = []
        held = set()
        for mode, kind, oid, path in ls_tree(repo, head, wanted):
            held.add(path)  # (a folder too: no link on its way)
            if path not in wanted or kind != "blob":
                continue
            found.append(path)
            if mode == "120000":
                pointed = _pointed(repo, path, oid)
                if pointed:
                    candidates.append(pointed)
        candidates += _through_folder_links(repo, head, [p for p in wanted if p not in held],
                                            found)
    return found


def _pointed(repo: Repo, link: str, oid: str, rest: str = "") -> str | None:
    """Where the symbolic link ``link`` (its target the blob ``oid``) leads, followed by
    ``rest``: relative to the top, or None outside it."""
    target = os.fsdecode(cat_blob(repo, oid))
    return _inside(repo, os.path.normpath(
        repo.top / os.path.dirname(link) / target / rest))


def linked_paths(repo: Repo, head: str, entries: list[str], *, links: bool = True
                 ) -> list[str]:
    """For the paths of ``entries`` (``scope``, ``readonly`` or ``protected`` as configured)
    that go through a folder the work tree has as a symbolic link, the links ``head`` holds
    on their way (with ``links``) and the paths they reach there
    (:func:`_through_folder_links`): git names a change by the path it reaches, never by the
    one through the link. A glob is left as it is. Asks git only when such an entry exists."""
    top = os.path.realpath(repo.top)
    linked = [entry for entry in entries if "/" in entry.strip("/")
              and not any(c in entry for c in "*?[")
              and os.path.realpath(repo.top / entry) != os.path.join(top, entry.strip("/"))]
    if not linked:
        return []
    found: list[str] = []
    reached = _through_folder_links(repo, head, [entry.strip("/") for entry in linked], found)
    return found + reached if links else reached


def _through_folder_links(repo: Repo, head: str, paths: list[str], found: list[str]
                          ) -> list[str]:
    """For each of ``paths``, which ``head`` does not hold as files, the path it reaches
    through the first folder on its way that ``head`` holds as a symbolic link (``sh
    tools/bench.sh`` with ``tools`` a link to ``scripts``: ``scripts/bench.sh``); each such
    link is added to ``found``: pointed elsewhere, it changes what the command runs. Git is
    asked only about the folders on the way that the work tree has (a link, or what replaced
    it): a path under none, an output not made yet, costs no git call."""
    prefixes = {path: [prefix for depth in range(path.count("/"), 0, -1)
                       if os.path.lexists(repo.top / (prefix := path.rsplit("/", depth)[0]))]
                for path in paths}
    asked = sorted({prefix for found_prefixes in prefixes.values() for prefix in found_prefixes})
    if not asked:
        return []
    links = {path: oid for mode, kind, oid, path in ls_tree(repo, head, asked)
             if mode == "120000" and kind == "blob"}
    reached = []
    for path, ways in prefixes.items():
        link = next((prefix for prefix in ways if prefix in links), None)
        if link is None:
            continue
        if link not in found:
            found.append(link)
        pointed = _pointed(repo, link, links[link], path[len(link) + 1:])
        if pointed:
            reached.append(pointed)
    return reached


def named_paths(repo: Repo, command: str) -> list[str]:
    """The words of a shell command that are paths inside the top (relative to it, with ``/``
    separators, in the command's order), whether or not such a file exists."""
    from .config import command_words

    found: list[str] = []
    for word in command_words(command):
        if not word or word.startswith("-") or "=" in word and not word.startswith("./"):
            continue
        rel = _inside(repo, os.path.normpath(word if os.path.isabs(word) else repo.top / word))
        if rel:
            found.append(rel)
    return found


def uncommitted_command_files(repo: Repo, cfg: Config, committed: list[str]) -> list[str]:
    """Files of the work tree that the configured commands name but that are not among
    ``committed`` (:func:`command_files`): nothing in HEAD can restore them, so they cannot be
    kept readonly. Files under ``.auto/`` are left out (the session's own scripts)."""
    found: list[str] = []
    for command in (cfg.command, cfg.metric_command, cfg.checks_command):
        for path in named_paths(repo, command or ""):
            if path not in committed and not path.startswith(AUTO + "/") \
                    and not any(path.startswith(link + "/") for link in committed) \
                    and (repo.top / path).is_file():
                # (a path through a committed folder link reaches a file found through it)
                found.append(path)
    return list(dict.fromkeys(found))


def _inside(repo: Repo, path: str) -> str | None:
    """``path`` (absolute, normalised) relative to the top with ``/`` separators, or None
    when it is the top itself or outside it."""
    for root in (repo.top, repo.top.resolve()):
        try:
            rel = Path(path).relative_to(root).as_posix()
        except ValueError:
            continue
        return rel if rel != "." else None
    return None


def command_files(repo: Repo, cfg: Config, head: str | None) -> list[str]:
    """The committed files that ``command``, ``metric_command`` and ``checks_command`` name
    (:func:`script_paths`; none when ``head`` is None): readonly automatically, since they
    define success."""
    found: list[str] = []
    for command in (cfg.command, cfg.metric_command, cfg.checks_command):
        if command and head is not None:
            found += script_paths(repo, command, head)
    return list(dict.fromkeys(found))
