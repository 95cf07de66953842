"""The measuring commands: list, test, run, compare, table.

Each turns its options into shapes, a TimingPlan and submissions, runs them through
:func:`harness.runner.run`, and prints the outcome (:mod:`harness.cli.render`) or writes it in a
machine format (:mod:`harness.report`); ``--record`` appends the rows of
:func:`harness.leaderboard.outcome_rows`. Every verdict (status, plausibility, FASTER/SLOWER) is
the runner's; only compare's regression gate, a policy on those verdicts, is decided here.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time

import click

from harness import config, isolation, leaderboard, lineage, paths, report, runner, stats, submissions
from harness.cli import (COUNT, Number, clean_errors, common_options, emit, gpu_indices, gpus_option, main, output_format,
                         output_options, refuse, refuse_batched_pool, given, run_processes_option, timing_options,
                         say_unreadable, timing_plan, writable_file)
from harness.cli import render
from harness.cli.render import console, err_console
from harness.errors import UserError
from reference import PROBLEMS
from reference.distributions import DISTS


def _dists(dist: str) -> list[str]:
    """``both``: the two exact-sum distributions (competition, general); ``all``: every distribution
    (with ``realistic``, judged against the float64 reference the same way)."""
    if dist == "all":
        return list(DISTS)
    if dist == "both":
        return ["competition", "general"]
    return [dist]


def allow_cpu_option(fn):
    return click.option("--allow-cpu", is_flag=True,
                        help="With --record on a machine without a GPU: record the CPU times anyway (gpu=cpu rows, "
                             "comparable with no GPU's).")(fn)


def check_record_here(record: bool, allow_cpu: bool, capability) -> None:
    """--record on a CPU is refused before anything runs: a gpu=cpu row in leaderboard.csv sat beside
    the GPUs' in every recorded table; --allow-cpu records it on purpose."""
    if allow_cpu and not record:
        refuse(("allow_cpu",), "without --record")
    if record and capability is None and not allow_cpu:
        raise UserError("--record: no GPU here, and CPU times compare with no GPU's: add --allow-cpu to record "
                        "them anyway")


def _record(outcome, failures: list[str]) -> int:
    """Appends the outcome's rows (and sidecars); returns how many. A failure (the file was checked
    before measuring, so a full disk, a lock) is the harness's: added to ``failures``, for the
    command to say after its report, which still prints (``_exit``); 0 rows then."""
    rows, sidecars = leaderboard.outcome_rows(outcome)
    try:
        leaderboard.append(rows, sidecars=sidecars)
    except (OSError, ValueError, UserError) as exc:
        failures.append(f"recording {outcome.submissions[0].label} failed: {exc}")
        return 0
    return len(rows)


def _recorded_line(count: int) -> str:
    path = paths.leaderboard_path()
    return f"recorded {count} rows in {path} (raw samples in {leaderboard.sidecar_dir(path)}/)"


def _exit(ok: bool, record_failures: list[str]) -> None:
    """The measuring commands' exit: 0 when everything passed and was recorded; 1 otherwise, a
    recording failure said as a harness error (never the kernel's)."""
    for why in record_failures:
        err_console.print(f"[red]harness error:[/red] {render.fmt_text(why)}", soft_wrap=True)
    sys.exit(0 if ok and not record_failures else 1)


def _refused(outcome) -> None:
    """A run that did not start (the arch): said on stderr, exit 1."""
    if outcome.refused:
        err_console.print(f"[red]refused:[/red] {outcome.refused}")
        sys.exit(1)


# ------------------------------------------------------------------------------------------ list
@main.command("list")
@click.argument("problem", required=False)
@click.option("--all", "include_attic", is_flag=True,
              help="Also the attic's versions (✗: slower than their parent, kept for the lesson).")
@output_options
@clean_errors
def list_cmd(problem, include_attic, fmt, output_path):
    """Problems, their versions (change, arch, analogue; ✗ / ≈ from the Verdict line) and shapes."""
    fmt = output_format(fmt, output_path)
    cfg = config.load()
    names = [problem] if problem else list(PROBLEMS)
    for name in names:
        submissions.check_problem(name)
    lineages = {name: submissions.versions(name, include_attic=True) for name in names}
    listed = {name: [s for s in subs if include_attic or not s.in_attic] for name, subs in lineages.items()}
    if fmt != "table":
        rows = [{"problem": name, "version": sub.label, "arch": sub.arch, "analogue": sub.analogue or "",
                 "parent": sub.parent or "", "change": sub.change, "verdict": sub.verdict or "",
                 "attic": sub.in_attic, "file": str(sub.path)}
                for name in names for sub in listed[name]]
        emit(report.document("list", problem, rows), fmt, output_path)
        if not output_path:
            return
    for name in names:
        render.print_list(name, cfg[name], listed[name], len(lineages[name]) - len(listed[name]))
    say_unreadable(names, include_attic)


# ------------------------------------------------------------------------------------------ test
@main.command("test")
@click.argument("problem")
@click.argument("version")
@click.option("--dist", type=click.Choice([*DISTS, "both", "all"]), default="both", show_default=True,
              help="A distribution, both (competition and general) or all of them.")
@click.option("--seeds", type=COUNT, default=3, show_default=True, help="Seeds per shape.")
@click.option("--shapes", "shapes_spec", default="tests", show_default=True,
              help="tests, benchmarks, edges (the issues' 'any shape' contracts), or SET:N.")
@click.option("--shape", "custom", multiple=True, help="A custom shape: JSON or m=..,n=..,k=..,l=.. (repeatable; with --shapes, added to that set).")
@click.option("--bad-inputs", is_flag=True,
              help="Instead: the problem's bad inputs (reference/bad_inputs.py) on each shape (default: the first "
                   "tests shape), one at a time; each must be refused with one line or handled right, never end the "
                   "process, and a good call after it must still be right.")
@output_options
@gpus_option
@common_options
@clean_errors
def test_cmd(problem, version, dist, seeds, shapes_spec, custom, bad_inputs, fmt, output_path, gpus_spec, timeout,
             compile_timeout, untrusted):
    """Correctness on the tests shapes: poisoned outputs, input mutation check, several seeds."""
    if bad_inputs:
        refuse(("dist", "seeds", "fmt", "output_path", "gpus_spec"),
               "with --bad-inputs: it runs one competition input set per case, on this process's GPU, and prints its table")
        _bad_inputs(problem, version, shapes_spec, custom, timeout, compile_timeout, untrusted)
        return
    fmt = output_format(fmt, output_path)
    machine_only = fmt != "table" and not output_path
    sub = submissions.resolve(problem, version)
    cap = runner.local_capability()
    shapes, _ = runner.select_shapes(problem, _test_set(shapes_spec, custom), custom, cap is not None)
    with render.Progress(f"test {problem} {sub.label}", quiet=machine_only) as prog:
        outcome = runner.run([sub], shapes, _dists(dist), "test", seeds=seeds, timeout_s=timeout,
                             compile_timeout_s=compile_timeout, capability=cap, progress=prog,
                             gpus=gpu_indices(gpus_spec), untrusted_all=untrusted)
    _refused(outcome)
    emit(report.document("test", problem, report.result_rows(outcome), device=outcome.device, seeds=seeds),
         fmt, output_path)
    if not machine_only:
        render.print_test(problem, sub, seeds, outcome)
    sys.exit(0 if outcome.ok else 1)


