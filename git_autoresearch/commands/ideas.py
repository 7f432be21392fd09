"""ideas add, list, next, claim, release, done: the ideas backlog, .auto/ideas.md."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..runtime.errors import AutoresearchError, Refused, UsageError
from .common import (
    CONTEXT,
    WHOLE,
    bare_group,
    emit_json,
    json_option,
    warn,
)

if TYPE_CHECKING:
    from ..session.ideas import Idea
    from ..session.layout import Layout
    from ..session.lock import SessionLock
    from ..workers.claims import Board, Claim


def mirror_session(message: str) -> None:
    """Mirror the session files on the state ref after a change outside a run, if there is a
    session here."""
    from ..session.session import Session

    try:
        session = Session.open(check_config=False)
    except AutoresearchError:
        return
    try:
        session.check_config()
    except AutoresearchError as exc:
        # The state ref keeps the last good files, which resume brings back.
        warn(f"the state ref was not updated: {exc.message}")
        return
    for w in [*session.warnings, *session.mirror_state(message)]:
        warn(w)


@click.group("ideas", context_settings=CONTEXT,
             short_help="the ideas backlog: add, list, claim, mark done",
             invoke_without_command=True)
@click.pass_context
def ideas_cmd(ctx: click.Context) -> None:
    """The ideas backlog, .auto/ideas.md: Markdown list items, - idea or - [ ] idea."""
    bare_group(ctx)


def session_lock(layout: Layout, what: str) -> SessionLock:
    """The session lock, for a command that writes a session file outside a run."""
    from ..session.lock import SessionLock

    return SessionLock(layout.repo.scratch, what)


def _backlog() -> tuple[Layout, Path]:
    """The layout of this work tree and its ideas backlog (:func:`session.ideas.backlog_path`): that
    of a pi-autoresearch session found from here (:func:`session.layout.find_pi_session`) when the
    work tree has no session of ours."""
    from ..session.ideas import backlog_path
    from ..session.layout import Layout

    layout = Layout.discover()
    if not layout.config_exists():
        from ..session.for_reading import search_start
        from ..session.layout import find_pi_session

        found = find_pi_session(search_start(None, layout.repo.top), layout.repo.top)
        if found is not None:  # a pi-autoresearch session's own backlog
            layout = Layout(layout.repo, found.work_dir)
    return layout, backlog_path(layout)


def _read_backlog() -> list[Idea]:
    """The ideas of this work tree's backlog; a backlog with text but no idea is a warning."""
    from ..session.ideas import read_ideas, unread_warning

    layout, path = _backlog()
    ideas = read_ideas(path)
    problem = unread_warning(path, ideas, _shown(layout, path))
    if problem:
        warn(problem)
    return ideas


def _shown(layout: Layout, path: Path) -> str:
    """``path`` relative to the top of the work tree, as messages name session files."""
    try:
        return str(path.relative_to(layout.home))
    except ValueError:
        return str(path)


def _show_idea(idea: Idea, as_json: bool) -> None:
    if as_json:
        emit_json("idea", idea.to_json())
    else:
        click.echo(f"idea {idea.number}: {idea.text}")


@ideas_cmd.command("add", context_settings=CONTEXT, short_help="append an idea to the backlog")
@click.argument("text", nargs=-1, required=True)
@json_option
def ideas_add_cmd(text: tuple[str, ...], as_json: bool) -> None:
    """Add an open idea."""
    from ..session.ideas import add_idea

    layout, path = _backlog()
    with session_lock(layout, "ideas add"):
        idea = add_idea(path, " ".join(text))
        mirror_session("ideas add")
    _show_idea(idea, as_json)


