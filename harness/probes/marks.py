"""Timeline marks: where the time goes inside a kernel, from stamps the version itself carries.

A version opts in by pasting ``MARKS_CUDA`` (``nvfp4 probe marks --header`` prints it) into its
``CUDA_SRC`` and calling ``NVFP4_MARK(id)`` at the points it wants timed, from one thread of the
CTA (every thread that executes a mark stamps it; the last store wins), e.g.

    if (threadIdx.x == 128) NVFP4_MARK(2);  // the first consumer thread: its K loop is done

and may name its marks in a module constant, in id order: ``MARK_NAMES = ["start", "prologue",
"first stage", "K loop", "end"]``. Built as usual the macro is ``do {} while (0)``: no code, no
symbol, nothing for the timed build to pay. ``nvfp4 probe marks`` builds its own copy with
``-DNVFP4_MARKS`` (:mod:`harness.probes.variants`: a build of its own, the plain one untouched),
where each mark stores ``%globaltimer`` (ns; one clock for the whole GPU, so CTAs on different SMs
compare; it ticks in steps the report states) and ``clock64`` (this SM's cycles; compared within a
CTA only) into a device buffer, one slot per (CTA, mark). Three host functions with C linkage,
exported from the extension's shared object, are read through ctypes: nothing has to be added to
the version's ``FUNCTIONS``.

A persistent kernel's CTA runs several tiles, and a CTA's row keeps only its last tile's stamps; it stamps
each tile in a row of its own instead, ``NVFP4_MARK_AT(tile, id)`` (the tile's index in its launch, below
``NVFP4_MARKS_MAX_CTAS``): every "CTA" of the report, ``--ctas`` and ``--fill`` is then a tile (the fill: one
tile an SM at a time, as a persistent CTA runs them). Session 73 added it to take apart group_gemm v84, a
persistent launch 1.29x slower than the launch of one CTA a tile it replaced, whose CTA rows showed only that.

The report, per mark over CTAs and calls: when it was reached (µs after the call's first stamp of
any mark in any CTA, median and max), when the call's last CTA reached it (median over calls: a call
ends with its slowest CTA, so this, not the median CTA, is what a change to the call's time must
move; and a max far above it is a few slow calls, not a straggling CTA in every call) and by how
many CTAs; per phase (one mark to the next stamped
one within a CTA, in id order, so marks a launch skips merge their neighbours' phases): median and
max µs and median cycles.

The fill (``--fill START:END``, :func:`fill_account`): each CTA's work taken as its START to END stamps (a CTA
that leaves before END, as a split pair's writing half does, to its last mark, and counted as such), the
launch's last END against where the same work would end spread evenly over the GPU's SMs from the first START,
one CTA an SM at a time (the GEMM kernels here hold one resident CTA an SM; where several CTAs share an SM, their
summed spans overstate its time and the figure reads worse than the launch is): the idle SM time a launch's tiles
leave, the "fill" term of a physical account. Session 69's marks by CTA range found group_gemm's shapes A and B 13%
above their evenly spread time, and group_gemm v74's launch order took 4.4 µs of it off B.

Two versions (``nvfp4 probe marks P V W``, :func:`compare`): both built so, their calls taken in turn in one
process on the same inputs, and each mark and phase set side by side by name (B - A). A timeline set beside
another is taken beside it: two processes on one GPU share it for part of their runs (session 60's v44 and v50
marks did), and two machines' clocks and hosts differ.

A marks build is another build: its stamps are code, so its loops land elsewhere and ptxas schedules around the
stores. Beside two versions' timelines the probe therefore times their plain builds too (the builds ``compare``
times, kernel method, in turn on the same input) and says when the two builds' B / A disagree
(:func:`builds_verdict`): group_gemm's v76 against v80 (session 71) read the same 160-row loop 18% slower in v76's
marks build, and a version built on that reading (v82) was 5% slower on the plain builds. Session 74 again: the
marks builds read a persistent copy's steady blocks 11-15% slower than v89's, where the plain builds' warp samples
(`profile A B --ncu --sass`, the time by loop) put its tall loops at v89's.
"""

from __future__ import annotations

import ctypes
import statistics
from dataclasses import dataclass

