"""Machine-readable output (harness/report.py), the regression gate, and the conventions commands:
--version, new, export (CPU)."""
from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from harness import cli, paths, report, runner, scaffold, submissions
from harness.cli.measure import regression_gate

SHAPE = "m=128,n=256,k=256"


def invoke(*args):
    return CliRunner().invoke(cli.main, list(args), catch_exceptions=False)


def _doc():
    rows = [{"version": "v1", "shape": "128x256", "m": 128, "mean_us": 12.3456789, "message": "a | b\nc"},
            {"version": "v2", "shape": "128x256", "m": 128, "mean_us": None, "message": ""}]
    return report.document("run", "gemm", rows, device={"gpu": "NVIDIA H200"})


def test_every_encoding_carries_the_schema_and_context():
    doc = _doc()
    parsed = json.loads(report.encode(doc, "json"))
    assert parsed["schema_version"] == report.SCHEMA_VERSION and parsed["gpu"] == "NVIDIA H200"
    assert parsed["problem"] == "gemm" and parsed["timestamp"] and len(parsed["rows"]) == 2
    table = list(csv.DictReader(io.StringIO(report.encode(doc, "csv"))))
    assert [r["version"] for r in table] == ["v1", "v2"]
    assert table[0]["schema_version"] == "1" and table[0]["command"] == "run" and table[0]["mean_us"] == "12.3457"
    assert table[1]["mean_us"] == ""
    md = report.encode(doc, "md").splitlines()
    assert md[1].startswith("| version | shape") and "a \\| b c" in md[3]  # pipes escaped, one line per row


def test_csv_output_loads_in_pandas_and_duckdb(tmp_path):
    pandas = pytest.importorskip("pandas")
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "out.csv"
    path.write_text(report.encode(_doc(), "csv"))
    assert len(pandas.read_csv(path)) == 2
    assert duckdb.sql(f"select count(*) from read_csv('{path}')").fetchall()[0][0] == 2


def test_list_as_json_and_csv(tmp_path):
    r = invoke("list", "gemv", "--format", "json")
    assert r.exit_code == 0
    doc = json.loads(r.output)
    assert doc["command"] == "list" and any(row["version"] == "v0" for row in doc["rows"])
    out = tmp_path / "versions.csv"
    r = invoke("list", "gemv", "-o", str(out))
    assert r.exit_code == 0 and "v0" in r.output  # the table still prints
    assert list(csv.DictReader(out.open()))[0]["version"] == "v0"
    r = invoke("list", "gemv", "-o", str(tmp_path / "versions.txt"))
    assert r.exit_code == 2 and "--format" in r.output


def test_run_as_csv_on_a_cpu(tmp_path):
    out = tmp_path / "run.csv"
    r = invoke("run", "gemm", "v0", "--shape", SHAPE, "--budget", "0.3", "--format", "csv", "-o", str(out))
    assert r.exit_code == 0, r.output
    (row,) = list(csv.DictReader(out.open()))
    assert row["status"] == "PASS" and row["method"] == "gpumode" and row["shape_m"] == "128" and float(row["mean_us"]) > 0
    assert row["shape_n"] == "256" and int(row["n"]) >= 1  # the shape's n and the sample count stay apart


def test_run_warm_as_csv_carries_the_warm_times(tmp_path):
    """--warm's times were in run's table and its json results only: csv and md rows dropped them."""
    out = tmp_path / "run.csv"
    r = invoke("run", "gemv", "v0", "--shape", "m=128,k=256", "--method", "cold", "--warm", "--budget", "0.2",
               "--min-repeats", "3", "--format", "csv", "-o", str(out))
    assert r.exit_code == 0, r.output
    (row,) = list(csv.DictReader(out.open()))
    assert row["status"] == "PASS" and float(row["warm_mean_us"]) > 0
    r = invoke("run", "gemv", "v0", "--shape", "m=128,k=256", "--method", "cold", "--budget", "0.2",
               "--min-repeats", "3", "--format", "csv")
    assert r.exit_code == 0 and "warm_mean_us" not in r.stdout  # no warm pass, no column


