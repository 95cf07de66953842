"""The NVFP4 codec: e2m1 values, e4m3 block scales, and the two scale layouts.

This is the one home of the format. Everything else (problems, harness, tests) imports it.

Format (GPU MODE ``nvfp4_*`` problems, identical to ``torch.float4_e2m1fn_x2``):
- values are e2m1 (1 sign, 2 exponent, 1 mantissa bit), two per byte, element ``2i`` in the
  low nibble and ``2i+1`` in the high nibble of byte ``i``;
- one ``torch.float8_e4m3fn`` scale per ``SF_VEC_SIZE`` (16) consecutive K elements;
- K-major, the batch dim L last: tensors are ``permute(1, 2, 0)`` views of contiguous
  ``(L, rows, cols)`` storage.

Scale layouts:
- plain: ``[rows, K/16, L]``;
- permuted ("blocked", CuTe/cuBLAS): shape ``(32, 4, ceil(rows/128), 4, ceil(K/64), L)``; row ``i``
  and scale column ``j`` land at ``[i % 32, (i % 128) // 32, i // 128, j % 4, j // 4, l]``;
- ``to_blocked``: cuBLAS's flattened order of one ``[rows, K/16]`` matrix, 128x4 tiles laid out
  tile-row-major, each tile as 32 rows of 16 bytes (row r holds tile rows r, r+32, r+64, r+96).
"""

from __future__ import annotations

import functools

import torch

SF_VEC_SIZE = 16  # K elements per e4m3 scale
ROW_ATOM = (32, 4)  # rows of one 128-row scale tile: 32 x 4
K_ATOM = 4  # scale columns (of 16 K each) per tile

# The 16 e2m1 code points, index = 4-bit code (bit 3 is the sign).
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
               -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)

E2M1_MAX = 6.0
E4M3_MAX = 448.0
E4M3_MIN_EXP = -9  # 2^-9 is the smallest positive (subnormal) e4m3 value
E4M3_MIN_NORMAL_EXP = -6  # 2^-6 is the smallest normal e4m3 value
E4M3_MAX_EXP = 8  # 448 = 1.75 * 2^8
E4M3_MANTISSA_BITS = 3

# Midpoints between consecutive e2m1 magnitudes 0, .5, 1, 1.5, 2, 3, 4, 6. A value exactly on
# midpoint i lies between magnitude codes i and i + 1 and goes to the even one: up when i is odd.
_E2M1_MIDPOINTS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)


def ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


def _lut(dtype: torch.dtype, device) -> torch.Tensor:
    return torch.tensor(E2M1_VALUES, dtype=dtype, device=device)


def unpack_e2m1_codes(packed: torch.Tensor) -> torch.Tensor:
    """``[..., K/2]`` bytes (any 1-byte dtype) -> ``[..., K]`` uint8 codes in 0..15."""
    raw = packed.view(torch.uint8)
    low = raw & 0x0F
    high = raw >> 4
    return torch.stack((low, high), dim=-1).flatten(-2)


def pack_e2m1_codes(codes: torch.Tensor) -> torch.Tensor:
    """``[..., K]`` codes in 0..15 -> ``[..., K/2]`` uint8, element 2i in the low nibble."""
    if codes.shape[-1] % 2:
        raise ValueError(f"K must be even to pack e2m1 pairs, got {codes.shape[-1]}")
    c = codes.to(torch.uint8)
    return (c[..., 0::2] & 0x0F) | ((c[..., 1::2] & 0x0F) << 4)


