"""The nvfp4 CLI end to end on the CPU (click's CliRunner on harness.cli.main): v0 on tiny shapes,
the adversarial submissions' verdicts, recording, the table, and clean user errors."""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from harness import cli, leaderboard
from adversarial.expected import CHECK_ADVERSARIES, CLOCK_UNFOOLED, TIMING_ADVERSARIES

ADVERSARIAL = Path(__file__).resolve().parent / "adversarial"
SHAPE = "m=128,n=256,k=256"
ENV = {"COLUMNS": "200"}


def invoke(*args, env=None):
    runner = CliRunner()
    t0 = time.monotonic()
    result = runner.invoke(cli.main, [str(a) for a in args], env={**ENV, **(env or {})})
    result.seconds = time.monotonic() - t0
    return result


def assert_clean_user_error(result, needle):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error:") and needle in lines[0], lines[0]


# ---------------------------------------------------------------------------------------- list

def test_list():
    r = invoke("list")
    assert r.exit_code == 0, r.output
    for name in ("gemv", "gemm", "dual_gemm", "group_gemm"):
        assert name in r.output
    assert "v0" in r.output and "benchmarks: 128x7168x16384; 128x4096x7168; 128x7168x2048" in r.output
    assert "tests: 10 shapes" in r.output
    r = invoke("list", "group_gemm")
    assert r.exit_code == 0 and "g2 m[192,320] n3072 k4096" in r.output and "gemv" not in r.output


def test_list_shows_brackets_in_a_change_line_as_written(monkeypatch):
    """A docstring's change line is text, not rich markup: `[rows][64]` must not vanish."""
    import dataclasses

    from harness import submissions
    real = submissions.versions

    def with_brackets(problem, include_attic=False):
        subs = real(problem, include_attic)
        return [dataclasses.replace(s, header={**s.header, "change": "C staged as [rows][64] fp16 halves"})
                if s.label == "v0" else s for s in subs]

    monkeypatch.setattr(submissions, "versions", with_brackets)
    r = invoke("list", "gemm")
    assert r.exit_code == 0, r.output
    assert "[rows][64] fp16" in r.output


# ---------------------------------------------------------------------------------- test / run

def test_test_v0_passes():
    r = invoke("test", "gemm", "v0", "--shape", SHAPE, "--seeds", "2")
    assert r.exit_code == 0, r.output
    assert "PASS" in r.output and "competition" in r.output and "general" in r.output
    assert "2 passed, 0 failed" in r.output
    assert "2 seeds pass" in r.output
    # NOTE: stderr is not a terminal here, so progress comes as plain lines (what a log keeps)
    assert "started" in r.stderr and "competition: PASS" in r.stderr, r.stderr


def test_test_v0_group_gemm_list_shape():
    r = invoke("test", "group_gemm", "v0", "--shape", "m=96;40,n=128,k=256,g=2", "--seeds", "1", "--dist", "general")
    assert r.exit_code == 0, r.output
    assert "g2 m[96,40] n128 k256" in r.output and "1 passed, 0 failed" in r.output


def test_a_custom_shape_is_added_to_a_named_set_and_alone_replaces_the_default():
    """`--shapes S --shape X` tests S's shapes and X (the set was silently dropped before session 51);
    `--shape X` alone tests X only; a custom shape already in the set is not tested twice."""
    r = invoke("test", "group_gemm", "v0", "--shapes", "tests:0", "--shape", "m=96;40,n=128,k=256,g=2", "--seeds", "1",
               "--dist", "general")
    assert r.exit_code == 0, r.output
    assert "g2 m[96,40] n128 k256" in r.output and "2 passed, 0 failed" in r.output
    from harness import config, runner
    first, second = config.load()["gemm"].tests[:2]
    texts = [",".join(f"{k}={v}" for k, v in s.generator_kwargs().items()) for s in (first, second)]
    shapes, _ = runner.select_shapes("gemm", "tests:0", tuple(texts), False)
    assert [s.key for s in shapes] == [first.key, second.key]
    assert [s.key for s in runner.select_shapes("gemm", None, texts[1:], False)[0]] == [second.key]


