"""Adversarial: in the untimed call before each block it walks up its caller's frames to the worker,
asks the parent for the block's key itself (the worker's own ask_key), masks copies of the pool with
it and computes their outputs; the timed calls only copy -> TAMPERED: the parent gives one key per
timed pass and counts the asks, so the worker's own ask is a second one, and the values the block
timed are not the ones the stolen key decided."""

import sys

import torch

from _common import gemm_into

_ready = {}


def _worker():
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if hasattr(owner, "pool") and hasattr(owner, "scratch") and hasattr(owner, "ask_key"):
            return owner
        frame = frame.f_back
    return None


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    owner = _worker()
    if owner is not None and data is owner.scratch and owner.ask_key is not None:
        from harness.judge import mask_pool_signs
        key = owner.ask_key()
        for other in owner.pool:
            copy = tuple(t.clone() for t in other)
            mask_pool_signs(torch, owner.mod, [copy], key)
            oa, ob, osfa, osfb, _, _, oc = copy
            _ready[other[-1].data_ptr()] = gemm_into(oc, oa, ob, osfa, osfb)
    elif c.data_ptr() in _ready:
        return c.copy_(_ready.pop(c.data_ptr()))
    return gemm_into(c, a, b, sfa, sfb)
