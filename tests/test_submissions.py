"""harness.submissions: resolving versions and paths, the docstring header, the code hash."""

from __future__ import annotations

import pytest

from harness import submissions
from harness.errors import UserError
from reference import PROBLEMS

KERNEL = "def custom_kernel(data):\n    return data[-1]\n"


@pytest.mark.parametrize("problem", PROBLEMS)
def test_resolve_v0(problem):
    sub = submissions.resolve(problem, "v0")
    assert sub.label == "v0" and sub.problem == problem
    assert sub.path.name == "submission_v0.py" and sub.path.parent.name == problem
    assert sub.arch == "any" and sub.header["version"] == "v0" and sub.change
    assert len(sub.sha256) == 64 and len(sub.source_hash) == 64
    assert submissions.resolve(problem, "0") == sub
    assert submissions.resolve(problem, " v0 ") == sub
    assert [s.label for s in submissions.versions(problem)][0] == "v0"


def test_analogues():
    assert submissions.resolve("gemm", "v0").analogue == "V0"
    assert submissions.resolve("gemv", "v0").analogue is None  # "Analogue: none"


def test_unknown_version_lists_known():
    with pytest.raises(UserError) as exc:
        submissions.resolve("gemm", "v9999")  # NOTE: far past any ladder (gemm reached v99 in session 66)
    assert "gemm has no version v9999" in str(exc.value)
    assert "known: v0" in str(exc.value)


def test_unknown_problem():
    with pytest.raises(UserError, match="unknown problem 'gemmm'"):
        submissions.resolve("gemmm", "v0")
    with pytest.raises(UserError):
        submissions.versions("nope")


def test_missing_path_and_directory(tmp_path):
    with pytest.raises(UserError, match="no such version or file"):
        submissions.resolve("gemm", str(tmp_path / "missing.py"))
    with pytest.raises(UserError, match="is not a file"):
        submissions.resolve("gemm", str(tmp_path))


def test_path_without_custom_kernel(tmp_path):
    f = tmp_path / "nokernel.py"
    f.write_text('"""No kernel here."""\n\ndef kernel(data):\n    return data\n')
    with pytest.raises(UserError, match="does not define custom_kernel"):
        submissions.resolve("gemm", str(f))


def test_syntax_error_is_user_error(tmp_path):
    f = tmp_path / "broken.py"
    f.write_text("def custom_kernel(data:\n")
    with pytest.raises(UserError, match="syntax error"):
        submissions.resolve("gemm", str(f))


@pytest.mark.parametrize("src", [
    KERNEL,
    "from somewhere import custom_kernel\n",
    "from somewhere import impl as custom_kernel\n",
    "custom_kernel = lambda data: data[-1]\n",
    "async def custom_kernel(data):\n    return data\n",
])
def test_ways_to_define_custom_kernel(tmp_path, src):
    f = tmp_path / "sub.py"
    f.write_text(src)
    sub = submissions.resolve("gemm", str(f))
    assert sub.label == "sub.py" and sub.arch == "any" and sub.header == {}
    assert sub.path == f.resolve()


def test_header_parsing():
    doc = """Title line.

    Version: v3
    Parent: v2
    Change: fused the epilogue: silu and product
    Arch: sm_90a, needs wgmma
    Analogue: V2
    Measured: H200 12.3 us
    Version: v4 (second one ignored)
    Other: ignored
    """
    h = submissions.parse_header(doc)
    assert h == {"version": "v3", "parent": "v2", "change": "fused the epilogue: silu and product",
                 "arch": "sm_90a", "analogue": "V2", "measured": "H200 12.3 us"}
    assert submissions.parse_header(None) == {}
    assert submissions.parse_header("arch:")["arch"] == "any"
    assert submissions.parse_header("ARCH: sm_100a.")["arch"] == "sm_100a"


def test_bad_arch_rejected(tmp_path):
    f = tmp_path / "sub.py"
    f.write_text('"""Arch: sm_80"""\n' + KERNEL)
    with pytest.raises(UserError, match="Arch 'sm_80'"):
        submissions.resolve("gemm", str(f))


def test_header_properties(tmp_path):
    f = tmp_path / "sub.py"
    f.write_text('"""Sub.\n\nChange: did a thing\nArch: sm_90a\nAnalogue: -\n"""\n' + KERNEL)
    sub = submissions.resolve("gemm", str(f))
    assert sub.arch == "sm_90a" and sub.change == "did a thing" and sub.analogue is None
    assert sub.order == 10**6