from harness.errors import UserError

DEFINE = "NVFP4_MARKS"

MARKS_CUDA = r"""
// ---- nvfp4 timeline marks (harness/probes/marks.py; `nvfp4 probe marks`) ---------------------
// NVFP4_MARK(id) stamps %globaltimer and clock64 for this CTA at mark `id` (0 <= id < 16); call it
// from one thread. NVFP4_MARK_AT(row, id) stamps row `row` instead of the CTA's own: a persistent
// CTA's tiles, each its own row (the report's "CTAs" are then the rows). Without -DNVFP4_MARKS (every
// build but the probe's) both compile to nothing.
#ifdef NVFP4_MARKS
#include <cuda_runtime.h>
#ifndef NVFP4_MARKS_MAX_CTAS
#define NVFP4_MARKS_MAX_CTAS 4096
#endif
#define NVFP4_MARKS_MAX_IDS 16
__device__ unsigned long long nvfp4_marks_ns[NVFP4_MARKS_MAX_CTAS * NVFP4_MARKS_MAX_IDS];
__device__ long long nvfp4_marks_clock[NVFP4_MARKS_MAX_CTAS * NVFP4_MARKS_MAX_IDS];
__device__ unsigned int nvfp4_marks_dropped;  // stamps of CTAs or ids past the buffer
__device__ __forceinline__ void nvfp4_mark_at(unsigned int row, int id) {
    if (row >= NVFP4_MARKS_MAX_CTAS || id < 0 || id >= NVFP4_MARKS_MAX_IDS) {
        atomicAdd(&nvfp4_marks_dropped, 1u);
        return;
    }
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns) :: "memory");
    const long long cycles = clock64();
    nvfp4_marks_ns[row * NVFP4_MARKS_MAX_IDS + id] = ns;
    nvfp4_marks_clock[row * NVFP4_MARKS_MAX_IDS + id] = cycles;
}
#define NVFP4_MARK(id) nvfp4_mark_at(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z), id)
#define NVFP4_MARK_AT(row, id) nvfp4_mark_at(static_cast<unsigned int>(row), id)
extern "C" __attribute__((visibility("default"))) int nvfp4_marks_layout(int* ctas, int* ids) {
    *ctas = NVFP4_MARKS_MAX_CTAS;
    *ids = NVFP4_MARKS_MAX_IDS;
    return 0;
}
extern "C" __attribute__((visibility("default"))) int nvfp4_marks_read(void* ns, void* cycles, void* dropped) {
    cudaError_t err = cudaDeviceSynchronize();
    if (err == cudaSuccess) err = cudaMemcpyFromSymbol(ns, nvfp4_marks_ns, sizeof(nvfp4_marks_ns));
    if (err == cudaSuccess) err = cudaMemcpyFromSymbol(cycles, nvfp4_marks_clock, sizeof(nvfp4_marks_clock));
    if (err == cudaSuccess) err = cudaMemcpyFromSymbol(dropped, nvfp4_marks_dropped, sizeof(unsigned int));
    return static_cast<int>(err);
}
extern "C" __attribute__((visibility("default"))) int nvfp4_marks_clear() {
    void* p = nullptr;
    cudaError_t err = cudaGetSymbolAddress(&p, nvfp4_marks_ns);
    if (err == cudaSuccess) err = cudaMemset(p, 0, sizeof(nvfp4_marks_ns));
    if (err == cudaSuccess) err = cudaGetSymbolAddress(&p, nvfp4_marks_clock);
    if (err == cudaSuccess) err = cudaMemset(p, 0, sizeof(nvfp4_marks_clock));
    if (err == cudaSuccess) err = cudaGetSymbolAddress(&p, nvfp4_marks_dropped);
    if (err == cudaSuccess) err = cudaMemset(p, 0, sizeof(unsigned int));
    if (err == cudaSuccess) err = cudaDeviceSynchronize();
    return static_cast<int>(err);
}
#else
#define NVFP4_MARK(id) do { } while (0)
#define NVFP4_MARK_AT(row, id) do { } while (0)
#endif
// ---- end of nvfp4 timeline marks --------------------------------------------------------------
"""


