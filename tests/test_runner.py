"""harness.runner: shapes sharded over several (here fake) GPUs come back complete and in order."""

from __future__ import annotations

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
