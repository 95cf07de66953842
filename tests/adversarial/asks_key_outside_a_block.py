"""Adversarial: during its checked calls (before any block) it walks up its caller's frames to the worker
and draws a key from the worker's compiled clock itself, to learn what masks will look like -> TAMPERED:
every key the clock draws is a signed record the parent reads, and the parent accepts keys only inside
a block, one per timed pass (harness.isolation.Child._clock_refusal)."""

import sys

from _common import gemm_into


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if getattr(owner, "clock", None) is not None and hasattr(owner, "pool"):
            owner.clock.draw_key(0)
            break
        frame = frame.f_back
    return gemm_into(c, a, b, sfa, sfb)
