#!/usr/bin/env python3
# notify: a desktop notification for each new best (osascript on macOS, notify-send on Linux).
"""An after hook for git-autoresearch.

When the recorded run is kept and strictly beats every earlier kept run of its segment (a tie
is no new best), announces it with `osascript` on macOS or `notify-send` on Linux; where neither
exists it stays silent.
"""
import json
import os
import platform
import shutil
import subprocess
import sys

LEDGER = os.path.join(".auto", "log.jsonl")


def earlier_kept_metrics(path, run):
    """Metrics of the kept runs of the ledger's last segment that came before ``run``."""
    metrics = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if isinstance(entry, dict) and entry.get("type") == "config":
                    metrics = []
                elif (isinstance(entry, dict) and "type" not in entry
                      and entry.get("status") == "keep" and entry.get("run", run) < run
                      and isinstance(entry.get("metric"), (int, float))):
                    metrics.append(entry["metric"])
    except FileNotFoundError:
        pass
    return metrics


def main():
    payload = json.loads(sys.stdin.readline() or "{}")
    entry = payload.get("run_entry") or {}
    session = payload.get("session") or {}
    if entry.get("status") != "keep" or entry.get("metric") is None:
        return
    earlier = earlier_kept_metrics(LEDGER, entry.get("run", 0))
    lower = session.get("direction", "lower") != "higher"
    if not earlier or not (entry["metric"] < min(earlier) if lower
                           else entry["metric"] > max(earlier)):
        return
    title = "autoresearch: new best"
    unit = session.get("metric_unit") or ""
    body = (f"{session.get('metric_name')} = {entry['metric']}{unit and ' ' + unit} "
            f"(run {entry.get('run')}, baseline {session.get('baseline_metric')}): "
            f"{entry.get('description', '')}")[:200]
    if platform.system() == "Darwin" and shutil.which("osascript"):
        script = f"display notification {json.dumps(body)} with title {json.dumps(title)}"
        subprocess.run(["osascript", "-e", script], capture_output=True, timeout=10)
    elif shutil.which("notify-send"):
        subprocess.run(["notify-send", title, body], capture_output=True, timeout=10)


if __name__ == "__main__":
    main()
