"""Running git: the process, its environment, its errors, and the machine formats it prints.

Every call goes through :func:`run_git` (``Repo.run``), which raises :class:`GitError` (argv,
exit code, stdout, stderr) unless the caller opts in to a non-zero exit with
``allow_non_zero=True``. Paths handed to git are literal (``--literal-pathspecs``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..runtime import signals
from ..runtime.errors import EXIT_REFUSED, AutoresearchError, Refused

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


class NotStaged(GitError):
    """git would not stage a file of the work tree (``git update-index --add``): a clean
    filter that failed, a line-ending rule (``core.safecrlf``) that refused it, a file it
    cannot read. What it said is quoted, never read."""

    def __init__(self, failed: GitError) -> None:
        super().__init__(failed.argv, failed.returncode, failed.stdout, failed.stderr)
        self.said = said_why(failed.stderr, failed.returncode, last=True)


def free_bytes(folder: Path) -> int | None:
    """The bytes that can still be written on the filesystem of ``folder`` (root may use the
    blocks reserved for it), or None when it cannot be told."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return None
    return (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize


def failure_in(exc: GitError, common_dir: Path, started: float) -> GitError:
    """``exc``, a git call on the repository whose common git directory is ``common_dir``,
    begun at ``started`` (:func:`clock`), as it is to be raised: :class:`DiskFull` when that
    disk has (almost) no space left (:data:`DISK_FULL_BYTES`), the temporary object files the
    call wrote removed first, so that freeing the user's own files is enough; else ``exc``."""
    free = free_bytes(common_dir)
    if free is None or free >= DISK_FULL_BYTES:
        return exc
    for path, mtime, _ in temporary_objects(common_dir):
        if mtime >= started:  # another git's (older) files are never touched
            path.unlink(missing_ok=True)
    return DiskFull(exc, common_dir, free_bytes(common_dir) or 0)


def clock() -> float:
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
    """One entry of ``git status --porcelain -z --no-renames``: its index and worktree codes as
    version 1 writes them ("?" and "!" twice for untracked and ignored paths), and its path."""

    index: str
    worktree: str
    path: str

    @property
    def untracked(self) -> bool:
        return self.index == "?"

    @property
    def ignored(self) -> bool:
        return self.index == "!"

    @property
    def unmerged(self) -> bool:
        """Whether git left the path unmerged in the index: a conflict (git-status(1), "Short
        Format": ``DD``, ``AU``, ``UD``, ``UA``, ``DU``, ``AA``, ``UU``)."""
        return self.index + self.worktree in UNMERGED


# The index and work tree codes of an unmerged path (git-status(1), "Short Format").
UNMERGED = frozenset({"DD", "AU", "UD", "UA", "DU", "AA", "UU"})


class Status(list[StatusEntry]):
    """``git status``'s entries, and where HEAD was as git listed them: ``commit``, its
    commit id (None on an unborn branch), and ``branch``, the short name of the branch
    checked out (None on a detached HEAD)."""

    commit: str | None = None
    branch: str | None = None

    @property
    def unmerged(self) -> dict[str, str]:
        """The paths git left unmerged in the index (a conflict), with their codes as ``git
        status --short`` gives them (``UU``, ``DU``, ...)."""
        return {e.path: e.index + e.worktree for e in self if e.unmerged}


# A command line holds about 2 MB in all (ARG_MAX); a list of paths longer than this many bytes
# is never passed as arguments, but on stdin or as a whole listing that is filtered.
ARGV_BUDGET = 64 * 1024


def git_environment(extra: Mapping[str, str] | None, *,
                    replaced: bool = False) -> dict[str, str]:
    # git speaks C to us whatever the user's locale (LANGUAGE is ignored under LC_ALL=C, not
    # under C.UTF-8), so what it says is the same everywhere; callers that run the user's own
    # code through git (commit hooks) hand the user's locale back with user_locale().
    env = {k: v for k, v in os.environ.items()
           if k not in LOCATING_VARIABLES and k != "LANGUAGE"}
    env["LC_ALL"] = "C"
    # The objects themselves, never what git replace shows in their place (refs/replace/): a
    # keep's commit, its trailers and its tree are what was recorded, whatever replaces them.
    # ``replaced``: as the user's git sees them (the user's own setting, if any, kept).
    if not replaced:
        env["GIT_NO_REPLACE_OBJECTS"] = "1"
    if extra:
        env.update(extra)
    return env


# GIT_AUTORESEARCH_TRACE=1: each git call on stderr with its exit code and wall time, to see
# where a command's time goes (bench/bench_ops.py --trace prints a keep's and a discard's).
TRACE = os.environ.get("GIT_AUTORESEARCH_TRACE", "") not in ("", "0")


def trace(args: Sequence[str], code: int, seconds: float) -> None:
    """Write one trace line: ``git-autoresearch trace: 3.1 ms exit 0 git <args>`` (the
    arguments cut at 200 characters)."""
    shown = " ".join(args)
    if len(shown) > 200:
        shown = shown[:197] + "..."
    try:
        sys.stderr.write(f"git-autoresearch trace: {seconds * 1000:.1f} ms exit {code} git "
                         f"{shown}\n")
    except (OSError, ValueError):
        pass


# What the user's configuration must not change in what git prints to us: trailers are
# ``Key: value``, as pi-autoresearch writes them (``trailer.separators`` set to ``=`` alone
# would hide every one of ours); messages in UTF-8, as they are stored; no signature lines
# in a log; no colour; patches with their ``a/`` and ``b/`` and paths unquoted, as people
# and git apply read them. Not for the commands that run the user's hooks (HOOK_COMMANDS).
OUR_READING = ("-c", "trailer.separators=:", "-c", "i18n.logOutputEncoding=UTF-8",
               "-c", "log.showSignature=false", "-c", "color.ui=never",
               "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false",
               "-c", "core.quotePath=false")


def literal(path: str) -> str:
    """``path`` as a pathspec that names it alone, whatever it holds (``:(literal)``): for
    the commands run without ``--literal-pathspecs`` (:data:`HOOK_COMMANDS`)."""
    return f":(literal){path}"


# The commands that run the user's hooks (githooks(5): pre-commit and the like, post-checkout,
# which git restore fires too, pre-push): they run under the user's own settings, without ours
# (OUR_READING, --literal-pathspecs), which the hooks would inherit (GIT_CONFIG_PARAMETERS,
# GIT_LITERAL_PATHSPECS: a pre-commit hook's ``git diff --cached -- '*.secret'`` would match
# nothing). None is given a pathspec of ours but ``restore`` and ``submodule``, whose paths each
# have their own ``:(literal)``. git commit also sees replaced objects as the user's git does;
# the others check out the objects themselves, never what git replace shows in their place.
# (The reference-transaction and post-index-change hooks, which plumbing fires too, are not
# covered.)
HOOK_COMMANDS = ("commit", "switch", "checkout", "worktree", "push", "submodule", "restore",
                 "cherry-pick", "maintenance", "gc")  # (the last two: pre-auto-gc)


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
    non-zero exit unless ``allow_non_zero``, and :class:`Refused` when git is not installed or
    ``cwd`` is not a folder that can be entered.
    A signal that arrives meanwhile waits until git is done (:func:`runtime.signals.deferred`): git
    killed half-way would leave its ``*.lock`` files behind.
    """
    hooks = bool(args) and args[0] in HOOK_COMMANDS
    argv = ["git", *(() if hooks else ("--literal-pathspecs", *OUR_READING)), *args]
    environment = git_environment(env, replaced=bool(args) and args[0] == "commit")
    started = time.perf_counter()
    try:
        with signals.deferred():
            proc = subprocess.run(argv, cwd=cwd, input=input, capture_output=True,
                                  env=environment,
                                  stdin=subprocess.DEVNULL if input is None else None)
    except OSError as exc:
        # The child's chdir and its exec fail with the same errors; the error names the file.
        if cwd is not None and exc.filename == cwd:
            if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
                raise Refused(f"no such folder: {os.fspath(cwd)}") from None
            raise Refused(f"cannot enter {os.fspath(cwd)}: {exc.strerror}") from None
        if isinstance(exc, FileNotFoundError):
            raise Refused("git is not installed or not on PATH") from None
        if isinstance(exc, PermissionError):
            raise Refused(f"git cannot be run: {exc.strerror} (is the git on PATH "
                          "executable?)") from None
        raise  # E2BIG and the like: a fault of ours (the callers keep to ARGV_BUDGET)
    if TRACE:
        trace(args, proc.returncode, time.perf_counter() - started)
    if proc.returncode != 0 and not allow_non_zero:
        raise GitError(["git", *args], proc.returncode, proc.stdout, proc.stderr)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def show_prefix(cwd: str | os.PathLike[str]) -> str:
    """Where ``cwd`` is below the top of its work tree, as git names it: a relative path
    ending in ``/``, empty at the top (``git rev-parse --show-prefix``). Raises
    :class:`GitError` outside a work tree."""
    return run_git(["rev-parse", "--show-prefix"], cwd=cwd).text


def current_folder() -> Path:
    """The current directory; :class:`Refused` when it was removed (``os.getcwd`` fails), as
    happens to a shell left in a folder that a build or a cleanup deleted."""
    try:
        return Path.cwd()
    except OSError as exc:
        raise Refused("the current folder no longer exists (removed while in use?): "
                      f"{exc.strerror}; cd to the work tree") from None


def user_locale() -> dict[str, str]:
    """The caller's locale variables, for a git call that runs the user's own code (commit
    hooks): ``LC_ALL`` as the user's effective message locale, and ``LANGUAGE``."""
    chosen = (os.environ.get("LC_ALL") or os.environ.get("LC_MESSAGES")
              or os.environ.get("LANG") or "C")
    return {"LC_ALL": chosen, "LANGUAGE": os.environ.get("LANGUAGE", "")}


def inside_repository(where: Path) -> bool:
    """Whether ``where`` or a folder above it looks like a repository to git's discovery (a
    ``.git`` entry, or a bare repository's ``HEAD``, ``objects`` and ``refs``): git refusing
    such a place is not the same as there being no repository, and we tell them apart without
    reading git's message."""
    try:  # realpath, not resolve: a symlink loop is no error to it (RuntimeError before 3.13)
        here = Path(os.path.realpath(where))
    except OSError:  # a relative path in a folder that was removed
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


def covered(name: str, wanted: set[str]) -> bool:
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


def said_why(stderr: bytes, returncode: int, *, last: bool = False) -> str:
    """The line of :func:`said` that says why git failed, to quote (never to parse): the
    first ``fatal:`` or ``error:`` line (with ``last``, the last ``fatal:`` line, which names
    the file when an ``error:`` line before it names a filter), else the last line, else the
    exit code."""
    lines = said(stderr)
    if last:
        found = next((ln.strip() for ln in reversed(lines) if ln.startswith("fatal:")), None)
    else:
        found = next((ln.strip() for ln in lines if ln.startswith(("fatal:", "error:"))), None)
    return found or (lines[-1].strip() if lines else f"exit {returncode}")


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
