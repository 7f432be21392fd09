"""Wall time of our keep and discard against the seeds' raw git recipe, above the start-up
floor, and of log/status on a large ledger; each figure beside its target.

    python bench/bench_ops.py [--files 10000 50000] [--repeats 7] [--runs 100000] [--cpu]
                              [--trace] [--profile] [--against SCRIPTS [--rounds 8]]

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
floor at most 50 ms), and what the incumbent's worktree costs a run that measures the
incumbent beside the candidate (made and removed, against the kept one moved); then the time
``run`` spends outside the user's commands for a keep and a discard (at most 150 ms); then
``log --json``, ``status --json``, a keep and a discard on a ledger of ``--runs`` runs
(target: ``log --json`` and ``status --json`` under 0.7 s on 100,000), and ``log
--all-sessions --json`` over 10 sessions of 10,000 runs (under 3 s). The machine (CPU, cores,
git and Python versions) and the load average before and after are printed with the figures: on a
loaded machine wall figures mean little, and ``--cpu`` measures CPU seconds instead (user and
system, git's included). Bytecode is written (to a temporary folder) and used, as for an
installed package, whatever ``PYTHONDONTWRITEBYTECODE`` says. ``--trace`` prints every git
command one keep and one discard run, with its wall time (``GIT_AUTORESEARCH_TRACE=1``).

``--profile`` prints where the time goes instead, medians over the repeats: for a keep and a
discard on each ``--files`` size, the start-up floor split into the interpreter's start, click's
import and our command line, then our imports beyond the floor (as ``-X importtime`` counts
them), the git commands (their number and wall time, from the trace) and the rest (our code, the
fsyncs, starting and waiting for processes); then the least a keep can do: the git work of a
keep that keeps its guarantees, run from the shell with no Python (:data:`GUARDED_KEEP`), plus
our imports, beside the raw recipe; for ``log --json`` on ``--runs`` runs, read in this process,
its steps (reading the file, decoding and classifying the lines, making the objects, encoding
them) beside the floor of any reader built on Python's json module: decoding each line and
encoding each object once, nothing else.

``--against SCRIPTS`` times ``run``'s own time (and its CPU seconds, its children's included)
side by side with another installation, whose ``git-autoresearch-*`` executables are in the
folder ``SCRIPTS`` (say, a virtual environment of an older commit: ``git worktree add
/tmp/old REV && python -m venv /tmp/oldvenv && /tmp/oldvenv/bin/pip install -e /tmp/old``,
then ``--against /tmp/oldvenv/bin``): ``--rounds`` rounds of ``--repeats`` runs each, the two
taking turns. With ``--runs`` given, it then times a keep, a discard and a ``run`` that the
sequential rule discards at the end of a session of that many runs, on two copies of one
session, the two taking turns ``--rounds`` times. A shared machine's speed drifts by a third
within the hour; only figures taken so compare two versions.
"""

from __future__ import annotations

import argparse
import fcntl
import itertools
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
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

PROTECTED = ("autoresearch.jsonl autoresearch.md autoresearch.ideas.md autoresearch.sh "
             "autoresearch.checks.sh")
RAW_KEEP = 'git add -A && if ! git diff --cached --quiet; then git commit -q -m "$1"; fi'
# The least git work a keep that keeps its guarantees can do, from the shell, with no Python:
# find HEAD, one scan of the work tree, stage what it found, write the tree, make the commit
# with its trailer, read the trailer back as git parses it, move HEAD by compare-and-swap.
# (No ledger line, no fsync, no scope or protected paths, no state mirror: a lower bound.)
GUARDED_KEEP = (
    'head=$(git rev-parse --verify -q HEAD) && '
    'git status --porcelain=v1 -z --no-renames --untracked-files=all | cut -z -c4- '
    '| git update-index --add --remove -z --stdin && tree=$(git write-tree) && '
    'commit=$(printf \'%s\\n\\nResult: {"status":"keep","ms":1}\\n\' "$1" '
    '| git commit-tree "$tree" -p "$head") && '
    "git log -1 --format='%(trailers:key=Result,valueonly)' \"$commit\" >/dev/null && "
    'git update-ref -m "commit: $1" HEAD "$commit" "$head"')
RAW_REVERT = (f"git add {PROTECTED} 2>/dev/null || true; "
              f"git stash push -q -- {PROTECTED} 2>/dev/null || true; "
              "git checkout -- . && git clean -fdq 2>/dev/null; "
              "git stash pop -q 2>/dev/null || true")


