"""A file from outside the lab runs in the sandbox (harness/sandbox.py) where a tool works here:
it cannot open the lab's files for writing, and the run says where it ran (CPU)."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from harness import cli, paths, sandbox

WRITES_THE_LEADERBOARD = '''
import os


def custom_kernel(data):
    # opens the lab's leaderboard for appending and writes nothing: refused inside the sandbox
    fd = os.open({path!r}, os.O_WRONLY | os.O_APPEND)
    os.close(fd)
    raise RuntimeError("the lab's leaderboard was writable")
'''


@pytest.mark.skipif(sandbox.available() is None, reason=f"no sandbox here: {sandbox.why_unavailable()}")
def test_an_outside_file_cannot_write_the_lab(tmp_path):
    target = paths.REPO_ROOT / "leaderboard.csv"
    before = target.read_bytes()
    sub = tmp_path / "hostile.py"
    sub.write_text(WRITES_THE_LEADERBOARD.format(path=str(target)))
    r = CliRunner().invoke(cli.main, ["test", "gemm", str(sub), "--shape", "m=128,n=256,k=256", "--seeds", "1",
                                      "--dist", "competition"], catch_exceptions=False)
    flat = " ".join(r.output.split())
    assert r.exit_code == 1 and "Read-only file system" in flat, r.output
    assert "ran sandboxed" in flat
    assert target.read_bytes() == before


@pytest.mark.skipif(sandbox.available() is None, reason=f"no sandbox here: {sandbox.why_unavailable()}")
def test_where_the_sandbox_would_break_cuda_the_file_runs_unsandboxed_and_says_why(tmp_path, monkeypatch):
    from harness import isolation
    monkeypatch.setattr(isolation, "_gpu_here", lambda: True)
    monkeypatch.setattr(isolation, "_clock_cuda", lambda: False)  # the child runs on this CPU all the same
    monkeypatch.setattr(sandbox, "cuda_blocked", lambda *a, **k: "CUDA does not work inside bwrap here (test)")
    sub = tmp_path / "honest.py"
    sub.write_text("from reference.gemm import ref_kernel\n\n\ndef custom_kernel(data):\n"
                   "    c = data[-1]\n    c.copy_(ref_kernel(data))\n    return c\n")
    r = CliRunner().invoke(cli.main, ["test", "gemm", str(sub), "--shape", "m=128,n=256,k=256", "--seeds", "1",
                                      "--dist", "competition"], catch_exceptions=False)
    flat = " ".join(r.output.split())
    assert r.exit_code == 0, r.output
    assert "not sandboxed: CUDA does not work inside bwrap here (test)" in flat


# -- issue 48, item 6: what the sandbox hides, and that it runs every honest stranger -------------
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402

from harness import config, isolation, runner, submissions  # noqa: E402

SHAPE = "m=128,n=256,k=256"
HONEST = ("from reference.gemm import ref_kernel\n\n\ndef custom_kernel(data):\n"
          "    c = data[-1]\n    c.copy_(ref_kernel(data))\n    return c\n")
READS_BESIDE_IT = '''
import os

from reference.gemm import ref_kernel

HERE = {folder!r}


def custom_kernel(data):
    # a stranger's file reads what lies beside it (a file at ~/sub.py reading ~/.ssh)
    # (its own __pycache__ may be there: /tmp inside is its private, writable one)
    for name in sorted(os.listdir(HERE)) if os.path.isdir(HERE) else []:
        if name not in (os.path.basename(__file__), "__pycache__"):
            raise RuntimeError("listed beside the submission: " + name)
    if os.path.exists(os.path.join(HERE, "id_ed25519")):
        raise RuntimeError("read beside the submission: " + open(os.path.join(HERE, "id_ed25519")).read())
    c = data[-1]
    c.copy_(ref_kernel(data))
    return c
'''
_FOUND = sandbox.candidates()
WORKING = [s for s in _FOUND if sandbox.probe(s) is None]
needs_tool = pytest.mark.skipif(not WORKING, reason=f"no sandbox here: {sandbox.why_unavailable()}")
each_tool = pytest.mark.parametrize("box", WORKING or [None], ids=[s.name for s in WORKING] or ["none"])


def _nvfp4(box, *args, env=None, **popen):
    """``python -m harness ARGS`` in a process of its own, with ``box`` as its sandbox (None: the
    one sandbox.available() finds); Popen's keywords pass through."""
    pin = "" if box is None else (f"sandbox._CHOSEN = (sandbox.Sandbox({box.tool!r}, {box.path!r}, {box.version!r}, "
                                  f"frozenset({sorted(box.features)!r})), None); ")
    code = f"import sys; from harness import cli, sandbox; {pin}cli.main(sys.argv[1:], prog_name='nvfp4')"
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], cwd=paths.REPO_ROOT,
                            env=dict(os.environ, COLUMNS="200", **(env or {})), **popen)


