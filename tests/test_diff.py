"""nvfp4 diff on two small versions: header rows, the Python diff without the docstring, the CUDA
source as its own section, docstring edits counted not shown, the parent note, VA alone."""

from __future__ import annotations

from click.testing import CliRunner

from harness import cli, diff, submissions

V1 = '''\
"""Tiny v1.

Version: v1
Parent: v0
Change: one block per row
Arch: sm_90a
Analogue: V1
Measured: NVIDIA H200, mean µs: 10.0
"""

import torch

BLOCK = 128
CUDA_SRC = r"""
__global__ void k(float* x) {
    x[threadIdx.x] *= 2.f;
}
"""
CUDA_FLAGS = ["-O3"]


def custom_kernel(data):
    return data[-1]
'''
V2 = (V1.replace("Version: v1", "Version: v2").replace("Parent: v0", "Parent: v1")
      .replace("Change: one block per row", "Change: 256 threads, unrolled")
      .replace("mean µs: 10.0", "mean µs: 7.5")
      .replace("BLOCK = 128", "BLOCK = 256")
      .replace("    x[threadIdx.x] *= 2.f;", "    #pragma unroll\n    x[threadIdx.x] *= 2.f;"))


def _subs(tmp_path, a_text=V1, b_text=V2):
    (tmp_path / "v1.py").write_text(a_text)
    (tmp_path / "v2.py").write_text(b_text)
    return (submissions.load("gemm", tmp_path / "v1.py", "v1"), submissions.load("gemm", tmp_path / "v2.py", "v2"))


def test_sections(tmp_path):
    d = diff.diff(*_subs(tmp_path))
    python, cuda = d.sections
    assert python.title == "Python" and cuda.title == "CUDA_SRC"
    assert "-BLOCK = 128" in python.lines and "+BLOCK = 256" in python.lines
    assert (python.added, python.removed) == (1, 1)
    assert not any("Change:" in line for line in python.lines)  # the docstring is not in the code diff
    assert not any("threadIdx" in line for line in python.lines)  # the CUDA source is folded to one line
    assert "+    #pragma unroll" in cuda.lines and (cuda.added, cuda.removed) == (1, 0)
    assert (d.docstring.added, d.docstring.removed) == (4, 4)  # Version, Parent, Change, Measured
    assert d.notes == [] and not d.identical


def test_docstring_only_change_is_identical_code(tmp_path):
    d = diff.diff(*_subs(tmp_path, V1, V1.replace("mean µs: 10.0", "mean µs: 9.0")))
    assert d.identical and all(not s.lines for s in d.sections) and d.docstring.added == 1


def test_parent_mismatch_is_noted(tmp_path):
    d = diff.diff(*_subs(tmp_path, V1, V2.replace("Parent: v1", "Parent: v0")))
    assert d.notes == ["v2's parent is v0, not v1"]


def test_non_literal_source_is_diffed_as_python(tmp_path):
    b = V2.replace('CUDA_SRC = r"""', 'CUDA_SRC = open("k.cu").read() + r"""')
    d = diff.diff(*_subs(tmp_path, V1, b))
    assert any("CUDA_SRC must be a literal" in n for n in d.notes)
    python = d.sections[0]
    assert any("#pragma unroll" in line for line in python.lines)


def test_cli(tmp_path):
    a, b = _subs(tmp_path)
    r = CliRunner().invoke(cli.main, ["diff", "gemm", str(a.path), str(b.path)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "one block per row" in out and "256 threads, unrolled" in out
    assert "Python: +1 -1" in out and "CUDA_SRC: +1 -0" in out and "+BLOCK = 256" in out
    assert "docstring: +4 -4 lines (--docstring shows them)" in out and "mean µs: 7.5" not in out
    r = CliRunner().invoke(cli.main, ["diff", "gemm", str(a.path), str(b.path), "--docstring"], env={"COLUMNS": "200"})
    assert "+Measured: NVIDIA H200, mean µs: 7.5" in r.stdout


def test_cli_one_version_diffs_its_parent(tmp_path, monkeypatch):
    """``nvfp4 diff gemm v1`` compares v1 with its Parent (here v0 of the real lineage)."""
    (tmp_path / "gemm").mkdir()
    (tmp_path / "gemm" / "submission_v0.py").write_text(V1.replace("Version: v1", "Version: v0").replace("Parent: v0", "Parent: none"))
    (tmp_path / "gemm" / "submission_v1.py").write_text(V2.replace("Parent: v1", "Parent: v0"))
    monkeypatch.setattr("harness.paths.submissions_dir", lambda: tmp_path)
    r = CliRunner().invoke(cli.main, ["diff", "gemm", "v1"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "gemm: v0 -> v1" in r.stdout and "+BLOCK = 256" in r.stdout
    r = CliRunner().invoke(cli.main, ["diff", "gemm", "v0"], env={"COLUMNS": "200"})
    assert r.exit_code == 2 and "v0's docstring names no parent version (Parent: none)" in r.stderr


def test_parent_with_a_remark_is_its_first_version(tmp_path, monkeypatch):
    """A Parent line may carry a remark ("v1 (v2, the integer decode, was a regression)"): the
    parent is its first version token, for ``diff P V`` and ``list``'s parent column alike."""
    (tmp_path / "gemm").mkdir()
    (tmp_path / "gemm" / "submission_v1.py").write_text(V1)
    (tmp_path / "gemm" / "submission_v3.py").write_text(
        V2.replace("Version: v2", "Version: v3").replace("Parent: v1", "Parent: v1 (v2, the integer decode, was a regression)"))
    monkeypatch.setattr("harness.paths.submissions_dir", lambda: tmp_path)
    assert submissions.resolve("gemm", "v3").parent == "v1"
    r = CliRunner().invoke(cli.main, ["diff", "gemm", "v3"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "gemm: v1 -> v3" in r.stdout and "+BLOCK = 256" in r.stdout


def test_lineage_v0_against_itself():
    v0 = submissions.resolve("gemm", "v0")
    d = diff.diff(v0, v0)
    assert d.identical and not d.docstring.lines
    assert [s.title for s in d.sections] == ["Python"]  # torch only: no CUDA section
