"""``nvfp4 probe host``: what a call costs on the host against what it costs on the device.

A version's call is Python, argument conversion (pybind's list-of-tuples conversion cost ~6 µs a
group on group_gemm v16), allocations and launch API calls (~5.5 µs of CPU per cudaLaunchKernel on
an H200 host, whatever the parameter's size) before its kernels run. When that host path is longer
than the device time, a faster kernel cannot show in a call-level timing; this probe says which
side bounds a call, from one process:

- ``host``: CPU time of one call started on an idle device (synchronised before; the launches are
  asynchronous, so this is the host path alone), median over the calls;
- ``queued``: CPU time of a call made right after the one before, the pool's sets in turn after one
  synchronise (GPU MODE's batch loop: the device busy, the launches queued), median over the calls;
  both over a pool of the problem's GPU MODE batch by default (50 sets for gemm and dual_gemm, 15 for
  group_gemm): a cache keyed by the input set can cost with 50 sets what it never did with 4 (gemm
  v68's plan list, harness.timing.queued_call_times);
- ``device``: the harness's ``kernel`` method (harness.timing): first device activity to last one
  per call, the calls queued behind a device sleep so no launch latency is inside; and the
  kernels' summed durations;
- ``cold``: the harness's ``cold`` method: events around the call on an idle device (host path,
  launch latency and device time; what a caller waits for);
- ``events``: two events with nothing between them on an idle device (the floor of ``cold``);
- ``exposed``: cold - device - events: the host path and launch latency a caller sees;
- the host path split over the runtime and aten ops torch.profiler's CPU events see (self time a
  call; the profiler's own cost inflates each a little), and the rest (Python, C++ between ops);
- ``pace``: one torch launch queued the same way (``timing.launch_pace_times``): the host's own pace in
  this process. One machine's host runs in two modes from run to run (a torch launch 5.8-6.6 or 7.9-9.2
  µs queued on session 59's H200, a version's call moving with it), so host figures of two runs are read
  against their paces, and a two-version ``compare`` reports the pace over its rounds.

Without a GPU only the host figures are measured (the device ones are None).

With two versions (``compare``) it sets their host paths side by side, idle and queued: both
imported in this process, each on its own inputs, their calls timed in rounds taken in turn (A B,
B A, ...), and the host path's speedup of B over A each way with its 95% interval from the rounds'
medians. NOTE: one host's pace is not another's: v47's host path on group_gemm's shape A read 19.17 µs on one H200 machine and 41.79
on another the same day (its idle event pair 9.2 and 17.1 µs), so two versions' host paths measured in
two runs are not a ratio.
"""

from __future__ import annotations

import bisect

from harness.config import Shape
from harness.probes import common
from harness.submissions import Submission

WARMUP_PASSES = 3  # builds, first-call set-up (workspaces, tensor maps), the allocator's pools
ROUNDS = 10  # rounds per version in ``compare``: the interval comes from the rounds' medians, paired


def default_pool(problem: str) -> int:
    """The input sets a probe rotates through when not told: GPU MODE's batch for ``problem``."""
    from harness import timing
    return timing.gpumode_batch(problem)


def measure(sub: Submission, shapes: list[Shape], *, calls: int = 100, pool: int | None = None,
            top: int = 12) -> list[dict]:
    """The figures of the module's docstring for ``sub``, one dict per shape (µs, medians over ``calls``;
    ``pool`` distinct input sets, by default the problem's GPU MODE batch).
    NOTE: every shape's host and event figures first, then the profiler's (the CPU ops, the kernel
    method): a process that opened a torch.profiler session keeps CUPTI's callbacks on every later
    launch (harness.timing's ``_profiler`` cites up to +5 µs a call), so a host path or cold
    call timed after one would carry them."""
    torch = common.bound_torch()
    common.refuse_unrunnable(sub, torch)
    from harness import loader
    kernel = loader.import_submission(sub.path, sub.label, source_hash=sub.source_hash)
    pool = pool or default_pool(sub.problem)
    ready = [(shape, *_ready(sub, kernel, shape, pool)) for shape in shapes]
    results = [_clock_figures(torch, sub, kernel, shape, data_sets, checked, calls)
               for shape, data_sets, checked in ready]
    for result, (_, data_sets, _) in zip(results, ready):
        _profiler_figures(torch, kernel, data_sets, calls, top, result)
    return results


