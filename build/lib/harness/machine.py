"""What the numbers were measured on: GPU, driver, CUDA, torch, and the git state of the repo."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from harness import paths


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10, cwd=paths.REPO_ROOT).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def git_state() -> dict:
    """Full 40-hex commit and dirty flag ("true"/"false", "" where unknown) of the lab's tree.

    NVFP4_GIT_COMMIT / NVFP4_GIT_DIRTY stand in where the tree has no .git (a copy sent to a GPU
    machine); a short NVFP4_GIT_COMMIT is expanded by ``full_commit``."""
    if os.environ.get("NVFP4_GIT_COMMIT"):
        return {"git_commit": full_commit(os.environ["NVFP4_GIT_COMMIT"]),
                "git_dirty": os.environ.get("NVFP4_GIT_DIRTY", "")}
    commit = _run(["git", "rev-parse", "--verify", "--quiet", "HEAD"])
    dirty = bool(_run(["git", "status", "--porcelain", "--untracked-files=no"])) if commit else None
    return {"git_commit": commit or "", "git_dirty": "" if dirty is None else str(dirty).lower()}


def full_commit(commit: str) -> str:
    """``commit`` as 40 hex digits where it abbreviates a commit git can find here; else as given.

    Only hex abbreviations are expanded: a name such as ``HEAD`` or a branch would be read against
    whatever .git this tree carries (a copy may carry a stale one), not the commit that was meant."""
    commit = commit.strip()
    if not re.fullmatch(r"[0-9a-fA-F]{4,39}", commit):
        return commit
    full = _run(["git", "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"])
    return full if re.fullmatch(r"[0-9a-f]{40}", full) else commit


def driver_version() -> str:
    if shutil.which("nvidia-smi"):
        out = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
        return out.splitlines()[0].strip() if out else ""
    return ""


def nvcc_version() -> str:
    """The nvcc release line, or "" where nvcc is not on PATH (load_inline builds need it)."""
    if not shutil.which("nvcc"):
        return ""
    out = _run(["nvcc", "--version"]).splitlines()
    return next((line.strip() for line in out if "release" in line), "")


def harness_version() -> str:
    try:
        from importlib.metadata import version
        return version("nvfp4-lab")
    except Exception:  # noqa: BLE001 - not installed: running from the tree
        return "tree"


def device_info(torch) -> dict:
    """Runs in the child: describes the device the timings come from."""
    info = {"torch": torch.__version__, "cuda": torch.version.cuda or "", "driver": "", "gpu": "cpu",
            "sm_count": "", "capability": "", "l2_bytes": 0}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(gpu=props.name, sm_count=props.multi_processor_count,
                    capability=f"{props.major}.{props.minor}", l2_bytes=int(getattr(props, "L2_cache_size", 0)),
                    driver=driver_version())
    return info


def arch_refusal(arch: str, capability: tuple[int, int] | None) -> str | None:
    """Why a version of this arch cannot run here, or None. ``capability`` None means no GPU."""
    if arch == "any":
        return None
    need = {"sm_90": (9, 0), "sm_90a": (9, 0), "sm_100a": (10, 0)}[arch]
    if capability is None:
        return f"needs an NVIDIA GPU with {arch}; this machine has none"
    if arch.endswith("a") and capability != need:
        return f"needs an NVIDIA GPU with {arch}; this one is sm_{capability[0]}{capability[1]}"
    if capability < need:
        return f"needs an NVIDIA GPU with {arch}; this one is sm_{capability[0]}{capability[1]}"
    return None
