"""Adversarial: inside a block's timed calls it finds the compiled clock in sys.modules and runs it
itself, to write a loop record of its own for the block (tiny times under the block's tag) and to
draw a key -> TAMPERED: the clock refuses any call made while it is running one and counts it, every
later record carries the count, and the parent refuses a block whose records show a refusal
(harness.clock.read_block)."""

import sys

from _common import gemm_into


def _block_tag():
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if frame.f_code.co_name == "_timed_pass" and hasattr(owner, "tag"):
            return owner.tag
        frame = frame.f_back
    return None


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    tag = _block_tag()
    clock = sys.modules.get("_nvfp4_clock")
    if tag is not None and clock is not None:
        for attempt in (lambda: clock.time_batches(lambda d: d, [[0]], "none", lambda r: None, 0, tag),
                        lambda: clock.draw_key(tag)):
            try:
                attempt()
            except RuntimeError:
                pass
    return gemm_into(c, a, b, sfa, sfb)
