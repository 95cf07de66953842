"""harness.timing's GPU paths on a CPU, with a fake device that obeys a script: one stream that runs
queued work in order, events stamped when the device reaches them, a device-wide synchronise that
moves the host clock to the end of all work (side streams included), and profiler records of
every launch. Each method's arithmetic and order of operations is checked against what the
script says the device did (the real device runs under the gpu marker, tests/test_gpu.py)."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest

from harness import timing

FLUSH_US = 50.0
LAUNCH_US = 1.0  # host time of every launch: the launch returns before the next host op starts


class Device:
    """Host and device clocks in µs; work queued on the stream starts when the device is free and
    the host has queued it."""

    def __init__(self):
        self.host = 0.0
        self.stream = 0.0  # when the stream's queued work ends
        self.side = 0.0  # when work left on another stream ends
        self.log: list = []  # (what, host µs, stream µs) in order
        self.prof = None
        self.ident = 100

    def now(self) -> float:
        return self.host / 1e6

    def work(self, us: float, name: str = "kernel", side: bool = False) -> None:
        start = max(self.host, self.side if side else self.stream)
        if side:
            self.side = start + us
        else:
            self.stream = start + us
        self.log.append((name, self.host, start))
        if self.prof is not None:
            self.ident += 1
            self.prof.acts += [timing.Activity(False, "cudaLaunchKernel", int(self.host * 1e3),
                                               int((self.host + LAUNCH_US) * 1e3), self.ident, 0),
                               timing.Activity(True, name, int(start * 1e3), int((start + us) * 1e3), self.ident, 0)]
        self.host += LAUNCH_US

    def synchronize(self) -> None:
        self.host = max(self.host, self.stream, self.side)
        self.log.append(("sync", self.host, self.stream))


class Profile:
    def __init__(self, device):
        self.device, self.acts = device, []

    def __enter__(self):
        self.device.prof = self
        return self

    def __exit__(self, *exc):
        self.device.prof = None


@pytest.fixture
def device(monkeypatch):
    dev = Device()

    class Event:
        def __init__(self, enable_timing=True):
            self.at = None

        def record(self):
            self.at = max(dev.host, dev.stream)  # the device reaches it after what was queued before
            dev.log.append(("event", dev.host, self.at))

        def elapsed_time(self, end):
            return (end.at - self.at) / 1e3  # ms, as torch.cuda.Event says

    @contextlib.contextmanager
    def record_function(name):
        start = dev.host
        yield
        if dev.prof is not None:
            dev.prof.acts.append(timing.Activity(False, name, int(start * 1e3), int(dev.host * 1e3), 0, 0))
        dev.host += LAUNCH_US / 2  # closing the range takes host time too: the next launch starts after it

    fake_torch = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: True), int64="int64")
    flush_buffer = SimpleNamespace(zero_=lambda: dev.work(FLUSH_US, "flush"))
    bound = timing.Bound(fake_torch, Event, Event.record, Event.elapsed_time, dev.synchronize,
                         profile=lambda activities: Profile(dev), record_function=record_function,
                         sleep=lambda cycles: dev.work(cycles / timing.SLEEP_CYCLES_PER_US, "sleep"),
                         flush_buffer=flush_buffer, kineto=lambda prof: prof.acts)
    monkeypatch.setattr(timing, "_bound", bound)
    monkeypatch.setattr(timing, "_now", dev.now)
    monkeypatch.setattr(timing, "reset_persisting_l2", lambda: "ok")
    monkeypatch.setattr(timing._profiler, "opened", False)  # NOTE: this fake's sessions must not mark the test process
    return dev


def kernel(dev, host_us, device_us, side_us=0.0):
    """A call that spends ``host_us`` on the host, then queues ``device_us`` of work (and
    ``side_us`` on another stream, which the events never see)."""
    def call(data):
        dev.host += host_us
        dev.work(device_us)
        if side_us:
            dev.work(side_us, "side", side=True)
        return ("out", data)
    return call


def test_cold_times_the_host_path_and_the_device_time_of_each_call_from_an_idle_device(device):
    block = timing.time_block(kernel(device, 8.0, 30.0), [1, 2, 3], "cold")
    assert block.times_us == pytest.approx([38.0] * 3)
    assert block.results == [("out", 1), ("out", 2), ("out", 3)]
    # every call: flush, synchronise, start event, call, end event, synchronise
    names = [n for n, *_ in device.log]
    assert names[:7] == ["flush", "sync", "event", "kernel", "event", "event", "sync"]
    assert block.escape is None and block.wall_us == pytest.approx(block.span_us)


@pytest.mark.parametrize("host_us,expected", [(20.0, 30.0), (80.0, 80.0 + LAUNCH_US - FLUSH_US + 30.0)])
def test_queued_hides_the_host_path_under_the_flush(device, host_us, expected):
    """GPU MODE's order: what of the host path fits under the flush is not counted."""
    block = timing.time_block(kernel(device, host_us, 30.0), [1, 2], "queued")
    assert block.times_us == pytest.approx([expected] * 2)
    assert block.escape is None


