"""skill, guard, schema, mcp: fitting the loop to a coding agent (a skill that teaches it the
commands, git hooks that refuse a commit made around the loop, the schemas of the JSON it
reads, the commands served as the tools of an MCP server)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..runtime.errors import Refused, UsageError
from .common import CONTEXT, emit_json, json_option

if TYPE_CHECKING:
    from ..hooks.guard import HookState


@click.command("skill", context_settings=CONTEXT, short_help="print or install the agent skill")
@click.option("--install", "harness", type=click.Choice(["claude", "codex", "pi", "generic"]),
              help="Write the skill where this agent reads it: claude .claude/skills/"
                   "git-autoresearch/SKILL.md, codex a section of AGENTS.md, pi .pi/skills/"
                   "git-autoresearch/SKILL.md, generic .agents/skills/git-autoresearch/"
                   "SKILL.md (all at the top of the repository).")
@click.option("--print", "show", is_flag=True,
              help="Print what --install would write, and write nothing (the default without "
                   "--install).")
@click.option("--force", is_flag=True, help="Replace a SKILL.md that is not ours.")
@json_option
def skill_cmd(harness: str | None, show: bool, force: bool, as_json: bool) -> None:
    """The agent skill: how to run the loop with these commands (what to call, the JSON to
    read, the exit codes, never committing by hand, what to read after a context reset)."""
    from ..hooks.skill import install, text_for

    text = text_for(harness or "generic")
    if harness is None or show:
        if as_json:
            emit_json("skill", {"harness": harness or "generic", "text": text})
        else:
            click.echo(text, nl=False)
        return
    done = install(harness, force=force)
    if as_json:
        emit_json("skill", {"harness": harness, "path": done.path, "action": done.action})
    else:
        click.echo(f"{done.action} {done.path}")


@click.group("guard", context_settings=CONTEXT,
             short_help="git hooks that refuse hand-made keeps on a session branch")
def guard_cmd() -> None:
    """Git hooks that refuse, on a session branch, a commit made by hand that carries a keep's
    trailers (Result:, Autoresearch-*) or changes the files that define success."""


def _show(states: list[HookState], as_json: bool) -> None:
    """Print the guard's hooks, one line each (or as JSON)."""
    if as_json:
        emit_json("guard", {"hooks": [s.to_json() for s in states]})
        return
    for s in states:
        line = f"{s.hook}: {'installed' if s.installed else 'not installed'} ({s.path})"
        if s.chained:
            line += f", then {s.chained}"
        click.echo(line)


@guard_cmd.command("install", context_settings=CONTEXT, short_help="install the guard's git hooks")
@json_option
def guard_install_cmd(as_json: bool) -> None:
    """Install the pre-commit and commit-msg hooks in git's hooks folder (core.hooksPath or
    .git/hooks); a hook already there is renamed <hook>.pre-autoresearch and run after."""
    from ..hooks.guard import install

    _show(install(), as_json)


@guard_cmd.command("uninstall", context_settings=CONTEXT, short_help="remove the guard's git hooks")
@json_option
def guard_uninstall_cmd(as_json: bool) -> None:
    """Remove the guard's hooks and put back the hooks they ran after them."""
    from ..hooks.guard import uninstall

    _show(uninstall(), as_json)


@guard_cmd.command("status", context_settings=CONTEXT,
                   short_help="say whether the guard is installed")
@json_option
def guard_status_cmd(as_json: bool) -> None:
    """Whether the guard's hooks are installed, and the hooks they chain to."""
    from ..hooks.guard import status

    _show(status(), as_json)


@guard_cmd.command("check", context_settings=CONTEXT,
                   short_help="check a commit, as the git hooks do")
