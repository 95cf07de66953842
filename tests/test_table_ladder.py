"""table as one job list (issue 49) on the CPU, with a fake GPU machine (capability, device names,
--gpus) and fake builds and timings: every version built first, a build failure a row with its
error (the others still timed), every (version, shape, method) job timed once over the GPUs, every
row recorded with the GPU it ran on, and GPUs of two models refused."""

from __future__ import annotations

import json
import threading

import torch
from click.testing import CliRunner

from harness import build, cli, compile_only, leaderboard, runner, stats
from harness.cli import measure

NAMES = {0: "NVIDIA H200", 1: "NVIDIA H200", 2: "NVIDIA H200", 3: "NVIDIA H200"}


def invoke(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args], env={"COLUMNS": "200"})


def _fake_machine(monkeypatch, names=NAMES, broken=("v2",)):
    """A 4-GPU Hopper host: builds fail for ``broken``, every timing PASSes in ~100 µs on its GPU."""
    calls = {"built": [], "timed": [], "shared": []}
    lock = threading.Lock()
    monkeypatch.setattr(runner, "local_capability", lambda: (9, 0))
    monkeypatch.setattr(measure, "gpu_indices", lambda spec: [int(g) for g in spec.split(",")] if spec else None)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda g=0: names[g])

    def fake_build(subs, mode, **kwargs):
        calls["built"].append((mode, [s.label for s in subs]))
        results = []
        for sub in subs:
            ok = sub.label not in broken
            result = compile_only.CompileResult(sub.label, compile_only.OK if ok else compile_only.FAIL,
                                                "" if ok else "importing exited with code 1:\nerror: identifier \"wgmma\" is undefined",
                                                log="/tmp/build-v2.log")
            kwargs["on_done"](sub, result)
            results.append(result)
        return results

    def fake_run(subs, shapes, dists, mode, plan=None, gpus=None, shared=None, **_):
        gpu = gpus[0]
        device = {"gpu": names[gpu], "torch": torch.__version__, "telemetry": {"uuid": f"GPU-{gpu}"}}
        with lock:
            calls["timed"] += [(subs[0].label, plan.method, s.index, gpu) for s in shapes]
            calls["shared"].append((subs[0].label, gpu, shared))
        outcome = runner.JobOutcome(list(subs), device, plan=plan)
        for s in shapes:
            blocks = [[100.0, 100.4], [100.2, 100.1]]
            outcome.results.append(runner.ShapeResult(s, dists[0], "PASS", stats=[stats.summarize(blocks, True)],
                                                      samples=[blocks], extra={"gpu_index": gpu}, device=device))
        return outcome

    monkeypatch.setattr(build, "build", fake_build)
    monkeypatch.setattr(runner, "run", fake_run)
    return calls


def test_a_ladder_over_four_gpus_builds_first_times_every_job_once_and_records_every_row(monkeypatch, isolated_env):
    calls = _fake_machine(monkeypatch)
    r = invoke("table", "gemm", "--versions", "v0,v2,v3", "--gpus", "0,1,2,3", "--method", "gpumode",
               "--method", "kernel", "--record")
    assert r.exit_code == 1, r.output  # v2's shapes FAIL: it does not build
    assert calls["built"] == [("full", ["v2", "v3"])]  # v0 is torch only
    timed = sorted(calls["timed"])
    assert sorted((v, m, s) for v, m, s, _ in timed) == sorted(
        (v, m, s) for v in ("v0", "v3") for m in ("gpumode", "kernel") for s in range(3))  # each once, v2 never
    # NOTE: v2's pieces are jobs too (its build ended while the others were timed): a GPU may take only them
    assert len({gpu for *_, gpu in timed}) >= 2 and {gpu for *_, gpu in timed} <= {0, 1, 2, 3}
    assert "v2 every shape: FAIL: does not build: importing exited with code 1:" in " ".join(r.stdout.split())
    assert "v2 does not build" in r.stderr and "2 of 3 built" not in r.stderr  # two builds planned: v2, v3
    assert "1 of 2 built, 1 failed: gemm v2" in r.stderr
    rows = leaderboard.read()
    assert len(rows) == 18  # 3 versions x 3 shapes x 2 methods
    timed_rows = [row for row in rows if row["version"] != "v2"]
    assert all(row["status"] == "PASS" and row["gpu"] == "NVIDIA H200" for row in timed_rows)
    by_job = {(row["version"], row["timing_mode"], int(row["shape_index"])): row["gpu_uuid"] for row in timed_rows}
    assert by_job == {(v, m, s): f"GPU-{g}" for v, m, s, g in timed}  # each row names the GPU it ran on
    failed = [row for row in rows if row["version"] == "v2"]
    assert len(failed) == 6 and all(row["status"] == "FAIL" and "does not build" in row["message"] for row in failed)


