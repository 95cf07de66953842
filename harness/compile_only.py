"""Compile-only checks: a submission's CUDA source through nvcc for its arch, with no GPU and no
CUDA build of torch, and what ptxas says about every kernel (registers, spills, stack frame,
shared memory).

The nvcc command is the one torch's ``load_inline`` runs (same defines, include paths,
``COMMON_NVCC_FLAGS``, ``-std=c++20`` unless the flags set one) plus ``-c -Xptxas -v``; the C++
side (declarations and bindings, as load_inline's main.cpp) is checked with the host compiler's
``-fsyntax-only``. Each result is cached in ``.build/compile/<key>/result.json``, the key hashing
the files compiled, the commands and the compiler versions, so an unchanged version is instant.
:func:`manifest_key` hashes the same with the machine's parts (paths, compiler and torch versions)
left out: the key of the committed manifest of compiled versions (:mod:`harness.build`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sysconfig
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness import build_cache, contract, cuda_tools, fast_build
from harness.submissions import Submission

DEFAULT_TIMEOUT_S = 900.0
ERROR_LINES = 12  # of the compiler's output shown for a failure

# Arch header -> what nvcc compiles for; "any" with CUDA source means this lab's GPUs (Hopper).
GENCODE = {
    "sm_90a": "-gencode=arch=compute_90a,code=sm_90a",
    "sm_90": "-gencode=arch=compute_90,code=sm_90",
    "sm_100a": "-gencode=arch=compute_100a,code=sm_100a",
    "any": "-gencode=arch=compute_90a,code=sm_90a",
}
_ARCH_FLAG = re.compile(r"^(-gencode|--generate-code|-arch|--gpu-architecture|-code|--gpu-code)\b")
_TORCH_HEADER = re.compile(r'^\s*#\s*include\s*[<"](torch|ATen|c10|pybind11|caffe2)/', re.MULTILINE)

OK, FAIL, NO_CUDA = "OK", "FAIL", "NO_CUDA"


@dataclass
class Kernel:
    """One entry function as ptxas reports it (sizes in bytes)."""
    name: str  # demangled where a demangler was found
    mangled: str
    arch: str
    registers: int
    stack_frame: int
    spill_stores: int
    spill_loads: int
    smem: int = 0  # static shared memory; dynamic shared memory is a launch parameter
    barriers: int = 0
    cmem: dict = field(default_factory=dict)  # bank -> bytes
    other: list = field(default_factory=list)  # fields this parser does not name, verbatim
    # NOTE: ptxas's C7511 and C7512 ("wgmma.mma_async instructions are serialized due to <why>"): every wgmma of the
    # kernel waits for the one before, so its tensor work runs at a fraction of the rate with no other sign in the
    # registers or spills (group_gemm v35 and v84: a loop over tiles with a switch over wgmma shapes inside, or a
    # __trap() in the kernel; dual_gemm v73's first build, C7511: accumulators indexed by a run-time split, its loop
    # 30% slower on the device). The code and ptxas's reason ("C7511: ..."), or "" where ptxas said nothing.
    wgmma_serialized: str = ""


@dataclass
class CompileResult:
    label: str
    status: str  # OK, FAIL, NO_CUDA
    message: str = ""
    kernels: list = field(default_factory=list)  # of Kernel
    arch: str = ""  # what it was compiled for, e.g. sm_90a
    seconds: float = 0.0
    cached: bool = False
    log: str = ""  # the compiler output, in full, on disk

    @property
    def ok(self) -> bool:
        return self.status != FAIL

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict) -> "CompileResult":
        doc = dict(doc)
        doc["kernels"] = [Kernel(**k) for k in doc.get("kernels", [])]
        return cls(**doc)


# ------------------------------------------------------------------------------------ tools
def find_nvcc() -> str | None:
    return cuda_tools.find("nvcc")


def host_compiler() -> str:
    return os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or "c++"


def _demanglers() -> list[str]:
    return [t for t in (cuda_tools.find("cu++filt"), shutil.which("c++filt")) if t]


def demangle(names: list[str]) -> dict[str, str]:
    """Mangled -> readable, through cu++filt or c++filt; names stay as they are without either."""
    if not names:
        return {}
    for tool in _demanglers():
        try:
            out = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        lines = out.stdout.splitlines()
        if out.returncode == 0 and len(lines) == len(names):
            return dict(zip(names, lines))
    return {n: n for n in names}


# --------------------------------------------------------------------------------- commands
def arch_flags(arch: str, flags: tuple[str, ...]) -> tuple[list[str], str]:
    """The -gencode to add (none when the flags choose their own) and the arch compiled for."""
    given = [f for f in flags if _ARCH_FLAG.match(f)]
    if given:
        found = re.findall(r"(?:code|arch)=\[?(sm_\w+)", " ".join(flags)) or re.findall(r"(sm_\w+)", " ".join(given))
        return [], ",".join(dict.fromkeys(found)) or "as flagged"
    gencode = GENCODE[arch]
    return [gencode], re.search(r"code=(sm_\w+)", gencode).group(1)


def _shim_include() -> list[str]:
    """A CPU build of torch ships c10/cuda headers but not the one CMake generates for CUDA builds
    (c10/cuda/impl/cuda_cmake_macros.h, one #define); supply it so that <c10/cuda/CUDAStream.h>
    compiles here as it does against a CUDA build of torch."""
    from torch.utils import cpp_extension

    if any(Path(p, "c10/cuda/impl/cuda_cmake_macros.h").exists() for p in cpp_extension.include_paths()):
        return []
    shim = build_cache.root() / "compile" / "shim"
    header = shim / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h"
    if not header.exists():
        header.parent.mkdir(parents=True, exist_ok=True)
        # NOTE: builds run in threads of one process: the name must be unique per thread too.
        tmp = header.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text("#pragma once\n// Stand-in for the header a CUDA build of torch generates.\n"
                       "#define C10_CUDA_BUILD_SHARED_LIBS\n")
        tmp.replace(header)
    return ["-isystem", str(shim)]


_RUNTIME_HEADER = "cuda_runtime_api.h"  # the toolkit header <c10/cuda/CUDAStream.h> needs first


@functools.lru_cache(maxsize=None)
def _nvcc_reported_dirs(nvcc: str) -> tuple[str, ...]:
    """The include folders nvcc passes its own preprocessor, then ``<TOP>/include``, from ``nvcc
    --dryrun`` (which prints its settings, e.g. ``#$ TOP=/usr/local/cuda-13.0/bin/..`` and ``#$
    INCLUDES="-I/usr/local/cuda-13.0/bin/../targets/x86_64-linux/include"``, and compiles nothing:
    the input file need not exist). Empty when nvcc does not run or says neither."""
    try:
        out = subprocess.run([nvcc, "--dryrun", "-c", "nvfp4_include_probe.cu"], capture_output=True, text=True,
                             timeout=60, stdin=subprocess.DEVNULL, cwd=tempfile.gettempdir(),
                             env=dict(os.environ, LC_ALL="C"))
    except (OSError, subprocess.SubprocessError):
        return ()
    text = out.stdout + out.stderr
    found = []
    m = re.search(r"^#\$ INCLUDES=(.*)$", text, re.MULTILINE)
    if m:
        found += [arg[2:] for arg in shlex.split(m.group(1)) if arg.startswith("-I") and len(arg) > 2]
    m = re.search(r"^#\$ TOP=(.*?)\s*$", text, re.MULTILINE)
    if m:
        found.append(os.path.join(m.group(1), "include"))
    return tuple(found)


def toolkit_include_dir(nvcc: str | None = None) -> str | None:
    """The CUDA toolkit's include folder (the one holding cuda_runtime_api.h) for ``nvcc`` (default:
    the one :func:`find_nvcc` finds), symlinks resolved; None where no candidate has the header.

    Asked of nvcc itself first (:func:`_nvcc_reported_dirs`), then the folder above the real nvcc
    binary, then CUDA_HOME / CUDA_PATH and /usr/local/cuda.
    NOTE: nvcc first, because the environment can point elsewhere: the nvcc on PATH may be a wrapper
    script (/usr/local/bin/nvcc exec-ing /usr/local/cuda-13.0/bin/nvcc, so its folder's parent is
    /usr/local), and CUDA_HOME, or torch's guess of it from that wrapper, then names a folder with no
    CUDA headers; nvcc always knows where its own headers are."""
    nvcc = nvcc or find_nvcc()
    candidates: list[str] = []
    if nvcc:
        candidates += _nvcc_reported_dirs(nvcc)
        candidates.append(str(Path(nvcc).resolve().parent.parent / "include"))
    candidates += [os.path.join(root, "include") for root in
                   (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda") if root]
    for folder in candidates:
        if Path(folder, _RUNTIME_HEADER).is_file():
            return os.path.realpath(folder)
    return None


def _torch_includes(for_cuda: bool) -> list[str]:
    """``-isystem`` flags for torch's headers as load_inline passes them (its CUDA set when
    ``for_cuda``), Python's, and for CUDA the toolkit's include folder and the CPU-torch shim.

    NOTE: torch's CUDA set is CUDA_HOME/include, and CUDA_HOME may be unset (a CPU build of torch
    raises) or wrong (a wrapper script's folder: cuda_runtime_api.h "No such file" with a CUDA
    build of torch). So the folder nvcc itself uses is added whenever no folder in the list is it,
    whatever torch build is installed. nvcc finds its own headers anyway; the host compiler needs
    them named (cuda_runtime_api.h for <c10/cuda/CUDAStream.h> on the C++ side)."""
    from torch.utils import cpp_extension

    try:
        paths = cpp_extension.include_paths("cuda" if for_cuda else "cpu")
    except Exception:  # noqa: BLE001 - a CPU torch without CUDA_HOME raises for "cuda": its CPU headers
        paths = cpp_extension.include_paths()
    if for_cuda:
        toolkit_include = toolkit_include_dir()
        if toolkit_include and toolkit_include not in {os.path.realpath(p) for p in paths}:
            paths = [*paths, toolkit_include]
    flags = []
    for p in [*paths, sysconfig.get_path("include", scheme="posix_prefix")]:
        flags += ["-isystem", p]
    return flags + (_shim_include() if for_cuda else [])


def _defines(c: contract.Contract) -> list[str]:
    return [f"-DTORCH_EXTENSION_NAME={c.extension_name}", "-DTORCH_API_INCLUDE_EXTENSION_H"]


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_TORCH_NAME = re.compile(r"\b(?:torch|at|c10|caffe2)\s*::|\b(?:TORCH|AT|C10)_[A-Z0-9_]+\s*\(")


def names_torch(cuda_src: str | None) -> bool:
    """Whether a CUDA source includes a torch header or names torch's namespaces or macros (comments
    aside). One that does not compiles the same without load_inline's implicit torch #includes."""
    code = _COMMENT.sub(" ", cuda_src or "")
    return bool(_TORCH_HEADER.search(code) or _TORCH_NAME.search(code))


