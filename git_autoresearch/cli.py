"""The programs: one entry point per subcommand and the group, and :func:`invoke`, which runs a
command and turns how it ended into an exit code.

Each subcommand is reachable as ``git autoresearch <cmd>`` and as its own executable
``git-autoresearch-<cmd>``; both go through :func:`invoke`, which maps errors to the exit codes of
:data:`runtime.errors.EXIT_CODES` (0 done, 1 internal error, 2 usage, 3 refused, 4 stop, 128 + N
for signal N: 130 SIGINT, 143 SIGTERM, 129 SIGHUP) and never shows a traceback unless
``GIT_AUTORESEARCH_DEBUG`` is set. The commands themselves, and the click group that loads them,
are :mod:`git_autoresearch.commands`; this module imports click only once a program has started
(:func:`_start`), so that a signal during that import is held and said like any other.
"""

from __future__ import annotations

import codecs
import errno
import gc
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

from .runtime import signals
from .runtime.errors import EXIT_INTERNAL, EXIT_REFUSED, EXIT_USAGE, AutoresearchError
from .runtime.signals import Interrupted

if TYPE_CHECKING:
    import click


def _wants_json(args: list[str]) -> bool:
    return "--json" in args


class _Output:
    """stdout, or stderr, for one command: a write that fails (a reader that closed the pipe,
    a full disk behind a redirect) is kept, not raised, since the output comes after the
    command's work (a run recorded, a keep committed), which an exception would misreport as
    not done; text the stream cannot encode is written with backslash escapes. Text is
    encoded here and written whole to the binary layer (:func:`_write_whole`): Python's text
    layer drops what a write leaves unwritten (a large write to a disk nearly full takes
    what fits and returns), which would cut the output short unsaid."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.failed: OSError | None = None
        # (nothing is written to the text layer beneath while this stands in for it)
        binary = getattr(stream, "buffer", None)  # (None: a text stream alone, a test's)
        self._bytes = None if binary is None else _OutputBytes(self, binary)
        # One encoder for the whole output, as the text layer has: an encoding that begins
        # with a byte-order mark (utf-8-sig, utf-16) writes it once, not before every write.
        self._encoder = codecs.getincrementalencoder(
            getattr(stream, "encoding", None) or "utf-8")(
            getattr(stream, "errors", None) or "strict")
        self._by_line = bool(getattr(stream, "line_buffering", False))  # (a terminal, stderr)

    def write(self, text: str) -> int:
        if self.failed is not None:
            return len(text)
        if self._bytes is None:
            try:
                return int(self.stream.write(text))
            except OSError as exc:
                self._lost(exc)
                return len(text)
        self._bytes.write(self._encoded(text))
        if self._by_line and ("\n" in text or "\r" in text):  # (as the text layer)
            self._bytes.flush()
        return len(text)

    def _encoded(self, text: str) -> bytes:
        try:
            return bytes(self._encoder.encode(text))
        except UnicodeEncodeError:
            # A name that is not UTF-8, which the ledger keeps as a lone surrogate: written as
            # its escape (\udcff), which a JSON string reads back as it.
            strict, self._encoder.errors = self._encoder.errors, "backslashreplace"
            try:
                return bytes(self._encoder.encode(text))
            finally:
                self._encoder.errors = strict

    def flush(self) -> None:
        if self.failed is None:
            try:
                _flush_whole(self.stream)
            except OSError as exc:
                self._lost(exc)

    def _lost(self, exc: OSError) -> None:
        self.failed = exc
        try:  # what is still buffered goes nowhere, so that the exit flush cannot fail too
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):  # no file descriptor (a test's capture)
            pass

    @property
    def buffer(self) -> _OutputBytes:
        """The binary layer, guarded as the text one is: click writes there when stdout's
        encoding is one it does not trust (``PYTHONIOENCODING=ascii``, a C locale)."""
        if self._bytes is None:
            raise AttributeError("buffer")
        return self._bytes

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class _OutputBytes:
    """The binary layer of an :class:`_Output`'s stream: every byte of a write written
    (:func:`_write_whole`), or the failure kept by that :class:`_Output`, not raised; none
    is tried after one has failed."""

    def __init__(self, output: _Output, stream: Any) -> None:
        self.output = output
        self.stream = stream

    def write(self, data: bytes) -> int:
        if self.output.failed is None:
            try:
                _write_whole(self.stream, data)
            except OSError as exc:
                self.output._lost(exc)
        return len(data)

    def flush(self) -> None:
        if self.output.failed is None:
            try:
                _flush_whole(self.stream)
            except OSError as exc:
                self.output._lost(exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _write_whole(stream: Any, data: bytes) -> None:
    """Write every byte of ``data`` to the binary ``stream``, or raise OSError. A write may
    take only part (Python returns the count and raises nothing): a disk nearly full takes
    what fits, and the next write for the rest fails, saying why (``ENOSPC``); a descriptor
    the caller made non-blocking takes what its pipe holds (or raises BlockingIOError), and
    the rest is written once it can take more, as a blocking one would wait."""
    view = data  # (the part not written yet: all of it but rarely)
    while view:
        try:
            taken = stream.write(view)
        except BlockingIOError as exc:
            view = view[exc.characters_written:]
            _wait_writable(stream)
            continue
        if taken is None:  # (an unbuffered stream, non-blocking, that took nothing)
            _wait_writable(stream)
            continue
        if taken == 0:
            raise OSError(errno.EIO, "the output took none of a write")
        view = view[taken:]


def _flush_whole(stream: Any) -> None:
    """``stream.flush()``, once more whenever a non-blocking descriptor could take no more."""
    while True:
        try:
            stream.flush()
            return
        except BlockingIOError:
            _wait_writable(stream)


def _wait_writable(stream: Any) -> None:
    """Wait until ``stream``'s descriptor can take more (its reader read some)."""
    import select

    select.select([], [stream.fileno()], [])


