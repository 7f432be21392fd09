"""The command line: one module a command family, named for its first command, which parses the
options, calls the core and prints: ``start``; ``loop`` (measure, run, keep, discard, crash, stop,
hook); ``log``; ``status`` (status, show, analyze, summary, dashboard, score); ``upkeep`` (resume,
doctor, hooks, import, demo); ``ideas``; ``audit``; ``finalize`` (finalize, apply, diff);
``sessions`` (sessions, gc, push, pull); ``worker``; ``completion``; ``agents`` (skill, guard,
schema, mcp); ``common`` what they share. Where the core has a module of the same name
(``review.status``, ``review.finalize``, ``lifecycle.start``, ``session.ideas``), that is the work
the command calls; what a command asks on a terminal (``start``'s questions) stays here. This module
is the click group that puts them together, loading each family's module only when one of its
commands is asked for. :mod:`git_autoresearch.cli` runs them as programs; ``manpage`` writes their
man pages (``python -m git_autoresearch.commands.manpage man/man1``). click is imported here and in
``cli``, nowhere else."""

from __future__ import annotations

import importlib

import click

from .. import __version__
from .common import CONTEXT, bare_group

# Every command, in help order, and the module of git_autoresearch.commands that defines it as
# ``<name>_cmd``. A command's module is imported only when that command is asked for.
COMMAND_MODULES: dict[str, str] = {
    "start": "start",
    "measure": "loop",
    "run": "loop",
    "collect": "loop",
    "keep": "loop",
    "discard": "loop",
    "crash": "loop",
    "log": "log",
    "status": "status",
    "show": "status",
    "score": "status",
    "stop": "loop",
    "resume": "upkeep",
    "doctor": "upkeep",
    "hook": "loop",
    "hooks": "upkeep",
    "analyze": "status",
    "summary": "status",
    "ideas": "ideas",
    "import": "upkeep",
    "dashboard": "status",
    "audit": "audit",
    "finalize": "finalize",
    "apply": "finalize",
    "diff": "finalize",
    "demo": "upkeep",
    "sessions": "sessions",
    "gc": "sessions",
    "push": "sessions",
    "pull": "sessions",
    "completion": "completion",
    "skill": "agents",
    "guard": "agents",
    "schema": "agents",
    "mcp": "agents",
    "worker": "worker",
    "measurer": "worker",
}


def command(name: str) -> click.Command:
    """The click command ``name`` (a key of :data:`COMMAND_MODULES`); KeyError if unknown."""
    module = importlib.import_module(f".{COMMAND_MODULES[name]}", __package__)
    found: click.Command = getattr(module, f"{name}_cmd")
    return found


class _Commands(click.Group):
    """The group, loading each command's module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMAND_MODULES)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return command(cmd_name) if cmd_name in COMMAND_MODULES else None

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        """click's, with the commands whose names are close to an unknown one suggested, as
        git suggests its own (``statuss``: did you mean ``status``?)."""
        name = args[0] if args else ""
        if args and name not in COMMAND_MODULES and not name.startswith("-"):
            from difflib import get_close_matches

            close = get_close_matches(name, list(COMMAND_MODULES), n=3, cutoff=0.6)
            if close:
                ctx.fail(f"No such command {name!r}; did you mean "
                         + " or ".join(repr(c) for c in close) + "?")
        return super().resolve_command(ctx, args)


@click.group("git-autoresearch", cls=_Commands, context_settings=CONTEXT,
             invoke_without_command=True)
@click.version_option(__version__, "--version", prog_name="git-autoresearch")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Git plumbing for autoresearch loops: measure a change, keep it with a Result: trailer or
    revert it without losing anything, and record every run in .auto/log.jsonl."""
    bare_group(ctx)
