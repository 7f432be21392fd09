"""The decision rules on lists of floats: each verdict, early stopping, the limit, outliers,
drift, the metric with no spread (decided as strict decides it), the window, and the statistics
themselves (the exact null distribution, the Hodges-Lehmann interval)."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from conftest import count_u, enumerated_counts, tail
from hypothesis import given, settings
from hypothesis import strategies as st

from git_autoresearch.decide import rules as decision
from git_autoresearch.decide.rules import Decision, incumbent, sequential, strict
from git_autoresearch.ledger.stats import median


def noisy(centre: float, count: int, spread: float = 0.03, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [centre * (1 + spread * rng.gauss(0.0, 1.0)) for _ in range(count)]


def run(pool: list[float], samples: list[float], **options: object) -> Decision:
    """Feed ``samples`` one at a time until the rule stops (or they run out)."""
    taken: list[float] = []
    for value in samples:
        taken.append(value)
        ruled = sequential(pool, taken, **options)  # type: ignore[arg-type]
        if ruled.done:
            return ruled
    return ruled


POOL = noisy(100.0, 30)


def test_clearly_better_stops_early() -> None:
    ruled = run(POOL, [80.0, 81.0, 79.0, 80.5, 80.2])
    assert (ruled.verdict, ruled.candidate_samples, ruled.incumbent_samples) == ("better", 3, 30)
    assert ruled.effect.high < 0 and ruled.effect.relative is not None
    assert -0.25 < ruled.effect.relative < -0.15
    assert ruled.p_better is not None and ruled.p_better <= decision.ALPHA_INTERIM


def test_clearly_worse_stops_early() -> None:
    ruled = run(POOL, [120.0, 121.0, 119.0, 120.0, 122.0])
    assert (ruled.verdict, ruled.candidate_samples) == ("worse", 2)
    assert ruled.effect.low > 0


def test_within_noise_is_inconclusive_at_the_limit() -> None:
    values = sorted(POOL)
    middle = [values[14], values[16], values[13], values[15], values[17]]
    first = [sequential(POOL, middle[:k]).verdict for k in (1, 2)]
    ruled = sequential(POOL, middle)
    assert first == ["continue", "continue"]
    assert (ruled.verdict, ruled.candidate_samples) == ("inconclusive", 5)
    assert ruled.effect.low < 0 < ruled.effect.high


def test_a_candidate_heading_the_wrong_way_stops_as_inconclusive() -> None:
    values = sorted(POOL)
    assert sequential(POOL, [values[20]], max_samples=12).verdict == "continue"
    ruled = run(POOL, [values[20], values[22], values[19]] * 4, max_samples=12)
    assert (ruled.verdict, ruled.candidate_samples) == ("inconclusive", 2)
    assert ruled.p_better is not None and ruled.p_better > decision.HOPELESS[1]
    assert ruled.p_worse is not None and ruled.p_worse > decision.FUTILITY


def test_a_moderate_gain_is_kept_at_the_last_look() -> None:
    values = sorted(POOL)
    gain = [values[k] for k in (3, 6, 2, 8, 4)]
    assert [sequential(POOL, gain[:k], max_samples=5).verdict for k in range(1, 6)] == \
        ["continue"] * 4 + ["better"]


def test_min_effect_raises_the_bar() -> None:
    pool = noisy(100.0, 30, spread=0.005)
    candidate = noisy(98.0, 5, spread=0.005, seed=2)
    assert sequential(pool, candidate).verdict == "better"
    assert sequential(pool, candidate, min_effect=0.05).verdict != "better"


def test_higher_is_better() -> None:
    ruled = run(POOL, [120.0, 121.0, 119.0, 120.0], direction="higher")
    assert ruled.verdict == "better" and ruled.effect.value > 0


def test_one_slow_outlier_in_the_pool_or_the_candidate_changes_nothing() -> None:
    values = sorted(POOL)
    middle = [values[14], values[16], values[13], values[15], values[17]]
    assert sequential([*POOL[1:], 1e6], middle, max_samples=5).verdict == "inconclusive"
    assert sequential(POOL, [*middle[:4], 1e6], max_samples=5).verdict == "inconclusive"
    gain = [values[k] for k in (3, 6, 2, 8, 4)]
    assert sequential(POOL, gain, max_samples=5).verdict == "better"
    assert sequential([*POOL[1:], 1e6], gain, max_samples=5).verdict == "better"


def test_heavy_tailed_pool_does_not_make_no_change_a_keep() -> None:
    keeps = 0
    for seed in range(200):
        rng = random.Random(seed)
        draw = [100 * (1 + 0.03 * rng.gauss(0, 1)) * (1.5 if rng.random() < 0.05 else 1)
                for _ in range(35)]
        keeps += run(draw[:30], draw[30:]).verdict == "better"
    assert keeps <= 0.07 * 200


@pytest.mark.parametrize("pool, candidate, verdict", [
    ([5.0] * 5, [4.0], "better"),
    ([5.0] * 5, [6.0], "worse"),
    ([5.0] * 5, [5.0], "inconclusive"),
    ([5.0, 5.0], [4.0], "better"),
    ([5.0], [4.0, 4.0], "better"),
    ([5.0], [6.0, 6.0], "worse"),
])
def test_no_spread_decides_as_strict_after_one_or_two_samples(
        pool: list[float], candidate: list[float], verdict: str) -> None:
    ruled = sequential(pool, candidate)
    assert ruled.verdict == verdict
    assert ruled.verdict == strict(pool, candidate, max_samples=len(candidate)).verdict
    assert ruled.effect == strict(pool, candidate, max_samples=len(candidate)).effect


def test_no_spread_waits_for_a_second_sample_after_a_one_sample_keep() -> None:
    assert sequential([5.0], [4.0]).verdict == "continue"
    assert sequential([5.0], [4.0], max_samples=1).verdict == "better"


def test_no_spread_respects_min_effect_as_strict_does() -> None:
    assert sequential([100.0] * 5, [99.0], min_effect=0.02).verdict == "inconclusive"
    assert sequential([100.0] * 5, [97.0], min_effect=0.02).verdict == "better"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(50, 150), min_size=1, max_size=8),
       st.lists(st.integers(50, 150), min_size=1, max_size=5))
def test_strict_compares_medians(pool_ints: list[int], candidate_ints: list[int]) -> None:
    pool, candidate = [float(v) for v in pool_ints], [float(v) for v in candidate_ints]
    ruled = strict(pool, candidate, max_samples=len(candidate))
    best, mine = median(pool), median(candidate)
    expected = "better" if mine < best else "worse" if mine > best else "inconclusive"
    assert ruled.verdict == expected and ruled.effect.value == mine - best


def test_strict_continues_until_its_samples_are_taken() -> None:
    assert strict([5.0], [4.0], max_samples=3).verdict == "continue"
    assert strict([5.0], [4.0, 4.0, 4.0], max_samples=3).verdict == "better"


samples = st.lists(st.floats(1.0, 1000.0, allow_nan=False), min_size=1, max_size=12)
SWAP = {"better": "worse", "worse": "better", "inconclusive": "inconclusive",
        "continue": "continue"}


@settings(max_examples=150, deadline=None)
@given(samples, st.lists(st.floats(1.0, 1000.0), min_size=1, max_size=6),
       st.integers(1, 6))
def test_mirroring_the_samples_swaps_better_and_worse(
        pool: list[float], candidate: list[float], most: int) -> None:
    """Reflecting every sample about 0 and turning the direction around is the same
    question, at every look; reflecting without turning swaps better and worse at the last
    look (before it the rule is asymmetric on purpose: an early keep needs p <= 0.001, an early
    stop for worse p <= 0.02)."""
    mirror = [-v for v in pool], [-v for v in candidate]  # exact, unlike 2000 - v
    for rule in (sequential, strict):
        low = rule(pool, candidate, direction="lower", max_samples=most)
        assert low.verdict == rule(*mirror, direction="higher", max_samples=most).verdict
        last = rule(pool, candidate, direction="lower", max_samples=len(candidate))
        flipped = rule(*mirror, direction="lower", max_samples=len(candidate))
        assert flipped.verdict == SWAP[last.verdict]


@settings(max_examples=150, deadline=None)
@given(samples, st.lists(st.floats(1.0, 1000.0), min_size=1, max_size=6))
def test_the_interval_holds_the_estimate_and_the_verdict_is_never_both(
        pool: list[float], candidate: list[float]) -> None:
    ruled = sequential(pool, candidate, max_samples=len(candidate))
    assert ruled.effect.low <= ruled.effect.value <= ruled.effect.high
    assert 0 < ruled.effect.confidence <= 1
    assert ruled.verdict != "continue"
    assert ruled.p_better is not None and ruled.p_worse is not None
    assert not (ruled.p_better <= decision.ALPHA and ruled.p_worse <= decision.ALPHA)


@pytest.mark.parametrize("m, n", [(1, 1), (3, 2), (5, 1), (4, 4), (6, 3), (2, 5)])
def test_the_null_distribution_is_exact(m: int, n: int) -> None:
    counts = [0] * (m * n + 1)
    for places in itertools.combinations(range(m + n), n):
        counts[sum(p - i for i, p in enumerate(places))] += 1
    decision.null_counts.cache_clear()  # computed here, not by an earlier test
    assert decision.null_counts(m, n) == tuple(counts)
    assert sum(counts) == math.comb(m + n, n)


def test_the_hodges_lehmann_interval_reaches_its_level() -> None:
    estimate, low, high, level = decision.hodges_lehmann(noisy(100.0, 30), noisy(98.0, 5),
                                                         0.90)
    assert low < estimate < high and 0.90 <= level < 0.95
    narrower = decision.hodges_lehmann(noisy(100.0, 30), noisy(98.0, 5))
    assert decision.CONFIDENCE <= narrower[3] < 0.90 and low < narrower[1] < narrower[2] < high
    assert decision.hodges_lehmann([1.0], [2.0])[3] == 0.0


def test_a_metric_that_cannot_be_negative_never_falls_below_zero() -> None:
    """Samples all at or above zero (a time, a size): the candidate cannot fall below zero,
    so the shift is no lower than minus the incumbent's median (-100 %); the interval (and an
    estimate past it) stops there, where a big gain read '-96% [-100.4%, -94.5%]'. A metric
    with a negative sample keeps its interval as the pairs give it."""
    estimate, low, high, _ = decision.hodges_lehmann([1.0, 1.0, 10.0], [0.5])
    assert (estimate, low, high) == (-0.5, -1.0, -0.5)
    found = decision.sequential([9.0, 9.5, 10.0, 30.0], [0.2, 0.3, 0.25], max_samples=3)
    assert found.effect.relative_low is not None and found.effect.relative_low >= -1.0
    assert decision.hodges_lehmann([-1.0, 1.0, 10.0], [0.5])[1] == -9.5
    # A pool levelled towards samples taken beside the candidate (pool+fresh) can go below
    # zero though every sample measured is above it: the caller says so, and the floor holds.
    levelled = decision.hodges_lehmann([-50.0, 100.0, 300.0], [1.0], nonnegative=True)
    assert levelled[:3] == (-99.0, -100.0, 51.0)


def test_the_interval_covers_the_true_shift_about_as_often_as_it_says() -> None:
    covered = 0
    for seed in range(300):
        _, low, high, _ = decision.hodges_lehmann(noisy(100.0, 20, seed=seed),
                                                  noisy(97.0, 5, seed=seed + 1000), 0.90)
        covered += low <= -3.0 <= high
    assert 0.85 * 300 <= covered <= 0.97 * 300


def test_bad_inputs_are_refused() -> None:
    """Each bad input is refused with its own message (ValueError), whichever rule."""
    need = "both the incumbent's pool and the candidate need a sample"
    for call, message in (
            (lambda: sequential([], [1.0]), need), (lambda: sequential([1.0], []), need),
            (lambda: strict([], [1.0]), need), (lambda: strict([1.0], []), need),
            (lambda: sequential([1.0], [math.nan]), "samples must be finite numbers"),
            (lambda: sequential([math.inf], [1.0]), "samples must be finite numbers"),
            (lambda: sequential([1.0], [1.0], direction="up"),
             "direction must be one of ('lower', 'higher'), not 'up'"),
            (lambda: sequential([1.0], [1.0], min_effect=-0.1),
             "min_effect must be a finite number >= 0, not -0.1"),
            (lambda: sequential([1.0], [1.0], min_effect=math.inf),
             "min_effect must be a finite number >= 0, not inf"),
            (lambda: strict([1.0], [1.0], max_samples=0), "max_samples must be at least 1, not 0"),
            (lambda: decision.decide("vote", [1.0], [1.0]),
             "rule must be one of ('sequential', 'strict'), not 'vote'"),
            (lambda: decision.window([1.0], 0),
             "the window must hold at least one sample, not 0"),
            (lambda: incumbent([]), "the incumbent has no sample"),
            (lambda: decision.drift([1.0] * 20, "up"),
             "direction must be one of ('lower', 'higher'), not 'up'")):
        with pytest.raises(ValueError) as raised:
            call()
        assert str(raised.value) == message
    assert strict([1.0], [1.0], max_samples=1).verdict == "inconclusive"  # 1 is allowed
    assert sequential([1.0], [1.0], min_effect=0.0).done is False


def test_decide_names_the_rule() -> None:
    """decide calls the rule it names with its defaults: no min_effect and 16 samples, for
    strict too (which takes them all before it says anything)."""
    assert decision.decide("strict", [5.0], [4.0], max_samples=1).rule == "strict"
    assert decision.decide("sequential", [5.0] * 3, [4.0]).rule == "sequential"
    assert decision.decide("strict", [100.0], [99.0] * 16).verdict == "better"
    assert decision.decide("strict", [100.0], [99.0] * 15).verdict == "continue"
    pool = [10.0 * (i + 1) for i in range(9)]
    going = next(c for c in (placed(9, u, 15) for u in range(9 * 15 + 1))
                 if sequential(pool, c).verdict == "continue")
    for candidate in (going, [*going, 50.5], [41.0, 42.0, 43.0, 44.0, 45.0]):
        assert decision.decide("sequential", pool, candidate) == sequential(pool, candidate)
    assert decision.decide("sequential", pool, going).verdict == "continue"


def test_the_window_keeps_the_most_recent_samples() -> None:
    assert decision.window([float(v) for v in range(50)], 30) == [float(v) for v in
                                                                  range(20, 50)]
    assert decision.window([1.0, 2.0]) == [1.0, 2.0]
    pool = incumbent(noisy(100.0, 45))
    assert len(pool.samples) == 30 and pool.drift is None  # the window: 30 samples
    assert pool.samples == tuple(noisy(100.0, 45)[-30:])
    assert decision.window([float(v) for v in range(50)]) == [float(v) for v in range(20, 50)]
    assert decision.window([1.0, 2.0, 3.0], 1) == [3.0]  # one sample is a window


def test_a_drifting_incumbent_is_reported_and_its_old_samples_dropped() -> None:
    older, recent = noisy(100.0, 20, spread=0.01), noisy(106.0, 10, spread=0.01, seed=2)
    pool = incumbent([*older, *recent])
    assert pool.drift is not None and pool.drift.against
    assert pool.samples == tuple(recent)
    assert pool.drift.relative is not None and 0.04 < pool.drift.relative < 0.08
    assert (pool.drift.recent, pool.drift.older) == (10, 20)
    faster = incumbent([*older, *noisy(94.0, 10, spread=0.01, seed=2)], direction="lower")
    assert faster.drift is not None and not faster.drift.against
    assert incumbent([*older, *recent], direction="higher").drift is not None
    assert not incumbent([*older, *recent], direction="higher").drift.against  # type: ignore[union-attr]


def test_no_drift_in_a_steady_or_short_or_constant_pool() -> None:
    assert decision.drift(noisy(100.0, 30)) is None
    assert decision.drift([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]) is None
    assert decision.drift([5.0] * 30) is None


# The sequential rule as the module's docstring states it, its numbers written out here (not
# read from the module, so that a changed constant fails these tests): the last look keeps at
# p <= 0.10, an earlier one at p <= 0.001 (Haybittle-Peto); worse at p <= 0.02 before the last
# look (at 0.10 at it); inconclusive when the p-value of better after n samples exceeds
# 0.75, 0.55, 0.45, 0.4, 0.35 and from the seventh 0.3; the effect's interval at 80 %.
DOC_ALPHA, DOC_INTERIM, DOC_FUTILITY, DOC_CONFIDENCE = 0.10, 0.001, 0.02, 0.80
DOC_HOPELESS = (1.0, 0.75, 0.55, 0.45, 0.4, 0.35, 0.3)


def documented(pool: list[float], candidate: list[float], *, max_samples: int,
               direction: str = "lower", min_effect: float = 0.0
               ) -> tuple[str, float, float, tuple[float, float, float, float]]:
    """The verdict, p_better, p_worse and (estimate, low, high, level) of the effect that the
    docstring's rule gives, computed from first principles (samples with no ties)."""
    import statistics

    sign = -1.0 if direction == "higher" else 1.0
    ours, theirs = [sign * p for p in pool], [sign * c for c in candidate]
    m, n, last = len(pool), len(candidate), len(candidate) >= max_samples
    shift = min_effect * abs(statistics.median(pool))
    p_better = tail(count_u(ours, [c + shift for c in theirs]), m, n)
    p_worse = tail(m * n - count_u(ours, theirs), m, n)
    if p_better <= (DOC_ALPHA if last else DOC_INTERIM):
        verdict = "better"
    elif p_worse <= (DOC_ALPHA if last else DOC_FUTILITY):
        verdict = "worse"
    elif last or p_better > DOC_HOPELESS[min(n, 7) - 1]:
        verdict = "inconclusive"
    else:
        verdict = "continue"
    diffs = sorted(c - p for c in candidate for p in pool)
    counts = enumerated_counts(m, n)
    cut = 0  # the largest C with P(U <= C - 1) <= (1 - confidence) / 2, at least 1
    while cut < len(counts) and sum(counts[:cut + 1]) / sum(counts) <= (1 - DOC_CONFIDENCE) / 2:
        cut += 1
    cut = max(cut, 1)
    level = 1 - 2 * sum(counts[:cut]) / sum(counts)
    low, high = diffs[cut - 1], diffs[len(diffs) - cut]
    if verdict == "inconclusive" and level >= DOC_CONFIDENCE \
            and (low > 0 if direction == "lower" else high < 0):
        verdict = "worse"
    value = statistics.median(diffs)
    if min(pool) >= 0 and min(candidate) >= 0 and statistics.median(pool):  # not past -100 %
        floor = -abs(statistics.median(pool))
        value, low, high = max(value, floor), max(low, floor), max(high, floor)
    return verdict, p_better, p_worse, (value, low, high, level)


