"""The guard: git ``pre-commit`` and ``commit-msg`` hooks that refuse, on a session branch, a
commit made by hand that carries a keep's trailers (``Result:``, ``Autoresearch-*``) or
changes the files that define success (the measurement's and the checks' scripts and the
``readonly`` paths: :meth:`Boundaries.is_readonly`). ``git autoresearch guard install``.

The hooks are small shell scripts in git's hooks folder
(:func:`git.commit_hooks.hooks_folder`) that run ``python -m git_autoresearch guard check
<hook>`` with the interpreter that installed them (else ``git-autoresearch`` on the PATH;
with neither, they say so and let the commit pass). A hook that was there before (the user's
own, or the pre-commit framework's) is renamed ``<hook>.pre-autoresearch`` and run after the
check, with the same arguments; uninstalling puts it back. A keep's own ``git commit``
carries :data:`experiment.OUR_COMMIT_VARIABLE` in its environment and passes. Like any git
hook, ``git commit --no-verify`` skips the guard: it stops a commit made around the loop by
mistake, not a determined one.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import AutoresearchError, Refused
from .experiment import OUR_COMMIT_VARIABLE
from .git import Repo
from .git.commit_hooks import hooks_folder, message_trailers, staged_paths
from .paths import Boundaries
from .refs import session_branch
from .trailers import DECISION, INTENT, RESULT, RUN, SESSION, STATUS

HOOKS = ("pre-commit", "commit-msg")
MARK = "# git-autoresearch guard"
CHAINED_SUFFIX = ".pre-autoresearch"
# The trailers only a keep (or a recorded attempt) writes; compared case-insensitively, as git.
KEEP_TRAILERS = tuple(k.lower() for k in (RESULT, STATUS, RUN, SESSION, INTENT, DECISION))


def script(hook: str, python: str) -> str:
    """The text of the guard's hook ``hook``, calling ``python -m git_autoresearch``."""
    chained = f"{hook}{CHAINED_SUFFIX}"
    return f"""#!/bin/sh
{MARK}: {hook} (git autoresearch guard install; git autoresearch guard uninstall removes it)
# On a session branch, refuses a commit made by hand with a keep's trailers or a change to the
# files that define success. The hook that was here before is {chained}, run after.
if [ -x {shlex.quote(python)} ]; then
    {shlex.quote(python)} -m git_autoresearch guard check {hook} "$@" || exit $?
elif command -v git-autoresearch >/dev/null 2>&1; then
    git-autoresearch guard check {hook} "$@" || exit $?
else
    echo "git-autoresearch guard: git-autoresearch is not installed; this commit is not checked" >&2
fi
chained="$(dirname "$0")/{chained}"
if [ -x "$chained" ]; then
    exec "$chained" "$@"
fi
exit 0
"""


def is_ours(path: Path) -> bool:
    """Whether ``path`` is a hook the guard wrote (its second line starts with :data:`MARK`)."""
    try:
        with open(path, "rb") as f:
            head = f.read(400)
    except OSError:
        return False
    lines = head.split(b"\n")
    return len(lines) > 1 and lines[1].startswith(MARK.encode())


@dataclass
class HookState:
    """One hook of the guard: its name, the file, whether the guard's is installed, and the
    hook it chains to (relative to the hooks folder), if any."""

    hook: str
    path: Path
    installed: bool
    chained: str | None

    def to_json(self) -> dict[str, object]:
        return {"hook": self.hook, "path": str(self.path), "installed": self.installed,
                "chained": self.chained}


def status(repo: Repo | None = None) -> list[HookState]:
    """The guard's hooks in the hooks folder of ``repo`` (default: the repository here),
    installed or not."""
    repo = repo or Repo.discover()
    folder = hooks_folder(repo)
    found = []
    for hook in HOOKS:
        chained = folder / f"{hook}{CHAINED_SUFFIX}"
        found.append(HookState(hook, folder / hook, is_ours(folder / hook),
                               chained.name if os.path.lexists(chained) else None))
    return found


