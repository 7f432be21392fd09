"""The benchmark: time sortlib.sort on a fixed pseudo-random list; best of 3 repetitions.

Prints `total_ms: <milliseconds>` (the primary metric) and METRIC lines (secondary metrics).
"""
import random
import time

import sortlib

SIZE = 1200
REPEATS = 3

data = random.Random(42).sample(range(100_000), SIZE)
timings = []
for _ in range(REPEATS):
    started = time.perf_counter()
    result = sortlib.sort(data)
    timings.append((time.perf_counter() - started) * 1000)
print(f"sorted {len(result)} items")
print(f"METRIC worst_ms={max(timings):.3f}")
print(f"total_ms: {min(timings):.3f}")
