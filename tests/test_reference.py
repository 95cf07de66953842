"""The reference kernels against an independent float64 brute force, and check()'s verdicts."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from reference import checking, problem_module

CPU = torch.device("cpu")


# --------------------------------------------------------------------- independent brute force

def _e2m1(code: int) -> float:
    sign = -1.0 if code & 8 else 1.0
    e, m = (code >> 1) & 3, code & 1
    return sign * (m * 0.5 if e == 0 else 2.0 ** (e - 1) * (1 + m / 2))


def _e4m3(bits: int) -> float:
    sign = -1.0 if bits & 0x80 else 1.0
    e, m = (bits >> 3) & 0xF, bits & 7
    if e == 0xF and m == 7:
        return math.nan
    return sign * (m * 2.0 ** -9 if e == 0 else 2.0 ** (e - 7) * (1 + m / 8))


# LUTs built from the bit definitions above, not from reference.codec
E2M1_LO = np.array([_e2m1(b & 0xF) for b in range(256)])
E2M1_HI = np.array([_e2m1(b >> 4) for b in range(256)])
E4M3 = np.array([_e4m3(b) for b in range(256)])


def raw_bytes(t: torch.Tensor) -> np.ndarray:
    """[rows, cols] (one batch) -> numpy uint8 bytes."""
    return t.view(torch.uint8).contiguous().numpy()


def decode_operand(values: torch.Tensor, scales: torch.Tensor) -> np.ndarray:
    """One batch [rows, K/2] + [rows, K/16] -> float64 [rows, K]."""
    vb, sb = raw_bytes(values), raw_bytes(scales)
    rows, half = vb.shape
    out = np.empty((rows, 2 * half))
    out[:, 0::2] = E2M1_LO[vb]
    out[:, 1::2] = E2M1_HI[vb]
    return out * np.repeat(E4M3[sb], 16, axis=1)


def brute_nt(a, sfa, b, sfb, l_idx, b_rows=None) -> np.ndarray:
    A = decode_operand(a[:, :, l_idx], sfa[:, :, l_idx])
    B = decode_operand(b[:, :, l_idx], sfb[:, :, l_idx])
    if b_rows is not None:
        B = B[:b_rows]
    out = np.zeros((A.shape[0], B.shape[0]))
    for kk in range(A.shape[1]):  # plain float64 accumulation, one K step at a time
        out += np.outer(A[:, kk], B[:, kk])
    return out


def to_fp16(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(x).to(torch.float16)


def brute_force(problem, data):
    if problem == "gemm":
        a, b, sfa, sfb, _, _, c = data
        return torch.stack([to_fp16(brute_nt(a, sfa, b, sfb, l)) for l in range(c.shape[2])], dim=-1)
    if problem == "gemv":
        a, b, sfa, sfb, _, _, c = data
        return torch.stack([to_fp16(brute_nt(a, sfa, b, sfb, l, b_rows=1)) for l in range(c.shape[2])], dim=-1)
    if problem == "dual_gemm":
        a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
        outs = []
        for l in range(c.shape[2]):
            h1 = torch.from_numpy(brute_nt(a, sfa, b1, sfb1, l)).float()
            h2 = torch.from_numpy(brute_nt(a, sfa, b2, sfb2, l)).float()
            outs.append((torch.nn.functional.silu(h1) * h2).to(torch.float16))
        return torch.stack(outs, dim=-1)
    abc, sf, _, _ = data
    return [to_fp16(brute_nt(a, sfa, b, sfb, 0)).unsqueeze(-1) for (a, b, _), (sfa, sfb) in zip(abc, sf)]


SMALL = {
    "gemv": dict(m=5, k=128, l=2),
    "gemm": dict(m=5, n=7, k=128, l=2),
    "dual_gemm": dict(m=5, n=7, k=128, l=2),
    "group_gemm": dict(m=[5, 9], n=[7, 3], k=[256, 512], g=2),
}


def gen(problem, seed=1111, dist="competition", **params):
    return problem_module(problem).generate_input(**(params or SMALL[problem]), seed=seed, dist=dist, device=CPU)


def bits_equal(x: torch.Tensor, y: torch.Tensor) -> bool:
    return x.shape == y.shape and x.dtype == y.dtype and torch.equal(x.contiguous().view(torch.int16),
                                                                     y.contiguous().view(torch.int16))


@pytest.mark.parametrize("problem", list(SMALL))
@pytest.mark.parametrize("dist", ["competition", "general"])
@pytest.mark.parametrize("seed", [1111, 42])
def test_ref_kernel_matches_brute_force(problem, dist, seed):
    data = gen(problem, seed, dist)
    ref = problem_module(problem).ref_kernel(data)
    exp = brute_force(problem, data)
    if problem == "group_gemm":
        assert isinstance(ref, list) and len(ref) == len(exp)
        for r, e, (_, _, c) in zip(ref, exp, data[0]):
            assert r.stride() == c.stride()
            assert bits_equal(r, e)
    else:
        c = data[-1]
        assert ref.shape == c.shape and ref.dtype == torch.float16 and ref.stride() == c.stride()
        assert bits_equal(ref, exp), (ref - exp).abs().max()


def test_ref_kernel_larger_gemm_general():
    data = gen("gemm", 3, "general", m=33, n=20, k=1024, l=1)
    assert bits_equal(problem_module("gemm").ref_kernel(data), brute_force("gemm", data))


def test_ref_kernel_does_not_touch_inputs_or_c():
    data = gen("gemm")
    before = [t.clone() for t in data]
    problem_module("gemm").ref_kernel(data)
    for t, b in zip(data, before):
        if t.element_size() == 1:
            t, b = t.view(torch.uint8), b.view(torch.uint8)
        assert torch.equal(t, b)


def test_gemv_ignores_padding_rows_of_b():
    data = gen("gemv")
    a, b, sfa, sfb, pa, pb, c = data
    ref = problem_module("gemv").ref_kernel(data)
    b2 = b.clone()
    b2.view(torch.uint8)[1:] = 0x77
    ref2 = problem_module("gemv").ref_kernel((a, b2, sfa, sfb, pa, pb, c))
    assert torch.equal(ref, ref2)


def test_general_dist_fp32_sum_order_independent():
    """The general distribution's claim: the fp32 dot products are exact, so any summation order
    gives the same bits (here: forward and reversed sequential fp32 sums, fp32 sum, fp64)."""
    for seed in (1, 2, 3):
        a, b, sfa, sfb, _, _, c = gen("gemm", seed, "general", m=4, n=4, k=16384, l=1)
        A = torch.from_numpy(decode_operand(a[:, :, 0], sfa[:, :, 0]))
        B = torch.from_numpy(decode_operand(b[:, :, 0], sfb[:, :, 0]))
        terms64 = A[:, None, :] * B[None, :, :]  # exact products, [4, 4, K]
        terms32 = terms64.float()
        assert torch.equal(terms32.double(), terms64)  # each product exact in fp32
        fwd = torch.cumsum(terms32, dim=-1)  # sequential, forward
        rev = torch.cumsum(terms32.flip(-1), dim=-1)  # sequential, reversed
        exact_fwd = torch.cumsum(terms64, dim=-1)
        assert torch.equal(fwd.double(), exact_fwd)  # every prefix is exact in fp32
        assert torch.equal(fwd[..., -1], rev[..., -1])
        assert torch.equal(fwd[..., -1], terms32.sum(-1))
        assert torch.equal(fwd[..., -1].double(), terms64.sum(-1))
        ref = problem_module("gemm").ref_kernel((a, b, sfa, sfb, None, None, c))
        assert torch.equal(ref[:, :, 0], fwd[..., -1].to(torch.float16))


# ------------------------------------------------------------------------------------- check()

@pytest.fixture(scope="module")
def gemm_data():
    return gen("gemm", 1111, "competition", m=16, n=24, k=256, l=2)


def test_check_accepts_reference_output(gemm_data):
    mod = problem_module("gemm")
    ok, msg = mod.check(gemm_data, mod.ref_kernel(gemm_data))
    assert ok, msg


def test_check_accepts_result_written_into_c():
    mod = problem_module("gemm")
    data = gen("gemm", 5, "general", m=16, n=24, k=256, l=2)
    c = data[-1]
    c.copy_(mod.ref_kernel(data))
    ok, msg = mod.check(data, c)
    assert ok, msg


def test_check_rejects_one_element_off_by_one_percent(gemm_data):
    mod = problem_module("gemm")
    out = mod.ref_kernel(gemm_data)
    idx = tuple(int(i) for i in torch.unravel_index(out.float().abs().argmax(), out.shape))
    assert abs(float(out[idx])) > 1.0
    out[idx] = out[idx] * 1.01
    ok, msg = mod.check(gemm_data, out)
    assert not ok
    assert "1 of" in msg and "mismatch" in msg and str(idx) in msg


def test_check_rejects_nan(gemm_data):
    mod = problem_module("gemm")
    out = mod.ref_kernel(gemm_data)
    out[3, 5, 1] = float("nan")
    ok, msg = mod.check(gemm_data, out)
    assert not ok and "NaN" in msg
    ok, msg = mod.check(gemm_data, torch.full_like(out, float("nan")))
    assert not ok and "NaN" in msg


def test_check_rejects_inf(gemm_data):
    mod = problem_module("gemm")
    out = mod.ref_kernel(gemm_data)
    out[0, 0, 0] = float("inf")
    ok, _ = mod.check(gemm_data, out)
    assert not ok


def test_check_rejects_wrong_shape(gemm_data):
    mod = problem_module("gemm")
    out = mod.ref_kernel(gemm_data)
    ok, msg = mod.check(gemm_data, out[:, :-1, :])
    assert not ok and "shape" in msg
    ok, msg = mod.check(gemm_data, out[:, :, :1])
    assert not ok and "shape" in msg


def test_check_rejects_wrong_dtype(gemm_data):
    mod = problem_module("gemm")
    out = mod.ref_kernel(gemm_data)
    for dt in (torch.float32, torch.bfloat16):
        ok, msg = mod.check(gemm_data, out.to(dt))
        assert not ok and "dtype" in msg


def test_check_rejects_wrong_strides(gemm_data):
    mod = problem_module("gemm")
    out = mod.ref_kernel(gemm_data)
    ok, msg = mod.check(gemm_data, out.contiguous())  # [M, N, L] contiguous: strides differ from c
    assert not ok and "strides" in msg


def test_check_ignores_strides_of_size_one_dims():
    # L = 1: a contiguous [M, N] result unsqueezed to [M, N, 1] has c's memory layout exactly
    mod = problem_module("gemm")
    data = gen("gemm", 1, "competition", m=16, n=24, k=256, l=1)
    out = mod.ref_kernel(data)[:, :, 0].contiguous().unsqueeze(-1)
    assert out.stride() != data[-1].stride()
    ok, msg = mod.check(data, out)
    assert ok, msg
    # gemv: c is [M, 1, L]; the N = 1 dim's stride is free, the others are not
    mod = problem_module("gemv")
    data = gen("gemv", 1, "competition", m=16, k=256, l=2)
    ref = mod.ref_kernel(data)
    out = ref[:, 0, :].t().contiguous().t().unsqueeze(1)
    assert out.stride()[1] != data[-1].stride()[1]
    ok, msg = mod.check(data, out)
    assert ok, msg
    ok, msg = mod.check(data, ref[:, 0, :].contiguous().unsqueeze(1))  # [M, L] row-major: wrong layout
    assert not ok and "strides" in msg


def test_check_rejects_subclass_and_non_tensor(gemm_data):
    class Sneaky(torch.Tensor):
        pass

    mod = problem_module("gemm")
    out = mod.ref_kernel(gemm_data)
    ok, msg = mod.check(gemm_data, out.as_subclass(Sneaky))
    assert not ok and "plain torch.Tensor" in msg
    ok, msg = mod.check(gemm_data, out.tolist())
    assert not ok and "list" in msg
    ok, msg = mod.check(gemm_data, None)
    assert not ok


def test_check_rejects_constant_output(gemm_data):
    mod = problem_module("gemm")
    out = mod.ref_kernel(gemm_data)
    ok, _ = mod.check(gemm_data, torch.full_like(out, float(out.float().mean())))
    assert not ok
    # the guard itself: every element within tolerance of a constant, but the reference varies
    ref = torch.tensor([0.0, 1e-4, 2e-4, -3e-4], dtype=torch.float16)
    ok, msg = checking.compare(torch.zeros_like(ref), ref)
    assert not ok and "constant" in msg
    # a constant reference with a matching constant output is fine
    ok, msg = checking.compare(torch.ones(3, dtype=torch.float16), torch.ones(3, dtype=torch.float16))
    assert ok, msg


def test_check_rejects_output_aliasing_an_input():
    mod = problem_module("gemm")
    # m = n = 128, k = 512, L = 1: a's 128 x 256 bytes hold exactly one fp16 [128, 128, 1] output
    data = gen("gemm", 1111, "competition", m=128, n=128, k=512, l=1)
    ref = mod.ref_kernel(data)
    a, c = data[0], data[-1]
    storage = a.view(torch.uint8).permute(2, 0, 1)  # contiguous (1, 128, 256) bytes of a
    assert storage.is_contiguous()
    out = storage.view(torch.float16).permute(1, 2, 0)  # fp16 [128, 128, 1] over a's memory
    assert out.shape == c.shape and out.stride() == c.stride()
    out.copy_(ref)  # the right values, in an input's memory
    ok, msg = mod.check(data, out)
    assert not ok and "shares memory with an input" in msg


def test_overlaps():
    x = torch.zeros(100)
    assert checking.overlaps(x[:50], x[49:])
    assert not checking.overlaps(x[:50], x[50:])
    assert not checking.overlaps(x, torch.zeros(100))
    assert checking.overlaps(x[::2], x[1::2])  # interleaved views share a span


def test_compare_nan_and_inf_placement():
    ref = torch.tensor([1.0, float("nan"), float("inf"), -float("inf")], dtype=torch.float16)
    ok, msg = checking.compare(ref.clone(), ref)
    assert ok, msg
    bad = ref.clone()
    bad[2] = -float("inf")
    assert not checking.compare(bad, ref)[0]
    bad = ref.clone()
    bad[1] = 0.0
    assert not checking.compare(bad, ref)[0]


@pytest.mark.parametrize("problem", ["gemv", "dual_gemm"])
def test_check_other_problems(problem):
    mod = problem_module(problem)
    data = gen(problem)
    ref = mod.ref_kernel(data)
    assert mod.check(data, ref)[0]
    bad = ref.clone()
    idx = tuple(int(i) for i in torch.unravel_index(bad.float().abs().argmax(), bad.shape))
    bad[idx] = bad[idx] * 1.01
    assert not mod.check(data, bad)[0]


def test_check_group_gemm():
    mod = problem_module("group_gemm")
    data = gen("group_gemm")
    ref = mod.ref_kernel(data)
    ok, msg = mod.check(data, ref)
    assert ok, msg
    ok, msg = mod.check(data, ref[0])
    assert not ok and "list" in msg
    ok, msg = mod.check(data, ref[:1])
    assert not ok and "1 tensors, expected 2" in msg
    bad = [r.clone() for r in ref]
    bad[1][0, 0, 0] = float("nan")
    ok, msg = mod.check(data, bad)
    assert not ok and "group 1" in msg
    # two groups with identical inputs returning one buffer: values match, only aliasing can fail
    abc, sf, sfp, sizes = gen("group_gemm", m=[8, 8], n=[16, 16], k=[256, 256], g=2)
    (a0, b0, _), (_, _, c1) = abc
    abc = [abc[0], (a0.clone(), b0.clone(), c1)]
    sf = [sf[0], tuple(s.clone() for s in sf[0])]
    data2 = (abc, sf, sfp, sizes)
    ref2 = mod.ref_kernel(data2)
    assert torch.equal(ref2[0], ref2[1])
    assert mod.check(data2, ref2)[0]
    ok, msg = mod.check(data2, [ref2[0], ref2[0]])
    assert not ok and "shares memory with another group's output" in msg
