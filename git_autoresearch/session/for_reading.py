"""Open a session to read it (log, status, show, analyze, summary, dashboard, import): ours,
or one that is not: a pi-autoresearch ledger read in place, or the ``Result:`` trailers of the
current branch alone. Such sessions are ``read_only``; nothing here refuses what only a
recording command must refuse."""

from __future__ import annotations

import os
from pathlib import Path

from .. import ledger as ledger_mod
from ..git import Repo, current_folder
from ..history.refs import BRANCH_PREFIX
from ..ledger import Ledger
from ..runtime.errors import Refused
from .config import SESSION_ID_RE, Config
from .layout import Layout, find_pi_session
from .session import Session


def open_for_reading(cwd: str | os.PathLike[str] | None = None) -> Session:
    """Open a session to read it, never refusing what only a recording command must refuse.

    Our session (an edited configuration or another branch is a warning here); else a
    pi-autoresearch session read in place, found as pi finds it from ``cwd`` or a folder above
    it up to the top of the work tree, through its ``.auto/config.json`` ``workingDir``
    (:func:`session.layout.find_pi_session`; ``.auto/log.jsonl`` without ``config.toml``, or the
    older flat ``autoresearch.jsonl``), its ``maxIterations`` the limit, counted as pi counts
    it (the baseline included); else the kept runs of ``Result:`` trailers on the current
    branch. Such sessions are ``read_only``."""
    repo = Repo.discover(cwd)
    layout = Layout(repo)
    if layout.config_exists():
        session = Session.open(cwd, check_config=False)
        session.reads_others = True  # read again (the dashboard), the others' runs stay
        if session.remote is None:  # the runs of clones that joined, when their refs are here
            from ..history.remote_ledger import foreign_ledgers, merged

            others = foreign_ledgers(repo, session.config.session_id, session.worker_name)
            if others:
                session.ledger = ledger_mod.parse(merged(ledger_mod.read_bytes(layout.ledger),
                                                         others))
        try:
            session.check_config()
        except Refused as exc:
            if exc.message != session.invalid_config:  # said once already
                session.warnings.append(exc.message)
        return session
    from ..history.state_ref import sessions

    saved = sessions(repo)
    lost = (f"no .auto/config.toml, though a state ref holds a session: "
            f"{layout.missing_hint(saved)}") if saved else None
    found = find_pi_session(search_start(cwd, repo.top), repo.top)
    if found is not None:
        book = ledger_mod.read(found.ledger)
        session = _foreign(repo, book, found.ledger)
        session.layout = Layout(repo, found.work_dir)
        if found.max_iterations is not None:
            session.config.max_experiments = found.max_iterations
            session.limit_counts_baseline = True
        session.warnings += found.warnings + ([lost] if lost else [])
        return session
    from ..history.trailers import ledger_from_trailers

    branch = repo.current_branch() or "HEAD"
    book = ledger_from_trailers(repo, branch)
    if not book.runs:
        raise Refused("no session here: no .auto/config.toml, no ledger, and no Result: "
                      f"trailers on {branch}" + (f"; {layout.missing_hint(saved)}"
                                                 if saved or layout.start_intent.exists()
                                                 else ""))
    session = _foreign(repo, book, None)
    session.trailer_branch = branch
    session.warnings.append(f"read from the Result: trailers on {branch} alone; the "
                            "direction is unknown and taken as lower-is-better")
    session.warnings += [lost] if lost else []
    return session


def search_start(cwd: str | os.PathLike[str] | None, top: Path) -> Path:
    """The folder a search for a pi-autoresearch session starts from: ``cwd`` (the current
    directory when None), or ``top`` when it is not inside the work tree."""
    where = Path(os.path.abspath(cwd if cwd is not None else current_folder()))
    for candidate in (where, where.resolve()):
        if candidate == top or top in candidate.parents:
            return candidate
    return top


def _foreign(repo: Repo, book: Ledger, path: Path | None) -> Session:
    header = book.config_header or {}
    branch = repo.branch_at_discovery or ""
    sid = str(header.get("session_id") or branch.removeprefix(BRANCH_PREFIX) or "session")
    if not SESSION_ID_RE.match(sid):
        sid = "session"
    cfg = Config(goal=str(header.get("name") or "(unnamed session)"),
                 command="(read only)",
                 metric_name=str(header.get("metricName") or "metric"),
                 metric_unit=str(header.get("metricUnit") or ""),
                 direction="higher" if header.get("bestDirection") == "higher" else "lower",
                 session_id=sid)
    session = Session(repo, cfg, b"", book)
    session.read_only = True
    if path is not None:
        session.ledger_path = path
    return session
