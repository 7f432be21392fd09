"""resume, doctor, hooks, import, demo: keeping a session in order (the ideas backlog is
:mod:`.ideas`'s)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..runtime.errors import EXIT_REFUSED, Refused, UsageError
from .common import (
    CONTEXT,
    bare_group,
    emit_json,
    json_option,
    number,
    warn,
)
from .ideas import mirror_session, session_lock

if TYPE_CHECKING:
    pass


@click.command("resume", context_settings=CONTEXT,
               short_help="check and repair the session, and carry on")
@click.option("--session-id", help="The session to resume when it cannot be told from the "
                                   "work tree (several state refs, no .auto/).")
@json_option
def resume_cmd(session_id: str | None, as_json: bool) -> None:
    """Check and repair the session, then say where the loop stands: restore lost session files
    from the state ref, set malformed ledger lines aside, check the configuration, check out the
    session branch, finish or roll back an interrupted keep or revert."""
    from ..lifecycle.resume import resume
    from ..review.status import resumed

    found = resumed(resume(session_id))
    if as_json:
        emit_json("resume", found.to_json())
        return
    for action in found.actions:
        click.echo(f"- {action}")
    if found.finished and found.finished.steer:
        click.echo("==== after steer (the run finished above) ====")
        click.echo(found.finished.steer)
        click.echo("==== end of steer ====")
    seg = found.segment
    best, last = seg["best"], seg["last"]
    click.echo(f"session {found.session_id}, segment {seg['index']}: {seg['runs']} "
               f"run(s), {seg['kept']} kept; next run {found.next_run}")
    if best:
        click.echo(f"best {number(best['metric'])} (run {best['run']}, commit {best['commit']})")
    if last:
        click.echo(f"last run {last['run']}: {last['status']}")
    if found.stop_pending:
        click.echo("STOP is pending: the next run exits 4")
    if found.limit_reached:
        click.echo("max_experiments is reached: the next run exits 4")
    if found.time_left == 0:
        click.echo("max_duration is spent: the next run exits 4")
    if found.stop_rule not in (None, "max_experiments", "max_duration"):  # (said above)
        click.echo(f"{found.stop_reason}: the next run exits 4")
    for w in found.warnings:
        warn(w)


@click.command("doctor", context_settings=CONTEXT,
               short_help="check the ledger against git, and repair it")
@click.option("--fix", is_flag=True, help="Rebuild what can be rebuilt (never deletes a record).")
@json_option
def doctor_cmd(fix: bool, as_json: bool) -> None:
    """Reconcile the ledger, the trailers on the branch, the attempt and scope refs and the
    state ref. Exits 3 when a problem is left that it did not fix; with --json its document
    then lists the findings (the error document is for a doctor that could not look).

    Each finding names what clears it: --fix restores a lost or damaged ledger line from the
    state ref (its tip, or an earlier state commit when the loss was mirrored since), rebuilds
    one from an attempt commit or a keep's trailers when an intent record vouches for it, sets
    malformed lines aside, finishes or rolls back an interrupted keep or revert, and mirrors
    the state ref again. Named for a person: git's lock files left behind (rm them once no git
    process runs), processes an earlier measurement left running (kill them), a session
    folder that is a symbolic link (move it back), commits with our trailers that no keep of
    the tool made, and set-asides no run names."""
    from ..lifecycle.doctor import examine, render
    from ..session.session import Session

    session = Session.open(check_config=False)
    exam = examine(session, fix=fix)
    found = render(exam)
    left = [f for f in found if not f["fixed"]]
    # Why a fix did not take (the state ref could not be written: a full disk, say).
    why = list(dict.fromkeys(session.warnings + exam.warnings))
    # Records read otherwise than they say (as pi-autoresearch reads them): told, not fixed.
    notices = session.ledger.notices(session.layout.ledger) + exam.notes
    if as_json:
        emit_json("doctor", {"findings": found, "fix": fix, "warnings": why, "notices": notices,
                   "finished": exam.finished})
    else:
        for note in notices:
            warn(note)
        if exam.finished:
            click.echo(exam.finished)
        if not found:
            click.echo("no problems found")
        for item in found:
            mark = "fixed" if item["fixed"] else (
                "not fixed: see the warning below" if fix and item["fix"] and why else
                "fixable with --fix" if item["fix"] else "needs a person")
            click.echo(f"- {item['problem']} [{mark}]"
                       + (f": {item['done']}" if item.get("done") else ""))
        for message in why:
            warn(message)
    if left:
        raise click.exceptions.Exit(EXIT_REFUSED)


@click.group("hooks", context_settings=CONTEXT,
             short_help="list and install the example hooks",
             invoke_without_command=True)
@click.pass_context
def hooks_cmd(ctx: click.Context) -> None:
    """The example hooks shipped with git-autoresearch: list them, install them."""
    bare_group(ctx)


def _needs_note(needs: str | None) -> str:
    return f"needs {needs}; until then it does nothing" if needs else ""


@hooks_cmd.command("list", context_settings=CONTEXT, short_help="list the example hooks")
@json_option
def hooks_list_cmd(as_json: bool) -> None:
    """Show the example hooks with a one-line description each, and the setting a hook needs."""
    from ..hooks.user import examples

    found = examples()
    if as_json:
        emit_json("hooks-list", {"hooks": [{"name": e.name, "stage": e.stage, "summary": e.summary,
                                         "needs": e.needs} for e in found]})
        return
    width = max(len(e.name) for e in found)
    for e in found:
        click.echo(f"{e.stage:<6}  {e.name:<{width}}  {e.summary}")
        if e.needs:
            click.echo(f"{'':<6}  {'':<{width}}  ({_needs_note(e.needs)})")


@hooks_cmd.command("install", context_settings=CONTEXT,
                   short_help="install example hooks into .auto/hooks/")
@click.argument("names", metavar="NAME...", nargs=-1)
@click.option("--all", "every", is_flag=True, help="Install every example hook.")
@click.option("--force", is_flag=True, help="Replace installed hooks of the same names.")
@json_option
def hooks_install_cmd(names: tuple[str, ...], every: bool, force: bool, as_json: bool) -> None:
    """Copy example hooks, those named or --all, into .auto/hooks/<stage>.d/, executable. An
    unknown name, or one already installed (without --force), installs none of them; a hook
    that needs a setting says which, and does nothing until it is set."""
    from ..hooks.user import install_all, pick
    from ..session.layout import Layout

    if every and names:
        raise UsageError("give hook names or --all, not both")
    if not every and not names:
        raise UsageError("name the hooks to install (see git autoresearch hooks list), or "
                         "pass --all")
    picked = pick(list(names), every=every)
    layout = Layout.discover()
    if not layout.config_exists():
        raise Refused(f"no session here (no .auto/config.toml): {layout.missing_hint()}")
    with session_lock(layout, "hooks install"):
        targets = install_all(picked, layout.hooks, force=force)
        mirror_session(f"hooks install {' '.join(e.name for e in picked)}")
    rels = [str(t.relative_to(layout.home)) for t in targets]
    if as_json:
        emit_json("hooks-install", {"installed": [{"name": e.name, "stage": e.stage, "path": rel,
                                  "needs": e.needs} for e, rel in zip(picked, rels, strict=True)]})
        return
    for example, rel in zip(picked, rels, strict=True):
        click.echo(f"installed {rel}")
        if example.needs:
            click.echo(f"  {_needs_note(example.needs)}")


@click.command("import", context_settings=CONTEXT,
               short_help="read another tool's session into a ledger")
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the ledger here instead of .auto/log.jsonl.")
@click.option("--direction", type=click.Choice(["lower", "higher"]),
              help="Which way the metric of a results.tsv is better (karpathy's: lower; a loop "
                   "seed session's: its config.json's direction).")
@json_option
def import_cmd(source: Path, output: Path | None, direction: str | None,
               as_json: bool) -> None:
    """Read another tool's session into a ledger: a pi-autoresearch .auto/log.jsonl or
    autoresearch.jsonl, a karpathy/autoresearch results.tsv, or a loop seed .autoresearch/
    folder (or a repository holding one, or what log --tsv writes). log, status, analyze and
    dashboard then read it. A run's timestamp is its commit's time when the commit exists. A
    row read otherwise than its text shows (a tab in a description, a double quote that
    opens a field) is read as karpathy's analysis.ipynb reads it, with a warning."""
    from ..ledger import MAX_LINE_BYTES
    from ..lifecycle.importers import convert
    from ..runtime.atomic import write_atomic
    from ..session.layout import Layout, exclude_auto

    warnings: list[str] = []
    lines, what = convert(source, direction=direction, warnings=warnings)
    for index, line in enumerate(lines, start=1):
        size = len(line.encode("utf-8", "surrogateescape"))
        if size > MAX_LINE_BYTES:
            raise UsageError(f"{source}: record {index} would be a ledger line of {size} "
                             f"bytes, more than the {MAX_LINE_BYTES} a reader reads; nothing "
                             "was imported")
    data = "".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape")
    if output is None:
        layout = Layout.discover()
        with session_lock(layout, "import"):
            if layout.ledger.exists():
                raise Refused(f"{layout.ledger} exists already; name another file with "
                              "--output")
            layout.auto.mkdir(exist_ok=True)
            exclude_auto(layout.repo)
            output = layout.ledger
            write_atomic(output, data)
    elif output.exists():
        raise Refused(f"{output} exists already")
    else:
        write_atomic(output, data)
    for message in warnings:
        warn(message)
    runs = sum(1 for line in lines if '"type"' not in line.split(",", 1)[0])
    if as_json:
        emit_json("import", {"source": what, "output": str(output), "lines": len(lines),
                             "runs": runs, "warnings": warnings})
    else:
        click.echo(f"imported {what}: {len(lines)} lines ({runs} runs) into {output}")


@click.command("demo", context_settings=CONTEXT,
               short_help="a whole session on a bundled example project")
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--example", "example", metavar="NAME",
              help="Instead: copy the example NAME into DIRECTORY (default ./NAME) as a new git "
                   "repository, to start with its config.toml (--list-examples names them).")
@click.option("--list-examples", is_flag=True, help="Name the bundled examples and exit.")
def demo_cmd(directory: Path | None, example: str | None, list_examples: bool) -> None:
    """Copy the bundled example project into DIRECTORY (default: a new folder under the
    temporary folder, autoresearch-demo-*, left for you to look at) and run a whole session
    on it."""
    from ..lifecycle.demo import copy_example, example_names, run_demo

    if list_examples:
        for name in example_names():
            click.echo(name)
        return
    if example is not None:
        target = copy_example(example, directory)
        click.echo(f"example {example}: {target}")
        click.echo(f"next: cd {target} && git autoresearch start --config config.toml "
                   "(see its README.md)")
        return
    run_demo(directory, echo=click.echo)
