"""Adversarial: on its first call it makes harness.timing's Python clocks read 1000 times fast (its
``_now`` and the bound ``elapsed``) and, through ``gc``, rewrites the guard's own records of them so
the guard sees no change. Against a loop timed in Python this PASSes 1000x faster than real; every
event method's loop (all but kernel) is the compiled clock's (harness/clock.cpp), which reads neither ->
PASS with its real figures (tests/test_cli.py and, for graph, tests/test_gpu.py check them)."""

import gc
import sys
import time

from _common import gemm_into

SCALE = 1000.0
_done = []


def _attack() -> None:
    timing, guard = sys.modules["harness.timing"], sys.modules["harness.guard"]
    bound = timing._bound
    real_elapsed = bound.elapsed

    def fast_now():
        return time.perf_counter() / SCALE

    def fast_elapsed(start, end):
        return real_elapsed(start, end) / SCALE

    timing._now = fast_now
    bound.elapsed = fast_elapsed
    for obj in gc.get_objects():
        if isinstance(obj, guard.Guard):
            obj._fingerprints["harness.timing._now"] = guard._fingerprint(fast_now)
            obj._fingerprints["harness.timing._bound.elapsed"] = guard._fingerprint(fast_elapsed)
            obj._keep += [fast_now, fast_elapsed]


def custom_kernel(data):
    if not _done:
        _done.append(1)
        _attack()
    a, b, sfa, sfb, _, _, c = data
    return gemm_into(c, a, b, sfa, sfb)
