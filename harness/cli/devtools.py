"""Kernel developer tools (docs/developing.md): new, export, build, sanitize, profile, diff,
ceilings, doctor.

Each command reads its options, calls the module that does the work (scaffold, build,
compile_only, sanitize, profile, diff, ceilings, doctor) and prints through
:mod:`harness.cli.render`. Any version they take may be in its lineage's attic
(``submissions.resolve`` finds it there); ``build``'s ``all`` includes the attic.
"""

from __future__ import annotations

import sys

import click
from rich.markup import escape

from harness import ceilings, config, runner, scaffold, submissions
from harness.cli import COUNT, SECONDS, Number, clean_errors, main, refuse, writable_file
from harness.cli import render
from harness.cli.render import console, err_console
from harness.errors import UserError
from reference import PROBLEMS
from reference.distributions import DISTS


# ------------------------------------------------------------------------------------ new, export
@main.command("new")
@click.argument("problem")
@click.argument("version")
@click.option("--from", "parent", required=True, help="The parent version (vM, the attic's too) the new file starts from.")
@click.option("--change", default="TODO: the one idea this version changes", show_default=True,
              help="The Change line of the new docstring.")
@clean_errors
def new_cmd(problem, version, parent, change):
    """A new version file from its parent: the code copied, a fresh docstring header (Version,
    Parent, Change, Arch, Analogue, Prediction, Measured: not yet run), EXTENSION_NAME renamed."""
    target, text = scaffold.new_version(problem, version, parent, change)
    target.write_text(text)
    console.print(f"wrote {target} (from {parent}); next: edit the code and the docstring's Change and "
                  f"Prediction, then nvfp4 test {problem} {version} --dist all && nvfp4 compare {problem} {parent} {version}")
    if "define NVFP4_MARK" in text:
        console.print("its CUDA_SRC carries the timeline marks: NVFP4_MARK(id) where the time should be read "
                      f"(nothing in a normal build), then nvfp4 probe marks {problem} {version}")


@main.command("export")
@click.argument("problem")
@click.argument("version")
@click.option("-o", "--output", "output_path", type=click.Path(dir_okay=False), default=None,
              help="Write here (default: stdout).")
@click.option("--gpu", default="B200", show_default=True, help="The #!POPCORN gpu line (the NVFP4 leaderboards run on B200); a warning when the "
                   "version's Arch cannot run there.")
@clean_errors
def export_cmd(problem, version, output_path, gpu):
    """The version as GPU MODE's submission CLI takes it: #!POPCORN leaderboard and gpu lines first."""
    sub = submissions.resolve(problem, version)
    text = scaffold.export(sub, gpu)
    warning = scaffold.export_warning(sub, gpu)
    if warning:
        err_console.print(f"[yellow]warning:[/yellow] {escape(warning)}", soft_wrap=True)
    if output_path:
        writable_file(output_path, "-o").write_text(text)
        err_console.print(f"wrote {output_path}")
    else:
        sys.stdout.write(text)


# ------------------------------------------------------------------------------------------ build
def tool_subs(problem: str, version: str) -> list:
    """PROBLEM VERSION where either may be ``all``: every version, the attic's included (they stay
    loadable, so they must keep compiling and stay in the compiled manifest); a file that cannot be
    loaded is the error here (strict), so CI's build step fails on it."""
    if problem == "all":
        if version != "all":
            raise UserError("with PROBLEM all, VERSION must be all too")
        return [s for p in PROBLEMS for s in submissions.versions(p, include_attic=True, strict=True)]
    if version == "all":
        return submissions.versions(problem, include_attic=True, strict=True)
    return [submissions.resolve(problem, version)]


@main.command("build")
@click.argument("problem")
@click.argument("version", default="all")
@click.option("--compile-only", "compile_only_flag", is_flag=True,
              help="nvcc on the CUDA source only, with ptxas's per-kernel resources (automatic without a GPU).")
@click.option("--changed", is_flag=True,
              help="Compile-only (implied), and only versions whose compile is not in the compiled manifest "
                   "(submissions/compiled.json, or NVFP4_COMPILE_MANIFEST): changed or new ones; the rest are "
                   "counted as skipped. CI's mode. A toolchain unlike the manifest's 'checked_with' still skips "
                   "unchanged versions (with a warning): recheck all with the plain command.")