def test_source_hash_ignores_docstring_not_code(tmp_path):
    f = tmp_path / "sub.py"
    f.write_text('"""Version: v1\nMeasured: 10 us\n"""\n\nimport torch\n\n' + KERNEL)
    h1 = submissions.resolve("gemm", str(f))
    f.write_text('"""Version: v1\nMeasured: 9.5 us on H200, re-measured\n"""\n\nimport torch\n\n' + KERNEL)
    h2 = submissions.resolve("gemm", str(f))
    assert h1.source_hash == h2.source_hash
    assert h1.sha256 != h2.sha256
    f.write_text('"""Version: v1\nMeasured: 10 us\n"""\n\nimport torch\n\n'
                 "def custom_kernel(data):\n    return data[0]\n")
    h3 = submissions.resolve("gemm", str(f))
    assert h3.source_hash != h1.source_hash
    # a file with no docstring at all hashes its whole code
    f.write_text("import torch\n\n" + KERNEL)
    assert submissions.resolve("gemm", str(f)).source_hash == h1.source_hash


def test_versions_sorted_numerically(monkeypatch, tmp_path):
    folder = tmp_path / "submissions" / "gemm"
    folder.mkdir(parents=True)
    for n in (0, 2, 10, 1):
        (folder / f"submission_v{n}.py").write_text(f'"""Version: v{n}"""\n' + KERNEL)
    (folder / "submission_vx.py").write_text(KERNEL)
    (folder / "helper.py").write_text(KERNEL)
    monkeypatch.setattr(submissions.paths, "submissions_dir", lambda: tmp_path / "submissions")
    assert [s.label for s in submissions.versions("gemm")] == ["v0", "v1", "v2", "v10"]
    with pytest.raises(UserError, match=r"known: v0, v1, v2, v10"):
        submissions.resolve("gemm", "v3")


# ------------------------------------------------------------------------------ attic, verdict
@pytest.fixture
def attic_lineage(monkeypatch, tmp_path):
    """gemm v0, v1 (≈) in the main folder, v2 (✗) in its attic; returns the lineage's folder."""
    folder = tmp_path / "submissions" / "gemm"
    (folder / submissions.ATTIC).mkdir(parents=True)
    (folder / "submission_v0.py").write_text('"""Version: v0\nChange: the baseline"""\n' + KERNEL)
    (folder / "submission_v1.py").write_text('"""Version: v1\nChange: a split\nVerdict: Mixed, see below\n"""\n' + KERNEL)
    (folder / submissions.ATTIC / "submission_v2.py").write_text(
        '"""Version: v2\nChange: a lost idea,\n  wrapped\nVerdict: slower\nArch: any\n"""\n' + KERNEL)
    monkeypatch.setattr(submissions.paths, "submissions_dir", lambda: tmp_path / "submissions")
    return folder


def test_the_attic_is_out_of_the_listing_but_resolvable(attic_lineage):
    assert [s.label for s in submissions.versions("gemm")] == ["v0", "v1"]
    everything = submissions.versions("gemm", include_attic=True)
    assert [(s.label, s.in_attic) for s in everything] == [("v0", False), ("v1", False), ("v2", True)]
    v2 = submissions.resolve("gemm", "v2")
    assert v2.in_attic and v2.path == attic_lineage / submissions.ATTIC / "submission_v2.py"
    assert v2.change == "a lost idea, wrapped" and v2.arch == "any"  # the Verdict line ends the Change
    assert submissions.in_lab(v2)  # the team's own code: shares a process in compare like any version
    with pytest.raises(UserError, match=r"known: v0, v1, v2\)"):  # the attic's numbers are taken too
        submissions.resolve("gemm", "v3")


def test_verdict_marks_and_refusals(attic_lineage, tmp_path):
    v1, v2 = submissions.resolve("gemm", "v1"), submissions.resolve("gemm", "v2")
    assert (v1.verdict, v1.mark) == ("mixed", "≈") and (v2.verdict, v2.mark) == ("slower", "✗")
    v0 = submissions.resolve("gemm", "v0")
    assert (v0.verdict, v0.mark) == (None, "")
    f = tmp_path / "odd.py"
    f.write_text('"""Verdict: faster"""\n' + KERNEL)
    with pytest.raises(UserError, match="Verdict 'faster'"):
        submissions.resolve("gemm", str(f))


def test_a_number_in_both_folders_is_refused(attic_lineage):
    (attic_lineage / submissions.ATTIC / "submission_v1.py").write_text(KERNEL)
    assert [s.label for s in submissions.versions("gemm")] == ["v0", "v1"]  # the main folder alone is unambiguous
    for ask in (lambda: submissions.resolve("gemm", "v1"), lambda: submissions.versions("gemm", include_attic=True)):
        with pytest.raises(UserError, match="v1 is both"):
            ask()


def test_story_keys_end_the_value_before_them():
    h = submissions.parse_header("Analogue: none\nPrediction: faster by 5%\nWhy: the loads\nMeasured: -\n")
    assert h["analogue"] == "none" and h["prediction"] == "faster by 5%" and h["why"] == "the loads"


def test_the_peer_is_lab_code_and_shares_a_process_in_compare():
    peer = submissions.resolve("gemm", "peer")
    assert peer.label == "peer" and submissions.in_lab(peer)
    assert submissions.in_lab(submissions.resolve("gemm", "v0"))
