"""``nvfp4 build``: build versions' extensions, several at once, each cached by its source hash.

Two ways, one result type (:class:`harness.compile_only.CompileResult`):

- compile-only (:mod:`harness.compile_only`): nvcc on the submission's contract constants, no GPU
  needed, with ptxas's per-kernel resources. The default where there is no GPU.
- full: import the submission in a child process (its ``load_inline`` builds the extension into
  ``.build/torch_extensions/<source hash>``, the folder the worker uses, so a later ``test`` or
  ``run`` does not build again). A crash or hang while building costs only the child.

The compiled manifest (``submissions/compiled.json``, or ``NVFP4_COMPILE_MANIFEST``; committed):
every lineage version that passed compile-only, as ``"problem/vN": key`` where the key is
:func:`harness.compile_only.manifest_key`, the hash of exactly what compile-only compiles for it
(cuda.cu and main.cpp as written for nvcc and the host compiler, the version's flags, defines and
arch) with the machine's parts left out (compiler paths, include folders, torch's nvcc flags), plus
``checked_with``: the nvcc, host compiler and torch that last compiled every version.

- Written only by a compile-only build in which nothing failed (:func:`record_compiled`), at once
  (a temporary file renamed over it), sorted by problem and version number so a diff shows only the
  versions that changed, and only when its text changes. Other problems' and versions' entries are
  kept; a build of all of a problem's versions drops entries of versions that no longer exist.
- ``--changed`` (CI) compiles only the versions whose key is not in the manifest (changed or new)
  and counts the others as skipped; a failure of one it compiles fails the command as usual.
- Policy for another toolchain (nvcc, host compiler or torch unlike ``checked_with``): unchanged
  versions are still skipped, with a warning. NOTE: keying by the toolchain too would make a CI
  machine with another nvcc (or a torch bump in constraints/) recompile all ~130 versions (~35
  minutes on 2 cores) on every run until someone commits a manifest from that exact toolchain; a
  compiler upgrade is a deliberate step, checked once by the plain ``nvfp4 build all all
  --compile-only`` (which compiles every version again: the build cache's key includes the
  compiler and torch versions; then it records the new toolchain).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness import build_cache, compile_only, contract, locking, machine, paths, submissions
from harness.compile_only import FAIL, OK, CompileResult
from harness.errors import UserError
from harness.submissions import Submission

# The child: point load_inline at this version's build folder, import (which builds), report.
_CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from harness import loader
t0 = time.perf_counter()
loader.import_submission(sys.argv[2], sys.argv[3], source_hash=sys.argv[4],
                         on_progress=lambda text: print(f"nvfp4-build: {text}", flush=True))
print(f"nvfp4-build: imported in {time.perf_counter() - t0:.1f} s", flush=True)
"""


def choose_mode(compile_only_flag: bool, has_gpu: bool, nvcc: str | None) -> str:
    """'compile-only' or 'full'; compile-only is automatic without a GPU and needs nvcc."""
    if compile_only_flag or not has_gpu:
        if not nvcc:
            why = "--compile-only" if compile_only_flag else "without a GPU, build compiles only, and it"
            raise UserError(f"{why} needs nvcc: none on PATH, under CUDA_HOME or in /usr/local/cuda "
                            "(install the CUDA toolkit)")
        return "compile-only"
    return "full"


def full_build(sub: Submission, timeout_s: float) -> CompileResult:
    """Import ``sub`` in a child (building its extension); OK, or FAIL with the error's first lines."""
    t0 = time.monotonic()
    log = build_cache.logs_dir() / f"build-{sub.problem}-{sub.label.replace('/', '_')}-{os.getpid()}-{time.time_ns()}.log"
    cmd = [sys.executable, "-c", _CHILD, str(paths.REPO_ROOT), str(sub.path), sub.label, sub.source_hash]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=paths.REPO_ROOT, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        finally:  # the child's compiler processes too: the whole group
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
    text = log.read_text(errors="replace")
    result = CompileResult(sub.label, OK, seconds=time.monotonic() - t0, log=str(log))
    if code is None:
        result.status, result.message = FAIL, f"building took over {timeout_s:.0f} s (process group killed)"
    elif code != 0:
        result.status = FAIL
        result.message = f"importing exited with code {code}:\n{compile_only.error_excerpt(text)}"
    return result


