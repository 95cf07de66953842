"""Shared fixtures and the ``gpu`` marker for the NVFP4 harness tests.

- Every test runs with ``NVFP4_BUILD_DIR`` and ``NVFP4_LEADERBOARD`` pointed into its own tmp
  folder (``isolated_env`` is autouse), so nothing touches the repo's ``.build`` or
  ``leaderboard.csv``; child processes inherit the environment.
- ``@pytest.mark.gpu`` tests are skipped where ``torch.cuda.is_available()`` is False.
- ``@pytest.mark.slow`` tests (over 30 s on the 2-core CI machine) are skipped unless
  ``NVFP4_SLOW_TESTS=1``.
- GPU tests share one extensions cache (``NVFP4_EXTENSIONS_DIR``, default the repo's
  ``.build/torch_extensions``: content-keyed, so sharing is safe), so a version compiles once per
  machine, not once per test.
- Under pytest-xdist on a machine with several GPUs (``-n`` = the GPU count), each worker takes a
  GPU of its own (``CUDA_VISIBLE_DEVICES``), so timing tests never share one.
- The compiled clock (``harness.clock``) is built once per test process into a shared tmp folder
  (``NVFP4_CLOCK_DIR``), not once per test's build folder (~1 s of g++ each).
- ``tiny_shapes`` writes a small shapes.yaml (tiny tests and benchmarks for all four problems)
  and points ``NVFP4_SHAPES`` at it; ``write_shapes`` writes any text there (malformed files).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

ADVERSARIAL_DIR = Path(__file__).resolve().parent / "adversarial"
# NOTE: read before isolated_env points NVFP4_BUILD_DIR into each test's tmp folder. Each GPU test
# compiled every version it ran into its own folder: 53 GPU tests took over 10 minutes on an H200
# machine (2026-11-28), most of it nvcc rebuilding the same few versions.
SHARED_EXTENSIONS_DIR = os.environ.get("NVFP4_EXTENSIONS_DIR") or str(
    Path(os.environ.get("NVFP4_BUILD_DIR", REPO_ROOT / ".build")) / "torch_extensions")


def gpu_for_worker(worker: str, visible: str | None, gpu_count: int) -> str | None:
    """The CUDA_VISIBLE_DEVICES an xdist worker (``gw0``, ``gw1``, ...) takes, or None to leave it.
    ``visible``: CUDA_VISIBLE_DEVICES as set (None: unset); ``gpu_count``: the machine's GPUs.
    With one GPU or none, every worker keeps what it has (the README: GPU tests without -n there)."""
    if not worker.startswith("gw") or not worker[2:].isdigit():
        return None
    gpus = [g.strip() for g in visible.split(",") if g.strip()] if visible is not None else [str(i) for i in range(gpu_count)]
    if len(gpus) < 2:
        return None
    return gpus[int(worker[2:]) % len(gpus)]


def _machine_gpu_count() -> int:
    # NOTE: counted from the driver's /proc entries, not torch: asking CUDA would fix the device list
    # before CUDA_VISIBLE_DEVICES is set for this worker.
    try:
        return len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        return 0


_pinned = gpu_for_worker(os.environ.get("PYTEST_XDIST_WORKER", ""), os.environ.get("CUDA_VISIBLE_DEVICES"),
                         _machine_gpu_count())
if _pinned is not None:
    os.environ["CUDA_VISIBLE_DEVICES"] = _pinned


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped when torch.cuda.is_available() is False)")
    config.addinivalue_line("markers", "slow: over 30 s on the 2-core CI machine; run with NVFP4_SLOW_TESTS=1")


def _cuda_available() -> bool:
    import torch
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    # NOTE: CI must stay under 10 minutes on 2 cores; a test that cannot be made faster (the torch PCH's
    # first build: 60 s idle, 300 s beside other work) runs where asked, never by default
    if os.environ.get("NVFP4_SLOW_TESTS") != "1":
        slow = pytest.mark.skip(reason="slow (over 30 s): NVFP4_SLOW_TESTS=1 runs it")
        for item in items:
            if "slow" in item.keywords:
                item.add_marker(slow)
    if any("gpu" in item.keywords for item in items) and not _cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def clock_dir(tmp_path_factory) -> Path:
    """Where this test process builds the compiled clock (content-keyed, so sharing is safe)."""
    return tmp_path_factory.mktemp("clock")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch, request, clock_dir):
    """Build cache and leaderboard in tmp folders (a GPU test's extensions in the shared cache, the
    compiled clock in the process's shared folder); returns their paths."""
    build = tmp_path / "build"
    board = tmp_path / "leaderboard.csv"
    monkeypatch.setenv("NVFP4_CLOCK_DIR", str(clock_dir))
    monkeypatch.setenv("NVFP4_BUILD_DIR", str(build))
    monkeypatch.setenv("NVFP4_LEADERBOARD", str(board))
    if request.node.get_closest_marker("gpu") is not None:
        monkeypatch.setenv("NVFP4_EXTENSIONS_DIR", SHARED_EXTENSIONS_DIR)
    monkeypatch.delenv("NVFP4_SHAPES", raising=False)
    return {"build_dir": build, "leaderboard": board}


TINY_SHAPES_YAML = """\
# Tiny shapes for the CLI/table tests: every problem, a test and a benchmark or two.
gemv:
  tests:
    - {m: 128, k: 256, l: 1, seed: 1111}
  benchmarks:
    - {m: 128, k: 256, l: 2, seed: 1111}
  speed_of_light_b200_us: [1.0]
  writeup: null

gemm:
  tests:
    - {m: 64, n: 128, k: 256, l: 1, seed: 1111}
  benchmarks:
    - {m: 128, n: 128, k: 256, l: 1, seed: 1111}
    - {m: 64, n: 128, k: 512, l: 1, seed: 1111}
  speed_of_light_b200_us: [1.0, 2.0]
  writeup: null

dual_gemm:
  tests:
    - {m: 64, n: 128, k: 256, l: 1, seed: 1111}
  benchmarks:
    - {m: 128, n: 128, k: 256, l: 1, seed: 1111}

group_gemm:
  tests:
    - {m: [64, 40], n: [128, 64], k: [256, 256], g: 2, seed: 1111}
  benchmarks:
    - {m: [64, 32], n: [128, 128], k: [256, 512], g: 2, seed: 1111}
  speed_of_light_b200_us: [1.0]
  writeup:
    source: tiny
    gpu: NVIDIA B200
    shapes: ["A"]
    versions:
      - {name: V0, change: "baseline", us: [10.0]}
"""


@pytest.fixture
def write_shapes(tmp_path, monkeypatch):
    """``write_shapes(text)`` -> path; writes ``text`` as shapes.yaml and sets ``NVFP4_SHAPES``."""
    def _write(text: str, name: str = "shapes.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        monkeypatch.setenv("NVFP4_SHAPES", str(path))
        return path
    return _write


@pytest.fixture
def tiny_shapes(write_shapes):
    """A tiny, valid shapes.yaml in use through ``NVFP4_SHAPES``; returns its path."""
    return write_shapes(TINY_SHAPES_YAML)
