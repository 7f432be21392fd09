#!/usr/bin/env python3
# idea-rotator: offers the next open idea of .auto/ideas.md and marks it taken, so none comes twice.
"""A before hook for git-autoresearch.

The backlog is Markdown checkboxes: `- [ ] idea` is open, `- [~] idea` was offered, `- [x] idea`
was tried. The first open idea is printed as the steer and its box becomes `[~]`, with the run it
was offered for, so the same idea is not offered again. An idea offered for the very run about to
start (one that was interrupted, or hooks fired by hand) is offered again instead of a new one.
"""
import json
import os
import re
import sys

IDEAS = os.path.join(".auto", "ideas.md")
OPEN = re.compile(r"^(\s*[-*]\s+)\[ \]\s+(.*\S)\s*$")
OFFERED = re.compile(r"^\s*[-*]\s+\[~\]\s+(.*\S) \(offered before run (\d+)\)\s*$")


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
        if match and match.group(2) == str(run):
            print(f"Next idea from the backlog (.auto/ideas.md): {match.group(1)}")
            return
    for index, line in enumerate(lines):
        match = OPEN.match(line)
        if match:
            idea = match.group(2)
            lines[index] = f"{match.group(1)}[~] {idea} (offered before run {run})"
            tmp = IDEAS + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write("\n".join(lines))
            os.replace(tmp, IDEAS)
            print(f"Next idea from the backlog (.auto/ideas.md): {idea}")
            return


if __name__ == "__main__":
    main()
