"""The checks: sortlib.sort must agree with sorted() on many inputs, edge cases included."""
import random
import sys

import sortlib

rng = random.Random(7)
cases = [[], [1], [2, 1], [3, 3, 3], list(range(50, 0, -1))]
cases += [[rng.randint(-50, 50) for _ in range(rng.randint(0, 60))] for _ in range(200)]
for case in cases:
    if sortlib.sort(case) != sorted(case):
        print(f"wrong result for input of length {len(case)}: {case[:10]}...")
        sys.exit(1)
print(f"{len(cases)} cases passed")
