"""tools/experiments that rewrite a submission's source must keep applying to it (CPU only)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="needs nvcc (CI has it)")


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # NOTE: dataclasses look their module up there while the class is built
    spec.loader.exec_module(module)
    return module


ablate = _tool("ablate_group_gemm")
V25 = (ROOT / "submissions" / "group_gemm" / "submission_v25.py").read_text()


@pytest.mark.parametrize("variant", sorted(ablate.VARIANTS))
def test_every_ablation_variant_patches_v25_once_and_sets_its_flags(variant):
    text = ablate.patched_source(V25, variant)
    cuda = text.split('CUDA_SRC = r"""', 1)[1].split('"""', 1)[0]
    for flag in ablate.FLAGS:
        assert f"#define {flag} {int(flag in ablate.VARIANTS[variant])}\n" in cuda
    assert f'EXTENSION_NAME = "nvfp4_group_gemm_v25_ablate_{variant}"' in text


def test_full_variant_keeps_v25s_code_under_its_else_branches():
    text = ablate.patched_source(V25, "full")
    for line in ("decode_b(b_values0 + slot * STAGE_BYTES, b_scales0 + slot * STAGE_BYTES, row, tig, f);",
                 "bulk_copy(st.a, d.a16 + a16_offset(d, t, kb, 0, 0), a_bytes, full + 8 * s);"):
        assert line in text


def test_a_patch_target_that_drifted_is_an_error():
    with pytest.raises(SystemExit, match="patch target found 0 times"):
        ablate.patched_source(V25.replace("cp_async_arrive(full + 8 * s);", "cp_async_arrive(full + 8 * slot);"), "full")


V38 = (ROOT / "submissions" / "group_gemm" / "submission_v38.py").read_text()
TMA_B_VARIANTS = sorted(v for v, flags in ablate.VARIANTS.items() if set(flags) <= ablate.TMA_B_FLAGS)


@pytest.mark.parametrize("variant", TMA_B_VARIANTS)
def test_ablation_variants_patch_v38s_tensor_copies_once_and_set_their_flags(variant):
    text = ablate.patched_source(V38, variant)
    cuda = text.split('CUDA_SRC = r"""', 1)[1].split('"""', 1)[0]
    for flag in ablate.FLAGS:
        assert f"#define {flag} {int(flag in ablate.VARIANTS[variant])}\n" in cuda
    # the producer counts on `full` only what it copies, and every switched part keeps v38's line under #else
    assert "mbar_arrive_expect_tx(full + 8 * s, copied_a + copied_b);" in cuda
    assert "#else\n        decode_b(b_values0 + slot * STAGE_BYTES" in cuda
    assert "if (ABLATE_NO_EPILOGUE && acc[0] != 12345.f) return;" in cuda


def test_ablation_of_v38_refuses_a_variant_whose_cp_async_targets_it_no_longer_has():
    assert {"full", "skeleton", "mma_only", "no_epilogue", "half_a_copy"} <= set(TMA_B_VARIANTS)
    with pytest.raises(SystemExit, match="no longer has.*its variants: full"):
        ablate.patched_source(V38, "no_b_scales")

ablate_gemm = _tool("ablate_gemm")
GEMM_V19 = (ROOT / "submissions" / "gemm" / "submission_v19.py").read_text()


@pytest.mark.parametrize("variant", sorted(ablate_gemm.VARIANTS))
def test_every_gemm_ablation_variant_patches_v19_once_and_sets_its_flags(variant):
    text = ablate_gemm.patched_source(GEMM_V19, variant)
    cuda = text.split('CUDA_SRC = r"""', 1)[1].split('"""', 1)[0]
    for flag in ablate_gemm.FLAGS:
        assert f"#define {flag} {int(flag in ablate_gemm.VARIANTS[variant])}\n" in cuda
    assert f'EXTENSION_NAME = "nvfp4_gemm_v19_ablate_{variant}"' in text


def test_gemm_ablation_full_keeps_v19s_decode_and_wgmma_and_counts_every_copied_byte():
    text = ablate_gemm.patched_source(GEMM_V19, "full")
    assert "        decode_b(b_values0 + slot * STAGE_BYTES, b_scales0 + slot * STAGE_BYTES, row, tig, f);\n#endif" in text
    assert "wgmma_m64k16<kN>(acc, frag[slot % 2][s]" in text.split("#else", 2)[2]
    # the full barrier expects what is copied: the A bytes (whole or half) plus B's, nothing fixed
    assert "mbar_arrive_expect_tx(full + 8 * s, copied_a + copied_b);" in text


GEMM_V34 = (ROOT / "submissions" / "gemm" / "submission_v34.py").read_text()


@pytest.mark.parametrize("variant", sorted(ablate_gemm.VARIANTS))
def test_every_gemm_ablation_variant_patches_v34_once(variant):
    text = ablate_gemm.patched_source(GEMM_V34, variant)
    assert f'EXTENSION_NAME = "nvfp4_gemm_v34_ablate_{variant}"' in text


def test_gemm_ablation_skips_v34s_epilogue_in_the_consumer_not_in_host_code():
    # v32 on, `problem.splits > 1` occurs only in host code: v19's anchor patched the workspace
    # layout there (a build error in a variant nobody compiled)
    text = ablate_gemm.patched_source(GEMM_V34, "no_epilogue")
    skip = text.index("if (ABLATE_NO_EPILOGUE && acc[0] != 12345.f) return;")
    assert text.index("__device__ __forceinline__ void consume(") < skip < text.index("gemm_kernel(const __grid_constant__")
    assert text[skip:].split("\n", 2)[1].startswith("    if constexpr (kSplit) {")


def test_gemm_ablation_without_an_epilogue_anchor_says_so():
    with pytest.raises(SystemExit, match="epilogue anchor"):
        ablate_gemm.epilogue_patch("no such code")


ablate_dual = _tool("ablate_dual_gemm")
DUAL_V25 = (ROOT / "submissions" / "dual_gemm" / "submission_v25.py").read_text()


@pytest.mark.parametrize("variant", sorted(ablate_dual.VARIANTS))
def test_every_dual_ablation_variant_patches_v25_once_and_sets_its_flags(variant):
    text = ablate_dual.patched_source(DUAL_V25, variant)
    cuda = text.split('CUDA_SRC = r"""', 1)[1].split('"""', 1)[0]
    for flag in ablate_dual.FLAGS:
        assert f"#define {flag} {int(flag in ablate_dual.VARIANTS[variant])}\n" in cuda
    assert f'EXTENSION_NAME = "nvfp4_dual_gemm_v25_ablate_{variant}"' in text


def test_dual_ablation_counts_exactly_the_bytes_it_copies():
    text = ablate_dual.patched_source(DUAL_V25, "full")
    # the full barrier expects what is copied (half of A, or none of A or B), nothing fixed
    assert "mbar_arrive_expect_tx(full + 8 * s, copied_a + copied_b);" in text
    assert "mbar_arrive_expect_tx(full + 8 * s, a_bytes + 2 * B_BYTES);" not in text
    assert "bulk_copy(st.a, a_src + kb * a_step, copied_a, full + 8 * s);" in text


peers = _tool("peers")


@pytest.mark.parametrize("problem,params", [
    ("gemm", dict(m=32, n=64, k=256, l=2)),
    ("gemv", dict(m=64, k=256, l=2)),
    ("dual_gemm", dict(m=32, n=64, k=256, l=1)),
    ("group_gemm", dict(m=[8, 24], n=[128, 128], k=[256, 512], g=2)),
])
def test_cublas_peer_computes_the_problems_products_and_its_check_catches_a_wrong_one(problem, params):
    from reference import problem_module
    data = problem_module(problem).generate_input(**params, seed=5, dist="general", device="cpu")
    call, check = peers.cublas_peer(problem, data)
    outs = call()
    assert all(o.dtype == peers.torch.bfloat16 for o in outs)
    assert check(outs) == (True, "ok")
    wrong = [o.clone() for o in outs]
    wrong[-1] = wrong[-1].flip(0)  # rows out of place: what a transposed or mismatched operand gives
    ok, msg = check(wrong)
    assert not ok and "peer GEMM" in msg


def test_wgmma_rate_program_has_a_launch_per_shape():
    rate = _tool("wgmma_rate")
    src = rate.program(10)
    assert src.count("run(\"") == len(rate.SHAPES) and "constexpr int kIters = 10;" in src
    assert all(n // 2 + 40 <= 65536 // (128 * w) for n, _, w in rate.SHAPES)  # registers for the accumulators


def test_ring_rate_program_has_a_launch_per_case():
    ring = _tool("ring_rate")
    src = ring.program(100)
    assert src.count("    run(") == len(ring.CASES) and "constexpr int kBlocks = 100;" in src
    assert all(32 * (c + p) <= 1024 for c, p, *_ in ring.CASES)


ablate_gemv = _tool("ablate_gemv")
GEMV_V11 = (ROOT / "submissions" / "gemv" / "submission_v11.py").read_text()


@pytest.mark.parametrize("variant", sorted(ablate_gemv.PATCHED))
def test_every_gemv_ablation_variant_patches_v11_and_sets_its_flags(variant):
    text = ablate_gemv.patched_source(GEMV_V11, variant)
    cuda = text.split('CUDA_SRC = r"""', 1)[1].split('"""', 1)[0]
    for flag in ablate_gemv.FLAGS:
        assert f"#define {flag} {int(flag in ablate_gemv.VARIANTS[variant])}\n" in cuda
    assert f'EXTENSION_NAME = "nvfp4_gemv_v11_ablate_{variant}"' in text


@needs_nvcc
@pytest.mark.parametrize("variant", ["flat_read", "bulk_read", "rows_read"])  # rows_* differ by a constant
def test_gemv_pure_reads_are_standalone_submissions_that_compile(variant, tmp_path):
    from harness import compile_only, contract, submissions
    path = ablate_gemv.variant_path(variant, "v11", tmp_path)
    assert variant not in ablate_gemv.PATCHED and f"gemv_{variant}(" in path.read_text()  # profiler label "gemv"
    assert f"return _module.{variant}(a, sfa, c" in path.read_text()
    sub = submissions.load("gemv", path, path.name)
    if variant != "flat_read":  # NOTE: their C++ sides are flat_read's with other names: the CUDA alone (~5 s, not ~40)
        import subprocess
        c = contract.read(path)
        cmd, _ = compile_only.nvcc_command(compile_only.find_nvcc(), c, sub.arch, prelude=False)
        (tmp_path / "cuda.cu").write_text(c.cuda_file_text(prelude=False))
        done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"gemv_{variant}" in done.stdout + done.stderr  # ptxas -v names the kernel
        return
    result = compile_only.check(sub, compile_only.find_nvcc())
    assert result.status == compile_only.OK, result.message
    assert {k.name.split("(")[0].split("<")[0].removeprefix("void ") for k in result.kernels} == {f"gemv_{variant}"}


def test_gemv_rows_read_variants_differ_only_in_the_scale_load_width():
    import difflib
    base = ablate_gemv.STANDALONE["rows_read"].splitlines()
    for name, width in (("rows_values", 0), ("rows_scales4", 4), ("rows_scales8", 8)):
        changed = [d for d in difflib.unified_diff(base, ablate_gemv.STANDALONE[name].splitlines(), n=0)
                   if d[:1] in "+-" and d[:3] not in ("+++", "---")]
        assert len(changed) == 4 and f"+SCALE_BYTES = {width} " in "\n".join(changed), changed


def test_gemv_flat_read_sweep_changes_only_its_constants_names_and_hint():
    import difflib
    base = ablate_gemv.FLAT_READ.splitlines()
    assert len(ablate_gemv.FLAT_READ_SWEEP) == 8 and set(ablate_gemv.FLAT_READ_SWEEP) <= set(ablate_gemv.VARIANTS)
    for name, text in ablate_gemv.FLAT_READ_SWEEP.items():
        loads, blocks = (int(part[1:]) for part in name.split("_")[2:4])
        changed = [d for d in difflib.unified_diff(base, text.splitlines(), n=0)
                   if d[:1] in "+-" and d[:3] not in ("+++", "---")]
        added = "\n".join(d for d in changed if d.startswith("+"))
        assert f"constexpr int kThreads = 256, kLoads = {loads}, kBlocksPerSM = {blocks};" in text
        assert ("L2::256B" in added) == name.endswith("_256")
        assert f"gemv_{name}(" in text and f"return _module.{name}(a, sfa, c)" in text  # profiler label "gemv"
        # NOTE: nothing else moves: the loop, the guard and the XOR are flat_read's
        assert all(name in d or "kLoads" in d or "L2::256B" in d or "flat_read's sweep" in d
                   for d in changed if d.startswith("+")), changed
        assert sum(d.startswith("-") for d in changed) == sum(d.startswith("+") for d in changed)


def test_gemv_hint_variants_change_only_the_load_instructions():
    added = ablate_gemv.patched_source(GEMV_V11, "with_l2_256")
    assert added.count("ld.global.nc.L1::no_allocate.L2::256B.") == 2
    a_only = ablate_gemv.patched_source(GEMV_V11, "a_l2_256")
    assert a_only.count(".L2::256B.v4.u32") == 1 and ".L2::256B.u16" not in a_only


def test_read_pattern_program_reads_every_pattern_and_times_a_copy():
    read = _tool("read_pattern")
    src = read.program(7168, 9216, 1)
    assert "constexpr long long kRows = 7168, kRowBytes = 9216;" in src
    assert src.count('report("') >= 10 and "cudaMemcpyAsync(dst, m, bytes" in src


def test_gemv_v14_emulation_matches_the_reference_on_a_small_shape():
    emulate = _tool("emulate_gemv_v14")
    from reference import gemv
    data = gemv.generate_input(m=40, k=1024, l=2, seed=7, dist="general", device="cpu")
    ok, msg = gemv.check(data, emulate.run(data, ctas_per_grid=2))  # two row blocks per CTA, across batches l
    assert ok, msg


ablation = _tool("ablation")


def test_ablation_sorts_profiler_rows_to_the_first_matching_label():
    rows = [{"name": "void group_gemm_kernel<4>(Problem)", "calls": 8, "total_us": 1064.0},
            {"name": "decode_a_kernel(Problem)", "calls": 8, "total_us": 80.0},
            {"name": "elementwise_kernel (the flush)", "calls": 8, "total_us": 400.0}]
    got = ablation.per_label(rows, {"gemm": "group_gemm_kernel", "prepass": "decode_a"})
    assert got == {"gemm": [133.0], "prepass": [10.0]}


def test_ablation_builds_wait_for_every_child_and_report_a_failure():
    assert ablation.build_in_parallel([["-c", "pass"], ["-c", "import time; time.sleep(0.2)"]])
    assert not ablation.build_in_parallel([["-c", "raise SystemExit(3)"], ["-c", "pass"]])


host_tiling = _tool("host_tiling")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the host code is compiled as it is)")
def test_gemm_v11_host_fills_idle_sms_with_shorter_m_tiles_only_where_s_is_1():
    from harness.submissions import resolve
    shapes = host_tiling.shapes_of("gemm")
    v9 = {(r["m"], r["n"], r["k"]): r for r in host_tiling.choices(resolve("gemm", "v9").path, shapes, 132)}
    v11 = {(r["m"], r["n"], r["k"]): r for r in host_tiling.choices(resolve("gemm", "v11").path, shapes, 132)}
    assert v11[(128, 7168, 2048)]["ctas"] == 112 and v11[(128, 7168, 2048)]["m_tile_rows"] == 64
    assert v9[(128, 7168, 2048)]["ctas"] == 56
    for shape, r in v11.items():
        assert r["m_tiles"] * r["m_tile_rows"] >= shape[0] and r["m_tile_rows"] % 32 == 0
        if v9[shape]["splits"] > 1:
            assert r == v9[shape]  # split-K shapes keep v9's launch
        else:
            assert r["splits"] == 1 and r["tiles"] >= v9[shape]["tiles"]
            assert r["tiles"] == v9[shape]["tiles"] or r["tiles"] <= 132


# NOTE: a plausible H100 answer to the cluster-occupancy query (clusters live inside one GPC); the
# test is about the host's rule given capacities, not about any one GPU's.
H100_LIKE_CLUSTERS = {1: 132, 2: 66, 3: 44, 4: 32, 5: 24, 6: 22, 7: 16, 8: 16}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the host code is compiled as it is)")
def test_gemm_v12_launch_is_v10s_where_k_splits_and_v11s_where_it_does_not():
    from harness.submissions import resolve
    shapes = host_tiling.shapes_of("gemm")
    def launches(version, clusters):
        return {(r["m"], r["n"], r["k"]): r for r in host_tiling.choices(resolve("gemm", version).path, shapes, 132, clusters)}
    v10, v12 = launches("v10", H100_LIKE_CLUSTERS), launches("v12", H100_LIKE_CLUSTERS)
    v11 = launches("v11", None)  # NOTE: v11 (from v9) asks no cluster query
    assert v12[(128, 7168, 16384)]["splits"] == 2 and v12[(128, 4096, 7168)]["splits"] == 4
    assert v12[(128, 7168, 2048)]["ctas"] == 112 and v12[(128, 7168, 2048)]["m_tile_rows"] == 64
    for shape, r in v12.items():
        if v10[shape]["splits"] > 1:
            assert r == v10[shape]
        else:
            assert r == v11[shape]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the host code is compiled as it is)")
def test_dual_gemm_v13_fills_the_wave_with_112_row_tiles_only_where_s_is_1():
    from harness.submissions import resolve
    shapes = host_tiling.shapes_of("dual_gemm")
    def launches(version):
        rows = host_tiling.choices(resolve("dual_gemm", version).path, shapes, 132, H100_LIKE_CLUSTERS, "dual_gemm")
        return {(r["m"], r["n"], r["k"]): r for r in rows}
    v12, v13 = launches("v12"), launches("v13")
    assert v12[(512, 3072, 7168)]["ctas"] == 96
    assert v13[(512, 3072, 7168)]["ctas"] == 120 and v13[(512, 3072, 7168)]["m_tile_rows"] == 112
    for shape in ((256, 4096, 7168), (512, 4096, 7168), (256, 3072, 4096)):  # the other benchmarks: v12's launch
        assert v13[shape] == v12[shape]
    for shape, r in v13.items():
        assert r["m_tile_rows"] in (32, 64, 96, 112, 128) and r["m_tiles"] * r["m_tile_rows"] >= shape[0]
        if v12[shape]["splits"] > 1:
            assert r == v12[shape]  # split-K launches keep the tallest tiles
        elif r != v12[shape]:
            assert r["splits"] == 1 and v12[shape]["ctas"] < r["ctas"] <= 132  # more of one wave, never a second
    # the tests and edges shapes reach the new heights, so `nvfp4 test` runs their instantiations
    assert {32, 112} <= {r["m_tile_rows"] for r in v13.values()}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the host code is compiled as it is)")
def test_gemm_v22_runs_stream_k_on_every_sm_where_tiles_leave_sms_idle_and_v19s_launch_elsewhere():
    from harness.submissions import resolve
    shapes = host_tiling.shapes_of("gemm")
    def launches(version, clusters=None):
        return {(r["m"], r["n"], r["k"]): r for r in host_tiling.choices(resolve("gemm", version).path, shapes, 132, clusters)}
    v19, v22 = launches("v19", H100_LIKE_CLUSTERS), launches("v22")
    for shape in ((128, 7168, 16384), (128, 4096, 7168)):
        assert v22[shape]["ctas"] == 132 and v22[shape]["m_tile_rows"] == 128 and v22[shape]["splits"] > 1
    assert v22[(128, 7168, 2048)]["ctas"] == 112 and v22[(128, 7168, 2048)]["splits"] == 1  # v19's 64-row launch
    stream_k = [shape for shape, r in v22.items() if r["splits"] > 1]
    for shape, r in v22.items():
        assert r["splits"] <= 8 and r["ctas"] <= 132 or r["ctas"] == r["tiles"]
        if shape not in stream_k:
            assert r["ctas"] == r["tiles"] and (v19[shape]["splits"] > 1 or r["m_tile_rows"] == v19[shape]["m_tile_rows"])
    # the tests and edges shapes cut tiles into as many pieces as the kernel sums, so `nvfp4 test` runs them
    assert max(v22[shape]["splits"] for shape in stream_k) == 8 and len(stream_k) >= 4


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the host code is compiled as it is)")
def test_gemm_v40_adds_tail_helpers_only_to_split_launches_that_leave_sms_idle():
    from harness.submissions import resolve
    shapes = host_tiling.shapes_of("gemm")
    def launches(version):
        return {(r["m"], r["n"], r["k"]): r for r in host_tiling.choices(resolve("gemm", version).path, shapes, 132)}
    v34, v40 = launches("v34"), launches("v40")
    long_shape = v40[(128, 7168, 16384)]
    assert (long_shape["splits"], long_shape["helpers"], long_shape["per_helper"], long_shape["ctas"]) == (2, 19, 6, 131)
    for shape, r in v40.items():
        assert (r["tiles"], r["m_tile_rows"], r["splits"]) == (v34[shape]["tiles"], v34[shape]["m_tile_rows"], v34[shape]["splits"])
        assert r["helpers"] == 0 or (r["splits"] > 1 and r["ctas"] <= 132)
        assert r["ctas"] == r["tiles"] * r["splits"] + r["helpers"]
    # the tests and edges shapes run helpers of one tail and of several, so `nvfp4 test` checks both paths
    assert {1, 3} <= {r["per_helper"] for r in v40.values() if r["helpers"] > 0}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the host code is compiled as it is)")
def test_dual_gemm_v14_launches_exactly_what_v13_does():
    from harness.submissions import resolve
    shapes = host_tiling.shapes_of("dual_gemm")
    def launches(version):
        rows = host_tiling.choices(resolve("dual_gemm", version).path, shapes, 132, H100_LIKE_CLUSTERS, "dual_gemm")
        return {(r["m"], r["n"], r["k"]): r for r in rows}
    assert launches("v14") == launches("v13")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the host code is compiled as it is)")
def test_dual_gemm_v19_takes_104_row_tiles_where_they_fill_the_wave_and_v18s_launch_elsewhere():
    from harness.submissions import resolve
    shapes = host_tiling.shapes_of("dual_gemm") + [(208, 1024, 7168), (200, 2048, 4096), (500, 3072, 7168)]
    def launches(version):
        rows = host_tiling.choices(resolve("dual_gemm", version).path, shapes, 132, H100_LIKE_CLUSTERS, "dual_gemm")
        return {(r["m"], r["n"], r["k"]): r for r in rows}
    v18, v19 = launches("v18"), launches("v19")
    bench = v19[(512, 3072, 7168)]
    assert (bench["m_tile_rows"], bench["m_tiles"], bench["splits"], bench["ctas"]) == (104, 5, 1, 120)
    assert v18[(512, 3072, 7168)]["m_tile_rows"] == 112
    # the shapes `nvfp4 test --shape` runs for v19's new instantiations: split (S = 4, S = 2 with a
    # partial last tile) and unsplit with a partial last tile
    assert [v19[s]["m_tile_rows"] for s in ((208, 1024, 7168), (200, 2048, 4096), (500, 3072, 7168))] == [104] * 3
    assert v19[(208, 1024, 7168)]["splits"] == 4 and v19[(200, 2048, 4096)]["splits"] == 2
    assert v19[(500, 3072, 7168)]["splits"] == 1
    for shape, r in v19.items():
        if r["m_tile_rows"] != 104:
            assert r == v18[shape]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the host code is compiled as it is)")
def test_dual_gemm_v20_launches_64_row_n_tiles_over_a_tiles_of_up_to_256_rows():
    from harness.submissions import resolve
    custom = [(300, 8192, 256), (380, 8192, 256), (200, 1024, 7168), (100, 2048, 4096), (500, 4096, 1024),
              (90, 16384, 256), (60, 16384, 256)]
    shapes = host_tiling.shapes_of("dual_gemm") + custom
    rows = host_tiling.choices(resolve("dual_gemm", "v20").path, shapes, 132, H100_LIKE_CLUSTERS, "dual_gemm")
    v20 = {(r["m"], r["n"], r["k"]): r for r in rows}
    def launch(shape):
        r = v20[shape]
        return r["m_tile_rows"], r["m_tiles"], r["splits"], r["ctas"]
    # the benchmarks: N / 64 columns of 256-row tiles
    assert [launch(s) for s in ((256, 4096, 7168), (512, 4096, 7168), (256, 3072, 4096), (512, 3072, 7168))] == \
        [(256, 1, 2, 128), (256, 2, 1, 128), (256, 1, 2, 96), (256, 2, 1, 96)]
    for (m, n, k), r in v20.items():
        assert r["tiles"] == r["m_tiles"] * (n // 64) and r["m_tiles"] * r["m_tile_rows"] >= m
        assert r["m_tile_rows"] in (32, 64, 96, 128, 160, 192, 256)
    # the custom shapes R8 tested reach every height but 32's (the tests shapes have it)
    assert {v20[s]["m_tile_rows"] for s in custom} == {64, 96, 128, 160, 192, 256}
    assert 32 in {r["m_tile_rows"] for r in v20.values()}
    assert v20[(200, 1024, 7168)]["splits"] == 4 and v20[(100, 2048, 4096)]["splits"] == 2


def test_host_tiling_answers_the_cluster_query_only_where_the_source_asks_it():
    src = "int f() { int clusters = 0; cudaOccupancyMaxActiveClusters(&clusters, gemm_kernel, &config); return clusters; }"
    patched = host_tiling.with_cluster_capacities(src, {2: 66})
    assert "host_tiling_clusters(&clusters, config.gridDim.x)" in patched and "cudaOccupancyMaxActiveClusters" not in patched
    assert "{0, 0, 66, 0" in patched
    called = "if (cudaOccupancyMaxActiveClusters(&clusters, kernel_for(BLOCK_M_MAX), &config) != cudaSuccess) {}"
    assert "host_tiling_clusters(&clusters, config.gridDim.x)" in host_tiling.with_cluster_capacities(called, {2: 66})
    with pytest.raises(SystemExit):
        host_tiling.with_cluster_capacities("int f() { return 0; }", {2: 66})


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the host code is compiled as it is)")
def test_group_gemm_v33_takes_the_deep_ring_only_where_every_tile_fits_it():
    from harness.submissions import resolve
    shapes = host_tiling.group_shapes_of()
    rows = host_tiling.group_choices(resolve("group_gemm", "v33").path, shapes, 132)
    by_shape = {}
    for r in rows:
        by_shape.setdefault(r["shape"], []).append(r)
        assert r["ring"] == ("deep" if r["tallest"] <= 128 else "tall")
    # benchmarks A and B keep v31's ring, C and D take v32's
    assert [by_shape[i][0]["ring"] for i in range(4)] == ["tall", "tall", "deep", "deep"]
    # the tests and edges shapes reach both rings, so `nvfp4 test --shapes edges` runs both kernels
    assert {r["ring"] for r in rows if r["shape"] >= 4} == {"deep", "tall"}


timeline = _tool("timeline")


@pytest.mark.parametrize("version", ["v10", "v14", "v15", "v19", "v26", "v29", "v30", "v31", "v32", "v37"])
def test_timeline_marks_every_phase_of_gemm_kernels_and_exports_its_readers(version):
    from harness.submissions import resolve
    text = timeline.patched(resolve("gemm", version).path.read_text(), "gemm")
    for i, (_, thread, *_) in enumerate(timeline.MARKS["gemm"]):
        assert text.count(f"TIMELINE_MARK({i}, {thread});") == 1
    # the end of the K loop is stamped on every launch, split or not: before the split branch
    k_loop = next(i for i, mark in enumerate(timeline.MARKS["gemm"]) if mark[0] == "K loop")
    assert (f"TIMELINE_MARK({k_loop}, 128);\n    if (problem.splits > 1) {{" in text
            or f"TIMELINE_MARK({k_loop}, 128);\n    if constexpr (kSplit) {{" in text)
    assert 'FUNCTIONS = ["gemm", "timeline", "timeline_clear"]' in text
    assert f'EXTENSION_NAME = "nvfp4_gemm_{version}_ablate_timeline"' in text
    assert "torch::Tensor timeline()" in text and "int timeline_zero()" in text


@pytest.mark.parametrize("version", ["v40", "v41"])
def test_timeline_marks_gemm_tail_helpers_and_the_split_ctas_they_serve(version):
    from harness.submissions import resolve
    text = timeline.patched(resolve("gemm", version).path.read_text(), "gemm")
    marks = timeline.GEMM_TAILS_MARKS
    for i, (_, thread, *_) in enumerate(marks):
        assert text.count(f"TIMELINE_MARK({i}, {thread});") == 1
    # a split CTA's own blocks end before the tail's partial is added, which comes before the exchange
    names = [name for name, *_ in marks]
    k_loop, tail_added = names.index("K loop"), names.index("tail added")
    assert text.index(f"TIMELINE_MARK({k_loop}, 128);") < text.index(f"TIMELINE_MARK({tail_added}, 128);\n    if constexpr (kSplitLaunch)")


@pytest.mark.parametrize("version", ["v38", "v39", "v40", "v41"])
def test_timeline_marks_group_gemm_v38_on_phases_in_order(version):
    source = (ROOT / "submissions" / "group_gemm" / f"submission_{version}.py").read_text()
    text = timeline.patched(source, "group_gemm")
    marks = timeline.marks_of(source, "group_gemm")
    # v40's interleaved loop has its own marks; the others share v38's
    assert marks is (timeline.GROUP_INTERLEAVED_MARKS if version == "v40" else timeline.MARKS["group_gemm"])
    positions = []
    for i, (_, thread, *_) in enumerate(marks):
        assert text.count(f"TIMELINE_MARK({i}, {thread});") == 1
        positions.append(text.index(f"TIMELINE_MARK({i}, {thread});"))
    # the consumer's marks follow the kernel's order (start and prologue are in the kernel, after consume())
    names = [name for name, *_ in marks]
    # in v40 the epilogue (C staged, end) is a helper defined above the loops that call it, and both
    # warpgroups' loop-end stamps follow one anchor (in either order)
    ordered = ("first stage", "K loop") if version == "v40" else ("first stage", "K loop", "K loop wg1", "C staged", "end")
    assert positions[names.index("first stage")] < positions[names.index("K loop wg1")]
    consumer = [positions[names.index(n)] for n in ordered]
    assert consumer == sorted(consumer)
    assert 'FUNCTIONS = ["group_gemm", "timeline", "timeline_clear"]' in text


def test_timeline_summary_over_a_range_of_ctas_keeps_the_calls_first_start():
    # CTA 0 starts first; the range holds CTA 1 alone, whose marks are still timed from CTA 0's start
    stamps = [[[1000, 3000], [2000, 9000]]]
    lines = timeline.summarise(stamps, ["start", "end"], range(1, 2))
    row = next(line for line in lines if line.startswith("end "))
    assert row.split()[1:4] == ["8.00", "8.00", "1"]
    assert next(line for line in lines if "start -> end" in line).split()[-2:] == ["7.00", "7.00"]
    assert timeline.parse_cta_ranges("0-31,40") == [range(0, 32), range(40, 41)]
    with pytest.raises(SystemExit, match="not A-B"):
        timeline.parse_cta_ranges("9-3")

def test_timeline_refuses_a_drifted_anchor():
    with pytest.raises(SystemExit, match="no anchor"):
        timeline.patched('CUDA_SRC = r"""\n"""\nCPP_SRC = r"""\n"""\n', "gemm")


def test_timeline_summary_joins_the_phases_around_a_mark_a_cta_skipped():
    # CTA 0 stamps all three marks, CTA 1 skips the middle one (a split-K mark on an S = 1 launch)
    stamps = [[[1000, 3000, 7000], [1000, 0, 9000]]]
    lines = timeline.summarise(stamps, ["start", "split", "end"])
    phases = {line.split()[0] + " " + line.split()[2]: line.split()[3] for line in lines if " -> " in line}
    assert phases == {"start split": "2.00", "split end": "4.00", "start end": "8.00"}


def test_timeline_summary_measures_from_the_calls_first_start():
    # two CTAs, three marks, in ns: CTA 1 starts 1 µs late; phases within a CTA
    stamps = [[[1000, 3000, 7000], [2000, 3000, 9000], [0, 0, 0]]]
    lines = "\n".join(timeline.summarise(stamps, ["start", "mid", "end"]))
    assert "start" in lines and "mid -> end" in lines
    row = next(line for line in lines.splitlines() if line.startswith("end "))
    assert row.split()[1:3] == ["7.00", "8.00"]  # median of 6 and 8 µs after the first start, max 8


def test_timeline_peers_measures_how_far_apart_a_groups_ctas_reach_a_mark():
    # groups of 2 CTAs: (5, 7) µs apart by 2; the second group has one stamped CTA and no spread
    stamps = [[[1000, 5000], [1000, 7000], [1000, 0], [1000, 6000]]]
    lines = timeline.summarise_peers(stamps, ["start", "K loop"], "K loop", 2)
    spread = next(line for line in lines if "spread" in line).split()
    wait = next(line for line in lines if "latest" in line and "spread" not in line).split()
    assert spread[-2:] == ["2.00", "2.00"]
    assert wait[-2:] == ["1.00", "2.00"]  # CTA 0 waits 2 µs for CTA 1, CTA 1 none: median 1
    unstamped = [[[1000, 0], [1000, 0]]]
    assert "no group" in timeline.summarise_peers(unstamped, ["start", "K loop"], "K loop", 2)[0]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_timeline_patched_cuda_source_compiles(tmp_path):
    import re
    import subprocess
    from harness.submissions import resolve
    text = timeline.patched(resolve("gemm", "v15").path.read_text(), "gemm")
    cu = tmp_path / "k.cu"
    cu.write_text(re.search(r'CUDA_SRC = r"""(.*?)"""', text, re.S).group(1))
    # NOTE: PTX only (no ptxas pass): the patch's syntax and symbols, in seconds
    done = subprocess.run(["nvcc", "-c", "-std=c++17", "-gencode=arch=compute_90a,code=compute_90a", str(cu),
                           "-o", str(tmp_path / "k.o")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("tool", ["ablate_gemm", "ablate_group_gemm"])
def test_ablation_tool_finds_the_harness_without_an_installed_repo(tool, tmp_path):
    # A bare device machine runs these as scripts with the repository uninstalled: `python -S` drops
    # site-packages (and the editable install), and the working directory is elsewhere.
    import subprocess
    done = subprocess.run([sys.executable, "-S", str(ROOT / "tools" / "experiments" / f"{tool}.py"),
                           "--emit", str(tmp_path)], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-800:]
    assert list(tmp_path.glob("submission_v*_full.py"))


sass_lint = _tool("sass_lint")


def _sass(body: list[str]) -> list[str]:
    """A kernel's nvdisasm text: "L:name" lines are labels, the rest instructions, 16 bytes apart."""
    lines, n = [".text._Z6kernelv:"], 0
    for text in body:
        if text.startswith("L:"):
            lines.append(f"{text[2:]}:")
            continue
        lines.append(f"        /*{16 * n:04x}*/                   {text} ;")
        n += 1
    return lines


