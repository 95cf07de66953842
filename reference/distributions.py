"""Random NVFP4 operands in the four input distributions kernels are checked on: two every
kernel must be exact for (``competition``, ``general``), one of real-looking data (``realistic``)
and one that makes fp32 sums round (``mixed``), where a correct kernel matches the reference at
GPU MODE's tolerance and is judged against cuBLAS's error on the same data (reference.yardstick).

``competition``: each problem's GPU MODE value and scale distribution (the problem module picks
which, see ``VALUE_DISTS`` / ``SCALE_DISTS``).

``general``: every e2m1 bit pattern (both zeros, all 14 non-zero values) uniformly, and positive
e4m3 scales with every mantissa over a range of binades from the smallest subnormal (2^-9) up to
448. The binade of a scale is drawn per (batch, K-block) and shared by the rows of one operand;
the other operand's binade in that block is ``offset - binade`` so every product of two scales in
one K-block has the same exponent. That keeps the fp32 sum of a dot product exact in any order
(so every correct fp32-accumulating kernel returns the reference's fp32 value bit for bit, and
the rtol/atol of 1e-3 only absorbs the final fp16 rounding), while both operands still see
subnormal and largest scales. ``offset`` is chosen from K so outputs stay finite in fp16.

``realistic``: what ``general`` cannot see. Because ``general`` mirrors the scale exponents, every
fp32 partial sum is exact, so a kernel that forms its partial sums badly (a lossy split of K, a
rescale between K-blocks, accumulation in a narrower type) still returns the reference's bits.
Real weights and activations have mixed exponents: the terms of a dot product span many binades
and fp32 sums round. Here each operand is a real-looking matrix, its kind drawn per operand by
the seed: ``gaussian`` (N(0, 1)) or ``heavy`` (Student-t with 3 degrees of freedom, plus
``max(1, rows // 64)`` outlier rows per matrix scaled by 10^U(1, 2), i.e. 10x to 100x). It is
quantised with the standard NVFP4 recipe (:func:`reference.codec.quantize_nvfp4`: per 16
elements along K, scale = e4m3(amax / 6), values = e2m1(x / scale) clamped to +-6, both rounded
to nearest, ties to even).

NVFP4 normally carries a per-tensor fp32 global scale (amax / (6 * 448)); GPU MODE's tuples have
none, so it is folded into the data: operand X is multiplied by ``g_X = 2^-s_X * 6 * 448 /
amax(X)`` before quantising, and the reference (like every kernel) sees that already-scaled
matrix, i.e. its global scale is 1. ``s_X = 0`` is the textbook recipe (largest block scale
448), but then outputs reach ~1e9 at K = 16384, far past fp16's 65504. So the integer shifts
``s_X >= 0`` (powers of two: the block scales' mantissas stay the textbook recipe's) are the
smallest that bring the largest |output| of the unquantised data under 2^14 (dual GEMM: of
``h1 * h2``), split between the operands to keep as many block scales as possible in e4m3's
normal range (>= 2^-6); see :func:`realistic_shifts`. Two Gaussian operands keep every scale
normal; where heavy operands meet (more so in dual GEMM, whose output multiplies two products)
some of the smallest blocks still get subnormal scales. The reference (``ref_kernel``) computes
from the decoded e2m1 x e4m3 values as for the other distributions, and its float64 sums stay
exact: every decoded value is a multiple of 2^-10 (0.5 x the smallest scale 2^-9), so every
partial sum of a dot product is a multiple of 2^-20, exactly representable while below 2^33, and
sum |terms| stays far below that here (tests check it). Only a kernel's fp32 sums round; it is
judged at GPU MODE's tolerance, where fp32 sums in any order pass.

``mixed``: every e2m1 code, and each block scale drawn independently (per batch, row and K-block,
for every operand) uniformly over the e4m3 codes of binades 2^-6 .. 2^0 (a dual GEMM's operands 2^3
lower). The terms of a dot product span ~16 binades, so fp32 partial sums round:
this is the distribution that sees how a kernel forms, exchanges and rounds its partial sums
(``realistic`` data turned out exact in fp32 on our shapes: its block scales share ~3 binades).
"""

from __future__ import annotations

import itertools
import math

import torch

from reference import codec, exact

DISTS = ("competition", "general", "realistic", "mixed")

