"""Batched NVFP4 GEMV: ``c[:, 0, l] = A_l @ b_l`` (GPU MODE ``nvfp4_gemv``).

data = ``(a [M, K/2, L], b [128, K/2, L], sfa [M, K/16, L], sfb [128, K/16, L],
sfa_permuted, sfb_permuted, c [M, 1, L])``; row 0 of ``b`` is the vector, rows 1..127 are padding
(GPU MODE pads to call a GEMM). Output fp16.
"""

from __future__ import annotations

import torch

from reference import checking, distributions as dists, exact

NAME = "gemv"
SHAPE_KEYS = ("m", "k", "l")
B_ROWS = 128  # the vector padded to one 128-row scale tile
# GPU MODE: bytes 0..3 (low nibble 0..3, high nibble 0); scales integers 0..2.
COMPETITION_VALUES = "low2"
COMPETITION_SCALES = "int:0:3"


def generate_input(*, m: int, k: int, l: int, seed: int, dist: str = "competition", device=None):
    device = torch.device(device) if device is not None else dists.default_device()
    gen = dists.make_generator(seed, device)
    (a, b), (sfa, sfb), (sfa_perm, sfb_perm) = dists.operands(
        gen, dist, l, k, [m, B_ROWS], (COMPETITION_VALUES, COMPETITION_SCALES))
    c = dists.random_output(gen, l, m, 1)
    return (a, b, sfa, sfb, sfa_perm, sfb_perm, c)


def ref_kernel(data, matmul=exact.matmul_nt):
    """The exact result (``matmul``: reference.yardstick.matmul_nt gives cuBLAS fp16's instead)."""
    a, b, sfa, sfb, _, _, c = data
    out = torch.empty_like(c)
    for l_idx in range(c.shape[2]):
        out[:, :, l_idx] = matmul(a, sfa, b, sfb, l_idx, b_rows=1).to(c.dtype)
    return out


def outputs_of(data) -> list:
    """The output buffers a kernel may write (and the harness poisons): here just ``c``."""
    return [data[-1]]


def check(data, output, ref=None) -> tuple[bool, str]:
    """``output`` against ``ref`` (``ref_kernel(data)``, computed here unless given)."""
    return checking.check_one(output, ref_kernel(data) if ref is None else ref, data[-1], list(data[:-1]))


def flops(m: int, k: int, l: int, **_) -> float:
    return 2.0 * m * k * l


def bytes_moved(m: int, k: int, l: int, **_) -> float:
    """Fewest bytes: A and the one vector row at 4.5 bits an element, plus the fp16 output."""
    return l * ((m + 1) * k * 4.5 / 8 + m * 2)