HGMMA = "HGMMA.64x128x16.F32 R24, gdesc[UR4], R24"


def test_sass_lint_flags_a_fence_or_local_access_inside_a_wgmma_loop_only():
    spin = ["L:.L_x_1", "SYNCS.PHASECHK.TRANS64 P0, [UR4], R2", "@!P0 BRA `(.L_x_1)"]  # a wait loop, no HGMMA
    clean = _sass(["MEMBAR.ALL.GPU", "L:.L_x_0", *spin, "IMAD R0, R1, R2, R3", HGMMA, HGMMA,
                   "@P1 BRA `(.L_x_0)", "LDL R2, [R1+0x8]"])
    loops = sass_lint.loops_of(clean)["_Z6kernelv"]
    assert len(loops) == 1 and loops[0].hgmma == 2 and loops[0].flagged == []  # fence and spill outside
    assert (loops[0].first, loops[0].last, loops[0].bytes) == (16, 16 * 6, 16 * 6)
    assert (loops[0].instructions, loops[0].uniform) == (6, 0)
    uniform = sass_lint.loops_of(_sass(["L:.L_x_0", "UMOV UR4, 0x400", "@P0 UIADD3 UR5, UR4, 0x20, URZ", HGMMA,
                                        "@P1 BRA `(.L_x_0)"]))["_Z6kernelv"][0]
    assert (uniform.instructions, uniform.uniform) == (4, 2)
    fenced = _sass(["L:.L_x_0", HGMMA, "@!P1 MEMBAR.ALL.GPU", "STL [R1], R2", HGMMA, "@P1 BRA `(.L_x_0)"])
    assert [f.split(" ", 1)[1] for f in sass_lint.loops_of(fenced)["_Z6kernelv"][0].flagged] == ["@!P1 MEMBAR.ALL.GPU", "STL [R1], R2"]


