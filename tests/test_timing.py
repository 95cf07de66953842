"""harness.timing on the CPU (the CUDA path runs under the gpu marker), the worker's seeds,
telemetry decoding, and the plausibility guard."""

from __future__ import annotations

import time

import pytest
import torch

from harness import roofline, stats, telemetry, timing, worker


@pytest.fixture(autouse=True)
def bound():
    timing.bind(torch)


def test_cold_block_times_each_call_once_and_returns_results():
    calls = []

    def fn(data):
        calls.append(data)
        time.sleep(0.002)
        return data * 10

    block = timing.time_block(fn, [1, 2, 3])
    assert calls == [1, 2, 3] and block.results == [10, 20, 30]
    assert len(block.times_us) == 3 and all(1900 <= t < 20_000 for t in block.times_us)
    assert block.wall_us >= sum(block.times_us) and block.escape is None


def test_warm_block_calls_twice_and_poisons_between():
    events = []
    block = timing.time_block(lambda d: events.append(("call", d)) or d, ["x", "y"], "warm",
                              poison=lambda d: events.append(("poison", d)))
    assert events == [("call", "x"), ("poison", "x"), ("call", "x"), ("call", "y"), ("poison", "y"), ("call", "y")]
    assert block.results == ["x", "y"] and len(block.times_us) == 2


def test_queued_block_times_each_call_once():
    calls = []
    block = timing.time_block(lambda d: calls.append(d) or d, ["a", "b"], "queued")
    assert calls == ["a", "b"] and block.results == ["a", "b"] and len(block.times_us) == 2 and block.escape is None


@pytest.mark.parametrize("mode", ["cold", "queued", "warm"])
def test_escape_check_flags_wall_time_outside_the_events(mode):
    assert timing.escape_of(mode, 8, 3000.0, 1000.0).startswith("work escapes the timed stream: 8 calls")
    assert timing.escape_of(mode, 8, 1200.0, 1000.0) is None  # within both margins


def test_escape_check_exempts_graph_replays():
    # NOTE: a replayed graph runs no submission code; the gap is the host's (H100: ~180 µs a replay).
    assert timing.escape_of("graph", 8, 2516.0, 1050.0) is None


def test_unknown_mode_refused():
    with pytest.raises(ValueError, match="unknown timing method"):
        timing.time_block(lambda d: d, [1], "hot")


def test_round_seeds_are_deterministic_and_distinct():
    base = 1111
    assert [worker.round_seed(base, 0, s) for s in range(3)] == [1111, 1112, 1113]  # the checked pool
    seen = {worker.round_seed(base, r, s) for r in range(1, 200) for s in range(16)}
    assert len(seen) == 199 * 16  # never repeats within a shape's timing
    assert not seen & {base + s for s in range(16)}
    assert all(0 <= x < 2**31 - 1 for x in seen)
    assert worker.round_seed(base, 5, 3) == worker.round_seed(base, 5, 3)  # same in every child


def test_telemetry_reasons():
    assert telemetry.decode_reasons(0x4 | 0x40) == ["sw_power_cap", "hw_thermal"]
    assert telemetry.is_throttled({"reasons": ["hw_thermal"]})
    assert telemetry.is_throttled({"reasons": ["hw_power_brake", "gpu_idle"]})
    assert not telemetry.is_throttled({"reasons": ["sw_power_cap"]})  # how the card runs under load
    assert not telemetry.is_throttled(None) and not telemetry.is_throttled({})


# --------------------------------------------------------------------------------- plausibility

GEMM_BENCH = {"m": 128, "n": 7168, "k": 16384, "l": 1, "seed": 1}


def test_physical_floor_uses_datasheet_peaks():
    measured = {"bf16_tflops": 780.0, "copy_tbps": 4.2}
    phys = roofline.physical_floor_us("gemm", GEMM_BENCH, "NVIDIA H200", measured)
    assert phys == pytest.approx(2 * 128 * 7168 * 16384 / 989e12 * 1e6)
    assert phys < roofline.floor_us("gemm", GEMM_BENCH, measured)
    assert roofline.physical_floor_us("gemm", GEMM_BENCH, "cpu", None) is None
    unknown = roofline.physical_floor_us("gemm", GEMM_BENCH, "Some GPU", measured)
    assert unknown == pytest.approx(roofline.floor_us("gemm", GEMM_BENCH, measured) / roofline.UNKNOWN_GPU_MARGIN)


