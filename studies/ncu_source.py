"""Which instructions stall, and which unit is busy: Nsight Compute's full set on one call.

`nvfp4 profile --ncu` gives the duration, DRAM rate, occupancy and the top stall reasons; that
says a kernel waits, not on what. This runs ncu with the full section set and source counters
over one custom_kernel call and prints, per profiled kernel:
  - the throughput breakdown (SM, tensor pipe, L1/shared memory, L2, DRAM: % of peak), which
    tells a memory-hierarchy limit (e.g. L2 -> SM traffic) from an issue or latency limit;
  - the SASS instructions with the most stall samples, each with its top stall reasons.
The full details page and the per-instruction CSV go to --out (text, gzip) for later reading.
Usage on a GPU machine, repo root:
    python3 studies/ncu_source.py group_gemm v19 --shape 0 --out $OUT/ncu [--top 40]
and on any machine, a saved CSV read again: python3 studies/ncu_source.py --source FILE-source.csv.gz [--top 40]
"""
import argparse
import csv
import gzip
import io
import os
import subprocess
import sys

sys.path.insert(0, os.getcwd())

# Throughput metrics of the details page worth a line each (section "GPU Speed Of Light" and
# "Memory Workload Analysis" names as ncu prints them).
DETAIL_KEYS = ("Duration", "Compute (SM) Throughput", "Memory Throughput", "L1/TEX Cache Throughput",
               "L2 Cache Throughput", "DRAM Throughput", "Executed Ipc Active", "Issue Slots Busy",
               "Achieved Occupancy", "Registers Per Thread", "Dynamic Shared Memory Per Block",
               "L2 Hit Rate", "Mem Busy", "Max Bandwidth", "Mem Pipes Busy", "One or More Eligible",
               "No Eligible", "Active Warps Per Scheduler", "Eligible Warps Per Scheduler",
               "Warp Cycles Per Issued Instruction")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem", nargs="?")
    ap.add_argument("version", nargs="?")
    ap.add_argument("--shape", default="0", help="benchmark shape index")
    ap.add_argument("--dist", default="competition")
    ap.add_argument("--out", help="where the report, details and source CSV go (with PROBLEM VERSION)")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--timeout", type=float, default=400.0)
    ap.add_argument("--source", help="instead of profiling: read a saved *-source.csv.gz (any machine, no GPU)")
    args = ap.parse_args()
    if args.source:
        if args.problem or args.version or args.out:
            ap.error("--source reads a saved CSV: give no PROBLEM, VERSION or --out with it")
        try:
            with gzip.open(args.source, "rt") as f:
                text = f.read()
        except (OSError, EOFError) as exc:
            print(f"--source {args.source}: cannot read it as a gzip'd CSV ({exc})", file=sys.stderr)
            return 2
        print_top_stalls(text, args.top)
        return 0
    if not (args.problem and args.version and args.out):
        ap.error("PROBLEM, VERSION and --out are required (or --source FILE)")

    from harness import build, cuda_tools, profile, runner
    from harness.submissions import resolve

    sub = resolve(args.problem, args.version)
    shapes, _ = runner.select_shapes(args.problem, args.shape, (), True)
    params = shapes[0].params
    ncu = cuda_tools.find("ncu")
    if not ncu:
        print("ncu not found", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    build.full_build(sub, timeout_s=args.timeout)  # NOTE: so ncu does not profile a compiler
    stem = os.path.join(args.out, f"{args.problem}-{sub.label.removesuffix('.py')}-s{args.shape}")  # NOTE: a path version names by its file
    report = stem + ".ncu-rep"
    cmd = [ncu, "--nvtx", "--nvtx-include", f"{profile.NVTX_RANGE}/", "--clock-control", "none",
           "--set", "full", "--import-source", "no", "--export", report, "--force-overwrite",
           *profile._child_args(sub, params, args.dist, "nvtx", 3, 1)]
    run = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=args.timeout)
    if run.returncode != 0:
        print(run.stdout[-3000:], run.stderr[-3000:], sep="\n")
        return 1
    details = subprocess.run([ncu, "--import", report, "--page", "details"], capture_output=True, text=True).stdout
    source = subprocess.run([ncu, "--import", report, "--page", "source", "--csv", "--print-source", "sass"],
                            capture_output=True, text=True).stdout
    for name, text in (("details.txt.gz", details), ("source.csv.gz", source)):
        with gzip.open(f"{stem}-{name}", "wt") as f:
            f.write(text)
    print(f"== {sub.problem} {sub.label} on {shapes[0].label}: ncu --set full")
    for line in details.splitlines():
        s = line.strip()
        if s.startswith(("void ", "gemv", "group", "gemm", "dual")) and "(" in s or any(s.startswith(k + " ") for k in DETAIL_KEYS):
            print("  " + " ".join(s.split()))
    try:
        print_top_stalls(source, args.top)
    except Exception as exc:  # noqa: BLE001 - the raw CSV is saved either way
        print(f"  could not rank the source page ({exc}); read {stem}-source.csv.gz")
    return 0


