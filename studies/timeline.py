"""Where inside a kernel does a CTA's time go? Per-CTA %globaltimer stamps at named points.

kernel_compare says how long a version's kernels take; this says when each CTA reached each phase
of one kernel: its start (launch skew), the end of its prologue, its first full stage (the first
load's round trip), the end of its K loop, the end of its epilogue or split-K reduction. gemm v15
on 128x4096x7168 spends ~12 µs outside its K loop by the arithmetic of its per-K-block rate; a
timeline puts that time somewhere.

A copy of the version is patched (the submission is untouched): a device buffer of one 64-bit
stamp per (CTA, mark), a `TIMELINE_MARK(i)` inserted after each mark's anchor (a source line that
must occur exactly once), read by one chosen thread per mark, and two host functions exported next
to the version's own (`timeline`, `timeline_clear`). Stamps are %globaltimer (ns; one clock for
the whole GPU, so CTAs on different SMs compare; its update interval depends on the GPU and driver,
so the tool prints the smallest nonzero step it saw between two marks of a CTA).

Per benchmark shape: one checked call, then `--calls` calls each from a cleared buffer with L2
flushed; printed per mark, over CTAs and calls: the median and the max of (stamp - the call's
earliest start), and per phase (mark to next mark within a CTA) the median and max.

Usage on a GPU machine, repo root:
    python3 studies/timeline.py gemm v15 [--shapes 0,1,2] [--calls 20] [--peers "K loop:4"]
Marks are defined per problem family below (MARKS); a version whose anchors drifted is an error.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, os.getcwd())
sys.path.insert(0, str(Path(__file__).resolve().parent))  # ablation.py beside this file
from ablation import patched as apply_patches  # noqa: E402

MAX_CTAS = 4096

# (mark name, thread that stamps it, anchor lines: the first alternative found in the version, which
# must occur exactly once[, "before"]). The stamp goes after its anchor, or before it when the entry
# says so. Consumer marks are stamped by the first consumer thread (128): the producer warpgroup has
# left by then.
MARKS = {
    # gemm v10-v15: one tile (and split) per CTA; thread 0 is the producer's issuing thread.
    "gemm": [
        ("start", 0, "    const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));\n"),
        ("prologue", 0, "    __syncthreads();  // NOTE: the last CTA-wide barrier: the producer warpgroup leaves below, "
                        "thread 0 after its copies\n"),
        ("first stage", 128, ("    decode_slot(0, 0, frag[0]);\n", "    decode_stage(0, frag[0]);\n")),
        # NOTE: before the branch, not inside it: S = 1 launches never take it (v15's first timeline
        # had no K-loop stamp on 128x7168x2048 for that reason).
        # v30+ hold the same text in the host's workspace_layout too: the branch with its call.
        ("K loop", 128, ("    if constexpr (kSplit) {\n        reduce_through_l2<kN>",
                         "    if (problem.splits > 1) {\n        reduce_through_l2<kN>", "    if (problem.splits > 1) {\n"), "before"),
        # split-K launches only (S > 1): the partial in shared memory, the peers' partials there
        # (v10-v29: the cluster's barrier passed; v30+: their parts of this CTA's share gathered
        # through L2), this CTA's share of C summed and stored
        ("partial stored", 128, ("    cluster_sync();  // NOTE: every split's partial is in its CTA's shared memory before any is read\n",
                                 '    asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");\n',
                                 # v37+: the peers' shares stored from registers, the consumer barrier passed
                                 "    #pragma unroll\n    for (int j = 0; j < kPositions; ++j)\n        if (j >= j_begin && j < j_end)\n"),
         "before"),
        ("peers arrived", 128, ("    cluster_sync();  // NOTE: every split's partial is in its CTA's shared memory before any is read\n",
                                "    mbar_wait(gather, 0);\n",
                                "    // NOTE: passes thread 0's acquires on to every consumer thread before its loads of the peers' parts.\n"
                                "    consumer_sync();\n")),
        ("sum stored", 128, ("    cluster_sync();  // NOTE: no CTA leaves, taking its shared memory with it, while a peer may still read it\n",
                             "        return;\n    }\n\n    // acc[4j + {0,1,2,3}]"),
         "before"),
        # NOTE: v10-v24 switch over wgmma N (the default case's close ends the consumers); v25 on
        # launch one instantiation per tile height, with one call.
        ("end", 128, tuple(f"        default: consume<{n}>(problem, d, tile, split, m0, n0, num_k, ring, ring_generic, full, "
                           f"empty); break;\n    }}\n" for n in (128, 256))
         + ("    consume<kN>(problem, d, tile, split, m0, n0, num_k, ring, ring_generic, full, empty);\n",
            "    consume<kN>(problem, d, tile, split, m0, n0, num_k, ring, ring_generic, full, empty, gather);\n",
            "    consume<kN, kSplit>(problem, d, tile, split, m0, n0, num_k, ring, ring_generic, full, empty, gather);\n",
            "    consume<kN, kSplit>(problem, d, tile, split, m0, n0, num_k, ring, ring_generic, full, empty);\n")),
    ],
}

# gemm v35+ with a stream-K kernel (consume_stream): its segments and the exchange. The split and
# unsplit kernels of the same file are not stamped (their prologue text repeats the stream one's).
# A CTA whose range stays in one tile has no 'flushed' and no 'segment 2' stamp.
STREAM_K_MARKS = [
    ("start", 0, "    const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));\n"),
    ("prologue", 0, "        __syncthreads();  // NOTE: the last CTA-wide barrier: the producer warpgroup leaves below, "
                    "thread 0 after its copies\n"),
    ("segment 1", 128, "    mma_blocks<kN, false>(acc, 0, n1, row, tig, ring, ring_generic, full, empty);\n"),
    ("flushed", 128, "        flush_partial<kN>(problem, tile1, piece, cthread, acc);  // NOTE: the tile's last piece (K order)\n"),
    ("segment 2", 128, "        mma_blocks<kN, true>(acc, n1, n1 + n2, row, tig, ring, ring_generic, full, empty);\n"),
    ("partial stored", 128, '    asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");\n', "before"),
    ("peers arrived", 128, "    mbar_wait(gather, 0);\n"),
    ("sum stored", 128, "    consumer_sync();  // NOTE: every thread's sums are in the C rows before any of them is stored\n"),
    ("end", 128, "        consume_stream<kN>(problem, tile1, n1, n2, ring, ring_generic, full, empty, gather);\n"),
]


def _mark(problem: str, name: str):
    """MARKS[problem]'s entry for mark `name`, for mark sets that share its anchors."""
    return next(mark for mark in MARKS[problem] if mark[0] == name)


