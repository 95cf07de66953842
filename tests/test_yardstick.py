"""The accuracy yardstick (reference/yardstick.py) and how `nvfp4 test` uses it (CPU)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from harness import worker
from reference import checking, problem_module, yardstick


def test_errors_are_counted_in_tolerances():
    ref = torch.tensor([1.0, -2.0, 0.0, float("inf")])
    tol = checking.ATOL + checking.RTOL * ref.abs()
    out = ref.clone()
    out[:3] += 0.5 * tol[:3]
    assert yardstick.errors(out, ref)[0] == pytest.approx(0.5, rel=1e-3)
    out[1] = float("nan")
    assert yardstick.errors(out, ref)[0] != yardstick.errors(out, ref)[0]  # NaN
    assert yardstick.errors([ref, ref], [ref, ref])[0] == 0.0


@pytest.mark.parametrize("kernel,yard,ok", [
    (0.0, 0.0, True), (0.4, 0.0, True),      # under half the tolerance: rounding noise, not judged
    (0.9, 0.7, True), (0.9, 0.5, False),      # 1.8x the yardstick's error
    (float("nan"), 0.1, False),
])
def test_judge(kernel, yard, ok):
    assert yardstick.judge(kernel, yard)[0] is ok


@pytest.mark.parametrize("beyond,yard_beyond,ok", [
    (0.0, 0.0, True),        # within one fp16 ulp everywhere: any correct fp32 result may lose that
    (0.02, 0.0, True),       # an fp32 sum's own loss near zero: a few hundredths of the tolerance
    (0.6, 0.5, True), (0.6, 0.3, False), (2.4, 0.0, False),
    (float("nan"), 0.0, False),
])
def test_judge_on_the_error_beyond_one_ulp(beyond, yard_beyond, ok):
    # the largest error (0.95, a legitimate one-ulp flip) says nothing when the beyond-ulp errors are given
    assert yardstick.judge(0.95, 0.1, beyond, yard_beyond)[0] is ok


def test_one_fp16_ulp_is_not_held_against_a_kernel():
    ref = torch.tensor([1024.0, 1.0, -3.0, 0.0], dtype=torch.float16)
    one_ulp = torch.tensor([1025.0, 1.0 + 2 ** -10, -3.0 - 2 ** -9, 2 ** -24], dtype=torch.float16)
    assert yardstick.errors(one_ulp, ref)[0] > 0.9  # 1 ulp at 1024 is 0.98 of the tolerance
    assert yardstick.errors(one_ulp, ref)[1] == 0.0
    two_ulps = one_ulp.clone()
    two_ulps[0] = 1026.0
    assert yardstick.errors(two_ulps, ref)[1] == pytest.approx(1.0 / (1e-3 + 1e-3 * 1024))


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_one_ulp_is_exact_at_and_just_below_every_power_of_two(device):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    import math
    x = torch.tensor([64.0, -math.nextafter(64.0, 0.0), 8.0, 1.0, 65504.0, 2.0 ** -14, 2.0 ** -20, 0.0],
                     dtype=torch.float64, device=device)
    want = [2.0 ** -4, 2.0 ** -5, 2.0 ** -7, 2.0 ** -10, 32.0, 2.0 ** -24, 2.0 ** -24, 2.0 ** -24]
    assert yardstick.fp16_ulp(x).cpu().tolist() == want
    # session 55's FAILs: one fp16 ulp past -64 or 8 in magnitude read as half an ulp beyond (CUDA's log2(64) < 6)
    ref = torch.tensor([-64.0, 8.0], dtype=torch.float16, device=device)
    out = torch.tensor([-64.0625, 8.0078125], dtype=torch.float16, device=device)
    assert yardstick.errors(out, ref)[1] == 0.0
    assert yardstick.errors(out - torch.tensor([0.0625, -0.0078125], dtype=torch.float16, device=device), ref)[1] > 0.4


def test_the_reference_is_float64_on_every_device():
    from reference import exact
    assert exact.compute_dtype(torch.device("cpu")) == torch.float64
    assert exact.compute_dtype(torch.device("cuda")) == torch.float64


def test_a_kernel_that_passes_the_check_but_is_far_less_accurate_than_cublas_fails():
    mod = problem_module("gemm")

    def sloppy(data):  # within the tolerance (0.7 of it, plus fp16 rounding: up to 2 ulps), cuBLAS ~0
        ref = mod.ref_kernel(data).to(torch.float64)
        out = ref + 0.7 * (checking.ATOL + checking.RTOL * ref.abs())
        c = data[-1]
        c.copy_(out.to(c.dtype))
        return c

    item = {"params": {"m": 128, "n": 128, "k": 256, "l": 1, "seed": 7}, "dist": "realistic"}
    reply = _judged_test(mod, sloppy, item, 1)
    assert reply["status"] == "FAIL" and "more than 1.5x cuBLAS" in reply["message"], reply
    assert "; worst at c[" in reply["message"] and "(reference " in reply["message"], reply  # which element

    reply = _judged_test(mod, lambda d: mod.ref_kernel(d), item, 2)
    assert reply["status"] == "PASS" and "cuBLAS fp16" in reply["message"]


def test_an_accuracy_fail_counts_the_seeds_beyond_the_bar_and_reports_the_worst():
    """One unlucky seed of three is not every seed: the FAIL says how many, and shows the worst."""
    mod = problem_module("gemm")
    seen = []

    def sloppy_once(data):  # beyond the yardstick on the second input set only, exact elsewhere
        seen.append(1)
        out = mod.ref_kernel(data).to(torch.float64)
        if len(seen) == 2:
            out = out + 0.7 * (checking.ATOL + checking.RTOL * out.abs())
        c = data[-1]
        c.copy_(out.to(c.dtype))
        return c

    item = {"params": {"m": 128, "n": 128, "k": 256, "l": 1, "seed": 7}, "dist": "realistic"}
    reply = _judged_test(mod, sloppy_once, item, 3)
    assert reply["status"] == "FAIL", reply
    assert reply["message"].startswith("1 of 3 seeds beyond the yardstick's bar; the worst, seed 8: "), reply
    assert "more than 1.5x cuBLAS" in reply["message"] and "; worst at c[" in reply["message"], reply


def _judged_test(mod, kernel, item, seeds):
    """``test``'s path in one process: the worker's calls, then the judge's verdict on them."""
    import os
    from harness import judge
    fd = judge.shared_file("test-yardstick")
    try:
        guard = SimpleNamespace(verdict=lambda since=None: None, thread_ids=set)
        w = worker.Worker(torch, mod, kernel, guard, None, None, judge.ResultSink(torch, fd))
        reply = w.test(item, seeds)
        assert reply["status"] == "PASS", reply  # the child's own checks
        calls = judge.expected_calls({"cmd": "test", "seeds": seeds}, item, 0, 1, reply)
        return judge.Judge(torch, mod, fd).check(item, calls, reply["results"], "test")
    finally:
        os.close(fd)


