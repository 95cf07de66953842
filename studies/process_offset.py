"""Where does the per-process offset come from? (issue 3: two processes of the same gemv v1 differ
by ~1-2%, the host-heavy gemm v0 by up to 5%, which keeps `compare vX vX` from saying SAME.)

Hypothesis: it is where the input pool lands in device memory, not the process as such. Test:
inside one process, time gemv v1 on K fresh allocations of the pool (same seeds every time), and
compare the spread of the per-allocation means with the spread between P separate processes
(each one allocation). Usage on a GPU machine, repo root:
    python3 studies/process_offset.py [--allocations 8] [--processes 6] [--problem gemv --version v1 --shape 2]
A second pass moves the flush buffer too. Prints the per-allocation and per-process means, their coefficient of variation, and the
within-allocation standard error for scale.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.getcwd())


def measure(problem: str, version: str, shape_index: int, allocations: int, blocks: int,
            flush_too: bool = False) -> list[dict]:
    import torch

    from harness import build_cache, config, loader, timing
    from harness.submissions import resolve
    from reference import problem_module

    mod = problem_module(problem)
    sub = resolve(problem, version)
    build_cache.use_for(sub.source_hash)
    kernel = loader.import_submission(str(sub.path), version)
    timing.bind(torch)
    params = dict(config.load()[problem].benchmarks[shape_index].params)
    base = params.pop("seed")
    out = []
    for a in range(allocations):
        # NOTE: a spacer of a different size each time, so the pool does not simply reuse the
        # addresses the last one freed.
        spacer = torch.empty((a * 37 % 11) * 96 * 2**20, dtype=torch.uint8, device="cuda")
        if flush_too:  # the flush buffer moves as well
            old = timing.bound().flush_buffer
            timing.bound().flush_buffer = torch.empty_like(old)
            del old
        pool = [mod.generate_input(**params, seed=base + s, dist="competition") for s in range(8)]
        scratch = mod.generate_input(**params, seed=base + 99, dist="competition")
        for _ in range(2):
            for data in pool:
                kernel(data)
        means = []
        for _ in range(blocks):
            block = timing.time_block(kernel, pool, prelude=lambda s=scratch: kernel(s))
            means.append(statistics.fmean(block.times_us))
        out.append({"allocation": a, "mean_us": statistics.fmean(means),
                    "se_us": statistics.stdev(means) / len(means) ** 0.5,
                    "first_ptr": hex(pool[0][0].data_ptr()), "spacer_mib": spacer.numel() // 2**20})
        pool = scratch = spacer = None
        torch.cuda.empty_cache()
    return out


def cv(xs):
    return statistics.stdev(xs) / statistics.fmean(xs) if len(xs) > 1 else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", default="gemv")
    ap.add_argument("--version", default="v1")
    ap.add_argument("--shape", type=int, default=2)
    ap.add_argument("--allocations", type=int, default=8)
    ap.add_argument("--processes", type=int, default=6)
    ap.add_argument("--blocks", type=int, default=20)
    ap.add_argument("--child", action="store_true")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.problem, args.version, args.shape, args.allocations, args.blocks)))
        return
    within = measure(args.problem, args.version, args.shape, args.allocations, args.blocks)
    within_flush = measure(args.problem, args.version, args.shape, args.allocations, args.blocks, flush_too=True)
    per_process = []
    for _ in range(args.processes):
        res = subprocess.run([sys.executable, __file__, "--child", "--problem", args.problem, "--version", args.version,
                              "--shape", str(args.shape), "--allocations", "1", "--blocks", str(args.blocks)],
                             capture_output=True, text=True, check=True)
        per_process.append(json.loads(res.stdout.strip().splitlines()[-1])[0])
    print("allocations in one process: " + " ".join(f"{r['mean_us']:.2f}" for r in within)
          + f"  CV {cv([r['mean_us'] for r in within]):.2%}")
    print("pool and flush buffer moved: " + " ".join(f"{r['mean_us']:.2f}" for r in within_flush)
          + f"  CV {cv([r['mean_us'] for r in within_flush]):.2%}")
    print("separate processes:         " + " ".join(f"{r['mean_us']:.2f}" for r in per_process)
          + f"  CV {cv([r['mean_us'] for r in per_process]):.2%}")
    print(f"typical standard error of one allocation's mean: {statistics.fmean(r['se_us'] for r in within):.3f} µs")


if __name__ == "__main__":
    main()
