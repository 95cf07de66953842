"""harness.leaderboard: append/read, one header, concurrent appends, best(); a file pandas and
duckdb load with their defaults ("\n" only, shape and throughput columns, full commits); merge."""

from __future__ import annotations

import csv
import gzip
import json
import multiprocessing as mp
from pathlib import Path

import pytest
from click.testing import CliRunner

# Only light imports at the top: test_concurrent_appends spawns writers that import this module, and
# the CLI, the runner and the reference (torch) would cost each of them seconds; tests import those.
from harness import leaderboard, machine

REPO_LEADERBOARD = Path(__file__).resolve().parents[1] / "leaderboard.csv"
GROUP_SHAPE = '{"m":[80,176,128],"n":[4096,4096,4096],"k":[7168,7168,7168],"g":3}'


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


def test_best_is_the_current_codes_older_hashes_only_when_asked():
    """gemm v34's best cold rows had come from a previous hash: an edited version showed the old code's figures."""
    rows = [row(mean_us="5.0", code_hash="old", timestamp="2026-01-01T00:00:00+0000"),
            row(mean_us="9.0", code_hash="new", timestamp="2026-01-02T00:00:00+0000"),
            row(mean_us="8.0", code_hash="new", timestamp="2026-01-03T00:00:00+0000"),
            row(mean_us="1.0", code_hash="gone", version="v9"),
            row(mean_us="2.0", version="v8")]  # recorded before code hashes: kept, it cannot be told apart
    current = {("gemm", "v0"): "new"}
    assert sorted(r["mean_us"] for r in leaderboard.best(rows, method="gpumode", hashes=current)) == []  # no gpumode rows
    best = {r["version"]: r["mean_us"] for r in leaderboard.best(rows, hashes=current)}
    assert best == {"v0": "8.0", "v9": "1.0", "v8": "2.0"}  # v9's file is gone: its latest hash counts
    assert {r["mean_us"] for r in leaderboard.best(rows)} == {"8.0", "1.0", "2.0"}  # no hashes: each version's latest
    every = leaderboard.best(rows, hashes=current, every_hash=True)
    assert sorted((r.get("code_hash", ""), r["mean_us"]) for r in every) == [
        ("", "2.0"), ("gone", "1.0"), ("new", "8.0"), ("old", "5.0")]


def test_best_on_file(tmp_path):
    path = tmp_path / "b.csv"
    leaderboard.append([row(mean_us="7.25"), row(mean_us="7.5"), row(mean_us="100", status="FAIL")], path)
    best = leaderboard.best(leaderboard.read(path))
    assert len(best) == 1 and best[0]["mean_us"] == "7.25"


def test_best_keeps_timing_modes_apart():
    rows = [row(mean_us="50.0", timing_mode="cold"), row(mean_us="40.0", timing_mode="queued"),
            row(mean_us="30.0", timing_mode="graph"), row(mean_us="45.0", timing_mode="")]  # empty: an old cold row
    assert [r["mean_us"] for r in leaderboard.best(rows)] == ["45.0"]
    assert [r["mean_us"] for r in leaderboard.best(rows, method="queued")] == ["40.0"]
    assert [r["mean_us"] for r in leaderboard.best(rows, method="graph")] == ["30.0"]


# ------------------------------------------------------------------------- loadable by tools
def _load_with_tools(path: Path):
    """(pandas frame, duckdb rows and column names) of ``path``, both readers at their defaults."""
    import duckdb
    import pandas
    frame = pandas.read_csv(path)
    relation = duckdb.read_csv(str(path))
    return frame, relation.fetchall(), relation.columns


