"""Adversarial: computes only the first call of a burst (a call within 1 ms of the previous one
returns at once, c untouched), the pattern that wins when a harness checks one output per batch
-> FAIL: every timed call's output is checked."""

import time

from _common import gemm_into

_last = [0.0]


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    now = time.perf_counter()
    burst = now - _last[0] < 1e-3
    if not burst:
        gemm_into(c, a, b, sfa, sfb)
    _last[0] = time.perf_counter()
    return c