def test_compare_rows_say_whether_b_s_outputs_were_a_s_and_booleans_read_as_in_leaderboard_csv():
    """outputs_equal: true, false, or empty where nothing was compared (the peer's compare, a failed
    shape); written true/false as leaderboard.csv writes converged, a JSON boolean in json."""
    from harness import config
    shape = config.parse_shape_option("gemm", SHAPE, 0)
    outcome = runner.JobOutcome([submissions.resolve("gemm", "v0")] * 2, None)
    outcome.results = [runner.ShapeResult(shape, "competition", "PASS", outputs={"input_sets": 8, "differ": 0, "varies": []}),
                       runner.ShapeResult(shape, "competition", "PASS", outputs={"input_sets": 8, "differ": 3, "varies": []}),
                       runner.ShapeResult(shape, "competition", "FAIL", "v0: mismatch")]
    doc = report.document("compare", "gemm", report.compare_rows(outcome))
    table = list(csv.DictReader(io.StringIO(report.encode(doc, "csv"))))
    assert [(r["outputs_equal"], r["outputs_sets"], r["outputs_differ"]) for r in table] == [
        ("true", "8", "0"), ("false", "8", "3"), ("", "", "")]
    assert [r["outputs_equal"] for r in json.loads(report.encode(doc, "json"))["rows"]] == [True, False, None]


@pytest.mark.parametrize("fail_on,max_regression,ratio,expected", [
    (None, None, (0.9, 0.88, 0.92), None),                    # no gate asked for
    ("slower", None, (0.9, 0.88, 0.92), "SLOWER"),
    ("slower", None, (0.99, 0.97, 1.01), None),               # AMBIGUOUS passes a slower-only gate
    ("ambiguous", None, (0.99, 0.97, 1.01), "AMBIGUOUS"),
    (None, 0.02, (0.97, 0.96, 0.975), "more than 2.0%"),
    (None, 0.02, (0.985, 0.97, 0.99), None),                  # slower, but not surely by 2%
])
def test_regression_gate(fail_on, max_regression, ratio, expected):
    ratios = [{"speedup": ratio[0], "lo": ratio[1], "hi": ratio[2]}]
    why = regression_gate(ratios, None, 0.02, fail_on, max_regression)
    assert (why is None) if expected is None else (expected in why)
    assert regression_gate(ratios, None, 0.02, "slower", 0.0, on_gpu=False) is None  # CPU: no verdict, no gate


def test_version_names_the_package_and_commit():
    r = invoke("--version")
    assert r.exit_code == 0 and r.output.startswith("nvfp4 ") and "commit" in r.output


def test_new_starts_a_version_from_its_parent(tmp_path, monkeypatch):
    lab = tmp_path / "submissions" / "gemv"
    lab.mkdir(parents=True)
    parent = submissions.resolve("gemv", "v16").path
    (lab / "submission_v16.py").write_text(parent.read_text())
    monkeypatch.setattr(paths, "submissions_dir", lambda: tmp_path / "submissions")
    target, text = scaffold.new_version("gemv", "v90", "v16", "one idea")
    header = submissions.parse_header(text.split('"""')[1])
    assert target == lab / "submission_v90.py"
    assert header["version"] == "v90" and header["parent"] == "v16" and header["change"] == "one idea"
    assert header["measured"] == "not yet run" and 'EXTENSION_NAME = "nvfp4_gemv_v90"' in text
    assert "def custom_kernel" in text
    with pytest.raises(Exception, match="exists"):
        scaffold.new_version("gemv", "v16", "v16", "x")
    with pytest.raises(Exception, match="vN"):
        scaffold.new_version("gemv", "latest", "v16", "x")
    with pytest.raises(Exception, match="version of the lineage"):
        scaffold.new_version("gemv", "v91", "peer", "x")


def test_new_from_a_parent_without_a_blank_line_after_its_docstring_is_valid_python(tmp_path, monkeypatch):
    import ast
    lab = tmp_path / "submissions" / "gemv"
    lab.mkdir(parents=True)
    (lab / "submission_v1.py").write_text('"""T\n\nVersion: v1\n"""\nimport torch\n\ndef custom_kernel(data):\n    return data\n')
    monkeypatch.setattr(paths, "submissions_dir", lambda: tmp_path / "submissions")
    _, text = scaffold.new_version("gemv", "v2", "v1", "one idea")
    tree = ast.parse(text)
    assert ast.get_docstring(tree).startswith("NVFP4 gemv v2: one idea") and '"""\n\nimport torch\n' in text