@dataclass
class Stamps:
    """One call's stamps: ``ns[cta][mark]`` (%globaltimer, 0 = not stamped), ``cycles[cta][mark]``
    (clock64) and how many stamps fell past the buffer."""
    ns: list[list[int]]
    cycles: list[list[int]]
    dropped: int = 0

    def stamped(self) -> list[int]:
        """Every stamp the call made (any CTA, any mark), in buffer order: its first is the call's time zero."""
        return [t for row in self.ns for t in row if t]


class MarkBuffer:
    """The three C functions of a marks build, found in its extension's shared object."""

    def __init__(self, extension_file: str):
        try:
            lib = ctypes.CDLL(extension_file)
            self._layout, self._read, self._clear = lib.nvfp4_marks_layout, lib.nvfp4_marks_read, lib.nvfp4_marks_clear
        except (OSError, AttributeError) as exc:
            raise UserError(f"{extension_file} has no marks buffer ({exc}): the version does not carry the marks "
                            "header (`nvfp4 probe marks --header` prints it; paste it into CUDA_SRC and call "
                            "NVFP4_MARK(id))") from None
        ctas, ids = ctypes.c_int(), ctypes.c_int()
        self._layout(ctypes.byref(ctas), ctypes.byref(ids))
        self.ctas, self.ids = ctas.value, ids.value

    def clear(self) -> None:
        err = self._clear()
        if err:
            raise RuntimeError(f"nvfp4_marks_clear: CUDA error {err}")

    def read(self) -> Stamps:
        n = self.ctas * self.ids
        ns, cycles, dropped = (ctypes.c_ulonglong * n)(), (ctypes.c_longlong * n)(), ctypes.c_uint()
        err = self._read(ns, cycles, ctypes.byref(dropped))
        if err:
            raise RuntimeError(f"nvfp4_marks_read: CUDA error {err}")
        rows = [list(ns[c * self.ids:(c + 1) * self.ids]) for c in range(self.ctas)]
        clocks = [list(cycles[c * self.ids:(c + 1) * self.ids]) for c in range(self.ctas)]
        last = max((c for c, row in enumerate(rows) if any(row)), default=-1)  # CTAs past the last stamped one
        return Stamps(rows[:last + 1], clocks[:last + 1], dropped.value)


def mark_names(names: list[str] | None, calls: list[Stamps]) -> list[str]:
    """The version's ``MARK_NAMES`` extended by ``mark N`` for every id past them that was stamped."""
    names = list(names or [])
    used = max((i for call in calls for row in call.ns for i, t in enumerate(row) if t), default=-1)
    return names + [f"mark {i}" for i in range(len(names), used + 1)]


def summarise(calls: list[Stamps], names: list[str], ctas: range | None = None) -> dict:
    """Per mark and per phase figures over ``calls`` (see the module's docstring). With ``ctas``,
    only those CTAs are counted; times stay relative to the whole call's first stamp."""
    at: dict[str, list[float]] = {n: [] for n in names}
    last: dict[str, list[float]] = {n: [] for n in names}  # per call, the slowest counted CTA's time
    phases: dict[str, dict[str, list[float]]] = {}
    steps: set[int] = set()
    counted_calls = 0
    dropped = sum(c.dropped for c in calls)
    for call in calls:
        stamped = call.stamped()
        if not stamped:
            continue
        counted_calls += 1
        t0 = min(stamped)
        slowest: dict[str, float] = {}
        for cta, (row, clocks) in enumerate(zip(call.ns, call.cycles)):
            if ctas is not None and cta not in ctas:
                continue
            hits = [(i, t, clocks[i]) for i, t in enumerate(row) if t and i < len(names)]
            for i, t, _ in hits:
                at[names[i]].append((t - t0) / 1e3)
                slowest[names[i]] = max(slowest.get(names[i], 0.0), (t - t0) / 1e3)
            for (i, ta, ca), (j, tb, cb) in zip(hits, hits[1:]):
                phase = phases.setdefault(f"{names[i]} -> {names[j]}", {"us": [], "cycles": []})
                phase["us"].append((tb - ta) / 1e3)
                phase["cycles"].append(float(cb - ca))
                if tb > ta:
                    steps.add(tb - ta)
        for n, t in slowest.items():
            last[n].append(t)
    marks = [{"mark": n, "median_us": statistics.median(xs), "max_us": max(xs),
              "last_cta_median_us": statistics.median(last[n]), "ctas": len(xs) / counted_calls}
             for n, xs in at.items() if xs]
    phase_rows = [{"phase": p, "median_us": statistics.median(v["us"]), "max_us": max(v["us"]),
                   "median_cycles": statistics.median(v["cycles"])} for p, v in phases.items()]
    return {"calls": counted_calls, "marks": marks, "phases": phase_rows,
            "timer_step_ns": min(steps) if steps else None, "dropped": dropped}


