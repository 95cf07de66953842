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


def test_reports_nvdisasm_which_probe_sass_needs(monkeypatch):
    """probe sass needs nvcc and nvdisasm; doctor names both, and says whether probe sass can run."""
    monkeypatch.delenv("NVDISASM", raising=False)
    monkeypatch.setattr("harness.cuda_tools.find", lambda name: None)
    found, can = doctor.checks()
    assert {c.item: c.ok for c in found}["nvdisasm"] is False
    assert {c.item: c.value for c in can}["probe sass"] == "no: nvcc and nvdisasm"
    monkeypatch.setattr("harness.cuda_tools.find", lambda name: f"/opt/cuda/bin/{name}")
    monkeypatch.setattr("harness.cuda_tools.version", lambda path: "13.0")
    found, can = doctor.checks()
    assert {c.item: c.ok for c in found}["nvdisasm"] is True
    assert {c.item: c.ok for c in can}["probe sass"] is True
