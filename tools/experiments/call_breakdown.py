"""Where does a call's time go? Kernel time against what the harness measures per call.

group_gemm v15 on shape A: Nsight Compute put its two kernels at 165 µs a call, the harness's
cold mode at 233 µs; gemv and the small group_gemm shapes show the same kind of gap. This prints,
for one version and benchmark shape, from one process:
  cold        harness cold mode (flush, synchronise, start event, call, end event), mean µs
  queued      GPU MODE's order (flush, start, call, end; no synchronise between), mean µs
  kernels     the call's kernels alone (torch.profiler's device time per call, flush excluded)
  host        CPU time of the call on an idle device: Python, argument conversion, allocations and
              launch API calls; the launches are asynchronous, so this is the host path alone
  idle events two events and nothing between them from an idle device (the floor of cold mode)
and the residue cold - kernels - idle events, which is what the host path and launch latency
leave exposed. Usage on a GPU machine, repo root:
    python3 tools/experiments/call_breakdown.py group_gemm v16 --shape 0 [--calls 40]
On a machine without CUDA it runs the same steps on the CPU (a smoke test of the script only).
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # idle_launch's event-pair measurement


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem")
    ap.add_argument("version")
    ap.add_argument("--shape", type=int, default=0, help="0-based benchmark shape index")
    ap.add_argument("--calls", type=int, default=40)
    args = ap.parse_args()

    import torch

    from harness import build_cache, config, timing, worker
    from harness.submissions import resolve
    from reference import problem_module

    cuda = torch.cuda.is_available()
    mod = problem_module(args.problem)
    sub = resolve(args.problem, args.version)
    build_cache.use_for(sub.source_hash)
    kernel = worker.import_submission(str(sub.path), args.version)
    timing.bind(torch)
    b = timing.bound()
    params = dict(config.load()[args.problem].benchmarks[args.shape].params)
    seed = params.pop("seed")
    pool = [mod.generate_input(**params, seed=seed + s, dist="competition") for s in range(8)]
    for _ in range(3):  # builds, first-call set-up, allocator warm-up
        for data in pool:
            kernel(data)

    def block_mean(mode: str) -> float:
        means = [statistics.fmean(timing.time_block(kernel, pool, mode).times_us) for _ in range(max(1, args.calls // 8))]
        return statistics.fmean(means)

    cold, queued = block_mean("cold"), block_mean("queued")

    host = []
    for i in range(args.calls):
        data = pool[i % len(pool)]
        if cuda:
            b.synchronize()
        t0 = time.perf_counter()
        kernel(data)
        host.append((time.perf_counter() - t0) * 1e6)
    if cuda:
        b.synchronize()

    kernels = idle = float("nan")
    if cuda:
        from torch.profiler import ProfilerActivity, profile

        from harness.profile import kernel_rows
        from idle_launch import measure as idle_measure
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for i in range(args.calls):
                kernel(pool[i % len(pool)])
                b.synchronize()
        kernels = sum(r["total_us"] for r in kernel_rows(torch, prof, True)) / args.calls
        idle = statistics.fmean(idle_measure("events-only", args.calls))

    device = torch.cuda.get_device_name() if cuda else "CPU (no CUDA: smoke test only)"
    print(f"{args.problem} {args.version}, benchmark shape {args.shape} {params}, {device}, torch {torch.__version__}")
    rows = [("cold (harness)", cold), ("queued (GPU MODE order)", queued), ("kernels (profiler)", kernels),
            ("host path (CPU, median)", statistics.median(host)), ("idle event pair", idle),
            ("cold - kernels - idle events", cold - kernels - idle)]
    for name, value in rows:
        print(f"  {name:<30} {value:9.1f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
