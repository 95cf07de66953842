"""A compiled clock (issue 48 item 4, first slice): GPU MODE's batch loop in C++, its figures signed and
sent to the parent on a descriptor of their own, timed against the Python loop it would replace.

The product now carries it: harness/clock.cpp and harness/clock.py (commit 6dd8614), grown from this
study's C++ (the key drawn in C after the untimed call, the dirty flush as a cudaMemsetAsync, the loop's
calls by Python bytecode as this study's third arm H makes them, the host clock standing in on a CPU).
This study stays as the measurement of the three arms against the Python loop.

`studies/compiled_clock.cpp` is a small CPython extension (no torch headers, no link to libcudart: the
runtime's entry points are resolved with dlsym from the copy torch loaded, so it builds with g++ in
about a second). It implements `harness.timing._time_batches` (synchronise, wall clock, record before,
flush, record start, the calls, record end, the captures, record captured, synchronise, wall clock;
the elapsed times computed in C after the last batch) with Python callables for the call, the flush
and the capture, and SHA-256 / HMAC-SHA256 written from FIPS 180-4 and RFC 2104 (constants derived
from their definition). `bind` reads a 32-byte key from a descriptor and closes it, into C static
memory; every block ends with one record, `SEQ MAC JSON` as in harness/channel.py, written with
write(2) on the clock's own descriptor, which a `channel.Receiver` under that key verifies with
Python's `hmac`. docs/methodology.md ("The compiled clock") has the design and what it closes.

Modes:
  --check-hmac     (CPU, g++ only) builds the HMAC part alone and checks sha256 and hmac_sha256
                   against hashlib / hmac on random keys and messages (block-boundary lengths included)
  --check-loop     (CPU) the whole clock against a fake CUDA runtime (events read the host clock):
                   figures, records verified by channel.Receiver, a forged and a replayed line refused,
                   a nested call and a second bind refused and counted, a call that raises
  --compile-check  (CPU, nvcc) the clock with <cuda_runtime_api.h>, whose static_asserts check that
                   the signatures it calls through are the runtime's; nothing runs
  --dry-run        (CPU) the GPU study's own code path with gemv/gemm v0, a tests shape and the fake
                   runtime, to check the study before a GPU session; its figures mean nothing
  (no mode)        (GPU) the HMAC check, then per benchmark shape of gemv v22 and gemm v52 (built
                   first, in parallel), blocks timed alternately by harness.timing (`gpumode`,
                   dirty flush, the untimed call before each block, outputs captured into a
                   judge.ResultSink) and by the compiled clock, order swapped every round; per shape
                   the two means, each one's first-call and rest medians (gemv), the ratio
                   compiled / Python with a 95% t-interval over the rounds, escape flags, records
                   verified

Usage (repo root):
  python3 studies/compiled_clock.py --check-hmac
  python3 studies/compiled_clock.py --check-loop
  python3 studies/compiled_clock.py --compile-check
  python3 studies/compiled_clock.py --dry-run --seconds 1
  python3 studies/compiled_clock.py [--seconds 4] [--versions gemv:v22,gemm:v52]    # H200, ~60-110 s
  (the GPU run builds both versions first in parallel through harness.build: ~45 s on a fresh machine)

Finding (CPU, 2 cores, nvcc 13.0, torch 2.13 CPU): SHA-256 and HMAC equal hashlib / hmac on all 420
cases (four planted bugs in the C, e.g. ipad 0x37 or a rotation of 24 for 25, each give 69-138
mismatches or a crash); the loop against the fake runtime: per-call times 2073-2079 µs for 2000 µs
sleeps, every record verified, the hostile cases refused; ASan/UBSan clean; nvcc's static_asserts
pass. The H200 ratio (issue 48 item 5 asks within 2%) is not measured yet.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import hmac
import importlib.util
import math
import os
import random
import select
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SOURCE = Path(__file__).with_suffix(".cpp")
MODULE = "_nvfp4_clock"
KEY_BYTES = 32

# A stand-in CUDA runtime for --check-loop: an event holds the host clock when it is recorded.
FAKE_RUNTIME = r"""
#include <cstdlib>
#include <time.h>
struct Event { double t; int recorded; };
static double now_ms() { timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6; }
extern "C" {
int cudaEventCreateWithFlags(void** e, unsigned int) { *e = std::calloc(1, sizeof(Event)); return *e ? 0 : 2; }
int cudaEventRecord(void* e, void*) { Event* p = static_cast<Event*>(e); p->t = now_ms(); p->recorded = 1; return 0; }
int cudaEventElapsedTime(float* ms, void* a, void* b) {
    Event* x = static_cast<Event*>(a); Event* y = static_cast<Event*>(b);
    if (!x->recorded || !y->recorded) return 600;
    *ms = static_cast<float>(y->t - x->t);
    return 0;
}
int cudaDeviceSynchronize(void) { return 0; }
const char* cudaGetErrorName(int e) { return e == 600 ? "cudaErrorNotReady" : "cudaErrorFake"; }
}
"""


# -- building ------------------------------------------------------------------------------------
def _build_dir() -> Path:
    from harness import paths
    return paths.build_dir() / "studies" / "compiled_clock"


def _compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        raise SystemExit("no C++ compiler (g++) on PATH")
    return cxx


def _compile(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"building {what} failed:\n{' '.join(cmd)}\n{proc.stdout}{proc.stderr}")


def build_clock(hmac_only: bool = False):
    """The extension, built with g++ into the build cache (keyed by source, flags and Python), imported."""
    defines = ["-DCLOCK_HMAC_ONLY"] if hmac_only else []
    flags = ["-O2", "-std=c++17", "-shared", "-fPIC", "-Wall", "-Wextra", *defines]
    include = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    digest = hashlib.sha256(SOURCE.read_bytes() + " ".join(flags + [include, sys.version]).encode()).hexdigest()[:16]
    folder = _build_dir() / digest
    target = folder / f"{MODULE}{suffix}"
    if not target.exists():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"{MODULE}.{os.getpid()}.tmp{suffix}"
        t0 = time.perf_counter()
        _compile([_compiler(), *flags, f"-I{include}", str(SOURCE), "-o", str(tmp), "-ldl"], "the clock")
        tmp.replace(target)
        print(f"built {target.relative_to(REPO) if target.is_relative_to(REPO) else target} "
              f"({'HMAC only' if hmac_only else 'clock'}) in {time.perf_counter() - t0:.1f} s", flush=True)
    spec = importlib.util.spec_from_file_location(MODULE, target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_fake_runtime() -> Path:
    folder = _build_dir() / "fake_runtime"
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "fake_cudart.cpp"
    source.write_text(FAKE_RUNTIME)
    target = folder / f"libfake_cudart.{os.getpid()}.so"
    _compile([_compiler(), "-O2", "-shared", "-fPIC", str(source), "-o", str(target)], "the fake runtime")
    return target


# -- the HMAC check ------------------------------------------------------------------------------
def check_hmac(clock, cases: int = 400, seed: int = 48) -> int:
    """sha256 and hmac_sha256 against hashlib and hmac; returns the number of mismatches."""
    rng = random.Random(seed)
    # lengths around SHA-256's 64-byte blocks and its 55/56-byte padding edge, then random ones
    edges = [0, 1, 31, 32, 33, 55, 56, 57, 63, 64, 65, 111, 119, 120, 127, 128, 129, 1000]
    key_lengths = [0, 1, 16, 32, 63, 64, 65, 100, 128, 200]
    bad, checked = 0, 0
    for n in edges + [rng.randrange(0, 4096) for _ in range(cases)]:
        msg = rng.randbytes(n)
        key = rng.randbytes(rng.choice(key_lengths) if rng.random() < 0.5 else rng.randrange(0, 300))
        checked += 1
        if clock.sha256(msg) != hashlib.sha256(msg).digest():
            bad += 1
            print(f"  sha256 differs on {n} bytes", flush=True)
        if clock.hmac_sha256(key, msg) != hmac.new(key, msg, hashlib.sha256).digest():
            bad += 1
            print(f"  hmac_sha256 differs on a {len(key)}-byte key and {n} bytes", flush=True)
    # a large message (several MiB) and the channel's own line form
    big = rng.randbytes(3 * 1024 * 1024 + 17)
    bad += clock.sha256(big) != hashlib.sha256(big).digest()
    key = rng.randbytes(KEY_BYTES)
    line = b'7 {"event":"clock","times_us":[1.5]}'
    bad += clock.hmac_sha256(key, line).hex() != hmac.new(key, line, hashlib.sha256).hexdigest()
    print(f"HMAC check: {checked + 2} cases (messages 0-4095 bytes and 3 MiB, keys 0-299 bytes), "
          f"{bad} mismatches against hashlib / hmac", flush=True)
    return bad


# -- the parent's side ---------------------------------------------------------------------------
def give_key(clock, out_fd: int, runtime: str | None = None) -> tuple[bytes, str]:
    """The parent's part, here in one process: a fresh key written into a pipe whose write end is
    closed before the clock reads it; the clock closes the read end. Returns the key (the parent's
    copy) and the runtime the clock resolved."""
    key = os.urandom(KEY_BYTES)
    r, w = os.pipe()
    os.write(w, key)
    os.close(w)
    where = clock.bind(r, out_fd, runtime)
    try:
        os.fstat(r)
    except OSError:
        pass
    else:
        raise SystemExit("the clock left the key's descriptor open")
    return key, where


class Records:
    """The clock's records, read from its descriptor and verified by channel.Receiver (Python's hmac)."""

    def __init__(self, fd: int, key: bytes):
        from harness import channel
        self.fd = fd
        self.receiver = channel.Receiver(key)
        self.pending: list[dict] = []
        self.verified = 0

    def next(self, timeout_s: float = 30.0) -> dict:
        while not self.pending:
            ready, _, _ = select.select([self.fd], [], [], timeout_s)
            if not ready:
                raise SystemExit("no record from the clock")
            self.pending += self.receiver.feed(os.read(self.fd, 1 << 16))
        self.verified += 1
        return self.pending.pop(0)

    def waiting(self) -> bool:
        return bool(self.pending) or bool(select.select([self.fd], [], [], 0)[0])


def parent_check(record: dict, tag: int, calls: list[int], wall_parent_us: float) -> str | None:
    """What the parent would refuse in a record (None: accepted)."""
    if record.get("event") != "clock" or record.get("tag") != tag:
        return f"a record for another block: {record.get('event')} tag {record.get('tag')}, expected {tag}"
    if record.get("error"):
        return f"the block failed: {record['error']}"
    if record.get("refused"):
        return f"{record['refused']} call(s) of the clock refused (a nested loop or a second bind)"
    if record.get("calls") != [float(c) for c in calls]:
        return f"calls {record.get('calls')} for {calls}"
    if any(t is None for t in record["times_us"]):
        return "an event that could not be read"
    if sum(record["span_us"]) > wall_parent_us:
        return f"its span ({sum(record['span_us']):.0f} µs) exceeds the parent's wall clock ({wall_parent_us:.0f} µs)"
    return None


# -- the CPU check of the whole loop -------------------------------------------------------------
def check_loop() -> int:
    from harness import channel
    clock = build_clock()
    runtime = build_fake_runtime()
    out_r, out_w = os.pipe()
    key, where = give_key(clock, out_w, str(runtime))
    records = Records(out_r, key)
    failures = []

    def expect(ok: bool, what: str) -> None:
        print(f"  {'ok  ' if ok else 'FAIL'} {what}", flush=True)
        if not ok:
            failures.append(what)

    print(f"clock bound to a fake runtime ({Path(where).name}); key descriptor closed", flush=True)
    sleep_s = 0.002
    flushes = []

    def fn(x):
        time.sleep(sleep_s)
        return x * 2

    def flush():
        flushes.append(1)

    captured = []
    groups = [[1, 2, 3], [4, 5]]
    t0 = time.perf_counter()
    results = clock.time_batches(fn, groups, flush, captured.append, 0, 11)
    wall = (time.perf_counter() - t0) * 1e6
    rec = records.next()
    expect(results == [2, 4, 6, 8, 10] and captured == results and len(flushes) == 2,
           "the calls, captures and flushes ran in order (5 calls, 5 captures, 2 flushes)")
    why = parent_check(rec, 11, [3, 2], wall)
    expect(why is None, f"the parent accepts the record (tag, calls, span within its wall clock){': ' + why if why else ''}")
    ok = all(sleep_s * 1e6 <= t < sleep_s * 1e6 * 1.5 + 1000 for t in rec["times_us"])
    expect(ok, f"per-call times {[round(t) for t in rec['times_us']]} µs for calls of {sleep_s * 1e6:.0f} µs")
    ok = all(s >= c * t for s, c, t in zip(rec["span_us"], rec["calls"], rec["times_us"])) and \
        all(w >= s for w, s in zip(rec["wall_us"], rec["span_us"]))
    expect(ok, f"span {[round(s) for s in rec['span_us']]} ≥ calls × time, wall {[round(w) for w in rec['wall_us']]} ≥ span")

    # a call that reaches the clock and runs it itself, from inside a timed call
    def nested(x):
        try:
            clock.time_batches(lambda y: y, [[0]], flush, lambda r: None, 0, 99)
        except RuntimeError:
            pass
        return fn(x)
    clock.time_batches(nested, [[1]], flush, lambda r: None, 0, 12)
    rec = records.next()
    expect(rec["refused_in_block"] == 1 and parent_check(rec, 12, [1], 1e12) is not None,
           f"a nested run refused and counted, the parent refuses the block ({parent_check(rec, 12, [1], 1e12)})")
    expect(not records.waiting(), "the nested run wrote no record of its own")

    # a second bind (a new key, another descriptor)
    r2, w2 = os.pipe()
    os.write(w2, os.urandom(KEY_BYTES))
    try:
        clock.bind(r2, w2)
        expect(False, "a second bind refused")
    except RuntimeError:
        expect(True, "a second bind refused")
    os.close(r2)
    os.close(w2)

    # a call that empties the list of batches it can reach: the loop runs what it was given
    groups = [[1], [2], [3]]

    def clears(x):
        groups.clear()
        return fn(x)
    results = clock.time_batches(clears, groups, flush, lambda r: None, 0, 13)
    rec = records.next()
    expect(results == [2, 4, 6] and rec["calls"] == [1.0, 1.0, 1.0], "emptying the batches mid-block changes nothing")
    expect(rec["refused"] == 2, f"every later record carries the refusals ({rec['refused']})")

    # a call that raises: the exception propagates, the record says the block failed
    def raises(x):
        raise ValueError("kernel failed")
    try:
        clock.time_batches(raises, [[1]], flush, lambda r: None, 0, 14)
        expect(False, "a raising call propagates")
    except ValueError:
        rec = records.next()
        expect(rec.get("error") == "the call raised" and "times_us" not in rec, f"a raising call: error {rec.get('error')!r}, no times")

    # what a submission can write to the clock's descriptor: a forged line, a replayed one
    rx = channel.Receiver(key)
    forged = b'0 ' + b'0' * 64 + b' {"event":"clock","tag":15,"times_us":[0.1]}\n'
    try:
        rx.feed(forged)
        expect(False, "a forged line refused")
    except channel.Tampered:
        expect(True, "a forged line refused (bad signature)")
    clock.time_batches(fn, [[1]], flush, lambda r: None, 0, 15)
    ready, _, _ = select.select([out_r], [], [], 5)
    line = os.read(out_r, 1 << 16)
    rx = channel.Receiver(key)
    rx._seq = int(line.split(b" ", 1)[0])
    rx.feed(line)
    try:
        rx.feed(line)
        expect(False, "a replayed line refused")
    except channel.Tampered:
        expect(True, "a replayed line refused (out of order)")
    state = clock.state()
    expect("key" not in state and state["seq"] == 5, f"5 records, one a block; state() shows no key: {sorted(state)}")
    print(f"loop check: {records.verified + 1} records verified by channel.Receiver, {len(failures)} failures", flush=True)
    os.unlink(runtime)
    return len(failures)


# -- the compile check ---------------------------------------------------------------------------
def compile_check() -> int:
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    if not nvcc:
        raise SystemExit("no nvcc")
    include = sysconfig.get_paths()["include"]
    out = _build_dir() / "nvcc_check.o"
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [nvcc, "-x", "cu", "-std=c++17", "-c", "-Xcompiler", "-fPIC,-Wall,-Wextra", "-DCLOCK_CUDA_HEADERS",
           f"-I{include}", str(SOURCE), "-o", str(out)]
    t0 = time.perf_counter()
    _compile(cmd, "the clock with nvcc and the CUDA headers")
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    print(f"compile check: nvcc ({version}) compiled the clock with <cuda_runtime_api.h> in "
          f"{time.perf_counter() - t0:.1f} s; the signatures it calls through match the runtime's", flush=True)
    return 0


# -- the GPU study -------------------------------------------------------------------------------
def _t95(n: int) -> float:
    try:
        from scipy import stats
        return float(stats.t.ppf(0.975, n - 1))
    except ImportError:
        return 1.96


def _summary(blocks: list[list[float]]) -> dict:
    samples = [t for block in blocks for t in block]
    out = {"mean": statistics.fmean(samples), "median": statistics.median(samples), "n": len(samples)}
    if len(blocks[0]) > 1:
        out["first"] = statistics.median(b[0] for b in blocks)
        out["rest"] = statistics.median(t for b in blocks for t in b[1:])
    return out


def python_loop(fn, group, results):
    """The third arm's batch: the calls as GPU MODE's eval makes them (Python bytecode), between the
    compiled clock's events."""
    for data in group:
        results.append(fn(data))


