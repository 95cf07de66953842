"""nvfp4 build: compile-only chosen without a GPU (and refused without nvcc), several versions at
once in order, the full build's child on the CPU, and the CLI's exit codes and error lines."""

from __future__ import annotations

import textwrap

import pytest
import torch
from click.testing import CliRunner

from harness import build, cli, compile_only, paths, runner, submissions
from harness.cli.devtools import tool_subs
from harness.errors import UserError

from test_compile_only import BAD, GOOD, needs_nvcc

ENV = {"COLUMNS": "200"}


def invoke(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args], env=ENV)


def test_choose_mode():
    assert build.choose_mode(False, True, "/usr/bin/nvcc") == "full"
    assert build.choose_mode(False, True, None) == "full"
    assert build.choose_mode(True, True, "/usr/bin/nvcc") == "compile-only"
    assert build.choose_mode(False, False, "/usr/bin/nvcc") == "compile-only"  # automatic without a GPU
    with pytest.raises(UserError, match="without a GPU, build compiles only, and it needs nvcc"):
        build.choose_mode(False, False, None)
    with pytest.raises(UserError, match="--compile-only needs nvcc"):
        build.choose_mode(True, True, None)


def test_build_keeps_order_and_reports_each(monkeypatch):
    subs = [submissions.resolve(p, "v0") for p in ("gemv", "gemm", "dual_gemm", "group_gemm")]
    seen = []
    results = build.build(subs, "compile-only", nvcc="nvcc", jobs=3, on_done=lambda s, r: seen.append(s.problem))
    assert [r.label for r in results] == ["v0"] * 4
    assert all(r.status == compile_only.NO_CUDA for r in results)
    assert sorted(seen) == sorted(["gemv", "gemm", "dual_gemm", "group_gemm"])


def test_full_build_in_a_child(tmp_path):
    ok = build.full_build(submissions.resolve("gemm", "v0"), timeout_s=120)
    assert ok.status == compile_only.OK, ok.message
    broken = tmp_path / "broken.py"
    broken.write_text(textwrap.dedent('''
        raise RuntimeError("nvcc said no")
        def custom_kernel(data):
            return data[-1]
        '''))
    r = build.full_build(submissions.load("gemm", broken, "broken.py"), timeout_s=120)
    assert r.status == compile_only.FAIL and "RuntimeError: nvcc said no" in r.message


def test_all_selects_every_lineage_version():
    """PROBLEM and VERSION 'all' (CI's `build all all`); compiling them is CI's job, not this test's:
    a version whose source includes torch's headers takes a minute."""
    subs = tool_subs("all", "all")
    assert {(s.problem, s.label) for s in subs} >= {(p, "v0") for p in ("gemv", "gemm", "dual_gemm", "group_gemm")}
    lineage = submissions.versions("gemm", include_attic=True)
    assert [s.label for s in tool_subs("gemm", "all")] == [s.label for s in lineage]  # the attic's too


@needs_nvcc
def test_cli_torch_only_version():
    r = invoke("build", "gemm", "v0", "--compile-only")
    assert r.exit_code == 0, r.output
    assert "no CUDA source (torch only)" in r.stdout and "1 built, 0 failed" in r.stdout


@needs_nvcc
def test_cli_good_and_bad(tmp_path):
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(GOOD)
    bad.write_text(BAD)
    r = invoke("build", "gemm", good, "--compile-only")
    assert r.exit_code == 0, r.output
    assert "scale(float*, int)" in r.stdout and "1,024" in r.stdout and "sm_90a" in r.stdout
    r = invoke("build", "gemm", bad, "--compile-only")
    assert r.exit_code == 1, r.output
    assert "FAIL" in r.stdout and "0 built, 1 failed" in r.stdout
    assert "bad.py does not build" in r.stderr and "undeclared_tile" in r.stderr


def test_cli_refusals(monkeypatch):
    r = invoke("build", "all", "v0")
    assert r.exit_code == 2 and "with PROBLEM all, VERSION must be all too" in r.stderr
    r = invoke("build", "gemmm", "all")
    assert r.exit_code == 2 and "unknown problem" in r.stderr
    monkeypatch.setattr("harness.cuda_tools.find", lambda name: None)
    r = invoke("build", "gemm", "v0", "--compile-only")
    assert r.exit_code == 2 and r.stderr.startswith("error: --compile-only needs nvcc")
    if not torch.cuda.is_available():
        r = invoke("build", "gemm", "v0")
        assert r.exit_code == 2 and "without a GPU, build compiles only" in r.stderr


