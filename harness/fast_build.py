"""A real build of a version without re-parsing torch's headers: the harness's ``load_inline``.

torch's ``load_inline`` prepends ``#include <torch/types.h>`` to the CUDA source (cuda.cu) and
``#include <torch/extension.h>`` to the C++ source (main.cpp), and each build parses them again:
parsing torch/types.h is ~55 of the ~58 s nvcc takes on a typical submission, torch/extension.h
~25 of the ~36 s of main.cpp (see :mod:`harness.compile_only`, which saves both in its check).
While the harness imports a submission (:func:`installed`, in :func:`harness.loader.import_submission`,
the one way every process imports one), ``torch.utils.cpp_extension.load_inline`` is
:func:`load_inline`, which builds the same extension with both savings and nothing about the
kernels changed:

- CUDA: where the CUDA source names nothing of torch (:func:`harness.compile_only.names_torch`),
  cuda.cu is written without torch/types.h (``no_implicit_headers``; the harness then writes
  cuda.h and cuda_runtime.h itself, behind a comment line in torch/types.h's place so that line
  numbers do not move, and main.cpp's torch/extension.h, so main.cpp is unchanged).
- C++: main.cpp gets ``-include <header> -Winvalid-pch``, a header that includes
  <torch/extension.h>, precompiled by GCC with the host flags torch itself writes for main.cpp
  (asked of torch: :func:`_torch_cxx_command`), once per build cache and flag set, beside the first
  build that asks (:func:`pch_flags`: no build waits for it); GCC parses the header as usual where
  the PCH is not there yet or does not match (slower, never wrong).

A build that fails this way is built again as written (a source relying on a header the prelude
happened to include), and that is remembered in the version's build folder, so later imports
build it as written at once: the savings cost time there, never a false failure.

NOTE: the added flags and the changed cuda.cu are part of load_inline's build (ninja rebuilds when
its command lines change), so every import must go through this one function or the timing worker
would rebuild what the build child built.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import json
import os
import shlex
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Callable, Iterator, Sequence

from harness import build_cache, cuda_tools, locking

Progress = Callable[[str], None] | None

# What load_inline writes in torch/types.h's place when this module leaves it out: a line, so that
# the compiler's line numbers for the source stay load_inline's.
OMITTED_TYPES_H = "// #include <torch/types.h> left out by the harness: this source names nothing of torch"
CUDA_HEADERS = ("#include <cuda.h>", "#include <cuda_runtime.h>")
EXTENSION_H = "#include <torch/extension.h>"
_FAILED = ".nvfp4-fast-build-failed-"  # + the call's key: a marker in the version's build folder


# ---------------------------------------------------------------------------- precompiled header
_PCH_LOCK = threading.Lock()
HEADER_TEXT = "#pragma once\n#include <torch/extension.h>\n"


def pch_header(command: Sequence[str], folder_root: Path) -> Path | None:
    """The header that includes <torch/extension.h> for ``command`` (the host compiler and its flags,
    no input or output), in ``folder_root/<key>/``, the key hashing the command, the compiler's
    version and torch's: written once, never rewritten; None where it cannot be written (no room, a
    read-only folder: the sandbox's view, where a lab build has not made it).
    NOTE: never replaced: ninja rebuilds main.o when a header's mtime moves, so a rewrite would
    rebuild every version built with it."""
    import torch

    key = hashlib.sha256(json.dumps({"command": command, "cxx_version": cuda_tools.version(command[0]),
                                     "torch": torch.__version__}).encode()).hexdigest()[:16]
    header = folder_root / key / "torch_extension.h"
    if header.exists():
        return header
    tmp = header.with_name(f".torch_extension.h.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        header.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(HEADER_TEXT)
        with contextlib.suppress(FileExistsError):  # NOTE: another writer's, the same text: kept as it is
            os.link(tmp, header)
    except OSError:
        return None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return header


def _precompile(command: Sequence[str], header: Path, on_progress: Progress, wait: bool) -> bool:
    """``header``'s GCC PCH (``header.gch``) built unless it exists; ``wait``: while another thread or
    process builds it, wait for that one (False: leave it to that one and return). True when the PCH
    is there at the end."""
    gch = header.with_name(header.name + ".gch")
    if gch.exists():
        return True
    if not _PCH_LOCK.acquire(blocking=wait):
        return False
    try:
        with locking.open_locked(header.parent / ".lock", wait=wait, on_wait=on_progress,
                                 doing="precompiling torch/extension.h") as lock:
            if lock is None:  # NOTE: another process builds it: this build goes on without
                return False
            if gch.exists():
                return True
            if on_progress:
                on_progress(f"precompiling torch/extension.h for these flags (once per build cache): {header.parent}")
            tmp = header.with_name(f"{gch.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            proc = subprocess.run([*command, "-x", "c++-header", str(header), "-o", str(tmp)], cwd=header.parent,
                                  capture_output=True, stdin=subprocess.DEVNULL, timeout=900)
            if proc.returncode != 0 or not tmp.exists():
                tmp.unlink(missing_ok=True)
                return False
            tmp.replace(gch)  # NOTE: atomic, so another process never sees half a PCH
            return True
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        _PCH_LOCK.release()


def torch_pch(command: list[str], folder_root: Path, on_progress: Progress = None) -> str | None:
    """The header (see :func:`pch_header`) with its PCH built, waiting for it where another thread or
    process builds it (the compile-only check: one PCH for every version it checks); None where
    either fails. The PCH is ~0.8 GB and takes about as long as one main.cpp (~25 s on 2 cores)."""
    header = pch_header(command, folder_root)
    if header is None or not _precompile(command, header, on_progress, wait=True):
        return None
    return str(header)


_BUILDING: list[threading.Thread] = []  # PCH builds started by this process's builds (joined by load_inline)

@functools.lru_cache(maxsize=None)
def is_gcc(compiler: str) -> bool:
    """GCC's PCH is what ``-include`` finds (clang's needs -include-pch): only GCC gets one."""
    try:
        out = subprocess.run([compiler, "-v"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                             env=dict(os.environ, LC_ALL="C"))
    except (OSError, subprocess.SubprocessError):
        return False
    return "gcc version" in out.stderr + out.stdout and "clang" not in (out.stderr + out.stdout).lower()


@functools.lru_cache(maxsize=None)  # NOTE: asked on every import of a version (a ladder process makes dozens)
def _torch_cxx_command(with_cuda: bool, extra_cflags: tuple[str, ...], extra_include_paths: tuple[str, ...],
                       extra_cuda_cflags: tuple[str, ...]) -> tuple[str, ...] | None:
    """The host compiler and the flags torch compiles main.cpp with, as torch writes them into its
    build.ninja (``cxx`` and ``cflags``), less ``-DTORCH_EXTENSION_NAME`` (the one flag that differs
    per version and that torch's headers never read); None where torch's writer cannot be asked.
    NOTE: asked of torch, not rebuilt here: the -std, ABI defines and include folders have changed
    between torch releases (the device runs another torch than CI), and a PCH built with other
    flags is one GCC refuses."""
    from torch.utils import cpp_extension

    writer = getattr(cpp_extension, "_write_ninja_file_to_build_library", None)
    if writer is None:
        return None
    with tempfile.TemporaryDirectory(prefix="nvfp4-flags-") as tmp:
        sources = [os.path.join(tmp, "main.cpp")] + ([os.path.join(tmp, "cuda.cu")] if with_cuda else [])
        given = dict(path=os.path.join(tmp, "build.ninja"), name="nvfp4_flags_probe", sources=sources,
                     extra_cflags=list(extra_cflags), extra_cuda_cflags=list(extra_cuda_cflags),
                     extra_sycl_cflags=[], extra_ldflags=[], extra_include_paths=list(extra_include_paths),
                     with_cuda=with_cuda, with_sycl=False, is_standalone=False)
        try:
            params = inspect.signature(writer).parameters
            writer(**{k: v for k, v in given.items() if k in params})
            text = Path(given["path"]).read_text()
        except Exception:  # noqa: BLE001 - another torch's writer, or no CUDA here: no PCH, nothing else lost
            return None
    values = dict(line.split(" = ", 1) for line in text.splitlines() if " = " in line and not line.startswith(" "))
    if "cxx" not in values or "cflags" not in values:
        return None
    flags = [f for f in shlex.split(values["cflags"]) if not f.startswith("-DTORCH_EXTENSION_NAME=")]
    return (*shlex.split(values["cxx"]), *flags)


def _without_defines(flags: list[str]) -> tuple[str, ...]:
    """``flags`` less -D/-U: a macro the torch headers never read leaves the PCH valid (GCC checks
    the ones they do, and parses instead where one differs), so variants built with -D share one."""
    kept, skip = [], False
    for f in flags:
        if skip:
            skip = False
        elif f in ("-D", "-U"):
            skip = True
        elif not f.startswith(("-D", "-U")):
            kept.append(f)
    return tuple(kept)


def pch_flags(with_cuda: bool, extra_cflags: list[str], extra_include_paths: list[str],
              extra_cuda_cflags: list[str], on_progress: Progress = None) -> list[str]:
    """The flags that give main.cpp the precompiled torch/extension.h; [] where none can be had.
    NOTE: a build never waits for the PCH. The flags name the header, which exists from the first
    call on; where its PCH is not built yet, GCC includes the header as text (what load_inline's own
    build does), and this call builds the PCH in a thread beside its build unless another thread or
    process already is. The command line is the same either way, so ninja never rebuilds a version
    for it. (Waiting, as first built, put the PCH's ~25-35 s before every build of a fresh machine:
    dual_gemm v39's build took 64.8 s on the H200 of session 51, as long as without the savings.)"""
    command = _torch_cxx_command(with_cuda, _without_defines(extra_cflags), tuple(extra_include_paths),
                                 tuple(extra_cuda_cflags))
    if not command or not is_gcc(command[0]):
        return []
    header = pch_header(command, build_cache.pch_dir())
    if header is None or any(c.isspace() for c in str(header)):  # NOTE: torch joins flags into ninja unquoted
        return []
    if not header.with_name(header.name + ".gch").exists():
        thread = threading.Thread(target=_precompile, args=(command, header, on_progress, False),
                                  name="nvfp4-pch", daemon=True)
        thread.start()
        _BUILDING.append(thread)
    return ["-include", str(header), "-Winvalid-pch"]


def join_pch_builds() -> None:
    """Waits for the PCH builds this process started (no compiler left running past the import that
    started it; the build beside it usually takes longer)."""
    while _BUILDING:
        _BUILDING.pop().join()


# ------------------------------------------------------------------------------------- the wrapper
def _strings(value) -> list[str]:
    """A sources argument as a new list (load_inline inserts its prelude into the list it is given)."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _failed_marker(key: str) -> Path | None:
    folder = os.environ.get("TORCH_EXTENSIONS_DIR")
    return Path(folder) / f"{_FAILED}{key[:16]}" if folder else None


_FAILED_HERE: set[str] = set()  # where there is no build folder to remember it in


def load_inline(inner: Callable, arguments: dict, on_progress: Progress = None):
    """``inner`` (torch's load_inline, or a wrapper of it) called with ``arguments`` (by name) made
    fast where that is safe; called again with ``arguments`` unchanged where the fast build fails."""
    from harness.compile_only import names_torch

    a = dict(arguments)
    cuda = _strings(a.get("cuda_sources"))
    cpp = _strings(a.get("cpp_sources"))
    implicit = not a.get("no_implicit_headers", False)
    fast_cuda = implicit and bool(cuda) and not names_torch("\n".join(cuda)) and "no_implicit_headers" in _params(inner)
    fast = dict(a)
    if fast_cuda:
        fast.update(no_implicit_headers=True, cuda_sources=[OMITTED_TYPES_H, *CUDA_HEADERS, *cuda],
                    cpp_sources=[EXTENSION_H, *cpp])
    pch = []
    if implicit:
        with_cuda = a.get("with_cuda")
        pch = pch_flags(bool(cuda) if with_cuda is None else bool(with_cuda), _strings(a.get("extra_cflags")),
                        _strings(a.get("extra_include_paths")), _strings(a.get("extra_cuda_cflags")), on_progress)
        if pch:
            fast["extra_cflags"] = [*_strings(a.get("extra_cflags")), *pch]
    if not fast_cuda and not pch:
        return inner(**_fresh(a))
    key = hashlib.sha256(json.dumps(_fresh(fast), sort_keys=True, default=str).encode()).hexdigest()
    marker = _failed_marker(key)
    if key in _FAILED_HERE or (marker is not None and marker.exists()):
        return inner(**_fresh(a))
    from torch.utils import cpp_extension

    versions = getattr(getattr(cpp_extension, "JIT_EXTENSION_VERSIONER", None), "entries", None)
    before = dict(versions) if isinstance(versions, dict) else None
    try:
        return inner(**_fresh(fast))
    except Exception as exc:  # noqa: BLE001 - any failure of the fast build: the build as written decides
        _FAILED_HERE.add(key)
        if marker is not None:
            with contextlib.suppress(OSError):
                marker.write_text(f"{type(exc).__name__}: {str(exc)[-2000:]}\n")
        if before is not None:
            # NOTE: torch counts a build with other inputs under one name as a new version (name_v1);
            # forgetting the failed one builds the fallback under the name every later import uses
            versions.clear()
            versions.update(before)
        if on_progress:
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()] or [type(exc).__name__]
            first = next((line for line in lines if "error:" in line), lines[-1])  # the compiler's first error
            on_progress(f"the build without torch's implicit headers failed ({first[:200]}); building as written")
        return inner(**_fresh(a))


def _fresh(arguments: dict) -> dict:
    """The arguments with every list copied: load_inline inserts into the lists it is given."""
    return {k: list(v) if isinstance(v, list) else v for k, v in arguments.items()}


def _params(fn: Callable) -> dict:
    try:
        return dict(inspect.signature(fn).parameters)  # follows __wrapped__ to torch's own signature
    except (TypeError, ValueError):
        return {}


@contextlib.contextmanager
def installed(on_progress: Progress = None) -> Iterator[None]:
    """While active, ``torch.utils.cpp_extension.load_inline`` is :func:`load_inline` over whatever
    it was (a probe's own wrapper included). Versions import ``load_inline`` by name at their top
    level, which is why it must be in place before the import; it is undone after it."""
    try:
        import torch.utils.cpp_extension as cpp_extension
    except ImportError:  # no torch: nothing to build
        yield
        return
    inner = cpp_extension.load_inline
    params = _params(inner)

    @functools.wraps(inner)
    def harness_load_inline(*args, **kwargs):
        try:
            bound = inspect.signature(inner).bind(*args, **kwargs)
        except TypeError:  # not a call load_inline accepts: let it say so
            return inner(*args, **kwargs)
        return load_inline(inner, dict(bound.arguments), on_progress)

    cpp_extension.load_inline = harness_load_inline if params else inner
    try:
        yield
    finally:
        cpp_extension.load_inline = inner
        join_pch_builds()
