"""Adversarial: in the untimed call before each block it walks up its caller's frames to the worker,
draws the block's key itself from the worker's compiled clock (``draw_key``, the worker's own route),
masks copies of the pool with it and computes their outputs; the timed calls only copy -> TAMPERED:
the clock makes the untimed call itself and refuses a key drawn inside it, and every later record
carries the refusal, which the parent refuses (harness.clock.read_block). Had the clock handed the
key out, the block's values would still be the worker's later key, not this one."""

import sys

import torch

from _common import gemm_into

_ready = {}


def _worker():
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if hasattr(owner, "pool") and hasattr(owner, "scratch") and getattr(owner, "clock", None) is not None:
            return owner
        frame = frame.f_back
    return None


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    owner = _worker()
    if owner is not None and data is owner.scratch:
        from harness.judge import mask_pool_signs
        try:
            key = owner.clock.draw_key(owner.tag)
        except RuntimeError:
            key = None
        for other in owner.pool if key is not None else ():
            copy = tuple(t.clone() for t in other)
            mask_pool_signs(torch, owner.mod, [copy], key)
            oa, ob, osfa, osfb, _, _, oc = copy
            _ready[other[-1].data_ptr()] = gemm_into(oc, oa, ob, osfa, osfb)
    elif c.data_ptr() in _ready:
        return c.copy_(_ready.pop(c.data_ptr()))
    return gemm_into(c, a, b, sfa, sfb)
