"""harness.fast_build: the harness's load_inline leaves out torch/types.h only for a CUDA source
that names nothing of torch, gives main.cpp the precompiled torch/extension.h, keeps a user's own
arguments, builds as written where the fast build fails (and remembers that), and a C++-only
extension built through it imports and runs."""

from __future__ import annotations

import functools

import pytest
from torch.utils import cpp_extension

from harness import fast_build

PCH = ["-include", "/pch/torch_extension.h", "-Winvalid-pch"]
KERNEL = "__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\nvoid run(long p) { k<<<1, 32>>>((float*)p); }\n"


class Recorder:
    """Stands in for torch's load_inline (its signature, through __wrapped__): records each call's
    arguments; ``fail_first`` raises as a failed build does on the first call."""

    def __init__(self, fail_first: bool = False):
        self.calls: list[dict] = []
        self.fail_first = fail_first

        @functools.wraps(cpp_extension.load_inline)
        def load_inline(*args, **kwargs):
            self.calls.append(kwargs)
            if self.fail_first and len(self.calls) == 1:
                cpp_extension.JIT_EXTENSION_VERSIONER.entries[kwargs["name"]] = "a failed build's version"
                raise RuntimeError("Error building extension 'ext':\ncuda.cu(3): error: identifier \"std\" is undefined")
            return "module"

        self.fn = load_inline


@pytest.fixture
def pch(monkeypatch):
    """No real PCH (building one takes ~25 s): pch_flags reports what it was asked and gives PCH."""
    asked = []
    monkeypatch.setattr(fast_build, "pch_flags", lambda *args, **kwargs: asked.append(args) or list(PCH))
    return asked


def call(recorder, *args, **kwargs):
    """One load_inline call as a submission makes it at import, with the harness's in place."""
    inner = cpp_extension.load_inline
    cpp_extension.load_inline = recorder.fn
    try:
        with fast_build.installed():
            return cpp_extension.load_inline(*args, **kwargs)
    finally:
        cpp_extension.load_inline = inner