def test_cli_full_build_table(monkeypatch):
    """The GPU path's table (the build itself stubbed: this machine may have no GPU)."""
    monkeypatch.setattr(runner, "local_capability", lambda: (9, 0))
    monkeypatch.setattr(build, "full_build", lambda sub, timeout_s, *_: compile_only.CompileResult(sub.label, "OK", seconds=1.5))
    r = invoke("build", "gemm", "v0")
    assert r.exit_code == 0, r.output
    assert "build (full, load_inline in a child per version)" in r.stdout and "1.5 s" in r.stdout
    assert "--compile-only gives ptxas" in " ".join(r.stdout.split())


# ----------------------------------------------------------------------- the compiled manifest
@pytest.fixture(autouse=True)
def manifest_file(tmp_path, monkeypatch):
    """Every test's manifest in its tmp folder: a CLI build here never rewrites submissions/compiled.json."""
    path = tmp_path / "compiled.json"
    monkeypatch.setenv(build.MANIFEST_ENV, str(path))
    return path


@pytest.fixture
def lineage(tmp_path, monkeypatch):
    """A submissions/ tree of its own (gemm v1, v2 from GOOD: tiny, no torch headers, ~2 s of
    nvcc each) in place of the repo's; write(label, text) adds or edits a version."""
    root = tmp_path / "submissions"
    (root / "gemm").mkdir(parents=True)
    monkeypatch.setattr(paths, "submissions_dir", lambda: root)

    def write(label, text):
        (root / "gemm" / f"submission_{label}.py").write_text(text)

    write("v1", GOOD)
    write("v2", GOOD.replace("* 2.f", "* 3.f"))
    return write


def _compiled(monkeypatch):
    """The labels compile_only.check is asked to compile, in a list (check still runs)."""
    seen = []
    real = compile_only.check

    def spy(sub, nvcc, timeout_s=compile_only.DEFAULT_TIMEOUT_S):
        seen.append(sub.label)
        return real(sub, nvcc, timeout_s)

    monkeypatch.setattr(compile_only, "check", spy)
    return seen


@needs_nvcc
def test_changed_compiles_only_changed_versions(lineage, manifest_file, monkeypatch):
    r = invoke("build", "gemm", "all", "--compile-only")
    assert r.exit_code == 0, r.output
    assert "compiled manifest updated" in r.stdout
    first = build.read_manifest(manifest_file)
    assert sorted(first.versions) == ["gemm/v1", "gemm/v2"] and first.checked_with == {}  # not a build of all

    seen = _compiled(monkeypatch)
    r = invoke("build", "gemm", "all", "--changed")  # nothing changed: nothing compiled
    assert r.exit_code == 0, r.output
    assert seen == [] and "2 unchanged since" in r.stdout and "0 built, 0 failed, 2 skipped as unchanged" in r.stdout

    lineage("v2", GOOD.replace("* 2.f", "* 4.f"))  # a changed version and a new one
    lineage("v3", GOOD.replace('CUDA_FLAGS = ["-O3"]', 'CUDA_FLAGS = ["-O2"]'))
    r = invoke("build", "gemm", "all", "--compile-only", "--changed")
    assert r.exit_code == 0, r.output
    assert sorted(seen) == ["v2", "v3"], seen
    assert "1 unchanged since" in r.stdout and "2 to compile: gemm v2, gemm v3" in r.stdout
    assert "2 built, 0 failed, 1 skipped as unchanged" in r.stdout
    after = build.read_manifest(manifest_file)
    assert after.versions["gemm/v1"] == first.versions["gemm/v1"]
    assert after.versions["gemm/v2"] != first.versions["gemm/v2"] and "gemm/v3" in after.versions