def invoke(command: click.Command, prog_name: str, args: list[str]) -> int:
    """Run ``command`` with ``args`` and return the exit code (git-autoresearch(1), EXIT
    STATUS). Output that cannot be written (a closed pipe, a full disk) does not change it:
    stdout's is said on stderr; stderr's (its reader gone: ``2>&1 | head``) goes unsaid."""
    import click

    output, errors = _Output(sys.stdout), _Output(sys.stderr)
    sys.stdout, sys.stderr = output, errors
    try:
        code = _invoke(command, prog_name, args)
        # After every path of _invoke: _Output keeps a failed write instead of raising it.
        output.flush()
        errors.flush()
    finally:
        sys.stdout, sys.stderr = output.stream, errors.stream
    if output.failed is not None and output.failed.errno != errno.EPIPE:
        # A reader that closed the pipe (``show 9 | head``) wanted no more: said by no one.
        try:
            click.echo(f"{prog_name}: the output could not be written "
                       f"({output.failed.strerror or output.failed}); the command itself "
                       f"finished with exit code {code}", err=True)
        except OSError:
            pass
    return code


def _command_path(exc: click.UsageError, command: click.Command, prog_name: str,
                  args: list[str]) -> str:
    """The command a usage error is about: its context's; or, for an error click's parser
    raises without one (``Option '-d' requires an argument.``, which click then gives the
    group's context), the deepest subcommand ``args`` name."""
    import click

    if exc.ctx is not None and not isinstance(exc.ctx.command, click.Group):
        return exc.ctx.command_path
    path, current = prog_name, command
    for word in args:
        found = current.get_command(click.Context(current), word) \
            if isinstance(current, click.Group) and not word.startswith("-") else None
        if found is None:
            break
        path, current = f"{path} {word}", found
    return path if current is not command or exc.ctx is None else exc.ctx.command_path