# gemm v40+ (split launches with tail helpers): a split CTA stamps its own blocks' end ('K loop'),
# its tail's partial added, then the exchange's marks; a helper CTA stamps only 'start', 'prologue',
# its first stage (the last tail's: each tail restarts the loop) and 'tail stored' (its last tail's
# partial stored and handed to the flag). Unsplit and plain split launches stamp what they reach.
GEMM_TAILS_MARKS = [
    _mark("gemm", "start"),
    _mark("gemm", "prologue"),
    ("first stage", 128, "    decode_slot(0, phase, frag[0]);\n"),
    ("K loop", 128, "    const SplitPlace p = place_of(problem, q, splits);\n    const GroupDesc& d = problem.groups[p.g];\n", "before"),
    ("tail added", 128, "    if constexpr (kSplitLaunch) {\n        reduce_through_l2<kN>", "before"),
    _mark("gemm", "partial stored"),
    _mark("gemm", "peers arrived"),
    _mark("gemm", "sum stored"),
    ("tail stored", 128, ("        mbar_arrive(tail_done + 8 * i);\n",
                          "        if (cthread == 0) flag_release(problem.flags + split_ctas + tail_q);\n")),
    ("end", 128, ("    consume<kN, kMode>(problem, q, num_k, ring, ring_generic, full, empty, gather, tail_done);\n",
                  "    consume<kN, kMode>(problem, q, num_k, ring, ring_generic, full, empty, gather);\n")),
]


