"""Adversarial: at import, replaces harness.timing's module-level clock with one that runs at a
third of the speed, then computes correctly -> TAMPERED (every module-level name of the timing
module is watched)."""

import time

import harness.timing

from _common import gemm_into

_real = time.perf_counter
_t0 = _real()
harness.timing._now = lambda: _t0 + (_real() - _t0) / 3


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    return gemm_into(c, a, b, sfa, sfb)
