"""What does a call cost before its kernel does any work? (groundwork for issues 5-8's host rungs)

The harness times each call from an idle device: flush L2, synchronise, record the start event,
call, record the end event. `nvfp4 profile` showed kernels summing to 31 us (gemv v5, 7168x16384)
and 23 us (group_gemm v7, shape D) where the harness measured 54 and 59-62 us per call. This times
the smallest possible call, one near-empty kernel (torch.cuda._sleep(1)), four ways:
  idle:        flush, synchronise, start, launch, end   (the harness's cold mode)
  idle-nosync: flush, start, launch, end, synchronise   (GPU MODE's eval: the start event queues behind the flush)
  busy:        start, launch, end with the device kept busy by a long kernel queued before start
  events-only: flush, synchronise, start, end            (no launch at all)
Usage: python3 studies/idle_launch.py [--repeats 300]
"""
import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import torch  # noqa: E402

from harness import timing  # noqa: E402


def measure(kind: str, repeats: int) -> list[float]:
    b = timing.bound()
    out = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if kind in ("idle", "idle-nosync", "events-only"):
            timing.flush()
        if kind in ("idle", "events-only"):
            b.synchronize()
        if kind == "busy":
            torch.cuda._sleep(2_000_000)  # ~1 ms of spinning queued ahead of the start event
        start.record()
        if kind != "events-only":
            torch.cuda._sleep(1)
        end.record()
        b.synchronize()
        out.append(start.elapsed_time(end) * 1e3)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=300)
    args = ap.parse_args()
    timing.bind(torch)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    measure("idle", 20)  # warm-up
    print(f"{'method':<12} {'mean us':>8} {'median':>8} {'p10':>8} {'p90':>8}")
    for kind in ("idle", "idle-nosync", "busy", "events-only"):
        t = sorted(measure(kind, args.repeats))
        q = lambda f: t[int(f * (len(t) - 1))]  # noqa: E731
        print(f"{kind:<12} {statistics.mean(t):8.2f} {statistics.median(t):8.2f} {q(0.1):8.2f} {q(0.9):8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
