"""NVFP4 dual GEMM with SiLU gate: ``C = silu(A @ B1^T) * (A @ B2^T)`` (GPU MODE ``nvfp4_dual_gemm``).

data = ``(a, b1, b2, sfa, sfb1, sfb2, sfa_permuted, sfb1_permuted, sfb2_permuted, c)``; both
products accumulate in fp32, silu and the product are fp32, the output fp16.
"""

from __future__ import annotations

import torch

from reference import checking, distributions as dists, exact

NAME = "dual_gemm"
SHAPE_KEYS = ("m", "n", "k", "l")
# GPU MODE: sign and two low bits of each nibble (+-{0, .5, 1, 1.5}); scales fp32 U[0,1) -> e4m3.
COMPETITION_VALUES = "sign_low2"
COMPETITION_SCALES = "unit"


def generate_input(*, m: int, n: int, k: int, l: int, seed: int, dist: str = "competition", device=None):
    device = torch.device(device) if device is not None else dists.default_device()
    gen = dists.make_generator(seed, device)
    (a, b1, b2), (sfa, sfb1, sfb2), (sfa_perm, sfb1_perm, sfb2_perm) = dists.operands(
        gen, dist, l, k, [m, n, n], (COMPETITION_VALUES, COMPETITION_SCALES))
    c = dists.random_output(gen, l, m, n)
    return (a, b1, b2, sfa, sfb1, sfb2, sfa_perm, sfb1_perm, sfb2_perm, c)


def ref_kernel(data, matmul=exact.matmul_nt):
    """The exact result (``matmul``: reference.yardstick.matmul_nt gives cuBLAS fp16's instead)."""
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
    out = torch.empty_like(c)
    for l_idx in range(c.shape[2]):
        h1 = matmul(a, sfa, b1, sfb1, l_idx).float()
        h2 = matmul(a, sfa, b2, sfb2, l_idx).float()
        out[:, :, l_idx] = (torch.nn.functional.silu(h1) * h2).to(c.dtype)
    return out


def outputs_of(data) -> list:
    """The output buffers a kernel may write (and the harness poisons): here just ``c``."""
    return [data[-1]]


def check(data, output, ref=None) -> tuple[bool, str]:
    """``output`` against ``ref`` (``ref_kernel(data)``, computed here unless given)."""
    return checking.check_one(output, ref_kernel(data) if ref is None else ref, data[-1], list(data[:-1]))


def flops(m: int, n: int, k: int, l: int, **_) -> float:
    return 4.0 * m * n * k * l


def bytes_moved(m: int, n: int, k: int, l: int, **_) -> float:
    return l * ((m + 2 * n) * k * 4.5 / 8 + m * n * 2)