@needs_nvcc
def test_changed_version_that_fails_fails_the_command_and_keeps_the_manifest(lineage, manifest_file, monkeypatch):
    assert invoke("build", "gemm", "all", "--compile-only").exit_code == 0
    before = manifest_file.read_bytes()
    lineage("v2", BAD)
    seen = _compiled(monkeypatch)
    r = invoke("build", "gemm", "all", "--compile-only", "--changed")
    assert r.exit_code == 1, r.output
    assert seen == ["v2"] and "0 built, 1 failed, 1 skipped as unchanged" in r.stdout
    assert "gemm v2 does not build" in r.stderr and "undeclared_tile" in r.stderr
    assert manifest_file.read_bytes() == before  # written only after a build with no failure
    lineage("v2", GOOD)  # fixed: same source as v1, so the same compile: skipped, and recorded under v2
    r = invoke("build", "gemm", "all", "--changed")
    assert r.exit_code == 0 and seen == ["v2"], r.output
    assert build.read_manifest(manifest_file).versions["gemm/v2"] == build.read_manifest(manifest_file).versions["gemm/v1"]


@needs_nvcc
def test_manifest_written_only_after_success(lineage, manifest_file):
    lineage("v3", BAD)
    r = invoke("build", "gemm", "all", "--compile-only")
    assert r.exit_code == 1, r.output
    assert not manifest_file.exists() and "compiled manifest updated" not in r.stdout


def _stub_check(monkeypatch, fail=()):
    """compile_only.check without nvcc: OK, or FAIL for the labels in ``fail``; returns the labels asked."""
    seen = []

    def check(sub, nvcc, timeout_s=compile_only.DEFAULT_TIMEOUT_S):
        seen.append(sub.label)
        return compile_only.CompileResult(sub.label, compile_only.FAIL if sub.label in fail else compile_only.OK,
                                          "stub failure" if sub.label in fail else "")
    monkeypatch.setattr(compile_only, "check", check)
    monkeypatch.setattr("harness.cuda_tools.find", lambda name: "/usr/bin/true" if name == "nvcc" else None)
    return seen


def test_build_of_all_records_toolchain_and_prunes_deleted_versions(lineage, manifest_file, monkeypatch, tmp_path):
    seen = _stub_check(monkeypatch)
    build.write_manifest(manifest_file, build.Manifest({"gemm/v9": "gone", "gemv/v1": "kept"}, {"nvcc": "old"}))
    r = invoke("build", "gemm", "all", "--compile-only")
    assert r.exit_code == 0, r.output
    m = build.read_manifest(manifest_file)
    assert sorted(m.versions) == ["gemm/v1", "gemm/v2", "gemv/v1"]  # gemm v9 no longer exists; gemv untouched
    assert m.checked_with == {"nvcc": "old"}  # not every problem was built: the record stays
    r = invoke("build", "gemm", "v1", "--compile-only")  # one version: nothing dropped
    assert r.exit_code == 0 and sorted(build.read_manifest(manifest_file).versions) == sorted(m.versions)
    path_file = tmp_path / "elsewhere.py"
    path_file.write_text(GOOD.replace("* 2.f", "* 5.f"))
    r = invoke("build", "gemm", path_file, "--compile-only")  # a file given by path is never recorded
    assert r.exit_code == 0 and sorted(build.read_manifest(manifest_file).versions) == sorted(m.versions)
    # NOTE: `build all all` builds every problem's versions: this lineage has no gemv, so its entry goes.
    for problem in ("gemv", "dual_gemm", "group_gemm"):
        (paths.submissions_dir() / problem).mkdir()
    r = invoke("build", "all", "all", "--compile-only")
    assert r.exit_code == 0, r.output
    m = build.read_manifest(manifest_file)
    assert sorted(m.versions) == ["gemm/v1", "gemm/v2"]
    assert m.checked_with == compile_only.toolchain("/usr/bin/true") and m.checked_with["torch"] == torch.__version__


def test_changed_warns_about_another_toolchain_and_still_skips(lineage, manifest_file, monkeypatch):
    seen = _stub_check(monkeypatch)
    for problem in ("gemv", "dual_gemm", "group_gemm"):
        (paths.submissions_dir() / problem).mkdir()
    assert invoke("build", "all", "all", "--compile-only").exit_code == 0
    m = build.read_manifest(manifest_file)
    build.write_manifest(manifest_file, build.Manifest(m.versions, {**m.checked_with, "nvcc": "release 12.4"}))
    seen.clear()
    r = invoke("build", "all", "all", "--changed")
    assert r.exit_code == 0, r.output
    assert seen == [] and "2 skipped as unchanged" in r.stdout
    assert "checked with another toolchain" in r.stderr and "release 12.4" in r.stderr
    assert build.read_manifest(manifest_file).checked_with["nvcc"] == "release 12.4"  # only a build of all rewrites it