def format_summary(summary: dict, legend: bool = True) -> list[str]:
    """The lines ``nvfp4 probe marks`` prints for one summary (``legend``: the line saying what "last CTA" is)."""
    if not summary["marks"]:
        return ["no mark was stamped: the kernel never reached NVFP4_MARK (or the CTA range holds none)"]
    out = [f"{'mark (µs after the call first stamp)':<40} {'median':>9} {'max':>9} {'last CTA':>9} {'CTAs':>7}"]
    for m in summary["marks"]:
        out.append(f"{m['mark']:<40} {m['median_us']:9.2f} {m['max_us']:9.2f} {m['last_cta_median_us']:9.2f} "
                   f"{m['ctas']:7.1f}")
    if legend:
        out.append("last CTA: when a call's slowest CTA reached the mark, median over calls (the call ends with it)")
    if summary["phases"]:
        out.append(f"{'phase (within a CTA)':<40} {'median':>9} {'max':>9} {'cycles':>9}")
        for p in summary["phases"]:
            out.append(f"{p['phase']:<40} {p['median_us']:9.2f} {p['max_us']:9.2f} {p['median_cycles']:9.0f}")
    if summary["timer_step_ns"]:
        out.append(f"smallest nonzero step between two marks of a CTA: {summary['timer_step_ns']} ns "
                   "(%globaltimer's resolution bounds it)")
    if summary["dropped"]:
        out.append(f"{summary['dropped']} stamps fell past the buffer (CTA index >= the build's "
                   "NVFP4_MARKS_MAX_CTAS, or a mark id >= 16) and are not counted")
    return out


def parse_fill(text: str) -> tuple[str, str]:
    """``--fill START:END`` -> (START, END), two mark names (MARK_NAMES' or ``mark N``)."""
    start, colon, end = text.rpartition(":")
    if not colon or not start.strip() or not end.strip():
        raise UserError(f"--fill: {text!r} is not START:END, two mark names (e.g. 'GEMM start:end')")
    return start.strip(), end.strip()


def check_fill_names(fill: tuple[str, str] | None, declared, label: str) -> None:
    """Refuses, before any call is timed, a --fill mark that is neither one of the version's MARK_NAMES nor
    ``mark N`` (0 <= N < 16: the name of an id past them)."""
    if fill is None:
        return
    names = list(declared or [])
    for name in fill:
        number = name[len("mark "):] if name.startswith("mark ") else ""
        if name not in names and not (number.isdigit() and int(number) < 16):
            known = ", ".join(repr(n) for n in names) or "none declared"
            raise UserError(f"--fill: {name!r} is not one of {label}'s marks ({known}; or 'mark N')")


def _fill_span(row: list[int], i: int, j: int) -> tuple[int, int, bool] | None:
    """One CTA's (START, end, early) for the fill: its END stamp, or, for a CTA that left before END (group_gemm
    v86's split halves: the one that writes its partial returns there), its last stamp after START, ``early``
    True; None without START or without a later stamp."""
    if len(row) <= i or not row[i]:
        return None
    if len(row) > j and row[j] and row[j] >= row[i]:
        return row[i], row[j], False
    # NOTE: the latest stamp of the row after START: marks are in id order, not time order
    later = max((t for t in row if t and t > row[i]), default=0)
    return (row[i], later, True) if later else None