def _test_set(shapes_spec: str, custom: tuple[str, ...]) -> str | None:
    """`test`'s --shapes: its default (tests) only where no --shape is given; given, the set the
    custom shapes are added to."""
    return shapes_spec if given("shapes_spec") or not custom else None


def _bad_inputs(problem, version, shapes_spec, custom, timeout, compile_timeout, untrusted) -> None:
    sub = submissions.resolve(problem, version)
    cap = runner.local_capability()
    explicit = bool(given("shapes_spec")) or bool(custom)
    shapes, _ = runner.select_shapes(problem, _test_set(shapes_spec, custom), custom, cap is not None)
    if not explicit:
        shapes = shapes[:1]  # NOTE: the cases are about the call's contract, not its size: one small shape
    ok = True
    for shape in shapes:
        with render.Progress(f"test {problem} {sub.label} --bad-inputs") as prog:
            results, outcome = runner.bad_inputs(sub, shape, "competition", timeout_s=timeout,
                                                 compile_timeout_s=compile_timeout, capability=cap, progress=prog,
                                                 untrusted_all=untrusted)
        _refused(outcome)
        render.print_bad_inputs(problem, sub, shape, results, outcome)
        ok = ok and bool(results) and all(r.ok for r in results)
    sys.exit(0 if ok else 1)


# ------------------------------------------------------------------------------------------- run
@main.command("run")
@click.argument("problem")
@click.argument("version")
@click.option("--shapes", "shapes_spec", default=None, help="benchmarks (default on a GPU), tests (default without), or an index.")
@click.option("--shape", "custom", multiple=True, help="A custom shape: JSON or m=..,n=..,k=..,l=.. (repeatable; with --shapes, added to that set).")
@click.option("--dist", type=click.Choice(list(DISTS)), default="competition", show_default=True)
@click.option("--record", is_flag=True, help="Append the results to leaderboard.csv.")
@allow_cpu_option
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@output_options
@timing_options()
@run_processes_option
@gpus_option
@common_options
@clean_errors
def run_cmd(problem, version, shapes_spec, custom, dist, record, allow_cpu, as_json, fmt, output_path, budget, min_samples, min_time,
            target, pool, method, flush_kind, graph, queued, warm, run_processes, gpus_spec, timeout, compile_timeout,
            untrusted):
    """Correctness first, then timing: mean, median, IQR, 95% CI, best, % of the floor; geomean."""
    if as_json and fmt not in (None, "json"):
        raise UserError(f"--json and --format {fmt} do not combine: --json is --format json")
    fmt = output_format("json" if as_json else fmt, output_path)
    machine_only = fmt != "table" and not output_path
    plan = timing_plan(budget, min_samples, min_time, target, pool, graph, warm, queued=queued, method=method,
                       flush_kind=flush_kind)
    plan.run_processes = run_processes
    refuse_batched_pool([plan], [problem])
    if record:
        leaderboard.check_writable()  # NOTE: before minutes of measuring, not after them
    sub = submissions.resolve(problem, version)
    cap = runner.local_capability()
    check_record_here(record, allow_cpu, cap)
    shapes, note = runner.select_shapes(problem, shapes_spec, custom, cap is not None)
    if note and not machine_only:
        err_console.print(f"[yellow]note:[/yellow] {note}")
    with render.Progress(f"run {problem} {sub.label}", quiet=machine_only) as prog:
        outcome = runner.run([sub], shapes, [dist], "run", plan=plan, timeout_s=timeout,
                             compile_timeout_s=compile_timeout, capability=cap, progress=prog,
                             gpus=gpu_indices(gpus_spec), untrusted_all=untrusted)
    _refused(outcome)
    failures: list[str] = []
    recorded = _record(outcome, failures) if record else 0  # NOTE: first: a report that fails loses no record
    if not machine_only:
        render.print_run(problem, sub, outcome)
    emit(_run_document("run", problem, outcome), fmt, output_path)
    if recorded and not machine_only:
        console.print(_recorded_line(recorded))
    _exit(outcome.ok, failures)


def _run_document(command: str, problem: str, outcome: runner.JobOutcome) -> dict:
    """run's document: the common schema, plus the full outcome (stats, ratio, geomean) as before."""
    full = _json_outcome(outcome)
    doc = report.document(command, problem, report.result_rows(outcome), device=full.pop("device"), plan=outcome.plan,
                          **full)
    doc["device"] = outcome.device
    return doc


def _json_outcome(outcome: runner.JobOutcome) -> dict:
    return {"device": outcome.device, "versions": [s.label for s in outcome.submissions],
            "results": [{"shape": r.shape.params, "label": r.shape.label, "dist": r.dist, "status": r.status,
                         "message": r.message, "stats": r.stats, "floor_us": r.floor_us,
                         "physical_floor_us": r.physical_floor_us, "ratio": r.ratio,
                         "gpu_index": r.extra.get("gpu_index"),
                         "gpu_uuid": ((r.device or {}).get("telemetry") or {}).get("uuid")}
                        for r in outcome.results],
            # NOTE: described for the problem, as the sidecars are: its gpumode batch and the pool that
            # follows from it (the plan's own --pool, 8, is not what gemm's gpumode timed)
            "geomean": outcome.geomean,
            "timing": outcome.plan.describe(outcome.submissions[0].problem) if outcome.plan else None}


# --------------------------------------------------------------------------------------- compare
@main.command("compare")
@click.argument("problem")
@click.argument("version_a")
@click.argument("version_b")
@click.option("--shapes", "shapes_spec", default=None)
@click.option("--shape", "custom", multiple=True)
@click.option("--dist", type=click.Choice(list(DISTS)), default="competition", show_default=True)
@click.option("--margin", type=Number(float, min=0, min_open=True, max=0.5, what="a fraction: 0.02 = ±2%"), default=runner.TimingPlan.margin, show_default=True,
              help="SAME when the whole 95% interval of the ratio is within this fraction of 1.")