# group_gemm v38+ (one tile a CTA, C by TMA store): tiles are numbered by group in order of
# decreasing M, so a range of CTAs (--ctas) is a range of groups and of wgmma N (host_tiling.py
# lists a launch's tiles).
MARKS["group_gemm"] = [
    ("start", 0, "    const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));\n"),
    ("prologue", 0, "    __syncthreads();  // NOTE: the last CTA-wide barrier: warps 2-3 leave below\n"),
    ("first stage", 128, "    decode_slot(0, 0, frag[0]);\n"),
    ("K loop", 128, "    named_barrier_sync(1, kConsumerThreads);\n", "before"),
    # NOTE: the second warpgroup's own end of the loop (thread 256): the epilogue waits for both
    ("K loop wg1", 256, "    named_barrier_sync(1, kConsumerThreads);\n", "before"),
    ("C staged", 128, "    named_barrier_sync(2 + wg, 128);  // NOTE: this warpgroup's 128 threads have written and fenced\n"),
    ("end", 128, "        tensor_store_wait_read();\n"),
]

# group_gemm v40 (K-interleaved warpgroups on tiles of at most 128 columns): the marks of that loop
# only; tiles of more columns run v39's loop and stamp start, prologue, C staged and end.
GROUP_INTERLEAVED_MARKS = [
    _mark("group_gemm", "start"),
    _mark("group_gemm", "prologue"),
    ("first stage", 128, "    if (blocks > 0) decode_slot(0, 0, frag[0]);\n"),
    ("K loop", 128, "    if (blocks > 0) mbar_arrive(empty0 + 16 * ((blocks - 1) % kLap));\n"),
    ("K loop wg1", 256, "    if (blocks > 0) mbar_arrive(empty0 + 16 * ((blocks - 1) % kLap));\n"),
    _mark("group_gemm", "C staged"),
    _mark("group_gemm", "end"),
]

_DUAL_LOOP_ANCHORS = ("    if constexpr (kSplit) {\n        reduce_in_cluster<kN>",
                      "    if constexpr (kMode == kSplit) {\n        reduce_in_cluster<kN>")
# The unsplit epilogue's steps: the up warpgroup's sums in shared memory, silu x up staged as C.
_DUAL_EPILOGUE_MARKS = [
    ("exchanged", 128, ("    consumer_sync();  // NOTE: the up sums are in shared memory before the gate's warpgroup reads them\n",
                        "    consumer_sync();  // NOTE: both halves' sums are in shared memory before either warpgroup reads them\n")),
    ("silu staged", 128, "    consumer_sync();  // NOTE: the whole C tile is staged before any row of it is stored (rows past M are not)\n"),
]
# The split-K sum's steps (S > 1 launches): every split's partials in shared memory (the cluster
# barrier passed), this CTA's share summed and staged as C, its rows stored.
_DUAL_SPLIT_MARKS = [
    ("partials shared", 128, "    cluster_sync();  // NOTE: every split's partials are in its CTA's shared memory before any is read\n"),
    ("sum staged", 128, "    consumer_sync();  // NOTE: every thread's results are in the C rows before any of them is stored\n"),
    ("share stored", 128, "    cluster_sync();  // NOTE: no CTA leaves, taking its shared memory with it, while a peer may still read it\n",
     "before"),
]
# NOTE: 'K loop' is the gate warpgroup's (thread 128), 'K loop up' the up warpgroup's (thread 256).
_DUAL_LOOP_MARKS = [
    ("start", 0, "    const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));\n"),
    ("K loop", 128, _DUAL_LOOP_ANCHORS, "before"),
    ("K loop up", 256, _DUAL_LOOP_ANCHORS, "before"),
]
# dual_gemm v20: one tile (and split) per CTA. A launch stamps either the split marks or the
# epilogue's.
DUAL_MARKS = [
    *_DUAL_LOOP_MARKS,
    *_DUAL_SPLIT_MARKS,
    *_DUAL_EPILOGUE_MARKS,
    ("end", 128, "    consume<kN, kSplit>(sk, d, tile, split, m0, n0, num_k, ring, ring_generic, full, empty);\n"),
]
# dual_gemm v21+: with tails, a tile CTA also stamps its wait for the helper's partial; a helper CTA
# stamps only 'start' and 'helper done' (its last tail announced).
DUAL_TAILS_MARKS = [
    *_DUAL_LOOP_MARKS,
    *_DUAL_SPLIT_MARKS,
    ("tail added", 128, "    store_tile<kN>(d, p.m0, p.n0, ring, acc);\n", "before"),
    *_DUAL_EPILOGUE_MARKS,
    ("end", 128, "    store_tile<kN>(d, p.m0, p.n0, ring, acc);\n"),
    ("helper done", 128, "            consume_tails<kGroups, kN>(problem, helper, ring, ring_generic, full, empty);\n"),
]


