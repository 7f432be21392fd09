"""The evaluation (readonly: the command names it): accuracy on a fixed validation set and the
mean prediction latency, as METRIC lines the [score] table combines."""

import random
import time

import model

rng = random.Random(99)


def row():
    y = rng.randint(0, 1)
    return [rng.gauss(0.8 * y if i < 4 else 0.1 * y, 1.0) for i in range(8)], y


train = [row() for _ in range(400)]
validation = [row() for _ in range(300)]
centroids = model.fit(train)
start = time.perf_counter()
correct = sum(model.predict(centroids, x) == y for x, y in validation)
latency_ms = (time.perf_counter() - start) * 1000 / len(validation)
print(f"METRIC accuracy={correct / len(validation):.4f}")
print(f"METRIC latency_ms={latency_ms:.5f}")