@ideas_cmd.command("list", context_settings=CONTEXT, short_help="list the ideas")
@click.option("--all", "show_all", is_flag=True, help="Also the ideas already tried.")
@json_option
def ideas_list_cmd(show_all: bool, as_json: bool) -> None:
    """The open ideas (and those a hook offered), numbered: every list item of the backlog,
    - [ ] idea or a plain - idea (*, + or 1. too); an indented plain item is a detail of the
    one above it, and a struck-through ~~idea~~ was tried."""
    ideas = [i for i in _read_backlog() if show_all or i.state != "done"]
    found = _claims(ideas)[:2]
    if as_json:
        emit_json("ideas", {"ideas": [
            i.to_json() | ({"claim": found[1][i.number].to_json(found[0])}
                           if i.number in found[1] else {}) for i in ideas]})
        return
    marks = {"open": "[ ]", "taken": "[~]", "done": "[x]"}
    for idea in ideas:
        held = found[1].get(idea.number)
        claimed = f"  (claimed by {held.describe(found[0])})" if held else ""
        click.echo(f"{idea.number:>3} {marks[idea.state]} {idea.text}{claimed}")


@ideas_cmd.command("next", context_settings=CONTEXT, short_help="the first open idea")
@json_option
def ideas_next_cmd(as_json: bool) -> None:
    """The first open idea, else the first one a hook offered but nobody marked done, leaving
    out those another worker claims (exit 0 with nothing printed when there is none)."""
    from ..session.ideas import next_idea

    ideas = _read_backlog()
    timeout, claimed, me = _claims(ideas)
    found = next_idea([i for i in ideas if i.number not in claimed
                       or claimed[i.number].mine(me) or claimed[i.number].stale(timeout)])
    if as_json:
        emit_json("idea-next", {"idea": found.to_json() if found else None})
    elif found:
        click.echo(f"{found.number}: {found.text}")


def _claims(ideas: list[Idea]) -> tuple[float, dict[int, Claim], str]:
    """The claim timeout of this work tree's session, in seconds, the claim on each idea of
    ``ideas`` that has one, by number (none without a session of ours), and this worker's
    name."""
    from ..session.shared import MAIN, worker_name
    from ..workers.claims import of_ideas, read_claims

    found = _claim_session(required=False)
    if found is None:
        return 0.0, {}, MAIN
    return (found.timeout, of_ideas(read_claims(found.repo, found.session_id), ideas),
            worker_name(found.repo))


def _claim_session(required: bool = True) -> Board | None:
    """The claims of this work tree's session; None (``required``: :class:`Refused`) without
    a session of ours."""
    from ..session.layout import Layout
    from ..workers.claims import Board

    layout = Layout.discover()
    if not layout.config_exists():
        if required:
            raise Refused(f"claims need a session of git-autoresearch here: "
                          f"{_shown(layout, layout.config)} does not exist")
        return None
    return Board.of(layout)


@ideas_cmd.command("claim", context_settings=CONTEXT, short_help="take an idea for this worker")
@click.argument("number", type=WHOLE, required=False)
@click.option("--text", help="Claim this idea, by its text (added to the backlog when it is "
                             "not there yet).")
@json_option
def ideas_claim_cmd(number: int | None, text: str | None, as_json: bool) -> None:
    """Take idea NUMBER for this worker (default: the first idea not done that no other worker
    holds), so that no other worker tries it: a ref under refs/autoresearch/<id>/claims/,
    created by compare-and-swap. A claim lasts over as many runs as the idea takes and ends
    with ideas done, ideas release or worker remove, after claim_timeout (default 2h), or when
    its process or worktree is gone. Exit 3 when there is nothing left to claim, saying why."""
    from ..session.ideas import add_idea
    from ..workers.claims import claim, idea_key

    if number is not None and text is not None:
        raise UsageError("give an idea's NUMBER or --text, not both")
    board = _claim_session()
    assert board is not None
    layout, path = _backlog()
    ideas = _read_backlog()
    if text is not None:
        key = idea_key(text)
        same = next((i for i in ideas if idea_key(i.text) == key), None)
        if same is None:
            with session_lock(layout, "ideas claim"):
                same = add_idea(path, text)
                mirror_session("ideas claim")
            ideas = _read_backlog()
        number = same.number
    taken = claim(board.repo, board.session_id, ideas, timeout=board.timeout, number=number)
    if as_json:
        emit_json("idea-claim", taken.to_json(board.timeout))
        return
    if taken.replaced is not None:
        warn(f"took idea {taken.idea.number} over from {taken.replaced.describe(board.timeout)}")
    again = " (already yours)" if taken.again else ""
    click.echo(f"claimed idea {taken.idea.number}{again}: {taken.idea.text}")


