"""harness.worker's timed pass: what it does with a block the escape check flags (no GPU needed:
the timer is replaced by a list of finished blocks)."""
from __future__ import annotations

from types import SimpleNamespace

from harness import timing, worker

FLAGGED = "work escapes the timed stream: 8 calls took 1580 µs of device-synchronised wall time but 464 µs"


class _Problem:
    poisoned = 0
    seeds: list[int] = []

    @classmethod
    def generate_input(cls, seed, dist, **_params):
        cls.seeds.append(seed)
        return ()

    @classmethod
    def outputs_of(cls, data):
        return [SimpleNamespace(fill_=lambda _v: setattr(cls, "poisoned", cls.poisoned + 1))]

    @staticmethod
    def check(data, result):
        return True, ""


class _Clock:
    """A stand-in for the compiled clock's key: makes the untimed call, then hands out ``key``."""

    def __init__(self, key: int):
        self.key = key
        self.drawn = 0

    def draw_key(self, tag, untimed):
        untimed()
        self.drawn += 1
        return self.key


def _timed_pass(monkeypatch, escapes: list[str | None], method: str = "cold", refill: bool = True) -> tuple[dict, int]:
    blocks = [timing.Block([58.0], ["out"], 1580.0, 464.0, e) for e in escapes]
    calls = []

    def fake_time_block(*_args, prelude, capture, **_kwargs):
        calls.append(1)
        prelude()
        block = blocks[len(calls) - 1]
        for result in block.results:
            capture(result)
        return block

    monkeypatch.setattr(timing, "time_block", fake_time_block)
    monkeypatch.setattr(timing, "bound", lambda: SimpleNamespace(l2_status=""))
    monkeypatch.setattr(worker, "form_problem", lambda mod, data, result: None)
    monkeypatch.setattr(worker, "mask_pool_signs", lambda torch, mod, sets, key: None)
    guard = SimpleNamespace(verdict=lambda since=None: None, thread_ids=lambda: set())
    w = worker.Worker(SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: False)), _Problem, lambda data: "out",
                      guard, None, None, clock=_Clock(7))
    w.pool, w.scratch, w.item, w.pool_round = ["input"], "scratch", {"params": {"seed": 1}, "dist": "competition"}, 1
    return dict(w._timed_pass(method, refill), results=w.results, keys=w.clock.drawn, round=w.pool_round), len(calls)


def test_a_block_flagged_once_is_timed_again_on_fresh_inputs_and_the_clean_retry_counts(monkeypatch):
    _Problem.poisoned, _Problem.seeds = 0, []
    reply, blocks = _timed_pass(monkeypatch, [FLAGGED, None])
    assert blocks == 2 and reply["status"] == "PASS"
    assert reply["escape_retried"] == FLAGGED  # the first flag stays on the record
    # NOTE: the scratch set and the pool refilled (never-seen seeds) and poisoned before each block
    assert len(_Problem.seeds) == 4 and _Problem.poisoned == 4
    assert not set(_Problem.seeds) & {worker.round_seed(1, 0, slot) for slot in range(2)}
    retry = worker.retry_round(1)
    assert _Problem.seeds[2:] == [worker.round_seed(1, retry, 0), worker.round_seed(1, retry, 1)]


def test_a_warm_pass_flagged_once_is_timed_again_on_the_inputs_the_judge_expects(monkeypatch):
    """--warm's pass times the cold pass's inputs again (refill=False); its retry keeps them and draws
    no key: the parent expects no key record for it, and the judge checks its outputs against the
    cold pass's round. (A refill there drew a key the parent refused.)"""
    _Problem.seeds = []
    reply, blocks = _timed_pass(monkeypatch, [FLAGGED, None], method="warm", refill=False)
    assert blocks == 2 and reply["status"] == "PASS" and reply["escape_retried"] == FLAGGED
    assert reply["keys"] == 0 and reply["round"] == 1 and len(reply["results"]) == 1
    assert _Problem.seeds == [worker.round_seed(1, 1, 1)] * 2  # the scratch set alone, before each pass


def test_a_block_flagged_twice_fails_with_both_figures(monkeypatch):
    reply, blocks = _timed_pass(monkeypatch, [FLAGGED, FLAGGED.replace("1580", "1620")])
    assert blocks == 2 and reply["status"] == "FAIL"
    assert "1620" in reply["message"] and "1580" in reply["message"]


def test_a_clean_block_is_timed_once(monkeypatch):
    reply, blocks = _timed_pass(monkeypatch, [None])
    assert blocks == 1 and reply["status"] == "PASS" and "escape_retried" not in reply


def test_the_retried_blocks_outputs_are_judged_against_the_retry_inputs_seeds(monkeypatch):
    from harness import judge
    reply, _ = _timed_pass(monkeypatch, [FLAGGED, None])
    assert len(reply["results"]) == 1  # the flagged block's outputs were dropped
    calls = judge.expected_calls({"cmd": "block", "round": 1, "method": "cold"}, {"params": {"seed": 1}}, 1, 1, reply)
    seed = worker.round_seed(1, worker.retry_round(1), 0)
    assert [c["seed"] for c in calls] == [seed] and f"seed {seed}" in calls[0]["label"]


