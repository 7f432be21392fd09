"""The ideas backlog, ``.auto/ideas.md`` (DESIGN.md section 3): Markdown checkboxes,
``- [ ] idea`` open, ``- [~] idea`` offered by a hook, ``- [x] ~~idea~~ → note`` tried (as the
seed writes it). No click, no git."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .files import write_atomic
from .report import one_line

if TYPE_CHECKING:
    from .layout import Layout
    from .ledger import Run

IDEA_RE = re.compile(r"^(\s*[-*]\s+)\[([ xX~])\]\s+(.*\S)\s*$")


@dataclass
class Idea:
    """A checkbox line of ``.auto/ideas.md``: its 1-based ``number`` among the checkboxes,
    ``state`` (``open``, ``taken``: offered by a hook, ``done``), ``text`` and file ``line``."""

    number: int
    state: str
    text: str
    line: int

    def to_json(self) -> dict[str, int | str]:
        """The idea as ``ideas --json`` shows it: ``number``, ``state``, ``text``."""
        return {"number": self.number, "state": self.state, "text": self.text}


def backlog_path(layout: Layout) -> Path:
    """``.auto/ideas.md`` (a backlog may come before the session); :class:`Refused` when the
    session's files are gone but a state ref holds them, whose backlog a new file would hide."""
    from .errors import Refused
    from .state import sessions

    if not layout.config.exists() and sessions(layout.repo):
        raise Refused(f"no .auto/config.toml: {layout.missing_hint()} (its ideas with it)")
    return layout.ideas


def read_ideas(path: Path) -> list[Idea]:
    """The checkbox lines of the backlog at ``path``, in file order ([] when there is none)."""
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except FileNotFoundError:
        return []
    ideas: list[Idea] = []
    for index, line in enumerate(lines):
        match = IDEA_RE.match(line)
        if match:
            mark = match.group(2)
            state = "open" if mark == " " else "taken" if mark == "~" else "done"
            ideas.append(Idea(len(ideas) + 1, state, match.group(3), index))
    return ideas


def add_idea(path: Path, text: str) -> Idea:
    """Append ``- [ ] text`` (one line) to the backlog, creating it with a heading; the file is
    replaced whole (:func:`~git_autoresearch.files.write_atomic`), so the caller holds the
    session lock. :class:`UsageError` for empty text or more than 64 KiB."""
    from .inputs import check_text

    text = one_line(check_text("the idea", text))
    if not text:
        from .errors import UsageError

        raise UsageError("an idea needs some text")
    path.parent.mkdir(parents=True, exist_ok=True)
    existing = path.read_text(encoding="utf-8") if path.exists() else "# Ideas backlog\n\n"
    if existing and not existing.endswith("\n"):
        existing += "\n"
    write_atomic(path, (existing + f"- [ ] {text}\n").encode("utf-8"))
    return read_ideas(path)[-1]


def mark_done(path: Path, number: int, note: str | None) -> Idea:
    """Mark idea ``number`` tried, as the seed writes it: ``- [x] ~~idea~~ → note``."""
    ideas = read_ideas(path)
    found = next((i for i in ideas if i.number == number), None)
    if found is None:
        from .errors import UsageError

        raise UsageError(f"no idea {number} (there are {len(ideas)})")
    lines = path.read_text(encoding="utf-8").split("\n")
    match = IDEA_RE.match(lines[found.line])
    assert match is not None
    text = re.sub(r" \(offered before run \d+\)$", "", found.text)
    if not text.startswith("~~"):
        text = f"~~{text}~~"
    lines[found.line] = f"{match.group(1)}[x] {text}" + (f" → {note}" if note else "")
    write_atomic(path, "\n".join(lines).encode("utf-8"))
    return read_ideas(path)[number - 1]


def next_idea(ideas: list[Idea]) -> Idea | None:
    """The first open idea, else the first one a hook offered but nobody marked done."""
    return next((i for i in ideas if i.state == "open"),
                next((i for i in ideas if i.state == "taken"), None))


def tried_note(run: Run | None, note: str | None) -> str | None:
    """What ``ideas done`` writes after the arrow: ``run N, status, metric`` of the run that
    tried the idea, then the free ``note``, joined by ``; `` (None when there is neither)."""
    from .report import fmt

    parts = [f"run {run.number}, {run.status}, {fmt(run.metric)}"] if run is not None else []
    if note:
        parts.append(note)
    return "; ".join(parts) or None
