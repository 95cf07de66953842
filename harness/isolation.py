"""Process isolation: each submission runs in a child process in its own process group.

``Child`` starts ``python -m harness.worker`` with two private pipes (commands in, signed events
out; stdout and stderr go to a log), hands it a fresh channel key with the job, and then serves
one command at a time with a deadline. What can go wrong is a verdict, never a dead tool:

- an exception in ``custom_kernel`` is the item's FAIL (the child goes on);
- a crash (segfault, ``os._exit``, a CUDA error that poisons the context) is CRASH for the item in
  progress; the next command starts a fresh child;
- a command past its deadline is TIMEOUT, and the whole process group is killed;
- a line on the verdict pipe the harness did not sign is TAMPERED, and the child is killed;
- importing (which compiles) has its own, longer limit;
- a sandboxed child that dies before its worker began importing the submission is
  :class:`SandboxBroken`, the harness's failure (one line, exit 2), never the submission's CRASH;
- no child outlives the harness: each has a parent-death signal (SIGKILL when the thread that
  started it ends), and within :func:`reaped_on_signals` SIGTERM and SIGHUP kill every live
  child's process group first;
- no figure of an event method's (every method but ``kernel``) and no block's key is the child's
  Python's: each child binds the compiled clock (``harness.clock``, built here before the child
  starts), which writes them, signed under a key the parent passed on a pipe of its own, on a record
  pipe the parent reads beside the events; :func:`harness.clock.read_block` checks a block's records
  (one key a timed pass, one loop record after each, its method, tag and counts, its span within the
  parent's wall clock) and the block's figures are taken from them, never from the child's reply;
- no verdict on an output is the child's: each child has a judge, a second worker process that
  never imports a submission (``harness.judge``). The child leaves every output's bytes in a
  shared memory file; after each ``test``, ``prepare`` and ``block`` reply that the child calls a
  PASS, the judge regenerates the inputs by seed (which seeds: the parent's
  :func:`harness.judge.expected_calls`, from the command it sent), computes the references and
  compares, and its verdict is the reply's.

The parent never trusts the child's bytes, signed or not (a submission can find the signing key
in its own process, see :mod:`harness.channel`):

- deadlines are the parent's: before ``ready`` an ``import`` phase event may push the start-up
  deadline to ``compile_timeout_s`` from its arrival, at most once per submission the parent asked
  the child to import; after ``ready`` nothing the child sends moves a deadline;
- reads are bounded: a verdict-pipe line over ``channel.MAX_LINE_BYTES`` is TAMPERED, and only
  the last ``LOG_TAIL_BYTES`` of the child's log are read back for a CRASH message;
- a line that is not a UTF-8 JSON object event, or an event whose printed fields are not text, is
  TAMPERED (a verdict, never a harness exception);
- every string of an event is passed through :func:`printable` before it leaves this module:
  no terminal escape sequence or control character the child wrote reaches a screen or a file.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from harness import build_cache, channel, clock, judge, paths, sandbox
from harness.errors import UserError

DEFAULT_TIMEOUT_S = 300.0
DEFAULT_COMPILE_TIMEOUT_S = 900.0
# The end of the child's log quoted in a CRASH message: a few lines, so a few KiB are plenty.
LOG_TAIL_BYTES = 16 * 1024
# NOTE: a child whose verdict pipe closed is waited for until its deadline, but at least this long:
# the pipe closes while the process ends and its exit status follows, after the GPU driver's
# descriptors (opened later, closed after the pipe) are released. A child that closed the pipe
# itself and kept running no longer gets a fixed 30 s past a deadline of a few seconds.
EXIT_GRACE_S = 5.0
# The type of each field the parent or its printers (harness.cli.render.Progress) read; an event whose
# field has another type is TAMPERED. Fields not named here are data (samples, device facts).
FIELD_TYPES = {"event": str, "status": str, "message": str, "label": str, "stage": str, "phase": str,
               "detail": str, "item": str, "line": str, "seconds": (int, float)}
# Fields an event must carry, by kind (and by kind and phase): the printers index them.
REQUIRED_FIELDS = {"reply": ("status",), "progress": ("stage",), "phase": ("phase",),
                   ("phase", "imported"): ("seconds",)}
# Kinds only the runner sends (a shape started, a shape's result line): from a child, a forgery.
RUNNER_EVENTS = ("start", "done")
# Fields whose text may span lines (a traceback); every other string is made one line.
MULTILINE_FIELDS = frozenset({"detail"})
IMPORT_STATUSES = ("FAIL", "TAMPERED")  # what an import_error may claim; anything else reads FAIL
MAX_EVENT_DEPTH = 32  # genuine events nest 4 levels (device -> telemetry -> ...); deeper is hostile
# The compiled clock's records a child may leave unread by the parent: a block makes at most six (a
# key and a loop record per timed pass, two passes, and --warm's two loop records); more is a child
# drawing keys to flood the parent.
MAX_CLOCK_RECORDS = 16

# Terminal escape sequences (ECMA-48): CSI (ESC [ or 8-bit 0x9b) with parameters and a final byte;
# OSC (ESC ] or 0x9d) and DCS/SOS/PM/APC strings up to their terminator (BEL or ST), or to the end
# if unterminated; any other ESC + intermediates + final byte (ESC c resets the terminal).
_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x9d\x90\x98\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]")
# What is left after the sequences: C0 controls, DEL, C1 controls, and the Unicode bidi overrides
# and isolates (they reorder what a terminal shows: "PASS" displayed for text that says otherwise).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAK = re.compile(r"\r\n|[\r\n\v\f\u2028\u2029]")


class SandboxBroken(UserError):
    """The sandbox could not start the worker: the harness's (or this machine's) failure, never the
    submission's, which had not run yet; the command stops with one line."""


