"""Running a command of this tool for the MCP server: ``python -m git_autoresearch ARGS`` in
the session's folder, as its own process (so that a command's signals, locks and exit stay its
own), its one JSON document read from stdout, and its progress events
(:mod:`git_autoresearch.runtime.events`) read from a pipe as they come. A run longer than a
harness waits for one tool call is a :class:`Job`: started by one call, collected by another.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..runtime.events import ENV
from ..runtime.schemas import schema_id

# What a progress event is handed to: the listening tool call's report of progress.
Listener = Callable[[dict[str, Any]], Awaitable[None]]


def error_document(message: str, exit_code: int) -> dict[str, Any]:
    """An error document (``git-autoresearch:error/1``) of the server's own, as a command
    prints one."""
    return {"schema": schema_id("error"), "error": message, "exit_code": exit_code}


@dataclass
class Outcome:
    """How a command ended: its exit code, its stdout read as one JSON document (None when it
    is not one: a command without ``--json``, or one killed before it printed), its stdout and
    stderr as text."""

    exit_code: int
    document: dict[str, Any] | None
    stdout: str
    stderr: str


async def run_command(folder: Path, args: list[str], listener: Listener | None = None,
                      stdin: str | None = None) -> Outcome:
    """Run ``git autoresearch ARGS`` in ``folder`` and wait for it; each progress event it
    writes is handed to ``listener`` (when given) as it comes. ``stdin``: text for its standard
    input (none: it reads nothing)."""
    read_end, write_end = os.pipe()
    # UTF-8 on its standard streams whatever the server's locale says: its input is written,
    # and its output read, as UTF-8 (a server run with PYTHONIOENCODING=latin-1 read
    # U+FFFD for every character beyond ASCII).
    env = {**os.environ, ENV: str(write_end), "PYTHONIOENCODING": "utf-8"}
    try:
        if any("\0" in arg for arg in args):
            raise ValueError("an argument holds a NUL character")
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "git_autoresearch", *args, cwd=folder, env=env,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            pass_fds=(write_end,))
    except (OSError, ValueError) as exc:  # too long for the system, say
        os.close(read_end)
        return Outcome(2, error_document("the command cannot be started with these "
                                         f"arguments: {exc}", 2), "", "")
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    events = asyncio.ensure_future(_follow(read_end, listener))
    out, err = await process.communicate(stdin.encode() if stdin is not None else None)
    await events
    text = out.decode("utf-8", "replace")
    try:
        document = unicode_only(json.loads(text)) if text.strip() else None
    except ValueError:
        document = None
    return Outcome(process.returncode if process.returncode is not None else 1,
                   document if isinstance(document, dict) else None, text,
                   err.decode("utf-8", "replace"))


_SURROGATE = re.compile("[\ud800-\udfff]")


def unicode_only(value: Any) -> Any:
    """``value`` (a decoded JSON document) with each lone surrogate of its strings, keys
    included, as U+FFFD: a name that is not UTF-8 is kept in our JSON as its escape
    (``\\udcff``), which decodes to a lone surrogate, which MCP's JSON (UTF-8 throughout)
    cannot carry; the tool's result would fail as a whole."""
    if isinstance(value, str):
        if value.isascii():
            return value
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {unicode_only(key): unicode_only(item) for key, item in value.items()}
    if isinstance(value, list):
        return [unicode_only(item) for item in value]
    return value


async def _follow(fd: int, listener: Listener | None) -> None:
    """Read the progress events written to ``fd`` until the command closes it, handing each to
    ``listener``; a line that is not one is passed over."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    pipe = os.fdopen(fd, "rb", buffering=0)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), pipe)
    try:
        while line := await reader.readline():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if listener is not None and isinstance(event, dict):
                await listener(event)
    finally:
        transport.close()


@dataclass
class Job:
    """A command still running after the tool call that started it returned: ``key`` names it
    to the call that collects it; ``listener`` is the report of progress of the call waiting on
    it now (None: none waits); ``events``, the progress events so far."""

    key: str
    args: list[str]
    task: asyncio.Task[Outcome] | None = None
    listener: Listener | None = None
    events: list[dict[str, Any]] = field(default_factory=list)

    async def hear(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        if self.listener is not None:
            await self.listener(event)


class Jobs:
    """The commands of one server still running, by key (``run-1``, ``run-2``...)."""

    def __init__(self) -> None:
        self.running: dict[str, Job] = {}
        self._numbers = itertools.count(1)

    def start(self, folder: Path, kind: str, args: list[str], stdin: str | None = None) -> Job:
        """Start ``args`` in ``folder`` as a job of ``kind`` (``run``, ``measure``), keyed
        ``<kind>-<this server's pid>-<n>`` (a key never names another server's job)."""
        job = Job(f"{kind}-{os.getpid()}-{next(self._numbers)}", args)
        job.task = asyncio.ensure_future(run_command(folder, args, job.hear, stdin))
        self.running[job.key] = job
        return job

    async def wait(self, job: Job, listener: Listener | None,
                   seconds: float | None) -> Outcome | None:
        """Wait for ``job`` at most ``seconds`` (None: until it ends), its events going to
        ``listener`` meanwhile; its outcome, or None when it is still running. A cancelled
        wait (the client gave up) leaves the job running."""
        assert job.task is not None
        job.listener = listener
        try:
            done, _ = await asyncio.wait({job.task}, timeout=seconds)
        finally:
            job.listener = None
        if not done:
            return None
        self.running.pop(job.key, None)
        return job.task.result()