def test_run_record_then_leaderboard(isolated_env):
    r = invoke("run", "gemm", "v0", "--shape", SHAPE, "--record", "--allow-cpu", "--budget", "0.2", "--min-repeats", "3")
    assert r.exit_code == 0, r.output
    assert "PASS" in r.output and "recorded 1 rows" in r.output
    assert "geomean" in r.output
    assert ("device: CPU" in r.output) == (not torch.cuda.is_available())
    rows = leaderboard.read()
    assert isolated_env["leaderboard"].exists()
    assert len(rows) == 1
    row = rows[0]
    side = leaderboard.read_sidecar(row["run_id"])
    flat = [t for block in side["samples_us"] for t in block]
    assert len(flat) == int(row["n"]) and side["source"]["sha256"] == row["sha256"]
    assert isinstance(side["seeds"]["base"], int)
    assert side["timing"]["mode"] == "gpumode" and side["timing"]["flush"] == "dirty" and side["environment"]["torch"]
    assert side["stats"]["mean_us"] == pytest.approx(float(row["mean_us"]), rel=1e-3)
    assert (row["problem"], row["version"], row["status"], row["dist"]) == ("gemm", "v0", "PASS", "competition")
    assert row["shape"] == '{"m":128,"n":256,"k":256,"l":1}' and row["shape_set"] == "custom"
    assert float(row["mean_us"]) > 0 and float(row["best_us"]) > 0 and int(row["n"]) >= 1
    assert row["file"] == "submissions/gemm/submission_v0.py"
    assert (row["gpu"] == "cpu") == (not torch.cuda.is_available())
    assert len(row["code_hash"]) == 16 and len(row["sha256"]) == 64
    # the repo's own leaderboard is untouched: the table reads only the tmp file
    r = invoke("leaderboard", "gemm")
    assert r.exit_code == 0 and "gemm" in r.output and "v0" in r.output
    r = invoke("leaderboard", "gemv")
    assert r.exit_code == 0 and "no recorded gpumode results (dirty flush) for gemv" in r.output


def test_queued_mode_is_recorded_as_such_and_kept_apart(isolated_env):
    r = invoke("run", "gemm", "v0", "--shape", SHAPE, "--queued", "--record", "--allow-cpu", "--budget", "0.2", "--pool", "2",
               "--min-repeats", "3")
    assert r.exit_code == 0, r.output
    assert "one call queued behind the flush" in " ".join(r.output.split())
    (row,) = leaderboard.read()
    assert row["timing_mode"] == "queued" and leaderboard.read_sidecar(row["run_id"])["timing"]["mode"] == "queued"
    r = invoke("leaderboard", "gemm")  # gpumode is the default: a queued row is not a gpumode result
    assert r.exit_code == 0 and "no recorded gpumode results (dirty flush) for gemm" in r.output
    r = invoke("leaderboard", "gemm", "--method", "queued")
    assert r.exit_code == 0 and "v0" in r.output


@pytest.mark.parametrize("flags", [("--queued", "--graph"), ("--queued", "--warm"), ("--graph", "--warm"),
                                   ("--graph", "--method", "kernel"), ("--warm", "--method", "gpumode")])
def test_timing_modes_that_do_not_combine_are_refused(flags):
    r = invoke("run", "gemm", "v0", "--shape", SHAPE, *flags)
    assert r.exit_code != 0 and "combine" in r.output


def test_run_json():
    # NOTE: the budget caps the repeats; at 0.2 s a loaded two-core machine (~56 ms a call) timed one
    # call, whose interval is undefined
    r = invoke("run", "gemm", "v0", "--shape", SHAPE, "--json", "--budget", "1", "--min-repeats", "3")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["versions"] == ["v0"]
    assert (doc["device"]["gpu"] == "cpu") == (not torch.cuda.is_available())
    (res,) = doc["results"]
    assert res["status"] == "PASS" and res["dist"] == "competition" and res["label"] == "128x256x256"
    assert res["shape"]["k"] == 256
    assert (res["floor_us"] is None) == (not torch.cuda.is_available())  # no roofline on the CPU
    (st,) = res["stats"]
    assert st["mean_us"] > 0 and st["n"] >= 1 and st["n"] % 1 == 0
    assert st["q1_us"] <= st["median_us"] <= st["q3_us"] and st["ci95_lo_us"] <= st["mean_us"] <= st["ci95_hi_us"]
    assert st["stop_reason"] and doc["timing"]["mode"] == "gpumode"
    assert doc["timing"]["batch"] == doc["timing"]["pool"] == 50  # gemm's gpumode batch, as the sidecars say
    assert doc["geomean"]["v0"][0] == pytest.approx(st["mean_us"])


