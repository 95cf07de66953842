"""reference.distributions and each problem's generate_input: determinism, GPU MODE's competition
distributions, the general distribution's coverage and its shared-binade construction."""

from __future__ import annotations

import math

import pytest
import torch

from harness.worker import tensors_of as tensors
from reference import codec, distributions as dists, problem_module

CPU = torch.device("cpu")

SMALL = {
    "gemv": dict(m=130, k=256, l=2),
    "gemm": dict(m=130, n=72, k=256, l=2),
    "dual_gemm": dict(m=130, n=72, k=256, l=2),
    "group_gemm": dict(m=[130, 40], n=[72, 128], k=[256, 512], g=2),
}


def gen(problem, seed=1111, dist="competition", **over):
    params = dict(SMALL[problem], **over)
    return problem_module(problem).generate_input(**params, seed=seed, dist=dist, device=CPU)


def as_bytes(t):
    return t.view(torch.uint8) if t.element_size() == 1 else t


def operands(problem, data):
    """(values list, plain scales list, permuted scales list, outputs list)."""
    if problem in ("gemv", "gemm"):
        a, b, sfa, sfb, pa, pb, c = data
        return [a, b], [sfa, sfb], [pa, pb], [c]
    if problem == "dual_gemm":
        a, b1, b2, sfa, sfb1, sfb2, pa, pb1, pb2, c = data
        return [a, b1, b2], [sfa, sfb1, sfb2], [pa, pb1, pb2], [c]
    abc, sf, sfp, _ = data
    return ([t for a, b, _ in abc for t in (a, b)], [t for p in sf for t in p],
            [t for p in sfp for t in p], [c for _, _, c in abc])


# --------------------------------------------------------------------------------- determinism

@pytest.mark.parametrize("problem", list(SMALL))
@pytest.mark.parametrize("dist", dists.DISTS)
def test_determinism_per_seed(problem, dist):
    x = tensors(gen(problem, 5, dist))
    y = tensors(gen(problem, 5, dist))
    z = tensors(gen(problem, 6, dist))
    assert len(x) == len(y) == len(z)
    for p, q in zip(x, y):
        assert p.dtype == q.dtype and p.shape == q.shape and p.stride() == q.stride()
        assert torch.equal(as_bytes(p), as_bytes(q))
    assert any(not torch.equal(as_bytes(p), as_bytes(q)) for p, q in zip(x, z))


def test_generator_does_not_touch_global_rng():
    torch.manual_seed(123)
    before = torch.rand(4)
    torch.manual_seed(123)
    gen("gemm")
    assert torch.equal(torch.rand(4), before)


def test_unknown_dist_rejected():
    with pytest.raises(ValueError):
        gen("gemm", dist="uniform")


# ------------------------------------------------------------------------------------ layouts

@pytest.mark.parametrize("problem", list(SMALL))
@pytest.mark.parametrize("dist", dists.DISTS)
def test_layouts_and_permuted_equal_plain(problem, dist):
    data = gen(problem, dist=dist)
    values, plain, perm, outs = operands(problem, data)
    for v in values:
        assert v.dtype == torch.float4_e2m1fn_x2
        assert v.permute(2, 0, 1).is_contiguous()  # [rows, K/2, L] view of (L, rows, K/2)
    for s, p in zip(plain, perm):
        rows, sf_k, l = s.shape
        assert s.dtype == p.dtype == torch.float8_e4m3fn
        assert s.permute(2, 0, 1).is_contiguous()
        assert tuple(p.shape) == codec.permuted_shape(rows, sf_k, l)
        assert p.permute(5, 2, 4, 0, 1, 3).is_contiguous()
        # the real slots of the permuted tensor are the plain scales
        assert torch.equal(codec.from_permuted(p, rows, sf_k).view(torch.uint8), s.view(torch.uint8))
        padded = codec.to_permuted(s, fill=p)
        assert torch.equal(padded.view(torch.uint8), p.view(torch.uint8))
    for c in outs:
        assert c.dtype == torch.float16 and c.permute(2, 0, 1).is_contiguous()
        assert torch.isfinite(c).all()


