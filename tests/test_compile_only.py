"""Compile-only: ptxas -v parsing (recorded CUDA 13 output, a CUDA 12-style line order, strict
refusal of an incomplete report), the arch flags, and nvcc on a tiny known-good and known-bad
CUDA source (skipped without nvcc; CI has it). The sources avoid torch headers on purpose:
compiling torch/types.h takes a minute on a small machine."""

from __future__ import annotations

import json
import os
import shlex
import textwrap
from pathlib import Path

import pytest

from harness import compile_only, contract, submissions

DATA = Path(__file__).resolve().parent / "data" / "ptxas"
NVCC = compile_only.find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="needs nvcc (CI has it): none on PATH or in /usr/local/cuda")

GOOD = '''\
"""A tiny known-good CUDA submission.

Arch: sm_90a
"""
NO_IMPLICIT_HEADERS = True
CUDA_SRC = r"""
__global__ void scale(float* x, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.f;
    __syncthreads();
    if (i < n) x[i] = s[255 - threadIdx.x] * 2.f;
}
template <int N> __global__ void local_array(float* x) {
    float a[N];
    for (int i = 0; i < N; i++) a[i] = x[i * threadIdx.x];
    float s = 0;
    for (int i = 0; i < N; i++) s += a[(i * 7) % N] * a[i];
    x[threadIdx.x] = s;
}
template __global__ void local_array<512>(float*);
"""
CUDA_FLAGS = ["-O3"]


def custom_kernel(data):
    return data[-1]
'''
BAD = GOOD.replace("s[255 - threadIdx.x]", "undeclared_tile[255 - threadIdx.x]")


