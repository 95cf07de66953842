"""harness.timing on the CPU, and harness.stats."""

from __future__ import annotations

import math
import time

import pytest
import torch

from harness import stats, timing


def test_time_calls_sleep_stats():
    calls = []

    def fn(data):
        calls.append(data)
        time.sleep(0.002)

    s = timing.TimingSettings(min_repeats=10, budget_s=0.5, target_rel_err=1e-6, warmup=2)
    t0 = time.perf_counter()
    (st,) = timing.time_calls(torch, [fn], ["a", "b", "c"], s)
    elapsed = time.perf_counter() - t0
    assert elapsed < 3.0
    assert st["n"] >= 10 and len(calls) == st["n"] + 2  # warm-ups are not timed
    assert set(calls) == {"a", "b", "c"}  # the pool rotates
    assert 1900 <= st["best_us"] <= st["median_us"]
    assert 2000 <= st["mean_us"] < 6000
    assert st["std_us"] >= 0 and st["ci95_us"] == pytest.approx(1.96 * st["stderr_us"])
    assert st["escape"] is None
    assert st["converged"] is False  # 1e-6 relative error is out of reach in 0.5 s


def test_time_calls_not_converged_when_budget_tiny():
    s = timing.TimingSettings(min_repeats=10_000, budget_s=0.05, warmup=0)
    (st,) = timing.time_calls(torch, [lambda d: time.sleep(0.001)], [None], s)
    assert not st["converged"]
    assert 1 <= st["n"] < 10_000


def test_time_calls_converges_on_steady_fn():
    s = timing.TimingSettings(min_repeats=5, budget_s=5.0, target_rel_err=0.05, warmup=1)
    (st,) = timing.time_calls(torch, [lambda d: time.sleep(0.001)], [None], s)
    assert st["converged"] and st["n"] >= 5


def test_time_calls_interleaves_two():
    order = []
    s = timing.TimingSettings(min_repeats=4, max_repeats=4, budget_s=5.0, warmup=0)
    res = timing.time_calls(torch, [lambda d: order.append("A"), lambda d: order.append("B")], [0], s)
    assert len(res) == 2 and all(r["n"] == 4 for r in res)
    assert order == ["A", "B", "B", "A", "A", "B", "B", "A"]


def test_time_calls_needs_inputs():
    with pytest.raises(ValueError):
        timing.time_calls(torch, [lambda d: None], [])


def _stats(mean, stderr, n=100):
    return {"mean_us": mean, "stderr_us": stderr, "n": n}


def test_ratio_verdict():
    ratio, verdict = stats.ratio_verdict(_stats(100.0, 0.5), _stats(50.0, 0.5))
    assert ratio == pytest.approx(2.0) and verdict == "faster"
    ratio, verdict = stats.ratio_verdict(_stats(50.0, 0.5), _stats(100.0, 0.5))
    assert ratio == pytest.approx(0.5) and verdict == "slower"
    ratio, verdict = stats.ratio_verdict(_stats(100.0, 1.0), _stats(100.0, 1.0))
    assert ratio == 1.0 and verdict == "within noise"
    _, verdict = stats.ratio_verdict(_stats(100.0, 5.0), _stats(99.0, 5.0))
    assert verdict == "within noise"
    _, verdict = stats.ratio_verdict(_stats(100.0, float("inf")), _stats(10.0, 0.1))
    assert verdict == "within noise"  # one sample: no claim


def test_summarize_and_relative_error():
    st = stats.summarize([1.0, 2.0, 3.0, 4.0], converged=True)
    assert st["n"] == 4 and st["mean_us"] == 2.5 and st["median_us"] == 2.5 and st["best_us"] == 1.0
    assert st["std_us"] == pytest.approx(math.sqrt(5 / 3))
    assert st["stderr_us"] == pytest.approx(st["std_us"] / 2)
    one = stats.summarize([5.0], converged=False)
    assert one["std_us"] == 0.0 and one["ci95_us"] is None and math.isinf(one["stderr_us"])
    assert math.isinf(stats.relative_error([1.0]))
    assert stats.relative_error([2.0, 2.0, 2.0]) == 0.0


def test_first_call_after_each_sync_alternates_between_versions():
    # Batches of 10 repeats end in a synchronise; the first call after it must not always be A.
    firsts = [timing._order(r, 2, 10)[0] for r in range(0, 60, 10)]
    assert firsts == [0, 1, 0, 1, 0, 1]
    # Within a batch the order still alternates call by call.
    assert [timing._order(r, 2, 10)[0] for r in range(4)] == [0, 1, 0, 1]


def test_paired_ratio_verdict_ignores_shared_drift():
    # Both series drift together by 30%; B is 2% faster on every pair: paired stats see it.
    a = [100.0 * (1 + 0.3 * (i % 7) / 7) for i in range(200)]
    b = [x / 1.02 for x in a]
    sb = stats.summarize(b, True)
    sb["vs_first"] = stats.paired_log_ratio(a, b)
    ratio, verdict = stats.ratio_verdict(stats.summarize(a, True), sb)
    assert verdict == "faster" and abs(ratio - 1.02) < 1e-9
    # Identical series: within noise.
    sa = stats.summarize(a, True)
    sa2 = dict(sa, vs_first=stats.paired_log_ratio(a, [x * (1 + 1e-3 * ((-1) ** i)) for i, x in enumerate(a)]))
    assert stats.ratio_verdict(sa, sa2)[1] == "within noise"
