"""harness.guard: patched timing/checking functions and leftover threads are reported."""

from __future__ import annotations

import threading
import time

import torch

import harness.stats
import harness.timing
from harness.guard import Guard


def test_clean_snapshot_has_no_changes():
    g = Guard.snapshot(("reference.gemm",))
    assert g.changes() == [] and g.verdict() is None


def test_replaced_event_method_is_tampering(monkeypatch):
    g = Guard.snapshot()
    monkeypatch.setattr(torch.cuda.Event, "elapsed_time", lambda self, end: 0.0)
    status, message = g.verdict()
    assert status == "TAMPERED" and "torch.cuda.Event.elapsed_time" in message


def test_replaced_harness_function_is_tampering(monkeypatch):
    g = Guard.snapshot()
    monkeypatch.setattr(harness.stats, "summarize", lambda *a, **k: {})
    assert "harness.stats.summarize" in g.verdict()[1]


def test_function_code_swapped_in_place_is_tampering():
    g = Guard.snapshot()
    original = harness.stats.relative_error.__code__
    try:
        harness.stats.relative_error.__code__ = (lambda samples: 0.0).__code__
        assert "harness.stats.relative_error" in g.changes()
    finally:
        harness.stats.relative_error.__code__ = original
    assert g.changes() == []


def test_time_module_patch_is_caught_and_timing_keeps_its_own_clock(monkeypatch):
    g = Guard.snapshot()
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    assert "time.perf_counter" in g.changes()
    assert harness.timing._now is not time.perf_counter  # bound at import, before any submission


def test_thread_left_running():
    g = Guard.snapshot()
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, name="leftover", daemon=True)
    t.start()
    try:
        status, message = g.verdict()
        assert status == "FAIL" and "leftover" in message
    finally:
        stop.set()
        t.join()
    assert g.verdict() is None