# -- no child outlives the harness --------------------------------------------------------------
_LIVE: set = set()  # children with a process running, and process groups (``reaped_group``), killed on SIGTERM/SIGHUP
PR_SET_PDEATHSIG = 1
try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):
    _prctl = None


def _dies_with(parent_pid: int) -> Callable[[], None]:
    """The ``preexec_fn`` of every child: SIGKILL when the thread that started it ends (the harness
    killed by SIGKILL, or by a signal it has no handler for), and an exit at once if the parent is
    already gone (it died between fork and prctl)."""
    def preexec() -> None:
        if _prctl is not None:
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent_pid:
            os._exit(1)
    return preexec


class _Group:
    """A process group started outside a ``Child`` (a build beside a table's timing): killed with the
    children on SIGTERM/SIGHUP (``reaped_on_signals``), and by its owner when it is done."""

    def __init__(self, pid: int):
        self.pid = pid

    def _kill_group(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _remove_tmp(self) -> None:  # NOTE: the children's protocol (reap); a bare group keeps no folder
        pass


@contextlib.contextmanager
def reaped_group(pid: int):
    """While inside, the process group ``pid`` leads is killed by ``reaped_on_signals`` as the children
    are; on leaving it is killed (anything it started with it) and forgotten."""
    group = _Group(pid)
    _LIVE.add(group)
    try:
        yield group
    finally:
        group._kill_group()
        _LIVE.discard(group)


def run_group(cmd: list[str], timeout_s: float, **popen) -> tuple[int | None, str]:
    """Run ``cmd`` in a process group of its own; its exit code (None: past ``timeout_s``) and its output (stdout and
    stderr together). On a timeout, on leaving by an exception and on SIGTERM/SIGHUP (``reaped_on_signals``) the whole
    group is killed.
    NOTE: the group, not the child: a tool that runs a program (compute-sanitizer, ncu) leaves that program running
    when only the tool is killed (subprocess.run's timeout did so until session 77, whose first device call lost its
    deadline to sanitizer runs that never ended), and a hung kernel then holds the GPU past the command's end."""
    with tempfile.TemporaryFile() as out, reaped_on_signals():
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, **popen)
        with reaped_group(proc.pid):
            try:
                code = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                code = None
        proc.wait()
        out.seek(0)
        return code, out.read().decode(errors="replace")


@contextlib.contextmanager
def reaped_on_signals():
    """While inside: SIGTERM and SIGHUP (``timeout``, a closed terminal) kill every live child's
    process group before the harness dies of the signal as it would have. Installed only from the
    main thread and only over the default action (``nohup`` ignores SIGHUP: it stays ignored)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}

    def reap(signum, frame):
        # NOTE: no waiting in here: the signal may have come while this thread held a Popen's lock
        for child in list(_LIVE):
            child._kill_group()
            child._remove_tmp()
        signal.signal(signum, previous.get(signum, signal.SIG_DFL))
        os.kill(os.getpid(), signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_DFL:
            previous[signum] = signal.signal(signum, reap)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class ChildFailure(Exception):
    """The child cannot answer: ``status`` is CRASH, TIMEOUT, TAMPERED or FAIL (import)."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def printable(text: str, multiline: bool = False) -> str:
    """``text`` with every terminal escape sequence removed and no control character left.

    Line breaks (CR, LF, CRLF, VT, FF, U+2028/9) become one space, or one LF where ``multiline``;
    a tab becomes a space; every other control character (BEL, BS, NUL, a stray ESC, DEL, C1) and
    the bidi overrides are dropped. The result holds no character in ``_CONTROL`` except LF where
    ``multiline``, so nothing it prints can move the cursor, retitle or clear a terminal."""
    text = _ESCAPE_SEQUENCE.sub("", text)
    text = _LINE_BREAK.sub("\n" if multiline else " ", text).replace("\t", " ")
    if multiline:
        return "\n".join(_CONTROL.sub("", line) for line in text.split("\n"))
    return _CONTROL.sub("", text)


