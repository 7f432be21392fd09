#!/usr/bin/env python3
# qmd-search: searches local documents with qmd ($AUTORESEARCH_QMD_CMD, default "qmd search").
# needs: qmd on PATH, or AUTORESEARCH_QMD_CMD, a search command that takes the query last
"""A before hook for git-autoresearch.

The query is the goal plus the last run's `next_action_hint`, `next_focus` or description. The
command in AUTORESEARCH_QMD_CMD (default `qmd search`, a local Markdown search) is run with the
query as its last argument (no shell), its output saved to .auto/qmd/run-<N>.md, and its
beginning printed as the steer. Without the variable and without qmd on PATH it does nothing;
when the command is missing or fails, it exits non-zero saying why.
"""
import json
import os
import shlex
import shutil
import subprocess
import sys

FOLDER = os.path.join(".auto", "qmd")
NAME = "qmd-search"
VARIABLE = "AUTORESEARCH_QMD_CMD"
DEFAULT = "qmd search"
STEER_LINES = 20


def query_for(payload):
    session = payload.get("session") or {}
    last = payload.get("last_run") or {}
    asi = last.get("asi") or {}
    focus = asi.get("next_action_hint") or asi.get("next_focus") or last.get("description") or ""
    return " ".join(str(part) for part in (session.get("goal") or "", focus) if part).strip()


def main():
    payload = json.loads(sys.stdin.readline() or "{}")
    command = os.environ.get(VARIABLE, "").strip()
    if not command:
        if shutil.which(DEFAULT.split()[0]) is None:
            return  # not set up: `git autoresearch hooks list` names what it needs
        command = DEFAULT
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