def sh(cwd: Path, script: str, *args: str) -> None:
    subprocess.run(["bash", "-c", script, "bench", *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL)


def tool(cwd: Path, name: str, *args: str, scripts: str | None = None) -> bytes:
    """Run ``git-autoresearch-<name>`` of this installation, or of the one whose executables
    are in the folder ``scripts`` (``--against``); its stdout."""
    exe = shutil.which(f"git-autoresearch-{name}",
                       path=scripts or sysconfig.get_paths()["scripts"])
    if exe is None and scripts:
        sys.exit(f"no git-autoresearch-{name} in {scripts}")
    argv = [exe, *args] if exe else [sys.executable, "-m", "git_autoresearch", name, *args]
    return subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL).stdout


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
    # Packed, as a real repository is, and at once: left loose, its own commit starts a `git gc
    # --auto` in the background (git detaches it), repacking every file while the benchmarks
    # after it run.
    sh(folder, "git add -A && git -c gc.auto=0 commit -q -m initial && git gc -q")
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


def bench_incumbent(root: Path, files: int, repeats: int) -> dict[str, float]:
    """What the incumbent's worktree costs a run that measures the incumbent beside it, on a
    repository of ``files`` files whose commits differ by three files: made and removed (a
    worktree of the run's own, as when another measurement holds the kept one), and the kept
    worktree moved to the next commit. Median seconds, in this process (no start-up)."""
    from git_autoresearch.measure.incumbent import IncumbentTree, remove_kept
    from git_autoresearch.session.session import Session

    folder = make_repo(root, files)
    tool(folder, "start", "--goal", "bench", "--session-id", "incumbent", "--command",
         "sh bench.sh", "--metric-pattern", r"score: (\d+)")
    session = Session.open(folder)
    commits = []
    for step in range(1, repeats + 2):
        edit(folder, step, new_file=False)
        sh(folder, f"git -c gc.auto=0 commit -q -am 'edit {step}'")
        commits.append(subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, check=True,
                                      capture_output=True, text=True).stdout.strip())

    def use(commit: str) -> None:
        with IncumbentTree(session, commit, {}) as tree:
            problem = tree._make()  # (what its first sample does before measuring)
            assert problem is None, problem

    times: dict[str, list[float]] = {"made and removed": [], "moved": []}
    use(commits[0])  # the kept worktree's first checkout
    held = session.repo.scratch / "incumbent" / "lock"
    for commit in commits[1:]:
        times["moved"].append(timed(use, commit))
        with open(held) as lock:  # held, as by another measurement: a worktree of its own
            fcntl.flock(lock, fcntl.LOCK_EX)
            times["made and removed"].append(timed(use, commit))
    remove_kept(session.repo)
    return {k: statistics.median(v) for k, v in times.items()}


def make_ledger(root: Path, runs: int, session: str = "reading") -> Path:
    """A session in ``root/<session>`` whose ledger holds ``runs`` runs; returns its folder
    (``root`` itself when it is a repository already: a worktree of it, for another
    session)."""
    folder = root / session
    if (root / ".git").exists():
        sh(root, f"git worktree add -q -b {session} {folder} main")
    else:
        make_repo(folder, 10)
    tool(folder, "start", "--goal", "bench", "--session-id", session, "--command",
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
            "checks": None, "attempt_ref": f"refs/autoresearch/{session}/attempts/{n}",
            "scope_violations": [], "hooks": []}))
    with open(ledger, "a") as fh:
        fh.write("\n".join(lines) + "\n")
    return folder


def bench_reading(root: Path, runs: int, repeats: int) -> dict[str, float]:
    folder = make_ledger(root, runs)
    times: dict[str, list[float]] = {"log --json": [], "status --json": [], "keep": [],
                                     "discard": [], "run, a discard": []}
    for step in range(1, repeats + 1):
        times["log --json"].append(timed(tool, folder, "log", "--json"))
        times["status --json"].append(timed(tool, folder, "status", "--json"))
        # A keep and a discard at the end of such a session: what a long night's runs cost.
        edit(folder, step, new_file=True)
        times["keep"].append(timed(tool, folder, "keep", "-d", f"late {step}", "--metric",
                                   str(step)))
        edit(folder, step + 100, new_file=True)
        times["discard"].append(timed(tool, folder, "discard", "-d", f"late {step + 100}"))
        # A run the sequential rule discards (the metric unchanged), which then samples the
        # incumbent again: the loop's own command at the end of a night, its benchmark a few ms.
        edit(folder, step + 200, new_file=True)
        times["run, a discard"].append(timed(tool, folder, "run", "-d", f"late {step + 200}"))
    return {k: statistics.median(v) for k, v in times.items()}


