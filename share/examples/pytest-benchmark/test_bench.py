"""The benchmark (readonly: the command names it). Needs pytest-benchmark."""

import random

import sortlib

DATA = [random.Random(7).randint(0, 10_000) for _ in range(150)]


def test_sort(benchmark):
    result = benchmark(sortlib.sort, DATA)
    assert result == sorted(DATA)