def fill_account(calls: list[Stamps], names: list[str], fill: tuple[str, str], sms: int) -> dict | None:
    """Per call, the CTAs that stamped START (``fill``'s first mark) and END, or left before END with a later mark
    (:func:`_fill_span`; without them session 72's fill of a launch of split pairs left out a fifth of its work):
    the last end (µs after the call's first stamp), the CTAs' summed end - START (SM-µs), where that work would
    end spread evenly over ``sms`` SMs from the first START (first START + sum / sms), and the SMs' busy share of
    first START to last end (sum / (sms x that span)); medians over calls, and how many CTAs left early. None
    when no call has a CTA with a span."""
    if fill[0] not in names or fill[1] not in names:
        return None
    i, j = names.index(fill[0]), names.index(fill[1])
    last, even, busy, ctas, early = [], [], [], [], []
    for call in calls:
        stamped = call.stamped()
        found = [s for s in (_fill_span(row, i, j) for row in call.ns) if s is not None]
        spans = [(a, b) for a, b, _ in found]
        if not spans:
            continue
        early.append(sum(1 for *_, e in found if e))
        t0 = min(stamped)
        first, end = min(a for a, _ in spans), max(b for _, b in spans)
        work = sum(b - a for a, b in spans)
        last.append((end - t0) / 1e3)
        even.append((first + work / sms - t0) / 1e3)
        busy.append(work / (sms * (end - first)) if end > first else 1.0)
        ctas.append(len(spans))
    if not last:
        return None
    return {"start": fill[0], "end": fill[1], "sms": sms, "ctas": statistics.median(ctas),
            "early": statistics.median(early), "last_end_us": statistics.median(last),
            "even_end_us": statistics.median(even), "busy": statistics.median(busy)}


def format_fill(f: dict | None, fill: tuple[str, str], label: str = "") -> str:
    """The one line a fill account prints (``label``: whose, beside another version's)."""
    who = f"{label}: " if label else ""
    if f is None:
        return f"fill {who}no CTA stamped {fill[0]!r} and then {fill[1]!r} or another mark"
    early = (f" ({f['early']:g} of them left before {f['end']}: their last mark stands in)"
             if f.get("early") else "")
    return (f"fill {who}{f['ctas']:g} CTAs' {f['start']} -> {f['end']}{early}: the last {f['end']} at "
            f"{f['last_end_us']:.2f} µs; "
            f"spread evenly over {f['sms']} SMs from the first {f['start']} it would end at {f['even_end_us']:.2f} "
            f"({f['last_end_us'] / f['even_end_us']:.3f}x; SMs busy {f['busy']:.0%} of that span; medians over calls)")


def parse_cta_ranges(text: str) -> list[range]:
    """``0-31,32-63,64`` -> [range(0, 32), range(32, 64), range(64, 65)]."""
    out = []
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        if not first.isdigit() or (dash and not last.isdigit()) or int(last or first) < int(first):
            raise UserError(f"--ctas: {part.strip()!r} is not A-B with 0 <= A <= B (or one CTA index)")
        out.append(range(int(first), int(last or first) + 1))
    return out


class _Marked:
    """A version built with ``-DNVFP4_MARKS``: its kernel, its marks buffer and its declared MARK_NAMES."""

    def __init__(self, sub, say, build: str = "marks"):
        from harness.probes import variants
        say(f"building {sub.problem} {sub.label} with -D{DEFINE}")
        self.sub = sub
        self.built = variants.import_variant(sub, variants.Variant(build, (DEFINE,)))
        if not self.built.extensions:
            raise UserError(f"{sub.problem} {sub.label} builds no CUDA extension: there is no kernel to mark")
        self.buffer = MarkBuffer(self.built.extensions[-1].__file__)
        declared = variants.module_constant(sub.path, "MARK_NAMES")
        names_ok = isinstance(declared, (list, tuple)) and all(isinstance(n, str) for n in declared)
        if declared is not None and not names_ok:
            raise UserError(f"{sub.path}: MARK_NAMES must be a list of the marks' names, in id order")
        self.declared = declared

    def call(self, torch, data) -> Stamps:
        """One call from a cleared buffer, L2 flushed before it."""
        from harness import timing
        self.buffer.clear()
        timing.flush()
        torch.cuda.synchronize()
        self.built.kernel(data)
        torch.cuda.synchronize()
        return self.buffer.read()


def _sm_count(torch) -> int:
    return int(torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count)


