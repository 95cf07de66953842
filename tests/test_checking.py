"""reference.checking's comparison: the quick pass (every element finite and within tolerance, read
back once for all of a list's groups) gives the verdict and message the full check gave before it
existed, in every passing and failing case. The oracle is that full check as it stood (cc6bc1c)."""

from __future__ import annotations

import pytest
import torch

from reference import checking, problem_module

INF, NAN = float("inf"), float("nan")


@torch.no_grad()
def oracle(out, ref, name="output", rtol=checking.RTOL, atol=checking.ATOL):
    """reference.checking.compare before the quick pass, verbatim."""
    got = out.detach().to(torch.float64)
    exp = ref.detach().to(torch.float64).to(got.device)
    diff = (got - exp).abs()
    tol = atol + rtol * exp.abs()
    bad = diff > tol
    bad |= torch.isnan(got) ^ torch.isnan(exp)
    bad |= torch.isposinf(got) ^ torch.isposinf(exp)
    bad |= torch.isneginf(got) ^ torch.isneginf(exp)
    same_inf = torch.isinf(got) & torch.isinf(exp) & (torch.sign(got) == torch.sign(exp))
    bad &= ~same_inf | torch.isnan(got)
    n_bad = int(bad.sum())
    if n_bad:
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


def _ref(seed: int, shape=(24, 40)) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=gen) * 30).to(torch.float16)


def _edge(ref: torch.Tensor, factor: float) -> torch.Tensor:
    """``ref`` moved by ``factor`` tolerances (fp16-rounded: lands either side of the edge)."""
    exp = ref.double()
    return (exp + factor * (checking.ATOL + checking.RTOL * exp.abs())).to(torch.float16)


def _set(t: torch.Tensor, idx, value) -> torch.Tensor:
    t = t.clone()
    t[idx] = value
    return t


