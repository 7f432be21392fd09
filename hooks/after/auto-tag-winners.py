#!/usr/bin/env python3
# auto-tag-winners: tags a kept run that strictly beats the previous best of its segment.
"""An after hook for git-autoresearch.

A kept run whose metric is strictly better than every earlier kept run of the segment (the
baseline included; a tie is not a win) gets the lightweight tag
autoresearch/<session-id>/best-run-<N> on its commit. The baseline itself is not tagged. Fired
again for the same run (after a resume, or by git autoresearch hook after), it finds the tag
there and does nothing.
"""
import json
import os
import subprocess
import sys

LEDGER = os.path.join(".auto", "log.jsonl")


def read_segment(path):
    """The last config header and the run records after it."""
    header, runs = {}, []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if isinstance(entry, dict) and entry.get("type") == "config":
                    header, runs = entry, []
                elif isinstance(entry, dict) and "type" not in entry and "run" in entry:
                    runs.append(entry)
    except FileNotFoundError:
        pass
    return header, runs


def commit_of(rev):
    """The full id of the commit ``rev`` names, or None."""
    proc = subprocess.run(["git", "rev-parse", "-q", "--verify", f"{rev}^{{commit}}"],
                          capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def main():
    payload = json.loads(sys.stdin.readline() or "{}")
    entry = payload.get("run_entry") or {}
    if entry.get("status") != "keep" or not isinstance(entry.get("metric"), (int, float)):
        return
    header, runs = read_segment(LEDGER)
    lower = (payload.get("session") or {}).get("direction", "lower") != "higher"
    earlier = [r["metric"] for r in runs if r.get("status") == "keep"
               and isinstance(r.get("metric"), (int, float)) and r.get("run", 0) < entry["run"]]
    if not earlier:
        return
    best = min(earlier) if lower else max(earlier)
    metric = entry["metric"]
    if not (metric < best if lower else metric > best):
        return
    record = next((r for r in runs if r.get("run") == entry["run"]), {})
    commit = record.get("commit")
    session = header.get("session_id") or "session"
    tag = f"autoresearch/{session}/best-run-{entry['run']}"
    if not commit:
        sys.exit(f"auto-tag-winners: run {entry['run']} has no commit in the ledger")
    if commit_of(f"refs/tags/{tag}") == commit_of(commit) is not None:
        return  # fired again for this run (resume, hook after): tagged already
    proc = subprocess.run(["git", "tag", tag, commit], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"auto-tag-winners: git tag {tag} failed: {proc.stderr.strip()}")
    print(f"Tagged run {entry['run']} ({metric}, previous best {best}) as {tag}")


if __name__ == "__main__":
    main()
