#!/usr/bin/env python3
# learnings-journal: appends one line per run to .auto/learnings.md.
"""An after hook for git-autoresearch.

Each recorded run adds one Markdown line: run number, status, metric, description, and the
run's hypothesis, what was learned and the rollback reason when it has them. A journal that
is missing (the hook installed mid-session, or the file removed: git clean -xfd takes
.auto/, and the state ref does not keep this file) is written again from the runs of
.auto/log.jsonl, so it always holds the whole session.
"""
import json
import os
import sys

JOURNAL = os.path.join(".auto", "learnings.md")
LEDGER = os.path.join(".auto", "log.jsonl")
NOTES = ("hypothesis", "learned", "rollback_reason", "next_action_hint")


def one_line(text):
    return " ".join(str(text).split())


def entry_line(entry, unit):
    # A crash carries metric 0, as pi-autoresearch gives it: no measurement, shown as "-".
    crashed = entry.get("status") == "crash" or entry.get("metric") is None
    metric = "-" if crashed else entry.get("metric")
    asi = entry.get("asi") if isinstance(entry.get("asi"), dict) else {}
    notes = "; ".join(f"{key}: {one_line(asi[key])}" for key in NOTES if asi.get(key))
    return (f"- run {entry.get('run')} **{entry.get('status')}** {metric}{unit and ' ' + unit}: "
            f"{one_line(entry.get('description') or '')}" + (f" ({notes})" if notes else ""))


def earlier_runs(number):
    """The run records of the ledger before run ``number`` (in the ledger's order)."""
    runs = []
    try:
        with open(LEDGER, encoding="utf-8", errors="replace") as fh:
            for raw in fh:
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(record, dict) and "type" not in record \
                        and isinstance(record.get("run"), int):
                    if record["run"] == number:
                        break
                    runs.append(record)
    except OSError:
        pass
    return runs


def main():
    payload = json.loads(sys.stdin.readline() or "{}")
    entry = payload.get("run_entry") or {}
    unit = (payload.get("session") or {}).get("metric_unit") or ""
    lines = [entry_line(entry, unit)]
    if not os.path.exists(JOURNAL):
        lines = ["# Learnings journal", ""] + [entry_line(run, unit)
                                               for run in earlier_runs(entry.get("run"))] + lines
    elif already(entry.get("run")):
        return  # (written when the journal was written again, by a worker's run before it)
    with open(JOURNAL, "a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))


def already(number):
    """Whether the journal has run ``number``'s line."""
    start = f"- run {number} **"
    with open(JOURNAL, encoding="utf-8", errors="replace") as fh:
        return any(line.startswith(start) for line in fh)


if __name__ == "__main__":
    main()
