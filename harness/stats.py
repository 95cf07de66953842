"""Summary statistics of a list of per-call times (µs)."""

from __future__ import annotations

import math
import statistics


def summarize(times_us: list[float], converged: bool) -> dict:
    n = len(times_us)
    mean = statistics.fmean(times_us)
    std = statistics.stdev(times_us) if n > 1 else 0.0
    stderr = std / math.sqrt(n) if n > 1 else float("inf")
    return {"n": n, "mean_us": mean, "median_us": statistics.median(times_us), "std_us": std,
            "stderr_us": stderr, "ci95_us": 1.96 * stderr if n > 1 else None, "best_us": min(times_us),
            "converged": converged}


def relative_error(times_us: list[float]) -> float:
    n = len(times_us)
    if n < 2:
        return float("inf")
    mean = statistics.fmean(times_us)
    return statistics.stdev(times_us) / math.sqrt(n) / mean if mean > 0 else float("inf")


def ratio_verdict(stats_a: dict, stats_b: dict) -> tuple[float, str]:
    """Speedup of B over A (mean_A / mean_B) and faster / slower / within noise at 95%."""
    ratio = stats_a["mean_us"] / stats_b["mean_us"]
    rel_a = stats_a["stderr_us"] / stats_a["mean_us"]
    rel_b = stats_b["stderr_us"] / stats_b["mean_us"]
    se_log = math.sqrt(rel_a**2 + rel_b**2)
    if not math.isfinite(se_log) or abs(math.log(ratio)) <= 1.96 * se_log:
        return ratio, "within noise"
    return ratio, "faster" if ratio > 1 else "slower"
