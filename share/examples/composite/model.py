"""The model under optimisation: a nearest-centroid classifier with a tunable number of
features used (more features: more accurate, slower)."""

FEATURES_USED = 8


def fit(rows):
    sums = {}
    counts = {}
    for x, y in rows:
        acc = sums.setdefault(y, [0.0] * len(x))
        for i, v in enumerate(x):
            acc[i] += v
        counts[y] = counts.get(y, 0) + 1
    return {y: [v / counts[y] for v in acc] for y, acc in sums.items()}


def predict(centroids, x):
    best, best_distance = None, None
    for label, centre in centroids.items():
        distance = 0.0
        for _ in range(20):  # a wasteful inner loop: the latency to win back
            distance = sum((x[i] - centre[i]) ** 2 for i in range(FEATURES_USED))
        if best_distance is None or distance < best_distance:
            best, best_distance = label, distance
    return best
