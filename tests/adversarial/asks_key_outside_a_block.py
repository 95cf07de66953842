"""Adversarial: during its checked calls (before any block) it walks up its caller's frames to the worker
and asks the parent for a key itself, to learn what masks will look like -> TAMPERED: the parent gives
keys only inside a block, one per timed pass."""

import sys

from _common import gemm_into


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if getattr(owner, "ask_key", None) is not None and hasattr(owner, "pool"):
            owner.ask_key()
            break
        frame = frame.f_back
    return gemm_into(c, a, b, sfa, sfb)
