"""The git store: the only package that runs git and parses what it prints.

Every call goes through :func:`~git_autoresearch.git.process.run_git` (``Repo.run``), which raises
:class:`GitError` (argv, exit code, stdout, stderr) unless the caller opts in to a non-zero exit
with ``allow_non_zero=True``. Only machine formats are parsed: ``-z`` lists, ``--porcelain`` and
``--format`` with NUL or ``%x1f``/``%x1e`` separators, never git's human messages. Paths handed to
git are literal (``--literal-pathspecs``), so a file named ``*`` or ``:(glob)x`` is that file and
nothing else. It knows no session concept (no ref name, no trailer key).

- :mod:`.process`: running git, its environment, errors (:class:`GitError`, :class:`DiskFull`,
  :class:`NotStaged`)
  and the machine formats;
- :mod:`.repo`: :class:`Repo`, the typed operations on a repository (references, the work
  tree and index, history, configuration), git's own lock files, and a new project repository;
- :mod:`.objects`: tree entries and blobs read and written in batch, and trees built outside
  the user's index (a private index, ``git mktree``);
- :mod:`.casenames`: case-only renames where the file system folds case (``core.ignorecase``);
- :mod:`.submodule`: submodules and their checkouts;
- :mod:`.cas`: compare-and-swap on refs, and the small commits such refs point at;
- :mod:`.commit_hooks`: what a commit hook asks of git (hooks folder, paths, trailers);
- :mod:`.merge`: a work tree moved between commits, a change merged onto another commit;
- :mod:`.worktrees`: linked worktrees, and commits replayed (cherry-picked) in one;
- :mod:`.remote`: a remote's refs listed, fetched, pushed atomically.
"""

from .process import (
    ABSENT,
    COMMIT_HOOKS,
    DISK_FULL_BYTES,
    GITLINK,
    LOCATING_VARIABLES,
    DiskFull,
    GitError,
    NotStaged,
    Result,
    StatusEntry,
    config_bool,
    current_folder,
    fits_argv,
    free_bytes,
    join_z,
    run_git,
    said,
    said_why,
    show_prefix,
    split_z,
    temporary_objects,
    user_locale,
)
from .repo import Repo

__all__ = [
    "ABSENT", "COMMIT_HOOKS", "DISK_FULL_BYTES", "GITLINK", "LOCATING_VARIABLES", "DiskFull",
    "GitError", "NotStaged", "Repo", "Result", "StatusEntry", "config_bool", "current_folder",
    "fits_argv", "free_bytes", "join_z", "run_git", "said", "said_why", "show_prefix",
    "split_z",
    "temporary_objects", "user_locale",
]