@pytest.mark.parametrize("host_us,expected", [(5.0, 30.0), (100.0, (3 * (100.0 + LAUNCH_US) + 30.0 - FLUSH_US) / 3)])
def test_gpumode_divides_a_batch_by_its_calls_device_or_host_bound(device, host_us, expected):
    block = timing.time_block(kernel(device, host_us, 30.0), [1, 2, 3, 4, 5, 6], "gpumode", batch=3)
    assert block.times_us == pytest.approx([expected] * 2)  # two batches of three
    assert len(block.results) == 6 and block.escape is None
    names = [n for n, *_ in device.log]
    assert names[:8] == ["sync", "event", "flush", "event", "kernel", "kernel", "kernel", "event"]


def test_the_process_knows_it_opened_a_profiler_once_the_kernel_method_ran(device):
    for method in timing.EVENT_METHODS[:4]:
        timing.time_block(kernel(device, 5.0, 30.0), [1, 2], method, batch=2)
    assert not timing.profiler_opened()
    timing.time_block(kernel(device, 5.0, 30.0), [1, 2], "kernel")
    assert timing.profiler_opened()


def test_a_kernel_method_block_leaves_the_tamper_guard_quiet(device):
    """The profiler flag is the harness's own state: setting it is no replaced name (a rebound
    module-level flag made every kernel-method block TAMPERED on an H200)."""
    from harness.guard import Guard
    guard = Guard.snapshot()
    timing.time_block(kernel(device, 5.0, 30.0), [1, 2], "kernel")
    assert timing.profiler_opened()
    assert guard.changes() == []


def test_kernel_method_takes_each_calls_device_span_behind_one_sleep(device):
    block = timing.time_block(kernel(device, 40.0, 30.0), [1, 2, 3], "kernel")
    assert block.times_us == pytest.approx([30.0] * 3)
    assert block.kernel["host_us"] == pytest.approx([40.0 + LAUNCH_US] * 3)  # the call's own launch included
    assert block.kernel["activities"] == [1, 1, 1]
    assert block.kernel["stray_activities"] == 4  # three flushes and the sleep: the harness's, outside every call
    sleep = next(entry for entry in device.log if entry[0] == "sleep")
    assert device.stream - sleep[2] >= 3 * timing.AHEAD_US  # the sleep covered the host's queueing
    assert block.escape is None


def test_work_left_on_another_stream_escapes_the_events(device):
    block = timing.time_block(kernel(device, 5.0, 30.0, side_us=2000.0), [1, 2], "cold")
    assert block.times_us == pytest.approx([35.0] * 2)
    assert block.escape and "escapes the timed stream" in block.escape


def test_warm_calls_once_untimed_and_poisons_before_the_timed_call(device):
    poisoned = []
    block = timing.time_block(kernel(device, 5.0, 30.0), [1, 2], "warm", poison=poisoned.append)
    assert poisoned == [1, 2] and block.times_us == pytest.approx([35.0] * 2)
    assert [n for n, *_ in device.log if n == "kernel"] == ["kernel"] * 4