def fast_cuda_check(c: contract.Contract) -> bool:
    """Compile cuda.cu without the implicit torch prelude? Parsing torch/types.h is ~55 of the ~58 s
    nvcc takes on a typical submission (nvcc 13.0, 2 cores); a source that names nothing of torch
    cannot depend on it, except through a header the prelude happens to pull in (std::vector
    without <vector>, say): check() then retries with the prelude, so that case costs time, never
    a false failure. The real build leaves the prelude out by the same rule (harness.fast_build),
    so what this can miss, neither sees: a clash between the source and torch's headers (a macro
    of the same name), which only a build as GPU MODE's load_inline writes it would show."""
    return not c.no_implicit_headers and not names_torch(c.cuda_src)


# Stand-ins for the parts of a command that belong to the machine, not to the version (see
# manifest_key): the programs' paths, the include folders, and torch's own nvcc flags.
PORTABLE_NVCC, PORTABLE_CXX = "<nvcc>", "<c++>"
PORTABLE_TORCH_NVCC_FLAGS = "<torch COMMON_NVCC_FLAGS>"


def _portable_includes(for_cuda: bool) -> list[str]:
    return [f"<torch includes: {'cuda' if for_cuda else 'cpu'}>"]


def nvcc_command(nvcc: str, c: contract.Contract, arch: str, prelude: bool | None = None,
                 portable: bool = False) -> tuple[list[str], str]:
    """The command (run in the folder holding cuda.cu) and the arch it compiles for. ``portable``:
    the same command with its machine's parts (nvcc's path, the include folders, torch's
    COMMON_NVCC_FLAGS) as stand-ins, the same on every machine (for :func:`manifest_key`)."""
    from torch.utils import cpp_extension

    text = c.cuda_file_text(prelude)
    gencode, compiled_for = arch_flags(arch, c.cuda_flags)
    cmd = [PORTABLE_NVCC if portable else nvcc, "-c", "cuda.cu", "-o", "cuda.o", "-Xptxas", "-v", *_defines(c)]
    if _TORCH_HEADER.search(text):
        cmd += _portable_includes(True) if portable else _torch_includes(for_cuda=True)
    common = [PORTABLE_TORCH_NVCC_FLAGS] if portable else cpp_extension.COMMON_NVCC_FLAGS
    cmd += [*common, *gencode, "--compiler-options", "-fPIC", *c.cuda_flags]
    if not any(f.startswith("-std=") for f in c.cuda_flags):
        cmd.append("-std=c++20")
    return cmd, compiled_for


