"""The ideas backlog, ``.auto/ideas.md`` (git-autoresearch-ideas(1)). An idea is a Markdown list
item: ``- [ ] idea`` open, ``- [~] idea`` offered by a hook, ``- [x] ~~idea~~ → note`` tried (as the
loop seed writes them), or a plain ``- idea`` (``*``, ``+`` or ``1.`` too), as pi-autoresearch's
agent writes them, open unless struck through. No click, no git."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..review.report import one_line
from ..runtime.atomic import read_text_whole, write_atomic

if TYPE_CHECKING:
    from ..ledger import Run
    from .layout import Layout

# A list item: its indent, its marker (a bullet, or a number and "." or ")"), the space after
# it, an optional checkbox, and the text.
IDEA_RE = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])(\s+)(?:\[([ xX~])\]\s+)?(.*\S)\s*$")
# A plain item indented this far or more is a detail of the item above it, not an idea.
DETAIL_INDENT = 2


@dataclass
class Idea:
    """A list item of ``.auto/ideas.md``: its 1-based ``number`` among the ideas, ``state``
    (``open``, ``taken``: offered by a hook, ``done``), ``text`` and file ``line`` (0-based)."""

    number: int
    state: str
    text: str
    line: int

    def to_json(self) -> dict[str, int | str]:
        """The idea as ``ideas --json`` shows it: ``number``, ``state``, ``text``."""
        return {"number": self.number, "state": self.state, "text": self.text}


def _item(line: str) -> tuple[str, str | None, str] | None:
    """``(prefix, mark, text)`` of an idea line (``mark`` None for a plain item), or None: a
    checkbox at any depth is an idea; a plain item only at the top level, and not a ``---``
    or ``* * *`` rule."""
    match = IDEA_RE.match(line)
    if match is None:
        return None
    indent, marker, space, mark, text = match.groups()
    if mark is None and (len(indent.expandtabs(4)) >= DETAIL_INDENT
                         or not text.strip("-*_ ")):
        return None
    return indent + marker + space, mark, text


def _state(mark: str | None, text: str) -> str:
    if mark is None:
        return "done" if text.startswith("~~") else "open"
    return "open" if mark == " " else "taken" if mark == "~" else "done"


def backlog_path(layout: Layout) -> Path:
    """``.auto/ideas.md`` (a backlog may come before the session), or the older flat
    ``autoresearch.ideas.md`` of a pi-autoresearch session that has no ``.auto/`` file
    (:meth:`Layout.session_file`); :class:`Refused` when the session's files are gone but a
    state ref holds them, whose backlog a new file would hide."""
    from ..history.state_ref import sessions
    from ..runtime.errors import Refused

    if not layout.config_exists() and sessions(layout.repo):
        raise Refused(f"no .auto/config.toml: {layout.missing_hint()} (its ideas with it)")
    return layout.session_file("ideas")


def read_ideas(path: Path) -> list[Idea]:
    """The ideas of the backlog at ``path``, in file order ([] when there is none)."""
    lines = read_text_whole(path).split("\n")
    ideas: list[Idea] = []
    for index, line in enumerate(lines):
        item = _item(line)
        if item is not None:
            _, mark, text = item
            ideas.append(Idea(len(ideas) + 1, _state(mark, text), text, index))
    return ideas


def unread_warning(path: Path, ideas: list[Idea], shown: str | None = None) -> str | None:
    """A warning when the backlog at ``path`` holds text (besides headings) but not one idea
    was read from it, so that an empty list is not taken for an empty backlog; else None.
    ``shown`` is how the warning names the file (default: ``path``)."""
    if ideas:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    if not any(line.strip() and not line.lstrip().startswith("#") for line in text.split("\n")):
        return None
    return (f"{shown or path} has text but no idea: an idea is a list item "
            "('- idea' or '- [ ] idea'); nothing was read from it")


def add_idea(path: Path, text: str) -> Idea:
    """Append ``- [ ] text`` (one line) to the backlog, creating it with a heading; the file is
    replaced whole (:func:`~git_autoresearch.runtime.atomic.write_atomic`), so the caller holds the
    session lock. :class:`UsageError` for empty text or more than 64 KiB."""
    from ..runtime.bounds import check_text

    text = one_line(check_text("the idea", text))
    if not text:
        from ..runtime.errors import UsageError

        raise UsageError("an idea needs some text")
    path.parent.mkdir(parents=True, exist_ok=True)
    existing = path.read_text(encoding="utf-8") if path.exists() else "# Ideas backlog\n\n"
    if existing and not existing.endswith("\n"):
        existing += "\n"
    write_atomic(path, (existing + f"- [ ] {text}\n").encode("utf-8"))
    return read_ideas(path)[-1]


def mark_done(path: Path, number: int, note: str | None) -> Idea:
    """Mark idea ``number`` tried, as the seed writes it: ``- [x] ~~idea~~ → note`` (a plain
    item gets the checkbox after its own marker); every other line stays as it was."""
    ideas = read_ideas(path)
    found = next((i for i in ideas if i.number == number), None)
    if found is None:
        from ..runtime.errors import UsageError

        raise UsageError(f"no idea {number} (there are {len(ideas)})")
    lines = path.read_text(encoding="utf-8").split("\n")
    item = _item(lines[found.line])
    assert item is not None
    text = re.sub(r" \(offered before run \d+\)$", "", found.text)
    if not text.startswith("~~"):
        text = f"~~{text}~~"
    lines[found.line] = f"{item[0]}[x] {text}" + (f" → {note}" if note else "")
    write_atomic(path, "\n".join(lines).encode("utf-8"))
    return read_ideas(path)[number - 1]


def next_idea(ideas: list[Idea]) -> Idea | None:
    """The first open idea, else the first one a hook offered but nobody marked done."""
    return next((i for i in ideas if i.state == "open"),
                next((i for i in ideas if i.state == "taken"), None))


def tried_note(run: Run | None, note: str | None) -> str | None:
    """What ``ideas done`` writes after the arrow: ``run N, status, metric`` of the run that
    tried the idea, then the free ``note``, joined by ``; `` (None when there is neither)."""
    from ..review.report import fmt

    parts = [f"run {run.number}, {run.status}, {fmt(run.metric)}"] if run is not None else []
    if note:
        parts.append(note)
    return "; ".join(parts) or None