def test_export_puts_the_popcorn_lines_first_once():
    text = scaffold.export(submissions.resolve("gemm", "v0"), "B200")
    lines = text.splitlines()
    assert lines[:2] == ["#!POPCORN leaderboard nvfp4_gemm", "#!POPCORN gpu B200"]
    assert sum(line.startswith("#!POPCORN") for line in lines) == 2 and "def custom_kernel" in text


def test_export_warns_when_the_arch_cannot_run_on_the_gpu_and_refuses_an_unknown_gpu(tmp_path):
    """group_gemm's Hopper versions (Arch sm_90a) sent to the B200 leaderboard would fail there."""
    hopper = next(s for s in submissions.versions("group_gemm") if s.arch == "sm_90a")
    out = tmp_path / "sub.py"
    r = CliRunner().invoke(cli.main, ["export", "group_gemm", hopper.label, "-o", str(out)])
    assert r.exit_code == 0 and out.read_text().startswith("#!POPCORN leaderboard nvfp4_group_gemm\n#!POPCORN gpu B200")
    assert f"warning: {hopper.label} (Arch sm_90a) cannot run on B200 (sm_100)" in r.stderr
    r = CliRunner().invoke(cli.main, ["export", "group_gemm", hopper.label, "--gpu", "H100", "-o", str(out)])
    assert r.exit_code == 0 and "warning" not in r.stderr and "#!POPCORN gpu H100" in out.read_text()
    r = CliRunner().invoke(cli.main, ["export", "group_gemm", "v0"])  # torch only: runs anywhere
    assert r.exit_code == 0 and "warning" not in r.stderr
    r = CliRunner().invoke(cli.main, ["export", "group_gemm", "v0", "--gpu", "foo"])
    assert r.exit_code == 2 and "--gpu foo: not a GPU MODE GPU name; expected one of B200, H100" in r.stderr


def test_a_change_line_is_read_whole_and_summarised_by_its_first_sentence():
    header = submissions.parse_header("T\n\nVersion: v3\nChange: one thing (a detail,\n  more). Then the why.\nArch: sm_90a\n")
    assert header["change"] == "one thing (a detail, more). Then the why." and header["arch"] == "sm_90a"


def test_gpu_only_failures_are_recognised():
    assert runner.gpu_only("custom_kernel raised AssertionError: Torch not compiled with CUDA enabled")
    assert runner.gpu_only("import failed: RuntimeError: Found no NVIDIA driver on your system")
    assert not runner.gpu_only("custom_kernel raised ValueError: K must be a multiple of 64")


