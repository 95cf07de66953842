"""``nvfp4 build``: build versions' extensions, several at once, each cached by its source hash.

Two ways, one result type (:class:`harness.compile_only.CompileResult`):

- compile-only (:mod:`harness.compile_only`): nvcc on the submission's contract constants, no GPU
  needed, with ptxas's per-kernel resources. The default where there is no GPU.
- full: import the submission in a child process (its ``load_inline`` builds the extension into
  ``.build/torch_extensions/<source hash>``, the folder the worker uses, so a later ``test`` or
  ``run`` does not build again). A crash or hang while building costs only the child.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from harness import build_cache, compile_only, paths
from harness.compile_only import FAIL, OK, CompileResult
from harness.errors import UserError
from harness.submissions import Submission

# The child: point load_inline at this version's build folder, import (which builds), report.
_CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from harness import build_cache, worker
t0 = time.perf_counter()
with build_cache.building(sys.argv[4], on_wait=print) as stale:
    for lock in stale:
        print(f"nvfp4-build: removed a stale torch lock left by a killed build: {lock}", flush=True)
    worker.import_submission(sys.argv[2], sys.argv[3])
print(f"nvfp4-build: imported in {time.perf_counter() - t0:.1f} s", flush=True)
"""


def choose_mode(compile_only_flag: bool, has_gpu: bool, nvcc: str | None) -> str:
    """'compile-only' or 'full'; compile-only is automatic without a GPU and needs nvcc."""
    if compile_only_flag or not has_gpu:
        if not nvcc:
            why = "--compile-only" if compile_only_flag else "without a GPU, build compiles only, and it"
            raise UserError(f"{why} needs nvcc: none on PATH, under CUDA_HOME or in /usr/local/cuda "
                            "(install the CUDA toolkit)")
        return "compile-only"
    return "full"


def full_build(sub: Submission, timeout_s: float) -> CompileResult:
    """Import ``sub`` in a child (building its extension); OK, or FAIL with the error's first lines."""
    t0 = time.monotonic()
    log = build_cache.logs_dir() / f"build-{sub.problem}-{sub.label.replace('/', '_')}-{os.getpid()}-{time.time_ns()}.log"
    cmd = [sys.executable, "-c", _CHILD, str(paths.REPO_ROOT), str(sub.path), sub.label, sub.source_hash]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=paths.REPO_ROOT, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        finally:  # the child's compiler processes too: the whole group
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
    text = log.read_text(errors="replace")
    result = CompileResult(sub.label, OK, seconds=time.monotonic() - t0, log=str(log))
    if code is None:
        result.status, result.message = FAIL, f"building took over {timeout_s:.0f} s (process group killed)"
    elif code != 0:
        result.status = FAIL
        result.message = f"importing exited with code {code}:\n{compile_only.error_excerpt(text)}"
    return result


def build(subs: list[Submission], mode: str, *, nvcc: str | None = None, jobs: int | None = None,
          timeout_s: float = compile_only.DEFAULT_TIMEOUT_S,
          on_done: Callable[[Submission, CompileResult], None] | None = None) -> list[CompileResult]:
    """Every version of ``subs``, ``jobs`` at a time; results in the order of ``subs``."""
    def one(sub: Submission) -> CompileResult:
        if mode == "compile-only":
            result = compile_only.check(sub, nvcc, timeout_s)
        else:
            result = full_build(sub, timeout_s)
        if on_done:
            on_done(sub, result)
        return result

    if not subs:
        return []
    workers = max(1, min(len(subs), jobs or os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, subs))