@click.argument("hook", type=click.Choice(["pre-commit", "commit-msg"]))
@click.argument("args", nargs=-1)
def guard_check_cmd(hook: str, args: tuple[str, ...]) -> None:
    """What the guard's hooks run: exit 3 with the reason when the commit must be refused."""
    import os

    from ..hooks.guard import check_commit_msg, check_pre_commit

    if hook == "pre-commit":
        problem = check_pre_commit(os.environ.get("GIT_INDEX_FILE"))
    else:
        if not args:
            raise click.UsageError("commit-msg needs the message file")
        problem = check_commit_msg(args[0])
    if problem:
        raise Refused(f"guard: {problem}")


@click.command("schema", context_settings=CONTEXT, short_help="print the JSON Schema of a document")
@click.argument("name", required=False, metavar="[NAME|COMMAND]")
@json_option
def schema_cmd(name: str | None, as_json: bool) -> None:
    """Print a JSON document's JSON Schema, or list them all.

    NAME is a document's name (run, measurement, status, error, hook-after, ...) or a
    command's (keep, "worker list"). Every document names its schema in its first field,
    "schema"; the manual page of each command lists its document's fields."""
    from ..runtime.schemas import COMMAND_DOCUMENTS, VERSIONS, schema_id, schema_path

    if name is None:
        kinds = list(VERSIONS)  # (common too: the definitions the others refer to)
        printed_by = {k: [c for c, d in COMMAND_DOCUMENTS.items() if d == k] for k in kinds}
        if as_json:
            emit_json("schema", {"documents": [
                {"name": k, "schema": schema_id(k), "path": str(schema_path(k)),
                 "commands": printed_by[k]} for k in kinds]})
            return
        for k in kinds:
            said = ", ".join(printed_by[k]) or {
                "error": "any command that fails", "hook-before": "stdin of a before hook",
                "hook-after": "stdin of an after hook",
                "queued": "run --no-wait, measured on a host",
                "common": "the definitions the others refer to ($ref)"}[k]
            click.echo(f"{schema_id(k):<36} {said}")
        return
    kind = COMMAND_DOCUMENTS.get(name, name)
    if kind not in VERSIONS:
        raise UsageError(f"no JSON document or command named {name!r} (git autoresearch schema "
                         "lists them)")
    if as_json:
        raise UsageError("schema NAME prints the schema, a JSON document itself: leave out "
                         "--json")
    click.echo(schema_path(kind).read_text(encoding="utf-8"), nl=False)


@click.command("mcp", context_settings=CONTEXT,
               short_help="serve the loop's commands as the tools of an MCP server")
@click.option("--repo", "folder", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The work tree of the session the tools act on (default: the current "
                   "folder).")
@click.option("--allow-commands", is_flag=True,
              help="Let start_session take the shell commands (the benchmark, the checks) as "
                   "arguments; without it they come only from the configuration file.")
@click.option("--print-config", "harness",
              type=click.Choice(["claude", "codex", "cursor", "gemini"]),
              help="Print what this harness's configuration needs to start the server (on "
                   "stdout, where it goes on stderr), and start nothing.")
def mcp_cmd(folder: Path | None, allow_commands: bool, harness: str | None) -> None:
    """A Model Context Protocol server on stdin and stdout, for a harness that calls tools only
    through MCP: the loop's commands as a few tools (start_session, run_experiment, measure,
    collect, record, status, query_runs, show_run, summary, ideas, apply_run, stop, audit,
    finalize), each giving the command's JSON document, and the session's status, summary and
    runs as resources. Needs the MCP SDK: pip install 'git-autoresearch[mcp]'."""
    if harness is not None:
        from ..mcp_server.registration import snippet

        where, text = snippet(harness)
        click.echo(f"# {where}:", err=True)
        click.echo(text, nl=False)
        return
    try:
        from ..mcp_server.tools import build
    except ImportError as exc:
        if exc.name is None or exc.name.split(".")[0] not in ("mcp", "pydantic"):
            raise
        raise Refused("the MCP server needs the MCP SDK, which is not installed: pip "
                      "install 'git-autoresearch[mcp]'") from None
    build((folder or Path.cwd()).resolve(), allow_commands=allow_commands).run("stdio")