@click.option("--processes", type=COUNT, default=runner.TimingPlan.processes, show_default=True,
              help="Generations of fresh process pairs per shape at least, prepared in alternating order (the budget is split over them).")
@click.option("--max-processes", type=COUNT, default=runner.TimingPlan.max_processes, show_default=True,
              help="--isolated: while a shape's verdict is AMBIGUOUS, two more generations at a time, up to this many.")
@click.option("--isolated", is_flag=True,
              help="Each version in processes of its own, generations of fresh process pairs: the spread between "
                   "processes enters the interval. (A file outside submissions/ gets a sandboxed process of its own, "
                   "prepared once: paired blocks, as two lab versions in one process.)")
@click.option("--precision", type=Number(float, min=0, min_open=True, max=1, what="a fraction of the speedup"), default=runner.TimingPlan.precision,
              show_default=True, help="One process: stop once the verdict is decided and the interval is within "
                                      "this fraction of the speedup.")
@click.option("--fail-on", "fail_on", type=click.Choice(["slower", "ambiguous"]), default=None,
              help="Exit 3 when a shape or the geomean is SLOWER (ambiguous: also when AMBIGUOUS): a regression gate.")
@click.option("--max-regression", type=Number(float, min=0, max=1, what="a fraction: 0.02 = 2%"), default=None,
              help="Exit 3 when B is slower than A by more than this fraction with 95% confidence (the interval's "
                   "upper end below 1 - this) on a shape or the geomean, e.g. 0.02.")
@click.option("--recorded", is_flag=True,
              help="Measure nothing: compare the two versions' latest recorded runs (leaderboard.csv and their "
                   "sidecars' samples) of this --method and --flush on one GPU.")
@output_options
@timing_options(method="kernel", budget=10.0, compare=True)
@common_options
@clean_errors
def compare_cmd(problem, version_a, version_b, shapes_spec, custom, dist, margin, processes, max_processes, isolated,
                precision, fail_on, max_regression, recorded, fmt, output_path, budget, min_time, pool, method,
                flush_kind, graph, queued, timeout, compile_timeout, untrusted):
    """A and B taking turns block by block (A B B A ...) on identical, never-seen inputs; verdicts
    FASTER / SLOWER / SAME / AMBIGUOUS from the speedup's 95% interval. Your own versions share one
    process (paired blocks); a file from outside submissions/ (or --untrusted) runs in a sandboxed
    process of its own, prepared once per shape (paired blocks between the two processes);
    --isolated gives each version fresh processes (generations of process pairs, more while
    AMBIGUOUS). Per shape also whether B's outputs were A's bit for bit on the checked inputs
    (never said of the cuBLAS peer)."""
    if recorded:
        refuse(COMPARE_MEASURING, "with --recorded: it measures nothing, it compares recorded runs")
    plan = timing_plan(budget, None, min_time, None, pool, graph, False, margin, queued=queued, method=method,
                       flush_kind=flush_kind, default_method="kernel")
    plan.processes, plan.max_processes = processes, max(processes, max_processes)
    plan.precision = precision
    refuse_batched_pool([plan], [problem])
    fmt = output_format(fmt, output_path)
    machine_only = fmt != "table" and not output_path
    if recorded:
        sys.exit(_compare_recorded(problem, version_a, version_b, plan, dist, fail_on, max_regression, fmt, output_path))
    sub_a = submissions.resolve(problem, version_a)
    sub_b = submissions.resolve(problem, version_b)
    outside = [s.label for s in (sub_a, sub_b) if not submissions.in_lab(s)]
    plan.isolated = isolated
    if isolated:
        refuse(("precision", "min_time"), "with --isolated: its processes stop by process generations")
        if given("max_processes") and max_processes < processes:
            # NOTE: the plan takes the larger of the two, so a lower --max-processes did nothing
            raise UserError(f"--max-processes {max_processes} is below --processes {processes}: no generation past "
                            "--processes would be added; raise it, or leave it out")
    else:
        refuse(("processes", "max_processes"), "without --isolated: they count its process generations")
    if outside:
        err_console.print(f"[yellow]note:[/yellow] {', '.join(outside)} is not a version of this lab: each side runs "
                          "in a process of its own (the outside file sandboxed)")
    cap = runner.local_capability()
    if cap is None:
        err_console.print("[yellow]note:[/yellow] no GPU here: CPU times of the Python path, not comparable "
                          "with anything: no verdict")
    # NOTE: both built at once first (each import would otherwise build in turn); a failed build is
    # said here and again as the runner's verdict on that side
    _prebuild(f"compare {problem}", [sub_a, sub_b], cap, untrusted, compile_timeout, machine_only)
    shapes, note = runner.select_shapes(problem, shapes_spec, custom, cap is not None)
    if note:
        err_console.print(f"[yellow]note:[/yellow] {note}")
    with render.Progress(f"compare {problem} {sub_a.label} vs {sub_b.label}", quiet=machine_only) as prog:
        outcome = runner.run([sub_a, sub_b], shapes, [dist], "compare", plan=plan, timeout_s=timeout,
                             compile_timeout_s=compile_timeout, capability=cap, progress=prog, untrusted_all=untrusted)
    _refused(outcome)
    gm = (outcome.geomean or {}).get("ratio")
    gate = regression_gate([r.ratio for r in outcome.results if r.ratio], gm, margin, fail_on, max_regression,
                           on_gpu=cap is not None)
    emit(report.document("compare", problem, report.compare_rows(outcome), device=outcome.device, plan=plan,
                         geomean=({"speedup": gm[0], "lo": gm[1], "hi": gm[2]} if gm else None), gate=gate),
         fmt, output_path)
    if machine_only:
        sys.exit(3 if gate and outcome.ok else 0 if outcome.ok else 1)
    render.print_compare(problem, sub_a, sub_b, outcome, plan, margin, on_gpu=cap is not None)
    if gate and outcome.ok:
        err_console.print(f"[red]regression gate:[/red] {gate}")
        sys.exit(3)
    sys.exit(0 if outcome.ok else 1)


# compare's options that only measuring reads (--recorded refuses them).
COMPARE_MEASURING = ("shapes_spec", "custom", "processes", "max_processes", "isolated", "precision", "budget",
                     "min_time", "pool", "timeout", "compile_timeout", "untrusted")