def decode_e2m1(packed: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Packed e2m1 ``[..., K/2]`` -> values ``[..., K]`` in ``dtype`` (exact in any float type)."""
    codes = unpack_e2m1_codes(packed.contiguous() if packed.dim() else packed)
    return _lut(dtype, packed.device)[codes.long()]


def decode_e4m3(scales: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """e4m3 scales (float8_e4m3fn or their uint8 bits) -> ``dtype`` (exact in fp32/fp64)."""
    if scales.dtype != torch.float8_e4m3fn:
        scales = scales.view(torch.float8_e4m3fn)
    return scales.to(torch.float32).to(dtype)


def dequantize(values: torch.Tensor, scales: torch.Tensor,
               dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """One operand ``[rows, K/2]`` (+ scales ``[rows, K/16]``) -> ``[rows, K]`` in ``dtype``.

    Each product e2m1 x e4m3 has at most 6 significant bits, so it is exact in fp32, fp64 and also
    bf16/fp16 where the exponent range allows.
    NOTE: looked up, not computed: each value byte and its block's scale byte index
    :func:`_products`, the two products of that pair made once per dtype and device by the very
    multiplication (decoded value times decoded scale, in ``dtype``) this function used to make per
    element, so every result is that product bit for bit (a NaN scale's NaN aside, whose payload the
    multiplication's kernel chooses). Decoded first (codes, an int64 index, a
    gather, the scales repeated 16 times, the product: ~70 bytes of traffic and ~12 ops an element
    in float64), group_gemm B's exact reference took 30 ms a set on an H200 (issue 49, first use
    included); looked up, ~12 bytes and 3 ops (CPU, a 7168 x 2048 float64 operand, one run: 199 -> 86 ms).
    """
    v = values.view(torch.uint8)
    s = scales if scales.dtype == torch.uint8 else scales.view(torch.uint8)
    k = v.shape[-1] * 2
    if s.shape[-1] * SF_VEC_SIZE != k:
        raise ValueError(f"{s.shape[-1]} scale columns do not cover K={k} in blocks of {SF_VEC_SIZE}")
    blocks = v.reshape(*v.shape[:-1], s.shape[-1], SF_VEC_SIZE // 2)
    # index 256 * value byte + scale byte, in int32 (an int64 index would double the traffic)
    index = torch.add(s.to(torch.int32).unsqueeze(-1), blocks, alpha=256)
    looked_up = _products(dtype, v.device).index_select(0, index.reshape(-1))
    return looked_up.view(dtype).view(*index.shape[:-2], k)


# NOTE: a pair of values moves as one element (CPU: index_select of 16-byte elements took half the
# time of 2-element rows of float64, 76 against 164 ms for 7.3 M bytes)
_PAIR_DTYPES = {16: torch.complex128, 8: torch.int64, 4: torch.int32, 2: torch.int16}


@functools.lru_cache(maxsize=None)
def _products(dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``[65536]`` pairs: element ``256 * byte + scale`` holds the byte's low and high e2m1 values
    times the e4m3 ``scale``, each multiplied in ``dtype`` on ``device`` (what :func:`dequantize`
    returns for that pair), the two as one element of twice ``dtype``'s width."""
    codes = unpack_e2m1_codes(torch.arange(256, dtype=torch.uint8, device=device)).view(256, 2)
    values = _lut(dtype, device)[codes.long()]  # [byte, nibble]
    scales = decode_e4m3(torch.arange(256, dtype=torch.uint8, device=device), dtype)
    products = (values.view(256, 1, 2) * scales.view(1, 256, 1)).reshape(65536, 2)
    return products.view(_PAIR_DTYPES[2 * products.element_size()]).reshape(65536)


# ---------------------------------------------------------------------------------------------
# Quantisation (the standard NVFP4 recipe, global scale already folded into the data)
# ---------------------------------------------------------------------------------------------

def round_to_e4m3(v: torch.Tensor) -> torch.Tensor:
    """Non-negative finite values -> the nearest e4m3 (ties to even), saturating at 448.

    Returns ``float8_e4m3fn``. Rounds in float64 with an explicit quantum, because torch's cast
    goes through fp32 and a double rounding (float64 -> fp32 -> e4m3) can land on an e4m3 tie the
    exact value is not on. Values below half the smallest subnormal (2^-10) round to 0.
    """
    v = v.to(torch.float64)
    if bool((v < 0).any()) or not bool(torch.isfinite(v).all()):
        raise ValueError("round_to_e4m3 takes finite non-negative values")
    _, exp = torch.frexp(v)  # v = m * 2^exp, m in [0.5, 1): binade 2^(exp - 1); exact, unlike log2
    # Subnormals share the smallest normal binade's quantum 2^-9.
    binade = torch.clamp(exp - 1, min=E4M3_MIN_NORMAL_EXP)
    quantum = torch.ldexp(torch.ones_like(v), binade - E4M3_MANTISSA_BITS)
    rounded = torch.round(v / quantum) * quantum  # v / quantum is exact; torch.round is half-to-even
    return torch.clamp(rounded, max=E4M3_MAX).to(torch.float32).to(torch.float8_e4m3fn)


