"""The compile contract read with ast, never by importing: literals, + of literals, names of
constants defined above, clear refusals with the line, and the files load_inline would write."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness import contract

REPO = Path(__file__).resolve().parent.parent


def write(tmp_path, body: str) -> Path:
    path = tmp_path / "sub.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_reads_literals_without_importing(tmp_path):
    path = write(tmp_path, '''
        """Doc."""
        import this_module_does_not_exist  # never imported: the contract is read, not run
        HEADER = "#include <cuda_fp16.h>\\n"
        CUDA_SRC = HEADER + r"""
        __global__ void k(float* x) { x[0] = 1.f; }
        """
        CPP_SRC = "void run(torch::Tensor x);"
        FUNCTIONS = ["run"]
        CUDA_FLAGS = ["-O3"] + ["--use_fast_math"]
        CPP_FLAGS = ("-O2",)
        NO_IMPLICIT_HEADERS: bool = True
        EXTENSION_NAME = "my_ext"
        ''')
    c = contract.read(path)
    assert c.cuda_src.startswith("#include <cuda_fp16.h>\n") and "__global__ void k" in c.cuda_src
    assert c.cuda_flags == ("-O3", "--use_fast_math") and c.cpp_flags == ("-O2",)
    assert c.functions == ("run",) and c.no_implicit_headers is True and c.extension_name == "my_ext"
    assert c.compiles_cuda
    assert c.cuda_file_text() == c.cuda_src  # no prelude when NO_IMPLICIT_HEADERS
    assert 'm.def("run", torch::wrap_pybind_function(run), "run");' in c.cpp_file_text()


def test_load_inline_prelude_by_default(tmp_path):
    c = contract.read(write(tmp_path, 'CUDA_SRC = "__global__ void k() {}"\ndef custom_kernel(d): pass\n'))
    lines = c.cuda_file_text().splitlines()
    assert lines[:3] == list(contract.IMPLICIT_CUDA_PRELUDE) and lines[3] == "__global__ void k() {}"
    assert c.cpp_file_text().startswith("#include <torch/extension.h>")
    assert c.extension_name == "nvfp4_compile_check" and c.cuda_flags == ()


def test_torch_only_submission_has_no_cuda():
    c = contract.read(REPO / "submissions" / "gemm" / "submission_v0.py")
    assert not c.compiles_cuda and c.cuda_src is None


@pytest.mark.parametrize("body, needle", [
    ('CUDA_SRC = open("k.cu").read()\n', "line 1: CUDA_SRC must be a literal"),
    ('X = f"{1}"\nCUDA_SRC = X\n', "CUDA_SRC must be a literal"),
    ('CUDA_FLAGS = "-O3"\n', "line 1: CUDA_FLAGS must be a list of strings"),
    ('CUDA_FLAGS = ["-O3", 3]\n', "CUDA_FLAGS must be a literal"),
    ('CUDA_SRC = ["a"]\n', "CUDA_SRC must be a string"),
    ('NO_IMPLICIT_HEADERS = "yes"\n', "must be True or False"),
    ('CUDA_SRC = "a" + ["b"]\n', "+ of a str and a tuple"),
])
def test_refusals_name_the_line(tmp_path, body, needle):
    with pytest.raises(contract.ContractError, match=None) as info:
        contract.read(write(tmp_path, body))
    assert needle in str(info.value)


def test_every_lineage_file_reads():
    paths = sorted((REPO / "submissions").glob("*/submission_v*.py")) + sorted((REPO / "submissions").glob("*/attic/submission_v*.py"))
    assert any("attic" in p.parts for p in paths)
    for path in paths:
        contract.read(path)  # a ContractError here would fail CI's build step too
