"""harness.ceilings: a reference model's floors never depend on what a machine measured;
other models are measured once and cached; the CLI's `ceilings` command refuses a CPU clearly."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from harness import ceilings, cli, roofline

GEMM_BENCH = {"m": 128, "n": 7168, "k": 16384, "l": 1}


class NoMeasuringTorch:
    """A torch stand-in that fails the test if anything tries to touch the GPU."""

    class cuda:  # noqa: N801 (mirrors torch.cuda)
        @staticmethod
        def is_available():
            raise AssertionError("a reference model must not be measured")


class CpuTorch:
    class cuda:  # noqa: N801
        @staticmethod
        def is_available():
            return False


def test_reference_model_ignores_cached_measurements():
    ceilings.store("NVIDIA H200", {"bf16_tflops": 500.0, "copy_tbps": 2.0, "source": "measured"})  # a slow start's
    figures = ceilings.of_gpu(NoMeasuringTorch, "NVIDIA H200")
    assert figures["source"] == "reference"
    assert figures["bf16_tflops"] == pytest.approx(792.6)
    # the H200 floor for 128x7168x16384 (37.9 µs) is what every H200 run now reports
    assert roofline.floor_us("gemm", GEMM_BENCH, figures) == pytest.approx(37.9, abs=0.05)


def test_unlisted_model_uses_its_cached_measurement_then_the_datasheet():
    assert ceilings.of_gpu(CpuTorch, "NVIDIA H100 PCIe")["source"] == "datasheet"
    ceilings.store("NVIDIA H100 PCIe", {"bf16_tflops": 600.0, "copy_tbps": 1.9, "source": "measured"})
    assert ceilings.of_gpu(CpuTorch, "NVIDIA H100 PCIe")["bf16_tflops"] == 600.0
    assert ceilings.of_gpu(CpuTorch, "Some GPU") is None


def test_reference_figures_are_plausible_against_their_datasheets():
    for gpu, figures in ceilings.REFERENCE.items():
        sheet = ceilings.datasheet_for(gpu)
        assert sheet is not None, gpu
        for key in ("bf16_tflops", "copy_tbps"):
            assert 0.5 * sheet[key] < figures[key] < sheet[key], (gpu, key)


def test_ceilings_command_needs_a_gpu():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the command measures there")
    r = CliRunner().invoke(cli.main, ["ceilings"])
    assert r.exit_code != 0
    assert "no GPU here" in r.output
