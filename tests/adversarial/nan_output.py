"""Adversarial: correct except one NaN element -> FAIL."""

from _common import gemm_into


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    gemm_into(c, a, b, sfa, sfb)
    c[0, 0, 0] = float("nan")
    return c
