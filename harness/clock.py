"""The compiled clock: gpumode's loop, its events and flush, and each block's key, out of the submission's reach.

``harness/clock.cpp`` is a small CPython extension (g++, no torch or CUDA headers: the runtime's entry
points come from the copy torch loaded, by dlsym). Three sides, one module:

- the parent (:func:`library`): builds it into the build cache, keyed by its source's hash (about a
  second, once), before any worker starts, so a sandboxed child only loads the file (shown to it
  read-only); hands each worker two pipes, a key pipe (32 random bytes, the write end closed) and a
  record pipe it reads with a ``channel.Receiver`` under that key (:func:`read_block` checks a block's
  records);
- the worker (:func:`load`, :func:`batch_loop`): binds it after ``import torch`` and before the
  submission's import; the key goes from the pipe into C static memory, never a Python object;
- the clock itself: ``draw_key(tag, untimed)`` makes the untimed call before a block, synchronises,
  draws the key that decides the block's values (``harness.judge.mask_pool_signs``) and writes it in a
  signed record; ``time_batches`` is GPU MODE's loop (``harness.timing``'s ``gpumode``), whose figures
  go to the parent in a signed record. Without CUDA (the parent decides: ``cuda`` at bind) the host
  clock stands in for events, so CI runs the same protocol.

docs/methodology.md ("The compiled clock") says what it closes and what it does not.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from harness import locking, paths
from harness.errors import UserError

SOURCE = Path(__file__).with_name("clock.cpp")
MODULE = "_nvfp4_clock"
KEY_BYTES = 32
FLAGS = ("-O2", "-std=c++17", "-shared", "-fPIC")
BUILD_TIMEOUT_S = 120.0


def batch_loop(fn, group, results):
    """One batch's calls, as GPU MODE's eval makes them (Python bytecode between the clock's events).
    NOTE: the clock keeps this function's code object from bind, run with empty globals: defined here,
    before any submission is imported, and nothing it reads is a name a submission could rebind."""
    for data in group:
        results.append(fn(data))


# -- the parent: building ---------------------------------------------------------------------------
def build_dir() -> Path:
    """Where the clock is built: ``NVFP4_CLOCK_DIR``, else the build cache's ``clock/``."""
    named = os.environ.get("NVFP4_CLOCK_DIR")
    return Path(named) if named else paths.build_dir() / "clock"


def _compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        raise UserError("the compiled clock needs a C++ compiler and none was found (install g++, or set CXX)")
    return cxx


def library() -> Path:
    """The clock's shared library, built here if this source, these flags and this Python have none yet."""
    include = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    digest = hashlib.sha256(SOURCE.read_bytes() + " ".join((*FLAGS, include, sys.version)).encode()).hexdigest()[:16]
    folder = build_dir() / digest
    target = folder / f"{MODULE}{suffix}"
    if target.exists():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    # NOTE: one builder at a time (two test workers, two GPUs' runners): the others find it built
    with locking.open_locked(folder / ".build.flock", doing="building the compiled clock"):
        if target.exists():
            return target
        tmp = folder / f"{MODULE}.{os.getpid()}.tmp{suffix}"
        cmd = [_compiler(), *FLAGS, f"-I{include}", str(SOURCE), "-o", str(tmp), "-ldl"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UserError(f"building the compiled clock failed: {exc}") from None
        if proc.returncode != 0:
            first = next((line for line in (proc.stderr + proc.stdout).splitlines() if "error" in line), "")
            raise UserError(f"building the compiled clock ({SOURCE.name}) failed: {first.strip() or proc.returncode}")
        tmp.replace(target)
    return target


def load(path: str | os.PathLike):
    """The clock module from its built library (the worker's side: it never builds)."""
    spec = importlib.util.spec_from_file_location(MODULE, str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # NOTE: registered, so the guard watches its functions by name (harness.guard) like torch's
    sys.modules[MODULE] = module
    return module


# -- the parent: a block's records ------------------------------------------------------------------
class Refused(Exception):
    """Records the parent does not accept for a block: the child's work is TAMPERED."""


@dataclass
class BlockRecords:
    """What the parent takes from a block's records: the key the judge masks with, and for ``gpumode``
    the last pass's figures, and the first pass's escape where the block was timed twice."""
    key: int
    times_us: list[float] | None = None
    wall_us: float = 0.0
    span_us: float = 0.0
    escape_retried: str | None = None
    escape: str | None = None  # the second pass escaped too: the block FAILs


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _figures(record: dict, calls: list[int]) -> tuple[list[float], float, float]:
    """(times, wall, span) of one ``clock`` record for a pass of ``calls`` per batch; Refused if it
    is not one honest pass of them."""
    if record.get("error") is not None:
        raise Refused(f"the clock's record says the block failed ({record['error']}) in a reply that says PASS")
    if record.get("calls") != [float(c) for c in calls]:
        raise Refused(f"the clock timed batches of {record.get('calls')} calls where the pool makes {calls}")
    lists = [record.get(name) for name in ("times_us", "span_us", "wall_us")]
    if not all(isinstance(x, list) and len(x) == len(calls) and all(_number(v) and v >= 0 for v in x) for x in lists):
        raise Refused("a clock record whose times, spans or walls are not one non-negative number a batch")
    times, span, wall = lists
    return [float(t) for t in times], float(sum(wall)), float(sum(span))


def read_block(records: list[dict], *, tag: int, method: str, calls: list[int], wall_us: float,
               retried: bool = False) -> BlockRecords:
    """The parent's check of the clock's records for one block it asked for (tag ``tag``), made
    after a PASS reply: one key per timed pass and, for ``gpumode``, one loop record after each key,
    for batches of ``calls``, whose spans fit in the parent's own ``wall_us`` around the request.
    A second pass is expected exactly where the first one's figures escape (``timing.escape_of``,
    computed here); for the other methods where the child says it timed the block again
    (``retried``). Refused for anything else: a record missing, extra, out of order or of another
    block, a count the pool does not make, any refused call of the clock."""
    from harness.timing import escape_of  # NOTE: the very check the Python loop makes, on the record's figures
    for record in records:
        if record.get("event") not in ("key", "clock"):
            raise Refused(f"a clock record of an unknown kind ({str(record.get('event'))[:40]!r})")
        if record.get("tag") != tag:
            raise Refused(f"a clock record for block {record.get('tag')!r} in block {tag} (replayed, or made by "
                          "something besides the harness)")
        refused = record.get("refused")
        if refused != 0:
            raise Refused(f"{refused!r} call(s) of the clock refused (a key drawn or a loop run from inside a call, "
                          "or a second bind): something besides the harness called it")
    kinds = [r["event"] for r in records]
    keys = [r.get("key") for r in records if r["event"] == "key"]
    if not all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k < 2 ** 63 for k in keys):
        raise Refused("a key record without a 63-bit key")
    if method != "gpumode":
        expected = 2 if retried else 1
        if kinds != ["key"] * expected:
            raise Refused(f"the clock drew {kinds.count('key')} keys (records {kinds}) for a block timed "
                          f"{'twice' if retried else 'once'} (its values were not the ones the harness decided)")
        return BlockRecords(key=keys[-1])
    if kinds not in (["key", "clock"], ["key", "clock", "key", "clock"]):
        raise Refused(f"the clock's records for a gpumode block were {kinds or 'none'}, not a key then the loop for "
                      "each timed pass")
    passes = [_figures(r, calls) for r in records if r["event"] == "clock"]
    pool = sum(calls)
    escapes = [escape_of("gpumode", pool, wall, span) for _, wall, span in passes]
    if len(passes) == 1 and escapes[0]:
        raise Refused(f"the block was not timed again although its figures escape ({escapes[0]})")
    if len(passes) == 2 and not escapes[0]:
        raise Refused("the block was timed twice although its first figures did not escape")
    total_span = sum(span for _, _, span in passes)
    if total_span > wall_us:
        raise Refused(f"the clock's events span {total_span:.0f} µs in a block that took {wall_us:.0f} µs by the "
                      "parent's clock")
    times, wall, span = passes[-1]
    return BlockRecords(key=keys[-1], times_us=times, wall_us=wall, span_us=span,
                        escape_retried=escapes[0] if len(passes) == 2 else None,
                        escape=escapes[1] if len(passes) == 2 else None)


def batch_sizes(pool: int, batch: int) -> list[int]:
    """The calls of each batch of a gpumode pass over ``pool`` sets (``harness.timing``'s cut)."""
    batch = max(1, int(batch))
    return [min(batch, pool - i) for i in range(0, pool, batch)]