def _invoke(command: click.Command, prog_name: str, args: list[str]) -> int:
    import click

    try:
        signals.release()
        # click answers a completion request (the completion script's) before parsing.
        returned = command.main(args=args, prog_name=prog_name, standalone_mode=False,
                                complete_var=COMPLETE_VAR if prog_name == "git autoresearch"
                                else None)
        code = returned if isinstance(returned, int) else 0
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt, Interrupted) as exc:
        # click turns Ctrl-C into Abort (from the KeyboardInterrupt); a prompt's EOF too.
        cause = exc.__cause__ if isinstance(exc, click.exceptions.Abort) else exc
        if not isinstance(cause, (KeyboardInterrupt, Interrupted)):
            click.echo("aborted", err=True)
            return 130
        code = _report_signal(cause.signum if isinstance(cause, Interrupted)
                              else signal.SIGINT, prog_name, args)
    except click.ClickException as exc:
        code = EXIT_USAGE if isinstance(exc, click.UsageError) else exc.exit_code
        hint = ""
        if isinstance(exc, click.UsageError):
            hint = f" (see {_command_path(exc, command, prog_name, args)} -h)"
        _report_error(" ".join(exc.format_message().split()), code, prog_name, args,
                      hint=hint)
    except AutoresearchError as exc:
        code = exc.exit_code
        _report_error(exc.message, code, prog_name, args, detail=exc.detail)
    except Exception as exc:  # noqa: BLE001 - the one place that turns surprises into exit 1
        if os.environ.get("GIT_AUTORESEARCH_DEBUG"):
            raise
        if isinstance(exc, OSError) and exc.errno in _STORAGE_ERRORS:
            # A full or read-only disk under a write that runtime/atomic.py does not make:
            # refused, named.
            _report_error(f"cannot write {exc.filename or 'a file'}: {exc.strerror}",
                          EXIT_REFUSED, prog_name, args)
            return EXIT_REFUSED
        code = EXIT_INTERNAL
        click.echo(f"{prog_name}: internal error: {exc.__class__.__name__}: {exc} "
                   "(set GIT_AUTORESEARCH_DEBUG=1 for the traceback)", err=True)
    arrived = signals.received()
    if arrived is not None and code != 128 + arrived:
        # A signal that came too late to be raised (while the output was written, or in a
        # finalizer) still ends the command as that signal: the caller asked it to stop.
        code = _report_signal(arrived, prog_name, args, document=False)
    return code


# The variable of a completion request: ``_<PROG>_COMPLETE`` for ``git-autoresearch``
# (commands/completion.py).
COMPLETE_VAR = "_GIT_AUTORESEARCH_COMPLETE"
_STORAGE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}


def _report_error(message: str, code: int, prog_name: str, args: list[str], *,
                  hint: str = "", detail: str | None = None) -> None:
    """Say why the command failed: the JSON error document on stdout with ``--json``, then
    ``<prog_name>: <message><hint>`` and the ``detail`` lines on stderr."""
    import click

    from .commands.common import emit_json

    if _wants_json(args):
        emit_json("error", {"error": message, "exit_code": code}, interruptible=False,
                  one_line=_streams(prog_name, args))
    click.echo(f"{prog_name}: {message}{hint}", err=True)
    if detail:
        click.echo(detail, err=True)


def _streams(prog_name: str, args: list[str]) -> bool:
    """Whether the command prints a JSON document a line as it goes
    (:data:`runtime.schemas.STREAMED`): then its error document is one line too, so that a
    reader of lines reads it."""
    from .runtime.schemas import COMMAND_DOCUMENTS, STREAMED

    return COMMAND_DOCUMENTS.get(_subcommand(prog_name, args) or "") in STREAMED


# The commands that record runs: a signal's message says whether one was recorded.
RECORDING = ("run", "measure", "keep", "discard", "crash")


def _subcommand(prog_name: str, args: list[str]) -> str | None:
    """The subcommand being run: from ``git autoresearch <name>`` (an entry point's program
    name), else the first argument that is not an option."""
    words = prog_name.split()
    if len(words) > 2:
        return words[2]
    return next((a for a in args if not a.startswith("-")), None)


