"""Statistics of timings, all computed in the parent from raw per-call samples.

Samples arrive in blocks (one block = one pass over a freshly generated input pool, timed back to
back); consecutive calls share clocks and temperature, so intervals come from a *block* bootstrap
(resample whole blocks with replacement), which stays honest when calls within a block are
correlated. Reported per shape: n, mean, median, IQR, std, best and a 95% bootstrap interval of
the mean; over shapes, the geomean of means with its own bootstrap interval; for two versions,
the time ratio with its interval and a verdict (its interval also no narrower than a
Student-t interval over the process generations, the independent samples of a compare).

Stopping rule (``StopRule``): at least ``min_samples`` and ``min_time_s``, then stop when the
standard error is under ``target_rel_err`` of the mean (converged); or when the noise has
stabilised far above the target (the spread estimate no longer moves and the samples the target
needs would not fit in the budget: stop now, flagged not converged); or at the hard cap
(``budget_s`` / ``max_samples``, not converged).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
VERDICTS = ("FASTER", "SLOWER", "SAME", "AMBIGUOUS")


def _mean_std(xs) -> tuple[float, float]:
    arr = np.asarray(xs, dtype=np.float64)
    if arr.size == 0:
        return float("nan"), 0.0
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else 0.0


def _flat(blocks: list[list[float]]) -> np.ndarray:
    return np.concatenate([np.asarray(b, dtype=np.float64) for b in blocks if len(b)]) if blocks else np.array([])


def standard_error(samples) -> float:
    """Standard error of the mean (inf with fewer than two samples)."""
    arr = np.asarray(samples, dtype=np.float64)
    return float(arr.std(ddof=1) / math.sqrt(arr.size)) if arr.size > 1 else float("inf")


def relative_error(samples) -> float:
    """Standard error of the mean over the mean (inf with fewer than two samples)."""
    mean = float(np.mean(samples)) if len(samples) else 0.0
    return standard_error(samples) / mean if mean > 0 else float("inf")


def _block_sums(blocks) -> tuple[np.ndarray, np.ndarray]:
    sums = np.array([float(np.sum(b)) for b in blocks], dtype=np.float64)
    counts = np.array([len(b) for b in blocks], dtype=np.float64)
    return sums, counts


def _resample_index(rng: np.random.Generator, n_blocks: int, resamples: int) -> np.ndarray:
    return rng.integers(0, n_blocks, size=(resamples, n_blocks))


def bootstrap_means(blocks: list[list[float]], resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """``resamples`` bootstrap replicates of the mean, resampling whole blocks."""
    sums, counts = _block_sums(blocks)
    if len(sums) == 1:  # one block: resample calls instead (no block structure to keep)
        arr = np.asarray(blocks[0], dtype=np.float64)
        idx = np.random.default_rng(seed).integers(0, arr.size, size=(resamples, arr.size))
        return arr[idx].mean(axis=1)
    idx = _resample_index(np.random.default_rng(seed), len(sums), resamples)
    return sums[idx].sum(axis=1) / counts[idx].sum(axis=1)


def _interval(replicates: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    lo, hi = np.quantile(replicates, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def summarize(blocks: list[list[float]], converged: bool, stop_reason: str = "",
              groups: list[int] | None = None) -> dict:
    """Per-shape statistics of blocks of per-call times (µs). With ``groups`` (the process
    generation of every block) the interval of the mean is also no narrower than a Student-t
    interval over the processes' means, which are reported too."""
    flat = _flat(blocks)
    n = int(flat.size)
    mean, std = _mean_std(flat)
    q1, median, q3 = (float(x) for x in np.quantile(flat, [0.25, 0.5, 0.75]))
    lo, hi = _interval(bootstrap_means(blocks)) if n > 1 else (float("nan"), float("nan"))
    stderr = std / math.sqrt(n) if n > 1 else float("inf")
    out = {"n": n, "blocks": len(blocks), "mean_us": mean, "median_us": median, "q1_us": q1, "q3_us": q3,
           "iqr_us": q3 - q1, "std_us": std, "stderr_us": stderr, "ci95_lo_us": lo, "ci95_hi_us": hi,
           "ci95_us": (hi - lo) / 2 if n > 1 else None, "best_us": float(flat.min()),
           "converged": converged, "stop_reason": stop_reason}
    means = _group_means(blocks, groups) if groups else []
    if len(means) > 1:
        half = t975(len(means) - 1) * standard_error(means)
        centre = float(np.mean(means))
        lo, hi = min(lo, centre - half), max(hi, centre + half)
        out.update(ci95_lo_us=lo, ci95_hi_us=hi, ci95_us=(hi - lo) / 2, processes=len(means),
                   process_means_us=means, process_spread=(max(means) - min(means)) / float(np.median(means)))
    return out


