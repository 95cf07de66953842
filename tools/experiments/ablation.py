"""What the ablation tools (ablate_group_gemm.py, ablate_gemv.py) share: building their patched
variants in parallel child processes, importing a patched file through the harness's build cache,
and timing a submission's kernels alone by torch.profiler with L2 flushed before every call."""
from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path


def load(path: Path):
    """Import a patched file through the harness's build cache: one folder per source text, and a
    torch lock left by a killed build cleared (build_cache.building)."""
    from harness import build_cache, worker
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with build_cache.building(f"ablate{digest}"):
        return worker.import_submission(str(path), path.stem)


def build_in_parallel(commands: list[list[str]]) -> bool:
    """Run each argument list as `python3 <args>` at once (nvcc builds are CPU-bound and
    independent); True when every one succeeded. Every child is waited for."""
    children = [subprocess.Popen([sys.executable, *argv]) for argv in commands]
    codes = [c.wait() for c in children]
    return all(code == 0 for code in codes)


def kernel_us(torch, fn, data, calls: int, kernels: dict[str, str]) -> dict[str, list[float]]:
    """`calls` calls of fn(data) in one torch.profiler session, L2 flushed (harness.timing.flush)
    before each. For each label of `kernels` (label -> a substring of the kernel's name): the mean
    device µs per call of every matching kernel, one entry per matching kernel name."""
    from torch.profiler import ProfilerActivity, profile

    from harness import timing
    from harness.profile import kernel_rows
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            timing.flush()
            fn(data)
        torch.cuda.synchronize()
    return per_label(kernel_rows(torch, prof, True), kernels)


def per_label(rows: list[dict], kernels: dict[str, str]) -> dict[str, list[float]]:
    """harness.profile.kernel_rows' rows ({name, calls, total_us}) sorted to the first label whose
    name fragment they contain, as µs per call; rows matching none are dropped."""
    out: dict[str, list[float]] = {label: [] for label in kernels}
    for row in rows:
        for label, fragment in kernels.items():
            if fragment in row["name"]:
                out[label].append(row["total_us"] / row["calls"])
                break
    return out
