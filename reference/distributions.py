"""Random NVFP4 operands in the two input distributions every kernel must be exact for.

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
"""

from __future__ import annotations

import math

import torch

from reference import codec

DISTS = ("competition", "general")

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
    else:
        values = [random_values(gen, l, r, k, "all") for r in rows]
        binade_a, binades_b = general_binades(gen, l, sf_k, general_offsets(k, len(rows) - 1))
        pairs = [general_scales(gen, r, sf_k, b) for r, b in zip(rows, [binade_a, *binades_b])]
    return values, [p[0] for p in pairs], [p[1] for p in pairs]
