"""Summary statistics of a list of per-call times (µs)."""

from __future__ import annotations

import math
import statistics


def _mean_std(xs: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (statistics.stdev is exact but far too slow to call
    between timing batches on thousands of samples)."""
    n = len(xs)
    mean = math.fsum(xs) / n
    if n < 2:
        return mean, 0.0
    return mean, math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))


def summarize(times_us: list[float], converged: bool) -> dict:
    n = len(times_us)
    mean, std = _mean_std(times_us)
    stderr = std / math.sqrt(n) if n > 1 else float("inf")
    return {"n": n, "mean_us": mean, "median_us": statistics.median(times_us), "std_us": std,
            "stderr_us": stderr, "ci95_us": 1.96 * stderr if n > 1 else None, "best_us": min(times_us),
            "converged": converged}


def relative_error(times_us: list[float]) -> float:
    n = len(times_us)
    if n < 2:
        return float("inf")
    mean, std = _mean_std(times_us)
    return std / math.sqrt(n) / mean if mean > 0 else float("inf")


def paired_log_ratio(first: list[float], other: list[float]) -> dict:
    """Per-repeat log(first / other) of two interleaved series: mean, standard error, n."""
    logs = [math.log(a / b) for a, b in zip(first, other) if a > 0 and b > 0]
    n = len(logs)
    mean, std = _mean_std(logs) if logs else (0.0, 0.0)
    se = std / math.sqrt(n) if n > 1 else float("inf")
    return {"mean": mean, "se": se, "n": n}


def ratio_verdict(stats_a: dict, stats_b: dict) -> tuple[float, str]:
    """Speedup of B over A (time A / time B) and faster / slower / within noise at 95%.

    Uses the paired per-repeat log ratios when B was timed interleaved with A (``vs_first``),
    else the two means' standard errors.
    """
    paired = stats_b.get("vs_first")
    if paired:
        ratio, se_log = math.exp(paired["mean"]), paired["se"]
    else:
        ratio = stats_a["mean_us"] / stats_b["mean_us"]
        se_log = math.sqrt((stats_a["stderr_us"] / stats_a["mean_us"]) ** 2
                           + (stats_b["stderr_us"] / stats_b["mean_us"]) ** 2)
    if not math.isfinite(se_log) or abs(math.log(ratio)) <= 1.96 * se_log:
        return ratio, "within noise"
    return ratio, "faster" if ratio > 1 else "slower"
