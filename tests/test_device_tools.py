"""tools/try_version.sh's decisions, with the harness replaced by a recorder: which steps a device round runs.

A device call is 10 minutes of a 30-minute session budget; these check the script's choices without a GPU: custom
SHAPES reach the tests and both sanitizers, and the recorded runs follow the compare's verdicts (RECORD).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "try_version.sh"

# A stand-in `python3`: `-m harness ...` is logged (and compare / run write the CSV their -o names); the script's one
# inline resolve (`-c ... resolve ...`) prints a source that names mbarrier (so the sanitizer steps run); anything
# else (the script's CSV readers) runs on the real interpreter.
FAKE = r'''#!{python}
import os, sys
args = sys.argv[1:]
if args[:2] == ["-m", "harness"]:
    with open(os.environ["FAKE_LOG"], "a") as log:
        log.write(" ".join(args[2:]) + "\n")
    if os.environ.get("FAKE_FAIL") and os.environ["FAKE_FAIL"] in " ".join(args[2:]):
        print("FAKE FAILURE of", " ".join(args[2:]))
        sys.exit(1)
    out = args[args.index("-o") + 1] if "-o" in args else None
    if args[2] == "compare" and out:
        with open(out, "w") as f:
            f.write("shape,status,speedup,lo,hi,verdict\n")
            for i, verdict in enumerate(os.environ["FAKE_VERDICTS"].split(",")):
                f.write(f"s{{i}},PASS,1.0,0.99,1.01,{{verdict}}\n")
    if args[2] == "run" and out:
        with open(out, "w") as f:
            f.write("shape,status,mean_us\ns0,PASS,1.0\n")
    sys.exit(0)
if args[:1] == ["-c"] and "resolve" in args[1]:
    print(os.environ["FAKE_SOURCE"])
    sys.exit(0)
os.execv({python!r}, [{python!r}] + args)
'''


@pytest.fixture
def round_env(tmp_path):
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "python3"
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    source = tmp_path / "submission_v2.py"
    source.write_text("# uses mbarrier\n")
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", NVFP4_GIT_COMMIT="abc1234",
               OUT=str(tmp_path / "out"), FAKE_LOG=str(tmp_path / "calls.log"), FAKE_SOURCE=str(source))
    for key in ("RECORD", "SHAPES", "SHAPES_gemm", "STEPS", "DEADLINE_AT", "FAKE_FAIL", "SANITIZE", "SANITIZE_TIMEOUT"):
        env.pop(key, None)
    return tmp_path, env


def try_version(round_env, verdicts: str, **extra) -> tuple[subprocess.CompletedProcess, list[str]]:
    tmp_path, env = round_env
    env = dict(env, FAKE_VERDICTS=verdicts, **extra)
    done = subprocess.run(["bash", str(SCRIPT), "gemm", "v2", "v1"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    log = tmp_path / "calls.log"
    return done, (log.read_text().splitlines() if log.exists() else [])


def recorded(calls: list[str]) -> list[str]:
    return [c for c in calls if c.startswith("run ") and "--record" in c]


def test_a_version_faster_on_a_shape_and_slower_on_none_is_recorded_both_ways(round_env):
    done, calls = try_version(round_env, "FASTER,SAME")
    assert done.returncode == 0, done.stderr
    assert len(recorded(calls)) == 2 and any("--method kernel" in c for c in recorded(calls))


@pytest.mark.parametrize("verdicts", ["SAME,SAME", "FASTER,SLOWER"])
def test_a_version_that_wins_nowhere_is_not_recorded_by_default(round_env, verdicts):
    tmp_path, _ = round_env
    done, calls = try_version(round_env, verdicts)
    assert done.returncode == 0, done.stderr
    assert recorded(calls) == [] and any(c.startswith("compare gemm v1 v2") for c in calls)
    assert "not recorded (RECORD=if-faster" in (tmp_path / "out" / "summary.txt").read_text()


def test_record_always_records_whatever_the_compare_said(round_env):
    done, calls = try_version(round_env, "SLOWER", RECORD="always")
    assert done.returncode == 0, done.stderr
    assert len(recorded(calls)) == 2


def test_an_unknown_record_value_is_refused_before_any_step(round_env):
    done, calls = try_version(round_env, "FASTER", RECORD="sometimes")
    assert done.returncode == 2 and "RECORD must be if-faster or always" in done.stderr
    assert calls == []


def test_the_problem_s_shapes_reach_the_tests_and_both_sanitizers(round_env):
    shapes = "m=32,n=5760,k=4608,l=1|m=200,n=3072,k=4608,l=1"
    done, calls = try_version(round_env, "SAME", SHAPES_gemm=shapes, SHAPES="m=1,n=1,k=1,l=1")
    assert done.returncode == 0, done.stderr
    wanted = "--shape m=32,n=5760,k=4608,l=1 --shape m=200,n=3072,k=4608,l=1"
    assert any(c.startswith("test gemm v2") and wanted in c and "--dist all" in c for c in calls)
    for tool in ("racecheck", "synccheck"):
        with_shapes = [c for c in calls if c.startswith(f"sanitize gemm v2 --tool {tool}") and wanted in c]
        assert len(with_shapes) == 1, calls
    assert not any("m=1,n=1" in c for c in calls)  # NOTE: the problem's own SHAPES_<problem> wins over SHAPES


def test_a_failed_check_stops_the_version_after_every_check_beside_it_has_ended(round_env):
    tmp_path, _ = round_env
    done, calls = try_version(round_env, "FASTER", FAKE_FAIL="--shapes edges")
    assert done.returncode == 1
    assert any("--shapes random" in c for c in calls) and any("--bad-inputs" in c for c in calls)  # NOTE: all ran
    assert not any(c.startswith(("sanitize ", "compare ", "run ")) for c in calls)  # NOTE: nothing after a failed check
    summary = (tmp_path / "out" / "summary.txt").read_text()
    assert "test (edges shapes, both distributions): FAILED" in summary and "FAKE FAILURE" in summary


def test_the_sanitizers_run_one_at_a_time_after_the_other_checks_each_bounded(round_env):
    done, calls = try_version(round_env, "FASTER", SANITIZE_TIMEOUT="123")
    assert done.returncode == 0, done.stderr
    sanitizers = [i for i, c in enumerate(calls) if c.startswith("sanitize ")]
    tests = [i for i, c in enumerate(calls) if c.startswith("test ")]
    assert len(sanitizers) == 2 and min(sanitizers) > max(tests)
    assert all("--timeout 123" in calls[i] for i in sanitizers)


def test_a_failed_sanitizer_stops_the_version_before_the_next_and_the_timing(round_env):
    tmp_path, _ = round_env
    done, calls = try_version(round_env, "FASTER", FAKE_FAIL="--tool racecheck")
    assert done.returncode == 1
    assert not any("--tool synccheck" in c or c.startswith(("compare ", "run ")) for c in calls)
    assert "racecheck (smallest tests and benchmark shapes): FAILED" in (tmp_path / "out" / "summary.txt").read_text()


def test_sanitize_0_skips_the_sanitizers_and_says_so(round_env):
    tmp_path, _ = round_env
    done, calls = try_version(round_env, "FASTER", SANITIZE="0")
    assert done.returncode == 0, done.stderr
    assert not any(c.startswith("sanitize ") for c in calls) and any(c.startswith("compare ") for c in calls)
    assert "skipped (SANITIZE=0)" in (tmp_path / "out" / "summary.txt").read_text()


def test_a_failed_soft_check_is_said_and_the_version_goes_on_to_its_timing(round_env):
    tmp_path, _ = round_env
    done, calls = try_version(round_env, "FASTER", FAKE_FAIL="--bad-inputs")
    assert done.returncode == 0, done.stderr
    assert any(c.startswith("compare gemm v1 v2") for c in calls) and len(recorded(calls)) == 2
    assert "bad inputs (test --bad-inputs): FAILED" in (tmp_path / "out" / "summary.txt").read_text()


@pytest.mark.parametrize("name,value", [("SANITIZE", "no"), ("SANITIZE_TIMEOUT", "4m"), ("SANITIZE_TIMEOUT", "0"),
                                        ("STEPS", "tests")])
def test_a_bad_setting_is_refused_before_any_step(round_env, name, value):
    done, calls = try_version(round_env, "FASTER", **{name: value})
    assert done.returncode == 2 and name in done.stderr
    assert calls == []


def test_a_round_naming_a_version_that_does_not_load_stops_before_anything_runs(tmp_path):
    """tools/device_round.sh loads every version and parent its specs name first (the real harness, no GPU): a name
    that does not resolve, or a spec without its parent, stops the round with the reason before any build or step."""
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)  # NOTE: the script's python3 is this interpreter (the harness's)
    env = dict(os.environ, NVFP4_GIT_COMMIT="abc1234", OUT=str(tmp_path / "out"),
               PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(["bash", str(ROOT / "tools" / "device_round.sh"), "gemm:v99999:v1", "gemm:v1"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "gemm:v99999:v1: gemm has no version v99999" in done.stderr
    assert "gemm:v1: a spec is P:V:PARENT[:STEPS[:SANITIZE]]" in done.stderr
    assert not (tmp_path / "out").exists()  # NOTE: refused before the round's output folder was made


def round_with_fakes(round_env, *specs: str, **extra) -> tuple[subprocess.CompletedProcess, list[str]]:
    """tools/device_round.sh with round_env's stand-in harness (its specs still loaded by the real one) on GPU 0."""
    tmp_path, env = round_env
    env = dict(env, FAKE_VERDICTS="FASTER", GPUS="0", **extra)
    done = subprocess.run(["bash", str(ROOT / "tools" / "device_round.sh"), *specs], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    log = tmp_path / "calls.log"
    return done, (log.read_text().splitlines() if log.exists() else [])


@pytest.mark.parametrize("spec,said", [
    ("gemm:v2:v1:checks", "STEPS must be check, time, record or all (or empty), got 'checks'"),
    ("gemm:v2:v1:check:yes", "SANITIZE must be 0 or 1 (or empty), got 'yes'"),
    ("gemm:v2:v1:check:1:x", "a spec is P:V:PARENT[:STEPS[:SANITIZE]]"),
])
def test_a_spec_s_bad_steps_or_sanitize_stops_the_round_before_anything_runs(round_env, spec, said):
    done, calls = round_with_fakes(round_env, "gemm:v3:v2", spec)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert calls == []  # NOTE: no build, no step: the good spec beside it did not run either


@pytest.mark.parametrize("name,value", [("STEPS", "tests"), ("SANITIZE", "no")])
def test_a_bad_round_variable_stops_the_round_before_anything_runs(round_env, name, value):
    done, calls = round_with_fakes(round_env, "gemm:v2:v1", **{name: value})
    assert done.returncode == 2 and name in done.stderr, done.stderr
    assert calls == []


def test_a_spec_s_sanitize_overrides_the_round_s_for_its_version_alone(round_env):
    """SANITIZE=0 for the round, the first spec's own 1: only that version's sanitizers run."""
    done, calls = round_with_fakes(round_env, "gemm:v3:v2:check:1", "gemm:v2:v1:check", SANITIZE="0")
    assert done.returncode == 0, done.stdout + done.stderr
    sanitized = {c.split()[2] for c in calls if c.startswith("sanitize ")}
    assert sanitized == {"v3"}, calls
    assert {c.split()[2] for c in calls if c.startswith("test ")} == {"v2", "v3"}
