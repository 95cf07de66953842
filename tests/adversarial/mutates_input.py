"""Adversarial: scribbles over a in place, then returns the correct result -> FAIL (input modified)."""

import torch

from _common import gemm_into


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    original = a.clone()
    a.view(torch.uint8).zero_()
    return gemm_into(c, original, b, sfa, sfb)
