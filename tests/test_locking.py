"""harness.locking: every shared file keeps every writer's change. ceilings.json kept 105 of 800
entries from 4 writers x 200 stores before it went through the one locking helper (issue 50); the
leaderboard's rows and the build folder's holder go through the same helper."""

from __future__ import annotations

import multiprocessing

from harness import build_cache, ceilings, leaderboard, locking

WRITERS, STORES = 4, 200


def _store_read_floors(writer: int) -> None:
    for i in range(STORES):
        ceilings.store_read_floor("NVIDIA H200", f"read3|dirty|{writer}-{i}", {"us": float(i)})


def _append_rows(args) -> None:
    path, writer = args
    for i in range(25):
        leaderboard.append([{"problem": "gemv", "version": f"v{writer}", "shape": str(i), "status": "PASS"}], path,
                           sidecars=[{"writer": writer}])


def _in_processes(fn, args) -> None:
    ctx = multiprocessing.get_context("fork")  # NOTE: fork: the children inherit the test's NVFP4_BUILD_DIR
    procs = [ctx.Process(target=fn, args=(a,)) for a in args]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0


def test_four_writers_to_the_ceilings_file_keep_every_entry():
    _in_processes(_store_read_floors, range(WRITERS))
    floors = ceilings.cached("NVIDIA H200")["read_floors"]
    assert len(floors) == WRITERS * STORES
    # a measured ceiling stored afterwards keeps the read floors beside it
    ceilings.store("NVIDIA H200", {"bf16_tflops": 1.0, "copy_tbps": 1.0, "source": "measured"})
    assert len(ceilings.cached("NVIDIA H200")["read_floors"]) == WRITERS * STORES
    assert not list(build_cache.ceilings_file().parent.glob("*.tmp"))  # each writer's temporary file renamed away


def test_four_writers_to_the_leaderboard_keep_every_row_and_sidecar(tmp_path):
    path = tmp_path / "board.csv"
    _in_processes(_append_rows, [(path, w) for w in range(WRITERS)])
    rows = leaderboard.read(path)
    assert len(rows) == WRITERS * 25 and len({r["run_id"] for r in rows}) == WRITERS * 25
    assert len(list(leaderboard.sidecar_dir(path).glob("*.json.gz"))) == WRITERS * 25


def test_update_json_starts_afresh_from_a_damaged_file(tmp_path):
    path = tmp_path / "cache.json"
    path.write_text("{not json")
    assert locking.update_json(path, lambda data: data.update(a=1)) == {"a": 1}
    assert locking.read_json(path) == {"a": 1}


def _hold(args) -> None:
    path, held, release = args
    with locking.open_locked(path):
        held.set()
        release.wait(10)


def test_a_lock_asked_without_waiting_runs_the_block_at_once_with_none_while_another_holds_it(tmp_path):
    """fast_build's PCH: a build never waits for another process's precompile."""
    path = tmp_path / "x.lock"
    ctx = multiprocessing.get_context("spawn")
    held, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold, args=((path, held, release),))
    holder.start()
    try:
        assert held.wait(20)
        with locking.open_locked(path, wait=False) as f:
            assert f is None
    finally:
        release.set()
        holder.join(20)
    with locking.open_locked(path, wait=False) as f:
        assert f is not None
