"""``nvfp4 probe ...``: the commands of harness/probes/ (the measurements themselves live there).

Every command here measures where time goes; none decides which version's device time is faster
(``compare`` does; ``probe host A B`` sets two host paths side by side, which ``compare`` cannot see
by the kernel method) and none records anything. They run the team's own versions in this process, see
:mod:`harness.probes.common`. The cuBLAS peer is not a command: it is the version label ``peer``
(``nvfp4 compare gemm peer v34``, ``nvfp4 run gemm peer``; :mod:`harness.probes.peer`).
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import click

from harness import config, runner, submissions
from harness.cli import COUNT, clean_errors, main, refuse
from harness.errors import UserError
from harness.probes import marks as marks_mod, variants
from harness.probes.variants import Variant


def _progress(text: str) -> None:
    click.echo(f"... {text}", err=True)


def _has_gpu() -> bool:
    import torch
    return torch.cuda.is_available()


def _require_gpu(what: str) -> None:
    if not _has_gpu():
        raise UserError(f"{what} needs a CUDA GPU (torch.cuda.is_available() is False here)")


def _shapes(problem: str, spec: str | None, custom: tuple[str, ...], first_only: bool) -> list[config.Shape]:
    """``--shapes`` / ``--shape`` as ``run`` reads them; by default the benchmarks on a GPU and the
    tests shapes without one, or only the first of them where ``first_only``."""
    if spec is None and not custom and first_only:
        spec = "benchmarks:0" if _has_gpu() else "tests:0"
    shapes, note = runner.select_shapes(problem, spec, custom, _has_gpu())
    if note:
        click.echo(f"note: {note}", err=True)
    return shapes


def _emit(result: dict, lines: list[str], as_json: bool) -> None:
    click.echo(json.dumps(result, indent=1, default=str) if as_json else "\n".join(lines))


def _shape_options(fn):
    fn = click.option("--shape", "custom", multiple=True,
                      help="A custom shape: JSON or m=..,n=..,k=..,l=.. (repeatable; with --shapes, added to that set).")(fn)
    fn = click.option("--shapes", "shapes_spec", default=None,
                      help="benchmarks, tests, edges, an index or SET:N, as for `run`.")(fn)
    return fn


@main.group("probe")
def probe():
    """Where the time goes: host path, timeline marks, ablations, SASS loops.

    The cuBLAS peer (on operands already dequantised, writing the output itself) is the version
    label `peer` (`peer-fp32`: the earlier fp32-output one): `nvfp4 compare gemm peer v34`."""


@probe.command("host")
@click.argument("problem")
@click.argument("version")
@click.argument("other", required=False)
@_shape_options
@click.option("--calls", type=COUNT, default=100, show_default=True, help="Calls per figure (per version with OTHER).")
@click.option("--pool", type=COUNT, default=None,
              help="Distinct inputs, called in turn [default: the problem's GPU MODE batch: 50 for gemm and dual_gemm, "
                   "15 for group_gemm, 1 for gemv].")
@click.option("--rounds", type=COUNT, default=None,
              help="With OTHER: rounds per version, taken in turn (default 10); the calls are split over them.")
@click.option("--json", "as_json", is_flag=True, help="The figures as JSON.")
@clean_errors
def host_cmd(problem, version, other, shapes_spec, custom, calls, pool, rounds, as_json):
    """What a call costs on the host against what it costs on the device.

    Host path (CPU time of a call from an idle device, and of one queued right after the one before as
    in GPU MODE's loop, over GPU MODE's rotation of input sets), device time (the kernel method), the cold
    call (events around it), an event pair's floor, what the host leaves exposed, and the host path
    split over the CPU ops torch.profiler sees, and this host's pace (one torch launch queued: a machine's
    host can run in two modes from run to run). Default shape: benchmark 0 (tests 0 without a GPU);
    without a GPU only the host figures.

    With OTHER, a second version: the two host paths side by side, timed in turn in this process
    (one host's pace is not another's, so two runs' host paths are no ratio), and OTHER's speedup over
    VERSION with its 95% interval."""
    from harness.probes import host
    if rounds is not None and other is None:
        raise UserError("--rounds splits the calls of two versions taken in turn: name a second version")
    if other is not None:
        pair = (submissions.resolve(problem, version), submissions.resolve(problem, other))
        if pair[0].path == pair[1].path:
            raise UserError(f"{version} and {other} are the same file: name two versions")
        rounds = rounds or host.ROUNDS
        if rounds < 2 or calls < 2 * rounds:
            raise UserError(f"--rounds {rounds} with --calls {calls}: the interval needs at least 2 rounds of at least "
                            "2 calls each (raise --calls or lower --rounds)")
        results = host.compare(pair, _shapes(problem, shapes_spec, custom, True), calls=calls, pool=pool, rounds=rounds)
        _emit({"shapes": results}, [line for r in results for line in host.format_comparison(r)], as_json)
        return
    sub = submissions.resolve(problem, version)
    results = host.measure(sub, _shapes(problem, shapes_spec, custom, True), calls=calls, pool=pool)
    _emit({"shapes": results}, [line for r in results for line in host.format_report(r)], as_json)


@probe.command("marks")
@click.argument("problem", required=False)
@click.argument("version", required=False)
@click.argument("other", required=False)
@click.option("--header", is_flag=True, help="Print the marks header to paste into a version's CUDA_SRC, and exit.")
@_shape_options
@click.option("--calls", type=COUNT, default=20, show_default=True, help="Calls per shape (per version with OTHER).")
@click.option("--ctas", default=None, metavar="A-B,...", help="Also summarise each range of CTAs (linear block index).")
@click.option("--fill", default=None, metavar="START:END",
              help="Also the launch's fill: each CTA's work from mark START to mark END, the last END against the "
                   "same work spread evenly over the GPU's SMs (one CTA an SM at a time).")
@click.option("--json", "as_json", is_flag=True, help="The summaries as JSON.")
@clean_errors
def marks_cmd(problem, version, other, header, shapes_spec, custom, calls, ctas, fill, as_json):
    """Where the time goes inside a kernel: per-CTA stamps at the version's NVFP4_MARK(id) points.

    The version carries the marks header (--header prints it) and calls NVFP4_MARK(id) from one
    thread at the points to time; MARK_NAMES = [...] in the file names them. Built as usual the
    marks compile to nothing; this command builds a copy with -DNVFP4_MARKS and reports per mark
    when CTAs reach it (µs after the call's first stamp) and per phase how long it takes (µs and
    cycles). Needs a GPU.

    With OTHER, a second version (a parent and its child): both timelines in this process, their calls
    in turn on the same inputs, each mark and phase side by side by name with OTHER's difference (two
    processes on one GPU share it for part of their runs; two machines' clocks differ); --ctas ranges
    are the same block indices in both launches. Their plain builds (what compare times) are timed in
    turn beside them, and a warning says when the marks builds' B / A is not the plain builds'."""
    if header:
        refuse(("problem", "version", "other", "shapes_spec", "custom", "calls", "ctas", "fill", "as_json"),
               "with --header: it prints the marks header and exits")
        click.echo(marks_mod.MARKS_CUDA.strip("\n"))
        return
    if not problem or not version:
        raise click.UsageError("give PROBLEM and VERSION (or --header)")
    ranges = marks_mod.parse_cta_ranges(ctas) if ctas else []
    fill_marks = marks_mod.parse_fill(fill) if fill is not None else None
    if other is not None:
        pair = (submissions.resolve(problem, version), submissions.resolve(problem, other))
        if pair[0].path == pair[1].path:
            raise UserError(f"{version} and {other} are the same file: name two versions")
        for s in pair:
            _check_fill_early(fill_marks, s)
        _require_gpu("nvfp4 probe marks")
        result = marks_mod.compare(pair, _shapes(problem, shapes_spec, custom, False), calls=calls, cta_ranges=ranges,
                                   fill=fill_marks, on_progress=_progress)
        _emit(result, marks_mod.format_comparison(result), as_json)
        return
    sub = submissions.resolve(problem, version)
    _check_fill_early(fill_marks, sub)
    _require_gpu("nvfp4 probe marks")
    result = marks_mod.measure(sub, _shapes(problem, shapes_spec, custom, False), calls=calls, cta_ranges=ranges,
                               fill=fill_marks, on_progress=_progress)
    _emit(result, marks_mod.format_report(result), as_json)


def _check_fill_early(fill: tuple[str, str] | None, sub: submissions.Submission) -> None:
    """--fill's marks against the file's MARK_NAMES, read without building (a typo costs no build); measure and
    compare check again against the built copy's."""
    declared = variants.module_constant(sub.path, "MARK_NAMES") if fill else None
    if isinstance(declared, (list, tuple)):
        marks_mod.check_fill_names(fill, declared, sub.label)


def _chosen_variants(sub: submissions.Submission, given: tuple[str, ...]) -> list[Variant]:
    """``--variant`` values (NAME=DEFINE,... or the name of one of the version's ABLATIONS); all of
    its ABLATIONS when none is given."""
    declared = {v.name: v for v in variants.declared_ablations(sub)}
    if not given:
        if not declared:
            raise UserError(f"{sub.problem} {sub.label} declares no ABLATIONS: give --variant NAME=DEFINE[,DEFINE...] "
                            "naming the #if switches of its stand-ins")
        return list(declared.values())
    chosen = []
    for text in given:
        if "=" in text:
            chosen.append(variants.parse_variant(text))
        elif text in declared:
            chosen.append(declared[text])
        else:
            known = ", ".join(declared) or "none"
            raise UserError(f"--variant {text!r}: not one of {sub.label}'s ABLATIONS ({known}); "
                            "or give NAME=DEFINE[,DEFINE...]")
    names = [v.name for v in chosen]
    if len(set(names)) != len(names):
        twice = sorted(n for n in set(names) if names.count(n) > 1)
        raise UserError(f"--variant: a name given twice ({', '.join(twice)})")
    return chosen


@probe.command("ablate")
@click.argument("problem")
@click.argument("version")
@click.option("--variant", "given", multiple=True, metavar="NAME[=DEFINE,...]",
              help="A variant: one of the version's ABLATIONS by name, or NAME=DEFINE[,DEFINE...] (repeatable; "
                   "default: all of its ABLATIONS).")
@click.option("--list", "list_only", is_flag=True, help="List the variants and their defines, and exit.")
@_shape_options
@click.option("--rounds", type=COUNT, default=4, show_default=True,
              help="Rounds; in each, every variant times one block of the pool.")
@click.option("--pool", type=COUNT, default=8, show_default=True, help="Distinct inputs per block.")
@click.option("--jobs", type=COUNT, default=None, help="Builds at once (default: one per CPU).")
@click.option("--json", "as_json", is_flag=True, help="The rows (with --list: the variants) as JSON.")
@clean_errors
def ablate_cmd(problem, version, given, list_only, shapes_spec, custom, rounds, pool, jobs, as_json):
    """Time a version with stages left out, by its kernels alone, against itself.

    Each variant is the version built with preprocessor defines that switch its own stand-ins on
    (#if NVFP4_ABLATE_... blocks in its CUDA source; ABLATIONS = {"name": ["DEFINE", ...]} in the
    file lists them). The text of the version is never edited. Variants are interleaved round by
    round; each is timed by the kernel method; `full` (the version as it is) must match the
    reference. Needs a GPU (--list does not)."""
    if list_only:
        refuse(("shapes_spec", "custom", "rounds", "pool", "jobs"), "with --list: it lists the variants and exits")
    sub = submissions.resolve(problem, version)
    chosen = _chosen_variants(sub, given)
    if list_only:
        _emit({"variants": [{"name": v.name, "defines": list(v.defines)} for v in chosen]},
              [f"{v.name:<20} {' '.join('-D' + d for d in v.defines)}" for v in chosen], as_json)
        return
    from harness.probes import ablate
    _require_gpu("nvfp4 probe ablate (a stand-in's time is its kernels' time; --list needs none)")
    result = ablate.measure(sub, _shapes(problem, shapes_spec, custom, False), chosen, rounds=rounds, pool=pool,
                            jobs=jobs, on_progress=_progress)
    _emit(result, ablate.format_report(result), as_json)


def _docstring_arch(path: Path) -> str:
    """The Arch line of a file's docstring (``any`` without one)."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    return submissions.parse_header(ast.get_docstring(tree)).get("arch", "any")


@probe.command("sass")
@click.argument("problem", required=False)
@click.argument("versions", required=False)
@click.option("--file", "files", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="A submission-like .py file (repeatable).")
@click.option("--opcodes", type=click.IntRange(min=1), default=None, metavar="N",
              help="Also each loop's N most frequent opcodes, counted in one pass of its body.")
@clean_errors
def sass_cmd(problem, versions, files, opcodes):
    """The wgmma loops of versions' SASS: size, instructions, uniform ones, fences and spills; each kernel's size.

    VERSIONS is comma-separated (gemm v19,v23). Compiles CUDA_SRC with the version's own flags and
    reads nvdisasm's listing; no GPU needed. Exits 1 when a fence (MEMBAR) or a local-memory access
    (LDL/STL) sits inside a wgmma loop."""
    from harness import cuda_tools
    from harness.probes import sass
    if bool(problem) != bool(versions) or not (problem or files):
        raise click.UsageError("give PROBLEM VERSIONS (e.g. gemm v19,v23) and/or --file PATH")
    nvcc, nvdisasm = cuda_tools.find("nvcc"), sass.find_nvdisasm()
    if not nvcc:
        raise UserError("nvcc not found (PATH, CUDA_HOME, /usr/local/cuda)")
    if not nvdisasm:
        raise UserError(f"nvdisasm not found (PATH, $NVDISASM, beside nvcc, the pip wheel): {sass.NVDISASM_HINT}")
    sources = [(f, Path(f), _docstring_arch(Path(f))) for f in files]
    if problem:
        for v in versions.split(","):
            sub = submissions.resolve(problem, v)
            sources.append((f"{problem}/{sub.label}", sub.path, sub.arch))
    flagged = False
    for title, path, arch in sources:
        listing = sass.disassemble(path, arch, nvcc, nvdisasm)
        loops = sass.loops_of(listing)
        click.echo("\n".join(sass.format_loops(title, loops, opcodes or 0, sass.kernel_sizes(listing))))
        flagged = flagged or any(loop.flagged for found in loops.values() for loop in found)
    sys.exit(1 if flagged else 0)