def test_plausibility_flags_times_below_the_physical_floor():
    phys = roofline.physical_floor_us("gemm", GEMM_BENCH, "NVIDIA H200", None)
    assert roofline.plausibility(phys * 1.01, phys) is None
    why = roofline.plausibility(phys / 10, phys)
    assert why.startswith("IMPLAUSIBLE") and "physical floor" in why
    why = roofline.plausibility(phys / 10, phys, v0_mean_us=1600.0)
    assert "speedup over v0" in why
    assert roofline.plausibility(1.0, None) is None  # CPU: no floor, no claim


def test_geomean_refuses_a_missing_or_zero_shape():
    assert stats.geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert stats.geomean([1.0, None]) is None
    assert stats.geomean([1.0, 0.0]) is None


def test_prelude_runs_once_before_the_timed_calls():
    events = []
    block = timing.time_block(lambda d: events.append(d), ["a", "b"], prelude=lambda: events.append("scratch"))
    assert events == ["scratch", "a", "b"] and len(block.times_us) == 2


def _act(device, name, start, end, ident, linked=0):
    return timing.Activity(device, name, start, end, ident, linked)


def test_kernel_times_attributes_device_work_to_the_call_that_launched_it():
    """Records shaped as torch 2.11's kineto gave them on an H200: the flush through an aten op, the
    sleep, then per call a load_inline kernel whose record shares its cudaLaunchKernel's id."""
    acts = [
        _act(False, "aten::fill_", 100, 200, 2), _act(False, "cudaLaunchKernel", 110, 190, 9, 2),
        _act(True, "vectorized_elementwise_kernel<FillFunctor>", 190, 260, 9, 2),  # flush: outside
        _act(False, "cudaLaunchKernel", 300, 320, 19), _act(True, "spin_kernel", 320, 500, 19),  # sleep: outside
        _act(False, timing.CALL_RANGE, 400, 450, 3),  # ids of ops and of launches may coincide (3)
        _act(False, "cudaLaunchKernel", 410, 420, 24), _act(True, "gemv_kernel", 510, 530, 24),
        _act(False, "cudaLaunchKernel", 430, 440, 25), _act(True, "other_stream_kernel", 505, 520, 25),
        _act(True, timing.CALL_RANGE, 505, 530, 3),  # kineto's device copy of the range: not work
        _act(False, "cudaDeviceSynchronize", 450, 540, 3),
        _act(False, timing.CALL_RANGE, 600, 650, 6),
        _act(False, "cuLaunchKernelEx", 610, 620, 51), _act(True, "gemm_kernel", 700, 760, 51),
    ]
    per_call, stray = timing.kernel_times(acts, 2)
    assert stray == 2  # the flush and the sleep
    assert per_call[0] == {"span_us": 0.025, "sum_us": 0.035, "activities": 2}  # overlap counted once in the span
    assert per_call[1] == {"span_us": 0.06, "sum_us": 0.06, "activities": 1}


def test_kernel_times_refuses_a_session_without_one_range_per_call():
    with pytest.raises(RuntimeError, match="1 call ranges for 2 calls"):
        timing.kernel_times([_act(False, timing.CALL_RANGE, 0, 1, 1)], 2)


def test_gpumode_batches_the_pool_and_divides_by_the_batch():
    """On a CPU the batch arithmetic is the same as on a GPU: one sample per batch, its time over its calls."""
    calls = []
    block = timing.time_block(lambda d: calls.append(d) or d, [1, 2, 3, 4, 5], "gpumode", batch=2)
    assert calls == [1, 2, 3, 4, 5] and block.results == [1, 2, 3, 4, 5]
    assert len(block.times_us) == 3  # batches of 2, 2 and 1