def measure(sub, shapes, *, calls: int = 20, cta_ranges: list[range] | None = None, fill: tuple[str, str] | None = None,
            on_progress=None) -> dict:
    """Build ``sub`` with ``-DNVFP4_MARKS`` (a build of its own), then per shape: one checked call,
    and ``calls`` calls each from a cleared buffer with L2 flushed; the summaries per shape (and per
    range of CTAs; with ``fill``, its account: :func:`fill_account`)."""
    from harness.probes import common
    torch = common.bound_torch()
    common.require_gpu(torch, "nvfp4 probe marks")
    common.refuse_unrunnable(sub, torch)
    say = on_progress or (lambda text: None)
    marked = _Marked(sub, say)
    check_fill_names(fill, marked.declared, sub.label)
    sms = _sm_count(torch) if fill else 0
    results = []
    for shape in shapes:
        say(f"marking {shape.label}")
        data = common.inputs(sub.problem, shape, 1, seed_offset=11)[0]
        checked = common.check(sub.problem, data, marked.built.kernel(data))
        stamps = [marked.call(torch, data) for _ in range(calls)]
        names = mark_names(marked.declared, stamps)
        entry = {"shape": shape.label, "check": checked, "summary": summarise(stamps, names), "ranges": []}
        if fill:
            entry["fill"] = fill_account(stamps, names, fill, sms)
        for ctas in cta_ranges or []:
            entry["ranges"].append({"ctas": f"{ctas.start}-{ctas.stop - 1}", "summary": summarise(stamps, names, ctas)})
        results.append(entry)
    return {"problem": sub.problem, "version": sub.label, "device": common.device_name(torch), "calls": calls,
            "fill": list(fill) if fill else None, "shapes": results}


def compare(pair, shapes, *, calls: int = 20, cta_ranges: list[range] | None = None, fill: tuple[str, str] | None = None,
            on_progress=None) -> dict:
    """Two versions' marks in one process, on the same inputs: both built with ``-DNVFP4_MARKS``, then per
    shape one checked call each and ``calls`` calls each, the two in turn (A then B, then B then A, so
    neither always runs right after the other's flush), every call from a cleared buffer with L2 flushed;
    each version's summary and the two side by side (``side_by_side``), and so per range of CTAs (the same
    linear block indices in both launches: a parent and its child that share a grid)."""
    from harness.probes import common
    torch = common.bound_torch()
    common.require_gpu(torch, "nvfp4 probe marks")
    for sub in pair:
        common.refuse_unrunnable(sub, torch)
    say = on_progress or (lambda text: None)
    # NOTE: the second build always gets a name of its own: two files with one EXTENSION_NAME (a copy of a version,
    # edited) would load as one extension in this process, and reading the names first refused files the build
    # accepts (a CUDA_SRC built from an imported name: the probes' fixture, session 61).
    marked = [_Marked(pair[0], say), _Marked(pair[1], say, "marks_other")]
    for m in marked:
        check_fill_names(fill, m.declared, m.sub.label)
    plain, plain_skipped = _plain_kernels(pair, say)
    sms = _sm_count(torch) if fill else 0
    results = []
    for shape in shapes:
        say(f"marking {shape.label}")
        data = common.inputs(pair[0].problem, shape, 1, seed_offset=11)[0]
        checks = [common.check(m.sub.problem, data, m.built.kernel(data)) for m in marked]
        stamps: list[list[Stamps]] = [[], []]
        for i in range(calls):
            for k in ((0, 1) if i % 2 == 0 else (1, 0)):
                stamps[k].append(marked[k].call(torch, data))
        names = [mark_names(m.declared, s) for m, s in zip(marked, stamps)]
        summaries = [summarise(s, n) for s, n in zip(stamps, names)]
        entry = {"shape": shape.label, "checks": checks, "summaries": summaries,
                 **side_by_side(summaries[0], summaries[1]), "ranges": []}
        if fill:
            entry["fills"] = [fill_account(s, n, fill, sms) for s, n in zip(stamps, names)]
        for ctas in cta_ranges or []:
            parts = [summarise(s, n, ctas) for s, n in zip(stamps, names)]
            entry["ranges"].append({"ctas": f"{ctas.start}-{ctas.stop - 1}", **side_by_side(parts[0], parts[1])})
        marks_us = [common.median([x for x in map(stamped_span_us, s) if x is not None]) for s in stamps]
        entry["builds"] = {"marks_us": marks_us, "plain_us": None, "skipped": plain_skipped}
        if plain:
            from harness import timing
            for fn in plain:  # NOTE: first-call set-up (plans, tensor maps) outside the samples, as ablate's
                fn(data)
            torch.cuda.synchronize()
            spans: list[list[float]] = [[], []]
            for i in range(calls):
                for k in ((0, 1) if i % 2 == 0 else (1, 0)):
                    spans[k] += timing.time_block(plain[k], [data], "kernel").kernel["span_us"]
            entry["builds"]["plain_us"] = [common.median(x) for x in spans]
        results.append(entry)
    return {"problem": pair[0].problem, "versions": [m.label for m in pair], "device": common.device_name(torch),
            "calls": calls, "fill": list(fill) if fill else None, "shapes": results}


