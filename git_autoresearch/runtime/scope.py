"""Path rules for ``scope``, ``protected`` and ``readonly`` (gitautoresearch-config(5)).

A rule is a path relative to the top of the work tree, with ``/`` separators:

- ``src/sort.py`` matches that file, and ``src`` (or ``src/``) matches everything below it;
- ``dir/**`` matches ``dir`` and everything below it;
- a rule with ``*``, ``?`` or ``[`` is a glob over the whole path, where ``**`` crosses
  directories and ``*`` does not; a glob without ``/`` (``*.py``) matches at any depth, as in
  ``.gitignore``, unless a leading ``/`` anchors it at the top (``/notes*``).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from .errors import UsageError

# The session folder, relative to the top of the work tree (gitautoresearch-files(5)).
AUTO = ".auto"

# Protected whatever the configuration says: the session folder, the layouts older
# implementations used, so that sessions begun with them survive our reverts, and the agent
# skill's files.
DEFAULT_PROTECTED = (
    ".auto/**",
    ".autoresearch/**",
    "autoresearch.jsonl",
    "autoresearch.md",
    "autoresearch.ideas.md",
    "autoresearch.sh",
    "autoresearch.checks.sh",
    "autoresearch.config.json",
    "autoresearch.hooks/**",
    # The agent's instructions, where `git autoresearch skill --install` writes them.
    ".claude/skills/git-autoresearch/**",
    ".pi/skills/git-autoresearch/**",
    ".agents/skills/git-autoresearch/**",
    "AGENTS.md",
)


def slashes(rule: str) -> str:
    """``rule`` with each backslash read as ``/``, but inside a bracket (``a[\\]b.py``, the
    file ``a\\b.py``), where it is itself: a name may hold one, as git takes it."""
    if "\\" not in rule:
        return rule
    out = []
    i = 0
    while i < len(rule):
        end = rule.find("]", i + 1) if rule[i] == "[" else -1
        if end != -1:
            out.append(rule[i:end + 1])
            i = end + 1
            continue
        out.append("/" if rule[i] == "\\" else rule[i])
        i += 1
    return "".join(out)


def literal_path(rule: str) -> str | None:
    """The path ``rule`` names when it is a path, not a pattern: itself, with each character
    written alone in brackets (``da[\\]ta``, ``a[*]b``) taken as that character; None when
    it holds a ``*`` or ``?``, or a bracket of more than one character."""
    out = []
    i = 0
    while i < len(rule):
        c = rule[i]
        if c in "*?":
            return None
        if c == "[":
            if i + 2 >= len(rule) or rule[i + 2] != "]":
                return None
            out.append(rule[i + 1])
            i += 3
            continue
        out.append(c)
        i += 1
    return "".join(out)


def normalise(rule: str) -> str:
    """A rule in canonical form: no ``./`` prefix, no trailing ``/``, ``/`` separators (a
    backslash outside a bracket read as one: :func:`slashes`)."""
    rule = slashes(rule).strip()
    while rule.startswith("./"):
        rule = rule[2:]
    return rule.rstrip("/")


def from_directory(entry: str, prefix: str, top: Path, *, what: str) -> str:
    """The rule ``entry`` given on the command line from the folder ``prefix`` (relative to the
    top, ``/`` separators, ``""`` at the top; as ``git rev-parse --show-prefix`` prints it),
    made relative to the top as git reads a pathspec: from ``src/``, ``value.txt`` is
    ``src/value.txt``, ``../x`` is ``x`` and an absolute path inside the work tree is that path.
    ``what`` names the option in the error. Raises :class:`UsageError` for a path outside the
    work tree."""
    raw = slashes(entry).strip()
    if not raw:
        return raw
    if os.path.isabs(raw):
        absolute = posixpath.normpath(raw)
        for base in {top.as_posix(), top.resolve().as_posix()}:
            if absolute == base:
                return "**"
            if absolute.startswith(base.rstrip("/") + "/"):
                return absolute[len(base.rstrip("/")) + 1:]
        raise UsageError(f"{what} {entry}: the path is outside the repository {top}")
    joined = posixpath.normpath(prefix + raw)
    if joined == ".." or joined.startswith("../"):
        raise UsageError(f"{what} {entry}: the path is outside the repository {top}")
    if joined == ".":
        return "**"
    if "/" not in joined and any(c in joined for c in "*?[") and (prefix or "/" in raw):
        # ``../notes*`` from a subdirectory names the top's notes files, not any depth's.
        return "/" + joined
    return joined


def unmatched(rules: Iterable[str], top: Path, names: Iterable[str]) -> list[str]:
    """The rules of ``rules`` that match no path: a plain rule names nothing in the work tree
    under ``top``, a glob matches none of ``names`` (the tracked, untracked and ignored paths,
    relative to the top; a folder may end in ``/``)."""
    missing = []
    globs = []
    for rule in rules:
        plain = normalise(rule)
        if plain.endswith("/**") and not any(c in plain[:-3] for c in "*?["):
            plain = plain[:-3]
        if any(c in plain for c in "*?["):
            globs.append(rule)
        elif not os.path.lexists(top / plain.lstrip("/")):
            missing.append(rule)
    if globs:
        listed = [n.rstrip("/") for n in names]
        for rule in globs:
            pattern = _compile(normalise(rule))
            if not any(pattern.match(n) for n in listed):
                missing.append(rule)
    return [r for r in rules if r in missing]


@lru_cache(maxsize=256)
def _compile(rule: str) -> re.Pattern[str]:
    anchored = rule.startswith("/")
    rule = rule.lstrip("/")
    if rule.endswith("/**") and not any(c in rule[:-3] for c in "*?["):
        return re.compile(re.escape(rule[:-3]) + r"(/.*)?\Z", re.S)
    if not any(c in rule for c in "*?["):
        return re.compile(re.escape(rule) + r"(/.*)?\Z", re.S)
    out = []
    i = 0
    while i < len(rule):
        c = rule[i]
        if rule.startswith("**/", i):
            out.append(r"(?:.*/)?")
            i += 3
            continue
        if rule.startswith("**", i):
            out.append(r".*")
            i += 2
            continue
        if c == "*":
            out.append(r"[^/]*")
        elif c == "?":
            out.append(r"[^/]")
        elif c == "[":
            end = rule.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                # (a character Python's sets may one day read as an operator or a nested
                # set, and which it warns of now: taken as itself, as git takes it)
                body = re.sub(r"([\\\[&~|])", r"\\\1", rule[i + 1:end])
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    prefix = "" if "/" in rule or anchored else r"(?:.*/)?"
    return re.compile(prefix + "".join(out) + r"(/.*)?\Z", re.S)


def check_rule(rule: str) -> str | None:
    """Why ``rule`` is not a usable path rule, or None."""
    try:
        _compile(normalise(rule))
    except re.error as exc:
        return str(exc)
    return None


class PathRules:
    """A set of rules; ``matches(path)`` tells whether any rule covers ``path``."""

    def __init__(self, rules: Iterable[str]) -> None:
        self.rules = tuple(r for r in (normalise(x) for x in rules) if r)
        self._patterns = [_compile(r) for r in self.rules]

    def __bool__(self) -> bool:
        return bool(self.rules)

    def matches(self, path: str) -> bool:
        """Whether ``path`` (relative to the top, ``/`` separators) is covered by a rule."""
        return any(p.match(path) for p in self._patterns)


class Boundaries:
    """What an experiment may change: ``scope`` (empty: everything) minus ``protected`` (the
    agent's notes: never reverted, never committed) and minus ``readonly`` (what defines
    success: never committed, and put back to HEAD when changed).

    ``scripts`` are the files the configured commands name (exact paths): readonly even when
    a ``protected`` rule of the configuration covers them, since sessions begun when
    ``protected`` also meant "must not change" listed their benchmark there. The session
    folder and the older layouts (:data:`DEFAULT_PROTECTED`) stay protected whatever else
    matches. A readonly path inside the scope is readonly.
    """

    def __init__(self, scope: Iterable[str], protected: Iterable[str],
                 readonly: Iterable[str] = (), scripts: Iterable[str] = ()) -> None:
        self.scope = PathRules(scope)
        self.protected = PathRules([*DEFAULT_PROTECTED, *protected])
        self.readonly = PathRules(readonly)
        self.scripts = frozenset(scripts)
        self._session = PathRules(DEFAULT_PROTECTED)

    def is_protected(self, path: str) -> bool:
        """Whether ``path`` belongs to the notes: no revert touches it, no keep commits it."""
        if path in self.scripts and not self._session.matches(path):
            return False
        return self.protected.matches(path)

    def is_readonly(self, path: str) -> bool:
        """Whether ``path`` defines success: a change to it is undone and recorded."""
        if self.is_protected(path):
            return False
        return path in self.scripts or self.readonly.matches(path)

    def in_scope(self, path: str) -> bool:
        """Whether an experiment may change ``path``: neither protected nor readonly, and
        inside the scope if one is set."""
        if self.is_protected(path) or self.is_readonly(path):
            return False
        return not self.scope or self.scope.matches(path)
