"""``nvfp4 doctor``: what this machine can do: GPU and arch, driver, CUDA, torch, the CUDA tools
found (nvcc, ncu, compute-sanitizer, nvdisasm), the build cache's location and size, the sandbox a
submission's child can run in (:mod:`harness.sandbox`), and so which commands run here."""

from __future__ import annotations

import ctypes
import platform
import shutil
from dataclasses import dataclass

from harness import build_cache, cuda_tools, machine, sandbox


@dataclass
class Check:
    item: str
    value: str
    ok: bool | None  # True found, False missing, None informational


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _nvml() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
        return True
    except OSError:
        return False


def _tool(name: str) -> tuple[str | None, Check]:
    path = cuda_tools.find(name)
    if not path:
        return None, Check(name, "not found", False)
    return path, Check(name, f"{path} ({cuda_tools.version(path) or 'version unknown'})", True)


def checks() -> tuple[list[Check], list[Check]]:
    """(what is here, what that lets this machine do)."""
    import torch

    found = [Check("python", f"{platform.python_version()} ({platform.machine()}, {platform.system()})", None),
             Check("torch", f"{torch.__version__} ({'CUDA ' + torch.version.cuda if torch.version.cuda else 'CPU build'})",
                   None)]
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    capabilities = []
    if gpus:
        for i in range(gpus):
            p = torch.cuda.get_device_properties(i)
            capabilities.append((p.major, p.minor))
            found.append(Check(f"GPU {i}", f"{p.name}, sm_{p.major}{p.minor}, {p.multi_processor_count} SMs, "
                                           f"{p.total_memory / 2**30:.0f} GiB", True))
        found.append(Check("driver", machine.driver_version() or "unknown (no nvidia-smi)", None))
        found.append(Check("CUDA runtime", torch.version.cuda or "", None))
    else:
        found.append(Check("GPU", "none visible to torch" + ("" if torch.version.cuda else " (a CPU build of torch)"),
                           False))
    found.append(Check("NVML", "libnvidia-ml.so.1 loads" if _nvml() else "not found", _nvml()))
    nvcc, check = _tool("nvcc")
    found.append(check)
    ncu, check = _tool("ncu")
    found.append(check)
    sanitizer, check = _tool("compute-sanitizer")
    found.append(check)
    from harness.probes import sass
    nvdisasm = sass.find_nvdisasm()  # NOTE: also $NVDISASM and beside nvcc, where probe sass looks
    found.append(Check("nvdisasm", nvdisasm or f"not found (probe sass needs it: {sass.NVDISASM_HINT})", bool(nvdisasm)))
    cxx = shutil.which("c++") or shutil.which("g++")
    found.append(Check("host C++ compiler", cxx or "not found", bool(cxx)))
    ninja = shutil.which("ninja")
    found.append(Check("ninja (load_inline)", ninja or "not found", bool(ninja)))
    root = build_cache.root()
    found.append(Check("build cache", f"{root} ({_size(build_cache.size_bytes())})", None))
    # NOTE: tried, not just looked for: a container can forbid the namespaces a found tool needs.
    found.append(Check("sandbox", sandbox.describe(), sandbox.available() is not None))

    hopper = any(cap == (9, 0) for cap in capabilities)
    can = [
        Check("test / run / compare / table", "on the GPU, every version whose Arch it has" if gpus
              else "on the CPU: torch-only versions (Arch any), tests shapes", bool(gpus) or None),
        Check("build", "full (load_inline)" if gpus else ("compile-only (nvcc)" if nvcc else "no: neither GPU nor nvcc"),
              bool(gpus or nvcc)),
        Check("sm_90a versions", "run here" if hopper else ("compile only" if nvcc else "no"), hopper or None),
        Check("sanitize", "yes" if gpus and sanitizer else "no: " + ("no compute-sanitizer" if gpus else "no GPU"),
              bool(gpus and sanitizer)),
        Check("profile", "torch.profiler kernels" if gpus else "torch.profiler, CPU operators only", None),
        Check("profile --ncu", "yes" if gpus and ncu else "no: " + ("no ncu" if gpus else "no GPU"), bool(gpus and ncu)),
        Check("probe sass", "yes (no GPU needed)" if nvcc and nvdisasm
              else "no: " + " and ".join(n for n, p in (("nvcc", nvcc), ("nvdisasm", nvdisasm)) if not p), bool(nvcc and nvdisasm)),
    ]
    return found, can
