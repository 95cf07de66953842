"""The compiled clock: every event method's loop, its events and flush, and each block's key, out of the
submission's reach.

``harness/clock.cpp`` is a small CPython extension (g++, no torch or CUDA headers: the runtime's entry
points come from the copy torch loaded, by dlsym). Three sides, one module:

- the parent (:func:`library`): builds it into the build cache, keyed by its source's hash (about a
  second, once), before any worker starts, so a sandboxed child only loads the file (shown to it
  read-only); hands each worker two pipes, a key pipe (32 random bytes, the write end closed) and a
  record pipe it reads with a ``channel.Receiver`` under that key (:func:`read_block` checks a block's
  records and gives its figures);
- the worker (:func:`load`, :func:`batch_loop`): binds it after ``import torch`` and before the
  submission's import; the key goes from the pipe into C static memory, never a Python object;
- the clock itself: ``draw_key(tag, untimed)`` makes the untimed call before a block, synchronises,
  draws the key that decides the block's values (``harness.judge.mask_pool_signs``) and writes it in a
  signed record; ``time_batches`` is the timed loop of every event method (``harness.timing``'s
  ``EVENT_METHODS``: GPU MODE's batches, and cold, queued, warm and graph call by call), whose figures
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
def refused_calls(count) -> str:
    """What a nonzero ``refused`` count in a clock record means (every record carries the count so far)."""
    return (f"{count!r} call(s) of the clock refused (a key drawn or a loop run from inside a call, or a second "
            "bind): something besides the harness called it")


def outside_block(command: str) -> str:
    """What any clock record written during a command other than a block means."""
    return f"during a {command}: a key drawn or a loop run outside a block, by something besides the harness"


class Refused(Exception):
    """Records the parent does not accept for a block: the child's work is TAMPERED."""


@dataclass
class BlockRecords:
    """What the parent takes from a block's records: the key the judge masks with and, for the methods
    the clock times (``timing.EVENT_METHODS``), the last pass's figures (``--warm``'s warm pass's too),
    the first pass's escape where the block was timed twice, and why the block FAILs where a pass
    timed again escaped again."""
    key: int
    times_us: list[float] | None = None
    wall_us: float = 0.0
    span_us: float = 0.0
    warm_times_us: list[float] | None = None
    escape_retried: str | None = None
    escape: str | None = None  # a pass escaped when timed again: the block FAILs with this message
    issue_us: list[float] | None = None  # per batch, the host µs a call took to return (the last pass's)


@dataclass(frozen=True)
class _Pass:
    """One timed pass's figures as its record gives them, and its escape (``timing.escape_of``)."""
    times_us: list[float]
    wall_us: float
    span_us: float
    escape: str | None
    issue_us: list[float]  # per batch, host µs a call (the batch's issue time over its calls)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _figures(record: dict, method: str, calls: list[int]) -> _Pass:
    """One ``clock`` record's figures for a ``method`` pass of ``calls`` per batch; Refused if it is
    not one honest pass of them."""
    from harness.timing import escape_of  # NOTE: the very check the Python loop makes, on the record's figures
    if record.get("method") != method:
        raise Refused(f"a clock record of method {str(record.get('method'))[:40]!r} where the block times {method}")
    if record.get("error") is not None:
        raise Refused(f"the clock's record says the block failed ({record['error']}) in a reply that says PASS")
    if record.get("calls") != [float(c) for c in calls]:
        raise Refused(f"the clock timed batches of {record.get('calls')} calls where the pool makes {calls}")
    lists = [record.get(name) for name in ("times_us", "span_us", "wall_us", "issue_us")]
    if not all(isinstance(x, list) and len(x) == len(calls) and all(_number(v) and v >= 0 for v in x) for x in lists):
        raise Refused("a clock record whose times, spans, walls or issue times are not one non-negative number a batch")
    times, span, wall, issue = ([float(v) for v in x] for x in lists)
    return _Pass(times, sum(wall), sum(span), escape_of(method, sum(calls), sum(wall), sum(span)),
                 [i / c for i, c in zip(issue, calls)])


def _kinds(records: list[dict]) -> str:
    return ", ".join(r["event"] if r["event"] == "key" else f"clock({str(r.get('method'))[:20]})" for r in records)


