#!/usr/bin/env python3
# context-rotation: when .auto/prompt.md grows past a size, keeps its head and archives the rest.
"""A before hook for git-autoresearch.

When .auto/prompt.md is larger than AUTORESEARCH_PROMPT_MAX_BYTES (default 16384), its first
AUTORESEARCH_PROMPT_KEEP_BYTES (default half the maximum, cut at a line end) stay, and the rest is
appended to .auto/prompt.archive.md under a heading that names the run. Prints what it did.
"""
import json
import os
import sys
import time

PROMPT = os.path.join(".auto", "prompt.md")
ARCHIVE = os.path.join(".auto", "prompt.archive.md")


def setting(name, default):
    try:
        return max(1, int(os.environ.get(name, default)))
    except ValueError:
        return default


def main():
    payload = json.loads(sys.stdin.readline() or "{}")
    limit = setting("AUTORESEARCH_PROMPT_MAX_BYTES", 16384)
    keep = min(setting("AUTORESEARCH_PROMPT_KEEP_BYTES", limit // 2), limit)
    try:
        with open(PROMPT, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return
    if len(data) <= limit:
        return
    cut = data.rfind(b"\n", 0, keep) + 1 or keep
    head, rest = data[:cut], data[cut:]
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    with open(ARCHIVE, "ab") as fh:
        fh.write(f"\n## Archived before run {payload.get('next_run', '?')} ({stamp})\n\n".encode())
        fh.write(rest)
    tmp = PROMPT + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(head)
    os.replace(tmp, PROMPT)
    print(f"Context rotation: .auto/prompt.md had grown to {len(data)} bytes; its first "
          f"{len(head)} bytes stay and the other {len(rest)} moved to .auto/prompt.archive.md. "
          "Re-read .auto/prompt.md, and write new learnings there concisely.")


if __name__ == "__main__":
    main()