def bench_all_sessions(root: Path, sessions: int, runs: int, repeats: int) -> float:
    """``log --all-sessions --json`` over ``sessions`` sessions of ``runs`` runs each, one a
    worktree of one repository (read from their state refs, as another worktree's are): the
    median seconds."""
    top = make_repo(root / "sessions", 10)
    for n in range(sessions):
        folder = make_ledger(top, runs, f"s{n}")
        tool(folder, "keep", "-d", "mirror the ledger", "--metric", "1")  # (to its state ref)
    return statistics.median(timed(tool, top, "log", "--all-sessions", "--json")
                             for _ in range(repeats))


def bench_loop(root: Path, repeats: int) -> dict[str, float]:
    """The time ``run`` spends outside the user's commands, for a keep and for a discard: its
    wall time less the time the benchmark itself ran (no checks, no hooks), on a small
    repository under the strict rule. The benchmark (a 0.2 s sleep, then a number from a file)
    writes when it began and ended to a file outside the repository, so that what is ours
    includes starting it and seeing it end, which its record's ``duration_s`` would hide."""
    folder = loop_repo(root / "loop")
    times: dict[str, list[float]] = {"keep": [], "discard": []}
    for step in range(1, repeats + 1):
        for name in times:
            times[name].append(loop_step(folder, name, step)[0])
    return {k: statistics.median(v) for k, v in times.items()}


def loop_repo(folder: Path, scripts: str | None = None) -> Path:
    """The repository of :func:`bench_loop`, its session started (by the installation whose
    executables are in ``scripts``: this one when None)."""
    make_repo(folder, 10)
    spans = folder.parent / f"{folder.name}-spans.txt"
    (folder / "value.txt").write_text("1000\n")
    (folder / "bench.sh").write_text(
        "s=$(date +%s.%N)\nsleep 0.2\necho score: $(cat value.txt)\n"
        f"echo \"$s $(date +%s.%N)\" >> '{spans}'\n")
    sh(folder, "git add -A && git commit -q -m value")
    tool(folder, "start", "--goal", "bench", "--session-id", "loop", "--command",
         "sh bench.sh", "--metric-pattern", r"score: (\d+)", "--readonly", "bench.sh",
         "--direction", "lower", "--decision", "strict", scripts=scripts)
    return folder


def loop_step(folder: Path, name: str, step: int, scripts: str | None = None
              ) -> tuple[float, float]:
    """One ``run`` in :func:`loop_repo`'s ``folder`` that is a ``name`` (keep or discard):
    its own wall seconds (outside the benchmark) and the CPU seconds of it and its children
    (the benchmark's few milliseconds included)."""
    spans = folder.parent / f"{folder.name}-spans.txt"
    value = 1000 - step if name == "keep" else 5000 + step
    (folder / "value.txt").write_text(f"{value}\n")
    spans.write_text("")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    record = json.loads(tool(folder, "run", "-d", f"{name} {step}", "--json", scripts=scripts))
    spent = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert record["status"] == name, record
    ran = sum(float(end) - float(begin) for begin, end in
              (line.split() for line in spans.read_text().splitlines()))
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return spent - ran, cpu


def taking_turns(scripts: str, rounds: int,
                 turn: Callable[[str, str | None, Iterator[int]], Iterable[tuple[str, float]]]
                 ) -> dict[str, dict[str, float]]:
    """This installation (``this``) and the one whose executables are in ``scripts``
    (``against``) side by side: ``rounds`` rounds, the two taking turns (which goes first
    alternates), so that the machine's drift hits both alike. ``turn(side, its scripts,
    steps)`` takes one side's turn, numbering what it does from ``steps`` (shared by both),
    and gives its figures as ``(name, value)`` pairs; per side, the median of each figure."""
    sides = {"this": None, "against": scripts}
    found: dict[str, dict[str, list[float]]] = {side: {} for side in sides}
    steps = itertools.count(1)
    for number in range(rounds):
        for side in (list(sides) if number % 2 == 0 else list(reversed(sides))):
            for name, value in turn(side, sides[side], steps):
                found[side].setdefault(name, []).append(value)
    return {side: {k: statistics.median(v) for k, v in values.items()}
            for side, values in found.items()}


