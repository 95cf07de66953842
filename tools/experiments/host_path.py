"""Where does a call's host time go? (call_breakdown.py found 85 µs of host path on group_gemm v16 A)

call_breakdown.py measured the host path (CPU time of one call on an idle device) at 85.5 µs for
group_gemm v16 on shape A (8 groups), 38.8 µs on D (2 groups) and 20-33 µs for gemm v6. On this
CPU-only machine, pybind's conversion of a list of tuples of tensors to
std::vector<std::vector<torch::Tensor>> cost ~6 µs per group against ~0.8 µs for unpacking the
same handles directly. This splits the host path for one version and shape:
  call                 the whole custom_kernel call, median µs
  per runtime/aten op  torch.profiler's CPU events (cudaLaunchKernel, aten::empty, ...), µs per
                       call, self time; the profiler's own cost inflates each a little
  rest                 call minus the profiled ops: Python, argument conversion, C++ logic
Usage on a GPU machine, repo root:
    python3 tools/experiments/host_path.py group_gemm v16 --shape 0 [--calls 200]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.getcwd())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem")
    ap.add_argument("version")
    ap.add_argument("--shape", type=int, default=0, help="0-based benchmark shape index")
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    from harness import build_cache, config, timing, worker
    from harness.submissions import resolve
    from reference import problem_module

    mod = problem_module(args.problem)
    sub = resolve(args.problem, args.version)
    build_cache.use_for(sub.source_hash)
    kernel = worker.import_submission(str(sub.path), args.version)
    timing.bind(torch)
    b = timing.bound()
    params = dict(config.load()[args.problem].benchmarks[args.shape].params)
    seed = params.pop("seed")
    pool = [mod.generate_input(**params, seed=seed + s, dist="competition") for s in range(4)]
    cuda = torch.cuda.is_available()
    sync = b.synchronize if cuda else (lambda: None)
    for _ in range(3):
        for data in pool:
            kernel(data)
    sync()

    def host_times(fn) -> list[float]:
        out = []
        for i in range(args.calls):
            data = pool[i % len(pool)]
            sync()
            t0 = time.perf_counter()
            fn(data)
            out.append((time.perf_counter() - t0) * 1e6)
        sync()
        return out

    call = statistics.median(host_times(kernel))
    empty_py = statistics.median(host_times(lambda data: None))
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        host_times(kernel)
    rows = []
    for e in prof.key_averages():
        self_us = getattr(e, "self_cpu_time_total", 0.0) / args.calls
        if self_us > 0.05:
            rows.append((self_us, e.key, e.count / args.calls))
    rows.sort(reverse=True)
    device = torch.cuda.get_device_name() if cuda else "CPU (no CUDA: smoke test only)"
    print(f"{args.problem} {args.version}, benchmark shape {args.shape}, {device}, torch {torch.__version__}")
    print(f"  call (median, no profiler)          {call:8.2f} µs")
    print(f"  empty Python call (median)          {empty_py:8.2f} µs")
    profiled = 0.0
    for self_us, key, count in rows[:12]:
        profiled += self_us
        print(f"  {key[:34]:<34}  {self_us:8.2f} µs self, {count:.1f} per call")
    print(f"  rest (call - listed ops)            {call - profiled:8.2f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
