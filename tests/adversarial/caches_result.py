"""Adversarial: computes the first call correctly, then returns that cached result -> FAIL on a later seed."""

from _common import gemm_into

_cache = None


def custom_kernel(data):
    global _cache
    if _cache is None:
        a, b, sfa, sfb, _, _, c = data
        _cache = gemm_into(c, a, b, sfa, sfb).clone()
    return _cache
