"""Wall time of dashboard generation and analyze on a session of 10,000 runs (target: under
two seconds each), and of summary; and of log queries (filtered and sorted) on a session of
100,000 runs (target: under one second).

    python bench/bench_insight.py [--runs 10000] [--query-runs 100000] [--repeats 5]

Runs the installed executables in a fresh process each time, as users do, on a generated ledger.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

# The log queries timed on the large session: the questions of a morning's review.
QUERIES = {
    "log --kept --where asi~cache --sort best -n 20":
        ("log", "--kept", "--where", "asi.hypothesis~cache", "--sort", "best", "-n", "20"),
    "log --status crash --where rss_mb>100 --json":
        ("log", "--status", "crash", "--where", "rss_mb>100", "--json"),
    "log --where rss_mb>2048 --sort -metric -n 20 --format csv":
        ("log", "--where", "rss_mb>2048", "--sort", "-metric", "-n", "20", "--format", "csv",
         "--columns", "run,metric,rss_mb,asi.hypothesis"),
}


def tool(cwd: Path, name: str, *args: str) -> None:
    exe = shutil.which(f"git-autoresearch-{name}", path=sysconfig.get_paths()["scripts"])
    argv = [exe, *args] if exe else [sys.executable, "-m", "git_autoresearch", name, *args]
    # As an installed package runs: with its compiled bytecode (written on the first call).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL, env=env)


def make_session(folder: Path, runs: int) -> None:
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    rng = random.Random(1)
    best = 1000.0
    lines = [json.dumps({"type": "config", "name": "bench", "metricName": "ms",
                         "metricUnit": "ms", "bestDirection": "lower"})]
    for n in range(1, runs + 1):
        status = "keep" if n == 1 or rng.random() < 0.1 else rng.choice(
            ["discard", "discard", "crash", "checks_failed"])
        metric = best if status != "keep" or n == 1 else best * 0.999
        best = min(best, metric) if status == "keep" else best
        lines.append(json.dumps({
            "run": n, "commit": f"{n:07x}", "metric": 0 if status == "crash" else metric,
            "metrics": {"rss_mb": rng.choice([80.0, 120.0, 2500.0])}, "status": status,
            "description": f"idea number {n}", "timestamp": 1764400000000 + n, "segment": 0,
            "confidence": None,
            "asi": {"hypothesis": rng.choice(["cache the parse", "unroll the loop", "h"]),
                    "rollback_reason": "r"}}))
    (folder / ".auto").mkdir()
    (folder / ".auto" / "log.jsonl").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--query-runs", type=int, default=100000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-insight-"))
    os.environ["HOME"] = str(root)
    try:
        folder = root / "session"
        make_session(folder, args.runs)
        timings: dict[str, list[float]] = {"dashboard": [], "analyze --json": [],
                                           "summary": []}
        commands = {"dashboard": ("dashboard", "-o", str(root / "d.html")),
                    "analyze --json": ("analyze", "--json"), "summary": ("summary",)}
        for _ in range(args.repeats):
            for name, argv in commands.items():
                started = time.perf_counter()
                tool(folder, *argv)
                timings[name].append(time.perf_counter() - started)
        size = (root / "d.html").stat().st_size
        large = root / "large"
        make_session(large, args.query_runs)
        tool(large, "log", "--last", "1")  # compiles the bytecode once, as an install does
        queried: dict[str, list[float]] = {name: [] for name in QUERIES}
        for _ in range(args.repeats):
            for name, argv in QUERIES.items():
                started = time.perf_counter()
                tool(large, *argv)
                queried[name].append(time.perf_counter() - started)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"session of {args.runs} runs, median of {args.repeats} (seconds):")
    for name, values in timings.items():
        print(f"  {name:<16} {statistics.median(values):.3f}")
    print(f"  dashboard page   {size / 1e6:.1f} MB")
    print(f"session of {args.query_runs} runs, median of {args.repeats} (seconds):")
    for name, values in queried.items():
        print(f"  {name:<52} {statistics.median(values):.3f}")


if __name__ == "__main__":
    main()
