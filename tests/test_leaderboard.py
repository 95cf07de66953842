"""harness.leaderboard: append/read, one header, concurrent appends, best()."""

from __future__ import annotations

import csv
import multiprocessing as mp

from harness import leaderboard


def row(**kw):
    base = {"timestamp": "2026-01-01T00:00:00+0000", "problem": "gemm", "version": "v0",
            "file": "submissions/gemm/submission_v0.py", "shape": '{"m":128,"n":256,"k":256,"l":1}',
            "dist": "competition", "status": "PASS", "mean_us": "10.0", "gpu": "cpu", "message": ""}
    base.update(kw)
    return base


def test_append_and_read_back(isolated_env):
    path = isolated_env["leaderboard"]
    assert leaderboard.read() == []
    out = leaderboard.append([row(), row(version="v1", mean_us="5.5", message='has, "quotes"\nand newline')])
    assert out == path
    rows = leaderboard.read()
    assert len(rows) == 2
    assert list(rows[0].keys()) == list(leaderboard.COLUMNS)
    assert rows[1]["version"] == "v1" and rows[1]["mean_us"] == "5.5"
    assert rows[1]["message"] == 'has, "quotes"\nand newline'
    assert rows[0]["n"] == ""  # missing columns are empty
    leaderboard.append([row(version="v2", extra_column="ignored", mean_us=None)])
    rows = leaderboard.read(path)
    assert [r["version"] for r in rows] == ["v0", "v1", "v2"] and rows[2]["mean_us"] == ""


def test_header_written_once(tmp_path):
    path = tmp_path / "sub" / "board.csv"
    for i in range(3):
        leaderboard.append([row(version=f"v{i}")], path)
    lines = path.read_text().splitlines()
    assert lines[0] == ",".join(leaderboard.COLUMNS)
    assert sum(1 for line in lines if line.startswith("timestamp,")) == 1
    assert len(lines) == 4
    leaderboard.append([], path)  # nothing to add: no second header
    assert len(path.read_text().splitlines()) == 4


def _writer(path, proc_id, n_rows):
    for i in range(n_rows):
        # long rows so one write is many buffer-fulls: interleaving would corrupt them
        leaderboard.append([row(version=f"p{proc_id}", shape_index=i, message=f"{proc_id}-{i}-" + "x" * 5000)], path)


def test_concurrent_appends(tmp_path):
    path = tmp_path / "board.csv"
    n_procs, n_rows = 4, 50
    ctx = mp.get_context("spawn")  # fork from a process with torch threads may deadlock
    procs = [ctx.Process(target=_writer, args=(path, p, n_rows)) for p in range(n_procs)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with open(path, newline="") as f:
        records = list(csv.reader(f))
    assert records[0] == list(leaderboard.COLUMNS)
    assert len(records) == 1 + n_procs * n_rows
    assert all(len(r) == len(leaderboard.COLUMNS) for r in records)
    rows = leaderboard.read(path)
    seen = {(r["version"], int(r["shape_index"])) for r in rows}
    assert seen == {(f"p{p}", i) for p in range(n_procs) for i in range(n_rows)}
    for r in rows:
        pid, i = r["version"][1:], r["shape_index"]
        assert r["message"] == f"{pid}-{i}-" + "x" * 5000
    for p in range(n_procs):  # each writer's rows stay in its order
        mine = [int(r["shape_index"]) for r in rows if r["version"] == f"p{p}"]
        assert mine == list(range(n_rows))


def test_best_picks_fastest_pass():
    rows = [
        row(mean_us="12.0"),
        row(mean_us="9.0", status="FAIL"),  # faster but failed
        row(mean_us="10.0"),
        row(mean_us="", status="PASS"),  # no timing
        row(mean_us="11.0", gpu="NVIDIA H200"),  # another GPU: its own entry
        row(mean_us="8.0", problem="gemv", shape='{"m":128,"k":256,"l":1}'),
        row(mean_us="3.0", dist="general"),
        row(mean_us="2.0", version="v1"),
        row(mean_us="1.0", status="TIMEOUT"),
    ]
    best = leaderboard.best(rows)
    key = {(r["problem"], r["version"], r["dist"], r["gpu"]): float(r["mean_us"]) for r in best}
    assert key == {("gemm", "v0", "competition", "cpu"): 10.0, ("gemm", "v0", "competition", "NVIDIA H200"): 11.0,
                   ("gemv", "v0", "competition", "cpu"): 8.0, ("gemm", "v0", "general", "cpu"): 3.0,
                   ("gemm", "v1", "competition", "cpu"): 2.0}
    assert {r["problem"] for r in leaderboard.best(rows, "gemv")} == {"gemv"}
    assert leaderboard.best([]) == []


def test_best_on_file(tmp_path):
    path = tmp_path / "b.csv"
    leaderboard.append([row(mean_us="7.25"), row(mean_us="7.5"), row(mean_us="100", status="FAIL")], path)
    best = leaderboard.best(leaderboard.read(path))
    assert len(best) == 1 and best[0]["mean_us"] == "7.25"


def test_best_keeps_timing_modes_apart():
    rows = [row(mean_us="50.0", timing_mode="cold"), row(mean_us="40.0", timing_mode="queued"),
            row(mean_us="30.0", timing_mode="graph"), row(mean_us="45.0", timing_mode="")]  # empty: an old cold row
    assert [r["mean_us"] for r in leaderboard.best(rows)] == ["45.0"]
    assert [r["mean_us"] for r in leaderboard.best(rows, mode="queued")] == ["40.0"]
    assert [r["mean_us"] for r in leaderboard.best(rows, mode="graph")] == ["30.0"]