def test_repo_leaderboard_loads_with_pandas_and_duckdb():
    raw = REPO_LEADERBOARD.read_bytes()
    assert b"\r" not in raw
    with open(REPO_LEADERBOARD, newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and list(rows[0]) == list(leaderboard.COLUMNS)
    frame, records, columns = _load_with_tools(REPO_LEADERBOARD)
    assert len(frame) == len(records) == len(rows)
    assert list(frame.columns) == list(columns) == list(leaderboard.COLUMNS)
    assert list(frame["problem"]) == [r["problem"] for r in rows]
    assert list(frame["mean_us"]) == pytest.approx([float(r["mean_us"]) for r in rows])
    timed = frame[(frame["status"] == "PASS") & frame["mean_us"].notna()]
    assert len(timed) and (timed["tflops"] > 0).all() and (timed["tbps"] > 0).all()
    groups = frame[frame["problem"] == "group_gemm"]
    assert len(groups) and all(len(str(m).split(";")) == g for m, g in zip(groups["shape_m"], groups["shape_g"]))
    from reference import problem_module
    gemm = frame[frame["problem"] == "gemm"].iloc[0]
    shape = json.loads(gemm["shape"])
    assert (gemm["shape_m"], gemm["shape_k"]) == (str(shape["m"]), str(shape["k"]))
    assert gemm["tflops"] == pytest.approx(problem_module("gemm").flops(**shape) / gemm["mean_us"] / 1e6, rel=1e-3)


def test_fresh_leaderboard_loads_with_pandas_and_duckdb(tmp_path):
    path = tmp_path / "fresh.csv"
    leaderboard.append([leaderboard.backfill(row()), leaderboard.backfill(row(message='a, "quoted"\r\nline'))], path)
    leaderboard.append([leaderboard.backfill(row(problem="group_gemm", shape=GROUP_SHAPE, mean_us="20.0",
                                                 git_commit="a" * 40))], path)
    frame, records, columns = _load_with_tools(path)
    assert len(frame) == len(records) == 3 and list(columns) == list(leaderboard.COLUMNS)
    assert list(frame["version"]) == ["v0", "v0", "v0"] and frame["message"].iloc[1] == 'a, "quoted"\nline'
    assert frame["shape_m"].iloc[2] == "80;176;128" and frame["shape_g"].iloc[2] == 3
    assert frame["git_commit"].iloc[2] == "a" * 40
    assert frame["tflops"].iloc[0] == pytest.approx(2 * 128 * 256 * 256 / 10.0 / 1e6, rel=1e-3)
    by_name = dict(zip(columns, records[2]))
    assert by_name["problem"] == "group_gemm" and by_name["shape_m"] == "80;176;128" and by_name["mean_us"] == 20.0


# -------------------------------------------------------------------------------- line endings
def test_append_never_writes_carriage_returns(tmp_path):
    path = tmp_path / "board.csv"
    leaderboard.append([row(message="windows\r\nline"), row(message="old mac\rline", version="v1")], path)
    assert b"\r" not in path.read_bytes()
    assert [r["message"] for r in leaderboard.read(path)] == ["windows\nline", "old mac\nline"]


def test_header_upgrade_writes_lf_only_and_backfills(tmp_path):
    """A file from before the flush columns, its rows ended by CRLF (as a hand merge left them)."""
    path = tmp_path / "board.csv"
    old = leaderboard.COLUMNS[:leaderboard.COLUMNS.index("flush")]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=old, extrasaction="ignore", lineterminator="\r\n")
        writer.writeheader()
        writer.writerows([row(), row(version="v1", problem="group_gemm", shape=GROUP_SHAPE)])
    leaderboard.append([row(version="v2")], path)
    assert b"\r" not in path.read_bytes()
    rows = leaderboard.read(path)
    assert [r["version"] for r in rows] == ["v0", "v1", "v2"] and list(rows[0]) == list(leaderboard.COLUMNS)
    assert rows[1]["shape_k"] == "7168;7168;7168" and rows[1]["tflops"] and rows[0]["shape_n"] == "256"