def _report_signal(signum: int, prog_name: str, args: list[str], *, document: bool = True
                   ) -> int:
    """Say that signal ``signum`` ended the command (the JSON error document too, with
    ``--json`` and ``document``); returns its exit code, 128 + ``signum``."""
    import click

    from .commands.common import emit_json

    code = 128 + signum
    what = signals.NAMES.get(signum, f"signal {signum}")
    done = signals.recorded()
    if done:
        # A signal waits for a run being recorded, so a non-zero exit can follow a recorded run.
        what += " after " + ", ".join(f"run {r['run']} was recorded ({r['status']})"
                                      for r in done)
    name = _subcommand(prog_name, args)
    if done or name not in RECORDING:
        said = {"audit": "; each audit finished before it is in the ledger",
                "finalize": "; no branch was made unless it was said, and the temporary "
                            "worktree is removed"}.get(name or "", "")
    else:
        said = "; no run was recorded (a keep or revert begun before is finished by the next " \
               "command)"
    try:
        with _bounded_output(REPORT_SECONDS):
            if document and _wants_json(args):
                emit_json("error", {"error": f"{what} ({signal.Signals(signum).name}){said}",
                           "exit_code": code, "recorded": done[-1] if done else None},
                          interruptible=False, one_line=_streams(prog_name, args))
            click.echo(f"{prog_name}: {what}", err=True)
    except OSError:  # the terminal that hung up is gone: the exit code says it all
        pass
    return code


# How long saying how a signal ended a command may wait for a reader of its output (seconds).
REPORT_SECONDS = 2.0


class _NotRead(OSError):
    """Output that no one read for :data:`REPORT_SECONDS` while a signal's end was said."""


@contextmanager
def _bounded_output(seconds: float) -> Iterator[None]:
    """Inside, a write that waits more than ``seconds`` for its reader (a pipe nobody reads,
    full) fails as :class:`_NotRead`, which :class:`_Output` keeps as any failed write, so
    that saying how a signal ended the command cannot keep it from ending (the signal that
    came meanwhile is held: it ended a blocked write once already). Outside the main thread,
    nothing is bounded."""
    def not_read(signum: int, frame: object) -> None:
        raise _NotRead(errno.EAGAIN, f"nobody read it for {seconds:g} s")

    try:
        previous = signal.signal(signal.SIGALRM, not_read)
    except ValueError:  # (not the main thread)
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)


# The commands that run with the collector off to the end: recording a run that was measured
# (or given), a fraction of a second that makes nothing cyclic worth collecting, while the
# collector's passes over the modules it imports cost it milliseconds.
COLLECTOR_OFF = ("keep", "discard", "crash")


def _start(name: str | None) -> click.Command:
    """Process set-up for an entry point: SIGINT, SIGTERM and SIGHUP handled alike and held
    until :func:`invoke` runs the command (:mod:`git_autoresearch.runtime.signals`), so that a
    signal during the imports is said and exits 128 + N instead of a traceback; then the command
    ``name`` (None: the group) is loaded with the collector off, since nothing the imports
    make is garbage (collecting during them costs a command several milliseconds), and what
    they made, which lives until exit, is kept out of the collector's sight (gc.freeze). The
    collector stays off for the commands of :data:`COLLECTOR_OFF`."""
    _standard_streams()
    signals.install(hold=True)
    gc.disable()
    named = name or _subcommand("git autoresearch", sys.argv[1:])
    if named in LONG_RUNNING:
        _end_with_git()
    from .commands import cli, command

    loaded = cli if name is None else command(name)
    gc.freeze()
    if named not in COLLECTOR_OFF:
        gc.enable()
    return loaded


def _standard_streams() -> None:
    """Standard input, output and error open, as git keeps them (``sanitize_stdfds``): a
    descriptor 0, 1 or 2 that the caller closed (``2>&-``) is opened on /dev/null before the
    command opens anything, so that no file it writes (the ledger, say) takes that number and
    receives what is written to standard error, by us or by a git or benchmark process we
    start; and ``sys.stdout`` or ``sys.stderr``, which Python leaves None then, writes there."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDWR)  # (the lowest free number: this one)
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
    for name, fd in (("stdin", 0), ("stdout", 1), ("stderr", 2)):
        if getattr(sys, name) is None:
            setattr(sys, name, os.fdopen(fd, "r" if fd == 0 else "w", closefd=False))


def _the_program() -> bool:
    """Whether this process is one of our programs (a ``git-autoresearch*`` script, or
    ``python -m git_autoresearch``), not a program that calls our entry points in-process
    (a test, an embedding tool), which must get ``SystemExit`` back and live on."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name == "git_autoresearch.__main__":
        return True
    return os.path.basename(getattr(main, "__file__", None) or "").startswith("git-autoresearch")


