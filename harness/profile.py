"""``nvfp4 profile``: where one version's time goes on one shape.

By default a child runs ``custom_kernel`` a few times under torch.profiler and reports each
kernel (name, calls, total and mean time); on a CPU, the operators' CPU time. With ``--ncu``,
Nsight Compute profiles the kernels inside the ``custom_kernel`` NVTX range (``--clock-control
none``: the clocks the timings run at, not ncu's locked base clock) into a report in the build
cache, and the summary gives duration, achieved TFLOP/s and DRAM GB/s against this GPU's
ceilings, occupancy and the top stall reasons. ``--sass N`` also samples the warps' program counters
(ncu's SourceCounters section) and gives, per kernel, the stall reasons by sample, each wgmma loop's
samples and reasons, and the N SASS instructions most sampled with theirs: where the warps wait, not
only on what.

The version is built first in a plain child (:func:`harness.build.full_build`), so neither the
profiler nor ncu watches a compiler. This module is also the child (``python -m harness.profile``).
"""

from __future__ import annotations

import csv
import functools
import io
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field

from harness import build, build_cache, ceilings, isolation, paths
from harness.errors import UserError
from harness.submissions import Submission

NVTX_RANGE = "custom_kernel"
CHILD_RESULT = "nvfp4-profile-child:"  # the child's result line: this prefix and JSON
DEFAULT_TIMEOUT_S = 900.0

# What --ncu collects (besides the launch attributes every raw page has).
NCU_METRICS = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",  # achieved occupancy
    "sm__maximum_warps_per_active_cycle_pct",  # theoretical occupancy
    "launch__registers_per_thread",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
)
# Per stall reason: warps stalled on it per issue cycle (ncu's Warp State section). A regex, not a
# list: the reasons differ between GPUs (gmma exists on Hopper only) and ncu refuses unknown names.
NCU_STALL_REGEX = "regex:^smsp__average_warps_issue_stalled_.*_per_issue_active"
# Units' throughput, % of peak: where a kernel is bound (gemm's K loop: A's copies from L2 against
# the tensor pipe). One regex, since a GPU without one of these names must not fail the run: the L2
# name exists on every GPU ncu profiles, so it always matches something.
NCU_UNIT_REGEX = ("regex:^(lts__t_sectors|l1tex__data_pipe_lsu_wavefronts_mem_shared|sm__pipe_tensor_op_(gmma|hmma)_cycles_active)"
                  "\\.avg\\.pct_of_peak_sustained_(elapsed|active)$")
# (label, metric prefix) in the order shown; the first name present of each wins, elapsed before active.
UNITS = (("L2", "lts__t_sectors"), ("shared", "l1tex__data_pipe_lsu_wavefronts_mem_shared"),
         ("tensor", "sm__pipe_tensor_op_gmma_cycles_active"), ("tensor", "sm__pipe_tensor_op_hmma_cycles_active"))
_STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active(\.ratio)?$")
# --sass: the section whose PC sampling fills the source page, and that page's per-reason columns,
# which ncu names either by metric (smsp__pcsamp_warps_issue_stalled_<reason>) or short (stall_<reason>).
NCU_SOURCE_SECTION = "SourceCounters"
_SAMPLED_REASON = re.compile(r"^(?:smsp__pcsamp_warps_issue_stalled_|stall_)(\w+)$")
_ALL_SAMPLES = ("Warp Stall Sampling (All Samples)", "# Samples")
_BRANCH_TARGET = re.compile(r"\bBRA\b.*?\b(0x[0-9a-fA-F]+)")  # the source page's branches name absolute addresses
_HGMMA_SHAPE = re.compile(r"HGMMA\.(\d+x\d+x\d+)")
NOT_STALLS = ("selected",)  # the warp issued: a state, not a stall

_UNIT_SCALE = {
    "nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6,
    "byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
    "kibyte": 1024.0, "mibyte": 1024.0**2, "gibyte": 1024.0**3,
}


# ---------------------------------------------------------------------------------- results
@dataclass
class NcuKernel:
    name: str
    duration_us: float
    dram_bytes: float
    metrics: dict = field(default_factory=dict)  # every numeric column, in base units (µs, bytes)
    block: str = ""
    grid: str = ""