def test_normalise_keeps_rows_and_order(tmp_path):
    path = tmp_path / "board.csv"
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=leaderboard.COLUMNS, extrasaction="ignore", lineterminator="\r\n")
        writer.writeheader()
        writer.writerows([row(version=f"v{i}", mean_us=str(10 + i), tflops="9.999" if i == 2 else "")
                          for i in range(4)])
    before = leaderboard.read(path)
    assert leaderboard.normalise(path) == 4
    after = leaderboard.read(path)
    assert b"\r" not in path.read_bytes()
    assert all(all(a[k] == b[k] for k in leaderboard.COLUMNS if b[k]) for a, b in zip(after, before))
    assert [r["version"] for r in after] == ["v0", "v1", "v2", "v3"]
    assert after[2]["tflops"] == "9.999"  # recorded cells are kept, only empty ones derived
    assert after[0]["tflops"] and after[0]["shape_l"] == "1"
    text = path.read_bytes()
    leaderboard.normalise(path)
    assert path.read_bytes() == text  # idempotent
    assert leaderboard.normalise(tmp_path / "absent.csv") == 0 and not (tmp_path / "absent.csv").exists()


# ---------------------------------------------------------------------------- derived columns
def test_shape_columns_and_throughput():
    from reference import problem_module
    assert leaderboard.shape_columns({"m": 128, "k": 256, "l": 2, "seed": 1}) == {
        "shape_m": "128", "shape_n": "", "shape_k": "256", "shape_l": "2", "shape_g": ""}
    assert leaderboard.shape_columns(json.loads(GROUP_SHAPE))["shape_n"] == "4096;4096;4096"
    params = json.loads(GROUP_SHAPE)
    mod = problem_module("group_gemm")
    got = leaderboard.throughput("group_gemm", {**params, "seed": 5}, 25.0)
    assert float(got["tflops"]) == pytest.approx(mod.flops(**params) / 25e-6 / 1e12, rel=1e-3)
    assert float(got["tbps"]) == pytest.approx(mod.bytes_moved(**params) / 25e-6 / 1e12, rel=1e-3)
    assert leaderboard.throughput("group_gemm", params, None) == {"tflops": "", "tbps": ""}
    assert leaderboard.throughput("nope", params, 1.0) == {"tflops": "", "tbps": ""}
    assert leaderboard.derived_columns(row(status="FAIL"))["tflops"] == ""  # a failed row has no throughput
    assert leaderboard.derived_columns(row(shape="not json")) == dict.fromkeys(leaderboard.DERIVED_COLUMNS, "")


def test_full_commit_expands_an_abbreviation_the_repo_knows(monkeypatch):
    head = machine._run(["git", "rev-parse", "--verify", "--quiet", "HEAD"])
    if len(head) != 40:
        pytest.skip("no .git here")
    assert machine.full_commit(head[:7]) == head and machine.full_commit(head) == head
    assert machine.full_commit("0000000") == "0000000"  # unknown: kept as given
    assert machine.full_commit("HEAD") == "HEAD"  # a name is not resolved against a possibly stale .git
    monkeypatch.setenv("NVFP4_GIT_COMMIT", head[:9])
    monkeypatch.setenv("NVFP4_GIT_DIRTY", "true")
    assert machine.git_state() == {"git_commit": head, "git_dirty": "true"}
    monkeypatch.delenv("NVFP4_GIT_COMMIT")
    assert machine.git_state()["git_commit"] == head


def test_outcome_rows_carry_shape_columns_and_throughput(monkeypatch):
    from harness import config, runner, submissions
    monkeypatch.setattr(machine, "git_state", lambda: {"git_commit": "b" * 40, "git_dirty": "false"})
    sub = submissions.resolve("group_gemm", "v0")
    params = {**json.loads(GROUP_SHAPE), "seed": 1111}
    shape = config.Shape("group_gemm", "custom", 0, params)
    stat = {"mean_us": 25.0, "median_us": 24.0, "std_us": 1.0, "ci95_us": 0.5, "best_us": 23.0, "ci95_lo_us": 24.5,
            "ci95_hi_us": 25.5, "iqr_us": 1.0, "n": 30, "converged": True}
    results = [runner.ShapeResult(shape, "competition", "PASS", stats=[stat], samples=[[25.0]]),
               runner.ShapeResult(shape, "general", "FAIL", message="mismatch")]
    rows, sidecars = leaderboard.outcome_rows(runner.JobOutcome([sub], {"gpu": "cpu"}, results))
    timed, failed = rows
    assert timed["git_commit"] == "b" * 40 and timed["shape"] == shape.key
    assert (timed["shape_m"], timed["shape_g"], timed["shape_l"]) == ("80;176;128", "3", "")
    assert timed["tflops"] == leaderboard.throughput("group_gemm", params, 25.0)["tflops"] != ""
    assert failed["shape_k"] == "7168;7168;7168" and "tflops" not in failed


