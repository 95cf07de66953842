"""nvfp4 doctor runs anywhere, a CPU-only machine included, and says what it found."""

from __future__ import annotations

import torch
from click.testing import CliRunner

from harness import cli, doctor


def test_checks_cover_the_tools_and_the_cache(isolated_env):
    found, can = doctor.checks()
    items = {c.item: c for c in found}
    for name in ("python", "torch", "nvcc", "ncu", "compute-sanitizer", "NVML", "build cache"):
        assert name in items, name
    assert str(isolated_env["build_dir"]) in items["build cache"].value
    assert {c.item for c in can} >= {"build", "sanitize", "profile --ncu"}
    if not torch.cuda.is_available():
        assert items["GPU"].ok is False and "none visible" in items["GPU"].value
        assert next(c for c in can if c.item == "sanitize").value == "no: no GPU"


def test_cli(monkeypatch):
    monkeypatch.setattr("harness.cuda_tools.find", lambda name: None)  # as on a machine without the toolkit
    r = CliRunner().invoke(cli.main, ["doctor"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "this machine" in r.stdout and "what it can do here" in r.stdout
    assert "nvcc" in r.stdout and "not found" in r.stdout
    if not torch.cuda.is_available():
        assert "no: neither GPU nor nvcc" in r.stdout
