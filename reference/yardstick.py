"""The accuracy yardstick: how far from the exact result cuBLAS lands on the same data.

A kernel is judged against the exact reference at GPU MODE's tolerance; on data whose sums are not
exact in fp32 (the ``realistic`` distribution) every fp32-accumulating kernel is some way off, so
"how far" needs a yardstick. This one is the issues' peer: the operands dequantised to fp16
(exactly: every e2m1 x e4m3 value is an fp16), multiplied by cuBLAS on tensor cores with fp32
accumulation (reduced-precision reductions off), the same epilogue as the reference, rounded to
the output's fp16. On a CPU the same fp16 operands go through an fp32 matmul.

Errors are measured in units of the tolerance: ``max |out - ref| / (atol + rtol |ref|)`` over the
finite reference elements, so 1.0 is the edge of GPU MODE's check.
"""

from __future__ import annotations

import contextlib

import torch

from reference import checking, codec

# A kernel may be this much further off than the yardstick before it FAILs (the bar) ...
MAX_RATIO = 1.5
# ... once its error is large enough to matter: below half the tolerance a ratio of two rounding
# noises says nothing (exact data: the yardstick's error can be 0 and the kernel's one fp16 ulp).
JUDGED_ABOVE = 0.5
# Error beyond one fp16 ulp (what the sum itself lost) is judged above this fraction of the
# tolerance: fp32 sums' own loss stays at a few hundredths of it on our shapes (gemv 128x40960,
# CPU emulation of the kernels' order), a lossy partial sum reaches 1-6 (gemm v34, group_gemm v39).
BEYOND_ULP_JUDGED_ABOVE = 0.25


@contextlib.contextmanager
def _fp32_accumulate():
    """cuBLAS fp16 GEMMs with fp32 accumulation throughout (torch allows reduced-precision
    reductions in split-K by default)."""
    old = torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = old


def operand_fp16(values: torch.Tensor, scales: torch.Tensor, l_idx: int, rows: int | None = None) -> torch.Tensor:
    """Batch ``l_idx`` of a ``[rows, K/2, L]`` operand dequantised to fp16 (exact)."""
    v = values[:, :, l_idx] if rows is None else values[:rows, :, l_idx]
    s = scales[:, :, l_idx] if rows is None else scales[:rows, :, l_idx]
    return codec.dequantize(v, s, torch.float32).to(torch.float16)


@torch.no_grad()
def matmul_nt(a_values, a_scales, b_values, b_scales, l_idx: int, b_rows: int | None = None) -> torch.Tensor:
    """``A_l @ B_l^T`` as cuBLAS fp16 computes it (fp32 accumulation), returned in fp32."""
    a = operand_fp16(a_values, a_scales, l_idx)
    b = operand_fp16(b_values, b_scales, l_idx, b_rows)
    if a.device.type == "cpu":
        return a.float() @ b.float().T
    with _fp32_accumulate():
        return torch.matmul(a, b.T, out_dtype=torch.float32) if _has_out_dtype() else (a @ b.T).float()


def _has_out_dtype() -> bool:
    # NOTE: torch.matmul(..., out_dtype=) (fp16 in, fp32 out, no fp16 rounding of the sum) exists in
    # newer torch only; without it cuBLAS's fp16 output adds one fp16 rounding before the epilogue.
    import inspect
    try:
        return "out_dtype" in inspect.signature(torch.matmul).parameters
    except (TypeError, ValueError):
        return False


def errors(out, ref) -> tuple[float, float]:
    """``(in tolerances, beyond one ulp)`` over the elements where the reference is finite (NaN where
    ``out`` is not finite there); outputs may be lists (one tensor per group), the worst is taken.

    In tolerances: ``max |out - ref| / (atol + rtol |ref|)``, 1.0 being the edge of GPU MODE's check.
    Beyond one ulp: the largest distance past one fp16 ulp of the reference, in tolerances (0 where
    every element is within one ulp). NOTE: one ulp is what any correctly computed fp32 result can
    lose in its final rounding to fp16 (its value may sit next to a rounding midpoint), and near the
    bottom of a binade one ulp is 0.98 of GPU MODE's tolerance: whichever of kernel and yardstick
    happens to have such an element shows an error near 1. Only error beyond one ulp says something
    about how the sum was formed.
    """
    if isinstance(out, (list, tuple)):
        pairs = [errors(o, r) for o, r in zip(out, ref)]
        return (max(p[0] for p in pairs), max(p[1] for p in pairs)) if pairs else (0.0, 0.0)
    got = out.detach().to(torch.float64)
    exp = ref.detach().to(torch.float64).to(got.device)
    finite = torch.isfinite(exp)
    if not bool(finite.any()):
        return 0.0, 0.0
    exp, got = exp[finite], got[finite]
    if not bool(torch.isfinite(got - exp).all()):
        return float("nan"), float("nan")
    in_tolerances, beyond = _scores(got, exp)
    return float(in_tolerances.max()), float(beyond.max())


