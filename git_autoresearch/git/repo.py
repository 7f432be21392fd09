"""A repository: a work tree and its git directories, and the typed operations on them
(references, the work tree and index, objects, history, configuration); and a new project
repository made as a person would make one (for the bundled demo)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..runtime.errors import Refused
from .history import History
from .process import (
    DISK_FULL_BYTES,
    DiskFull,
    GitError,
    NotStaged,
    Result,
    StatusEntry,
    clock,
    covered,
    current_folder,
    fits_argv,
    free_bytes,
    inside_repository,
    join_z,
    run_git,
    said,
    split_z,
    temporary_objects,
    user_locale,
)
from .settings import Settings

# Git commands that write no ref (nor the configuration); any other run through
# :meth:`Repo.run` forgets what was read of the refs. ``config`` only with ``--get-regexp``.
READ_ONLY_COMMANDS = frozenset({
    "status", "rev-parse", "ls-tree", "ls-files", "log", "cat-file", "for-each-ref", "diff",
    "show", "merge-base", "var", "check-ref-format", "hash-object"})

def reads_only(args: Sequence[str]) -> bool:
    """Whether ``git <args>`` writes no ref and no configuration."""
    if args[0] == "config":
        return "--get-regexp" in args
    return args[0] in READ_ONLY_COMMANDS


# Commands that write the real index and do the same when run again; one that fails is run
# again (:meth:`Repo._run_retried`) in case another git process held the index's lock.
INDEX_WRITERS = frozenset({"update-index", "restore", "reset", "read-tree"})
INDEX_TRIES = 3

class Repo(History, Settings):
    """A work tree and its git directories, resolved once to absolute paths.

    ``top`` is the work tree root, ``git_dir`` the (per-worktree) git directory, ``common_dir`` the
    directory shared by linked worktrees, ``scratch`` our per-worktree scratch folder
    (``git rev-parse --git-path autoresearch``).
    """

    def __init__(self, top: Path, git_dir: Path, common_dir: Path, scratch: Path) -> None:
        self.top = top
        self.git_dir = git_dir
        self.common_dir = common_dir
        self.scratch = scratch
        # HEAD as it was when the repository was discovered (None: unborn or detached).
        self.head_at_discovery: str | None = None
        self.head_tree_at_discovery: str | None = None
        self.branch_at_discovery: str | None = None
        # The refs below a namespace, read in one for-each-ref (:meth:`for_each_ref`'s
        # ``within``) and kept until a git call that may write a ref; the configuration
        # entries of :data:`COMMAND_CONFIG`, read once and kept until a git call that may
        # change the configuration (:meth:`config_entries`).
        self._refs: tuple[str, list[str]] | None = None
        self._config: tuple[object, list[tuple[str, str | None]]] | None = None

    @classmethod
    def discover(cls, cwd: str | os.PathLike[str] | None = None) -> Repo:
        """Find the repository that contains ``cwd``.

        Raises :class:`Refused` outside a repository, in a bare repository, or inside ``.git``.
        """
        where = Path(cwd) if cwd is not None else current_folder()
        query = ["rev-parse", "--is-bare-repository", "--is-inside-work-tree",
                 "--absolute-git-dir", "--git-common-dir", "--git-path", "autoresearch",
                 "--show-toplevel"]
        # HEAD's commit, tree and branch come in the same call (one process fewer per command);
        # on an unborn branch that part fails, and the question is asked again without it.
        res = run_git([*query, "HEAD", "HEAD^{tree}", "--abbrev-ref", "HEAD"], cwd=where,
                      allow_non_zero=True)
        if res.returncode != 0:
            res = run_git(query, cwd=where, allow_non_zero=True)
        lines = res.stdout.decode("utf-8", "surrogateescape").splitlines()
        if res.returncode != 0 or len(lines) < 5:
            # --show-toplevel fails in a bare repository and inside .git: ask without it.
            kind = run_git(query[:3], cwd=where, allow_non_zero=True)
            if kind.returncode == 0 and kind.text.splitlines()[:2] != ["false", "true"]:
                raise Refused(f"not inside a git work tree: {where}")
            words = said(res.stderr)
            if words and inside_repository(where):
                # e.g. git's safe.directory check: say what git said, not "no repository"
                raise Refused(f"git cannot use {where}: "
                              f"{words[-1].strip().removeprefix('fatal: ')}")
            raise Refused(f"not a git repository: {where}")
        # mutation: equivalent only `or` -> `and`, `6` -> `5`: a top is printed in a work tree only
        if lines[0] == "true" or lines[1] != "true" or len(lines) < 6:
            raise Refused(f"not inside a git work tree: {where}")  # mutation: equivalent (above)
        git_dir = Path(lines[2])
        common = Path(lines[3])
        scratch = Path(lines[4])
        if not common.is_absolute():
            common = (where / common).resolve()
        if not scratch.is_absolute():
            scratch = (where / scratch).resolve()
        repo = cls(Path(lines[5]), git_dir, common, scratch)
        _check_callers_repository(where, repo)
        if len(lines) == 9:
            repo.head_at_discovery = lines[6]
            repo.head_tree_at_discovery = lines[7]
            repo.branch_at_discovery = None if lines[8] == "HEAD" else lines[8]
        return repo

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
        allow_non_zero: bool = False,
    ) -> Result:
        """Run ``git -C <top> <args>``; see :func:`run_git`. When git fails and the disk of
        the git directory has (almost) no space left (:data:`DISK_FULL_BYTES`), the
        temporary object files git wrote during this call are removed, so that freeing the
        user's own files is enough, and :class:`DiskFull` is raised instead."""
        if args and not reads_only(args):
            self._refs = None
            if args[0] in ("config", "commit", "init", "submodule"):
                self._config = None
        started = clock()
        try:
            return self._run_retried(args, input, env, allow_non_zero)
        except GitError as exc:
            free = free_bytes(self.common_dir)
            if free is None or free >= DISK_FULL_BYTES:
                raise
            for path, mtime, _ in temporary_objects(self.common_dir):
                if mtime >= started:  # another git's (older) files are never touched
                    path.unlink(missing_ok=True)
            raise DiskFull(exc, self.common_dir, free_bytes(self.common_dir) or 0) from None

    def _run_retried(self, args: Sequence[str], input: bytes | None,
                     env: Mapping[str, str] | None, allow_non_zero: bool) -> Result:
        """:func:`run_git`; a command of :data:`INDEX_WRITERS` on the real index that fails
        is run again, up to :data:`INDEX_TRIES` times in all, once no ``index.lock`` is there
        (waiting up to a second): another git process (a ``git status`` of an editor, of the
        user, of a concurrent command of ours) may have held the index's lock for a moment.
        Each of those commands does the same whether it ran before or not. Not on a full
        disk, which no wait mends."""
        tries = INDEX_TRIES if args[0] in INDEX_WRITERS and not (
            env and "GIT_INDEX_FILE" in env) else 1
        for _ in range(tries - 1):
            res = run_git(args, cwd=self.top, input=input, env=env, allow_non_zero=True)
            free = free_bytes(self.common_dir)
            if res.returncode == 0 or (free is not None and free < DISK_FULL_BYTES):
                if res.returncode != 0 and not allow_non_zero:
                    raise GitError(["git", *args], res.returncode, res.stdout, res.stderr)
                return res
            deadline = clock() + 1.0
            while (self.git_dir / "index.lock").exists() and clock() < deadline:
                time.sleep(0.01)
        return run_git(args, cwd=self.top, input=input, env=env, allow_non_zero=allow_non_zero)

    # --- references -------------------------------------------------------------------------

    def head(self) -> str | None:
        """The full object id of HEAD, or None on an unborn branch."""
        res = self.run("rev-parse", "-q", "--verify", "HEAD^{commit}", allow_non_zero=True)
        return res.text or None if res.returncode == 0 else None

    def current_branch(self) -> str | None:
        """The short name of the checked-out branch, or None on a detached HEAD."""
        res = self.run("symbolic-ref", "-q", "--short", "HEAD", allow_non_zero=True)
        return res.text if res.returncode == 0 else None

    def resolve(self, rev: str) -> str | None:
        """The commit id ``rev`` names, or None when it names no commit."""
        res = self.run("rev-parse", "-q", "--verify", "--end-of-options", f"{rev}^{{commit}}",
                       allow_non_zero=True)
        return res.text if res.returncode == 0 else None

    def short(self, oid: str) -> str:
        """The 7-character abbreviation pi-autoresearch records (``commit`` field)."""
        return oid[:7]

    def update_ref(self, ref: str, new: str, old: str, message: str) -> None:
        """Compare-and-swap ``ref`` from ``old`` (:data:`ABSENT`: must not exist) to ``new``."""
        self.run("update-ref", "-m", message, ref, new, old)

    def delete_ref(self, ref: str, old: str) -> bool:
        """Delete ``ref`` if it still points at ``old`` (compare-and-swap); whether it did."""
        return self.run("update-ref", "-d", ref, old, allow_non_zero=True).returncode == 0

    def for_each_ref(self, prefix: str, *, within: str | None = None) -> list[str]:
        """The full names of the refs below ``prefix`` (``git for-each-ref``), sorted by name.

        ``within`` (a namespace ending in ``/`` that ``prefix``, also ending in ``/``, lies
        below): the refs of the whole namespace are read in one call and kept, so that the
        next question about that namespace asks git nothing, until this repository runs a git
        command that may write a ref (anything but :data:`READ_ONLY_COMMANDS`)."""
        if within is None or not within.endswith("/") or not prefix.endswith("/") \
                or not prefix.startswith(within):
            return self.run("for-each-ref", "--format=%(refname)", prefix).text.splitlines()
        if self._refs is None or self._refs[0] != within:
            names = self.run("for-each-ref", "--format=%(refname)", within).text.splitlines()
            self._refs = (within, names)
        return [name for name in self._refs[1] if name.startswith(prefix)]

    def forget_refs(self) -> None:
        """Drop the refs :meth:`for_each_ref` kept: another process may have written some
        (called once a lock is taken)."""
        self._refs = None

    def commit_refs(self, prefix: str) -> set[str]:
        """The full names of the refs below ``prefix`` that name a commit (directly; one that
        names a tag is left out), in one ``git for-each-ref``."""
        res = self.run("for-each-ref", "--format=%(objecttype) %(refname)", prefix)
        return {name for kind, _, name in (line.partition(" ") for line in res.text.splitlines())
                if kind == "commit"}

    def ref_objects(self, prefix: str) -> list[tuple[str, str]]:
        """The (full name, object id) of each ref below ``prefix``, sorted by name."""
        res = self.run("for-each-ref", "--format=%(refname)%00%(objectname)", prefix)
        return [(name, oid) for name, _, oid in
                (line.partition("\0") for line in res.text.splitlines())]

    def switch(self, branch: str, *, create: bool = False) -> Result:
        """``git switch -q [-c] <branch>``: check out ``branch`` (``create``: a new one at
        HEAD; without, git also creates it from a single remote-tracking branch of that name).
        Never raises for git's refusal: the caller reads ``returncode`` and ``stderr``."""
        return self.run("switch", "-q", *(["-c"] if create else []), branch,
                        allow_non_zero=True)

    def merged(self, rev: str) -> bool:
        """Whether commit ``rev`` is HEAD or an ancestor of it (``merge-base --is-ancestor``)."""
        return self.run("merge-base", "--is-ancestor", rev, "HEAD",
                        allow_non_zero=True).returncode == 0

    def worktree_of(self, branch: str) -> Path | None:
        """The path of another worktree of this repository that has ``branch`` (a short name,
        ``autoresearch/<id>``) checked out, or None (``git worktree list --porcelain -z``:
        records of ``key value`` fields, ended by an empty field)."""
        res = self.run("worktree", "list", "--porcelain", "-z", allow_non_zero=True)
        if res.returncode != 0:
            return None
        path: str | None = None
        for field in split_z(res.stdout):
            key, _, value = field.partition(" ")
            if key == "worktree":
                path = value
            elif key == "branch" and value == f"refs/heads/{branch}" and path is not None \
                    and Path(path).resolve() != self.top.resolve():
                return Path(path)
        return None

    def worktree_paths(self) -> list[Path]:
        """The work trees of this repository that exist on disk, this one first (``git
        worktree list --porcelain -z``: records of ``key value`` fields)."""
        res = self.run("worktree", "list", "--porcelain", "-z", allow_non_zero=True)
        found = [self.top]
        for field in split_z(res.stdout) if res.returncode == 0 else []:
            key, _, value = field.partition(" ")
            if key == "worktree" and Path(value).is_dir() \
                    and Path(value).resolve() != self.top.resolve():
                found.append(Path(value))
        return found

    def remotes(self) -> list[str]:
        """The names of the configured remotes (``git remote``: one name a line), sorted."""
        return sorted(self.run("remote").text.split())

    def ref_format_ok(self, ref: str) -> bool:
        """Whether ``git check-ref-format`` accepts ``ref``."""
        return self.run("check-ref-format", ref, allow_non_zero=True).returncode == 0

    def operation_in_progress(self) -> str | None:
        """The name of a merge, rebase, cherry-pick, revert or bisect in progress, or None."""
        markers = (
            ("MERGE_HEAD", "merge"),
            ("rebase-merge", "rebase"),
            ("rebase-apply", "rebase or am"),
            ("CHERRY_PICK_HEAD", "cherry-pick"),
            ("REVERT_HEAD", "revert"),
            ("BISECT_LOG", "bisect"),
        )
        for name, what in markers:
            if (self.git_dir / name).exists():
                return what
        return None

    # --- work tree ----------------------------------------------------------------------------

    def status(self) -> list[StatusEntry]:
        """Every changed tracked path, every untracked non-ignored file, and every ignored file
        or folder (one entry ending in ``/`` for an ignored folder, code ``!``).

        Renames are reported as a deletion and an addition (``--no-renames``).
        """
        res = self.run("status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all",
                       "--ignored=matching", "--ignore-submodules=none")
        entries = []
        for item in res.stdout.split(b"\0"):
            if len(item) < 4:
                continue
            code = item[:2].decode("ascii")
            entries.append(StatusEntry(code[0], code[1],
                                       item[3:].decode("utf-8", "surrogateescape")))
        return entries

    def untracked(self) -> list[str]:
        """Untracked, non-ignored files (``git ls-files -o --exclude-standard -z``)."""
        return split_z(self.run("ls-files", "-z", "-o", "--exclude-standard").stdout)

    def ignored(self) -> list[str]:
        """Ignored untracked files, and ignored folders as one entry ending in ``/``."""
        return split_z(self.run("ls-files", "-z", "-o", "-i", "--exclude-standard",
                                "--directory").stdout)

    def add_paths(self, paths: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        """Stage exactly ``paths`` as they are in the work tree: additions, edits, deletions, and
        a file or symlink that replaced a directory or the reverse. Paths are exact names, never
        patterns, and ignore rules do not apply (``git update-index --add --remove --replace``;
        a path that is gone or lies beyond a symlink or a file, which git will not look at, is
        dropped from the index with ``--force-remove``). Raises :class:`GitError`."""
        if not paths:
            return
        gone = [p for p in paths if not self.reachable(p)]
        if gone:
            self.run("update-index", "--force-remove", "-z", "--stdin", input=join_z(gone),
                     env=env)
        dropped = set(gone)
        present = [p for p in paths if p not in dropped]
        if present:
            try:
                self.run("update-index", "--add", "--remove", "--replace", "-z", "--stdin",
                         input=join_z(present), env=env)
            except DiskFull:
                raise
            except GitError as exc:
                raise NotStaged(exc) from None

    def reachable(self, path: str) -> bool:
        """Whether ``path`` exists in the work tree with a real folder at each level above it
        (not a symlink, not a file)."""
        folder = self.top
        parts = path.split("/")
        for part in parts[:-1]:
            folder = folder / part
            if folder.is_symlink() or not folder.is_dir():
                return False
        return os.path.lexists(folder / parts[-1])

    def restore_from_head(self, paths: Sequence[str]) -> None:
        """Make index and work tree of ``paths`` equal HEAD; paths absent from HEAD are removed,
        from the work tree too when the index no longer knows them (so that running it again
        after an interruption finishes the job). Raises :class:`GitError`."""
        if not paths:
            return
        argv = ["restore", "--source=HEAD", "--staged", "--worktree", "--no-overlay",
                "--pathspec-from-file=-", "--pathspec-file-nul"]
        res = self.run(*argv, input=join_z(paths), allow_non_zero=True)
        if res.returncode == 0:
            return
        # git restore refuses a path that neither HEAD nor the index knows: such a path was an
        # added file whose index entry is already gone; what is left of it is removed. Which
        # paths those are is asked of the index and HEAD, never read from git's message.
        known = set(self.indexed(paths)) | set(self.blobs("HEAD", paths))
        unknown = [p for p in paths if p not in known]
        if not unknown:
            # Run again as a call that may fail: a full disk is then told as one (DiskFull).
            self.run(*argv, input=join_z(paths))
            return
        for path in unknown:
            try:
                (self.top / path).unlink()
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                pass
        if known:
            self.run(*argv, input=join_z(sorted(known)))

    def indexed(self, paths: Sequence[str]) -> list[str]:
        """The index entries of ``paths`` (a folder names the entries below it)."""
        if not paths:
            return []
        if fits_argv(paths):
            return split_z(self.run("ls-files", "-z", "--", *paths).stdout)
        wanted = set(paths)
        return [p for p in split_z(self.run("ls-files", "-z").stdout) if covered(p, wanted)]

    def unstage(self, paths: Sequence[str]) -> None:
        """Make the index entries of ``paths`` equal HEAD, leaving the work tree alone; a path
        that neither the index nor HEAD knows is no error."""
        if paths:
            self.run("reset", "-q", "HEAD", "--pathspec-from-file=-", "--pathspec-file-nul",
                     input=join_z(paths))

    def blobs(self, commit: str, paths: Sequence[str]) -> dict[str, str]:
        """The blob ids of ``paths`` in ``commit`` (paths it does not hold are left out; a folder
        names the files below it; a submodule gives its recorded commit), whatever the number
        of paths."""
        return {path: oid for path, (_, oid) in self.tree_entries(commit, paths).items()}

    def tree_entries(self, commit: str, paths: Sequence[str]) -> dict[str, tuple[str, str]]:
        """The (mode, object id) of ``paths`` in ``commit``, as ``ls-tree -r`` lists them
        (mode :data:`GITLINK` for a submodule); paths it does not hold are left out."""
        if not paths:
            return {}
        few = fits_argv(paths)
        listing = self.run("ls-tree", "-r", "-z", commit,
                           *(["--", *paths] if few else [])).stdout
        wanted = set(paths)
        found = {}
        for item in listing.split(b"\0"):
            if item:
                meta, _, raw = item.partition(b"\t")
                name = raw.decode("utf-8", "surrogateescape")
                if few or covered(name, wanted):
                    mode, _, oid = meta.decode().split()
                    found[name] = (mode, oid)
        return found

    def ls_files(self) -> list[str]:
        """Every path of the index (``git ls-files -z``)."""
        return split_z(self.run("ls-files", "-z").stdout)

    def write_tree(self) -> str:
        """The tree of the index, written into the object store (``git write-tree``).
        Raises :class:`GitError` (unmerged paths, say)."""
        return self.run("write-tree").text

    def tree_of(self, rev: str) -> str:
        """The id of the tree of commit ``rev``. Raises :class:`GitError`."""
        return self.run("rev-parse", "--verify", f"{rev}^{{tree}}").text

    def commit_tree(self, tree: str, parents: Sequence[str], message: str) -> str:
        """A new commit of ``tree`` with ``parents`` and ``message`` (UTF-8, as it is), made
        by ``git commit-tree`` with the configured identity; HEAD does not move. Raises
        :class:`GitError` (no committer identity, say)."""
        argv = [arg for parent in parents for arg in ("-p", parent)]
        return self.run("commit-tree", tree, *argv, "-F", "-",
                        input=message.encode("utf-8")).text

    def commit(self, message: str, extra_env: Mapping[str, str] | None = None) -> Result:
        """``git commit -q --cleanup=verbatim -F -``: the index committed with ``message`` as
        it is, hooks and signing included, run in the user's locale (the hooks are the user's
        code) with ``extra_env`` added. Never raises for git's refusal: the caller reads
        ``returncode``/``stderr``."""
        return self.run("commit", "-q", "--cleanup=verbatim", "-F", "-", allow_non_zero=True,
                        input=message.encode("utf-8"), env={**user_locale(), **(extra_env or {})})

    # --- submodules ---------------------------------------------------------------------------

    def checked_out(self, path: str) -> bool:
        """Whether submodule ``path`` has a checkout of its own (a ``.git`` file or folder);
        without one, git run inside it would act on this repository."""
        return os.path.lexists(self.top / path / ".git")

    def submodule_head(self, path: str) -> str | None:
        """The commit checked out in submodule ``path``, or None when it has no checkout."""
        if not self.checked_out(path):
            return None
        res = run_git(["rev-parse", "-q", "--verify", "HEAD^{commit}"], cwd=self.top / path,
                      allow_non_zero=True)
        return res.text or None if res.returncode == 0 else None

    def has_staged_changes(self) -> bool:
        """Whether the index differs from HEAD."""
        return self.run("diff", "--cached", "--quiet", "--no-ext-diff",
                        allow_non_zero=True).returncode == 1

    def identity_problem(self) -> str | None:
        """Why git could not commit here (no user.name/user.email), or None."""
        res = self.run("var", "GIT_COMMITTER_IDENT", allow_non_zero=True)
        if res.returncode == 0:
            return None
        return "git has no committer identity: set user.name and user.email (git config)"


def _check_callers_repository(where: Path, repo: Repo) -> None:
    """Refuse (exit 3) when the caller's ``GIT_DIR`` or ``GIT_WORK_TREE`` names another
    repository than the one of the folder ``where`` (git runs here without them, so the tool
    would record and revert in the folder's repository, not the one the caller named). Set to
    this repository's own, as git sets them for its hooks, or to a path that does not exist,
    they change nothing."""
    for variable, ours in (("GIT_DIR", repo.git_dir), ("GIT_WORK_TREE", repo.top)):
        value = os.environ.get(variable)
        if not value:
            continue
        named = Path(value) if os.path.isabs(value) else where / value
        try:
            # (one that names nothing is no repository: git stripped of it runs here)
            same = not named.exists() or named.resolve() == Path(ours).resolve()
        except (OSError, RuntimeError):
            same = False
        if not same:
            raise Refused(f"{variable}={value} names another repository than the current "
                          f"folder's ({ours}): git-autoresearch works in the repository of "
                          f"the folder it runs in; run it there, or unset {variable}")


def init_project(folder: Path, message: str, name: str, email: str) -> Repo:
    """``git init`` in ``folder``, then one commit of everything in it with ``message``; the
    identity ``name`` and ``email`` is set in the repository only when git has none. Raises
    :class:`~git_autoresearch.git.process.GitError`."""
    run_git(["init", "-q"], cwd=folder)
    if run_git(["var", "GIT_COMMITTER_IDENT"], cwd=folder, allow_non_zero=True).returncode:
        run_git(["config", "user.name", name], cwd=folder)
        run_git(["config", "user.email", email], cwd=folder)
    run_git(["add", "-A"], cwd=folder)
    run_git(["commit", "-q", "-m", message], cwd=folder)
    return Repo.discover(folder)


def oneline_log(repo: Repo, grep: str) -> str:
    """``git log --oneline --grep <grep>``: the matching commits, one line each, newest first."""
    return repo.run("log", "--oneline", "--grep", grep).text
