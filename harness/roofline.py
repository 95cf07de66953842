"""The floor of a shape: max(FLOPs / dense bf16 tensor-core rate, bytes / memory bandwidth).

On Hopper the exact NVFP4 path runs on bf16/fp16 tensor cores (no fp4 units), so the bf16 rate
is the compute ceiling: cuBLAS bf16 8192^3 and a device-to-device copy, as in shared/anchors.
A GPU model listed in REFERENCE always gets those figures, so every run's floor on that model is
the same number and "% of floor" compares across machines and sessions. Any other model is
measured once (measure(): warmed up, best of many) and cached in the build folder; datasheet
figures are the last fallback.
"""

from __future__ import annotations

import json
import math

from harness import build_cache
from reference import problem_module

# Dense bf16 TFLOP/s and memory TB/s by datasheet, used until a measurement exists.
DATASHEET = {
    "H100": {"bf16_tflops": 989.0, "copy_tbps": 3.35},
    "H200": {"bf16_tflops": 989.0, "copy_tbps": 4.8},
    "B200": {"bf16_tflops": 2250.0, "copy_tbps": 8.0},
}


# Ceilings per GPU model, measured on a warm device with measure()'s method (``nvfp4 ceilings
# --measure`` prints a fresh measurement beside these).
# NOTE: measured on each fresh machine instead, one H100 model's floors moved by ±3% between
# sessions and once by 25% (616 TFLOP/s, 2.84 TB/s: a median of ten calls right after start-up),
# while the kernels timed in that same process ran at their usual speed.
REFERENCE = {
    # shared/anchors/h200-2026-11-21.json (median of ten after warm-up; the issues' H200 floors)
    "NVIDIA H200": {"bf16_tflops": 792.6, "copy_tbps": 4.237},
    # The same GH100 compute as the H200 (132 SMs, the same clocks), so its bf16 figure; the best
    # H100 start in leaderboard.csv measured 791.7 (gemm's floor 37.97 µs). Copy: best of three
    # `nvfp4 ceilings --measure` at fbd0e3e (3.000 / 2.972 / 2.988 TB/s; bf16 643 / 684 / 694 there:
    # cuBLAS 8192^3 runs power-limited, and how far a machine throttles varies from start to start).
    "NVIDIA H100 80GB HBM3": {"bf16_tflops": 792.6, "copy_tbps": 3.000},
}


def reference_for(gpu_name: str) -> dict | None:
    figures = REFERENCE.get(gpu_name)
    return dict(figures, source="reference") if figures else None


def datasheet_for(gpu_name: str) -> dict | None:
    for key, figures in DATASHEET.items():
        if key in gpu_name.upper():
            return dict(figures, source="datasheet")
    return None


def cached(gpu_name: str) -> dict | None:
    path = build_cache.ceilings_file()
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text()).get(gpu_name)
    except (OSError, json.JSONDecodeError):
        return None


def store(gpu_name: str, figures: dict) -> None:
    path = build_cache.ceilings_file()
    try:
        data = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, json.JSONDecodeError):
        data = {}
    data[gpu_name] = figures
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


# measure()'s method: each operation runs for WARMUP_S first (clocks up, cuBLAS's choice made), then
# REPS timed calls, of which the fastest counts: a ceiling is what the device can do, and a slow
# call (a clock dip, a neighbour) says nothing about that.
WARMUP_S = 1.0
REPS = 30


def measure(torch, warmup_s: float = WARMUP_S, reps: int = REPS) -> dict:
    """cuBLAS bf16 8192^3 TFLOP/s and device copy TB/s (bytes read + written): the best of `reps`
    calls after `warmup_s` seconds of each."""
    import time

    dev = torch.device("cuda")
    n = 8192
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    src = torch.randn(256 * 1024 * 1024, device=dev, dtype=torch.float32)  # 1 GiB
    dst = torch.empty_like(src)

    def best_ms(fn):
        end = time.perf_counter() + warmup_s
        while time.perf_counter() < end:
            fn()
            torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
        return min(times)

    mm_ms = best_ms(lambda: torch.mm(a, b))
    copy_ms = best_ms(lambda: dst.copy_(src))
    return {"bf16_tflops": 2 * n**3 / (mm_ms * 1e-3) / 1e12,
            "copy_tbps": 2 * src.numel() * 4 / (copy_ms * 1e-3) / 1e12,
            "source": "measured"}


def ceilings(torch, gpu_name: str, allow_measure: bool = True) -> dict | None:
    """This GPU model's ceilings: its REFERENCE figures, else a cached measurement, else one made
    now (and cached), else the datasheet's."""
    figures = reference_for(gpu_name) or cached(gpu_name)
    if figures is None and allow_measure and torch.cuda.is_available():
        figures = measure(torch)
        torch.cuda.empty_cache()  # the measurement's buffers died with measure()'s frame
        store(gpu_name, figures)
    return figures or datasheet_for(gpu_name)


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
    peak = datasheet_for(gpu_name)
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


def geomean(values: list[float]) -> float | None:
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not vals or len(vals) != len(values):
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))
