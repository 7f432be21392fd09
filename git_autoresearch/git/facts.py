"""Answers read of one commit, kept for the commands after this one: a commit never changes,
so what was read of it holds for as long as the same question is asked of it. A run asks two
of HEAD at every start (the run its trailers name, and the files the configured commands name
in its tree), and HEAD stays the same from one discard to the next: each answer costs a git
process the first time and a small file's read after.

The file (``head-facts`` in the scratch folder) is JSON: ``{"commit": <id>, "made_by":
<package version>, "facts": {<question>: <answer>}}``, the answers of one commit at a time,
written whole (not synced: a cache). A file of another commit or another version, or one
that cannot be read, holds no answer; one that cannot be written is left as it was.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .. import __version__
from ..runtime.atomic import WriteFailed, write_atomic

T = TypeVar("T")


class CommitFacts:
    """The answers kept in the file ``path`` about commit ``commit``."""

    def __init__(self, path: Path, commit: str) -> None:
        self.path = path
        self.commit = commit
        self._facts: dict[str, Any] | None = None

    def answer(self, question: str, read: Callable[[], T]) -> T:
        """The answer to ``question`` (a key that names everything the answer depends on
        besides the commit), kept, or ``read()`` (JSON data: None, numbers, strings, lists
        of them) and kept for the next command."""
        facts = self._load()
        if question in facts:
            return facts[question]  # type: ignore[no-any-return]
        value = read()
        facts[question] = value
        document = {"commit": self.commit, "made_by": __version__, "facts": facts}
        with contextlib.suppress(OSError, WriteFailed, TypeError, ValueError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, json.dumps(document).encode(), durable=False)
        return value

    def _load(self) -> dict[str, Any]:
        if self._facts is None:
            self._facts = {}
            try:
                document = json.loads(self.path.read_bytes())
            except (OSError, ValueError):
                return self._facts
            if isinstance(document, dict) and document.get("commit") == self.commit \
                    and document.get("made_by") == __version__ \
                    and isinstance(document.get("facts"), dict):
                self._facts = document["facts"]
        return self._facts
