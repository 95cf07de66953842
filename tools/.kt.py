# scratch (not committed): GEMM kernel time of two versions on custom one-wave-friendly shapes
import sys, statistics, torch
sys.path.insert(0, '.')
from torch.profiler import profile, ProfilerActivity
from harness import timing, build_cache, worker
from harness.submissions import resolve
from reference import problem_module
timing.bind(torch)
mod = problem_module('group_gemm')
kern = {}
for v in sys.argv[1:]:
    sub = resolve('group_gemm', v); build_cache.use_for(sub.source_hash)
    kern[v] = worker.import_submission(str(sub.path), v)
for (m, n, k) in [(128, 33792, 7168), (96, 33792, 7168), (128, 16896, 7168)]:
    data = mod.generate_input(m=[m], n=[n], k=[k], g=1, seed=3, dist='competition')
    for v, f in kern.items():
        ok, msg = mod.check(data, f(data)); f(data); torch.cuda.synchronize()
        res = []
        for _ in range(3):
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(6):
                    timing.flush(); f(data)
                torch.cuda.synchronize()
            for e in prof.key_averages():
                if e.device_type == torch.autograd.DeviceType.CUDA and 'group_gemm_kernel' in e.key:
                    res.append(e.self_device_time_total / e.count)
        print(f"m={m} n={n} k={k} {v}: GEMM kernel {statistics.fmean(res):.1f} us  check {'ok' if ok else msg}", flush=True)
