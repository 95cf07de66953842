"""Whole versions of one problem, kernels alone: which is faster on the device, host path aside?

On the lent H100 a graph or cold compare can show a ~5% offset between processes running identical
kernels, so a 2-5% kernel change needs a measurement without the host path. This imports every
named version into one process, checks each one's output on every shape, then times the sum of
each call's kernels (torch.profiler device time, L2 flushed before every call), versions
alternated round by round, and prints per shape each version's mean and min µs, its ratio to the
first version named, and its fraction of this GPU's floor (harness.roofline.floor_us).

Two measures per call, both printed: `sum`, the kernels' durations added up (what each kernel
costs; the gaps between a call's kernels left out), and `span`, from the call's first kernel start
to its last kernel end (the device time the caller waits for, gaps included). They agree for a
single kernel. They part where a call's kernels overlap: under programmatic dependent launch the
dependent grid starts early and waits inside, so its duration counts the overlap twice in `sum`
(gemm v16, dual_gemm v10 and group_gemm v34 were judged on `sum`). --metric picks the one the
ratios use.

The span waits on the host where the device outruns it: a call's second kernel cannot start before
the host's launch of it returns (~5 µs of CPU per launch on the lent hosts), so a short first kernel
leaves the device idle in between. --ahead US enqueues a sleep of about US µs after each flush, so
the whole call is queued before the device reaches it: the span then measures the device alone
(the sleep, like the flush, is cut out). Without it the span is closer to what GPU MODE's timing
sees (its host path overlaps the flush, not the call's own launches).

Usage on a GPU machine, repo root (builds run first, in parallel child processes):
    python3 tools/experiments/kernel_compare.py gemm v7,v8 [--shapes 0,1,2] [--rounds 5] [--calls 10]
        [--shape m=128,n=8448,k=16384,l=1 ...] [--metric sum|span] [--ahead US] [--per-kernel]
A version may also be a path to a .py file (a variant made for the experiment, e.g. by sed), or
`cublas`: the issues' peer, cuBLAS on operands dequantised to bf16 beforehand (peers.py), timed the
same way (its check is a loose one: bf16 outputs).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, os.getcwd())
sys.path.insert(0, str(Path(__file__).resolve().parent))  # ablation.py beside this file
from ablation import load_all, prepare, profiled  # noqa: E402
from peers import PEER_NAME, cublas_peer  # noqa: E402


def call_us(rows: list[dict], calls: int, flush_names: set[str]) -> float:
    """The device µs of one call: every kernel of the session but the flush's, summed, per call.
    A version launching the flush's own kernel would hide part of its time, so that is an error."""
    total = 0.0
    for row in rows:
        if row["name"] in flush_names:
            if row["calls"] != calls:
                raise SystemExit(f"the version launches the L2 flush's kernel ({row['name'][:60]}): "
                                 "its time cannot be separated")
            continue
        total += row["total_us"]
    return total / calls


def per_kernel_us(rows: list[dict], calls: int, flush_names: set[str]) -> list[tuple[str, float]]:
    """Each kernel of a call (the flush's left out) with its device µs per call, longest first: what
    the summed measure adds up (a prepass and its GEMM, say)."""
    parts = [(row["name"], row["total_us"] / calls) for row in rows if row["name"] not in flush_names]
    return sorted(parts, key=lambda part: -part[1])


def version_path(problem: str, version: str, resolve) -> Path:
    """A version's file: vN of the problem, or a file path (a variant written for the experiment;
    its EXTENSION_NAME must differ from its version's, or the two share one build)."""
    return Path(version) if version.endswith(".py") else resolve(problem, version).path


def spans_per_call(kernels: list[tuple[float, float, str]], flush_names: set[str], calls: int) -> list[float]:
    """Per call, µs from its first kernel's start to its last kernel's end. `kernels` is a profiled
    session's (start, end, name) in start order; the flush's kernels, one run before each call,
    cut it into calls."""
    spans, first, last = [], None, None
    for start, end, name in kernels:
        if name in flush_names:
            if first is not None:
                spans.append(last - first)
            first = last = None
            continue
        first = start if first is None else min(first, start)
        last = end if last is None else max(last, end)
    if first is not None:
        spans.append(last - first)
    if len(spans) != calls:
        raise SystemExit(f"found {len(spans)} calls' kernels between the flushes, expected {calls}: "
                         "the span cannot be told apart")
    return spans