def build(subs: list[Submission], mode: str, *, nvcc: str | None = None, jobs: int | None = None,
          timeout_s: float = compile_only.DEFAULT_TIMEOUT_S,
          on_done: Callable[[Submission, CompileResult], None] | None = None) -> list[CompileResult]:
    """Every version of ``subs``, ``jobs`` at a time; results in the order of ``subs``."""
    def one(sub: Submission) -> CompileResult:
        if mode == "compile-only":
            result = compile_only.check(sub, nvcc, timeout_s)
        else:
            result = full_build(sub, timeout_s)
        if on_done:
            on_done(sub, result)
        return result

    if not subs:
        return []
    workers = max(1, min(len(subs), jobs or os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, subs))


# ------------------------------------------------------------------------ before measuring
# NOTE: issue 49: `table gemv` built and timed one version after another, ~45 s each of which ~40 s
# was nvcc on one core while the others waited (7 of 14 versions in 330 s on a 16-core H200 host).
# Measuring commands therefore build every version they will time first, all at once, then time.

def needs_build(sub: Submission) -> bool:
    """Whether importing ``sub`` compiles an extension: it has CUDA source under the compile
    contract (harness/contract.py), or a contract the harness cannot read (importing decides)."""
    try:
        return contract.read(sub.path).compiles_cuda
    except (contract.ContractError, OSError, SyntaxError):
        return True


def prebuild_plan(subs: list[Submission], capability: tuple[int, int] | None,
                  untrusted_all: bool = False) -> list[Submission]:
    """The builds a measuring command runs before it times ``subs`` on a GPU of ``capability``:
    each lab version that compiles something and runs here, once per source hash (two labels of one
    code share a build folder). They are ``full`` builds: the import a child makes later finds its
    extension built. A file from outside the lab (or any, with ``untrusted_all``) is imported only
    inside its sandbox, so it builds there, when it runs; a version whose Arch this GPU lacks is
    refused without a build; a CPU machine (``capability`` None) runs none of the versions that
    compile, so it builds nothing."""
    if capability is None or untrusted_all:
        return []
    seen, plan = set(), []
    for sub in subs:
        if (sub.source_hash in seen or not submissions.in_lab(sub) or machine.arch_refusal(sub.arch, capability)
                or not needs_build(sub)):
            continue
        seen.add(sub.source_hash)
        plan.append(sub)
    return plan


def failed_builds(plan: list[Submission], results: list[CompileResult]) -> dict[str, CompileResult]:
    """source hash -> the failed build of that code (every version of it fails the same way)."""
    return {sub.source_hash: r for sub, r in zip(plan, results) if not r.ok}


# ----------------------------------------------------------------------------------- manifest
MANIFEST_ENV = "NVFP4_COMPILE_MANIFEST"
_ABOUT = ("Versions that passed `nvfp4 build --compile-only`, keyed by the hash of what it compiles "
          "(harness/compile_only.py manifest_key); written only by that command after a build with no "
          "failure. CI's `--changed` compiles only versions whose key is not here. See harness/build.py.")
_NAME = re.compile(r"^(\w+)/v(\d+)$")


class ManifestError(UserError):
    """The manifest exists but cannot be read (a merge conflict, hand edits)."""


@dataclass
class Manifest:
    versions: dict[str, str] = field(default_factory=dict)  # "problem/vN" -> compile_only.manifest_key
    checked_with: dict[str, str] = field(default_factory=dict)  # compile_only.toolchain of the last build of all

    def keys(self) -> set[str]:
        return set(self.versions.values())


def manifest_path() -> Path:
    return Path(os.environ.get(MANIFEST_ENV) or paths.submissions_dir() / "compiled.json")