@click.option("--jobs", "-j", type=COUNT, default=None, help="Versions built at once (default: CPU count).")
@click.option("--timeout", type=SECONDS, default=900.0, show_default=True, help="Seconds one version's build may take.")
@clean_errors
def build_cmd(problem, version, compile_only_flag, changed, jobs, timeout):
    """Build versions' extensions (PROBLEM and VERSION may be 'all', the attic's versions included);
    --compile-only needs no GPU.

    A compile-only build with no failure records each lineage version it checked in the compiled
    manifest (submissions/compiled.json, committed): the hash of what compile-only compiles for it
    (sources, flags, defines, arch; not the machine's paths or compiler versions, nor the file's
    place: a version moved to the attic is not compiled again), so --changed can skip it while it
    stays the same. The plain `build all all --compile-only` compiles every version (before a
    release, or after changing nvcc, the host compiler or torch) and records that toolchain as the
    manifest's 'checked_with'; --changed never recompiles for a toolchain change alone (see
    harness/build.py for why)."""

    from harness import build, build_cache, compile_only, cuda_tools

    subs = tool_subs(problem, version)
    if not subs:
        raise UserError(f"{problem} has no versions yet")
    nvcc = cuda_tools.find("nvcc")
    mode = build.choose_mode(compile_only_flag or changed, runner.local_capability() is not None, nvcc)
    what = ("nvcc " + cuda_tools.version(nvcc).removeprefix("Cuda compilation tools, ")) if mode == "compile-only" else "load_inline in a child per version"
    console.print(f"build ({mode}, {what}), {len(subs)} version(s)")
    manifest_file = build.manifest_path()
    keys = build.manifest_keys(subs) if mode == "compile-only" else []
    to_build, skipped = subs, []
    if changed:
        manifest = build.read_manifest(manifest_file)  # NOTE: unreadable is an error (exit 2), never "all changed"
        build_idx, skip_idx = build.split_changed(subs, keys, manifest)
        to_build, skipped = [subs[i] for i in build_idx], [subs[i] for i in skip_idx]
        console.print(f"--changed: {len(skipped)} unchanged since {manifest_file} (skipped), {len(to_build)} to compile"
                      + (": " + ", ".join(f"{s.problem} {s.label}" for s in to_build) if 0 < len(to_build) <= 20 else ""),
                      soft_wrap=True)
        here = compile_only.toolchain(nvcc)
        # NOTE: another toolchain warns but recompiles nothing, or CI on a machine with another nvcc
        # would take ~35 minutes every run (harness/build.py's docstring says why).
        if skipped and manifest.checked_with and manifest.checked_with != here:
            differ = "; ".join(f"{k}: {manifest.checked_with.get(k, '-')!r} there, {v!r} here"
                               for k, v in here.items() if manifest.checked_with.get(k) != v)
            err_console.print(f"[yellow]note:[/] the manifest was checked with another toolchain ({escape(differ)}); "
                              "unchanged versions are skipped anyway: `nvfp4 build all all --compile-only` rechecks all",
                              soft_wrap=True)
    with render.BuildProgress("build", len(to_build)) as on_done:
        results = build.build(to_build, mode, nvcc=nvcc, jobs=jobs, timeout_s=timeout, on_done=on_done)
    several = len({s.problem for s in to_build}) > 1
    if mode == "full":
        render.print_full_builds(to_build, results, several)
    elif to_build:
        render.print_compile_only(to_build, results, several)
    failed = [(s, r) for s, r in zip(to_build, results) if not r.ok]
    for sub, r in failed:
        err_console.print(f"[bold red]{sub.problem} {sub.label} does not build[/] (log: {r.log or '-'})")
        err_console.print(r.message, markup=False, highlight=False)
    n_ok = len(results) - len(failed)
    console.print(f"{n_ok} built, {len(failed)} failed" + (f", {len(skipped)} skipped as unchanged" if changed else "")
                  + f"; build cache {build_cache.root()}")
    if mode == "compile-only" and not failed:
        # NOTE: only after a build with no failure, so the manifest never vouches for a version that
        # does not compile; every version of a problem built (VERSION 'all') also drops deleted ones.
        complete = set(PROBLEMS) if problem == "all" else ({problem} if version == "all" else set())
        everything = problem == "all" and not changed
        try:
            if build.record_compiled(manifest_file, subs, keys, complete=complete,
                                     toolchain=compile_only.toolchain(nvcc) if everything else None):
                console.print(f"compiled manifest updated: {manifest_file}")
        except build.ManifestError as exc:
            err_console.print(f"[yellow]note:[/] {escape(str(exc))}; not updated", soft_wrap=True)
    sys.exit(1 if failed else 0)


