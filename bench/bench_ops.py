"""Wall time of our keep and discard against the seeds' raw git recipe, above the start-up
floor, and of log/status on a large ledger; each figure beside its target (issue 16).

    python bench/bench_ops.py [--files 10000 50000] [--repeats 7] [--runs 100000] [--cpu]
                              [--trace]

Everything runs as users run it: the installed ``git-autoresearch-*`` executables in a fresh
process each time, against a generated repository in a temporary folder. The raw recipe is the
seeds' (experiment-git-ops): ``git add -A`` and ``git commit`` to keep; staging and stashing the
session files, ``git checkout -- .``, ``git clean -fd`` and ``git stash pop`` to revert, with
those session files present in the work tree as they are in a real session. Ours and the raw
recipe are measured side by side, step by step, so that a burst of load hits both.

Prints, per repository size, the median seconds over the repeats of: our keep and discard, the
raw recipe's, and the start-up floor every command pays before it runs any git (``keep -h``:
Python, click and our imports); then the ratio of what is ours, the time above that floor, to
the raw recipe's time, beside the target (at most 1.0x on 10,000 files, 0.5x on 50,000; the
floor at most 60 ms); then ``log --json`` and ``status --json`` on a ledger of ``--runs`` runs
(target: ``log --json`` under 1 s on 100,000). The machine (CPU, cores, git and Python
versions) and the load average before and after are printed with the figures: on a loaded
machine wall figures mean little, and ``--cpu`` measures CPU seconds instead (user and system,
git's included). Bytecode is written (to a temporary folder) and used, as for an installed
package, whatever ``PYTHONDONTWRITEBYTECODE`` says. ``--trace`` prints every git command one
keep and one discard run, with its wall time (``GIT_AUTORESEARCH_TRACE=1``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
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


# What timed measures: wall seconds, or (--cpu) the CPU seconds, user and system, of the
# processes the call ran and waited for (git's included), which a loaded machine inflates less.
CPU = False


def timed(fn: Callable[..., object], *args: object) -> float:
    if CPU:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        fn(*args)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


def bench_keep_discard(root: Path, files: int, repeats: int) -> dict[str, float]:
    root.mkdir(parents=True)
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


# Targets of issue 16: (time above the floor) / (raw recipe's time), by repository size.
RATIO_TARGETS = {10000: 1.0, 50000: 0.5}
FLOOR_TARGET = 0.060
LOG_TARGET = (100000, 1.0)


def machine() -> str:
    """CPU model, cores, and the git and Python versions, on one line."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    git = subprocess.run(["git", "--version"], check=True, stdout=subprocess.PIPE,
                         text=True).stdout.strip()
    return (f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
            f"{git}, Python {platform.python_version()}")


def load() -> str:
    """The load average (1, 5, 15 minutes)."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def verdict(value: float, target: float | None) -> str:
    if target is None:
        return ""
    return f"  target <= {target:g}: {'met' if value <= target else 'NOT met'}"


def trace_once(root: Path) -> None:
    """Print the git commands of one keep and one discard on a 10,000-file repository."""
    folder = make_repo(root / "traced", 10000)
    tool(folder, "start", "--goal", "bench", "--session-id", "bench", "--command",
         "sh bench.sh", "--metric-pattern", r"score: (\d+)", "--readonly", "bench.sh",
         "--no-baseline")
    for step, args in enumerate((["keep", "-d", "traced keep", "--metric", "5"],
                                 ["discard", "-d", "traced discard"]), start=1):
        edit(folder, step, new_file=True)
        exe = shutil.which(f"git-autoresearch-{args[0]}",
                           path=sysconfig.get_paths()["scripts"])
        argv = [exe, *args[1:]] if exe else [sys.executable, "-m", "git_autoresearch", *args]
        started = time.perf_counter()
        res = subprocess.run(argv, cwd=folder, check=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "GIT_AUTORESEARCH_TRACE": "1"})
        wall = time.perf_counter() - started
        lines = [line for line in res.stderr.splitlines() if "trace:" in line]
        spent = sum(float(line.split("trace: ", 1)[1].split(" ms", 1)[0]) for line in lines)
        print(f"{args[0]}: {len(lines)} git commands, {spent:.1f} ms in git, "
              f"{wall * 1000:.1f} ms in all")
        for line in lines:
            print("  " + line.split("trace: ", 1)[1][:160])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, nargs="+", default=[10000])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--runs", type=int, default=100000)
    parser.add_argument("--cpu", action="store_true",
                        help="measure CPU seconds (user + system, git's included) instead of "
                             "wall seconds: for a loaded machine")
    parser.add_argument("--trace", action="store_true",
                        help="print the git commands of one keep and one discard, then stop")
    args = parser.parse_args()
    global CPU
    CPU = args.cpu
    root = Path(tempfile.mkdtemp(prefix="bench-ops-"))
    env_home = root / "home"
    env_home.mkdir()
    os.environ["HOME"] = str(env_home)
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
    # As installed packages run: compiled once (pip writes the bytecode), not at every start.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    print(f"machine: {machine()}; {'CPU' if CPU else 'wall'} seconds")
    print(f"load average before: {load()}")
    try:
        if args.trace:
            trace_once(root)
            return
        for files in args.files:
            ops = bench_keep_discard(root / f"ops-{files}", files, args.repeats)
            floor = ops["start_up"]
            print(f"repository of {files} files, median of {args.repeats} (seconds), "
                  f"load average now {load()}:")
            for name in ("keep", "raw_keep", "discard", "raw_discard"):
                print(f"  {name:<14} {ops[name]:.3f}")
            print(f"  start-up       {floor:.3f}  (keep -h: Python, click and our imports; "
                  f"no git){verdict(floor, FLOOR_TARGET)}")
            for name in ("keep", "discard"):
                above = ops[name] - floor
                ratio = above / ops[f"raw_{name}"]
                print(f"  {name} above the floor {above:.3f} = {ratio:.2f}x the raw recipe "
                      f"({ops[name] / ops[f'raw_{name}']:.2f}x in all)"
                      f"{verdict(ratio, RATIO_TARGETS.get(files))}")
        reading = bench_reading(root, args.runs, args.repeats)
        print(f"ledger of {args.runs} runs, median of {args.repeats} (seconds), load average "
              f"now {load()}:")
        for name, value in reading.items():
            target = LOG_TARGET[1] if name == "log --json" and args.runs == LOG_TARGET[0] \
                else None
            print(f"  {name:<14} {value:.3f}{verdict(value, target)}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