def read_manifest(path: Path) -> Manifest:
    """The manifest at ``path``; empty when there is none. Raises ManifestError when it exists but
    is not one (never treated as empty: CI would then quietly compile everything)."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return Manifest()
    except (OSError, ValueError) as exc:
        raise ManifestError(f"the compiled manifest {path} cannot be read ({exc}); "
                            "`nvfp4 build all all --compile-only` writes it anew") from None
    doc = doc if isinstance(doc, dict) else {}
    versions, checked = doc.get("versions"), doc.get("checked_with", {})
    well_formed = isinstance(versions, dict) and isinstance(checked, dict) and all(
        isinstance(k, str) and _NAME.match(k) and isinstance(v, str) for k, v in versions.items())
    if not well_formed:
        raise ManifestError(f"the compiled manifest {path} is not one (a 'versions' object of "
                            "\"problem/vN\": key); `nvfp4 build all all --compile-only` writes it anew")
    return Manifest(dict(versions), {str(k): str(v) for k, v in checked.items()})


def manifest_text(m: Manifest) -> str:
    """Stable text: versions by problem then version number, one a line."""
    def order(name: str) -> tuple[str, int]:
        problem, number = _NAME.match(name).groups()
        return problem, int(number)

    doc = {"about": _ABOUT, "checked_with": dict(sorted(m.checked_with.items())),
           "versions": {name: m.versions[name] for name in sorted(m.versions, key=order)}}
    return json.dumps(doc, indent=1) + "\n"


def write_manifest(path: Path, m: Manifest) -> bool:
    """Write ``m`` atomically (a temporary file beside it, renamed over it); False when the file
    already says exactly this (it is then not touched)."""
    text = manifest_text(m)
    try:
        if path.read_text() == text:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    locking.write_atomically(path, text)  # NOTE: a reader (or a killed build) never sees half a manifest
    return True


def manifest_name(sub: Submission) -> str | None:
    """``problem/vN`` for a lineage file (submissions/<problem>/submission_vN.py, or the same name
    in its attic/: a version keeps its entry, and its key, when it moves there), else None: a file
    given by path is checked but never recorded."""
    if not re.fullmatch(r"v\d+", sub.label):
        return None
    lineage = paths.submissions_dir() / sub.problem
    name = f"submission_{sub.label}.py"
    try:
        where = sub.path.resolve()
        return f"{sub.problem}/{sub.label}" if where in (
            (lineage / name).resolve(), (lineage / submissions.ATTIC / name).resolve()) else None
    except OSError:
        return None


def manifest_keys(subs: list[Submission]) -> list[str | None]:
    """compile_only.manifest_key of each version (None: its contract cannot be read)."""
    return [compile_only.manifest_key(sub) for sub in subs]


def split_changed(subs: list[Submission], keys: list[str | None], manifest: Manifest) -> tuple[list[int], list[int]]:
    """Indices into ``subs``: those to compile (key not in the manifest, or no key) and those
    skipped as unchanged. NOTE: by key, not by name: a version renamed, or copied unchanged, is the
    same compile and is skipped too."""
    known = manifest.keys()
    build_idx = [i for i, k in enumerate(keys) if k is None or k not in known]
    skip_idx = [i for i, k in enumerate(keys) if k is not None and k in known]
    return build_idx, skip_idx


def record_compiled(path: Path, subs: list[Submission], keys: list[str | None], *, complete: set[str],
                    toolchain: dict[str, str] | None) -> bool:
    """After a compile-only build in which every one of ``subs`` passed (compiled now, cached, or
    skipped as unchanged): record each lineage version's key; drop entries of the problems in
    ``complete`` (those whose every version is in ``subs``) that no longer exist. ``toolchain``:
    the new ``checked_with``, given only when every version of every problem was compiled (not
    skipped) with it. Returns whether the file changed. The caller must not call it after a failure.

    Raises ManifestError when the old manifest cannot be read and ``toolchain`` is None (a partial
    build must not drop the other versions' entries); a build of everything writes it anew."""
    # NOTE: read, merge and write under one exclusive lock: two compile-only builds finishing together
    # (two versions built in parallel, as engineers and scripts do) each lost the other's entries
    # when they read the same old manifest and wrote their own merge (seen: gemv v20, gemm v42).
    with locking.held(path):
        try:
            old = read_manifest(path)
        except ManifestError:
            if toolchain is None:
                raise
            old = Manifest()
        versions = {name: key for name, key in old.versions.items() if _NAME.match(name).group(1) not in complete}
        for sub, key in zip(subs, keys):
            name = manifest_name(sub)
            if name and key:
                versions[name] = key
        checked = dict(toolchain) if toolchain else old.checked_with
        return write_manifest(path, Manifest(versions, checked))
