#!/usr/bin/env python3
# learnings-journal: appends one line per run to .auto/learnings.md.
"""An after hook for git-autoresearch.

Each recorded run adds one Markdown line: run number, status, metric, description, and the
run's hypothesis, what was learned and the rollback reason when it has them.
"""
import json
import os
import sys

JOURNAL = os.path.join(".auto", "learnings.md")
NOTES = ("hypothesis", "learned", "rollback_reason", "next_action_hint")


def one_line(text):
    return " ".join(str(text).split())


def main():
    payload = json.loads(sys.stdin.readline() or "{}")
    entry = payload.get("run_entry") or {}
    # A crash carries metric 0, as pi-autoresearch gives it: no measurement, shown as "-".
    crashed = entry.get("status") == "crash" or entry.get("metric") is None
    metric = "-" if crashed else entry.get("metric")
    unit = (payload.get("session") or {}).get("metric_unit") or ""
    asi = entry.get("asi") or {}
    notes = "; ".join(f"{key}: {one_line(asi[key])}" for key in NOTES if asi.get(key))
    line = (f"- run {entry.get('run')} **{entry.get('status')}** {metric}{unit and ' ' + unit}: "
            f"{one_line(entry.get('description') or '')}" + (f" ({notes})" if notes else ""))
    new = not os.path.exists(JOURNAL)
    with open(JOURNAL, "a", encoding="utf-8") as fh:
        if new:
            fh.write("# Learnings journal\n\n")
        fh.write(line + "\n")


if __name__ == "__main__":
    main()
