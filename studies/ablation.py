"""What the ablation tools (ablate_gemm.py, ablate_group_gemm.py, ablate_gemv.py) share: building their patched
variants in parallel child processes, importing a patched file through the harness's build cache,
and timing a submission's kernels alone by torch.profiler with L2 flushed before every call."""
from __future__ import annotations

import hashlib
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

# NOTE: the tools run as plain scripts on a bare device machine, where the repository is not installed:
# `harness` must come from the checkout this file sits in, whatever the working directory.
REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


def patched(text: str, patches: list[tuple[str, str]], defines: str, variant: str) -> str:
    """A submission's text with every (old, new) patch applied (each target must occur exactly
    once: a drifted target is an error, not a silent no-op), `defines` put at the top of its
    CUDA_SRC, and its extension renamed `<name>_ablate_<variant>` so variants build side by side."""
    for old, new in patches:
        count = text.count(old)
        if count != 1:
            raise SystemExit(f"patch target found {count} times (expected once): {old[:70]!r}")
        text = text.replace(old, new)
    marker = 'CUDA_SRC = r"""\n'
    if text.count(marker) != 1:
        raise SystemExit("CUDA_SRC not found")
    text = text.replace(marker, marker + defines)
    name_line = next(line for line in text.splitlines() if line.startswith("EXTENSION_NAME = "))
    ext = name_line.split("=", 1)[1].strip().strip('"')
    return text.replace(name_line, f'EXTENSION_NAME = "{ext}_ablate_{variant}"')



# The stand-ins the GEMM ablation tools switch in, one text for all of them (each tool anchors them
# on its version's own lines). Both keep the data live, so nothing around them is removed as dead code.
# NOTE: B's fragments from the stage's raw words, masked so no fp16 is Inf or NaN (tensor-core timing
# on data that is not zeros); it reads the slot the decode would have read.
RAW_FRAGMENTS = """        {   // NOTE: raw stage words as fragments, masked so no fp16 is Inf or NaN (tensor-core
            // timing on data that is not zeros)
            const uint8_t* bv = b_values0 + slot * STAGE_BYTES;
            const uint2 w0 = *reinterpret_cast<const uint2*>(bv + row * B_ROW_STRIDE + 8 * tig);
            const uint2 w1 = *reinterpret_cast<const uint2*>(bv + (row + 8) * B_ROW_STRIDE + 8 * tig);
            #pragma unroll
            for (int s = 0; s < 4; ++s) {
                f[s][0] = (w0.x >> s) & 0x3BFF3BFFu; f[s][1] = (w1.x >> s) & 0x3BFF3BFFu;
                f[s][2] = (w0.y >> s) & 0x3BFF3BFFu; f[s][3] = (w1.y >> s) & 0x3BFF3BFFu;
            }
        }
"""


def _switched(flag: str, line: str, standin: str, lead: str, indent: str) -> tuple[str, str]:
    """(line, replacement): `standin` under `flag`, the version's own line (indented as `indent` when
    it was anchored mid-line) under #else; `lead` goes before the #if (a newline for a mid-line anchor)."""
    keep = line if line.startswith(" ") else indent + line
    end = "\n" if line.endswith("\n") or lead else ""
    return line, f"{lead}#if {flag}\n{standin}#else\n{keep.rstrip(chr(10))}\n#endif{end}"


def no_decode_patch(decode_line: str, lead: str = "", values: str = "b_values0 + slot * STAGE_BYTES") -> tuple[str, str]:
    """Under ABLATE_NO_DECODE the version's decode_b call gives way to RAW_FRAGMENTS, reading the slot's B
    values at ``values`` (the expression the version's decode_b call is given)."""
    standin = RAW_FRAGMENTS.replace("b_values0 + slot * STAGE_BYTES", values)
    return _switched("ABLATE_NO_DECODE", decode_line, standin, lead, "        ")


def no_mma_patch(wgmma_line: str, frag: str, lead: str = "", acc: str = "acc") -> tuple[str, str]:
    """Under ABLATE_NO_MMA the version's wgmma call on fragment set `frag` (e.g. "frag[slot % 3]")
    gives way to folding the fragments into the accumulators ``acc`` by XOR, so the decode stays live."""
    indent = "                "
    body = (f"{indent}{{   // NOTE: keeps every fragment live, so the decode is not removed as dead code\n"
            f"{indent}    const uint32_t x = {frag}[s][0] ^ {frag}[s][1] ^ {frag}[s][2] ^ {frag}[s][3];\n"
            f"{indent}    {acc}[s] = __uint_as_float(__float_as_uint({acc}[s]) ^ x);\n"
            f"{indent}}}\n")
    return _switched("ABLATE_NO_MMA", wgmma_line, body, lead, indent)

