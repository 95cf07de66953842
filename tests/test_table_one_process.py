"""table's one process per GPU (harness.runner.SharedChild), for real on the CPU: a tiny lab of
gemv versions timed by `table`, counting the worker processes the harness starts. Two versions
share one process; a version whose import fails and one that segfaults midway fail their own rows,
a fresh process takes over, and the versions before and after them keep theirs."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import cli, isolation, leaderboard, paths, runner, submissions

from conftest import ADVERSARIAL_DIR, REPO_ROOT

V0 = REPO_ROOT / "submissions" / "gemv" / "submission_v0.py"


def _lab(tmp_path, monkeypatch, files: list[Path]) -> None:
    """submissions/gemv/submission_v{i}.py for each file, as the lab's own versions."""
    folder = tmp_path / "submissions" / "gemv"
    folder.mkdir(parents=True)
    for i, source in enumerate(files):
        shutil.copy(source, folder / f"submission_v{i}.py")
    monkeypatch.setattr(paths, "submissions_dir", lambda: tmp_path / "submissions")


def _count_processes(monkeypatch) -> list[str]:
    """The labels of every worker process launched (judges not counted), in order."""
    launched: list[str] = []
    launch = isolation.Child.launch

    def counted(self):
        if not self.is_judge:
            launched.append(self.label)
        return launch(self)

    monkeypatch.setattr(isolation.Child, "launch", counted)
    return launched


def _table(*args):
    r = CliRunner().invoke(cli.main, ["table", "gemv", "--budget", "0.2", "--min-repeats", "2", "--record",
                                      "--allow-cpu", *args], env={"COLUMNS": "200"})
    statuses = {(row["version"], row["timing_mode"]): row["status"] for row in leaderboard.read()}
    return r, statuses


def test_two_versions_of_a_table_are_timed_in_one_process(tmp_path, monkeypatch, tiny_shapes):
    _lab(tmp_path, monkeypatch, [V0, V0])
    launched = _count_processes(monkeypatch)
    r, statuses = _table("--method", "gpumode", "--method", "kernel")
    assert r.exit_code == 0, r.output
    assert statuses == {(v, m): "PASS" for v in ("v0", "v1") for m in ("gpumode", "kernel")}
    assert launched == ["v0"]  # one process imported both and timed all four (version, method) groups
    assert "one process imported 2 versions (v0, v1)" in r.stderr


def test_a_version_that_fails_to_import_or_crashes_fails_its_rows_only(tmp_path, monkeypatch, tiny_shapes):
    _lab(tmp_path, monkeypatch, [V0, ADVERSARIAL_DIR / "import_error.py", ADVERSARIAL_DIR / "segfaults.py", V0])
    launched = _count_processes(monkeypatch)
    r, statuses = _table()
    assert r.exit_code == 1, r.output
    assert statuses == {("v0", "gpumode"): "PASS", ("v1", "gpumode"): "FAIL", ("v2", "gpumode"): "CRASH",
                        ("v3", "gpumode"): "PASS"}
    # NOTE: the first process stopped at v1's import; the second (v0, v2, v3) died in v2's check; a third timed v3
    assert launched == ["v0", "v0", "v0"]
    out = " ".join(r.stdout.split())
    assert "v1 t0: FAIL: import failed: RuntimeError: adversarial import-time failure" in out
    assert "v2 t0: CRASH: child killed by SIGSEGV" in out
    assert "Traceback" not in r.output


def test_files_from_outside_the_lab_and_clashing_extensions_keep_a_process_of_their_own(tmp_path, monkeypatch):
    _lab(tmp_path, monkeypatch, [V0, V0])
    cuda = [REPO_ROOT / "submissions" / "gemv" / f"submission_v{n}.py" for n in (1, 3)]
    folder = tmp_path / "submissions" / "gemv"
    shutil.copy(cuda[0], folder / "submission_v2.py")
    shutil.copy(cuda[0], folder / "submission_v3.py")  # the same EXTENSION_NAME as v2
    shutil.copy(cuda[1], folder / "submission_v4.py")
    stranger = tmp_path / "elsewhere.py"
    shutil.copy(V0, stranger)
    subs = [submissions.resolve("gemv", v) for v in ("v0", "v1", "v2", "v3", "v4", str(stranger))]
    assert [s.label for s in runner.shared_versions(subs, (9, 0))] == ["v0", "v1", "v2", "v4"]
    assert [s.label for s in runner.shared_versions(subs, None)] == ["v0", "v1"]  # no GPU: the CUDA ones are refused
    assert runner.shared_versions(subs, (9, 0), untrusted_all=True) == []
    with pytest.raises(ValueError):
        runner.SharedChild(subs[:1] + [dataclasses.replace(subs[1], problem="gemm")], None)  # one problem a process