def stamped_span_us(call: Stamps) -> float | None:
    """A call's first stamp to its last (any mark, any CTA), µs: the marks build's own figure for the call."""
    stamped = call.stamped()
    return (max(stamped) - min(stamped)) / 1e3 if stamped else None


def builds_verdict(plain_us: list[float], marks_us: list[float]) -> tuple[float, float, str | None]:
    """B / A by the plain builds and by the marks builds, and a warning when they disagree (a direction, or further
    apart than compare's SAME margin, runner.TimingPlan.margin), else None."""
    from harness.runner import TimingPlan
    plain, marked = plain_us[1] / plain_us[0], marks_us[1] / marks_us[0]
    if abs(marked - plain) <= TimingPlan.margin and (marked - 1) * (plain - 1) >= 0:
        return plain, marked, None
    return plain, marked, (f"the marks builds' B / A ({marked:.3f}) is not the plain builds' ({plain:.3f}): their code "
                           "differs (the stamps move and reschedule the loops), so read B - A above as the marks "
                           "builds'; `nvfp4 compare` decides, and `nvfp4 profile P A B --ncu --sass N` splits the plain "
                           "builds' time by loop")


def _plain_kernels(pair, say) -> tuple[list | None, str | None]:
    """The two versions' plain builds (the ones ``compare`` times), or None and why they are not timed here."""
    from harness import contract
    from harness.probes import variants
    names = []
    for sub in pair:
        try:
            names.append(contract.read(sub.path).extension_name)
        except (contract.ContractError, OSError, SyntaxError) as exc:
            return None, f"{sub.label}'s extension name cannot be read ({exc})"
    if names[0] == names[1]:
        return None, f"both versions build an extension named {names[0]!r}, which loads once a process"
    say("importing the plain builds (timed beside the marks builds)")
    return [variants.import_variant(sub, variants.Variant(variants.FULL)).kernel for sub in pair], None


def side_by_side(a: dict, b: dict) -> dict:
    """Two summaries' marks and phases by name: A's order, then those only B has; a figure a version lacks
    is None, and so is its delta (B - A, µs)."""
    def rows(key: str, label: str, fields: tuple[str, ...]) -> list[dict]:
        by_a = {r[label]: r for r in a[key]}
        by_b = {r[label]: r for r in b[key]}
        out = []
        for name in list(by_a) + [n for n in by_b if n not in by_a]:
            ra, rb = by_a.get(name), by_b.get(name)
            row = {label: name}
            for f in fields:
                va, vb = (ra or {}).get(f), (rb or {}).get(f)
                row[f"a_{f}"], row[f"b_{f}"] = va, vb
                row[f"delta_{f}"] = vb - va if va is not None and vb is not None else None
            out.append(row)
        return out
    return {"marks": rows("marks", "mark", ("median_us", "last_cta_median_us")),
            "phases": rows("phases", "phase", ("median_us",))}