def load(path: Path):
    """Import a patched file through the harness's build cache: one folder per source text, and a
    torch lock left by a killed build cleared (build_cache.building)."""
    from harness import loader
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return loader.import_submission(str(path), path.stem, source_hash=f"ablate{digest}")


def build_in_parallel(commands: list[list[str]]) -> bool:
    """Run each argument list as `python3 <args>` at once (nvcc builds are CPU-bound and
    independent); True when every one succeeded. Every child is waited for."""
    children = [subprocess.Popen([sys.executable, *argv]) for argv in commands]
    codes = [c.wait() for c in children]
    return all(code == 0 for code in codes)


def prepare(paths: dict[str, Path], *, emit: bool, build_only: bool, child_args: Callable[[str], list[str]]) -> int | None:
    """The tools' shared start, for variant -> patched file `paths`: with `emit`, list the files;
    with `build_only` (a child's job), build the one variant; otherwise build every variant at once
    in children (`child_args(variant)`: the child's arguments). An exit code when the tool is done
    (or a build failed), None when the variants are built and the timing can start."""
    if emit:
        for variant, path in paths.items():
            print(f"{variant}: {path}")
        return 0
    if build_only:
        load(next(iter(paths.values())))
        return 0
    if not build_in_parallel([child_args(variant) for variant in paths]):
        print("a build failed", file=sys.stderr)
        return 1
    return None


def load_all(torch, paths: dict[str, Path]) -> dict:
    """Every variant's custom_kernel, imported after the harness's timing references are bound."""
    from harness import timing
    timing.bind(torch)
    return {variant: load(path) for variant, path in paths.items()}


def profiled_rows(torch, fn, calls: int) -> list[dict]:
    """harness.profile.kernel_rows of `calls` calls of fn() in one torch.profiler session, L2
    flushed (harness.timing.flush) before each."""
    return profiled(torch, fn, calls)[0]


def profiled(torch, fn, calls: int, before=None) -> tuple[list[dict], list[tuple[float, float, str]]]:
    """As profiled_rows, and every device kernel of the session as (start µs, end µs, name) in
    start order: the flush's kernels included, so a caller can cut the session into calls.
    `before()`, if given, is enqueued after each flush (kernel_compare's --ahead: a sleep that keeps
    the device busy while the host enqueues the call)."""
    from torch.profiler import ProfilerActivity, profile

    from harness import timing
    from harness.profile import kernel_rows
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            timing.flush()
            if before is not None:
                before()
            fn()
        torch.cuda.synchronize()
    kernels = sorted((float(e.time_range.start), float(e.time_range.end), e.key) for e in prof.events()
                     if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA)
    return kernel_rows(torch, prof, True), kernels


def kernel_us(torch, fn, data, calls: int, kernels: dict[str, str]) -> dict[str, list[float]]:
    """`calls` calls of fn(data), profiled as profiled_rows. For each label of `kernels` (label ->
    a substring of the kernel's name): the mean device µs per call of every matching kernel, one
    entry per matching kernel name."""
    return per_label(profiled_rows(torch, lambda: fn(data), calls), kernels)


def per_label(rows: list[dict], kernels: dict[str, str]) -> dict[str, list[float]]:
    """harness.profile.kernel_rows' rows ({name, calls, total_us}) sorted to the first label whose
    name fragment they contain, as µs per call; rows matching none are dropped."""
    out: dict[str, list[float]] = {label: [] for label in kernels}
    for row in rows:
        for label, fragment in kernels.items():
            if fragment in row["name"]:
                out[label].append(row["total_us"] / row["calls"])
                break
    return out


