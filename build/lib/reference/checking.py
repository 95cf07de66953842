"""Output checks shared by the four problems: tolerance match, NaN/Inf, type, shape, aliasing.

GPU MODE's rule: an element matches when |out - ref| <= atol + rtol * |ref| (rtol = atol = 1e-3),
and NaN / +Inf / -Inf must appear exactly where the reference has them.
"""

from __future__ import annotations

from typing import Iterable

import torch

RTOL = 1e-3
ATOL = 1e-3


def _storage_span(t: torch.Tensor) -> tuple[int, int]:
    if t.numel() == 0:
        return (t.data_ptr(), t.data_ptr())
    start = t.data_ptr()
    extent = sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride())) + 1
    return start, start + extent * t.element_size()


def overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors' memory ranges intersect (same device)."""
    if a.device != b.device:
        return False
    a0, a1 = _storage_span(a)
    b0, b1 = _storage_span(b)
    return a0 < b1 and b0 < a1


def validate_output(out, like: torch.Tensor, inputs: Iterable[torch.Tensor], name: str = "output") -> str | None:
    """Type, device, shape, dtype, strides and aliasing. ``like`` is the problem's ``c``.

    Returns an error line, or None. Writing into ``c`` and returning it is allowed; sharing memory
    with any other input is not.
    """
    if type(out) is not torch.Tensor:
        return f"{name} is {type(out).__name__}, expected a plain torch.Tensor"
    if out.device != like.device:
        return f"{name} is on {out.device}, expected {like.device}"
    if tuple(out.shape) != tuple(like.shape):
        return f"{name} has shape {tuple(out.shape)}, expected {tuple(like.shape)}"
    if out.dtype != like.dtype:
        return f"{name} has dtype {out.dtype}, expected {like.dtype}"
    # Strides of size-1 dims never address memory: only the others must match c's.
    if any(size > 1 and a != b for size, a, b in zip(like.shape, out.stride(), like.stride())):
        return f"{name} has strides {out.stride()}, expected {like.stride()} (those of c)"
    for t in inputs:
        if t is not like and overlaps(out, t):
            return f"{name} shares memory with an input tensor"
    return None


@torch.no_grad()
def compare(out: torch.Tensor, ref: torch.Tensor, name: str = "output",
            rtol: float = RTOL, atol: float = ATOL) -> tuple[bool, str]:
    """Element-wise tolerance check with NaN/Inf placement, constant-output guard, worst element."""
    got = out.detach().to(torch.float64)
    exp = ref.detach().to(torch.float64).to(got.device)
    diff = (got - exp).abs()
    tol = atol + rtol * exp.abs()
    bad = diff > tol
    bad |= torch.isnan(got) ^ torch.isnan(exp)
    bad |= torch.isposinf(got) ^ torch.isposinf(exp)
    bad |= torch.isneginf(got) ^ torch.isneginf(exp)
    # Where both are the same infinity diff is NaN: not a mismatch.
    same_inf = torch.isinf(got) & torch.isinf(exp) & (torch.sign(got) == torch.sign(exp))
    bad &= ~same_inf | torch.isnan(got)
    n_bad = int(bad.sum())
    if n_bad:
        # Worst element: NaN/Inf mismatches first, then the largest excess over tolerance.
        excess = torch.where(torch.isfinite(diff), diff - tol, torch.full_like(diff, float("inf")))
        excess = torch.where(bad, excess, torch.full_like(excess, -float("inf")))
        flat = int(torch.argmax(excess))
        idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), tuple(got.shape)))
        g, e = float(got[idx]), float(exp[idx])
        n_nan = int(torch.isnan(got).sum())
        extra = f"; {n_nan} NaN in {name} (unwritten or poisoned?)" if n_nan and not torch.isnan(exp).any() else ""
        return False, (f"{name}: {n_bad} of {got.numel()} elements mismatch; worst at {idx}: "
                       f"got {g:.6g}, expected {e:.6g} (|diff| {abs(g - e):.3g} > tol {atol + rtol * abs(e):.3g}){extra}")
    if got.numel() > 1:
        flat_exp, flat_got = exp.flatten(), got.flatten()
        if not bool((flat_exp == flat_exp[0]).all()) and bool((flat_got == flat_got[0]).all()):
            return False, f"{name} is constant ({float(flat_got[0]):.6g}) where the reference is not"
    worst = float(diff.max()) if diff.numel() else 0.0
    return True, f"{name}: {got.numel()} elements match (max |diff| {worst:.3g})"


def check_one(out, ref: torch.Tensor, like: torch.Tensor, inputs: list[torch.Tensor], name: str = "output") -> tuple[bool, str]:
    problem = validate_output(out, like, inputs, name)
    if problem:
        return False, problem
    return compare(out, ref, name)