def test_a_cuda_source_naming_nothing_of_torch_is_built_without_torch_types_h(pch, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    r = Recorder()
    assert call(r, "ext", "void run(long p);", KERNEL, functions=["run"], extra_cuda_cflags=["-O3"]) == "module"
    (got,) = r.calls
    assert got["no_implicit_headers"] is True
    # torch/types.h's line kept as a comment: the compiler's line numbers are load_inline's
    assert got["cuda_sources"] == [fast_build.OMITTED_TYPES_H, *fast_build.CUDA_HEADERS, KERNEL]
    assert got["cpp_sources"] == [fast_build.EXTENSION_H, "void run(long p);"]  # main.cpp as load_inline writes it
    assert got["extra_cuda_cflags"] == ["-O3"] and got["extra_cflags"] == PCH and got["functions"] == ["run"]


@pytest.mark.parametrize("source", ["#include <torch/types.h>\n" + KERNEL, KERNEL + "at::Tensor f(at::Tensor x);\n",
                                    KERNEL + "void g() { TORCH_CHECK(true); }\n"])
def test_a_cuda_source_naming_torch_keeps_the_prelude(pch, source):
    r = Recorder()
    call(r, "ext", ["void run(long p);"], [source], extra_cflags=["-O2"])
    (got,) = r.calls
    assert "no_implicit_headers" not in got and got["cuda_sources"] == [source]
    assert got["cpp_sources"] == ["void run(long p);"]
    assert got["extra_cflags"] == ["-O2", *PCH]  # the user's flags first, kept


def test_a_source_without_implicit_headers_is_built_as_written(pch):
    r = Recorder()
    call(r, "ext", "#include <Python.h>", KERNEL, no_implicit_headers=True, extra_cflags=["-O2"])
    (got,) = r.calls
    assert got == {"name": "ext", "cpp_sources": "#include <Python.h>", "cuda_sources": KERNEL,
                   "no_implicit_headers": True, "extra_cflags": ["-O2"]}
    assert pch == []  # no torch/extension.h in main.cpp: nothing to precompile


def test_without_a_pch_a_cpp_only_call_is_untouched(monkeypatch):
    monkeypatch.setattr(fast_build, "pch_flags", lambda *args, **kwargs: [])
    r = Recorder()
    call(r, "ext", "int f() { return 1; }", functions="f", verbose=False)
    assert r.calls == [{"name": "ext", "cpp_sources": "int f() { return 1; }", "functions": "f", "verbose": False}]


def test_a_failed_fast_build_is_built_as_written_and_remembered(pch, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    monkeypatch.setattr(cpp_extension.JIT_EXTENSION_VERSIONER, "entries", {})
    told = []
    r = Recorder(fail_first=True)
    cpp_extension.load_inline, inner = r.fn, cpp_extension.load_inline
    try:
        with fast_build.installed(told.append):
            assert cpp_extension.load_inline("ext", "void run(long p);", KERNEL, extra_cflags=["-O2"]) == "module"
        fast_try, as_written = r.calls
        assert fast_try["no_implicit_headers"] is True
        assert as_written == {"name": "ext", "cpp_sources": "void run(long p);", "cuda_sources": KERNEL,
                              "extra_cflags": ["-O2"]}
        # the failed build's version forgotten: the build as written keeps the name later imports use
        assert cpp_extension.JIT_EXTENSION_VERSIONER.entries == {}
        assert len(told) == 1 and 'identifier "std" is undefined' in told[0] and "building as written" in told[0]
        # a later import (another process: the marker in the build folder) builds as written at once
        fast_build._FAILED_HERE.clear()
        with fast_build.installed():
            cpp_extension.load_inline("ext", "void run(long p);", KERNEL, extra_cflags=["-O2"])
        assert r.calls[2] == as_written and len(r.calls) == 3
    finally:
        cpp_extension.load_inline = inner
        fast_build._FAILED_HERE.clear()


def test_a_build_failing_as_written_too_reports_its_own_error(pch, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))

    @functools.wraps(cpp_extension.load_inline)
    def broken(*args, **kwargs):
        raise RuntimeError("no_implicit_headers" in kwargs and "fast error" or "the real error")

    cpp_extension.load_inline, inner = broken, cpp_extension.load_inline
    try:
        with fast_build.installed(), pytest.raises(RuntimeError, match="^the real error$"):
            cpp_extension.load_inline("ext", "", KERNEL)
    finally:
        cpp_extension.load_inline = inner
        fast_build._FAILED_HERE.clear()


def test_every_import_of_a_submission_builds_through_it(pch, tmp_path, monkeypatch):
    from harness import loader, submissions

    r = Recorder()
    monkeypatch.setattr(cpp_extension, "load_inline", r.fn)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", "untouched")  # restored after the test: the import sets it
    path = tmp_path / "submission_v3.py"
    path.write_text('"""Version: v3"""\nfrom torch.utils.cpp_extension import load_inline\n'
                    f"_m = load_inline('ext', 'void run(long p);', {KERNEL!r}, functions=['run'])\n"
                    "def custom_kernel(data):\n    return _m\n")
    sub = submissions.load("gemm", path, "v3")
    assert loader.import_submission(sub.path, sub.label)(None) == "module"
    (got,) = r.calls
    assert got["no_implicit_headers"] is True and got["extra_cflags"] == PCH
    assert cpp_extension.load_inline is r.fn  # put back after the import


def test_torch_load_inline_is_restored_after_the_import():
    before = cpp_extension.load_inline
    with fast_build.installed():
        assert cpp_extension.load_inline is not before and cpp_extension.load_inline.__wrapped__ is before
    assert cpp_extension.load_inline is before


def test_the_pch_flags_are_torchs_own_for_main_cpp():
    command = fast_build._torch_cxx_command(False, ("-O1",), (), ())
    assert command is not None
    assert any(f.startswith("-std=") for f in command) and "-fPIC" in command and command[-1] == "-O1"
    assert "-DTORCH_API_INCLUDE_EXTENSION_H" in command  # as torch writes it for main.cpp
    assert not any(f.startswith("-DTORCH_EXTENSION_NAME") for f in command)  # per version: left out of the PCH


@pytest.mark.slow
def test_a_cpp_only_extension_built_through_it_uses_the_pch_and_runs(tmp_path, monkeypatch, capfd):
    """The real build (torch's load_inline, GCC, ninja): the first build names the header and does not
    wait for its PCH, which is built beside it; a second one finds the PCH, which GCC accepts
    (-Winvalid-pch says 'not used because' where it refuses one), and both extensions work.
    Slow: the PCH's first build is ~25 s of a 2-core machine, each main.cpp and link ~15 more."""
    import torch

    monkeypatch.setenv("NVFP4_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.delenv("NVFP4_EXTENSIONS_DIR", raising=False)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    modules = []
    for name in ("nvfp4_fast_build_probe", "nvfp4_fast_build_probe_again"):
        with fast_build.installed():
            modules.append(cpp_extension.load_inline(name, "torch::Tensor twice(torch::Tensor x) { return x * 2; }",
                                                     functions=["twice"], verbose=True))
        out = capfd.readouterr().out
        assert "-include" in out and "torch_extension.h -Winvalid-pch" in out and "not used because" not in out
        assert list((tmp_path / "build").rglob("torch_extension.h.gch")), "the PCH is built by the end of the first import"
    for module in modules:
        assert torch.equal(module.twice(torch.arange(3.0)), torch.tensor([0.0, 2.0, 4.0]))


def test_a_build_never_waits_for_the_pch(tmp_path, monkeypatch):
    """The flags name the header at once; its PCH is built beside the build (a thread this import
    joins), so a fresh machine's first build costs what load_inline's own does."""
    import threading

    monkeypatch.setattr(fast_build, "_torch_cxx_command", lambda *args: ["g++", "-std=c++17"])
    monkeypatch.setattr(fast_build, "is_gcc", lambda compiler: True)
    monkeypatch.setattr(fast_build.build_cache, "pch_dir", lambda: tmp_path)
    started, release = threading.Event(), threading.Event()

    def slow_precompile(command, header, on_progress, wait):
        assert wait is False
        started.set()
        release.wait(10)
        return True

    monkeypatch.setattr(fast_build, "_precompile", slow_precompile)
    flags = fast_build.pch_flags(False, [], [], [])
    header = flags[1]
    assert flags == ["-include", header, "-Winvalid-pch"] and open(header).read() == fast_build.HEADER_TEXT
    assert started.wait(10) and not release.is_set()  # the flags came back while the PCH was being built
    release.set()
    fast_build.join_pch_builds()
    assert not fast_build._BUILDING


def test_the_header_is_written_once_and_never_rewritten(tmp_path, monkeypatch):
    """ninja rebuilds main.o when a header's mtime moves: a second asker finds the first one's file."""
    import os

    first = fast_build.pch_header(["g++", "-O2"], tmp_path)
    os.utime(first, (1, 1))
    assert fast_build.pch_header(["g++", "-O2"], tmp_path) == first and os.stat(first).st_mtime == 1
    assert fast_build.pch_header(["g++", "-O3"], tmp_path) != first  # other flags, another PCH
    assert [p.name for p in first.parent.iterdir()] == ["torch_extension.h"]  # no temporary left