def ratio_rows(samples: dict[str, list[float]], first: str) -> list[tuple[str, float, float, float]]:
    """(version, mean, min, first's mean / this mean) per version, in the order named: a ratio
    above 1 means faster than the first version."""
    base = statistics.fmean(samples[first])
    return [(v, statistics.fmean(s), min(s), base / statistics.fmean(s)) for v, s in samples.items()]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem")
    ap.add_argument("versions", help="comma-separated; ratios are against the first")
    ap.add_argument("--shapes", default=None, help="benchmark shape indices, comma-separated (default: all, "
                    "none when --shape is given)")
    ap.add_argument("--shape", dest="custom", action="append", default=[],
                    help="a custom shape as for `nvfp4 test --shape` (repeatable), timed after the benchmarks")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=10, help="calls per version per round")
    ap.add_argument("--dist", default="competition", choices=("competition", "general"))
    ap.add_argument("--metric", default="sum", choices=("sum", "span"),
                    help="what the ratios compare: the kernels' summed durations or the span per call")
    ap.add_argument("--ahead", type=float, default=0.0, metavar="US",
                    help="a device sleep of about US µs after each flush, so the call is queued before the device "
                    "reaches it (the span without the host's launch latency)")
    ap.add_argument("--per-kernel", action="store_true",
                    help="also print each kernel's µs per call (mean over the rounds) per shape and version")
    ap.add_argument("--build-only", action="store_true", help="(a child's job) build the one version")
    args = ap.parse_args()

    from harness import config, roofline
    from harness.submissions import resolve
    from reference import problem_module

    versions = args.versions.split(",")
    paths = {v: version_path(args.problem, v, resolve) for v in versions if v != PEER_NAME}
    done = prepare(paths, emit=False, build_only=args.build_only,
                   child_args=lambda v: [__file__, args.problem, v, "--build-only"]) if paths else None
    if done is not None:
        return done

    import torch
    kernels = load_all(torch, paths)
    mod = problem_module(args.problem)
    device = torch.cuda.get_device_name()
    figures = roofline.ceilings(torch, device)
    benchmarks = config.load()[args.problem].benchmarks
    if args.shapes is None:
        picked = [] if args.custom else list(range(len(benchmarks)))
    else:
        picked = [int(s) for s in args.shapes.split(",")]
    shapes = [benchmarks[i] for i in picked]
    shapes += [config.parse_shape_option(args.problem, text, i) for i, text in enumerate(args.custom)]
    # NOTE: every kernel of a call counts (a split-K reduction or a prepass is part of the
    # version), so the flush's kernel is named by profiling the flush alone, not guessed
    before = None
    if args.ahead > 0:
        # NOTE: torch.cuda._sleep spins a number of cycles; 2000 a µs is about an H100/H200's SM clock
        before = lambda: torch.cuda._sleep(int(args.ahead * 2000))  # noqa: E731
    flush_names = {row["name"] for row in profiled(torch, lambda: None, 3, before)[0]}
    failed = False
    lines, kernel_lines = [], []
    for shape in shapes:
        params = dict(shape.params)
        seed = params.pop("seed", 1111)
        # NOTE: a fresh seed, not the benchmark's: nothing here may have seen these inputs
        data = mod.generate_input(**params, seed=seed + 7, dist=args.dist)
        calls = {v: (lambda v=v: kernels[v](data)) for v in kernels}
        checks = {v: (lambda out: mod.check(data, out)) for v in kernels}
        if PEER_NAME in versions:
            calls[PEER_NAME], checks[PEER_NAME] = cublas_peer(args.problem, data)
        for v in versions:
            ok, msg = checks[v](calls[v]())
            if not ok:
                failed = True
                print(f"shape {shape.label}: {v} FAILED: {msg}", flush=True)
        torch.cuda.synchronize()
        sums = {v: [] for v in versions}
        spans = {v: [] for v in versions}
        kernel_parts = {v: {} for v in versions}
        for _ in range(args.rounds):
            for v in versions:
                rows, session = profiled(torch, calls[v], args.calls, before)
                sums[v].append(call_us(rows, args.calls, flush_names))
                spans[v].append(statistics.fmean(spans_per_call(session, flush_names, args.calls)))
                if args.per_kernel:
                    for kernel, us in per_kernel_us(rows, args.calls, flush_names):
                        kernel_parts[v].setdefault(kernel, []).append(us)
        floor = roofline.floor_us(args.problem, shape.params, figures)
        name = ",".join(f"{k}={val}" for k, val in params.items())
        other = spans if args.metric == "sum" else sums
        for v, mean, lo, ratio in ratio_rows(sums if args.metric == "sum" else spans, versions[0]):
            of_floor = f"{floor / mean:8.0%}" if floor else "       -"
            label = Path(v).stem if v.endswith(".py") else v
            lines.append(f"{name[:34]:<34} {label:<12} {mean:9.1f} {lo:8.1f} {ratio:7.3f}x {of_floor} "
                         f"{statistics.fmean(other[v]):9.1f}")
        if args.per_kernel:
            for v in versions:
                label = Path(v).stem if v.endswith(".py") else v
                for kernel, values in kernel_parts[v].items():
                    kernel_lines.append(f"{name[:34]:<34} {label:<12} {statistics.fmean(values):9.2f}  {kernel[:90]}")
        print(f"shape {shape.label} done", flush=True)
    measure = {"sum": "the kernels' durations summed", "span": "first kernel start to last kernel end"}
    print(f"\n{args.problem} kernels, {device}, torch.profiler device time per call ({measure[args.metric]}), "
          f"L2 flushed before each call, {args.rounds} rounds x {args.calls} calls, {args.dist} inputs"
          + (f", each call queued behind a ~{args.ahead:g} µs device sleep" if args.ahead > 0 else ""))
    other_name = "span µs" if args.metric == "sum" else "sum µs"
    print(f"{'shape':<34} {'version':<12} {'mean µs':>9} {'best rnd':>8} {'vs first':>9} {'of floor':>8} {other_name:>9}")
    print("\n".join(lines))
    if kernel_lines:
        print(f"\nper kernel (µs per call, mean over the rounds)\n{'shape':<34} {'version':<12} {'µs':>9}  kernel")
        print("\n".join(kernel_lines))
    if failed:
        print("some outputs were WRONG (above): their times mean nothing")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
