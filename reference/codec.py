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

import torch

SF_VEC_SIZE = 16  # K elements per e4m3 scale
ROW_ATOM = (32, 4)  # rows of one 128-row scale tile: 32 x 4
K_ATOM = 4  # scale columns (of 16 K each) per tile

# The 16 e2m1 code points, index = 4-bit code (bit 3 is the sign).
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
               -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)

E4M3_MAX = 448.0
E4M3_MIN_EXP = -9  # 2^-9 is the smallest positive (subnormal) e4m3 value
E4M3_MAX_EXP = 8  # 448 = 1.75 * 2^8


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
    """
    v = decode_e2m1(values, dtype)
    s = decode_e4m3(scales, dtype)
    k = v.shape[-1]
    if s.shape[-1] * SF_VEC_SIZE != k:
        raise ValueError(f"{s.shape[-1]} scale columns do not cover K={k} in blocks of {SF_VEC_SIZE}")
    return v * s.repeat_interleave(SF_VEC_SIZE, dim=-1)


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