def test_sass_lint_reports_the_innermost_loop_around_the_tensor_work():
    # an out-of-line retry block after EXIT jumps back into the loop with a plain BRA: not a loop
    nested = _sass(["L:.L_x_0", "IMAD R0, R1, R2, R3", "L:.L_x_1", HGMMA, "MEMBAR.ALL.CTA", "@P1 BRA `(.L_x_1)",
                    "@P2 BRA `(.L_x_0)", "BRA `(.L_x_2)", "L:.L_x_2", "EXIT", "@!P0 BRA `(.L_x_2)", "BRA `(.L_x_1)"])
    loops = sass_lint.loops_of(nested)["_Z6kernelv"]
    assert [(loop.first, loop.last, loop.hgmma, len(loop.flagged)) for loop in loops] == [(16, 48, 1, 1)]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the host code is compiled as it is)")
def test_gemm_v30_splits_free_of_cluster_capacity_and_v32_to_v34_launch_as_v30():
    from harness.submissions import resolve
    shapes = host_tiling.shapes_of("gemm")
    def launches(version, clusters=None):
        return {(r["m"], r["n"], r["k"]): r for r in host_tiling.choices(resolve("gemm", version).path, shapes, 132, clusters)}
    # the lent H100 of stops 24-26: 30 clusters of 4 resident, fewer than 128x4096x7168's 32 tiles
    lent_h100 = {1: 132, 2: 66, 3: 39, 4: 30, 5: 22, 6: 17, 7: 15, 8: 15}
    v26, v30 = launches("v26", lent_h100), launches("v30")  # NOTE: v30 asks no cluster query
    assert v26[(128, 4096, 7168)]["splits"] == 3 and v30[(128, 4096, 7168)]["splits"] == 4
    assert v30[(128, 4096, 7168)]["ctas"] == 128
    for shape, r in v30.items():
        assert r["ctas"] <= 132 or r["splits"] == 1  # a split launch is one wave: its CTAs wait on each other
        if shape != (128, 4096, 7168) and v26[shape]["splits"] == r["splits"]:
            assert r == v26[shape]
    for version in ("v32", "v33", "v34"):
        assert launches(version) == v30


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the host code is compiled as it is)")
def test_gemm_v35_takes_stream_k_only_where_it_shortens_the_longest_cta_and_launches_the_rest_as_v34():
    from harness.submissions import resolve
    shapes = host_tiling.shapes_of("gemm")
    def launches(version):
        return {(r["m"], r["n"], r["k"]): r for r in host_tiling.choices(resolve("gemm", version).path, shapes, 132)}
    v34, v35 = launches("v34"), launches("v35")
    stream = {shape for shape, r in v35.items() if r["ctas"] != r["tiles"] * r["splits"]}
    # 56 tiles x 256 blocks: 109 blocks a CTA on 132 SMs against S = 2's 128 on 112; 512x1536x7168 is
    # a tests shape that takes it too (41 blocks against S = 2's 56)
    assert stream == {(128, 7168, 16384), (512, 1536, 7168)}
    assert v35[(128, 7168, 16384)]["ctas"] == 132 and 2 <= v35[(128, 7168, 16384)]["splits"] <= 4
    for shape in set(v35) - stream:
        assert {**v35[shape], "stream_k": False} == v34[shape]


