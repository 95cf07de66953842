"""harness.ladder: a table's (version, shape, method) jobs as one list over several GPUs, with a
fake GPU list and a fake piece runner: every job timed exactly once, never two pieces at once on one
GPU, every GPU busy, a (version, method) group whole while plenty is left and spread at the end,
results back in shape order with the GPU each ran on, failures kept as rows."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from harness import config, ladder, runner, stats, submissions

SUBS = [submissions.resolve("gemm", "v0"), submissions.resolve("gemm", "peer"), submissions.resolve("gemm", "peer-fp32")]
PLANS = {method: runner.TimingPlan(method=method) for method in ("gpumode", "kernel")}
SHAPES = [config.parse_shape_option("gemm", f"m=128,n={n},k=256", i) for i, n in enumerate((128, 256, 384))]


def _jobs(*spec):
    return [ladder.Job(v, m, s) for v, m, s in spec]


def test_job_list_is_version_by_version_then_method_then_shape_event_methods_first():
    assert ladder.job_list([2, 1], ["gpumode", "cold"]) == _jobs(
        (0, "gpumode", 0), (0, "gpumode", 1), (0, "cold", 0), (0, "cold", 1), (1, "gpumode", 0), (1, "cold", 0))
    # NOTE: the profiler method after every version's event methods, however --method was ordered
    assert ladder.job_list([2, 1], ["kernel", "gpumode"]) == _jobs(
        (0, "gpumode", 0), (0, "gpumode", 1), (1, "gpumode", 0), (0, "kernel", 0), (0, "kernel", 1), (1, "kernel", 0))


def test_job_list_puts_each_problems_event_methods_before_its_profiler_method():
    assert ladder.job_list([1, 1, 1], ["gpumode", "kernel"], problems=["gemv", "gemv", "gemm"]) == _jobs(
        (0, "gpumode", 0), (1, "gpumode", 0), (0, "kernel", 0), (1, "kernel", 0), (2, "gpumode", 0), (2, "kernel", 0))


@pytest.mark.parametrize("gpus", [[None], [0, 1], [0, 1, 2, 3]])
def test_no_gpu_times_an_event_method_after_a_profiler_method(gpus):
    log, busy, lock = [], set(), threading.Lock()
    plans = [runner.TimingPlan(method=m) for m in ("kernel", "gpumode", "cold")]
    ladder.run(SUBS, lambda sub: SHAPES, plans, gpus, _fake_piece(log, busy, lock, seconds=0.01))
    assert len({(label, method, shape) for label, method, shapes, _ in log for shape in shapes}) == 27
    for gpu in gpus:
        profiled = False
        for method in [m for _, m, _, g in log if g == gpu]:
            assert not (profiled and method != "kernel"), f"GPU {gpu}: {method} after kernel"
            profiled = profiled or method == "kernel"


def test_a_free_gpu_takes_the_front_group_whole_while_plenty_is_left():
    pending = ladder.job_list([4, 4, 4, 4], ["gpumode"])
    assert ladder.claim(pending, 4) == 4  # 16 left, a share of 4: the whole group
    assert ladder.claim(pending[2:], 4) == 2  # a group's rest is still one piece


def test_the_last_jobs_spread_over_every_gpu():
    pending = ladder.job_list([4], ["gpumode"])
    assert ladder.claim(pending, 4) == 1  # 4 left, 4 GPUs: one shape each
    assert ladder.claim(pending, 2) == 2
    assert ladder.claim(ladder.job_list([3, 1], ["gpumode"]), 2) == 2  # 4 left: a share of 2 of the first group
    assert ladder.claim([], 4) == 0


def _fake_piece(log, busy, lock, seconds=0.05):
    """Times nothing: PASS results carrying the GPU, and a check that no GPU runs two pieces at once."""
    def run_piece(sub, shapes, plan, gpu):
        with lock:
            assert gpu not in busy, f"GPU {gpu} ran two pieces at once"
            busy.add(gpu)
        time.sleep(seconds)
        with lock:
            busy.discard(gpu)
            log.append((sub.label, plan.method, tuple(s.index for s in shapes), gpu))
        outcome = runner.JobOutcome([sub], {"gpu": "cpu"}, plan=plan)
        for s in shapes:
            blocks = [[10.0 + s.index, 10.5 + s.index], [10.2 + s.index, 10.1 + s.index]]
            outcome.results.append(runner.ShapeResult(s, "competition", "PASS", stats=[stats.summarize(blocks, True)],
                                                      samples=[blocks], extra={"gpu_index": gpu}, device={"gpu": "cpu"}))
        return outcome
    return run_piece


def test_a_free_gpu_starts_at_the_first_built_version_of_the_fronts_kind():
    jobs = ladder.job_list([2, 2, 2], ["gpumode", "kernel"])  # gpumode v0 v0 v1 v1 v2 v2, then kernel's
    assert ladder.first_ready(jobs, None) == 0 and ladder.first_ready([], lambda v: False) == 0
    assert ladder.first_ready(jobs, lambda v: v == 2) == 4  # v0 and v1 still building: v2's gpumode
    assert ladder.first_ready(jobs, lambda v: False) is None  # nothing built: wait
    # v0 built, but its only jobs left are kernel's while v1's and v2's gpumode wait: no profiler before them
    assert ladder.first_ready(jobs[2:], lambda v: v == 0) is None
    assert ladder.first_ready(jobs[6:], lambda v: v == 1) == 2  # among the profiler's jobs alike


def test_a_gpu_times_a_built_version_while_an_earlier_one_still_builds():
    # NOTE: session 56, two H200s: GPU 1 idled 65 s waiting for v2's build while 29 later versions were built
    log, busy, lock = [], set(), threading.Lock()
    built = threading.Event()  # v1 "builds" until v2 has been timed
    out = ladder.run(SUBS, lambda sub: SHAPES, [PLANS["gpumode"]], [0, 1], _fake_piece(log, busy, lock, seconds=0.02),
                     on_piece=lambda outcome, done, total: built.set() if outcome.submissions[0] is SUBS[2] else None,
                     ready=lambda v: v != 1 or built.is_set())
    order = [label for label, *_ in log]
    assert order.index(SUBS[2].label) < order.index(SUBS[1].label)
    assert set(out) == {(v, "gpumode") for v in range(3)}
    assert Counter((label, shape) for label, _, shapes, _ in log for shape in shapes) == Counter(
        {(sub.label, i): 1 for sub in SUBS for i in range(3)})


def test_every_job_runs_once_on_some_gpu_and_every_gpu_works():
    log, busy, lock = [], set(), threading.Lock()
    heard = []
    out = ladder.run(SUBS, lambda sub: SHAPES, list(PLANS.values()), [0, 1, 2, 3], _fake_piece(log, busy, lock, seconds=0.05),
                     on_piece=lambda outcome, done, total: heard.append((done, total)))
    timed = Counter((label, method, shape) for label, method, shapes, _ in log for shape in shapes)
    assert timed == Counter({(s.label, m, i): 1 for s in SUBS for m in ("gpumode", "kernel") for i in range(3)})
    assert {gpu for *_, gpu in log} == {0, 1, 2, 3}
    assert heard[-1] == (18, 18) and [d for d, _ in heard] == sorted(d for d, _ in heard)
    assert set(out) == {(v, m) for v in range(3) for m in ("gpumode", "kernel")}
    for (v, method), outcome in out.items():
        assert outcome.submissions == [SUBS[v]] and outcome.plan.method == method
        assert [r.shape.index for r in outcome.results] == [0, 1, 2]  # back in shape order
        ran_on = {(r.shape.index, r.extra["gpu_index"]) for r in outcome.results}
        assert ran_on == {(shape, gpu) for label, m, shapes, gpu in log if label == SUBS[v].label and m == method
                          for shape in shapes}


def test_pieces_of_one_version_on_several_gpus_are_judged_as_one():
    log, busy, lock = [], set(), threading.Lock()
    out = ladder.run(SUBS[:1], lambda sub: SHAPES, [PLANS["gpumode"]], [0, 1, 2], _fake_piece(log, busy, lock))
    assert len(log) == 3  # three shapes, three GPUs: one piece each
    outcome = out[(0, "gpumode")]
    gm = outcome.geomean["v0"]
    assert gm is not None and 10.0 < gm[0] < 13.0  # over all three shapes' samples
    assert set(outcome.extra_devices) == {0, 1, 2}


def test_one_gpu_takes_whole_groups_in_ladder_order():
    log, busy, lock = [], set(), threading.Lock()
    ladder.run(SUBS, lambda sub: SHAPES, [PLANS["gpumode"]], [None], _fake_piece(log, busy, lock, seconds=0))
    assert [(label, shapes) for label, _, shapes, _ in log] == [(s.label, (0, 1, 2)) for s in SUBS]


def test_a_piece_that_raises_is_fail_rows_and_the_others_go_on():
    def run_piece(sub, shapes, plan, gpu):
        if sub.label == "peer":
            raise RuntimeError("child pipe closed")
        return _fake_piece([], set(), threading.Lock(), seconds=0)(sub, shapes, plan, gpu)

    out = ladder.run(SUBS, lambda sub: SHAPES, [PLANS["gpumode"]], [0, 1], run_piece)
    assert all(r.status == "PASS" for v in (0, 2) for r in out[(v, "gpumode")].results)
    failed = out[(1, "gpumode")].results
    assert [r.status for r in failed] == ["FAIL"] * 3
    assert "harness error: RuntimeError: child pipe closed" in failed[0].message


def test_a_failing_recorder_stops_the_gpus_and_is_raised():
    log, busy, lock = [], set(), threading.Lock()

    def on_piece(outcome, done, total):
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        ladder.run(SUBS, lambda sub: SHAPES, [PLANS["gpumode"]], [0, 1], _fake_piece(log, busy, lock), on_piece)
    assert len(log) <= 2  # each GPU stopped after the piece it had


def test_each_gpu_holds_its_context_around_all_its_pieces_in_its_own_thread():
    entered, pieces, lock = [], [], threading.Lock()
    inside: dict = {}

    class Held:
        def __init__(self, gpu):
            self.gpu = gpu

        def __enter__(self):
            with lock:
                entered.append(("enter", self.gpu, threading.get_ident()))
            inside[self.gpu] = True

        def __exit__(self, *exc):
            inside[self.gpu] = False
            with lock:
                entered.append(("exit", self.gpu, threading.get_ident()))

    fake = _fake_piece([], set(), threading.Lock(), seconds=0.01)

    def run_piece(sub, shapes, plan, gpu):
        assert inside.get(gpu), f"GPU {gpu} timed a piece outside its context"
        with lock:
            pieces.append((gpu, threading.get_ident()))
        return fake(sub, shapes, plan, gpu)

    ladder.run(SUBS, lambda sub: SHAPES, list(PLANS.values()), [0, 1, 2], run_piece, per_gpu=Held)
    assert sorted(kind for kind, *_ in entered) == ["enter"] * 3 + ["exit"] * 3  # once per GPU, left at the end
    thread_of = {gpu: ident for kind, gpu, ident in entered if kind == "enter"}
    assert all(thread_of[gpu] == ident for _, gpu, ident in entered)  # entered and left on the GPU's thread
    assert all(thread_of[gpu] == ident for gpu, ident in pieces)  # which timed every piece of that GPU
    assert not any(inside.values())


def test_job_list_leaves_out_the_skipped_version_method_groups():
    assert ladder.job_list([2, 1], ["gpumode", "kernel"], skip={(0, "kernel"), (1, "gpumode")}) == _jobs(
        (0, "gpumode", 0), (0, "gpumode", 1), (1, "kernel", 0))
