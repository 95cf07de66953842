"""Timing: one function, ``time_calls``, used by run, compare and table.

Method (CUDA): a flush buffer of twice the L2 size, allocated once, is zeroed on the timed stream
before every timed call, so each call starts with a cold L2; the call is bracketed by CUDA events;
inputs rotate over a pool of independently seeded input sets; warm-up calls (compile, first-touch,
cuBLAS handles) are excluded. Calls repeat until the standard error of the mean is under
``target_rel_err`` of the mean (default 0.1%, as GPU MODE's eval_better_bench) with at least
``min_repeats`` samples, or the time budget or ``max_repeats`` runs out (then ``converged`` is
false). Several callables are interleaved call by call (A B B A ...) on the same inputs, and each
later one carries ``vs_first``: the mean and standard error of the per-repeat log time ratio
against the first, the paired statistic ``compare`` judges by.

Escape check: after timing, a burst of calls is bracketed by one pair of events and by a
device-wide synchronise on the wall clock; work left on another stream shows up as wall time the
events did not see.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from harness import stats

# A burst whose wall time exceeds its event time by both margins is flagged.
ESCAPE_REL = 0.5
ESCAPE_ABS_US = 500.0


@dataclass
class TimingSettings:
    min_repeats: int = 10
    max_repeats: int = 10_000
    budget_s: float = 3.0
    target_rel_err: float = 1e-3
    warmup: int = 2  # untimed calls per callable before timing (each on a different input)
    check_every: int = 10


class _Flusher:
    def __init__(self, torch):
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        l2 = int(getattr(props, "L2_cache_size", 0)) or 64 * 1024 * 1024
        self.buffer = torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")

    def __call__(self):
        self.buffer.zero_()


_flushers: dict = {}


def _flusher(torch) -> _Flusher:
    dev = torch.cuda.current_device()
    if dev not in _flushers:
        _flushers[dev] = _Flusher(torch)
    return _flushers[dev]


def time_calls(torch, fns: list, inputs: list, settings: TimingSettings | None = None) -> list[dict]:
    """Times each of ``fns`` (callables taking one input set) over the ``inputs`` pool.

    Returns one stats dict per callable: n, mean/median/std/stderr/ci95/best (µs), converged,
    escape (None, or a message when work escaped the timed stream).
    """
    s = settings or TimingSettings()
    if not inputs:
        raise ValueError("time_calls needs at least one input set")
    cuda = torch.cuda.is_available() and _on_cuda(inputs[0])
    for fn in fns:
        for w in range(s.warmup):
            fn(inputs[w % len(inputs)])
    if cuda:
        torch.cuda.synchronize()
        samples = _time_cuda(torch, fns, inputs, s)
        escapes = [_escape_check(torch, fn, inputs) for fn in fns]
    else:
        samples = _time_cpu(fns, inputs, s)
        escapes = [None] * len(fns)
    results = []
    for i, (times, escape) in enumerate(zip(samples, escapes)):
        converged = len(times) >= s.min_repeats and stats.relative_error(times) <= s.target_rel_err
        summary = stats.summarize(times, converged)
        summary["escape"] = escape
        if i > 0:  # paired with the first callable: same input, adjacent in time, so drift cancels
            summary["vs_first"] = stats.paired_log_ratio(samples[0], times)
        results.append(summary)
    return results


def _on_cuda(data) -> bool:
    if hasattr(data, "is_cuda"):
        return bool(data.is_cuda)
    if isinstance(data, (list, tuple)):
        return any(_on_cuda(x) for x in data)
    return False


def _order(r: int, n: int, batch: int | None = None) -> list[int]:
    """A B, B A, A B, ... per repeat, and the parity flips every batch too, so that neither
    version is always the first call after a synchronisation (a systematic few-% head start)."""
    idx = list(range(n))
    flip = r % 2 ^ ((r // batch) % 2 if batch else 0)
    return idx[::-1] if flip else idx


def _done(samples: list[list[float]], s: TimingSettings, started: float) -> bool:
    n = len(samples[0])
    if n >= s.max_repeats or time.perf_counter() - started > s.budget_s:
        return True
    return n >= s.min_repeats and all(stats.relative_error(t) <= s.target_rel_err for t in samples)


def _time_cuda(torch, fns, inputs, s: TimingSettings) -> list[list[float]]:
    flush = _flusher(torch)
    samples: list[list[float]] = [[] for _ in fns]
    started = time.perf_counter()
    r = 0
    while True:
        pending = []
        for _ in range(s.check_every):
            data = inputs[r % len(inputs)]
            for i in _order(r, len(fns), s.check_every):
                flush()
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                fns[i](data)
                end.record()
                pending.append((i, start, end))
            r += 1
        torch.cuda.synchronize()
        for i, start, end in pending:
            samples[i].append(start.elapsed_time(end) * 1e3)
        if _done(samples, s, started):
            return samples


def _time_cpu(fns, inputs, s: TimingSettings) -> list[list[float]]:
    samples: list[list[float]] = [[] for _ in fns]
    started = time.perf_counter()
    r = 0
    while True:
        data = inputs[r % len(inputs)]
        for i in _order(r, len(fns)):
            t0 = time.perf_counter()
            fns[i](data)
            samples[i].append((time.perf_counter() - t0) * 1e6)
        r += 1
        if _done(samples, s, started):
            return samples


def _escape_check(torch, fn, inputs, calls: int = 20) -> str | None:
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    start.record()
    for j in range(calls):
        fn(inputs[j % len(inputs)])
    end.record()
    torch.cuda.synchronize()  # device-wide: waits for every stream
    wall_us = (time.perf_counter() - t0) * 1e6
    event_us = start.elapsed_time(end) * 1e3
    if wall_us - event_us > max(ESCAPE_REL * wall_us, ESCAPE_ABS_US):
        return (f"work escapes the timed stream: {calls} calls took {wall_us:.0f} µs of device-synchronised "
                f"wall time but {event_us:.0f} µs between events on the calling stream")
    return None
