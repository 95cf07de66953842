"""The child process: imports submissions, checks and times them, reports over a private pipe.

Started by :mod:`harness.isolation` as ``python -m harness.worker JOB.json FD``. Every event is
one JSON line written to file descriptor FD (not stdout, which the submission shares), so a
crash loses only the item in progress. A CUDA error poisons the context: the child reports the
item as CRASH and exits, and the parent starts a fresh child for the items left.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import traceback
from pathlib import Path

EXIT_CUDA_ERROR = 3


class _Channel:
    def __init__(self, fd: int):
        self._out = os.fdopen(fd, "w", buffering=1)

    def emit(self, event: str, **fields) -> None:
        self._out.write(json.dumps({"event": event, **fields}, default=str) + "\n")
        self._out.flush()


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return text[0] if text else type(exc).__name__


def _is_cuda_error(exc: BaseException) -> bool:
    name = type(exc).__name__
    text = str(exc)
    return name in ("AcceleratorError", "CudaError") or "CUDA error" in text or "cudaError" in text


def import_submission(path: str, label: str):
    folder = str(Path(path).parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    compat = str(Path(__file__).parent / "compat")
    if compat not in sys.path:
        sys.path.append(compat)
    name = f"nvfp4_submission_{abs(hash((path, label)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    kernel = getattr(module, "custom_kernel", None)
    if not callable(kernel):
        raise AttributeError(f"{path} does not define a callable custom_kernel(data)")
    return kernel


def _tensors(obj, out: list) -> list:
    import torch
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            _tensors(x, out)
    return out


def _same_bits(torch, a, b) -> bool:
    """Bitwise equality (fp8 and fp4 tensors have no comparison ops; NaN == NaN here)."""
    if a.element_size() == 1:
        return torch.equal(a.view(torch.uint8), b.view(torch.uint8))
    return torch.equal(a, b) or bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())


class CheckedCall:
    """One correctness call: poison outputs, snapshot inputs, call, compare, check."""

    def __init__(self, torch, mod):
        self.torch = torch
        self.mod = mod

    def __call__(self, kernel, data) -> tuple[bool, str]:
        torch = self.torch
        outputs = self.mod.outputs_of(data)
        output_ids = {id(t) for t in outputs}
        inputs = [t for t in _tensors(data, []) if id(t) not in output_ids]
        snapshots = [t.clone() for t in inputs]
        for c in outputs:
            c.fill_(float("nan"))
        result = kernel(data)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        for i, (t, snap) in enumerate(zip(inputs, snapshots)):
            if not _same_bits(torch, t, snap):
                return False, f"custom_kernel modified input tensor #{i} (shape {tuple(t.shape)}, {t.dtype})"
        return self.mod.check(data, result)


def run_item(torch, mod, kernels, job, item, channel) -> dict:
    from harness import timing

    mode = job["mode"]
    params = dict(item["params"])
    base_seed = params.pop("seed")
    dist = item["dist"]
    checked = CheckedCall(torch, mod)
    if mode == "test":
        n_seeds = job.get("seeds", 3)
        for i in range(n_seeds):
            data = mod.generate_input(**params, seed=base_seed + i, dist=dist)
            ok, msg = checked(kernels[0], data)
            if not ok:
                return {"status": "FAIL", "message": f"seed {base_seed + i}: {msg}"}
            del data
        return {"status": "PASS", "message": f"{n_seeds} seeds pass"}

    # run / compare: a pool of independently seeded input sets, each checked before timing.
    settings = timing.TimingSettings(**job.get("timing", {}))
    pool_size = job.get("pool", 4)
    pool = [mod.generate_input(**params, seed=base_seed + i, dist=dist) for i in range(pool_size)]
    channel.emit("progress", item=item["id"], stage="checking")
    for kernel, label in zip(kernels, job["labels"]):
        for i, data in enumerate(pool):
            ok, msg = checked(kernel, data)
            if not ok:
                return {"status": "FAIL", "message": f"{label}, seed {base_seed + i}: {msg}"}
    channel.emit("progress", item=item["id"], stage="timing")
    results = timing.time_calls(torch, list(kernels), pool, settings)
    for label, r in zip(job["labels"], results):
        if r["escape"]:
            return {"status": "FAIL", "message": f"{label}: {r['escape']}", "stats": results}
    return {"status": "PASS", "message": "", "stats": results}


def main(argv: list[str]) -> int:
    job_path, fd = argv[0], int(argv[1])
    channel = _Channel(fd)
    job = json.loads(Path(job_path).read_text())
    repo = job["repo_root"]
    if repo not in sys.path:
        sys.path.insert(0, repo)

    import torch

    from harness import build_cache, machine, roofline
    from reference import problem_module

    mod = problem_module(job["problem"])
    info = machine.device_info(torch)
    if job["mode"] in ("run", "compare") and torch.cuda.is_available():
        channel.emit("progress", item=None, stage="measuring ceilings")
        info["ceilings"] = roofline.ceilings(torch, info["gpu"])
    channel.emit("device", **info)

    kernels = []
    for sub in job["submissions"]:
        channel.emit("phase", phase="import", label=sub["label"])
        t0 = time.perf_counter()
        build_cache.use_for(sub["source_hash"])
        try:
            kernels.append(import_submission(sub["path"], sub["label"]))
        except BaseException as exc:  # noqa: BLE001 - any import failure is the submission's
            channel.emit("import_error", label=sub["label"], message=_one_line(exc),
                         detail=traceback.format_exc(limit=5))
            return 1
        channel.emit("phase", phase="imported", label=sub["label"], seconds=time.perf_counter() - t0)

    for item in job["items"]:
        channel.emit("start", item=item["id"])
        try:
            result = run_item(torch, mod, kernels, job, item, channel)
        except Exception as exc:  # noqa: BLE001 - reported as the item's verdict
            if _is_cuda_error(exc):
                channel.emit("result", item=item["id"], status="CRASH", message=_one_line(exc))
                return EXIT_CUDA_ERROR
            channel.emit("result", item=item["id"], status="FAIL",
                         message=f"custom_kernel raised {_one_line(exc)}", detail=traceback.format_exc(limit=5))
            continue
        channel.emit("result", item=item["id"], **result)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    channel.emit("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