# The stream-K arithmetic exactly as v35's kernel runs it (its own range_begin, cta_of_unit and
# pieces_of, compiled from its source): per CTA its segments, per tile its pieces.
STREAM_K_MAIN = r'''
#include <cstdio>
#include <cstdlib>
int main(int argc, char** argv) {
    for (int i = 1; i + 2 < argc; i += 3) {
        const int tiles = atoi(argv[i]), blocks = atoi(argv[i + 1]), ctas = atoi(argv[i + 2]), units = tiles * blocks;
        for (int c = 0; c < ctas; ++c) {
            const int u_begin = range_begin(c, units, ctas), u_end = range_begin(c + 1, units, ctas);
            const int tile1 = u_begin / blocks, n1 = (u_end < (tile1 + 1) * blocks ? u_end : (tile1 + 1) * blocks) - u_begin;
            printf("cta %d %d %d %d %d %d\n", i, c, tile1, u_begin % blocks, n1, u_end - u_begin - n1);
        }
        for (int t = 0; t < tiles; ++t) {
            const TilePieces p = pieces_of(t, blocks, units, ctas);
            printf("tile %d %d %d %d %d\n", i, t, p.first_cta, p.pieces, p.sharers);
        }
    }
    return 0;
}
'''


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the host code is compiled as it is)")
def test_gemm_v35_stream_k_segments_cover_every_tile_once_in_k_order():
    from harness.submissions import resolve
    configs = [(56, 256, 132), (48, 112, 132), (28, 256, 132), (7, 50, 129), (1, 100, 9), (3, 4, 5), (13, 31, 100),
               (2, 9, 3)]
    cuda_src = host_tiling._cuda_src(resolve("gemm", "v35").path, "pieces_of(")
    out = host_tiling._run_host(cuda_src, STREAM_K_MAIN, [str(v) for c in configs for v in c])
    ctas, tiles = {}, {}
    for line in out.split("\n"):
        if line.startswith("cta"):
            i, c, tile1, kb1, n1, n2 = map(int, line.split()[1:])
            ctas[(i, c)] = (tile1, kb1, n1, n2)
        elif line.startswith("tile"):
            i, t, first, pieces, sharers = map(int, line.split()[1:])
            tiles[(i, t)] = (first, pieces, sharers)
    for index, (n_tiles, blocks, n_ctas) in enumerate(configs):
        i = 1 + 3 * index
        covered = {t: [] for t in range(n_tiles)}  # (K block, blocks, cta, early) per segment
        for c in range(n_ctas):
            tile1, kb1, n1, n2 = ctas[(i, c)]
            assert n1 >= 1 and n2 >= 0
            covered[tile1].append((kb1, n1, c, n2 > 0))
            if n2:
                assert kb1 + n1 == blocks and tile1 + 1 < n_tiles
                covered[tile1 + 1].append((0, n2, c, False))
        for t, segments in covered.items():
            first, pieces, sharers = tiles[(i, t)]
            assert [s[2] for s in segments] == list(range(first, first + pieces))  # its CTAs, consecutive
            assert [s[0] for s in segments] == [sum(s[1] for s in segments[:p]) for p in range(pieces)]
            assert sum(s[1] for s in segments) == blocks  # K order, no gap, no overlap
            early = [p for p, s in enumerate(segments) if s[3]]
            assert early in ([], [pieces - 1]) and sharers == pieces - len(early)  # only the last piece goes on