def time_variants(torch, problem: str, kernels: dict, shapes: list[int], exact: Callable[[str], bool],
                  labels: dict[str, str], rounds: int, calls: int) -> list[tuple[int, str, dict[str, float], float]]:
    """The ablation tools' measurement: per benchmark shape of `problem` (fresh competition inputs),
    the outputs of the variants for which `exact(variant)` holds checked once, every variant called
    once, then `rounds` rounds in which each variant in turn runs `calls` profiled calls (kernel_us).
    Returns rows (shape, variant, mean µs per label of `labels`, the first label's smallest per-call
    mean); prints each shape's checks as they finish."""
    from harness import config
    from reference import problem_module
    mod = problem_module(problem)
    rows = []
    for shape in shapes:
        params = dict(config.load()[problem].benchmarks[shape].params)
        seed = params.pop("seed")
        data = mod.generate_input(**params, seed=seed + 7, dist="competition")
        checks = []
        for variant, fn in kernels.items():
            if exact(variant):
                ok, msg = mod.check(data, fn(data))
                checks.append(f"{variant} {'ok' if ok else 'FAILED: ' + msg}")
        for fn in kernels.values():  # NOTE: first-call set-up (workspace, tensor maps) outside the samples
            fn(data)
        torch.cuda.synchronize()
        samples: dict[str, dict[str, list[float]]] = {v: {} for v in kernels}
        for _ in range(rounds):
            for variant, fn in kernels.items():
                for label, values in kernel_us(torch, fn, data, calls, labels).items():
                    samples[variant].setdefault(label, []).extend(values)
        first = next(iter(labels))
        for variant in kernels:
            means = {label: (statistics.fmean(samples[variant][label]) if samples[variant].get(label) else float("nan"))
                     for label in labels}
            rows.append((shape, variant, means, min(samples[variant].get(first) or [float("nan")])))
        print(f"shape {shape} {params}: checks: {'; '.join(checks) or 'none exact'}", flush=True)
    return rows


def gemm_ablation_main(problem: str, tool: str, variants_table: dict, patched_source: Callable[[str, str], str],
                       exact: Callable[[str], bool], kernel_name: str, default_version: str, default_shapes: str,
                       applies: Callable[[str, str], bool] | None = None) -> int:
    """The command line of the GEMM ablation tools (ablate_gemm, ablate_group_gemm): `variants_table`
    names the variants, `patched_source(text, variant)` makes each one's file, `exact(variant)` says
    whose output must still match the reference, `kernel_name` is the GEMM kernel's name fragment;
    `tool` is the calling script (its build children run it again). `applies(text, variant)`, when
    given, says which variants "all" means for a version's source (the rest have no targets in it)."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default=default_version)
    ap.add_argument("--shapes", default=default_shapes, help="benchmark shape indices, comma-separated")
    ap.add_argument("--variants", default="all")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--calls", type=int, default=8, help="calls per variant per round")
    ap.add_argument("--emit", help="write the patched sources here and stop (no CUDA needed)")
    ap.add_argument("--build-only", action="store_true")
    args = ap.parse_args()

    from harness.submissions import resolve

    src = resolve(problem, args.version).path
    if args.variants == "all":
        variants = [v for v in variants_table if applies is None or applies(src.read_text(), v)]
    else:
        variants = args.variants.split(",")
    unknown = [v for v in variants if v not in variants_table]
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; known: {', '.join(variants_table)}")
    folder = Path(args.emit) if args.emit else Path(f"/tmp/nvfp4-ablate-{problem}") / args.version
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for v in variants:
        paths[v] = folder / f"{src.stem}_{v}.py"
        paths[v].write_text(patched_source(src.read_text(), v))
    done = prepare(paths, emit=bool(args.emit), build_only=args.build_only,
                   child_args=lambda v: [tool, "--version", args.version, "--variants", v, "--build-only"])
    if done is not None:
        return done

    import torch
    kernels = load_all(torch, paths)
    rows = time_variants(torch, problem, kernels, [int(s) for s in args.shapes.split(",")], exact,
                         {"gemm": kernel_name, "prepass": "decode_a"}, args.rounds, args.calls)
    print(f"\n{problem} {args.version} GEMM kernel with parts removed, {torch.cuda.get_device_name()}, torch.profiler "
          f"device time, L2 flushed before each call, {args.rounds} rounds x {args.calls} calls")
    print(f"{'shape':>5} {'variant':<13} {'gemm µs':>9} {'(min round)':>11} {'prepass µs':>10}")
    for shape, v, means, lo in rows:
        print(f"{shape:>5} {v:<13} {means['gemm']:9.1f} {lo:11.1f} {means['prepass']:10.1f}")
    return 0
