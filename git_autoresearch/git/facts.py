"""Answers read of one commit, kept for the commands after this one: a commit never changes,
so what was read of it holds for as long as the same question is asked of it. A run asks of
HEAD at every start which run its trailers name, and HEAD stays the same from one discard to
the next: the answer costs a git process the first time and a small file's read after.

The file (``head-facts`` in the scratch folder) is JSON: ``{"commit": <id>, "made_by": <who
wrote it: the package's version>, "facts": {<question>: <answer>}}``, the answers of one commit
at a time, written whole (not synced: a cache). A file of another commit or writer, or one
that cannot be read, holds no answer; one that cannot be written is left as it was.

Anyone who can write the scratch folder can write this file, so no answer that decides what
an experiment may change is kept here (which files are readonly is read of git every time).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..runtime.atomic import WriteFailed, write_atomic

T = TypeVar("T")


class CommitFacts:
    """The answers kept in the file ``path`` about commit ``commit`` by ``made_by`` (the
    package's version: another one may answer otherwise)."""

    def __init__(self, path: Path, commit: str, made_by: str) -> None:
        self.path = path
        self.commit = commit
        self.made_by = made_by
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
        document = {"commit": self.commit, "made_by": self.made_by, "facts": facts}
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
                    and document.get("made_by") == self.made_by \
                    and isinstance(document.get("facts"), dict):
                self._facts = document["facts"]
        return self._facts
