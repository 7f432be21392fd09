#!/usr/bin/env python3
# anti-thrash: warns after N runs in a row that were not kept (N: AUTORESEARCH_THRASH_LIMIT, 5).
"""A before hook for git-autoresearch.

Counts the runs at the end of the current segment whose status is discard, crash or
checks_failed, and prints a steer when that streak reaches the limit, with its real length.
"""
import json
import os
import sys

LEDGER = os.path.join(".auto", "log.jsonl")


def segment_runs(path):
    """The run records of the ledger's last segment, oldest first; unreadable lines skipped."""
    runs = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(entry, dict):
                    continue
                if entry.get("type") == "config":
                    runs = []
                elif "type" not in entry and "run" in entry:
                    runs.append(entry)
    except FileNotFoundError:
        pass
    return runs


def main():
    json.loads(sys.stdin.readline() or "{}")
    try:
        limit = max(1, int(os.environ.get("AUTORESEARCH_THRASH_LIMIT", "5")))
    except ValueError:
        limit = 5
    streak = 0
    for run in reversed(segment_runs(LEDGER)):
        if run.get("status") == "keep":
            break
        streak += 1
    if streak >= limit:
        print(f"Anti-thrash: the last {streak} runs were not kept (discarded, crashed or failed "
              "their checks). Stop tweaking the same idea: re-read the files in scope, check "
              ".auto/ideas.md and .auto/prompt.md's dead ends, and try a different kind of change.")


if __name__ == "__main__":
    main()