REF = _ref(0)
SPECIAL = _set(_set(_set(REF, (1, 2), NAN), (3, 4), INF), (5, 6), -INF)
CASES = {
    "equal": (REF.clone(), REF),
    "all within": (_edge(REF, 0.5), REF),
    "at the tolerance's edge": (_edge(REF, 1.0), REF),
    "one element over": (_set(REF, (7, 9), float(REF[7, 9]) + 1.0), REF),
    "every element over": (_edge(REF, 3.0), REF),
    "NaN where the reference is finite": (_set(REF, (0, 0), NAN), REF),
    "a poisoned output": (torch.full_like(REF, NAN), REF),
    "finite where the reference is NaN": (SPECIAL.nan_to_num(nan=0.0, posinf=INF, neginf=-INF), SPECIAL),
    "NaN, Inf and -Inf where the reference has them": (SPECIAL.clone(), SPECIAL),
    "+Inf where the reference is -Inf": (_set(SPECIAL, (5, 6), INF), SPECIAL),
    "finite where the reference is +Inf": (_set(SPECIAL, (3, 4), 65504.0), SPECIAL),
    "-Inf where the reference is finite": (_set(REF, (2, 3), -INF), REF),
    "NaN where the reference is +Inf": (_set(SPECIAL, (3, 4), NAN), SPECIAL),
    "a constant output": (torch.zeros_like(REF), torch.tensor([0.0, 1e-4, 2e-4, -3e-4], dtype=torch.float16).repeat(240).view(24, 40)),
    "a constant output matching a constant reference": (torch.ones(3, dtype=torch.float16), torch.ones(3, dtype=torch.float16)),
    "one element": (torch.tensor([2.0], dtype=torch.float16), torch.tensor([2.0015], dtype=torch.float16)),
    "one element, NaN": (torch.tensor([NAN], dtype=torch.float16), torch.tensor([1.0], dtype=torch.float16)),
    "empty": (torch.zeros(0, 5, dtype=torch.float16), torch.zeros(0, 5, dtype=torch.float16)),
    "another dtype": (REF.float() + 1e-4, REF),
    "a broadcast reference": (REF[:1].repeat(24, 1), REF[:1]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_verdict_and_message_as_the_full_check_gave(case):
    out, ref = CASES[case]
    assert checking.compare(out, ref, name="group 3 output") == oracle(out, ref, name="group 3 output")


def test_random_outputs_near_and_over_the_edge_get_the_full_checks_verdict():
    """Outputs moved by random fractions of the tolerance (some over), with NaN/Inf sprinkled in."""
    verdicts = set()
    for seed in range(60):
        gen = torch.Generator().manual_seed(seed)
        ref = _ref(1000 + seed, (8, 16))
        out = _edge(ref, float(torch.rand((), generator=gen)) * 2.2 - 1.1)
        for _ in range(int(torch.randint(0, 3, (), generator=gen))):
            where = tuple(int(torch.randint(0, s, (), generator=gen)) for s in out.shape)
            value = (NAN, INF, -INF, 0.0)[int(torch.randint(0, 4, (), generator=gen))]
            out[where] = value
            if torch.rand((), generator=gen) < 0.5:
                ref = _set(ref, where, value)
        expected = oracle(out, ref)
        assert checking.compare(out, ref) == expected, seed
        verdicts.add(expected[0])
    assert verdicts == {True, False}  # both verdicts were exercised


def _group_data():
    mod = problem_module("group_gemm")
    data = mod.generate_input(m=[32, 48, 16], n=[128, 128, 256], k=[64, 64, 64], g=3, seed=5, dist="competition")
    return mod, data, mod.ref_kernel(data)


def _one_at_a_time(mod, data, output, refs):
    """group_gemm's check as it stood: check_one per group, the first failure returned."""
    inputs = mod.inputs_of(data)
    for g, (out, ref, (_, _, c)) in enumerate(zip(output, refs, data[0])):
        problem = checking.validate_output(out, c, inputs, name=f"group {g} output")
        if problem:
            return False, problem
        ok, msg = oracle(out, ref, name=f"group {g} output")
        if not ok:
            return False, msg
    return True, f"{len(output)} groups match"


@pytest.mark.parametrize("case", ["all pass", "group 1 over", "group 2 NaN, group 1 over", "group 0 constant",
                                  "group 1 wrong dtype", "group 0 over, group 1 wrong shape",
                                  "group 2 wrong shape, group 1 over"])
def test_a_list_is_judged_group_by_group_as_before(case):
    mod, data, refs = _group_data()
    output = [r.clone() for r in refs]
    if "group 1 over" in case:
        output[1][3, 5, 0] += 1.0
    if "group 0 over" in case:
        output[0][0, 0, 0] += 1.0
    if "group 2 NaN" in case:
        output[2][1, 1, 0] = NAN
    if "group 0 constant" in case:
        output[0] = torch.zeros_like(output[0])
    if "group 1 wrong dtype" in case:
        output[1] = output[1].float()
    if "group 1 wrong shape" in case:
        output[1] = output[1][:-1]
    if "group 2 wrong shape" in case:
        output[2] = output[2][:-1]
    verdict = mod.check(data, output, refs)
    assert verdict == _one_at_a_time(mod, data, output, refs)
    assert verdict[0] == (case == "all pass")


def test_a_list_reads_its_verdicts_back_once():
    """The quick pass of every group in one host read (a sync on a GPU), where the full check made
    four a group."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Reads(TorchDispatchMode):
        count = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Reads.count += func is torch.ops.aten._local_scalar_dense.default
            return func(*args, **(kwargs or {}))

    mod, data, refs = _group_data()
    output = [r.clone() for r in refs]
    reads = []
    real_tolist = torch.Tensor.tolist
    try:
        torch.Tensor.tolist = lambda t: reads.append(t.numel()) or real_tolist(t)
        with Reads():
            assert mod.check(data, output, refs)[0]
    finally:
        torch.Tensor.tolist = real_tolist
    assert Reads.count == 0 and len(reads) == 1