def test_timeline_marks_gemm_v35s_stream_k_kernel_with_its_own_phases():
    from harness.submissions import resolve
    text = resolve("gemm", "v35").path.read_text()
    assert timeline.marks_of(text, "gemm") is timeline.STREAM_K_MARKS
    patched = timeline.patched(text, "gemm")
    for i, (_, thread, *_) in enumerate(timeline.STREAM_K_MARKS):
        assert patched.count(f"TIMELINE_MARK({i}, {thread});") == 1
    assert timeline.marks_of(resolve("gemm", "v34").path.read_text(), "gemm") is timeline.MARKS["gemm"]


@pytest.mark.parametrize("version", ["v20", "v21", "v22", "v23", "v24", "v25"])
def test_timeline_marks_dual_gemm_kernels_split_unsplit_and_tails(version):
    from harness.submissions import resolve
    text = resolve("dual_gemm", version).path.read_text()
    marks = timeline.marks_of(text, "dual_gemm")
    assert marks is (timeline.DUAL_MARKS if version == "v20" else timeline.DUAL_TAILS_MARKS)
    patched = timeline.patched(text, "dual_gemm")
    for i, (_, thread, *_) in enumerate(marks):
        assert patched.count(f"TIMELINE_MARK({i}, {thread});") == 1
    names = [m[0] for m in marks]
    # both warpgroups' loop ends are stamped, before the split branch, by their first threads
    loop, loop_up = names.index("K loop"), names.index("K loop up")
    assert f"TIMELINE_MARK({loop}, 128);\n    TIMELINE_MARK({loop_up}, 256);\n    if constexpr (k" in patched
    assert f'EXTENSION_NAME = "nvfp4_dual_gemm_{version}_ablate_timeline"' in patched


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the host code is compiled as it is)")
def test_dual_gemm_v21_adds_helpers_only_where_s_is_1_and_sms_idle_and_v22_launches_as_v21():
    from harness.submissions import resolve
    custom = [(200, 3072, 7168), (128, 6144, 4096), (128, 128, 2048), (128, 3072, 2048), (4608, 384, 2048)]
    shapes = host_tiling.shapes_of("dual_gemm") + custom
    rows = {v: {(r["m"], r["n"], r["k"]): r for r in
                host_tiling.choices(resolve("dual_gemm", v).path, shapes, 132, H100_LIKE_CLUSTERS, "dual_gemm")}
            for v in ("v20", "v21", "v22")}
    v20, v21 = rows["v20"], rows["v21"]
    assert rows["v22"] == v21
    for shape, r in v21.items():
        # the tiles and splits are v20's; helpers come only on top of an S = 1 launch with idle SMs
        assert {k: r[k] for k in ("tiles", "m_tile_rows", "m_tiles", "splits")} == \
            {k: v20[shape][k] for k in ("tiles", "m_tile_rows", "m_tiles", "splits")}
        assert r["ctas"] == r["tiles"] * r["splits"] + r["helpers"]
        if r["helpers"]:  # one wave: every CTA resident, c the fewest tails the idle SMs allow
            c = r["per_helper"]
            assert r["splits"] == 1 and r["ctas"] <= 132 and r["helpers"] == -(-r["tiles"] // c)
            assert (c - 1) * (132 - r["tiles"]) < r["tiles"] <= c * (132 - r["tiles"])
    # 512x3072x7168: 96 tiles of 256 rows, 32 helpers of 3 tails (of 24 of its 112 K blocks)
    assert (v21[(512, 3072, 7168)]["helpers"], v21[(512, 3072, 7168)]["per_helper"]) == (32, 3)
    assert (v21[(4608, 384, 7168)]["helpers"], v21[(4608, 384, 7168)]["per_helper"]) == (22, 5)
    assert v21[(128, 128, 2048)]["helpers"] == 8 and v21[(128, 6144, 4096)]["m_tile_rows"] == 128
    # no helpers where the tail would be under 12 blocks, nor on the other benchmarks
    assert v21[(4608, 384, 2048)]["helpers"] == 0 and v21[(128, 3072, 2048)]["helpers"] == 0
    assert [v21[s]["helpers"] for s in ((256, 4096, 7168), (512, 4096, 7168), (256, 3072, 4096))] == [0, 0, 0]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the host code is compiled as it is)")