def _sub(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return submissions.load("gemm", path, path.name)


# ------------------------------------------------------------------------------------ parsing
def test_parse_recorded_cuda13_output():
    kernels, problems = compile_only.parse_ptxas((DATA / "cuda13_sm90a.txt").read_text())
    assert problems == []
    by_name = {k.mangled: k for k in kernels}
    assert set(by_name) == {"plain", "_Z3bigILi512EEvPf", "_Z5scalePfi"}
    scale = by_name["_Z5scalePfi"]
    assert (scale.registers, scale.barriers, scale.smem, scale.stack_frame, scale.arch) == (8, 1, 1024, 0, "sm_90a")
    big = by_name["_Z3bigILi512EEvPf"]
    assert (big.registers, big.stack_frame, big.spill_stores, big.spill_loads) == (32, 2048, 0, 0)
    assert big.other == ["2048 bytes cumulative stack size"]  # kept verbatim, not dropped


def test_parse_cuda12_style_spills_and_cmem():
    kernels, problems = compile_only.parse_ptxas((DATA / "cuda12_style_spills.txt").read_text())
    assert problems == []
    (k,) = kernels  # the device function _Z6helperPf is not an entry: no row of its own
    assert (k.registers, k.smem, k.spill_stores, k.spill_loads, k.stack_frame) == (255, 49152, 40, 36, 64)
    assert k.cmem == {"0": 400, "2": 8}


def test_parse_keeps_ptxas_saying_a_kernels_wgmma_are_serialized():
    # NOTE: the C7512 line is ptxas's (group_gemm v84's first build, session 71), the C7511 line's wording ("in the
    # function") dual_gemm v73's first build's (session 86); each comes before its entry's lines
    kernels, problems = compile_only.parse_ptxas((DATA / "wgmma_serialized.txt").read_text())
    assert problems == []
    by_name = {k.mangled: k for k in kernels}
    assert by_name["_Z10persistentv"].wgmma_serialized == "C7512: insufficient register resources"
    assert by_name["_Z5splitv"].wgmma_serialized == "C7511: insufficient register resources for the wgmma pipeline"
    assert by_name["_Z5cleanv"].wgmma_serialized == ""


def test_compile_only_table_warns_of_a_kernel_whose_wgmma_ptxas_serialized(capsys):
    from harness.cli import render
    kernels, _ = compile_only.parse_ptxas((DATA / "wgmma_serialized.txt").read_text())
    result = compile_only.CompileResult(label="v9", status="OK", kernels=kernels, arch="sm_90a")
    render.print_compile_only([type("Sub", (), {"problem": "gemm", "label": "v9"})], [result], several=False)
    warnings = [line for line in capsys.readouterr().out.splitlines() if line.startswith("WARNING")]
    assert warnings == ["WARNING v9 _Z10persistentv: ptxas serialises every wgmma (C7512: insufficient register "
                        "resources); its tensor work runs one instruction at a time",
                        "WARNING v9 _Z5splitv: ptxas serialises every wgmma (C7511: insufficient register resources "
                        "for the wgmma pipeline); its tensor work runs one instruction at a time"]


def test_parse_is_strict():
    kernels, problems = compile_only.parse_ptxas((DATA / "missing_registers.txt").read_text())
    assert kernels == []
    assert problems == ["ptxas output for _Z5scalePfi (sm_90a) could not be parsed: no registers"]
    text = ("ptxas info    : Compiling entry function '_Z1kv' for 'sm_90a'\n"
            "ptxas info    : Function properties for _Z1kv\n"
            "ptxas info    : Used 4 registers\n")
    kernels, problems = compile_only.parse_ptxas(text)
    assert kernels == [] and any("no stack frame" in p for p in problems)


def test_arch_flags():
    assert compile_only.arch_flags("sm_90a", ()) == (["-gencode=arch=compute_90a,code=sm_90a"], "sm_90a")
    assert compile_only.arch_flags("sm_100a", ("-O3",)) == (["-gencode=arch=compute_100a,code=sm_100a"], "sm_100a")
    assert compile_only.arch_flags("any", ()) == (["-gencode=arch=compute_90a,code=sm_90a"], "sm_90a")
    own = ("-gencode=arch=compute_90a,code=sm_90a", "-gencode=arch=compute_100a,code=sm_100a")
    assert compile_only.arch_flags("sm_90a", own) == ([], "sm_90a,sm_100a")


def test_torch_includes_only_for_torch_headers(tmp_path):
    path = tmp_path / "s.py"
    path.write_text('NO_IMPLICIT_HEADERS = True\nCUDA_SRC = "__global__ void k() {}"\n')
    cmd, arch = compile_only.nvcc_command("nvcc", contract.read(path), "sm_90a")
    assert "-isystem" not in cmd and "-Xptxas" in cmd and "-std=c++20" in cmd and arch == "sm_90a"
    path.write_text('CUDA_SRC = "__global__ void k() {}"\nCUDA_FLAGS = ["-std=c++17"]\n')  # load_inline's prelude
    cmd, _ = compile_only.nvcc_command("nvcc", contract.read(path), "sm_90a")
    assert "-isystem" in cmd and "-std=c++20" not in cmd and "-DTORCH_EXTENSION_NAME=nvfp4_compile_check" in cmd


@needs_nvcc
def test_cpp_side_of_a_cuda_extension_sees_the_toolkit_headers(tmp_path, monkeypatch):
    """load_inline compiles main.cpp with CUDA's include paths when there are CUDA sources, so a
    C++ side may take its stream from <c10/cuda/CUDAStream.h> (it needs cuda_runtime_api.h). The
    check must name the toolkit's include folder too, also without CUDA_HOME (it once did not, and
    such versions failed here while building on the GPU machine)."""
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    path = tmp_path / "s.py"
    path.write_text('CUDA_SRC = "__global__ void k() {}"\nCPP_SRC = "#include <c10/cuda/CUDAStream.h>"\n'
                    'FUNCTIONS = []\n')
    cmd = compile_only.cpp_command(contract.read(path))
    folders = [cmd[i + 1] for i, flag in enumerate(cmd) if flag == "-isystem"]
    assert any(Path(f, "cuda_runtime_api.h").exists() for f in folders), folders
    path.write_text('CPP_SRC = "#include <torch/extension.h>"\nFUNCTIONS = []\n')  # no CUDA sources: CPU paths
    cmd = compile_only.cpp_command(contract.read(path))
    folders = [cmd[i + 1] for i, flag in enumerate(cmd) if flag == "-isystem"]
    assert not any(Path(f, "cuda_runtime_api.h").exists() for f in folders if "cuda" in f.lower()), folders


@needs_nvcc
def test_toolkit_include_dir_is_asked_of_nvcc(tmp_path, monkeypatch):
    """The folder holding cuda_runtime_api.h comes from nvcc itself (`nvcc --dryrun`), so a wrapper
    script on PATH whose own folder has no CUDA headers, with CUDA_HOME naming that folder (as torch
    guesses it from such a wrapper), still finds the toolkit's."""
    found = compile_only.toolkit_include_dir(NVCC)
    assert found and Path(found, "cuda_runtime_api.h").is_file(), found
    home = tmp_path / "wrapped"
    (home / "bin").mkdir(parents=True)
    (home / "include").mkdir()
    wrapper = home / "bin" / "nvcc"
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(NVCC)} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("CUDA_HOME", str(home))
    assert any(Path(d, "cuda_runtime_api.h").is_file() for d in compile_only._nvcc_reported_dirs(str(wrapper)))
    assert compile_only.toolkit_include_dir(str(wrapper)) == found


