"""harness.guard: patched timing/checking functions and leftover threads are reported."""

from __future__ import annotations

import sys
import threading
import time

import pytest
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
        assert status == "TAMPERED" and "leftover" in message
    finally:
        stop.set()
        t.join()
    assert g.verdict() is None


def test_a_native_thread_of_the_runtime_is_not_a_tampering():
    """A thread with no Python state (CUDA's, CUPTI's, OpenMP's pool: started lazily inside honest
    calls) is not counted; one that runs Python is."""
    import ctypes
    import ctypes.util
    g = Guard.snapshot()
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    pthread = ctypes.CDLL(ctypes.util.find_library("pthread") or "libc.so.6")
    libc.pause.restype = ctypes.c_int
    # a native thread running libc's pause(): never enters Python
    start = ctypes.cast(libc.pause, ctypes.c_void_p)
    handle = ctypes.c_ulong()
    assert pthread.pthread_create(ctypes.byref(handle), None, start, None) == 0
    try:
        assert g.verdict() is None
    finally:
        pthread.pthread_cancel(handle)
        pthread.pthread_join(handle, None)


def test_a_thread_python_does_not_list_is_seen_and_one_running_before_is_not():
    """``_thread`` threads are not in threading.enumerate(); the interpreter's frames list them."""
    import _thread
    g = Guard.snapshot()
    stop = threading.Event()
    running = threading.Event()
    _thread.start_new_thread(lambda: (running.set(), stop.wait()), ())
    running.wait()
    try:
        status, message = g.verdict()
        assert status == "TAMPERED" and "started with _thread" in message
        assert g.verdict(since=g.thread_ids()) is None  # already running when the call began
    finally:
        stop.set()
    for _ in range(100):
        if g.verdict() is None:
            break
        time.sleep(0.01)
    assert g.verdict() is None


@pytest.mark.parametrize("install,remove,name", [
    (lambda: sys.setprofile(lambda *a: None), lambda: sys.setprofile(None), "sys.setprofile"),
    (lambda: threading.setprofile(lambda *a: None), lambda: threading.setprofile(None), "threading.setprofile"),
])
def test_an_interpreter_hook_set_after_the_snapshot_is_tampering(install, remove, name):
    g = Guard.snapshot()
    install()
    try:
        status, message = g.verdict()
    finally:
        remove()
    assert status == "TAMPERED" and name in message
    assert g.verdict() is None


def test_a_replaced_module_level_name_of_timing_is_tampering(monkeypatch):
    import harness.timing as timing
    g = Guard.snapshot()
    monkeypatch.setattr(timing, "_now", lambda: 0.0)
    monkeypatch.setattr(timing, "ESCAPE_REL", 10.0)
    assert sorted(g.changes()) == ["harness.timing.ESCAPE_REL", "harness.timing._now"]
