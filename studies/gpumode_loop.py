"""A hand-written copy of GPU MODE's batch loop, to check `nvfp4 run --method gpumode` against.

GPU MODE's eval for these problems (reference-kernels, problems/nvidia): a list of N distinct
inputs (gemm, dual_gemm 50; group_gemm 15), then repeats of: synchronise, clear L2, start event,
custom_kernel on each input in turn, end event, synchronise; the sample is the time over N; stop
once the standard error is under 0.1% of the mean (after at least 3 repeats and 100 ms), or after
10 s. The clear here writes a 256 MB buffer (GPU MODE's clear fills a large int buffer), not the
harness's flush, so the two share no code. Nothing is checked here: `nvfp4 test` does that.

Usage (GPU, repo root): python3 studies/gpumode_loop.py group_gemm v39 [--batch 15]
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem")
    ap.add_argument("version")
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--max-s", type=float, default=10.0)
    args = ap.parse_args()
    import torch

    from harness import config, loader
    from harness.submissions import resolve
    from reference import problem_module
    batch = args.batch or {"gemm": 50, "dual_gemm": 50, "group_gemm": 15, "gemv": 1}[args.problem]
    sub = resolve(args.problem, args.version)
    kernel = loader.import_submission(str(sub.path), sub.label)
    mod = problem_module(args.problem)
    dummy = torch.empty(64 * 1024 * 1024, dtype=torch.int32, device="cuda")
    for shape in config.load()[args.problem].benchmarks:
        params = dict(shape.params)
        seed = params.pop("seed")
        data = [mod.generate_input(**params, seed=seed + 42 * (i + 1), dist="competition") for i in range(batch)]
        for d in data:  # the eval's correctness pass runs every input once before timing
            kernel(d)
        torch.cuda.synchronize()
        samples, t_start = [], time.perf_counter()
        while True:
            torch.cuda.synchronize()
            dummy.fill_(42)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for d in data:
                kernel(d)
            e.record()
            torch.cuda.synchronize()
            samples.append(s.elapsed_time(e) * 1e3 / batch)
            n = len(samples)
            elapsed = time.perf_counter() - t_start
            if n > 2 and elapsed > 0.1:
                mean = statistics.fmean(samples)
                err = statistics.stdev(samples) / math.sqrt(n) / mean
                if err < 1e-3 or elapsed > args.max_s:
                    break
        mean = statistics.fmean(samples)
        cv = statistics.stdev(samples) / mean
        print(f"gpumode_loop {args.problem} {sub.label} {shape.label}: {mean:.2f} µs mean, CV {cv:.2%}, "
              f"{len(samples)} batches of {batch}", flush=True)
        del data
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
