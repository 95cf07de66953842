"""harness.runner: shapes sharded over several (here fake) GPUs come back complete and in order; run's
rounds and isolated compare's verdict loop on fake children (no processes)."""

from __future__ import annotations

import threading

import dataclasses

import pytest

from harness import config, runner, submissions


def _shapes(n):
    return [config.parse_shape_option("gemm", f"m=128,n={256 * (i + 1)},k=256", i) for i in range(n)]


def test_sharded_run_returns_every_item_in_request_order(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    sub = submissions.resolve("gemm", "v0")
    shapes = _shapes(3)
    seen_env = []
    real_child = runner.isolation.Child

    def child(*args, **kwargs):
        seen_env.append(kwargs.get("extra_env"))
        return real_child(*args, **kwargs)

    monkeypatch.setattr(runner.isolation, "Child", child)
    outcome = runner.run([sub], shapes, ["competition"], "test", seeds=1, gpus=[0, 1])
    assert [r.shape.key for r in outcome.results] == [s.key for s in shapes]
    assert all(r.status == "PASS" for r in outcome.results), [r.message for r in outcome.results]
    assert sorted(e["CUDA_VISIBLE_DEVICES"] for e in seen_env) == ["0", "1"]  # one child per GPU


def test_visible_device_honours_an_inherited_list(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert runner.visible_device(1) == "5"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert runner.visible_device(1) == "1"


def test_item_cost_orders_shapes_by_work():
    small, large = _shapes(1)[0], config.parse_shape_option("gemm", "m=128,n=7168,k=16384", 0)
    assert runner._item_cost(large) > runner._item_cost(small) > 0


def test_each_finished_shape_reports_a_done_line():
    sub = submissions.resolve("gemm", "v0")
    shapes = _shapes(2)
    events = []
    outcome = runner.run([sub], shapes, ["competition"], "test", seeds=1, progress=events.append)
    done = [e for e in events if e.get("event") == "done"]
    assert len(done) == len(shapes) == len(outcome.results)
    for e, shape in zip(done, shapes):
        assert e["line"].startswith(f"{shape.label} competition: PASS"), e["line"]


# ------------------------------------------------- run's rounds and compare's verdict loop, no processes
class FakeChild:
    """Stands in for isolation.Child: answers prepare, block and finish at once. ``times(generation,
    round)`` gives a block's per-call µs; ``throttled`` the rounds whose telemetry says throttled;
    ``fail_round`` a round whose block FAILs; ``outputs(generation)`` the judge's digests of the checked
    calls a prepare that asks for them gets (``isolation.Child._judged``). Every command lands in the
    shared ``log``."""

    def __init__(self, label, times, log, throttled=(), fail_round=None, outputs=None):
        self.label, self.times, self.log = label, times, log
        self.throttled, self.fail_round, self.outputs = set(throttled), fail_round, outputs
        self.generation, self.running = -1, False

    def alive(self):
        return self.running

    def start(self):
        self.running = True

    def launch(self):
        self.launched_on_main_thread = threading.current_thread() is threading.main_thread()
        self.running = True

    def await_ready(self):
        pass

    def stop(self):
        self.running = False

    def request(self, command, timeout_s):
        cmd = command["cmd"]
        self.log.append((self.label, cmd))
        if cmd == "prepare":
            self.running = True
            self.generation += 1
            if command.get("digest_outputs") and self.outputs:
                return {"status": "PASS", "outputs": self.outputs(self.generation)}
            return {"status": "PASS"}
        if cmd == "block":
            if command["round"] == self.fail_round:
                return {"status": "FAIL", "message": "mismatch at [3, 7]"}
            reasons = ["hw_slowdown"] if command["round"] in self.throttled else []
            return {"status": "PASS", "times_us": self.times(self.generation, command["round"]),
                    "telemetry": {"reasons": reasons}}
        return {"status": "PASS"}


def _item():
    shape = _shapes(1)[0]
    return shape, {"id": "custom:0:competition", "params": shape.params, "dist": "competition", "problem": "gemm"}


def _plan(**rule):
    plan = runner.TimingPlan()
    plan.rule = dataclasses.replace(plan.rule, **{"min_samples": 8, "min_time_s": 0.0, "budget_s": 100.0, **rule})
    return plan


def test_run_times_each_process_until_its_rule_stops_and_drops_throttled_rounds():
    log = []
    child = FakeChild("v0", lambda gen, rnd: [10.0 + gen] * 4, log, throttled={1, 2})
    shape, item = _item()
    plan = _plan()
    plan.run_processes = 2
    result = runner._measure_run(child, shape, "competition", item, plan, 5.0, None)
    assert result.status == "PASS", result.message
    # per process: two kept blocks of 4 calls reach min_samples with no spread; rounds 1, 2 were throttled
    assert result.extra["generations"] == [0, 0, 1, 1] and result.extra["throttle_drops"] == 2
    assert result.extra["rounds"] == 6 and [t["round"] for t in result.telemetry] == [3, 4, 5, 6]
    (st,) = result.stats
    assert st["converged"] and st["n"] == 16 and st["processes"] == 2 and st["throttled_blocks_kept"] == 0
    assert sorted(st["process_means_us"]) == [10.0, 11.0]  # the interval spans the processes
    assert [c for _, c in log].count("prepare") == 2 and log[-1] == ("v0", "finish")


def test_run_failure_is_the_results_status_without_a_label():
    child = FakeChild("v0", lambda gen, rnd: [10.0] * 4, [], fail_round=2)
    shape, item = _item()
    result = runner._measure_run(child, shape, "competition", item, _plan(), 5.0, None)
    assert (result.status, result.message, result.stats) == ("FAIL", "mismatch at [3, 7]", None)


def test_isolated_compare_decides_after_the_minimum_of_process_generations():
    log = []
    a = FakeChild("v1", lambda gen, rnd: [10.0 + 0.01 * rnd] * 4, log)
    b = FakeChild("v2", lambda gen, rnd: [5.0 + 0.01 * rnd] * 4, log)
    shape, item = _item()
    plan = _plan(budget_s=1e-9)  # two rounds a generation
    result = runner._measure_isolated([a, b], shape, "competition", item, plan, 5.0, None)
    assert result.status == "PASS", result.message
    assert result.ratio["verdict"] == "FASTER" and result.ratio["speedup"] == pytest.approx(2.0, rel=0.01)
    assert [g["first_prepared"] for g in result.ratio["by_generation"]] == ["A", "B"] and result.ratio["processes"] == 2
    prepared = [label for label, cmd in log if cmd == "prepare"]
    assert prepared == ["v1", "v2", "v2", "v1"]  # the other side is prepared first in the second generation
    assert all(st["converged"] for st in result.stats) and "decided after 2" in result.stats[0]["stop_reason"]


def test_isolated_compare_adds_generations_while_ambiguous_then_says_so():
    a = FakeChild("v1", lambda gen, rnd: [10.0] * 4, [])
    b = FakeChild("v2", lambda gen, rnd: [5.0 if gen % 2 == 0 else 20.0] * 4, [])  # 2x, then 0.5x
    shape, item = _item()
    plan = _plan(budget_s=1e-9)
    plan.max_processes = 4
    result = runner._measure_isolated([a, b], shape, "competition", item, plan, 5.0, None)
    assert result.ratio["verdict"] == "AMBIGUOUS" and result.ratio["processes"] == 4
    assert not result.stats[0]["converged"] and "still AMBIGUOUS after 4" in result.stats[0]["stop_reason"]


def test_isolated_compare_failure_names_the_side():
    a = FakeChild("v1", lambda gen, rnd: [10.0] * 4, [])
    b = FakeChild("v2", lambda gen, rnd: [10.0] * 4, [], fail_round=3)
    shape, item = _item()
    result = runner._measure_isolated([a, b], shape, "competition", item, _plan(budget_s=1e-9), 5.0, None)
    assert result.status == "FAIL" and result.message == "v2: mismatch at [3, 7]"


def test_children_started_together_are_launched_on_the_calling_thread():
    """A sandboxed child dies with the thread that forked it (PR_SET_PDEATHSIG): only the waits for
    their imports may run on helper threads."""
    log = []
    children = [FakeChild("A", lambda g, r: [1.0], log), FakeChild("B", lambda g, r: [1.0], log)]
    assert runner._start_together(children, [0, 1]) is None
    assert all(child.running and child.launched_on_main_thread for child in children)


# ------------------------------------------------------------- compare: B's outputs against A's
def _digests(sub, **by_seed):
    """The judge's digests of a prepare's checked calls as ``isolation.Child._judged`` hands them on:
    seeds 7 and 8 (the pool), then 7 again (the repeat in fresh buffers)."""
    return [{"seed": seed, "sub": sub, "digest": by_seed.get(f"s{seed}", f"bits of {seed}")} for seed in (7, 8, 7)]


def test_outputs_compared_counts_the_input_sets_whose_outputs_differ_and_a_side_that_varies():
    same = runner.outputs_compared(_digests(0), _digests(0))
    assert same == {"input_sets": 2, "differ": 0, "varies": []}
    assert runner.outputs_phrase(same, ["v1", "v2"]) == "bit for bit v1's"
    one = runner.outputs_compared(_digests(0), _digests(0, s8="other bits"))
    assert one == {"input_sets": 2, "differ": 1, "varies": []}
    assert runner.outputs_phrase(one, ["v1", "v2"]) == "differ from v1's on 1 of 2 input sets"
    # B's repeat in fresh buffers is not its own first output: a difference may be B's alone
    varies = runner.outputs_compared(_digests(0), _digests(0)[:2] + [{"seed": 7, "sub": 0, "digest": "x"}])
    assert varies == {"input_sets": 2, "differ": 1, "varies": ["B"]}
    assert runner.outputs_phrase(varies, ["v1", "v2"]).endswith(
        "(v2's own outputs change from call to call on one input)")
    assert runner.outputs_compared(_digests(0), []) is None  # nothing comparable: no claim


@pytest.mark.parametrize("asked", [True, False])
def test_compare_in_one_process_compares_the_outputs_only_when_asked(asked):
    log = []
    child = FakeChild("v1", lambda gen, rnd: [10.0] * 4, log,
                      outputs=lambda gen: _digests(0) + _digests(1, s8="other bits"))
    shape, item = _item()
    result = runner._measure_paired([(child, 0), (child, 1)], ["v1", "v2"], shape, "competition", item, _plan(), 5.0,
                                    None, compare_outputs=asked)
    assert result.status == "PASS", result.message
    line = runner.done_line(result, ["v1", "v2"])
    if asked:
        assert result.outputs == {"input_sets": 2, "differ": 1, "varies": []}
        assert line.endswith(" SAME, outputs: differ from v1's on 1 of 2 input sets"), line
    else:  # the peer's compare: no digests asked of the judge, no word on the outputs
        assert result.outputs is None and "outputs" not in line


def test_compare_in_two_processes_compares_each_sides_digests():
    a = FakeChild("v1", lambda gen, rnd: [10.0] * 4, [], outputs=lambda gen: _digests(0))
    b = FakeChild("v2", lambda gen, rnd: [5.0] * 4, [], outputs=lambda gen: _digests(0))
    shape, item = _item()
    result = runner._measure_paired([(a, 0), (b, 0)], ["v1", "v2"], shape, "competition", item, _plan(), 5.0, None,
                                    compare_outputs=True)
    assert result.outputs == {"input_sets": 2, "differ": 0, "varies": []}
    assert runner.done_line(result, ["v1", "v2"]).endswith("FASTER, outputs: bit for bit v1's")


def test_isolated_compare_compares_every_generations_outputs():
    """B's second process gives other bits on one input set: not B bit for bit A, and B's own outputs vary."""
    a = FakeChild("v1", lambda gen, rnd: [10.0] * 4, [], outputs=lambda gen: _digests(0))
    b = FakeChild("v2", lambda gen, rnd: [5.0] * 4, [], outputs=lambda gen: _digests(0, s7="other bits" if gen else "bits of 7"))
    shape, item = _item()
    result = runner._measure_isolated([a, b], shape, "competition", item, _plan(budget_s=1e-9), 5.0, None,
                                      compare_outputs=True)
    assert result.ratio["processes"] == 2
    assert result.outputs == {"input_sets": 2, "differ": 1, "varies": ["B"]}
