"""Several agents on paper: a simulation of how the loop scales when agents think, as the
tool's rules run it, for counts no single machine can try.

    python bench/sim_workers.py [--think 4] [--measure 1] [--overhead 0.4] [--keep 0.4]
                                [--conflict 0.3] [--hours 1] [--seed 1]

Each agent thinks (``--think`` seconds), then its candidate is measured (``--measure``
seconds, plus ``--overhead`` seconds of the tool's own git work: fetch, run number, push) on
the incumbent of that moment. When another keep landed on the session branch meanwhile, the
candidate is replayed onto the new incumbent (a conflict, with probability ``--conflict``, ends
it as a discard) and measured again, at most 4 times, as ``run`` does; otherwise it is kept with
probability ``--keep`` (the rest are discards), and a keep moves the incumbent. Two layouts:

- ``hosts = agents``: every agent measures on its own host, as clones joined through a remote
  (``worker join``) do, each with its own measurement slot;
- ``hosts < agents``: the agents only think, and their candidates wait in one queue for the
  first free measuring host; an agent waits for its verdict before it thinks again.

Prints, per layout: candidates decided per hour, keeps, measurements spent per candidate (the
replays' re-measurements), how busy the measuring hosts were, and how long a candidate waited
in the queue. The first rows repeat what ``bench/bench_workers.py`` measured on one machine
(1 and 8 clones), so that the model can be checked against it.
"""

from __future__ import annotations

import argparse
import heapq
import random
from dataclasses import dataclass, field

REPLAYS = 4  # as run: measured again at most this many times, then a discard


@dataclass
class Outcome:
    candidates: int = 0
    keeps: int = 0
    conflicts: int = 0
    measurements: int = 0
    busy: float = 0.0  # host-seconds spent measuring
    waited: list[float] = field(default_factory=list)


def simulate(agents: int, hosts: int, think: float, measure: float, overhead: float,
             keep: float, conflict: float, seconds: float, seed: int) -> Outcome:
    """One layout for ``seconds`` of simulated time (see the module)."""
    rng = random.Random(seed)
    out = Outcome()
    keeps_at: list[float] = []  # when each keep landed, in order
    events: list[tuple[float, int, str, int]] = []  # (time, order, kind, agent)
    order = 0

    def push(at: float, kind: str, agent: int) -> None:
        nonlocal order
        order += 1
        heapq.heappush(events, (at, order, kind, agent))

    free = hosts
    queue: list[tuple[float, int]] = []  # (queued at, agent)
    tries = [0] * agents
    started = [0.0] * agents
    for agent in range(agents):  # the agents start a little apart, as people start them
        push(rng.uniform(0, think) + think, "submit", agent)
    cost = measure + overhead
    while events:
        now, _, kind, agent = heapq.heappop(events)
        if now > seconds:
            break
        if kind == "submit":
            tries[agent] = 0
            if free:
                free -= 1
                started[agent] = now
                out.waited.append(0.0)
                push(now + cost, "measured", agent)
            else:
                queue.append((now, agent))
        elif kind == "measured":
            out.measurements += 1
            out.busy += cost
            moved = any(started[agent] < k <= now for k in keeps_at[-agents:])
            if moved and tries[agent] < REPLAYS:
                tries[agent] += 1
                if rng.random() < conflict:
                    out.candidates += 1
                    out.conflicts += 1
                else:  # replayed onto the new incumbent and measured again, on the same host
                    started[agent] = now
                    push(now + cost, "measured", agent)
                    continue
            else:
                out.candidates += 1
                if not moved and rng.random() < keep:
                    out.keeps += 1
                    keeps_at.append(now)
            if queue:
                queued_at, waiting = queue.pop(0)
                started[waiting] = now
                out.waited.append(now - queued_at)
                push(now + cost, "measured", waiting)
            else:
                free += 1
            push(now + think, "submit", agent)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--think", type=float, default=4.0)
    parser.add_argument("--measure", type=float, default=1.0)
    parser.add_argument("--overhead", type=float, default=0.4)
    parser.add_argument("--keep", type=float, default=0.4)
    parser.add_argument("--conflict", type=float, default=0.3)
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    seconds = args.hours * 3600
    print(f"think {args.think} s, measure {args.measure} s + {args.overhead} s of git, keep "
          f"{args.keep:.0%} of candidates decided on an unmoved incumbent, a replay conflicts "
          f"{args.conflict:.0%}; {args.hours} h simulated")
    print(f"{'agents':>6} {'hosts':>5} {'cand/hour':>10} {'vs 1':>6} {'keeps':>6} "
          f"{'conflicts':>9} {'meas/cand':>9} {'hosts busy':>10} {'median wait':>11}")
    base = None
    for agents, hosts in ((1, 1), (8, 8), (40, 40), (40, 4), (8, 1)):
        out = simulate(agents, hosts, args.think, args.measure, args.overhead, args.keep,
                       args.conflict, seconds, args.seed)
        rate = out.candidates / args.hours
        base = base or rate
        waits = sorted(out.waited)
        wait = waits[len(waits) // 2] if waits else 0.0
        print(f"{agents:>6} {hosts:>5} {rate:>10.0f} {rate / base:>5.1f}x {out.keeps:>6} "
              f"{out.conflicts:>9} {out.measurements / max(out.candidates, 1):>9.2f} "
              f"{out.busy / (hosts * seconds):>10.0%} {wait:>10.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
