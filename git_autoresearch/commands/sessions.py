"""sessions, gc, push, pull: every session of the repository, cleaning up finished ones, and
sharing a session through a git remote."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .common import CONTEXT, complete_sessions, emit_json, json_option, number, warn

if TYPE_CHECKING:
    from ..workers.push_pull import Shared
    from ..workers.sessions import SessionInfo


@click.command("sessions", context_settings=CONTEXT, short_help="every session of the repository")
@json_option
def sessions_cmd(as_json: bool) -> None:
    """Every session of the repository (session branches, refs/autoresearch/*/state, .auto/):
    id, goal, metric, runs, best and gain, state (running, stopped, merged, finalized) and
    last activity."""
    from ..workers.sessions import all_sessions

    found = all_sessions()
    if as_json:
        emit_json("sessions", {"sessions": [info.to_json() for info in found]})
        return
    if not found:
        click.echo("no sessions in this repository")
        return
    for info in found:
        click.echo(_session_line(info))


def _session_line(info: SessionInfo) -> str:
    """``s1  running  12 runs, 3 kept  best 95 ms (-5.00%)  2026-11-29T12:00:00Z  goal``."""
    from ..workers.sessions import iso

    unit = f" {info.unit}" if info.unit else ""
    best = "-" if info.best is None else f"{number(info.best)}{unit}"
    gain = "" if info.gain_pct is None else f" ({info.gain_pct:+.2f}%)"
    runs = f"{info.runs} run{'' if info.runs == 1 else 's'}, {info.kept} kept"
    return (f"{info.id}  {info.state}  {runs}  {info.metric or 'metric'} best {best}{gain}  "
            f"{iso(info.last_activity) or '-'}  {info.goal or '(no goal recorded)'}")


@click.command("gc", context_settings=CONTEXT,
               short_help="delete the attempt refs of finished sessions")
@click.argument("session", required=False, shell_complete=complete_sessions)
@click.option("--older-than", "older_than", type=click.FloatRange(min=0), metavar="DAYS",
              help="Also collect sessions not running whose last activity is older than DAYS.")
@click.option("--dry-run", is_flag=True, help="Print what would be deleted; delete nothing.")
@click.option("--force", is_flag=True,
              help="Collect the session(s) whatever their state, a running one included.")
@json_option
def gc_cmd(session: str | None, older_than: float | None, dry_run: bool, force: bool,
           as_json: bool) -> None:
    """Delete the attempt, scope and claim refs of finished sessions (merged or finalized, or,
    with --older-than, inactive that long); the branch and the state ref (the ledger) stay. A
    running session is left alone unless --force; a named SESSION that is not finished is
    refused (exit 3)."""
    from ..workers.sessions import gc

    done = gc(None, session, older_than_days=older_than, dry_run=dry_run,
              force=force)
    if as_json:
        emit_json("gc", done.to_json())
        return
    verb = "would delete" if dry_run else "deleted"
    for sid, refs in done.deleted.items():
        click.echo(f"{sid}: {verb} {len(refs)} ref(s)")
        for ref in refs:
            click.echo(f"  {ref} ({'at' if dry_run else 'was'} {done.was[ref][:7]})")
    for sid, why in done.skipped.items():
        click.echo(f"{sid}: left alone: {why}")
    if not done.deleted:
        click.echo("nothing to delete")
    elif not dry_run:
        click.echo("(a deleted ref's commit stays in the repository until git prunes it, two "
                   "weeks by default: git restore --source=COMMIT -- ':(top,literal)PATH' "
                   "brings a file back from it)")
    for w in done.warnings:
        warn(w)


@click.command("push", context_settings=CONTEXT, short_help="send a session to a remote")
@click.argument("remote", required=False)
@click.argument("session", required=False, shell_complete=complete_sessions)
@json_option
def push_cmd(remote: str | None, session: str | None, as_json: bool) -> None:
    """Send SESSION (default: this work tree's): its branch, its attempt and scope refs and its
    state ref (the ledger and session files) to REMOTE (default: origin, or the only remote),
    all or nothing. Refused (exit 3), nothing pushed, when the remote holds a newer state: each
    ref moves only from the value read there (git push --atomic --force-with-lease)."""
    from ..workers.push_pull import push

    _report(push(None, remote, session), "pushed to", as_json)


@click.command("pull", context_settings=CONTEXT, short_help="fetch a session from a remote")
@click.argument("remote", required=False)
@click.argument("session", required=False, shell_complete=complete_sessions)
@json_option
def pull_cmd(remote: str | None, session: str | None, as_json: bool) -> None:
    """Fetch SESSION (default: this work tree's, else the remote's only one) from REMOTE
    (default: origin, or the only remote): its branch, attempt, scope and state refs, moved only
    forward, then its session files into .auto/ when this work tree has none, so that log,
    status, show and dashboard read it and resume carries it on. Refused (exit 3), nothing
    changed, when the session diverged."""
    from ..workers.push_pull import pull

    _report(pull(None, remote, session), "pulled from", as_json)


def _report(shared: Shared, verb: str, as_json: bool) -> None:
    if as_json:
        emit_json("transfer", shared.to_json())
        return
    if not shared.moved:
        click.echo(f"session {shared.session}: up to date with {shared.remote}")
    else:
        click.echo(f"session {shared.session}: {verb} {shared.remote}: {len(shared.moved)} "
                   "ref(s)")
        for moved in shared.moved:
            old = moved.old[:7] if moved.old else "(new)"
            click.echo(f"  {moved.ref}  {old} -> {moved.new[:7]}")
    for ref in shared.ahead:
        click.echo(f"  {ref} is newer here (left as it is)")
    for action in shared.restored:
        click.echo(f"- {action}")
    for note in shared.notes:
        warn(note)