def _scores(got: torch.Tensor, exp: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per element (float64 tensors alike): |got - exp| in tolerances, and its part beyond one fp16 ulp of exp."""
    diff = (got - exp).abs()
    tolerance = checking.ATOL + checking.RTOL * exp.abs()
    return diff / tolerance, (diff - fp16_ulp(exp)).clamp_min(0) / tolerance


def fp16_ulp(x: torch.Tensor) -> torch.Tensor:
    """fp16's unit in the last place at each |x| (float64): 2^(e - 10) for |x| in [2^e, 2^(e+1)), 2^-24
    below 2^-14 (the subnormals' spacing). NOTE: by frexp, exact; floor(log2 |x|) is not: CUDA's log2
    gives 5.99999... for 64, which halved the ulp at every power of two on the GPU, and every one-ulp
    result above 8 or 64 read as half an ulp too far (the gemm FAILs of session 55, all at -64 or 8);
    on a CPU log2 of the largest double below 64 rounds to 6.0, doubling it there."""
    _, exponent = torch.frexp(x.abs().clamp_min(2.0 ** -14))  # |x| = m * 2^exponent, m in [0.5, 1)
    return torch.ldexp(torch.ones_like(x), exponent - 11)


def worst_element(out, ref, yard=None) -> str:
    """Where the error beyond one fp16 ulp is largest, in words: the element's index, the kernel's
    value, the reference's (and the yardstick's, given its output), e.g. ``c[17, 4093, 0] = 1.034
    (reference 1.032, cuBLAS fp16 1.032)``; lists (one tensor per group) name the group. A FAIL that
    says which element lets the user take that row and column apart; the largest numbers alone do not."""
    if isinstance(out, (list, tuple)):
        worst, where = -1.0, ""
        for g, (o, r) in enumerate(zip(out, ref)):
            y = yard[g] if yard is not None else None
            beyond = errors(o, r)[1]
            if beyond == beyond and beyond > worst:
                worst, where = beyond, f"group {g}: " + worst_element(o, r, y)
        return where
    got = out.detach().to(torch.float64)
    exp = ref.detach().to(torch.float64).to(got.device)
    beyond = _scores(got, exp)[1]
    score = torch.where(torch.isfinite(exp), beyond, torch.zeros_like(beyond))
    score = torch.where(torch.isnan(score), torch.full_like(score, float("inf")), score)  # a NaN output is the worst
    flat = int(torch.argmax(score.flatten()))
    index = []
    for size in reversed(score.shape):
        index.append(flat % size)
        flat //= size
    index = tuple(reversed(index))
    text = f"c[{', '.join(str(i) for i in index)}] = {float(got[index]):.6g} (reference {float(exp[index]):.6g}"
    if yard is not None:
        text += f", cuBLAS fp16 {float(yard[index]):.6g}"
    return text + ")"


def judge(kernel_error: float, yardstick_error: float, kernel_beyond_ulp: float | None = None,
          yardstick_beyond_ulp: float = 0.0) -> tuple[bool, str]:
    """Whether a kernel that passed the tolerance check is also as accurate as the yardstick.

    With the errors beyond one fp16 ulp given (:func:`errors`), those decide: a FAIL when the
    kernel's is over ``BEYOND_ULP_JUDGED_ABOVE`` of the tolerance and more than ``MAX_RATIO`` x the
    yardstick's. NOTE: the largest error and the largest error beyond one ulp may be two different
    elements (a legitimate one-ulp flip near 10^3 is 0.5-0.98 of the tolerance; an fp32 sum's 1e-4
    near zero is a few ulps there but a few hundredths of the tolerance), so the rule is on the
    second measure alone. Without them: the plain rule on the largest errors.
    """
    text = f"max error {kernel_error:.3g} of the tolerance (cuBLAS fp16: {yardstick_error:.3g})"
    if kernel_error != kernel_error or (kernel_beyond_ulp is not None and kernel_beyond_ulp != kernel_beyond_ulp):
        return False, text
    if kernel_beyond_ulp is not None:
        if kernel_beyond_ulp > BEYOND_ULP_JUDGED_ABOVE and kernel_beyond_ulp > MAX_RATIO * yardstick_beyond_ulp:
            return False, text + (f"; beyond one fp16 ulp {kernel_beyond_ulp:.3g} of the tolerance, more than "
                                  f"{MAX_RATIO}x cuBLAS's ({yardstick_beyond_ulp:.3g})")
        return True, text
    if kernel_error > JUDGED_ABOVE and kernel_error > MAX_RATIO * yardstick_error:
        return False, text + f": more than {MAX_RATIO}x cuBLAS's on the same data"
    return True, text