def print_top_stalls(source: str, top: int) -> None:
    """The per-instruction CSV: one table per kernel (ncu repeats the header); rank by samples."""
    blocks, current = [], []
    for line in source.splitlines():
        if line.startswith('"Address"') or line.startswith('"#"') or (line.startswith('"') and "Source" in line[:40] and current and not line[1:2].isdigit()):
            if current:
                blocks.append(current)
            current = [line]
        elif line.startswith('"') and current:
            current.append(line)
        elif not line.startswith('"') and line.strip():
            if current:
                blocks.append(current)
                current = []
            print("  " + line.strip()[:160])
    if current:
        blocks.append(current)
    for rows_text in blocks:
        rows = list(csv.DictReader(io.StringIO("\n".join(rows_text))))
        if not rows:
            continue
        cols = list(rows[0].keys())
        sample_col = next((c for c in cols if c.startswith("Warp Stall Sampling (All")), None)
        if sample_col is None:
            print("  no stall-sampling column; columns:", cols[:20])
            continue
        stall_cols = [c for c in cols if c.startswith("stall_") or c.startswith("Stall")]

        def num(v):
            try:
                return float(str(v).replace(",", ""))
            except ValueError:
                return 0.0
        total = sum(num(r[sample_col]) for r in rows) or 1.0
        # NOTE: session 62 read v74's and v78's differences from these two sums before any single instruction: where
        # a kernel's warps wait (barrier = WARPGROUP.DEPBAR and bar.sync, long_sb = mbarrier spins and loads, wait =
        # fixed-latency dependencies) and on which opcodes.
        by_reason, by_opcode = {}, {}
        for r in rows:
            for c in stall_cols:
                if "Not Issued" not in c:
                    by_reason[c.removeprefix("stall_")] = by_reason.get(c.removeprefix("stall_"), 0.0) + num(r[c])
            words = r.get("Source", "").split()
            if words and words[0].startswith("@"):
                words = words[1:]
            opcode = words[0].split(".")[0] if words else "?"
            by_opcode[opcode] = by_opcode.get(opcode, 0.0) + num(r[sample_col])
        reason_total = sum(by_reason.values()) or 1.0
        print("  stall samples by reason: " + ", ".join(
            f"{k} {100 * v / reason_total:.1f}%" for k, v in sorted(by_reason.items(), key=lambda kv: -kv[1])[:10]))
        print("  stall samples by opcode: " + ", ".join(
            f"{k} {100 * v / total:.1f}%" for k, v in sorted(by_opcode.items(), key=lambda kv: -kv[1])[:12]))
        print(f"  {len(rows)} SASS instructions, {total:.0f} stall samples; top {top}:")
        for r in sorted(rows, key=lambda r: -num(r[sample_col]))[:top]:
            reasons = sorted(((num(r[c]), c) for c in stall_cols), reverse=True)[:3]
            why = ", ".join(f"{c}={v:.0f}" for v, c in reasons if v > 0)
            print(f"  {100 * num(r[sample_col]) / total:5.1f}%  {r.get('Address', '')[:8]:>8}  "
                  f"{r.get('Source', '')[:60]:<60}  {why}")


if __name__ == "__main__":
    sys.exit(main())
