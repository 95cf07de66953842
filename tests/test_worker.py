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


def _timed_pass(monkeypatch, escapes: list[str | None]) -> tuple[dict, int]:
    blocks = [timing.Block([58.0], ["out"], 1580.0, 464.0, e) for e in escapes]
    calls = []

    def fake_time_block(*_args, **_kwargs):
        calls.append(1)
        return blocks[len(calls) - 1]

    monkeypatch.setattr(timing, "time_block", fake_time_block)
    monkeypatch.setattr(timing, "bound", lambda: SimpleNamespace(l2_status=""))
    w = worker.Worker(None, _Problem, lambda data: "out", SimpleNamespace(verdict=lambda: None), None, None)
    w.pool, w.scratch, w.item = ["input"], "scratch", {"params": {"seed": 1}, "dist": "competition"}
    return w._timed_pass("cold"), len(calls)


def test_a_block_flagged_once_is_timed_again_on_fresh_inputs_and_the_clean_retry_counts(monkeypatch):
    _Problem.poisoned, _Problem.seeds = 0, []
    reply, blocks = _timed_pass(monkeypatch, [FLAGGED, None])
    assert blocks == 2 and reply["status"] == "PASS"
    assert reply["escape_retried"] == FLAGGED  # the first flag stays on the record
    # NOTE: the pool and the scratch set refilled (never-seen seeds) and poisoned before the retry
    assert len(_Problem.seeds) == 2 and _Problem.poisoned == 2
    assert not set(_Problem.seeds) & {worker.round_seed(1, 0, slot) for slot in range(2)}


def test_a_block_flagged_twice_fails_with_both_figures(monkeypatch):
    reply, blocks = _timed_pass(monkeypatch, [FLAGGED, FLAGGED.replace("1580", "1620")])
    assert blocks == 2 and reply["status"] == "FAIL"
    assert "1620" in reply["message"] and "1580" in reply["message"]


def test_a_clean_block_is_timed_once(monkeypatch):
    reply, blocks = _timed_pass(monkeypatch, [None])
    assert blocks == 1 and reply["status"] == "PASS" and "escape_retried" not in reply


def test_a_wrong_output_after_a_retry_names_the_retry_inputs_seed(monkeypatch):
    monkeypatch.setattr(_Problem, "check", staticmethod(lambda data, result: (False, "mismatch")))
    reply, _ = _timed_pass(monkeypatch, [FLAGGED, None])
    seed = worker.round_seed(1, worker.retry_round(0), 0)
    assert reply["status"] == "FAIL" and f"seed {seed}" in reply["message"]


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

    w = worker.Worker(torch, mod, empties, SimpleNamespace(verdict=lambda: None), None, None)
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
