"""A newcomer's first screen (issue 51): what a CPU machine says and refuses, the tables' 80-column
and piped forms, the options every table honours or refuses, and the docs against --help."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from harness import cli

DATA = Path(__file__).resolve().parent / "data"


def invoke(*args, env=None):
    return CliRunner().invoke(cli.main, [str(a) for a in args], env={"COLUMNS": "200", **(env or {})})


def test_a_gpu_mode_cuda_file_without_arch_is_refused_once_on_a_cpu(monkeypatch):
    """It used to FAIL its first shape with load_inline's "CUDA_HOME environment variable is not set"
    and SKIP the other 19 with that message; now one line says it needs a GPU, nothing runs."""
    monkeypatch.setattr("harness.runner.local_capability", lambda: None)
    r = invoke("test", "gemm", DATA / "gpumode_cuda_no_arch.py")
    assert r.exit_code == 1
    assert r.stderr.strip().splitlines() == [
        "refused: gpumode_cuda_no_arch.py: compiles CUDA (load_inline) and names no Arch: needs an NVIDIA GPU; "
        "this machine has none"]
    assert "CUDA_HOME" not in r.output


def test_cpu_rows_reach_the_leaderboard_only_with_allow_cpu(monkeypatch, isolated_env):
    """run --record on a CPU wrote a gpu=cpu row that every recorded table then showed beside the
    GPUs'; now it is refused before anything runs, and --allow-cpu records it on purpose."""
    from harness import leaderboard
    monkeypatch.setattr("harness.runner.local_capability", lambda: None)
    for command in (["run", "gemm", "v0"], ["table", "gemm", "--versions", "v0"]):
        r = invoke(*command, "--shape" if command[0] == "run" else "--shapes", "m=128,n=256,k=256" if command[0] == "run"
                   else "tests", "--record")
        assert r.exit_code == 2 and r.stderr.startswith("error: --record: no GPU here"), r.output
        assert not isolated_env["leaderboard"].exists()
    r = invoke("run", "gemm", "v0", "--shape", "m=128,n=256,k=256", "--record", "--allow-cpu", "--budget", "0.2",
               "--pool", "2", "--min-repeats", "3")
    assert r.exit_code == 0, r.output
    assert [row["gpu"] for row in leaderboard.read()] == ["cpu"]
