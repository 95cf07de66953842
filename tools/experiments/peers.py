"""The issues' peer: cuBLAS on operands already dequantised to bf16, timed like a version.

Every lineage issue quotes "cuBLAS on pre-dequantised bf16" measured on an H200; a ratio against
it means something only when both run on one GPU, in one process, by one measure. `cublas_peer`
dequantises a problem's inputs once (exact: an e2m1 x e4m3 product has at most 6 significant
bits, well inside bf16) and returns the timed call (torch's matmul into preallocated bf16 outputs:
one cuBLAS GEMM per batch or group; for dual_gemm the two GEMMs and no fusion, as issue 6 defines
it; for gemv cuBLAS's matrix-vector product) and a check of its result. The dequantisation is not
timed: the peer is the tensor-core work alone, with 4x the operand bytes of NVFP4.

The check is loose on purpose (bf16 outputs carry 8 significant bits): it only catches a peer
wired wrongly (a transposed or mismatched operand), not rounding.
"""
from __future__ import annotations

from typing import Callable

import torch

from reference import exact

PEER_NAME = "cublas"
# NOTE: bf16's unit roundoff is 2^-9; an error of 2^-6 of the output's largest magnitude is far
# above rounding and far below what a wrong operand produces.
RELATIVE_TOLERANCE = 2.0 ** -6


def _bf16(values: torch.Tensor, scales: torch.Tensor, l_idx: int, rows: int | None = None) -> torch.Tensor:
    return exact.operand(values, scales, l_idx, rows).to(torch.bfloat16).contiguous()


def _products(problem: str, data) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(A, B) bf16 pairs whose products A @ B^T are the problem's GEMMs, in order."""
    if problem in ("gemm", "gemv"):
        a, b, sfa, sfb, _, _, c = data
        b_rows = 1 if problem == "gemv" else None
        return [(_bf16(a, sfa, l), _bf16(b, sfb, l, b_rows)) for l in range(c.shape[2])]
    if problem == "dual_gemm":
        a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
        pairs = []
        for l in range(c.shape[2]):
            a_l = _bf16(a, sfa, l)
            pairs += [(a_l, _bf16(b1, sfb1, l)), (a_l, _bf16(b2, sfb2, l))]
        return pairs
    if problem == "group_gemm":
        abc, sf, _, _ = data
        return [(_bf16(a, sfa, 0), _bf16(b, sfb, 0)) for (a, b, _), (sfa, sfb) in zip(abc, sf)]
    raise ValueError(f"no cuBLAS peer for problem {problem!r}")


def cublas_peer(problem: str, data) -> tuple[Callable[[], list[torch.Tensor]], Callable[[list[torch.Tensor]], tuple[bool, str]]]:
    """(call, check) for `data`: call() runs the peer's GEMMs into preallocated outputs and returns
    them; check(outputs) compares them with the exact products."""
    pairs = _products(problem, data)
    vector = problem == "gemv"
    outs = [torch.empty((a.shape[0],) if vector else (a.shape[0], b.shape[0]), dtype=torch.bfloat16, device=a.device)
            for a, b in pairs]
    # NOTE: B^T as a view: cuBLAS reads it as the transposed operand, no copy in the timed call.
    operands = [(a, b[0] if vector else b.t(), out) for (a, b), out in zip(pairs, outs)]

    def call() -> list[torch.Tensor]:
        for a, b, out in operands:
            torch.matmul(a, b, out=out)
        return outs

    def check(outputs: list[torch.Tensor]) -> tuple[bool, str]:
        with exact.no_tf32():
            for i, ((a, b), out) in enumerate(zip(pairs, outputs)):
                ref = a.float() @ b.float().t()
                got = out.float().reshape(ref.shape)
                scale = ref.abs().max().item() or 1.0
                err = (got - ref).abs().max().item()
                if not err <= RELATIVE_TOLERANCE * scale:
                    return False, f"peer GEMM {i}: max error {err:.3g} against max |ref| {scale:.3g}"
        return True, "ok"

    return call, check