# ----------------------------------------------------------------------------------------- merge
def _invoke(*args):
    from harness import cli
    return CliRunner().invoke(cli.main, [str(a) for a in args], env={"COLUMNS": "200"})


def _write_board(path: Path, columns, rows, line_end="\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore", lineterminator=line_end)
        writer.writeheader()
        writer.writerows(rows)


def test_merge_skips_rows_present_upgrades_an_older_header_and_copies_sidecars(isolated_env, tmp_path):
    target = isolated_env["leaderboard"]
    leaderboard.append([row(version="v0")])  # from before the sidecars: no run_id
    leaderboard.append([row(version="v1")], sidecars=[{"mine": True}])
    (mine,) = [r["run_id"] for r in leaderboard.read() if r["run_id"]]

    # Another machine's file, written before the flush columns, CRLF-ended as a hand copy left it.
    other = tmp_path / "device" / "leaderboard.csv"
    older = leaderboard.COLUMNS[:leaderboard.COLUMNS.index("flush")]
    _write_board(other, older, [
        row(version="v0"),  # the same row without a run_id: same timestamp, problem, version, shape, dist, gpu
        row(version="v1", run_id=mine, mean_us="1.0"),  # the same run
        row(version="v2", run_id="gemm-v2-0123456789ab", mean_us="8.0"),
        row(version="v3", timestamp="2026-02-02T00:00:00+0000"),
        row(version="v2", run_id="gemm-v2-0123456789ab", mean_us="8.0"),  # twice in the sources
    ], line_end="\r\n")
    runs = leaderboard.sidecar_dir(other)
    runs.mkdir()
    with gzip.open(runs / "gemm-v2-0123456789ab.json.gz", "wt") as f:
        json.dump({"theirs": True}, f)
    with gzip.open(runs / f"{mine}.json.gz", "wt") as f:
        json.dump({"theirs": True}, f)  # ours already has it: never overwritten

    r = _invoke("leaderboard", "merge", other)
    assert r.exit_code == 0, r.output
    assert "2 rows added, 3 already present and skipped, 1 sidecars copied" in r.output
    rows = leaderboard.read()
    assert [r["version"] for r in rows] == ["v0", "v1", "v2", "v3"]
    assert b"\r" not in target.read_bytes()
    assert rows[1]["mean_us"] == "10.0" and leaderboard.read_sidecar(mine) == {"mine": True}
    assert leaderboard.read_sidecar("gemm-v2-0123456789ab") == {"theirs": True}
    assert rows[2]["shape_n"] == "256" and rows[2]["tflops"] and rows[2]["flush"] == ""  # backfilled, padded

    r = _invoke("leaderboard", "merge", other, other)
    assert r.exit_code == 0 and "0 rows added, 10 already present and skipped" in r.output, r.output
    assert len(leaderboard.read()) == 4
    r = _invoke("leaderboard", "gemm", "--method", "cold")  # the listing is still the default
    assert r.exit_code == 0 and "v2" in r.output and "v3" in r.output, r.output


def test_merge_refuses_bad_input_and_writes_nothing(isolated_env, tmp_path):
    target = isolated_env["leaderboard"]
    leaderboard.append([row()])
    before = target.read_bytes()
    good = tmp_path / "good.csv"
    _write_board(good, leaderboard.COLUMNS, [row(version="v9")])
    unknown = tmp_path / "unknown.csv"
    _write_board(unknown, (*leaderboard.COLUMNS, "surprise"), [row(surprise="x")])
    short = tmp_path / "short.csv"
    short.write_text(",".join(leaderboard.IDENTITY_COLUMNS) + "\n2026,gemm,v1\n")
    hostile = tmp_path / "hostile.csv"
    _write_board(hostile, leaderboard.COLUMNS, [row(run_id="../../escape")])
    for bad, needle in ((tmp_path / "missing.csv", "no such leaderboard file"), (unknown, "unknown leaderboard columns surprise"),
                        (short, "line 2 has 3 cells"), (hostile, "is not a file name"), (tmp_path, "not a file")):
        r = _invoke("leaderboard", "merge", good, bad)  # the good file first: still nothing written
        assert r.exit_code == 2, r.output
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], r.stderr
        assert "Traceback" not in r.output
        assert target.read_bytes() == before


