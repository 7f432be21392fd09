"""worker add, worker list, worker remove: several agents at once on one session."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .common import CONTEXT, WholeRange, bare_group, emit_json, json_option, warn

if TYPE_CHECKING:
    from ..history.queue import Candidate


@click.group("worker", context_settings=CONTEXT,
             short_help="several agents: worktrees and clones sharing a session",
             invoke_without_command=True)
@click.pass_context
def worker_cmd(ctx: click.Context) -> None:
    """Workers: linked worktrees of the session, one agent in each, sharing its ledger."""
    bare_group(ctx)


@worker_cmd.command("add", context_settings=CONTEXT,
                    short_help="add workers: linked worktrees of the session")
@click.argument("count", type=WholeRange(1, 64), required=False)
@click.option("--name", "names", multiple=True, metavar="NAME",
              help="Name the worker (repeatable; instead of w1, w2, ...).")
@click.option("--path", "folder", type=click.Path(file_okay=False, path_type=Path),
              help="The folder to put the worktrees in (default: <work tree>.workers beside "
                   "the work tree).")
@json_option
def worker_add_cmd(count: int | None, names: tuple[str, ...], folder: Path | None,
                   as_json: bool) -> None:
    """Add COUNT workers (default 1), each a worktree on its own branch at the incumbent."""
    from ..runtime.errors import UsageError
    from ..session.session import Session
    from ..workers.pool import add

    if count is not None and names:
        raise UsageError("give COUNT or --name, not both (--name makes one worker each)")

    session = Session.open()
    _check_home(session)
    made = add(session, len(names) or count or 1, folder, list(names) or None)
    if as_json:
        emit_json("workers", {"workers": [w.to_json() for w in made]})
        return
    for w in made:
        click.echo(f"worker {w.name}: {w.path} (branch {w.branch})")
    click.echo("an agent works in each: cd there and use the usual commands (git autoresearch "
               "run ...)")


def _check_home(session: object) -> None:
    """Refuse a main work tree off both the session branch and its worker branch."""
    from ..history.refs import session_branch, worker_branch
    from ..runtime.errors import Refused
    from ..session.session import Session

    assert isinstance(session, Session)
    sid = session.config.session_id
    branch = session.repo.branch_at_discovery
    if branch not in (session_branch(sid), worker_branch(sid, "main")) \
            and session.worker is None:
        raise Refused(f"the work tree is not on the session branch {session_branch(sid)}: "
                      f"git switch {session_branch(sid)}")


@worker_cmd.command("list", context_settings=CONTEXT,
                    short_help="where each worker is, and its last run")
@json_option
def worker_list_cmd(as_json: bool) -> None:
    """Show the workers: where each is, whether it is behind the incumbent, its last run."""
    from ..session.session import Session
    from ..workers.pool import listing

    session = Session.open()
    found = listing(session)
    if as_json:
        emit_json("workers", {"workers": [w.to_json() for w in found]})
        return
    if not found:
        click.echo("no workers (git autoresearch worker add N)")
        return
    from ..review.report import one_line

    width = max(len(w.name) for w in found)
    for w in found:
        last = w.last_run
        what = (f"last run {last['run']} {last['status']}: {one_line(last['description'])}"
                if last else "no run yet")
        if w.measuring is not None:
            what = f"measuring run {w.measuring}; " + what
        where = str(w.path) if w.path else ("(another clone)" if w.elsewhere
                                            else "(folder gone)")
        behind = " behind the incumbent" if w.behind else ""
        click.echo(f"{w.name:<{width}}  {w.commit or '-':<8} {where}{behind}  {what}")


@worker_cmd.command("remove", context_settings=CONTEXT,
                    short_help="remove workers, never losing their work")
@click.argument("names", metavar="NAME...", nargs=-1, required=True)
@click.option("--force", is_flag=True,
              help="Remove a worker with unrecorded changes too (saved on a ref first).")
@json_option
def worker_remove_cmd(names: tuple[str, ...], force: bool, as_json: bool) -> None:
    """Remove workers: their worktrees and branches (their runs and attempts stay). Each name
    is checked before any is removed."""
    from ..session.session import Session
    from ..workers.pool import check_removable, remove

    session = Session.open()
    for name in names:
        check_removable(session, name, force=force)
    said = [remove(session, name, force=force, checked=True) for name in names]
    if as_json:
        emit_json("worker-remove", {"removed": list(names), "said": said,
                                    "warnings": session.warnings})
        return
    for line in said:
        click.echo(line)
    for message in session.warnings:
        warn(message)


@worker_cmd.command("join", context_settings=CONTEXT,
                    short_help="join the session through a remote, as a worker")
@click.argument("remote")
@click.argument("session_id", metavar="SESSION")
@click.option("--name", metavar="NAME",
              help="This worker's name (default: the machine's short host name).")
@click.option("--measure-on-host", is_flag=True,
              help="Measure nothing here: run queues each candidate on REMOTE for a measuring "
                   "host (git autoresearch measurer) and waits for its verdict.")
@json_option
def worker_join_cmd(remote: str, session_id: str, name: str | None, measure_on_host: bool,
                    as_json: bool) -> None:
    """Join session SESSION, shared through REMOTE, from this clone: a worker on another
    machine. Its keeps land on REMOTE by a push with a lease, its runs travel as its own
    ledger ref. Run it in the clone that started the session too: that sends the session."""
    from ..runtime.errors import UsageError
    from ..session.config import SESSION_ID_RE
    from ..workers.join import join

    if not SESSION_ID_RE.match(session_id):
        raise UsageError(f"bad session id {session_id!r} (git autoresearch sessions lists them)")
    joined = join(None, remote, session_id, name, on_host=measure_on_host)
    if as_json:
        emit_json("worker-join", joined.to_json())
        return
    for note in joined.notes:
        click.echo(note)
    click.echo(f"worker {joined.worker} joined session {joined.session_id} through "
               f"{joined.remote}, on branch {joined.branch} at {joined.commit}; "
               + ("run queues each candidate for a measuring host (git autoresearch measurer, "
                  "in a clone joined without --measure-on-host) and waits for its verdict"
                  if measure_on_host else
                  "use the usual commands here (git autoresearch run ...)"))


@worker_cmd.command("sync", context_settings=CONTEXT,
                    short_help="fetch the incumbent and every worker's runs")
@json_option
def worker_sync_cmd(as_json: bool) -> None:
    """In a clone that joined a session (worker join): fetch the incumbent and every worker's
    runs from the remote now (run and measure do it before measuring)."""
    from ..history.refs import session_branch
    from ..runtime.errors import Refused
    from ..session.session import Session
    from ..workers.upstream import sync

    session = Session.open()
    if session.remote is None:
        raise Refused("this work tree did not join its session through a remote (git "
                      "autoresearch worker join REMOTE SESSION)")
    sync(session)
    tip = session.repo.resolve("refs/heads/" + session_branch(session.config.session_id))
    workers = sorted({str(r.data.get("worker")) for r in session.ledger.runs
                      if r.data.get("worker")})
    if as_json:
        emit_json("worker-sync", {"remote": session.remote, "incumbent": tip,
                   "runs": len(session.ledger.runs), "workers": workers})
        return
    click.echo(f"fetched from {session.remote}: incumbent {session.repo.short(tip or '')}, "
               f"{len(session.ledger.runs)} run(s) by {', '.join(workers) or 'no worker'}")


@click.command("measurer", context_settings=CONTEXT,
               short_help="measure the candidates agents queued on the session's remote")
@click.option("--drain", is_flag=True,
              help="Stop once no queued candidate is left to take (a CI job, a batch job); "
                   "without it, wait for more until stopped.")
@click.option("--poll", type=click.FloatRange(min=0.1), default=2.0, show_default=True,
              metavar="SECONDS", help="How long to wait between looks at an empty queue.")
@click.option("--stale-after", type=click.FloatRange(min=1), default=3600.0, show_default=True,
              metavar="SECONDS",
              help="Take over a candidate another host took this long ago (a host that died "
                   "while measuring).")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON document on one line for each candidate answered, as it is "
                   "answered (git-autoresearch:answered/1), instead of a line of text.")
def measurer_cmd(drain: bool, poll: float, stale_after: float, as_json: bool) -> None:
    """Measure, on this machine, the candidates that agents queued on the session's remote:
    each taken by this host alone, measured against the incumbent here, kept on the remote by
    compare-and-swap or reverted, recorded, and answered with its run's record. Run it in a
    clone joined to the session (worker join), on the quiet machine."""
    import time

    from ..session.branches import open_on_branch
    from ..workers.measurer import serve

    session = open_on_branch()
    session.check_recordable()
    taken_at = 0.0

    def report(candidate: Candidate, what: str, record: dict[str, Any] | None) -> None:
        nonlocal taken_at
        key, agent = candidate.key, candidate.agent
        if what == "taken":
            taken_at = time.time()
            click.echo(f"candidate {key} from {agent}: taken", err=True)
        elif what == "lost":
            warn(f"candidate {key}: another host took it over before the verdict was sent; "
                 "its verdict stands")
        if as_json:
            if what in ("answered", "lost") and record is not None:
                emit_json("answered", {"key": key, "agent": agent, "host": session.worker_name,
                                       "taken_at": round(taken_at, 3),
                                       "answered_at": round(time.time(), 3),
                                       "sent": what == "answered", "verdict": record},
                          interruptible=False, one_line=True)
        elif what == "conflict" and record is not None:
            click.echo(f"candidate {key} from {agent}: refused: {record.get('refused')}")
        elif what == "measured" and record is not None:
            click.echo(f"candidate {key} from {agent}: run {record.get('run')} "
                       f"{record.get('status')}, {session.config.metric_name} = "
                       f"{record.get('metric')}")

    served = serve(session, session.worker_name, drain=drain, poll=poll,
                   stale_after=stale_after, report=report, warn=warn)
    if drain:
        click.echo(f"the queue is empty: {len(served.answered)} candidate(s) answered",
                   err=as_json)
