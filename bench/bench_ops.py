"""Wall time of our keep and discard against the seeds' raw git recipe, and of log/status on a
ledger of 10,000 runs.

    python bench/bench_ops.py [--files 10000] [--repeats 7] [--runs 10000]

Everything runs as users run it: the installed ``git-autoresearch-*`` executables in a fresh
process each time, against a generated repository in a temporary folder. The raw recipe is the
seeds' (experiment-git-ops): ``git add -A`` and ``git commit`` to keep; staging and stashing the
session files, ``git checkout -- .``, ``git clean -fd`` and ``git stash pop`` to revert, with
those session files present in the work tree as they are in a real session. Prints one line per
measurement (median seconds over the repeats), the ratios the targets speak of, and the
start-up cost every command pays before it runs any git (``keep -h``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

PROTECTED = ("autoresearch.jsonl autoresearch.md autoresearch.ideas.md autoresearch.sh "
             "autoresearch.checks.sh")
RAW_KEEP = 'git add -A && if ! git diff --cached --quiet; then git commit -q -m "$1"; fi'
RAW_REVERT = (f"git add {PROTECTED} 2>/dev/null || true; "
              f"git stash push -q -- {PROTECTED} 2>/dev/null || true; "
              "git checkout -- . && git clean -fdq 2>/dev/null; "
              "git stash pop -q 2>/dev/null || true")


def sh(cwd: Path, script: str, *args: str) -> None:
    subprocess.run(["bash", "-c", script, "bench", *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL)


def tool(cwd: Path, name: str, *args: str) -> bytes:
    exe = shutil.which(f"git-autoresearch-{name}", path=sysconfig.get_paths()["scripts"])
    argv = [exe, *args] if exe else [sys.executable, "-m", "git_autoresearch", name, *args]
    return subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.PIPE).stdout


def seed_session_files(folder: Path, step: int) -> None:
    """The files a session of the seeds' recipe has in its work tree (untracked; the ledger
    grows by a line per run), which its revert stashes and pops."""
    for name in PROTECTED.split():
        path = folder / name
        if not path.exists():
            path.write_text(f"# {name}\n")
    with open(folder / "autoresearch.jsonl", "a") as fh:
        fh.write(json.dumps({"run": step, "metric": 1000 - step, "status": "keep"}) + "\n")


def make_repo(folder: Path, files: int) -> Path:
    folder.mkdir(parents=True)
    sh(folder, "git init -q -b main && git config user.name bench && "
               "git config user.email bench@example.invalid")
    for i in range(files):
        path = folder / f"d{i // 100:03d}" / f"f{i:05d}.txt"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"file {i}\n" * 4)
    (folder / "bench.sh").write_text("echo score: 1\n")
    sh(folder, "git add -A && git commit -q -m initial")
    return folder


def edit(folder: Path, step: int, new_file: bool) -> None:
    for i in (step * 7 % 10000, step * 13 % 10000, step * 31 % 10000):
        path = folder / f"d{i // 100:03d}" / f"f{i:05d}.txt"
        if path.exists():
            path.write_text(f"edit {step}\n")
    if new_file:
        (folder / f"new-{step}.txt").write_text("new\n")


def timed(fn: Callable[..., object], *args: object) -> float:
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


def bench_keep_discard(root: Path, files: int, repeats: int) -> dict[str, float]:
    ours = make_repo(root / "ours", files)
    raw = make_repo(root / "raw", files)
    tool(ours, "start", "--goal", "bench", "--session-id", "bench", "--command",
         "sh bench.sh", "--metric-pattern", r"score: (\d+)", "--readonly", "bench.sh",
         "--no-baseline")
    sh(raw, "git switch -q -c autoresearch/raw")
    times: dict[str, list[float]] = {"keep": [], "raw_keep": [], "discard": [],
                                     "raw_discard": [], "start_up": []}
    for step in range(1, repeats + 1):
        times["start_up"].append(timed(tool, ours, "keep", "-h"))
        edit(ours, step, new_file=True)
        times["keep"].append(timed(tool, ours, "keep", "-d", f"step {step}", "--metric",
                                   str(1000 - step)))
        edit(raw, step, new_file=True)
        seed_session_files(raw, step)
        times["raw_keep"].append(timed(sh, raw, RAW_KEEP, f"step {step}"))
        edit(ours, step + 100, new_file=True)
        times["discard"].append(timed(tool, ours, "discard", "-d", f"d {step}"))
        edit(raw, step + 100, new_file=True)
        seed_session_files(raw, step + 100)
        times["raw_discard"].append(timed(sh, raw, RAW_REVERT))
    return {k: statistics.median(v) for k, v in times.items()}


def bench_reading(root: Path, runs: int, repeats: int) -> dict[str, float]:
    folder = make_repo(root / "reading", 10)
    tool(folder, "start", "--goal", "bench", "--session-id", "reading", "--command",
         "sh bench.sh", "--metric-pattern", r"score: (\d+)", "--readonly", "bench.sh")
    ledger = folder / ".auto" / "log.jsonl"
    head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=folder, check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()
    lines = []
    for n in range(2, runs + 1):
        status = ("discard", "discard", "crash", "checks_failed", "discard")[n % 5]
        lines.append(json.dumps({
            "run": n, "commit": head, "metric": 0 if status == "crash" else 100 + n % 17,
            "metrics": {"rss_mb": 80.5}, "status": status, "description": f"idea number {n}",
            "timestamp": 1764400000000 + n, "segment": 0, "confidence": None,
            "asi": {"hypothesis": "h"}, "duration_s": 1.0, "samples": [100],
            "checks": None, "attempt_ref": f"refs/autoresearch/reading/attempts/{n}",
            "scope_violations": [], "hooks": []}))
    with open(ledger, "a") as fh:
        fh.write("\n".join(lines) + "\n")
    times: dict[str, list[float]] = {"log --json": [], "status --json": []}
    for _ in range(repeats):
        times["log --json"].append(timed(tool, folder, "log", "--json"))
        times["status --json"].append(timed(tool, folder, "status", "--json"))
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--runs", type=int, default=10000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-ops-"))
    env_home = root / "home"
    env_home.mkdir()
    os.environ["HOME"] = str(env_home)
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
    try:
        ops = bench_keep_discard(root, args.files, args.repeats)
        reading = bench_reading(root, args.runs, args.repeats)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"repository of {args.files} files, median of {args.repeats} (seconds):")
    for name in ("keep", "raw_keep", "discard", "raw_discard"):
        print(f"  {name:<14} {ops[name]:.3f}")
    print(f"  start-up       {ops['start_up']:.3f}  (keep -h: Python, click and our imports; "
          "no git)")
    print(f"  keep ratio     {ops['keep'] / ops['raw_keep']:.2f}x the raw recipe")
    print(f"  discard ratio  {ops['discard'] / ops['raw_discard']:.2f}x the raw recipe")
    print(f"ledger of {args.runs} runs (seconds):")
    for name, value in reading.items():
        print(f"  {name:<14} {value:.3f}")


if __name__ == "__main__":
    main()