def torch_pch(flags: list[str]) -> str | None:
    """A header that includes <torch/extension.h>, precompiled once for these host-compiler flags
    (:func:`harness.fast_build.torch_pch`, under ``.build/compile/pch/``), or None where that fails.
    torch/extension.h is ~25 of the ~36 s of a main.cpp check (g++, 2 cores); with the PCH a check
    takes ~11 s. The PCH is ~0.8 GB, built once per build cache and flag set (~60 s), shared by
    every version. (The real build gets its own, built with torch's own flags for main.cpp.)"""
    return fast_build.torch_pch(flags, build_cache.root() / "compile" / "pch")


def cpp_command(c: contract.Contract, use_pch: bool = False, portable: bool = False) -> list[str] | None:
    """The host compiler's syntax check of main.cpp, or None when there is no C++ side. With
    ``use_pch``, main.cpp's implicit <torch/extension.h> comes from torch_pch (when it can be built).
    ``portable``: the compiler and include folders as stand-ins, as :func:`nvcc_command`'s.
    NOTE: the PCH is built without TORCH_EXTENSION_NAME (the one flag that differs per version and
    that torch's headers do not read); -Winvalid-pch reports a PCH GCC refuses (it then parses the
    header as usual: slower, never wrong)."""
    if not (c.cpp_src or c.functions):
        return None
    compiler = PORTABLE_CXX if portable else host_compiler()
    flags = []
    if _TORCH_HEADER.search(c.cpp_file_text()):
        # NOTE: load_inline compiles main.cpp with the CUDA include paths whenever there are CUDA
        # sources, so its C++ side may include <c10/cuda/CUDAStream.h>; check it the same way.
        flags += _portable_includes(c.compiles_cuda) if portable else _torch_includes(for_cuda=c.compiles_cuda)
    flags += ["-fPIC", "-std=c++20", *c.cpp_flags]
    header = None
    if use_pch and not c.no_implicit_headers and not portable:
        header = torch_pch([compiler, "-DTORCH_API_INCLUDE_EXTENSION_H", *flags])
    pch = ["-include", header, "-Winvalid-pch"] if header else []
    return [compiler, "-fsyntax-only", "-x", "c++", "main.cpp", *pch, *_defines(c), *flags]


