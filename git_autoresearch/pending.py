"""Measure the work tree as it is, and keep the result pending until a run is recorded.

Before measuring, changes outside the scope and changes to readonly paths (what defines
success) are saved under ``refs/autoresearch/<id>/scope/<run>`` and put back to HEAD, so that
they are never measured; the result lists them apart (``scope_violations``,
``readonly_violations``, ``scope_ref``). The result is kept in ``pending.json`` in the scratch
folder (the :class:`~git_autoresearch.measure.Measurement` fields plus ``config_hash``), with a
fingerprint of the experiment's files, for the ``keep`` or ``discard`` that records it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os

from . import journal, signals
from .config import file_hash
from .errors import Refused
from .experiment import Changes, moved_out, revert, revert_targets, scope_violations
from .files import WriteFailed, write_atomic
from .git import DiskFull, GitError, Repo
from .measure import Measurement, Progress, command_environment
from .measure import measure as run_measurement
from .refs import scope_prefix
from .session import Session
from .trailers import set_aside_message


def measure(session: Session, progress: Progress | None = None, *, pending: bool = True,
            baseline: bool = False) -> Measurement:
    """Run the experiment (``measure.measure``) on the work tree with what is outside the scope
    or readonly set aside first, and, with ``pending``, keep the result for keep or discard.

    Refuses (exit 3) a segment without a baseline (unless measuring it: ``baseline``), a
    scratch folder or ledger that cannot be written, and a result that cannot be kept (a full
    disk), saying what was set aside."""
    if not baseline:
        session.check_baseline()
    if pending:
        session.preflight()
    number = session.next_run()
    violations, scope_ref = _set_aside(session, number, session.changes())
    env = command_environment({
        "AUTORESEARCH_SESSION": session.config.session_id,
        "AUTORESEARCH_RUN": str(number),
        "AUTORESEARCH_RUN_LOG": str(session.layout.run_log),
    })
    try:
        result = run_measurement(session.config, top=session.repo.top,
                                 log_path=session.layout.run_log, env=env, progress=progress)
    except OSError as exc:  # the run log: a full or read-only disk
        raise _not_measured(f"cannot write {session.layout.run_log}: "
                            f"{exc.strerror or exc.__class__.__name__}", scope_ref) from None
    bounds = session.bounds
    result = dataclasses.replace(
        result, head=session.head(), scope_ref=scope_ref,
        readonly_violations=[p for p in violations if bounds.is_readonly(p)],
        scope_violations=[p for p in violations if not bounds.is_readonly(p)])
    if pending:
        result = _keep_pending(session, result)
    return result


def _set_aside(session: Session, number: int, changes: Changes) -> tuple[list[str], str | None]:
    """Save the changes outside the scope or to readonly paths at a free ``scope/<number>``
    ref and put them back to HEAD, journaled (a SIGKILL half-way is finished by the next
    command, as an interrupted revert is). Returns the paths and the ref (None: nothing)."""
    bounds = session.bounds
    violations = scope_violations(bounds, changes)
    if not violations:
        return [], None
    violations = sorted({*violations, *moved_out(session.repo, bounds, changes, violations)})
    scope_ref = free_ref(session.repo, f"{scope_prefix(session.config.session_id)}{number}")
    token = os.urandom(8).hex()
    created, tracked = revert_targets(bounds, changes, violations)
    aside = journal.Intent("set-aside", number, id=token, head=session.head(), ref=scope_ref,
                           created=created, tracked=tracked,
                           staged_preexisting=changes.staged_preexisting)
    path = session.layout.intent
    with signals.deferred():  # saved and reverted whole, or not at all
        journal.write(path, aside)
        try:
            revert(session.repo, bounds, changes, head=session.head(), ref=scope_ref,
                   only=violations, stage="set-aside",
                   message=set_aside_message(number, token, kept=False))
        except GitError as exc:
            raise journal.git_failure(session.repo, path, session.git_locks(), aside,
                                      exc) from None
        except Refused:
            journal.clear(path)
            raise
        journal.clear(path)
    return violations, scope_ref


def _keep_pending(session: Session, result: Measurement) -> Measurement:
    """``result`` with the fingerprint of the work tree, written to ``pending.json``."""
    try:
        result = dataclasses.replace(result, fingerprint=fingerprint(session, session.changes()))
        session.repo.scratch.mkdir(parents=True, exist_ok=True)
        data = result.to_dict()
        data["config_hash"] = file_hash(session.config_bytes)
        write_atomic(session.layout.pending, json.dumps(data, allow_nan=False).encode())
    except (WriteFailed, DiskFull) as exc:  # a benchmark that filled the disk, say
        raise _not_measured(exc.message, result.scope_ref) from None
    return result


def _not_measured(problem: str, scope_ref: str | None) -> Refused:
    """The refusal of a measurement whose result could not be written: ``problem``, then the
    state (nothing recorded, the experiment intact, what was set aside) and the way out."""
    aside = (f", and the changes outside the scope or to readonly files are saved at "
             f"{scope_ref}" if scope_ref else "")
    return Refused(f"{problem}; nothing was recorded, and the experiment is intact in the "
                   f"work tree{aside}: measure again once there is room")


def free_ref(repo: Repo, base: str) -> str:
    """``base``, or ``base.2``, ``base.3``, ...: the first that does not exist."""
    ref, n = base, 1
    while repo.resolve(ref):
        n += 1
        ref = f"{base}.{n}"
    return ref


def read(session: Session) -> Measurement | None:
    """The measurement taken since the last recorded run, if it is still valid (same
    configuration, same HEAD)."""
    try:
        data = json.loads(session.layout.pending.read_text())
    except (FileNotFoundError, ValueError):
        return None
    if data.get("config_hash") != file_hash(session.config_bytes):
        return None
    result = Measurement.from_dict(data)
    if result.head != session.head():
        return None
    return result


def fingerprint(session: Session, changes: Changes) -> dict[str, str]:
    """What the experiment's changes are now: path -> ``<mode in octal>:<sha256>``,
    ``commit:<id>`` for a submodule, ``deleted`` or ``unreadable``."""
    out = {}
    repo = session.repo
    for rel in changes.changed():
        if session.bounds.is_protected(rel):
            continue
        path = repo.top / rel
        if path.is_dir() and not path.is_symlink():  # a submodule: its commit
            out[rel] = f"commit:{repo.submodule_head(rel)}"
            continue
        try:
            st = path.lstat()
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            out[rel] = f"{st.st_mode:o}:{hashlib.sha256(data).hexdigest()}"
        except FileNotFoundError:
            out[rel] = "deleted"
        except OSError:
            out[rel] = "unreadable"
    return out


def changed_since(session: Session, result: Measurement, changes: Changes | None = None
                  ) -> list[str]:
    """The paths whose content or mode differ from when ``result`` was measured (none when it
    has no fingerprint), sorted; ``changes`` saves surveying the work tree again."""
    if result.fingerprint is None:
        return []
    now = fingerprint(session, session.changes() if changes is None else changes)
    return sorted(p for p in set(now) | set(result.fingerprint)
                  if now.get(p) != result.fingerprint.get(p))


def set_asides(session: Session, number: int) -> list[tuple[str, list[str]]]:
    """What the measurements of run ``number`` set aside: each ref ``scope/<number>``,
    ``scope/<number>.2``, ... that exists (the measurement kept, those taken again, a
    set-aside that failed or was killed), in that order, with the paths it changed from the
    commit it was taken on."""
    repo = session.repo
    prefix = scope_prefix(session.config.session_id)
    found = []
    for ref in repo.for_each_ref(prefix):
        head, _, rest = ref[len(prefix):].partition(".")
        if head == str(number) and (not rest or rest.isdigit()):
            found.append((int(rest or 1), ref))
    out = []
    for _, ref in sorted(found):
        parent = repo.resolve(f"{ref}^")
        out.append((ref, repo.changed_paths(parent, ref) if parent else []))
    return out
