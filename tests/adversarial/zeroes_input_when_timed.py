"""Adversarial: honest in checked calls; in timed calls (found on the call stack) it zeroes its input
a in place and returns the product of the zeroed input (zeros, no work), so a check that rebuilds
the reference from the inputs as the call left them agrees -> FAIL: the judge regenerates every
input set from its seed and compares the inputs' fingerprints and the output with its own."""

import sys

import torch

from _common import gemm_into


def _timed() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "time_block":
            return True
        frame = frame.f_back
    return False


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    if _timed():
        a.view(torch.uint8).zero_()
        return c.zero_()
    return gemm_into(c, a, b, sfa, sfb)