def test_compare_v0_v0_in_one_process():
    r = invoke("compare", "gemm", "v0", "v0", "--shape", SHAPE, "--budget", "0.5", "--pool", "2")
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())
    assert "over paired blocks in one process" in flat and "kernel:" in flat
    assert "none (CPU)" in flat and not any(v in r.output for v in ("FASTER", "SLOWER", "AMBIGUOUS"))
    assert "geomean speedup of v0 over v0" in r.output and "no verdict" in r.output
    assert "\tnone (CPU)\tbit for bit v0's\n" in r.stdout  # B's outputs against A's, after the verdict


def test_compare_says_when_b_s_outputs_are_not_a_s_bit_for_bit():
    """One element's last bit flipped passes the check, and is not v0's bits: said per shape, in the
    progress line and in the machine formats (a file from outside the lab: two processes, two judges)."""
    last_bit = Path(__file__).resolve().parent / "data" / "gemm_last_bit.py"
    r = invoke("compare", "gemm", "v0", last_bit, "--shape", SHAPE, "--budget", "0.3", "--pool", "2")
    assert r.exit_code == 0, r.output
    assert "\tnone (CPU)\tdiffer from v0's on 2 of 2 input sets\n" in r.stdout
    assert "none (CPU), outputs: differ from v0's on 2 of 2 input sets" in r.stderr  # the shape's progress line
    r = invoke("compare", "gemm", "v0", last_bit, "--shape", SHAPE, "--budget", "0.3", "--pool", "2", "--format", "csv")
    (row,) = list(csv.DictReader(io.StringIO(r.stdout)))
    assert (row["outputs_equal"], row["outputs_sets"], row["outputs_differ"]) == ("false", "2", "2")


def test_compare_with_the_peer_makes_no_claim_on_the_outputs():
    """cuBLAS's roundings are no version's: neither equal nor different is said, in any format."""
    r = invoke("compare", "gemm", "peer", "v0", "--shape", SHAPE, "--budget", "0.3", "--pool", "2", "--format", "json")
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)["rows"]
    assert row["status"] == "PASS" and row["outputs_equal"] is row["outputs_sets"] is row["outputs_differ"] is None
    r = invoke("compare", "gemm", "peer", "v0", "--shape", SHAPE, "--budget", "0.3", "--pool", "2")
    assert r.exit_code == 0 and "outputs" not in r.output and "bit for bit" not in r.output, r.output


def test_compare_v0_v0_isolated():
    r = invoke("compare", "gemm", "v0", "v0", "--shape", SHAPE, "--budget", "0.5", "--pool", "2",
               "--processes", "2", "--max-processes", "2", "--isolated")
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())
    assert "over blocks and process generations" in flat
    assert "(A prepared first)" in flat and "(B prepared first)" in flat
    assert "none (CPU)" in flat and "\tbit for bit v0's\n" in r.stdout  # over both process generations
    assert "geomean speedup of v0 over v0" in r.output


def test_failed_timed_result_shows_its_reason(monkeypatch):
    """A result that was timed but failed (the GPU escape check) shows why, and counts for no time."""
    from harness import runner, stats

    summary = stats.summarize([[10.0, 11.0], [9.0, 10.0]], True, "x")
    message = "v0: work escapes the timed stream: a block of 8 calls took 9000 us of wall time but 40 us between events"

    def fake_run(subs, shapes, dists, mode, **_):
        outcome = runner.JobOutcome(list(subs), {"gpu": "cpu", "torch": torch.__version__})
        outcome.results = [runner.ShapeResult(shapes[0], dists[0], "FAIL", message, [summary] * len(subs))]
        return outcome

    monkeypatch.setattr(runner, "run", fake_run)
    r = invoke("run", "gemm", "v0", "--shape", SHAPE)
    assert r.exit_code == 1, r.output
    assert "FAIL" in r.output and "escapes the timed stream" in r.output
    assert "geomean: -" in r.output
    r = invoke("compare", "gemm", "v0", "v0", "--shape", SHAPE)
    assert r.exit_code == 1, r.output
    assert "escapes the timed stream" in r.output and r.output.count("SAME") == 1  # in the title only
    assert "geomean speedup of v0 over v0: -" in r.output


