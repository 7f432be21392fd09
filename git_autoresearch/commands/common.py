"""What every command shares: context settings, JSON output, warnings, the live progress line,
the options several commands take, and the completion of the arguments that name runs or
sessions."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import click

from ..runtime import signals

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class WholeNumber(click.ParamType):  # type: ignore[type-arg]
    """A run number, a segment or a count as git takes one: ASCII digits only (``int``
    would take ``+3``, ``3_000`` and full-width ``３`` too, which a run number never is)."""

    name = "integer"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.isascii() and value.isdigit():
            return int(value)
        self.fail(f"{value!r} is not a whole number (the digits 0 to 9)", param, ctx)


WHOLE = WholeNumber()


class WholeRange(click.IntRange):
    """A count or a port within bounds, as :class:`click.IntRange` takes it and shows it in
    the help (``[x>=0]``), read as :class:`WholeNumber` reads it: ``abc`` is "not a whole
    number", where click says "not a valid integer range"."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        return super().convert(WHOLE.convert(value, param, ctx), param, ctx)


def bare_group(ctx: click.Context) -> None:
    """The callback of a group called without a subcommand (``git autoresearch``, ``hooks``,
    ``ideas``): its help on stdout, exit 0. Nothing while click completes a command line."""
    if ctx.invoked_subcommand is None and not ctx.resilient_parsing:
        click.echo(ctx.get_help())


def emit_json(kind: str, data: Mapping[str, Any], *, interruptible: bool = True,
              one_line: bool = False) -> None:
    """Print one JSON document of ``kind`` (a key of :data:`runtime.schemas.VERSIONS`): ``data``
    after its ``schema`` field (:func:`runtime.schemas.schema_id`); never NaN or infinity: such
    values become null. A signal that arrived and was not raised yet is raised first
    (``interruptible``), so that the command's one document is the error that says so.
    ``one_line``: on one line (a document of :data:`runtime.schemas.STREAMED`)."""
    import json  # (re, the decoder): only where a document is written

    from ..runtime.schemas import schema_id

    if interruptible:
        signals.check()
    document = {"schema": schema_id(kind), **data}
    indent = None if one_line else 2
    try:
        text = json.dumps(document, ensure_ascii=False, indent=indent, allow_nan=False)
    except ValueError:  # a non-finite number from a hostile ledger: walk and replace it
        from ..ledger.jsontext import nulled

        text = json.dumps(nulled(document), ensure_ascii=False, indent=indent, allow_nan=False)
    click.echo(text)


def said_once(*groups: Iterable[str]) -> list[str]:
    """The warnings of ``groups``, in order, each once: one command mirrors the state ref
    several times (after its record, the incumbent's sample, each hook stage), and mirrors
    that fail fail with the same words."""
    return list(dict.fromkeys(message for group in groups for message in group))


def warn_each(messages: Iterable[str], told: set[str] | None = None) -> None:
    """:func:`warn` each of ``messages`` that ``told`` (what this command said already, added
    to) does not hold."""
    told = set() if told is None else told
    for message in messages:
        if message not in told:
            told.add(message)
            warn(message)


def print_steer(stage: str, report: Any, told: set[str] | None = None) -> None:
    """A hook report (:class:`hooks.user.HookReport`) for people: its warnings on stderr (but
    those in ``told``, :func:`warn_each`), then its steer on stdout between ``==== steer from
    <stage> hooks ====`` and ``==== end of steer ====`` lines (nothing when the hooks printed
    nothing)."""
    warn_each(report.warnings, told)
    if report.steer:
        click.echo(f"==== steer from {stage} hooks ====")
        click.echo(report.steer)
        click.echo("==== end of steer ====")


def left_to_exit(held: object) -> None:
    """``held`` (a whole ledger read, or what holds one) left to the process's exit instead of
    freed object by object when the command returns (a fifth of a second for 100,000 runs,
    the last thing a reading command does): held by a cycle of its own that the collector,
    paused until then (``ledger.collector_paused``, which freezes what exists when it ends),
    never walks, so no one frees it before the process ends (:func:`cli.finish`) and its
    memory goes back whole."""
    cycle: list[Any] = [held]
    cycle.append(cycle)


# The pipe buffer :func:`widen_stdout_pipe` asks for: Linux's most for a user who is not root
# (``/proc/sys/fs/pipe-max-size``, 1 MiB by default), 16 times the default 64 KiB.
PIPE_BYTES = 1 << 20


def widen_stdout_pipe() -> None:
    """When stdout is a pipe, ask Linux to make its buffer :data:`PIPE_BYTES` (``fcntl``'s
    ``F_SETPIPE_SZ``, pipe(7)), for a document of megabytes (``log --json`` of a long ledger:
    44 MB for 100,000 runs): the writer then waits on the reader, and the reader wakes, a
    sixteenth as often (about 60 ms of 0.7 s read by Python's ``subprocess``). Nothing where
    stdout is no pipe, its buffer is that large already, or the system refuses (not Linux; a
    user past their pipe quota): the output is the same, only written in smaller steps."""
    try:
        import fcntl
        import stat

        setting = getattr(fcntl, "F_SETPIPE_SZ", None)
        getting = getattr(fcntl, "F_GETPIPE_SZ", None)
        fd = sys.stdout.fileno()
        if setting is None or getting is None or not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return
        if fcntl.fcntl(fd, getting) < PIPE_BYTES:
            fcntl.fcntl(fd, setting, PIPE_BYTES)
    except (OSError, ValueError, AttributeError):  # (a stdout with no descriptor: a test's)
        return


