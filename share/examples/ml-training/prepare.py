"""The data and the evaluation (readonly: they define success). Pure Python, no numpy.

A fixed synthetic binary classification set: 5 features, labels from a hidden linear rule
with noise; 600 training rows and 300 validation rows, always the same.
"""

import math
import random

FEATURES = 5
_TRUE_WEIGHTS = [1.5, -2.0, 0.7, 0.0, 1.1]


def _rows(rng, count):
    rows = []
    for _ in range(count):
        x = [rng.gauss(0.0, 1.0) for _ in range(FEATURES)]
        z = sum(w * v for w, v in zip(_TRUE_WEIGHTS, x)) + rng.gauss(0.0, 1.0)
        rows.append((x, 1 if z > 0 else 0))
    return rows


def load():
    """(train, validation): lists of (features, label)."""
    rng = random.Random(1234)
    return _rows(rng, 600), _rows(rng, 300)


def validation_loss(predict, rows):
    """Mean log loss (nats) of ``predict(features) -> probability`` on ``rows``."""
    total = 0.0
    for x, y in rows:
        p = min(max(predict(x), 1e-12), 1 - 1e-12)
        total -= math.log(p) if y else math.log(1 - p)
    return total / len(rows)
