"""A file from outside the lab runs in the sandbox (harness/sandbox.py) where a tool works here:
it cannot open the lab's files for writing, and the run says where it ran (CPU)."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from harness import cli, paths, sandbox

WRITES_THE_LEADERBOARD = '''
import os


def custom_kernel(data):
    # opens the lab's leaderboard for appending and writes nothing: refused inside the sandbox
    fd = os.open({path!r}, os.O_WRONLY | os.O_APPEND)
    os.close(fd)
    raise RuntimeError("the lab's leaderboard was writable")
'''


@pytest.mark.skipif(sandbox.available() is None, reason=f"no sandbox here: {sandbox.why_unavailable()}")
def test_an_outside_file_cannot_write_the_lab(tmp_path):
    target = paths.REPO_ROOT / "leaderboard.csv"
    before = target.read_bytes()
    sub = tmp_path / "hostile.py"
    sub.write_text(WRITES_THE_LEADERBOARD.format(path=str(target)))
    r = CliRunner().invoke(cli.main, ["test", "gemm", str(sub), "--shape", "m=128,n=256,k=256", "--seeds", "1",
                                      "--dist", "competition"], catch_exceptions=False)
    flat = " ".join(r.output.split())
    assert r.exit_code == 1 and "Read-only file system" in flat, r.output
    assert "ran sandboxed" in flat
    assert target.read_bytes() == before


@pytest.mark.skipif(sandbox.available() is None, reason=f"no sandbox here: {sandbox.why_unavailable()}")
def test_where_the_sandbox_would_break_cuda_the_file_runs_unsandboxed_and_says_why(tmp_path, monkeypatch):
    from harness import isolation
    monkeypatch.setattr(isolation, "_gpu_here", lambda: True)
    monkeypatch.setattr(sandbox, "cuda_blocked", lambda *a, **k: "CUDA does not work inside bwrap here (test)")
    sub = tmp_path / "honest.py"
    sub.write_text("from reference.gemm import ref_kernel\n\n\ndef custom_kernel(data):\n"
                   "    c = data[-1]\n    c.copy_(ref_kernel(data))\n    return c\n")
    r = CliRunner().invoke(cli.main, ["test", "gemm", str(sub), "--shape", "m=128,n=256,k=256", "--seeds", "1",
                                      "--dist", "competition"], catch_exceptions=False)
    flat = " ".join(r.output.split())
    assert r.exit_code == 0, r.output
    assert "not sandboxed: CUDA does not work inside bwrap here (test)" in flat
