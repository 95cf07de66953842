"""The GPU-test set-up's worker pinning (tests/conftest.py): under pytest-xdist on a machine with
several GPUs each worker takes one of its own; with one GPU or none nothing changes."""

from conftest import gpu_for_worker


def test_workers_take_the_machines_gpus_in_turn():
    assert [gpu_for_worker(f"gw{i}", None, 4) for i in range(5)] == ["0", "1", "2", "3", "0"]


def test_workers_take_from_the_visible_list_when_one_is_set():
    assert [gpu_for_worker(f"gw{i}", "2, 5", 8) for i in range(3)] == ["2", "5", "2"]


def test_one_gpu_or_none_or_no_worker_leaves_it_alone():
    assert gpu_for_worker("gw1", None, 1) is None
    assert gpu_for_worker("gw0", None, 0) is None
    assert gpu_for_worker("gw3", "1", 4) is None
    assert gpu_for_worker("", None, 4) is None
    assert gpu_for_worker("master", None, 4) is None
