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
    return compare_all([(out, ref, name)], rtol, atol)[0]


@torch.no_grad()
def compare_all(pairs: list[tuple[torch.Tensor, torch.Tensor, str]], rtol: float = RTOL,
                atol: float = ATOL) -> list[tuple[bool, str]]:
    """:func:`compare` of each ``(out, ref, name)`` in order, up to and including the first mismatch.

    NOTE: two passes, one verdict. The first asks of every pair at once whether each element is
    finite and within tolerance, and reads the answers back together: group_gemm's 8 groups paid
    ~30 full-size float64 ops and 4 host syncs each in the full check (issue 49: the judge's check
    of a group_gemm B set took 35 ms on an H200), the first pass ~15 ops each and one sync a set.
    A pair it does not pass (a NaN, an Inf, an element over tolerance) gets the full check, whose
    verdict and message are the only ones a mismatch ever gets; the first pass computes the
    tolerance with the same float64 operations, so it passes nothing the full check would not.
    """
    summaries, bools, worsts = [], [], []
    for out, ref, _ in pairs:
        got = out.detach().to(torch.float64)
        exp = ref.detach().to(torch.float64).to(got.device)
        if got.numel() == 0 or got.shape != exp.shape:
            summaries.append(None)  # nothing to pass quickly: the full check says what it is
            continue
        diff = (got - exp).abs()
        # NOTE: a NaN or infinite reference element makes its tolerance NaN or Inf; -1 fails it here,
        # and the full check places it
        tol = exp.abs().mul_(rtol).add_(atol).nan_to_num_(nan=-1.0, posinf=-1.0)
        flat_exp, flat_got = exp.reshape(-1), got.reshape(-1)
        bools += [torch.le(diff, tol).all(), (flat_exp == flat_exp[0]).all(), (flat_got == flat_got[0]).all()]
        worsts.append(diff.max())
        summaries.append(len(worsts) - 1)
    device = worsts[0].device if worsts else None
    read = torch.cat([torch.stack([b.to(device) for b in bools]).to(torch.float64),
                      torch.stack([w.to(device) for w in worsts])]).tolist() if worsts else []
    flags, maxima = read[:len(bools)], read[len(bools):]
    results = []
    for (out, ref, name), at in zip(pairs, summaries):
        within, exp_constant, got_constant = flags[3 * at:3 * at + 3] if at is not None else (False, False, False)
        if within and not (out.numel() > 1 and not exp_constant and got_constant):
            results.append((True, f"{name}: {out.numel()} elements match (max |diff| {maxima[at]:.3g})"))
            continue
        results.append(_compare_in_full(out, ref, name, rtol, atol))
        if not results[-1][0]:
            break
    return results


def _compare_in_full(out: torch.Tensor, ref: torch.Tensor, name: str, rtol: float, atol: float) -> tuple[bool, str]:
    """The full check: every mismatch counted, NaN/Inf placed, the worst element named."""
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
    return check_all([(out, ref, like, name)], inputs)[0]


def check_all(items: list[tuple], inputs: list[torch.Tensor]) -> list[tuple[bool, str]]:
    """:func:`check_one` of each ``(out, ref, like, name)`` in order, up to and including the first
    failure; the comparisons go through :func:`compare_all` together (one host sync)."""
    formed, problem = [], None
    for out, ref, like, name in items:
        problem = validate_output(out, like, inputs, name)
        if problem:
            break
        formed.append((out, ref, name))
    results = compare_all(formed)
    if problem and all(ok for ok, _ in results):
        results.append((False, problem))
    return results
