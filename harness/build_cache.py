"""The build cache: one folder (``.build/`` or ``NVFP4_BUILD_DIR``) for load_inline outputs,
measured ceilings and child logs. A submission's extensions build under a folder named by the
hash of its code without the docstring, so an unchanged version (docstring edits included) never
recompiles, and two versions never share a build."""

from __future__ import annotations

import os
from pathlib import Path

from harness import paths


def root() -> Path:
    d = paths.build_dir()
    d.mkdir(parents=True, exist_ok=True)
    return d


def extensions_dir(source_hash: str) -> Path:
    """``NVFP4_EXTENSIONS_DIR`` overrides the folder's parent, so builds can outlive a throwaway
    build folder (the GPU tests give each test its own; a version then compiles once per machine)."""
    parent = Path(os.environ["NVFP4_EXTENSIONS_DIR"]) if os.environ.get("NVFP4_EXTENSIONS_DIR") else root() / "torch_extensions"
    d = parent / source_hash[:16]
    d.mkdir(parents=True, exist_ok=True)
    return d


def use_for(source_hash: str) -> Path:
    """Point torch's load_inline at this submission's folder (call before importing it)."""
    d = extensions_dir(source_hash)
    os.environ["TORCH_EXTENSIONS_DIR"] = str(d)
    return d


def logs_dir() -> Path:
    d = root() / "logs"
    d.mkdir(parents=True, exist_ok=True)
    return d


def ceilings_file() -> Path:
    return root() / "ceilings.json"


def size_bytes() -> int:
    total = 0
    for dirpath, _, files in os.walk(root()):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, f))
            except OSError:
                pass
    return total
