"""Every option a user can get wrong, one row each: the exact exit code and one-line message, before
anything is measured (issue 50). Then what must survive a bad path or a failing report: the record,
the leaderboard's header, no orphan sidecar; the exit codes of refused versions; the checkout; and
Ctrl-C mid-run, which must leave no child behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from harness import cli, leaderboard, paths, report

REPO_ROOT = Path(__file__).resolve().parent.parent
SLEEPS_FOREVER = REPO_ROOT / "tests" / "adversarial" / "sleeps_forever.py"
SHAPE = "m=128,n=256,k=256"
HUGE_SEED = "123456789012345678901234"


def invoke(*args, env=None):
    return CliRunner().invoke(cli.main, [str(a) for a in args], env={"COLUMNS": "200", **(env or {})})


def error_line(result) -> str:
    """The one line on stderr, after checking there is exactly one and no traceback."""
    assert "Traceback" not in result.output, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# (arguments, exit code, the error line's start). Click's own errors end with "(see: ... -h)".
CASES = [
    # numbers: finite, in range, one type (harness.cli.Number)
    (("test", "gemv", "v0", "--timeout", "-5"), 2, "error: Invalid value for '--timeout': '-5': must be > 0 (seconds)"),
    (("test", "gemv", "v0", "--timeout", "nan"), 2, "error: Invalid value for '--timeout': 'nan' is not a finite number"),
    (("build", "gemv", "v0", "--compile-only", "--timeout", "nan"), 2,
     "error: Invalid value for '--timeout': 'nan' is not a finite number"),
    (("run", "gemv", "v0", "--budget", "nan"), 2, "error: Invalid value for '--budget': 'nan' is not a finite number"),
    (("run", "gemv", "v0", "--budget", "inf"), 2, "error: Invalid value for '--budget': 'inf' is not a finite number"),
    (("run", "gemv", "v0", "--compile-timeout", "-1"), 2,
     "error: Invalid value for '--compile-timeout': '-1': must be > 0 (seconds)"),
    (("run", "gemv", "v0", "--min-time", "-1"), 2, "error: Invalid value for '--min-time': '-1': must be >= 0 (seconds)"),
    (("run", "gemv", "v0", "--target", "0"), 2,
     "error: Invalid value for '--target': '0': must be > 0 and <= 1 (a fraction of the mean)"),
    (("run", "gemv", "v0", "--min-repeats", "1.5"), 2, "error: Invalid value for '--min-repeats': '1.5' is not an integer"),
    (("run", "gemv", "v0", "--pool", "0"), 2, "error: Invalid value for '--pool': '0': must be >= 1"),
    (("run", "gemv", "v0", "--processes", "0"), 2, "error: Invalid value for '--processes': '0': must be >= 1"),
    (("test", "gemv", "v0", "--seeds", "0"), 2, "error: Invalid value for '--seeds': '0': must be >= 1"),
    (("ceilings", "--measure", "-1"), 2, "error: Invalid value for '--measure': '-1': must be >= 0"),
    (("diff", "gemv", "v0", "v0", "-U", "-1"), 2, "error: Invalid value for '-U' / '--context': '-1': must be >= 0"),
    (("compare", "gemv", "v0", "v0", "--margin", "5"), 2,
     "error: Invalid value for '--margin': '5': must be > 0 and <= 0.5 (a fraction: 0.02 = ±2%)"),
    (("compare", "gemv", "v0", "v0", "--recorded", "--margin", "5"), 2,
     "error: Invalid value for '--margin': '5': must be > 0 and <= 0.5"),
    (("compare", "gemv", "v0", "v0", "--margin", "-1"), 2, "error: Invalid value for '--margin': '-1': must be > 0"),
    (("compare", "gemv", "v0", "v0", "--precision", "0"), 2, "error: Invalid value for '--precision': '0': must be > 0"),
    (("compare", "gemv", "v0", "v0", "--max-regression", "1.5"), 2,
     "error: Invalid value for '--max-regression': '1.5': must be >= 0 and <= 1"),
    (("run", "gemv", "v0", "--shapes", "tests:-1"), 2, "error: --shapes 'tests:-1': gemv has 10 tests shapes (0..9)"),
    (("test", "gemv", "v0", "--shape", f"m=128,k=256,seed={HUGE_SEED}"), 2,
     f"error: --shape 'm=128,k=256,seed={HUGE_SEED}': seed must be an integer from 0 to 2**62, got {HUGE_SEED}"),
    (("test", "gemv", "v0", "--shape", "m=128,k=256,seed=-1"), 2, "error: --shape 'm=128,k=256,seed=-1': seed must be"),
    # options that would have no effect: not offered, or refused
    (("compare", "gemv", "v0", "v0", "--target", "0.1"), 2, "error: No such option '--target'"),
    (("compare", "gemv", "v0", "v0", "--min-repeats", "3"), 2, "error: No such option '--min-repeats'"),
    (("compare", "gemv", "v0", "v0", "--warm"), 2, "error: No such option '--warm'"),
    (("compare", "gemv", "v0", "v0", "--isolated", "--precision", "0.1", "--min-time", "1"), 2,
     "error: --precision and --min-time have no effect with --isolated: its processes stop by process generations"),
    (("compare", "gemv", "v0", "v0", "--processes", "4", "--max-processes", "8"), 2,
     "error: --processes and --max-processes have no effect without --isolated: they count its process generations"),
    (("compare", "gemv", "v0", "v0", "--untrusted", "--max-processes", "8"), 2,
     "error: --max-processes has no effect without --isolated"),
    (("compare", "gemv", "v0", "v0", "--recorded", "--shapes", "tests", "--isolated", "--budget", "1"), 2,
     "error: --shapes, --isolated and --budget have no effect with --recorded: it measures nothing, it compares "
     "recorded runs"),
    (("compare", "gemv", "v0", "v0", "--recorded", "--shape", SHAPE), 2, "error: --shape has no effect with --recorded"),
    (("table", "gemv", "--recorded", "--versions", "nosuch"), 2,
     "error: --versions: no recorded gpumode rows (dirty flush) of gemv nosuch"),
    (("table", "gemv", "--recorded", "--budget", "1", "--record"), 2,
     "error: --record and --budget have no effect with --recorded: it measures nothing"),
    (("table", "gemv", "--published", "--versions", "v0"), 2,
     "error: --versions has no effect with --published: it prints the writeup's table as published"),
    (("table", "gemv", "--recorded", "--markdown", "--versions", "v0"), 2, "error: --versions has no effect with --markdown"),
    (("run", "gemv", "v0", "--allow-cpu"), 2, "error: --allow-cpu has no effect without --record"),
    (("table", "gemv", "--recorded", "--allow-cpu"), 2, "error: --allow-cpu has no effect with --recorded: it measures nothing"),
    (("run", "gemv", "v0", "--json", "--format", "csv"), 2, "error: --json and --format csv do not combine"),
    (("run", "gemv", "v0", "--graph", "--queued"), 2, "error: --graph and --queued do not combine"),
    (("run", "gemv", "v0", "--warm", "--method", "gpumode"), 2, "error: --warm times warm calls beside cold-method ones"),
    (("leaderboard", "gemv", "--method", "warm"), 2, "error: Invalid value for '--method': 'warm' is not one of"),
    (("leaderboard", "gemv", "--mode", "cold"), 2, "error: No such option '--mode'"),
    # session 51's audit: combinations where one option made another do nothing
    (("list", "gemv", "--format", "table", "-o", "list.json"), 2,
     "error: -o list.json writes json, csv or md, and --format table prints to the terminal only"),
    (("leaderboard", "gemv", "--format", "table", "-o", "board.csv"), 2, "error: -o board.csv writes json, csv or md"),
    (("run", "gemv", "v0", "--json", "-o", "run.csv"), 2,
     "error: -o run.csv names a csv file and --format says json: make them agree"),
    (("run", "gemm", "v0", "--pool", "2"), 2,
     "error: --pool has no effect with the gpumode method on gemm: a block is the competition's batch of distinct "
     "input sets (gemm's 50); another --method takes --pool"),
    (("compare", "dual_gemm", "v0", "v0", "--method", "gpumode", "--pool", "2"), 2,
     "error: --pool has no effect with the gpumode method on dual_gemm"),
    (("table", "group_gemm", "--pool", "2"), 2,
     "error: --pool has no effect with the gpumode method on group_gemm: a block is the competition's batch of "
     "distinct input sets (group_gemm's 15)"),
    (("table", "gemv", "--versions", "v0", "--all"), 2,
     "error: --all has no effect with --versions: the versions it names are the ones shown"),
    (("table", "gemv", "--recorded", "--versions", "v0", "--all"), 2, "error: --all has no effect with --versions"),
    (("table", "gemv", "--method", "cold", "--warm"), 2,
     "error: --warm has no effect on table: its rows show one mean per shape"),
    (("compare", "gemv", "v0", "v0", "--isolated", "--processes", "6", "--max-processes", "4"), 2,
     "error: --max-processes 4 is below --processes 6: no generation past --processes would be added"),
    (("profile", "gemv", "v0", "--ncu", "--top", "3"), 2,
     "error: --top has no effect with --ncu: it prints Nsight Compute's summary"),
    (("profile", "gemv", "v0", "--sass", "10"), 2,
     "error: --sass has no effect without --ncu: the instructions' samples are Nsight Compute's"),
    (("probe", "marks", "gemv", "v0", "--header", "--calls", "3"), 2,
     "error: PROBLEM, VERSION and --calls have no effect with --header: it prints the marks header and exits"),
    (("probe", "ablate", "gemv", "v0", "--list", "--rounds", "3", "--shapes", "tests"), 2,
     "error: --shapes and --rounds have no effect with --list: it lists the variants and exits"),
    # paths checked before measuring
    (("run", "gemv", "v0", "--record", "-o", "/nonexistent/x.json"), 2, "error: -o /nonexistent/x.json: no folder /nonexistent"),
    (("list", "-o", "/nonexistent/list.json"), 2, "error: -o /nonexistent/list.json: no folder /nonexistent"),
    (("list", "-o", "/"), 2, "error: Invalid value for '-o' / '--output': File '/' is a directory."),
    (("table", "gemv", "--plot", "/nonexistent/x.png"), 2, "error: --plot /nonexistent/x.png: no folder /nonexistent"),
    (("export", "gemv", "v0", "-o", "/nonexistent/x.py"), 2, "error: -o /nonexistent/x.py: no folder /nonexistent"),
    # click's usage errors are one line too
    (("test", "gemv"), 2, "error: Missing argument 'VERSION'."),
    (("run", "gemv", "v0", "--no-such-option"), 2, "error: No such option '--no-such-option'"),
]


@pytest.mark.parametrize("args, code, message", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_a_bad_option_is_one_line_and_its_exit_code(args, code, message):
    r = invoke(*args)
    assert r.exit_code == code, r.output
    assert error_line(r).startswith(message), error_line(r)


# ---------------------------------------------------------------------------------------- records
def test_record_into_an_unknown_header_is_refused_before_measuring_and_leaves_no_sidecar(isolated_env):
    board = isolated_env["leaderboard"]
    board.write_text("when,what\n1,2\n")
    r = invoke("run", "gemv", "v0", "--shape", "m=128,k=256", "--record")
    assert r.exit_code == 2
    assert error_line(r) == f"error: {board}: unknown leaderboard columns; expected a prefix of {','.join(leaderboard.COLUMNS)}"
    assert board.read_text() == "when,what\n1,2\n"
    assert not leaderboard.sidecar_dir(board).exists()


def test_append_into_an_unknown_header_writes_no_sidecar(tmp_path):
    board = tmp_path / "other.csv"
    board.write_text("when,what\n")
    with pytest.raises(ValueError, match="unknown leaderboard columns"):
        leaderboard.append([{"problem": "gemv", "version": "v0"}], board, sidecars=[{}])
    assert not leaderboard.sidecar_dir(board).exists()


def test_the_record_is_written_before_a_report_that_fails(isolated_env, tmp_path, monkeypatch):
    def disk_full(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report, "emit", disk_full)
    out = tmp_path / "run.json"
    r = invoke("run", "gemv", "v0", "--shape", "m=128,k=256", "--record", "--allow-cpu", "--budget", "0.2", "--pool", "1",
               "--min-repeats", "3", "-o", out)
    assert r.exit_code == 2, r.output
    assert r.stderr.strip().splitlines()[-1] == f"error: -o {out}: cannot write it (No space left on device)"  # after progress
    rows = leaderboard.read(isolated_env["leaderboard"])
    assert [(row["problem"], row["version"], row["status"]) for row in rows] == [("gemv", "v0", "PASS")]


# ------------------------------------------------------------------------------ harness failures
class _FailingReference:
    """A problem module whose input generation fails (as a 24-digit seed made torch's generator do)."""

    @staticmethod
    def generate_input(**_params):
        raise RuntimeError("Overflow when unpacking long")


def test_failing_input_generation_is_a_harness_error_not_the_kernels():
    from harness import worker
    w = worker.Worker.__new__(worker.Worker)
    w.torch, w.mod = torch, _FailingReference()
    with pytest.raises(worker.HarnessFault, match=r"generating the inputs of seed 7 failed: RuntimeError: Overflow"):
        w._inputs({"m": 128}, 7, "competition")


# ----------------------------------------------------------------------------------- exit codes
HOPPER_ONLY = '"""A Hopper kernel.\n\nArch: sm_90a\n"""\n\n\ndef custom_kernel(data):\n    return data[-1]\n'


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for machines without the GPU")
@pytest.mark.parametrize("command", [("run", "gemv", "{f}", "--shapes", "tests:0"),
                                     ("table", "gemv", "--versions", "{f}", "--shapes", "tests")])
def test_every_version_refused_exits_1_in_run_and_table(tmp_path, command):
    f = tmp_path / "hopper_only.py"
    f.write_text(HOPPER_ONLY)
    r = invoke(*[str(f) if a == "{f}" else a for a in command])
    assert r.exit_code == 1, r.output
    assert "needs an NVIDIA GPU with sm_90a" in r.output and "Traceback" not in r.output


# ------------------------------------------------------------------------------------ checkout
def test_a_second_checkout_is_refused_when_the_code_comes_from_another(tmp_path):
    """The code of this checkout run inside another lab (an nvfp4 installed from elsewhere) stops
    with one line rather than list, record or write into the wrong tree."""
    lab = tmp_path / "other-checkout"
    (lab / "submissions").mkdir(parents=True)
    (lab / "shapes.yaml").write_text("{}\n")
    code = f"import sys; sys.path.insert(0, {str(REPO_ROOT)!r}); from harness.cli import main; main()"
    env = {k: v for k, v in os.environ.items() if k != "NVFP4_ROOT"}
    done = subprocess.run([sys.executable, "-c", code, "list"], cwd=lab, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (f"error: this folder is in the checkout {lab.resolve()}, but this nvfp4 runs the "
                                   f"code of {REPO_ROOT}: run `python -m harness` from {lab.resolve()}, `pip install -e "
                                   f"{lab.resolve()}`, or set NVFP4_ROOT to the lab you mean")
    assert done.stdout == ""


def test_the_enclosing_checkout_is_the_lab(tmp_path, monkeypatch):
    monkeypatch.delenv("NVFP4_ROOT", raising=False)
    lab = tmp_path / "lab"
    (lab / "submissions" / "gemm").mkdir(parents=True)
    (lab / "shapes.yaml").write_text("{}\n")
    monkeypatch.chdir(lab / "submissions" / "gemm")
    assert paths.find_root() == lab.resolve()  # though the code's own checkout is a lab too


# ------------------------------------------------------------------------------- killed mid-run
def _descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, todo = set(), [pid]
    while todo:
        pid = todo.pop()
        kids = [p for p, parent in parents.items() if parent == pid]
        found.update(kids)
        todo.extend(kids)
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
# NOTE: Ctrl-C here; SIGTERM, SIGHUP and SIGKILL are tests/test_untrusted.py's (harness.isolation.reaped_on_signals)
@pytest.mark.parametrize("signum", [signal.SIGINT])
def test_killing_nvfp4_mid_run_leaves_no_child(signum, tmp_path):
    # NOTE: stderr kept and faulthandler on: an exit that does not come dumps every thread's stack (SIGABRT)
    # into the failure's message, so a slow exit on CI says where it was
    stderr = (tmp_path / "stderr.txt").open("w")
    # NOTE: SIGINT as a terminal's foreground job has it: a run started in the background (`cmd &` in a
    # script: CI launched that way) inherits SIGINT ignored, Python then never raises KeyboardInterrupt,
    # and nvfp4 sat in its wait loop 60 s after the signal (the stacks below said so)
    proc = subprocess.Popen([sys.executable, "-X", "faulthandler", "-m", "harness", "test", "gemm", str(SLEEPS_FOREVER),
                             "--shape", SHAPE, "--timeout", "120"], cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=stderr,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 25
        children: set[int] = set()
        while time.monotonic() < deadline:  # NOTE: until the worker runs the kernel that never returns
            children = _descendants(proc.pid)
            if any(b"harness.worker" in Path(f"/proc/{p}/cmdline").read_bytes() for p in children if _alive(p)):
                break
            time.sleep(0.2)
        assert children, "the run started no child"
        time.sleep(3)  # NOTE: long enough for the worker to be inside the kernel that never returns
        children |= _descendants(proc.pid)
        proc.send_signal(signum)
        # NOTE: Ctrl-C kills the children at once (isolation.Child.stop): the polite exit took 10.5 s here,
        # killed 0.5-1.7 s (four CPU burners on two cores); 8 s leaves room and still fails the polite exit
        try:
            code = proc.wait(timeout=8)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGABRT)
            time.sleep(2)
            stderr.flush()
            pytest.fail("nvfp4 still running 8 s after SIGINT; its stderr and stacks:\n"
                        + (tmp_path / "stderr.txt").read_text()[-6000:])
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(p) for p in children):
            time.sleep(0.1)
        left = sorted(p for p in children if _alive(p))
        assert not left, f"children left running after {signal.Signals(signum).name}: {left}"
        assert code != 0
    finally:
        stderr.close()
        if proc.poll() is None:
            proc.kill()
        for pid in _descendants(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
