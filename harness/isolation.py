"""Process isolation: every submission runs in a child process in its own process group.

An exception is the item's FAIL; a crash (segfault, ``os._exit``, a CUDA error that poisons the
context) is CRASH for the item in progress; a hang past the limit is TIMEOUT, and the whole
process group is killed. Results already reported are kept, and a fresh child takes the items
left, so one bad shape never hides the others. Importing (which compiles) has its own limit.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness import build_cache, paths

DEFAULT_TIMEOUT_S = 300.0
DEFAULT_COMPILE_TIMEOUT_S = 900.0


@dataclass
class ChildReport:
    device: dict | None = None
    results: dict = field(default_factory=dict)  # item id -> {status, message, stats?}
    logs: list[Path] = field(default_factory=list)


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


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def run_job(job: dict, items: list[dict], *, timeout_s: float = DEFAULT_TIMEOUT_S,
            compile_timeout_s: float = DEFAULT_COMPILE_TIMEOUT_S,
            on_event: Callable[[dict], None] | None = None) -> ChildReport:
    """Runs ``items`` of ``job`` in as many children as crashes require; returns every verdict."""
    report = ChildReport()
    remaining = list(items)
    while remaining:
        finished_all = _run_child(job, remaining, report, timeout_s, compile_timeout_s, on_event)
        remaining = [it for it in remaining if it["id"] not in report.results]
        if finished_all:
            for it in remaining:  # the child said done but skipped some: never silently
                report.results[it["id"]] = {"status": "FAIL", "message": "the worker reported no result"}
            break
    return report


def _run_child(job, items, report: ChildReport, timeout_s, compile_timeout_s, on_event) -> bool:
    """One child over ``items``. True when nothing is left to retry."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    labels = "-".join(s["label"].replace("/", "_") for s in job["submissions"])
    log_path = build_cache.logs_dir() / f"{job['problem']}-{labels}-{job['mode']}-{stamp}-{os.getpid()}.log"
    report.logs.append(log_path)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, dir=build_cache.logs_dir()) as f:
        json.dump(dict(job, items=items, repo_root=str(paths.REPO_ROOT)), f)
        job_path = f.name
    read_fd, write_fd = os.pipe()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "harness.worker", job_path, str(write_fd)],
                                cwd=paths.REPO_ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                pass_fds=(write_fd,), start_new_session=True, env=env)
    os.close(write_fd)
    buffer = b""
    phase, current, deadline = "start", None, time.monotonic() + compile_timeout_s
    import_error = None
    done = False
    try:
        while True:
            wait = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([read_fd], [], [], min(wait, 1.0))
            if not ready:
                if time.monotonic() < deadline:
                    continue
                _kill_group(proc)
                limit = compile_timeout_s if phase in ("start", "import") else timeout_s
                where = "while importing/compiling" if phase in ("start", "import") else "on this shape"
                message = f"TIMEOUT: no result after {limit:.0f} s {where} (process group killed)"
                _mark_rest(report, items, current, "TIMEOUT", message, whole=current is None)
                return current is None
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue
                kind = event.get("event")
                if kind == "device":
                    report.device = {k: v for k, v in event.items() if k != "event"}
                elif kind == "phase":
                    phase = event["phase"]
                    deadline = time.monotonic() + (compile_timeout_s if phase == "import" else timeout_s)
                elif kind == "import_error":
                    import_error = event
                elif kind == "start":
                    current, phase = event["item"], "item"
                    deadline = time.monotonic() + timeout_s
                elif kind == "result":
                    report.results[event["item"]] = {k: v for k, v in event.items() if k not in ("event", "item")}
                    current = None
                elif kind == "done":
                    done = True
                if on_event:
                    on_event(event)
        proc.wait(timeout=60)
    finally:
        os.close(read_fd)
        if proc.poll() is None:
            _kill_group(proc)
        else:  # the child is gone; make sure nothing it started lingers
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            os.unlink(job_path)
        except OSError:
            pass
    if import_error:
        message = f"import failed: {import_error['message']}"
        _mark_rest(report, items, None, "FAIL", message, whole=True)
        return True
    if done:
        return True
    code = proc.returncode
    how = f"killed by {_signal_name(code)}" if code is not None and code < 0 else f"exited with code {code}"
    tail = _tail(log_path)
    if current is None and not report.results.keys() & {it["id"] for it in items}:
        # Died before any item started (during import / compile / setup): every item fails.
        _mark_rest(report, items, None, "CRASH", f"CRASH: child {how} before the first shape"
                   + (f"; log: {tail}" if tail else ""), whole=True)
        return True
    if current is not None:
        report.results[current] = {"status": "CRASH", "message": f"CRASH: child {how}" + (f"; log: {tail}" if tail else "")}
    elif code == 3:
        pass  # CUDA error already reported as the item's CRASH; retry the rest in a fresh child
    return False


def _mark_rest(report, items, current, status, message, whole: bool) -> None:
    if whole:
        for it in items:
            report.results.setdefault(it["id"], {"status": status, "message": message})
    elif current is not None:
        report.results[current] = {"status": status, "message": message}