@needs_tool
def test_a_file_beside_a_secret_cannot_read_it(tmp_path):
    """The submission's file is shown alone, never its folder: a secret beside it stays hidden."""
    folder = tmp_path / "downloads"
    folder.mkdir()
    (folder / "id_ed25519").write_text("PRIVATE KEY")
    sub = folder / "stranger.py"
    sub.write_text(READS_BESIDE_IT.format(folder=str(folder)))
    r = CliRunner().invoke(cli.main, ["test", "gemm", str(sub), "--shape", SHAPE, "--seeds", "1",
                                      "--dist", "competition"], catch_exceptions=False, env={"COLUMNS": "200"})
    flat = " ".join(r.output.split())
    assert "PRIVATE KEY" not in flat and "beside the submission" not in flat, r.output
    assert r.exit_code == 0 and "ran sandboxed" in flat, r.output


@needs_tool
@each_tool
@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="not running in a virtual environment")
def test_a_venv_reached_through_a_symlink_runs_a_strangers_file(box, tmp_path):
    """sys.executable and sys.prefix as the child names them: a venv at a link inside a hidden
    folder (/tmp here) pointing elsewhere made every outside file CRASH with 'No such file'."""
    link = tmp_path / "venv"
    link.symlink_to(os.path.realpath(sys.prefix), target_is_directory=True)
    python = link / os.path.relpath(sys.executable, sys.prefix)
    sub = tmp_path / "files" / "stranger.py"
    sub.parent.mkdir()
    sub.write_text(HONEST)
    pin = (f"sandbox._CHOSEN = (sandbox.Sandbox({box.tool!r}, {box.path!r}, {box.version!r}, "
           f"frozenset({sorted(box.features)!r})), None); ")
    r = subprocess.run([str(python), "-c", f"import sys; from harness import cli, sandbox; {pin}"
                        "cli.main(sys.argv[1:], prog_name='nvfp4')", "test", "gemm", str(sub), "--shape", SHAPE,
                        "--seeds", "1", "--dist", "competition"], cwd=paths.REPO_ROOT, capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, COLUMNS="200"))
    flat = " ".join(r.stdout.split())
    assert r.returncode == 0 and "1 passed, 0 failed" in flat and "ran sandboxed" in flat, r.stdout + r.stderr


