"""Keep or discard a candidate against the incumbent's samples: pure functions on lists of floats.

Two rules share one interface, ``rule(pool, candidate, direction=..., min_effect=...,
max_samples=...) -> Decision``, called after each new sample of the candidate (the sample index
is ``len(candidate)``):

- :func:`strict`, the seeds' rule: the candidate's median strictly beats the incumbent's median
  (today's best) by more than ``min_effect``.
- :func:`sequential`, a group-sequential, distribution-free rule:

  * the test is the one-sided Wilcoxon-Mann-Whitney rank-sum test (Mann & Whitney 1947), with
    its exact null distribution (the coefficients of the Gaussian binomial [m+n choose n]_q,
    Andrews 1976, *The Theory of Partitions*, 3.4): ranks make one stray slow sample count as
    one sample, not as its size, and the test keeps 95 % of the t-test's efficiency under
    Gaussian noise (3/pi, Hodges & Lehmann 1956);
  * ``min_effect`` (relative) is tested as a shifted null, ``H0: shift >= -min_effect *
    |median(pool)|``, by shifting the candidate's samples before ranking (Hollander, Wolfe &
    Chicken 2014, *Nonparametric Statistical Methods*, 3rd ed., section 4.1);
  * looks before ``max_samples`` stop for *better* only at ``p <= 0.001`` (the Haybittle-Peto
    boundary: Haybittle 1971, Peto et al. 1976), so the last look keeps almost all of
    ``ALPHA`` (10 %, one-sided); they stop for *worse* when the candidate is significantly
    worse at ``FUTILITY``, and as *inconclusive* when the one-sided p-value of *better* after
    ``n`` samples exceeds ``HOPELESS[n-1]`` (0.75 after two, 0.55 after three, then 0.45,
    0.4, 0.35 and 0.3 from the seventh): futility stops, which can only lower the type I
    error (Jennison & Turnbull 2000, *Group Sequential Methods in Clinical Trials*, chapter
    10). ``ALPHA``, the schedule and the default ``max_samples`` of 16 were tuned by
    simulation (``bench/bench_decisions.py``): the futility stops end most no-effect
    candidates after a few samples, so the last look's level and a long ``max_samples`` buy
    power for real gains cheaply, and in a stream the realised share of no-effect changes kept
    stays near 2 % (a keep's samples, selected for being good, make the next bar hard). At the
    last look a candidate not better at ``alpha`` is ``worse`` (significantly) or
    ``inconclusive``;
  * the effect is the Hodges-Lehmann shift ``median(c_j - p_i)`` over all pairs, with the
    distribution-free interval ``[D_(C), D_(mn+1-C)]`` of the ordered pairwise differences,
    ``C`` the largest count with ``P(U <= C-1) <= (1-CONFIDENCE)/2`` (Hollander, Wolfe &
    Chicken, section 4.3; Bauer 1972, JASA 67:687); the relative effect divides by
    ``|median(pool)|``;
  * a metric with no spread (each side's samples all equal, and at least two samples in all)
    is decided exactly as :func:`strict` decides it: after one sample against a pool of two or
    more, after two right after a one-sample keep.

The incumbent's pool (:func:`incumbent`) is a window of its most recent samples; when its
recent third differs from the older samples (two-sided rank-sum test at ``DRIFT_ALPHA``) the
pool says so and keeps only the recent part, so the candidate is compared with the machine as
it is now. Nothing here runs git or reads files.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from .stats import median

# mutation: equivalent a type for the checker: annotations are never evaluated at run time
Verdict = Literal["better", "worse", "inconclusive", "continue"]
DIRECTIONS = ("lower", "higher")
RULES = ("sequential", "strict")
ALPHA = 0.10  # one-sided level of the last look (bounds the share of no-effect changes kept)
AUDIT_ALPHA = 0.05  # the level of an audit, which confirms a keep: stricter than a keep
ALPHA_INTERIM = 0.001  # Haybittle-Peto: an early keep must be this clear
FUTILITY = 0.02  # an early stop for worse: significantly worse at this one-sided level
# An early stop as inconclusive when the one-sided p-value of better exceeds HOPELESS[n - 1]
# after n samples (the last entry holds on): the candidate is not heading for a keep.
HOPELESS = (
    1.0,  # mutation: equivalent only `1.0` -> `2.0`: no p-value is above 1 or 2
    0.75, 0.55, 0.45, 0.4, 0.35, 0.3)
CONFIDENCE = 0.80  # two-sided interval of the effect, the dual of the one-sided 10 % test
AUDIT_CONFIDENCE = 0.90  # the dual of the audit's one-sided 5 % test
WINDOW = 30  # samples of the incumbent kept; the most recent win
DRIFT_ALPHA = 0.01  # two-sided level at which the incumbent's recent samples have moved
# Fewer samples than this are not tested for drift.
# mutation: equivalent only `9` -> `10`, `9` -> `8`: none found below 12 (2/C(11, 3) = 1.2 %)
DRIFT_MIN = 9


@dataclass(frozen=True)
class Effect:
    """The candidate minus the incumbent, in the metric's unit (``value``, ``low``, ``high``:
    a point estimate and a two-sided interval at ``confidence``) and relative to
    ``|median(pool)|`` (None when that is 0). Negative is lower, whatever the direction."""

    value: float
    low: float
    high: float
    relative: float | None
    relative_low: float | None
    relative_high: float | None
    confidence: float


@dataclass(frozen=True)
class Decision:
    """What a rule says after the candidate's latest sample: ``verdict`` (``continue`` asks for
    another sample), the ``effect``, how many samples of each side it used, and the one-sided
    p-values that the candidate is better (by ``min_effect``) and worse (None for strict)."""

    rule: str
    verdict: Verdict
    effect: Effect
    incumbent_samples: int
    candidate_samples: int
    p_better: float | None = None
    p_worse: float | None = None

    @property
    def done(self) -> bool:
        return self.verdict != "continue"


@dataclass(frozen=True)
class Drift:
    """The incumbent's recent samples against its older ones: ``effect`` (recent minus older,
    Hodges-Lehmann, in the metric's unit), ``relative`` to the older median (None when 0),
    the two-sided ``p`` value, and whether the move is ``against`` the direction (worse)."""

    effect: float
    relative: float | None
    p: float
    against: bool
    recent: int
    older: int


@dataclass(frozen=True)
class Pool:
    """The incumbent's samples a candidate is compared with (oldest first), and ``drift``: the
    recent part's move against the older part when the test found one (else None)."""

    samples: tuple[float, ...]
    drift: Drift | None = None


