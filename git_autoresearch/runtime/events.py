"""Progress events, for a program that runs a command of this tool and follows its measurement
(the MCP server, ``git autoresearch mcp``, turns them into progress notifications).

When the environment variable ``GIT_AUTORESEARCH_PROGRESS_FD`` holds the number of a file
descriptor open for writing, each step of a measurement writes one JSON object and a newline to
it, as the step ends: ``{"event": "sample", "sample": 3, "of": 16, "value": 41.2}`` for a sample
of the candidate (``of``: the most the rule may take), ``{"event": "incumbent_sample", "sample":
2, "value": 40.7}`` for one of the incumbent measured beside it, ``parent_sample`` and
``commit_sample`` for the two sides of an audit, and ``{"event": "checks", "passed": true,
"duration_s": 1.5}`` once the checks ran. Values are in the metric's unit. Without
the variable, or once a write fails (the reader went away), nothing is written.
git-autoresearch-mcp(1) is the user's page.
"""

from __future__ import annotations

import json
import os
from typing import Any

ENV = "GIT_AUTORESEARCH_PROGRESS_FD"
_fd: int | None = None
_read = False


def _target() -> int | None:
    """The descriptor events go to, read from the environment once; None: none."""
    global _fd, _read
    if not _read:
        _read = True
        value = os.environ.get(ENV, "")
        _fd = int(value) if value.isdigit() else None
    return _fd


def emit(event: str, **fields: Any) -> None:
    """Write the event ``{"event": event, **fields}`` as one JSON line, when asked for; a write
    that fails turns the events off, never failing the command."""
    global _fd
    fd = _target()
    if fd is None:
        return
    line = json.dumps({"event": event, **fields}, allow_nan=False, default=str) + "\n"
    try:
        os.write(fd, line.encode("utf-8"))
    except (OSError, ValueError):
        _fd = None
