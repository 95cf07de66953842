"""Adversarial: replaces torch.cuda.Event.elapsed_time at import so every timed call reads ~0 µs,
then computes correctly -> TAMPERED (the guard bound the method before the import)."""

import torch

from _common import gemm_into

torch.cuda.Event.elapsed_time = lambda self, end: 1e-6


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    return gemm_into(c, a, b, sfa, sfb)
