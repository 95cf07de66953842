"""How often `compare` calls identical code FASTER or SLOWER: its stopping rule under the null, simulated.

`harness.runner._measure_paired` looks at its interval after every round from the sixth (A B then B A,
rounds joined two by two into order-balanced units) and stops once the verdict is not AMBIGUOUS and the
interval is within +-1% of its point (SAME: the whole interval within +-2% of 1). Looking again and
again inflates a 95% interval's false verdicts; this script draws identical versions (each round's log
ratio ~ N(0, sd), optionally an order effect) and applies that rule with the Student-t interval of the
units (the product takes the wider of it and a bootstrap, so its rate is at most this).

Outcome (4000 simulated compares per row, up to 60 rounds):
| per-round sd of log(A/B) | SAME | FASTER | SLOWER | AMBIGUOUS |
|---|---|---|---|---|
| 0.5%, 1% | 1.000, 0.999 | 0 | 0, 0.001 | 0 |
| 2% | 0.960 | 0.018 | 0.022 | 0 |
| 3% | 0.915 | 0.035 | 0.027 | 0.022 |
| 5% | 0.046 | 0.013 | 0.011 | 0.930 |
| 8% | 0.003 | 0.002 | 0.003 | 0.992 |
So a wrong FASTER or SLOWER comes at ~4-6% where a round's ratio scatters by 2-3% (gpumode on the
small shapes), the rate a single 95% interval has, and never the band's far side: the repeated looks
do not inflate it because a verdict also needs the interval within +-1%. Session 55's gpumode
self-compares (docs/methodology.md, item 5) read one FASTER in 14 shapes (group_gemm C, 1.014x
[1.005, 1.022]).

Usage: python3 studies/compare_null_rate.py (CPU, ~1 minute).
"""
import math

import numpy as np
from scipy.stats import t as T


def run(sd, order=0.0, max_rounds=60, sims=4000, margin=0.02, precision=0.01, level=0.95, schedule=None, rng=np.random.default_rng(1)):
    out = {"SAME": 0, "FASTER": 0, "SLOWER": 0, "AMBIGUOUS": 0}
    q = {}
    for _ in range(sims):
        r = rng.normal(0, sd, max_rounds) + np.where(np.arange(max_rounds) % 2 == 0, order, -order)
        verdict = "AMBIGUOUS"
        for n in range(6, max_rounds + 1):
            if schedule is not None and n not in schedule: continue
            units = (r[0:n - n % 2:2] + r[1:n - n % 2:2]) / 2
            k = len(units)
            if k < 2: continue
            c = units.mean(); se = units.std(ddof=1) / math.sqrt(k)
            if k - 1 not in q: q[k - 1] = T.ppf(1 - (1 - level) / 2, k - 1)
            lo, hi = math.exp(c - q[k - 1] * se), math.exp(c + q[k - 1] * se)
            v = "SAME" if lo >= 1 - margin and hi <= 1 + margin else "FASTER" if lo > 1 else "SLOWER" if hi < 1 else "AMBIGUOUS"
            p = math.exp(c)
            if v != "AMBIGUOUS" and max(p - lo, hi - p) <= precision * p:
                verdict = v; break
        out[verdict] += 1
    return {k: round(v / sims, 3) for k, v in out.items()}

if __name__ == "__main__":
    for sd in (0.005, 0.01, 0.02, 0.03, 0.05, 0.08):
        print(sd, "every look:", run(sd), flush=True)
