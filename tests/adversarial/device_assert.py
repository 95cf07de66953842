"""Adversarial (GPU only): a device-side assert on the M=128 shape, which poisons the CUDA
context; correct on every other shape. The harness must report CRASH for that shape only and
still check the others in a fresh child."""

import torch

from _common import gemm_into


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    if c.shape[0] == 128:
        index = torch.tensor([1 << 20], device=c.device)
        torch.zeros(4, device=c.device)[index].sum().item()  # out of bounds on the device
    return gemm_into(c, a, b, sfa, sfb)
