#!/usr/bin/env python3
# idea-rotator: offers the next open idea of .auto/ideas.md and marks it taken, so none comes twice.
"""A before hook for git-autoresearch.

The backlog is Markdown checkboxes: `- [ ] idea` is open, `- [~] idea` was offered, `- [x] idea`
was tried. The first open idea is printed as the steer and its box becomes `[~]`, with the run it
was offered for, so the same idea is not offered again.
"""
import json
import os
import re
import sys

IDEAS = os.path.join(".auto", "ideas.md")
OPEN = re.compile(r"^(\s*[-*]\s+)\[ \]\s+(.*\S)\s*$")


def main():
    payload = json.loads(sys.stdin.readline() or "{}")
    try:
        with open(IDEAS, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
    except FileNotFoundError:
        return
    for index, line in enumerate(lines):
        match = OPEN.match(line)
        if match:
            idea = match.group(2)
            run = payload.get("next_run", "?")
            lines[index] = f"{match.group(1)}[~] {idea} (offered before run {run})"
            tmp = IDEAS + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write("\n".join(lines))
            os.replace(tmp, IDEAS)
            print(f"Next idea from the backlog (.auto/ideas.md): {idea}")
            return


if __name__ == "__main__":
    main()
