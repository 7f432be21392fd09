"""Swapping the benchmark in one step (git-autoresearch-start(1)): ``start
--new-segment`` commits the changed files that define success for the new segment, so that its
baseline is measured on a commit that holds them, they are readonly from then on (only a
committed file can be put back), and ``audit`` and ``finalize`` find them in git.

Which files: those the commands given this time name (``--command``, ``--metric-command``,
``--checks-command``, in options or a ``--config`` file), those under the ``--readonly`` rules
given this time, and those ``--commit-path`` names: a new benchmark script, a new data file.
A file the options do not name now (an experiment's edit of the benchmark, say) is never swept
in: the new segment refuses it as any ``start`` refuses a dirty tree. Protected paths and
``.auto/`` are never committed. The commit is a segment commit
(:func:`history.trailers.segment_message`: ``Autoresearch-Segment`` and ``-Session``, no
``Result``), made as a keep commits (:func:`history.experiment.commit_index`, so that the guard's
hooks let it pass)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..git import GitError, Repo
from ..history.experiment import commit_index
from ..history.trailers import segment_message, segment_trailers
from ..runtime.errors import Refused, UsageError
from ..runtime.scope import AUTO, Boundaries, PathRules
from ..session.command_files import named_paths
from ..session.config import Config

# The configuration keys whose commands name the files that define success.
COMMAND_KEYS = ("command", "metric_command", "checks_command")


def named_now(repo: Repo, cfg: Config, given: Mapping[str, Any]) -> set[str]:
    """The paths (relative to the top) that the commands given this time name (``given``:
    the keys given, by options or a ``--config`` file), as the configuration ``cfg`` holds
    them, whether or not such a file exists."""
    found: set[str] = set()
    for key in COMMAND_KEYS:
        command = getattr(cfg, key)
        if given.get(key) is not None and command:
            found.update(named_paths(repo, command))
    return found


def segment_paths(repo: Repo, cfg: Config, given: Mapping[str, Any], commit_rules: list[str],
                  changed: list[str], bounds: Boundaries) -> list[str]:
    """Of the ``changed`` paths of the work tree (tracked changes and untracked files), those
    a new segment commits (see the module): named by the commands given this time, under the
    ``readonly`` rules given this time (``given["readonly"]``, rules relative to the top), or
    under ``commit_rules`` (``--commit-path``); never a protected path or one under
    ``.auto/``. Raises :class:`UsageError` for a ``--commit-path`` rule that matches no
    changed path (a typo would commit nothing and say nothing). Paths in sorted order."""
    named = named_now(repo, cfg, given)
    readonly = PathRules(given.get("readonly") or [])
    chosen = PathRules(commit_rules)
    for rule in commit_rules:
        if not any(PathRules([rule]).matches(p) for p in changed):
            raise UsageError(f"--commit-path {rule} matches no changed file of the work tree "
                             "(a new or edited file to commit with the new segment)")
    return sorted(p for p in changed if not bounds.is_protected(p) and p.split("/")[0] != AUTO
                  and (p in named or readonly.matches(p) or chosen.matches(p)))


def commit_segment_files(repo: Repo, cfg: Config, head: str, paths: list[str],
                         segment: int) -> str:
    """Commit exactly ``paths`` as they are in the work tree on top of ``head`` (HEAD), as
    the segment commit of segment number ``segment``; returns the commit (full object id).
    Raises :class:`Refused` when git refuses the commit (a hook, HEAD moved meanwhile) or a
    commit hook added another path: HEAD is then where it was, and ``paths`` are unstaged
    again (their changes stay in the work tree)."""
    allowed = set(paths)
    try:
        repo.add_paths(paths)
        commit = commit_index(repo, head=head, head_tree=None,
                              message=segment_message(segment, cfg.session_id, paths),
                              trailers=segment_trailers(segment, cfg.session_id),
                              allowed=allowed.__contains__)
    except (Refused, GitError) as exc:
        repo.unstage(paths)
        raise Refused(f"{exc.message}; the files of the new segment stay uncommitted in the "
                      "work tree, and no segment was started") from None
    if commit is None:  # staged as HEAD holds them: a file changed back meanwhile
        raise Refused(f"{', '.join(paths[:5])} changed back to HEAD's while the new segment "
                      "began: nothing to commit, and no segment was started; run git "
                      "autoresearch start --new-segment again")
    return commit
