"""Keep or discard a candidate against the incumbent's samples: pure functions on lists of floats,
and the words of their verdicts for a run's record (:func:`discard_reason`).

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

import dataclasses
import math
from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from ..ledger.jsontext import number_text
from ..ledger.stats import median

Verdict = Literal["better", "worse", "inconclusive", "continue"]
Side = Literal["candidate", "incumbent"]
Evidence = Literal["pool", "pool+fresh", "fresh", "exact"]
DIRECTIONS = ("lower", "higher")
RULES = ("sequential", "strict")
ALPHA = 0.10  # one-sided level of the last look (bounds the share of no-effect changes kept)
AUDIT_ALPHA = 0.05  # the level of an audit, which confirms a keep: stricter than a keep
ALPHA_INTERIM = 0.001  # Haybittle-Peto: an early keep must be this clear
FUTILITY = 0.02  # an early stop for worse: significantly worse at this one-sided level
# An early stop as inconclusive when the one-sided p-value of better exceeds HOPELESS[n - 1]
# after n samples (the last entry holds on): the candidate is not heading for a keep.
HOPELESS = (
    1.0,
    0.75, 0.55, 0.45, 0.4, 0.35, 0.3)
CONFIDENCE = 0.80  # two-sided interval of the effect, the dual of the one-sided 10 % test
AUDIT_CONFIDENCE = 0.90  # the dual of the audit's one-sided 5 % test
WINDOW = 30  # samples of the incumbent kept; the most recent win
DRIFT_ALPHA = 0.01  # two-sided level at which the incumbent's recent samples have moved
# Fewer samples than this are not tested for drift.
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
    # How the verdict was reached (:class:`Comparison`): the incumbent's ``pool`` alone, the
    # pool and ``fresh`` samples of the incumbent together, fresh samples alone, or ``exact``
    # (no spread); how many fresh samples of the incumbent it took; and whether it came
    # before the rule's last look.
    evidence: Evidence = "pool"
    fresh_samples: int = 0
    stopped_early: bool = False

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
                   confidence: float = CONFIDENCE, *, nonnegative: bool | None = None
                   ) -> tuple[float, float, float, float]:
    """The Hodges-Lehmann shift (candidate minus pool) and its distribution-free interval:
    ``(estimate, low, high, achieved confidence)``. With too few samples for ``confidence``
    the interval is the range of the pairwise differences and the lower level is returned.
    When every sample is at or above zero (a time, a size: a metric that cannot be negative;
    ``nonnegative`` says so of the samples measured when ``pool`` is made of them, levelled),
    the candidate cannot fall below zero, so the shift is no lower than minus the pool's
    median (-100 %): the figures stop there, where the pairs of skewed samples can reach past
    it (a verdict, read from the p-values or the interval's sign, is the same)."""
    diffs = sorted(c - p for c in candidate for p in pool)
    m, n = len(pool), len(candidate)
    counts = null_counts(m, n)
    total = sum(counts)
    tail, cut, below = (1 - confidence) / 2, 0, 0
    while (cut < len(counts)
           and (below + counts[cut]) / total <= tail):
        below += counts[cut]
        cut += 1
    cut = max(cut, 1)
    achieved = 1 - 2 * sum(counts[:cut]) / total
    figures = (median(diffs), diffs[cut - 1], diffs[len(diffs) - cut])
    if nonnegative is None:
        nonnegative = min(pool) >= 0 and min(candidate) >= 0
    scale = abs(median(pool))
    if nonnegative and scale > 0:  # (with no scale there are no relative figures to bound)
        figures = tuple(max(figure, -scale) for figure in figures)  # type: ignore[assignment]
    return figures[0], figures[1], figures[2], achieved


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
    if len(samples) < DRIFT_MIN or constant(samples):
        return None
    split = len(samples) - max(3, len(samples) // 3)
    older, recent = list(samples[:split]), list(samples[split:])
    p = 2 * min(p_lower(older, recent), p_higher(older, recent))  # (above 1: no drift)
    if p > DRIFT_ALPHA:
        return None
    moved = median([r - o for r in recent for o in older])
    scale = abs(median(older))
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


# --- fresh evidence: the incumbent measured beside the candidate ------------------------------
#
# A pool measured earlier, under other load, is historical control data: borrowed only while
# it agrees with the incumbent measured now ("test-then-pool", Viele et al. 2014,
# Pharmaceutical Statistics 13:41). A candidate is first screened against the pool; one that
# is not hopeless goes on in counterbalanced blocks (incumbent, candidate, candidate,
# incumbent: the ABBA order of crossover designs, Jones & Kenward 2014, *Design and Analysis
# of Cross-Over Trials*, 3rd ed., chapter 2), so that a machine drifting linearly weighs on
# both sides alike, and a verdict rests on samples of both sides taken side by side.

SCREEN_PASS = 0.10  # a candidate this clearly better than the pool goes on to fresh evidence
SCREEN_MIN = 3  # samples of the candidate before it can go on (two back-to-back samples can
# sit in one burst of load)
# An early stop for futility against the pool when the one-sided p-value of better exceeds
# SCREEN_HOPELESS[n - 1] after n samples: more lenient than HOPELESS, since the pool may be
# stale; the fresh evidence that follows pays for it.
SCREEN_HOPELESS = (
    1.0,
    0.8, 0.6, 0.5, 0.45, 0.4, 0.35)
TREND_ALPHA = 0.05  # two-sided level of the pool's trend test: a pool that moves is not used
STALE_ALPHA = 0.03  # fresh incumbent samples better than the pool at this level: it is stale
BLEND_ALPHA = 0.06  # one-sided level of the keep on the pool and the fresh samples together
BLEND_GUARD = 0.25  # ... when the fresh samples alone also favour the candidate at this level
BLEND_MIN_PAIRS = 2  # ... after this many pairs at least (one block)
BLEND_PAIRS = 8  # ... and inconclusive after this many (or ``pairs``, when fewer)
FRESH_ALPHA = 0.02  # one-sided level of each look of a decision on fresh samples alone
# An early stop for futility on fresh samples alone after k pairs (from the second).
FRESH_HOPELESS = (1.0, 0.8, 0.65, 0.55, 0.45, 0.4)
PAIRS = 10  # pairs of fresh samples (incumbent, candidate) at most, by default
# The order of fresh samples: after a screen (its last sample was the candidate's), and from
# the start when the pool moves (a measurement begins with the candidate).
AFTER_SCREEN: tuple[Side, ...] = ("incumbent", "candidate", "candidate", "incumbent")
FROM_START: tuple[Side, ...] = ("candidate", "incumbent", "incumbent", "candidate")


@dataclass(frozen=True)
class Trend:
    """Mann-Kendall's trend test on samples in time order (Mann 1945, Econometrica 13:245;
    Kendall 1975, *Rank Correlation Methods*): ``s``, the count of later-above-earlier pairs
    minus later-below-earlier ones, its two-sided ``p`` value (normal approximation with a
    continuity correction), and ``relative``: Sen's slope (the median of the pairwise slopes:
    Sen 1968, JASA 63:1379) times the span, over the median (the move from first to last
    sample as a fraction; None when the median is 0)."""

    s: int
    p: float
    relative: float | None


def trend(samples: list[float]) -> Trend | None:
    """The trend of ``samples`` (oldest first), or None with fewer than 6 or no spread."""
    n = len(samples)
    if n < 6 or constant(samples):
        return None
    s = 0
    slopes = []
    for i in range(n):
        for j in range(i + 1, n):
            s += (samples[j] > samples[i]) - (samples[j] < samples[i])
            slopes.append((samples[j] - samples[i]) / (j - i))
    spread = math.sqrt(n * (n - 1) * (2 * n + 5) / 18)
    p = min(1.0, math.erfc(max(abs(s) - 1, 0) / spread / math.sqrt(2)))
    scale = abs(median(samples))
    moved = median(slopes) * (n - 1)
    return Trend(s, p, moved / scale if scale else None)




class Comparison:
    """One candidate against the incumbent, one sample at a time: :meth:`next` says which side
    to measure next (``"candidate"`` or ``"incumbent"``), or returns the :class:`Decision`;
    :meth:`add` takes the sample. Pure: the caller measures.

    The rule (its sources are in the comment above :data:`SCREEN_PASS`):

    1. When the pool (the incumbent's recent samples, oldest first) has a trend
       (:func:`trend` at ``TREND_ALPHA``, either way), or the caller knows it measured other
       code (``stale``: HEAD is no kept run's commit), it is not used at all: fresh samples
       from the first, in blocks (candidate, incumbent, incumbent, candidate); samples of
       both sides with no spread decide exactly after two pairs.
    2. Otherwise the candidate is screened against the pool: stopped as inconclusive when it is
       hopeless (``SCREEN_HOPELESS``) or at ``max_samples``, once one sample of the incumbent
       taken then agrees with the pool (:meth:`_checked`: one worse than the whole pool and
       than the candidate's median says the machine slowed since, and fresh samples decide,
       as in 1); it goes on to fresh samples, in blocks (incumbent, candidate, candidate,
       incumbent), once it is better than the pool at ``SCREEN_PASS`` or worse at
       ``FUTILITY`` after at least ``SCREEN_MIN`` samples. No keep and no "worse" rests on the
       pool alone.
    3. After each pair of fresh samples: when the fresh incumbent samples lie below the pool
       (better, at ``STALE_ALPHA``) or the pool and they have a trend, the pool is stale, and
       from then on only the fresh samples count. Otherwise the pool is moved to the fresh
       samples' level when they are better than it (Hodges-Lehmann shift; never the other
       way, which would favour the candidate), and the candidate's samples are tested
       against the pool and the fresh incumbent samples together at ``BLEND_ALPHA``, from
       ``BLEND_MIN_PAIRS`` pairs on, the fresh samples alone having to point the same way at
       ``BLEND_GUARD``.
    4. On fresh samples alone: the rank-sum test of the candidate's fresh samples against the
       incumbent's, better or worse at ``FRESH_ALPHA`` at each look, inconclusive when
       hopeless (``FRESH_HOPELESS``) or after ``pairs`` pairs.

    ``pairs`` = 0 turns fresh samples off: the pool alone decides (:func:`sequential`), as it
    did before; a metric with no spread is decided exactly (:func:`spread_free`) without
    them. Raises ValueError for an empty pool, non-finite samples or bad settings."""

    def __init__(self, pool: list[float], *, direction: str = "lower", min_effect: float = 0.0,
                 max_samples: int = 16, pairs: int = PAIRS, stale: bool = False) -> None:
        check(pool, pool[:1], direction, min_effect, max_samples)
        if pairs < 0:
            raise ValueError(f"pairs must be 0 or more, not {pairs}")
        self.direction, self.min_effect = direction, min_effect
        self.max_samples, self.pairs = max_samples, pairs
        chosen = incumbent(pool, direction)
        self.pool = list(chosen.samples)
        self.trend = trend(window(pool))
        self.moving = pairs > 0 and self.trend is not None and self.trend.p <= TREND_ALPHA
        self.stale = self.moving or (pairs > 0 and stale)
        self.candidate: list[float] = []
        self.fresh: list[float] = []
        # The fresh part, in the order taken: (side, value); None until it begins.
        self.block: list[tuple[Side, float]] | None = [] if self.stale else None
        self.order = FROM_START if self.stale else AFTER_SCREEN
        self.result: Decision | None = None
        # The screen's verdict on the pool alone, held while one sample of the incumbent is
        # taken now to check it (:meth:`_checked`).
        self.held: Decision | None = None

    def add(self, side: Side, value: float) -> None:
        """Take a sample of ``side``. Raises ValueError for a non-finite value."""
        if not math.isfinite(value):
            raise ValueError("samples must be finite numbers")
        (self.candidate if side == "candidate" else self.fresh).append(value)
        if self.block is not None:
            self.block.append((side, value))

    def pool_only(self) -> None:
        """Go on without fresh samples (the incumbent cannot be measured): the pool alone
        decides on the candidate's samples, those taken and any more. The fresh samples taken
        stay in :attr:`fresh`, unused."""
        self.pairs, self.block, self.moving, self.stale = 0, None, False, False
        self.result = self.held = None

    def next(self) -> Side | Decision:
        """The side to measure next, or the decision once it is reached (then always it)."""
        if self.result is not None:
            return self.result
        step = self._fresh() if self.block is not None else self._screen()
        if isinstance(step, Decision):
            self.result = step
        return step

    def _screen(self) -> Side | Decision:
        if self.held is not None:
            return self._checked()
        n = len(self.candidate)
        if n == 0:
            return "candidate"
        pool, mine = self.pool, self.candidate
        if constant(pool) and constant(mine) and len(pool) + n >= 3:
            found = spread_free(pool, mine, self.direction, self.min_effect)
            return dataclasses.replace(found, evidence="exact")
        if self.pairs == 0:
            found = sequential(pool, mine, direction=self.direction,
                               min_effect=self.min_effect, max_samples=self.max_samples)
            if not found.done:
                return "candidate"
            return dataclasses.replace(found, stopped_early=n < self.max_samples)
        ours, theirs = oriented(pool, self.direction), oriented(mine, self.direction)
        shift = threshold(pool, self.min_effect)
        better = p_lower(ours, [c + shift for c in theirs])
        worse = p_higher(ours, theirs)
        if n >= SCREEN_MIN and (better <= SCREEN_PASS or worse <= FUTILITY):
            self.block = []
            return self._fresh()
        if n >= self.max_samples \
                or better > SCREEN_HOPELESS[min(n, len(SCREEN_HOPELESS)) - 1]:
            # Not better than samples taken earlier, under other load; never "worse" on them
            # alone (measuring the incumbent beside every such candidate to say so costs a
            # fifth more measurements on a still machine), and not even that before one
            # sample of the incumbent taken now agrees (:meth:`_checked`).
            self.held = self._ruled("inconclusive", pool, mine, better, worse, "pool",
                                    early=n < self.max_samples)
            return "incumbent"
        return "candidate"

    def _checked(self) -> Side | Decision:
        """The screen's verdict on the pool alone (:attr:`held`), checked against the one
        sample of the incumbent taken since: when that sample is worse than every sample of
        the pool and no better than the candidate's median, the machine has likely slowed
        since the pool was measured (load came, which makes any change look worse against
        the pool): the pool is stale, and fresh samples of both sides decide, from the
        start. Otherwise the verdict stands, the sample recorded with it."""
        held, self.held = self.held, None
        assert held is not None
        now = oriented(self.fresh, self.direction)[-1]
        if now > max(oriented(self.pool, self.direction)) \
                and now >= median(oriented(self.candidate, self.direction)):
            self.stale, self.block, self.order = True, [], FROM_START
            return self._fresh()
        return dataclasses.replace(held, fresh_samples=len(self.fresh))

    def _fresh(self) -> Side | Decision:
        block = self.block
        assert block is not None  # (only once the fresh part has begun)
        found = None if len(block) % 2 or not block else self._judge(len(block) // 2)
        return found if found is not None else self.order[len(block) % len(self.order)]

    def _judge(self, pairs: int) -> Decision | None:
        """The verdict after ``pairs`` pairs of fresh samples, or None for another pair."""
        assert self.block is not None
        mine = [v for side, v in self.block if side == "candidate"]
        theirs = [v for side, v in self.block if side == "incumbent"]
        fa, fb = oriented(theirs, self.direction), oriented(mine, self.direction)
        shift = threshold(self.pool, self.min_effect)
        fresh_better = p_lower(fa, [b + shift for b in fb])
        fresh_worse = p_higher(fa, fb)
        ours = oriented(self.pool, self.direction)
        if not self.stale:
            moved = trend([*self.pool, *self.fresh])
            self.stale = p_lower(ours, oriented(self.fresh, self.direction)) <= STALE_ALPHA \
                or (moved is not None and moved.p <= STALE_ALPHA)
        if not self.stale:
            last = pairs >= min(self.pairs, BLEND_PAIRS)
            early = not last
            now = oriented(self.fresh, self.direction)
            lead = min(median([f - q for f in now for q in ours]), 0.0)  # never the other way
            level = [*(q + lead for q in ours), *now]
            every = oriented(self.candidate, self.direction)
            better = p_lower(level, [c + shift for c in every])
            worse = p_higher(level, every)
            blended = oriented(level, self.direction)  # (back in the metric's sign)
            if pairs >= BLEND_MIN_PAIRS:
                if better <= BLEND_ALPHA and fresh_better <= BLEND_GUARD:
                    return self._ruled("better", blended, self.candidate, better, worse,
                                       "pool+fresh", early)
                if worse <= BLEND_ALPHA and fresh_worse <= BLEND_GUARD:
                    return self._ruled("worse", blended, self.candidate, better, worse,
                                       "pool+fresh", early)
            if last:
                return self._ruled("inconclusive", blended, self.candidate, better, worse,
                                   "pool+fresh", False)
            return None
        last = pairs >= self.pairs
        early = not last
        if pairs >= 2 and constant(theirs) and constant(mine):
            found = spread_free(theirs, mine, self.direction, self.min_effect)
            return dataclasses.replace(found, evidence="exact", fresh_samples=len(self.fresh),
                                       stopped_early=early)
        verdict: Verdict | None = None
        if fresh_better <= FRESH_ALPHA:
            verdict = "better"
        elif fresh_worse <= FRESH_ALPHA:
            verdict = "worse"
        elif last or fresh_better > FRESH_HOPELESS[min(pairs, len(FRESH_HOPELESS)) - 1]:
            verdict = "inconclusive"
        if verdict is None:
            return None
        return self._ruled(verdict, theirs, mine, fresh_better, fresh_worse, "fresh", early)

    def _ruled(self, verdict: Verdict, pool: list[float], candidate: list[float],
               better: float, worse: float, evidence: Evidence, early: bool) -> Decision:
        """The decision, its effect the Hodges-Lehmann shift of ``candidate`` against
        ``pool`` (the samples the verdict compared) with its interval."""
        measured = [*self.pool, *self.fresh, *self.candidate]
        value, low, high, level = hodges_lehmann(pool, candidate, CONFIDENCE,
                                                 nonnegative=min(measured) >= 0)
        # (No futility stop is called "worse" for its interval, as the pool-only rule does:
        # a few pairs straddling a change of load can put an 80 % interval on the worse side.)
        return Decision("sequential", verdict, effect(pool, value, low, high, level),
                        len(pool), len(candidate), better, worse, evidence, len(self.fresh),
                        early)


# The words of a verdict, for the ``reason`` of a run's record.


def inconclusive_reason(found: Mapping[str, Any], min_effect: float, direction: str) -> str:
    """Why an inconclusive run was discarded, for its record's ``reason``: "within noise", or,
    when its whole interval (``found``'s ``relative_low`` to ``relative_high``, the change as
    a fraction of the incumbent: :func:`measure.worktree.decision_record`) is on the better side of
    ``direction``, that the gain was not shown to reach ``min_effect`` (a fraction), or, with
    none asked, "not shown to be better": an interval of the estimate (80 %) is no test of it,
    and "within noise" would contradict it."""
    high, low = found.get("relative_high"), found.get("relative_low")
    if isinstance(high, (int, float)) and isinstance(low, (int, float)) \
            and (high < 0 if direction == "lower" else low > 0):
        if min_effect > 0:
            return f"better, but not shown to be better by min_effect ({min_effect:.2%})"
        return "not shown to be better"
    return "within noise"


def discard_reason(found: Mapping[str, Any], min_effect: float, direction: str) -> str:
    """Why a run the rule did not keep was discarded, for its record's ``reason``: the
    verdict (:func:`inconclusive_reason`, or "worse" with the relative change), then the
    evidence it rests on (``found``'s ``evidence``, ``candidate_samples``,
    ``incumbent_fresh`` and ``stopped_early``, :meth:`measure.worktree.Rule.verdict`): the
    incumbent's earlier samples alone, or samples of both taken side by side; a decision
    without them (a record written before they were) gets the verdict alone."""
    relative = found.get("relative")
    change = f" ({relative:+.1%})" if isinstance(relative, (int, float)) \
        and not isinstance(relative, bool) else ""
    said = f"worse{change}" if found.get("verdict") == "worse" \
        else inconclusive_reason(found, min_effect, direction)
    if said == "not shown to be better":
        said += change
    evidence, count = found.get("evidence"), found.get("candidate_samples")
    fresh = found.get("incumbent_fresh")
    early = "; stopped early" if found.get("stopped_early") else ""
    # (an estimate on the better side was not shown to be better: never "not better")
    unshown = isinstance(relative, (int, float)) and not isinstance(relative, bool) \
        and (relative < 0 if direction == "lower" else relative > 0)
    if evidence == "pool" and isinstance(count, int):
        # Hopeless against samples taken earlier, under other load: not better, and no more
        # than that (a burst of load can make a gain look worse).
        if found.get("verdict") != "worse" and said == "within noise":
            said = f"not shown to be better{change}" if unshown else f"not better{change}"
        checked = f" and one of it taken now ({number_text(fresh[0])})" \
            if isinstance(fresh, list) and fresh else ""
        return (f"{said}: {count} sample(s) against the incumbent's earlier samples"
                f"{checked}{early}")
    if evidence in ("fresh", "pool+fresh") and isinstance(count, int) \
            and isinstance(fresh, list):
        if said == "within noise":  # (the estimate, and whether it stopped as hopeless)
            said = f"within noise{change}" if not early else \
                f"not shown to be better{change}" if unshown else f"not better{change}"
        return (f"{said}: {count} sample(s), {len(fresh)} of the incumbent measured beside "
                f"them{early}")
    return said