def test_implausible_time_is_flagged_and_never_recorded(monkeypatch, isolated_env):
    """A time under the GPU's physical floor is IMPLAUSIBLE: no geomean, no recorded time."""
    from harness import runner, stats

    real_finish = runner._finish

    def fake_run(subs, shapes, dists, mode, plan=None, **_):
        outcome = runner.JobOutcome(list(subs), {"gpu": "NVIDIA H200", "torch": torch.__version__}, plan=plan)
        blocks = [[0.5, 0.6], [0.55, 0.5]]  # µs: far below any H200 floor for this shape
        outcome.results = [runner.ShapeResult(shapes[0], dists[0], "PASS", "", [stats.summarize(blocks, True)],
                                              samples=[blocks])]
        real_finish(outcome)
        return outcome

    monkeypatch.setattr(runner, "run", fake_run)
    r = invoke("run", "gemm", "v0", "--shape", "m=128,n=7168,k=16384", "--record", "--allow-cpu")
    assert r.exit_code == 1, r.output
    assert "IMPLAUSIBLE" in r.output and "physical floor" in r.output and "geomean: -" in r.output
    (row,) = leaderboard.read()
    assert row["status"] == "IMPLAUSIBLE" and row["mean_us"] == "" and row["n"] == ""


# ------------------------------------------------------------------------------------- table

@pytest.mark.parametrize("problem", ["group_gemm", "gemm"])
def test_table_tiny_tests(tiny_shapes, problem):
    r = invoke("table", problem, "--shapes", "tests", "--budget", "0.2", "--min-repeats", "3")
    assert r.exit_code == 0, r.output
    assert "v0" in r.output and "measured here" in r.output
    label = "g2 m[64,40] n128/64 k256" if problem == "group_gemm" else "64x128x256"
    assert label in r.output


def test_table_tiny_benchmarks_with_writeup(tiny_shapes, isolated_env):
    r = invoke("table", "group_gemm", "--shapes", "benchmarks", "--budget", "0.2",
               "--min-repeats", "3", "--record", "--allow-cpu")
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())  # the title may wrap
    assert "writeup analogue on NVIDIA B200" in flat
    lines = r.output.splitlines()  # piped: tab-separated, the analogue's figure in the column after ours
    header = next(line.split("\t") for line in lines if line.startswith("version\t"))
    v0 = dict(zip(header, next(line.split("\t") for line in lines if line.startswith("v0\t"))))
    assert v0["A B200"] == "10.00"  # the analogue V0's published figure
    rows = leaderboard.read()
    assert len(rows) == 1 and rows[0]["shape_set"] == "benchmarks" and rows[0]["status"] == "PASS"


def test_table_published():
    r = invoke("table", "group_gemm", "--published")
    assert r.exit_code == 0, r.output
    assert "V23" in r.output and "V0" in r.output and "38.2" in r.output
    r = invoke("table", "gemm", "--published")
    assert r.exit_code == 0 and "no writeup table" in r.output and "8.99" in r.output


# ------------------------------------------------------------------------------- adversarial

ADVERSARIAL_CASES = {
    # file: (status word, text in the detail, extra args)
    "never_writes": ("FAIL", "got nan", ()),
    "nan_output": ("FAIL", "1 of 32768 elements mismatch", ()),
    "wrong_shape": ("FAIL", "output has shape (128, 255, 1)", ()),
    "wrong_dtype": ("FAIL", "output has dtype torch.float32", ()),
    "mutates_input": ("FAIL", "modified input tensor #0", ()),
    "caches_result": ("FAIL", "seed 1112", ()),
    "sleeps_forever": ("TIMEOUT", "no result after 5 s", ("--timeout", "5", "--dist", "competition")),
    "segfaults": ("CRASH", "killed by SIGSEGV", ()),
    "exits_early": ("CRASH", "exited with code 0", ()),
    "import_error": ("FAIL", "import failed: RuntimeError", ()),
    "raises": ("FAIL", "custom_kernel raised ValueError", ()),
    **{name: (status, detail, ()) for name, (status, detail) in CHECK_ADVERSARIES.items()},
}


@pytest.mark.parametrize("name", list(ADVERSARIAL_CASES))
def test_adversarial_verdicts(name):
    status, detail, extra = ADVERSARIAL_CASES[name]
    path = ADVERSARIAL / f"{name}.py"
    r = invoke("test", "gemm", path, "--shape", SHAPE, "--seeds", "2", *extra)
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    n_items = 1 if "--dist" in extra else 2
    table_rows = [line for line in r.stdout.splitlines() if "128x256x256" in line]
    assert len(table_rows) == n_items, r.stdout
    for line in table_rows:  # every item gets the verdict, not only the first (piped: tab-separated)
        assert status in line.split("\t"), line
        assert "PASS" not in line
    assert detail in r.stdout
    assert f"0 passed, {n_items} failed" in r.stdout
    assert r.seconds < 60, f"{name} took {r.seconds:.1f} s"