def geomean(values: list) -> float | None:
    """The geometric mean of ``values``; None unless every one is a positive finite number."""
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not vals or len(vals) != len(values):
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def geomean_interval(per_shape_blocks: list[list[list[float]]], resamples: int = RESAMPLES,
                     seed: int = 1) -> tuple[float, float, float] | None:
    """Geomean over shapes of the mean time, with a 95% interval (blocks resampled per shape)."""
    if not per_shape_blocks or any(not b for b in per_shape_blocks):
        return None
    logs = np.zeros(resamples)
    point = 0.0
    for i, blocks in enumerate(per_shape_blocks):
        reps = bootstrap_means(blocks, resamples, seed + i)
        if np.any(reps <= 0):
            return None
        logs += np.log(reps)
        point += math.log(float(_flat(blocks).mean()))
    k = len(per_shape_blocks)
    lo, hi = _interval(np.exp(logs / k))
    return math.exp(point / k), lo, hi


def _paired_ratio_replicates(blocks_a, blocks_b, resamples: int, seed: int, groups=None) -> np.ndarray:
    """Replicates of mean(A) / mean(B), resampling block *pairs* (same inputs, adjacent in time).

    With ``groups`` (the process generation of every pair) the bootstrap is hierarchical:
    generations are resampled first, then pairs within each, so an offset shared by all pairs of
    one pair of processes widens the interval instead of biasing the verdict."""
    n = min(len(blocks_a), len(blocks_b))
    sa, ca = _block_sums(blocks_a[:n])
    sb, cb = _block_sums(blocks_b[:n])
    rng = np.random.default_rng(seed)
    labels = np.asarray(groups[:n] if groups else [0] * n)
    members = [np.flatnonzero(labels == g) for g in np.unique(labels)]
    if len(members) == 1:
        idx = _resample_index(rng, n, resamples)
        return (sa[idx].sum(axis=1) / ca[idx].sum(axis=1)) / (sb[idx].sum(axis=1) / cb[idx].sum(axis=1))
    out = np.empty(resamples)
    for r in range(resamples):
        picked = np.concatenate([m[rng.integers(0, len(m), len(m))]
                                 for m in (members[g] for g in rng.integers(0, len(members), len(members)))])
        out[r] = (sa[picked].sum() / ca[picked].sum()) / (sb[picked].sum() / cb[picked].sum())
    return out


def ratio_interval(blocks_a, blocks_b, resamples: int = RESAMPLES, seed: int = 2,
                   groups: list[int] | None = None) -> tuple[float, float, float]:
    """Speedup of B over A (mean time A / mean time B) with its 95% interval: the paired-block
    bootstrap, and with ``groups`` also no narrower than the generations' Student-t interval."""
    n = min(len(blocks_a), len(blocks_b))
    point = float(_flat(blocks_a[:n]).mean() / _flat(blocks_b[:n]).mean())
    if n < 2:
        return point, float("nan"), float("nan")
    lo, hi = _interval(_paired_ratio_replicates(blocks_a, blocks_b, resamples, seed, groups))
    gen = generation_interval(blocks_a, blocks_b, groups) if groups else None
    if gen:
        lo, hi = min(lo, gen[0]), max(hi, gen[1])
    return point, lo, hi


def t975(df: int) -> float:
    """The 97.5% quantile of Student's t with ``df`` degrees of freedom (scipy's)."""
    if df < 1:
        return float("inf")
    from scipy.stats import t as student_t  # NOTE: imported here: scipy.stats costs ~0.5 s to import
    return float(student_t.ppf(0.975, df))