def quantize_nvfp4(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The standard NVFP4 recipe on ``x [..., K]`` (finite fp32, K a multiple of 16), global scale 1.

    Per 16 consecutive elements along K: ``scale = round_to_e4m3(amax / 6)`` (nearest, ties to
    even, saturating at 448); each element ``x / scale`` rounded to the nearest e2m1 (ties to
    even), clamped to +-6, sign kept (small negatives give -0). A block whose scale rounds to 0
    (amax < 6 * 2^-10, all-zero blocks included) gets scale 0 and zero codes: it decodes to 0,
    like every block, finite. Returns ``(packed uint8 [..., K/2], scales float8_e4m3fn [..., K/16])``.
    A caller folding a per-tensor global scale multiplies it into ``x`` first.
    """
    if x.dtype != torch.float32:
        raise ValueError(f"quantize_nvfp4 takes float32, got {x.dtype}")
    k = x.shape[-1]
    if k % SF_VEC_SIZE:
        raise ValueError(f"K={k} is not a multiple of {SF_VEC_SIZE}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("quantize_nvfp4 takes finite values")
    blocks = x.reshape(*x.shape[:-1], k // SF_VEC_SIZE, SF_VEC_SIZE)
    mag = blocks.abs()
    # amax / 6 in float64 is within 2^-53 of exact, so it cannot fall on an e4m3 tie it is not on.
    scales = round_to_e4m3(mag.amax(dim=-1).to(torch.float64) / E2M1_MAX)
    s = scales.to(torch.float32).unsqueeze(-1)
    # Compare |x| with midpoint * scale rather than rounding |x| / scale: the products have at most
    # 3 + 4 significant bits and are exact in fp32, so every decision (ties included) is exact.
    code = torch.zeros(mag.shape, dtype=torch.uint8, device=x.device)
    for i, mid in enumerate(_E2M1_MIDPOINTS):
        edge = mid * s
        code += (mag >= edge) if i % 2 else (mag > edge)
    code = torch.where(s > 0, code, torch.zeros_like(code))  # scale 0: nothing to divide by
    code |= (blocks < 0).to(torch.uint8) << 3
    return pack_e2m1_codes(code.reshape(x.shape)), scales


# ---------------------------------------------------------------------------------------------
# Scale layouts
# ---------------------------------------------------------------------------------------------

def permuted_shape(rows: int, sf_k: int, l: int) -> tuple[int, ...]:
    return (ROW_ATOM[0], ROW_ATOM[1], ceil_div(rows, 128), K_ATOM, ceil_div(sf_k, K_ATOM), l)


def to_permuted(sf: torch.Tensor, fill: torch.Tensor | None = None) -> torch.Tensor:
    """Plain ``[rows, K/16, L]`` scales -> the ``(32, 4, rest_m, 4, rest_k, L)`` blocked tensor.

    The result is a ``permute(3, 4, 1, 5, 2, 0)`` view of contiguous
    ``(L, rest_m, rest_k, 32, 4, 4)`` storage, like GPU MODE's. Slots past ``rows`` or ``K/16``
    (padding) take ``fill`` (same shape as the result) when given, else zero.
    """
    rows, sf_k, l = sf.shape
    rest_m, rest_k = ceil_div(rows, 128), ceil_div(sf_k, K_ATOM)
    if rows % 128 == 0 and sf_k % K_ATOM == 0:
        # NOTE: no padding slot, so one permuting copy: row i = 128 rm + 32 q + r and column
        # j = 4 rk + c land at storage [b, rm, rk, r, q, c]. (The indexed store below takes ~11 ops;
        # input generation makes two permuted tensors per operand, 176 ops a group_gemm B set.)
        tiles = sf.view(torch.uint8).permute(2, 0, 1).reshape(l, rest_m, ROW_ATOM[1], ROW_ATOM[0], rest_k, K_ATOM)
        raw = tiles.permute(0, 1, 4, 3, 2, 5).contiguous()
        return raw.permute(3, 4, 1, 5, 2, 0).view(torch.float8_e4m3fn)
    storage_shape = (l, rest_m, rest_k, ROW_ATOM[0], ROW_ATOM[1], K_ATOM)
    raw = torch.zeros(storage_shape, dtype=torch.uint8, device=sf.device)
    out = raw.permute(3, 4, 1, 5, 2, 0)
    if fill is not None:
        out.copy_(fill.view(torch.uint8))
    i = torch.arange(rows, device=sf.device).view(rows, 1, 1)
    j = torch.arange(sf_k, device=sf.device).view(1, sf_k, 1)
    b = torch.arange(l, device=sf.device).view(1, 1, l)
    out[i % 32, (i % 128) // 32, i // 128, j % 4, j // 4, b] = sf.view(torch.uint8)
    return out.view(torch.float8_e4m3fn)


def from_permuted(perm: torch.Tensor, rows: int, sf_k: int) -> torch.Tensor:
    """Inverse of :func:`to_permuted`: -> plain ``[rows, K/16, L]`` (contiguous (L, rows, K/16))."""
    l = perm.shape[-1]
    i = torch.arange(rows, device=perm.device).view(rows, 1, 1)
    j = torch.arange(sf_k, device=perm.device).view(1, sf_k, 1)
    b = torch.arange(l, device=perm.device).view(1, 1, l)
    plain = perm.view(torch.uint8)[i % 32, (i % 128) // 32, i // 128, j % 4, j // 4, b]
    return plain.permute(2, 0, 1).contiguous().permute(1, 2, 0).view(torch.float8_e4m3fn)


def to_blocked(sf: torch.Tensor) -> torch.Tensor:
    """cuBLAS's flattened block-scaling layout of one ``[rows, K/16]`` matrix (zero padded)."""
    rows, cols = sf.shape
    n_row_blocks, n_col_blocks = ceil_div(rows, 128), ceil_div(cols, K_ATOM)
    raw = sf.view(torch.uint8)
    padded = torch.zeros((n_row_blocks * 128, n_col_blocks * K_ATOM), dtype=torch.uint8, device=sf.device)
    padded[:rows, :cols] = raw
    tiles = padded.view(n_row_blocks, 128, n_col_blocks, K_ATOM).permute(0, 2, 1, 3)
    # Within a 128x4 tile: 4 groups of 32 rows; output row r = [tile rows r, r+32, r+64, r+96] x 4.
    out = tiles.reshape(-1, 4, 32, K_ATOM).transpose(1, 2).reshape(-1, 32, 16)
    return out.flatten().view(torch.float8_e4m3fn)


# ---------------------------------------------------------------------------------------------
# Batched layout helpers
# ---------------------------------------------------------------------------------------------

def batched(storage: torch.Tensor) -> torch.Tensor:
    """Contiguous ``(L, rows, cols)`` storage -> the ``[rows, cols, L]`` view the problems use."""
    return storage.permute(1, 2, 0)


def e4m3_from_bits(bits: torch.Tensor) -> torch.Tensor:
    return bits.to(torch.uint8).view(torch.float8_e4m3fn)


def e4m3_code_range(exponent: int) -> tuple[int, int]:
    """Bit codes ``[lo, hi]`` of the positive e4m3 values in ``[2^exponent, 2^(exponent+1))``.

    Covers subnormal binades (-9..-7, fewer codes) and the largest normal binade, which stops at
    448 (code 0x7E; 0x7F is NaN).
    """
    if not E4M3_MIN_EXP <= exponent <= E4M3_MAX_EXP:
        raise ValueError(f"e4m3 has no positive values in binade 2^{exponent}")
    if exponent < -6:  # subnormal: value = code * 2^-9
        lo = 1 << (exponent - E4M3_MIN_EXP)
        return lo, 2 * lo - 1
    lo = (exponent + 7) << 3
    return lo, min(lo + 7, 0x7E)