def _compare_recorded(problem, version_a, version_b, plan, dist, fail_on, max_regression, fmt, output_path) -> int:
    """compare --recorded: per benchmark shape, the latest recorded PASS row of each version's current
    code (``leaderboard.of_code``) of this method and flush, on the GPU of B's latest row, compared
    from their sidecars' samples. Exit code as compare's (3: the gate failed; 1: a shape has no pair
    of rows)."""
    submissions.check_problem(problem)
    pc = config.load()[problem]
    current = leaderboard.current_hashes([problem])  # NOTE: an edited version's old runs are not its runs
    rows = [r for r in leaderboard.read() if r["problem"] == problem and r.get("status") == "PASS" and r.get("run_id")
            and leaderboard.method_of(r) == plan.method and leaderboard.flush_kind(r) == plan.flush and r["dist"] == dist
            and leaderboard.of_code(r, current.get((problem, r["version"])))]

    def latest(version, shape, gpu=None):
        return max((r for r in rows if r["version"] == version and r["shape"] == shape and (gpu is None or r["gpu"] == gpu)),
                   key=lambda r: r["timestamp"], default=None)

    out, ratios, missing = [], [], []
    for shape, label in zip(pc.benchmarks, pc.benchmark_labels):
        row_b = latest(version_b, shape.key)
        row_a = latest(version_a, shape.key, row_b["gpu"]) if row_b else None
        if not (row_a and row_b):
            missing.append(label)
            out.append({"shape": label, "status": "MISSING",
                        "message": f"no recorded {plan.method}/{plan.flush} pair of the versions' current code"})
            continue
        blocks = [leaderboard.read_sidecar(r["run_id"]).get("samples_us") or [] for r in (row_a, row_b)]
        point, lo, hi = stats.independent_ratio_interval(*blocks)
        ratio = {"speedup": point, "lo": lo, "hi": hi, "verdict": stats.verdict(lo, hi, plan.margin)}
        ratios.append(ratio)
        out.append({"shape": label, "status": "PASS", "gpu": row_b["gpu"], "mean_a_us": float(row_a["mean_us"]),
                    "mean_b_us": float(row_b["mean_us"]), "commit_a": row_a.get("git_commit"),
                    "commit_b": row_b.get("git_commit"), **ratio})
    gm = None
    if ratios and not missing:
        logs = [math.log(r["speedup"]) for r in ratios]
        gm = (math.exp(sum(logs) / len(logs)), math.nan, math.nan)
    gate = regression_gate(ratios, None, plan.margin, fail_on, max_regression)
    emit(report.document("compare", problem, out, plan=plan, recorded=True, gate=gate), fmt, output_path)
    if fmt == "table" or output_path:
        render.print_compare_recorded(problem, version_a, version_b, plan, out, gm)
    if gate:
        err_console.print(f"[red]regression gate:[/red] {gate}")
        return 3
    return 1 if missing else 0


def regression_gate(ratios: list[dict], geomean, margin: float, fail_on: str | None, max_regression: float | None,
                    on_gpu: bool = True) -> str | None:
    """Why compare's regression gate fails, or None. ``fail_on``: slower (a SLOWER verdict on a shape
    or the geomean) or ambiguous (SLOWER or AMBIGUOUS); ``max_regression``: B slower than A by more
    than this fraction with 95% confidence (the interval's upper end below 1 - it). CPU times open
    no gate: they give no verdict."""
    if not on_gpu or (fail_on is None and max_regression is None):
        return None
    cases = [("shape " + str(i), r["speedup"], r["lo"], r["hi"]) for i, r in enumerate(ratios)]
    if geomean:
        cases.append(("geomean", *geomean))
    bad = {"slower": ("SLOWER",), "ambiguous": ("SLOWER", "AMBIGUOUS")}.get(fail_on or "", ())
    for name, point, lo, hi in cases:
        v = stats.verdict(lo, hi, margin)
        if v in bad:
            return f"{name}: {point:.3f}x [{lo:.3f}, {hi:.3f}] {v}"
        if max_regression is not None and math.isfinite(hi) and hi < 1 - max_regression:
            return f"{name}: {point:.3f}x [{lo:.3f}, {hi:.3f}], slower by more than {max_regression:.1%}"
    return None


# ----------------------------------------------------------------------------------------- table
TABLE_DIST = "competition"  # the inputs a table times (and table --missing looks for)

@main.command("table")
@click.argument("problem")
@click.option("--versions", default=None, help="Comma-separated versions (default: the lineage's main folder).")
@click.option("--all", "include_attic", is_flag=True,
              help="The attic's versions too (✗: slower than their parent, kept for the lesson).")