def test_a_process_that_timed_the_kernel_method_is_replaced_before_an_event_method(tmp_path, monkeypatch, tiny_shapes):
    # NOTE: kineto leaves CUPTI's callbacks on in a process that opened a profiler (harness.timing's
    # _profiler): an event method timed there afterwards read up to +5 µs a call on an H200
    _lab(tmp_path, monkeypatch, [V0, V0])
    launched = _count_processes(monkeypatch)
    subs = [submissions.resolve("gemv", v) for v in ("v0", "v1")]
    shapes = runner.select_shapes("gemv", "tests:0", (), False)[0]
    shared = runner.SharedChild(subs, None)
    events: list[dict] = []
    try:
        for sub, method in [(subs[0], "gpumode"), (subs[0], "kernel"), (subs[1], "kernel"), (subs[1], "gpumode"),
                            (subs[0], "cold")]:
            plan = runner.TimingPlan.from_options(budget_s=0.1, min_samples=2, min_time_s=0.01, method=method)
            out = runner.run([sub], shapes, ["competition"], "run", plan=plan, shared=shared, progress=events.append)
            assert out.ok, [r.message for r in out.results]
            launched.append(f"after {sub.label} {method}")
    finally:
        shared.stop()
    # gpumode then kernel share the first process; v1's gpumode after the kernel pieces gets a fresh one,
    # which the cold piece after it keeps (it opened no profiler)
    assert launched == ["v0", "after v0 gpumode", "after v0 kernel", "after v1 kernel", "v0", "after v1 gpumode",
                        "after v0 cold"]
    assert any("a fresh process for the gpumode method" in e.get("text", "") for e in events)


def test_a_version_built_after_the_process_started_is_imported_into_it(tmp_path, monkeypatch, tiny_shapes):
    # NOTE: the table times while the rest build (issue 49): the process starts with what is built
    _lab(tmp_path, monkeypatch, [V0, V0, ADVERSARIAL_DIR / "import_error.py"])
    launched = _count_processes(monkeypatch)
    subs = [submissions.resolve("gemv", v) for v in ("v0", "v1", "v2")]
    shapes = runner.select_shapes("gemv", "tests:0", (), False)[0]
    built = {"v0"}
    shared = runner.SharedChild(subs, None, built=lambda sub: sub.label in built)
    events: list[dict] = []
    plan = runner.TimingPlan.from_options(budget_s=0.1, min_samples=2, min_time_s=0.01, method="gpumode")
    try:
        out = runner.run([subs[0]], shapes, ["competition"], "run", plan=plan, shared=shared, progress=events.append)
        assert out.ok and shared.members == ["v0"]
        built |= {"v1", "v2"}
        out = runner.run([subs[1]], shapes, ["competition"], "run", plan=plan, shared=shared, progress=events.append)
        assert out.ok and shared.members == ["v0", "v1"]  # the same process took v1
        out = runner.run([subs[2]], shapes, ["competition"], "run", plan=plan, shared=shared, progress=events.append)
        assert [r.status for r in out.results] == ["FAIL"]
        assert "import failed: RuntimeError: adversarial import-time failure" in out.results[0].message
        assert shared.child is None  # its code ran in there: the process ended with it
        out = runner.run([subs[1]], shapes, ["competition"], "run", plan=plan, shared=shared, progress=events.append)
        assert out.ok and shared.members == ["v0", "v1"]  # a fresh one, without v2
    finally:
        shared.stop()
    assert launched == ["v0", "v0"]
    assert any("v1 imported into the running process" in e.get("text", "") for e in events)
