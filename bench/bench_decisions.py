"""Keep/discard decisions on simulated streams of candidates, on a still and on a drifting
machine: the rule that measures the incumbent beside the candidate ("fresh"), the same rule on
the incumbent's pool alone ("pool only", ``pairs`` = 0) and the seeds' strict rule.

    python bench/bench_decisions.py [--seeds 40] [--candidates 300] [--max-samples 16]
                                    [--pairs 8] [--trials 2000] [--jobs N] [--cli 60]

Each stream starts at a true value of 100 (lower is better) and offers ``--candidates`` changes:
80 % with no effect, 10 % true 2 % gains, 10 % true 2 % losses (multiplicative). A sample is
``true value * machine * (1 + noise * N(0, 1))``, times 1.5 with probability 5 % under heavy
tails. ``machine`` (:class:`Machine`) moves one step with every measurement, the incumbent's
included: still; a slow load wave; load steps that switch at random; bursts of load; an AR(1)
load; a machine that gets steadily faster or slower (0.2 % a measurement). The deterministic
metric has no noise; an unchanged candidate measures exactly the incumbent's value.

Under the sequential rules a stream starts from ``baseline_samples`` = 5; the rule asks for
each sample of either side (:class:`decide.rules.Comparison`); a keep's samples become the pool;
after a discard the incumbent's fresh samples join the pool, or, when it took none, the
incumbent is measured again once (up to ``baseline_samples`` when its pool holds fewer), as
the loop does. Every measurement counts. The strict rule is the seeds' default: one sample per
run, the best's single sample as the bar. Every figure is a mean over seeds; "kept" is the
share of that kind of candidate kept, "loss keeps" (the harmful keeps) is a share of all
candidates, "true change" is where the kept runs took the true value.

A second table gives the pool-only rule's operating characteristic against a fresh,
unselected pool (3 % noise).

Last, one end-to-end pass (``--cli``) sends the first stream of "faster 2%" through the
commands on a scratch repository (:func:`cli_pass`), whose benchmark's true value, machine and
noise are the simulation's, drawn from a counter outside the repository: the commands must
reach the simulation's decisions with its number of measurements, the incumbent's included.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from git_autoresearch.decide import rules as decision  # noqa: E402

EFFECT = 0.02
BASELINE_SAMPLES = 5
RATE = 0.002  # the steadily faster or slower machine: 0.2 % a measurement


@dataclass(frozen=True)
class Scenario:
    name: str
    noise: float
    tails: float = 0.0  # probability of a sample 1.5x slower
    machine: str = "still"  # how the machine's speed moves, one measurement at a time

    @property
    def drifting(self) -> bool:
        return self.machine != "still"


SCENARIOS = [
    Scenario("gauss 3%", 0.03),
    Scenario("gauss 1%", 0.01),
    Scenario("heavy tails 3%", 0.03, tails=0.05),
    Scenario("deterministic", 0.0),
    Scenario("load wave 2%", 0.02, machine="wave"),
    Scenario("load steps 2%", 0.02, machine="steps"),
    Scenario("bursts 2%", 0.02, machine="bursts"),
    Scenario("AR(1) 2%", 0.02, machine="ar"),
    Scenario("faster 2%", 0.02, machine="faster"),
    Scenario("slower 2%", 0.02, machine="slower"),
    Scenario("jobs 2%", 0.02, machine="jobs"),
]


class Machine:
    """The machine's speed factor, one call per measurement (incumbent ones included):
    ``still`` 1; ``wave`` a slow load wave, +-5 % over 500 measurements; ``steps`` a load
    that switches on (+5 %) and off at random, 1 in 80 measurements; ``bursts`` a burst of
    load (+8 %) starting with probability 6 % and lasting 1 + Exp(mean 3) measurements;
    ``ar`` an AR(1) load, correlation 0.8 from one measurement to the next, 2 % spread;
    ``faster`` and ``slower`` a machine whose speed moves by ``RATE`` each measurement;
    ``jobs`` other work coming and going on a machine of two cores (none, one or two busy
    processes: 1, 1.6 or 2 times slower), switching with probability 1/15 a measurement."""

    def __init__(self, kind: str, seed: int) -> None:
        self.kind, self.rng, self.tick = kind, random.Random(seed * 31 + 5), 0
        self.load, self.burst = 0.0, 0

    def factor(self) -> float:
        tick, self.tick = self.tick, self.tick + 1
        if self.kind == "wave":
            return 1 + 0.05 * math.sin(2 * math.pi * tick / 500)
        if self.kind == "steps":
            if self.rng.random() < 1 / 80:
                self.load = 0.05 - self.load
            return 1 + self.load
        if self.kind == "bursts":
            if self.burst > 0:
                self.burst -= 1
            elif self.rng.random() < 0.06:
                self.burst = 1 + int(self.rng.expovariate(1 / 3))
            return 1.08 if self.burst > 0 else 1.0
        if self.kind == "ar":
            self.load = 0.8 * self.load + 0.6 * 0.02 * self.rng.gauss(0.0, 1.0)
            return 1 + self.load
        if self.kind == "jobs":
            if self.rng.random() < 1 / 15:
                self.load = self.rng.choice([0.0, 0.6, 1.0])
            return 1 + self.load
        if self.kind == "faster":
            return math.exp(-RATE * tick)
        if self.kind == "slower":
            return math.exp(RATE * tick)
        return 1.0


@dataclass
class Tally:
    kept: dict[str, int] = field(default_factory=lambda: {"gain": 0, "none": 0, "loss": 0})
    offered: dict[str, int] = field(default_factory=lambda: {"gain": 0, "none": 0, "loss": 0})
    measurements: int = 0
    verdicts: list[str] = field(default_factory=list)
    final: float = 100.0


def stream(seed: int, candidates: int) -> list[str]:
    rng = random.Random(seed)
    kinds = []
    for _ in range(candidates):
        u = rng.random()
        kinds.append("gain" if u < 0.1 else "loss" if u < 0.2 else "none")
    return kinds


@dataclass(frozen=True)
class Rule:
    """A rule as the loop runs it: ``strict``; ``sequential`` with ``pairs`` of fresh
    incumbent samples at most (0: the pool alone decides)."""

    label: str
    rule: str
    max_samples: int
    pairs: int = decision.PAIRS


def run(ruling: Rule, scenario: Scenario, seed: int, candidates: int) -> Tally:
    """One stream under one rule. Every measurement, the incumbent's included, is counted and
    moves the machine on by one."""
    kinds, tally = stream(seed, candidates), Tally()
    rng, machine = random.Random(seed * 7919 + 17), Machine(scenario.machine, seed)

    def sample(true: float) -> float:
        tally.measurements += 1
        value = true * machine.factor() * (1 + scenario.noise * rng.gauss(0.0, 1.0))
        return value * 1.5 if scenario.tails and rng.random() < scenario.tails else value

    true, sequential = 100.0, ruling.rule == "sequential"
    pool = [sample(true) for _ in range(BASELINE_SAMPLES if sequential else 1)]
    tally.measurements = 0  # (the baseline is no candidate's)
    exact = False
    for kind in kinds:
        mine = true * {"gain": 1 - EFFECT, "loss": 1 + EFFECT, "none": 1.0}[kind]
        fresh: list[float] = []
        if sequential:
            comparison = decision.Comparison(pool, max_samples=ruling.max_samples,
                                             pairs=ruling.pairs)
            while not isinstance(step := comparison.next(), decision.Decision):
                comparison.add(step, sample(mine if step == "candidate" else true))
            ruled, taken, fresh = step, comparison.candidate, comparison.fresh
        else:
            taken = [sample(mine)]
            ruled = decision.strict(pool, taken)
        tally.offered[kind] += 1
        tally.verdicts.append(ruled.verdict)
        if ruled.verdict == "better":
            tally.kept[kind] += 1
            true, pool = mine, list(taken)
            exact = ruled.effect.low == ruled.effect.high
        elif sequential:
            # The incumbent's fresh samples join its pool; without any, it is measured again
            # once (up to the baseline's count when its pool holds fewer), as the loop does.
            pool = [*pool, *fresh]
            if not fresh or len(pool) < BASELINE_SAMPLES:
                more = 1 if exact else max(1, BASELINE_SAMPLES - len(pool))
                pool = [*pool, *(sample(true) for _ in range(more))]
            pool = decision.window(pool)
    tally.final = true
    return tally


@dataclass
class Row:
    gains: float
    none: float
    losses: float
    measurements: float
    final: float
    verdicts: list[list[str]]


def summarise(tallies: list[Tally], candidates: int) -> Row:
    def mean(values: list[float]) -> float:
        return sum(values) / len(values)

    return Row(
        gains=mean([t.kept["gain"] / max(1, t.offered["gain"]) for t in tallies]),
        none=mean([t.kept["none"] / max(1, t.offered["none"]) for t in tallies]),
        losses=mean([t.kept["loss"] / candidates for t in tallies]),
        measurements=mean([t.measurements / candidates for t in tallies]),
        final=mean([t.final / 100 - 1 for t in tallies]),
        verdicts=[t.verdicts for t in tallies])


def cell(scenario: Scenario, ruling: Rule, seeds: int, candidates: int) -> Row:
    """One row of the table: ``seeds`` streams of one scenario under one rule."""
    return summarise([run(ruling, scenario, seed, candidates) for seed in range(seeds)],
                     candidates)


def targets(rows: dict[tuple[str, str], Row], label: str) -> list[tuple[str, bool]]:
    """The targets for the sequential rule labelled ``label``."""
    seq = {name: row for (name, rule), row in rows.items() if rule == label}
    same = rows[("deterministic", label)].verdicts == rows[("deterministic", "strict")].verdicts
    drifting = [s for s in SCENARIOS if s.drifting]
    out = [
        ("3% noise: >= 40% of true gains kept", seq["gauss 3%"].gains >= 0.40),
        ("3% noise: no-effect kept <= 5% of them", seq["gauss 3%"].none <= 0.05),
        # (one more than before the screen's stop checked the pool against a sample of the
        # incumbent taken then: a gain on a machine that slowed since was screened out)
        ("3% noise: <= 7 measurements per candidate", seq["gauss 3%"].measurements <= 7.0),
        ("1% noise: >= 90% of true gains kept", seq["gauss 1%"].gains >= 0.90),
        ("heavy tails: harmful keeps <= 1% of candidates", seq["heavy tails 3%"].losses <= 0.01),
        ("deterministic: same decisions as strict", same),
        ("deterministic: <= 2 measurements per candidate",
         seq["deterministic"].measurements <= 2.0),
    ]
    for s in drifting:
        row = seq[s.name]
        out.append((f"{s.name}: no-effect kept <= 5%, harmful keeps <= 1%, >= 35% of gains "
                    f"kept, <= 10 measurements per candidate",
                    row.none <= 0.05 and row.losses <= 0.01 and row.gains >= 0.35
                    and row.measurements <= 10.0))
    return out


def fixed_pool(pool_size: int, effect: float, max_samples: int, trials: int) -> tuple[float, float]:
    """Share kept and mean samples of one candidate against a fresh, unselected pool of
    ``pool_size`` samples under 3 % Gaussian noise: the rule's own operating characteristic,
    without the stream's winner's curse."""
    rng = random.Random(pool_size * 1000 + max_samples)
    kept = samples = 0
    for _ in range(trials):
        pool = [100 * (1 + 0.03 * rng.gauss(0.0, 1.0)) for _ in range(pool_size)]
        taken: list[float] = []
        while True:
            taken.append(100 * (1 + effect) * (1 + 0.03 * rng.gauss(0.0, 1.0)))
            ruled = decision.sequential(pool, taken, max_samples=max_samples)
            if ruled.done:
                break
        kept += ruled.verdict == "better"
        samples += len(taken)
    return kept / trials, samples / trials


def operating_characteristic(max_samples: list[int], trials: int) -> None:
    print("\nOne candidate against a fresh pool (3% noise): kept share, mean candidate samples\n")
    print("| max_samples | pool | no effect kept | samples | 2% gain kept | samples |")
    print("|------------:|-----:|---------------:|--------:|-------------:|--------:|")
    for most in max_samples:
        for size in (10, 20, 30):
            none, none_n = fixed_pool(size, 0.0, most, trials)
            gain, gain_n = fixed_pool(size, -EFFECT, most, trials)
            print(f"| {most:>11} | {size:>4} | {none:>13.1%} | {none_n:>7.2f} "
                  f"| {gain:>11.1%} | {gain_n:>7.2f} |")


BENCH_SCRIPT = """import math, pathlib, random
counter = pathlib.Path({counter!r})  # outside the repository: both worktrees count here
n = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(n + 1))
rng = random.Random({seed} * 7919 + 17)
for _ in range(n + 1):
    g = rng.gauss(0.0, 1.0)
