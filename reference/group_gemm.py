"""NVFP4 grouped GEMM: ``C_g = A_g @ B_g^T`` for G independent groups (GPU MODE ``nvfp4_group_gemm``).

data = ``(abc_tensors: [(a, b, c)], sfasfb_tensors: [(sfa, sfb)],
sfasfb_reordered_tensors: [(sfa_permuted, sfb_permuted)], problem_sizes: [(m, n, k, 1)])``;
returns the list of ``c``. Unlike GPU MODE (which leaves the plain scales on the CPU), every
tensor here is on the device the inputs were generated on.
"""

from __future__ import annotations

import torch

from reference import checking, distributions as dists, exact

NAME = "group_gemm"
SHAPE_KEYS = ("m", "n", "k", "g")
# GPU MODE: sign and two low bits of each nibble; scales integers 1..2.
COMPETITION_VALUES = "sign_low2"
COMPETITION_SCALES = "int:1:3"


def _as_list(x, g: int, key: str) -> list[int]:
    vals = list(x) if isinstance(x, (list, tuple)) else [x] * g
    if len(vals) != g:
        raise ValueError(f"{key} has {len(vals)} entries for g={g} groups")
    return [int(v) for v in vals]


def generate_input(*, m, n, k, g: int, seed: int, dist: str = "competition", device=None):
    dists.check_dist(dist)
    device = torch.device(device) if device is not None else dists.default_device()
    gen = dists.make_generator(seed, device)
    ms, ns, ks = _as_list(m, g, "m"), _as_list(n, g, "n"), _as_list(k, g, "k")
    l = 1
    abc, sf, sf_perm, sizes = [], [], [], []
    for mi, ni, ki in zip(ms, ns, ks):
        (a, b), (sfa, sfb), (sfa_p, sfb_p) = dists.operands(
            gen, dist, l, ki, [mi, ni], (COMPETITION_VALUES, COMPETITION_SCALES))
        c = dists.random_output(gen, l, mi, ni)
        abc.append((a, b, c))
        sf.append((sfa, sfb))
        sf_perm.append((sfa_p, sfb_p))
        sizes.append((mi, ni, ki, l))
    return (abc, sf, sf_perm, sizes)


def ref_kernel(data, matmul=exact.matmul_nt):
    """The exact result (``matmul``: reference.yardstick.matmul_nt gives cuBLAS fp16's instead)."""
    abc, sf, _, sizes = data
    outs = []
    for (a, b, c), (sfa, sfb) in zip(abc, sf):
        out = torch.empty_like(c)
        out[:, :, 0] = matmul(a, sfa, b, sfb, 0).to(c.dtype)
        outs.append(out)
    return outs


def outputs_of(data) -> list:
    """The output buffers a kernel may write (and the harness poisons): every group's ``c``."""
    return [c for _, _, c in data[0]]


def inputs_of(data) -> list[torch.Tensor]:
    abc, sf, sf_perm, _ = data
    return [t for a, b, _ in abc for t in (a, b)] + [t for pair in sf + sf_perm for t in pair]


def check(data, output, ref=None) -> tuple[bool, str]:
    """``output`` against ``ref`` (``ref_kernel(data)``, computed here unless given)."""
    abc = data[0]
    if not isinstance(output, (list, tuple)):
        return False, f"output is {type(output).__name__}, expected a list of {len(abc)} tensors"
    if len(output) != len(abc):
        return False, f"output has {len(output)} tensors, expected {len(abc)} (one per group)"
    refs = ref_kernel(data) if ref is None else ref
    inputs = inputs_of(data)
    items = [(out, expected, c, f"group {g} output") for g, (out, expected, (_, _, c)) in enumerate(zip(output, refs, abc))]
    for ok, msg in checking.check_all(items, inputs):
        if not ok:
            return False, msg
    earlier = []
    for g, out in enumerate(output):
        if any(checking.overlaps(out, e) for e in earlier):
            return False, f"group {g} output shares memory with another group's output"
        earlier.append(out)
    return True, f"{len(output)} groups match"


def flops(m, n, k, g: int, **_) -> float:
    return sum(2.0 * mi * ni * ki for mi, ni, ki in zip(_as_list(m, g, "m"), _as_list(n, g, "n"), _as_list(k, g, "k")))


def bytes_moved(m, n, k, g: int, **_) -> float:
    return sum((mi + ni) * ki * 4.5 / 8 + mi * ni * 2
               for mi, ni, ki in zip(_as_list(m, g, "m"), _as_list(n, g, "n"), _as_list(k, g, "k")))