def gpu_study(args) -> int:
    """The GPU study; ``args.dry_run``: its code path on a CPU (v0s, the first tests shape, small pools,
    the fake runtime, no flush), to check the study itself before a GPU session: its figures mean nothing."""
    import torch
    dry = args.dry_run
    if not dry and not torch.cuda.is_available():
        raise SystemExit("no GPU: run --check-hmac, --check-loop, --compile-check or --dry-run here")
    from harness import build as hbuild, config, judge, loader, timing
    from harness.submissions import resolve
    from reference import problem_module

    if not dry:
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
    timing.bind(torch)
    clock = build_clock()
    bad = check_hmac(clock, 200)
    out_r, out_w = os.pipe()
    fake = build_fake_runtime() if dry else None
    key, where = give_key(clock, out_w, str(fake) if fake else None)
    records = Records(out_r, key)
    print(f"clock bound to {where} ({'a fake runtime: a dry run' if dry else 'CUDA runtime'}); "
          "key descriptor closed", flush=True)
    gpu = "CPU (dry run)" if dry else torch.cuda.get_device_name()
    pairs = [p.split(":") for p in (args.versions if not dry else "gemv:v0,gemm:v0").split(",")]
    subs = [resolve(problem, version) for problem, version in pairs]
    if not dry:
        t0 = time.perf_counter()
        built = hbuild.build(subs, "full", jobs=len(subs), timeout_s=300)
        for sub, res in zip(subs, built):
            if res.status == "FAIL":
                raise SystemExit(f"building {sub.problem} {sub.label} failed: {res.message}")
        print(f"built {', '.join(f'{s.problem} {s.label}' for s in subs)} in {time.perf_counter() - t0:.0f} s "
              "(in parallel, or found built)", flush=True)
    stream = torch.cuda.current_stream().cuda_stream if not dry else 0
    flush = functools.partial(timing.flush, "dirty") if not dry else (lambda: None)
    sync = torch.cuda.synchronize if not dry else (lambda: None)
    rows, refused, tag = [], 0, 0
    print(f"{'shape':<34} {'python µs':>10} {'compiled µs':>12} {'ratio C/P':>10} {'95% interval':>16} "
          f"{'rounds':>6}  first/rest medians P | C (µs)", flush=True)
    for sub in subs:
        kernel = loader.import_submission(str(sub.path), sub.label, source_hash=sub.source_hash)
        mod = problem_module(sub.problem)
        batch = timing.gpumode_batch(sub.problem) if not dry else min(2, timing.gpumode_batch(sub.problem))
        pool_n = (batch if batch > 1 else 8) if not dry else 4
        shapes = config.load()[sub.problem].benchmarks if not dry else config.load()[sub.problem].tests[:1]
        for shape in shapes:
            params = dict(shape.params)
            seed = params.pop("seed")
            pool = [mod.generate_input(**params, seed=seed + i, dist="competition") for i in range(pool_n)]
            scratch = mod.generate_input(**params, seed=seed + pool_n, dist="competition")
            for data in pool:
                kernel(data)
                kernel(data)
            room = judge.output_bytes(kernel(scratch))
            sync()
            sink = judge.ResultSink(torch, os.memfd_create("compiled-clock-study"))
            sink.reserve(2 * pool_n * room)
            groups = [pool[i:i + batch] for i in range(0, pool_n, batch)]

            def prelude():
                kernel(scratch)
                sync()

            def python_block():
                sink.reset()
                blk = timing.time_block(kernel, pool, "gpumode", flush_kind="dirty", batch=batch, prelude=prelude,
                                        capture=sink.put)
                return blk.times_us, blk.wall_us, blk.span_us

            def compiled_block(tag, loop=None):
                sink.reset()
                timing.reset_persisting_l2()
                prelude()
                t0 = time.perf_counter()
                clock.time_batches(kernel, groups, flush, sink.put, stream, tag, loop)
                wall_parent = (time.perf_counter() - t0) * 1e6
                rec = records.next()
                problem = parent_check(rec, tag, [len(g) for g in groups], wall_parent)
                if problem:
                    raise SystemExit(f"{sub.problem} {shape.label}: the parent refuses a record: {problem}")
                return rec["times_us"], sum(rec["wall_us"]), sum(rec["span_us"])

            arms = {"P": [], "C": [], "H": []}
            escapes = {"P": 0, "C": 0, "H": 0}
            ratios, hybrid = [], []
            start = time.perf_counter()
            rnd = 0
            while rnd < args.max_rounds and (rnd < args.min_rounds or time.perf_counter() - start < args.seconds):
                means = {}
                for arm in ("PCH", "CHP", "HPC", "PHC", "HCP", "CPH")[rnd % 6]:
                    if arm == "P":
                        times, wall, span = python_block()
                    else:
                        tag += 1
                        times, wall, span = compiled_block(tag, python_loop if arm == "H" else None)
                    arms[arm].append(times)
                    escapes[arm] += timing.escape_of("gpumode", pool_n, wall, span) is not None
                    means[arm] = statistics.fmean(times)
                ratios.append(means["C"] / means["P"])
                hybrid.append(means["H"] / means["P"])
                rnd += 1
            p, c, h = _summary(arms["P"]), _summary(arms["C"]), _summary(arms["H"])
            logs = [math.log(r) for r in ratios]
            centre = statistics.fmean(logs)
            half = _t95(len(logs)) * statistics.stdev(logs) / math.sqrt(len(logs))
            lo, hi = math.exp(centre - half), math.exp(centre + half)
            label = f"{sub.problem} {sub.label} {shape.label}"
            fr = (f"{p['first']:.1f}/{p['rest']:.1f} | {c['first']:.1f}/{c['rest']:.1f}" if "first" in p else "-")
            esc = f"  escapes P {escapes['P']} C {escapes['C']}" if escapes["P"] or escapes["C"] else ""
            print(f"{label:<34} {p['mean']:>10.2f} {c['mean']:>12.2f} {c['mean'] / p['mean']:>10.4f} "
                  f"{f'[{lo:.4f}, {hi:.4f}]':>16} {rnd:>6}  {fr}{esc}", flush=True)
            rows.append((label, c["mean"] / p["mean"], lo, hi))
            hlogs = [math.log(r) for r in hybrid]
            hc = statistics.fmean(hlogs)
            hh = _t95(len(hlogs)) * statistics.stdev(hlogs) / math.sqrt(len(hlogs))
            hfr = f"  first/rest H {h['first']:.1f}/{h['rest']:.1f}" if "first" in h else ""
            print(f"{'  H (C events, Python loop)':<34} {'':>10} {h['mean']:>12.2f} {h['mean'] / p['mean']:>10.4f} "
                  f"{f'[{math.exp(hc - hh):.4f}, {math.exp(hc + hh):.4f}]':>16} {rnd:>6}{hfr}", flush=True)
            sink._unmap()  # NOTE: unpinned and unmapped before the next shape's sink
            os.close(sink.fd)
            del pool, scratch, groups, sink
            if not dry:
                torch.cuda.empty_cache()
    state = clock.state()
    refused = state["refused"]
    within = sum(1 for _, r, lo, hi in rows if 0.98 <= lo and hi <= 1.02)
    print(f"{gpu}: {records.verified} records verified by channel.Receiver (Python's hmac), {refused} refused calls; "
          f"{within}/{len(rows)} shapes with the ratio's whole interval within 2% of 1; HMAC mismatches {bad}", flush=True)
    if fake:
        os.unlink(fake)
    return 1 if bad or refused else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check-hmac", action="store_true", help="CPU: the HMAC part alone against hashlib / hmac")
    mode.add_argument("--check-loop", action="store_true", help="CPU: the whole clock against a fake CUDA runtime")
    mode.add_argument("--compile-check", action="store_true", help="nvcc with the CUDA headers; nothing runs")
    mode.add_argument("--dry-run", action="store_true",
                      help="CPU: the GPU study's code path with v0s, a tests shape and the fake runtime (figures mean nothing)")
    ap.add_argument("--versions", default="gemv:v22,gemm:v52", help="PROBLEM:VERSION,... (GPU study)")
    ap.add_argument("--seconds", type=float, default=5.0, help="timing seconds per shape (GPU study)")
    ap.add_argument("--min-rounds", type=int, default=6)
    ap.add_argument("--max-rounds", type=int, default=400)
    args = ap.parse_args()
    if args.check_hmac:
        return 1 if check_hmac(build_clock(hmac_only=True)) else 0
    if args.check_loop:
        return 1 if check_loop() else 0
    if args.compile_check:
        return compile_check()
    return gpu_study(args)


if __name__ == "__main__":
    sys.exit(main())