def placed(m: int, u: int, n: int) -> list[float]:
    """n distinct candidate samples above u of the pool samples 10, 20, ..., 10 m in all (the
    Mann-Whitney count u), each between two pool samples."""
    above = [u // n + (i < u % n) for i in range(n)]
    return [10.0 * k + 5 + 0.01 * i for i, k in enumerate(above)]


@pytest.mark.parametrize("n", range(1, 9))
@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize("direction, min_effect", [("lower", 0.0), ("higher", 0.0),
                                                   ("lower", 0.2)])
def test_each_verdict_and_p_value_is_the_documented_rule_at_every_count(
        n: int, last: bool, direction: str, min_effect: float) -> None:
    """At every Mann-Whitney count a candidate of n samples can have against a pool of 9, the
    sequential rule's verdict, p-values and effect are those the docstring's rule gives
    (computed here by enumerating the orderings): so each boundary (0.001 early, 0.10 at the
    last look, 0.02 for worse, each futility bound of the schedule) is where it is said to
    be, on both sides; higher is better mirrors it, and a min_effect of 20 % (10, one gap of
    the pool) is asked of a keep."""
    m = 9
    sign = -1.0 if direction == "higher" else 1.0
    pool = [sign * 10.0 * (i + 1) for i in range(m)]
    seen = set()
    for u in range(m * n + 1):
        candidate = [sign * c for c in placed(m, u, n)]
        max_samples = n if last else 16
        ruled = sequential(pool, candidate, max_samples=max_samples, direction=direction,
                           min_effect=min_effect)
        verdict, p_better, p_worse, (value, low, high, level) = documented(
            pool, candidate, max_samples=max_samples, direction=direction,
            min_effect=min_effect)
        assert (ruled.verdict, ruled.p_better, ruled.p_worse) == (verdict, p_better, p_worse), u
        assert (ruled.effect.value, ruled.effect.low, ruled.effect.high,
                ruled.effect.confidence) == (value, low, high, level), u
        assert ruled.effect.relative == value / 50.0
        assert ruled.rule == "sequential" and ruled.done == (verdict != "continue")
        assert (ruled.incumbent_samples, ruled.candidate_samples) == (m, n)
        seen.add(verdict)
    # Each verdict a look allows is reached: at the last look all three (one sample above
    # all 9 of the pool has p = 0.1, a keep); before it, a keep needs p <= 0.001, which
    # C(9 + n, n) > 1000 orderings first allow at n = 5, and one sample never stops.
    if min_effect == 0:
        assert seen == ({"better", "worse", "inconclusive"} if last else {"continue"} if n == 1
                        else {"continue", "worse", "inconclusive"}
                        | ({"better"} if n >= 5 else set()))


def test_one_sample_below_a_large_pool_stops_as_worse_at_two_percent() -> None:
    """With a pool of 60 (any size is taken), one candidate sample worse than all of it has a
    p-value of worse of 1/61, under the 2 % of an early stop for worse: worse at once; the
    second worst (2/61) asks for another sample, as does the best (p of better 1/61 is not
    the 0.1 % an early keep needs)."""
    pool = [float(v) for v in range(1, 61)]
    first = sequential(pool, [100.0])
    assert (first.verdict, first.p_worse, first.p_better) == ("worse", 1 / 61, 1.0)
    assert sequential(pool, [59.5]).verdict == "continue"
    best = sequential(pool, [0.5])
    assert (best.verdict, best.p_better) == ("continue", 1 / 61)


def test_ties_count_half_and_round_the_p_value_up() -> None:
    """A candidate sample equal to a pool sample counts half a pair (Mann-Whitney), and the
    p-value of a half count is taken at the next whole count (conservative): 20 against 10, 20,
    30 has U = 1.5 and P(U <= 2) = 3/4 both ways."""
    ruled = sequential([10.0, 20.0, 30.0], [20.0])
    assert (ruled.verdict, ruled.p_better, ruled.p_worse) == ("continue", 0.75, 0.75)
    assert decision.mann_whitney([10.0, 20.0, 30.0], [20.0, 31.0]) == 4.5
    assert decision.lower_tail(1.5, 3, 1) == decision.lower_tail(2, 3, 1) == 0.75
    assert decision.lower_tail(-1, 3, 1) == decision.lower_tail(-5, 3, 1) == 0.0
    assert decision.lower_tail(99, 3, 1) == 1.0


def test_a_drift_is_measured_exactly() -> None:
    """Eight samples of 10 to 80 then four above them all: the two-sided p-value is 2/495 (one
    ordering in C(12, 4) each way), the move the median of the recent-minus-older differences
    (56.5), relative to the older median (45), against a lower-is-better metric; eleven such
    samples cannot show a drift at 1 % (2/C(11, 3) = 1.2 %)."""
    older = [10.0 * (i + 1) for i in range(8)]
    recent = [100.0, 101.0, 102.0, 103.0]
    found = decision.drift([*older, *recent])
    assert found == decision.Drift(effect=56.5, relative=56.5 / 45.0, p=2 / 495, against=True,
                                   recent=4, older=8)
    assert decision.drift([*older, *recent], "higher") == decision.Drift(
        56.5, 56.5 / 45.0, 2 / 495, False, 4, 8)
    assert decision.drift([*older, *recent[:3]]) is None
    pool = incumbent([*older, *recent])
    assert pool == decision.Pool(tuple(recent), found)
    zero = decision.drift([-5.0, -3.0, -1.0, 0.0, 0.0, 1.0, 3.0, 5.0, 9.0, 9.5, 10.0, 11.0])
    assert zero is not None and zero.relative is None  # the older median is 0


def test_strict_compares_the_medians_exactly() -> None:
    """The seeds' rule: better only beyond min_effect of the pool's median, the effect the
    difference of the medians (candidate minus pool) as its own interval, mirrored when
    higher is better; continue until max_samples samples are in."""
    pool = [100.0, 102.0, 98.0]
    assert strict(pool, [95.0]) == Decision(
        "strict", "better", decision.Effect(-5.0, -5.0, -5.0, -0.05, -0.05, -0.05, 1.0), 3, 1)
    assert strict(pool, [95.0], min_effect=0.05).verdict == "inconclusive"  # 5 is not > 5
    assert strict(pool, [94.9], min_effect=0.05).verdict == "better"
    assert strict(pool, [100.0]).verdict == "inconclusive"
    assert strict(pool, [101.0]).verdict == "worse"
    assert strict(pool, [105.0], direction="higher").effect.value == 5.0
    assert strict(pool, [105.0], direction="higher").verdict == "better"
    assert strict(pool, [95.0], max_samples=2).verdict == "continue"
    assert strict([0.0], [1.0]).effect == decision.Effect(1.0, 1.0, 1.0, None, None, None, 1.0)


def test_a_level_of_zero_takes_the_middle_of_the_differences() -> None:
    """The interval's count C is the largest with P(U <= C - 1) at most the tail: one sample
    against three at a level of 0 (a tail of 1/2, reached exactly by P(U <= 1) = 2/4) is the
    middle difference alone; at 50 % (a tail of 1/4) the range of the three."""
    assert decision.hodges_lehmann([0.0], [1.0, 2.0, 3.0], 0.0) == (2.0, 2.0, 2.0, 0.0)
    assert decision.hodges_lehmann([0.0], [1.0, 2.0, 3.0], 0.5) == (2.0, 1.0, 3.0, 0.5)


def test_the_default_limit_is_16_samples() -> None:
    """Without max_samples the last look is the sixteenth sample: the same decisions as with
    16 written out, a candidate still going after 15 stopped after 16."""
    pool = [10.0 * (i + 1) for i in range(9)]
    going = next(c for c in (placed(9, u, 15) for u in range(9 * 15 + 1))
                 if sequential(pool, c, max_samples=16).verdict == "continue")
    for candidate in (going, [*going, 50.5]):
        assert sequential(pool, candidate) == sequential(pool, candidate, max_samples=16)
    assert sequential(pool, [*going, 50.5]).done


@pytest.mark.parametrize("direction", ["lower", "higher"])
def test_the_interval_on_the_worse_side_makes_a_last_look_worse(direction: str) -> None:
    """At the last look, a candidate the rank test does not call worse (p = 0.1 above a
    level of 5 %) is worse when its interval at the full confidence lies on the worse side,
    however close to 0 (0.5 worse), and inconclusive when it reaches 0.5 the other way; a
    level of exactly the confidence asked (0.8 here) is full."""
    sign = -1.0 if direction == "higher" else 1.0
    pool = [sign * v for v in range(1, 10)]
    worse = sequential(pool, [sign * 9.5], max_samples=1, alpha=0.05, direction=direction)
    assert (worse.verdict, worse.p_worse, worse.effect.confidence) == ("worse", 0.1, 0.8)
    assert (worse.effect.low, worse.effect.high) == ((0.5, 8.5) if sign > 0 else (-8.5, -0.5))
    near = sequential(pool, [sign * 8.5], max_samples=1, alpha=0.05, direction=direction)
    assert (near.verdict, near.effect.low if sign > 0 else near.effect.high) == \
        ("inconclusive", sign * -0.5)
    # A level the samples cannot reach (99 %): the rank test alone, worse at exactly 5 %.
    three = [sign * v for v in (1.0, 2.0, 3.0)]
    above = [sign * v for v in (4.0, 5.0, 6.0)]
    assert sequential(three, above, max_samples=3, alpha=0.05, confidence=0.99,
                      direction=direction).verdict == "worse"  # p = 1/20
    assert sequential(three, above, max_samples=3, alpha=0.04, confidence=0.99,
                      direction=direction).verdict == "inconclusive"


def test_a_metric_with_no_spread_has_certain_p_values() -> None:
    """No spread on either side: strict's verdict, its p-values 0 or 1 (the difference is
    certain), the effect relative to a pool median of 1 as it is."""
    better = sequential([1.0, 1.0], [0.5])
    assert (better.verdict, better.p_better, better.p_worse) == ("better", 0.0, 1.0)
    assert (better.effect.value, better.effect.relative) == (-0.5, -0.5)
    worse = sequential([1.0, 1.0], [2.0])
    assert (worse.verdict, worse.p_better, worse.p_worse) == ("worse", 1.0, 0.0)
    same = sequential([1.0, 1.0], [1.0])
    assert (same.verdict, same.p_better, same.p_worse) == ("inconclusive", 1.0, 1.0)


@pytest.mark.parametrize("direction", ["lower", "higher"])
def test_a_small_drift_either_way_is_said_against_or_not(direction: str) -> None:
    """A move of the recent samples of less than one unit is a drift all the same: against a
    lower-is-better metric when they rose (0.565), not when they fell (-0.635); the other way
    round when higher is better."""
    older = [0.1 * (i + 1) for i in range(8)]
    rose = decision.drift([*older, 1.0, 1.01, 1.02, 1.03], direction)
    fell = decision.drift([*older, -0.2, -0.19, -0.18, -0.17], direction)
    assert rose is not None and fell is not None
    assert 0 < rose.effect < 1 and -1 < fell.effect < 0
    assert (rose.against, fell.against) == ((True, False) if direction == "lower"
                                            else (False, True))
