"""Process isolation: each submission runs in a child process in its own process group.

``Child`` starts ``python -m harness.worker`` with two private pipes (commands in, signed events
out; stdout and stderr go to a log), hands it a fresh channel key with the job, and then serves
one command at a time with a deadline. What can go wrong is a verdict, never a dead tool:

- an exception in ``custom_kernel`` is the item's FAIL (the child goes on);
- a crash (segfault, ``os._exit``, a CUDA error that poisons the context) is CRASH for the item in
  progress; the next command starts a fresh child;
- a command past its deadline is TIMEOUT, and the whole process group is killed;
- a line on the verdict pipe the harness did not sign is TAMPERED, and the child is killed;
- importing (which compiles) has its own, longer limit.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from harness import build_cache, channel, paths

DEFAULT_TIMEOUT_S = 300.0
DEFAULT_COMPILE_TIMEOUT_S = 900.0


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


def _tail(path: Path, lines: int = 6) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:] if line.strip())


class Child:
    """One submission's worker process, restarted on demand after a crash."""

    def __init__(self, job: dict, submission: dict, *, compile_timeout_s: float = DEFAULT_COMPILE_TIMEOUT_S,
                 on_event: Callable[[dict], None] | None = None, extra_env: dict | None = None,
                 together: list[dict] | None = None):
        self.job = job
        self.submission = submission
        self.together = list(together or [])  # more submissions imported into this same process
        self.compile_timeout_s = compile_timeout_s
        self.on_event = on_event
        self.extra_env = extra_env or {}
        self.proc: subprocess.Popen | None = None
        self.device: dict | None = None
        self.logs: list[Path] = []
        self.import_failure: ChildFailure | None = None  # an import error is final: never retried

    @property
    def label(self) -> str:
        return self.submission["label"]

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        if self.import_failure:
            raise self.import_failure
        stamp = time.strftime("%Y%m%d-%H%M%S")
        log_path = build_cache.logs_dir() / (f"{self.job['problem']}-{self.label.replace('/', '_')}-"
                                             f"{self.job['mode']}-{stamp}-{os.getpid()}-{len(self.logs)}.log")
        self.logs.append(log_path)
        cmd_read, self._cmd_write = os.pipe()
        self._event_read, event_write = os.pipe()
        env = dict(os.environ, PYTHONUNBUFFERED="1", **self.extra_env)
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "harness.worker", str(cmd_read), str(event_write)],
                cwd=paths.REPO_ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                pass_fds=(cmd_read, event_write), start_new_session=True, env=env)
        os.close(cmd_read)
        os.close(event_write)
        self._log_path = log_path
        key = channel.new_key()
        self._receiver = channel.Receiver(key)
        job = dict(self.job, submission=self.submission, together=self.together, repo_root=str(paths.REPO_ROOT),
                   code_root=str(paths.CODE_ROOT))
        self._send({"key": key.hex(), "job": job})
        try:
            event = self._await(("ready", "import_error"), self.compile_timeout_s, "while importing/compiling")
        except ChildFailure as exc:
            if exc.status == "CRASH":
                exc = ChildFailure("CRASH", f"{exc.message} before the first shape (import/compile)")
            raise
        if event["event"] == "import_error":
            self.stop()
            status = event.get("status", "FAIL")
            message = event["message"] if status == "TAMPERED" else f"import failed: {event['message']}"
            if self.together and event.get("label"):
                message = f"{event['label']}: {message}"
            self.import_failure = ChildFailure(status, message)
            raise self.import_failure

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self._send({"cmd": "exit"})
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()

    def _kill(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the child and anything it started
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for fd in (self._cmd_write, self._event_read):
            try:
                os.close(fd)
            except OSError:
                pass
        self.proc = None

    # -- commands ---------------------------------------------------------------------------
    def request(self, command: dict, timeout_s: float) -> dict:
        """Sends one command and returns its reply; starts the child if needed. Raises ChildFailure."""
        if not self.alive():
            self.start()
        try:
            self._send(command)
        except OSError:
            pass  # the child is gone; _await reports how
        event = self._await(("reply",), timeout_s, "on this shape")
        reply = {k: v for k, v in event.items() if k != "event"}
        if reply.get("status") == "CRASH" or reply.pop("restart", False):
            self._kill()
        return reply

    def _send(self, obj: dict) -> None:
        data = (json.dumps(obj) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self._cmd_write, view):]

    def _await(self, kinds: tuple[str, ...], timeout_s: float, where: str) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            wait = deadline - time.monotonic()
            if wait <= 0:
                self._kill()
                raise ChildFailure("TIMEOUT", f"TIMEOUT: no result after {timeout_s:.0f} s {where} (process group killed)")
            ready, _, _ = select.select([self._event_read], [], [], min(wait, 1.0))
            if not ready:
                continue
            chunk = os.read(self._event_read, 65536)
            if not chunk:
                raise self._died()
            try:
                events = self._receiver.feed(chunk)
            except channel.Tampered as exc:
                self._kill()
                raise ChildFailure("TAMPERED", f"TAMPERED: {exc}") from None
            for event in events:
                if event.get("event") == "device":
                    self.device = {k: v for k, v in event.items() if k != "event"}
                if event.get("event") == "phase" and event.get("phase") == "import":
                    deadline = time.monotonic() + self.compile_timeout_s
                if self.on_event:
                    self.on_event(dict(event, label=event.get("label", self.label)))
                if event.get("event") in kinds:
                    return event

    def _died(self) -> ChildFailure:
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            code = None
        self._kill()
        how = f"killed by {_signal_name(code)}" if code is not None and code < 0 else f"exited with code {code}"
        tail = _tail(self._log_path)
        return ChildFailure("CRASH", f"CRASH: child {how}" + (f"; log: {tail}" if tail else ""))
