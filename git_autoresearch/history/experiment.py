"""The git operations of one experiment: what it changed, keep (commit) and revert
(gitautoresearch-guarantees(7)).

Nothing here uses ``git stash``, ``git clean`` or ``git checkout -- .``: the user's stash list,
ignored files and files that were untracked before the experiment began are never touched, nor
are protected paths. A revert first records the whole attempt as a commit under
``refs/autoresearch/<session-id>/attempts/<run>``, built in a temporary index.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..git import ABSENT, GITLINK, DiskFull, GitError, Repo, join_z, said
from ..git.objects import hash_files, renamed, temporary_index, write_blobs
from ..runtime.atomic import WriteFailed, write_atomic
from ..runtime.errors import Refused
from ..runtime.faults import checkpoint
from ..runtime.scope import Boundaries
from .trailers import read_back


@dataclass
class Changes:
    """What differs from HEAD, sorted into what the experiment may and may not change.

    ``tracked``: tracked paths whose index or work tree differ from HEAD (deletions and mode
    changes included); ``created``: untracked files that appeared since the experiment began;
    ``preexisting``: untracked files that were there before (never touched);
    ``staged_preexisting``: those of them staged since, or marked with ``git add -N``;
    ``added``: the tracked paths that HEAD does not have (staged new files, intent-to-add
    entries); ``case_renames``: tracked paths renamed on disk in case only, where the file
    system folds case (index path -> disk path; the index path is in ``tracked``);
    ``nested``: git repositories the experiment created (``path/``). Paths are relative to
    the top, with ``/`` separators.
    """

    tracked: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    preexisting: list[str] = field(default_factory=list)
    staged_preexisting: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    added: set[str] = field(default_factory=set)
    case_renames: dict[str, str] = field(default_factory=dict)
    # Git repositories the experiment created inside the work tree (``path/``): git cannot
    # save them in an attempt ref or commit them as files, so no keep or revert touches them.
    nested: list[str] = field(default_factory=list)
    # The files this command writes its output to, changed or created in the work tree since
    # the experiment began (``run --json > out.json``): never touched; an untracked one is
    # among ``preexisting``, a tracked one in no list but this.
    outputs: list[str] = field(default_factory=list)
    # Where HEAD was as the work tree was listed: its commit and the short name of its branch
    # (None on a detached HEAD), for the record to find HEAD where its run was measured.
    head: str | None = None
    branch: str | None = None
    # Paths git left unmerged in the index (a conflict), with their codes as git status
    # --short gives them (``UU``, ``DU``, ...): among ``tracked`` too.
    unmerged: dict[str, str] = field(default_factory=dict)

    def changed(self) -> list[str]:
        return [*self.tracked, *self.created]


@dataclass
class Snapshot:
    """The files that were not tracked when the experiment began: untracked files, and ignored
    files and folders (``ignored_dirs`` end in ``/``). An experiment never removes or commits
    them, even if it edits ``.gitignore`` or force-adds one."""

    untracked: set[str] = field(default_factory=set)
    ignored_files: set[str] = field(default_factory=set)
    ignored_dirs: set[str] = field(default_factory=set)

    def covers(self, path: str) -> bool:
        if path in self.untracked or path in self.ignored_files:
            return True
        if self.ignored_dirs:
            cut = path.find("/")
            while cut != -1:
                if path[:cut + 1] in self.ignored_dirs:
                    return True
                cut = path.find("/", cut + 1)
        return False


def take_snapshot(repo: Repo, untracked: Iterable[str] | None = None,
                  ignored: Iterable[str] | None = None) -> Snapshot:
    """The snapshot of now; ``untracked`` and ``ignored`` save git calls when the caller already
    knows them (from :meth:`Repo.status`)."""
    snap = Snapshot(set(repo.untracked() if untracked is None else untracked))
    for entry in (repo.ignored() if ignored is None else ignored):
        (snap.ignored_dirs if entry.endswith("/") else snap.ignored_files).add(entry)
    return snap


def survey(repo: Repo, before: Snapshot | None) -> Changes:
    """Classify the work tree against HEAD. ``before`` is the snapshot taken when the experiment
    began; None (unknown) treats every untracked file as preexisting."""
    changes = Changes()
    status = repo.status()
    changes.head, changes.branch, changes.unmerged = status.commit, status.branch, \
        status.unmerged
    for entry in status:
        if entry.ignored:
            changes.ignored.append(entry.path)
            continue
        if entry.path.endswith("/"):  # a nested repository: never ours to add or remove
            if entry.untracked and before is not None and not before.covers(entry.path):
                changes.nested.append(entry.path)
            elif entry.untracked:
                changes.preexisting.append(entry.path)  # (kept in the next snapshot)
            continue
        known = before is None or before.covers(entry.path)
        if entry.untracked:
            (changes.preexisting if known else changes.created).append(entry.path)
            continue
        # "A" in the index column: staged, not in HEAD; in the work tree column: intent to add.
        new = entry.index == "A" or entry.worktree == "A"
        if new and before is not None and before.covers(entry.path):
            changes.staged_preexisting.append(entry.path)
        else:
            changes.tracked.append(entry.path)
            if new:
                changes.added.add(entry.path)
    # A case-only rename is no change to git where the file system folds case: the names on
    # disk are compared with the index's.
    if repo.ignores_case():
        from ..git.casenames import case_renames  # (listings): only where case folds

        changes.case_renames = case_renames(repo)
    for was, now in changes.case_renames.items():
        if was not in changes.tracked:
            changes.tracked.append(was)
        if now in changes.created:
            changes.created.remove(now)
    ours = set(own_outputs(repo.top)) if changes.created or changes.tracked else set()
    if ours:
        changes.outputs = [p for p in [*changes.created, *changes.tracked] if p in ours]
        changes.preexisting += [p for p in changes.created if p in ours]
        changes.created = [p for p in changes.created if p not in ours]
        changes.tracked = [p for p in changes.tracked if p not in ours]
        changes.added -= ours
    return changes


def unmerged_problem(unmerged: Mapping[str, str]) -> str | None:
    """What is wrong when git left paths unmerged in the index (``unmerged``: path -> its
    codes as ``git status --short`` gives them; a ``git switch --merge`` or ``git apply
    --3way`` that conflicted: no merge is in progress, but a measurement would measure the
    conflict and a keep commit it), and the ways out: mark it resolved, or take HEAD's side
    (``git restore`` of HEAD's version; ``git rm`` of a path HEAD does not have, for git
    restore refuses it); None when there are none."""
    if not unmerged:
        return None
    import shlex

    def named(paths: list[str]) -> str:
        return " ".join(shlex.quote(p) for p in paths[:5]) + (" ..." if len(paths) > 5 else "")

    # (ours, HEAD's side, is the first letter: D deleted, or U with A added by them)
    absent = [p for p, code in unmerged.items() if code in ("DU", "DD", "UA")]
    present = [p for p in unmerged if p not in absent]
    ways = ([f"git restore --staged --worktree {named(present)}"] if present else []) + \
        ([f"git rm {named(absent)} (HEAD has no such file)"] if absent else [])
    return (f"{named(list(unmerged))} {'is' if len(unmerged) == 1 else 'are'} unmerged: git "
            "left a conflict there (a git switch --merge that conflicted, say); resolve it and "
            "mark it resolved with git add (or git rm), or take HEAD's side with "
            + " and ".join(ways) + " (paths from the top of the work tree)")


def own_outputs(top: Path) -> list[str]:
    """The files under the work tree ``top`` that this process's standard output and error
    are open on (a shell's redirection, ``> out.json``), as paths from the top with ``/``:
    named by the system (``/proc/self/fd`` on Linux, ``F_GETPATH`` where fcntl has it) and
    checked to be that very file; none where it cannot say."""
    found = []
    for fd in (1, 2):
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                continue
            name = _open_file_name(fd)
            if name is None:
                continue
            on_disk = os.lstat(name)
            relative = Path(name).relative_to(os.path.realpath(top))
        except (OSError, ValueError):
            continue
        if (on_disk.st_dev, on_disk.st_ino) == (st.st_dev, st.st_ino) \
                and relative.as_posix() not in found:
            found.append(relative.as_posix())
    return found


def _open_file_name(fd: int) -> str | None:
    """The path of the file ``fd`` is open on, or None where the system cannot say."""
    if os.path.isdir("/proc/self/fd"):
        return os.readlink(f"/proc/self/fd/{fd}")
    import fcntl

    if hasattr(fcntl, "F_GETPATH"):
        return os.fsdecode(fcntl.fcntl(fd, fcntl.F_GETPATH, bytes(1024)).rstrip(b"\0"))
    return None


def _remove_files(top: Path, paths: Iterable[str]) -> list[str]:
    """Delete created files, then the directories they leave empty (never ``top``)."""
    removed = []
    parents: set[Path] = set()
    for rel in paths:
        full = top / rel
        try:
            if full.is_dir() and not full.is_symlink():
                continue
            full.unlink()
        except FileNotFoundError:
            continue
        removed.append(rel)
        parent = full.parent
        while parent != top and top in parent.parents:
            parents.add(parent)
            parent = parent.parent
    for folder in sorted(parents, key=lambda p: len(p.parts), reverse=True):
        try:
            folder.rmdir()
        except OSError:
            pass
    return removed


def record_attempt(repo: Repo, head: str, paths: list[str], *, ref: str, message: str,
                   reset: Sequence[str] = (), renames: Mapping[str, str] | None = None) -> str:
    """Commit the work tree state of ``paths`` on top of ``head`` without touching the user's
    index, and point ``ref`` at it (it must not exist yet). ``reset`` are staged paths that must
    not be recorded (they are put back to ``head`` in the temporary index); ``renames`` (index
    path -> disk path) are case-only renames of ``paths``, recorded under their new names.
    Returns the commit; :class:`Refused` when git cannot make it (no committer identity),
    before anything changed."""
    with temporary_index(repo) as index:
        if index.copied:
            index.reset_paths(head, reset)
        else:
            index.read_tree(head)
        index.add_paths(paths)
        wanted = set(paths)
        _rename_in_index(repo, {old: new for old, new in (renames or {}).items()
                                if old in wanted}, env=index.env)
        tree = index.write_tree()
    try:
        made = repo.commit_tree(tree, [head], message)
    except DiskFull:
        raise
    except GitError as exc:  # no identity, say: nothing has changed yet
        lines = said(exc.stderr)
        raise Refused("git cannot record the attempt, so nothing was reverted: "
                      + (lines[-1].strip() if lines else f"exit {exc.returncode}")) from None
    repo.update_ref(ref, made, ABSENT, "autoresearch: record attempt")
    return made


def _scratch(repo: Repo) -> Path:
    repo.scratch.mkdir(parents=True, exist_ok=True)
    return repo.scratch


def revert(repo: Repo, bounds: Boundaries, changes: Changes, *, head: str, ref: str,
           message: str, only: list[str] | None = None, stage: str = "revert") -> None:
    """Record the attempt at ``ref``, then put every changed path that is not protected back to
    HEAD: created files removed, tracked paths restored (index and work tree). ``only`` limits
    the restore to those paths (the attempt still records everything)."""
    recordable = [p for p in changes.changed() if not bounds.is_protected(p)]
    staged_elsewhere = [*(p for p in changes.tracked if bounds.is_protected(p)),
                        *changes.staged_preexisting]
    created, tracked = revert_targets(bounds, changes, only)
    refuse_dirty_submodules(repo, tracked, "reverted")
    refuse_missing_objects(repo, tracked, "reverted" if stage == "revert" else "set aside")
    record_attempt(repo, head, recordable, ref=ref, message=message, reset=staged_elsewhere,
                   renames=changes.case_renames)
    checkpoint(f"{stage}:after-attempt")
    finish_revert(repo, created, tracked, changes.staged_preexisting,
                  stage="set-aside" if stage == "set-aside" else "revert")


def refuse_missing_objects(repo: Repo, paths: Sequence[str], what: str) -> None:
    """:class:`Refused`, naming the first path and its object, when HEAD's version of any of
    ``paths`` (the tracked paths a revert or set-aside would put back) is not in this partial
    clone and its promisor remote does not send it now (:func:`~.git.objects.missing_at`):
    git would fetch it half-way through, and fail there while that remote is away. ``what``
    says what was not done (``reverted``, ``set aside``, ``kept``)."""
    from ..git.objects import missing_at

    missing = missing_at(repo, "HEAD", paths)
    if not missing:
        return
    path, oid = sorted(missing.items())[0]
    others = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
    raise Refused(f"HEAD's version of {path}{others}, object {oid}, is not in this partial "
                  f"clone, and its remote {repo.promisor()} did not send it: putting the file "
                  f"back needs it, so nothing was {what}; once the remote can be reached, run "
                  "the command again (it fetches the object first)")


def revert_targets(bounds: Boundaries, changes: Changes, only: list[str] | None = None
                   ) -> tuple[list[str], list[str]]:
    """The created files to remove and the tracked paths to restore (``only`` those, if given);
    never protected paths."""
    recordable = {p for p in changes.changed() if not bounds.is_protected(p)}
    targets = set(only) if only is not None else recordable
    created = [p for p in changes.created if p in targets and p in recordable]
    tracked = [p for p in changes.tracked if p in targets and p in recordable]
    return created, tracked


def finish_revert(repo: Repo, created: list[str], tracked: list[str],
                  staged_preexisting: list[str], *, stage: str = "revert") -> list[str]:
    """Remove ``created`` files, restore ``tracked`` paths to HEAD (a submodule's checkout too:
    :func:`restore_submodules`; a case-only rename undone first, :func:`undo_case_renames`),
    unstage preexisting files. Idempotent, so an interrupted
    revert can be finished by running it again. ``stage`` names the kill point reached once
    the files are removed (``<stage>:after-remove``). Raises :class:`Refused` for a submodule
    with uncommitted changes, before anything changed."""
    refuse_dirty_submodules(repo, tracked, "reverted")
    removed = _remove_files(repo.top, created)
    checkpoint(f"{stage}:after-remove")
    if repo.ignores_case():
        from ..git.casenames import undo_case_renames

        undo_case_renames(repo, tracked)
    repo.restore_from_head(tracked)
    restore_submodules(repo, tracked)
    repo.unstage(staged_preexisting)
    return removed


@dataclass
class KeepResult:
    """What a keep did: ``commit`` (HEAD afterwards), whether a commit was made, and the paths
    out of scope that were reverted (kept at ``attempt_ref``)."""

    commit: str
    committed: bool
    scope_violations: list[str]
    attempt_ref: str | None


def scope_violations(bounds: Boundaries, changes: Changes) -> list[str]:
    """Changed paths that are neither protected nor inside the scope (readonly paths
    included: they are never inside it), and those renamed in case only to a name outside it
    (the index path stands for the rename)."""
    outside = {p for p in changes.changed()
               if not bounds.is_protected(p) and not bounds.in_scope(p)}
    outside.update(old for old, new in changes.case_renames.items()
                   if not bounds.is_protected(old) and not bounds.in_scope(new))
    return sorted(outside)


def moved_out(repo: Repo, bounds: Boundaries, changes: Changes, violations: list[str]
              ) -> list[str]:
    """In-scope files the experiment deleted that reappear at an out-of-scope path: a rename
    out of the scope, whatever its edits: the same content, a rename git's detection finds
    (:func:`renamed`), or the same file name in another folder. Reverting only the new path
    would lose the file, so the deletion belongs with the violation and the file is put back
    whole."""
    arrived = [p for p in violations if (repo.top / p).is_file()
               and not (repo.top / p).is_symlink() and "\n" not in p]
    gone = [p for p in changes.tracked if bounds.in_scope(p) and not (repo.top / p).exists()
            and not (repo.top / p).is_symlink()]
    if not arrived or not gone:
        return []
    new_blobs = hash_files(repo, arrived)
    old_entries = repo.tree_entries("HEAD", gone)
    names = {p.rpartition("/")[2] for p in arrived}
    found = {p for p, (_, blob) in old_entries.items()
             if blob in set(new_blobs.values()) or p.rpartition("/")[2] in names}
    written = write_blobs(repo, [str(repo.top / p) for p in arrived])
    found.update(old for old, _ in renamed(
        repo, [(mode, oid, p) for p, (mode, oid) in old_entries.items() if mode != GITLINK],
        [("100644", oid, p) for p, oid in zip(arrived, written, strict=True)]))
    return sorted(found)


@dataclass
class KeepPlan:
    """What a keep of ``changes`` does: unstage ``unstage``, stage and commit ``to_stage``, then
    record and revert ``violations``. ``revert_changes`` are the changes as that revert sees
    them: a path outside the scope that the experiment added to the index is, once unstaged,
    a file it created."""

    to_stage: list[str]
    unstage: list[str]
    violations: list[str]
    revert_changes: Changes

    def renames(self, bounds: Boundaries) -> dict[str, str]:
        """The case-only renames this keep commits as renames: of a staged path, to a name
        inside the scope."""
        staging = set(self.to_stage)
        return {old: new for old, new in self.revert_changes.case_renames.items()
                if old in staging and bounds.in_scope(new) and not bounds.is_protected(new)}


def plan_keep(repo: Repo, bounds: Boundaries, changes: Changes) -> KeepPlan:
    """The :class:`KeepPlan` for ``changes``: everything in scope is committed, except an
    in-scope file moved out of the scope (:func:`moved_out`), which is put back whole."""
    violations = scope_violations(bounds, changes)
    if violations:
        violations = sorted({*violations, *moved_out(repo, bounds, changes, violations)})
    out = set(violations)
    to_stage = [p for p in changes.changed() if bounds.in_scope(p) and p not in out]
    staging = set(to_stage)
    unstage = [*(p for p in changes.tracked if p not in staging), *changes.staged_preexisting]
    revert_changes = changes
    leaving = out & changes.added
    if leaving:
        revert_changes = Changes([p for p in changes.tracked if p not in leaving],
                                 [*changes.created, *sorted(leaving)], changes.preexisting,
                                 changes.staged_preexisting, changes.ignored,
                                 changes.added - leaving, changes.case_renames)
    return KeepPlan(to_stage, unstage, violations, revert_changes)


def index_backup(repo: Repo) -> Path:
    """Where a keep saves the index it found until its commit is made (a keep killed before
    that is rolled back to it)."""
    return _scratch(repo) / "index-before-keep"


def keep(repo: Repo, bounds: Boundaries, plan: KeepPlan, *, head: str, message: str,
         trailers: Mapping[str, str], violations_ref: str, violations_message: str,
         head_tree: str | None = None) -> KeepResult:
    """Carry out ``plan`` (:func:`plan_keep`): commit its in-scope changes with ``message`` on
    top of ``head`` (whose tree is ``head_tree``, when the caller knows it).

    Only in-scope paths are committed: every other staged path (protected, out of scope, or a
    file that was untracked before the experiment) is unstaged first. Only once the commit has
    succeeded are out-of-scope changes recorded at ``violations_ref`` and reverted. A commit
    that git refuses (a hook, a missing identity), whose trailers do not read back as written
    (a commit-msg hook changed them), or into which a hook staged a path outside the scope or a
    file from before the experiment, raises :class:`Refused` and leaves HEAD, the
    index and the work tree as they were. With nothing to commit, HEAD stays and ``committed``
    is False.
    """
    refuse_dirty_submodules(repo, [*plan.to_stage, *plan.violations], "kept")
    made = _commit_in_scope(repo, bounds, plan, head=head, head_tree=head_tree,
                            message=message, trailers=trailers)
    checkpoint("keep:after-commit")
    attempt = None
    if plan.violations:
        revert(repo, bounds, plan.revert_changes, head=head, ref=violations_ref,
               only=plan.violations, message=violations_message, stage="keep")
        attempt = violations_ref
    return KeepResult(made or head, made is not None, plan.violations, attempt)


def _commit_in_scope(repo: Repo, bounds: Boundaries, plan: KeepPlan, *, head: str,
                     head_tree: str | None, message: str, trailers: Mapping[str, str]
                     ) -> str | None:
    """Stage ``plan`` in the real index and commit it (:func:`commit_index`); the commit, or
    None when there was nothing to commit. The index found is saved first
    (:func:`index_backup`) and put back when the commit is refused, or when git failed
    before HEAD moved."""
    real = repo.git_dir / "index"
    saved = index_backup(repo)
    had_index = real.is_file()
    if had_index:
        # Whole or not at all: a keep killed here must not leave a torn copy to roll back to.
        write_atomic(saved, real.read_bytes(), step="keep:saving-index")
    try:
        repo.unstage(plan.unstage)
        checkpoint("keep:staging")
        repo.add_paths(plan.to_stage)
        _rename_in_index(repo, plan.renames(bounds))
        checkpoint("keep:before-commit")
        if not plan.to_stage:
            return None
        theirs = {*plan.revert_changes.preexisting, *plan.revert_changes.staged_preexisting}
        return commit_index(repo, head=head, head_tree=head_tree, message=message,
                            trailers=trailers, allowed=lambda p: bounds.in_scope(p)
                            and not bounds.is_protected(p) and p not in theirs)
    except Refused:
        if had_index:
            os.replace(saved, real)
        raise
    except GitError:  # git failed (its index.lock was taken, say): before committing, undo
        if had_index and repo.head() == head:
            os.replace(saved, real)
        raise
    finally:
        saved.unlink(missing_ok=True)


REFLOG_SUBJECT_LIMIT = 4000
# Set in the environment of the ``git commit`` a keep runs, so that the commit hooks of ``git
# autoresearch guard`` let that commit pass (a commit by hand is checked).
OUR_COMMIT_VARIABLE = "GIT_AUTORESEARCH_KEEP"


def commit_index(repo: Repo, *, head: str, head_tree: str | None, message: str,
                 trailers: Mapping[str, str], allowed: Callable[[str], bool] | None = None
                 ) -> str | None:
    """Commit the index on top of ``head`` and move HEAD there; returns the commit, or None
    when the index holds ``head``'s tree (nothing to commit).

    With nothing configured that ``git commit`` would act on (:meth:`Repo.commit_customizations`)
    this is ``write-tree``, ``commit-tree`` and a compare-and-swap ``update-ref HEAD`` with git
    commit's reflog message (``$GIT_REFLOG_ACTION`` or ``commit``, then the subject, cut at
    :data:`REFLOG_SUBJECT_LIMIT` characters), and the trailers are read back before HEAD moves;
    otherwise ``git commit`` runs, hooks and all (with :data:`OUR_COMMIT_VARIABLE` set), and
    HEAD is moved back if the trailers do not read back or a hook added a path that
    ``allowed`` refuses (one outside the scope).
    Raises :class:`Refused` when git refuses (a hook, unmerged paths, HEAD moved meanwhile), the
    trailers do not read back as written, or a hook added such a path; HEAD is then where it
    was.
    """
    if repo.commit_customizations():
        return _commit_with_hooks(repo, head=head, message=message, trailers=trailers,
                                  allowed=allowed)
    try:
        tree = repo.write_tree()
    except GitError as exc:
        raise _commit_failed(exc.returncode, exc.stderr) from None
    if tree == (head_tree if head_tree is not None else repo.tree_of(head)):
        return None
    try:
        made = repo.commit_tree(tree, [head], message)
    except GitError as exc:
        raise _commit_failed(exc.returncode, exc.stderr) from None
    commit, problem = read_back(repo, made, trailers)
    if problem:
        raise Refused(problem + "; nothing was recorded")
    action = os.environ.get("GIT_REFLOG_ACTION") or "commit"
    subject = message.split("\n", 1)[0][:REFLOG_SUBJECT_LIMIT]
    try:
        repo.update_ref("HEAD", commit, head, f"{action}: {subject}")
    except GitError as exc:
        raise _commit_failed(exc.returncode, exc.stderr) from None
    return commit


def _commit_with_hooks(repo: Repo, *, head: str, message: str, trailers: Mapping[str, str],
                       allowed: Callable[[str], bool] | None) -> str | None:
    """:func:`commit_index` through ``git commit``, hooks and all; HEAD is moved back to
    ``head`` when the trailers do not read back or a hook added a path ``allowed`` refuses."""
    if not repo.has_staged_changes():
        return None
    try:
        measured = repo.write_tree()  # what was measured, as the commit should hold it
    except GitError as exc:
        raise _commit_failed(exc.returncode, exc.stderr) from None
    res = repo.commit(message, extra_env={OUR_COMMIT_VARIABLE: "1"})
    if res.returncode != 0:
        raise _commit_failed(res.returncode, res.stderr)
    commit, problem = read_back(repo, "HEAD", trailers)
    if problem is None and allowed is not None:
        extra = [p for p in repo.changed_paths(head, commit) if not allowed(p)]
        if extra:
            problem = (f"a commit hook added {', '.join(extra[:5])}"
                       f"{' ...' if len(extra) > 5 else ''} to the commit, which a keep "
                       "never commits (outside the scope, or there before the experiment)")
    if problem is None:
        rewritten = repo.changed_paths(measured, commit)
        if rewritten:
            # A formatter that stages its rewrite (lint-staged, say): the commit would carry
            # the measured metric for content that was never measured.
            problem = (f"a commit hook changed {', '.join(rewritten[:5])}"
                       f"{' ...' if len(rewritten) > 5 else ''} in the commit, so it would "
                       "hold content that was not measured; its rewrite is left in the work "
                       "tree: measure it (git autoresearch run)")
    if problem:
        repo.update_ref("HEAD", head, commit, "autoresearch: undo a keep refused after its commit")
        raise Refused(problem + "; HEAD was moved back, nothing was recorded")
    return commit


def _commit_failed(code: int, stderr: bytes) -> Refused:
    """The refusal for a failed commit: git's last line, and all it said as the detail."""
    lines = said(stderr)
    return Refused("git commit failed, nothing was recorded and nothing reverted: "
                   + (lines[-1].strip() if lines else f"exit {code}"),
                   detail="\n".join(lines[-40:-1]) if len(lines) > 1 else None)