def test_unreadable_manifest_is_an_error_for_changed(lineage, manifest_file, monkeypatch):
    """Never "everything changed" quietly (CI would take 35 minutes); a merge conflict is exit 2."""
    seen = _stub_check(monkeypatch)
    manifest_file.write_text('{\n<<<<<<< HEAD\n "versions": {}\n}\n')
    r = invoke("build", "gemm", "all", "--changed")
    assert r.exit_code == 2 and "cannot be read" in r.stderr and seen == []
    r = invoke("build", "gemm", "v1", "--compile-only")  # a partial build does not overwrite it
    assert r.exit_code == 0 and "not updated" in r.stderr and "<<<<<<<" in manifest_file.read_text()
    manifest_file.write_text('{"versions": {"gemm/latest": "x"}}')
    with pytest.raises(build.ManifestError, match="is not one"):
        build.read_manifest(manifest_file)


def test_manifest_text_is_sorted_stable_and_atomic(manifest_file):
    m = build.Manifest({"gemm/v10": "c", "gemm/v2": "b", "dual_gemm/v1": "a"}, {"torch": "t", "nvcc": "n"})
    assert build.write_manifest(manifest_file, m)
    text = manifest_file.read_text()
    names = [line.split('"')[1] for line in text.splitlines() if line.startswith('  "') and "/" in line]
    assert names == ["dual_gemm/v1", "gemm/v2", "gemm/v10"]  # by problem, then version number
    assert text.index('"nvcc"') < text.index('"torch"') and text.endswith("}\n")
    assert not build.write_manifest(manifest_file, build.read_manifest(manifest_file))  # same text: untouched
    assert not list(manifest_file.parent.glob(".*.tmp"))


