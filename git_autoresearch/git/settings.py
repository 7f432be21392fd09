"""The configuration git reads here, as a repository's commands ask about it: entries by
pattern (read once per command for the keys every recording command needs), what would make
``git commit`` do more than plumbing, and git's automatic maintenance; mixed into
:class:`~.repo.Repo`, whose ``run`` every method calls (git-config(1) ``-z`` format)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from .process import COMMIT_HOOKS, Result, config_bool, split_z

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


class Settings:
    """The configuration questions of :class:`~.repo.Repo` (which provides :meth:`run`, the
    folders, and ``_config``, the cache of :data:`COMMAND_CONFIG`)."""

    top: Path
    git_dir: Path
    common_dir: Path
    _config: tuple[object, list[tuple[str, str | None]]] | None

    def run(self, *args: str, input: bytes | None = None,
            # mutation: equivalent a declaration for the type checker: Repo.run replaces it
            env: Mapping[str, str] | None = None, allow_non_zero: bool = False) -> Result:
        raise NotImplementedError  # mutation: equivalent Repo.run replaces it

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