def marks_of(text: str, problem: str):
    """The mark set for a version's source: gemm's stream-K kernel and dual_gemm have their own."""
    if problem == "gemm" and "consume_stream<kN>(problem, tile1" in text:
        return STREAM_K_MARKS
    if problem == "gemm" and "int tail_blocks;" in text:
        return GEMM_TAILS_MARKS
    if problem == "group_gemm" and "consume_interleaved<R, 32>(" in text:
        return GROUP_INTERLEAVED_MARKS
    if problem == "dual_gemm":
        return DUAL_TAILS_MARKS if "consume_tails<kGroups, kN>(problem" in text else DUAL_MARKS
    marks = MARKS.get(problem)
    if marks is None:
        raise SystemExit(f"no marks defined for {problem} (MARKS in {Path(__file__).name})")
    return marks

# NOTE: @CTAS@ and @MARKS@ are filled in by patched() (str.format would trip on the C++ braces).
PRELUDE = r"""
#include <cuda_runtime.h>
constexpr int kTimelineCtas = @CTAS@, kTimelineMarks = @MARKS@;
__device__ unsigned long long timeline_stamps[kTimelineCtas * kTimelineMarks];
#define TIMELINE_MARK(i, thread) do { if (threadIdx.x == (thread) && blockIdx.x < kTimelineCtas) { \
    unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); \
    timeline_stamps[blockIdx.x * kTimelineMarks + (i)] = t; } } while (0)
"""

HOST_FUNCTIONS = r"""
int timeline_copy(void* host, size_t bytes) {
    return static_cast<int>(cudaMemcpyFromSymbol(host, timeline_stamps, bytes));
}
int timeline_zero() {
    void* p = nullptr;
    cudaError_t err = cudaGetSymbolAddress(&p, timeline_stamps);
    if (err == cudaSuccess) err = cudaMemset(p, 0, sizeof(timeline_stamps));
    return static_cast<int>(err);
}
"""

CPP_FUNCTIONS = r"""
int timeline_copy(void* host, size_t bytes);
int timeline_zero();
torch::Tensor timeline() {
    torch::Tensor out = torch::empty({@CTAS@, @MARKS@}, torch::dtype(torch::kInt64));
    const int err = timeline_copy(out.data_ptr(), static_cast<size_t>(out.numel()) * 8);
    TORCH_CHECK(err == 0, "timeline: cudaMemcpyFromSymbol failed (", err, ")");
    return out;
}
void timeline_clear() {
    const int err = timeline_zero();
    TORCH_CHECK(err == 0, "timeline: clearing the stamps failed (", err, ")");
}
"""