def manifest_key(sub: Submission) -> str | None:
    """What :func:`check` compiles for ``sub``, hashed the same on every machine: the cuda.cu and
    main.cpp texts, both commands in :func:`nvcc_command`'s ``portable`` form (the version's flags,
    defines, -std, arch and which torch include set it gets) and the arch compiled for. None when
    the contract cannot be read (check() then fails it: never skip it). A torch-only version
    compiles nothing, so all of them share one key.

    NOTE: check()'s cache key hashes the same parts plus the machine's: nvcc's and the host
    compiler's paths and versions, torch's version, include folders and COMMON_NVCC_FLAGS, and the
    build folder's shim. Those differ on every fresh CI venv (the venv path is random), so a key
    keeping them would never match a committed manifest; the toolchain is recorded beside the
    keys instead (:func:`toolchain`)."""
    try:
        c = contract.read(sub.path)
    except contract.ContractError:
        return None
    if not c.compiles_cuda:
        return _key({"cuda": None})
    fast = fast_cuda_check(c)
    nv_cmd, compiled_for = nvcc_command(PORTABLE_NVCC, c, sub.arch, prelude=not fast, portable=True)
    cc_cmd = cpp_command(c, portable=True)
    return _key({"cu": c.cuda_file_text(prelude=not fast), "cpp": c.cpp_file_text() if cc_cmd else None,
                 "nvcc": nv_cmd, "cxx": cc_cmd, "arch": compiled_for})


