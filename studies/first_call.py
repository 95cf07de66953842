"""Why is the first timed call of every block slower? Per-position medians of gemv v1 blocks under
variations of what precedes the block (an H200 showed +60 µs on call 0 of every block)."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.getcwd())
import torch

from harness import build_cache, loader, timing, worker
from harness.submissions import resolve
from reference import problem_module

mod = problem_module("gemv")
sub = resolve("gemv", "v1")
build_cache.use_for(sub.source_hash)
kernel = loader.import_submission(str(sub.path), "v1")
timing.bind(torch)
params = {"m": 4096, "k": 7168, "l": 8}
pool = [mod.generate_input(**params, seed=s, dist="competition") for s in range(8)]


def refresh(r):
    for slot, data in enumerate(pool):
        fresh = mod.generate_input(**params, seed=1000 * r + slot, dist="competition")
        for dst, src in zip(worker.tensors_of(data), worker.tensors_of(fresh)):
            dst.copy_(src)


variants = {
    "sync before every call (L2 reset every block)": {},
    "no L2 reset": {"no_reset": True},
    "no reset + 5 untimed flushes": {"no_reset": True, "pre_flush": 5},
    "no reset + untimed call on slot 7": {"no_reset": True, "pre_call": True},
    "no reset + 2 ms host sleep": {"no_reset": True, "sleep": 0.002},
    "prelude: untimed call on a scratch set": {"prelude": True},
}
scratch = mod.generate_input(**params, seed=99, dist="competition")
real_reset = timing.reset_persisting_l2
for name, v in variants.items():
    timing.reset_persisting_l2 = (lambda: "skipped") if v.get("no_reset") else real_reset
    blocks = []
    for r in range(15):
        refresh(r)
        if v.get("pre_flush"):
            for _ in range(v["pre_flush"]):
                timing.flush()
        if v.get("pre_call"):
            kernel(pool[7])
        if v.get("sleep"):
            torch.cuda.synchronize()
            time.sleep(v["sleep"])
        prelude = (lambda: kernel(scratch)) if v.get("prelude") else None
        blocks.append(timing.time_block(kernel, pool, prelude=prelude).times_us)
    meds = [statistics.median(b[p] for b in blocks) for p in range(8)]
    print(f"{name:40s} " + " ".join(f"{m:6.1f}" for m in meds))
