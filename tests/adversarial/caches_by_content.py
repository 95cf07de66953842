"""Adversarial: memoises by a hash of the input bytes and hands back the remembered output tensor
itself -> FAIL: the harness repeats a checked input in fresh buffers, and the answer shares
storage with an earlier call's output. (A cache that copies into c instead never hits while
timing: every timed call sees inputs no earlier call saw.)"""

import hashlib

import torch

from _common import gemm_into

_cache = {}


def _digest(*tensors):
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.contiguous().view(torch.uint8).cpu().numpy().tobytes())
    return h.hexdigest()


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    key = _digest(a, b, sfa, sfb)
    if key not in _cache:
        _cache[key] = gemm_into(c, a, b, sfa, sfb)
    return _cache[key]