@pytest.mark.parametrize("method", timing.EVENT_METHODS)
def test_every_event_method_through_the_clock_hands_it_the_pass_and_takes_its_figures(method):
    """With a compiled clock (harness.clock), every event method's loop is the clock's: the prelude first,
    then the batches (one call each but gpumode's), the flush (none without CUDA), the capture, the tag,
    the method, the poison, graph's load, replay and copy and the telemetry sample handed to it, and the
    block's figures and escape from what it hands back (graph's less the flush's own replay time; the
    parent reads the clock's record)."""
    from types import SimpleNamespace
    seen, order = {}, []
    graph = SimpleNamespace(load=order.append, replay=lambda: None, output_copy=lambda: "copy", flush_us=0.25)

    class Clock:
        @staticmethod
        def time_batches(fn, groups, flush, capture, stream, tag, sample, method, poison, steps):
            seen.update(groups=groups, flush=flush, stream=stream, tag=tag, method=method, poison=poison, steps=steps)
            results = [fn(d) for g in groups for d in g]
            for r in results:
                capture(r)
            figures = {"times_us": [1.0] * len(groups), "span_us": [10.0] * len(groups), "wall_us": [900.0] * len(groups)}
            return results, figures, sample()

    poison = order.append
    block = timing.time_block(lambda d: d * 2, [1, 2, 3], method, batch=2, prelude=lambda: order.append("prelude"),
                              capture=order.append, clock=Clock, tag=4, poison=poison, graph=graph,
                              telemetry=type("T", (), {"sample": staticmethod(lambda: {"ok": 1})}))
    groups = [[1, 2], [3]] if method == "gpumode" else [[1], [2], [3]]
    steps = (graph.load, graph.replay, graph.output_copy) if method == "graph" else None
    assert seen == {"groups": groups, "flush": "none", "stream": 0, "tag": 4, "method": method, "poison": poison,
                    "steps": steps}
    assert order == ["prelude", 2, 4, 6] and block.results == [2, 4, 6] and block.telemetry == {"ok": 1}
    n = len(groups)
    assert (block.times_us, block.wall_us, block.span_us) == ([0.75 if method == "graph" else 1.0] * n, 900.0 * n,
                                                              10.0 * n)
    # 900 µs of wall a batch against 10 of events: escaped, but where graph's exemption holds
    assert (block.escape is None) == (method == "graph") and (method == "graph" or "escapes" in block.escape)


def test_method_defaults_and_batch_sizes():
    from harness import runner
    plan = runner.TimingPlan()
    assert plan.method == "gpumode" == timing.DEFAULT_METHOD
    assert [plan.batch(p) for p in ("gemv", "gemm", "dual_gemm", "group_gemm")] == [1, 50, 50, 15]
    assert plan.pool_size("gemm") == 50 and plan.pool_size("gemv") == plan.pool  # gemv: batches of one
    kernel = runner.TimingPlan(method="kernel")
    assert kernel.batch("gemm") == 1 and kernel.pool_size("gemm") == kernel.pool
    assert runner.TimingPlan(flush="clean").describe("gemm")["flush"] == "clean"


def test_unknown_flush_refused():
    with pytest.raises(ValueError, match="unknown flush"):
        timing.time_block(lambda d: d, [1], "cold", flush_kind="lukewarm")


def test_telemetry_reason_bits_come_from_the_library_constants():
    from types import SimpleNamespace
    fake = SimpleNamespace(nvmlClocksEventReasonHwSlowdown=0x8000, nvmlClocksThrottleReasonGpuIdle=0x1)
    bits = telemetry.reason_bits(fake)
    assert bits[0x8000] == "hw_slowdown" and bits[0x1] == "gpu_idle" and bits[0x4] == "sw_power_cap"  # fallback
    assert telemetry.decode_reasons(0x8000, fake) == ["hw_slowdown"]