def patched(text: str, problem: str) -> str:
    """The version's source with the stamps, the marks and the two host functions; its extension
    renamed `<name>_ablate_timeline` (ablation.patched does the anchored edits and the rename)."""
    marks = marks_of(text, problem)
    patches = []
    for i, (name, thread, anchors, *placement) in enumerate(marks):
        anchors = (anchors,) if isinstance(anchors, str) else anchors
        found = next((a for a in anchors if a in text), None)
        if found is None:
            raise SystemExit(f"mark {name!r}: no anchor found: {[a.strip()[:60] for a in anchors]}")
        stamp = f"    TIMELINE_MARK({i}, {thread});\n"
        # NOTE: apply_patches checks that the anchor is unique
        patches.append((found, stamp + found if placement == ["before"] else found + stamp))
    cuda_marker, cpp_marker = 'CUDA_SRC = r"""\n', 'CPP_SRC = r"""\n'
    if text.count(cuda_marker) != 1 or text.count(cpp_marker) != 1:
        raise SystemExit("CUDA_SRC or CPP_SRC not found once")
    fill = lambda t: t.replace("@CTAS@", str(MAX_CTAS)).replace("@MARKS@", str(len(marks)))  # noqa: E731
    # NOTE: the device buffer's host functions go at the end of CUDA_SRC (the stamps' translation unit)
    cuda_end = text.index('"""', text.index(cuda_marker) + len(cuda_marker))
    text = text[:cuda_end] + HOST_FUNCTIONS + text[cuda_end:]
    cpp_end = text.index('"""', text.index(cpp_marker) + len(cpp_marker))
    text = text[:cpp_end] + fill(CPP_FUNCTIONS) + text[cpp_end:]
    functions = next(line for line in text.splitlines(keepends=True) if line.startswith("FUNCTIONS = ["))
    patches.append((functions, functions.replace("]", ', "timeline", "timeline_clear"]', 1)))
    return apply_patches(text, patches, fill(PRELUDE), "timeline")


def summarise(stamps: list[list[list[int]]], names: list[str], ctas: range | None = None) -> list[str]:
    """stamps[call][cta][mark] in ns (0: never stamped); lines of per-mark and per-phase figures, µs.
    A phase runs between two marks stamped one after the other in a CTA: marks a launch skips (the
    split-K ones when S = 1) merge their neighbours' phases into one. With `ctas`, only those CTAs
    (blockIdx) are counted; times stay relative to the whole call's first start."""
    at = {n: [] for n in names}
    phase: dict[str, list[float]] = {}
    steps = set()
    for call in stamps:
        started = [(i, row) for i, row in enumerate(call) if row[0]]
        if not started:
            continue
        t0 = min(row[0] for _, row in started)
        for _, row in (pair for pair in started if ctas is None or pair[0] in ctas):
            for i, n in enumerate(names):
                if row[i]:
                    at[n].append((row[i] - t0) / 1e3)
            stamped = [(n, row[i]) for i, n in enumerate(names) if row[i]]
            for (a, ta), (b, tb) in zip(stamped, stamped[1:]):
                phase.setdefault(f"{a} -> {b}", []).append((tb - ta) / 1e3)
                if tb > ta:
                    steps.add(tb - ta)
    heading = "mark (µs after the call's first CTA start)"
    out = [f"{heading:<44} {'median':>8} {'max':>8} {'CTAs':>6}"]
    for n, xs in at.items():
        if xs:
            out.append(f"{n:<44} {statistics.median(xs):8.2f} {max(xs):8.2f} {len(xs) // max(len(stamps), 1):>6}")
    out.append(f"{'phase (µs within a CTA)':<44} {'median':>8} {'max':>8}")
    for n, xs in phase.items():
        if xs:
            out.append(f"{n:<44} {statistics.median(xs):8.2f} {max(xs):8.2f}")
    if steps:
        out.append(f"smallest nonzero step between two marks of a CTA: {min(steps)} ns (the timer's resolution bounds it)")
    return out


def summarise_peers(stamps: list[list[list[int]]], names: list[str], mark: str, group: int) -> list[str]:
    """How far apart the CTAs of one group (consecutive blockIdx, e.g. a split tile's S CTAs) reach
    `mark`: per group and call the spread (latest - earliest), and per CTA how long after it the
    group's latest arrives (what a CTA that must wait for all of its peers waits at least), µs."""
    i = names.index(mark)
    spreads, waits = [], []
    for call in stamps:
        for first in range(0, len(call), group):
            ts = [row[i] for row in call[first:first + group] if row[i]]
            if len(ts) < 2:
                continue
            spreads.append((max(ts) - min(ts)) / 1e3)
            waits += [(max(ts) - t) / 1e3 for t in ts]
    if not spreads:
        return [f"peers: no group of {group} CTAs stamped {mark!r}"]
    return [f"{'peers (groups of ' + str(group) + ' CTAs) at ' + repr(mark):<44} {'median':>8} {'max':>8}",
            f"{'  spread in a group (latest - earliest)':<44} {statistics.median(spreads):8.2f} {max(spreads):8.2f}",
            f"{'  a CTA to its group latest':<44} {statistics.median(waits):8.2f} {max(waits):8.2f}"]