def test_mixed_scales_make_fp32_sums_round_where_realistic_ones_do_not():
    """``mixed`` is the distribution that sees how partial sums are formed: fp32 and float64 sums
    differ on it; cuBLAS's fp16 output stays within one ulp of the exact result."""
    from reference import codec
    mod = problem_module("gemm")
    data = mod.generate_input(m=64, n=64, k=2048, l=1, seed=11, dist="mixed")
    a, b, sfa, sfb, *_ = data
    exact = codec.dequantize(a[:, :, 0], sfa[:, :, 0], torch.float64) @ codec.dequantize(b[:, :, 0], sfb[:, :, 0], torch.float64).T
    in_fp32 = (codec.dequantize(a[:, :, 0], sfa[:, :, 0], torch.float32) @ codec.dequantize(b[:, :, 0], sfb[:, :, 0], torch.float32).T)
    assert bool((in_fp32.double() != exact).any())
    scales = sfa.float()
    assert float(scales.min()) >= 2.0 ** -6 and float(scales.max()) < 2.0
    ref = mod.ref_kernel(data)
    assert yardstick.errors(mod.ref_kernel(data, matmul=yardstick.matmul_nt), ref)[1] == 0.0


def test_worst_element_names_the_element_and_its_values():
    ref = torch.ones(4, 6, 1, dtype=torch.float16)
    out = ref.clone()
    out[2, 3, 0] = 1.0 + 3 * 2 ** -10  # three ulps off: two beyond one
    out[1, 1, 0] = 1.0 + 2 ** -10  # one ulp: never the worst beyond one ulp
    assert yardstick.worst_element(out, ref, ref) == "c[2, 3, 0] = 1.00293 (reference 1, cuBLAS fp16 1)"
    assert yardstick.worst_element([ref, out], [ref, ref]) == "group 1: c[2, 3, 0] = 1.00293 (reference 1)"


def test_worst_element_prefers_a_nan_output():
    ref = torch.ones(2, 2, 1, dtype=torch.float16)
    out = ref.clone()
    out[0, 1, 0] = 1.0 + 3 * 2 ** -10
    out[1, 0, 0] = float("nan")
    assert yardstick.worst_element(out, ref).startswith("c[1, 0, 0] = nan")
