#!/usr/bin/env python3
# idea-rotator: offers the next open idea of .auto/ideas.md and marks it taken, so none comes twice.
"""A before hook for git-autoresearch.

The backlog is a Markdown list: `- [ ] idea` is open, and so is a plain `- idea` (as
pi-autoresearch's agent writes them; `*`, `+` and `1.` too, not indented, not struck through);
`- [~] idea` was offered, `- [x] idea` was tried. The first open idea is printed as the steer and
gets the box `[~]`, with the run it was offered for, so the same idea is not offered again. An
idea offered for the very run about to start (one that was interrupted, or hooks fired by hand)
is offered again instead of a new one.
"""
import json
import os
import re
import sys

IDEAS = os.path.join(".auto", "ideas.md")
ITEM = r"^(\s*(?:[-*+]|\d{1,9}[.)])\s+)"
OPEN_BOX = re.compile(ITEM + r"\[ \]\s+(.*\S)\s*$")
OPEN_PLAIN = re.compile(r"^( ?(?:[-*+]|\d{1,9}[.)])\s+)(?!\[[ xX~]\]\s)(?!~~)(.*\S)\s*$")
OFFERED = re.compile(ITEM + r"\[~\]\s+(.*\S) \(offered before run (\d+)\)\s*$")


def open_idea(line):
    """(prefix, idea) of an open idea's line, or None (a `---` rule is no idea)."""
    match = OPEN_BOX.match(line) or OPEN_PLAIN.match(line)
    if match is None or not match.group(2).strip("-*_ "):
        return None
    return match.group(1), match.group(2)


def main():
    payload = json.loads(sys.stdin.readline() or "{}")
    try:
        with open(IDEAS, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
    except FileNotFoundError:
        return
    run = payload.get("next_run", "?")
    for line in lines:
        match = OFFERED.match(line)
        if match and match.group(3) == str(run):
            print(f"Next idea from the backlog (.auto/ideas.md): {match.group(2)}")
            return
    for index, line in enumerate(lines):
        found = open_idea(line)
        if found:
            prefix, idea = found
            lines[index] = f"{prefix}[~] {idea} (offered before run {run})"
            tmp = IDEAS + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write("\n".join(lines))
            os.replace(tmp, IDEAS)
            print(f"Next idea from the backlog (.auto/ideas.md): {idea}")
            return


if __name__ == "__main__":
    main()