def install(repo: Repo | None = None, python: str | None = None) -> list[HookState]:
    """Install the guard's hooks in the hooks folder of ``repo`` (created if missing). A hook
    there that is not the guard's is renamed ``<hook>.pre-autoresearch`` and chained; the
    guard's own is rewritten (the interpreter may have moved). Refuses (:class:`Refused`)
    when a hook and a chained hook are both there and the hook is not the guard's."""
    repo = repo or Repo.discover()
    folder = hooks_folder(repo)
    python = python or sys.executable
    for hook in HOOKS:
        path, chained = folder / hook, folder / f"{hook}{CHAINED_SUFFIX}"
        if os.path.lexists(path) and not is_ours(path) and os.path.lexists(chained):
            raise Refused(f"{path} and {chained} both exist and neither is the guard's; "
                          f"merge them into {chained} and run guard install again")
    folder.mkdir(parents=True, exist_ok=True)
    for hook in HOOKS:
        path, chained = folder / hook, folder / f"{hook}{CHAINED_SUFFIX}"
        if os.path.lexists(path) and not is_ours(path):
            os.rename(path, chained)
        tmp = folder / f".{hook}.tmp{os.getpid()}"
        tmp.write_text(script(hook, python), encoding="utf-8")
        tmp.chmod(0o755)
        os.replace(tmp, path)
    return status(repo)


def uninstall(repo: Repo | None = None) -> list[HookState]:
    """Remove the guard's hooks from the hooks folder of ``repo`` and put back the hooks they
    chained to; a hook that is not the guard's is left alone."""
    repo = repo or Repo.discover()
    folder = hooks_folder(repo)
    for hook in HOOKS:
        path, chained = folder / hook, folder / f"{hook}{CHAINED_SUFFIX}"
        if is_ours(path):
            path.unlink()
            if os.path.lexists(chained):
                os.rename(chained, path)
    return status(repo)


def _session_branch_bounds(repo: Repo) -> tuple[str, Boundaries] | None:
    """The session branch and its boundaries when HEAD is on the branch of the session of
    this work tree; None otherwise (no session, or another branch)."""
    from .session import Session

    try:
        session = Session.open(repo.top, on_branch=False, check_config=False)
    except AutoresearchError:
        return None
    branch = session_branch(session.config.session_id)
    if repo.current_branch() != branch:
        return None
    return branch, session.bounds


def check_pre_commit(index_file: str | None, repo: Repo | None = None) -> str | None:
    """Why the commit being made must be refused, or None: on a session branch, a commit not
    made by a keep that changes a readonly path (in the index ``index_file``, the one git
    commits: ``$GIT_INDEX_FILE``)."""
    if os.environ.get(OUR_COMMIT_VARIABLE):
        return None
    repo = repo or Repo.discover()
    found = _session_branch_bounds(repo)
    if found is None:
        return None
    branch, bounds = found
    changed = [p for p in staged_paths(repo, index_file) if bounds.is_readonly(p)]
    if not changed:
        return None
    more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
    return (f"this commit changes {', '.join(changed[:5])}{more}, which define(s) what the "
            f"session measures or checks (readonly); a commit on {branch} is made by git "
            "autoresearch run or keep, never by hand")


def check_commit_msg(message_file: str, repo: Repo | None = None) -> str | None:
    """Why the commit whose message is in ``message_file`` must be refused, or None: on a
    session branch, a commit not made by a keep whose message has a keep's trailers."""
    if os.environ.get(OUR_COMMIT_VARIABLE):
        return None
    try:
        message = Path(message_file).read_bytes()
    except OSError as exc:
        raise Refused(f"cannot read the commit message {message_file}: {exc.strerror}") from None
    repo = repo or Repo.discover()
    forged = [k for k, _ in message_trailers(repo, message) if k.lower() in KEEP_TRAILERS]
    if not forged:
        return None
    found = _session_branch_bounds(repo)
    if found is None:
        return None
    return (f"this commit message carries {', '.join(dict.fromkeys(f + ':' for f in forged))}, "
            f"which only git autoresearch run or keep writes on {found[0]}; a run is "
            "recorded by git autoresearch run (or measure, then keep), never by hand")
