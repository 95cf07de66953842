"""At what SM clock and power do our kernels run when the device never idles, and is the power cap what sets it?

gemm's long shape runs its split loop on 112 of 132 SMs; filling the other 20 (stream-K v35, helper tails v40/v41)
measured a slower K block on every SM and lost (gemm NOTES, "Where it stands"). If the card already sits at its power
limit with 112 SMs busy, more busy SMs lower the clock of all of them, and a fill's gain is bounded by power, not by
the schedule. The harness's telemetry samples one NVML reading a timed block, where flushes and synchronisations
leave gaps; this runs each case back to back on one input (no flush, no synchronise) for a few seconds while a thread
reads NVML every 10 ms, and prints per case the median SM clock, power, the share of readings with each clocks-event
reason (sw_power_cap: the power limit holds the clock down) and the µs a call the device took (events around the
whole run, over its calls). A case whose host path is longer than its device time leaves the device idle between
calls: its µs a call is then the host's, and its power below what the kernel alone would draw.

Cases: PROBLEM:VERSION:SHAPE (SHAPE a benchmarks index, or key=value pairs as --shape takes them) or mm:M,N,K (torch.mm on bf16 operands, bf16 out: cuBLAS at
every SM for comparison).
Usage (a GPU machine, repository root): python3 studies/sustained_clock.py [--seconds 3] CASE [CASE ...]
e.g. python3 studies/sustained_clock.py gemm:v100:0 gemm:v100:2 group_gemm:v89:0 mm:7168,128,16384
"""
import argparse
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository root


def parse_case(text: str):
    parts = text.split(":", 2)
    if parts[0] == "mm" and len(parts) == 2:
        try:
            m, n, k = (int(x) for x in parts[1].split(","))
        except ValueError:
            raise SystemExit(f"{text!r}: mm:M,N,K with three integers") from None
        return ("mm", (m, n, k))
    if len(parts) != 3 or not parts[2]:
        raise SystemExit(f"{text!r}: PROBLEM:VERSION:SHAPE (a benchmarks index or key=value pairs) or mm:M,N,K")
    return ("lab", (parts[0], parts[1], parts[2]))


def make_call(case, torch):
    kind, spec = case
    if kind == "mm":
        m, n, k = spec
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        return (lambda: torch.mm(a, b)), f"torch.mm bf16 {m}x{n}x{k}"
    from harness import config, loader, submissions
    import importlib
    problem, version, shape = spec
    if shape.isdigit():
        benchmarks = config.load()[problem].benchmarks
        if int(shape) >= len(benchmarks):
            raise SystemExit(f"{problem} has {len(benchmarks)} benchmark shapes; no index {shape}")
        params = dict(benchmarks[int(shape)].params)
    else:
        params = dict(config.parse_shape_option(problem, shape, 0).params)
        params.setdefault("seed", 1111)
    sub = submissions.resolve(problem, version)
    kernel = loader.import_submission(sub.path, f"sustained-{version}")
    reference = importlib.import_module(f"reference.{problem}")
    data = reference.generate_input(**params, device=torch.device("cuda"))
    return (lambda: kernel(data)), f"{problem} {version} {config.shape_label(problem, params)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    if not 0.5 <= args.seconds <= 30:
        parser.error("--seconds: 0.5 to 30")
    cases = [parse_case(c) for c in args.cases]
    import torch
    from harness import telemetry
    tele = telemetry.Telemetry(torch)
    if not tele.available:
        raise SystemExit("no NVML (nvidia-ml-py) on this machine: nothing to read")
    from harness.errors import UserError
    print(f"{'case':58s} {'µs/call':>8s} {'SM MHz':>7s} {'W':>6s}  reasons (share of readings)")
    for case in cases:
        try:
            call, label = make_call(case, torch)
        except (UserError, KeyError) as exc:  # an unknown problem, version or shape key: said, not a traceback
            raise SystemExit(f"{case}: {exc}") from None
        for _ in range(20):  # warm-up: builds, caches, the clock's first ramp
            call()
        torch.cuda.synchronize()
        # how many calls fill --seconds: from 20 timed ones
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(20):
            call()
        end.record()
        end.synchronize()
        per_call_ms = start.elapsed_time(end) / 20
        calls = max(20, int(args.seconds * 1000 / per_call_ms))
        samples, stop = [], threading.Event()

        def sample():
            while not stop.is_set():
                s = tele.sample()
                if s:
                    samples.append(s)
                time.sleep(0.01)
        thread = threading.Thread(target=sample, daemon=True)
        start.record()
        thread.start()
        for _ in range(calls):
            call()
        end.record()
        end.synchronize()
        stop.set()
        thread.join()
        us = start.elapsed_time(end) * 1000 / calls
        # the readings of the run's middle (the first and last tenth left out: ramp and drain)
        cut = len(samples) // 10
        mid = samples[cut:len(samples) - cut] or samples
        clocks = [s["sm_mhz"] for s in mid if "sm_mhz" in s]
        powers = [s["power_w"] for s in mid if "power_w" in s]
        if not clocks or not powers:  # NVML answered with errors only
            print(f"{label[:58]:58s} {us:8.2f}  no clock or power readings ({len(samples)} samples)", flush=True)
            continue
        mhz, watts = statistics.median(clocks), statistics.median(powers)
        counts: dict = {}
        for s in mid:
            for r in s.get("reasons", []):
                counts[r] = counts.get(r, 0) + 1
        reasons = ", ".join(f"{r} {c / len(mid):.0%}" for r, c in sorted(counts.items(), key=lambda x: -x[1])) or "none"
        print(f"{label[:58]:58s} {us:8.2f} {mhz:7.0f} {watts:6.1f}  {reasons}  ({len(mid)} readings)", flush=True)
    print(f"power limit {tele.static.get('power_limit_w', '?')} W, max SM clock {tele.static.get('max_sm_clock_mhz', '?')} MHz")


if __name__ == "__main__":
    main()
