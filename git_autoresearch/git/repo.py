"""A repository: a work tree and its git directories, and the typed operations on them
(references, the work tree and index, objects, history, configuration) in one class,
:class:`Repo`; git's own lock files (those a recording would meet, and every one there is);
and a new project repository made as a person would make one (for the bundled demo)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..runtime.errors import Refused
from .process import (
    COMMIT_HOOKS,
    DISK_FULL_BYTES,
    GITLINK,
    DiskFull,
    GitError,
    NotStaged,
    Result,
    Status,
    StatusEntry,
    clock,
    config_bool,
    covered,
    current_folder,
    failure_in,
    fits_argv,
    free_bytes,
    inside_repository,
    join_z,
    literal,
    run_git,
    said,
    split_z,
    user_locale,
)

# Git commands that write no ref (nor the configuration); any other run through
# :meth:`Repo.run` forgets what was read of the refs. ``config`` only with ``--get-regexp``.
READ_ONLY_COMMANDS = frozenset({
    "status", "rev-parse", "ls-tree", "ls-files", "log", "cat-file", "for-each-ref", "diff",
    "show", "merge-base", "var", "check-ref-format", "hash-object"})

# Git commands that write objects, the index or the work tree but no ref: what was read of the
# refs stays good across them (a discard's attempt commit and revert).
REF_KEEPING_COMMANDS = frozenset({
    "update-index", "write-tree", "commit-tree", "mktree", "read-tree", "restore", "apply"})


def reads_only(args: Sequence[str]) -> bool:
    """Whether ``git <args>`` writes no ref and no configuration."""
    if args[0] == "config":
        return "--get-regexp" in args
    return args[0] in READ_ONLY_COMMANDS


# Commands that write the real index and do the same when run again; one that fails is run
# again (:meth:`Repo._run_retried`) in case another git process held the index's lock.
INDEX_WRITERS = frozenset({"update-index", "restore", "reset", "read-tree"})
INDEX_TRIES = 3

# An object id, whole or abbreviated as git prints it (4 to 64 hexadecimal digits).
HEX_NAME = re.compile(r"[0-9a-fA-F]{4,64}")

# The configuration every recording command asks about (case folding, commit hooks and
# signing, automatic maintenance): read in one ``git config --get-regexp``. The patterns of
# :data:`COMMAND_PATTERNS` (each matching keys of this one only) are answered from it.
COMMAND_CONFIG = (r"^(core\.ignorecase|core\.hookspath|hook\..*\.event|commit\.gpgsign|"
                  r"maintenance\.auto|extensions\.partialclone|remote\..*\.promisor)$")
# A partial clone's promisor remote (:meth:`Settings.promisor`).
PROMISOR_PATTERN = r"^(extensions\.partialclone|remote\..*\.promisor)$"
COMMAND_PATTERNS = frozenset({
    r"^core\.ignorecase$", r"^(core\.hookspath|hook\..*\.event|commit\.gpgsign)$",
    r"^maintenance\.auto$", r"^core\.hookspath$", PROMISOR_PATTERN})


def likely_remote(remotes: Sequence[str]) -> str | None:
    """The remote of ``remotes`` a hint names: ``origin`` when there is one, else the first;
    None when there is none."""
    return "origin" if "origin" in remotes else (remotes[0] if remotes else None)


class Repo:
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
        # Whether another process may have written refs since they were read (a lock was
        # taken since): then only questions about this process's own refs use them.
        self._refs_unsure = False
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
            words = [word.strip() for word in said(res.stderr)]
            if words and inside_repository(where):
                # e.g. git's safe.directory check: say what git said, not "no repository": its
                # reason (the fatal line; what came before it is a warning or git's trace)
                # and the way out it names after it, on one line.
                fatal = next((n for n, w in enumerate(words) if w.startswith("fatal:")), None)
                reason = words[-1] if fatal is None else words[fatal].removeprefix("fatal: ")
                out = [] if fatal is None else words[fatal + 1:]
                raise Refused(f"git cannot use {where}: {reason}"
                              + (f"; {' '.join(out)}" if out else ""))
            raise Refused(f"not a git repository: {where}")
        if lines[0] == "true" or lines[1] != "true" or len(lines) < 6:
            raise Refused(f"not inside a git work tree: {where}")
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

    @property
    def own_folders(self) -> list[Path]:
        """git's folders a writing command writes into: this work tree's git folder (the
        index, HEAD), the common one (packed refs) and its ``objects`` and ``refs``, each
        once."""
        return list(dict.fromkeys([self.git_dir, self.common_dir, self.common_dir / "objects",
                                   self.common_dir / "refs"]))

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
            if args[0] not in REF_KEEPING_COMMANDS:
                self._refs = None
            if args[0] in ("config", "commit", "init", "submodule"):
                self._config = None
        started = clock()
        try:
            return self._run_retried(args, input, env, allow_non_zero)
        except GitError as exc:
            raise failure_in(exc, self.common_dir, started) from None

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
        """Compare-and-swap ``ref`` from ``old`` (:data:`ABSENT`: must not exist) to ``new``.
        The refs :meth:`for_each_ref` kept stay kept, with ``ref`` among them."""
        kept = self._refs, self._refs_unsure
        self.run("update-ref", "-m", message, ref, new, old)
        self._keep_refs(kept, ref, present=True)

    def delete_ref(self, ref: str, old: str) -> bool:
        """Delete ``ref`` if it still points at ``old`` (compare-and-swap); whether it did.
        The refs :meth:`for_each_ref` kept stay kept, without ``ref`` when it was deleted."""
        kept = self._refs, self._refs_unsure
        deleted = self.run("update-ref", "-d", ref, old, allow_non_zero=True).returncode == 0
        self._keep_refs(kept, ref, present=not deleted)
        return deleted

    def _keep_refs(self, kept: tuple[tuple[str, list[str]] | None, bool], ref: str, *,
                   present: bool) -> None:
        """Put back the refs kept before this process wrote ``ref`` (``kept``: as
        :meth:`for_each_ref` held them), ``ref`` among them when ``present``."""
        refs, unsure = kept
        if refs is None:
            return
        within, names = refs
        if ref.startswith(within):
            names = sorted({*names, ref}) if present else [n for n in names if n != ref]
        self._refs, self._refs_unsure = (within, names), unsure

    def for_each_ref(self, prefix: str, *, within: str | None = None, own: bool = False
                     ) -> list[str]:
        """The full names of the refs below ``prefix`` (``git for-each-ref``), sorted by name.

        ``within`` (a namespace ending in ``/`` that ``prefix``, also ending in ``/``, lies
        below): the refs of the whole namespace are read in one call and kept, so that the
        next question about that namespace asks git nothing, until this repository runs a git
        command that may write a ref (anything but :data:`READ_ONLY_COMMANDS` and
        :data:`REF_KEEPING_COMMANDS`; the refs :meth:`update_ref` and :meth:`delete_ref` write
        are added and removed), or another process may have (:meth:`forget_refs`). ``own``:
        refs below ``prefix`` are written by this process alone (a run's own set-asides,
        under its reserved number), so the refs kept answer even after
        ``forget_refs(others=True)``."""
        if within is None or not within.endswith("/") or not prefix.endswith("/") \
                or not prefix.startswith(within):
            return self.run("for-each-ref", "--format=%(refname)", prefix).text.splitlines()
        if self._refs is None or self._refs[0] != within or (self._refs_unsure and not own):
            names = self.run("for-each-ref", "--format=%(refname)", within).text.splitlines()
            self._refs, self._refs_unsure = (within, names), False
        return [name for name in self._refs[1] if name.startswith(prefix)]

    def forget_refs(self, *, others: bool = False) -> None:
        """Drop the refs :meth:`for_each_ref` kept: another process may have written some
        (called once a lock is taken, or after a fetch). ``others``: they are still good for
        the refs only this process writes (``for_each_ref(own=True)``)."""
        if others:
            self._refs_unsure = True
        else:
            self._refs = None

    def ref_kinds(self, prefix: str) -> dict[str, str]:
        """The refs below ``prefix``: full name -> the type of the object it names
        (``commit``, ``tag``, ...), in one ``git for-each-ref``."""
        res = self.run("for-each-ref", "--format=%(objecttype) %(refname)", prefix)
        return {name: kind for kind, _, name in
                (line.partition(" ") for line in res.text.splitlines())}

    def ref_objects(self, prefix: str) -> list[tuple[str, str]]:
        """The (full name, object id) of each ref below ``prefix``, sorted by name."""
        res = self.run("for-each-ref", "--format=%(refname)%00%(objectname)", prefix)
        return [(name, oid) for name, _, oid in
                (line.partition("\0") for line in res.text.splitlines())]

    def ref_fields(self, prefixes: Sequence[str], atoms: Sequence[str]) -> list[list[str]]:
        """The ``for-each-ref`` ``atoms`` (``refname``, ``objectname``, ``parent``,
        ``contents:body``, ...) of each ref below ``prefixes``, sorted by name, in one call
        (fields ended by ``%1f``, refs by ``%1e``, as text with invalid bytes replaced); a ref
        whose fields hold such a separator is left out."""
        fmt = "".join(f"%({atom})%1f" for atom in atoms) + "%1e"
        res = self.run("for-each-ref", f"--format={fmt}", *prefixes)
        found = []
        for chunk in res.text.split("\x1e")[:-1]:
            fields = chunk.removeprefix("\n").split("\x1f")
            if len(fields) == len(atoms) + 1 and fields[-1] == "":
                found.append(fields[:-1])
        return found

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
        worktree list --porcelain -z``: records of ``key value`` fields), but for the
        tool's own worktrees in its scratch folders (the incumbent's, an audit's:
        :func:`in_scratch`)."""
        res = self.run("worktree", "list", "--porcelain", "-z", allow_non_zero=True)
        found = [self.top]
        for field in split_z(res.stdout) if res.returncode == 0 else []:
            key, _, value = field.partition(" ")
            if key == "worktree" and Path(value).is_dir() \
                    and Path(value).resolve() != self.top.resolve() \
                    and not self.in_scratch(Path(value)):
                found.append(Path(value))
        return found

    def in_scratch(self, path: Path) -> bool:
        """Whether ``path`` lies in a scratch folder of the tool's: ``autoresearch/`` of the
        git directory, or of a linked worktree's (``worktrees/<name>/autoresearch/``). A
        worktree a user keeps inside the git directory (beside a bare repository's records)
        is not in one."""
        try:
            parts = path.resolve().relative_to(self.common_dir.resolve()).parts
        except ValueError:
            return False
        return parts[:1] == ("autoresearch",) \
            or (parts[:1] == ("worktrees",) and parts[2:3] == ("autoresearch",))

    def remotes(self) -> list[str]:
        """The names of the configured remotes (``git remote``: one name a line), sorted."""
        return sorted(self.run("remote").text.split())

    def likely_remote(self) -> str | None:
        """The remote a hint names (:func:`likely_remote` of :meth:`remotes`)."""
        return likely_remote(self.remotes())

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

    def status(self) -> Status:
        """Every changed tracked path, every untracked non-ignored file, and every ignored file
        or folder (one entry ending in ``/`` for an ignored folder, code ``!``), with where
        HEAD was as git listed them (``git status --porcelain=v2 --branch``: its
        ``branch.oid`` and ``branch.head`` headers; the entries' codes as version 1 gives
        them, a space for version 2's ``.``).

        Renames are reported as a deletion and an addition (``--no-renames``). A submodule is
        changed when its commit or its tracked files are, whatever the configuration says, but
        not for untracked files inside it (``--ignore-submodules=untracked``): they are no
        change of this repository's (a benchmark's ``__pycache__`` there, say).
        """
        res = self.run("status", "--porcelain=v2", "-z", "--branch", "--no-ahead-behind",
                       "--no-renames", "--untracked-files=all", "--ignored=matching",
                       "--ignore-submodules=untracked")
        status = Status()
        items = iter(res.stdout.split(b"\0"))
        for item in items:
            kind = item[:2]
            if kind in (b"? ", b"! "):
                code = kind[:1].decode("ascii") * 2
                path = item[2:]
            elif kind in (b"1 ", b"2 ", b"u "):
                # 1 XY sub mH mI mW hH hI path; u (unmerged) has three more fields; 2 (a
                # rename, which --no-renames rules out) has a score, then its old path.
                fields = item.split(b" ", {b"1 ": 8, b"2 ": 9, b"u ": 10}[kind])
                code = fields[1].decode("ascii").replace(".", " ")
                path = fields[-1]
                if kind == b"2 ":
                    next(items, None)
            elif item.startswith(b"# branch.oid "):
                oid = item[len(b"# branch.oid "):].decode("ascii")
                status.commit = None if oid == "(initial)" else oid
                continue
            elif item.startswith(b"# branch.head "):
                name = item[len(b"# branch.head "):].decode("utf-8", "surrogateescape")
                status.branch = None if name == "(detached)" else name
                continue
            else:
                continue
            status.append(StatusEntry(code[0], code[1],
                                      path.decode("utf-8", "surrogateescape")))
        return status

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
        # (restore runs the user's post-checkout hook: no --literal-pathspecs, which it would
        # inherit; each path is literal by its own magic)
        res = self.run(*argv, input=join_z(map(literal, paths)), allow_non_zero=True)
        if res.returncode == 0:
            return
        # git restore refuses a path that neither HEAD nor the index knows: such a path was an
        # added file whose index entry is already gone; what is left of it is removed. Which
        # paths those are is asked of the index and HEAD, never read from git's message.
        known = set(self.indexed(paths)) | set(self.blobs("HEAD", paths))
        unknown = [p for p in paths if p not in known]
        if not unknown:
            # Run again as a call that may fail: a full disk is then told as one (DiskFull).
            self.run(*argv, input=join_z(map(literal, paths)))
            return
        for path in unknown:
            try:
                (self.top / path).unlink()
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                pass
        if known:
            self.run(*argv, input=join_z(map(literal, sorted(known))))

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

    def submodules(self, paths: Sequence[str]) -> list[str]:
        """The paths of ``paths`` that are submodules: a folder of the work tree whose entry
        in HEAD or in the index is a gitlink (mode 160000)."""
        folders = [p for p in paths if (self.top / p).is_dir() and not (self.top / p).is_symlink()]
        if not folders:
            return []
        found = {p for p, (mode, _) in self.tree_entries("HEAD", folders).items()
                 if mode == GITLINK}
        staged = self.run("ls-files", "-s", "-z", "--", *folders).stdout if fits_argv(
            folders) else self.run("ls-files", "-s", "-z").stdout
        wanted = set(folders)
        for item in split_z(staged):
            meta, _, name = item.partition("\t")
            if meta.startswith(GITLINK + " ") and name in wanted:
                found.add(name)
        return [p for p in paths if p in found]

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

    # History: commits, their fields and patches, the differences between two commits, and
    # which commits are on no branch (git-log(1), git-rev-list(1), git-diff-tree(1) machine
    # formats).

    def show_patch(self, rev: str) -> str:
        """Commit ``rev`` for people: ``commit <id>``, its message, a diffstat and the patch
        (``git show --no-color --no-ext-diff --stat --patch``), decoded (invalid bytes
        replaced)."""
        return self.run("show", "--no-color", "--no-ext-diff", "--stat", "--patch",
                        "--format=commit %H%n%n%B", rev).stdout.decode("utf-8", "replace")

    def commit_fields(self, rev: str, fields: Sequence[str]) -> list[str]:
        """The ``--format`` placeholders ``fields`` (``%H``, ``%(trailers:...)``, ...) of commit
        ``rev``, in order, as text (invalid bytes replaced; the last without its trailing
        newline). Raises :class:`GitError` when ``rev`` names no commit."""
        fmt = "%x00".join(fields)
        return self.run("log", "-1", f"--format={fmt}", rev, "--").text.split("\0")

    def log_fields(self, spec: str, fields: Sequence[str], *, reverse: bool = False
                   ) -> list[list[str]] | None:
        """The ``--format`` placeholders ``fields`` of every commit of the revision range
        ``spec`` (newest first; oldest first with ``reverse``), in one ``git log`` (fields
        ended by ``%x1f``, commits by ``%x1e``, newlines around a commit removed); a commit
        whose fields hold such a separator is left out. None when git refuses ``spec``."""
        fmt = "%x1f".join(fields) + "%x1e"
        res = self.run("log", *(["--reverse"] if reverse else []), f"--format={fmt}", spec,
                       "--", allow_non_zero=True)
        if res.returncode != 0:
            return None
        found = []
        # Every commit ends with the separator: what follows the last one is no commit.
        for item in res.stdout.decode("utf-8", "replace").split("\x1e")[:-1]:
            parts = item.strip("\n").split("\x1f")
            if len(parts) == len(fields):
                found.append(parts)
        return found

    def blob_versions(self, rev: str, prefix: str) -> list[str]:
        """Every blob a file under the folder ``prefix`` held in the history of ``rev``, each
        once, newest first: the blobs each commit wrote there (``git log --raw
        --no-abbrev``, whose lines read ``:<mode> <mode> <old> <new> <status>\t<path>``).
        Empty when git refuses ``rev``."""
        res = self.run("log", "--raw", "--no-abbrev", "--no-renames", "--format=", rev, "--",
                       prefix, allow_non_zero=True)
        found: dict[str, None] = {}
        for line in res.text.splitlines() if res.returncode == 0 else []:
            fields = line.split("\t")[0].split()
            if line.startswith(":") and len(fields) == 5 and set(fields[3]) != {"0"}:
                found.setdefault(fields[3])
        return list(found)

    def date_seconds(self, when: str, *, until: bool = False) -> int | None:
        """``when`` as seconds since the epoch, read as ``git log --since`` (``--until`` with
        ``until``) reads a date: ISO dates, ``yesterday``, ``midnight``, ``2.hours.ago``...
        (git's approxidate, through ``git rev-parse --since=``, which prints
        ``--max-age=<seconds>``; ``--until=`` prints ``--min-age=``). git reads a text it does
        not understand as now, as ``git log`` does. None when git prints no date."""
        flag, printed = ("--until", "--min-age=") if until else ("--since", "--max-age=")
        res = self.run("rev-parse", f"{flag}={when}", allow_non_zero=True)
        out = res.text.strip() if res.returncode == 0 else ""
        if not out.startswith(printed) or not out[len(printed):].lstrip("-").isdigit():
            return None
        return int(out[len(printed):])

    def commit_times(self, names: Sequence[str]) -> dict[str, int]:
        """The committer time (seconds since the epoch) of each commit that ``names`` (object
        ids, full or abbreviated, hexadecimal) names, in one ``git log --no-walk``; a name that
        is no hexadecimal id, names no object here or no commit is left out. Keys are the
        names as given."""
        wanted = sorted({n for n in names if HEX_NAME.fullmatch(n)})
        if not wanted:
            return {}
        res = self.run("log", "--no-walk", "--ignore-missing", "--format=%H %ct", *wanted,
                       "--", allow_non_zero=True)
        if res.returncode != 0:
            return {}
        found: dict[str, int] = {}
        for line in res.text.splitlines():
            oid, _, seconds = line.partition(" ")
            if not seconds.isdigit():
                continue
            for name in wanted:
                if oid.startswith(name.lower()):
                    found[name] = int(seconds)
        return found

    def patch_ids(self, spec: str) -> dict[str, str]:
        """The stable patch id (git-patch-id(1) ``--stable``) of each commit of the revision
        range ``spec`` that changes something, by full commit id: the same change has the same
        id whatever commit carries it (a cherry-pick, a rebase). Renames are read as a deletion
        and an addition, as :meth:`diff_patch_id` reads them. Empty when git refuses ``spec``.
        Two git calls."""
        res = self.run("log", "-p", "--no-color", "--no-ext-diff", "--no-renames",
                       "--no-merges", "--format=commit %H", spec, "--", allow_non_zero=True)
        if res.returncode != 0 or not res.stdout.strip():
            return {}
        found: dict[str, str] = {}
        for line in self.run("patch-id", "--stable", input=res.stdout).text.splitlines():
            pid, _, commit = line.partition(" ")
            if pid and commit:
                found[commit] = pid
        return found

    def diff_patch_id(self, old: str, new: str) -> str | None:
        """The stable patch id of the whole difference from commit ``old`` to commit ``new``
        (the one commit a ``git merge --squash`` of ``new`` onto ``old`` makes has it); None
        when they do not differ or git refuses them."""
        res = self.run("diff", "--no-color", "--no-ext-diff", "--no-renames", old, new, "--",
                       allow_non_zero=True)
        if res.returncode != 0 or not res.stdout.strip():
            return None
        out = self.run("patch-id", "--stable", input=res.stdout).text.split()
        return out[0] if out else None

    def picked_into(self, base: str, tip: str, into: str = "HEAD"
                    ) -> tuple[str, list[str]] | None:
        """How the changes of ``base..tip`` came into ``into`` without those commits, by patch
        id: (``squash``, [the commit]) when a commit of ``base..into`` has the whole difference
        from ``base`` to ``tip`` (a ``git merge --squash``), (``cherry-pick``, [the commits,
        oldest first]) when every commit of ``base..tip`` has its change in one of
        ``base..into``; None otherwise (nothing in ``base..tip``, or a change missing). Four
        git calls at most; ``git log -p`` of ``base..into`` costs what that history costs."""
        kept = self.patch_ids(f"{base}..{tip}")
        here = self.patch_ids(f"{base}..{into}") if kept else {}
        if not here:
            return None
        whole = self.diff_patch_id(base, tip)
        squash = [c for c, pid in here.items() if pid == whole]
        if squash:
            return "squash", squash[:1]
        by_id = {pid: c for c, pid in here.items()}
        if not all(pid in by_id for pid in kept.values()):
            return None
        wanted = {by_id[pid] for pid in kept.values()}
        return "cherry-pick", [c for c in reversed(list(here)) if c in wanted]

    def is_ancestor(self, old: str, new: str) -> bool:
        """Whether commit ``old`` is ``new`` or an ancestor of it (``merge-base
        --is-ancestor``); False when either names no commit."""
        return self.run("merge-base", "--is-ancestor", old, new,
                        allow_non_zero=True).returncode == 0

    def rev_list(self, spec: str) -> list[str]:
        """The commits of the revision range ``spec`` (``git rev-list``), newest first; none
        when git refuses it."""
        return self.run("rev-list", spec, "--", allow_non_zero=True).text.split()

    def off_branches(self, names: Sequence[str]) -> dict[str, str | None]:
        """Of the commit ids ``names`` (full or abbreviated), those that no local branch
        reaches: each name -> its full id, or None when it names no commit at all (pruned, or
        never in this repository). Two git calls whatever the number of names
        (``cat-file --batch-check``, then ``rev-list <ids> --not --branches``)."""
        wanted = [n for n in dict.fromkeys(names) if n and n.strip() == n and "\n" not in n]
        if not wanted:
            return {}
        out = self.run("cat-file", "--batch-check=%(objectname) %(objecttype)",
                       input="".join(f"{n}^{{commit}}\n" for n in wanted).encode()).text
        full: dict[str, str | None] = {}
        for name, line in zip(wanted, out.splitlines(), strict=False):
            oid, _, kind = line.partition(" ")
            full[name] = oid if kind == "commit" else None
        ids = sorted({oid for oid in full.values() if oid})
        unreached = set(self.run("rev-list", *ids, "--not", "--branches", "--",
                                 ).text.split()) if ids else set()
        return {name: oid for name, oid in full.items() if oid is None or oid in unreached}

    def diff_text(self, old: str, new: str, *, stat: bool = False,
                  name_only: bool = False) -> str:
        """The difference from commit ``old`` to commit ``new`` for people (``git diff
        --no-color --no-ext-diff``, with ``--stat`` or ``--name-only``), decoded (invalid bytes
        replaced)."""
        args = ["diff", "--no-color", "--no-ext-diff"]
        args += ["--stat"] if stat else ["--name-only"] if name_only else []
        return self.run(*args, old, new, "--").stdout.decode("utf-8", "replace")

    def changed_paths(self, old: str, new: str) -> list[str]:
        """The paths that differ between commits ``old`` and ``new`` (renames as a deletion
        and an addition)."""
        return split_z(self.run("diff-tree", "-r", "-z", "--name-only", "--no-renames", old,
                                new).stdout)

    # Configuration, as a repository's commands ask about it: entries by pattern (read once per
    # command for the keys every recording command needs), what would make ``git commit`` do
    # more than plumbing, and git's automatic maintenance (git-config(1) ``-z`` format).

    def ignores_case(self) -> bool:
        """Whether git takes the file system to fold case (``core.ignorecase``, false unset)."""
        values = [value for key, value in self.config_entries(r"^core\.ignorecase$")]
        return bool(values) and config_bool(values[-1]) is True

    def config_entries(self, pattern: str) -> list[tuple[str, str | None]]:
        """The (key, value) pairs of every configuration entry whose key matches the regular
        expression ``pattern`` (``git config --get-regexp``; keys with section and variable
        names in lower case); the value is None for a bare ``key`` line, which means true.

        A pattern of :data:`COMMAND_PATTERNS` is answered from one read of every key of
        :data:`COMMAND_CONFIG` (one ``git config`` per command instead of one per question),
        read again when this repository runs ``git config``, ``commit``, ``init`` or
        ``submodule``, or a configuration file git reads changed (:meth:`config_stamp`; the
        files they include are not watched)."""
        if pattern in COMMAND_PATTERNS:
            stamp = self.config_stamp()
            if self._config is None or self._config[0] != stamp:
                self._config = (stamp, self.config_entries(COMMAND_CONFIG))
            wanted = re.compile(pattern)
            return [(key, value) for key, value in self._config[1] if wanted.search(key)]
        res = self.run("config", "-z", "--get-regexp", pattern, allow_non_zero=True)
        found: list[tuple[str, str | None]] = []
        for item in split_z(res.stdout):
            key, newline, value = item.partition("\n")
            found.append((key, value if newline else None))
        return found

    def promisor(self) -> str | None:
        """The remote a partial clone fetches missing objects from on demand: the first with
        ``remote.<name>.promisor`` true, or the older ``extensions.partialClone``
        (gitrepository-layout(5), git-config(1)); None in a whole clone."""
        for key, value in self.config_entries(PROMISOR_PATTERN):
            if key == "extensions.partialclone" and value:
                return value
            if key.startswith("remote.") and config_bool(value):
                return key[len("remote."):-len(".promisor")]
        return None

    def config_stamp(self) -> object:
        """What changes when a configuration file git reads here changes (the repository's,
        the work tree's, the global and the system one, as the environment names them: inode,
        modification time and size of each) or the configuration given in the environment."""
        env = os.environ
        home = env.get("HOME", "")
        files = [self.common_dir / "config", self.git_dir / "config.worktree"]
        if env.get("GIT_CONFIG_GLOBAL"):
            files.append(Path(env["GIT_CONFIG_GLOBAL"]))
        elif home:
            files += [Path(home) / ".gitconfig",
                      Path(env.get("XDG_CONFIG_HOME") or Path(home) / ".config") / "git" / "config"]
        if not env.get("GIT_CONFIG_NOSYSTEM"):
            files.append(Path(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"))
        stamps: list[object] = [env.get("GIT_CONFIG_PARAMETERS"), env.get("GIT_CONFIG_COUNT")]
        for path in files:
            try:
                st = os.stat(path)
            except OSError:
                stamps.append(None)
            else:
                stamps.append((str(path), st.st_ino, st.st_mtime_ns, st.st_size))
        return tuple(stamps)

    def commit_customizations(self) -> list[str]:
        """What would make ``git commit`` here do more than write-tree, commit-tree and
        update-ref do: the commit hooks it would run (a file named as in :data:`COMMIT_HOOKS` in
        the hooks folder, executable or not: ``core.hooksPath``, relative to the top, or the
        common git directory's ``hooks/``; or a ``hook.<name>.event`` entry) and
        ``commit.gpgSign`` (or a value of it that git would refuse), and a ``SQUASH_MSG`` left
        by ``git merge --squash``, which git commit removes. Empty when plumbing makes the same
        commit."""
        folder = self.common_dir / "hooks"
        hooks: set[str] = set()
        signing: bool | None = False
        for key, value in self.config_entries(r"^(core\.hookspath|hook\..*\.event|"
                                              r"commit\.gpgsign)$"):
            if key == "core.hookspath" and value:
                folder = self.top / os.path.expanduser(value)
            elif key == "commit.gpgsign":
                signing = config_bool(value)  # the last one counts
            elif value in COMMIT_HOOKS:
                hooks.add(value)
        hooks.update(name for name in COMMIT_HOOKS if os.path.lexists(folder / name))
        found = [f"{name} hook" for name in COMMIT_HOOKS if name in hooks]
        if signing is not False:  # true, or a value git would refuse
            found.append("commit.gpgSign")
        if (self.git_dir / "SQUASH_MSG").exists():
            found.append("SQUASH_MSG")
        return found

    def auto_maintenance(self) -> None:
        """What ``git commit`` runs after each commit: ``git maintenance run --auto --quiet``
        (``gc --auto`` with git's defaults: it returns at once unless loose objects or packs
        have piled up), unless ``maintenance.auto`` is false. A failure is ignored, as git
        ignores it."""
        entries = self.config_entries(r"^maintenance\.auto$")
        if entries and config_bool(entries[-1][1]) is False:
            return
        self.run("maintenance", "run", "--auto", "--quiet", allow_non_zero=True)


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


# git's own lock files: those a recording would meet, and every one there is (for doctor).

def recording_locks(repo: Repo, branch: str, namespace: str | None = None) -> list[Path]:
    """The lock files of what a keep, a revert or a measurement changes that exist now:
    the index's, HEAD's, branch ``branch``'s (``refs/heads/<branch>.lock``),
    ``packed-refs.lock``, and, with ``namespace`` (a folder of refs), those of
    our own refs below it (``attempts/<run>.lock``, ``scope/<run>.lock``, ``state.lock``).
    git creates each while it changes that file and removes it when done; one that stays
    was left by a git process that was killed (or is one that is still running). Sorted
    as listed, those under ``namespace`` by path."""
    wanted = [repo.git_dir / "index.lock", repo.git_dir / "HEAD.lock",
              repo.common_dir / "refs" / "heads" / f"{branch}.lock",
              repo.common_dir / "packed-refs.lock"]
    found = [path for path in wanted if path.is_file()]
    if namespace is not None:
        folder = repo.common_dir / namespace
        if folder.is_dir():
            found.extend(sorted((p for p in folder.glob("**/*.lock") if p.is_file()),
                                key=str))
    return found

def lock_files(repo: Repo) -> list[tuple[Path, float]]:
    """Every git lock file in the git directories, with its age in seconds: ``*.lock``
    files at their top (``index.lock``, ``HEAD.lock``, ``packed-refs.lock``,
    ``config.lock``, ...), under ``refs/``, and those of linked worktrees
    (``worktrees/<name>/*.lock``); sorted by path."""
    found: set[Path] = set()
    for folder in {repo.git_dir, repo.common_dir}:
        found.update(folder.glob("*.lock"))
        found.update(folder.glob("worktrees/*/*.lock"))
        found.update(folder.glob("refs/**/*.lock"))
    now = time.time()
    out = []
    for path in sorted(found, key=str):
        try:
            out.append((path, max(0.0, now - path.lstat().st_mtime)))
        except FileNotFoundError:  # git finished meanwhile
            continue
    return out