def test_host_call_times_cycle_the_pool_and_time_each_call():
    import torch
    from harness import timing
    timing.bind(torch)
    seen = []
    times = timing.host_call_times(lambda data: seen.append(data), ["a", "b"], 5)
    assert seen == ["a", "b", "a", "b", "a"] and len(times) == 5 and all(t >= 0 for t in times)


def test_queued_call_times_make_the_pools_sets_batches_back_to_back_and_time_each_call():
    import torch
    from harness import timing
    timing.bind(torch)
    seen, syncs = [], []
    bound = timing.bound()
    real = bound.synchronize
    try:
        bound.synchronize = lambda: syncs.append(len(seen))
        times = timing.queued_call_times(lambda data: seen.append(data), ["a", "b", "c"], 7)
    finally:
        bound.synchronize = real
    assert seen == ["a", "b", "c", "a", "b", "c", "a"] and len(times) == 7 and all(t >= 0 for t in times)
    if torch.cuda.is_available():  # one synchronise before each batch and one after the last, none between calls
        assert syncs == [0, 3, 6, 7]
    seen.clear()  # a later round goes on where the last stopped (probe host's rounds rotate through the pool)
    timing.queued_call_times(lambda data: seen.append(data), ["a", "b", "c"], 4, start=2)
    assert seen == ["c", "a", "b", "c"]
    seen.clear()
    timing.host_call_times(lambda data: seen.append(data), ["a", "b", "c"], 4, start=1)
    assert seen == ["b", "c", "a", "b"]


def test_launch_pace_times_one_torch_launch_a_call_the_way_a_queued_call_is_timed(monkeypatch):
    # NOTE: the host's own pace beside a version's host figures (one machine's host ran in two modes, session 59)
    import torch
    from harness import timing
    timing.bind(torch)
    calls = []
    queued = timing.queued_call_times

    def spy(fn, pool, n, start=0):
        calls.append((len(pool), n))
        return queued(fn, pool, n, start)

    monkeypatch.setattr(timing, "queued_call_times", spy)
    times = timing.launch_pace_times(6)
    assert calls == [(4, 6)] and len(times) == 6 and all(t >= 0 for t in times)


@pytest.mark.parametrize("method", ["cold", "gpumode"])
def test_each_result_is_captured_after_its_call_and_before_the_next(method):
    """The copy the judge checks is taken when the call's time is taken, never later."""
    events = []
    block = timing.time_block(lambda d: events.append(("call", d)) or d, ["a", "b"], method,
                              prelude=lambda: events.append("prelude"), capture=lambda r: events.append(("capture", r)))
    assert events == ["prelude", ("call", "a"), ("capture", "a"), ("call", "b"), ("capture", "b")]
    assert block.results == ["a", "b"]


def test_kernel_times_leaves_the_judges_copies_out_of_the_strays():
    acts = [
        _act(False, timing.CALL_RANGE, 100, 200, 3),
        _act(False, "cudaLaunchKernel", 110, 120, 24), _act(True, "gemv_kernel", 300, 330, 24),
        _act(False, timing.CAPTURE_RANGE, 210, 260, 4),
        _act(False, "cudaMemcpyAsync", 220, 230, 31), _act(True, "Memcpy DtoH", 330, 360, 31),
        _act(False, "cudaLaunchKernel", 270, 280, 32), _act(True, "stray_kernel", 360, 380, 32),
    ]
    per_call, stray = timing.kernel_times(acts, 1)
    assert stray == 1 and per_call[0]["activities"] == 1


def test_the_bound_kineto_reader_reads_the_records_and_ignores_a_later_patch(monkeypatch):
    """The kernel method reads the profiler's records through methods taken at bind time: the same
    activities as reading them plainly, and a record method replaced afterwards does not reach it."""
    from torch.profiler import ProfilerActivity, profile, record_function
    read = timing.kineto_reader(torch)
    assert read is not None
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function(timing.CALL_RANGE):
            torch.ones(64).sum()
    cpu = torch.autograd.DeviceType.CPU

    def plain():  # the records read through the record class as it is now
        return [timing.Activity(e.device_type() != cpu, e.name(), int(e.start_ns()), int(e.end_ns()),
                                int(e.correlation_id()), int(e.linked_correlation_id()))
                for e in prof.profiler.kineto_results.events()]

    before = plain()
    assert read(prof) == before and any(a.name == timing.CALL_RANGE for a in before)
    event = torch._C._autograd._KinetoEvent
    monkeypatch.setattr(event, "end_ns", lambda self, _start=event.start_ns: _start(self) + 1)
    assert plain() != before  # the patch reaches a plain read
    assert read(prof) == before