value = float(pathlib.Path("value.txt").read_text().split()[0])
print("score: " + repr(value * math.exp({speed} * n) * (1 + {noise} * g)))
"""


def cli_pass(candidates: int, seed: int, scenario: Scenario) -> bool:
    """The same stream through the commands: a scratch repository whose benchmark prints the
    true value in ``value.txt`` times the simulation's machine and noise (the k-th call of the
    benchmark, in the work tree or in the incumbent's worktree, takes the k-th tick and
    draw, from a counter outside the repository), ``git autoresearch start`` with the
    defaults and one ``git autoresearch run --json`` per candidate. The session must decide
    every candidate as the simulation did and take as many measurements."""
    import json
    import shutil
    import subprocess
    import tempfile

    exe = shutil.which("git-autoresearch", path=str(Path(sys.executable).parent)) \
        or shutil.which("git-autoresearch")
    if exe is None:
        print("\nCLI pass skipped: git-autoresearch is not installed")
        return True
    speed = {"still": 0.0, "faster": -RATE, "slower": RATE}[scenario.machine]
    simulated = run(Rule("fresh", "sequential", 16), scenario, seed, candidates)
    kinds, started = stream(seed, candidates), time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-decisions-") as scratch:
        top, counter = Path(scratch) / "project", Path(scratch) / "machine"
        top.mkdir()

        def call(*argv: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(argv, cwd=top, capture_output=True, text=True, check=True)

        call("git", "init", "-q", "-b", "main")
        call("git", "config", "user.email", "bench@example.com")
        call("git", "config", "user.name", "bench")
        (top / "bench.py").write_text(BENCH_SCRIPT.format(
            counter=str(counter), seed=seed, noise=scenario.noise, speed=speed))
        (top / "value.txt").write_text("100.0\n")
        call("git", "add", "-A")
        call("git", "commit", "-q", "-m", "the project")
        call(exe, "start", "--goal", "bench", "--session-id", "bench",
             "--command", f"{sys.executable} bench.py", "--metric-name", "score",
             "--metric-pattern", r"score: (\S+)", "--scope", "value.txt")
        true, verdicts = 100.0, []
        for i, kind in enumerate(kinds):
            mine = true * {"gain": 1 - EFFECT, "loss": 1 + EFFECT, "none": 1.0}[kind]
            (top / "value.txt").write_text(f"{mine!r}\n# candidate {i}: {kind}\n")
            done = json.loads(call(exe, "run", "-d", f"candidate {i}", "--json").stdout)
            verdicts.append(done["decision"]["verdict"])
            if done["status"] == "keep":
                true = mine
        calls = int(counter.read_text()) - BASELINE_SAMPLES
    seconds = time.monotonic() - started
    same = sum(a == b for a, b in zip(verdicts, simulated.verdicts, strict=True))
    print(f"\nCLI pass ({scenario.name}, seed {seed}, {candidates} candidates through "
          f"git autoresearch run): {same}/{candidates} decisions as simulated "
          f"({verdicts.count('better')} kept), "
          f"{calls / candidates:.2f} measurements per candidate "
          f"(simulated {simulated.measurements / candidates:.2f}), {seconds:.0f} s")
    return same == candidates and calls == simulated.measurements


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--candidates", type=int, default=300)
    parser.add_argument("--max-samples", type=int, nargs="+", default=[16])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--pairs", type=int, default=decision.PAIRS,
                        help="pairs of fresh incumbent and candidate samples at most")
    parser.add_argument("--cli", type=int, default=60,
                        help="candidates of the end-to-end pass through the commands (0: none)")
    parser.add_argument("--trials", type=int, default=2000,
                        help="candidates per cell of the fresh-pool table")
    args = parser.parse_args()
    started = time.monotonic()
    rules = [Rule(f"fresh {k}", "sequential", k, args.pairs) for k in args.max_samples]
    pool_only = [Rule(f"pool only {k}", "sequential", k, 0) for k in args.max_samples]
    rows: dict[tuple[str, str], Row] = {}
    cells = [(scenario, ruling) for scenario in SCENARIOS
             for ruling in [*rules, *pool_only, Rule("strict", "strict", 1)]]
    with ProcessPoolExecutor(args.jobs) as pool:
        for (scenario, ruling), row in zip(cells, pool.map(
                cell, [s for s, _ in cells], [r for _, r in cells], [args.seeds] * len(cells),
                [args.candidates] * len(cells)), strict=True):
            rows[(scenario.name, ruling.label)] = row
    print(f"{args.seeds} seeds x {args.candidates} candidates (80% none, 10% -2%, 10% +2%), "
          "lower is better; 'fresh N': the incumbent measured beside the candidate, "
          "'pool only N': the pool alone decides; N: samples of the candidate's first stage "
          "at most\n")
    print(f"| {'scenario':<15}| {'rule':<17}| gains kept | no-effect kept | loss keeps "
          f"| measurements | true change |")
    print(f"|{'-' * 16}|{'-' * 18}|-----------:|---------------:|-----------:"
          f"|-------------:|------------:|")
    for (name, label), row in rows.items():
        print(f"| {name:<15}| {label:<17}| {row.gains:>9.1%} | {row.none:>13.1%} "
              f"| {row.losses:>9.2%} | {row.measurements:>12.2f} | {row.final:>+10.1%} |")
    passed = True
    for ruling in rules:
        default = ruling.max_samples == 16  # the targets are the default rule's
        print(f"\n{ruling.label}" + (":" if default else " (not the default; for information):"))
        for text, ok in targets(rows, ruling.label):
            print(f"  {'PASS' if ok else 'FAIL'}  {text}")
            passed = passed and (ok or not default)
    operating_characteristic(args.max_samples, args.trials)
    if args.cli:
        ok = cli_pass(args.cli, 0, next(s for s in SCENARIOS if s.machine == "faster"))
        print(f"  {'PASS' if ok else 'FAIL'}  the commands decide as the simulation")
        passed = passed and ok
    print(f"\n{time.monotonic() - started:.0f} s")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