def toolchain(nvcc: str) -> dict[str, str]:
    """The compilers and torch headers a compile-only check depends on beyond the version's own
    code: nvcc's release line, the host compiler's version line, torch's version."""
    import torch

    return {"nvcc": cuda_tools.version(nvcc), "c++": _first_line(host_compiler()), "torch": torch.__version__}


@functools.lru_cache(maxsize=None)
def _first_line(exe: str) -> str:
    """The first line of ``exe --version`` (GCC and Clang name their release there; '' if it does
    not run). NOTE: not cuda_tools.version, whose 'version'-or-last-line rule picks GCC's warranty line."""
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ""
    return next((line.strip() for line in (out.stdout or out.stderr).splitlines() if line.strip()), "")


# ---------------------------------------------------------------------------------- parsing
_ENTRY = re.compile(r"^ptxas info\s*: Compiling entry function '([^']+)' for '(\w+)'")
_PROPS = re.compile(r"^ptxas info\s*: Function properties for (\S+)")
_FRAME = re.compile(r"^\s*(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads\s*$")
_USED = re.compile(r"^ptxas info\s*: Used (\d+) registers(.*)$")
# NOTE: two wordings seen: C7512 "... due to <why> for the function '<f>'", C7511 "... due to <why> in the function '<f>'"
_SERIALIZED = re.compile(r"^ptxas info\s*: \((C75\d\d)\) .*wgmma\.mma_async instructions are serialized due to (.+?) "
                         r"(?:for|in) the function '([^']+)'")
_PIECES = (
    ("barriers", re.compile(r"^used (\d+) barriers?$")),
    ("smem", re.compile(r"^(\d+) bytes smem$")),
    ("cmem", re.compile(r"^(\d+) bytes cmem\[(\d+)\]$")),
)


