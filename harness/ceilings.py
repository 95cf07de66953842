"""The ceilings a GPU model reaches, which the floors are computed from (harness/roofline.py): dense
bf16 TFLOP/s and device copy TB/s, and the read floor of a shape's bytes under a flush.

On Hopper the exact NVFP4 path runs on bf16/fp16 tensor cores (no fp4 units), so the bf16 rate
is the compute ceiling: cuBLAS bf16 8192^3 and a device-to-device copy, as in shared/anchors.
A GPU model listed in REFERENCE always gets those figures, so every run's floor on that model is
the same number and "% of floor" compares across machines and sessions. Any other model is
measured once (measure(): warmed up, best of many) and cached in the build folder's ceilings file
(harness.locking.update_json: one writer per GPU with --gpus); datasheet figures are the last fallback.
"""

from __future__ import annotations

from harness import build_cache, locking


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
    """This GPU model's entry of the ceilings file (measured figures, read floors), or None."""
    return locking.read_json(build_cache.ceilings_file()).get(gpu_name)


def store(gpu_name: str, figures: dict) -> None:
    """This GPU model's measured ceilings into the build folder's ceilings file (its read floors kept)."""
    def change(data: dict) -> None:
        data[gpu_name] = dict(figures, read_floors=(data.get(gpu_name) or {}).get("read_floors", {}))
    locking.update_json(build_cache.ceilings_file(), change)


def store_read_floor(gpu_name: str, key: str, figures: dict) -> None:
    """One read floor of this GPU model into the ceilings file (its other entries kept)."""
    def change(data: dict) -> None:
        entry = data.setdefault(gpu_name, {})
        if not isinstance(entry.get("read_floors"), dict):
            entry["read_floors"] = {}
        entry["read_floors"][key] = figures
    locking.update_json(build_cache.ceilings_file(), change)


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


def of_gpu(torch, gpu_name: str, allow_measure: bool = True) -> dict | None:
    """This GPU model's ceilings: its REFERENCE figures, else a cached measurement, else one made
    now (and cached), else the datasheet's."""
    stored = cached(gpu_name)
    figures = reference_for(gpu_name) or (stored if stored and "bf16_tflops" in stored else None)
    if figures is None and allow_measure and torch.cuda.is_available():
        figures = measure(torch)
        torch.cuda.empty_cache()  # the measurement's buffers died with measure()'s frame
        store(gpu_name, figures)
    return figures or datasheet_for(gpu_name)


# --------------------------------------------------------------------------------- the read floor
# NOTE: the copy-rate floor is not reachable by a kernel that reads 30-130 MB right after the
# harness's zeroing flush: the flush leaves L2 full of dirty lines, and their write-back is charged
# to whatever evicts them (a pure read of 33-132 MB: 76-85% of the copy rate on an H200 after the
# zeroing flush, 98-106% after a read-only one; ../shared/anchors/h200-2026-11-27.md). So beside
# the copy floor each timed shape gets the time of a pure read of its bytes under the same flush,
# measured on the same clock: the floor a memory-bound kernel can reach.
READ_REPS = 15
READ_AHEAD_CYCLES = 100_000  # ~50 µs of device sleep: the read is queued before the device reaches it


# Triton sweep configurations tried (elements of int32 per load step, steps per program, warps),
# each with plain and evict-first loads: the read floor is the fastest of them, so one poor
# configuration cannot raise it.
SWEEP_CONFIGS = ((1024, 16, 4), (2048, 8, 8), (4096, 4, 8), (8192, 2, 16))


def _read_kernels(torch):
    """Read-only kernels over an int32 buffer, by name: torch's sum, and Triton sweeps (one
    partial per program) where Triton is installed. The floor takes the fastest."""
    kernels = {"torch.sum": lambda buf, out: buf.sum(dtype=torch.int64)}
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return kernels

    @triton.jit
    def sweep(src, out, n, BLOCK: tl.constexpr, ITERS: tl.constexpr, EVICT_FIRST: tl.constexpr):
        pid = tl.program_id(0)
        acc = tl.zeros([BLOCK], dtype=tl.int32)
        for i in range(ITERS):
            offs = (pid * ITERS + i) * BLOCK + tl.arange(0, BLOCK)
            if EVICT_FIRST:
                acc ^= tl.load(src + offs, mask=offs < n, other=0, eviction_policy="evict_first")
            else:
                acc ^= tl.load(src + offs, mask=offs < n, other=0)
        tl.store(out + pid, tl.xor_sum(acc, axis=0))

    def make(block, iters, warps, evict_first):
        def triton_read(buf, out):
            n = buf.numel()
            sweep[(triton.cdiv(n, block * iters),)](buf, out, n, BLOCK=block, ITERS=iters, EVICT_FIRST=evict_first,
                                                    num_warps=warps)
        return triton_read

    for block, iters, warps in SWEEP_CONFIGS:
        for evict_first in (False, True):
            name = f"triton sweep {block}x{iters}/{warps}w" + (" evict-first" if evict_first else "")
            kernels[name] = make(block, iters, warps, evict_first)
    return kernels


def measure_read(torch, nbytes: int, flush_kind: str, reps: int = READ_REPS) -> dict:
    """µs of a pure read of ``nbytes`` right after ``timing.flush(flush_kind)``: per kernel the median
    of ``reps``, each read queued behind a device sleep and timed by events around it alone."""
    import statistics

    from harness import timing
    n = max(1, nbytes // 4)
    buf = torch.randint(-2**31, 2**31 - 1, (n,), dtype=torch.int32, device="cuda")
    out = torch.empty(max(1, n // min(b * i for b, i, _ in SWEEP_CONFIGS) + 1), dtype=torch.int32, device="cuda")
    results = {}
    for name, read in _read_kernels(torch).items():
        try:
            read(buf, out)  # compile / first touch outside the samples
        except Exception as exc:  # noqa: BLE001 - a read kernel that cannot run here is skipped, said why
            results[name] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
            continue
        times = []
        for _ in range(reps):
            torch.cuda.synchronize()
            timing.flush(flush_kind)
            torch.cuda._sleep(READ_AHEAD_CYCLES)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            read(buf, out)
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) * 1e3)
        results[name] = {"median_us": statistics.median(times), "best_us": min(times)}
    timed = {k: v for k, v in results.items() if "median_us" in v}
    if not timed:
        raise RuntimeError(f"no read kernel ran: {results}")
    best = min(timed, key=lambda k: timed[k]["median_us"])
    return {"us": timed[best]["median_us"], "kernel": best, "bytes": nbytes, "flush": flush_kind,
            "tbps": nbytes / (timed[best]["median_us"] * 1e-6) / 1e12, "kernels": results}


def read_floor(torch, gpu_name: str, nbytes: int, flush_kind: str) -> dict:
    """The read floor of ``nbytes`` under ``flush_kind`` on this GPU model: cached in the build
    folder's ceilings file, measured on first use (``measure_read``)."""
    key = f"read3|{flush_kind}|{nbytes}"
    entry = cached(gpu_name) or {}
    found = (entry.get("read_floors") or {}).get(key)
    if found:
        return found
    figures = measure_read(torch, nbytes, flush_kind)
    torch.cuda.empty_cache()
    store_read_floor(gpu_name, key, figures)
    return figures
