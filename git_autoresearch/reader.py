"""Open a session to read it (log, status, show, analyze, summary, dashboard, import): ours,
or one that is not: a pi-autoresearch ledger read in place, or the ``Result:`` trailers of the
current branch alone. Such sessions are ``read_only``; nothing here refuses what only a
recording command must refuse."""

from __future__ import annotations

import os
from pathlib import Path

from . import ledger as ledger_mod
from .config import SESSION_ID_RE, Config
from .errors import Refused
from .git import Repo
from .layout import Layout
from .ledger import Ledger
from .refs import BRANCH_PREFIX
from .session import Session


def open_for_reading(cwd: str | os.PathLike[str] | None = None) -> Session:
    """Open a session to read it, never refusing what only a recording command must refuse.

    Our session (an edited configuration or another branch is a warning here); else a
    pi-autoresearch session read in place (``.auto/log.jsonl`` without ``config.toml``, or
    the older flat ``autoresearch.jsonl``); else the kept runs of ``Result:`` trailers on
    the current branch. Such sessions are ``read_only``."""
    repo = Repo.discover(cwd)
    layout = Layout(repo)
    if layout.config.exists():
        session = Session.open(cwd, on_branch=False, check_config=False)
        try:
            session.check_config()
        except Refused as exc:
            if exc.message != session.invalid_config:  # said once already
                session.warnings.append(exc.message)
        return session
    from .state import sessions

    saved = sessions(repo)
    lost = (f"no .auto/config.toml, though a state ref holds a session: "
            f"{layout.missing_hint(saved)}") if saved else None
    for path in (layout.ledger, repo.top / "autoresearch.jsonl"):
        if path.is_file():
            book = ledger_mod.read(path)
            session = _foreign(repo, book, path)
            session.warnings += [lost] if lost else []
            return session
    from .trailers import ledger_from_trailers

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