def parse_ptxas(text: str) -> tuple[list[Kernel], list[str]]:
    """Every entry function in ``-Xptxas -v`` output, and what could not be parsed.

    Strict: an entry without its 'Function properties' line (stack frame, spills) or its 'Used N
    registers' line is a problem, never a kernel with zeros. Names are mangled here."""
    kernels: list[Kernel] = []
    problems: list[str] = []
    props: dict[str, tuple[int, int, int]] = {}
    entries: list[dict] = []
    serialized: dict[str, str] = {}  # mangled name -> ptxas's code and reason (they come before the entry's lines)
    current = None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        line = line.rstrip()
        m = _SERIALIZED.match(line)
        if m:
            serialized[m.group(3)] = f"{m.group(1)}: {m.group(2)}"
            continue
        m = _ENTRY.match(line)
        if m:
            current = {"mangled": m.group(1), "arch": m.group(2), "used": None}
            entries.append(current)
            continue
        m = _PROPS.match(line)
        if m:
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            frame = _FRAME.match(nxt)
            if frame:
                props[(m.group(1), current["arch"] if current else "")] = tuple(int(x) for x in frame.groups())
            else:
                problems.append(f"no stack frame / spill line after 'Function properties for {m.group(1)}'")
            continue
        m = _USED.match(line)
        if m:
            if current is None or current["used"] is not None:
                problems.append(f"a 'Used ... registers' line with no entry function before it: {line.strip()}")
                continue
            current["used"] = (int(m.group(1)), m.group(2))
    for e in entries:
        name, arch = e["mangled"], e["arch"]
        frame = props.get((name, arch))
        if frame is None or e["used"] is None:
            missing = "stack frame and spills" if frame is None else "registers"
            problems.append(f"ptxas output for {name} ({arch}) could not be parsed: no {missing}")
            continue
        registers, rest = e["used"]
        k = Kernel(name=name, mangled=name, arch=arch, registers=registers, stack_frame=frame[0],
                   spill_stores=frame[1], spill_loads=frame[2], wgmma_serialized=serialized.get(name, ""))
        for piece in (p.strip() for p in rest.split(",") if p.strip()):
            for key, pattern in _PIECES:
                pm = pattern.match(piece)
                if pm:
                    if key == "cmem":
                        k.cmem[pm.group(2)] = int(pm.group(1))
                    else:
                        setattr(k, key, int(pm.group(1)))
                    break
            else:
                k.other.append(piece)
        kernels.append(k)
    return kernels, problems


def error_excerpt(output: str, lines: int = ERROR_LINES) -> str:
    """The compiler's first error and what follows it (its first lines when no line says error)."""
    text = [line for line in output.splitlines() if line.strip()]
    first = next((i for i, line in enumerate(text) if re.search(r"\berror\b", line, re.IGNORECASE)), 0)
    excerpt = "\n".join(text[first:first + lines])
    hint = _hint(output)
    return excerpt + (f"\nhint: {hint}" if hint else "")


def _hint(output: str) -> str:
    m = re.search(r"fatal error: (cusparse\.h|cublas_v2\.h|cublasLt\.h|cusolverDn\.h|cufft\.h|curand\.h)", output)
    if m:
        return (f"{m.group(1)} is not in this CUDA toolkit (ATen/cuda/CUDAContext.h pulls in the CUDA "
                "libraries' headers); for the stream include <c10/cuda/CUDAStream.h> and call "
                "c10::cuda::getCurrentCUDAStream(), or take the stream as an int64 argument")
    return ""


# -------------------------------------------------------------------------------------- run
def _run(cmd: list[str], cwd: Path, timeout_s: float) -> tuple[int | None, str]:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL, env=dict(os.environ, LC_ALL="C"))  # plain quotes in messages
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"") + (exc.stderr or b"")
        return None, out.decode(errors="replace") if isinstance(out, bytes) else out
    return proc.returncode, proc.stdout + proc.stderr