def _number(text: str) -> float | None:
    t = text.strip().replace(",", "")
    if t in ("", "n/a", "N/A"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def parse_ncu_csv(text: str) -> list[NcuKernel]:
    """``ncu --import R --csv --page raw``: a header row of metric names, a row of units, one row per
    profiled kernel. Durations come out in µs and sizes in bytes whatever unit ncu chose. Strict:
    no header, no kernel rows or no duration column is an error, never an empty profile."""
    lines = [line for line in text.splitlines() if line.startswith('"')]  # ncu's own notes are unquoted
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if len(rows) < 2 or "Kernel Name" not in rows[0]:
        raise ValueError("no CSV table with a 'Kernel Name' column in ncu's output")
    header, units = rows[0], rows[1]
    if "gpu__time_duration.sum" not in header:
        raise ValueError("ncu's table has no gpu__time_duration.sum column")
    unit_row = not any(_number(u) is not None for u in units) and units[header.index("Kernel Name")] == ""
    data = rows[2:] if unit_row else rows[1:]
    if not data:
        raise ValueError("ncu profiled no kernel inside the custom_kernel NVTX range")
    kernels = []
    for row in data:
        cells = dict(zip(header, row))
        metrics = {}
        for i, name in enumerate(header):
            value = _number(row[i]) if i < len(row) else None
            if value is None or "__" not in name and "." not in name:
                continue
            unit = units[i].strip().lower() if unit_row and i < len(units) else ""
            metrics[name] = value * _UNIT_SCALE.get(unit, 1.0)
        if "gpu__time_duration.sum" not in metrics:
            raise ValueError(f"no duration for kernel {cells.get('Kernel Name')!r}")
        dram = metrics.get("dram__bytes_read.sum", 0.0) + metrics.get("dram__bytes_write.sum", 0.0)
        kernels.append(NcuKernel(cells.get("Kernel Name", "?"), metrics["gpu__time_duration.sum"], dram, metrics,
                                 cells.get("Block Size", ""), cells.get("Grid Size", "")))
    return kernels


@dataclass
class SassLine:
    address: str
    source: str      # the instruction as ncu prints it
    samples: int     # warp-state samples at this instruction, issued or not
    reasons: dict    # {reason: samples}, stalls only (the issued state, "selected", left out)


@dataclass
class SampledLoop:
    first: str       # address of its first instruction (the back-edge's target), as ncu prints it
    last: str        # address of its back-edge
    instructions: int
    samples: int
    reasons: dict    # {reason: samples}, largest first
    shape: str       # its HGMMA's shape (64x168x16), the most frequent where several


@dataclass
class SampledKernel:
    name: str
    lines: list      # SassLine, in address order

    @property
    def samples(self) -> int:
        return sum(line.samples for line in self.lines)

    def reasons(self) -> dict:
        """{reason: samples} over the kernel, largest first."""
        total: dict = {}
        for line in self.lines:
            for reason, n in line.reasons.items():
                total[reason] = total.get(reason, 0) + n
        return dict(sorted(total.items(), key=lambda kv: -kv[1]))

    @functools.cached_property
    def loops(self) -> list:
        """Its wgmma loops (probe sass's rule: the innermost predicated back-edge around HGMMA), each with the samples
        of its instructions: how a kernel's warp-time splits between its loops and the code around them. Cached: the
        two-version profile reads them twice (the kernel's table, then the comparison by loop)."""
        from harness.probes.sass import wgmma_spans
        at = [(int(line.address, 16), line.source.strip()) for line in self.lines]

        def target_of(text: str) -> int | None:
            found = _BRANCH_TARGET.search(text)
            return int(found.group(1), 16) if found else None
        loops = []
        for first, last in wgmma_spans(at, target_of):
            inside = [line for (a, _), line in zip(at, self.lines) if first <= a <= last]
            reasons: dict = {}
            shapes: dict = {}
            for line in inside:
                for reason, n in line.reasons.items():
                    reasons[reason] = reasons.get(reason, 0) + n
                shape = _HGMMA_SHAPE.search(line.source)
                if shape:
                    shapes[shape.group(1)] = shapes.get(shape.group(1), 0) + 1
            loops.append(SampledLoop(f"{first:#x}", f"{last:#x}", len(inside), sum(line.samples for line in inside),
                                     dict(sorted(reasons.items(), key=lambda kv: -kv[1])),
                                     max(shapes, key=shapes.get) if shapes else "?"))
        return loops

    def top(self, n: int) -> list:
        """The ``n`` most sampled instructions, most first (address order among equals); never an unsampled one."""
        return sorted((line for line in self.lines if line.samples), key=lambda line: -line.samples)[:n]


def _reason_name(column: str) -> str | None:
    """A source page's per-reason column -> the reason (``stall_no_inst`` -> ``no_inst``), None for other columns,
    for the issued state (``selected``) and for the not-issued-only copies of each reason."""
    m = _SAMPLED_REASON.match(column.strip())
    if not m or m.group(1).endswith("_not_issued") or m.group(1) in NOT_STALLS:
        return None
    return m.group(1)


def parse_ncu_source(text: str) -> list[SampledKernel]:
    """``ncu --import R --csv --page source --print-source sass``: per profiled kernel a table of
    one row per SASS instruction (Address, Source, the samples and per-reason columns), headed by a
    line naming the kernel. Strict as parse_ncu_csv: no table with an Address, a Source and a samples
    column, or no sample at all (the report was taken without SourceCounters), is an error."""
    kernels: list[SampledKernel] = []
    title = None
    header = None
    for row in csv.reader(io.StringIO(text)):
        cells = [c.strip() for c in row]
        if not any(cells):
            continue
        if "Address" in cells and "Source" in cells and any(s in cells for s in _ALL_SAMPLES):
            header = cells
            at = {name: i for i, name in enumerate(header)}
            samples_col = next(at[s] for s in _ALL_SAMPLES if s in at)
            reason_cols = [(i, r) for i, r in ((i, _reason_name(c)) for i, c in enumerate(header)) if r]
            kernels.append(SampledKernel(title or f"kernel {len(kernels)}", []))
            title = None
            continue
        if header is not None and len(cells) == len(header) and _number(cells[samples_col]) is not None:
            reasons = {r: int(_number(cells[i]) or 0) for i, r in reason_cols}
            kernels[-1].lines.append(SassLine(cells[at["Address"]], cells[at["Source"]],
                                              int(_number(cells[samples_col])), {r: n for r, n in reasons.items() if n}))
            continue
        # NOTE: anything else ends a table; ncu heads each kernel's with "Kernel Name","<name>"
        header = None
        named = [c for c in cells if c]
        title = named[1] if named[0] == "Kernel Name" and len(named) > 1 else named[0]
    if not kernels:
        raise ValueError("no source table (Address, Source, samples) in ncu's output")
    if not any(k.samples for k in kernels):
        raise ValueError("the source page has no warp-state samples (was SourceCounters collected?)")
    # NOTE: ncu's source page (2025.3, on the H200 machines) listed every kernel's table twice, row for row the same:
    # session 87's `profile dual_gemm v72 v78 --ncu --sass 30` gave 4 tables for the raw page's 2 kernels, so the two
    # versions' loops could not be compared. Two launches' sampled tables never agree row for row, so a table equal to
    # an earlier one is the export's repeat, not a launch.
    unique: list[SampledKernel] = []
    for k in kernels:
        if k not in unique:
            unique.append(k)
    return unique


def loop_time(sampled: list, kernels: list) -> dict:
    """{HGMMA shape: µs, "outside the wgmma loops": µs} of one profiled call: each kernel's duration split by its warp
    samples (a loop's share of the kernel's samples x the kernel's time), loops of one shape summed over kernels.
    A share of samples, not a count, so two reports compare whatever interval ncu sampled each at. The source page
    lists the kernels in the raw page's order; a mismatch in their number is an error, never a guess."""
    if len(sampled) != len(kernels):
        raise ValueError(f"the source page has {len(sampled)} kernels and the raw page {len(kernels)}")
    times: dict = {}
    for k, timed in zip(sampled, kernels):
        if not k.samples:
            continue
        loops = [loop for loop in k.loops if loop.samples]
        for loop in loops:
            times[loop.shape] = times.get(loop.shape, 0.0) + timed.duration_us * loop.samples / k.samples
        outside = k.samples - sum(loop.samples for loop in loops)
        times[OUTSIDE_LOOPS] = times.get(OUTSIDE_LOOPS, 0.0) + timed.duration_us * outside / k.samples
    return times


OUTSIDE_LOOPS = "outside the wgmma loops"


def unit_pcts(metrics: dict) -> dict:
    """{label: % of peak or None} of one kernel's metrics, per UNITS (the first name present)."""
    units = {label: None for label, _ in UNITS}
    for label, prefix in UNITS:
        for scope in ("elapsed", "active"):
            name = f"{prefix}.avg.pct_of_peak_sustained_{scope}"
            if units[label] is None and name in metrics:
                units[label] = metrics[name]
    return units


def ncu_summary(kernels: list[NcuKernel], calls: int, flops: float, ceilings: dict | None) -> dict:
    """Per custom_kernel call: duration, TFLOP/s, DRAM GB/s (and % of the ceilings), occupancy and
    units busy (unit_pcts) weighted by kernel time, the stall reasons ranked by warps stalled per
    issue cycle."""
    total_us = sum(k.duration_us for k in kernels)
    per_call_us = total_us / max(calls, 1)
    dram = sum(k.dram_bytes for k in kernels) / max(calls, 1)
    tflops = flops / (per_call_us * 1e-6) / 1e12 if per_call_us else None
    gbps = dram / (per_call_us * 1e-6) / 1e9 if per_call_us else None

    def weighted(metric):
        pairs = [(k.metrics[metric], k.duration_us) for k in kernels if metric in k.metrics]
        weight = sum(w for _, w in pairs)
        return sum(v * w for v, w in pairs) / weight if weight else None

    stalls = {}
    for name in sorted({m for k in kernels for m in k.metrics if _STALL.match(m)}):
        reason = _STALL.match(name).group(1)
        if reason in NOT_STALLS or reason.endswith("_not_issued"):
            continue
        value = weighted(name)
        if value:
            stalls[reason] = value
    stall_total = sum(stalls.values())
    top = [{"reason": r, "warps_per_issue": v, "share": v / stall_total if stall_total else None}
           for r, v in sorted(stalls.items(), key=lambda kv: -kv[1])[:5]]
    per_kernel = [(unit_pcts(k.metrics), k.duration_us) for k in kernels]
    units = {}
    for label in unit_pcts({}):
        pairs = [(u[label], w) for u, w in per_kernel if u[label] is not None]
        weight = sum(w for _, w in pairs)
        units[label] = sum(v * w for v, w in pairs) / weight if weight else None
    summary = {"duration_us": per_call_us, "kernels_per_call": len(kernels) / max(calls, 1),
               "tflops": tflops, "dram_gbps": gbps, "dram_bytes": dram,
               "achieved_occupancy_pct": weighted("sm__warps_active.avg.pct_of_peak_sustained_active"),
               "theoretical_occupancy_pct": weighted("sm__maximum_warps_per_active_cycle_pct"),
               "top_stalls": top, "units_pct": units, "ceilings": ceilings}
    if ceilings and tflops is not None:
        summary["pct_of_bf16"] = 100 * tflops / ceilings["bf16_tflops"]
        summary["pct_of_copy"] = 100 * gbps / (ceilings["copy_tbps"] * 1e3)
    return summary


# -------------------------------------------------------------------------------------- run
def _child_args(sub: Submission, params: dict, dist: str, mode: str, warmup: int, calls: int) -> list[str]:
    return [sys.executable, "-m", "harness.profile", sub.problem, str(sub.path), sub.label, sub.source_hash,
            json.dumps(params), dist, mode, str(warmup), str(calls)]


def _run_child(cmd: list[str], timeout_s: float, log_name: str) -> tuple[int | None, str, str]:
    log = build_cache.logs_dir() / f"{log_name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    code, text = isolation.run_group(cmd, timeout_s, cwd=paths.REPO_ROOT, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    log.write_text(text)
    return code, text, str(log)


def child_result(text: str) -> dict | None:
    for line in reversed(text.splitlines()):
        if line.startswith(CHILD_RESULT):
            return json.loads(line[len(CHILD_RESULT):])
    return None


def _failure(what: str, code, text: str, log: str) -> UserError:
    tail = " | ".join(line.strip() for line in text.strip().splitlines()[-4:])
    how = "timed out" if code is None else f"exited with code {code}"
    return UserError(f"{what} {how}: {tail} (log: {log})")


def _build_first(sub: Submission, timeout_s: float) -> None:
    built = build.full_build(sub, timeout_s)
    if not built.ok:
        raise UserError(f"{sub.label} does not build: {built.message.splitlines()[0]} (log: {built.log})")


def torch_profile(sub: Submission, params: dict, dist: str, *, warmup: int = 3, calls: int = 10,
                  timeout_s: float = DEFAULT_TIMEOUT_S) -> dict:
    """The child's torch.profiler table: {device, check, rows: [{name, calls, total_us}], calls}."""
    _build_first(sub, timeout_s)
    code, text, log = _run_child(_child_args(sub, params, dist, "torch", warmup, calls), timeout_s,
                                 f"profile-{sub.problem}-{sub.label.replace('/', '_')}")
    result = child_result(text)
    if code != 0 or result is None:
        raise _failure("the profiling child", code, text, log)
    result["log"] = log
    return result


def _import(ncu: str, report, page: tuple[str, ...], timeout_s: float) -> str:
    """``ncu --import REPORT --csv PAGE...``'s output; its failure or time-out a UserError."""
    cmd = [ncu, "--import", str(report), "--csv", *page]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise UserError(f"{' '.join(cmd[1:])} timed out after {timeout_s:g} s") from None
    if done.returncode != 0:
        raise UserError(f"ncu --import {report} {' '.join(page)} exited with code {done.returncode}: "
                        + " | ".join(done.stderr.strip().splitlines()[-3:]))
    return done.stdout


def ncu_profile(sub: Submission, ncu: str, params: dict, dist: str, flops: float, *, warmup: int = 3,
                calls: int = 1, sass: bool = False, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict:
    """Nsight Compute on the custom_kernel range; {kernels, summary, report, check, device}, and with
    ``sass`` {sampled: [SampledKernel], source_csv} from the report's source page (also written
    beside the report)."""
    _build_first(sub, timeout_s)
    name = f"{sub.problem}-{sub.label.replace('/', '_').removesuffix('.py')}-{time.strftime('%Y%m%d-%H%M%S')}"
    report = build_cache.root() / "profiles" / f"{name}.ncu-rep"
    report.parent.mkdir(parents=True, exist_ok=True)
    cmd = [ncu, "--nvtx", "--nvtx-include", f"{NVTX_RANGE}/", "--clock-control", "none",
           "--metrics", ",".join((*NCU_METRICS, NCU_STALL_REGEX, NCU_UNIT_REGEX)),
           *(("--section", NCU_SOURCE_SECTION) if sass else ()), "--export", str(report), "--force-overwrite",
           *_child_args(sub, params, dist, "nvtx", warmup, calls)]
    code, text, log = _run_child(cmd, timeout_s, f"ncu-{name}")
    result = child_result(text)
    if code != 0 or result is None:
        hint = (" (ncu needs access to the GPU's performance counters: ERR_NVGPUCTRPERM)"
                if "ERR_NVGPUCTRPERM" in text else "")
        raise _failure("ncu" + hint, code, text, log)
    try:
        kernels = parse_ncu_csv(_import(ncu, report, ("--page", "raw", "--print-units", "base"), timeout_s))
    except ValueError as exc:
        raise UserError(f"{exc} (report: {report}, log: {log})") from None
    figures = ceilings.of_gpu(None, result["device"]["gpu"], allow_measure=False)  # as runs use them; never measures here
    out = {"kernels": kernels, "summary": ncu_summary(kernels, calls, flops, figures), "report": str(report),
           "check": result["check"], "device": result["device"], "log": log}
    if sass:
        source = _import(ncu, report, ("--page", "source", "--print-source", "sass"), timeout_s)
        source_csv = report.with_suffix(".sass.csv")
        source_csv.write_text(source)
        try:
            out["sampled"] = parse_ncu_source(source)
        except ValueError as exc:
            raise UserError(f"{exc} (source page: {source_csv})") from None
        out["source_csv"] = str(source_csv)
    return out


# ------------------------------------------------------------------------------------ child
def kernel_rows(torch, prof, on_gpu: bool) -> list[dict]:
    """Per kernel (CUDA) or operator (CPU): {name, calls, total_us}, self time only, largest first."""
    rows = []
    for e in prof.key_averages():
        if on_gpu:
            if getattr(e, "device_type", None) != torch.autograd.DeviceType.CUDA:
                continue
            total = getattr(e, "self_device_time_total", None)
            if total is None:
                total = e.self_cuda_time_total
        else:
            total = e.self_cpu_time_total
        if total > 0:
            rows.append({"name": e.key, "calls": e.count, "total_us": float(total)})
    return sorted(rows, key=lambda r: -r["total_us"])


def _child(argv: list[str]) -> int:
    problem, path, label, source_hash, params, dist, mode, warmup, calls = argv
    import torch

    from harness import loader, machine
    from reference import problem_module

    kernel = loader.import_submission(path, label, source_hash=source_hash)
    mod = problem_module(problem)
    shape = json.loads(params)
    seed = shape.pop("seed", 1111)
    on_gpu = torch.cuda.is_available()
    data = mod.generate_input(**shape, seed=seed, dist=dist)
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    ok, msg = mod.check(data, kernel(data))  # a wrong kernel's profile is still shown, and says so
    for _ in range(int(warmup)):
        kernel(data)
    sync()
    result = {"device": machine.device_info(torch), "check": {"ok": ok, "message": msg}, "calls": int(calls)}
    if mode == "nvtx":
        for _ in range(int(calls)):
            with torch.cuda.nvtx.range(NVTX_RANGE):
                kernel(data)
        sync()
    else:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if on_gpu:
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        with torch.profiler.profile(activities=activities) as prof:
            for _ in range(int(calls)):
                kernel(data)
            sync()
        result["rows"] = kernel_rows(torch, prof, on_gpu)
        result["on_gpu"] = on_gpu
    print(CHILD_RESULT + json.dumps(result, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
