"""`nvfp4 test P V --bad-inputs`: every case of reference/bad_inputs.py is a usable transform of a
valid set; v0 handles them all; a case that ends the process is its own CRASH and the next cases
run in a fresh process; options the battery would ignore are refused."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from harness import cli
from reference import bad_inputs, problem_module

SMALL = {"gemv": dict(m=128, k=256, l=1), "gemm": dict(m=128, n=256, k=256, l=1),
         "dual_gemm": dict(m=128, n=256, k=256, l=1), "group_gemm": dict(m=[96, 128], n=[128, 256], k=[256, 512], g=2)}


def invoke(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args], env={"COLUMNS": "200"})


@pytest.mark.parametrize("problem", sorted(SMALL))
def test_every_case_breaks_a_valid_set_without_touching_it(problem):
    mod = problem_module(problem)
    for case in bad_inputs.cases(problem):
        data = mod.generate_input(**SMALL[problem], seed=1, device="cpu")
        bad = case.transform(data)
        assert bad is not data and case.kind in (bad_inputs.SAME, bad_inputs.BROKEN)
        # the valid set is untouched: a case builds a new structure, the reference still holds for it
        assert mod.check(data, mod.ref_kernel(data))[0], case.name


def test_v0_handles_every_bad_input():
    r = invoke("test", "gemm", "v0", "--bad-inputs", "--shape", "m=128,n=256,k=256,l=1")
    assert r.exit_code == 0, r.output
    rows = [line.split("\t") for line in r.stdout.splitlines() if line and not line.startswith(("#", "bad input"))
            and "\t" in line]
    assert len(rows) == len(bad_inputs.cases("gemm"))
    by_case = {row[0]: row for row in rows}
    assert by_case["sfa_permuted made .contiguous() (its logical order, not GPU MODE's bytes)"][1] == "ran, right"
    assert by_case["one item missing from the tuple"][1] == "refused"
    assert all(row[3] == "right" for row in rows)


def test_a_case_that_ends_the_process_is_its_crash_and_the_next_cases_still_run(tmp_path):
    path = tmp_path / "crashes_on_fp32_c.py"
    path.write_text('"""Ends the process when c is float32; otherwise the exact reference."""\n'
                    "import ctypes\nimport torch\nfrom reference import gemm\n\n"
                    "def custom_kernel(data):\n"
                    "    if data[-1].dtype == torch.float32:\n"
                    "        ctypes.string_at(0)\n"
                    "    return gemm.ref_kernel(data)\n")
    r = invoke("test", "gemm", path, "--bad-inputs", "--shape", "m=128,n=256,k=256,l=1")
    assert r.exit_code == 1, r.output
    rows = {line.split("\t")[0]: line.split("\t") for line in r.stdout.splitlines() if "\t" in line}
    assert rows["c as float32"][1] == "CRASH" and rows["c as float32"][3] == "-"
    assert rows["c as bfloat16"][1] == "ran (not checked)" and rows["c as bfloat16"][3] == "right"
    assert f"{len(bad_inputs.cases('gemm')) - 1} of {len(bad_inputs.cases('gemm'))} handled" in r.stdout


def test_options_the_battery_would_ignore_are_refused():
    r = invoke("test", "gemm", "v0", "--bad-inputs", "--seeds", "2", "--dist", "general")
    assert r.exit_code == 2
    assert "--dist and --seeds have no effect with --bad-inputs" in r.output
    assert "Traceback" not in r.output