# ------------------------------------------------------------------------------ sanitize, profile
def _sanitize_shapes(problem: str, spec: str | None, custom: tuple, has_gpu: bool) -> list:
    """--shapes (comma-separated: tests:N, benchmarks:N, edges:N or a whole set) and --shape as elsewhere; by default
    the tests shape and the benchmark shape with the fewest FLOPs each.
    NOTE: both by default, not the tests shape alone: a version's smallest tests shape need not run every kernel its
    benchmarks launch (gemm's paired launch, v66-v84, is in none, and synccheck on the benchmark shape found v82-v84's
    paired epilogue undefined, session 64)."""
    from reference import problem_module

    if spec is not None and not spec.strip():
        raise UserError("--shapes '': give tests:N, benchmarks:N, edges:N or a set name, comma-separated")
    if spec or custom:
        return runner.select_shapes(problem, spec, custom, has_gpu)[0]  # NOTE: the comma list is runner's grammar
    flops = problem_module(problem).flops
    pc = config.load()[problem]
    smallest = [min(pc.tests, key=lambda s: flops(**s.generator_kwargs()))]
    if pc.benchmarks:
        bench = min(pc.benchmarks, key=lambda s: flops(**s.generator_kwargs()))
        if bench.key != smallest[0].key:
            smallest.append(bench)
    return smallest


@main.command("sanitize")
@click.argument("problem")
@click.argument("version")
@click.option("--tool", type=click.Choice(["memcheck", "racecheck", "synccheck", "initcheck"]), default="memcheck",
              show_default=True)
@click.option("--shapes", "shapes_spec", default=None,
              help="Shapes, comma-separated: tests:N, benchmarks:N, edges:N or a whole set (default: the tests shape and "
                   "the benchmark shape with the fewest FLOPs).")
@click.option("--shape", "custom", multiple=True, help="A custom shape: JSON or m=..,n=..,k=..,l=..")
@click.option("--dist", type=click.Choice(list(DISTS)), default="competition", show_default=True)
@click.option("--seeds", type=COUNT, default=1, show_default=True)
@click.option("--timeout", type=SECONDS, default=900.0, show_default=True, help="Seconds for the build and for the run.")
@clean_errors
def sanitize_cmd(problem, version, tool, shapes_spec, custom, dist, seeds, timeout):
    """Run a version under compute-sanitizer on its smallest tests and benchmark shapes (or those chosen); errors
    summarised, parsed strictly; exit 1 if any shape's report is not clean."""

    from harness import machine, sanitize

    sub = submissions.resolve(problem, version)
    shapes = _sanitize_shapes(problem, shapes_spec, custom, True)  # NOTE: a bad --shapes is refused before the GPU checks
    cap = runner.local_capability()
    if cap is None:
        raise UserError("sanitize needs an NVIDIA GPU; this machine has none (nvfp4 doctor)")
    why = machine.arch_refusal(sub.arch, cap)
    if why:
        raise UserError(f"{sub.label} {why}")
    sanitizer = sanitize.find()
    if not sanitizer:
        raise UserError("compute-sanitizer not found on PATH or in the CUDA toolkit (nvfp4 doctor)")
    failed = []
    for i, shape in enumerate(shapes, 1):
        with err_console.status(f"sanitize {problem} {sub.label} ({tool}) on {shape.label} ({i} of {len(shapes)}): "
                                "building, then running under compute-sanitizer (slow)..."):
            report, log = sanitize.run(sub, sanitizer, shape.params, dist, tool, seeds=seeds, timeout_s=timeout)
        render.print_sanitize(problem, sub, tool, shape, dist, report, log)
        if not report.ok:
            failed.append(shape.label)
    if len(shapes) > 1:
        console.print(f"{tool}: {len(shapes) - len(failed)} of {len(shapes)} shapes clean"
                      + (f"; not clean: {', '.join(failed)}" if failed else ""))
    sys.exit(1 if failed else 0)


@main.command("profile")
@click.argument("problem")
@click.argument("version")
@click.argument("other", required=False)
@click.option("--shape", "index", default=None,
              help="Shape index (benchmarks on a GPU, tests without), or tests:N / benchmarks:N, or a custom m=..,k=.. shape.")
@click.option("--dist", type=click.Choice(list(DISTS)), default="competition", show_default=True)
@click.option("--ncu", "use_ncu", is_flag=True, help="Nsight Compute on the custom_kernel NVTX range instead of torch.profiler.")
@click.option("--calls", type=COUNT, default=None, help="Profiled calls (default 10; 1 with --ncu).")
@click.option("--top", type=COUNT, default=15, show_default=True, help="Rows of the kernel table.")
@click.option("--sass", type=COUNT, default=None,
              help="With --ncu: also sample the warps' program counters and give, per kernel, the stall reasons by "
                   "sample, each wgmma loop's samples and the N SASS instructions most sampled.")