def _printable_tree(value, multiline: bool = False, depth: int = 0):
    """Every string in a decoded JSON value through :func:`printable`; strings under a
    ``MULTILINE_FIELDS`` key keep their line breaks. Tampered past ``MAX_EVENT_DEPTH`` or for a
    key that :func:`printable` would change."""
    if isinstance(value, str):
        return printable(value, multiline)
    if depth >= MAX_EVENT_DEPTH:
        raise channel.Tampered(f"an event nested deeper than {MAX_EVENT_DEPTH} levels")
    if isinstance(value, dict):
        for key in value:
            # NOTE: refused, not cleaned: "status\x07" cleaned to "status" would replace the field
            # checked_event has just type-checked. The worker's keys are plain names.
            if printable(key) != key:
                raise channel.Tampered(f"an event key with control characters: {key[:40]!r}")
        return {k: _printable_tree(v, k in MULTILINE_FIELDS, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable_tree(v, multiline, depth + 1) for v in value]
    return value


def checked_event(event: dict) -> dict:
    """A verified event made safe to read and print: every string through :func:`printable`.

    Raises ``channel.Tampered`` where a field has another type than ``FIELD_TYPES`` says, where a
    ``REQUIRED_FIELDS`` field is missing, where the kind is one of ``RUNNER_EVENTS``, where a key
    holds a control character, or where the event nests past ``MAX_EVENT_DEPTH``: an event that
    would make the parent or a printer raise, or speak for the runner, is the child's fault, not a
    harness error."""
    kind = event.get("event")
    shown = repr(printable(str(kind))[:40])
    if kind in RUNNER_EVENTS:
        raise channel.Tampered(f"a {shown} event, which only the harness itself sends")
    for field, types in FIELD_TYPES.items():
        if field in event and not isinstance(event[field], types):
            raise channel.Tampered(f"a {shown} event whose {field!r} is a {type(event[field]).__name__}")
    for field in REQUIRED_FIELDS.get(kind, ()) + REQUIRED_FIELDS.get((kind, event.get("phase")), ()):
        if field not in event:
            raise channel.Tampered(f"a {shown} event without {field!r}")
    return _printable_tree(event)


def _gpu_here() -> bool:
    """Whether this machine has a CUDA GPU (without creating a context in the parent)."""
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001 - no torch, no GPU to protect
        return False


def _clock_cuda() -> bool:
    """Whether a child's compiled clock times with CUDA events (else the host clock): the parent's
    decision, by whether this machine has a GPU, never the child's (harness.clock)."""
    return _gpu_here()


def _beyond_wall(reply: dict, pool: int, took_us: float) -> str | None:
    """Why a block's reported times cannot be true by the parent's own clock, or None: the calls
    of a block ran inside the request that timed them, so their total is at most its wall time."""
    samples = [reply.get("times_us"), reply.get("warm_times_us") or []]
    if not all(isinstance(s, list) and all(isinstance(t, (int, float)) for t in s) for s in samples):
        return "a block reply whose times are not a list of numbers"
    times = samples[0]
    if not times:
        return "a block reply without times"
    # NOTE: gpumode's samples are a batch's time over its calls: times x calls per sample sums the calls
    total_us = sum(sum(s) * pool / len(s) for s in samples if s)
    if total_us > took_us:
        return (f"the child reported {total_us:.0f} µs of timed calls in a block that took {took_us:.0f} µs "
                "by the parent's clock")
    return None


def _tail(path: Path, lines: int = 6) -> str:
    """The last ``lines`` non-empty lines of the log, one line, made printable; reads at most the
    last ``LOG_TAIL_BYTES`` of the file (a child can write gigabytes to it)."""
    try:
        with open(path, "rb") as log:
            size = log.seek(0, os.SEEK_END)
            log.seek(max(0, size - LOG_TAIL_BYTES))
            data = log.read(LOG_TAIL_BYTES)
    except OSError:
        return ""
    text = data.decode(errors="replace").splitlines()
    if size > LOG_TAIL_BYTES and text:
        text = text[1:]  # the first line was cut by the seek
    kept = [line for line in (printable(raw).strip() for raw in text) if line]
    return " | ".join(kept[-lines:])


class Child:
    """One submission's worker process, restarted on demand after a crash."""

    def __init__(self, job: dict, submission: dict, *, compile_timeout_s: float = DEFAULT_COMPILE_TIMEOUT_S,
                 on_event: Callable[[dict], None] | None = None, extra_env: dict | None = None,
                 together: list[dict] | None = None, untrusted: bool = False, results_fd: int | None = None):
        self.job = job
        # NOTE: a judge (job["judge"]) is handed its owner's shared file; an owner makes one per process
        self.is_judge = bool(job.get("judge"))
        self._results_fd = results_fd
        self._judge: Child | None = None
        self._item: dict | None = None  # the shape being checked (test, prepare): the judge regenerates its inputs
        self._pool = 0  # input sets per block, as the child's prepare reply said (at most what was asked)
        self.submission = submission
        # NOTE: a file the lab did not write runs in harness.sandbox where a tool works here (repo
        # read-only, its own PID namespace, allowlisted environment, no network); else as before.
        self.untrusted = untrusted
        self.sandboxed = ""  # the sandbox's description once started in one
        self.unsandboxed_why = ""  # why an untrusted file ran unsandboxed although a sandbox exists
        self._tmp: str | None = None
        self._import_started = False  # whether the worker said it began importing (submission code may run)
        self.together = list(together or [])  # more submissions imported into this same process
        self.compile_timeout_s = compile_timeout_s
        self.on_event = on_event
        self.extra_env = extra_env or {}
        self.proc: subprocess.Popen | None = None
        self.device: dict | None = None
        self.logs: list[Path] = []
        self.import_failure: ChildFailure | None = None  # an import error is final: never retried
        # NOTE: which of [submission, *together] the last start was importing when it failed (import
        # error, crash, hang), by the parent's count of import events; None: failed before any import
        # or started. A table's shared process (harness.runner.SharedChild) drops that one and goes on.
        self.failed_import: int | None = None
        self._imports_seen = 0
        self._device_seen = False  # per process: the worker reports its device once
        # the compiled clock's side (harness.clock): its record pipe, verified records not yet taken, the
        # tag of the last block asked for, whether the child times with CUDA, gpumode's calls per batch,
        # the flush's own replay time of each kernel's graph (the last prepare's: graph's samples less it)
        self._clock_read: int | None = None
        self._clock_receiver: channel.Receiver | None = None
        self._clock_records: list[dict] = []
        self._command = ""  # the command whose records are being read (what a flood of them is named by)
        self._tag = 0
        self._clock_cuda = False
        self._batch = 1
        self._graph_flush_us: dict[int, object] = {}

    @property
    def label(self) -> str:
        return self.submission["label"]

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        """Launches the child and waits until it has imported its submission(s)."""
        self.launch()
        self.await_ready()

    def launch(self) -> None:
        """Starts the child process and hands it its key and job; returns without waiting.

        NOTE: call this on the thread that keeps running (the main one): every child is bound to
        the thread that forked it (its parent-death signal, :func:`_dies_with`, and bwrap's
        --die-with-parent are PR_SET_PDEATHSIG, which fires when that *thread* exits), so a child
        launched from a short-lived helper thread is killed with it.
        ``await_ready`` may run on any thread."""
        if self.import_failure:
            raise self.import_failure
        # NOTE: built here, by the parent, before any worker starts: a sandboxed child only loads the file
        library = None if self.is_judge else clock.library()
        stamp = time.strftime("%Y%m%d-%H%M%S")
        log_path = build_cache.logs_dir() / (f"{self.job['problem']}-{self.label.replace('/', '_')}-"
                                             f"{self.job['mode']}-{stamp}-{os.getpid()}-{len(self.logs)}.log")
        self.logs.append(log_path)
        cmd_read, self._cmd_write = os.pipe()
        self._event_read, event_write = os.pipe()
        env = dict(os.environ, PYTHONUNBUFFERED="1", **self.extra_env)
        if not self.is_judge:
            self._results_fd = judge.shared_file()
            self._judge = type(self)(dict(self.job, judge=True), {"label": f"{self.label} (judge)", "path": "", "source_hash": ""},
                                compile_timeout_s=self.compile_timeout_s, extra_env=self.extra_env,
                                results_fd=self._results_fd)
            self._judge.launch()
        clock_fds: tuple[int, ...] = ()
        if library is not None:
            key_read, key_write = os.pipe()
            self._clock_read, record_write = os.pipe()
            clock_fds = (key_read, record_write)
            # NOTE: the clock's key: 32 bytes into a pipe whose write end is closed before the child
            # starts (so a child that dies at once is no broken pipe here), read by the clock into C
            # memory before the submission is imported; never on the command pipe
            clock_key = secrets.token_bytes(clock.KEY_BYTES)
            os.write(key_write, clock_key)
            os.close(key_write)
            self._clock_receiver = channel.Receiver(clock_key)
            self._clock_records = []
            os.set_blocking(self._clock_read, False)
            self._clock_cuda = _clock_cuda()
        fds = (cmd_read, event_write, self._results_fd, *clock_fds)
        argv = [sys.executable, "-m", "harness.worker", *map(str, fds)]
        box = sandbox.available() if self.untrusted else None
        if box is not None and _gpu_here():
            blocked = sandbox.cuda_blocked(box, repo_root=paths.REPO_ROOT, code_root=paths.CODE_ROOT, env=env)
            if blocked:
                self.unsandboxed_why, box = blocked, None
        if box is not None:
            self._tmp = tempfile.mkdtemp(prefix="nvfp4-child-")  # its HOME and TMPDIR, removed in _kill
            # NOTE: writable: each imported submission's own extension folder, never the whole build cache
            ext = [build_cache.extensions_dir(s["source_hash"]) for s in (self.submission, *self.together)]
            for folder in ext:
                folder.mkdir(parents=True, exist_ok=True)
            # NOTE: the submission's file alone shown read-only, never its folder: a file at ~/sub.py
            # must not read ~/.ssh (a helper module beside a file in a hidden folder is not shown either)
            # and the real builds' precompiled torch/extension.h read-only (harness.fast_build: built outside)
            own = sorted({str(Path(s["path"]).resolve()) for s in (self.submission, *self.together)} |
                         ({str(library)} if library is not None else set()) | {str(build_cache.pch_dir())})
            argv, env = box.wrap(argv, repo_root=paths.REPO_ROOT, code_root=paths.CODE_ROOT, writable_dir=self._tmp,
                                 pass_fds=fds, env=env, rw_paths=ext, ro_paths=own)
            self.sandboxed = box.describe()
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(
                argv, cwd=paths.REPO_ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                pass_fds=fds, start_new_session=True, env=env,
                preexec_fn=_dies_with(os.getpid()))
        _LIVE.add(self)
        self._import_started = False
        self._imports_seen = 0
        self.failed_import = None
        os.close(cmd_read)
        os.close(event_write)
        for fd in clock_fds:
            os.close(fd)
        # NOTE: a child that stops reading its commands must not block the parent in os.write once
        # the pipe's 64 KiB are full: writes wait in select, under the command's deadline (_send).
        os.set_blocking(self._cmd_write, False)
        self._log_path = log_path
        self._device_seen = False
        key = channel.new_key()
        self._receiver = channel.Receiver(key)
        job = dict(self.job, submission=self.submission, together=self.together, repo_root=str(paths.REPO_ROOT),
                   code_root=str(paths.CODE_ROOT))
        if library is not None:
            job["clock"] = {"library": str(library), "cuda": self._clock_cuda}
        self._launched_at = started = time.monotonic()
        try:
            self._send({"key": key.hex(), "job": job}, started + self.compile_timeout_s)
        except OSError:
            pass  # the child is gone already; await_ready reports how

    def await_ready(self) -> None:
        """Waits for the launched child's import (``ready``); a failure raises ChildFailure."""
        try:
            # Each submission the parent asked for may take compile_timeout_s from its import event.
            event = self._await(("ready", "import_error"), self.compile_timeout_s, "while importing/compiling",
                                since=self._launched_at, import_extensions=1 + len(self.together))
        except ChildFailure as exc:
            self.failed_import = self._importing()
            if self.sandboxed and not self._import_started and exc.status in ("CRASH", "TIMEOUT"):
                how = exc.message.removeprefix(f"{exc.status}: ")
                raise SandboxBroken(f"the sandbox could not start the worker for {self.label} (no submission "
                                    f"code had run): {how}; sandbox: {self.sandboxed.split(':')[0]}") from None
            if exc.status == "CRASH":
                exc = ChildFailure("CRASH", f"{exc.message} before the first shape (import/compile)")
            raise
        if self._judge is not None:
            try:
                self._judge.await_ready()
            except ChildFailure as exc:
                self.stop()
                raise ChildFailure("CRASH", f"harness error: the judge process did not start: {exc.message}") from None
        if event["event"] == "import_error":
            self.failed_import = self._importing() or 0
            self.stop()
            status = event.get("status", "FAIL")
            status = status if status in IMPORT_STATUSES else "FAIL"
            message = event.get("message", "")
            message = message if status == "TAMPERED" else f"import failed: {message}"
            if self.together and event.get("label"):
                message = f"{event['label']}: {message}"
            self.import_failure = ChildFailure(status, message)
            raise self.import_failure

    def _importing(self) -> int | None:
        """The index in [submission, *together] of the import under way (the last one begun)."""
        return min(self._imports_seen, 1 + len(self.together)) - 1 if self._imports_seen else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is None:
            return
        # NOTE: Ctrl-C (a KeyboardInterrupt on its way out through the caller's finally) kills at once: the
        # polite exit below waits up to 10 s for a child that may sit in a kernel that never returns (Ctrl-C
        # on `nvfp4 test` of tests/adversarial/sleeps_forever.py took 10.5 s that way, 0.5 s killed)
        interrupted = isinstance(sys.exc_info()[1], KeyboardInterrupt)
        if self.proc.poll() is None and not interrupted:
            try:
                self._send({"cmd": "exit"}, time.monotonic() + 10)
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired, ChildFailure):
                pass
        self._kill()

    def _kill_group(self) -> None:
        """SIGKILL to the child and anything it started (its process group; in a sandbox, the
        tool's PID namespace goes with it)."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _remove_tmp(self) -> None:
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def _kill(self) -> None:
        if self._judge is not None:
            self._judge._kill()  # NOTE: killed, not asked to exit: it holds nothing, and torch's teardown takes seconds
            self._judge = None
        if self._results_fd is not None and not self.is_judge:
            os.close(self._results_fd)
            self._results_fd = None
        _LIVE.discard(self)
        if self.proc is None:
            return
        self._kill_group()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for fd in (self._cmd_write, self._event_read, self._clock_read):
            try:
                if fd is not None:
                    os.close(fd)
            except OSError:
                pass
        self._clock_read = None
        self.proc = None
        self._remove_tmp()

    # -- commands ---------------------------------------------------------------------------
    def request(self, command: dict, timeout_s: float) -> dict:
        """Sends one command and returns its reply; starts the child if needed. Raises ChildFailure.

        Sending and waiting share one deadline, ``timeout_s`` from now, which nothing the child
        sends can move."""
        if not self.alive():
            self.start()
        self._command = command["cmd"]
        if command["cmd"] == "block":
            self._tag += 1
            command = dict(command, tag=self._tag)  # NOTE: every clock record of this block must carry it
        started = time.monotonic()
        try:
            self._send(command, started + timeout_s)
        except OSError:
            pass  # the child is gone; _await reports how
        event = self._await(("reply",), timeout_s, "on this shape", since=started)
        took_us = (time.monotonic() - started) * 1e6
        reply = {k: v for k, v in event.items() if k != "event"}
        results = reply.pop("results", None)
        records = self._take_clock_records()
        if reply.get("status") == "CRASH" or reply.pop("restart", False):
            self._kill()
            return reply
        if self.is_judge:
            return reply
        refused = self._clock_refusal(command, reply, records)
        if refused:
            self._kill()
            return dict(reply, status="TAMPERED", message=f"TAMPERED: {refused}")
        if command["cmd"] in ("test", "prepare", "block") and reply.get("status") == "PASS":
            key = None
            if command["cmd"] == "block":
                try:
                    got = clock.read_block(records, tag=command["tag"], method=command["method"],
                                           calls=clock.batch_sizes(self._pool, self._batch), wall_us=took_us,
                                           retried=bool(reply.get("escape_retried")),
                                           warm=bool(command.get("warm")) and command["method"] == "cold",
                                           flush_us=self._graph_flush_us.get(command.get("sub", 0)))
                except clock.Refused as exc:
                    self._kill()
                    return dict(reply, status="TAMPERED", message=f"TAMPERED: {exc}")
                key = got.key
                if got.times_us is not None:
                    # NOTE: an event method's figures are the compiled clock's record's, never the child's reply
                    for name in ("times_us", "wall_us", "span_us", "warm_times_us", "escape_retried", "issue_us"):
                        reply.pop(name, None)
                    reply.update(times_us=got.times_us, wall_us=got.wall_us, span_us=got.span_us, issue_us=got.issue_us)
                    if got.warm_times_us is not None:
                        reply["warm_times_us"] = got.warm_times_us
                    if got.escape_retried:
                        reply["escape_retried"] = got.escape_retried
                    if got.escape:
                        return dict(reply, status="FAIL", message=got.escape)
                beyond = _beyond_wall(reply, self._pool, took_us)
                if beyond:
                    self._kill()
                    return dict(reply, status="TAMPERED", message=f"TAMPERED: {beyond}")
            reply = self._judged(command, reply, results, started + timeout_s, key)
        return reply

    def _clock_refusal(self, command: dict, reply: dict, records: list[dict]) -> str | None:
        """Why the compiled clock's records of one request make the child's work TAMPERED whatever its
        reply says, or None: any record outside a block (a key drawn by something besides the harness)
        and any refused call of the clock. A block that says PASS is :func:`harness.clock.read_block`'s."""
        if command["cmd"] != "block":
            if records:
                kinds = ", ".join(sorted({str(r.get("event")) for r in records}))
                return f"the compiled clock wrote {len(records)} record(s) ({kinds}) {clock.outside_block(command['cmd'])}"
            return None
        refused = [r.get("refused") for r in records if r.get("refused")]
        if refused and reply.get("status") != "PASS":
            return clock.refused_calls(refused[-1])
        return None

    def _take_clock_records(self) -> list[dict]:
        """The clock's records written so far (those of the request just answered: the child wrote
        them before its reply), read to the end of what the pipe holds."""
        self._read_clock(drain=True)
        records, self._clock_records = self._clock_records, []
        return records

    def _read_clock(self, drain: bool = False) -> None:
        """One bounded read of the clock's record pipe (``drain``: until it is empty), verified under
        the clock's key; TAMPERED (the child killed) for a line it did not sign, out of order, or
        past ``MAX_CLOCK_RECORDS`` unread."""
        while self._clock_read is not None:
            try:
                chunk = os.read(self._clock_read, 65536)
            except BlockingIOError:
                return
            if not chunk:  # the child closed it or is gone: a record missing is read_block's to refuse
                os.close(self._clock_read)
                self._clock_read = None
                return
            try:
                self._clock_records += [_printable_tree(r) for r in self._clock_receiver.feed(chunk)]
                if len(self._clock_records) > MAX_CLOCK_RECORDS:
                    # NOTE: outside a block any record is already a key drawn by something besides the
                    # harness; a flood there (asks_key_outside_a_block on an H200: its prepare's warm-up
                    # calls drew more than 16) says so, as _clock_refusal would have
                    where = "" if self._command == "block" else f" {clock.outside_block(self._command)}"
                    raise channel.Tampered(f"more than {MAX_CLOCK_RECORDS} records of the compiled clock in one "
                                           f"request{where}")
            except channel.Tampered as exc:
                self._kill()
                raise ChildFailure("TAMPERED", f"TAMPERED: the compiled clock's pipe: {exc}") from None
            if not drain:
                return

    def _judged(self, command: dict, reply: dict, results, deadline: float, key: int | None = None) -> dict:
        """The child's PASS reply with the judge's verdict on its outputs (``harness.judge``) and, where the
        command asks (``digest_outputs``), the judge's digest of each (``outputs``: never the child's own)."""
        reply.pop("outputs", None)
        if command["cmd"] in ("test", "prepare"):
            self._item = command["item"]
        if command["cmd"] == "prepare":
            pool = reply.get("pool")
            if not isinstance(pool, int) or not 1 <= pool <= command["pool"]:
                return dict(reply, status="FAIL", message=f"the child reported a pool of {pool!r} input sets "
                            f"for {command['pool']} asked")
            self._pool = pool
            # NOTE: as the worker cuts gpumode's pool: one call a batch on a machine without CUDA
            self._batch = max(1, int(command.get("batch", 1))) if self._clock_cuda else 1
            # NOTE: per kernel the prepare checked, as the worker lists them (read_block checks each is a number)
            flush = reply.get("flush_us")
            subs = [command["sub"]] if command.get("sub") is not None else range(1 + len(self.together))
            self._graph_flush_us = dict(zip(subs, flush)) if isinstance(flush, list) else {}
        calls = judge.expected_calls(command, self._item, self._pool, 1 + len(self.together), reply, key)
        kind = "test" if command["cmd"] == "test" else "timed"
        # NOTE: a compare's checked pool only: every timed block's inputs differ by the block's own key
        digests = command["cmd"] == "prepare" and bool(command.get("digest_outputs"))
        try:
            verdict = self._judge.request({"cmd": "check", "item": self._item, "calls": calls, "results": results,
                                           "kind": kind, "digests": digests}, max(1.0, deadline - time.monotonic()))
        except ChildFailure as exc:
            self._kill()
            raise ChildFailure(exc.status, f"harness error: the judge {exc.message}") from None
        if command["cmd"] == "test":
            return dict(reply, **verdict)
        if verdict.get("status") != "PASS":
            return dict(reply, status=verdict.get("status", "FAIL"), message=verdict.get("message", ""),
                        sub=verdict.get("sub", reply.get("sub")))
        digested = verdict.get("digests")
        if digests and isinstance(digested, list) and len(digested) == len(calls):
            # NOTE: per call the seed (so the input set: the same in every process of a compare) and kernel
            reply = dict(reply, outputs=[{"seed": call["seed"], "sub": call["sub"], "digest": digest}
                                         for call, digest in zip(calls, digested)])
        return reply

    def _send(self, obj: dict, deadline: float) -> None:
        """Writes one command line; TIMEOUT (the child killed) if the child has not taken it all by
        ``deadline`` (it stopped reading). OSError where the child is gone."""
        data = (json.dumps(obj) + "\n").encode()
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._cmd_write, view):]
            except BlockingIOError:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    self._kill()
                    raise ChildFailure("TIMEOUT", "TIMEOUT: the child stopped reading its commands "
                                       "(process group killed)") from None
                select.select([], [self._cmd_write], [], min(wait, 1.0))

    def _await(self, kinds: tuple[str, ...], timeout_s: float, where: str, *, since: float | None = None,
               import_extensions: int = 0) -> dict:
        """The first event of one of ``kinds``, every event before it passed to ``on_event``
        (after :func:`checked_event`). TIMEOUT ``timeout_s`` after ``since`` (default: now).

        The deadline moves only for an ``import`` phase event, and only for the first
        ``import_extensions`` of them (the parent's count of submissions it asked the child to
        import; 0 after ``ready``): to ``compile_timeout_s`` after that event, never earlier. So
        the wait ends at most ``(1 + import_extensions) * compile_timeout_s`` after ``since``."""
        started = time.monotonic() if since is None else since
        deadline = started + timeout_s
        # NOTE: counted here, never from the child's words: a submission that signed an "import"
        # phase event every second kept a 5 s compile timeout alive for 52 s when each one reset it.
        extensions_left = import_extensions
        while True:
            wait = deadline - time.monotonic()
            if wait <= 0:
                self._kill()
                raise ChildFailure("TIMEOUT", f"TIMEOUT: no result after {deadline - started:.0f} s {where} "
                                   "(process group killed)")
            watched = [self._event_read] + ([self._clock_read] if self._clock_read is not None else [])
            ready, _, _ = select.select(watched, [], [], min(wait, 1.0))
            if self._clock_read is not None and self._clock_read in ready:
                self._read_clock()  # NOTE: read as it comes, so a child never blocks on a full record pipe
            if self._event_read not in ready:
                continue
            # NOTE: one bounded read per turn, and the deadline is checked before the next: a child
            # that floods the pipe with valid events cannot keep the parent in here past it.
            chunk = os.read(self._event_read, 65536)
            if not chunk:
                raise self._died(deadline)
            try:
                events = [checked_event(event) for event in self._receiver.feed(chunk)]
                for event in events:
                    if event["event"] == "device":
                        if self._device_seen:
                            # the worker sends its device once, before any submission code runs
                            raise channel.Tampered("a second device event (the device is reported once, "
                                                   "before the submission is imported)")
                        self._device_seen = True
            except channel.Tampered as exc:
                self._kill()
                raise ChildFailure("TAMPERED", f"TAMPERED: {exc}") from None
            for event in events:
                if event["event"] == "device":
                    self.device = {k: v for k, v in event.items() if k != "event"}
                if event["event"] == "phase" and event["phase"] == "import":
                    self._import_started = True  # from here on the submission's code may run
                    if import_extensions > 0:
                        self._imports_seen += 1
                if event["event"] == "phase" and event["phase"] == "import" and extensions_left > 0:
                    extensions_left -= 1
                    deadline = max(deadline, time.monotonic() + self.compile_timeout_s)
                if self.on_event:
                    self.on_event(dict(event, label=event.get("label", self.label)))
                if event["event"] in kinds:
                    return event

    def _died(self, deadline: float) -> ChildFailure:
        """CRASH for a child whose verdict pipe closed: its exit status (waited for until
        ``deadline``, at least ``EXIT_GRACE_S``) and the end of its log."""
        try:
            code = self.proc.wait(timeout=max(EXIT_GRACE_S, deadline - time.monotonic()))
            if self.sandboxed:
                code = sandbox.returncode(code)  # the tools report death by signal N as 128 + N
        except subprocess.TimeoutExpired:
            code = None
        self._kill()
        if code is None:
            how = "closed its verdict channel and did not exit (process group killed)"
        elif code < 0:
            how = f"killed by {_signal_name(code)}"
        else:
            how = f"exited with code {code}"
        tail = _tail(self._log_path)
        return ChildFailure("CRASH", f"CRASH: child {how}" + (f"; log: {tail}" if tail else ""))
