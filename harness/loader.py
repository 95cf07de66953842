"""Importing a submission file: its ``custom_kernel``, with its CUDA extensions built in its own
build-cache folder.

Every process that runs a submission's code imports it through :func:`import_submission`: the
worker (checked and timed runs), ``nvfp4 build``'s child, and the children of ``profile`` and
``sanitize``. The import runs the file's top level, which for a CUDA version is ``load_inline``:
a build of its extension on first use. The build goes to the folder named by the version's source
hash (:func:`harness.build_cache.building`), held exclusively while importing, so a version
compiles once per machine whoever imports it first, two versions never share a build, and a lock
left by a killed build is cleared rather than waited on forever. The build itself skips re-parsing
torch's headers where that changes nothing (:mod:`harness.fast_build`).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Callable

from harness import build_cache, fast_build

# A stand-in for GPU MODE's ``task`` module (``from task import input_t, output_t``), so their
# submissions import unmodified; appended to sys.path, so a ``task`` of the file's own wins.
COMPAT_DIR = Path(__file__).parent / "compat"


def import_submission(path: str | Path, label: str, *, source_hash: str | None = None,
                      on_progress: Callable[[str], None] | None = None):
    """The ``custom_kernel`` of the submission file at ``path``, imported as a fresh module.

    ``label`` names the module together with ``path`` (two versions, or one file under two labels,
    never share a module). ``source_hash``: the build-cache key (``Submission.source_hash``); when
    None it is computed from the file the same way. ``on_progress`` is told, in words, when the
    import waits for another process building the same version and when it removes a stale torch
    lock. Whatever the file raises while importing propagates (the caller decides whose failure it
    is); a file without a callable ``custom_kernel`` raises AttributeError."""
    path = str(path)
    if source_hash is None:
        from harness import submissions
        source_hash = submissions.code_hash(Path(path).read_bytes(), path)
    folder = str(Path(path).parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # NOTE: a GPU MODE file may import helpers shipped beside it
    if str(COMPAT_DIR) not in sys.path:
        sys.path.append(str(COMPAT_DIR))
    # NOTE: fast_build's load_inline in every import, so a version's build is the same whoever builds
    # it (the build child, the worker, a probe): another build's flags would make ninja build again
    with build_cache.building(source_hash, on_wait=on_progress) as stale, fast_build.installed(on_progress):
        if on_progress:
            for lock in stale:
                on_progress(f"removed a stale torch lock left by a killed build: {lock}")
        name = f"nvfp4_submission_{abs(hash((path, label)))}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    kernel = getattr(module, "custom_kernel", None)
    if not callable(kernel):
        raise AttributeError(f"{path} does not define a callable custom_kernel(data)")
    return kernel