def read_block(records: list[dict], *, tag: int, method: str, calls: list[int], wall_us: float,
               retried: bool = False, warm: bool = False, flush_us: float | None = None) -> BlockRecords:
    """The parent's check of the clock's records for one block it asked for (tag ``tag``), made
    after a PASS reply, and the block's figures from them.

    For the methods the clock times (``timing.EVENT_METHODS``): a key then the loop's record for each
    timed pass of ``method`` (batches of ``calls``), a second pass exactly where the first one's figures
    escape (``timing.escape_of``, computed here); with ``warm`` (``--warm`` beside cold) then the warm
    pass's loop records, no key (it times the same inputs), again a second exactly where the first
    escapes; every span within the parent's own ``wall_us`` around the request. graph's samples are its
    records' replay times less ``flush_us`` (the flush's own replay time the child measured at the
    capture: ``timing.graph_times``). For ``kernel`` (its profiler path): one key per timed pass, two
    where the child says it timed the block again (``retried``). Refused for anything else: a record
    missing, extra, out of order, of another block or method, a count the pool does not make, any
    refused call of the clock."""
    from harness.timing import EVENT_METHODS, graph_times
    for record in records:
        if record.get("event") not in ("key", "clock"):
            raise Refused(f"a clock record of an unknown kind ({str(record.get('event'))[:40]!r})")
        if record.get("tag") != tag:
            raise Refused(f"a clock record for block {record.get('tag')!r} in block {tag} (replayed, or made by "
                          "something besides the harness)")
        if record.get("refused") != 0:
            raise Refused(refused_calls(record.get("refused")))
    keys = [r.get("key") for r in records if r["event"] == "key"]
    if not all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k < 2 ** 63 for k in keys):
        raise Refused("a key record without a 63-bit key")
    if method not in EVENT_METHODS:
        kinds = [r["event"] for r in records]
        expected = 2 if retried else 1
        if kinds != ["key"] * expected:
            raise Refused(f"the clock drew {kinds.count('key')} keys (records {kinds}) for a block timed "
                          f"{'twice' if retried else 'once'} (its values were not the ones the harness decided)")
        return BlockRecords(key=keys[-1])
    if method == "graph" and not (_number(flush_us) and flush_us >= 0):
        raise Refused(f"a graph block whose flush replay time from its prepare is {flush_us!r}, not a number of µs")
    rest = list(records)
    order = (f"the clock's records for a {method}{' --warm' if warm else ''} block were {_kinds(records) or 'none'}, "
             "not a key then the loop for each timed pass"
             + (", then the warm loop for each warm pass" if warm else ""))

    def take(kind: str) -> dict:
        if not rest or rest[0]["event"] != kind:
            raise Refused(order)
        return rest.pop(0)

    def passes(pass_method: str, pass_calls: list[int], keyed: bool) -> list[_Pass]:
        """One pass of ``pass_method``, or two where the first one's figures escape."""
        timed = []
        while True:
            if keyed:
                take("key")
            timed.append(_figures(take("clock"), pass_method, pass_calls))
            if len(timed) == 2 or not timed[0].escape:
                return timed
            if not rest:
                raise Refused(f"the block was not timed again although its figures escape ({timed[0].escape})")

    def failed(timed: list[_Pass]) -> str | None:
        if len(timed) == 2 and timed[1].escape:
            return f"{timed[1].escape} (and in the block before, timed again: {timed[0].escape})"
        return None

    main = passes(method, calls, keyed=True)
    escape = failed(main)
    warm_passes = passes("warm", [1] * sum(calls), keyed=False) if warm and not escape else []
    escape = escape or failed(warm_passes)
    if rest:
        raise Refused(f"records after the block's last pass ({_kinds(rest)}): the block timed twice although its "
                      "first figures did not escape, or records the harness did not ask for")
    total_span = sum(p.span_us for p in main + warm_passes)
    if total_span > wall_us:
        raise Refused(f"the clock's events span {total_span:.0f} µs in a block that took {wall_us:.0f} µs by the "
                      "parent's clock")
    last = main[-1]
    times = graph_times(last.times_us, flush_us) if method == "graph" else last.times_us
    return BlockRecords(key=keys[-1], times_us=times, wall_us=last.wall_us, span_us=last.span_us,
                        warm_times_us=warm_passes[-1].times_us if warm_passes else None,
                        escape_retried=main[0].escape if len(main) == 2 else None, escape=escape,
                        issue_us=last.issue_us)


def batch_sizes(pool: int, batch: int) -> list[int]:
    """The calls of each batch of a pass over ``pool`` sets in batches of ``batch`` (gpumode's, else
    one: ``harness.timing``'s cut)."""
    batch = max(1, int(batch))
    return [min(batch, pool - i) for i in range(0, pool, batch)]