def test_the_untimed_call_before_the_block_sees_values_the_block_does_not_time(monkeypatch):
    """The pool is generated before the untimed call (so that call warms the host path after the
    generation), and its values are decided after it: a key the compiled clock draws only then, every
    pool set (never the scratch set) masked by it, before the first timed call."""
    events = []
    _Problem.seeds = []

    def kernel(data):
        events.append(("call", data, len(_Problem.seeds)))
        return "out"

    class Clock:
        @staticmethod
        def draw_key(tag, untimed):
            untimed()
            events.append(("key", tag))
            return 99

    monkeypatch.setattr(timing, "bound", lambda: SimpleNamespace(l2_status=""))
    monkeypatch.setattr(worker, "mask_pool_signs", lambda torch, mod, sets, key: events.append(("mask", sets, key)))
    guard = SimpleNamespace(verdict=lambda since=None: None, thread_ids=lambda: set())
    w = worker.Worker(SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: False)), _Problem, kernel, guard, None, None,
                      clock=Clock)
    w.pool, w.scratch, w.item, w.pool_round, w.tag = ["input"], "scratch", {"params": {"seed": 1}, "dist": "competition"}, 3, 12
    w._prelude("cold", refill=True)()
    assert _Problem.seeds == [worker.round_seed(1, 3, 0), worker.round_seed(1, 3, 1)]  # the pool, then the scratch set
    # NOTE: the untimed call is made by the clock, which draws the key (tagged with the block's) only after it
    assert events == [("call", "scratch", 2), ("key", 12), ("mask", ["input"], 99)]


def test_a_pass_on_the_same_pool_draws_no_key(monkeypatch):
    """The warm pass times the block's pool again (refill=False): no new values, so no key."""
    asked = []
    monkeypatch.setattr(timing, "bound", lambda: SimpleNamespace(l2_status=""))
    guard = SimpleNamespace(verdict=lambda since=None: None, thread_ids=lambda: set())
    w = worker.Worker(SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: False)), _Problem, lambda data: "out",
                      guard, None, None, clock=SimpleNamespace(draw_key=lambda tag, untimed: asked.append(1) or 5))
    w.pool, w.scratch, w.item, w.pool_round = ["input"], "scratch", {"params": {"seed": 1}, "dist": "competition"}, 3
    w._prelude("cold", refill=False)()
    assert asked == []


def test_a_call_that_empties_its_input_lists_fails_the_check():
    """group_gemm's inputs are lists: one adversary emptied them in place and returned [], and the
    check, reading the emptied lists, found '0 groups match'."""
    import torch

    from reference import problem_module
    mod = problem_module("group_gemm")
    data = mod.generate_input(m=[64, 32], n=[128, 128], k=[64, 64], g=2, seed=5, dist="competition")

    def empties(d):
        for part in d:
            if isinstance(part, list):
                part.clear()
        return []

    w = worker.Worker(torch, mod, empties, SimpleNamespace(verdict=lambda since=None: None, thread_ids=set), None, None)
    status, message = w.checked_call(data, [])
    assert status == "FAIL" and "changed the structure of its input" in message


def test_structure_of_sees_a_replaced_item_but_not_new_values():
    import torch
    t = torch.zeros(4)
    data = [t, [torch.ones(2)]]
    before = worker.structure_of(data)
    t.fill_(3.0)  # values may change only where outputs live (checked elsewhere), structure is unchanged
    assert worker.structure_of(data) == before
    data[1][0] = torch.ones(2)
    assert worker.structure_of(data) != before


def test_an_event_method_is_refused_in_a_process_that_opened_a_profiler(monkeypatch):
    # NOTE: the parent replaces such a process first (runner.SharedChild); this is the check behind it
    w = worker.Worker(SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: False)), _Problem, lambda data: "out",
                      SimpleNamespace(verdict=lambda since=None: None, thread_ids=set), None, None, clock=_Clock(7))
    monkeypatch.setattr(timing._profiler, "opened", True)
    for method in ("gpumode", "cold"):
        refused = w.block(1, method, False)
        assert refused["status"] == "FAIL" and "opened a torch.profiler session" in refused["message"]
        prepared = w.prepare({"params": {"seed": 1}, "dist": "competition"}, 1, method, 0)
        assert prepared["status"] == "FAIL" and prepared["message"].startswith("harness error:")
    monkeypatch.setattr(w, "_timed_pass", lambda method: {"status": "PASS", "message": ""})
    assert w.block(1, "kernel", False)["status"] == "PASS"  # the profiler method itself goes on


def test_the_judge_process_digests_the_outputs_only_when_the_check_asks():
    """compare's checked pool asks for the outputs' digests (harness.judge.Judge.digest); every other
    check, a timed block's included, costs no hashing."""
    import io
    import json

    asked = []
    judge = SimpleNamespace(check=lambda item, calls, results, kind, digests: asked.append(digests) or {"status": "PASS"})
    sent = []
    channel = SimpleNamespace(emit=lambda event, **fields: sent.append(event))
    check = {"cmd": "check", "item": {}, "calls": [], "results": [], "kind": "timed"}
    commands = io.StringIO("".join(json.dumps(c) + "\n" for c in (dict(check, digests=True), check, {"cmd": "exit"})))
    assert worker._judge_loop(judge, commands, channel) == 0
    assert asked == [True, False] and sent == ["ready", "reply", "reply"]