@click.option("--shapes", "shapes_spec", default=None, help="benchmarks (default on a GPU) or tests.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None, help="Write the ladder plot (PNG).")
@click.option("--record", is_flag=True, help="Append every measured row to leaderboard.csv (as each version's shapes finish).")
@click.option("--missing", is_flag=True,
              help="With --record: time only the (version, method) pairs leaderboard.csv has no passing row of on "
                   "every shape for the version's current code on this GPU model, so a table stopped part way (or "
                   "recorded a piece at a time) goes on where it stopped.")
@allow_cpu_option
@click.option("--published", is_flag=True, help="Print the writeup's table as published, measure nothing.")
@click.option("--recorded", is_flag=True, help="Print the best recorded results (leaderboard.csv), measure nothing.")
@click.option("--markdown", is_flag=True,
              help="With --recorded: the lineage README's table in Markdown, one row per version (its Change's "
                   "first sentence, the best recorded mean per benchmark shape of --method, the GPU).")
@click.option("--update-readme", is_flag=True,
              help="With --markdown: write the table into submissions/PROBLEM/README.md in place of its generated "
                   "block (or its `<!-- table: ... -->` placeholder line) instead of printing it.")
@click.option("--commit", "commit", default=None,
              help="With --recorded: only rows recorded at this commit (a prefix of leaderboard.csv's git_commit), "
                   "so the table is one run's, like for like.")
@output_options
# NOTE: a table's row stops at a standard error of 0.25% of its mean (a 95% interval of about ±0.5%) or
# after 1 s: with run's defaults (0.1%, 3 s) every row ran its whole budget, and `table group_gemm` on a
# fresh one-GPU H200 took 121 s of builds and ~3.7 s a row, 128 rows, over 8 minutes (2026-11-29); rows
# timed with 1 s reached 0.15-0.5% (dual_gemm's ladder, same day), inside the smallest step between two
# ladder versions (~1-3%). --budget and --target still set both.
@timing_options(several_methods=True, budget=1.0, target=2.5e-3)
@run_processes_option
@gpus_option
@common_options
@clean_errors
def table_cmd(problem, versions, include_attic, shapes_spec, plot_path, record, missing, allow_cpu, published, recorded, markdown,
              update_readme, commit, fmt,
              output_path, budget, min_samples, min_time, target, pool, method, flush_kind, graph, queued, warm,
              run_processes, gpus_spec, timeout, compile_timeout, untrusted):
    """Every version x benchmark shape measured here, beside the writeup analogue's B200 figures.

    PROBLEM may be `all` (every lineage, one job list). Every (version, shape, method) job is timed
    over --gpus as one list while the versions build in the background: each GPU takes the next
    built version's shapes as soon as it is free (the first in ladder order), in one process per GPU that
    imports the lab's versions once (harness.ladder). Repeat --method to time each version
    with several methods (e.g. --method gpumode --method kernel)."""
    _refuse_table_combinations(published, recorded, markdown, update_readme, fmt, output_path, plot_path)
    if versions:
        # NOTE: --versions resolves each name, an attic version's too, so --all added nothing
        refuse(("include_attic",), "with --versions: the versions it names are the ones shown (an attic version by its "
                                   "name too)")
    # NOTE: a ladder row holds one mean per shape: warm times were measured (a second pass a row) and shown
    # in no table, no --format row, and recorded only in sidecars no command reads
    refuse(("warm",), f"on table: its rows show one mean per shape, so the warm times would be shown nowhere; "
                      f"nvfp4 run {problem} VERSION --method cold --warm prints them beside the cold ones")
    if commit is not None and not recorded:
        raise UserError("--commit picks recorded rows: add --recorded")
    if missing and not record:
        raise UserError("--missing times what leaderboard.csv lacks and records it: add --record")
    if missing and plot_path:
        # NOTE: the plot would hold only the pairs timed now (none when nothing is missing)
        raise UserError(f"--plot draws what this table measures, and --missing leaves out what leaderboard.csv holds: "
                        f"nvfp4 table {problem} --recorded --plot FILE draws the whole ladder from the records")
    if commit is not None and not commit.strip():
        raise UserError("--commit: give a commit (a prefix of leaderboard.csv's git_commit)")
    fmt = output_format(fmt, output_path)
    plans = list({p.method: p for p in (timing_plan(budget, min_samples, min_time, target, pool, graph, warm, queued=queued,
                                                  method=m, flush_kind=flush_kind) for m in method)}.values())
    for p in plans:
        p.run_processes = run_processes
    plan = plans[0]
    several = len(plans) > 1
    if several and (published or recorded or plot_path):
        raise UserError("--method given more than once: only a measured table times several methods "
                        "(--recorded, --published and --plot show one)")
    if problem == "all":
        if published or recorded or versions or plot_path:
            raise UserError("table all measures every lineage: --published, --recorded, --versions and --plot "
                            "take one PROBLEM")
        problems = list(PROBLEMS)
    else:
        submissions.check_problem(problem)
        problems = [problem]
    refuse_batched_pool(plans, problems)
    gpus = gpu_indices(gpus_spec)
    cfg = config.load()
    pc = cfg[problems[0]]
    if published:
        render.print_published(pc)
        return
    if plot_path:
        writable_file(plot_path, "--plot")
        render.require_matplotlib()  # NOTE: before minutes of measuring, not after
    if not versions:  # NOTE: before minutes of measuring; a file --versions names is an error of its own
        say_unreadable(problems, include_attic)
    if markdown:
        _markdown_table(problem, plan, include_attic, update_readme, commit)
        return
    if recorded:
        _print_recorded(problem, pc, plan.method, plan.flush, include_attic, plot_path, versions, fmt, output_path,
                        commit=commit)
        return
    cap = runner.local_capability()
    if plot_path and cap is None:
        # NOTE: a ladder point is a time over its floor; a CPU time has no floor, so a CPU table
        # measured for minutes and then said "no points to plot"
        raise UserError(f"--plot draws each version's time over this GPU's floor, and a CPU has no floor: "
                        f"nothing measured here can be plotted (nvfp4 table {problem} --recorded --plot FILE "
                        "draws the recorded rows)")
    check_record_here(record, allow_cpu, cap)
    if record:
        leaderboard.check_writable()  # NOTE: before minutes of measuring, not after them
    subs = ([submissions.resolve(problem, v) for v in versions.split(",")] if versions
            else [s for p in problems for s in submissions.versions(p, include_attic=include_attic)])
    if not subs:
        raise UserError(f"{problem} has no versions yet")
    if gpus and len(gpus) > 1:
        _one_gpu_model(gpus)
    shapes_of_problem = {}
    for name in problems:
        shapes_of_problem[name], note = runner.select_shapes(name, shapes_spec, (), cap is not None, cfg)
        if note and name == problems[0]:
            err_console.print(f"[yellow]note:[/yellow] {note}")
    quiet = fmt != "table" and not output_path
    if cap is None and not quiet and len(problems) == 1:
        shapes = shapes_of_problem[problem]
        render.print_cpu_preamble(problem, subs, f"the {shapes[0].set_name} shapes" if shapes else None)
    title = f"table {problem}"
    # NOTE: nothing missing still goes through the report: --format json and -o get their document
    # (no rows, every pair under not_run), and the versions this machine cannot run are said as ever
    recorded_here = _recorded_here(subs, plans, shapes_of_problem, cap, gpus) if missing else {}
    record_failures: list[str] = []
    outcomes = _measure_ladder(title, subs, shapes_of_problem, plans, gpus, cap, record, record_failures, quiet,
                               timeout, compile_timeout, untrusted, recorded_here)
    _report_table(problem, problems, cfg, subs, plans, shapes_of_problem, outcomes, fmt, output_path, plot_path,
                  record_failures, recorded_here)


def _report_table(problem, problems, cfg, subs, plans, shapes_of_problem, outcomes, fmt, output_path, plot_path,
                  record_failures, recorded_here=None) -> None:
    """table's report of the measured outcomes (recorded already): the document, then per lineage
    and method the table, the GPUs, the plot and the versions not run; and the exit code.
    ``recorded_here`` (``_recorded_here``): the pairs table --missing left out, done already."""
    plan = plans[0]
    quiet = fmt != "table" and not output_path
    measured = [o for o in outcomes.values() if not o.refused]
    # NOTE: a version refused beside measured ones is listed as not run; the table fails when a measured
    # version failed, or when every version was refused (nothing measured: as run's refusal, exit 1),
    # unless --missing found pairs recorded already: those are done, and what this machine cannot run
    # (another arch) it could never record, so a finished ladder resumed is a success
    ok = bool(measured or recorded_here) and all(o.ok for o in measured)
    rows = [{"problem": sub.problem, "method": p.method, **row} for sub in subs for p in plans
            for o in [outcomes[(sub.label, sub.problem, p.method)]] if not o.refused for row in _table_rows(o)]
    # NOTE: one entry per (problem, version, method): table all has a v0 per lineage, and --missing
    # leaves out a version's methods one by one
    not_run = [{"problem": sub.problem, "version": sub.label, "method": p.method, "why": o.refused}
               for sub in subs for p in plans for o in [outcomes[(sub.label, sub.problem, p.method)]] if o.refused]
    emit(report.document("table", problem, rows, device=next((o.device for o in outcomes.values() if o.device), None),
                         plan=plan, methods=[p.method for p in plans], not_run=not_run),
         fmt, output_path)
    if quiet:
        if plot_path:  # NOTE: --format json on stdout and the plot in its file: the plot was dropped here
            name = problems[0]  # NOTE: --plot takes one PROBLEM and one --method (table_cmd)
            shapes = shapes_of_problem[name]
            render.plot_measured(name, cfg[name], shapes, [outcomes[(s.label, s.problem, plan.method)] for s in subs],
                                 _on_benchmarks(cfg[name], shapes), plot_path)
            err_console.print(f"plot written to {plot_path}", soft_wrap=True)
        _exit(ok, record_failures)
    if recorded_here and not measured:
        console.print(f"nothing missing: leaderboard.csv has every (version, method) this machine can run, for its "
                      f"current code on {next(iter(recorded_here.values()))} (table --missing measured nothing)")
    for name in problems:
        shapes = shapes_of_problem[name]
        on_benchmarks = _on_benchmarks(cfg[name], shapes)
        for p in plans:
            ladder_outcomes = [outcomes[(s.label, s.problem, p.method)] for s in subs if s.problem == name]
            if all(o.refused for o in ladder_outcomes) and not plot_path:
                continue  # NOTE: no row to show; an empty table printed only its shapes and "device: unknown"
            render.print_table(name, cfg[name], shapes, ladder_outcomes, on_benchmarks)
            _print_gpus(ladder_outcomes)
            if plot_path:
                render.plot_measured(name, cfg[name], shapes, ladder_outcomes, on_benchmarks, plot_path)
                console.print(f"plot written to {plot_path}")
        first = [outcomes[(s.label, s.problem, plan.method)] for s in subs if s.problem == name]
        _note_recorded_gpus(name, first)
        # NOTE: every method's refusals (table --missing skips a version's methods one by one), each once
        skipped = list({(o.submissions[0].label, o.refused): o for p in plans for s in subs if s.problem == name
                        for o in [outcomes[(s.label, s.problem, p.method)]] if o.refused}.values())
        if skipped:
            render.print_not_run(skipped)
        if runner.local_capability() is None and len(problems) == 1:
            # NOTE: the Quickstart's promise: on a CPU the versions that need a GPU are shown from the
            # records, beside the writeup's figures (the published table where nothing is recorded)
            console.print()
            _print_recorded(name, cfg[name], plan.method, plan.flush, False, None, or_published=True)
    _exit(ok, record_failures)


def _on_benchmarks(pc, shapes) -> bool:
    """Whether a table's shapes are its problem's benchmarks, all of them (the writeup's figures then sit beside)."""
    return all(s.set_name == "benchmarks" for s in shapes) and len(shapes) == len(pc.benchmarks)


def _table_rows(outcome) -> list[dict]:
    """report.result_rows with the GPU index each row ran on (--gpus)."""
    return [{**row, "gpu_index": r.extra.get("gpu_index")} for row, r in zip(report.result_rows(outcome), outcome.results)]


def _one_gpu_model(gpus: list[int]) -> None:
    import torch
    from harness import sharding
    sharding.one_model({g: torch.cuda.get_device_name(g) for g in gpus})


def _prebuild(title: str, subs, cap, untrusted: bool, compile_timeout: float, quiet: bool) -> dict:
    """Builds every version the command will time, all at once on every core, before any timing
    (harness/build.py says why); source hash -> the failed builds' results."""
    from harness import build
    plan = build.prebuild_plan(subs, cap, untrusted)
    if not plan:
        return {}
    t0 = time.monotonic()
    with render.BuildProgress(f"{title}: building", len(plan), quiet=quiet) as progress:
        results = build.build(plan, "full", timeout_s=compile_timeout, on_done=progress)
        summary = progress.count()
    if not quiet:
        err_console.print(f"{title}: {summary} in {time.monotonic() - t0:.0f} s ({min(len(plan), os.cpu_count() or 1)} "
                          "at once)", markup=False, highlight=False, soft_wrap=True)
        for sub, r in zip(plan, results):
            if not r.ok:
                err_console.print(f"{sub.problem} {sub.label} does not build (log: {r.log or '-'}): {_first_line(r.message)}",
                                  markup=False, highlight=False, soft_wrap=True)
    return build.failed_builds(plan, results)


def _first_line(message: str) -> str:
    """A build failure in one line for a row: its first two non-blank lines (how the build ended,
    then the error excerpt's first line)."""
    lines = [line.strip() for line in (message or "").splitlines() if line.strip()]
    return " ".join(lines[:2])[:300] if lines else "no output"


def _not_built(sub, shapes, plan, failure) -> runner.JobOutcome:
    """A version whose build failed: a FAIL row per shape with the build's error, never timed."""
    why = f"does not build: {_first_line(failure.message)}" + (f" (log: {failure.log})" if failure.log else "")
    return runner.JobOutcome([sub], None, [runner.ShapeResult(s, TABLE_DIST, "FAIL", why) for s in shapes], plan=plan)


def _recorded_here(subs, plans, shapes_of_problem, cap, gpus) -> dict:
    """table --missing: (label, problem, method) -> this GPU model's name, for every version and
    method leaderboard.csv already holds a passing row of on every shape, for the version's current
    code (``leaderboard.recorded_already``)."""
    if cap is None:
        model = "cpu"
    else:
        import torch
        model = torch.cuda.get_device_name(gpus[0] if gpus else 0)
    rows = leaderboard.read()
    suspect = leaderboard.suspect_ids(rows)
    return {(sub.label, sub.problem, p.method): model for sub in subs for p in plans
            if leaderboard.recorded_already(rows, sub.problem, sub.label, leaderboard.code_hash(sub), p.method, p.flush, model,
                                            [shape.key for shape in shapes_of_problem[sub.problem]], TABLE_DIST, suspect)}


def _measure_ladder(title, subs, shapes_of_problem, plans, gpus, cap, record, record_failures, quiet, timeout,
                    compile_timeout, untrusted, recorded_here=None) -> dict:
    """Time every (version, shape, method) job over the GPUs (harness.ladder) while the versions build
    in the background (harness.build.Background): a version is timed once its build ended; one that
    does not build is a FAIL row per shape with its error. With ``record`` each piece is recorded as
    it ends (a failure to record goes to ``record_failures``, ``_record``). (label, problem, method)
    -> outcome. ``recorded_here`` (``_recorded_here``): the (label, problem, method) groups not to
    time, each an outcome refused as recorded already."""
    from harness import build, ladder
    recorded_here = recorded_here or {}
    outcomes = {}
    for (label, name, method), model in recorded_here.items():
        sub = next(s for s in subs if (s.label, s.problem) == (label, name))
        outcomes[(label, name, method)] = runner.JobOutcome(
            [sub], None, refused=f"{label}: {method} recorded already for this code on {model} (--missing)",
            plan=next(p for p in plans if p.method == method))
    # NOTE: a version whose every method is recorded is not built either (a ladder resumed on a fresh
    # machine builds only what it will time)
    to_time = [s for s in subs if any((s.label, s.problem, p.method) not in recorded_here for p in plans)]
    skip = {(i, p.method) for i, s in enumerate(to_time) for p in plans if (s.label, s.problem, p.method) in recorded_here}
    recorded_rows = [0]
    several_problems = len(shapes_of_problem) > 1
    # NOTE: one process per GPU imports the lab's versions it may time (harness.ladder says why), those
    # built when it starts and each later one when its first shape comes; a file from outside the lab
    # (or --untrusted) keeps a sandboxed process of its own per piece
    shareable = {name: runner.shared_versions([s for s in to_time if s.problem == name], cap, untrusted)
                 for name in shapes_of_problem}
    held: dict = {}  # GPU -> its shared process (of one problem at a time: `table all` moves on)
    plan_builds = build.prebuild_plan(to_time, cap, untrusted)
    # NOTE: cores - 2 while timing runs beside the builds (harness.build.Background says why)
    jobs = max(1, min(len(plan_builds), (os.cpu_count() or 1) - 2))
    said = {"builds": f"0 of {len(plan_builds)} built" if plan_builds else "", "jobs": ""}
    said_lock = threading.Lock()
    ended: list = []
    t0 = time.monotonic()

    @contextlib.contextmanager
    def per_gpu(gpu):
        try:
            yield
        finally:
            shared = held.pop(gpu, None)
            if shared is not None:
                shared.stop()

    with isolation.reaped_on_signals(), render.Progress(title, quiet=quiet) as prog:  # NOTE: the shared processes
        # outlive each piece's runner.run; the builds' groups are reaped with them
        def say(key: str, text: str) -> None:
            """The progress line: the builds' count and the jobs' count, both while both run."""
            with said_lock:
                said[key] = text
                line = "; ".join(t for t in said.values() if t)
            prog({"event": "note", "text": line})

        def on_built(sub, result):
            with said_lock:
                ended.append((sub, result))
                failed = [f"{s.problem} {s.label}" for s, r in ended if not r.ok]
                count = f"{len(ended) - len(failed)} of {len(plan_builds)} built" + (
                    f", {len(failed)} failed: {', '.join(failed)}" if failed else "")
                last = len(ended) == len(plan_builds)
            if not quiet and not result.ok:
                err_console.print(f"{sub.problem} {sub.label} does not build (log: {result.log or '-'}): "
                                  f"{_first_line(result.message)}", markup=False, highlight=False, soft_wrap=True)
            if last and not quiet:
                err_console.print(f"{title}: {count} in {time.monotonic() - t0:.0f} s ({jobs} at once, beside the "
                                  "timing)", markup=False, highlight=False, soft_wrap=True)
            say("builds", "" if last else count)

        with build.Background(plan_builds, compile_timeout, jobs=jobs, on_done=on_built) as builds:
            def shared_for(sub, gpu):
                if sub not in shareable[sub.problem]:
                    return None
                shared = held.get(gpu)
                if shared is None or shared.subs[0].problem != sub.problem:
                    if shared is not None:
                        shared.stop()
                    shared = held[gpu] = runner.SharedChild(shareable[sub.problem], gpu, compile_timeout,
                                                            built=builds.built)
                return shared

            def run_piece(sub, shapes, plan, gpu):
                failure = builds.failure(sub)
                if failure is not None:
                    return _not_built(sub, shapes, plan, failure)

                def relay(event):
                    tag = " ".join([sub.problem] * several_problems + [sub.label] + [plan.method] * (len(plans) > 1))
                    if event.get("event") in ("start", "done"):
                        event = {**event, "item": f"{tag} {event['item']}"}
                        if "line" in event:
                            event["line"] = f"{tag} {event['line']}"
                    prog(event)
                return runner.run([sub], shapes, [TABLE_DIST], "run", plan=plan, timeout_s=timeout,
                                  compile_timeout_s=compile_timeout, capability=cap, progress=relay,
                                  gpus=[gpu] if gpu is not None else None, untrusted_all=untrusted,
                                  shared=shared_for(sub, gpu))

            def on_piece(outcome, done, total):
                if record and not outcome.refused:
                    recorded_rows[0] += _record(outcome, record_failures)  # a build failure's rows too
                say("jobs", f"{done} of {total} (version, shape, method) jobs done")

            timed = ladder.run(to_time, lambda s: shapes_of_problem[s.problem], plans, gpus or [None], run_piece,
                               on_piece, per_gpu=per_gpu, skip=skip, ready=lambda i: builds.ended(to_time[i]))
    for (index, mode), outcome in timed.items():
        sub = to_time[index]
        outcomes[(sub.label, sub.problem, mode)] = outcome
    if record and not quiet:
        console.print(_recorded_line(recorded_rows[0]))
    return outcomes


def _print_gpus(outcomes) -> None:
    """Which GPU each version's shapes ran on, when a table ran on several (--gpus)."""
    used = sorted({r.extra["gpu_index"] for o in outcomes for r in o.results if r.extra.get("gpu_index") is not None})
    if len(used) > 1:
        console.print(f"[dim]timed on GPUs {', '.join(map(str, used))} (each row's GPU: --format json's gpu_index, "
                      "leaderboard.csv's gpu_uuid)[/dim]")


# table's options that only measuring reads (--published and --recorded refuse them).
TABLE_MEASURING = ("shapes_spec", "record", "missing", "allow_cpu", "budget", "min_samples", "min_time", "target", "pool", "warm",
                   "run_processes", "gpus_spec", "timeout", "compile_timeout", "untrusted")


def _refuse_table_combinations(published, recorded, markdown, update_readme, fmt, output_path, plot_path) -> None:
    """table's modes (measure, --published, --recorded, --recorded --markdown) and the options each
    takes: one given where it has no effect is refused (exit 2) before anything runs."""
    if published or recorded:
        refuse(TABLE_MEASURING, f"with --{'published' if published else 'recorded'}: it measures nothing")
    if published:
        refuse(("versions", "include_attic", "fmt", "output_path", "method", "flush_kind", "graph", "queued"),
               "with --published: it prints the writeup's table as published")
        if plot_path:
            raise UserError("--plot draws measured (or, with --recorded, recorded) figures; --published measures nothing")
    if markdown:
        refuse(("versions",), "with --markdown: the lineage README's table has every version (--all: the attic's too)")
    if published and recorded:
        raise UserError("--published and --recorded do not combine: one prints the writeup's table, the other ours")
    if markdown and not recorded:
        raise UserError("--markdown prints the recorded lineage table: add --recorded")
    if update_readme and not markdown:
        raise UserError("--update-readme writes the --markdown table: add --recorded --markdown")
    if markdown and (fmt or output_path or plot_path):
        raise UserError("--markdown writes Markdown to stdout: it does not combine with --format, -o or --plot")


def _markdown_table(problem: str, plan, include_attic: bool, update_readme: bool, commit: str | None = None) -> None:
    """table --recorded --markdown: the lineage README's table on stdout, or (--update-readme) in
    place of the README's generated block; ``commit``: that run's rows only."""
    table = lineage.markdown_table(problem, plan.method, include_attic, flush=plan.flush,
                                   rows=_at_commit(leaderboard.read(), commit), commit=commit)
    if not update_readme:
        click.echo(table, nl=False)
        return
    readme = paths.submissions_dir() / problem / "README.md"
    try:
        text = lineage.splice(readme.read_text(encoding="utf-8"), table)
        readme.write_text(text, encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise UserError(f"{readme}: {exc}") from None
    click.echo(f"wrote the generated table into {readme}")


def _at_commit(rows: list[dict], commit: str | None) -> list[dict]:
    """The rows recorded at ``commit`` (a prefix of their git_commit), all of them for None; a
    commit with no row is a UserError (a table of nothing would read as 'not recorded')."""
    if commit is None:
        return rows
    commit = commit.strip()
    picked = [r for r in rows if (r.get("git_commit") or "").startswith(commit)]
    if not picked:
        raise UserError(f"--commit {commit}: no row of leaderboard.csv was recorded at that commit")
    return picked


def _print_recorded(problem, pc, method, flush, include_attic, plot_path, versions: str | None = None,
                    fmt: str = "table", output_path: str | None = None, or_published: bool = False,
                    commit: str | None = None) -> None:
    """table --recorded: the best recorded rows of this method and flush, of each version's current
    code, the attic's versions only with --all (rows of a version no longer in the lineage are still
    shown), beside the writeup's figures, and the plot; ``versions`` (comma-separated): those
    versions' rows only, each of which must have some. ``fmt`` json/csv/md: those rows with their
    writeup analogue's figure. ``or_published``: with no GPU's rows, the writeup's own table."""
    rows = leaderboard.best(_at_commit(leaderboard.read(), commit), problem, method, flush,
                            hashes=leaderboard.current_hashes([problem]))
    if versions:
        wanted = [v.strip() for v in versions.split(",") if v.strip()]
        unknown = [v for v in wanted if v not in {r["version"] for r in rows}]
        if unknown:
            raise UserError(f"--versions: no recorded {method} rows ({flush} flush) of {problem} {', '.join(unknown)}")
        rows = [r for r in rows if r["version"] in wanted]
    elif not include_attic:
        attic = {s.label for s in submissions.versions(problem, include_attic=True) if s.in_attic}
        rows = [r for r in rows if r["version"] not in attic]
    if fmt != "table":
        emit(report.document("table", problem, _recorded_rows(problem, pc, rows), recorded=True, method=method,
                             flush=flush), fmt, output_path)
        if not output_path:
            # NOTE: the document on stdout and the plot in its file (the plot was dropped here)
            if plot_path and any(r["gpu"] != "cpu" for r in rows):
                render.plot_recorded(problem, pc, rows, plot_path, method)
                err_console.print(f"plot written to {plot_path}", soft_wrap=True)
            elif plot_path:
                err_console.print(f"no recorded {method} results ({flush} flush) of a GPU for {problem}: no plot written")
            return
    if not any(r["gpu"] != "cpu" for r in rows):  # NOTE: CPU rows (run --allow-cpu) compare with no GPU's
        console.print(f"no recorded {method} results ({flush} flush) of a GPU for {problem} (use --record on one)")
        if or_published:
            render.print_published(pc)
        return
    here = None
    if runner.local_capability() is not None:
        import torch
        here = torch.cuda.get_device_name(0)
    render.print_recorded(problem, pc, rows, method, flush, here)
    if plot_path:
        render.plot_recorded(problem, pc, rows, plot_path, method)
        console.print(f"plot written to {plot_path}")


def _recorded_rows(problem, pc, rows: list[dict]) -> list[dict]:
    """table --recorded in a machine format: the best recorded rows (leaderboard.csv's columns), each
    with its version's writeup analogue, that analogue's figure on the shape and the B200 floor."""
    subs = {s.label: s for s in submissions.versions(problem, include_attic=True)}
    shapes = {s.key: i for i, s in enumerate(pc.benchmarks)}
    out = []
    for r in map(leaderboard.backfill, rows):
        i = shapes.get(r["shape"])
        analogue = pc.writeup.analogue(subs[r["version"]].analogue) if pc.writeup and r["version"] in subs else None
        out.append({**r, "shape_label": pc.benchmark_labels[i] if i is not None else "",
                    "writeup_version": analogue["name"] if analogue else "",
                    "writeup_us": analogue["us"][i] if analogue and i is not None else None,
                    "b200_floor_us": pc.speed_of_light_b200_us[i] if i is not None and pc.speed_of_light_b200_us else None})
    return out


def _note_recorded_gpus(problem, outcomes) -> None:
    """Says when a version's recorded results come from a GPU other than the one measured now."""
    here = next((o.device.get("gpu") for o in outcomes if o.device), None)
    if not here or here.lower() == "cpu":
        return  # NOTE: a CPU run's times compare with no GPU's; one note per version said nothing new
    rows = [r for r in leaderboard.read() if r["problem"] == problem and r.get("status") == "PASS"]
    for o in outcomes:
        sub = o.submissions[0]
        gpus = sorted({r["gpu"] for r in rows if r["version"] == sub.label and r.get("code_hash") == leaderboard.code_hash(sub)})
        others = [g for g in gpus if g != here]
        if others:
            console.print(f"[yellow]note:[/yellow] {sub.label}'s recorded results come from {', '.join(others)}"
                          + (f" as well as {here}" if here in gpus else f", not this {here}") + ": compare within one GPU")
