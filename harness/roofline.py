"""The floor of a shape: max(FLOPs / dense bf16 tensor-core rate, bytes / memory bandwidth), and
the plausibility of a time beside the physical floor (the datasheet's peaks).

The ceilings those rates come from (reference, measured, datasheet) and the read floor are
:mod:`harness.ceilings`'s; this module only turns figures and a shape into times.
"""

from __future__ import annotations

from harness import ceilings as ceilings_mod
from reference import problem_module


def floor_us(problem: str, params: dict, figures: dict | None) -> float | None:
    if not figures:
        return None
    mod = problem_module(problem)
    shape = {k: v for k, v in params.items() if k != "seed"}
    t_compute = mod.flops(**shape) / (figures["bf16_tflops"] * 1e12)
    t_memory = mod.bytes_moved(**shape) / (figures["copy_tbps"] * 1e12)
    return max(t_compute, t_memory) * 1e6


# How far above the measured ceilings a GPU we have no datasheet for is still believed to go.
UNKNOWN_GPU_MARGIN = 1.3


def physical_floor_us(problem: str, params: dict, gpu_name: str, figures: dict | None) -> float | None:
    """The time no correct kernel can beat on this GPU: FLOPs at the datasheet's dense bf16 peak or
    bytes at its peak memory bandwidth (above what cuBLAS and a copy reach). Without a datasheet:
    the measured ceilings times ``UNKNOWN_GPU_MARGIN``. None on a CPU."""
    if not gpu_name or gpu_name == "cpu":
        return None
    peak = ceilings_mod.datasheet_for(gpu_name)
    if peak is None and figures:
        peak = {k: figures[k] * UNKNOWN_GPU_MARGIN for k in ("bf16_tflops", "copy_tbps")}
    return floor_us(problem, params, peak)


def plausibility(mean_us: float, physical_us: float | None, v0_mean_us: float | None = None) -> str | None:
    """Why a measured time cannot be real, or None. A time under the physical floor means the work
    was not timed (or not done); the same bound caps any speedup over v0 at v0 / floor."""
    if physical_us is None or mean_us is None:
        return None
    if mean_us < physical_us:
        why = (f"IMPLAUSIBLE: {mean_us:.2f} µs is below this GPU's physical floor of {physical_us:.2f} µs "
               f"(datasheet peak compute and bandwidth)")
        if v0_mean_us:
            why += f"; a {v0_mean_us / mean_us:.0f}x speedup over v0 where at most {v0_mean_us / physical_us:.0f}x is possible"
        return why
    return None