def bench_loop_against(root: Path, repeats: int, rounds: int, scripts: str
                       ) -> dict[str, dict[str, float]]:
    """:func:`bench_loop` of this installation and of the one whose executables are in
    ``scripts``, side by side (:func:`taking_turns`): ``rounds`` rounds of ``repeats`` keeps
    and discards each. Per side, the median own wall seconds and CPU seconds of a keep and a
    discard."""
    folders = {"this": loop_repo(root / "loop-this"),
               "against": loop_repo(root / "loop-against", scripts)}

    def turn(side: str, where: str | None, steps: Iterator[int]
             ) -> Iterator[tuple[str, float]]:
        for _ in range(repeats):
            step = next(steps)
            for name in ("keep", "discard"):
                own, cpu = loop_step(folders[side], name, step, where)
                yield name, own
                yield f"{name} CPU", cpu

    return taking_turns(scripts, rounds, turn)


def bench_reading_against(root: Path, runs: int, rounds: int, scripts: str
                          ) -> dict[str, dict[str, float]]:
    """At the end of a session of ``runs`` runs, this installation and the one whose
    executables are in ``scripts`` side by side (:func:`taking_turns`), on two copies of one
    session (started by this one): a keep by hand, a discard by hand, and a ``run`` that the
    sequential rule discards (it samples the incumbent again). Per side, the median seconds
    of each."""
    folders = {side: make_ledger(root / f"reading-{side}", runs) for side in ("this", "against")}
    for side, folder in folders.items():  # (the read cache written: a read like the others)
        tool(folder, "status", scripts=None if side == "this" else scripts)
    commands = {"keep": ("keep", "--metric", "1", "-d"), "discard": ("discard", "-d"),
                "run, a discard": ("run", "-d")}

    def turn(side: str, where: str | None, steps: Iterator[int]
             ) -> Iterator[tuple[str, float]]:
        for name, (command, *args) in commands.items():
            step = next(steps)
            edit(folders[side], step, new_file=True)
            started = time.perf_counter()
            tool(folders[side], command, *args, f"late {step}", scripts=where)
            yield name, time.perf_counter() - started

    return taking_turns(scripts, rounds, turn)


def print_sides(title: str, scripts: str, sides: dict[str, dict[str, float]]) -> None:
    """The medians :func:`taking_turns` gave, a line a side, under ``title``."""
    print(f"{title}, medians (seconds), load average now {load()}:")
    for side, where in (("this", sysconfig.get_paths()["scripts"]), ("against", scripts)):
        figures = "  ".join(f"{k} {v:.3f}" for k, v in sides[side].items())
        print(f"  {side:<8} {figures}  ({where})")


# Targets: (time above the floor) / (raw recipe's time), by repository size.
RATIO_TARGETS = {10000: 1.0, 50000: 0.5}
FLOOR_TARGET = 0.050
READ_TARGETS = {"log --json": (100000, 0.7), "status --json": (100000, 0.7)}
ALL_SESSIONS_TARGET = (10, 10000, 3.0)
LOOP_TARGET = 0.150


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


def median_of(repeats: int, fn: Callable[[], float]) -> float:
    return statistics.median(fn() for _ in range(repeats))


def wall(argv: list[str], cwd: Path, env: dict[str, str] | None = None
         ) -> tuple[float, str]:
    """Run ``argv``; its wall seconds and its standard error."""
    started = time.perf_counter()
    res = subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env)
    return time.perf_counter() - started, res.stderr


def our_imports(stderr: str, skip: set[str]) -> float:
    """Seconds ``-X importtime`` gives the modules (their own time) not in ``skip``."""
    spent = 0
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "self [us]" not in line:
            own, _, name = line[len("import time:"):].split("|")
            if name.strip() not in skip:
                spent += int(own)
    return spent / 1e6


def imported(stderr: str) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines()
            if line.startswith("import time:") and "self [us]" not in line}


