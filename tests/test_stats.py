"""harness.stats: summaries, block bootstrap intervals, ratio verdicts, the stopping rule
(known distributions in, known verdicts out)."""

from __future__ import annotations

import math
import random

import pytest

from harness import stats


def _blocks(values, size):
    return [values[i:i + size] for i in range(0, len(values), size)]


def _normal(mean, sd, n, seed):
    rng = random.Random(seed)
    return [rng.gauss(mean, sd) for _ in range(n)]


def test_summarize_fields():
    st = stats.summarize([[1.0, 2.0], [3.0, 4.0]], converged=True, stop_reason="x")
    assert st["n"] == 4 and st["blocks"] == 2 and st["mean_us"] == 2.5 and st["median_us"] == 2.5
    assert st["q1_us"] == pytest.approx(1.75) and st["q3_us"] == pytest.approx(3.25) and st["iqr_us"] == pytest.approx(1.5)
    assert st["best_us"] == 1.0 and st["std_us"] == pytest.approx(math.sqrt(5 / 3))
    assert st["ci95_lo_us"] <= 2.5 <= st["ci95_hi_us"] and st["converged"] and st["stop_reason"] == "x"
    one = stats.summarize([[5.0]], converged=False)
    assert one["ci95_us"] is None and math.isinf(one["stderr_us"]) and math.isnan(one["ci95_lo_us"])
    assert math.isinf(stats.relative_error([1.0])) and stats.relative_error([2.0, 2.0, 2.0]) == 0.0


def test_bootstrap_interval_covers_the_true_mean_at_about_95_percent():
    hits = 0
    for seed in range(200):
        xs = _normal(100.0, 5.0, 80, seed)
        st = stats.summarize(_blocks(xs, 8), True)
        hits += st["ci95_lo_us"] <= 100.0 <= st["ci95_hi_us"]
    assert 0.88 <= hits / 200 <= 0.99  # a block bootstrap with 10 blocks is a little narrow; never wild


def test_block_bootstrap_widens_for_correlated_blocks():
    # Each block shares a random offset (clock drift): calls within a block are not independent.
    rng = random.Random(7)
    blocks = []
    for _ in range(20):
        offset = rng.gauss(0, 5.0)
        blocks.append([100 + offset + rng.gauss(0, 0.5) for _ in range(10)])
    st = stats.summarize(blocks, True)
    naive_half = 1.96 * st["stderr_us"]
    assert (st["ci95_hi_us"] - st["ci95_lo_us"]) / 2 > 2 * naive_half


def test_geomean_interval():
    a = _blocks(_normal(10.0, 0.1, 100, 1), 10)
    b = _blocks(_normal(1000.0, 10.0, 100, 2), 10)
    gm, lo, hi = stats.geomean_interval([a, b])
    assert gm == pytest.approx(100.0, rel=0.01) and lo < gm < hi and hi / lo < 1.02
    assert stats.geomean_interval([a, []]) is None
    assert stats.geomean_interval([]) is None


@pytest.mark.parametrize("factor,expected", [(1.10, "FASTER"), (1 / 1.10, "SLOWER"), (1.0, "SAME")])
def test_ratio_verdicts_on_known_distributions(factor, expected):
    # A shared drift of 30% across blocks and 1% call noise: pairing must see through the drift.
    rng = random.Random(3)
    blocks_a, blocks_b = [], []
    for k in range(30):
        drift = 1 + 0.3 * rng.random()
        blocks_a.append([100 * drift * (1 + rng.gauss(0, 0.01)) for _ in range(8)])
        blocks_b.append([100 * drift / factor * (1 + rng.gauss(0, 0.01)) for _ in range(8)])
    point, lo, hi = stats.ratio_interval(blocks_a, blocks_b)
    assert point == pytest.approx(factor, rel=0.01) and lo <= point <= hi
    assert stats.verdict(lo, hi, margin=0.01) == expected


def test_ambiguous_when_the_interval_straddles_one_beyond_the_margin():
    # Per block B is 5% faster or 5% slower, alternately: no consistent difference, not equivalent.
    blocks_a = [[100.0] * 8 for _ in range(6)]
    blocks_b = [[100.0 * (1.05 if k % 2 else 0.95)] * 8 for k in range(6)]
    _, lo, hi = stats.ratio_interval(blocks_a, blocks_b)
    assert lo < 0.99 and hi > 1.01
    assert stats.verdict(lo, hi) == "AMBIGUOUS"


def test_verdict_table():
    assert stats.verdict(0.995, 1.004) == "SAME"
    assert stats.verdict(1.002, 1.008) == "SAME"  # significant but too small to matter
    assert stats.verdict(1.02, 1.05) == "FASTER"
    assert stats.verdict(1.005, 1.03) == "FASTER"
    assert stats.verdict(0.90, 0.97) == "SLOWER"
    assert stats.verdict(0.95, 1.05) == "AMBIGUOUS"
    assert stats.verdict(float("nan"), float("nan")) == "AMBIGUOUS"