def order_balanced(blocks_a, blocks_b, a_first: list[bool] | None = None) -> tuple[list, list]:
    """Rounds joined two by two, the k-th round in which A went first with the k-th in which B did
    (``a_first`` per round; by default rounds alternate, A first in the first), rounds without a
    partner dropped: each unit has both orders once, so an effect of going first in a round cancels
    inside the unit instead of masquerading as a difference between the versions."""
    n = min(len(blocks_a), len(blocks_b))
    a_first = list(a_first) if a_first is not None else [i % 2 == 0 for i in range(n)]
    ab = [i for i in range(n) if a_first[i]]
    ba = [i for i in range(n) if not a_first[i]]
    units = list(zip(ab, ba))
    return ([list(blocks_a[i]) + list(blocks_a[j]) for i, j in units],
            [list(blocks_b[i]) + list(blocks_b[j]) for i, j in units])


def independent_ratio_interval(blocks_a, blocks_b, resamples: int = RESAMPLES, seed: int = 5) -> tuple[float, float, float]:
    """Speedup of B over A (mean A / mean B) from blocks that were not timed together (two recorded
    runs): each side's blocks resampled on their own. Such runs can also differ by their process
    and their day, which no interval from their samples can see; the caller says so."""
    if not blocks_a or not blocks_b:
        return float("nan"), float("nan"), float("nan")
    point = float(_flat(blocks_a).mean() / _flat(blocks_b).mean())
    if len(blocks_a) < 2 or len(blocks_b) < 2:
        return point, float("nan"), float("nan")
    lo, hi = _interval(bootstrap_means(blocks_a, resamples, seed) / bootstrap_means(blocks_b, resamples, seed + 1))
    return point, lo, hi


def paired_ratio_interval(blocks_a, blocks_b, resamples: int = RESAMPLES, seed: int = 4) -> tuple[float, float, float]:
    """Speedup of B over A from blocks timed in pairs (one process, identical inputs, adjacent in
    time): the point is mean time A / mean time B; the 95% interval is the wider of the paired-block
    bootstrap and the Student-t interval of the pairs' log ratios (few pairs: the bootstrap alone is
    too narrow)."""
    n = min(len(blocks_a), len(blocks_b))
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    point = float(_flat(blocks_a[:n]).mean() / _flat(blocks_b[:n]).mean())
    if n < 2:
        return point, float("nan"), float("nan")
    lo, hi = _interval(_paired_ratio_replicates(blocks_a[:n], blocks_b[:n], resamples, seed))
    logs = [math.log(float(np.mean(a)) / float(np.mean(b))) for a, b in zip(blocks_a[:n], blocks_b[:n])]
    centre, half = float(np.mean(logs)), t975(n - 1) * standard_error(logs)
    return point, min(lo, math.exp(centre - half)), max(hi, math.exp(centre + half))


def _group_means(blocks, groups: list[int]) -> list[float]:
    """Mean per-call time of each group's blocks (a group: one process generation), in group order."""
    labels = list(groups[:len(blocks)])
    return [float(_flat([b for b, g in zip(blocks, labels) if g == k]).mean()) for k in sorted(set(labels))]


def generation_log_ratios(blocks_a, blocks_b, groups: list[int]) -> list[float]:
    """log(mean time A / mean time B) of each generation (one pair of processes)."""
    n = min(len(blocks_a), len(blocks_b))
    return [math.log(a / b) for a, b in zip(_group_means(blocks_a[:n], groups), _group_means(blocks_b[:n], groups))]


def generation_interval(blocks_a, blocks_b, groups: list[int] | None) -> tuple[float, float] | None:
    """95% Student-t interval of the speedup from the generations' log ratios.

    NOTE: two processes running identical code differ by 1-2% (measured on H200s), so the
    generations, not the blocks, are the independent samples of a compare; a bootstrap over two
    or three of them is far too narrow, the t quantile (12.7 for two) is what honesty costs."""
    if not groups:
        return None
    logs = generation_log_ratios(blocks_a, blocks_b, groups)
    if len(logs) < 2:
        return None
    mean, se = float(np.mean(logs)), standard_error(logs)
    half = t975(len(logs) - 1) * se
    return math.exp(mean - half), math.exp(mean + half)