def check(pool: list[float], candidate: list[float], direction: str, min_effect: float,
          max_samples: int) -> None:
    """Raise ValueError when the inputs cannot be decided on: an empty pool, no candidate
    sample, a non-finite sample, an unknown direction, a negative ``min_effect`` or
    ``max_samples`` below 1."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, not {direction!r}")
    if not pool or not candidate:
        raise ValueError("both the incumbent's pool and the candidate need a sample")
    if not all(math.isfinite(v) for v in [*pool, *candidate]):
        raise ValueError("samples must be finite numbers")
    if not (min_effect >= 0 and math.isfinite(min_effect)):
        raise ValueError(f"min_effect must be a finite number >= 0, not {min_effect}")
    if max_samples < 1:
        raise ValueError(f"max_samples must be at least 1, not {max_samples}")


def oriented(values: list[float], direction: str) -> list[float]:
    """The values turned so that lower is better (negated when higher is better)."""
    return [-v for v in values] if direction == "higher" else list(values)


def threshold(pool: list[float], min_effect: float) -> float:
    """The smallest improvement worth a keep, in the metric's unit (>= 0)."""
    return min_effect * abs(median(pool))


def strict(pool: list[float], candidate: list[float], *, direction: str = "lower",
           min_effect: float = 0.0, max_samples: int = 1) -> Decision:
    """The seeds' rule: after ``max_samples`` samples, ``better`` when the candidate's median
    beats the incumbent's median (the best so far) strictly, by more than ``min_effect``
    (relative), ``worse`` when it is strictly worse, else ``inconclusive``; ``continue``
    before. The effect's interval is the point itself. Raises ValueError (see :func:`check`)."""
    check(pool, candidate, direction, min_effect, max_samples)
    best, mine = median(oriented(pool, direction)), median(oriented(candidate, direction))
    diff = mine - best
    verdict: Verdict
    if len(candidate) < max_samples:
        verdict = "continue"
    elif -diff > threshold(pool, min_effect):  # (the threshold is >= 0: diff is below 0)
        verdict = "better"
    elif diff > 0:
        verdict = "worse"
    else:
        verdict = "inconclusive"
    raw = diff if direction == "lower" else -diff
    return Decision("strict", verdict, effect(pool, raw, raw, raw, 1.0), len(pool),
                    len(candidate))


