"""reference.codec: e2m1 / e4m3 values, packing, dequantisation and the two scale layouts,
each checked against an independent definition (bit fields, explicit loops)."""

from __future__ import annotations

import math

import pytest
import torch

from reference import codec


# ------------------------------------------------------------------------------ independent defs

def e2m1_from_bits(code: int) -> float:
    """e2m1: 1 sign, 2 exponent (bias 1), 1 mantissa bit; exponent 0 is subnormal (m * 0.5)."""
    sign = -1.0 if code & 0x8 else 1.0
    exp = (code >> 1) & 0x3
    man = code & 0x1
    mag = man * 0.5 if exp == 0 else 2.0 ** (exp - 1) * (1 + man / 2)
    return math.copysign(mag, sign)


def e4m3_from_bits(bits: int) -> float:
    """e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; S.1111.111 is NaN, no infinities."""
    sign = -1.0 if bits & 0x80 else 1.0
    exp = (bits >> 3) & 0xF
    man = bits & 0x7
    if exp == 0xF and man == 0x7:
        return float("nan")
    mag = man * 2.0 ** -9 if exp == 0 else 2.0 ** (exp - 7) * (1 + man / 8)
    return math.copysign(mag, sign)


def same_float(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


# ------------------------------------------------------------------------------------- e2m1

def test_e2m1_values_match_bit_definition():
    assert len(codec.E2M1_VALUES) == 16
    for code, value in enumerate(codec.E2M1_VALUES):
        assert same_float(value, e2m1_from_bits(code)), (code, value)


def test_e2m1_values_exact_in_torch_float8_and_float16():
    vals = torch.tensor(codec.E2M1_VALUES, dtype=torch.float64)
    for dtype in (torch.float8_e4m3fn, torch.float8_e5m2, torch.float16, torch.bfloat16, torch.float32):
        back = vals.to(dtype).to(torch.float64)
        assert torch.equal(back, vals), dtype
        assert torch.equal(torch.signbit(back), torch.signbit(vals)), dtype  # -0.0 stays negative


def test_float4_dtype_is_one_byte_per_pair():
    # torch.float4_e2m1fn_x2 has no arithmetic; what we rely on is a 1-byte container viewable as uint8.
    x = torch.arange(256, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    assert x.element_size() == 1
    assert torch.equal(x.view(torch.uint8), torch.arange(256, dtype=torch.uint8))


def test_decode_e2m1_all_bytes():
    packed = torch.arange(256, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    got = codec.decode_e2m1(packed, torch.float64)
    assert got.shape == (512,)
    for byte in range(256):
        assert same_float(float(got[2 * byte]), e2m1_from_bits(byte & 0xF))
        assert same_float(float(got[2 * byte + 1]), e2m1_from_bits(byte >> 4))


# ------------------------------------------------------------------------------------- e4m3

def test_decode_e4m3_all_256_patterns_vs_torch_and_bits():
    bits = torch.arange(256, dtype=torch.uint8)
    got = codec.decode_e4m3(bits)
    assert got.dtype == torch.float32
    torch_vals = bits.view(torch.float8_e4m3fn).to(torch.float32)
    for b in range(256):
        g, t, ind = float(got[b]), float(torch_vals[b]), e4m3_from_bits(b)
        assert same_float(g, t), (b, g, t)
        assert same_float(g, ind), (b, g, ind)
    nan_codes = [b for b in range(256) if math.isnan(float(got[b]))]
    assert nan_codes == [0x7F, 0xFF]
    assert float(got[0x7E]) == codec.E4M3_MAX == 448.0
    assert float(got[0x01]) == 2.0 ** codec.E4M3_MIN_EXP
    # float8 input gives the same as its bits; float64 output is exact too
    assert torch.equal(codec.decode_e4m3(bits.view(torch.float8_e4m3fn), torch.float64)[:0x7F],
                       torch.tensor([e4m3_from_bits(b) for b in range(0x7F)], dtype=torch.float64))


@pytest.mark.parametrize("exponent", range(codec.E4M3_MIN_EXP, codec.E4M3_MAX_EXP + 1))
def test_e4m3_code_range_binade(exponent):
    lo, hi = codec.e4m3_code_range(exponent)
    assert 1 <= lo <= hi <= 0x7E
    for code in range(lo, hi + 1):
        v = e4m3_from_bits(code)
        assert 2.0 ** exponent <= v < 2.0 ** (exponent + 1), (exponent, code, v)
    # maximal: the neighbouring codes are outside this binade (or not positive finite values)
    if lo - 1 >= 1:
        assert e4m3_from_bits(lo - 1) < 2.0 ** exponent
    if hi + 1 <= 0x7E:
        assert e4m3_from_bits(hi + 1) >= 2.0 ** (exponent + 1)


def test_e4m3_code_ranges_partition_positive_finite_codes():
    covered = []
    for e in range(codec.E4M3_MIN_EXP, codec.E4M3_MAX_EXP + 1):
        lo, hi = codec.e4m3_code_range(e)
        covered.extend(range(lo, hi + 1))
    assert covered == list(range(1, 0x7F))  # every positive finite code once, in order
    assert codec.e4m3_code_range(8) == (0x78, 0x7E)  # stops at 448, 0x7F is NaN
    assert codec.e4m3_code_range(-9) == (1, 1)
    for bad in (codec.E4M3_MIN_EXP - 1, codec.E4M3_MAX_EXP + 1):
        with pytest.raises(ValueError):
            codec.e4m3_code_range(bad)


# ------------------------------------------------------------------------------------ packing

def test_pack_low_nibble_is_even_element():
    codes = torch.tensor([0x1, 0x2, 0xF, 0x0, 0x7, 0x9], dtype=torch.uint8)
    packed = codec.pack_e2m1_codes(codes)
    assert packed.tolist() == [0x21, 0x0F, 0x97]
    assert codec.unpack_e2m1_codes(packed).tolist() == codes.tolist()


def test_pack_unpack_round_trip():
    gen = torch.Generator().manual_seed(0)
    codes = torch.randint(0, 16, (3, 5, 34), dtype=torch.uint8, generator=gen)
    packed = codec.pack_e2m1_codes(codes)
    assert packed.shape == (3, 5, 17) and packed.dtype == torch.uint8
    assert torch.equal(codec.unpack_e2m1_codes(packed), codes)
    raw = torch.randint(0, 256, (4, 9), dtype=torch.uint8, generator=gen)
    assert torch.equal(codec.pack_e2m1_codes(codec.unpack_e2m1_codes(raw)), raw)
    # the fp4 container unpacks the same as its bytes
    assert torch.equal(codec.unpack_e2m1_codes(raw.view(torch.float4_e2m1fn_x2)), codec.unpack_e2m1_codes(raw))
    with pytest.raises(ValueError):
        codec.pack_e2m1_codes(torch.zeros(3, dtype=torch.uint8))


def test_dequantize_matches_loops():
    gen = torch.Generator().manual_seed(1)
    rows, k = 3, 48
    raw = torch.randint(0, 256, (rows, k // 2), dtype=torch.uint8, generator=gen)
    sbits = torch.randint(0, 0x7F, (rows, k // 16), dtype=torch.uint8, generator=gen)
    got = codec.dequantize(raw.view(torch.float4_e2m1fn_x2), sbits.view(torch.float8_e4m3fn), torch.float64)
    assert got.shape == (rows, k)
    for r in range(rows):
        for j in range(k):
            byte = int(raw[r, j // 2])
            code = byte & 0xF if j % 2 == 0 else byte >> 4
            expect = e2m1_from_bits(code) * e4m3_from_bits(int(sbits[r, j // 16]))
            assert float(got[r, j]) == expect, (r, j)
    with pytest.raises(ValueError):
        codec.dequantize(raw.view(torch.float4_e2m1fn_x2), sbits[:, :2].view(torch.float8_e4m3fn))


def dequantize_as_it_was(values, scales, dtype):
    """reference.codec.dequantize before the lookup (cc6bc1c): decode, repeat the scales, multiply."""
    v = codec.decode_e2m1(values, dtype)
    s = codec.decode_e4m3(scales, dtype)
    return v * s.repeat_interleave(codec.SF_VEC_SIZE, dim=-1)


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bits as integers (NaN payloads and the sign of zero included)."""
    return t.view({8: torch.int64, 4: torch.int32, 2: torch.int16}[t.element_size()])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_dequantize_gives_the_product_it_computed_before_for_every_byte_and_scale(dtype):
    """Every (value byte, scale byte) pair, 65536 of them, NaN scales and negative ones included:
    the lookup returns the bits the decode-and-multiply returned (a NaN's payload aside: the
    multiplication's own kernels choose it, bf16's differ between two CPU paths), so it does for any
    operand."""
    raw = torch.arange(256, dtype=torch.uint8).repeat_interleave(8).view(32, 64)  # row r: bytes 8r .. 8r + 7
    raw = raw.repeat(256, 1)  # [8192, 64]: every byte once in each of 256 rows' 8-byte blocks
    scales = torch.arange(256, dtype=torch.uint8).repeat_interleave(32).view(8192, 1).repeat(1, 8)
    got = codec.dequantize(raw.view(torch.float4_e2m1fn_x2), scales.view(torch.float8_e4m3fn), dtype)
    want = dequantize_as_it_was(raw.view(torch.float4_e2m1fn_x2), scales.view(torch.float8_e4m3fn), dtype)
    assert got.dtype == dtype and got.shape == (8192, 128) and got.is_contiguous()
    nan = torch.isnan(want)
    assert torch.equal(torch.isnan(got), nan) and int(nan.sum()) == 2 * 32 * 128  # the two NaN scale codes' rows
    assert torch.equal(_bits(got)[~nan], _bits(want)[~nan])


def test_dequantize_broadcasts_and_refuses_as_before():
    gen = torch.Generator().manual_seed(3)
    raw = torch.randint(0, 256, (2, 5, 24), dtype=torch.uint8, generator=gen)[:, :, :16]  # batched, not contiguous
    scales = torch.randint(0, 0x7F, (1, 5, 2), dtype=torch.uint8, generator=gen)  # broadcast over the batch
    got = codec.dequantize(raw, scales, torch.float64)
    assert torch.equal(got, dequantize_as_it_was(raw, scales, torch.float64)) and got.shape == (2, 5, 32)
    assert codec.dequantize(raw[:, :0], scales[:, :0], torch.float64).shape == (2, 0, 32)
    with pytest.raises(ValueError, match="do not cover K=32"):
        codec.dequantize(raw, scales[:, :, :1])


@pytest.mark.parametrize("dist", ["competition", "general", "realistic", "mixed"])
def test_exact_references_are_the_same_bits_on_every_distribution(dist, monkeypatch):
    """Each problem's exact reference (float64 sums, then fp16) and its unrounded float64 product,
    with the lookup and with the decode-and-multiply: equal bit for bit."""
    from reference import exact, problem_module
    shapes = {"gemv": dict(m=40, k=256, l=2), "gemm": dict(m=24, n=40, k=512, l=2),
              "dual_gemm": dict(m=24, n=40, k=256, l=1), "group_gemm": dict(m=[24, 8], n=[40, 128], k=[256, 512], g=2)}
    for problem, params in shapes.items():
        mod = problem_module(problem)
        data = mod.generate_input(**params, seed=7, dist=dist, device="cpu")
        a, b, sfa, sfb = (data[0][0][0], data[0][0][1], data[1][0][0], data[1][0][1]) if problem == "group_gemm" \
            else (data[0], data[1], data[2 if problem != "dual_gemm" else 3], data[3 if problem != "dual_gemm" else 4])
        looked_up = (mod.ref_kernel(data), exact.matmul_nt(a, sfa, b, sfb, 0))
        with monkeypatch.context() as patch:
            patch.setattr(codec, "dequantize", dequantize_as_it_was)
            decoded = (mod.ref_kernel(data), exact.matmul_nt(a, sfa, b, sfb, 0))
        for new, old in zip(flat_tensors(looked_up), flat_tensors(decoded)):
            assert torch.equal(_bits(new), _bits(old)), (problem, dist)


def flat_tensors(obj) -> list:
    return [obj] if isinstance(obj, torch.Tensor) else [t for x in obj for t in flat_tensors(x)]


# ------------------------------------------------------------------------------------ layouts

def _random_plain(rows, sf_k, l, seed=0):
    gen = torch.Generator().manual_seed(seed)
    bits = torch.randint(1, 0x7F, (l, rows, sf_k), dtype=torch.uint8, generator=gen)
    return codec.batched(bits).view(torch.float8_e4m3fn)


@pytest.mark.parametrize("rows,sf_k,l", [(130, 5, 2), (37, 3, 1), (128, 4, 1), (257, 9, 3), (256, 8, 2)])
def test_to_permuted_formula_by_loops(rows, sf_k, l):
    sf = _random_plain(rows, sf_k, l)
    perm = codec.to_permuted(sf)
    shape = (32, 4, (rows + 127) // 128, 4, (sf_k + 3) // 4, l)
    assert tuple(perm.shape) == shape == codec.permuted_shape(rows, sf_k, l)
    assert perm.dtype == torch.float8_e4m3fn
    # GPU MODE's storage: a permute(3, 4, 1, 5, 2, 0) view of contiguous (L, rest_m, rest_k, 32, 4, 4)
    assert perm.permute(5, 2, 4, 0, 1, 3).is_contiguous()
    pb = perm.view(torch.uint8)
    sb = sf.view(torch.uint8)
    real = torch.zeros(shape, dtype=torch.bool)
    for i in range(rows):
        for j in range(sf_k):
            for b in range(l):
                idx = (i % 32, (i % 128) // 32, i // 128, j % 4, j // 4, b)
                assert int(pb[idx]) == int(sb[i, j, b]), (i, j, b)
                real[idx] = True
    assert int(real.sum()) == rows * sf_k * l  # the map is injective
    assert not pb[~real].any()  # padding is zero without fill
    back = codec.from_permuted(perm, rows, sf_k)
    assert back.shape == sf.shape
    assert torch.equal(back.view(torch.uint8), sb)
    assert back.permute(2, 0, 1).is_contiguous()


def test_permuted_tile_is_512_contiguous_bytes():
    """group_gemm v29 / v30 copy a 128-row x 64-K tile of scales as one 512-byte block from this offset."""
    rows, sf_k, l = 256, 8, 2
    sf = _random_plain(rows, sf_k, l, seed=5)
    perm = codec.to_permuted(sf)
    flat = perm.view(torch.uint8).permute(5, 2, 4, 0, 1, 3).reshape(-1)
    rest_m, rest_k = rows // 128, sf_k // 4
    sb = sf.view(torch.uint8)
    for i in range(rows):
        for j in range(sf_k):
            for b in range(l):
                offset = ((b * rest_m + i // 128) * rest_k + j // 4) * 512 + (i % 32) * 16 + ((i % 128) // 32) * 4 + j % 4
                assert int(flat[offset]) == int(sb[i, j, b]), (i, j, b)


def test_to_permuted_fill_keeps_padding():
    rows, sf_k, l = 130, 5, 2
    sf = _random_plain(rows, sf_k, l, seed=3)
    shape = codec.permuted_shape(rows, sf_k, l)
    fill = torch.full(shape, 0x55, dtype=torch.uint8).view(torch.float8_e4m3fn)
    perm = codec.to_permuted(sf, fill=fill).view(torch.uint8)
    plain = codec.to_permuted(sf).view(torch.uint8)
    real = torch.zeros(shape, dtype=torch.bool)
    i = torch.arange(rows).view(rows, 1, 1)
    j = torch.arange(sf_k).view(1, sf_k, 1)
    b = torch.arange(l).view(1, 1, l)
    real[i % 32, (i % 128) // 32, i // 128, j % 4, j // 4, b] = True
    assert torch.equal(perm[real], plain[real])
    assert bool((perm[~real] == 0x55).all())


def blocked_by_loops(sf_bits: torch.Tensor) -> torch.Tensor:
    """cuBLAS block-scaling layout: tile (rb, cb) of 128x4 at (rb*n_col_blocks + cb)*512;
    in a tile, row r and column c at (r % 32)*16 + (r // 32)*4 + c; zero padding."""
    rows, cols = sf_bits.shape
    nrb, ncb = (rows + 127) // 128, (cols + 3) // 4
    out = [0] * (nrb * ncb * 512)
    for i in range(rows):
        for j in range(cols):
            rb, r = divmod(i, 128)
            cb, c = divmod(j, 4)
            out[(rb * ncb + cb) * 512 + (r % 32) * 16 + (r // 32) * 4 + c] = int(sf_bits[i, j])
    return torch.tensor(out, dtype=torch.uint8)


@pytest.mark.parametrize("rows,cols", [(130, 5), (128, 4), (37, 3), (300, 10)])
def test_to_blocked_matches_cublas_layout_loops(rows, cols):
    sf = _random_plain(rows, cols, 1, seed=rows)[:, :, 0]
    got = codec.to_blocked(sf)
    assert got.dtype == torch.float8_e4m3fn and got.dim() == 1
    assert torch.equal(got.view(torch.uint8), blocked_by_loops(sf.view(torch.uint8)))
    # the permuted tensor's storage is the same byte order (one batch)
    perm = codec.to_permuted(sf.unsqueeze(-1))
    storage = perm.view(torch.uint8).permute(5, 2, 4, 0, 1, 3).flatten()
    assert torch.equal(storage, got.view(torch.uint8))


def test_batched_view():
    storage = torch.arange(2 * 3 * 4).view(2, 3, 4)
    b = codec.batched(storage)
    assert b.shape == (3, 4, 2)
    assert b[1, 2, 1] == storage[1, 1, 2]
    assert codec.ceil_div(129, 128) == 2 and codec.ceil_div(128, 128) == 1
