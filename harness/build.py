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
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness import build_cache, compile_only, contract, isolation, locking, machine, paths, submissions
from harness.compile_only import FAIL, OK, CompileResult
from harness.errors import UserError
from harness.submissions import Submission

# The child: point load_inline at this version's build folder, import (which builds), report.
_CHILD = """
import os, sys, time
os.nice(int(sys.argv[5]))  # a build beside a timing yields the CPU to it (harness.build.Background)
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


def full_build(sub: Submission, timeout_s: float, stop: threading.Event | None = None, niceness: int = 0) -> CompileResult:
    """Import ``sub`` in a child (building its extension); OK, or FAIL with the error's first lines.
    ``stop`` set: the child's group is killed (FAIL, "stopped"); ``niceness``: the child's nice."""
    t0 = time.monotonic()
    log = build_cache.logs_dir() / f"build-{sub.problem}-{sub.label.replace('/', '_')}-{os.getpid()}-{time.time_ns()}.log"
    cmd = [sys.executable, "-c", _CHILD, str(paths.REPO_ROOT), str(sub.path), sub.label, sub.source_hash, str(niceness)]
    stopped = False
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=paths.REPO_ROOT, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        # NOTE: the child's compiler processes too: the whole group, killed on leaving (or by SIGTERM /
        # SIGHUP with the workers: a table's builds run while it times)
        with isolation.reaped_group(proc.pid):
            code = None
            while code is None and time.monotonic() - t0 < timeout_s and not stopped:
                try:
                    code = proc.wait(timeout=min(0.2, max(0.01, timeout_s - (time.monotonic() - t0))))
                except subprocess.TimeoutExpired:
                    stopped = stop is not None and stop.is_set()
        proc.wait()
    text = log.read_text(errors="replace")
    result = CompileResult(sub.label, OK, seconds=time.monotonic() - t0, log=str(log))
    if stopped:
        result.status, result.message = FAIL, "stopped before it ended (the command stopped)"
    elif code is None:
        result.status, result.message = FAIL, f"building took over {timeout_s:.0f} s (process group killed)"
    elif code != 0:
        result.status = FAIL
        result.message = f"importing exited with code {code}:\n{compile_only.error_excerpt(text)}"
    return result


def build(subs: list[Submission], mode: str, *, nvcc: str | None = None, jobs: int | None = None,
          timeout_s: float = compile_only.DEFAULT_TIMEOUT_S,
          on_done: Callable[[Submission, CompileResult], None] | None = None,
          stop: threading.Event | None = None, niceness: int = 0) -> list[CompileResult]:
    """Every version of ``subs``, ``jobs`` at a time, started in the order of ``subs``; results in
    that order. ``stop`` set: running full builds are killed and the others not started (FAIL,
    ``on_done`` not told)."""
    def one(sub: Submission) -> CompileResult:
        if stop is not None and stop.is_set():
            return CompileResult(sub.label, FAIL, message="not started (the command stopped)")
        if mode == "compile-only":
            result = compile_only.check(sub, nvcc, timeout_s)
        else:
            result = full_build(sub, timeout_s, stop, niceness)
        if stop is not None and stop.is_set():
            return result
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


class Background:
    """``plan``'s full builds (``prebuild_plan``'s) running in a thread of their own while the command
    times the versions built already (``table``: harness.ladder waits on :meth:`ended`, per version).

    NOTE: issue 49: `table group_gemm` on a fresh one-GPU H200 (session 52) spent 65 s building all 34
    versions before timing any, although the builds end roughly in ladder order (they start in it)
    and v0's rows alone take ~22 s. The builds overlap the timing, so they leave it CPU: ``jobs``
    builds at a time (the table's: cores - 2, one core for the timing child's host path, one for the
    parent and the judge) and each at ``niceness`` 10 (the scheduler favours the timing process when
    both want a core: gpumode rows of group_gemm's C and D are host-bound, a few µs of launch path).
    Measured (session 53, a fresh one-GPU H200, 16 cores, `table group_gemm --record`, 36 versions):
    240 s against 305, the 36 builds done 85 s in (14 at once) while v0-v6 were timed; the rows timed
    beside the builds against earlier rows of the same code: C of v1, v2, v4, v5 within 1.3%, v3's
    18% and v6's 6% above; rows timed after the builds were done spread as far on the host-bound D
    (v32 31.1 against 21.0 µs), so one run does not separate the builds' cost from that spread.

    As a context manager: entered, the builds start; left (the command ended, Ctrl-C, an error),
    the running builds are killed and the others not started, and the thread is joined, so no
    compiler outlives the command (SIGTERM: each build's group is in ``isolation.reaped_on_signals``)."""

    def __init__(self, plan: list[Submission], timeout_s: float, jobs: int | None = None, niceness: int = 10,
                 on_done: Callable[[Submission, CompileResult], None] | None = None):
        self.plan, self.timeout_s, self.jobs, self.niceness = list(plan), timeout_s, jobs, niceness
        self.on_done = on_done
        self._planned = {sub.source_hash for sub in self.plan}
        self._results: dict[str, CompileResult] = {}  # source hash -> its build's result, once ended
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="table-builds", daemon=True)
        self.error: BaseException | None = None  # a fault of the build machinery itself, not of a version

    def __enter__(self) -> "Background":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            build(self.plan, "full", jobs=self.jobs, timeout_s=self.timeout_s, on_done=self._done, stop=self._stop,
                  niceness=self.niceness)
        except BaseException as exc:  # noqa: BLE001 - every unended build then reads as this failure
            self.error = exc
        finally:
            with self._lock:
                for sub in self.plan:
                    self._results.setdefault(sub.source_hash, CompileResult(sub.label, FAIL, message=(
                        f"harness error: the builds stopped: {type(self.error).__name__}: {self.error}" if self.error
                        else "not built: the command stopped")))

    def _done(self, sub: Submission, result: CompileResult) -> None:
        with self._lock:
            self._results[sub.source_hash] = result
        if self.on_done:
            self.on_done(sub, result)

    def ended(self, sub: Submission) -> bool:
        """Whether ``sub`` can be timed: its build ended (well or not), or it builds nothing here."""
        with self._lock:
            return sub.source_hash not in self._planned or sub.source_hash in self._results

    def failure(self, sub: Submission) -> CompileResult | None:
        """``sub``'s build if it ended and failed, else None."""
        with self._lock:
            result = self._results.get(sub.source_hash)
        return result if result is not None and not result.ok else None

    def built(self, sub: Submission) -> bool:
        """Whether ``sub`` can be imported without compiling: ended and not failed."""
        return self.ended(sub) and self.failure(sub) is None

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


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