@click.option("--timeout", type=SECONDS, default=900.0, show_default=True)
@clean_errors
def profile_cmd(problem, version, other, index, dist, use_ncu, calls, top, sass, timeout):
    """Where a version's time goes on one shape: torch.profiler kernels, or --ncu's summary.

    With OTHER and --ncu --sass, a second version profiled the same way, then the two side by side by wgmma loop
    (matched by HGMMA shape): each loop's time in a call, its kernel's time split by its warp samples."""

    from harness import cuda_tools, machine, profile
    from reference import problem_module

    if use_ncu:
        refuse(("top",), "with --ncu: it prints Nsight Compute's summary of the custom_kernel range, not "
                         "torch.profiler's kernel table")
    else:
        refuse(("sass",), "without --ncu: the instructions' samples are Nsight Compute's")
    if other is not None and sass is None:
        raise UserError("OTHER needs --ncu --sass: two versions are compared by their loops' samples")
    sub = submissions.resolve(problem, version)
    sub_other = submissions.resolve(problem, other) if other is not None else None
    if sub_other is not None and sub_other.path == sub.path:
        raise UserError(f"{version} and {other} are the same file: name two versions")
    cap = runner.local_capability()
    for each in (sub, sub_other):
        why = machine.arch_refusal(each.arch, cap) if each is not None else None
        if why:
            raise UserError(f"{each.label} {why}")
    if index is None:
        shapes, _ = runner.select_shapes(problem, "0", (), cap is not None)
    elif "=" in index or index.lstrip().startswith("{"):
        shapes, _ = runner.select_shapes(problem, None, (index,), cap is not None)
    else:
        shapes, _ = runner.select_shapes(problem, index, (), cap is not None)
    shape = shapes[0]
    if use_ncu:
        if cap is None:
            raise UserError("--ncu needs an NVIDIA GPU; this machine has none")
        ncu = cuda_tools.find("ncu")
        if not ncu:
            raise UserError("--ncu: ncu (Nsight Compute) not found on PATH or in the CUDA toolkit (nvfp4 doctor)")
        flops = problem_module(problem).flops(**shape.params)
        with err_console.status(f"profile {problem} {sub.label} on {shape.label} under ncu (replays every kernel)..."):
            res = profile.ncu_profile(sub, ncu, shape.params, dist, flops, calls=calls or 1, sass=sass is not None,
                                      timeout_s=timeout)
        render.print_ncu(problem, sub, shape, res, sass or 0)
        if sub_other is not None:
            with err_console.status(f"profile {problem} {sub_other.label} on {shape.label} under ncu..."):
                res_other = profile.ncu_profile(sub_other, ncu, shape.params, dist, flops, calls=calls or 1, sass=True,
                                                timeout_s=timeout)
            render.print_ncu(problem, sub_other, shape, res_other, sass)
            render.print_loop_comparison(sub, sub_other, res, res_other, calls or 1)
        return
    with err_console.status(f"profile {problem} {sub.label} on {shape.label}..."):
        res = profile.torch_profile(sub, shape.params, dist, calls=calls or 10, timeout_s=timeout)
    render.print_torch_profile(problem, sub, shape, dist, res, top)


# ------------------------------------------------------------------------- diff, ceilings, doctor
@main.command("diff")
@click.argument("problem")
@click.argument("version_a")
@click.argument("version_b", required=False)
@click.option("--docstring", "show_docstring", is_flag=True, help="Show the docstring's diff too.")
@click.option("-U", "--context", type=Number(int, min=0), default=3, show_default=True)
@clean_errors
def diff_cmd(problem, version_a, version_b, show_docstring, context):
    """The change from VA to VB (with only VA: from its Parent to it): headers, code, CUDA source."""
    from harness import diff

    if version_b is None:
        b = submissions.resolve(problem, version_a)
        if b.parent is None:
            said = (b.header.get("parent") or "").strip()
            raise UserError(f"{b.label}'s docstring names no parent version"
                            + (f" (Parent: {said})" if said else "") + "; name both versions")
        a = submissions.resolve(problem, b.parent)
    else:
        a, b = submissions.resolve(problem, version_a), submissions.resolve(problem, version_b)
    render.print_diff(problem, a, b, diff.diff(a, b, context), show_docstring)


@main.command("ceilings")
@click.option("--measure", "repeats", type=Number(int, min=0), default=0, show_default=True,
              help="measure this GPU's ceilings this many times now (about 4 s each) beside the figures runs use")
@clean_errors
def ceilings_cmd(repeats):
    """The bf16 and copy ceilings this GPU's floors are computed from, and where they come from."""
    import torch

    if not torch.cuda.is_available():
        raise UserError("no GPU here: ceilings belong to a GPU model (the reference table is in harness/ceilings.py)")
    gpu = torch.cuda.get_device_name()
    used = ceilings.of_gpu(torch, gpu, allow_measure=False)
    render.print_ceilings(gpu, used, [ceilings.measure(torch) for _ in range(repeats)])


@main.command("doctor")
@clean_errors
def doctor_cmd():
    """What this machine can do: GPU and arch, driver, CUDA, torch, nvcc, ncu, compute-sanitizer, build cache."""
    from harness import doctor

    render.print_doctor(*doctor.checks())
