"""Case-only renames where the file system folds case (macOS, Windows, exFAT): ``mv Foo.py
foo.py`` leaves the index holding ``Foo.py`` and the folder listing ``foo.py``, and git, with
``core.ignorecase`` (which ``git init`` sets on such a file system), reports nothing or a mere
edit. The names on disk are compared with the index's here, and an index entry is renamed
(``git update-index``), as ``git mv`` would, without touching the work tree.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

from .process import join_z, split_z
from .repo import Repo


def case_renames(repo: Repo, paths: Iterable[str] | None = None) -> dict[str, str]:
    """The index entries (``paths`` of them, or all) whose name on disk differs in case only:
    index path -> the path as the folders list it (``Foo.py`` -> ``foo.py``, ``Src/a.py`` ->
    ``src/a.py``). Empty unless :meth:`Repo.ignores_case`. A path whose disk name is itself another
    index entry, or that no name on disk matches, is left out (an edit or a deletion, which
    git reports)."""
    if not repo.ignores_case():
        return {}
    indexed = split_z(repo.run("ls-files", "-z").stdout)
    known = set(indexed)
    wanted = indexed if paths is None else [p for p in paths if p in known]
    listings: dict[str, dict[str, list[str]]] = {}

    def listing(folder: str) -> dict[str, list[str]]:
        if folder not in listings:
            found: dict[str, list[str]] = {}
            try:
                for name in os.listdir(repo.top / folder if folder else repo.top):
                    found.setdefault(name.casefold(), []).append(name)
            except OSError:
                pass
            listings[folder] = found
        return listings[folder]

    renames: dict[str, str] = {}
    for path in wanted:
        on_disk: list[str] = []
        for part in path.split("/"):
            names = listing("/".join(on_disk)).get(part.casefold(), [])
            if part in names:
                on_disk.append(part)
            elif len(names) == 1:
                on_disk.append(names[0])
            else:
                break
        else:
            new = "/".join(on_disk)
            if new != path and new not in known:
                renames[path] = new
    return renames


def rename_in_index(repo: Repo, renames: Mapping[str, str],
                    env: Mapping[str, str] | None = None) -> None:
    """Move each index entry ``old`` to ``new`` (``renames``: old -> new) with the content of
    ``new`` in the work tree: ``git update-index --add`` of the new names, then
    ``--force-remove`` of the old ones (the index ``env`` names, the real one by default).
    Raises :class:`GitError`."""
    if not renames:
        return
    repo.run("update-index", "--add", "-z", "--stdin", input=join_z(renames.values()), env=env)
    repo.run("update-index", "--force-remove", "-z", "--stdin", input=join_z(renames), env=env)


def undo_case_renames(repo: Repo, paths: Sequence[str]) -> list[str]:
    """Give each of ``paths`` (index paths) back its index name on disk where it differs in
    case only (:func:`case_renames`), folders first, by renaming on disk (a case-only rename
    is one ``rename`` on a file system that folds case). Returns the index paths renamed."""
    renames = case_renames(repo, paths)
    done: set[str] = set()
    for old, new in sorted(renames.items()):
        olds, news = old.split("/"), new.split("/")
        for depth, _ in enumerate(olds, start=1):
            was, now = "/".join(olds[:depth]), "/".join(olds[:depth - 1] + news[depth - 1:depth])
            if was != now and was not in done:
                os.rename(repo.top / now, repo.top / was)
                done.add(was)
    return sorted(renames)