def _ready(sub: Submission, kernel, shape: Shape, pool: int) -> tuple[list, dict]:
    """``pool`` input sets of ``shape`` for ``sub``, its first output checked, every set called
    ``WARMUP_PASSES`` times: the sets and the check."""
    data_sets = common.inputs(sub.problem, shape, pool)
    checked = common.check(sub.problem, data_sets[0], kernel(data_sets[0]))
    for _ in range(WARMUP_PASSES):
        for data in data_sets:
            kernel(data)
    return data_sets, checked


def _clock_figures(torch, sub: Submission, kernel, shape: Shape, data_sets: list, checked: dict, calls: int) -> dict:
    """A shape's figures of the host clock and events (host path, cold call, event pair), no profiler
    opened; the profiler's are None until ``_profiler_figures``."""
    from harness import timing
    host = common.median(timing.host_call_times(kernel, data_sets, calls))
    queued = common.median(timing.queued_call_times(kernel, data_sets, calls))
    pace = common.median(timing.launch_pace_times(calls))
    result = {"problem": sub.problem, "version": sub.label, "shape": shape.label, "device": common.device_name(torch),
              "torch": torch.__version__, "calls": calls, "pool": len(data_sets), "check": checked, "host_us": host,
              "queued_us": queued, "pace_us": pace, "ops": [],
              "rest_us": None, "device_us": None, "device_sum_us": None, "cold_us": None, "events_us": None,
              "exposed_us": None}
    if torch.cuda.is_available():
        blocks = max(1, -(-calls // len(data_sets)))
        cold = [t for _ in range(blocks) for t in timing.time_block(kernel, data_sets, "cold").times_us]
        result.update(cold_us=common.median(cold), events_us=common.median(timing.idle_event_pair_us(calls)))
    return result


def _profiler_figures(torch, kernel, data_sets: list, calls: int, top: int, result: dict) -> None:
    """A shape's figures read from torch.profiler sessions, into ``result``: the CPU ops and the rest of
    the host path; on a GPU the kernel method's device span and sum, and what the host leaves exposed."""
    from harness import timing
    result["ops"] = _host_ops(torch, kernel, data_sets, calls, top)
    result["rest_us"] = result["host_us"] - sum(op["self_us"] for op in result["ops"])
    if torch.cuda.is_available():
        blocks = max(1, -(-calls // len(data_sets)))
        spans, sums = [], []
        for _ in range(blocks):
            block = timing.time_block(kernel, data_sets, "kernel")
            spans += block.kernel["span_us"]
            sums += block.kernel["sum_us"]
        result.update(device_us=common.median(spans), device_sum_us=common.median(sums))
        result["exposed_us"] = result["cold_us"] - result["device_us"] - result["events_us"]


def compare(subs: tuple[Submission, Submission], shapes: list[Shape], *, calls: int = 100, pool: int | None = None,
            rounds: int = ROUNDS) -> list[dict]:
    """Two versions' host paths, interleaved in this process (the module's docstring), one dict per
    shape: each one's median host µs a call over ``calls`` calls in ``rounds`` rounds, and the
    speedup of the second over the first (A's time / B's) with its interval and verdict."""
    torch = common.bound_torch()
    for sub in subs:
        common.refuse_unrunnable(sub, torch)
    from harness import loader
    kernels = [loader.import_submission(s.path, s.label, source_hash=s.source_hash) for s in subs]
    pool = pool or default_pool(subs[0].problem)
    return [_compare_shape(torch, subs, kernels, shape, calls, pool, rounds) for shape in shapes]


def _compare_shape(torch, subs, kernels, shape: Shape, calls: int, pool: int, rounds: int) -> dict:
    from harness import stats, timing
    # NOTE: each version its own inputs: a call writes its output into its input set, and a version's
    # cache keyed by the set's pointers must never see the other's
    data_sets, checks = zip(*(_ready(sub, kernel, shape, pool) for sub, kernel in zip(subs, kernels)))
    per_round = max(1, -(-calls // rounds))
    # per way of calling (idle, queued: harness.timing's host_call_times and queued_call_times), per version,
    # each round's median, and every call
    ways = {"idle": timing.host_call_times, "queued": timing.queued_call_times}
    medians = {way: [[], []] for way in ways}
    every = {way: [[], []] for way in ways}
    paces = []  # each round's median of one torch launch queued: the host's pace while the round ran
    for r in range(rounds):
        paces.append(common.median(timing.launch_pace_times(per_round)))
        # NOTE: the order alternates, so a round's drift (a core's clock, the other process on it)
        # falls on each version as often as on the other
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            for way, timed in ways.items():
                # NOTE: each round goes on through the sets where the last stopped, so the calls rotate through
                # the whole pool as GPU MODE's do (a round of 10 calls from set 0 each time would hold a
                # set-keyed cache 10 deep, not the pool's 50)
                times = timed(kernels[i], data_sets[i], per_round, start=r * per_round)
                medians[way][i].append([common.median(times)])
                every[way][i] += times
    speedup, lo, hi = stats.paired_ratio_interval(medians["idle"][0], medians["idle"][1])
    q_speedup, q_lo, q_hi = stats.paired_ratio_interval(medians["queued"][0], medians["queued"][1])
    return {"problem": subs[0].problem, "versions": [s.label for s in subs], "shape": shape.label,
            "device": common.device_name(torch), "torch": torch.__version__, "rounds": rounds,
            "calls_per_round": per_round, "pool": len(data_sets[0]), "checks": checks,
            "host_us": [common.median(t) for t in every["idle"]],
            "speedup": speedup, "lo": lo, "hi": hi, "verdict": stats.verdict(lo, hi),
            "queued_us": [common.median(t) for t in every["queued"]],
            "queued_speedup": q_speedup, "queued_lo": q_lo, "queued_hi": q_hi, "queued_verdict": stats.verdict(q_lo, q_hi),
            "pace_us": common.median(paces), "pace_range_us": [min(paces), max(paces)]}


def format_comparison(r: dict) -> list[str]:
    """The lines ``nvfp4 probe host PROBLEM A B`` prints."""
    a, b = r["versions"]
    lines = [f"{r['problem']} {a} and {b}, {r['shape']}, {r['device']}, torch {r['torch']}: host path (CPU time of a "
             f"call: from an idle device, and queued right after the one before as in GPU MODE's loop), {r['rounds']} "
             f"rounds of {r['calls_per_round']} calls each way over {r['pool']} input set(s), taken in turn (µs a call, "
             "medians)"]
    for label, check in zip(r["versions"], r["checks"]):
        if not check["ok"]:
            lines.append(f"WRONG OUTPUT from {label} ({check['message']}): these are the times of a broken kernel")
    lines.append(f"  {'':<40} {'idle':>9} {'queued':>9}")
    lines += [f"  {label:<40} {_us(idle)} {_us(queued)}"
              for label, idle, queued in zip(r["versions"], r["host_us"], r["queued_us"])]
    lines.append(f"  {b} over {a}: idle {r['speedup']:.3f}x [{r['lo']:.3f}, {r['hi']:.3f}] {r['verdict']}, queued "
                 f"{r['queued_speedup']:.3f}x [{r['queued_lo']:.3f}, {r['queued_hi']:.3f}] {r['queued_verdict']} (the host "
                 "path's speedup from the rounds' medians, paired; the device is `compare`'s)")
    low, high = r["pace_range_us"]
    lines.append(f"  this host's pace: one torch launch queued {r['pace_us']:.2f} µs (rounds' medians {low:.2f}-{high:.2f}; "
                 "host figures from another run are read against its own pace)")
    return lines


CALL_RANGE = "nvfp4.probe.call"  # the profiler range around each call; ops outside it are the probe's


def _host_ops(torch, kernel, data_sets: list, calls: int, top: int) -> list[dict]:
    """The CPU ops torch.profiler sees inside the calls (each in its own range; the synchronise
    between calls is the probe's, not the call's): self µs a call and count a call, largest first.
    NOTE: counted over the whole loop, the probe's own cudaDeviceSynchronize read as the call's
    largest op (group_gemm v47 on an H200: 120 µs a call, the rest then -94 µs)."""
    from torch.profiler import ProfilerActivity, profile, record_function
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(calls):
            sync()
            with record_function(CALL_RANGE):
                kernel(data_sets[i % len(data_sets)])
        sync()
    events = prof.events()
    # NOTE: by time, not by the profiler's tree: an op belongs to the call whose range (same thread)
    # holds its start, whether or not torch linked it as the range's child (runtime API records)
    ranges = sorted((e.thread, e.time_range.start, e.time_range.end) for e in events if e.name == CALL_RANGE)
    totals: dict[str, list[float]] = {}
    for e in events:
        if e.name != CALL_RANGE and _inside(ranges, e.thread, e.time_range.start):
            row = totals.setdefault(e.name, [0.0, 0])
            row[0] += float(e.self_cpu_time_total)
            row[1] += 1
    rows = [{"op": name, "self_us": total / calls, "per_call": count / calls}
            for name, (total, count) in totals.items() if total / calls > 0.05]
    return sorted(rows, key=lambda r: -r["self_us"])[:top]


def _inside(ranges: list[tuple], thread: int, start: float) -> bool:
    """Whether ``start`` (µs) lies in one of ``ranges`` ((thread, start, end), sorted) of ``thread``."""
    i = bisect.bisect_right(ranges, (thread, start, float("inf"))) - 1
    return i >= 0 and ranges[i][0] == thread and ranges[i][1] <= start <= ranges[i][2]


def _us(x: float | None) -> str:
    return "-" if x is None else f"{x:9.2f}"


def format_report(r: dict) -> list[str]:
    """The lines ``nvfp4 probe host`` prints."""
    lines = [f"{r['problem']} {r['version']}, {r['shape']}, {r['device']}, torch {r['torch']}, {r['calls']} calls "
             f"over {r['pool']} input set(s) in turn (µs a call, medians)"]
    if not r["check"]["ok"]:
        lines.append(f"WRONG OUTPUT ({r['check']['message']}): these are the times of a broken kernel")
    rows = [("host path (CPU time of a call, device idle)", r["host_us"]),
            ("host path queued (back to back, GPU MODE's loop)", r["queued_us"]),
            ("this host's pace: one torch launch queued", r["pace_us"]),
            ("device (kernel method: first activity to last)", r["device_us"]),
            ("  the kernels' summed durations", r["device_sum_us"]),
            ("cold call (events around it, device idle)", r["cold_us"]),
            ("an event pair alone, device idle", r["events_us"]),
            ("exposed: cold - device - event pair", r["exposed_us"])]
    lines += [f"  {name:<50} {_us(value)}" for name, value in rows]
    if r["device_us"] is None:
        lines.append("  (no GPU here: the host figures are this CPU's, comparable with nothing measured on a GPU)")
    elif max(r["host_us"], r["queued_us"]) > r["device_us"]:
        lines.append("  the host path is longer than the device time: back-to-back calls are host-bound")
    lines.append("  host path by CPU op (self time a call; the profiler's own cost inflates each a little):")
    for op in r["ops"]:
        lines.append(f"    {op['op'][:46]:<46} {_us(op['self_us'])}  ({op['per_call']:.1f} a call)")
    note = "  (below 0: the profiler's own cost outgrew it)" if r["rest_us"] < 0 else ""
    lines.append(f"    {'rest (Python, conversions, C++ between the ops)':<46} {_us(r['rest_us'])}{note}")
    return lines
