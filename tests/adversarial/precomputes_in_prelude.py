"""Adversarial: in the untimed call before each block it walks up its caller's frames to the
worker, computes the output of every pool set the block will time and keeps them by the output's
address; the timed calls only copy -> FAIL: the block's values are decided after that call (a key
the parent gives only then flips their signs: harness.judge.mask_pool_signs), so what it computed
belongs to other inputs."""

import sys

from _common import gemm_into

_ready = {}


def _pool():
    frame = sys._getframe(1)
    timed = False
    while frame is not None:
        if frame.f_code.co_name == "time_block":
            timed = True
        owner = frame.f_locals.get("self")
        if timed and hasattr(owner, "pool") and hasattr(owner, "scratch"):
            return owner.pool, owner.scratch
        frame = frame.f_back
    return None, None


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    pool, scratch = _pool()
    if pool is not None and data is scratch:
        for other in pool:
            oa, ob, osfa, osfb, _, _, oc = other
            _ready[oc.data_ptr()] = gemm_into(oc.clone(), oa, ob, osfa, osfb)
    elif c.data_ptr() in _ready:
        return c.copy_(_ready.pop(c.data_ptr()))
    return gemm_into(c, a, b, sfa, sfb)