@ideas_cmd.command("release", context_settings=CONTEXT, short_help="give a claimed idea back")
@click.argument("number", type=WHOLE, required=False)
@click.option("--force", is_flag=True, help="Release another worker's live claim too.")
@json_option
def ideas_release_cmd(number: int | None, force: bool, as_json: bool) -> None:
    """Release the claim on idea NUMBER (default: every claim of this worker), so that any
    worker may take it. Another worker's claim that still holds is refused (exit 3) unless
    --force."""
    from ..session.shared import worker_name
    from ..workers.claims import idea_key, read_claims, release

    board = _claim_session()
    assert board is not None
    me = worker_name(board.repo)
    claims = read_claims(board.repo, board.session_id)
    if number is None:
        chosen = [c for c in claims.values() if c.mine(me)]
    else:
        ideas = _read_backlog()
        idea = next((i for i in ideas if i.number == number), None)
        if idea is None:
            raise UsageError(f"no idea {number} (there are {len(ideas)})")
        held = claims.get(idea_key(idea.text))
        if held is None:
            raise Refused(f"idea {number} is not claimed")
        if not (held.mine(me) or force or held.stale(board.timeout)):
            raise Refused(f"idea {number} is claimed by {held.describe(board.timeout)}, "
                          "not by this worker; --force releases it anyway")
        chosen = [held]
    released = [c for c in chosen if release(board.repo, c)]
    if number is not None and not released:
        raise Refused(f"the claim on idea {number} changed meanwhile (taken over or "
                      "released by another worker); nothing was released")
    if as_json:
        emit_json("idea-release", {"released": [{"key": c.key, "idea": c.idea, "text": c.text,
                                               **c.to_json(board.timeout)}
                                              for c in released]})
        return
    for c in released:
        click.echo(f"released idea {c.idea}: {c.text}" if c.idea else f"released {c.text}")


@ideas_cmd.command("done", context_settings=CONTEXT, short_help="mark an idea tried")
@click.argument("number", type=WHOLE)
@click.option("--run", "run_number", type=WHOLE,
              help="The run that tried it: its status and metric are noted.")
@click.option("--note", help="Free text to note instead of (or after) the run.")
@json_option
def ideas_done_cmd(number: int, run_number: int | None, note: str | None,
                   as_json: bool) -> None:
    """Mark idea NUMBER as tried: - [x] ~~idea~~ → run N, status, metric."""
    from ..session.ideas import mark_done, tried_note

    run = None
    if run_number is not None:
        from ..session.for_reading import open_for_reading

        run = open_for_reading().ledger.find(run_number)
        if run is None:
            raise UsageError(f"no run {run_number} in the ledger")
    layout, path = _backlog()
    with session_lock(layout, "ideas done"):
        idea = mark_done(path, number, tried_note(run, note))
        mirror_session("ideas done")
    _release_idea(idea.text)
    _show_idea(idea, as_json)


def _release_idea(text: str) -> None:
    """The idea was tried: whoever claimed it lets go (nothing without a session)."""
    from ..workers.claims import idea_key, read_claims, release

    board = _claim_session(required=False)
    if board is None:
        return
    held = read_claims(board.repo, board.session_id).get(idea_key(text))
    if held is not None:
        release(board.repo, held)
