"""Exact NVFP4 products for the reference kernels.

Each operand is decoded to float64 and multiplied with float64 accumulation on every device (a
product of an e2m1 value and two e4m3 scales has a few significant bits over ~24 binades, so
float64 sums of them are exact far beyond any K here). Nothing here is fast: it is the definition
the kernels are checked against.
"""

from __future__ import annotations

import contextlib

import torch

from reference import codec


def compute_dtype(device: torch.device) -> torch.dtype:
    """float64 on every device: every product is exact in fp32, but the sums are exact in fp32 only
    for the distributions built that way (competition, general); data with mixed exponents
    (realistic) needs float64 sums for the reference to be the exact result it claims to be."""
    return torch.float64


@contextlib.contextmanager
def no_tf32():
    """Full fp32 matmuls on CUDA (cuBLAS may otherwise use TF32 for fp32 inputs)."""
    old_matmul = torch.backends.cuda.matmul.allow_tf32
    old_cudnn = torch.backends.cudnn.allow_tf32
    old_precision = torch.get_float32_matmul_precision()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old_matmul
        torch.backends.cudnn.allow_tf32 = old_cudnn
        torch.set_float32_matmul_precision(old_precision)


def operand(values: torch.Tensor, scales: torch.Tensor, l_idx: int, rows: int | None = None) -> torch.Tensor:
    """Batch ``l_idx`` of a ``[rows, K/2, L]`` operand, dequantised to ``[rows, K]``."""
    v = values[:, :, l_idx] if rows is None else values[:rows, :, l_idx]
    s = scales[:, :, l_idx] if rows is None else scales[:rows, :, l_idx]
    return codec.dequantize(v, s, compute_dtype(values.device))


@torch.no_grad()
def matmul_nt(a_values, a_scales, b_values, b_scales, l_idx: int, b_rows: int | None = None) -> torch.Tensor:
    """``A_l @ B_l^T`` exactly (float64 accumulation), unrounded."""
    a = operand(a_values, a_scales, l_idx)
    b = operand(b_values, b_scales, l_idx, b_rows)
    with no_tf32():
        return a @ b.T
