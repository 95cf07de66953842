"""The build cache: one folder (``.build/`` or ``NVFP4_BUILD_DIR``) for load_inline outputs,
measured ceilings and child logs. A submission's extensions build under a folder named by the
hash of its code without the docstring, so an unchanged version (docstring edits included) never
recompiles, and two versions never share a build.

Every import of a submission goes through :func:`building`, which holds an exclusive ``flock`` on
the version's folder. torch's ``load_inline`` guards a build with a ``lock`` file that it deletes
only when the build ends; a builder killed mid-build (a step limit, a timeout, Ctrl-C) leaves it
behind, and every later import then polls it forever (gemm v6 hung this way on a device). Because
the flock dies with its holder, a ``lock`` file found while holding it is stale and is removed."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable, Iterator

from harness import locking, paths


def root() -> Path:
    d = paths.build_dir()
    d.mkdir(parents=True, exist_ok=True)
    return d


def extensions_root() -> Path:
    """The parent of every version's extension folder. ``NVFP4_EXTENSIONS_DIR`` overrides it, so
    builds can outlive a throwaway build folder (the GPU tests give each test its own; a version
    then compiles once per machine)."""
    return Path(os.environ["NVFP4_EXTENSIONS_DIR"]) if os.environ.get("NVFP4_EXTENSIONS_DIR") else root() / "torch_extensions"


def extensions_dir(source_hash: str) -> Path:
    """A version's extension folder: ``extensions_root()/<source hash>``."""
    d = extensions_root() / source_hash[:16]
    d.mkdir(parents=True, exist_ok=True)
    return d


def use_for(source_hash: str) -> Path:
    """Point torch's load_inline at this submission's folder (call before importing it)."""
    d = extensions_dir(source_hash)
    os.environ["TORCH_EXTENSIONS_DIR"] = str(d)
    return d


def pch_dir() -> Path:
    """The precompiled torch/extension.h of real builds (harness.fast_build.torch_pch), one folder
    per flag set, beside the extensions: its path is in their build commands, so it must last as
    long as they do."""
    return extensions_root() / "pch"


_HOLDER = ".nvfp4-import.flock"


def stale_torch_locks(d: Path) -> list[Path]:
    """torch's per-extension ``lock`` files under ``d`` (``<d>/<extension name>/lock``)."""
    return sorted(d.glob("*/lock"))


@contextlib.contextmanager
def building(source_hash: str, *, on_wait: Callable[[str], None] | None = None) -> Iterator[list[Path]]:
    """Point load_inline at this version's folder and hold it exclusively while importing.

    Yields the stale torch ``lock`` files it removed. ``on_wait`` is told once if another process
    holds the folder (it is building the same version; this one then loads the finished build)."""
    d = use_for(source_hash)
    with locking.open_locked(d / _HOLDER, "a+", on_wait=on_wait, doing=f"building {d.name}"):
        removed = []
        for lock in stale_torch_locks(d):  # NOTE: every builder holds the flock, so nobody owns these
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()
                removed.append(lock)
        yield removed


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
