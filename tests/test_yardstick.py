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
    assert yardstick.error_in_tolerances(out, ref) == pytest.approx(0.5, rel=1e-3)
    out[1] = float("nan")
    assert yardstick.error_in_tolerances(out, ref) != yardstick.error_in_tolerances(out, ref)  # NaN
    assert yardstick.error_in_tolerances([ref, ref], [ref, ref]) == 0.0


@pytest.mark.parametrize("kernel,yard,ok", [
    (0.0, 0.0, True), (0.4, 0.0, True),      # under half the tolerance: rounding noise, not judged
    (0.9, 0.7, True), (0.9, 0.5, False),      # 1.8x the yardstick's error
    (float("nan"), 0.1, False),
])
def test_judge(kernel, yard, ok):
    assert yardstick.judge(kernel, yard)[0] is ok


def test_the_reference_is_float64_on_every_device():
    from reference import exact
    assert exact.compute_dtype(torch.device("cpu")) == torch.float64
    assert exact.compute_dtype(torch.device("cuda")) == torch.float64


def test_a_kernel_that_passes_the_check_but_is_far_less_accurate_than_cublas_fails():
    mod = problem_module("gemm")

    def sloppy(data):  # within the tolerance everywhere (half of it, plus fp16 rounding), cuBLAS ~0
        ref = mod.ref_kernel(data).to(torch.float64)
        out = ref + 0.5 * (checking.ATOL + checking.RTOL * ref.abs())
        c = data[-1]
        c.copy_(out.to(c.dtype))
        return c

    w = worker.Worker(torch, mod, sloppy, SimpleNamespace(verdict=lambda: None), None, None)
    item = {"params": {"m": 128, "n": 128, "k": 256, "l": 1, "seed": 7}, "dist": "realistic"}
    reply = w.test(item, 1)
    assert reply["status"] == "FAIL" and "more than 1.5x cuBLAS" in reply["message"]

    honest = worker.Worker(torch, mod, lambda d: mod.ref_kernel(d), SimpleNamespace(verdict=lambda: None), None, None)
    reply = honest.test(item, 2)
    assert reply["status"] == "PASS" and "cuBLAS fp16" in reply["message"]
