"""The agent skill: a text that teaches a coding agent the loop with our commands, and where
each harness reads it (``git autoresearch skill``).

The text is ``share/skill/SKILL.md`` (installed as ``git_autoresearch/_data/skill``): a
Markdown file with a YAML front matter of ``name`` and ``description``, the form Claude Code
and pi read skills in (pi-autoresearch 1.6.2, skills/autoresearch-create/SKILL.md: the same
two keys). Codex reads ``AGENTS.md`` at the top of the repository, where the text goes
between two marker lines, without its front matter, so that installing again replaces it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..git import Repo
from ..runtime.errors import Refused
from ..runtime.resources import data_path

NAME = "git-autoresearch"
# Where each harness reads a skill, relative to the top of the repository.
TARGETS: dict[str, str] = {
    "claude": f".claude/skills/{NAME}/SKILL.md",
    "codex": "AGENTS.md",
    "pi": f".pi/skills/{NAME}/SKILL.md",
    "generic": f".agents/skills/{NAME}/SKILL.md",
}
BEGIN = f"<!-- {NAME}: begin (written by git autoresearch skill --install codex) -->"
END = f"<!-- {NAME}: end -->"


def skill_text() -> str:
    """The skill as shipped: ``SKILL.md`` with its front matter."""
    return (data_path("skill") / "SKILL.md").read_text(encoding="utf-8")


def body(text: str) -> str:
    """``text`` without its front matter (the lines from a first ``---`` to the next)."""
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            return text[end + 5:].lstrip("\n")
    return text


def text_for(harness: str) -> str:
    """What ``--install harness`` writes: the whole ``SKILL.md``, or for ``codex`` the
    ``AGENTS.md`` section (the body between :data:`BEGIN` and :data:`END`). KeyError for an
    unknown harness."""
    if harness not in TARGETS:
        raise KeyError(harness)
    text = skill_text()
    if harness == "codex":
        return f"{BEGIN}\n{body(text).rstrip()}\n{END}\n"
    return text


@dataclass
class Installed:
    """What :func:`install` did: the file (relative to the top) and ``created``, ``updated``
    or ``unchanged``."""

    path: str
    action: str


def _ours(text: str) -> bool:
    """Whether a SKILL.md is one this command wrote (its front matter names :data:`NAME`)."""
    head = text.split("\n---\n", 1)[0] if text.startswith("---\n") else ""
    return f"\nname: {NAME}\n" in head + "\n"


def install(harness: str, *, force: bool = False, top: Path | None = None) -> Installed:
    """Write the skill where ``harness`` reads it, under the repository top ``top`` (default:
    that of the repository here).

    A SKILL.md this command wrote is replaced; another file there is refused (:class:`Refused`)
    unless ``force``. For ``codex``, the marked section of ``AGENTS.md`` is replaced, or the
    section is appended to the file (created when missing), the rest of it left as it was.
    """
    rel = TARGETS[harness]
    path = (top or Repo.discover().top) / rel
    new = text_for(harness)
    old = path.read_text(encoding="utf-8") if path.is_file() else None
    if path.exists() and not path.is_file():
        raise Refused(f"{rel} exists and is not a file")
    if harness == "codex" and old is not None:
        start, stop = old.find(BEGIN), old.find(END)
        if start != -1 and stop > start:
            new = old[:start] + new.rstrip("\n") + old[stop + len(END):]
            if not new.endswith("\n"):
                new += "\n"
        else:
            new = old + ("" if old.endswith("\n") or not old else "\n") \
                + ("\n" if old else "") + new
    elif old is not None and old != new and not _ours(old) and not force:
        raise Refused(f"{rel} exists and is not git-autoresearch's skill; "
                      "--force replaces it")
    if old == new:
        return Installed(rel, "unchanged")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(new, encoding="utf-8")
    os.replace(tmp, path)
    return Installed(rel, "created" if old is None else "updated")
