"""NVFP4 block-scaled GEMM: ``C_l = A_l @ B_l^T`` (GPU MODE ``nvfp4_gemm``).

data = ``(a [M, K/2, L], b [N, K/2, L], sfa [M, K/16, L], sfb [N, K/16, L], sfa_permuted,
sfb_permuted, c [M, N, L])``. Output fp16.
"""

from __future__ import annotations

import torch

from reference import checking, distributions as dists, exact

NAME = "gemm"
SHAPE_KEYS = ("m", "n", "k", "l")
# GPU MODE: every byte; scales integers 0..3.
COMPETITION_VALUES = "all"
COMPETITION_SCALES = "int:0:4"


def generate_input(*, m: int, n: int, k: int, l: int, seed: int, dist: str = "competition", device=None):
    device = torch.device(device) if device is not None else dists.default_device()
    gen = dists.make_generator(seed, device)
    (a, b), (sfa, sfb), (sfa_perm, sfb_perm) = dists.operands(
        gen, dist, l, k, [m, n], (COMPETITION_VALUES, COMPETITION_SCALES))
    c = dists.random_output(gen, l, m, n)
    return (a, b, sfa, sfb, sfa_perm, sfb_perm, c)


def ref_kernel(data, matmul=exact.matmul_nt):
    """The exact result (``matmul``: reference.yardstick.matmul_nt gives cuBLAS fp16's instead)."""
    a, b, sfa, sfb, _, _, c = data
    out = torch.empty_like(c)
    for l_idx in range(c.shape[2]):
        out[:, :, l_idx] = matmul(a, sfa, b, sfb, l_idx).to(c.dtype)
    return out


def outputs_of(data) -> list:
    """The output buffers a kernel may write (and the harness poisons): here just ``c``."""
    return [data[-1]]


def check(data, output, ref=None) -> tuple[bool, str]:
    """``output`` against ``ref`` (``ref_kernel(data)``, computed here unless given)."""
    return checking.check_one(output, ref_kernel(data) if ref is None else ref, data[-1], list(data[:-1]))


def flops(m: int, n: int, k: int, l: int, **_) -> float:
    return 2.0 * m * n * k * l


def bytes_moved(m: int, n: int, k: int, l: int, **_) -> float:
    return l * ((m + n) * k * 4.5 / 8 + m * n * 2)