@pytest.mark.parametrize("method", ["cold", "queued", "gpumode", "kernel"])
def test_the_capture_is_queued_after_the_end_event_and_counts_for_the_escape_check_not_the_time(device, method):
    def capture(result):
        device.work(500.0, "capture")  # a large copy: would trip the escape check if the span ended at the end event

    block = timing.time_block(kernel(device, 5.0, 30.0), [1, 2], method, capture=capture)
    order = [n for n, *_ in device.log if n in ("kernel", "capture", "event")]
    last_kernel = max(i for i, n in enumerate(order) if n == "kernel")
    assert order[last_kernel + 1] == "event" and "capture" in order[last_kernel + 2:]
    assert all(t < 100 for t in block.times_us)
    assert block.escape is None


@pytest.mark.parametrize("method", ["cold", "gpumode", "kernel"])
def test_the_telemetry_query_is_left_out_of_the_wall_time(device, method):
    """NOTE: the query overlaps the last call's device time, and all of it is taken out: the wall
    time can then read short of the events (never long: a slow query cannot fake an escape)."""
    def sample():
        device.host += 5000.0  # a slow NVML query while the last call runs
        return {"sm_mhz": 1980}

    block = timing.time_block(kernel(device, 5.0, 30.0), [1, 2], method, telemetry=SimpleNamespace(sample=sample))
    assert block.telemetry == {"sm_mhz": 1980} and block.escape is None
    assert block.wall_us <= block.span_us


def test_the_prelude_runs_before_the_flush_of_the_first_call(device):
    block = timing.time_block(kernel(device, 5.0, 30.0), [1], "cold", prelude=lambda: device.log.append(("prelude", 0, 0)))
    assert [n for n, *_ in device.log][:2] == ["prelude", "flush"] and len(block.times_us) == 1


def test_graph_subtracts_the_flushs_replay_and_copies_each_output_after_its_end_event(device):
    """A replay is the captured flush and call; the flush's own replay time is taken off."""
    loaded = []

    class Graph:
        flush_us = FLUSH_US

        def load(self, data):
            loaded.append(data)

        def replay(self):
            device.work(FLUSH_US, "flush")
            device.work(30.0)

        def output_copy(self):
            device.work(2.0, "copy")
            return ("copy", loaded[-1])

    captured = []
    block = timing.time_block(None, [1, 2], "graph", graph=Graph(), capture=captured.append)
    assert block.times_us == pytest.approx([30.0, 30.0]) and loaded == [1, 2]
    assert block.results == [("copy", 1), ("copy", 2)] == captured
    names = [n for n, *_ in device.log]
    assert names[names.index("kernel") + 1:names.index("kernel") + 3] == ["event", "copy"]


def test_graph_is_exempt_from_the_escape_check():
    assert timing.escape_of("graph", 8, 10_000.0, 100.0) is None
    assert timing.escape_of("cold", 8, 10_000.0, 100.0)


def test_the_clean_flush_reads_the_buffer_and_an_unknown_one_is_refused(device):
    reads = []
    timing.bound().flush_buffer.sum = lambda dtype: reads.append(dtype) or "sink"
    timing.flush("clean")
    assert reads and timing.bound().flush_sink == "sink"
    with pytest.raises(ValueError, match="unknown flush 'tepid'"):
        timing.flush("tepid")


def test_idle_event_pairs_and_host_call_times_follow_the_device(device):
    assert timing.idle_event_pair_us(3) == pytest.approx([0.0] * 3)  # nothing between the two events
    times = timing.host_call_times(kernel(device, 12.0, 30.0), [1, 2], 3)
    assert times == pytest.approx([12.0 + LAUNCH_US] * 3)  # the host path alone: the device's 30 µs not waited for
    assert device.host >= device.stream  # synchronised at the end


