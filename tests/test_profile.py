"""nvfp4 profile: the ncu CSV parser on a raw page recorded on an H200 and on small hand-written
tables (units, thousands separators, strict refusals), the summary's arithmetic, the source page's
parser (--sass) on a recorded page and hand-written ones, torch.profiler through the CLI on the CPU,
and (GPU) the kernel table and --ncu summary with and without --sass."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from harness import cli, cuda_tools, profile

DATA = Path(__file__).resolve().parent / "data" / "ncu"
PLANTED = Path(__file__).resolve().parent / "planted"
H200 = {"bf16_tflops": 989.0, "copy_tbps": 4.8, "source": "datasheet"}


def invoke(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args], env={"COLUMNS": "200"})


def test_parse_recorded_raw_page():
    kernels = profile.parse_ncu_csv((DATA / "raw_gemv_smem_race.csv").read_text())
    assert len(kernels) == 19
    k = kernels[-1]
    assert k.name == "copy_through_shared(const __half *, __half *, float *, long)"
    assert (k.block, k.grid) == ("(128, 1, 1)", "(1, 1, 1)")
    assert k.duration_us == pytest.approx(2.144)  # ncu's ns, in µs
    assert k.metrics["launch__registers_per_thread"] == 17
    assert k.metrics["sm__warps_active.avg.pct_of_peak_sustained_active"] == pytest.approx(6.23)
    assert k.metrics["device__attribute_clock_rate"] == 1_980_000  # "1,980,000": separators dropped
    assert k.dram_bytes == pytest.approx(k.metrics["dram__bytes_read.sum"] + k.metrics["dram__bytes_write.sum"])


def test_summary_of_recorded_page():
    kernels = profile.parse_ncu_csv((DATA / "raw_gemv_smem_race.csv").read_text())
    flops = 2.0 * 128 * 256
    s = profile.ncu_summary(kernels, calls=1, flops=flops, ceilings=H200)
    total = sum(k.duration_us for k in kernels)
    assert s["duration_us"] == pytest.approx(total) and s["kernels_per_call"] == 19
    assert s["tflops"] == pytest.approx(flops / (total * 1e-6) / 1e12)
    assert s["dram_gbps"] == pytest.approx(sum(k.dram_bytes for k in kernels) / (total * 1e-6) / 1e9)
    assert s["pct_of_copy"] == pytest.approx(100 * s["dram_gbps"] / 4800)
    reasons = [t["reason"] for t in s["top_stalls"]]
    assert reasons[0] == "long_scoreboard" and "selected" not in reasons and len(reasons) == 5
    assert sum(t["share"] for t in s["top_stalls"]) <= 1.0
    assert 0 < s["achieved_occupancy_pct"] < s["theoretical_occupancy_pct"] <= 100


HEADER = '"ID","Kernel Name","Block Size","Grid Size","gpu__time_duration.sum","dram__bytes_read.sum","dram__bytes_write.sum"'


def test_units_are_converted():
    text = "\n".join(["==PROF== a note ncu prints unquoted", HEADER,
                      '"","","","","usecond","Mbyte","Kbyte"',
                      '"0","k1","(128, 1, 1)","(4, 1, 1)","1.5","2","500"',
                      '"1","k2","(128, 1, 1)","(4, 1, 1)","0.5","1","0"'])
    k1, k2 = profile.parse_ncu_csv(text)
    assert (k1.duration_us, k1.dram_bytes) == (1.5, 2e6 + 5e5)
    s = profile.ncu_summary([k1, k2], calls=2, flops=1e9, ceilings=None)
    assert s["duration_us"] == pytest.approx(1.0)  # two calls: per call
    assert s["tflops"] == pytest.approx(1e9 / 1e-6 / 1e12) and "pct_of_bf16" not in s


def test_unit_throughputs_per_kernel_and_time_weighted():
    header = HEADER + (',"lts__t_sectors.avg.pct_of_peak_sustained_elapsed"'
                       ',"sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"')
    text = "\n".join([header, '"","","","","usecond","byte","byte","%","%"',
                      '"0","prepass","(256, 1, 1)","(64, 1, 1)","1","0","0","20","0"',
                      '"1","gemm","(384, 1, 1)","(112, 1, 1)","3","0","0","80","60"'])
    prepass, gemm = profile.parse_ncu_csv(text)
    assert profile.unit_pcts(gemm.metrics) == {"L2": 80.0, "shared": None, "tensor": 60.0}
    s = profile.ncu_summary([prepass, gemm], calls=1, flops=1e9, ceilings=None)
    assert s["units_pct"]["L2"] == pytest.approx((20 * 1 + 80 * 3) / 4)  # weighted by each kernel's time
    assert s["units_pct"]["tensor"] == pytest.approx(45.0) and s["units_pct"]["shared"] is None
    # the whole set travels as one regex, so a GPU lacking one of the names cannot fail the run
    assert profile.NCU_UNIT_REGEX.startswith("regex:") and "lts__t_sectors" in profile.NCU_UNIT_REGEX


@pytest.mark.parametrize("text, needle", [
    ("", "no CSV table"),
    ("==ERROR== ERR_NVGPUCTRPERM", "no CSV table"),
    (HEADER + '\n"","","","","ns","byte","byte"\n', "profiled no kernel"),
    ('"ID","Kernel Name"\n"0","k"\n', "no gpu__time_duration.sum column"),
    (HEADER + '\n"","","","","ns","byte","byte"\n"0","k","(1, 1, 1)","(1, 1, 1)","n/a","1","1"\n', "no duration"),
])
def test_parse_is_strict(text, needle):
    with pytest.raises(ValueError, match=needle):
        profile.parse_ncu_csv(text)


def test_parse_recorded_source_page():
    prepass, gemm = profile.parse_ncu_source((DATA / "source_group_gemm_v89.csv").read_text())
    assert prepass.name == "decode_a_kernel(Problem)" and len(prepass.lines) == 30
    assert gemm.name.startswith("void group_gemm_kernel<Ring<(int)256, (int)6>") and len(gemm.lines) == 50
    assert sum("HGMMA.64x" in line.source for line in gemm.lines) >= 2
    first = prepass.lines[0]
    assert (first.address, first.source.strip(), first.samples) == ("0x7f6da77f4500", "LDC R1, c[0x0][0x28]", 16)
    assert first.reasons == {"no_inst": 16}  # the (Not Issued) copy of the same column is not a second reason
    for k in (prepass, gemm):
        assert k.samples == sum(line.samples for line in k.lines) > 0
        assert all(sum(line.reasons.values()) <= line.samples for line in k.lines)  # the issued samples are not stalls
        assert "selected" not in k.reasons() and list(k.reasons().values()) == sorted(k.reasons().values(), reverse=True)
        assert [line.samples for line in k.top(5)] == sorted((line.samples for line in k.lines), reverse=True)[:5]
        assert all(line.samples for line in k.top(len(k.lines)))  # an unsampled instruction is no row


SOURCE_HEADER = ('"Address","Source","Warp Stall Sampling (All Samples)","smsp__pcsamp_warps_issue_stalled_wait",'
                 '"smsp__pcsamp_warps_issue_stalled_wait_not_issued","smsp__pcsamp_warps_issue_stalled_selected"')


def test_source_page_reasons_by_metric_name_and_thousands():
    text = "\n".join(['"Kernel Name","k",', SOURCE_HEADER,
                      '"0x10","  HGMMA.64x96x16.F32 R24, R80, gdesc[UR4], R24","1,204","1,000","900","204"',
                      '"0x20","  BRA 0x10","6","0","0","6"'])
    (k,) = profile.parse_ncu_source(text)
    assert k.name == "k" and k.samples == 1210
    assert k.lines[0].reasons == {"wait": 1000} and k.lines[1].reasons == {}
    assert k.reasons() == {"wait": 1000} and k.top(1)[0].address == "0x10" and len(k.top(5)) == 2


def test_source_page_loops_by_back_edge():
    rows = [("0x100", "MOV R1, 0x1", 5, 5), ("0x110", "HGMMA.64x96x16.F32 R24, R80, gdesc[UR4], R24", 40, 10),
            ("0x120", "LOP3.LUT R2, R2, 0xf, RZ, 0xc0, !PT", 30, 30), ("0x130", "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR5], R3", 8, 8),
            ("0x140", "@!P0  BRA 0x130", 7, 7),  # a wait's spin: no HGMMA inside, no loop
            ("0x150", "@P1   BRA 0x110", 6, 6),  # the back-edge around the HGMMA
            ("0x160", "BRA 0x100", 0, 0),  # unpredicated: a slow path's return, never a loop
            ("0x170", "EXIT", 4, 4)]
    text = "\n".join(['"Kernel Name","k",', SOURCE_HEADER] +
                     [f'"{a}","  {s}","{n}","{w}","0","{n - w}"' for a, s, n, w in rows])
    (k,) = profile.parse_ncu_source(text)
    (loop,) = k.loops
    assert (loop.first, loop.last, loop.instructions, loop.shape) == ("0x110", "0x150", 5, "64x96x16")
    assert loop.samples == 40 + 30 + 8 + 7 + 6 and loop.reasons == {"wait": 10 + 30 + 8 + 7 + 6}


def test_source_page_drops_a_kernels_repeated_table():
    # NOTE: the shape of session 87's source page: each kernel's table twice, the same rows
    prepass = ['"Kernel Name","prepass",', SOURCE_HEADER, '"0x10","  LDG.E R2, desc[UR4][R2.64]","7","7","0","0"']
    gemm = ['"Kernel Name","gemm",', SOURCE_HEADER, '"0x10","  HGMMA.64x96x16.F32 R24, R80, gdesc[UR4], R24","9","9","0","0"']
    sampled = profile.parse_ncu_source("\n".join(prepass + prepass + gemm + gemm))
    assert [k.name for k in sampled] == ["prepass", "gemm"]
    timed = [profile.NcuKernel("prepass", 2.0, 0.0), profile.NcuKernel("gemm", 10.0, 0.0)]
    assert profile.loop_time(sampled, timed)[profile.OUTSIDE_LOOPS] == pytest.approx(12.0)
    # two launches of one kernel, sampled apart, stay two
    other = gemm[:2] + ['"0x10","  HGMMA.64x96x16.F32 R24, R80, gdesc[UR4], R24","8","8","0","0"']
    assert [k.name for k in profile.parse_ncu_source("\n".join(gemm + other))] == ["gemm", "gemm"]


def test_loop_time_splits_each_kernels_time_by_its_samples():
    loop_rows = [("0x110", "HGMMA.64x96x16.F32 R24, R80, gdesc[UR4], R24", 60), ("0x120", "@P1  BRA 0x110", 20),
                 ("0x130", "EXIT", 20)]
    page = "\n".join(['"Kernel Name","prepass",', SOURCE_HEADER, '"0x10","  LDG.E R2, desc[UR4][R2.64]","7","7","0","0"',
                      '"Kernel Name","gemm",', SOURCE_HEADER] +
                     [f'"{a}","  {s}","{n}","{n}","0","0"' for a, s, n in loop_rows])
    sampled = profile.parse_ncu_source(page)
    timed = [profile.NcuKernel("prepass", 2.0, 0.0), profile.NcuKernel("gemm", 10.0, 0.0)]
    times = profile.loop_time(sampled, timed)
    # the GEMM's 10 µs split 80 / 20 by its samples; the prepass has no loop: all of it outside
    assert times == pytest.approx({"64x96x16": 8.0, profile.OUTSIDE_LOOPS: 2.0 + 2.0})
    with pytest.raises(ValueError, match="2 kernels and the raw page 1"):
        profile.loop_time(sampled, timed[:1])


def test_cli_other_version_needs_ncu_sass_and_another_file():
    r = invoke("profile", "gemm", "v0", "v1")
    assert r.exit_code == 2 and "OTHER needs --ncu --sass" in r.stderr
    r = invoke("profile", "gemm", "v0", "v0", "--ncu", "--sass", "3")
    assert r.exit_code == 2 and "are the same file" in r.stderr


@pytest.mark.parametrize("text, needle", [
    ("", "no source table"),
    ('"Kernel Name","k",\n"ID","Kernel Name"\n', "no source table"),
    ('"Kernel Name","k",\n' + SOURCE_HEADER + '\n"0x10","NOP","0","0","0","0"\n', "no warp-state samples"),
])
def test_source_parse_is_strict(text, needle):
    with pytest.raises(ValueError, match=needle):
        profile.parse_ncu_source(text)


def test_ncu_import_failures_are_user_errors(tmp_path):
    from harness.errors import UserError
    failing, slow = tmp_path / "failing-ncu", tmp_path / "slow-ncu"
    failing.write_text("#!/bin/sh\necho '==ERROR== cannot open the report' >&2\nexit 3\n")
    slow.write_text("#!/bin/sh\nsleep 5\n")
    for script in (failing, slow):
        script.chmod(0o755)
    with pytest.raises(UserError, match="exited with code 3: ==ERROR== cannot open the report"):
        profile._import(str(failing), tmp_path / "r.ncu-rep", ("--page", "source"), 5.0)
    with pytest.raises(UserError, match="timed out after 0.2 s"):
        profile._import(str(slow), tmp_path / "r.ncu-rep", ("--page", "raw"), 0.2)


def test_cli_torch_profiler_on_this_machine():
    r = invoke("profile", "gemm", "v0", "--shape", "m=64,n=128,k=256", "--calls", "2")
    assert r.exit_code == 0, r.output
    assert "2 calls" in r.stdout and "per custom_kernel call" in r.stdout
    if not torch.cuda.is_available():
        assert "CPU operators" in r.stdout and "aten::" in r.stdout and "device: CPU" in r.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for machines without a GPU")
def test_cli_ncu_refused_without_gpu():
    r = invoke("profile", "gemm", "v0", "--ncu")
    assert r.exit_code == 2 and r.stderr.startswith("error: --ncu needs an NVIDIA GPU")


@pytest.mark.gpu
def test_gpu_torch_profiler_lists_kernels():
    r = invoke("profile", "gemv", PLANTED / "smem_race.py", "--shape", "tests:0", "--calls", "3")
    assert r.exit_code == 0, r.output
    assert "GPU kernels, 3 calls" in r.stdout and "copy_through_shared" in r.stdout


@pytest.mark.gpu
@pytest.mark.skipif(cuda_tools.find("ncu") is None, reason="needs ncu")
def test_gpu_ncu_summary():
    r = invoke("profile", "gemv", PLANTED / "smem_race.py", "--shape", "tests:0", "--ncu")
    assert r.exit_code == 0, r.output
    out = " ".join(r.stdout.split())
    assert "copy_through_shared" in out and "per custom_kernel call:" in out and "TFLOP/s" in out
    assert "GB/s" in out and "occupancy (time-weighted)" in out and "top stall reasons" in out
    assert ".ncu-rep" in out and "warp samples" not in out


@pytest.mark.gpu
@pytest.mark.skipif(cuda_tools.find("ncu") is None, reason="needs ncu")
def test_gpu_ncu_sass_lines():
    r = invoke("profile", "gemv", PLANTED / "smem_race.py", "--shape", "tests:0", "--ncu", "--sass", "4")
    assert r.exit_code == 0, r.output
    out = " ".join(r.stdout.split())
    assert "copy_through_shared" in out and "warp samples, stalled in" in out and ".sass.csv" in out
    assert "wgmma loop" not in out  # the planted kernel has none


@pytest.mark.gpu
@pytest.mark.skipif(cuda_tools.find("ncu") is None, reason="needs ncu")
def test_gpu_ncu_two_versions_by_loop():
    r = invoke("profile", "gemm", "v1", "v2", "--shape", "tests:0", "--ncu", "--sass", "2")
    assert r.exit_code == 0, r.output
    out = " ".join(r.stdout.split())
    assert "by wgmma loop" in out and "outside the wgmma loops" in out and "all kernels" in out