@needs_nvcc
def test_toolkit_include_is_added_whatever_torch_build(monkeypatch):
    """A CUDA build of torch names CUDA_HOME/include, which may lack the headers (CUDA_HOME a
    wrapper's folder): the toolkit's folder is added. Where torch already names it, under any
    spelling (here <include>/../include), it is not added twice."""
    from torch.utils import cpp_extension

    own = cpp_extension.include_paths()
    toolkit = compile_only.toolkit_include_dir()
    monkeypatch.setattr(cpp_extension, "include_paths", lambda *a, **k: [*own, "/usr/local/include"])
    folders = compile_only._torch_includes(for_cuda=True)[1::2]
    assert toolkit in folders and "/usr/local/include" in folders
    assert toolkit not in compile_only._torch_includes(for_cuda=False)[1::2]
    monkeypatch.setattr(cpp_extension, "include_paths", lambda *a, **k: [*own, os.path.join(toolkit, "..", "include")])
    folders = compile_only._torch_includes(for_cuda=True)[1::2]
    assert [os.path.realpath(f) for f in folders].count(os.path.realpath(toolkit)) == 1, folders


def test_names_torch_sees_code_not_comments():
    assert not compile_only.names_torch("// no torch headers: compiles alone\n__global__ void k() {}")
    assert not compile_only.names_torch("/* at:: and torch:: only in a comment */ int data_at = 0;")
    assert compile_only.names_torch("void f(torch::Tensor t);")
    assert compile_only.names_torch("auto s = at::cuda::getCurrentCUDAStream();")
    assert compile_only.names_torch("#include <ATen/cuda/CUDAContext.h>\n")
    assert compile_only.names_torch("TORCH_CHECK(x > 0, \"x\");")
    assert compile_only.names_torch("C10_CUDA_KERNEL_LAUNCH_CHECK ();")


@needs_nvcc
def test_fast_check_retries_with_the_prelude(tmp_path, monkeypatch):
    """A source that names nothing of torch compiles without load_inline's torch prelude (fast); if
    that fails, the compile with the prelude decides, so a header only the prelude supplied is no
    false failure. A light stand-in prelude (<vector>) keeps the test fast."""
    monkeypatch.setattr(contract, "IMPLICIT_CUDA_PRELUDE", ("#include <vector>",))
    uses_vector = GOOD.replace("NO_IMPLICIT_HEADERS = True\n", "").replace(
        "template <int N>", "inline int first(const std::vector<int>& v) { return v[0]; }\ntemplate <int N>")
    result = compile_only.check(_sub(tmp_path, "needs_prelude", uses_vector), NVCC)
    assert result.status == compile_only.OK, result.message
    commands = Path(result.log).with_name("command.txt").read_text()
    assert "again with the prelude" in commands
    plain = compile_only.check(_sub(tmp_path, "plain", GOOD.replace("NO_IMPLICIT_HEADERS = True\n", "")), NVCC)
    assert plain.status == compile_only.OK and "again" not in Path(plain.log).with_name("command.txt").read_text()
    assert "#include <vector>" not in Path(plain.log).with_name("cuda.cu").read_text()  # the fast path ran
    broken = compile_only.check(_sub(tmp_path, "broken", BAD.replace("NO_IMPLICIT_HEADERS = True\n", "")), NVCC)
    assert broken.status == compile_only.FAIL and "undeclared_tile" in broken.message


@needs_nvcc
@pytest.mark.slow
def test_cpp_side_uses_the_torch_pch_and_still_reports_errors(tmp_path):
    """main.cpp's <torch/extension.h> comes from a precompiled header built once per build cache
    (~60 s here, then ~10 s per version instead of ~36); errors in the C++ side are still found."""
    with_torch = GOOD.replace("NO_IMPLICIT_HEADERS = True\n", "").replace(
        'CUDA_FLAGS = ["-O3"]',
        'CPP_SRC = "torch::Tensor twice(const torch::Tensor& x) { return x * 2; }"\nFUNCTIONS = ["twice"]\n'
        'CUDA_FLAGS = ["-O3"]')
    good = compile_only.check(_sub(tmp_path, "torch_good", with_torch), NVCC)
    assert good.status == compile_only.OK, good.message
    commands = Path(good.log).with_name("command.txt").read_text()
    assert "-include" in commands and "torch_extension.h" in commands
    assert "not used because" not in Path(good.log).read_text()  # -Winvalid-pch says so when GCC refuses it
    bad = compile_only.check(_sub(tmp_path, "torch_bad", with_torch.replace("x * 2", "x * undeclared_factor")), NVCC)
    assert bad.status == compile_only.FAIL and "undeclared_factor" in bad.message, bad.message