def _holding(token: str) -> list[int]:
    """Live (not zombie) processes whose environment holds ``token``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
            if state != "Z" and token.encode() in open(f"/proc/{pid}/environ", "rb").read():
                found.append(int(pid))
        except OSError:
            pass
    return found


def _worker_running(token: str) -> bool:
    for pid in _holding(token):
        try:
            if b"harness.worker" in open(f"/proc/{pid}/cmdline", "rb").read():
                return True
        except OSError:
            pass
    return False


KILLS = [(box, sig) for box in WORKING for sig in (signal.SIGTERM, signal.SIGKILL)] + [
    ("lab", signal.SIGHUP), ("lab", signal.SIGKILL)]


@pytest.mark.parametrize("box, sig", KILLS, ids=[f"{getattr(b, 'name', 'unsandboxed')}-{s.name}" for b, s in KILLS])
def test_killing_nvfp4_mid_run_leaves_no_child(box, sig, tmp_path):
    """`timeout` (SIGTERM), a closed terminal (SIGHUP) or SIGKILL on nvfp4, a lab version or a
    file in the sandbox: the handler kills every child's process group, and every child (the
    sandbox tool included) has a parent-death signal for the signal no handler sees."""
    token = f"NVFP4_KILL_PROBE_{uuid.uuid4().hex}"
    sub = tmp_path / "stranger.py"
    sub.write_text(HONEST)
    target = "v0" if box == "lab" else sub
    proc = _nvfp4(None if box == "lab" else box, "run", "gemm", target, "--shape", SHAPE, "--budget", "120",
                  "--min-time", "120", env={token: "1"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not _worker_running(token):
            assert proc.poll() is None and time.monotonic() < deadline, "the worker did not start"
            time.sleep(0.1)
        time.sleep(1.0)  # timing under way
        proc.send_signal(sig)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _holding(token) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _holding(token), f"left running after {sig.name}: {_holding(token)}"
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in _holding(token):  # only where the test failed: what it started itself
            os.kill(pid, signal.SIGKILL)


def test_a_sandbox_that_cannot_start_is_a_harness_error(tmp_path, monkeypatch):
    """Not the submission's CRASH: one line, exit 2, and nothing of the submission had run."""
    broken = sandbox.Sandbox("bwrap", "/bin/false", "a tool that exits at once")
    monkeypatch.setattr(sandbox, "available", lambda refresh=False: broken)
    sub = tmp_path / "stranger.py"
    sub.write_text(HONEST)
    r = CliRunner().invoke(cli.main, ["test", "gemm", str(sub), "--shape", SHAPE, "--seeds", "1"],
                           env={"COLUMNS": "200"})
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and "CRASH" not in r.output
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0] == r.stderr.strip().splitlines()[-1], r.stderr
    assert errors[0].startswith("error: the sandbox could not start the worker for stranger.py") and "/bin/false" in errors[0]


def test_a_strangers_compare_prepares_one_process_per_side(tmp_path, monkeypatch):
    """A file from outside the lab against a lab version: two processes for the whole compare (not
    a fresh pair per sample generation), both sandboxed alike, paired blocks in both orders, on
    two shapes."""
    launched = []
    real = isolation.Child.launch

    def counted(self):
        if not self.is_judge:  # each process has its judge beside it (harness.judge)
            launched.append(self.label)
        return real(self)

    monkeypatch.setattr(isolation.Child, "launch", counted)
    copy = tmp_path / "v0_copy.py"
    copy.write_text((paths.REPO_ROOT / "submissions" / "gemm" / "submission_v0.py").read_text())
    subs = [submissions.resolve("gemm", "v0"), submissions.resolve("gemm", str(copy))]
    shapes = [config.parse_shape_option("gemm", text, i) for i, text in enumerate((SHAPE, "m=64,n=128,k=256"))]
    plan = runner.TimingPlan.from_options(budget_s=1.0, pool=1)
    outcome = runner.run(subs, shapes, ["competition"], "compare", plan=plan)
    assert sorted(launched) == ["v0", "v0_copy.py"], launched
    if sandbox.available() is not None:  # like for like: both sides confined alike
        assert set(outcome.sandboxes) == {"v0", "v0_copy.py"}, outcome.sandboxes
    for result in outcome.results:
        assert result.status == "PASS" and result.ratio["processes"] == 2, (result.status, result.message)
        assert result.ratio["pairs"] >= 2 and all(result.ratio["by_order"].values()), result.ratio  # A B, then B A


def test_a_signal_ignored_stays_ignored():
    """Under `nohup` SIGHUP is ignored: the harness must not start dying of it."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN), signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with isolation.reaped_on_signals():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert callable(signal.getsignal(signal.SIGTERM))  # the default action replaced by the reaper
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # and given back
    finally:
        signal.signal(signal.SIGHUP, previous[0])
        signal.signal(signal.SIGTERM, previous[1])