def test_compare_recorded_from_sidecar_samples_with_a_gate(isolated_env):
    from harness import config, leaderboard
    shapes = config.load()["gemv"].benchmarks

    def rows(version, scale):
        out, sides = [], []
        for shape in shapes:
            out.append({"timestamp": "2026-11-27T10:00:00", "problem": "gemv", "version": version, "shape": shape.key,
                        "dist": "competition", "status": "PASS", "mean_us": 10.0 * scale, "gpu": "NVIDIA H200",
                        "timing_mode": "kernel", "flush": "dirty", "git_commit": "abc"})
            sides.append({"samples_us": [[10.0 * scale + 0.01 * i] for i in range(8)]})
        return out, sides

    for version, scale in (("v1", 1.0), ("v2", 1.1)):
        leaderboard.append(*rows(version, scale)[:1], sidecars=rows(version, scale)[1])
    r = invoke("compare", "gemv", "v1", "v2", "--recorded", "--method", "kernel", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["recorded"] and all(row["verdict"] == "SLOWER" for row in doc["rows"])
    assert doc["rows"][0]["speedup"] == pytest.approx(1 / 1.1, rel=1e-3)
    r = invoke("compare", "gemv", "v1", "v2", "--recorded", "--method", "kernel", "--fail-on", "slower")
    assert r.exit_code == 3 and "regression gate" in r.output
    r = invoke("compare", "gemv", "v1", "v2", "--recorded", "--method", "gpumode")
    assert r.exit_code == 1 and "no recorded gpumode/dirty pair" in " ".join(r.output.split())


def test_leaderboard_as_json(isolated_env):
    from harness import config, leaderboard
    shape = config.load()["gemm"].benchmarks[0]
    leaderboard.append([{"timestamp": "2026-11-27T10:00:00", "problem": "gemm", "version": "v1", "shape": shape.key,
                         "dist": "competition", "status": "PASS", "mean_us": 50.0, "gpu": "NVIDIA H200",
                         "timing_mode": "cold", "flush": "dirty", "git_commit": "abc"}])
    r = invoke("leaderboard", "gemm", "--method", "cold", "--format", "json")
    assert r.exit_code == 0
    doc = json.loads(r.output)
    assert doc["command"] == "leaderboard" and doc["method"] == "cold"
    assert [row["version"] for row in doc["rows"]] == ["v1"] and doc["rows"][0]["shape_m"] == "128"


def test_a_new_cuda_version_carries_the_timeline_marks_and_still_compiles(tmp_path, monkeypatch):
    """`nvfp4 new` pastes the marks header into CUDA_SRC: nothing in a normal build, stamps with
    -DNVFP4_MARKS (what `nvfp4 probe marks` builds); the CUDA side compiles both ways."""
    import subprocess
    from harness import compile_only, contract
    from harness.probes.marks import DEFINE
    lab = tmp_path / "submissions" / "gemv"
    lab.mkdir(parents=True)
    (lab / "submission_v22.py").write_text(submissions.resolve("gemv", "v22").path.read_text())
    monkeypatch.setattr(paths, "submissions_dir", lambda: tmp_path / "submissions")
    target, text = scaffold.new_version("gemv", "v95", "v22", "one idea")
    assert text.count("#define NVFP4_MARK(id)") == 2  # the probe's definition and the empty one
    target.write_text(text)
    c = contract.read(target)
    assert "#define NVFP4_MARK(id)" in c.cuda_src
    assert scaffold.with_marks(text) == text  # pasted once, never twice
    nvcc = compile_only.find_nvcc()
    if nvcc is None:
        pytest.skip("needs nvcc for the compile half (CI has it)")
    assert compile_only.fast_cuda_check(c)  # the header names nothing of torch: no 55 s prelude to parse
    (tmp_path / "cuda.cu").write_text(c.cuda_file_text(False))
    for extra in ([], [f"-D{DEFINE}"]):
        cmd, _ = compile_only.nvcc_command(nvcc, c, "sm_90", prelude=False)
        run = subprocess.run([*cmd, *extra], capture_output=True, text=True, cwd=tmp_path)
        assert run.returncode == 0, run.stderr[-2000:]


@pytest.mark.parametrize("text, width", [
    ("a long-K group (K above 4096, at most 8192) whose tiles are 128-160 rows", 26),
    ("v86 (K halves for the 176- and 248-row tiles, for the registers)", 29),
    ("[dim]gemm v97's byte spread, 11 instructions a word[/dim] and more", 30),
    ("x" * 50, 10),
])
def test_a_cut_text_cell_fits_keeps_its_markup_and_never_ends_in_a_number(text, width):
    """A terminal table's text column is cut at a word, its markup kept: rich's own ellipsis cut at a character, and a
    change line's "K above 4096" showed as "K above 409…", a number that reads as whole."""
    import re

    from rich.text import Text

    from harness.cli.render import cut_at_word
    cut = cut_at_word(text, width)
    shown = Text.from_markup(cut)
    assert shown.cell_len <= width and shown.plain.endswith("…")
    assert not re.search(r"\d[\d,.]*…", shown.plain), shown.plain
    assert Text.from_markup(text).plain.startswith(shown.plain[:-1])  # a prefix of what was there, whole words
    if text.startswith("[dim]"):
        assert shown.spans and shown.spans[0].style == "dim"
    assert cut_at_word("short", 10) == "short"