def test_error_excerpt_starts_at_the_error_and_hints():
    out = "In file included from x.h:1,\n  from cuda.cu:4:\nfatal error: cusparse.h: No such file or directory\n"
    text = compile_only.error_excerpt(out)
    assert text.startswith("fatal error: cusparse.h") and "c10/cuda/CUDAStream.h" in text


# -------------------------------------------------------------------------------------- nvcc
@needs_nvcc
def test_known_good_compiles_with_resources_then_is_cached(tmp_path):
    sub = _sub(tmp_path, "good", GOOD)
    first = compile_only.check(sub, NVCC)
    assert first.status == compile_only.OK, first.message
    assert not first.cached and first.arch == "sm_90a"
    by_name = {k.name: k for k in first.kernels}
    assert set(by_name) == {"scale(float*, int)", "void local_array<512>(float*)"}  # demangled
    assert by_name["scale(float*, int)"].smem == 1024 and by_name["scale(float*, int)"].barriers == 1
    assert by_name["void local_array<512>(float*)"].stack_frame > 0
    second = compile_only.check(sub, NVCC)
    assert second.cached and second.status == compile_only.OK and len(second.kernels) == 2
    assert json.loads((Path(first.log).parent / "result.json").read_text())["status"] == "OK"


@needs_nvcc
def test_known_bad_reports_the_compiler_error(tmp_path):
    result = compile_only.check(_sub(tmp_path, "bad", BAD), NVCC)
    assert result.status == compile_only.FAIL and not result.ok
    assert "nvcc exited with code" in result.message
    assert 'identifier "undeclared_tile" is undefined' in result.message


def test_torch_only_and_unreadable_contract(tmp_path):
    v0 = submissions.resolve("gemm", "v0")
    r = compile_only.check(v0, NVCC or "nvcc")
    assert r.status == compile_only.NO_CUDA and r.ok and r.message == "no CUDA source (torch only)"
    sub = _sub(tmp_path, "dynamic", textwrap.dedent('''
        CUDA_SRC = open("kernel.cu").read()
        def custom_kernel(data):
            return data[-1]
        '''))
    r = compile_only.check(sub, NVCC or "nvcc")
    assert r.status == compile_only.FAIL and "line 2: CUDA_SRC must be a literal" in r.message


@needs_nvcc
def test_cpp_side_error_is_reported(tmp_path):
    """The bindings name a function the declarations do not have (the host compiler's check)."""
    text = GOOD.replace("CUDA_FLAGS", 'CPP_SRC = "void run(int n);"\nFUNCTIONS = ["run", "missing"]\nCUDA_FLAGS')
    text = text.replace("NO_IMPLICIT_HEADERS = True", "NO_IMPLICIT_HEADERS = True\nCPP_FLAGS = ['-include', 'pybind_stub.h']")
    # A stand-in for pybind11 and torch's wrapper keeps the test fast (torch/extension.h takes a minute).
    (tmp_path / "pybind_stub.h").write_text(
        "struct Module { template <class... A> void def(A...) {} };\n"
        "#define PYBIND11_MODULE(name, m) void init_module(Module m)\n"
        "namespace torch { template <class F> int wrap_pybind_function(F f) { return 0; } }\n")
    text = text.replace("['-include', 'pybind_stub.h']", f"['-include', '{tmp_path / 'pybind_stub.h'}']")
    result = compile_only.check(_sub(tmp_path, "cpp_bad", text), NVCC)
    assert result.status == compile_only.FAIL
    assert "the C++ side (main.cpp: CPP_SRC and FUNCTIONS) failed" in result.message
    assert "'missing' was not declared" in result.message, result.message
    assert len(result.kernels) == 2  # the CUDA side compiled: both sides are reported
    fixed = compile_only.check(_sub(tmp_path, "cpp_good", text.replace(', "missing"', "")), NVCC)
    assert fixed.status == compile_only.OK, fixed.message


def test_shim_header_is_written_safely_by_concurrent_builds(tmp_path, monkeypatch):
    """`nvfp4 build all` compiles versions in threads of one process; each may create the shim."""
    import concurrent.futures

    monkeypatch.setenv("NVFP4_BUILD_DIR", str(tmp_path))
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        flags = list(pool.map(lambda _: compile_only._shim_include(), range(64)))
    assert all(f == flags[0] for f in flags)
    assert not list(tmp_path.rglob("*.tmp"))
