"""The only module that runs git.

Every call goes through :meth:`Repo.run`, which raises :class:`GitError` (argv, exit code, stdout,
stderr) unless the caller opts in to a non-zero exit with ``allow_non_zero=True``. Only machine
formats are parsed: ``-z`` lists, ``--porcelain`` and ``--format`` with ``%x1f``/``%x1e``
separators. Paths handed to git are literal (``--literal-pathspecs``), so a file named ``*`` or
``:(glob)x`` is that file and nothing else.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from . import signals
from .errors import EXIT_REFUSED, AutoresearchError, Refused
from .files import write_atomic

# Variables that tell git which repository, index or pathspec rules to use. When we are started from
# inside a git hook (or a test harness) they point at somebody else's state, so every git call runs
# without them (pre-commit's no_git_env does the same); identity and config variables are kept.
LOCATING_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_LITERAL_PATHSPECS",
    "GIT_GLOB_PATHSPECS",
    "GIT_NOGLOB_PATHSPECS",
    "GIT_ICASE_PATHSPECS",
    "GIT_QUARANTINE_PATH",
)

# The mode of a gitlink: a submodule's entry in a tree or the index.
GITLINK = "160000"

# The old value that makes ``git update-ref`` require that the ref does not exist yet, whatever
# the repository's object format (40 zeros would be SHA-1 only).
ABSENT = ""

# The hooks ``git commit`` runs (githooks(5)); with none of them configured a keep commits through
# plumbing (write-tree, commit-tree, update-ref), which gives the same commit and reflog.
COMMIT_HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit")


class GitError(AutoresearchError):
    """A git command failed: carries ``argv``, ``returncode``, ``stdout`` and ``stderr`` (bytes)."""

    def __init__(self, argv: Sequence[str], returncode: int, stdout: bytes, stderr: bytes) -> None:
        lines = said(stderr)
        last = lines[-1].strip() if lines else "no message"
        shown = " ".join(argv[:4])
        super().__init__(f"git failed (exit {returncode}) running '{shown}': {last}")
        self.argv = list(argv)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


# Below this many bytes free on the disk of the git directory, a git call that failed is taken
# to have failed because the disk is full: git's own words are never read, and a git that
# wrote until it could not leaves less than this (its partial temporary object included).
DISK_FULL_BYTES = 1024 * 1024

# What git leaves in .git/objects when it is stopped mid-write: a loose object being written
# (objects/xx/tmp_obj_*), a pack or its index (objects/pack/tmp_pack_*, tmp_idx_*).
GIT_TEMPORARY_OBJECTS = ("objects/??/tmp_obj_*", "objects/tmp_obj_*", "objects/pack/tmp_pack_*",
                         "objects/pack/tmp_idx_*")


class DiskFull(GitError):
    """A git call failed while the disk of the git directory had (almost) no space left:
    ``folder`` (the git directory) and ``free`` (bytes, once git's temporary files of the
    failed call were removed). Exit 3; ``argv``, ``returncode``, ``stdout`` and ``stderr`` are
    those of the git call."""

    exit_code = EXIT_REFUSED

    def __init__(self, failed: GitError, folder: Path, free: int) -> None:
        super().__init__(failed.argv, failed.returncode, failed.stdout, failed.stderr)
        shown = " ".join(failed.argv[:3])
        self.message = (f"the disk of {folder} is full: git could not write there "
                        f"(running '{shown}')")
        self.args = (self.message,)
        self.folder = folder
        self.free = free


def free_bytes(folder: Path) -> int | None:
    """The bytes that can still be written on the filesystem of ``folder`` (root may use the
    blocks reserved for it), or None when it cannot be told."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return None
    return (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize


def _clock() -> float:
    """Now, as the kernel stamps a file's modification time (its coarse clock, which may lag
    ``time.time()`` by a tick): a file written after this call is never older than it."""
    coarse = getattr(time, "CLOCK_REALTIME_COARSE", None)
    return time.clock_gettime(coarse) if coarse is not None else time.time() - 0.01


def temporary_objects(common_dir: Path) -> list[tuple[Path, float, int]]:
    """git's temporary object files in ``common_dir`` (:data:`GIT_TEMPORARY_OBJECTS`), each
    with its modification time (seconds since the epoch) and size (bytes); sorted by path."""
    out = []
    for pattern in GIT_TEMPORARY_OBJECTS:
        for path in common_dir.glob(pattern):
            try:
                st = path.lstat()
            except FileNotFoundError:
                continue
            out.append((path, st.st_mtime, st.st_size))
    return sorted(out, key=lambda item: str(item[0]))


@dataclass(frozen=True)
class Result:
    """What a git call returned: exit code and raw output bytes."""

    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def text(self) -> str:
        """stdout decoded as UTF-8 (invalid bytes replaced), trailing newline removed."""
        return self.stdout.decode("utf-8", "replace").rstrip("\n")


@dataclass(frozen=True)
class StatusEntry:
    """One line of ``git status --porcelain=v1 -z --no-renames``: index and worktree codes."""

    index: str
    worktree: str
    path: str

    @property
    def untracked(self) -> bool:
        return self.index == "?"

    @property
    def ignored(self) -> bool:
        return self.index == "!"


# A command line holds about 2 MB in all (ARG_MAX); a list of paths longer than this many bytes
# is never passed as arguments, but on stdin or as a whole listing that is filtered.
ARGV_BUDGET = 64 * 1024


def _environment(extra: Mapping[str, str] | None) -> dict[str, str]:
    # git speaks C to us whatever the user's locale (LANGUAGE is ignored under LC_ALL=C, not
    # under C.UTF-8), so what it says is the same everywhere; callers that run the user's own
    # code through git (commit hooks) hand the user's locale back with user_locale().
    env = {k: v for k, v in os.environ.items()
           if k not in LOCATING_VARIABLES and k != "LANGUAGE"}
    env["LC_ALL"] = "C"
    if extra:
        env.update(extra)
    return env


def run_git(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    allow_non_zero: bool = False,
) -> Result:
    """Run ``git <args>`` and return its :class:`Result`.

    ``env`` adds variables on top of the cleaned environment. Raises :class:`GitError` on a
    non-zero exit unless ``allow_non_zero``, and :class:`Refused` when git is not installed.
    A signal that arrives meanwhile waits until git is done (:func:`signals.deferred`): git
    killed half-way would leave its ``*.lock`` files behind.
    """
    argv = ["git", "--literal-pathspecs", *args]
    try:
        with signals.deferred():
            proc = subprocess.run(argv, cwd=cwd, input=input, capture_output=True,
                                  env=_environment(env),
                                  stdin=subprocess.DEVNULL if input is None else None)
    except FileNotFoundError:
        raise Refused("git is not installed or not on PATH") from None
    if proc.returncode != 0 and not allow_non_zero:
        raise GitError(["git", *args], proc.returncode, proc.stdout, proc.stderr)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def show_prefix(cwd: str | os.PathLike[str]) -> str:
    """Where ``cwd`` is below the top of its work tree, as git names it: a relative path
    ending in ``/``, empty at the top (``git rev-parse --show-prefix``). Raises
    :class:`GitError` outside a work tree."""
    return run_git(["rev-parse", "--show-prefix"], cwd=cwd).text


def user_locale() -> dict[str, str]:
    """The caller's locale variables, for a git call that runs the user's own code (commit
    hooks): ``LC_ALL`` as the user's effective message locale, and ``LANGUAGE``."""
    chosen = (os.environ.get("LC_ALL") or os.environ.get("LC_MESSAGES")
              or os.environ.get("LANG") or "C")
    return {"LC_ALL": chosen, "LANGUAGE": os.environ.get("LANGUAGE", "")}


def _inside_repository(where: Path) -> bool:
    """Whether ``where`` or a folder above it looks like a repository to git's discovery (a
    ``.git`` entry, or a bare repository's ``HEAD``, ``objects`` and ``refs``): git refusing
    such a place is not the same as there being no repository, and we tell them apart without
    reading git's message."""
    try:
        here = where.resolve()
    except OSError:
        return False
    for folder in (here, *here.parents):
        if os.path.lexists(folder / ".git"):
            return True
        if (folder / "HEAD").is_file() and (folder / "objects").is_dir() \
                and (folder / "refs").is_dir():
            return True
    return False


def fits_argv(paths: Sequence[str]) -> bool:
    """Whether ``paths`` are few and short enough (:data:`ARGV_BUDGET` bytes in all) to be
    passed as arguments of one git call."""
    total = 0
    for path in paths:
        total += len(path.encode("utf-8", "surrogateescape")) + 1
        if total > ARGV_BUDGET:
            return False
    return True


def _covered(name: str, wanted: set[str]) -> bool:
    """Whether ``name`` is in ``wanted`` or below a folder that is (as a pathspec matches)."""
    if name in wanted:
        return True
    cut = name.rfind("/")
    while cut != -1:
        if name[:cut] in wanted:
            return True
        cut = name.rfind("/", 0, cut)
    return False


def said(stderr: bytes) -> list[str]:
    """What a git command said on stderr: its non-blank lines (indentation kept)."""
    return [ln.rstrip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]


def config_bool(value: str | None) -> bool | None:
    """A git boolean as ``git config --type=bool`` reads it: a bare key, ``true``, ``yes``,
    ``on`` or a non-zero number is true; ``false``, ``no``, ``off``, ``0`` or empty is false;
    anything else is None (git refuses it as a bad boolean)."""
    if value is None:
        return True
    word = value.strip().lower()
    if word in ("true", "yes", "on"):
        return True
    if word in ("false", "no", "off", ""):
        return False
    try:
        return int(word) != 0
    except ValueError:
        return None


def split_z(data: bytes) -> list[str]:
    """Split NUL-terminated git output into paths (UTF-8, invalid bytes kept as surrogates)."""
    return [p.decode("utf-8", "surrogateescape") for p in data.split(b"\0") if p]


def join_z(paths: Iterable[str]) -> bytes:
    """Encode paths as a NUL-separated list for ``--pathspec-from-file=- --pathspec-file-nul``."""
    return b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)


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

    @classmethod
    def discover(cls, cwd: str | os.PathLike[str] | None = None) -> Repo:
        """Find the repository that contains ``cwd``.

        Raises :class:`Refused` outside a repository, in a bare repository, or inside ``.git``.
        """
        where = Path(cwd) if cwd is not None else Path.cwd()
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
            words = said(res.stderr)
            if words and _inside_repository(where):
                # e.g. git's safe.directory check: say what git said, not "no repository"
                raise Refused(f"git cannot use {where}: "
                              f"{words[-1].strip().removeprefix('fatal: ')}")
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
        started = _clock()
        try:
            return run_git(args, cwd=self.top, input=input, env=env,
                           allow_non_zero=allow_non_zero)
        except GitError as exc:
            free = free_bytes(self.common_dir)
            if free is None or free >= DISK_FULL_BYTES:
                raise
            for path, mtime, _ in temporary_objects(self.common_dir):
                if mtime >= started:  # another git's (older) files are never touched
                    path.unlink(missing_ok=True)
            raise DiskFull(exc, self.common_dir, free_bytes(self.common_dir) or 0) from None

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

    def for_each_ref(self, prefix: str) -> list[str]:
        """The full names of the refs below ``prefix`` (``git for-each-ref``), sorted by name."""
        return self.run("for-each-ref", "--format=%(refname)", prefix).text.splitlines()

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

    def remotes(self) -> list[str]:
        """The names of the configured remotes (``git remote``: one name a line), sorted."""
        return sorted(self.run("remote").text.split())

    def fetch_hint(self, branch: str) -> str:
        """How to bring ``branch`` here from a remote: ``git fetch origin B:B`` when a remote
        named origin exists, else the remotes that do, else that there is none."""
        remotes = self.remotes()
        if "origin" in remotes:
            return f"fetch it: git fetch origin {branch}:{branch}"
        if remotes:
            return (f"fetch it from one of the remotes ({', '.join(remotes)}): git fetch "
                    f"{remotes[0]} {branch}:{branch}")
        return "this repository has no remote to fetch it from"

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
        gone = [p for p in paths if not self._reachable(p)]
        if gone:
            self.run("update-index", "--force-remove", "-z", "--stdin", input=join_z(gone),
                     env=env)
        dropped = set(gone)
        present = [p for p in paths if p not in dropped]
        if present:
            self.run("update-index", "--add", "--remove", "--replace", "-z", "--stdin",
                     input=join_z(present), env=env)

    def _reachable(self, path: str) -> bool:
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
            raise GitError(["git", *argv], res.returncode, res.stdout, res.stderr)
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
        return [p for p in split_z(self.run("ls-files", "-z").stdout) if _covered(p, wanted)]

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
                if few or _covered(name, wanted):
                    mode, _, oid = meta.decode().split()
                    found[name] = (mode, oid)
        return found

    def ls_files(self) -> list[str]:
        """Every path of the index (``git ls-files -z``)."""
        return split_z(self.run("ls-files", "-z").stdout)

    def ls_tree(self, commit: str, paths: Sequence[str]) -> list[tuple[str, str, str, str]]:
        """The (mode, type, object id, path) of the entries of ``commit`` named by ``paths``,
        not recursing into folders (``git ls-tree -z``); paths it does not hold are left out."""
        found = []
        for item in self.run("ls-tree", "-z", commit, "--", *paths).stdout.split(b"\0"):
            if item:
                meta, _, raw = item.partition(b"\t")
                mode, kind, oid = meta.decode().split()
                found.append((mode, kind, oid, raw.decode("utf-8", "surrogateescape")))
        return found

    def tree_files(self, rev: str) -> list[tuple[str, str, str]]:
        """The (mode, object id, path) of every file in the tree of ``rev``, recursively
        (``git ls-tree -r -z --full-tree``)."""
        found = []
        for item in split_z(self.run("ls-tree", "-r", "-z", "--full-tree", rev).stdout):
            meta, _, path = item.partition("\t")
            mode, _, oid = meta.split()
            found.append((mode, oid, path))
        return found

    def cat_blob(self, oid: str) -> bytes:
        """The content of blob ``oid`` (``git cat-file blob``). Raises :class:`GitError`."""
        return self.run("cat-file", "blob", oid).stdout

    def cat_blobs(self, oids: Sequence[str]) -> dict[str, bytes]:
        """Blob contents by id, through one ``git cat-file --batch`` (its output: a
        ``<oid> <type> <size>`` line, the content, a newline, for each)."""
        if not oids:
            return {}
        out = self.run("cat-file", "--batch",
                       input="".join(o + "\n" for o in oids).encode()).stdout
        found: dict[str, bytes] = {}
        at = 0
        while at < len(out):
            end = out.index(b"\n", at)
            oid, _, size = out[at:end].decode().split()
            found[oid] = out[end + 1:end + 1 + int(size)]
            at = end + 1 + int(size) + 1
        return found

    def write_blobs(self, files: Sequence[str]) -> list[str]:
        """Write the files ``files`` (absolute paths, as they are: no filters) into the object
        store; their blob ids, in order (``git hash-object -w --no-filters --stdin-paths``)."""
        if not files:
            return []
        return self.run("hash-object", "-w", "--no-filters", "--stdin-paths",
                        input="".join(p + "\n" for p in files).encode()).text.split()

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

    def commit(self, message: str) -> Result:
        """``git commit -q --cleanup=verbatim -F -``: the index committed with ``message`` as
        it is, hooks and signing included, run in the user's locale (the hooks are the user's
        code). Never raises for git's refusal: the caller reads ``returncode``/``stderr``."""
        return self.run("commit", "-q", "--cleanup=verbatim", "-F", "-",
                        input=message.encode("utf-8"), env=user_locale(), allow_non_zero=True)

    @contextmanager
    def temporary_index(self, *, copy_of_real: bool = True) -> Iterator[Index]:
        """A private index under the scratch folder for building a tree without touching the
        user's: a copy of the real index (its stat data and cache tree spare hashing every
        file again) when ``copy_of_real`` and there is one, else empty. The file and its
        ``.lock`` are removed on leaving, whatever happened."""
        self.scratch.mkdir(parents=True, exist_ok=True)
        path = self.scratch / f"attempt-index.{os.getpid()}"
        try:
            index = Index(self, path)
            real = self.git_dir / "index"
            if copy_of_real and real.is_file():
                write_atomic(path, real.read_bytes())
                index.copied = True
            yield index
        finally:
            for leftover in (path, path.with_name(path.name + ".lock")):
                leftover.unlink(missing_ok=True)

    def show_patch(self, rev: str) -> str:
        """Commit ``rev`` for people: ``commit <id>``, its message, a diffstat and the patch
        (``git show --no-ext-diff --stat --patch``), decoded (invalid bytes replaced)."""
        return self.run("show", "--no-ext-diff", "--stat", "--patch",
                        "--format=commit %H%n%n%B", rev).stdout.decode("utf-8", "replace")

    # --- history ------------------------------------------------------------------------------

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
        for item in res.stdout.decode("utf-8", "replace").split("\x1e"):
            parts = item.strip("\n").split("\x1f")
            if len(parts) == len(fields):
                found.append(parts)
        return found

    def rev_list(self, spec: str) -> list[str]:
        """The commits of the revision range ``spec`` (``git rev-list``), newest first; none
        when git refuses it."""
        return self.run("rev-list", spec, "--", allow_non_zero=True).text.split()

    # --- submodules ---------------------------------------------------------------------------

    def submodules(self, paths: Sequence[str]) -> list[str]:
        """The paths of ``paths`` that are submodules: a folder of the work tree whose entry in
        HEAD or in the index is a gitlink (mode 160000)."""
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

    def _checked_out(self, path: str) -> bool:
        """Whether submodule ``path`` has a checkout of its own (a ``.git`` file or folder);
        without one, git run inside it would act on this repository."""
        return os.path.lexists(self.top / path / ".git")

    def submodule_head(self, path: str) -> str | None:
        """The commit checked out in submodule ``path``, or None when it has no checkout."""
        if not self._checked_out(path):
            return None
        res = run_git(["rev-parse", "-q", "--verify", "HEAD^{commit}"], cwd=self.top / path,
                      allow_non_zero=True)
        return res.text or None if res.returncode == 0 else None

    def submodule_has(self, path: str, commit: str) -> bool:
        """Whether submodule ``path`` has ``commit`` in its object store (true when it has no
        checkout: there is nothing to check out then)."""
        if not self._checked_out(path):
            return True
        return run_git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=self.top / path,
                       allow_non_zero=True).returncode == 0

    def submodule_dirty(self, path: str) -> bool:
        """Whether submodule ``path`` has changes that its commit does not hold: edits, staged
        changes or untracked files (not ignored ones)."""
        if not self._checked_out(path):
            return False
        res = run_git(["status", "--porcelain=v1", "-z", "--untracked-files=all",
                       "--ignore-submodules=none"], cwd=self.top / path)
        return bool(res.stdout)

    def reinstate_submodule(self, path: str) -> None:
        """Check out submodule ``path`` again at the commit the index records, from its own
        repository under the git directory (``modules/<name>``), when it has one; never
        fetched (``git submodule update --init --no-fetch``). Without one, nothing is done:
        the submodule's history is not here."""
        names = [key[len("submodule."):-len(".path")]
                 for key, value in self.config_entries_in(".gitmodules",
                                                          r"^submodule\..*\.path$")
                 if value == path]
        if not any((self.common_dir / "modules" / name).is_dir() for name in names):
            return
        self.run("submodule", "--quiet", "update", "--init", "--no-fetch", "--", path)

    def config_entries_in(self, file: str, pattern: str) -> list[tuple[str, str | None]]:
        """As :meth:`config_entries`, from the file ``file`` of the work tree (such as
        ``.gitmodules``); none when it does not exist."""
        if not (self.top / file).is_file():
            return []
        res = self.run("config", "-z", "-f", file, "--get-regexp", pattern, allow_non_zero=True)
        found: list[tuple[str, str | None]] = []
        for item in split_z(res.stdout):
            key, newline, value = item.partition("\n")
            found.append((key, value if newline else None))
        return found

    def checkout_submodule(self, path: str, commit: str) -> None:
        """Check out ``commit`` (detached) in submodule ``path``, as ``git submodule update``
        does. Raises :class:`GitError` (the commit is not in its object store, say)."""
        run_git(["checkout", "-q", "--detach", commit], cwd=self.top / path)

    def make_tree(self, entries: Iterable[tuple[str, str, str]]) -> str:
        """Write the tree of ``entries`` ((mode such as ``100644``, blob id, path with ``/``
        separators)) and the trees of its folders, all through one interactive
        ``git mktree --batch``; returns the top tree's id. Raises :class:`GitError`. A signal
        waits until git is done, as in :func:`run_git`."""
        with signals.deferred():
            return self._make_tree(entries)

    def _make_tree(self, entries: Iterable[tuple[str, str, str]]) -> str:
        folders: dict[str, list[str]] = {"": []}  # folder -> its blob lines
        children: dict[str, set[str]] = {}  # folder -> its subfolders
        for mode, oid, path in entries:
            parent, _, name = path.rpartition("/")
            folders.setdefault(parent, []).append(f"{mode} blob {oid}\t{name}")
            while parent:
                above = parent.rpartition("/")[0]
                folders.setdefault(above, [])
                children.setdefault(above, set()).add(parent)
                parent = above
        argv = ["git", "--literal-pathspecs", "mktree", "--batch"]
        proc = subprocess.Popen(argv, cwd=self.top, env=_environment(None),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        made: dict[str, str] = {}
        try:
            # Deepest folders first, so that each parent can name its children's trees.
            for folder in sorted(folders, key=lambda f: (-f.count("/") - bool(f), f)):
                lines = folders[folder] + [f"040000 tree {made[child]}\t"
                                           f"{child.rpartition('/')[2]}"
                                           for child in sorted(children.get(folder, ()))]
                proc.stdin.write(("\n".join(lines) + "\n\n").encode("utf-8", "surrogateescape"))
                proc.stdin.flush()
                made[folder] = proc.stdout.readline().decode().strip()
                if not made[folder]:
                    break
            proc.stdin.close()
        except BrokenPipeError:
            pass
        stderr = proc.stderr.read() if proc.stderr else b""
        code = proc.wait()
        top = made.get("", "")
        if code != 0 or not top:
            raise GitError(argv[2:], code, b"", stderr)
        return top

    def hash_files(self, paths: Sequence[str]) -> dict[str, str]:
        """The object ids ``git update-index`` would record for the work tree paths ``paths``
        (filters applied, nothing written): a file's blob, a symlink's blob (its target), a
        submodule's checked-out commit; a path that is none of these, lies beyond a symlink, or
        has a newline in its name is left out."""
        files: list[str] = []
        found: dict[str, str] = {}
        for path in paths:
            full = self.top / path
            if "\n" in path or not self._reachable(path):
                continue
            if full.is_symlink():
                target = os.fsencode(os.readlink(full))
                found[path] = self.run("hash-object", "--stdin", input=target).text
            elif full.is_file():
                files.append(path)
            elif full.is_dir():
                head = self.submodule_head(path)
                if head is not None:
                    found[path] = head
        if files:
            ids = self.run("hash-object", "--stdin-paths", input="".join(
                p + "\n" for p in files).encode("utf-8", "surrogateescape")).text.split()
            found.update(zip(files, ids, strict=True))
        return found

    def changed_paths(self, old: str, new: str) -> list[str]:
        """The paths that differ between commits ``old`` and ``new`` (renames as a deletion
        and an addition)."""
        return split_z(self.run("diff-tree", "-r", "-z", "--name-only", "--no-renames", old,
                                new).stdout)

    def has_staged_changes(self) -> bool:
        """Whether the index differs from HEAD."""
        return self.run("diff", "--cached", "--quiet", "--no-ext-diff",
                        allow_non_zero=True).returncode == 1

    def config_entries(self, pattern: str) -> list[tuple[str, str | None]]:
        """The (key, value) pairs of every configuration entry whose key matches the regular
        expression ``pattern`` (``git config --get-regexp``; keys with section and variable
        names in lower case); the value is None for a bare ``key`` line, which means true."""
        res = self.run("config", "-z", "--get-regexp", pattern, allow_non_zero=True)
        found: list[tuple[str, str | None]] = []
        for item in split_z(res.stdout):
            key, newline, value = item.partition("\n")
            found.append((key, value if newline else None))
        return found

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

    def identity_problem(self) -> str | None:
        """Why git could not commit here (no user.name/user.email), or None."""
        res = self.run("var", "GIT_COMMITTER_IDENT", allow_non_zero=True)
        if res.returncode == 0:
            return None
        return "git has no committer identity: set user.name and user.email (git config)"

    # --- git's own lock files ---------------------------------------------------------------

    def recording_locks(self, branch: str, namespace: str | None = None) -> list[Path]:
        """The lock files of what a keep, a revert or a measurement changes that exist now:
        the index's, HEAD's, branch ``branch``'s (``refs/heads/<branch>.lock``),
        ``packed-refs.lock``, and, with ``namespace`` (``refs/autoresearch/<id>``), those of
        our own refs below it (``attempts/<run>.lock``, ``scope/<run>.lock``, ``state.lock``).
        git creates each while it changes that file and removes it when done; one that stays
        was left by a git process that was killed (or is one that is still running). Sorted
        as listed, those under ``namespace`` by path."""
        wanted = [self.git_dir / "index.lock", self.git_dir / "HEAD.lock",
                  self.common_dir / "refs" / "heads" / f"{branch}.lock",
                  self.common_dir / "packed-refs.lock"]
        found = [path for path in wanted if path.is_file()]
        if namespace is not None:
            folder = self.common_dir / namespace
            if folder.is_dir():
                found.extend(sorted((p for p in folder.glob("**/*.lock") if p.is_file()),
                                    key=str))
        return found

    def lock_files(self) -> list[tuple[Path, float]]:
        """Every git lock file in the git directories, with its age in seconds: ``*.lock``
        files at their top (``index.lock``, ``HEAD.lock``, ``packed-refs.lock``,
        ``config.lock``, ...), under ``refs/``, and those of linked worktrees
        (``worktrees/<name>/*.lock``); sorted by path."""
        found: set[Path] = set()
        for folder in {self.git_dir, self.common_dir}:
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


class Index:
    """A private index file (:meth:`Repo.temporary_index`): every git call on it runs with
    ``GIT_INDEX_FILE`` set here and nowhere else. ``copied``: whether it began as a copy of the
    real index."""

    def __init__(self, repo: Repo, path: Path) -> None:
        self.repo = repo
        self.path = path
        self.copied = False
        self.env = {"GIT_INDEX_FILE": str(path)}

    def read_tree(self, rev: str) -> None:
        """Make this index hold the tree of ``rev`` (``git read-tree``)."""
        self.repo.run("read-tree", rev, env=self.env)

    def reset_paths(self, rev: str, paths: Sequence[str]) -> None:
        """Put the entries of ``paths`` back to ``rev``'s (``git reset -q <rev> --``)."""
        if paths:
            self.repo.run("reset", "-q", rev, "--pathspec-from-file=-", "--pathspec-file-nul",
                          input=join_z(paths), env=self.env)

    def add_paths(self, paths: Sequence[str]) -> None:
        """Stage ``paths`` here as :meth:`Repo.add_paths` does in the real index."""
        self.repo.add_paths(paths, env=self.env)

    def write_tree(self) -> str:
        """The tree of this index, written into the object store."""
        return self.repo.run("write-tree", env=self.env).text