def test_shapes_of_gemv_and_group():
    a, b, sfa, sfb, pa, pb, c = gen("gemv")
    assert a.shape == (130, 128, 2) and b.shape == (128, 128, 2)
    assert sfa.shape == (130, 16, 2) and sfb.shape == (128, 16, 2)
    assert c.shape == (130, 1, 2)
    abc, sf, sfp, sizes = gen("group_gemm")
    assert sizes == [(130, 72, 256, 1), (40, 128, 512, 1)]
    for (a, b, c), (sa, sb), (mi, ni, ki, _) in zip(abc, sf, sizes):
        assert a.shape == (mi, ki // 2, 1) and b.shape == (ni, ki // 2, 1) and c.shape == (mi, ni, 1)
        assert sa.shape == (mi, ki // 16, 1) and sb.shape == (ni, ki // 16, 1)


# -------------------------------------------------------------------------------- competition

def _byte_set(ts):
    return set(torch.cat([t.view(torch.uint8).flatten() for t in ts]).unique().tolist())


def _scale_set(ts):
    return set(torch.cat([t.view(torch.float8_e4m3fn).float().flatten() for t in ts]).unique().tolist())


def test_competition_gemv():
    data = gen("gemv", m=256, k=1024)
    values, plain, perm, _ = operands("gemv", data)
    assert _byte_set(values) == {0, 1, 2, 3}
    assert _scale_set(plain) == {0.0, 1.0, 2.0}
    assert _scale_set(perm) == {0.0, 1.0, 2.0}  # padding slots drawn from the same distribution


def test_competition_gemm():
    data = gen("gemm", m=256, n=256, k=1024)
    values, plain, perm, _ = operands("gemm", data)
    assert _byte_set(values) == set(range(256))
    assert _scale_set(plain) == {0.0, 1.0, 2.0, 3.0}
    assert _scale_set(perm) == {0.0, 1.0, 2.0, 3.0}


def _e4m3_grid():
    vals = torch.arange(0, 0x7F, dtype=torch.uint8).view(torch.float8_e4m3fn).float()
    return set(vals.tolist())


def test_competition_dual_gemm():
    data = gen("dual_gemm", m=256, n=256, k=1024)
    values, plain, perm, _ = operands("dual_gemm", data)
    raw = _byte_set(values)
    assert all(b & 0x44 == 0 for b in raw)  # nibbles & 0xB: +-{0, 0.5, 1, 1.5}
    assert raw == {b for b in range(256) if b & 0x44 == 0}  # and every such byte occurs
    for group in (plain, perm):
        s = _scale_set(group)
        assert s <= _e4m3_grid()
        assert min(s) >= 0.0 and max(s) <= 1.0  # fp32 U[0, 1) rounded to e4m3 (1.0 by rounding up)
        assert 0.0 in s and len(s) > 40
    # consistent with rounding U[0,1): mean near 0.5
    allv = torch.cat([t.float().flatten() for t in plain])
    assert abs(float(allv.mean()) - 0.5) < 0.02


def test_competition_group_gemm():
    data = gen("group_gemm", m=[256, 128], n=[256, 128], k=[1024, 512])
    values, plain, perm, _ = operands("group_gemm", data)
    raw = _byte_set(values)
    assert raw == {b for b in range(256) if b & 0x44 == 0}
    assert _scale_set(plain) == {1.0, 2.0}
    assert _scale_set(perm) == {1.0, 2.0}


def test_competition_module_constants():
    assert problem_module("gemv").COMPETITION_VALUES == "low2"
    assert problem_module("gemv").COMPETITION_SCALES == "int:0:3"
    assert problem_module("gemm").COMPETITION_VALUES == "all"
    assert problem_module("gemm").COMPETITION_SCALES == "int:0:4"
    assert problem_module("dual_gemm").COMPETITION_VALUES == "sign_low2"
    assert problem_module("dual_gemm").COMPETITION_SCALES == "unit"
    assert problem_module("group_gemm").COMPETITION_VALUES == "sign_low2"
    assert problem_module("group_gemm").COMPETITION_SCALES == "int:1:3"


# ------------------------------------------------------------------------------------ general

@pytest.mark.parametrize("problem", list(SMALL))
def test_general_all_codes_positive_finite_scales_finite_outputs(problem):
    data = gen(problem, dist="general")
    values, plain, perm, _ = operands(problem, data)
    codes = set(torch.cat([codec.unpack_e2m1_codes(v).flatten() for v in values]).unique().tolist())
    assert codes == set(range(16))
    for s in plain + perm:
        f = s.float()
        assert torch.isfinite(f).all() and (f > 0).all()
    ref = problem_module(problem).ref_kernel(data)
    for out in (ref if isinstance(ref, list) else [ref]):
        assert torch.isfinite(out).all()


def test_general_gemm_scales_reach_subnormal_and_max():
    data = gen("gemm", m=128, n=128, k=4096, l=1, dist="general")
    _, plain, perm, _ = operands("gemm", data)
    for group in (plain, perm):
        vals = _scale_set(group)
        assert 2.0 ** -9 in vals
        assert 448.0 in vals
        assert min(vals) == 2.0 ** -9 and max(vals) == 448.0


def _binade(x: torch.Tensor) -> torch.Tensor:
    return torch.floor(torch.log2(x.double())).long()


@pytest.mark.parametrize("problem", ["gemm", "dual_gemm", "gemv"])
def test_general_shared_binades(problem):
    """Per (batch, K-block) every row of A shares one binade, and binade(A) + binade(B) = offset."""
    k = 2048
    params = {"gemm": dict(m=130, n=72, k=k, l=2), "dual_gemm": dict(m=130, n=72, k=k, l=2),
              "gemv": dict(m=130, k=k, l=2)}[problem]
    data = problem_module(problem).generate_input(**params, seed=7, dist="general", device=CPU)
    _, plain, perm, _ = operands(problem, data)
    n_products = 2 if problem == "dual_gemm" else 1
    offsets = dists.general_offsets(k, n_products)
    ba = _binade(plain[0].float())  # [rows, sf_k, L]
    assert bool((ba == ba[:1]).all())
    for sb, off in zip(plain[1:], offsets):
        bb = _binade(sb.float())
        assert bool((bb == bb[:1]).all())
        assert bool((ba[0] + bb[0] == off).all())
    # the permuted padding slots follow the same rule
    pa = _binade(perm[0].float())  # (32, 4, rest_m, 4, rest_k, L)
    for pb, off in zip(perm[1:], offsets):
        assert bool((pa[0, 0, 0] + _binade(pb.float())[0, 0, 0] == off).all())


def test_general_offsets_keep_binades_valid():
    for k in (256, 2048, 7168, 16384):
        for n in (1, 2):
            offs = dists.general_offsets(k, n)
            assert len(offs) == n
            g = dists.make_generator(0, CPU)
            ba, bbs = dists.general_binades(g, 2, k // 16, offs)
            for bb in [ba] + bbs:
                assert int(bb.min()) >= codec.E4M3_MIN_EXP and int(bb.max()) <= codec.E4M3_MAX_EXP
    with pytest.raises(ValueError):
        dists.general_binades(dists.make_generator(0, CPU), 1, 4, [-20])


def test_general_dual_outputs_finite_at_large_k():
    data = problem_module("dual_gemm").generate_input(m=8, n=8, k=16384, l=1, seed=3, dist="general", device=CPU)
    out = problem_module("dual_gemm").ref_kernel(data)
    assert torch.isfinite(out).all()
    assert float(out.abs().max()) < 65504 / 4


def test_unit_scales_are_e4m3_rounding_of_unit_interval():
    g = dists.make_generator(9, CPU)
    plain, _ = dists.competition_scales(g, 1, 128, 64, "unit")
    g2 = dists.make_generator(9, CPU)
    expect = torch.rand((1, 128, 64), dtype=torch.float32, generator=g2).to(torch.float8_e4m3fn)
    assert torch.equal(plain.permute(2, 0, 1).view(torch.uint8), expect.view(torch.uint8))
    with pytest.raises(ValueError):
        dists.competition_scales(g, 1, 128, 64, "gauss")
    with pytest.raises(ValueError):
        dists.random_values(g, 1, 4, 32, "bogus")
    assert math.isclose(2.0 ** dists.general_offsets(16384)[0], 0.5)
