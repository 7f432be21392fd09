"""Several workers on one session: throughput, keeps, and the guarantees, on a scratch
repository with a controlled benchmark and scripted agents.

    python bench/bench_workers.py [--candidates 20] [--workers 1,2,4] [--clones 3]
                                  [--measure-seconds 0.3] [--think-seconds 0]

    python bench/bench_workers.py --workers 0 --clones 1,8 --think-seconds 4 \
                                  --measure-seconds 1 --candidates 10

The project is 40 lines ``c<i>=<value>``; the metric is their sum (lower is better), printed
after sleeping ``--measure-seconds`` (the measurement's cost). Each scripted agent, one thread
per worker, thinks for ``--think-seconds`` (a sleep: an agent waiting for its model), edits one
or two random lines by a random step (-3 to +2) and calls ``git autoresearch run`` in its own
worktree, ``--candidates`` times. Under the strict rule the metric
has no noise, so every decision can be checked exactly. Prints, per worker count, candidates
per minute, keeps, replays and conflicts, and checks:

- every keep on the session branch is the child of the previous keep (the branch is linear),
  its recorded metric is the metric of the tree it committed (measured on its actual parent),
  and it beats its parent's;
- every run is in the ledger once: numbers 1..N, none lost, none twice.

Then, for each count of ``--clones`` (a comma-separated list), that many clones of the project
through a bare remote (``worker join``, as on several machines; here on one, each with its own
measurement slot, so their measurements overlap: a sleep measures the same whatever the load),
each with one agent: the same checks on the remote's session branch and on the merged ledger,
and every clone, once synced, reads the same runs. Candidates per hour are compared with the
first count's (``--clones 1,8``: eight clones against one). ``--clones 0`` skips it;
``--workers 0`` skips the workers on one machine. Then, with ``--host-agents N``, N agents that
only think (``worker join --measure-on-host``) and one measuring host (``git autoresearch
measurer``): candidates per hour, how busy the host was, the same checks, and that every run
names the candidate it measured, once. Exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

LINES = 40
TOOL = [sys.executable, "-m", "git_autoresearch"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def tool(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TOOL, *args], cwd=cwd, capture_output=True, text=True)


def metric_of(text: str) -> int:
    return sum(int(v) for v in re.findall(r"^c\d+=(-?\d+)$", text, re.M))


def make_project(folder: Path, seconds: float) -> Path:
    top = folder / "project"
    top.mkdir(parents=True)
    git(top, "init", "-q", "-b", "main")
    git(top, "config", "user.email", "bench@example.invalid")
    git(top, "config", "user.name", "bench")
    (top / "prog.txt").write_text("".join(f"c{i}=100\n" for i in range(LINES)))
    (top / "bench.py").write_text(
        "import re, time\n"
        f"time.sleep({seconds})\n"
        "text = open('prog.txt').read()\n"
        "print('total:', sum(int(v) for v in re.findall(r'^c\\d+=(-?\\d+)$', text, re.M)))\n")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "project")
    started = tool(top, "start", "--goal", "lower total", "--session-id", "bench", "--command",
                   f"{sys.executable} bench.py", "--metric-name", "total",
                   "--metric-pattern", r"total: (\S+)", "--scope", "prog.txt",
                   "--decision", "strict")
    if started.returncode:
        raise SystemExit(f"start failed: {started.stderr}")
    return top


def agent(where: Path, candidates: int, seed: int, outcomes: list[dict[str, object]],
          errors: list[str], think: float = 0.0) -> None:
    rng = random.Random(seed)
    for n in range(candidates):
        time.sleep(think)
        path = where / "prog.txt"
        lines = path.read_text().splitlines()
        for index in rng.sample(range(LINES), rng.choice((1, 2))):
            name, _, value = lines[index].partition("=")
            lines[index] = f"{name}={int(value) + rng.randint(-3, 2)}"
        path.write_text("\n".join(lines) + "\n")
        done = tool(where, "run", "-d", f"{where.name} candidate {n}", "--json")
        if done.returncode:
            errors.append(f"{where.name}: run {n}: exit {done.returncode}: {done.stderr.strip()}")
            return
        outcomes.append(json.loads(done.stdout))


def file_ledger(top: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (top / ".auto" / "log.jsonl").read_text().splitlines()
            if line.strip()]


def merged_ledger(top: Path) -> list[dict[str, object]]:
    """The runs a joined clone reads (its own and every other clone's), after a sync."""
    tool(top, "worker", "sync")
    listed = tool(top, "log", "--format", "jsonl")
    return [json.loads(line) for line in listed.stdout.splitlines() if line.strip()]


def check(top: Path, expected_runs: int, ledger: list[dict[str, object]] | None = None
          ) -> list[str]:
    problems = []
    ledger = file_ledger(top) if ledger is None else ledger
    numbers = [int(str(r["run"])) for r in ledger if "run" in r and "type" not in r]
    if sorted(numbers) != list(range(1, expected_runs + 1)):
        problems.append(f"runs in the ledger: {len(numbers)} ({len(set(numbers))} distinct), "
                        f"wanted 1..{expected_runs}")
    keeps = {str(r["commit"]): r for r in ledger if r.get("status") == "keep"}
    chain = git(top, "rev-list", "--reverse", "--abbrev-commit", "--abbrev=7",
                "autoresearch/bench").split()[1:]  # the project's own commit first
    previous = None
    for commit in chain:
        record = keeps.get(commit)
        if record is None:
            problems.append(f"{commit} on the branch has no keep record")
            continue
        parent = git(top, "rev-parse", "--short=7", f"{commit}^")
        if previous is not None and parent != previous:
            problems.append(f"{commit}'s parent {parent} is not the previous keep {previous}")
        actual = metric_of(git(top, "show", f"{commit}:prog.txt"))
        if record["metric"] != actual:
            problems.append(f"run {record['run']} recorded {record['metric']}, its tree "
                            f"measures {actual}")
        if previous is not None and actual >= metric_of(git(top, "show", f"{parent}:prog.txt")):
            problems.append(f"run {record['run']} does not beat its parent")
        previous = commit
    return problems


def joined_clones(folder: Path, top: Path, clones: int) -> list[Path]:
    """``clones`` workers through a bare remote: the project joined as c1 (which sends the
    session), then fresh clones joined as c2, c3, ..."""
    remote = folder / "remote.git"
    git(folder, "init", "-q", "--bare", "-b", "main", str(remote))
    git(top, "remote", "add", "origin", str(remote))
    git(top, "push", "-q", "origin", "main")
    places = [top]
    for n in range(1, clones + 1):
        where = top if n == 1 else folder / f"clone{n}"
        if n > 1:
            git(folder, "clone", "-q", str(remote), str(where))
            git(where, "config", "user.email", "bench@example.invalid")
            git(where, "config", "user.name", "bench")
            places.append(where)
        joined = tool(where, "worker", "join", "origin", "bench", "--name", f"c{n}")
        if joined.returncode:
            raise SystemExit(f"worker join failed: {joined.stderr}")
    return places


def run_agents(places: list[Path], candidates: int, think: float
               ) -> tuple[list[dict[str, object]], list[str], float]:
    """One agent thread in each of ``places``: what their runs printed, their errors, and the
    wall time they took together."""
    outcomes: list[dict[str, object]] = []
    errors: list[str] = []
    began = time.monotonic()
    threads = [threading.Thread(target=agent, args=(where, candidates, 1000 + i, outcomes,
                                                    errors, think))
               for i, where in enumerate(places)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes, errors, time.monotonic() - began


def hosted_clones(folder: Path, top: Path, agents: int) -> list[Path]:
    """A measuring host and ``agents`` agents through a bare remote: the project joined as
    host h1 (which sends the session), fresh clones joined as a1, a2, ... with
    --measure-on-host. Returns the agents' clones."""
    remote = folder / "remote.git"
    git(folder, "init", "-q", "--bare", "-b", "main", str(remote))
    git(top, "remote", "add", "origin", str(remote))
    git(top, "push", "-q", "origin", "main")
    joined = tool(top, "worker", "join", "origin", "bench", "--name", "h1")
    if joined.returncode:
        raise SystemExit(f"worker join failed: {joined.stderr}")
    places = []
    for n in range(1, agents + 1):
        where = folder / f"agent{n}"
        git(folder, "clone", "-q", str(remote), str(where))
        git(where, "config", "user.email", "bench@example.invalid")
        git(where, "config", "user.name", "bench")
        joined = tool(where, "worker", "join", "origin", "bench", "--name", f"a{n}",
                      "--measure-on-host")
        if joined.returncode:
            raise SystemExit(f"worker join failed: {joined.stderr}")
        places.append(where)
    return places


def with_host(agents: int, candidates: int, seconds: float, think: float) -> bool:
    """``agents`` agents that only think, one measuring host: candidates per hour, how busy
    the host was (the time it held a candidate, from taking it to sending its verdict, over the
    wall time: its answered lines, ``measurer --json``), the share of the wall time it spent
    measuring (the measured runs' ``duration_s``), and the checks."""
    folder = Path(tempfile.mkdtemp(prefix="bench-host-"))
    try:
        top = make_project(folder, seconds)
        places = hosted_clones(folder, top, agents)
        lines = folder / "answered.jsonl"  # (a file: a pipe nobody reads would stop the host)
        with lines.open("w") as out:
            host = subprocess.Popen([*TOOL, "measurer", "--poll", "0.2", "--json"], cwd=top,
                                    stdout=out, stderr=subprocess.DEVNULL)
            outcomes, errors, took = run_agents(places, candidates, think)
            host.terminate()
            host.wait(timeout=60)
        answered = [d for d in map(json.loads, lines.read_text().splitlines())
                    if d["schema"] != "git-autoresearch:error/1"]  # (its end, terminated)
        view = merged_ledger(top)
        problems = errors + check(top, 1 + agents * candidates, view)
        measured = [r for r in view if isinstance(r.get("queued"), dict)]
        if len(measured) != len(outcomes) or len({str(r["queued"]["key"]) for r in measured}) \
                != len(measured):
            problems.append(f"{len(measured)} runs name a queued candidate, for "
                            f"{len(outcomes)} answered")
        if len(answered) != len(outcomes):
            problems.append(f"the host answered {len(answered)} candidates, for "
                            f"{len(outcomes)} collected")
        busy = sum(d["answered_at"] - d["taken_at"] for d in answered) / took
        measuring = sum(float(str(r.get("duration_s") or 0)) for r in measured) / took
        # While every agent still had candidates to send: from the first candidate taken to
        # the first agent's last verdict (a night's loop, without the first think and the tail)
        start = min(d["taken_at"] for d in answered)
        end = min(max(d["answered_at"] for d in answered if d["agent"] == name)
                  for name in {d["agent"] for d in answered})
        steady = sum(max(0.0, min(d["answered_at"], end) - max(d["taken_at"], start))
                     for d in answered) / (end - start)
        refused = sum(1 for d in answered if "refused" in d["verdict"])
        keeps = sum(1 for o in outcomes if o["status"] == "keep")
        per_hour = len(outcomes) / took * 3600
        return report(f"{agents} thinking agents, 1 measuring host: {len(outcomes)} candidates "
                      f"in {took:.1f} s = {per_hour:.0f}/hour; {keeps} kept, {refused} refused "
                      f"(a conflict); host busy {busy:.0%} of the time ({steady:.0%} while "
                      f"every agent was sending), measuring {measuring:.0%}", problems)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def report(line: str, problems: list[str]) -> bool:
    """Print a trial's ``line`` and whether its checks passed (the first ten ``problems``);
    True when they did."""
    print(f"{line}; " + ("checks passed: no run lost or twice, every keep measured on its "
                         "parent" if not problems else f"{len(problems)} problem(s)"), flush=True)
    for p in problems[:10]:
        print(f"    {p}")
    return not problems


def one(workers: int, candidates: int, seconds: float, clones: int = 0, think: float = 0.0
        ) -> tuple[bool, float]:
    """One trial: whether its checks passed, and its candidates per hour."""
    folder = Path(tempfile.mkdtemp(prefix="bench-workers-"))
    try:
        top = make_project(folder, seconds)
        places = [top]
        if clones:
            places = joined_clones(folder, top, clones)
            workers = clones
        elif workers > 1:
            added = tool(top, "worker", "add", str(workers - 1), "--json")
            if added.returncode:
                raise SystemExit(f"worker add failed: {added.stderr}")
            places += [Path(w["path"]) for w in json.loads(added.stdout)["workers"]]
        outcomes, errors, took = run_agents(places, candidates, think)
        if clones:
            views = [merged_ledger(where) for where in places]
            problems = errors + check(top, 1 + workers * candidates, views[0])
            runs_seen = [sorted(int(str(r["run"])) for r in view) for view in views]
            if any(seen != runs_seen[0] for seen in runs_seen):
                problems.append("the clones read different runs once synced: "
                                + ", ".join(str(len(seen)) for seen in runs_seen))
        else:
            problems = errors + check(top, 1 + workers * candidates)
        keeps = sum(1 for o in outcomes if o["status"] == "keep")
        replays = sum(1 for o in outcomes if o.get("replayed"))
        conflicts = sum(1 for o in outcomes if (o.get("replayed") or {}).get("conflicts"))
        best = metric_of(git(top, "show", "autoresearch/bench:prog.txt"))
        label = f"{clones} clones through a bare remote" if clones else f"{workers} worker(s)"
        per_hour = len(outcomes) / took * 3600
        return report(f"{label}: {len(outcomes)} candidates in {took:.1f} s = "
                      f"{per_hour:.0f}/hour; {keeps} kept, {replays} replayed ({conflicts} "
                      f"conflicted); best {best} (from {LINES * 100})", problems), per_hour
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--clones", default="3")
    parser.add_argument("--measure-seconds", type=float, default=0.3)
    parser.add_argument("--think-seconds", type=float, default=0.0)
    parser.add_argument("--host-agents", type=int, default=0,
                        help="Then this many agents that only think, and one measuring host.")
    args = parser.parse_args()
    os.environ.setdefault("GIT_AUTORESEARCH_LOCK_WAIT", "120")
    ok = True
    print(f"think {args.think_seconds} s, measure {args.measure_seconds} s, "
          f"{args.candidates} candidates per agent, strict rule; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    for n in (int(x) for x in args.workers.split(",") if int(x)):
        ok &= one(n, args.candidates, args.measure_seconds, think=args.think_seconds)[0]
    rates: list[tuple[int, float]] = []
    for n in (int(x) for x in args.clones.split(",") if int(x)):
        passed, per_hour = one(n, args.candidates, args.measure_seconds, clones=n,
                               think=args.think_seconds)
        ok &= passed
        rates.append((n, per_hour))
    for n, per_hour in rates[1:]:
        print(f"{n} clones: {per_hour / rates[0][1]:.1f}x the candidates per hour of "
              f"{rates[0][0]} clone(s)")
    if args.host_agents:
        ok &= with_host(args.host_agents, args.candidates, args.measure_seconds,
                        args.think_seconds)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