def save_snapshot(path: Path, snap: Snapshot) -> None:
    """Write a :class:`Snapshot` (NUL-separated ``u:``/``i:`` entries), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [f"u:{p}" for p in sorted(snap.untracked)]
    entries += [f"i:{p}" for p in sorted(snap.ignored_files | snap.ignored_dirs)]
    write_atomic(path, join_z(entries))


def snapshot_now(repo: Repo, path: Path, untracked: Iterable[str] | None = None,
                 ignored: Iterable[str] | None = None) -> str | None:
    """Save at ``path`` the snapshot of now (:func:`take_snapshot`: what is untracked now is
    the user's, not the next experiment's), after a run and where a clone starts from; why it
    could not (a full disk: the snapshot before stands), or None."""
    try:
        save_snapshot(path, take_snapshot(repo, untracked, ignored))
    except WriteFailed as exc:
        return (f"{exc.message}: the files untracked before the next experiment are those "
                "before this one")
    return None


def load_snapshot(path: Path) -> Snapshot | None:
    """The snapshot saved by :func:`save_snapshot`, or None when there is none or it cannot
    be read (a folder in its place, say): every untracked file then counts as the user's."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    snap = Snapshot()
    for raw in data.split(b"\0"):
        entry = raw.decode("utf-8", "surrogateescape")
        if entry.startswith("u:"):
            snap.untracked.add(entry[2:])
        elif entry.endswith("/"):
            snap.ignored_dirs.add(entry[2:])
        elif entry:
            snap.ignored_files.add(entry[2:])
    return snap


