"""Submodules an experiment changed: a revert puts back the commit HEAD records (never fetching),
and a submodule with changes not committed inside it is refused before anything changes, since
neither a keep nor a revert could record them."""

from __future__ import annotations

from collections.abc import Sequence

from ..git import GITLINK, Repo, submodule
from ..runtime.errors import Refused


def refuse_dirty_submodules(repo: Repo, paths: Sequence[str], what: str) -> list[str]:
    """The submodules among ``paths`` (:meth:`Repo.submodules`); :class:`Refused`, naming
    them, when any has changes its checked-out commit does not hold (a revert could only
    restore its commit by losing them, and a keep could only record its commit without them)
    or, for a revert, lacks the commit HEAD records for it. ``what`` says what was not done
    (``reverted``, ``kept``)."""
    subs = submodule.submodules(repo, paths)
    dirty = [p for p in subs if submodule.is_dirty(repo, p)]
    if dirty:
        raise Refused(f"the submodule{'s' if len(dirty) > 1 else ''} {', '.join(dirty)} "
                      "of the experiment ha" + ("ve" if len(dirty) > 1 else "s") +
                      " changes not committed inside it, which git autoresearch cannot "
                      f"record; nothing was {what}: commit them inside the submodule, or undo "
                      f"them there (git -C {dirty[0]} status shows them)")
    if what == "reverted" and subs:
        recorded = repo.tree_entries("HEAD", subs)
        lacking = [f"{p} ({oid[:7]})" for p, (mode, oid) in recorded.items()
                   if mode == GITLINK and not submodule.has_commit(repo, p, oid)]
        if lacking:
            raise Refused(f"the submodule checkout cannot go back to the commit HEAD records, "
                          f"which it does not have: {', '.join(lacking)}; nothing was "
                          f"reverted: fetch it inside the submodule (git -C "
                          f"{lacking[0].split(' (')[0]} fetch)")
    return subs


def restore_submodules(repo: Repo, paths: Sequence[str]) -> None:
    """Put back the checkout of each submodule among ``paths`` (tracked paths just restored
    to HEAD) at the commit HEAD records: checked out there, or, when the experiment deleted
    the checkout, made again from the submodule's own repository under the git directory,
    never fetched. A submodule that HEAD does not have is left as it is. Raises
    :class:`GitError`."""
    folders = [p for p in paths if (repo.top / p).is_dir() and not (repo.top / p).is_symlink()]
    if not folders:
        return
    for path, (mode, commit) in repo.tree_entries("HEAD", folders).items():
        if mode != GITLINK:
            continue
        head = repo.submodule_head(path)
        if head is None:
            submodule.reinstate(repo, path)
        elif head != commit:
            submodule.checkout(repo, path, commit)
