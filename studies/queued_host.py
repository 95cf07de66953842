"""What a call costs the host when it is queued behind busy work (GPU MODE's batch loop) against when the
device is idle (`nvfp4 probe host`), and which launch path the calls took.

Session 58: `run gemm v69` (gpumode) read 15.1 µs of host time a call on 128x7168x2048 (16.0 µs between the
events: host-bound) and 20.1 on 128x7168x16384, where `probe host gemm v68` read an idle host path of 8.1 µs. This
times, in one process, each subject's calls both ways on the same inputs:
- idle: synchronised before each call, the call's host time (probe host's figure);
- queued: a batch of the input sets called back to back after one flush (GPU MODE's order), each call's host
  time, and the events' time a call; positions 0-4 (the queue still filling) apart from the rest;
- `base`: the same queued loop of one torch launch a call (`c.zero_()`), the launch API's own cost under load;
- where the module has `launch_counts()` (gemm v47+: graph launches, plain launch pairs, graphs built, refused),
  their deltas over the queued passes.

Usage (GPU, repo root): python3 studies/queued_host.py gemm v68 [path/to/variant.py ...] [--shape 2] [--sets 50]
A path is imported under its file name (a variant not in the lineage, e.g. a scratch copy with graphs off).
`--before STEP` (repeatable) runs one of the harness child's own set-up steps in this process first, to find which
leaves a call slower there (session 58: v74's call took ~3 µs more inside `run`'s child than here): `telemetry`
(NVML opened, harness.telemetry), `read-floor` (ceilings.measure_read: torch's and Triton's read kernels), `profiler`
(a torch.profiler session over one call: CUPTI's callbacks stay on), `guard` (harness.guard's snapshot). Each changes
the process for good: compare separate runs, one step each, with a run of none. `--gc freeze|off` then tests
whether what a step leaves is the collector's walk over its objects (a bigger heap makes each collection longer).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _subjects(problem: str, names: list[str]):
    from harness import loader
    from harness.submissions import resolve
    for name in names:
        if name.endswith(".py"):
            yield Path(name).stem, loader.import_submission(name, Path(name).stem)
        else:
            sub = resolve(problem, name)
            yield sub.label, loader.import_submission(str(sub.path), sub.label, source_hash=sub.source_hash)


def _counts(kernel):
    f = getattr(kernel, "__globals__", {}).get("_module")
    f = getattr(f, "launch_counts", None)
    return tuple(f()) if f else None


def _queued(torch, fn, data, dummy, passes: int, thrash=None):
    """Per pass: each call's host µs and the events' µs a call; ``thrash``, where given, is a CPU tensor
    rewritten before each pass (the host's caches emptied, as the harness's refill of the pool does)."""
    hosts, events = [], []
    for _ in range(passes):
        if thrash is not None:
            thrash.add_(1)
        torch.cuda.synchronize()
        dummy.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        t = [time.perf_counter_ns()]
        for d in data:
            fn(d)
            t.append(time.perf_counter_ns())
        e.record()
        torch.cuda.synchronize()
        hosts.append([(b - a) / 1e3 for a, b in zip(t, t[1:])])
        events.append(s.elapsed_time(e) * 1e3 / len(data))
    return hosts, events


def _idle(fn, data, calls: int) -> float:
    """Median host µs of a call from an idle device (the product's own: `probe host`'s first figure)."""
    from harness import timing
    return statistics.median(timing.host_call_times(fn, data, calls))


def _before(torch, steps: list[str], subjects) -> None:
    """The harness child's set-up steps named in ``steps``, in this process (the docstring)."""
    for step in steps:
        if step == "telemetry":
            from harness import telemetry
            print(f"before: telemetry available={telemetry.Telemetry(torch).available}", flush=True)
        elif step == "read-floor":
            from harness import ceilings
            r = ceilings.measure_read(torch, 64 << 20, "dirty")
            print(f"before: read floor of 64 MB by {r['kernel']}: {r['us']:.1f} µs", flush=True)
        elif step == "profiler":
            from torch.profiler import ProfilerActivity, profile
            x = torch.zeros(1024, device="cuda")
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
                x.add_(1)
                torch.cuda.synchronize()
            print("before: a torch.profiler session opened and closed", flush=True)
        elif step == "guard":
            from harness import guard
            guard.Guard.snapshot(())
            print("before: the guard's snapshot taken", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem")
    ap.add_argument("subjects", nargs="+", help="versions (vN) or paths of submission files")
    ap.add_argument("--shape", type=int, action="append", help="benchmark index (repeatable; default all)")
    ap.add_argument("--sets", type=int, default=50)
    ap.add_argument("--passes", type=int, default=30)
    ap.add_argument("--thrash-mb", type=int, default=0, help="rewrite a CPU buffer of this many MB before each queued "
                    "pass (0: none): the host's caches cold at each pass's start, as after the harness's refill")
    ap.add_argument("--before", action="append", default=[], choices=("telemetry", "read-floor", "profiler", "guard"),
                    help="a harness child's set-up step run first (repeatable; see the docstring)")
    ap.add_argument("--gc", choices=("default", "freeze", "off"), default="default",
                    help="after the set-up steps: leave Python's collector as it is, move every object so far into "
                    "its permanent generation (gc.freeze: collections no longer walk them), or turn it off")
    ap.add_argument("--check", action="store_true", help="after the queued passes, check every set's output (a cache "
                    "past its capacity evicts and rebuilds: this says the calls stayed right)")
    args = ap.parse_args()
    import torch

    from harness import config, timing
    from reference import problem_module
    timing.bind(torch)
    mod = problem_module(args.problem)
    subjects = list(_subjects(args.problem, args.subjects))
    _before(torch, args.before, subjects)
    import gc
    print(f"gc: {args.gc}; {len(gc.get_objects())} objects tracked, counts {gc.get_count()}", flush=True)
    if args.gc == "freeze":
        gc.collect()
        gc.freeze()
    elif args.gc == "off":
        gc.disable()
    dummy = torch.empty(64 * 1024 * 1024, dtype=torch.int32, device="cuda")
    thrash = torch.zeros(args.thrash_mb << 18, dtype=torch.int32) if args.thrash_mb else None
    shapes = config.load()[args.problem].benchmarks
    for index in args.shape or range(len(shapes)):
        shape = shapes[index]
        params = dict(shape.params)
        seed = params.pop("seed", 1111)
        data = [mod.generate_input(**params, seed=seed + 42 * (i + 1), dist="competition") for i in range(args.sets)]
        outs = [mod.outputs_of(d)[0] for d in data]
        base = lambda d, _o=dict(zip(map(id, data), outs)): _o[id(d)].zero_()  # noqa: E731
        print(f"== {args.problem} {shape.label}, {torch.cuda.get_device_name()}, {args.sets} sets, "
              f"{args.passes} queued passes" + (f", {args.thrash_mb} MB of host memory rewritten before each"
              if args.thrash_mb else "") + " (µs)", flush=True)
        print(f"{'subject':<24}{'idle host':>10}{'queued host':>12}{'first 5':>9}{'rest':>8}{'events':>9}"
              f"   launch counts (graph, plain, built, refused) over the queued passes")
        for label, fn in [("base (c.zero_())", base)] + subjects:
            for _ in range(3):
                for d in data:
                    fn(d)
            idle = _idle(fn, data, 100)
            before = _counts(fn)
            hosts, events = _queued(torch, fn, data, dummy, args.passes, thrash)
            after = _counts(fn)
            flat = [h for p in hosts for h in p]
            first = [h for p in hosts for h in p[:5]]
            rest = [h for p in hosts for h in p[5:]]
            delta = tuple(b - a for a, b in zip(before, after)) if before else "-"
            if args.check and fn is not base:
                bad = [i for i, d in enumerate(data) if not mod.check(d, fn(d))[0]]
                print(f"  {label}: {len(data) - len(bad)} of {len(data)} outputs pass" + (f" (failed: {bad[:8]})" if bad else ""))
            print(f"{label:<24}{idle:>10.2f}{statistics.median(flat):>12.2f}{statistics.median(first):>9.2f}"
                  f"{statistics.median(rest):>8.2f}{statistics.median(events):>9.2f}   {delta}", flush=True)
        del data, outs
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
