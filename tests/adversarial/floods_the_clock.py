"""Adversarial: during its checked calls (before any block) it walks up to the worker and draws 40
keys from the compiled clock in one call, more records than the parent holds unread in one request
-> TAMPERED: past 16 the parent stops reading, kills the child, and names the flood as keys drawn
outside a block (harness.isolation.Child._read_clock; asks_key_outside_a_block, drawing one a call,
reached the same bound through a prepare's warm-up calls on an H200)."""

import sys

from _common import gemm_into


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if getattr(owner, "clock", None) is not None and hasattr(owner, "pool"):
            for _ in range(40):
                owner.clock.draw_key(0)
            break
        frame = frame.f_back
    return gemm_into(c, a, b, sfa, sfb)
