"""Finding the CUDA toolkit's programs (nvcc, ncu, compute-sanitizer, cu++filt) and their versions.

PATH first, then the toolkit folders (CUDA_HOME, CUDA_PATH, /usr/local/cuda) and the places the
Nsight Compute and Compute Sanitizer installers use, so a machine whose PATH lacks the toolkit
still finds what it has.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess

# Where each program lives inside a toolkit folder, beyond bin/.
_EXTRA = {
    "compute-sanitizer": ["compute-sanitizer/compute-sanitizer"],
    "ncu": ["nsight-compute*/ncu"],
}
_STANDALONE = {"ncu": ["/opt/nvidia/nsight-compute/*/ncu"]}


def _homes() -> list[str]:
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    return [h for h in dict.fromkeys(homes) if h]


def find(name: str) -> str | None:
    """The path of ``name`` (nvcc, ncu, compute-sanitizer, cu++filt), or None."""
    found = shutil.which(name)
    if found:
        return found
    patterns = [os.path.join(h, "bin", name) for h in _homes()]
    patterns += [os.path.join(h, rel) for h in _homes() for rel in _EXTRA.get(name, [])]
    patterns += _STANDALONE.get(name, [])
    for pattern in patterns:
        for candidate in sorted(glob.glob(pattern), reverse=True):  # the newest versioned folder first
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    return None


@functools.lru_cache(maxsize=None)
def version(exe: str) -> str:
    """The line of ``exe --version`` that names the release (nvcc: 'Cuda compilation tools, release
    13.0, V13.0.88'), else its last line; '' when it does not run."""
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = [line.strip() for line in (out.stdout or out.stderr).splitlines() if line.strip()]
    named = [line for line in lines if "release" in line.lower() or "version" in line.lower()]
    return (named or lines or [""])[-1]