def effect(pool: list[float], value: float, low: float, high: float,
           confidence: float) -> Effect:
    """An :class:`Effect` in the metric's unit, with its relative figures against
    ``|median(pool)|``."""
    scale = abs(median(pool))
    if scale == 0:
        return Effect(value, low, high, None, None, None, confidence)
    return Effect(value, low, high, value / scale, low / scale, high / scale, confidence)


@lru_cache(maxsize=4096)
def null_counts(m: int, n: int) -> tuple[int, ...]:
    """How many of the ``C(m+n, n)`` equally likely orderings give each value ``u`` (0..mn) of
    the Mann-Whitney count: the coefficients of the Gaussian binomial ``prod_{i=1..n}
    (1 - q^(m+i)) / (1 - q^i)`` (exact, no ties)."""
    poly = [1]
    for i in range(1, n + 1):
        grown = poly + [0] * m  # the degree grows by m at each factor
        for j in range(len(grown) - 1, m + i - 1, -1):  # times (1 - q^(m+i))
            grown[j] -= grown[j - m - i]
        for j in range(i, len(grown)):  # divided by (1 - q^i)
            grown[j] += grown[j - i]
        poly = grown
    return tuple(poly)


def lower_tail(u: float, m: int, n: int) -> float:
    """``P(U <= u)`` under the null for samples of ``m`` and ``n``; a half-count from ties is
    rounded up (conservative)."""
    counts = null_counts(m, n)
    top = math.ceil(u - 1e-9)
    return sum(counts[:max(top + 1, 0)]) / sum(counts)


def mann_whitney(pool: list[float], candidate: list[float]) -> float:
    """The Mann-Whitney count ``U = sum [c > p] + 0.5 [c == p]`` over all pairs: small when the
    candidate's samples lie below the pool's."""
    ordered = sorted(pool)
    total = 0.0
    for c in candidate:
        below = bisect_left(ordered, c)
        total += below + 0.5 * (bisect_right(ordered, c) - below)
    return total


def p_lower(pool: list[float], candidate: list[float]) -> float:
    """One-sided p-value that the candidate's samples lie below the pool's."""
    return lower_tail(mann_whitney(pool, candidate), len(pool), len(candidate))


def p_higher(pool: list[float], candidate: list[float]) -> float:
    """One-sided p-value that the candidate's samples lie above the pool's."""
    m, n = len(pool), len(candidate)
    return lower_tail(m * n - mann_whitney(pool, candidate), m, n)


def hodges_lehmann(pool: list[float], candidate: list[float],
                   confidence: float = CONFIDENCE) -> tuple[float, float, float, float]:
    """The Hodges-Lehmann shift (candidate minus pool) and its distribution-free interval:
    ``(estimate, low, high, achieved confidence)``. With too few samples for ``confidence``
    the interval is the range of the pairwise differences and the lower level is returned."""
    diffs = sorted(c - p for c in candidate for p in pool)
    m, n = len(pool), len(candidate)
    counts = null_counts(m, n)
    total = sum(counts)
    tail, cut, below = (1 - confidence) / 2, 0, 0
    # mutation: equivalent only `<` -> `<=`: the counts sum to more than any tail
    while (cut < len(counts)
           and (below + counts[cut]) / total <= tail):
        below += counts[cut]
        cut += 1
    cut = max(cut, 1)
    achieved = 1 - 2 * sum(counts[:cut]) / total
    return median(diffs), diffs[cut - 1], diffs[len(diffs) - cut], achieved


def constant(values: list[float]) -> bool:
    return min(values) == max(values)


def sequential(pool: list[float], candidate: list[float], *, direction: str = "lower",
               min_effect: float = 0.0, max_samples: int = 16, alpha: float = ALPHA,
               confidence: float = CONFIDENCE) -> Decision:
    """Decide on the candidate's samples so far (one more each call) against the incumbent's
    ``pool``: ``better`` (keep), ``worse``, ``inconclusive`` (at ``max_samples``, or earlier
    when the candidate is not heading for better), or ``continue``. ``min_effect`` is
    relative (0.01: one percent); ``alpha`` is the one-sided level of the last look and
    ``confidence`` the two-sided level of the effect's interval. The statistics and their
    sources are in the module's docstring. Raises ValueError (see :func:`check`)."""
    check(pool, candidate, direction, min_effect, max_samples)
    n, last = len(candidate), len(candidate) >= max_samples
    if constant(pool) and constant(candidate) and (len(pool) + n >= 3 or last):
        return spread_free(pool, candidate, direction, min_effect)
    ours, theirs = oriented(pool, direction), oriented(candidate, direction)
    shift = threshold(pool, min_effect)
    better = p_lower(ours, [c + shift for c in theirs])
    worse = p_higher(ours, theirs)
    verdict: Verdict = "continue"
    if better <= (alpha if last else ALPHA_INTERIM):
        verdict = "better"
    elif worse <= (alpha if last else FUTILITY):
        verdict = "worse"
    elif last or better > HOPELESS[min(n, len(HOPELESS)) - 1]:  # futility
        verdict = "inconclusive"
    value, low, high, level = hodges_lehmann(pool, candidate, confidence)
    if verdict == "inconclusive" and level >= confidence \
            and (low > 0 if direction == "lower" else high < 0):
        # Stopped for futility with its whole interval (at the full confidence) on the worse
        # side: worse, not noise; at the last look this is the rank test's own verdict.
        verdict = "worse"
    return Decision("sequential", verdict, effect(pool, value, low, high, level), len(pool), n,
                    better, worse)


