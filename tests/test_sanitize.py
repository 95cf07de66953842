"""compute-sanitizer reports parsed strictly (recorded outputs: clean, errors, a race, truncated;
an inconsistent report; a clean report of a program that failed) and, on a GPU, the planted
out-of-bounds write and shared-memory race caught through the CLI."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from harness import cli, sanitize

DATA = Path(__file__).resolve().parent / "data" / "sanitizer"
PLANTED = Path(__file__).resolve().parent / "planted"
CODE = sanitize.ERROR_EXITCODE


def recorded(name: str) -> str:
    return (DATA / name).read_text()


def invoke(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args], env={"COLUMNS": "200"})


# ------------------------------------------------------------------------------------ parsing
def test_clean():
    r = sanitize.parse(recorded("memcheck_clean.txt"), 0)
    assert (r.status, r.errors, r.findings, r.ok) == (sanitize.CLEAN, 0, [], True)
    assert r.child == {"ok": True, "message": ""}


def test_memcheck_errors():
    r = sanitize.parse(recorded("memcheck_oob_write.txt"), CODE)
    assert r.status == sanitize.ERRORS and not r.ok and r.errors == 3
    assert r.message == "3 errors"
    kinds = [f.kind for f in r.findings]
    assert "Invalid __global__ write of size 2 bytes" in kinds
    oob = next(f for f in r.findings if f.kind.startswith("Invalid __global__ write"))
    assert any("is 1 bytes after the nearest allocation" in line for line in oob.example)
    assert any("copy_one_past_end" in line for line in oob.example)
    assert sum(f.count for f in r.findings) == 3  # the write and the two API errors it causes
    assert r.child["ok"] is False


def test_racecheck_summary():
    r = sanitize.parse(recorded("racecheck_smem_race.txt"), CODE)
    assert r.status == sanitize.ERRORS and r.errors == 1 and r.warnings == 0
    (f,) = r.findings
    assert f.kind.startswith("Error: Race reported between Write access at copy_through_shared")
    assert "+0x…" in f.kind  # addresses normalised, so repeats of one race group together
    assert "[512 hazards]" in f.example[1]


@pytest.mark.parametrize("code", [None, -9, 0, CODE])
def test_truncated_is_never_a_pass(code):
    r = sanitize.parse(recorded("memcheck_truncated.txt"), code)
    assert r.status == sanitize.UNPARSED and not r.ok
    assert "no ERROR SUMMARY line" in r.message and "not a pass" in r.message


def test_empty_or_foreign_output_is_unparsed():
    assert sanitize.parse("", 0).status == sanitize.UNPARSED
    assert sanitize.parse("compute-sanitizer: command not found\n", 127).status == sanitize.UNPARSED


def test_summary_contradicting_its_records_is_unparsed():
    text = recorded("memcheck_oob_write.txt").replace("ERROR SUMMARY: 3 errors", "ERROR SUMMARY: 0 errors")
    r = sanitize.parse(text, 0)
    assert r.status == sanitize.UNPARSED and "inconsistent" in r.message


def test_clean_report_of_a_failed_program_fails():
    text = recorded("memcheck_clean.txt")
    wrong = text.replace('{"ok": true, "message": ""}', '{"ok": false, "message": "seed 1111: 3 of 128 mismatch"}')
    r = sanitize.parse(wrong, 1)
    assert r.status == sanitize.FAIL and "3 of 128 mismatch" in r.message
    no_verdict = "\n".join(line for line in text.splitlines() if not line.startswith(sanitize.CHILD_DONE))
    r = sanitize.parse(no_verdict, 0)
    assert r.status == sanitize.FAIL and "did not finish" in r.message
    r = sanitize.parse(text, 7)
    assert r.status == sanitize.FAIL and "exit code 7" in r.message


def test_racecheck_warnings_are_shown_not_failed():
    text = recorded("racecheck_smem_race.txt").replace("(1 error, 0 warnings)", "(0 errors, 1 warning)")
    text = text.replace("========= Error: Race", "========= Warning: Race")
    r = sanitize.parse(text, 0)
    assert r.status == sanitize.CLEAN and r.warnings == 1 and "1 racecheck warning" in r.message


def test_command():
    cmd = sanitize.command("/cuda/bin/compute-sanitizer", "racecheck", ["gemv", "f.py"])
    assert cmd[:3] == ["/cuda/bin/compute-sanitizer", "--tool", "racecheck"]
    assert ["--error-exitcode", str(CODE)] == cmd[3:5] and "--print-limit" in cmd
    assert cmd[-4:] == ["-m", "harness.sanitize", "gemv", "f.py"]


# ------------------------------------------------------------------------------------ shapes
def test_default_shapes_are_the_smallest_tests_and_benchmark_shapes():
    """Both, not the tests shape alone: gemm's smallest tests shape launches no paired kernel, and only the
    benchmark shape's synccheck found v82-v84's paired epilogue undefined (session 64)."""
    from harness import config
    from harness.cli.devtools import _sanitize_shapes
    from reference import problem_module

    flops = problem_module("gemm").flops
    shapes = _sanitize_shapes("gemm", None, (), True)
    assert [s.set_name for s in shapes] == ["tests", "benchmarks"]
    assert shapes[1].label == "128x7168x2048"
    pc = config.load()["gemm"]
    assert flops(**shapes[0].generator_kwargs()) == min(flops(**t.generator_kwargs()) for t in pc.tests)


def test_shapes_option_takes_a_comma_list_and_refuses_bad_entries():
    from harness.cli.devtools import _sanitize_shapes
    from harness.errors import UserError

    shapes = _sanitize_shapes("gemm", "tests:0, benchmarks:2,tests:0", (), True)
    assert [(s.set_name, s.index) for s in shapes] == [("tests", 0), ("benchmarks", 2)]  # the repeat dropped
    assert len(_sanitize_shapes("gemm", "benchmarks", (), True)) == 3
    custom = _sanitize_shapes("gemm", "tests:1", ("m=64,n=256,k=576,l=1",), True)
    assert [s.label for s in custom][1] == "64x256x576"
    for bad, said in (("", "give tests:N"), ("tests:0,,benchmarks:1", "empty entry"), ("tests:99", "tests shapes"),
                      ("bogus:1", "expected benchmarks")):
        with pytest.raises(UserError, match=said):
            _sanitize_shapes("gemm", bad, (), True)


def test_cli_refuses_a_bad_shapes_option_before_anything_else():
    r = invoke("sanitize", "gemm", "v0", "--shapes", "tests:0,,tests:1")
    assert r.exit_code == 2 and "empty entry" in r.stderr and "Traceback" not in r.output


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for machines without a GPU")
def test_cli_refuses_without_gpu():
    r = invoke("sanitize", "gemv", "v0")
    assert r.exit_code == 2 and r.stderr.startswith("error: sanitize needs an NVIDIA GPU")


# ----------------------------------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_gpu_memcheck_catches_planted_out_of_bounds_write():
    r = invoke("sanitize", "gemv", PLANTED / "oob_write.py")
    assert r.exit_code == 1, r.output
    assert "ERRORS" in r.stdout and "Invalid __global__ write of size 2 bytes" in r.stdout
    assert "copy_one_past_end" in r.stdout


@pytest.mark.gpu
def test_gpu_racecheck_catches_planted_shared_memory_race():
    r = invoke("sanitize", "gemv", PLANTED / "smem_race.py", "--tool", "racecheck")
    assert r.exit_code == 1, r.output
    assert "ERRORS" in r.stdout and "Race reported between Write access" in r.stdout
    assert "copy_through_shared" in r.stdout


@pytest.mark.gpu
def test_gpu_clean_version_is_clean():
    """No false positives: the race is invisible to memcheck, and v0 is clean."""
    r = invoke("sanitize", "gemv", PLANTED / "smem_race.py")
    assert r.exit_code == 0 and "CLEAN 0 errors" in r.stdout, r.output
    r = invoke("sanitize", "gemv", "v0")
    assert r.exit_code == 0 and "CLEAN 0 errors" in r.stdout, r.output


def test_a_timed_out_tool_takes_the_program_it_started_with_it(tmp_path):
    # A stand-in for compute-sanitizer: it starts a program (which records its pid, then runs on) and waits on it.
    pid_file = tmp_path / "program.pid"
    tool = ("import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', "
            f"\"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)\"]); p.wait()")
    from harness import isolation

    code, _ = isolation.run_group([sys.executable, "-c", tool], timeout_s=2)
    assert code is None
    pid = int(pid_file.read_text())
    import os
    import time

    for _ in range(50):  # NOTE: killed by SIGKILL, reaped by init: gone within moments
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the program the timed-out tool started is still running")


def test_a_finished_tool_gives_its_code_and_output():
    from harness import isolation

    code, text = isolation.run_group([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); "
                                      "sys.exit(3)"], timeout_s=30)
    assert code == 3 and "out" in text and "err" in text


def test_a_terminated_harness_takes_the_tool_s_program_with_it(tmp_path):
    # `timeout` ends a harness command with SIGTERM: the tool it runs (and the tool's program) must not outlive it.
    import os
    import signal
    import subprocess
    import time

    pid_file = tmp_path / "program.pid"
    tool = ("import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', "
            f"\"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)\"]); p.wait()")
    harness = ("import sys; from harness import isolation; "
               f"isolation.run_group([sys.executable, '-c', {tool!r}], timeout_s=60)")
    proc = subprocess.Popen([sys.executable, "-c", harness], cwd=Path(__file__).resolve().parents[1])
    for _ in range(100):
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.1)
    pid = int(pid_file.read_text())
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) != 0
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    pytest.fail("the tool's program outlived the terminated harness")