def refuse_dirty_submodules(repo: Repo, paths: Sequence[str], what: str) -> list[str]:
    """The submodules among ``paths`` (:meth:`Repo.submodules`); :class:`Refused`, naming
    them, when any has changes its checked-out commit does not hold (a revert could only
    restore its commit by losing them, and a keep could only record its commit without them)
    or, for a revert, lacks the commit HEAD records for it. ``what`` says what was not done
    (``reverted``, ``kept``)."""
    subs = repo.submodules(paths)
    if not subs:
        return subs
    from ..git import submodule  # (their checkouts): only where an experiment changed one

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
    from ..git import submodule  # (their checkouts): only where a folder was restored

    for path, (mode, commit) in repo.tree_entries("HEAD", folders).items():
        if mode != GITLINK:
            continue
        head = repo.submodule_head(path)
        if head is None:
            submodule.reinstate(repo, path)
        elif head != commit:
            submodule.checkout(repo, path, commit)


def _rename_in_index(repo: Repo, renames: Mapping[str, str],
                     env: Mapping[str, str] | None = None) -> None:
    """:func:`git.casenames.rename_in_index` for case-only ``renames`` (old -> new), when
    there are any (only on a file system that folds case)."""
    if renames:
        from ..git.casenames import rename_in_index

        rename_in_index(repo, renames, env)
