"""How fast does a kernel write into L2 right after the harness's flush?

The harness (like GPU MODE's) flushes L2 before every timed call by zeroing a buffer larger than
L2 (timing.flush), which leaves every L2 line dirty. A kernel that then writes a workspace (a
prepass's fp16 A, split-K partials) evicts those lines, and each eviction is a write-back to DRAM.
This times one write kernel (torch's fill_, 16-byte stores over every SM) of several sizes after
three preparations, kernel duration from torch.profiler:
  - dirty: right after timing.flush() (the benchmark's condition);
  - clean: after the flush buffer was read (L2 full of clean lines: evictions cost nothing);
  - warm: after the same target was written just before (its lines already in L2).
If dirty is much slower than clean at sizes L2 holds, writes after the flush pay DRAM write-backs.

Usage on a GPU machine, repo root:
    python3 studies/write_rate.py [--sizes-mb 2,4,8,16,64] [--calls 20]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())


def fill_durations_us(prof) -> list[float]:
    """Device durations (µs) of the fill kernels a torch.profiler run recorded, in order."""
    out = []
    for e in prof.events():
        name = e.name.lower()
        if "fill" in name and e.device_type.name == "CUDA":
            out.append(e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes-mb", default="2,4,8,16,32,64")
    ap.add_argument("--calls", type=int, default=20)
    args = ap.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    from harness import timing
    timing.bind(torch)
    flush_buffer = timing.bound().flush_buffer
    sizes = [float(s) for s in args.sizes_mb.split(",")]
    print(f"{torch.cuda.get_device_name()}, L2 {torch.cuda.get_device_properties(0).L2_cache_size / 2**20:.0f} MB, "
          f"flush buffer {flush_buffer.numel() * flush_buffer.element_size() / 2**20:.0f} MB; fill_ µs (median of {args.calls})")
    print(f"{'MB':>6} {'dirty':>9} {'clean':>9} {'warm':>9}   {'TB/s dirty':>10} {'clean':>7} {'warm':>7}")
    for mb in sizes:
        target = torch.empty(int(mb * 2**20) // 4, dtype=torch.int32, device="cuda")
        times = {}
        for mode in ("dirty", "clean", "warm"):
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for i in range(args.calls):
                    if mode == "dirty":
                        timing.flush()
                    elif mode == "clean":
                        flush_buffer.sum()  # NOTE: reads only (a scalar out): L2 left full of clean lines
                    else:
                        target.fill_(i + 1)  # NOTE: the target's lines now in L2
                    target.fill_(i + 7)
                torch.cuda.synchronize()
            durations = fill_durations_us(prof)
            # NOTE: in the flush modes the flush's own zero_ is a fill kernel too: keep the target's
            # (every second one in dirty mode, every one in clean mode, every second in warm mode).
            ours = durations[1::2] if mode in ("dirty", "warm") else durations
            times[mode] = statistics.median(ours[-args.calls:])
        rates = {m: mb * 2**20 / (t * 1e-6) / 1e12 for m, t in times.items()}
        print(f"{mb:6.0f} {times['dirty']:9.2f} {times['clean']:9.2f} {times['warm']:9.2f}   "
              f"{rates['dirty']:10.2f} {rates['clean']:7.2f} {rates['warm']:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