# Submissions that attack the timer, the statistics, the channel or the input pool; each gets its
# verdict (tests/adversarial/expected.py) from `run`; side_stream needs a GPU: see test_gpu.
@pytest.mark.parametrize("name", list(TIMING_ADVERSARIES))
def test_timing_adversaries(name, isolated_env):
    status, detail = TIMING_ADVERSARIES[name]
    r = invoke("run", "gemm", ADVERSARIAL / f"{name}.py", "--shape", SHAPE, "--budget", "0.2", "--record", "--allow-cpu")
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    flat = " ".join(r.stdout.split())
    assert f"\t{status}\t" in r.stdout and detail in flat, r.stdout
    (row,) = leaderboard.read()
    assert row["status"] == status and row["mean_us"] == ""  # a verdict, never a time


def test_v0_is_the_positive_control_for_adversarial_shape():
    # same invocation as the adversarial cases, with the real v0 file as the path
    r = invoke("test", "gemm", Path(__file__).resolve().parents[1] / "submissions/gemm/submission_v0.py",
               "--shape", SHAPE, "--seeds", "2")
    assert r.exit_code == 0, r.output
    assert "2 passed, 0 failed" in r.output and "submission_v0.py" in r.output


# ---------------------------------------------------------------------------------- errors

def test_unknown_problem():
    assert_clean_user_error(invoke("test", "gemmm", "v0", "--shape", SHAPE), "unknown problem 'gemmm'")
    assert_clean_user_error(invoke("list", "nope"), "unknown problem 'nope'")
    assert_clean_user_error(invoke("table", "nope", "--published"), "unknown problem")


def test_unknown_version():
    # NOTE: the known list grows with the lineage; only its start is fixed. v9999: far past any ladder (v99 was
    # unknown here until gemm reached it, session 66)
    assert_clean_user_error(invoke("test", "gemm", "v9999", "--shape", SHAPE), "no version v9999 (known: v0, ")
    assert_clean_user_error(invoke("run", "gemm", "v999"), "no version v999")


def test_missing_file(tmp_path):
    assert_clean_user_error(invoke("test", "gemm", tmp_path / "missing.py", "--shape", SHAPE), "no such version or file")


def test_file_without_kernel(tmp_path):
    f = tmp_path / "empty.py"
    f.write_text("x = 1\n")
    assert_clean_user_error(invoke("test", "gemm", f, "--shape", SHAPE), "does not define custom_kernel")


def test_malformed_shapes_file(write_shapes):
    path = write_shapes("gemv:\n  tests: [\n")
    r = invoke("list")
    assert_clean_user_error(r, "malformed YAML")
    assert str(path) in r.stderr
    assert_clean_user_error(invoke("test", "gemm", "v0"), "malformed YAML")


def test_bad_shape_options():
    assert_clean_user_error(invoke("test", "gemm", "v0", "--shape", "m=128,n=256"), "missing k")
    assert_clean_user_error(invoke("run", "gemm", "v0", "--shapes", "bogus"), "--shapes 'bogus'")
    assert_clean_user_error(invoke("run", "gemm", "v0", "--shapes", "tests:99"), "has 10 tests shapes")


def test_zero_seeds_or_pool_refused():
    # --seeds 0 would check nothing and report PASS
    r = invoke("test", "gemm", ADVERSARIAL / "never_writes.py", "--shape", SHAPE, "--seeds", "0")
    assert r.exit_code == 2 and "--seeds" in r.output and "PASS" not in r.output
    assert "Traceback" not in r.output
    r = invoke("run", "gemm", "v0", "--shape", SHAPE, "--pool", "0")
    assert r.exit_code == 2 and "--pool" in r.output and "Traceback" not in r.output


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for machines without the GPU")
def test_cuda_only_version_refused_on_cpu(tmp_path):
    f = tmp_path / "hopper_only.py"
    f.write_text('"""A Hopper kernel.\n\nArch: sm_90a\n"""\n\n\ndef custom_kernel(data):\n    return data[-1]\n')
    r = invoke("test", "gemm", f, "--shape", SHAPE)
    assert r.exit_code != 0
    assert "needs an NVIDIA GPU with sm_90a" in r.output
    assert "Traceback" not in r.output
    r = invoke("run", "gemm", f, "--shape", SHAPE)
    assert r.exit_code != 0 and "needs an NVIDIA GPU with sm_90a" in r.output