def test_geomean_ratio_interval():
    pairs = []
    for s in range(3):
        a = _blocks(_normal(100, 1, 80, s), 8)
        pairs.append((a, [[x / 2 for x in blk] for blk in a]))
    gm, lo, hi = stats.geomean_ratio_interval(pairs)
    assert gm == pytest.approx(2.0) and lo == pytest.approx(2.0) and hi == pytest.approx(2.0)
    assert stats.geomean_ratio_interval([(pairs[0][0][:1], pairs[0][1][:1])]) is None


# ------------------------------------------------------------------------------ stopping rule

def _drive(rule, draw, block=8, seconds_per_call=1e-4):
    samples, n_blocks = [], 0
    while True:
        samples.extend(draw() for _ in range(block))
        n_blocks += 1
        decision = rule.decide(samples, len(samples) * seconds_per_call, n_blocks)
        if decision:
            return decision, len(samples)


def test_stop_converges_on_quiet_samples():
    rng = random.Random(0)
    rule = stats.StopRule(min_samples=10, min_time_s=0.0, target_rel_err=1e-3, budget_s=10)
    (converged, reason), n = _drive(rule, lambda: rng.gauss(100, 1))
    assert converged and "<=" in reason
    assert 10 <= n <= 200  # CV 1% needs ~100 samples for 0.1%


def test_stop_respects_minimum_samples_and_time():
    rule = stats.StopRule(min_samples=50, min_time_s=0.0, target_rel_err=1e-3, budget_s=10)
    (converged, _), n = _drive(rule, lambda: 100.0)
    assert converged and n >= 50
    rule = stats.StopRule(min_samples=1, min_time_s=0.01, target_rel_err=1e-3, budget_s=10)
    (converged, _), n = _drive(rule, lambda: 100.0, seconds_per_call=1e-4)
    assert converged and n >= 100  # 0.01 s at 1e-4 s per call


def test_stop_when_noise_stabilised_out_of_reach():
    rng = random.Random(1)
    rule = stats.StopRule(min_samples=10, min_time_s=0.0, target_rel_err=1e-3, budget_s=1.0)
    (converged, reason), n = _drive(rule, lambda: rng.gauss(100, 30))  # CV 30%: ~90k samples needed
    assert not converged and "noise stabilised" in reason
    assert n < 1.0 / 1e-4  # stopped well before the budget would have


def test_stop_at_hard_caps():
    rng = random.Random(2)
    rule = stats.StopRule(min_samples=10, min_time_s=0.0, target_rel_err=1e-9, budget_s=0.05, stable_blocks=10**6)
    (converged, reason), _ = _drive(rule, lambda: rng.gauss(100, 1))
    assert not converged and "budget" in reason
    rule = stats.StopRule(min_samples=10, min_time_s=0.0, target_rel_err=1e-9, budget_s=100, max_samples=64,
                          stable_blocks=10**6)
    (converged, reason), n = _drive(rule, lambda: rng.gauss(100, 1))
    assert not converged and "cap" in reason and n == 64


def test_hierarchical_bootstrap_carries_a_per_process_offset_into_the_interval():
    # Three generations of processes, each with its own +-3% offset; within one, pairs agree closely.
    rng = random.Random(5)
    blocks_a, blocks_b, groups = [], [], []
    for gen, offset in enumerate([1.03, 0.97, 1.0]):
        for _ in range(10):
            drift = 1 + 0.2 * rng.random()
            blocks_a.append([100 * drift * (1 + rng.gauss(0, 0.003)) for _ in range(8)])
            blocks_b.append([100 * drift / offset * (1 + rng.gauss(0, 0.003)) for _ in range(8)])
            groups.append(gen)
    _, lo_flat, hi_flat = stats.ratio_interval(blocks_a, blocks_b)
    _, lo, hi = stats.ratio_interval(blocks_a, blocks_b, groups=groups)
    assert hi - lo > 3 * (hi_flat - lo_flat)
    assert lo < 0.99 and hi > 1.01  # the offsets are not a difference between the versions
    gm = stats.geomean_ratio_interval([(blocks_a, blocks_b, groups)])
    assert gm[1] == pytest.approx(lo, rel=0.02) and gm[2] == pytest.approx(hi, rel=0.02)


def _generations(offsets, speedup=1.0, rounds=10, seed=7):
    """Blocks of a compare whose generations carry the given per-process offsets."""
    rng = random.Random(seed)
    blocks_a, blocks_b, groups = [], [], []
    for gen, offset in enumerate(offsets):
        for _ in range(rounds):
            blocks_a.append([100 * (1 + rng.gauss(0, 0.003)) for _ in range(8)])
            blocks_b.append([100 / speedup / offset * (1 + rng.gauss(0, 0.003)) for _ in range(8)])
            groups.append(gen)
    return blocks_a, blocks_b, groups