def test_dual_gemm_v24_trades_a_split_for_shorter_tiles_with_tails_only_where_its_cost_model_says_so():
    from harness.submissions import resolve
    custom = [(200, 3072, 7168), (128, 6144, 4096), (256, 1536, 4096), (256, 3072, 16384), (1536, 512, 7168)]
    shapes = host_tiling.shapes_of("dual_gemm") + custom
    rows = {v: {(r["m"], r["n"], r["k"]): r for r in
                host_tiling.choices(resolve("dual_gemm", v).path, shapes, 132, H100_LIKE_CLUSTERS, "dual_gemm")}
            for v in ("v23", "v24")}
    v23, v24 = rows["v23"], rows["v24"]
    changed = {shape for shape in v23 if v23[shape] != v24[shape]}
    # only launches that v23 split while leaving SMs idle are candidates, and each becomes S = 1
    for shape in changed:
        assert v23[shape]["splits"] > 1 and v23[shape]["ctas"] < 132
        assert v24[shape]["splits"] == 1 and v24[shape]["ctas"] <= 132
    # 256x3072x4096: 48 tiles x S = 2 on 96 SMs -> 96 tiles of 128 rows and 32 helpers of 3 tails
    r = v24[(256, 3072, 4096)]
    assert (r["tiles"], r["m_tile_rows"], r["splits"], r["helpers"], r["per_helper"]) == (96, 128, 1, 32, 3)
    # the split stays where it fills the SMs (256x4096x7168: 128 CTAs) and where shorter tiles would
    # cost more with SMs idle: 1536x512x7168 (96 CTAs; 96-row tiles would run all 112 blocks at 0.62
    # of the cost each) and 512x768x7168 (S = 4)
    for shape in ((256, 4096, 7168), (1536, 512, 7168), (512, 768, 7168)):
        assert v24[shape] == v23[shape] and v24[shape]["splits"] > 1
    # where K is long the two launches come close (256x3072x16384: 138 against 136 blocks) and the
    # shorter tiles win; 256x1536x4096 (48 CTAs at S = 2) takes 64-row tiles
    assert v24[(256, 1536, 4096)]["m_tile_rows"] == 64
    assert changed == {(256, 3072, 4096), (200, 3072, 7168), (256, 1536, 4096), (256, 3072, 16384)}
    # v25 changes only the split sum's code: its launches are v24's
    v25 = {(r["m"], r["n"], r["k"]): r for r in
           host_tiling.choices(resolve("dual_gemm", "v25").path, shapes, 132, H100_LIKE_CLUSTERS, "dual_gemm")}
    assert v25 == v24


write_rate = _tool("write_rate")


def test_write_rate_keeps_only_the_device_fill_kernels_in_order():
    from types import SimpleNamespace as NS
    cuda, cpu = NS(name="CUDA"), NS(name="CPU")
    events = [NS(name="void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>>", device_type=cuda,
                 device_time_total=3.0),
              NS(name="aten::fill_", device_type=cpu, device_time_total=3.0),  # the host op, not a kernel
              NS(name="void at::native::reduce_kernel<512, 1>", device_type=cuda, device_time_total=9.0),
              NS(name="void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>>", device_type=cuda,
                 device_time_total=5.0)]
    assert write_rate.fill_durations_us(NS(events=lambda: events)) == [3.0, 5.0]