def _side_by_side_lines(both: dict, legend: bool = True) -> list[str]:
    """The lines of one ``side_by_side`` result: marks (median and last CTA) and phases, B - A."""
    def fig(x) -> str:
        return f"{x:10.2f}" if x is not None else f"{'-':>10}"

    def delta(x) -> str:
        return f"{x:+10.2f}" if x is not None else f"{'-':>10}"

    if not both["marks"]:
        return ["no mark was stamped by either version (or the CTA range holds none)"]
    lines = [f"{'mark (µs after the call first stamp)':<40} {'A median':>10} {'B median':>10} {'B - A':>10} "
             f"{'A last CTA':>10} {'B last CTA':>10} {'B - A':>10}"]
    for m in both["marks"]:
        lines.append(f"{m['mark']:<40} {fig(m['a_median_us'])} {fig(m['b_median_us'])} {delta(m['delta_median_us'])} "
                     f"{fig(m['a_last_cta_median_us'])} {fig(m['b_last_cta_median_us'])} "
                     f"{delta(m['delta_last_cta_median_us'])}")
    if legend:
        lines.append("last CTA: when a call's slowest CTA reached the mark, median over calls (the call ends with it)")
    if both["phases"]:
        lines.append(f"{'phase (within a CTA), median µs':<40} {'A':>10} {'B':>10} {'B - A':>10}")
        for p in both["phases"]:
            lines.append(f"{p['phase']:<40} {fig(p['a_median_us'])} {fig(p['b_median_us'])} "
                         f"{delta(p['delta_median_us'])}")
    return lines


def _builds_lines(builds: dict | None) -> list[str]:
    """The lines setting the marks builds' call beside the plain builds' (``compare``'s entry "builds")."""
    if not builds or None in builds["marks_us"]:
        return []
    a, b = builds["marks_us"]
    marked = f"marks builds (first stamp to last) {a:.2f} -> {b:.2f} µs"
    if builds["plain_us"] is None:
        return [f"the call, B / A: {marked} ({b / a:.3f}); plain builds not timed: {builds['skipped']}"]
    plain_ratio, marked_ratio, warning = builds_verdict(builds["plain_us"], builds["marks_us"])
    pa, pb = builds["plain_us"]
    lines = [f"the call, B / A: plain builds (what compare times; kernel method, in turn) {pa:.2f} -> {pb:.2f} µs "
             f"({plain_ratio:.3f}); {marked} ({marked_ratio:.3f})"]
    return lines + ([f"WARNING: {warning}"] if warning else [])


def format_comparison(r: dict) -> list[str]:
    va, vb = r["versions"]
    lines = []
    for entry in r["shapes"]:
        lines.append(f"{r['problem']} {entry['shape']}, {r['device']}, {r['calls']} calls each in turn, L2 flushed "
                     f"before each: A = {va}, B = {vb}")
        for label, check in zip((va, vb), entry["checks"]):
            if not check["ok"]:
                lines.append(f"{label}: WRONG OUTPUT ({check['message']}): the timeline of a broken kernel")
        lines += _side_by_side_lines(entry)
        if "fills" in entry:
            lines += [format_fill(f, tuple(r["fill"]), label) for f, label in zip(entry["fills"], (f"A ({va})", f"B ({vb})"))]
        for part in entry.get("ranges", []):
            lines.append(f"CTAs {part['ctas']}:")
            lines += ["  " + line for line in _side_by_side_lines(part, legend=False)]
        lines += _builds_lines(entry.get("builds"))
        dropped = [s["dropped"] for s in entry["summaries"]]
        if any(dropped):
            lines.append(f"stamps past the buffer, not counted: A {dropped[0]}, B {dropped[1]}")
        lines.append("")
    return lines


def format_report(r: dict) -> list[str]:
    lines = []
    for entry in r["shapes"]:
        lines.append(f"{r['problem']} {r['version']} {entry['shape']}, {r['device']}, {r['calls']} calls, L2 flushed "
                     "before each")
        if not entry["check"]["ok"]:
            lines.append(f"WRONG OUTPUT ({entry['check']['message']}): the timeline of a broken kernel")
        lines += format_summary(entry["summary"])
        if "fill" in entry:
            lines.append(format_fill(entry["fill"], tuple(r["fill"])))
        for part in entry["ranges"]:
            lines.append(f"CTAs {part['ctas']}:")
            lines += ["  " + line for line in format_summary(part["summary"], legend=False)]
        lines.append("")
    return lines