def finish(code: int) -> NoReturn:
    """End the process with exit ``code`` once the command is done, as ``sys.exit`` would (the
    functions registered with :mod:`atexit` run, stdout and stderr are flushed) but without
    the interpreter's teardown, which frees every module and object one by one: about 5 ms of
    each keep, discard and run, and more after reading a long ledger. Nothing a command wrote
    is left to that teardown: every file is written and closed where it is made (``with``),
    and its output was flushed by :func:`invoke`. A thread still running that is not a daemon
    (one the command waits for) gets the usual exit, which waits for it; so do a Python
    without ``atexit._run_exitfuncs``, a process being traced or profiled (a debugger,
    ``python -m cProfile``, coverage), whose tool writes what it found after we return, and
    a program that called the entry point in-process (:func:`_the_program`)."""
    import atexit
    import threading

    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    main_thread = threading.main_thread()
    monitoring = getattr(sys, "monitoring", None)  # (Python 3.12: tools such as coverage's)
    if run_exitfuncs is None or not _the_program() or sys.gettrace() is not None \
            or sys.getprofile() is not None \
            or (monitoring is not None and any(monitoring.get_tool(tool) is not None
                                               for tool in range(6))) \
            or any(not t.daemon for t in threading.enumerate() if t is not main_thread):
        sys.exit(code)
    run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a reader gone, or a stream closed: nothing more to say
            pass
    os._exit(code)


# The commands that can run for long (a measurement, a wait, a server): started by git's
# dispatcher (git autoresearch <name>), each ends with it, as if terminated.
LONG_RUNNING = ("run", "measure", "collect", "measurer", "status", "dashboard", "start",
                "finalize", "audit", "demo", "mcp")
_PR_SET_PDEATHSIG = 1  # prctl(2)


def _end_with_git() -> None:
    """On Linux, when git's dispatcher started this process, ask the kernel for SIGTERM when git
    ends (prctl PR_SET_PDEATHSIG), handled as any SIGTERM (exit 143, a run being recorded
    recorded first). git forwards a signal it catches to its child and waits for it, but a
    second signal kills git outright: without this, a run whose git was terminated while it
    ignored SIGINT (a background job) would go on alone and race the next command."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        with open(f"/proc/{parent}/comm", "rb") as fh:
            if fh.read().strip() != b"git":
                return
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
            return
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # git ended before the kernel knew to say so
        os.kill(os.getpid(), signal.SIGTERM)


def main() -> NoReturn:
    """``git-autoresearch``: the command group."""
    finish(invoke(_start(None), "git autoresearch", sys.argv[1:]))


def _entry(name: str) -> Callable[[], NoReturn]:
    def entry() -> NoReturn:
        finish(invoke(_start(name), f"git autoresearch {name}", sys.argv[1:]))

    entry.__name__ = f"{name}_main"
    entry.__doc__ = f"``git-autoresearch-{name}``."
    return entry


start_main = _entry("start")
measure_main = _entry("measure")
run_main = _entry("run")
collect_main = _entry("collect")
keep_main = _entry("keep")
discard_main = _entry("discard")
crash_main = _entry("crash")
log_main = _entry("log")
status_main = _entry("status")
show_main = _entry("show")
score_main = _entry("score")
stop_main = _entry("stop")
resume_main = _entry("resume")
doctor_main = _entry("doctor")
hook_main = _entry("hook")
hooks_main = _entry("hooks")
demo_main = _entry("demo")
analyze_main = _entry("analyze")
summary_main = _entry("summary")
ideas_main = _entry("ideas")
import_main = _entry("import")
dashboard_main = _entry("dashboard")
audit_main = _entry("audit")

finalize_main = _entry("finalize")
apply_main = _entry("apply")
diff_main = _entry("diff")
sessions_main = _entry("sessions")
gc_main = _entry("gc")
push_main = _entry("push")
pull_main = _entry("pull")
completion_main = _entry("completion")
skill_main = _entry("skill")
guard_main = _entry("guard")
schema_main = _entry("schema")
worker_main = _entry("worker")
measurer_main = _entry("measurer")
mcp_main = _entry("mcp")