def test_kineto_records_are_read_with_their_ids():
    class Event:
        def __init__(self, dev, name, start, end, ident, linked):
            self.args = (dev, name, start, end, ident, linked)

        def device_type(self):
            return self.args[0]

        def name(self):
            return self.args[1]

        def start_ns(self):
            return self.args[2]

        def end_ns(self):
            return self.args[3]

        def correlation_id(self):
            return self.args[4]

        def linked_correlation_id(self):
            return self.args[5]

    cpu, cuda = "CPU", "CUDA"
    class Result:
        def __init__(self, records):
            self.records = records

        def events(self):
            return self.records

    fake_torch = SimpleNamespace(autograd=SimpleNamespace(DeviceType=SimpleNamespace(CPU=cpu)),
                                 _C=SimpleNamespace(_autograd=SimpleNamespace(_KinetoEvent=Event, _ProfilerResult=Result)))
    prof = SimpleNamespace(profiler=SimpleNamespace(kineto_results=Result([
        Event(cpu, "cudaLaunchKernel", 10, 20, 7, 0), Event(cuda, "gemm", 30, 90, 7, 7)])))
    assert timing.kineto_reader(fake_torch)(prof) == [timing.Activity(False, "cudaLaunchKernel", 10, 20, 7, 0),
                                                      timing.Activity(True, "gemm", 30, 90, 7, 7)]
    assert timing.kineto_reader(SimpleNamespace(_C=SimpleNamespace(_autograd=SimpleNamespace()))) is None


def test_timing_before_bind_says_so(monkeypatch):
    monkeypatch.setattr(timing, "_bound", None)
    with pytest.raises(RuntimeError, match="bind"):
        timing.bound()


def test_graph_call_captures_the_flush_and_the_call_and_measures_the_flush_alone(device):
    """GraphCall on the fake device: work queued while a graph captures is recorded into it, and a
    replay queues it again."""
    import torch
    capturing = []

    class Graph:
        def __init__(self):
            self.work = []

        def replay(self):
            for name, us in self.work:
                device.work(us, name)

    @contextlib.contextmanager
    def graph(g):
        capturing.append(g)
        yield
        capturing.pop()

    real_work = device.work

    def work(us, name="kernel", side=False):
        if capturing:
            capturing[-1].work.append((name, us))
        else:
            real_work(us, name, side)

    device.work = work
    stream = SimpleNamespace(wait_stream=lambda other: None)
    cuda = timing.bound().torch.cuda
    cuda.Stream = lambda: stream
    cuda.current_stream = lambda: stream
    cuda.stream = lambda s: contextlib.nullcontext()
    cuda.CUDAGraph = Graph
    cuda.graph = graph
    calls = []

    def fn(data):
        calls.append(data)
        device.work(30.0)
        return data[1]

    static = (torch.ones(2), torch.zeros(2))
    call = timing.GraphCall(fn, static, lambda d: list(d), lambda d: d[1].fill_(float("nan")),
                            lambda out: out.clone())
    assert call.flush_us == pytest.approx(FLUSH_US) and len(calls) == 3  # two warm-ups and the capture
    block = timing.time_block(fn, [(torch.full((2,), 3.0), torch.zeros(2))], "graph", graph=call)
    assert block.times_us == pytest.approx([30.0]) and len(calls) == 3  # replayed, never called again
    assert torch.equal(static[0], torch.full((2,), 3.0))  # the input copied into the captured buffers
    assert bool(block.results[0].isnan().all())  # the output poisoned by load; the fake kernel writes nothing


def test_the_persisting_l2_reset_says_why_it_could_not_run():
    status = timing.reset_persisting_l2()
    assert status == "ok" or status.startswith(("unavailable", "cuCtxSetLimit="))


def test_a_call_that_launches_nothing_has_an_empty_span(device):
    block = timing.time_block(lambda data: data, [1], "kernel")
    assert block.kernel["activities"] == [0] and block.times_us == [0.0]