def number(value: float) -> str:
    """A metric as the ledger writes it (:func:`ledger.jsontext.number_text`)."""
    from ..ledger.jsontext import number_text

    return number_text(value)


# How a warning's line on stderr begins (a caller that reads stderr picks them out by it).
WARNING = "warning: "


def paths_text(paths: Iterable[str]) -> str:
    """Paths as a comma-separated list a person can read back: each as it is, or, when it
    holds a control character (a newline, an escape), a double quote, a backslash or ", ",
    in double quotes with C escapes, as git quotes such a path (``core.quotePath``)."""
    return ", ".join(_quoted(path) for path in paths)


def _quoted(path: str) -> str:
    if path.isprintable() and '"' not in path and "\\" not in path and ", " not in path:
        return path
    escapes = {"\n": "\\n", "\t": "\\t", '"': '\\"', "\\": "\\\\"}
    return '"' + "".join(escapes.get(c) or (c if c.isprintable() else
                                            "".join(f"\\{b:03o}" for b in _bytes(c)))
                         for c in path) + '"'


def _bytes(character: str) -> bytes:
    """The bytes of one character of a path: a byte that was not UTF-8, decoded as a lone
    surrogate (``surrogateescape``), as it was."""
    try:
        return character.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return character.encode("utf-8", "backslashreplace")


def warn(message: str) -> None:
    click.echo(f"{WARNING}{message}", err=True)


def progress() -> Callable[[float, str], None] | None:
    """A live ``[12s] last log line`` on stderr while a measurement runs on a terminal."""
    if not sys.stderr.isatty():
        return None
    import shutil  # (bz2, lzma, ...): only where needed

    width = shutil.get_terminal_size((80, 20)).columns

    def show(elapsed: float, line: str) -> None:
        _to_terminal("\r\x1b[K" + f"[{elapsed:5.0f}s] {line}"[: width - 1])

    return show


def clear_progress() -> None:
    if sys.stderr.isatty():
        _to_terminal("\r\x1b[K")


def _to_terminal(text: str) -> None:
    """Write ``text`` to stderr, a terminal; one that hung up (EIO) is no error: the command
    is ending by its SIGHUP."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except OSError:
        pass


json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print one JSON document on stdout.")


DESCRIPTION_HELP = "One sentence saying what this run tried ('-': read it from stdin)."


def record_options(f: Callable[..., Any]) -> Any:
    """The options of every command that records a run (run, keep, discard, crash), after
    sqlite-utils' ``output_options``: ``-d/--description``, ``--asi`` and ``--asi-json`` (parsed
    by ``inputs.parse_asi``); each command adds its own, then :data:`json_option`."""
    return _record_options(f, DESCRIPTION_HELP, required=True)


def run_record_options(f: Callable[..., Any]) -> Any:
    """:func:`record_options` for ``run``, whose ``-d`` a retry may leave out (the command
    refuses its absence otherwise)."""
    return _record_options(f, DESCRIPTION_HELP.removesuffix(".")
                           + "; required, except with --retry: then the retried run's, "
                             "headed 'retry of run N: '.", required=False)


def _record_options(f: Callable[..., Any], description_help: str, *, required: bool) -> Any:
    for option in reversed([
        click.option("-d", "--description", required=required, help=description_help),
        click.option("--asi", "asi_pairs", multiple=True, metavar="KEY=VALUE",
                     help="An annotation for the run (hypothesis=..., rollback_reason=..., "
                          "next_action_hint=...). Repeatable."),
        click.option("--asi-json", metavar="JSON",
                     help="Annotations for the run as a JSON object."),
    ]):
        f = option(f)
    return f


# Completion of the arguments that name runs or sessions (commands/completion.py makes the
# shell scripts that ask for it).
def complete_runs(ctx: click.Context, param: click.Parameter, incomplete: str
                  ) -> list[Any]:
    """The run numbers of the session here that start with ``incomplete``, newest first, each
    with its status and description as help; none outside a session."""
    from click.shell_completion import CompletionItem

    from ..ledger import read
    from ..session.layout import Layout

    try:
        book = read(Layout.discover().ledger)
    except Exception:  # noqa: BLE001 - a completion never fails aloud
        return []
    return [CompletionItem(str(r.number), help=f"{r.status}: {r.description}"[:80])
            for r in reversed(book.runs) if str(r.number).startswith(incomplete)]


def complete_sessions(ctx: click.Context, param: click.Parameter, incomplete: str
                      ) -> list[Any]:
    """The session ids of the repository here that start with ``incomplete``."""
    from click.shell_completion import CompletionItem

    from ..workers.sessions import session_ids_here

    try:
        ids = session_ids_here()
    except Exception:  # noqa: BLE001 - a completion never fails aloud
        return []
    return [CompletionItem(sid) for sid in ids if sid.startswith(incomplete)]