def profile_ops(root: Path, repeats: int, files: int) -> None:
    """Print where a keep's and a discard's wall time goes on ``files`` files."""
    root = root / f"profile-{files}"
    folder = make_repo(root / "profiled", files)
    tool(folder, "start", "--goal", "bench", "--session-id", "bench", "--command",
         "sh bench.sh", "--metric-pattern", r"score: (\d+)", "--readonly", "bench.sh",
         "--no-baseline")
    exe = {name: shutil.which(f"git-autoresearch-{name}", path=sysconfig.get_paths()["scripts"])
           for name in ("keep", "discard")}
    if not all(exe.values()):
        sys.exit("--profile needs the installed git-autoresearch-* executables")
    python = sys.executable
    interpreter = median_of(repeats, lambda: wall([python, "-c", "pass"], folder)[0])
    with_click = median_of(repeats, lambda: wall([python, "-c", "import click"], folder)[0])
    floor = median_of(repeats, lambda: wall([str(exe["keep"]), "-h"], folder)[0])
    floor_modules = imported(wall([python, "-X", "importtime", str(exe["keep"]), "-h"],
                                  folder)[1])
    traced = {**os.environ, "GIT_AUTORESEARCH_TRACE": "1"}
    figures: dict[str, dict[str, list[float]]] = {
        name: {"total": [], "git": [], "commands": [], "imports": []}
        for name in ("keep", "discard")}
    raw = make_repo(root / "profiled-raw", files)
    sh(raw, "git switch -q -c autoresearch/raw")
    raw_keep: list[float] = []
    guarded = make_repo(root / "profiled-guarded", files)
    guarded_keep: list[float] = []
    for step in range(1, repeats + 1):
        for name, args in (("keep", ["-d", f"step {step}", "--metric", str(1000 - step)]),
                           ("discard", ["-d", f"d {step}"])):
            edit(folder, step * 2 + (name == "discard"), new_file=True)
            spent, err = wall([str(exe[name]), *args], folder, traced)
            lines = [line for line in err.splitlines() if "trace:" in line]
            figures[name]["total"].append(spent)
            figures[name]["commands"].append(len(lines))
            figures[name]["git"].append(sum(
                float(line.split("trace: ", 1)[1].split(" ms", 1)[0]) for line in lines) / 1000)
            # The same command once more under -X importtime (its own run: that costs time).
            edit(folder, step * 2 + 100 + (name == "discard"), new_file=True)
            err = wall([python, "-X", "importtime", str(exe[name]), *args], folder)[1]
            figures[name]["imports"].append(our_imports(err, floor_modules))
        edit(raw, step, new_file=True)
        seed_session_files(raw, step)
        raw_keep.append(timed(sh, raw, RAW_KEEP, f"step {step}"))
        edit(guarded, step, new_file=True)
        guarded_keep.append(timed(sh, guarded, GUARDED_KEEP, f"step {step}"))
    ms = 1000.0
    print(f"where the time goes, {files:,} files, median of {repeats} (wall ms), load average "
          f"now {load()}:")
    print(f"  start-up floor (keep -h)      {floor * ms:6.1f}")
    print(f"    the interpreter's start     {interpreter * ms:6.1f}")
    print(f"    click's import              {(with_click - interpreter) * ms:6.1f}")
    print(f"    our command line            {(floor - with_click) * ms:6.1f}")
    for name, got in figures.items():
        total, git, imports = (statistics.median(got[k]) for k in ("total", "git", "imports"))
        rest = total - floor - git - imports
        print(f"  {name}                          {total * ms:6.1f}")
        print(f"    the start-up floor          {floor * ms:6.1f}")
        print(f"    our imports beyond it       {imports * ms:6.1f}  (-X importtime)")
        print(f"    git, {statistics.median(got['commands']):.0f} commands            "
              f"{git * ms:6.1f}")
        print(f"    the rest                    {rest * ms:6.1f}  (our code, fsyncs, "
              "starting and waiting for git)")
    raw = statistics.median(raw_keep)
    least = statistics.median(guarded_keep)
    imports = statistics.median(figures["keep"]["imports"])
    print(f"  raw recipe, keep              {raw * ms:6.1f}")
    print(f"  the least a keep can do       {(least + imports) * ms:6.1f}  "
          f"= {(least + imports) / raw:.2f}x the raw recipe")
    print(f"    its git, from the shell     {least * ms:6.1f}  (7 commands: HEAD, one scan, "
          "stage, tree, commit, trailer read back, compare-and-swap)")
    print(f"    our imports (as above)      {imports * ms:6.1f}  (the recording code, "
          "compiled)")


