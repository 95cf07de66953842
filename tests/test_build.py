"""nvfp4 build: compile-only chosen without a GPU (and refused without nvcc), several versions at
once in order, the full build's child on the CPU, and the CLI's exit codes and error lines."""

from __future__ import annotations

import textwrap

import pytest
import torch
from click.testing import CliRunner

from harness import build, cli, compile_only, submissions
from harness.errors import UserError

from test_compile_only import BAD, GOOD, needs_nvcc

ENV = {"COLUMNS": "200"}


def invoke(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args], env=ENV)


def test_choose_mode():
    assert build.choose_mode(False, True, "/usr/bin/nvcc") == "full"
    assert build.choose_mode(False, True, None) == "full"
    assert build.choose_mode(True, True, "/usr/bin/nvcc") == "compile-only"
    assert build.choose_mode(False, False, "/usr/bin/nvcc") == "compile-only"  # automatic without a GPU
    with pytest.raises(UserError, match="without a GPU, build compiles only, and it needs nvcc"):
        build.choose_mode(False, False, None)
    with pytest.raises(UserError, match="--compile-only needs nvcc"):
        build.choose_mode(True, True, None)


def test_build_keeps_order_and_reports_each(monkeypatch):
    subs = [submissions.resolve(p, "v0") for p in ("gemv", "gemm", "dual_gemm", "group_gemm")]
    seen = []
    results = build.build(subs, "compile-only", nvcc="nvcc", jobs=3, on_done=lambda s, r: seen.append(s.problem))
    assert [r.label for r in results] == ["v0"] * 4
    assert all(r.status == compile_only.NO_CUDA for r in results)
    assert sorted(seen) == sorted(["gemv", "gemm", "dual_gemm", "group_gemm"])


def test_full_build_in_a_child(tmp_path):
    ok = build.full_build(submissions.resolve("gemm", "v0"), timeout_s=120)
    assert ok.status == compile_only.OK, ok.message
    broken = tmp_path / "broken.py"
    broken.write_text(textwrap.dedent('''
        raise RuntimeError("nvcc said no")
        def custom_kernel(data):
            return data[-1]
        '''))
    r = build.full_build(submissions.load("gemm", broken, "broken.py"), timeout_s=120)
    assert r.status == compile_only.FAIL and "RuntimeError: nvcc said no" in r.message


def test_all_selects_every_lineage_version():
    """PROBLEM and VERSION 'all' (CI's `build all all`); compiling them is CI's job, not this test's:
    a version whose source includes torch's headers takes a minute."""
    subs = cli._tool_subs("all", "all")
    assert {(s.problem, s.label) for s in subs} >= {(p, "v0") for p in ("gemv", "gemm", "dual_gemm", "group_gemm")}
    assert [s.label for s in cli._tool_subs("gemm", "all")] == [s.label for s in submissions.versions("gemm")]


@needs_nvcc
def test_cli_torch_only_version():
    r = invoke("build", "gemm", "v0", "--compile-only")
    assert r.exit_code == 0, r.output
    assert "no CUDA source (torch only)" in r.stdout and "1 built, 0 failed" in r.stdout


@needs_nvcc
def test_cli_good_and_bad(tmp_path):
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(GOOD)
    bad.write_text(BAD)
    r = invoke("build", "gemm", good, "--compile-only")
    assert r.exit_code == 0, r.output
    assert "scale(float*, int)" in r.stdout and "1,024" in r.stdout and "sm_90a" in r.stdout
    r = invoke("build", "gemm", bad, "--compile-only")
    assert r.exit_code == 1, r.output
    assert "FAIL" in r.stdout and "0 built, 1 failed" in r.stdout
    assert "bad.py does not build" in r.stderr and "undeclared_tile" in r.stderr


def test_cli_refusals(monkeypatch):
    r = invoke("build", "all", "v0")
    assert r.exit_code == 2 and "with PROBLEM all, VERSION must be all too" in r.stderr
    r = invoke("build", "gemmm", "all")
    assert r.exit_code == 2 and "unknown problem" in r.stderr
    monkeypatch.setattr("harness.cuda_tools.find", lambda name: None)
    r = invoke("build", "gemm", "v0", "--compile-only")
    assert r.exit_code == 2 and r.stderr.startswith("error: --compile-only needs nvcc")
    if not torch.cuda.is_available():
        r = invoke("build", "gemm", "v0")
        assert r.exit_code == 2 and "without a GPU, build compiles only" in r.stderr


def test_cli_full_build_table(monkeypatch):
    """The GPU path's table (the build itself stubbed: this machine may have no GPU)."""
    monkeypatch.setattr(cli.runner, "local_capability", lambda: (9, 0))
    monkeypatch.setattr(build, "full_build", lambda sub, timeout_s: compile_only.CompileResult(sub.label, "OK", seconds=1.5))
    r = invoke("build", "gemm", "v0")
    assert r.exit_code == 0, r.output
    assert "build (full, load_inline in a child per version)" in r.stdout and "1.5 s" in r.stdout
    assert "--compile-only gives ptxas" in " ".join(r.stdout.split())
