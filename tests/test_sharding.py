"""Sharding (version, shape) jobs across GPUs, with a fake device list: every job on exactly one
GPU, order kept within a GPU, balanced by cost, deterministic; --gpus parsing refuses duplicates."""

from __future__ import annotations

import pytest

from harness import sharding
from harness.errors import UserError

JOBS = [(v, s) for v in ("v0", "v1") for s in ("A", "B", "C")]


def test_round_robin_covers_every_job_once():
    shards = sharding.shard(JOBS, [0, 1, 2, 3])
    assert shards == {0: [("v0", "A"), ("v1", "B")], 1: [("v0", "B"), ("v1", "C")], 2: [("v0", "C")], 3: [("v1", "A")]}
    flat = [job for jobs in shards.values() for job in jobs]
    assert sorted(flat) == sorted(JOBS) and len(flat) == len(JOBS)


def test_fewer_jobs_than_gpus_leaves_gpus_out():
    assert sharding.shard(JOBS[:1], [0, 1, 2]) == {0: [("v0", "A")]}
    assert sharding.shard([], [0, 1]) == {}


def test_cost_balances_and_keeps_order():
    cost = {"A": 10.0, "B": 1.0, "C": 1.0}
    shards = sharding.shard(JOBS, ["cuda:0", "cuda:1"], cost=lambda job: cost[job[1]])
    loads = {g: sum(cost[s] for _, s in jobs) for g, jobs in shards.items()}
    assert loads == {"cuda:0": 12.0, "cuda:1": 12.0}  # the two long shapes on different GPUs
    for jobs in shards.values():
        assert jobs == sorted(jobs, key=JOBS.index)  # each GPU runs its jobs in the given order
    assert shards == sharding.shard(JOBS, ["cuda:0", "cuda:1"], cost=lambda job: cost[job[1]])  # deterministic


def test_single_gpu_takes_everything():
    assert sharding.shard(JOBS, [5]) == {5: JOBS}


def test_bad_gpu_lists():
    with pytest.raises(UserError, match="no GPU"):
        sharding.shard(JOBS, [])
    with pytest.raises(UserError, match="listed twice"):
        sharding.shard(JOBS, [0, 0])


def test_parse_gpus():
    assert sharding.parse_gpus("0,1", available=4) == [0, 1]
    assert sharding.parse_gpus(" 3 , 1 ", available=4) == [3, 1]
    assert sharding.parse_gpus("all", available=2) == [0, 1]
    for spec, needle in (("0,0", "listed twice"), ("4", "GPU 4 does not exist (this machine has 4)"),
                         ("a,b", "comma-separated"), ("", "comma-separated")):
        with pytest.raises(UserError) as info:
            sharding.parse_gpus(spec, available=4)
        assert needle in str(info.value)
    with pytest.raises(UserError, match="no GPU"):
        sharding.parse_gpus("all", available=0)


def test_one_model_accepts_a_machine_of_one_model_and_names_the_mix_otherwise():
    sharding.one_model({0: "NVIDIA H200", 1: "NVIDIA H200", 3: "NVIDIA H200"})
    with pytest.raises(UserError, match=r"mixes GPU models: NVIDIA H200 \(GPU 0, GPU 2\); NVIDIA H100 80GB HBM3 \(GPU 1\)"):
        sharding.one_model({0: "NVIDIA H200", 1: "NVIDIA H100 80GB HBM3", 2: "NVIDIA H200"})