def profile_log(root: Path, runs: int, repeats: int) -> None:
    """Print where ``log --json``'s time goes on a ledger of ``runs`` runs, in this process."""
    from git_autoresearch import ledger
    from git_autoresearch.review import query_format

    path = make_ledger(root, runs) / ".auto" / "log.jsonl"
    steps: dict[str, list[float]] = {"read": [], "parse, runs as text": [],
                                     "write, in pieces": [], "json floor: loads": [],
                                     "json floor: encode": []}
    encoder = json.JSONEncoder()
    for _ in range(repeats):
        started = time.perf_counter()
        data = path.read_bytes()
        read = time.perf_counter()
        with ledger.runs_as_text():  # as log --json reads it
            book = ledger.parse(data)
        decoded = time.perf_counter()
        for _piece in query_format.ledger_json_chunks(book, "ledger", lines=False):
            pass
        done = time.perf_counter()
        steps["read"].append(read - started)
        steps["parse, runs as text"].append(decoded - read)
        steps["write, in pieces"].append(done - decoded)
        started = time.perf_counter()
        objects = [json.loads(line) for line in data.split(b"\n") if line]
        loaded = time.perf_counter()
        ",\n".join(map(encoder.encode, objects))
        steps["json floor: loads"].append(loaded - started)
        steps["json floor: encode"].append(time.perf_counter() - loaded)
    print(f"log --json's steps on {runs} runs ({path.stat().st_size / 1e6:.1f} MB), in this "
          f"process, median of {repeats} (seconds), load average now {load()}:")
    for name, values in steps.items():
        print(f"  {name:<22} {statistics.median(values):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, nargs="+", default=[10000])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--runs", type=int,
                        help="runs of the long ledger (default 100000; with --against, "
                             "also time a keep, a discard and a run at its end)")
    parser.add_argument("--cpu", action="store_true",
                        help="measure CPU seconds (user + system, git's included) instead of "
                             "wall seconds: for a loaded machine")
    parser.add_argument("--trace", action="store_true",
                        help="print the git commands of one keep and one discard, then stop")
    parser.add_argument("--profile", action="store_true",
                        help="print where the time of a keep, a discard and log --json goes, "
                             "then stop")
    parser.add_argument("--against", metavar="SCRIPTS",
                        help="time run's own time side by side with the installation whose "
                             "git-autoresearch-* executables are in this folder (a virtual "
                             "environment's bin of an older commit), and a keep, a discard "
                             "and a run at the end of --runs runs (with --runs given), then "
                             "stop")
    parser.add_argument("--rounds", type=int, default=8,
                        help="rounds of --repeats runs on each side, with --against")
    args = parser.parse_args()
    global CPU
    CPU = args.cpu
    against_runs, args.runs = args.runs, args.runs or 100000
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
        if args.against:
            print_sides(f"run's own time side by side, {args.rounds} rounds of {args.repeats} "
                        "on each side", args.against,
                        bench_loop_against(root, args.repeats, args.rounds, args.against))
            if against_runs is not None:
                print_sides(f"at the end of {args.runs} runs side by side, {args.rounds} rounds",
                            args.against,
                            bench_reading_against(root, args.runs, args.rounds, args.against))
            return
        if args.profile:
            for files in args.files:
                profile_ops(root, args.repeats, files)
            profile_log(root, args.runs, args.repeats)
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
            beside = bench_incumbent(root / f"incumbent-{files}", files, args.repeats)
            print("  the incumbent's worktree, for a run that measures it beside the candidate:")
            for name, value in beside.items():
                print(f"    {name:<17} {value:.3f}")
        loop = bench_loop(root, args.repeats)
        print(f"run's own time, outside the user's commands, median of {args.repeats} "
              f"(seconds), load average now {load()}:")
        for name, value in loop.items():
            print(f"  {name:<14} {value:.3f}{verdict(value, LOOP_TARGET)}  "
                  f"({value / (1 + value):.0%} of a run with a 1-second benchmark)")
        reading = bench_reading(root, args.runs, args.repeats)
        print(f"ledger of {args.runs} runs, median of {args.repeats} (seconds), load average "
              f"now {load()}:")
        for name, value in reading.items():
            runs, target = READ_TARGETS.get(name, (0, 0.0))
            print(f"  {name:<14} {value:.3f}"
                  f"{verdict(value, target if runs == args.runs else None)}")
        sessions, runs, target = ALL_SESSIONS_TARGET
        spent = bench_all_sessions(root, sessions, runs, args.repeats)
        print(f"  log --all-sessions --json, {sessions} sessions of {runs} runs: {spent:.3f}"
              f"{verdict(spent, target)}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
