"""The training run under optimisation: logistic regression by stochastic gradient descent.

Each sample of a measurement gets its own seed (AUTORESEARCH_SAMPLE), so the initial weights
and the order of the rows vary as they would between real training runs.
"""

import math
import os
import random

from prepare import FEATURES, load, validation_loss

LEARNING_RATE = 0.01
EPOCHS = 3
BATCH_SIZE = 32


def main():
    rng = random.Random(int(os.environ.get("AUTORESEARCH_SAMPLE", "1")))
    train, validation = load()
    weights = [rng.gauss(0.0, 0.5) for _ in range(FEATURES)]
    bias = 0.0

    def predict(x):
        z = bias + sum(w * v for w, v in zip(weights, x))
        return 1.0 / (1.0 + math.exp(-max(min(z, 30.0), -30.0)))

    for _ in range(EPOCHS):
        rng.shuffle(train)
        for start in range(0, len(train), BATCH_SIZE):
            batch = train[start:start + BATCH_SIZE]
            grad_w = [0.0] * FEATURES
            grad_b = 0.0
            for x, y in batch:
                error = predict(x) - y
                grad_b += error
                for i in range(FEATURES):
                    grad_w[i] += error * x[i]
            bias -= LEARNING_RATE * grad_b / len(batch)
            for i in range(FEATURES):
                weights[i] -= LEARNING_RATE * grad_w[i] / len(batch)
    print(f"val_loss: {validation_loss(predict, validation):.6f}")


if __name__ == "__main__":
    main()