def test_compare_names_the_side_whose_process_failed_to_start():
    """compare starts both processes together; an import failure on one side is that side's verdict."""
    r = invoke("compare", "gemm", "v0", ADVERSARIAL / "import_error.py", "--shape", SHAPE, "--budget", "0.2")
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    flat = " ".join(r.stdout.split())
    assert "import_error" in flat and "import failed: RuntimeError" in flat, r.stdout


def test_run_over_several_processes_reports_each():
    r = invoke("run", "gemm", "v0", "--shape", SHAPE, "--budget", "0.4", "--processes", "2", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    (st,) = doc["results"][0]["stats"]
    assert st["processes"] == 2 and len(st["process_means_us"]) == 2
    assert st["ci95_lo_us"] <= min(st["process_means_us"]) <= max(st["process_means_us"]) <= st["ci95_hi_us"]
    assert doc["timing"]["run_processes"] == 2


# ------------------------------------------------------------------------------ table --recorded

def test_table_recorded_writes_the_plot(tmp_path, isolated_env):
    pytest.importorskip("matplotlib")
    import shutil
    shutil.copy(Path(__file__).resolve().parents[1] / "leaderboard.csv", isolated_env["leaderboard"])  # real rows, read only
    png = tmp_path / "gemm.png"
    r = invoke("table", "gemm", "--recorded", "--plot", png)
    assert r.exit_code == 0, r.output
    assert "plot written to" in r.output and png.read_bytes()[:4] == b"\x89PNG"
    # --format json on stdout beside --plot: the document printed, and the plot (dropped before) written too
    png.unlink()
    r = invoke("table", "gemm", "--recorded", "--plot", png, "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["rows"] and png.read_bytes()[:4] == b"\x89PNG"
    assert "plot written to" in r.stderr


def test_table_published_refuses_a_plot(tmp_path):
    assert_clean_user_error(invoke("table", "gemm", "--published", "--plot", tmp_path / "x.png"), "--published")


@pytest.mark.parametrize("flags", [("--budget", "-1"), ("--budget", "0"), ("--target", "0"), ("--flush", "lukewarm"),
                                   ("--method", "hot")])
def test_invalid_timing_numbers_and_names_are_refused_before_anything_runs(flags):
    r = invoke("run", "gemm", "v0", "--shape", SHAPE, *flags)
    assert r.exit_code == 2 and "Invalid value" in r.output


def test_compare_refuses_a_negative_margin():
    r = invoke("compare", "gemm", "v0", "v0", "--shape", SHAPE, "--margin", "-1")
    assert r.exit_code == 2 and "--margin" in r.output


# ------------------------------------------------------------------------------------- the attic

@pytest.fixture
def gemm_attic(monkeypatch, tmp_path):
    """A gemm lineage of its own: v0 (the real one) in the main folder, v1 (v0's code, Verdict:
    slower) in its attic."""
    from harness import paths, submissions
    real_v0 = submissions.resolve("gemm", "v0").path.read_text()
    folder = tmp_path / "submissions" / "gemm"
    (folder / submissions.ATTIC).mkdir(parents=True)
    (folder / "submission_v0.py").write_text(real_v0)
    (folder / submissions.ATTIC / "submission_v1.py").write_text(
        real_v0.replace("Version: v0", "Version: v1\nVerdict: slower", 1))
    monkeypatch.setattr(paths, "submissions_dir", lambda: tmp_path / "submissions")
    return folder


def test_list_leaves_the_attic_out_unless_asked(gemm_attic):
    r = invoke("list", "gemm")
    assert r.exit_code == 0, r.output
    assert "v1" not in r.output and "attic: 1 more version(s)" in r.output
    r = invoke("list", "gemm", "--all")
    assert r.exit_code == 0 and "v1 ✗ attic" in r.output and "more version" not in r.output
    doc = json.loads(invoke("list", "gemm", "--all", "--format", "json").output)
    assert [(row["version"], row["verdict"], row["attic"]) for row in doc["rows"]] == [("v0", "", False),
                                                                                        ("v1", "slower", True)]


def test_a_half_written_version_is_left_out_and_said_and_stops_only_what_names_it(gemm_attic, isolated_env):
    (gemm_attic / "submission_v2.py").write_text('"""NVFP4 GEMM v2: being written\n')  # unterminated docstring
    r = invoke("list", "gemm")
    assert r.exit_code == 0 and "v0" in r.output, r.output
    assert "gemm v2 left out (it cannot be loaded)" in r.output and "submission_v2.py:1: syntax error" in r.output
    for args in (("leaderboard", "gemm"), ("table", "gemm", "--recorded")):
        r = invoke(*args)
        assert r.exit_code == 0 and "gemm v2 left out" in r.output, (args, r.output)
    r = invoke("test", "gemm", "v0", "--shape", SHAPE, "--seeds", "1", "--dist", "competition")
    assert r.exit_code == 0 and "left out" not in r.output, r.output  # a version that does not name it
    assert_clean_user_error(invoke("test", "gemm", "v2", "--shape", SHAPE), "submission_v2.py:1: syntax error")
    # the whole ladder's build check (CI's) refuses it
    assert_clean_user_error(invoke("build", "gemm", "all", "--compile-only"), "submission_v2.py:1: syntax error")


def test_an_attic_version_runs_exports_and_parents_a_new_one(gemm_attic):
    r = invoke("test", "gemm", "v1", "--shape", SHAPE, "--seeds", "1", "--dist", "competition")
    assert r.exit_code == 0 and "1 passed, 0 failed" in r.output, r.output
    r = invoke("export", "gemm", "v1")
    assert r.exit_code == 0 and r.output.startswith("#!POPCORN leaderboard nvfp4_gemm")
    assert_clean_user_error(invoke("new", "gemm", "v1", "--from", "v0"), "attic/submission_v1.py exists")
    r = invoke("new", "gemm", "v2", "--from", "v1")
    assert r.exit_code == 0, r.output
    assert "Parent: v1" in (gemm_attic / "submission_v2.py").read_text()


def test_table_says_why_a_shape_failed(monkeypatch):
    """The runner's plausibility verdict (the one there is) reaches the table with its reason."""
    from harness import runner, stats

    real_finish = runner._finish

    def fake_run(subs, shapes, dists, mode, plan=None, **_):
        outcome = runner.JobOutcome(list(subs), {"gpu": "NVIDIA H200", "torch": torch.__version__}, plan=plan)
        blocks = [[0.5, 0.6], [0.55, 0.5]]  # µs: far below any H200 floor for these shapes
        outcome.results = [runner.ShapeResult(s, dists[0], "PASS", "", [stats.summarize(blocks, True)], samples=[blocks])
                           for s in shapes]
        real_finish(outcome)
        return outcome

    monkeypatch.setattr(runner, "run", fake_run)
    r = invoke("table", "gemm", "--versions", "v0", "--shapes", "benchmarks")
    assert r.exit_code == 1, r.output
    flat = " ".join(r.output.split())
    assert "IMPLAUSIBLE" in flat and "v0 128x7168x16384: IMPLAUSIBLE" in flat and "physical floor" in flat


# Submissions that make harness.timing's Python clocks lie, out of the guard's sight (gc): every event
# method's figures are the compiled clock's (harness/clock.cpp), so they PASS with their real times
# (graph runs on a GPU only: tests/test_gpu.py).
@pytest.mark.parametrize("options", [[], ["--method", "queued"], ["--method", "cold", "--warm"]])
@pytest.mark.parametrize("name", list(CLOCK_UNFOOLED))
def test_python_clock_attacks_leave_every_event_methods_figures_real(name, options, isolated_env):
    import json
    r = invoke("run", "gemm", ADVERSARIAL / f"{name}.py", "--shape", SHAPE, "--budget", "0.2", "--json", *options)
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    row, stats = report["rows"][0], report["results"][0]["stats"][0]
    # NOTE: the honest arithmetic of _common.gemm_into took 0.5-1.3 ms a call on the CI CPU (tens of
    # launches on a GPU): far above 10 µs; fooled, a figure reads it over CLOCK_UNFOOLED's 1000, far below
    # (`--method kernel` on a CPU, still timed in Python, read 0.8 µs; `--method cold` 1.2 µs before the
    # compiled clock timed it)
    means = [row["mean_us"]] + ([stats["warm"]["mean_us"]] if "--warm" in options else [])
    assert row["status"] == "PASS" and min(means) > 10.0, (row, means)