def geomean_ratio_interval(pairs: list[tuple], resamples: int = RESAMPLES,
                           seed: int = 3) -> tuple[float, float, float] | None:
    """Geomean over shapes of the speedup; ``pairs``: (blocks A, blocks B[, generations]) per shape.
    The bootstrap interval, widened where the shapes' generations give a wider Student-t one."""
    if not pairs or any(min(len(p[0]), len(p[1])) < 2 for p in pairs):
        return None
    logs = np.zeros(resamples)
    point = 0.0
    gen_means, gen_vars, gen_dfs = [], [], []
    for i, p in enumerate(pairs):
        a, b = p[0], p[1]
        groups = p[2] if len(p) > 2 else None
        logs += np.log(_paired_ratio_replicates(a, b, resamples, seed + i, groups))
        n = min(len(a), len(b))
        point += math.log(float(_flat(a[:n]).mean() / _flat(b[:n]).mean()))
        g_logs = generation_log_ratios(a, b, groups) if groups else []
        if len(g_logs) >= 2:
            gen_means.append(float(np.mean(g_logs)))
            gen_vars.append(standard_error(g_logs) ** 2)
            gen_dfs.append(len(g_logs) - 1)
    lo, hi = _interval(np.exp(logs / len(pairs)))
    if len(gen_means) == len(pairs):
        # NOTE: shapes are measured by different processes, so their errors add as independent ones;
        # the smallest degrees of freedom keeps the quantile conservative.
        centre = float(np.mean(gen_means))
        half = t975(min(gen_dfs)) * math.sqrt(sum(gen_vars)) / len(pairs)
        lo, hi = min(lo, math.exp(centre - half)), max(hi, math.exp(centre + half))
    return math.exp(point / len(pairs)), lo, hi


def verdict(lo: float, hi: float, margin: float = 0.01) -> str:
    """From a 95% interval of the speedup of B over A:

    SAME when the whole interval lies within ``margin`` of 1 (any difference is too small to
    matter); FASTER / SLOWER when the interval excludes 1 (and it is not SAME); AMBIGUOUS when it
    straddles 1 but reaches beyond the margin (more samples needed to tell).
    """
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "AMBIGUOUS"
    if lo >= 1 - margin and hi <= 1 + margin:
        return "SAME"
    if lo > 1:
        return "FASTER"
    if hi < 1:
        return "SLOWER"
    return "AMBIGUOUS"


@dataclass
class StopRule:
    min_samples: int = 10
    min_time_s: float = 0.1
    target_rel_err: float = 1e-3
    budget_s: float = 3.0
    max_samples: int = 100_000
    stable_blocks: int = 6  # blocks of history the stabilisation test looks at

    def decide(self, samples: list[float], elapsed_s: float, n_blocks: int) -> tuple[bool, str] | None:
        """None to go on, else (converged, reason). ``samples`` are the per-call times so far.
        (``compare`` stops on its verdict instead: see ``harness.runner._measure_isolated``.)"""
        n = len(samples)
        err = relative_error(samples)
        if n >= self.max_samples:
            return False, f"hard cap of {self.max_samples} samples"
        if elapsed_s >= self.budget_s:
            return False, f"time budget of {self.budget_s:g} s spent (rel. error {err:.2%})"
        if n < self.min_samples or elapsed_s < self.min_time_s:
            return None
        if err <= self.target_rel_err:
            return True, f"rel. error {err:.3%} <= {self.target_rel_err:.3%}"
        if n_blocks >= 2 * self.stable_blocks:
            # Stabilised: the spread (CV) of the recent half agrees with the whole within 20%, so
            # the error shrinks only as 1/sqrt(n); stop early if the target is out of the budget's reach.
            half = samples[len(samples) // 2:]
            cv_all = _cv(samples)
            cv_half = _cv(half)
            needed = n * (err / self.target_rel_err) ** 2
            rate = n / elapsed_s
            if cv_all > 0 and abs(cv_half - cv_all) <= 0.2 * cv_all and needed - n > rate * (self.budget_s - elapsed_s):
                return False, (f"noise stabilised at CV {cv_all:.1%}: the target needs ~{needed:,.0f} samples, "
                               f"more than the budget allows (rel. error {err:.2%})")
        return None


def _cv(xs) -> float:
    mean, std = _mean_std(xs)
    return std / mean if mean > 0 else float("inf")
