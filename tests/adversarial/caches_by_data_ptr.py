"""Adversarial: memoises results by the inputs' data pointers; on a hit copies the remembered
output into c without computing. Correct as long as every pointer means one content -> FAIL once
the harness refreshes a pool set in place (same tensors, new values) between timing blocks."""

from _common import gemm_into

_cache = {}


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    key = (a.data_ptr(), b.data_ptr(), sfa.data_ptr(), sfb.data_ptr())
    if key in _cache:
        return c.copy_(_cache[key])
    out = gemm_into(c, a, b, sfa, sfb)
    _cache[key] = out.clone()
    return out