def test_merge_refuses_a_target_of_unknown_columns(isolated_env, tmp_path):
    target = isolated_env["leaderboard"]
    target.write_text("when,what\n1,2\n")
    good = tmp_path / "good.csv"
    _write_board(good, leaderboard.COLUMNS, [row()])
    r = _invoke("leaderboard", "merge", good)
    assert r.exit_code == 2 and "unknown leaderboard columns" in r.stderr and target.read_text() == "when,what\n1,2\n"


def test_leaderboard_help_lists_show_and_merge():
    r = _invoke("leaderboard")  # no subcommand, no problem: the listing, of an empty leaderboard
    assert r.exit_code == 0 and "no recorded gpumode results" in r.output, r.output
    r = _invoke("leaderboard", "--help")
    assert r.exit_code == 0 and "show" in r.output and "merge" in r.output
    r = _invoke("leaderboard", "merge", "--help")
    assert r.exit_code == 0 and "FILE" in r.output.upper()


def test_the_labs_own_sidecars_go_to_the_build_cache_and_old_ones_are_read_from_the_archive(isolated_env, tmp_path, monkeypatch):
    import gzip
    import io
    import json
    import tarfile
    lab = tmp_path / "lab"
    lab.mkdir()
    monkeypatch.setattr(leaderboard.paths, "REPO_ROOT", lab)
    board = lab / "leaderboard.csv"
    assert leaderboard.sidecar_dir(board) == isolated_env["build_dir"] / "runs"
    assert leaderboard.sidecar_dir(tmp_path / "device.csv") == tmp_path / "device_runs"  # any other file: beside it
    leaderboard.append([row(version="v1")], path=board, sidecars=[{"new": True}])
    new_id = next(csv.DictReader(open(board)))["run_id"]
    assert (isolated_env["build_dir"] / "runs" / f"{new_id}.json.gz").is_file()
    assert leaderboard.read_sidecar(new_id, board) == {"new": True}
    payload = gzip.compress(json.dumps({"old": True}).encode())
    with tarfile.open(lab / leaderboard.SIDECAR_ARCHIVE, "w") as tar:
        info = tarfile.TarInfo("gemm-v0-000000000000.json.gz")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    assert leaderboard.read_sidecar("gemm-v0-000000000000", board) == {"old": True}
    with pytest.raises(FileNotFoundError, match="no sidecar gemm-v9"):
        leaderboard.read_sidecar("gemm-v9-000000000000", board)


def test_recorded_already_asks_a_passing_row_of_this_code_method_flush_and_gpu_on_every_shape():
    base = {"problem": "gemm", "version": "v3", "code_hash": "abc", "timing_mode": "kernel", "flush": "dirty",
            "gpu": "NVIDIA H200", "dist": "competition", "status": "PASS", "mean_us": "10"}
    rows = [dict(base, shape="s1"), dict(base, shape="s2")]
    ask = dict(problem="gemm", version="v3", code_hash="abc", method="kernel", flush="dirty", gpu="NVIDIA H200",
               dist="competition")
    assert leaderboard.recorded_already(rows, shapes=["s1", "s2"], **ask)
    assert not leaderboard.recorded_already(rows, shapes=["s1", "s2", "s3"], **ask)  # a shape not yet timed
    assert not leaderboard.recorded_already(rows, shapes=[], **ask)
    for field, other in (("code_hash", "def"), ("method", "gpumode"), ("flush", "clean"), ("gpu", "NVIDIA H100"),
                         ("version", "v4")):
        assert not leaderboard.recorded_already(rows, shapes=["s1"], **dict(ask, **{field: other})), field
    failed = [dict(base, shape="s1", status="FAIL", mean_us=""), dict(base, shape="s2")]
    assert not leaderboard.recorded_already(failed, shapes=["s1", "s2"], **ask)  # a failure is timed again
    general = [dict(base, shape="s1", dist="general")]
    assert not leaderboard.recorded_already(general, shapes=["s1"], **ask)