def test_machine_output_names_each_rows_method_and_gpu(monkeypatch, isolated_env):
    calls = _fake_machine(monkeypatch, broken=())
    r = invoke("table", "gemm", "--versions", "v3", "--gpus", "0,2", "--method", "gpumode", "--method", "kernel",
               "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["methods"] == ["gpumode", "kernel"] and len(doc["rows"]) == 6
    assert {(row["method"], row["gpu_index"]) for row in doc["rows"]} == {(m, g) for _, m, _, g in calls["timed"]}


def test_gpus_of_two_models_are_refused_before_anything_runs(monkeypatch):
    calls = _fake_machine(monkeypatch, names={0: "NVIDIA H200", 1: "NVIDIA H100 80GB HBM3"})
    r = invoke("table", "gemm", "--versions", "v3", "--gpus", "0,1")
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.stderr.strip().startswith("error: --gpus mixes GPU models: NVIDIA H200 (GPU 0); NVIDIA H100 80GB HBM3 (GPU 1)")
    assert calls == {"built": [], "timed": [], "shared": []}


def test_the_labs_versions_share_one_process_per_gpu_and_a_strangers_file_runs_alone(monkeypatch, isolated_env, tmp_path):
    import shutil
    from harness import paths
    calls = _fake_machine(monkeypatch, broken=())
    stranger = tmp_path / "downloaded.py"
    shutil.copy(paths.submissions_dir() / "gemm" / "submission_v0.py", stranger)
    r = invoke("table", "gemm", "--versions", f"v0,v3,v4,{stranger}", "--gpus", "0,1", "--method", "gpumode",
               "--method", "kernel")
    assert r.exit_code == 0, r.output
    held = {}
    for label, gpu, shared in calls["shared"]:
        if label == "downloaded.py":
            assert shared is None  # sandboxed, a process of its own per piece as before
            continue
        assert shared is not None and shared.gpu == gpu and [s.label for s in shared.subs] == ["v0", "v3", "v4"]
        assert held.setdefault(gpu, shared) is shared  # one per GPU for the whole ladder
    assert held and set(held) <= {0, 1}
    assert all(shared.child is None for shared in held.values())  # stopped when the GPU's jobs ended


def test_several_methods_only_for_a_measured_table():
    r = invoke("table", "gemm", "--recorded", "--method", "gpumode", "--method", "kernel")
    assert r.exit_code == 2 and "--method given more than once" in r.stderr


def test_table_all_times_every_lineage_in_one_list(monkeypatch, isolated_env):
    from harness import submissions
    from reference import PROBLEMS
    calls = _fake_machine(monkeypatch, broken=())
    r = invoke("table", "all", "--gpus", "0,1,2,3")
    assert r.exit_code == 0, r.output
    ladders = {p: submissions.versions(p) for p in PROBLEMS}
    assert len(calls["built"]) == 1  # one build of every lineage at once
    timed = {(v, s) for v, _, s, _ in calls["timed"]}
    assert len(calls["timed"]) == sum(len(subs) * (4 if p in ("dual_gemm", "group_gemm") else 3) for p, subs in ladders.items())
    assert {v for v, _ in timed} == {s.label for subs in ladders.values() for s in subs}
    for p in PROBLEMS:
        assert f"{p}: measured here" in r.stdout


def test_table_all_takes_no_version_list():
    r = invoke("table", "all", "--versions", "v1")
    assert r.exit_code == 2 and "table all measures every lineage" in r.stderr


def test_missing_times_only_what_is_not_recorded_and_goes_on_where_a_table_stopped(monkeypatch, isolated_env):
    calls = _fake_machine(monkeypatch, broken=())
    args = ("table", "gemm", "--versions", "v3,v4", "--gpus", "0,1", "--method", "gpumode", "--method", "kernel",
            "--record", "--missing")
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    assert len(calls["timed"]) == 12 and len(leaderboard.read()) == 12  # nothing recorded yet: everything
    # a table stopped part way: v4's kernel rows never written
    board = isolated_env["leaderboard"]
    kept = [row for row in leaderboard.read() if not (row["version"] == "v4" and row["timing_mode"] == "kernel")]
    board.unlink()
    leaderboard.append(kept)
    calls["timed"].clear()
    calls["built"].clear()
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    assert sorted((v, m, s) for v, m, s, _ in calls["timed"]) == [("v4", "kernel", s) for s in range(3)]
    assert calls["built"] == [("full", ["v4"])]  # v3 has every method recorded: not built either
    assert "kernel recorded already for this code on NVIDIA H200 (--missing): v3" in " ".join(r.output.split())
    calls["timed"].clear()
    r = invoke(*args)
    assert r.exit_code == 0 and calls["timed"] == []
    assert "nothing missing" in r.output
    # another GPU model has none of these rows: everything again
    _fake_machine(monkeypatch, names={0: "NVIDIA H100 80GB HBM3", 1: "NVIDIA H100 80GB HBM3"}, broken=())
    r = invoke(*args)
    assert r.exit_code == 0 and len(leaderboard.read()) == 24, r.output


def test_missing_needs_record_and_a_measured_table():
    r = invoke("table", "gemm", "--missing")
    assert r.exit_code == 2 and "--missing times what leaderboard.csv lacks and records it: add --record" in r.stderr
    r = invoke("table", "gemm", "--recorded", "--missing")
    assert r.exit_code == 2 and "--missing has no effect with --recorded" in r.stderr


def test_missing_with_nothing_missing_still_writes_its_document(monkeypatch, isolated_env, tmp_path):
    calls = _fake_machine(monkeypatch, broken=())
    args = ("table", "gemm", "--versions", "v3,v4", "--gpus", "0", "--method", "gpumode", "--method", "kernel",
            "--record", "--missing")
    assert invoke(*args).exit_code == 0
    calls["timed"].clear()
    r = invoke(*args, "--format", "json")
    assert r.exit_code == 0 and calls["timed"] == [], r.output
    doc = json.loads(r.stdout)  # JSON alone on stdout, no human line before it
    assert doc["rows"] == []
    assert sorted((n["version"], n["method"]) for n in doc["not_run"]) == [
        ("v3", "gpumode"), ("v3", "kernel"), ("v4", "gpumode"), ("v4", "kernel")]  # each pair, none lost to a key
    assert all(n["problem"] == "gemm" and "recorded already" in n["why"] for n in doc["not_run"])
    out = tmp_path / "table.json"
    r = invoke(*args, "-o", out)
    assert r.exit_code == 0 and json.loads(out.read_text())["rows"] == [], r.output
    assert "nothing missing" in r.stdout and "device: unknown" not in r.stdout  # no empty table printed


def test_missing_counts_what_this_machine_cannot_run_as_nothing_missing(monkeypatch, isolated_env):
    """A version refused here (another arch) can never be recorded here: a finished ladder resumed
    beside it says nothing missing and exits 0, as the first table did."""
    _fake_machine(monkeypatch, broken=())
    timed = runner.run

    def refusing(subs, shapes, dists, mode, plan=None, **kwargs):
        if subs[0].label == "v4":
            why = "needs an NVIDIA GPU with sm_100a; this one is sm_90"
            return runner.JobOutcome(list(subs), None, [runner.ShapeResult(s, d, "SKIP", why) for s in shapes for d in dists],
                                     plan=plan, refused=f"v4: {why}")
        return timed(subs, shapes, dists, mode, plan=plan, **kwargs)

    monkeypatch.setattr(runner, "run", refusing)
    args = ("table", "gemm", "--versions", "v3,v4", "--gpus", "0", "--record", "--missing")
    assert invoke(*args).exit_code == 0
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    text = " ".join(r.stdout.split())
    assert "nothing missing" in text and "needs an NVIDIA GPU with sm_100a; this one is sm_90: v4" in text


def test_a_plot_beside_a_document_on_stdout_is_drawn_too(monkeypatch, isolated_env, tmp_path):
    """table --plot --format json (no -o): the document was printed and the plot silently not drawn."""
    _fake_machine(monkeypatch)
    from harness.cli import render
    drawn = []
    monkeypatch.setattr(render, "require_matplotlib", lambda: None)
    monkeypatch.setattr(render, "plot_measured", lambda problem, pc, shapes, outcomes, on_benchmarks, path:
                        drawn.append((problem, [o.submissions[0].label for o in outcomes], on_benchmarks, str(path))))
    png = tmp_path / "ladder.png"
    r = invoke("table", "gemm", "--versions", "v0,v3", "--gpus", "0", "--plot", png, "--format", "json")
    assert r.exit_code == 0, r.output
    assert [row["version"] for row in json.loads(r.stdout)["rows"]] == ["v0"] * 3 + ["v3"] * 3
    assert drawn == [("gemm", ["v0", "v3"], True, str(png))] and f"plot written to {png}" in r.stderr


def test_missing_refuses_what_it_would_leave_out():
    r = invoke("table", "gemm", "--record", "--missing", "--plot", "ladder.png")
    assert r.exit_code == 2 and "--recorded --plot FILE draws the whole ladder" in r.stderr and "Traceback" not in r.output
    r = invoke("table", "gemm", "--record", "--missing", "--method", "cold", "--warm")
    assert r.exit_code == 2 and "--warm has no effect on table" in r.stderr and "Traceback" not in r.output


def test_missing_with_a_recorded_method_and_a_failing_build_records_and_reports_only_the_missing_one(
        monkeypatch, isolated_env):
    _fake_machine(monkeypatch, broken=())
    assert invoke("table", "gemm", "--versions", "v2", "--gpus", "0", "--method", "gpumode", "--record").exit_code == 0
    calls = _fake_machine(monkeypatch, broken=("v2",))  # a fresh machine where its build fails
    r = invoke("table", "gemm", "--versions", "v2", "--gpus", "0", "--method", "gpumode", "--method", "kernel",
               "--record", "--missing", "--format", "json")
    assert r.exit_code == 1 and calls["timed"] == [], r.output  # the kernel rows FAIL: not built
    doc = json.loads(r.stdout)
    assert {(row["method"], row["status"]) for row in doc["rows"]} == {("kernel", "FAIL")}
    assert [(n["version"], n["method"]) for n in doc["not_run"]] == [("v2", "gpumode")]
    rows = leaderboard.read()
    assert sorted({(row["timing_mode"], row["status"]) for row in rows}) == [("gpumode", "PASS"), ("kernel", "FAIL")]
    assert len(rows) == 6  # gpumode's three PASS rows kept, no FAIL row beside them; kernel's three FAIL


# ------------------------------------------------------------------ timing while the rest build
def _builds_in_order(monkeypatch, calls, order, broken=(), step_s=0.3):
    """build.build replaced: the builds end one by one in ``order`` (labels), ``step_s`` apart, each
    end's time kept in ``calls["ended"]``; a stop ends the rest at once (as the real one does)."""
    import time
    calls["ended"] = {}

    def fake_build(subs, mode, **kwargs):
        by_label = {s.label: s for s in subs}
        for label in order:
            if kwargs["stop"].wait(step_s):
                return []
            sub = by_label[label]
            ok = label not in broken
            result = compile_only.CompileResult(label, compile_only.OK if ok else compile_only.FAIL,
                                                "" if ok else "importing exited with code 1:\nerror: bad")
            calls["ended"][label] = time.monotonic()
            kwargs["on_done"](sub, result)
        return []

    monkeypatch.setattr(build, "build", fake_build)


def _timed_at(monkeypatch, calls):
    """runner.run wrapped: when each piece started (label, method, time)."""
    import time
    calls["started"] = []
    timed = runner.run

    def wrapped(subs, shapes, dists, mode, plan=None, **kwargs):
        calls["started"].append((subs[0].label, plan.method, time.monotonic()))
        return timed(subs, shapes, dists, mode, plan=plan, **kwargs)

    monkeypatch.setattr(runner, "run", wrapped)


def test_the_first_versions_are_timed_while_the_last_still_build_and_none_before_its_own(monkeypatch, isolated_env):
    calls = _fake_machine(monkeypatch, broken=())
    _builds_in_order(monkeypatch, calls, ["v2", "v3", "v4"], broken=("v3",))
    _timed_at(monkeypatch, calls)
    r = invoke("table", "gemm", "--versions", "v2,v3,v4", "--gpus", "0", "--method", "gpumode", "--record")
    assert r.exit_code == 1, r.output  # v3 does not build
    started = {label: at for label, _, at in calls["started"]}
    assert set(started) == {"v2", "v4"}  # v3 never timed: its build failed
    assert started["v2"] < calls["ended"]["v4"]  # timed while the last build ran
    assert all(started[v] >= calls["ended"][v] for v in started)  # never before its own build ended
    rows = {(row["version"], row["status"]) for row in leaderboard.read()}
    assert rows == {("v2", "PASS"), ("v3", "FAIL"), ("v4", "PASS")}  # the failed build is a row
    assert "v3 every shape: FAIL: does not build: importing exited with code 1: error: bad" in " ".join(r.stdout.split())
    assert "gemm v3 does not build" in r.stderr and "2 of 3 built, 1 failed: gemm v3" in r.stderr


def test_builds_ending_out_of_order_are_timed_as_they_end_event_methods_first(monkeypatch, isolated_env):
    # NOTE: a GPU waiting for the ladder's front build idles while later versions are ready (session 56)
    calls = _fake_machine(monkeypatch, broken=())
    _builds_in_order(monkeypatch, calls, ["v4", "v3", "v2"])
    _timed_at(monkeypatch, calls)
    r = invoke("table", "gemm", "--versions", "v2,v3,v4", "--gpus", "0", "--method", "kernel", "--method", "gpumode")
    assert r.exit_code == 0, r.output
    order = list(dict.fromkeys((label, method) for label, method, _ in calls["started"]))
    assert [m for _, m in order] == ["gpumode"] * 3 + ["kernel"] * 3  # every event method before the profiler
    assert order[0] == ("v4", "gpumode")  # the first build to end, timed before v2's build ended
    assert [label for label, m in order if m == "kernel"] == ["v2", "v3", "v4"]  # all built by then: ladder order
    started = {(label, m): at for label, m, at in calls["started"]}
    assert started[("v4", "gpumode")] < calls["ended"]["v2"]


def test_a_stop_mid_way_stops_the_builds_and_leaves_no_thread(monkeypatch, isolated_env):
    import time
    calls = _fake_machine(monkeypatch, broken=())
    _builds_in_order(monkeypatch, calls, ["v2", "v3", "v4"], step_s=30)  # v3 and v4 would take a minute
    monkeypatch.setattr(build.Background, "ended", lambda self, sub: True)  # v2 timed at once

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run", interrupted)
    t0 = time.monotonic()
    r = invoke("table", "gemm", "--versions", "v2,v3,v4", "--gpus", "0")
    assert r.exit_code != 0 and isinstance(r.exception, (KeyboardInterrupt, SystemExit))
    assert time.monotonic() - t0 < 10  # the builds were stopped, not waited for
    assert not [t for t in threading.enumerate() if t.name == "table-builds"]