def test_manifest_key_is_what_is_compiled_not_the_machine(tmp_path, monkeypatch):
    """Same key with another nvcc path, host compiler, torch include folders or build folder; another
    key for another source, flag or arch. A docstring is not compiled: it changes nothing."""
    def key(text, name="s.py"):
        path = tmp_path / name
        path.write_text(text)
        return compile_only.manifest_key(submissions.load("gemm", path, name))

    with_torch = GOOD.replace("NO_IMPLICIT_HEADERS = True\n", "").replace(
        'CUDA_FLAGS = ["-O3"]', 'CPP_SRC = "#include <torch/extension.h>"\nFUNCTIONS = []\nCUDA_FLAGS = ["-O3"]')
    base, base_torch = key(GOOD), key(with_torch)
    monkeypatch.setenv("CXX", "/opt/other/g++-13")
    monkeypatch.setenv("NVFP4_BUILD_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setattr(compile_only, "_torch_includes", lambda for_cuda: ["-isystem", "/somewhere/else"])
    assert key(GOOD) == base and key(with_torch) == base_torch
    assert key(GOOD.replace("A tiny known-good", "A small known-good")) == base  # the docstring
    assert key(GOOD.replace("* 2.f", "* 3.f")) != base
    assert key(GOOD.replace('["-O3"]', '["-O2"]')) != base
    assert key(GOOD.replace("Arch: sm_90a", "Arch: sm_100a")) != base
    assert key(GOOD.replace("CUDA_SRC", "CUDA_SRC = open('x').read()\nX")) is None  # unreadable: never skipped
    assert key(GOOD) and len(key(GOOD)) == 64


def test_a_version_moved_to_the_attic_keeps_its_entry_and_is_not_compiled_again(lineage, manifest_file, monkeypatch):
    """The manifest names a version problem/vN wherever it lives and keys it by what it compiles, so
    moving a file to attic/ neither recompiles it nor drops it from a build of all of a problem."""
    seen = _stub_check(monkeypatch)
    assert invoke("build", "gemm", "all", "--compile-only").exit_code == 0
    before = build.read_manifest(manifest_file).versions
    attic = paths.submissions_dir() / "gemm" / submissions.ATTIC
    attic.mkdir()
    (paths.submissions_dir() / "gemm" / "submission_v2.py").rename(attic / "submission_v2.py")
    assert build.manifest_name(submissions.resolve("gemm", "v2")) == "gemm/v2"
    seen.clear()
    r = invoke("build", "gemm", "all", "--changed")
    assert r.exit_code == 0, r.output
    assert seen == [] and "2 skipped as unchanged" in r.stdout
    r = invoke("build", "gemm", "all", "--compile-only")
    assert r.exit_code == 0 and sorted(seen) == ["v1", "v2"], r.output  # `all` is the attic's too
    assert build.read_manifest(manifest_file).versions == before


def test_two_builds_recording_at_once_keep_both_entries(tmp_path, monkeypatch):
    import threading
    import time as _time
    from harness import build
    path = tmp_path / "compiled.json"
    real_read = build.read_manifest

    def slow_read(p):  # both would read the same old manifest without the lock
        m = real_read(p)
        _time.sleep(0.2)
        return m

    monkeypatch.setattr(build, "read_manifest", slow_read)
    subs = [submissions.resolve("gemv", "v1"), submissions.resolve("gemv", "v3")]
    threads = [threading.Thread(target=build.record_compiled, args=(path, [sub], [f"key{i}"]),
                                kwargs={"complete": set(), "toolchain": None}) for i, sub in enumerate(subs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert real_read(path).versions == {"gemv/v1": "key0", "gemv/v3": "key1"}


# ------------------------------------------------------------------- before measuring (issue 49)
def test_prebuild_plan_builds_each_lab_version_that_compiles_and_runs_here_once(tmp_path):
    import dataclasses
    v0, v2, v3 = (submissions.resolve("gemm", v) for v in ("v0", "v2", "v3"))
    hopper = (9, 0)
    assert build.prebuild_plan([v0, v2, v3], hopper) == [v2, v3]  # v0 is torch only: nothing to build
    twin = dataclasses.replace(v2, label="v2-again")
    assert build.prebuild_plan([v2, twin], hopper) == [v2]  # one build folder per source hash
    blackwell_only = dataclasses.replace(v3, header={**v3.header, "arch": "sm_100a"})
    assert build.prebuild_plan([blackwell_only], hopper) == []  # refused here, never built
    stranger = tmp_path / "mine.py"
    stranger.write_text(v2.path.read_text())
    assert build.prebuild_plan([submissions.load("gemm", stranger, "mine.py")], hopper) == []  # builds in its sandbox
    assert build.prebuild_plan([v2, v3], hopper, untrusted_all=True) == []
    assert build.prebuild_plan([v2, v3], None) == []  # a CPU machine runs none of them


def test_failed_builds_are_keyed_by_source_hash():
    v2, v3 = (submissions.resolve("gemm", v) for v in ("v2", "v3"))
    results = [compile_only.CompileResult("v2", compile_only.FAIL, "importing exited with code 1"),
               compile_only.CompileResult("v3", compile_only.OK)]
    assert build.failed_builds([v2, v3], results) == {v2.source_hash: results[0]}


def test_a_background_build_stopped_mid_way_kills_its_child_and_leaves_no_thread(tmp_path):
    import os
    import threading
    import time
    from harness import isolation
    hang = tmp_path / "hang.py"
    hang.write_text("import time\ntime.sleep(120)  # a build that would take two minutes\ndef custom_kernel(data):\n    return data[-1]\n")
    sub = submissions.load("gemm", hang, "hang.py")
    t0 = time.monotonic()
    with build.Background([sub], timeout_s=300, jobs=1) as builds:
        while not [g for g in isolation._LIVE if isinstance(g, isolation._Group)]:
            assert time.monotonic() - t0 < 20, "the build child never started"
            time.sleep(0.05)
        pids = [g.pid for g in isolation._LIVE if isinstance(g, isolation._Group)]
        assert not builds.ended(sub) and not builds.built(sub)
    assert time.monotonic() - t0 < 20
    assert builds.ended(sub) and builds.failure(sub).message == "not built: the command stopped"
    assert not [g for g in isolation._LIVE if isinstance(g, isolation._Group)]
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not [t for t in threading.enumerate() if t.name == "table-builds"]