def test_recorded_already_does_not_count_a_row_without_code_hash():
    """A row from before the code_hash column cannot be told apart from an edited version's: table
    --missing times the version again rather than trust it (``of_code`` counts it, for reading)."""
    row = {"problem": "gemm", "version": "v3", "code_hash": "", "timing_mode": "kernel", "flush": "dirty",
           "gpu": "NVIDIA H200", "dist": "competition", "status": "PASS", "mean_us": "10", "shape": "s1"}
    assert leaderboard.of_code(row, "abc")
    assert not leaderboard.recorded_already([row], "gemm", "v3", "abc", "kernel", "dirty", "NVIDIA H200", ["s1"],
                                            "competition")
    assert leaderboard.recorded_already([dict(row, code_hash="abc")], "gemm", "v3", "abc", "kernel", "dirty",
                                        "NVIDIA H200", ["s1"], "competition")


def _stamped(method: str, at: str, **fields) -> dict:
    return {"problem": "group_gemm", "version": "v53", "code_hash": "abc", "timing_mode": method, "flush": "dirty",
            "gpu": "NVIDIA H200", "gpu_uuid": "GPU-1", "git_commit": "c1", "dist": "competition", "status": "PASS",
            "mean_us": "18", "shape": "D", "timestamp": f"2026-11-29T{at}+0000", **fields}


def test_an_event_method_row_after_a_kernel_row_of_its_gpu_and_commit_before_the_fix_is_timed_again():
    # NOTE: a process that opened a profiler slowed the event methods timed after it (up to +5 µs a call,
    # H200, session 52); a row does not name its process, so the widest reading is taken
    before = _stamped("gpumode", "07:00:00")
    kernel = _stamped("kernel", "07:05:00")
    after = _stamped("gpumode", "07:10:00")
    other_gpu = _stamped("gpumode", "07:10:00", gpu_uuid="GPU-2")
    other_commit = _stamped("gpumode", "07:10:00", git_commit="c2")
    fixed = _stamped("gpumode", "09:00:00")  # recorded after PROFILER_ORDER_FIXED: the ladder's order held
    rows = [before, kernel, after, other_gpu, other_commit, fixed]
    assert [id(r) for r in leaderboard.timed_after_profiler(rows)] == [id(after)]
    ask = dict(problem="group_gemm", version="v53", code_hash="abc", method="gpumode", flush="dirty",
               gpu="NVIDIA H200", shapes=["D"], dist="competition")
    assert not leaderboard.recorded_already([kernel, after], **ask)  # table --missing times it again
    assert leaderboard.recorded_already([kernel, after, other_gpu], **ask)
    assert leaderboard.recorded_already([kernel], **dict(ask, method="kernel"))  # the kernel rows themselves stand


def test_a_suspect_best_row_is_named_for_retiming_only_while_no_clean_row_stands_for_its_shape():
    # NOTE: the profiler only adds time: a suspect row faster than a clean re-timing of its shape is not
    # named (nvfp4 leaderboard's note and table --missing then agree: nothing to time again)
    kernel = _stamped("kernel", "07:05:00")
    suspect = _stamped("gpumode", "07:10:00", mean_us="17")
    assert leaderboard.to_retime([kernel, suspect], [suspect]) == [("group_gemm", "v53")]
    clean = _stamped("gpumode", "10:00:00", git_commit="c9", mean_us="18")
    assert leaderboard.to_retime([kernel, suspect, clean], [suspect]) == []
    other_shape = dict(clean, shape="C")
    assert leaderboard.to_retime([kernel, suspect, other_shape], [suspect]) == [("group_gemm", "v53")]
    failed = dict(clean, status="FAIL")
    assert leaderboard.to_retime([kernel, suspect, failed], [suspect]) == [("group_gemm", "v53")]