def parse_cta_ranges(text: str) -> list[range]:
    """'0-31,32-63,64' -> [range(0, 32), range(32, 64), range(64, 65)]; a malformed range is an error."""
    out = []
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        if not first.isdigit() or (last and not last.isdigit()) or int(last or first) < int(first):
            raise SystemExit(f"--ctas: {part!r} is not A-B with 0 <= A <= B")
        out.append(range(int(first), int(last or first) + 1))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem")
    ap.add_argument("version", help="vN, or a path to a .py variant")
    ap.add_argument("--shapes", default=None, help="benchmark shape indices, comma-separated (default: all)")
    ap.add_argument("--shape", dest="custom", action="append", default=[],
                    help="a custom shape as for `nvfp4 test --shape` (repeatable), after the benchmarks")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--peers", default=None, metavar="MARK:N",
                    help="also the spread of MARK over consecutive groups of N CTAs (a split tile's S CTAs)")
    ap.add_argument("--ctas", default=None, metavar="A-B,...",
                    help="also the summary over each range of CTAs (blockIdx A to B inclusive)")
    ap.add_argument("--emit", action="store_true", help="write the patched file and print its path (no GPU needed)")
    args = ap.parse_args()
    cta_ranges = parse_cta_ranges(args.ctas) if args.ctas else []

    from harness import config
    from harness.submissions import resolve
    src = Path(args.version) if args.version.endswith(".py") else resolve(args.problem, args.version).path
    folder = Path(os.environ.get("NVFP4_BUILD_DIR", ".build")) / "experiments" / "timeline"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{src.stem}_timeline.py"
    path.write_text(patched(src.read_text(), args.problem))
    if args.emit:
        print(path)
        return 0
    names = [m[0] for m in marks_of(src.read_text(), args.problem)]
    peer_mark, _, peer_group = (args.peers or "").rpartition(":")
    if args.peers and (peer_mark not in names or not peer_group.isdigit() or int(peer_group) < 2):
        raise SystemExit(f"--peers {args.peers!r}: MARK:N with MARK one of {names} and N >= 2 CTAs")

    import torch

    from ablation import load
    from harness import timing
    from reference import problem_module
    timing.bind(torch)
    kernel = load(path)
    module = sys.modules[kernel.__module__]._module
    mod = problem_module(args.problem)
    benchmarks = config.load()[args.problem].benchmarks
    if args.shapes is None:
        picked = [] if args.custom else list(range(len(benchmarks)))
    else:
        picked = [int(s) for s in args.shapes.split(",")]
    shapes = [benchmarks[i] for i in picked]
    shapes += [config.parse_shape_option(args.problem, text, i) for i, text in enumerate(args.custom)]
    failed = False
    for shape in shapes:
        params = dict(shape.params)
        seed = params.pop("seed", 1111)
        data = mod.generate_input(**params, seed=seed + 11, dist="competition")
        ok, msg = mod.check(data, kernel(data))
        if not ok:
            failed = True
            print(f"shape {shape.label}: WRONG output ({msg}): the timeline is of a broken kernel")
        stamps = []
        for _ in range(args.calls):
            module.timeline_clear()
            timing.flush()
            torch.cuda.synchronize()
            kernel(data)
            torch.cuda.synchronize()
            stamps.append(module.timeline().tolist())
        label = ",".join(f"{k}={v}" for k, v in params.items())
        print(f"\n{args.problem} {args.version} {label}, {torch.cuda.get_device_name()}, {args.calls} calls, L2 flushed")
        print("\n".join(summarise(stamps, names)))
        if args.peers:
            print("\n".join(summarise_peers(stamps, names, peer_mark, int(peer_group))))
        for ctas in cta_ranges:
            print(f"\nCTAs {ctas.start}-{ctas.stop - 1}")
            print("\n".join(summarise(stamps, names, ctas)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