@pytest.mark.parametrize("time_us, issue_us, bound", [
    (21.0, 20.5, True),    # the calls took as long to return as the events saw: the device waited on the host
    (21.0, 0.9 * 21.0, True),
    (21.0, 8.0, False),    # issued well ahead of the device
    (21.0, None, False),   # no issue time (kernel method, or a block timed without the clock)
    (None, 5.0, False),
    (0.0, 5.0, False),
])
def test_a_figure_is_host_bound_when_its_calls_took_nearly_as_long_to_return(time_us, issue_us, bound):
    why = timing.host_bound(time_us, issue_us)
    assert bool(why) == bound
    if bound:
        assert why.startswith("host-bound") and "probe host" in why


def test_run_names_a_host_bound_shape_on_a_gpu_and_never_on_a_cpu(capsys):
    from types import SimpleNamespace

    from harness.cli import render
    from harness.config import Shape
    from harness.runner import ShapeResult
    shape = Shape("gemm", "benchmarks", 2, {"m": 128, "n": 7168, "k": 2048, "l": 1, "seed": 1111})
    stats_ = {"mean_us": 21.0, "ci95_lo_us": 20.8, "ci95_hi_us": 21.2, "median_us": 21.0, "iqr_us": 0.2, "best_us": 20.5,
              "n": 12, "converged": True, "stop_reason": "", "issue_us": 20.6}
    plan = SimpleNamespace(method="gpumode", flush="dirty", warm=False)
    sub = SimpleNamespace(label="v68", summary="paired tiles")
    for gpu, noted in (("NVIDIA H200", True), ("cpu", False)):
        outcome = SimpleNamespace(plan=plan, results=[ShapeResult(shape, "competition", "PASS", stats=[dict(stats_)])],
                                  geomean=None, device={"gpu": gpu}, sandboxes={}, submissions=[])
        render.print_run("gemm", sub, outcome)
        out = capsys.readouterr().out
        assert "issue µs" in out  # the column: the host µs a call took to return
        assert ("host-bound" in out) == noted, out


def test_the_kernel_method_keeps_the_profiler_s_cycle_warning_out_and_the_calls_own_in(monkeypatch):
    """torch can warn that a session clears its events each cycle as the session starts (`probe marks` printed it,
    session 76); the kernel method reads its one cycle whole, so that warning is not the user's, but a warning the
    version's call raises is."""
    import contextlib
    import warnings
    from types import SimpleNamespace

    class Session(contextlib.AbstractContextManager):
        def __enter__(self):
            warnings.warn("Warning: Profiler clears events at the end of each cycle.", UserWarning)
            return self

        def __exit__(self, *exc):
            return None

    acts = [_act(False, timing.CALL_RANGE, 100, 200, 3), _act(False, "cudaLaunchKernel", 110, 120, 24),
            _act(True, "gemm_kernel", 300, 330, 24)]
    event = SimpleNamespace
    b = SimpleNamespace(Event=lambda enable_timing: event(), record=lambda e: None, sleep=None,
                        synchronize=lambda: None, profile=lambda activities: Session(),
                        record_function=lambda name: contextlib.nullcontext(), kineto=lambda prof: acts,
                        elapsed=lambda a, b: 0.05)
    monkeypatch.setattr(timing, "flush", lambda kind: None)

    def call(data):
        warnings.warn("the version's own warning", UserWarning)
        return data

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        block = timing._time_kernels(b, call, ["x"], "dirty", None, lambda r: None)
    assert [str(w.message) for w in caught] == ["the version's own warning"]
    assert block.results == ["x"] and block.kernel["span_us"] == [0.03]
