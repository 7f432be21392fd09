#!/usr/bin/env python3
# external-search: runs a web search CLI ($AUTORESEARCH_SEARCH_CMD) on the goal and the next focus.
# needs: AUTORESEARCH_SEARCH_CMD, a search command that takes the query as its last argument
"""A before hook for git-autoresearch.

The query is the goal plus the last run's `next_action_hint`, `next_focus` or description. The
command in AUTORESEARCH_SEARCH_CMD is run with the query as its last argument (no shell), its
output saved to .auto/search/run-<N>.md, and its beginning printed as the steer. Without the
variable it does nothing; when the command is missing or fails, it exits non-zero saying why.
"""
import json
import os
import shlex
import subprocess
import sys

FOLDER = os.path.join(".auto", "search")
NAME = "external-search"
VARIABLE = "AUTORESEARCH_SEARCH_CMD"
DEFAULT = ""
STEER_LINES = 20


def query_for(payload):
    session = payload.get("session") or {}
    last = payload.get("last_run") or {}
    asi = last.get("asi") or {}
    focus = asi.get("next_action_hint") or asi.get("next_focus") or last.get("description") or ""
    return " ".join(str(part) for part in (session.get("goal") or "", focus) if part).strip()


def main():
    payload = json.loads(sys.stdin.readline() or "{}")
    command = os.environ.get(VARIABLE, DEFAULT).strip()
    if not command:
        return  # not set up: `git autoresearch hooks list` names the variable
    query = query_for(payload)
    if not query:
        return
    argv = shlex.split(command) + [query]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=25)
    except FileNotFoundError:
        sys.exit(f"{NAME}: the command '{argv[0]}' was not found (from {VARIABLE}='{command}')")
    except subprocess.TimeoutExpired:
        sys.exit(f"{NAME}: '{command}' gave no answer within 25 s")
    if proc.returncode != 0:
        sys.exit(f"{NAME}: '{command}' failed with exit code {proc.returncode}: "
                 f"{proc.stderr.strip()[-300:]}")
    os.makedirs(FOLDER, exist_ok=True)
    path = os.path.join(FOLDER, f"run-{payload.get('next_run', 'next')}.md")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"# {query}\n\n{proc.stdout}")
    head = "\n".join(proc.stdout.strip().splitlines()[:STEER_LINES])
    print(f"{NAME} for '{query}' (all of it in {path}):\n{head}")


if __name__ == "__main__":
    main()
