#!/usr/bin/env python3
# hypothesis-reflection: asks a language model CLI ($AUTORESEARCH_LLM_CMD) to reflect on runs.
# needs: AUTORESEARCH_LLM_CMD, a command that reads a prompt on stdin and prints an answer
"""A before hook for git-autoresearch.

Builds a prompt from the goal and the last AUTORESEARCH_REFLECT_RUNS (default 10) runs of the
segment (status, metric, description, hypothesis and other annotations) and sends it on stdin to
the command in AUTORESEARCH_LLM_CMD (for example `llm -m gpt-4o-mini` or `claude -p`). The answer
is appended to .auto/reflections.md and its beginning is printed as the steer. Without the
variable it does nothing; when the command fails, it exits non-zero with a message that says
why.
"""
import json
import os
import subprocess
import sys

LEDGER = os.path.join(".auto", "log.jsonl")
OUTPUT = os.path.join(".auto", "reflections.md")
STEER_LINES = 25


def segment_runs(path):
    runs = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if isinstance(entry, dict) and entry.get("type") == "config":
                    runs = []
                elif isinstance(entry, dict) and "type" not in entry and "run" in entry:
                    runs.append(entry)
    except FileNotFoundError:
        pass
    return runs


def prompt_for(payload, runs):
    session = payload.get("session") or {}
    lines = [
        f"Goal: {session.get('goal')}. Metric: {session.get('metric_name')} "
        f"({session.get('direction')} is better). Baseline {session.get('baseline_metric')}, "
        f"best {session.get('best_metric')}.",
        "Recent experiments, oldest first:",
    ]
    for run in runs:
        metric = "-" if run.get("status") == "crash" else run.get("metric")
        asi = json.dumps(run.get("asi") or {}, ensure_ascii=False)
        lines.append(f"- run {run.get('run')}: {run.get('status')}, {metric}: "
                     f"{run.get('description')} {asi}")
    lines.append("In at most 10 lines: which hypotheses held, which failed and why, and the "
                 "single most promising next experiment.")
    return "\n".join(lines) + "\n"


def main():
    payload = json.loads(sys.stdin.readline() or "{}")
    command = os.environ.get("AUTORESEARCH_LLM_CMD", "").strip()
    if not command:
        return  # not set up: `git autoresearch hooks list` names the variable
    try:
        count = max(1, int(os.environ.get("AUTORESEARCH_REFLECT_RUNS", "10")))
    except ValueError:
        count = 10
    runs = segment_runs(LEDGER)[-count:]
    try:
        proc = subprocess.run(command, shell=True, input=prompt_for(payload, runs),
                              capture_output=True, text=True, timeout=25)
    except subprocess.TimeoutExpired:
        sys.exit(f"hypothesis-reflection: '{command}' gave no answer within 25 s")
    if proc.returncode != 0:
        sys.exit(f"hypothesis-reflection: '{command}' failed with exit code {proc.returncode}: "
                 f"{proc.stderr.strip()[-300:]}")
    answer = proc.stdout.strip()
    if not answer:
        return
    with open(OUTPUT, "a", encoding="utf-8") as fh:
        fh.write(f"\n## Before run {payload.get('next_run', '?')}\n\n{answer}\n")
    head = "\n".join(answer.splitlines()[:STEER_LINES])
    print(f"Reflection on the last {len(runs)} runs (also in {OUTPUT}):\n{head}")


if __name__ == "__main__":
    main()