def _key(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def check(sub: Submission, nvcc: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> CompileResult:
    """Compile ``sub``'s CUDA source (and syntax-check its C++ side); cached by what is compiled."""
    t0 = time.monotonic()
    try:
        c = contract.read(sub.path)
    except contract.ContractError as exc:
        return CompileResult(sub.label, FAIL, f"{sub.path.name}: {exc}")
    if not c.compiles_cuda:
        return CompileResult(sub.label, NO_CUDA, "no CUDA source (torch only)")
    import torch

    fast = fast_cuda_check(c)
    nv_cmd, compiled_for = nvcc_command(nvcc, c, sub.arch, prelude=not fast)
    cc_cmd = cpp_command(c)
    key = _key({"cu": c.cuda_file_text(prelude=not fast), "cpp": c.cpp_file_text() if cc_cmd else None, "nvcc": nv_cmd,
                "cxx": cc_cmd, "nvcc_version": cuda_tools.version(nvcc),
                "cxx_version": cuda_tools.version(cc_cmd[0]) if cc_cmd else None, "torch": torch.__version__})
    folder = build_cache.root() / "compile" / key[:16]
    result_path = folder / "result.json"
    if result_path.exists():
        try:
            cached = CompileResult.from_json(json.loads(result_path.read_text()))
            cached.label, cached.cached = sub.label, True
            return cached
        except (OSError, ValueError, TypeError):
            pass  # a damaged cache entry: compile again
    if cc_cmd and os.environ.get("NVFP4_NO_PCH") != "1":  # NOTE: after the cache lookup: a hit needs no PCH
        cc_cmd = cpp_command(c, use_pch=True)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cuda.cu").write_text(c.cuda_file_text(prelude=not fast))
    if cc_cmd:
        (folder / "main.cpp").write_text(c.cpp_file_text())
    (folder / "command.txt").write_text("\n".join(shlex.join(cmd) for cmd in (nv_cmd, cc_cmd) if cmd) + "\n")

    def compile_cuda() -> tuple[int | None, str]:
        code, output = _run(nv_cmd, folder, timeout_s)
        if fast and code != 0:  # NOTE: maybe a header only the prelude brought in: the faithful compile decides
            (folder / "cuda.cu").write_text(c.cuda_file_text())
            full_cmd, _ = nvcc_command(nvcc, c, sub.arch)
            with (folder / "command.txt").open("a") as f:
                f.write(shlex.join(full_cmd) + "  # again with the prelude\n")
            code, output = _run(full_cmd, folder, timeout_s)
        return code, output

    # The two compilers at once: a single version's check takes the longer of the two, not the sum.
    with ThreadPoolExecutor(max_workers=2) as pool:
        nv_future = pool.submit(compile_cuda)
        cc_future = pool.submit(_run, cc_cmd, folder, timeout_s) if cc_cmd else None
        code, output = nv_future.result()
        cc_code, cc_output = cc_future.result() if cc_future else (0, "")
    log = folder / "compile.log"
    log.write_text(output + (f"\n--- {shlex.join(cc_cmd)}\n{cc_output}" if cc_cmd else ""))
    result = CompileResult(sub.label, OK, arch=compiled_for, log=str(log))
    failures = []
    if code is None:
        failures.append(f"nvcc took over {timeout_s:.0f} s (killed)")
    elif code != 0:
        where = ("" if c.no_implicit_headers else
                 f" (cuda.cu is CUDA_SRC after load_inline's {len(contract.IMPLICIT_CUDA_PRELUDE)} #include lines)")
        failures.append(f"nvcc exited with code {code}{where}:\n{error_excerpt(output)}")
    else:
        kernels, problems = parse_ptxas(output)
        names = demangle([k.mangled for k in kernels])
        for k in kernels:
            k.name = names.get(k.mangled, k.mangled)
        result.kernels = kernels
        if problems:
            failures.append("nvcc succeeded but " + "; ".join(problems))
        elif not kernels:
            result.message = "ptxas compiled no kernels (no __global__ function instantiated)"
    if cc_code is None:
        failures.append(f"the C++ side (main.cpp: CPP_SRC and FUNCTIONS) took over {timeout_s:.0f} s (killed)")
    elif cc_code != 0:
        failures.append(f"the C++ side (main.cpp: CPP_SRC and FUNCTIONS) failed, {host_compiler()} exited with code "
                        f"{cc_code}:\n{error_excerpt(cc_output)}")
    if failures:
        result.status, result.message = FAIL, "\n".join(failures)
    result.seconds = time.monotonic() - t0
    if code is not None and cc_code is not None:  # a timeout is no verdict on the source: compile again next time
        tmp = result_path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(result.to_json(), indent=1))
        tmp.replace(result_path)
    return result
