"""Path rules for ``scope`` and ``protected`` (DESIGN.md sections 3 and 4).

A rule is a path relative to the top of the work tree, with ``/`` separators:

- ``src/sort.py`` matches that file, and ``src`` (or ``src/``) matches everything below it;
- ``dir/**`` matches ``dir`` and everything below it;
- a rule with ``*``, ``?`` or ``[`` is a glob over the whole path, where ``**`` crosses
  directories and ``*`` does not; a glob without ``/`` (``*.py``) matches at any depth, as in
  ``.gitignore``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

# Protected whatever the configuration says: the session folder, and the layouts older
# implementations used, so that sessions begun with them survive our reverts.
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
)


def normalise(rule: str) -> str:
    """A rule in canonical form: no ``./`` prefix, no trailing ``/``, ``/`` separators."""
    rule = rule.replace("\\", "/").strip()
    while rule.startswith("./"):
        rule = rule[2:]
    return rule.rstrip("/")


@lru_cache(maxsize=256)
def _compile(rule: str) -> re.Pattern[str]:
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
                body = rule[i + 1:end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    prefix = "" if "/" in rule else r"(?:.*/)?"
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
    """What an experiment may change: ``scope`` (empty: everything) minus ``protected``."""

    def __init__(self, scope: Iterable[str], protected: Iterable[str]) -> None:
        self.scope = PathRules(scope)
        self.protected = PathRules([*DEFAULT_PROTECTED, *protected])

    def is_protected(self, path: str) -> bool:
        return self.protected.matches(path)

    def in_scope(self, path: str) -> bool:
        """Whether an experiment may change ``path``: not protected, and inside the scope if set."""
        if self.protected.matches(path):
            return False
        return not self.scope or self.scope.matches(path)