def test_t_quantiles():
    assert stats.t975(1) == pytest.approx(12.706, abs=1e-3) and stats.t975(7) == pytest.approx(2.365, abs=1e-3)
    # past 30 degrees of freedom the quantile is not yet the normal's 1.96 (the old table's error)
    assert stats.t975(31) == pytest.approx(2.0395, abs=1e-3) and stats.t975(500) == pytest.approx(1.9647, abs=1e-3)


def test_two_generations_cannot_claim_same_but_many_can():
    # Identical code, processes 1% apart (what H200s showed): two generations say nothing about
    # equality; eight, with the offsets spread both ways, pin the ratio within 2%.
    a, b, g = _generations([1.01, 0.99])
    _, lo, hi = stats.ratio_interval(a, b, groups=g)
    assert stats.verdict(lo, hi, 0.02) == "AMBIGUOUS" and hi - lo > 0.1
    a, b, g = _generations([1.01, 0.99, 1.005, 0.995, 1.0, 1.01, 0.99, 1.0])
    _, lo, hi = stats.ratio_interval(a, b, groups=g)
    assert stats.verdict(lo, hi, 0.02) == "SAME", (lo, hi)


def test_a_real_speedup_is_decided_by_two_generations():
    a, b, g = _generations([1.005, 0.995], speedup=1.5)
    point, lo, hi = stats.ratio_interval(a, b, groups=g)
    assert stats.verdict(lo, hi, 0.02) == "FASTER" and point == pytest.approx(1.5, rel=0.01)
    gm = stats.geomean_ratio_interval([(a, b, g), _generations([0.99, 1.01], speedup=1.5, seed=8)])
    assert stats.verdict(gm[1], gm[2], 0.02) == "FASTER"


def test_summarize_over_processes_covers_their_spread():
    # Two processes 10% apart, each very steady: the block bootstrap alone would claim ~0.1%.
    rng = random.Random(11)
    blocks = [[100 * (1 + rng.gauss(0, 0.001)) for _ in range(8)] for _ in range(10)]
    blocks += [[110 * (1 + rng.gauss(0, 0.001)) for _ in range(8)] for _ in range(10)]
    groups = [0] * 10 + [1] * 10
    flat = stats.summarize(blocks, True)
    both = stats.summarize(blocks, True, groups=groups)
    assert both["mean_us"] == pytest.approx(flat["mean_us"])
    assert flat["ci95_hi_us"] - flat["ci95_lo_us"] < 8
    assert both["ci95_lo_us"] < 100 and both["ci95_hi_us"] > 110  # t(1) = 12.7 over two processes
    assert both["processes"] == 2 and both["process_means_us"] == pytest.approx([100, 110], rel=1e-3)
    assert both["process_spread"] == pytest.approx(0.0952, rel=0.02)
    assert "processes" not in stats.summarize(blocks, True, groups=[0] * 20)


def test_paired_ratio_interval():
    same = [[10.0, 10.2], [9.9, 10.1], [10.1, 10.0], [10.0, 9.8]]
    point, lo, hi = stats.paired_ratio_interval(same, same)
    assert point == 1.0 and lo <= 1.0 <= hi
    faster = [[x / 2 for x in b] for b in same]
    point, lo, hi = stats.paired_ratio_interval(same, faster)
    assert point == pytest.approx(2.0) and lo == pytest.approx(2.0) and hi == pytest.approx(2.0)
    # drift shared by both sides of a pair cancels: B is 5% faster in every pair
    drifting_a = [[10.0 + r] for r in range(6)]
    drifting_b = [[(10.0 + r) / 1.05] for r in range(6)]
    point, lo, hi = stats.paired_ratio_interval(drifting_a, drifting_b)
    assert lo == pytest.approx(1.05) and hi == pytest.approx(1.05) and stats.verdict(lo, hi, 0.02) == "FASTER"
    assert all(math.isnan(x) for x in stats.paired_ratio_interval([[1.0]], [[1.0]])[1:])


def test_order_balanced_units_cancel_an_effect_of_going_first():
    # identical versions; whichever goes first in a round is 4% slower
    a_first = [True, False, True, False, True, False]
    a = [[104.0] if f else [100.0] for f in a_first]
    b = [[100.0] if f else [104.0] for f in a_first]
    ua, ub = stats.order_balanced(a, b, a_first)
    assert len(ua) == 3 and all(len(u) == 2 for u in ua)
    point, lo, hi = stats.paired_ratio_interval(ua, ub)
    assert point == pytest.approx(1.0) and lo == pytest.approx(1.0) and hi == pytest.approx(1.0)
    # unbalanced (a dropped round): the extra A-first round has no partner and is left out
    ua, ub = stats.order_balanced(a[:5], b[:5], a_first[:5])
    assert len(ua) == 2