def spread_free(pool: list[float], candidate: list[float], direction: str,
                min_effect: float) -> Decision:
    """A metric with no spread: :func:`strict`'s verdict, now, under the sequential rule's
    name; its p-values are 0 or 1 (the difference is certain)."""
    ruled = strict(pool, candidate, direction=direction, min_effect=min_effect,
                   max_samples=len(candidate))
    better = 0.0 if ruled.verdict == "better" else 1.0
    worse = 0.0 if ruled.verdict == "worse" else 1.0
    return Decision("sequential", ruled.verdict, ruled.effect, len(pool), len(candidate),
                    better, worse)


def window(samples: list[float], size: int = WINDOW) -> list[float]:
    """The ``size`` most recent samples (``samples`` is oldest first). Raises ValueError when
    ``size`` is below 1."""
    if size < 1:
        raise ValueError(f"the window must hold at least one sample, not {size}")
    return list(samples[-size:])


def drift(samples: list[float], direction: str = "lower") -> Drift | None:
    """Whether the incumbent's most recent third of ``samples`` (oldest first; at least 3) has
    moved against the older ones: the two-sided rank-sum test at ``DRIFT_ALPHA``. None when it
    has not, or with fewer than ``DRIFT_MIN`` samples."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, not {direction!r}")
    # mutation: equivalent only `<` -> `<=`, `or` -> `and`: shortcuts, never at 1 % below
    if len(samples) < DRIFT_MIN or constant(samples):
        return None
    # mutation: equivalent only `3` -> `2`, `3` -> `4`: from DRIFT_MIN on, a third is 3 or more
    split = len(samples) - max(3, len(samples) // 3)
    older, recent = list(samples[:split]), list(samples[split:])
    p = 2 * min(p_lower(older, recent), p_higher(older, recent))  # (above 1: no drift)
    # mutation: equivalent only `>` -> `>=`: no pool of 9 to 60 has a p-value of exactly 1 %
    if p > DRIFT_ALPHA:
        return None
    moved = median([r - o for r in recent for o in older])
    scale = abs(median(older))
    # mutation: equivalent only `>` -> `>=`, `<` -> `<=`: a drift never moves by exactly 0
    against = moved > 0 if direction == "lower" else moved < 0
    return Drift(moved, moved / scale if scale else None, p, against, len(recent), len(older))


def incumbent(samples: list[float], direction: str = "lower", size: int = WINDOW) -> Pool:
    """The pool a candidate is compared with: the ``size`` most recent of the incumbent's
    ``samples`` (oldest first); when they drift (:func:`drift`), only the recent part, with the
    drift reported. Raises ValueError for an empty list or a bad ``size`` or direction."""
    if not samples:
        raise ValueError("the incumbent has no sample")
    kept = window(samples, size)
    moved = drift(kept, direction)
    if moved is None:
        return Pool(tuple(kept))
    return Pool(tuple(kept[-moved.recent:]), moved)


def decide(rule: str, pool: list[float], candidate: list[float], *, direction: str = "lower",
           min_effect: float = 0.0, max_samples: int = 16) -> Decision:
    """The decision of the rule named ``rule`` (one of ``RULES``). Raises ValueError for an
    unknown rule or bad inputs."""
    if rule == "strict":
        return strict(pool, candidate, direction=direction, min_effect=min_effect,
                      max_samples=max_samples)
    if rule == "sequential":
        return sequential(pool, candidate, direction=direction, min_effect=min_effect,
                          max_samples=max_samples)
    raise ValueError(f"rule must be one of {RULES}, not {rule!r}")