# RMS of one product term v_a * v_b * s_a * s_b in units of 2^(offset - 8) under ``general``:
# rms(2v) over the 8 magnitudes = sqrt(34.25), squared = 34.25; rms of (8 + mantissa) = 11.7,
# squared ~ 137; 34.25 * 137 ~ 4.7e3. Used only to size the offset, not for exactness.
_GENERAL_TERM_RMS_UNITS = 4.7e3


def make_generator(seed: int, device: torch.device) -> torch.Generator:
    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed))
    return gen


def default_device() -> torch.device:
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def check_dist(dist: str) -> None:
    if dist not in DISTS:
        raise ValueError(f"unknown input distribution {dist!r}; expected one of {', '.join(DISTS)}")


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------

def random_values(gen: torch.Generator, l: int, rows: int, k: int, kind: str) -> torch.Tensor:
    """Packed e2m1 operand ``[rows, K/2, L]`` (float4_e2m1fn_x2 view of (L, rows, K/2) storage).

    kind: ``all`` (every byte), ``low2`` (bytes 0..3: GPU MODE gemv), ``sign_low2`` (sign and the
    two low bits of each nibble kept: +-{0, 0.5, 1, 1.5}, GPU MODE dual and grouped GEMM).
    """
    device = gen.device
    shape = (l, rows, k // 2)
    if kind == "all":
        raw = torch.randint(0, 256, shape, dtype=torch.int32, generator=gen, device=device)
    elif kind == "low2":
        raw = torch.randint(0, 4, shape, dtype=torch.int32, generator=gen, device=device)
    elif kind == "sign_low2":
        raw = torch.randint(0, 255, shape, dtype=torch.int32, generator=gen, device=device) & 0xBB
    else:
        raise ValueError(f"unknown value distribution {kind!r}")
    return codec.batched(raw.to(torch.uint8)).view(torch.float4_e2m1fn_x2)


# ---------------------------------------------------------------------------------------------
# Scales
# ---------------------------------------------------------------------------------------------

def _padded_plain(rows: int, sf_k: int) -> tuple[int, int]:
    return codec.ceil_div(rows, 128) * 128, codec.ceil_div(sf_k, codec.K_ATOM) * codec.K_ATOM


def _finish_scales(bits: torch.Tensor, rows: int, sf_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded ``(L, rows_pad, sfk_pad)`` bits -> (plain ``[rows, K/16, L]``, permuted).

    The permuted tensor's padding slots hold draws from the same distribution (as GPU MODE's do).
    """
    l = bits.shape[0]
    full = codec.batched(bits.to(torch.uint8)).view(torch.float8_e4m3fn)
    plain = codec.batched(bits[:, :rows, :sf_k].to(torch.uint8).contiguous()).view(torch.float8_e4m3fn)
    rows_pad, sfk_pad = full.shape[0], full.shape[1]
    fill = codec.to_permuted(full)  # every slot real: padding rows/cols included
    assert fill.shape == codec.permuted_shape(rows_pad, sfk_pad, l)
    return plain, fill


def competition_scales(gen: torch.Generator, l: int, rows: int, sf_k: int, kind: str):
    """(plain, permuted) scales for one operand; kind ``int:LO:HI`` (integers LO..HI-1 as e4m3)
    or ``unit`` (fp32 uniform in [0, 1) rounded to e4m3)."""
    device = gen.device
    rows_pad, sfk_pad = _padded_plain(rows, sf_k)
    shape = (l, rows_pad, sfk_pad)
    if kind.startswith("int:"):
        lo, hi = (int(x) for x in kind.split(":")[1:])
        ints = torch.randint(lo, hi, shape, dtype=torch.int32, generator=gen, device=device)
        bits = ints.to(torch.float32).to(torch.float8_e4m3fn).view(torch.uint8)
    elif kind == "unit":
        bits = torch.rand(shape, dtype=torch.float32, generator=gen, device=device)
        bits = bits.to(torch.float8_e4m3fn).view(torch.uint8)
    else:
        raise ValueError(f"unknown scale distribution {kind!r}")
    return _finish_scales(bits, rows, sf_k)


def general_offsets(k: int, n_products: int = 1) -> list[int]:
    """Exponent offsets (one per product sharing the A operand) that keep fp16 outputs finite.

    One product: output rms ~ 4.7e3 * sqrt(K) * 2^(offset - 8); offset -1 gives rms ~1.2e3 at
    K = 16384 (fp16 max is 65504, over 50 sigma away) and lets scales reach both 2^-9 and 448.
    Two products (dual GEMM, output ~ h1 * h2): the second offset brings rms(h1) * rms(h2)
    down to ~2^10.
    """
    first = -1
    if n_products == 1:
        return [first]
    log_rms_units = math.log2(_GENERAL_TERM_RMS_UNITS * math.sqrt(k))
    second = math.floor(10 - 2 * (log_rms_units - 8) - first)
    return [first] + [second] * (n_products - 1)


def general_binades(gen: torch.Generator, l: int, sf_k: int, offsets: list[int]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Per (batch, K-block) binade of A's scales and of each B's: ``offset_j - binade_A``."""
    lo, hi = codec.E4M3_MIN_EXP, codec.E4M3_MAX_EXP
    for off in offsets:  # every B binade must be a real e4m3 binade too
        lo, hi = max(lo, off - codec.E4M3_MAX_EXP), min(hi, off - codec.E4M3_MIN_EXP)
    if lo > hi:
        raise ValueError(f"offsets {offsets} leave no common e4m3 binade")
    sfk_pad = codec.ceil_div(sf_k, codec.K_ATOM) * codec.K_ATOM
    binade_a = torch.randint(lo, hi + 1, (l, sfk_pad), dtype=torch.int32, generator=gen, device=gen.device)
    return binade_a, [off - binade_a for off in offsets]


def general_scales(gen: torch.Generator, rows: int, sf_k: int, binades: torch.Tensor):
    """(plain, permuted) scales: each a uniform code of its (batch, K-block) binade."""
    device = gen.device
    l, sfk_pad = binades.shape
    rows_pad, _ = _padded_plain(rows, sf_k)
    table_lo = torch.tensor([codec.e4m3_code_range(e)[0] for e in range(codec.E4M3_MIN_EXP, codec.E4M3_MAX_EXP + 1)],
                            dtype=torch.int32, device=device)
    table_hi = torch.tensor([codec.e4m3_code_range(e)[1] for e in range(codec.E4M3_MIN_EXP, codec.E4M3_MAX_EXP + 1)],
                            dtype=torch.int32, device=device)
    idx = (binades - codec.E4M3_MIN_EXP).long()
    lo = table_lo[idx].view(l, 1, sfk_pad)
    span = (table_hi[idx] - table_lo[idx] + 1).view(l, 1, sfk_pad)
    u = torch.rand((l, rows_pad, sfk_pad), dtype=torch.float64, generator=gen, device=device)
    bits = lo + torch.clamp((u * span).to(torch.int32), max=span - 1)
    return _finish_scales(bits, rows, sf_k)


# ---------------------------------------------------------------------------------------------
# Mixed: every e2m1 code, independent scales of every mantissa over six binades
# ---------------------------------------------------------------------------------------------

# NOTE: the binades 2^-6 .. 2^0 are the data on which gemm v34 and group_gemm v39 were first seen
# outside the tolerance while cuBLAS fp16 (fp32 accumulation) passed at 0.95-0.97 of it (H200,
# issue 37). Drawn independently per element block and operand, a product's exponent spans ~16
# binades (e2m1 2^-1..2^2.6 and two scales 2^-6..2^0.9 each), so fp32 partial sums round: the
# order and precision in which a kernel forms and combines its partial sums shows. ``realistic``
# data does not show it: its block scales sit in ~3 binades per operand and its dot products
# stayed exact in fp32 (checked on a CPU: fp32 and float64 sums equal on every element).
MIXED_BINADES = (-6, 0)
# Dual GEMM multiplies two products, so an output's absolute error is one product's fp32 rounding
# times the other product: with A and both B in 2^-6 .. 2^0, cuBLAS fp16 itself missed GPU MODE's
# tolerance by 1.7-2.2x on near-zero outputs (H200, the benchmark shapes). Every operand of a dual
# GEMM sits this many binades lower (2^-9 .. 2^-3, subnormals included): |h| ~ 20, and cuBLAS's
# outputs stay within one fp16 ulp of the exact result (checked on a CPU, 256x256x7168).
MIXED_DUAL_SHIFT = 3


def mixed_scales(gen: torch.Generator, l: int, rows: int, sf_k: int, low_binade: int):
    """(plain, permuted) scales: per (batch, row, K-block) a uniform e4m3 code of the binades
    ``low_binade .. low_binade + 6`` (every mantissa), independent of every other block."""
    width = MIXED_BINADES[1] - MIXED_BINADES[0]
    lo_code = codec.e4m3_code_range(low_binade)[0]
    hi_code = codec.e4m3_code_range(low_binade + width)[1]
    rows_pad, sfk_pad = _padded_plain(rows, sf_k)
    bits = torch.randint(lo_code, hi_code + 1, (l, rows_pad, sfk_pad), dtype=torch.int32,
                         generator=gen, device=gen.device)
    return _finish_scales(bits, rows, sf_k)


# ---------------------------------------------------------------------------------------------
# Realistic: Gaussian or heavy-tailed matrices, quantised with the standard NVFP4 recipe
# ---------------------------------------------------------------------------------------------

REALISTIC_KINDS = ("gaussian", "heavy")
STUDENT_T_DOF = 3  # finite variance, heavy tail: P(|t| > x) ~ x^-3
OUTLIER_ROW_EVERY = 64  # max(1, rows // 64) outlier rows per matrix of a heavy operand
OUTLIER_GAIN_LOG10 = (1.0, 2.0)  # outlier rows scaled by 10^U(1, 2): 10x to 100x
# The shifts bring the largest |output| of the scaled, unquantised data under 2^14: 4x under
# fp16's 65504, room for what quantisation moves. Dual GEMM: the bound is on |h1 * h2| (>= |silu(h1) * h2|).
REALISTIC_OUTPUT_LOG2 = 14
# "Small block scales" for the normal-range split: this quantile of an operand's block amaxes.
_SMALL_BLOCK_QUANTILE = 0.01


def realistic_kind(gen: torch.Generator) -> str:
    """One operand's kind, ``gaussian`` or ``heavy``, drawn from ``gen`` (one draw)."""
    i = int(torch.randint(0, len(REALISTIC_KINDS), (1,), generator=gen, device=gen.device))
    return REALISTIC_KINDS[i]


def outlier_rows(rows: int) -> int:
    """Outlier rows per matrix (per batch) of a heavy operand with ``rows`` rows."""
    return max(1, rows // OUTLIER_ROW_EVERY)


def realistic_raw(gen: torch.Generator, l: int, rows: int, k: int, kind: str) -> torch.Tensor:
    """Unscaled fp32 data ``(L, rows_pad, K_pad)`` of one operand (padded to whole scale tiles).

    ``gaussian``: N(0, 1). ``heavy``: Student-t (``STUDENT_T_DOF``), z / sqrt(chi2 / dof) from
    normals, and per batch :func:`outlier_rows` of the first ``rows`` rows (the real ones) scaled
    by ``10^U(OUTLIER_GAIN_LOG10)``. Padding rows and columns only feed the permuted scales'
    padding slots (see :func:`realistic_quantised`).
    """
    device = gen.device
    rows_pad, sfk_pad = _padded_plain(rows, k // codec.SF_VEC_SIZE)
    shape = (l, rows_pad, sfk_pad * codec.SF_VEC_SIZE)
    x = torch.randn(shape, dtype=torch.float32, generator=gen, device=device)
    if kind == "gaussian":
        return x
    if kind != "heavy":
        raise ValueError(f"unknown realistic kind {kind!r}")
    chi2 = torch.zeros(shape, dtype=torch.float32, device=device)
    for _ in range(STUDENT_T_DOF):
        chi2 += torch.randn(shape, dtype=torch.float32, generator=gen, device=device).square()
    # chi2 = 0 needs dof exact-zero normals; the floor only keeps the quotient finite regardless.
    x *= torch.rsqrt(torch.clamp(chi2 / STUDENT_T_DOF, min=1e-30))
    n_out = outlier_rows(rows)
    which = torch.rand((l, rows), generator=gen, device=device).argsort(dim=1)[:, :n_out]
    lo, hi = OUTLIER_GAIN_LOG10
    gain = 10.0 ** (lo + (hi - lo) * torch.rand((l, n_out), dtype=torch.float32, generator=gen, device=device))
    rows_gain = torch.ones((l, rows_pad), dtype=torch.float32, device=device)
    rows_gain.scatter_(1, which, gain)
    return x * rows_gain.unsqueeze(-1)


def block_profile(x: torch.Tensor, rows: int, k: int, g: float) -> tuple[dict[int, int], float]:
    """How the block scales of ``x[:, :rows, :k]`` scaled by ``g`` spread over the e4m3 binades.

    Returns ``(binades, low)``: the number of blocks per binade ``floor(log2(amax * g / 6))``
    (the unrounded scale; all-zero blocks left out), and log2 of the ``_SMALL_BLOCK_QUANTILE``
    quantile of those scales.
    """
    amax = x[:, :rows, :k].abs().reshape(-1, codec.SF_VEC_SIZE).amax(dim=-1)
    amax = amax[amax > 0].to(torch.float64) * (g / codec.E2M1_MAX)
    if amax.numel() == 0:
        return {}, -math.inf
    _, exp = torch.frexp(amax)  # amax = m * 2^exp, m in [0.5, 1): binade exp - 1, exactly
    binades, counts = torch.unique(exp - 1, return_counts=True)
    kth = max(1, int(_SMALL_BLOCK_QUANTILE * amax.numel()))
    low = math.log2(float(torch.kthvalue(amax, kth).values))
    return dict(zip(binades.tolist(), counts.tolist())), low


@torch.no_grad()
def _log2_largest_output(xs: list[torch.Tensor], rows: list[int], k: int) -> float:
    """log2 max |prod_j (A_l B_j,l^T)| over every output (and batch l) of the unquantised data.

    One product for gemv / GEMM, the elementwise product of both for dual GEMM, which bounds its
    ``|silu(h1) * h2|``. fp32 matmuls: it sizes a power-of-two shift, it need not be exact.
    """
    a = xs[0][:, :rows[0], :k]
    out = None
    with exact.no_tf32():  # the shift must not depend on a global TF32 setting
        for x, r in zip(xs[1:], rows[1:]):
            h = torch.bmm(a, x[:, :r, :k].transpose(1, 2))
            out = h if out is None else out * h
    biggest = float(out.abs().max())
    return math.log2(biggest) if biggest > 0 else -math.inf


def realistic_shifts(log2_output: float, profiles: list[tuple[dict[int, int], float]]) -> list[int]:
    """Power-of-two shifts ``[s_A, s_B1, ...]`` (all >= 0) of the textbook global scales.

    ``log2_output``: log2 of the largest |output| at the textbook scales (largest block scale 448
    in every operand). Each output multiplies A once per product and each B_j once, so the shifts
    must satisfy ``n * s_A + sum_j s_Bj >= need = ceil(log2_output - REALISTIC_OUTPUT_LOG2)``.
    ``profiles``: each operand's :func:`block_profile` at its textbook scale. Among the shifts
    meeting ``need``, the one chosen has the smallest worst fraction of an operand's blocks
    pushed below e4m3's normal range (scale < 2^-6), then the smallest sum of those fractions,
    then the small-block quantiles' distances above 2^-6 largest leximin-wise (the smallest
    first, then the next), then comes first in order of ``(s_A, s_B1, ...)``.
    """
    n = len(profiles) - 1
    need = max(0, math.ceil(log2_output - REALISTIC_OUTPUT_LOG2)) if math.isfinite(log2_output) else 0

    def below_normal(profile, shift):
        binades, _ = profile
        total = sum(binades.values())
        low = sum(c for b, c in binades.items() if b - shift < codec.E4M3_MIN_NORMAL_EXP)
        return low / total if total else 0.0

    best_key, best = None, None
    # Every B but the last is free; the last takes what is still needed.
    for s_a in range(codec.ceil_div(need, n) + 1):
        for free in itertools.product(range(max(0, need - n * s_a) + 1), repeat=n - 1):
            shifts = [s_a, *free, max(0, need - n * s_a - sum(free))]
            fractions = [below_normal(p, sh) for p, sh in zip(profiles, shifts)]
            margins = sorted(p[1] - sh - codec.E4M3_MIN_NORMAL_EXP for p, sh in zip(profiles, shifts))
            key = (max(fractions), sum(fractions), [-m for m in margins])
            if best_key is None or key < best_key:
                best_key, best = key, shifts
    return best


def realistic_data(gen: torch.Generator, l: int, k: int, rows: list[int]) -> tuple[list[torch.Tensor], list[str]]:
    """The pre-quantisation data of operands sharing one K (``rows[0]`` is A, the rest B1, B2, ...).

    Returns ``(xs, kinds)``: each ``x`` is fp32 ``(L, rows_pad, K_pad)`` with its folded global
    scale ``2^-s * 6 * 448 / amax`` already multiplied in (amax over the real rows and columns,
    ``s`` from :func:`realistic_shifts`); :func:`realistic_quantised` turns it into the operand.
    Draws, in order: per operand its kind and its raw data.
    """
    kinds, raws = [], []
    for r in rows:
        kinds.append(realistic_kind(gen))
        raws.append(realistic_raw(gen, l, r, k, kinds[-1]))
    textbook = []
    for x, r in zip(raws, rows):
        amax = float(x[:, :r, :k].abs().max())
        textbook.append(codec.E2M1_MAX * codec.E4M3_MAX / amax if amax > 0 else 1.0)
    profiles = [block_profile(x, r, k, g) for x, r, g in zip(raws, rows, textbook)]
    log2_output = _log2_largest_output([x * g for x, g in zip(raws, textbook)], rows, k)
    shifts = realistic_shifts(log2_output, profiles)
    # One fp32 multiply by the folded global scale: the result is the matrix being quantised.
    return [x * torch.tensor(g * 2.0 ** -s, dtype=torch.float32, device=x.device)
            for x, g, s in zip(raws, textbook, shifts)], kinds


def realistic_quantised(x: torch.Tensor, rows: int, k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One operand from its pre-quantisation data ``(L, rows_pad, K_pad)``: ``(values, plain, permuted)``.

    The whole padded tensor is quantised; values and plain scales are the real ``rows`` x ``K``
    part, and the permuted tensor's padding slots hold the padding blocks' scales (saturated at
    448 where a padding block exceeds the real data), so they follow the same distribution.
    """
    packed, scales = codec.quantize_nvfp4(x)
    values = codec.batched(packed[:, :rows, : k // 2].contiguous()).view(torch.float4_e2m1fn_x2)
    plain, permuted = _finish_scales(scales.view(torch.uint8), rows, k // codec.SF_VEC_SIZE)
    return values, plain, permuted


def random_output(gen: torch.Generator, l: int, m: int, n: int) -> torch.Tensor:
    """The ``c`` buffer ``[M, N, L]`` fp16 (random, as GPU MODE hands it over)."""
    return codec.batched(torch.randn((l, m, n), dtype=torch.float16, generator=gen, device=gen.device))


def operands(gen: torch.Generator, dist: str, l: int, k: int, rows: list[int], competition: tuple[str, str]):
    """Operands sharing one K: ``rows[0]`` is A, the rest B1, B2, ...; A's scales pair with each B.

    Returns ``(values, scales, permuted_scales)``, three lists in the order of ``rows``.
    ``competition`` is (value kind, scale kind) of the problem's GPU MODE distribution.
    """
    check_dist(dist)
    sf_k = k // codec.SF_VEC_SIZE
    if dist == "competition":
        value_kind, scale_kind = competition
        values = [random_values(gen, l, r, k, value_kind) for r in rows]
        pairs = [competition_scales(gen, l, r, sf_k, scale_kind) for r in rows]
    elif dist == "mixed":
        values = [random_values(gen, l, r, k, "all") for r in rows]
        shift = MIXED_DUAL_SHIFT if len(rows) > 2 else 0
        pairs = [mixed_scales(gen, l, r, sf_k, MIXED_BINADES[0] - shift) for r in rows]
    elif dist == "realistic":
        xs, _ = realistic_data(gen, l, k, rows)
        quantised = [realistic_quantised(x, r, k) for x, r in zip(xs, rows)]
        values = [q[0] for q in quantised]
        pairs = [q[1:] for q in quantised]
    else:
        values = [random_values(gen, l, r, k, "all") for r in rows]
        binade_a, binades_b = general_binades(gen, l, sf_k, general_offsets(k, len(rows) - 1))
        pairs = [general_scales(gen, r, sf_k, b) for r, b in zip(rows, [binade_a, *binades_b])]
    return values, [p[0] for p in pairs], [p[1] for p in pairs]
