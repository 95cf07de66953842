"""The ``nvfp4`` command line: list, test, run, compare, table, leaderboard."""

from __future__ import annotations

import functools
import math
import sys
import time
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness import config, isolation, leaderboard, paths, plots, report, roofline, runner, scaffold, stats, submissions, timing
from harness.errors import UserError
from reference import PROBLEMS
from reference.distributions import DISTS

# NOTE: piped or captured (a log, CI, a remote call), rich assumes 80 columns and squeezes every
# number column to "…"; there is no terminal to fit, so the tables get the width they need.
console = Console(highlight=False, width=None if sys.stdout.isatty() else 240)
err_console = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 240)

STATUS_STYLE = {"PASS": "green", "FAIL": "red", "CRASH": "bold red", "TIMEOUT": "bold red", "TAMPERED": "bold red",
                "IMPLAUSIBLE": "bold red", "SKIP": "yellow"}


def clean_errors(fn):
    """Bad input is one line on stderr and exit 2, never a traceback."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except UserError as exc:
            # NOTE: soft_wrap: one line whatever the terminal's width (a lineage's list of versions
            # outgrew 80 columns); escape: a message may hold brackets rich would read as markup.
            err_console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
            sys.exit(2)
    return wrapper


def _dists(dist: str) -> list[str]:
    """``both``: the two exact-sum distributions (competition, general); ``all``: every distribution
    (with ``realistic``, judged against the float64 reference the same way)."""
    if dist == "all":
        return list(DISTS)
    if dist == "both":
        return ["competition", "general"]
    return [dist]


def _status(s: str) -> str:
    return f"[{STATUS_STYLE.get(s, 'white')}]{s}[/]"


def _text(s: str) -> str:
    """Free text (a docstring's change line, a failure message) as a table cell: escaped, so brackets
    such as `[rows][64]` or `[m=128]` are shown rather than read as rich markup and dropped."""
    return escape(s) if s else s


def _us(x) -> str:
    if x is None:
        return "-"
    return f"{x:,.1f}" if x >= 100 else f"{x:.2f}"


class Progress:
    """A spinner that follows the child's events (importing = compiling, checking, timing).

    When stderr is not a terminal (a log file, CI, a remote call's captured output) the spinner
    would show nothing until the end; there it prints one line per import, shape started and shape
    finished instead, so a run killed at a time limit leaves what it had measured."""

    def __init__(self, title: str, quiet: bool = False, plain: bool | None = None):
        self.title = title
        self.plain = (not quiet) and (not err_console.is_terminal if plain is None else plain)
        self.status = None if quiet or self.plain else err_console.status(title)
        self.started = time.monotonic()

    def __enter__(self):
        if self.status:
            self.status.__enter__()
        return self

    def __exit__(self, *exc):
        if self.status:
            self.status.__exit__(*exc)

    def _line(self, text: str) -> None:
        err_console.print(f"[{time.monotonic() - self.started:6.1f} s] {self.title}: {text}", markup=False,
                          highlight=False, soft_wrap=True)

    def __call__(self, event: dict) -> None:
        kind = event.get("event")
        if self.plain:
            if kind == "phase" and event.get("phase") == "imported":
                self._line(f"{event['label']} ready in {event['seconds']:.1f} s")
            elif kind == "start":
                self._line(f"{event['item']} started")
            elif kind == "done":
                self._line(event["line"])
            return
        if not self.status:
            return
        if kind == "phase" and event["phase"] == "import":
            self.status.update(f"{self.title}: importing {event['label']} (compiles on first use)...")
        elif kind == "phase" and event["phase"] == "imported":
            self.status.update(f"{self.title}: {event['label']} ready in {event['seconds']:.1f} s")
        elif kind == "start":
            self.status.update(f"{self.title}: {event['item']}")
        elif kind == "progress":
            self.status.update(f"{self.title}: {event.get('item') or ''} {event['stage']}...")


def common_options(fn):
    fn = click.option("--untrusted", is_flag=True,
                      help="Run every submission in the sandbox (harness/sandbox.py); automatic for a file outside "
                           "the lab's submissions/.")(fn)
    fn = click.option("--timeout", type=float, default=isolation.DEFAULT_TIMEOUT_S, show_default=True,
                      help="Seconds one shape may take before the child is killed (TIMEOUT).")(fn)
    fn = click.option("--compile-timeout", type=float, default=isolation.DEFAULT_COMPILE_TIMEOUT_S,
                      show_default=True, help="Seconds importing (compiling) a submission may take.")(fn)
    return fn


def gpus_option(fn):
    return click.option("--gpus", "gpus_spec", default=None, metavar="0,1,...|all",
                        help="Shard the shapes across these local GPUs: one child per GPU, timings never share one.")(fn)


def _gpus(spec: str | None) -> list[int] | None:
    if spec is None:
        return None
    import torch
    from harness import sharding
    return sharding.parse_gpus(spec, torch.cuda.device_count() if torch.cuda.is_available() else 0)


CLI_METHODS = ("gpumode", "kernel", "cold", "queued", "graph")


def timing_options(method: str = timing.DEFAULT_METHOD, budget: float = 3.0):
    """The timing options of run, table and compare; ``method`` and ``budget`` are the command's defaults."""
    def decorate(fn):
        fn = click.option("--budget", type=click.FloatRange(min=0, min_open=True), default=budget, show_default=True,
                          help="Seconds of timing per shape (hard cap; the run is flagged not converged).")(fn)
        fn = click.option("--min-repeats", "min_samples", type=click.IntRange(min=1), default=10, show_default=True,
                          help="Samples per shape before the stopping rule may stop.")(fn)
        fn = click.option("--min-time", type=click.FloatRange(min=0), default=0.1, show_default=True,
                          help="Seconds of timing per shape before the stopping rule may stop.")(fn)
        fn = click.option("--target", type=click.FloatRange(min=0, min_open=True), default=1e-3, show_default=True,
                          help="Stop once the standard error is under this fraction of the mean.")(fn)
        fn = click.option("--pool", type=click.IntRange(min=1), default=8, show_default=True,
                          help="Distinct input sets per block, regenerated every block (gpumode: the competition's "
                               "batch, 50 or 15, where it has one).")(fn)
        fn = click.option("--method", type=click.Choice(CLI_METHODS), default=method, show_default=True,
                          help="gpumode: the competition's eval (batch, flush, stop rule); kernel: device time of the "
                               "call's kernels (CUPTI), host apart; cold: each call from an idle device, launch "
                               "included; queued: one call per event pair behind the flush; graph: CUDA-graph replays.")(fn)
        fn = click.option("--flush", "flush_kind", type=click.Choice(timing.FLUSHES), default="dirty", show_default=True,
                          help="How L2 is emptied before timed work: dirty = zeroing (GPU MODE's), clean = a read "
                               "sweep that leaves clean lines (no write-backs charged to the kernel).")(fn)
        fn = click.option("--graph", is_flag=True, help="Shorthand for --method graph.")(fn)
        fn = click.option("--queued", is_flag=True, help="Shorthand for --method queued.")(fn)
        fn = click.option("--warm", is_flag=True, help="With --method cold: also time warm-L2 calls beside the cold ones.")(fn)
        return fn
    return decorate


# What each timing method's figures are, for table titles and notes.
MODE_TITLES = {"gpumode": "GPU MODE's eval: calls queued in batches after one flush",
               "kernel": "device time of the call's kernels (span), queued behind a sleep",
               "cold": "cold L2, each call from an idle device",
               "queued": "cold L2, one call queued behind the flush",
               "graph": "CUDA graph replays",
               "warm": "warm L2"}


def method_title(plan) -> str:
    return f"{plan.mode}: {MODE_TITLES.get(plan.mode, plan.mode)}, {plan.flush} flush"


def output_options(fn):
    fn = click.option("--format", "fmt", type=click.Choice(report.FORMATS), default=None,
                      help="table (default on a terminal), or json / csv / md: one schema for every command "
                           "(harness/report.py), nothing else on stdout.")(fn)
    fn = click.option("-o", "--output", "output_path", type=click.Path(dir_okay=False), default=None,
                      help="Write the json / csv / md output to this file (format from --format, else the "
                           "file's extension); the table still prints.")(fn)
    return fn


def _output_format(fmt: str | None, output_path: str | None) -> str:
    """The machine format asked for (``table`` when none): ``--format``, else ``-o``'s extension."""
    if fmt:
        return fmt
    if output_path:
        ext = output_path.rsplit(".", 1)[-1].lower() if "." in output_path else ""
        if ext in ("json", "csv", "md"):
            return ext
        raise UserError(f"-o {output_path}: say --format json|csv|md (the extension does not name one)")
    return "table"


def _emit(doc: dict, fmt: str, output_path: str | None) -> None:
    if fmt != "table":
        report.emit(doc, fmt, output_path)
        if output_path:
            err_console.print(f"wrote {fmt} to {output_path}")


def run_processes_option(fn):
    return click.option("--processes", "run_processes", type=click.IntRange(min=1), default=runner.TimingPlan.run_processes,
                        show_default=True,
                        help="Fresh processes per shape (the budget split over them); the mean's interval then "
                             "covers the spread between processes, and a spread over 5% is reported.")(fn)


def _plan(budget, min_samples, min_time, target, pool, graph, warm, margin=runner.TimingPlan.margin,
          queued=False, method=timing.DEFAULT_METHOD, flush_kind="dirty", default_method=timing.DEFAULT_METHOD) -> runner.TimingPlan:
    shorthands = [name for name, on in (("graph", graph), ("queued", queued)) if on]
    if len(shorthands) > 1:
        raise UserError("--graph and --queued do not combine: choose one timing method")
    if shorthands:
        if method not in (default_method, shorthands[0]):
            raise UserError(f"--{shorthands[0]} and --method {method} do not combine: choose one timing method")
        method = shorthands[0]
    if warm and method != "cold":
        raise UserError(f"--warm times warm calls beside cold-method ones; it does not combine with --method {method}")
    if margin <= 0:
        raise UserError(f"--margin {margin}: must be a positive fraction (0.02 = ±2%)")
    return runner.TimingPlan.from_options(budget_s=budget, min_samples=min_samples, min_time_s=min_time,
                                          target=target, pool=pool, mode=method, flush=flush_kind,
                                          warm=warm, margin=margin)


def _record(outcome) -> str:
    rows, sidecars = runner.leaderboard_rows(outcome)
    path = leaderboard.append(rows, sidecars=sidecars)
    return f"recorded {len(rows)} rows in {path} (raw samples in {leaderboard.sidecar_dir(path)}/)"


def _version_text() -> str:
    from importlib.metadata import PackageNotFoundError, version

    from harness import machine
    try:
        package = version("nvfp4-lab")
    except PackageNotFoundError:
        package = "not installed"
    git = machine.git_state()
    commit = git.get("git_commit") or "unknown commit"
    return f"nvfp4 {package} (commit {commit}{', dirty' if git.get('git_dirty') == 'true' else ''})"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=lambda ctx, _p, v: (click.echo(_version_text()), ctx.exit()) if v and not ctx.resilient_parsing else None,
              help="The package version and the git commit, then exit.")
def main():
    """Check, time and record NVFP4 kernels (gemv, gemm, dual_gemm, group_gemm)."""


# ------------------------------------------------------------------------------------------ list
@main.command("list")
@click.argument("problem", required=False)
@output_options
@clean_errors
def list_cmd(problem, fmt, output_path):
    """Problems, their versions (change, arch, analogue) and shapes."""
    fmt = _output_format(fmt, output_path)
    cfg = config.load()
    names = [problem] if problem else list(PROBLEMS)
    for name in names:
        submissions.check_problem(name)
    if fmt != "table":
        rows = [{"problem": name, "version": sub.label, "arch": sub.arch, "analogue": sub.analogue or "",
                 "parent": sub.header.get("parent", ""), "change": sub.change, "file": str(sub.path)}
                for name in names for sub in submissions.versions(name)]
        _emit(report.document("list", problem, rows), fmt, output_path)
        if not output_path:
            return
    for name in names:
        pc = cfg[name]
        table = Table(title=f"{name}", title_justify="left")
        table.add_column("version")
        table.add_column("arch")
        table.add_column("analogue")
        table.add_column("change (first sentence)")
        for sub in submissions.versions(name):
            table.add_row(sub.label, sub.arch, _text(sub.analogue) or "-", _text(sub.summary))
        console.print(table)
        console.print("  benchmarks: " + "; ".join(s.label for s in pc.benchmarks))
        console.print(f"  tests: {len(pc.tests)} shapes" + (f" (e.g. {pc.tests[0].label})" if pc.tests else ""))
        if pc.edges:
            console.print("  edges: " + "; ".join(s.label for s in pc.edges))


# ------------------------------------------------------------------------------------------ test
@main.command("test")
@click.argument("problem")
@click.argument("version")
@click.option("--dist", type=click.Choice([*DISTS, "both", "all"]), default="both", show_default=True,
              help="A distribution, both (competition and general) or all of them.")
@click.option("--seeds", type=click.IntRange(min=1), default=3, show_default=True, help="Seeds per shape.")
@click.option("--shapes", "shapes_spec", default="tests", show_default=True,
              help="tests, benchmarks, edges (the issues' 'any shape' contracts), or SET:N.")
@click.option("--shape", "custom", multiple=True, help="A custom shape: JSON or m=..,n=..,k=..,l=.. (repeatable).")
@output_options
@gpus_option
@common_options
@clean_errors
def test_cmd(problem, version, dist, seeds, shapes_spec, custom, fmt, output_path, gpus_spec, timeout, compile_timeout,
             untrusted):
    """Correctness on the tests shapes: poisoned outputs, input mutation check, several seeds."""
    fmt = _output_format(fmt, output_path)
    machine_only = fmt != "table" and not output_path
    sub = submissions.resolve(problem, version)
    cap = runner.local_capability()
    shapes, _ = runner.select_shapes(problem, shapes_spec, custom, cap is not None)
    with Progress(f"test {problem} {sub.label}", quiet=machine_only) as prog:
        outcome = runner.run([sub], shapes, _dists(dist), "test", seeds=seeds, timeout_s=timeout,
                             compile_timeout_s=compile_timeout, capability=cap, progress=prog, gpus=_gpus(gpus_spec),
                             untrusted_all=untrusted)
    if outcome.refused:
        err_console.print(f"[red]refused:[/red] {outcome.refused}")
        sys.exit(1)
    _emit(report.document("test", problem, report.result_rows(outcome), device=outcome.device, seeds=seeds),
          fmt, output_path)
    if machine_only:
        sys.exit(0 if outcome.ok else 1)
    table = Table(title=f"{problem} {sub.label}: correctness ({seeds} seeds per shape)", title_justify="left")
    for col in ("shape", "dist", "status", "detail"):
        table.add_column(col)
    for r in outcome.results:
        table.add_row(r.shape.label, r.dist, _status(r.status), _text(r.message))
    console.print(table)
    for line in _sandbox_lines(outcome):
        console.print(f"[dim]{_text(line)}[/dim]")
    n_ok = sum(r.ok for r in outcome.results)
    console.print(f"{n_ok} passed, {len(outcome.results) - n_ok} failed")
    sys.exit(0 if outcome.ok else 1)


# ------------------------------------------------------------------------------------------- run
@main.command("run")
@click.argument("problem")
@click.argument("version")
@click.option("--shapes", "shapes_spec", default=None, help="benchmarks (default on a GPU), tests (default without), or an index.")
@click.option("--shape", "custom", multiple=True, help="A custom shape: JSON or m=..,n=..,k=..,l=.. (repeatable).")
@click.option("--dist", type=click.Choice(list(DISTS)), default="competition", show_default=True)
@click.option("--record", is_flag=True, help="Append the results to leaderboard.csv.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@output_options
@timing_options()
@run_processes_option
@gpus_option
@common_options
@clean_errors
def run_cmd(problem, version, shapes_spec, custom, dist, record, as_json, fmt, output_path, budget, min_samples, min_time,
            target, pool, method, flush_kind, graph, queued, warm, run_processes, gpus_spec, timeout, compile_timeout,
            untrusted):
    """Correctness first, then timing: mean, median, IQR, 95% CI, best, % of the floor; geomean."""
    fmt = _output_format("json" if as_json else fmt, output_path)
    machine_only = fmt != "table" and not output_path
    plan = _plan(budget, min_samples, min_time, target, pool, graph, warm, queued=queued, method=method,
                 flush_kind=flush_kind)
    plan.run_processes = run_processes
    sub = submissions.resolve(problem, version)
    cap = runner.local_capability()
    shapes, note = runner.select_shapes(problem, shapes_spec, custom, cap is not None)
    if note and not machine_only:
        err_console.print(f"[yellow]note:[/yellow] {note}")
    with Progress(f"run {problem} {sub.label}", quiet=machine_only) as prog:
        outcome = runner.run([sub], shapes, [dist], "run", plan=plan, timeout_s=timeout,
                             compile_timeout_s=compile_timeout, capability=cap, progress=prog, gpus=_gpus(gpus_spec),
                             untrusted_all=untrusted)
    if outcome.refused:
        err_console.print(f"[red]refused:[/red] {outcome.refused}")
        sys.exit(1)
    if not machine_only:
        _print_run(problem, sub, outcome)
    _emit(_run_document("run", problem, outcome), fmt, output_path)
    if record:
        line = _record(outcome)
        if not machine_only:
            console.print(line)
    sys.exit(0 if outcome.ok else 1)


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
            "geomean": outcome.geomean, "timing": outcome.plan.describe() if outcome.plan else None}


def _sandbox_lines(outcome) -> list[str]:
    """Where each untrusted submission ran: the sandbox, or plainly that none was available."""
    lines = [f"{label} ran sandboxed: {how}" for label, how in (outcome.sandboxes or {}).items()]
    untrusted = [s.label for s in outcome.submissions if not submissions.in_lab(s)]
    bare = [label for label in untrusted if label not in (outcome.sandboxes or {})]
    if bare:
        from harness import sandbox
        why = "; ".join(dict.fromkeys((outcome.unsandboxed or {}).get(label, "") for label in bare)) or sandbox.describe()
        lines.append(f"{', '.join(bare)}: not sandboxed: {why}")
    return lines


def _device_line(dev: dict | None) -> str:
    if not dev:
        return "device: unknown"
    if dev.get("gpu") == "cpu":
        return f"device: CPU (torch {dev.get('torch')}); times are CPU times, no roofline"
    ceil = dev.get("ceilings") or {}
    ceil_txt = (f"; ceilings {ceil['bf16_tflops']:.0f} TFLOP/s bf16, {ceil['copy_tbps']:.2f} TB/s ({ceil.get('source')})"
                if ceil else "")
    return (f"device: {dev.get('gpu')} ({dev.get('sm_count')} SMs, sm_{dev.get('capability', '').replace('.', '')}), "
            f"driver {dev.get('driver') or '?'}, CUDA {dev.get('cuda')}, torch {dev.get('torch')}{ceil_txt}")


def _interval(lo, hi) -> str:
    return f"[{_us(lo)}, {_us(hi)}]" if lo is not None and math.isfinite(lo) else "-"


# run's columns kept in a terminal narrower than WIDE_COLUMNS (80 columns must read, not show "…").
NARROW_RUN_COLUMNS = ("shape", "status", "mean µs", "95% CI", "n", "sum µs", "host µs", "% of floor", "% of read")
WIDE_COLUMNS = 130


def _print_run(problem, sub, outcome: runner.JobOutcome) -> None:
    plan = outcome.plan
    mode = method_title(plan) if plan else "cold"
    table = Table(title=f"{problem} {sub.label}: {_text(sub.summary or '')} ({mode})", title_justify="left")
    cols = ["shape", "status", "mean µs", "95% CI", "median µs", "IQR", "best µs", "n"]
    if plan and plan.warm:
        cols.append("warm mean µs")
    kernel_method = bool(plan and plan.mode == "kernel")
    if kernel_method:
        cols += ["sum µs", "host µs"]
    cols += ["floor µs", "% of floor", "read µs", "% of read"]
    if console.width < WIDE_COLUMNS:
        cols = [c for c in cols if c in NARROW_RUN_COLUMNS]
    for col in cols:
        table.add_column(col, justify="left" if col in ("shape", "status") else "right")
    not_converged = []
    for r in outcome.results:
        st = r.stats[0] if r.stats else None
        cells = {"shape": r.shape.label, "status": _status(r.status), "floor µs": _us(r.floor_us)}
        if st:
            if not st["converged"]:
                not_converged.append(f"{r.shape.label}: {st['stop_reason']}")
            k = st.get("kernel") or {}
            read_us = r.read_floor_us
            cells.update({"mean µs": _us(st["mean_us"]), "95% CI": _interval(st["ci95_lo_us"], st["ci95_hi_us"]),
                          "median µs": _us(st["median_us"]), "IQR": _us(st["iqr_us"]), "best µs": _us(st["best_us"]),
                          "n": f"{st['n']}" + ("" if st["converged"] else "*"),
                          "warm mean µs": _us(st["warm"]["mean_us"]) if st.get("warm") else "-",
                          "sum µs": _us(k.get("sum_us")), "host µs": _us(k.get("host_us")),
                          "% of floor": f"{100 * r.floor_us / st['mean_us']:.1f}%" if r.floor_us else "-",
                          "read µs": _us(read_us),
                          "% of read": f"{100 * read_us / st['mean_us']:.1f}%" if read_us else "-"})
        table.add_row(*[cells.get(c, "-") for c in cols])
        if r.message and not r.ok:  # failed, or timed but failed (escape, implausible): say why
            table.add_row("", f"[dim]{_text(r.message)}[/dim]", *[""] * (len(cols) - 2))
    console.print(table)
    gm = (outcome.geomean or {}).get(sub.label)
    floors = roofline.geomean([r.floor_us for r in outcome.results])
    if gm:
        console.print(f"geomean: {_us(gm[0])} µs, 95% CI {_interval(gm[1], gm[2])}"
                      + (f" (floor geomean {_us(floors)} µs)" if floors else ""))
    else:
        console.print("geomean: - (only when every shape passes with a plausible time)")
    for line in not_converged:
        console.print(f"[dim]* did not converge: {line}[/dim]")
    for r in outcome.results:
        st = r.stats[0] if r.stats else {}
        if st.get("process_spread", 0) > PROCESS_SPREAD_NOTE:
            means = ", ".join(_us(m) for m in st["process_means_us"])
            console.print(f"[yellow]processes disagree on {r.shape.label}: {means} µs "
                          f"({st['process_spread']:.0%} apart); the interval covers it[/yellow]")
    console.print(f"[dim]{_device_line(outcome.device)}[/dim]")
    for line in _sandbox_lines(outcome):
        console.print(f"[dim]{_text(line)}[/dim]")


PROCESS_SPREAD_NOTE = 0.05  # run --processes: process means further apart than this are pointed out

# --------------------------------------------------------------------------------------- compare
VERDICT_STYLE = {"FASTER": "green", "SLOWER": "red", "SAME": "cyan", "AMBIGUOUS": "yellow"}


@main.command("compare")
@click.argument("problem")
@click.argument("version_a")
@click.argument("version_b")
@click.option("--shapes", "shapes_spec", default=None)
@click.option("--shape", "custom", multiple=True)
@click.option("--dist", type=click.Choice(list(DISTS)), default="competition", show_default=True)
@click.option("--margin", type=float, default=runner.TimingPlan.margin, show_default=True,
              help="SAME when the whole 95% interval of the ratio is within this fraction of 1.")
@click.option("--processes", type=click.IntRange(min=1), default=runner.TimingPlan.processes, show_default=True,
              help="Generations of fresh process pairs per shape at least, prepared in alternating order (the budget is split over them).")
@click.option("--max-processes", type=click.IntRange(min=1), default=runner.TimingPlan.max_processes, show_default=True,
              help="--isolated: while a shape's verdict is AMBIGUOUS, two more generations at a time, up to this many.")
@click.option("--isolated", is_flag=True,
              help="Each version in processes of its own, generations of fresh process pairs (automatic for a file "
                   "outside submissions/): for a file you did not write.")
@click.option("--precision", type=click.FloatRange(min=0, min_open=True), default=runner.TimingPlan.precision,
              show_default=True, help="One process: stop once the verdict is decided and the interval is within "
                                      "this fraction of the speedup.")
@click.option("--fail-on", "fail_on", type=click.Choice(["slower", "ambiguous"]), default=None,
              help="Exit 3 when a shape or the geomean is SLOWER (ambiguous: also when AMBIGUOUS): a regression gate.")
@click.option("--max-regression", type=click.FloatRange(min=0, max=1), default=None,
              help="Exit 3 when B is slower than A by more than this fraction with 95% confidence (the interval's "
                   "upper end below 1 - this) on a shape or the geomean, e.g. 0.02.")
@click.option("--recorded", is_flag=True,
              help="Measure nothing: compare the two versions' latest recorded runs (leaderboard.csv and their "
                   "sidecars' samples) of this --method and --flush on one GPU.")
@output_options
@timing_options(method="kernel", budget=10.0)
@common_options
@clean_errors
def compare_cmd(problem, version_a, version_b, shapes_spec, custom, dist, margin, processes, max_processes, isolated,
                precision, fail_on, max_regression, recorded, fmt, output_path, budget, min_samples, min_time, target,
                pool, method, flush_kind, graph, queued, warm, timeout, compile_timeout, untrusted):
    """A and B taking turns block by block (A B B A ...) on identical, never-seen inputs; verdicts
    FASTER / SLOWER / SAME / AMBIGUOUS from the speedup's 95% interval. Your own versions share one
    process (paired blocks); --isolated, or a file from outside submissions/, gives each version
    processes of its own (generations of process pairs, more while AMBIGUOUS)."""
    plan = _plan(budget, min_samples, min_time, target, pool, graph, warm, margin, queued=queued, method=method,
                 flush_kind=flush_kind, default_method="kernel")
    plan.processes, plan.max_processes = processes, max(processes, max_processes)
    plan.precision = precision
    fmt = _output_format(fmt, output_path)
    machine_only = fmt != "table" and not output_path
    if recorded:
        sys.exit(_compare_recorded(problem, version_a, version_b, plan, dist, fail_on, max_regression, fmt, output_path))
    sub_a = submissions.resolve(problem, version_a)
    sub_b = submissions.resolve(problem, version_b)
    outside = [s.label for s in (sub_a, sub_b) if not submissions.in_lab(s)]
    plan.isolated = isolated or untrusted or bool(outside)
    if outside and not isolated:
        err_console.print(f"[yellow]note:[/yellow] {', '.join(outside)} is not a version of this lab: each side runs "
                          "in processes of its own (--isolated)")
    cap = runner.local_capability()
    if cap is None:
        err_console.print("[yellow]note:[/yellow] no GPU here: CPU times of the Python path, not comparable "
                          "with anything: no verdict")
    shapes, note = runner.select_shapes(problem, shapes_spec, custom, cap is not None)
    if note:
        err_console.print(f"[yellow]note:[/yellow] {note}")
    with Progress(f"compare {problem} {sub_a.label} vs {sub_b.label}", quiet=machine_only) as prog:
        outcome = runner.run([sub_a, sub_b], shapes, [dist], "compare", plan=plan, timeout_s=timeout,
                             compile_timeout_s=compile_timeout, capability=cap, progress=prog, untrusted_all=untrusted)
    if outcome.refused:
        err_console.print(f"[red]refused:[/red] {outcome.refused}")
        sys.exit(1)
    gm = (outcome.geomean or {}).get("ratio")
    gate = regression_gate([r.ratio for r in outcome.results if r.ratio], gm, margin, fail_on, max_regression,
                           on_gpu=cap is not None)
    _emit(report.document("compare", problem, report.compare_rows(outcome), device=outcome.device, plan=plan,
                          geomean=({"speedup": gm[0], "lo": gm[1], "hi": gm[2]} if gm else None), gate=gate),
          fmt, output_path)
    if machine_only:
        sys.exit(3 if gate and outcome.ok else 0 if outcome.ok else 1)
    over = "paired blocks in one process" if not plan.isolated else "blocks and process generations"
    table = Table(title=f"{problem}: {sub_a.label} vs {sub_b.label} (speedup = time {sub_a.label} / time {sub_b.label}, "
                        f"95% interval over {over}, SAME within ±{margin:.1%}; {method_title(plan)})",
                  title_justify="left")
    for col in ("shape", "status", f"{sub_a.label} µs", f"{sub_b.label} µs", "speedup", "95% CI",
                "procs" if plan.isolated else "pairs", "verdict"):
        table.add_column(col)
    for r in outcome.results:
        if r.stats and r.ratio:
            v = r.ratio["verdict"]
            table.add_row(r.shape.label, _status(r.status), _us(r.stats[0]["mean_us"]), _us(r.stats[1]["mean_us"]),
                          f"{r.ratio['speedup']:.3f}x", f"[{r.ratio['lo']:.3f}, {r.ratio['hi']:.3f}]",
                          str(r.ratio.get("processes", "") if plan.isolated else r.ratio.get("pairs", "")),
                          f"[{VERDICT_STYLE.get(v, 'dim')}]{v}[/]" if r.ok else _text(r.message))
            orders = r.ratio.get("by_order") or {}
            if all(orders.get(k) for k in ("A", "B")):
                table.add_row("", "[dim]by order[/dim]", "", "", "", "", "",
                              f"[dim]{orders['A']:.3f}x A first, {orders['B']:.3f}x B first[/dim]")
            gens = r.ratio.get("by_generation") or []
            if len(gens) > 1:
                table.add_row("", "[dim]by process pair[/dim]", "", "", "", "", "",
                              "[dim]" + ", ".join(f"{g['speedup']:.3f}x ({g['first_prepared']} prepared first)"
                                                  for g in gens) + "[/dim]")
        else:
            table.add_row(r.shape.label, _status(r.status), "-", "-", "-", "-", "-", _text(r.message))
    console.print(table)
    if gm and cap is None:
        console.print(f"geomean speedup of {sub_b.label} over {sub_a.label}: {gm[0]:.3f}x (CPU times: no verdict)")
    elif gm:
        v = stats.verdict(gm[1], gm[2], margin)
        console.print(f"geomean speedup of {sub_b.label} over {sub_a.label}: {gm[0]:.3f}x, 95% CI [{gm[1]:.3f}, {gm[2]:.3f}]: "
                      f"[{VERDICT_STYLE[v]}]{v}[/]")
    else:
        console.print(f"geomean speedup of {sub_b.label} over {sub_a.label}: - (only when every shape passes)")
    console.print(f"[dim]{_device_line(outcome.device)}[/dim]")
    for line in _sandbox_lines(outcome):
        console.print(f"[dim]{_text(line)}[/dim]")
    if gate and outcome.ok:
        err_console.print(f"[red]regression gate:[/red] {gate}")
        sys.exit(3)
    sys.exit(0 if outcome.ok else 1)


def _compare_recorded(problem, version_a, version_b, plan, dist, fail_on, max_regression, fmt, output_path) -> int:
    """compare --recorded: per benchmark shape, the latest recorded PASS row of each version of this
    method and flush, on the GPU of B's latest row, compared from their sidecars' samples. Exit code
    as compare's (3: the gate failed; 1: a shape has no pair of rows)."""
    submissions.check_problem(problem)
    pc = config.load()[problem]
    rows = [r for r in leaderboard.read() if r["problem"] == problem and r.get("status") == "PASS" and r.get("run_id")
            and leaderboard.timing_mode(r) == plan.mode and leaderboard.flush_kind(r) == plan.flush and r["dist"] == dist]
    latest = lambda version, shape, gpu=None: max(  # noqa: E731
        (r for r in rows if r["version"] == version and r["shape"] == shape and (gpu is None or r["gpu"] == gpu)),
        key=lambda r: r["timestamp"], default=None)
    out, ratios, missing = [], [], []
    for shape, label in zip(pc.benchmarks, pc.benchmark_labels):
        row_b = latest(version_b, shape.key)
        row_a = latest(version_a, shape.key, row_b["gpu"]) if row_b else None
        if not (row_a and row_b):
            missing.append(label)
            out.append({"shape": label, "status": "MISSING", "message": f"no recorded {plan.mode}/{plan.flush} pair"})
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
    _emit(report.document("compare", problem, out, plan=plan, recorded=True, gate=gate), fmt, output_path)
    if fmt == "table" or output_path:
        table = Table(title=f"{problem}: {version_a} vs {version_b} from recorded runs ({plan.mode}, {plan.flush} flush; "
                            "speedup = time A / time B; interval from each run's blocks alone: runs of other processes "
                            "and days can differ by more)", title_justify="left")
        for col in ("shape", "gpu", f"{version_a} µs", f"{version_b} µs", "speedup", "95% CI", "verdict"):
            table.add_column(col)
        for r in out:
            if r["status"] != "PASS":
                table.add_row(r["shape"], "-", "-", "-", "-", "-", _text(r["message"]))
                continue
            table.add_row(r["shape"], _text(r["gpu"]), _us(r["mean_a_us"]), _us(r["mean_b_us"]), f"{r['speedup']:.3f}x",
                          f"[{r['lo']:.3f}, {r['hi']:.3f}]", f"[{VERDICT_STYLE.get(r['verdict'], 'dim')}]{r['verdict']}[/]")
        console.print(table)
        if gm:
            console.print(f"geomean speedup of {version_b} over {version_a}: {gm[0]:.3f}x")
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
@main.command("table")
@click.argument("problem")
@click.option("--versions", default=None, help="Comma-separated versions (default: the whole lineage).")
@click.option("--shapes", "shapes_spec", default=None, help="benchmarks (default on a GPU) or tests.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None, help="Write the ladder plot (PNG).")
@click.option("--record", is_flag=True, help="Append every measured row to leaderboard.csv.")
@click.option("--published", is_flag=True, help="Print the writeup's table as published, measure nothing.")
@click.option("--recorded", is_flag=True, help="Print the best recorded results (leaderboard.csv), measure nothing.")
@output_options
@timing_options()
@run_processes_option
@gpus_option
@common_options
@clean_errors
def table_cmd(problem, versions, shapes_spec, plot_path, record, published, recorded, fmt, output_path, budget,
              min_samples, min_time, target, pool, method, flush_kind, graph, queued, warm, run_processes, gpus_spec,
              timeout, compile_timeout, untrusted):
    """Every version x benchmark shape measured here, beside the writeup analogue's B200 figures."""
    if published and recorded:
        raise UserError("--published and --recorded do not combine: one prints the writeup's table, the other ours")
    fmt = _output_format(fmt, output_path)
    plan = _plan(budget, min_samples, min_time, target, pool, graph, warm, queued=queued, method=method,
                 flush_kind=flush_kind)
    plan.run_processes = run_processes
    gpus = _gpus(gpus_spec)
    submissions.check_problem(problem)
    cfg = config.load()
    pc = cfg[problem]
    if published:
        if plot_path:
            raise UserError("--plot draws measured (or, with --recorded, recorded) figures; --published measures nothing")
        _print_published(pc)
        return
    if plot_path:
        _require_matplotlib()  # NOTE: before minutes of measuring, not after
    if recorded:
        _print_recorded(problem, pc, plan.mode, plot_path, plan.flush)
        return
    subs = ([submissions.resolve(problem, v) for v in versions.split(",")] if versions
            else submissions.versions(problem))
    if not subs:
        raise UserError(f"{problem} has no versions yet")
    cap = runner.local_capability()
    shapes, note = runner.select_shapes(problem, shapes_spec, (), cap is not None, cfg)
    if note:
        err_console.print(f"[yellow]note:[/yellow] {note}")
    on_benchmarks = all(s.set_name == "benchmarks" for s in shapes) and len(shapes) == len(pc.benchmarks)
    outcomes = []
    for sub in subs:
        with Progress(f"table {problem} {sub.label}", quiet=fmt != "table" and not output_path) as prog:
            outcome = runner.run([sub], shapes, ["competition"], "run", plan=plan, timeout_s=timeout,
                                 compile_timeout_s=compile_timeout, capability=cap, progress=prog, gpus=gpus,
                                 untrusted_all=untrusted)
        outcomes.append(outcome)
        if record and not outcome.refused:
            _record(outcome)
    _flag_speedups(outcomes)
    rows = [row for o in outcomes if not o.refused for row in report.result_rows(o)]
    _emit(report.document("table", problem, rows, device=next((o.device for o in outcomes if o.device), None), plan=plan,
                          not_run={o.submissions[0].label: o.refused for o in outcomes if o.refused}), fmt, output_path)
    if fmt != "table" and not output_path:
        sys.exit(1 if any(not o.refused and not o.ok for o in outcomes) else 0)
    _print_table(problem, pc, shapes, outcomes, on_benchmarks)
    _note_recorded_gpus(problem, outcomes)
    if plot_path:
        _plot(problem, pc, shapes, outcomes, on_benchmarks, plot_path)
        console.print(f"plot written to {plot_path}")
    skipped = [o for o in outcomes if o.refused]
    if skipped:
        # NOTE: one line per reason, not one per version: on a CPU 41 versions share one reason
        reasons: dict[str, list[str]] = {}
        for o in skipped:
            label = o.submissions[0].label
            reasons.setdefault(o.refused.removeprefix(f"{label}: "), []).append(label)
        for why, labels in reasons.items():
            console.print(f"[yellow]not run here ({len(labels)}):[/yellow] {_text(why)}: {_version_ranges(labels)}")
    failed = [o for o in outcomes if not o.refused and not o.ok]
    sys.exit(1 if failed else 0)


def _require_matplotlib() -> None:
    """--plot needs matplotlib: said before anything is measured, not after."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UserError("--plot needs matplotlib: pip install -e '.[plot]'") from None


def _version_ranges(labels: list[str]) -> str:
    """v1, v2, v3, v7 -> 'v1-v3, v7'."""
    nums = sorted(int(v[1:]) for v in labels if v[1:].isdigit())
    others = [v for v in labels if not v[1:].isdigit()]
    parts, start = [], None
    for i, n in enumerate(nums):
        if start is None:
            start = n
        if i + 1 == len(nums) or nums[i + 1] != n + 1:
            parts.append(f"v{start}" if start == n else f"v{start}-v{n}")
            start = None
    return ", ".join(parts + others)


def _flag_speedups(outcomes) -> None:
    """A speedup over v0 (measured in this run) beyond v0 / physical floor is no result."""
    base = next((o for o in outcomes if o.submissions[0].label == "v0" and not o.refused), None)
    if not base:
        return
    for o in outcomes:
        if o is base or o.refused:
            continue
        for r, r0 in zip(o.results, base.results):
            if r.ok and r0.ok and r.stats and r0.stats:
                why = roofline.plausibility(r.stats[0]["mean_us"], r.physical_floor_us, r0.stats[0]["mean_us"])
                if why:
                    r.status, r.message = "IMPLAUSIBLE", why


def _note_recorded_gpus(problem, outcomes) -> None:
    """Says when a version's recorded results come from a GPU other than the one measured now."""
    here = next((o.device.get("gpu") for o in outcomes if o.device), None)
    if not here or here.lower() == "cpu":
        return  # NOTE: a CPU run's times compare with no GPU's; one note per version said nothing new
    rows = [r for r in leaderboard.read() if r["problem"] == problem and r.get("status") == "PASS"]
    for o in outcomes:
        sub = o.submissions[0]
        gpus = sorted({r["gpu"] for r in rows if r["version"] == sub.label and r.get("code_hash") == sub.source_hash[:16]})
        others = [g for g in gpus if g != here]
        if others:
            console.print(f"[yellow]note:[/yellow] {sub.label}'s recorded results come from {', '.join(others)}"
                          + (f" as well as {here}" if here in gpus else f", not this {here}") + ": compare within one GPU")


def _print_recorded(problem, pc, mode=timing.DEFAULT_METHOD, plot_path=None, flush="dirty") -> None:
    rows = leaderboard.best(leaderboard.read(), problem, mode, flush)
    if not rows:
        console.print(f"no recorded {mode} results ({flush} flush) for {problem} (use --record)")
        return
    cap = runner.local_capability()
    here = None
    if cap is not None:
        import torch
        here = torch.cuda.get_device_name(0)
    gpus = sorted({r["gpu"] for r in rows})
    keys = {(s.key) : lab for s, lab in zip(pc.benchmarks, pc.benchmark_labels)}
    table = Table(title=f"{problem}: best recorded results (µs, mean, {mode}: {MODE_TITLES.get(mode, mode)}, {flush} flush; GPU after each figure "
                        "where they differ)",
                  title_justify="left")
    table.add_column("version")
    for lab in pc.benchmark_labels:
        table.add_column(lab, justify="right")
    by_version: dict = {}
    for r in rows:
        if r["dist"] == "competition" and r["shape"] in keys:
            by_version.setdefault(r["version"], {}).setdefault(keys[r["shape"]], []).append(r)
    order = sorted(by_version, key=lambda v: int(v[1:]) if v[1:].isdigit() else 10**6)
    for v in order:
        cells = []
        for lab in pc.benchmark_labels:
            found = sorted(by_version[v].get(lab, []), key=lambda r: float(r["mean_us"]))
            cells.append("; ".join(_us(float(r["mean_us"])) + (f" [dim]({r['gpu']})[/dim]" if len(gpus) > 1 else "")
                                   for r in found) or "-")
        table.add_row(v, *cells)
    console.print(table)
    console.print(f"recorded on: {', '.join(gpus)}" + (f"; this machine: {here}" if here else ""))
    if here and any(g != here for g in gpus):
        console.print(f"[yellow]note:[/yellow] results from a GPU other than this {here} are not comparable with a run here")
    if plot_path:
        _plot_recorded(problem, pc, rows, plot_path, mode)
        console.print(f"plot written to {plot_path}")


def _mean(outcome, i):
    r = outcome.results[i]
    return r.stats[0]["mean_us"] if r.ok and r.stats else None


def _print_table(problem, pc, shapes, outcomes, on_benchmarks) -> None:
    wu = pc.writeup if on_benchmarks else None
    labels = pc.benchmark_labels if on_benchmarks else [f"{s.set_name[0]}{s.index}" for s in shapes]
    dev = next((o.device for o in outcomes if o.device), None)
    on_cpu = (dev or {}).get("gpu") == "cpu"
    plan = next((o.plan for o in outcomes if o.plan), None)
    title = f"{problem}: measured here (µs, mean, {'CPU time' if on_cpu else MODE_TITLES[plan.mode if plan else 'cold']})"
    if wu:
        title += f"; in brackets the writeup analogue on {wu.gpu}"
    table = Table(title=title, title_justify="left")
    table.add_column("version")
    table.add_column("change", max_width=36, overflow="ellipsis", no_wrap=True)
    for lab in labels:
        table.add_column(lab, justify="right")
    for col in ("geomean", "vs v0", "vs prev"):
        table.add_column(col, justify="right")
    base_gm, prev_gm = None, None
    for outcome in outcomes:
        sub = outcome.submissions[0]
        if outcome.refused:
            table.add_row(sub.label, _text(sub.change), *(["skip"] * len(shapes)), "-", "-", "-")
            continue
        means = [_mean(outcome, i) for i in range(len(shapes))]
        analogue = wu.version(sub.analogue) if wu and sub.analogue else None
        cells = []
        for i, m in enumerate(means):
            txt = _us(m) if m is not None else f"[red]{outcome.results[i].status}[/red]"
            if analogue and analogue["us"][i] is not None:
                txt += f" [dim]({_us(analogue['us'][i])})[/dim]"
            cells.append(txt)
        gm = roofline.geomean(means)
        if base_gm is None and sub.label == "v0":
            base_gm = gm
        vs0 = f"{base_gm / gm:.2f}x" if base_gm and gm else "-"
        vsp = f"{prev_gm / gm:.2f}x" if prev_gm and gm else "-"
        table.add_row(sub.label, _text(sub.change), *cells, _us(gm), vs0, vsp)
        prev_gm = gm or prev_gm
    console.print(table)
    if not on_benchmarks:
        console.print("shapes: " + "; ".join(f"{lab} = {s.label}" for lab, s in zip(labels, shapes)))
    floors = [roofline.floor_us(problem, s.params, (dev or {}).get("ceilings")) for s in shapes]
    if any(floors):
        console.print("floor (this GPU): " + ", ".join(f"{lab} {_us(f)}" for lab, f in zip(labels, floors)))
    if on_benchmarks and pc.speed_of_light_b200_us:
        console.print("GPU MODE speed of light (B200, fp4 tensor cores): "
                      + ", ".join(f"{lab} {_us(v)}" for lab, v in zip(labels, pc.speed_of_light_b200_us)))
    console.print(f"[dim]{_device_line(dev)}[/dim]")


def _print_published(pc) -> None:
    if not pc.writeup:
        console.print(f"{pc.name}: no writeup table is published for this problem")
        if pc.speed_of_light_b200_us:
            console.print("GPU MODE speed of light (B200): "
                          + ", ".join(f"{lab} {_us(v)}" for lab, v in zip(pc.benchmark_labels, pc.speed_of_light_b200_us)))
        return
    wu = pc.writeup
    table = Table(title=f"{pc.name}: the writeup's table as published ({wu.gpu}, µs) — {wu.source}", title_justify="left")
    table.add_column("version")
    table.add_column("change", max_width=60)
    for lab in pc.benchmark_labels:
        table.add_column(lab, justify="right")
    table.add_column("geomean", justify="right")
    table.add_column("note")
    for v in wu.versions:
        table.add_row(v["name"], _text(v.get("change", "")), *[_us(x) for x in v["us"]], _us(roofline.geomean(v["us"])),
                      _text(v.get("note", "")))
    console.print(table)


def _failed_versions(problem: str) -> set[str]:
    """The lineage's ✗ versions, from its README's table."""
    readme = paths.submissions_dir() / problem / "README.md"
    return plots.failed_versions_from_readme(readme.read_text()) if readme.exists() else set()


def _published(pc):
    return plots.published_from_writeup(pc.writeup, pc.benchmark_labels, pc.speed_of_light_b200_us)


def _draw(call) -> None:
    """A plot; what it cannot draw (no points, no matplotlib) is one clear error."""
    try:
        call()
    except (ValueError, ImportError) as exc:
        raise UserError(f"--plot: {exc}") from None


def _plot(problem, pc, shapes, outcomes, on_benchmarks, path) -> None:
    """The ladder measured here: % of floor per version and shape (harness/plots.py)."""
    labels = pc.benchmark_labels if on_benchmarks else [s.label for s in shapes]
    failed = _failed_versions(problem)
    points = [plots.LadderPoint(o.submissions[0].label, lab, (r.device or o.device or {}).get("gpu", "this GPU"),
                                r.stats[0]["mean_us"], r.floor_us, r.stats[0].get("ci95_lo_us"),
                                r.stats[0].get("ci95_hi_us"), o.submissions[0].label in failed)
              for o in outcomes if not o.refused
              for lab, r in zip(labels, o.results) if r.ok and r.stats and r.floor_us]
    _draw(lambda: plots.ladder(path, problem, points, _published(pc) if on_benchmarks else None,
                               title=f"{problem}: the version ladder measured here, % of floor",
                               failed_versions=failed, lineage=[o.submissions[0].label for o in outcomes],
                               shapes=labels))


def _plot_recorded(problem, pc, rows, path, mode: str = timing.DEFAULT_METHOD) -> None:
    """The ladder of the best recorded rows, one line per GPU, never joined across GPUs."""
    failed = _failed_versions(problem)
    keys = {s.key: lab for s, lab in zip(pc.benchmarks, pc.benchmark_labels)}
    _draw(lambda: plots.ladder(path, problem, plots.points_from_rows(rows, keys, failed_versions=failed), _published(pc),
                               title=f"{problem}: best recorded, {MODE_TITLES.get(mode, mode)}: % of floor",
                               failed_versions=failed, lineage=[s.label for s in submissions.versions(problem)],
                               shapes=pc.benchmark_labels))


# ----------------------------------------------------------------------------------- leaderboard
class _ShowByDefault(click.Group):
    """``nvfp4 leaderboard [PROBLEM] [--mode M] [--flush F]`` lists as it always has: arguments that
    do not start with a subcommand's name (or ask for help) go to ``show``."""

    def parse_args(self, ctx, args):
        if not args or (args[0] not in self.commands and args[0] not in ctx.help_option_names):
            args = ["show", *args]
        return super().parse_args(ctx, args)


@main.group("leaderboard", cls=_ShowByDefault)
def leaderboard_group():
    """Recorded results (leaderboard.csv): the best per version and shape (show, the default), or
    merge another machine's rows in."""


@leaderboard_group.command("show")
@click.argument("problem", required=False)
@click.option("--mode", "--method", "mode", type=click.Choice(sorted(MODE_TITLES)), default=timing.DEFAULT_METHOD,
              show_default=True, help="Which timing method's rows (a row is only ever compared with rows of its own method).")
@click.option("--flush", "flush_kind", type=click.Choice(timing.FLUSHES), default="dirty", show_default=True,
              help="Which flush's rows.")
@output_options
@clean_errors
def leaderboard_cmd(problem, mode, flush_kind, fmt, output_path):
    """Best recorded result per version and shape (from leaderboard.csv); also `nvfp4 leaderboard [PROBLEM]`."""
    if problem:
        submissions.check_problem(problem)
    fmt = _output_format(fmt, output_path)
    rows = leaderboard.best(leaderboard.read(), problem, mode, flush_kind)
    if fmt != "table":
        plan = runner.TimingPlan(mode=mode, flush=flush_kind)
        _emit(report.document("leaderboard", problem, [leaderboard.backfill(r) for r in rows], plan=plan), fmt,
              output_path)
        if not output_path:
            return
    if not rows:
        console.print(f"no recorded {mode} results ({flush_kind} flush)" + (f" for {problem}" if problem else "")
                      + " (use --record)")
        return
    table = Table(title=f"best recorded results ({mode}: {MODE_TITLES[mode]}, {flush_kind} flush)", title_justify="left")
    for col in ("problem", "version", "shape", "dist", "mean µs", "TFLOP/s", "TB/s", "% of floor", "gpu", "commit",
                "when"):
        table.add_column(col)

    def order(r):
        m = r["version"].lstrip("v")
        return (r["problem"], int(m) if m.isdigit() else 10**6, r["shape"], r["dist"])

    for r in sorted(map(leaderboard.backfill, rows), key=order):  # backfill: a file not yet normalised
        # The file keeps the full commit; 12 digits name it here without widening the table.
        commit = r["git_commit"][:12] + ("+dirty" if r.get("git_dirty") == "true" else "")
        pct = f"{float(r['pct_of_floor']):.1f}%" if r.get("pct_of_floor") else "-"
        table.add_row(r["problem"], r["version"], r["shape"], r["dist"], _us(float(r["mean_us"])),
                      r.get("tflops") or "-", r.get("tbps") or "-", pct, r["gpu"], commit, r["timestamp"])
    console.print(table)


@leaderboard_group.command("merge")
@click.argument("files", nargs=-1, required=True, type=click.Path())
@clean_errors
def leaderboard_merge_cmd(files):
    """Fold the rows of other leaderboards (FILE: another machine's leaderboard.csv, any older header)
    into this one, with their sidecars from FILE's sibling <stem>_runs/ folder.

    A row already here (same run_id; without one, same timestamp, problem, version, shape, dist and
    gpu) is skipped. Bad input (a missing file, unknown columns) writes nothing."""
    result = leaderboard.merge(list(files))
    console.print(f"merged into {result.path}: {result.added} rows added, {result.skipped} already present and skipped, "
                  f"{result.sidecars} sidecars copied")



# ------------------------------------------------------------------------------------ new, export
@main.command("new")
@click.argument("problem")
@click.argument("version")
@click.option("--from", "parent", required=True, help="The parent version (vM) the new file starts from.")
@click.option("--change", default="TODO: the one idea this version changes", show_default=True,
              help="The Change line of the new docstring.")
@clean_errors
def new_cmd(problem, version, parent, change):
    """A new version file from its parent: the code copied, a fresh docstring header (Version,
    Parent, Change, Arch, Analogue, Prediction, Measured: not yet run), EXTENSION_NAME renamed."""
    target, text = scaffold.new_version(problem, version, parent, change)
    target.write_text(text)
    console.print(f"wrote {target} (from {parent}); next: edit the code and the docstring's Change and "
                  f"Prediction, then nvfp4 test {problem} {version} --dist both && nvfp4 compare {problem} {parent} {version}")


@main.command("export")
@click.argument("problem")
@click.argument("version")
@click.option("-o", "--output", "output_path", type=click.Path(dir_okay=False), default=None,
              help="Write here (default: stdout).")
@click.option("--gpu", default="B200", show_default=True, help="The #!POPCORN gpu line (the NVFP4 leaderboards run on B200).")
@clean_errors
def export_cmd(problem, version, output_path, gpu):
    """The version as GPU MODE's submission CLI takes it: #!POPCORN leaderboard and gpu lines first."""
    text = scaffold.export(submissions.resolve(problem, version), gpu)
    if output_path:
        Path(output_path).write_text(text)
        err_console.print(f"wrote {output_path}")
    else:
        sys.stdout.write(text)


# ------------------------------------------------------------------------------ developer tools
# build, sanitize, profile, diff, doctor: kernel developer tooling (README: Developer tools).
def _tool_subs(problem: str, version: str) -> list:
    """PROBLEM VERSION where either may be ``all``."""
    if problem == "all":
        if version != "all":
            raise UserError("with PROBLEM all, VERSION must be all too")
        return [s for p in PROBLEMS for s in submissions.versions(p)]
    if version == "all":
        return submissions.versions(problem)
    return [submissions.resolve(problem, version)]


def _bytes(n: int) -> str:
    return f"{n:,}"


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
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Versions built at once (default: CPU count).")
@click.option("--timeout", type=float, default=900.0, show_default=True, help="Seconds one version's build may take.")
@clean_errors
def build_cmd(problem, version, compile_only_flag, changed, jobs, timeout):
    """Build versions' extensions (PROBLEM and VERSION may be 'all'); --compile-only needs no GPU.

    A compile-only build with no failure records each lineage version it checked in the compiled
    manifest (submissions/compiled.json, committed): the hash of what compile-only compiles for it
    (sources, flags, defines, arch; not the machine's paths or compiler versions), so --changed can
    skip it while it stays the same. The plain `build all all --compile-only` compiles every version
    (before a release, or after changing nvcc, the host compiler or torch) and records that toolchain
    as the manifest's 'checked_with'; --changed never recompiles for a toolchain change alone (see
    harness/build.py for why)."""

    from harness import build, build_cache, compile_only, cuda_tools

    subs = _tool_subs(problem, version)
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
    done = []
    with err_console.status(f"building {len(to_build)} version(s)...") as status:
        def on_done(sub, result):
            done.append(sub)
            status.update(f"building: {len(done)}/{len(to_build)} done ({sub.problem} {sub.label} {result.status})")
        results = build.build(to_build, mode, nvcc=nvcc, jobs=jobs, timeout_s=timeout, on_done=on_done)
    several = len({s.problem for s in to_build}) > 1
    if mode == "full":
        _print_full_builds(to_build, results, several)
    elif to_build:
        _print_compile_only(to_build, results, several)
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


def _print_full_builds(subs, results, several) -> None:
    table = Table(title="build (imported in a child; --compile-only gives ptxas's registers and spills)",
                  title_justify="left")
    for col in (["problem"] if several else []) + ["version", "status", "time"]:
        table.add_column(col, justify="right" if col == "time" else "left")
    for sub, r in zip(subs, results):
        status = "[bold red]FAIL[/]" if r.status == "FAIL" else "[green]OK[/]"
        table.add_row(*([sub.problem] if several else []), sub.label, status, f"{r.seconds:.1f} s")
    console.print(table)


def _print_compile_only(subs, results, several) -> None:
    table = Table(title="build (compile-only: registers per thread, bytes per kernel)", title_justify="left")
    cols = (["problem"] if several else []) + ["version", "status", "kernel", "arch", "regs", "spill st/ld",
                                                "stack", "smem", "barriers", "time"]
    for col in cols:
        table.add_column(col, justify="right" if col in ("regs", "spill st/ld", "stack", "smem", "barriers", "time") else "left")
    for sub, r in zip(subs, results):
        first = [sub.problem] if several else []
        when = "cached" if r.cached else ("-" if r.status == "NO_CUDA" else f"{r.seconds:.1f} s")
        status = "[bold red]FAIL[/]" if r.status == "FAIL" else "[green]OK[/]"
        if not r.kernels:
            note = "the error is below" if r.status == "FAIL" else r.message
            table.add_row(*first, sub.label, status, f"[dim]{escape(note)}[/dim]", r.arch, "", "", "", "", "", when)
        for i, k in enumerate(r.kernels):
            spills = f"{k.spill_stores}/{k.spill_loads}"
            if k.spill_stores or k.spill_loads:
                spills = f"[yellow]{spills}[/]"
            table.add_row(*(first if i == 0 else [""] * len(first)), sub.label if i == 0 else "", status if i == 0 else "",
                          escape(k.name), k.arch, str(k.registers), spills, _bytes(k.stack_frame), _bytes(k.smem),
                          str(k.barriers), when if i == 0 else "")
    console.print(table)



def _small_shape(problem: str, spec: str | None, custom: tuple, has_gpu: bool):
    """--shapes / --shape as elsewhere; by default the tests shape with the fewest FLOPs."""
    from reference import problem_module

    if spec or custom:
        shapes, _ = runner.select_shapes(problem, spec, custom, has_gpu)
        if len(shapes) != 1:
            raise UserError("choose one shape: --shapes tests:N, benchmarks:N or one --shape")
        return shapes[0]
    tests = config.load()[problem].tests
    return min(tests, key=lambda s: problem_module(problem).flops(**s.params))


@main.command("sanitize")
@click.argument("problem")
@click.argument("version")
@click.option("--tool", type=click.Choice(["memcheck", "racecheck", "synccheck", "initcheck"]), default="memcheck",
              show_default=True)
@click.option("--shapes", "shapes_spec", default=None, help="One shape: tests:N or benchmarks:N (default: the smallest tests shape).")
@click.option("--shape", "custom", multiple=True, help="A custom shape: JSON or m=..,n=..,k=..,l=..")
@click.option("--dist", type=click.Choice(list(DISTS)), default="competition", show_default=True)
@click.option("--seeds", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--timeout", type=float, default=900.0, show_default=True, help="Seconds for the build and for the run.")
@clean_errors
def sanitize_cmd(problem, version, tool, shapes_spec, custom, dist, seeds, timeout):
    """Run a version on a small shape under compute-sanitizer; errors summarised, parsed strictly."""

    from harness import machine, sanitize

    sub = submissions.resolve(problem, version)
    cap = runner.local_capability()
    if cap is None:
        raise UserError("sanitize needs an NVIDIA GPU; this machine has none (nvfp4 doctor)")
    why = machine.arch_refusal(sub.arch, cap)
    if why:
        raise UserError(f"{sub.label} {why}")
    sanitizer = sanitize.find()
    if not sanitizer:
        raise UserError("compute-sanitizer not found on PATH or in the CUDA toolkit (nvfp4 doctor)")
    shape = _small_shape(problem, shapes_spec, custom, True)
    with err_console.status(f"sanitize {problem} {sub.label} ({tool}) on {shape.label}: building, then running under "
                            "compute-sanitizer (slow)..."):
        report, log = sanitize.run(sub, sanitizer, shape.params, dist, tool, seeds=seeds, timeout_s=timeout)
    style = {"CLEAN": "green", "ERRORS": "bold red", "FAIL": "red", "UNPARSED": "bold red"}[report.status]
    console.print(f"{problem} {sub.label}, {tool}, {shape.label} ({dist}): [{style}]{report.status}[/] "
                  f"{escape(report.message)}")
    for f in report.findings:
        console.print(f"  [bold]{f.count}x[/] {escape(f.kind)}")
        where = [line for line in f.example[1:] if not line.startswith(("Saved host backtrace", "Host Frame"))]
        for line in where[:4]:  # the device location, thread and address; the host stack is in the log
            console.print(f"      [dim]{escape(line)}[/dim]")
    if report.child and not report.child.get("ok") and report.status != "FAIL":
        console.print(f"  the program: {escape(report.child.get('message', ''))}")
    console.print(f"[dim]full report: {log}[/dim]")
    sys.exit(0 if report.ok else 1)


@main.command("profile")
@click.argument("problem")
@click.argument("version")
@click.option("--shape", "index", default=None,
              help="Shape index (benchmarks on a GPU, tests without), or tests:N / benchmarks:N, or a custom m=..,k=.. shape.")
@click.option("--dist", type=click.Choice(list(DISTS)), default="competition", show_default=True)
@click.option("--ncu", "use_ncu", is_flag=True, help="Nsight Compute on the custom_kernel NVTX range instead of torch.profiler.")
@click.option("--calls", type=click.IntRange(min=1), default=None, help="Profiled calls (default 10; 1 with --ncu).")
@click.option("--top", type=click.IntRange(min=1), default=15, show_default=True, help="Rows of the kernel table.")
@click.option("--timeout", type=float, default=900.0, show_default=True)
@clean_errors
def profile_cmd(problem, version, index, dist, use_ncu, calls, top, timeout):
    """Where a version's time goes on one shape: torch.profiler kernels, or --ncu's summary."""

    from harness import cuda_tools, machine, profile
    from reference import problem_module

    sub = submissions.resolve(problem, version)
    cap = runner.local_capability()
    why = machine.arch_refusal(sub.arch, cap)
    if why:
        raise UserError(f"{sub.label} {why}")
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
            res = profile.ncu_profile(sub, ncu, shape.params, dist, flops, calls=calls or 1, timeout_s=timeout)
        _print_ncu(problem, sub, shape, res)
        return
    with err_console.status(f"profile {problem} {sub.label} on {shape.label}..."):
        res = profile.torch_profile(sub, shape.params, dist, calls=calls or 10, timeout_s=timeout)
    n = res["calls"]
    unit = "GPU kernels" if res["on_gpu"] else "CPU operators (self time; no GPU here)"
    table = Table(title=f"{problem} {sub.label} on {shape.label} ({dist}): {unit}, {n} calls", title_justify="left")
    for col in ("name", "calls", "total µs", "µs per custom_kernel", "share"):
        table.add_column(col, justify="left" if col == "name" else "right")
    total = sum(r["total_us"] for r in res["rows"]) or 1.0
    for r in res["rows"][:top]:
        table.add_row(escape(r["name"][:100]), str(r["calls"]), _us(r["total_us"]), _us(r["total_us"] / n),
                      f"{100 * r['total_us'] / total:.1f}%")
    console.print(table)
    console.print(f"sum: {_us(total / n)} µs per custom_kernel call"
                  + (f" ({len(res['rows']) - top} more rows)" if len(res["rows"]) > top else ""))
    if not res["check"]["ok"]:
        console.print(f"[red]the output is wrong:[/red] {escape(res['check']['message'])}")
    console.print(f"[dim]{_device_line(res['device'])}[/dim]")


def _sig(x: float) -> str:
    """Three significant digits below 100 (0.00122, 16.2), whole numbers with separators above."""
    return f"{x:.3g}" if abs(x) < 100 else f"{x:,.0f}"


def _print_ncu(problem, sub, shape, res) -> None:
    from harness import profile
    s = res["summary"]
    table = Table(title=f"{problem} {sub.label} on {shape.label}: Nsight Compute (--clock-control none)", title_justify="left")
    for col in ("kernel", "grid", "block", "regs", "µs", "DRAM GB/s", "occupancy (achieved/theor.)", "L2 / shared / tensor %"):
        table.add_column(col, justify="left" if col in ("kernel", "grid", "block") else "right")
    for k in res["kernels"]:
        m = k.metrics
        occ = (f"{m['sm__warps_active.avg.pct_of_peak_sustained_active']:.0f}% / "
               f"{m.get('sm__maximum_warps_per_active_cycle_pct', float('nan')):.0f}%"
               if "sm__warps_active.avg.pct_of_peak_sustained_active" in m else "-")
        gbps = k.dram_bytes / (k.duration_us * 1e-6) / 1e9 if k.duration_us else 0.0
        regs = m.get("launch__registers_per_thread")
        units = " / ".join(f"{v:.0f}" if v is not None else "-" for v in profile.unit_pcts(m).values())
        table.add_row(escape(k.name[:80]), k.grid, k.block, f"{regs:.0f}" if regs is not None else "-",
                      _us(k.duration_us), f"{gbps:,.0f}", occ, units)
    console.print(table)
    ceil = s.get("ceilings")
    line = f"per custom_kernel call: {_us(s['duration_us'])} µs"
    if s["tflops"] is not None:
        line += f", {_sig(s['tflops'])} TFLOP/s" + (f" ({_sig(s['pct_of_bf16'])}% of {ceil['bf16_tflops']:.0f} bf16)" if ceil else "")
        line += f", DRAM {_sig(s['dram_gbps'])} GB/s" + (f" ({_sig(s['pct_of_copy'])}% of {ceil['copy_tbps'] * 1e3:,.0f})" if ceil else "")
    console.print(line + (f" [dim](ceilings: {ceil['source']})[/dim]" if ceil else " [dim](no ceilings known for this GPU)[/dim]"))
    if s["achieved_occupancy_pct"] is not None:
        console.print(f"occupancy (time-weighted): {s['achieved_occupancy_pct']:.1f}% achieved"
                      + (f", {s['theoretical_occupancy_pct']:.1f}% theoretical" if s["theoretical_occupancy_pct"] is not None else ""))
    if any(v is not None for v in s["units_pct"].values()):
        console.print("units busy (time-weighted, % of peak): " + ", ".join(
            f"{label} {v:.0f}%" for label, v in s["units_pct"].items() if v is not None))
    if s["top_stalls"]:
        console.print("top stall reasons (warps stalled per issue cycle, share of all stalls): " + ", ".join(
            f"{t['reason']} {t['warps_per_issue']:.2f}" + (f" ({100 * t['share']:.0f}%)" if t["share"] else "")
            for t in s["top_stalls"]))
    if not res["check"]["ok"]:
        console.print(f"[red]the output is wrong:[/red] {escape(res['check']['message'])}")
    console.print(f"[dim]report: {res['report']} (open with ncu-ui or ncu --import)[/dim]")
    console.print(f"[dim]{_device_line(res['device'])}[/dim]")


@main.command("diff")
@click.argument("problem")
@click.argument("version_a")
@click.argument("version_b", required=False)
@click.option("--docstring", "show_docstring", is_flag=True, help="Show the docstring's diff too.")
@click.option("-U", "--context", type=click.IntRange(min=0), default=3, show_default=True)
@clean_errors
def diff_cmd(problem, version_a, version_b, show_docstring, context):
    """The change from VA to VB (with only VA: from its Parent to it): headers, code, CUDA source."""
    from rich.text import Text

    from harness import diff

    if version_b is None:
        b = submissions.resolve(problem, version_a)
        parent = (b.header.get("parent") or "").strip()
        if parent.lower() in ("", "none", "-"):
            raise UserError(f"{b.label} has no Parent in its docstring; name both versions")
        a = submissions.resolve(problem, parent)
    else:
        a, b = submissions.resolve(problem, version_a), submissions.resolve(problem, version_b)
    d = diff.diff(a, b, context)
    table = Table(title=f"{problem}: {a.label} -> {b.label}", title_justify="left", show_header=True)
    table.add_column("")
    table.add_column(a.label)
    table.add_column(b.label)
    for key in ("parent", "change", "arch", "analogue"):
        table.add_row(key, escape(a.header.get(key, "-")), escape(b.header.get(key, "-")))
    console.print(table)
    for note in d.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")
    styles = {"+": "green", "-": "red", "@": "cyan"}
    for section in d.sections:
        if not section.lines:
            console.print(f"[bold]{section.title}[/bold]: unchanged")
            continue
        console.print(f"[bold]{section.title}[/bold]: +{section.added} -{section.removed}")
        for line in section.lines:
            style = "bold" if line.startswith(("+++", "---")) else styles.get(line[:1], "")
            console.print(Text(line, style=style), soft_wrap=True)
    doc = d.docstring
    if not doc.lines:
        console.print("[bold]docstring[/bold]: unchanged")
    elif show_docstring:
        console.print(f"[bold]docstring[/bold]: +{doc.added} -{doc.removed}")
        for line in doc.lines:
            console.print(Text(line, style=styles.get(line[:1], "")), soft_wrap=True)
    else:
        console.print(f"[bold]docstring[/bold]: +{doc.added} -{doc.removed} lines (--docstring shows them)")
    if d.identical:
        console.print("the code is identical (the docstring aside)")


@main.command("ceilings")
@click.option("--measure", "repeats", type=int, default=0, show_default=True,
              help="measure this GPU's ceilings this many times now (about 4 s each) beside the figures runs use")
@clean_errors
def ceilings_cmd(repeats):
    """The bf16 and copy ceilings this GPU's floors are computed from, and where they come from."""
    import torch

    if not torch.cuda.is_available():
        raise UserError("no GPU here: ceilings belong to a GPU model (the reference table is in harness/roofline.py)")
    gpu = torch.cuda.get_device_name()
    used = roofline.ceilings(torch, gpu, allow_measure=False)
    table = Table(title=f"ceilings, {gpu}", title_justify="left")
    for col in ("figures", "bf16 TFLOP/s", "copy TB/s", "vs used"):
        table.add_column(col, justify="left" if col == "figures" else "right")
    if used:
        table.add_row(f"used by runs ({used['source']})", f"{used['bf16_tflops']:.1f}", f"{used['copy_tbps']:.3f}", "")
    for i in range(repeats):
        m = roofline.measure(torch)
        vs = (f"{m['bf16_tflops'] / used['bf16_tflops']:.3f}x / {m['copy_tbps'] / used['copy_tbps']:.3f}x" if used else "")
        table.add_row(f"measured now ({i + 1} of {repeats})", f"{m['bf16_tflops']:.1f}", f"{m['copy_tbps']:.3f}", vs)
    console.print(table)
    if used is None:
        console.print("no figures for this model yet: the first run measures and caches them")
    elif used["source"] != "reference":
        console.print("not in roofline.REFERENCE: floors on this model follow whichever measurement was cached first")


@main.command("doctor")
@clean_errors
def doctor_cmd():
    """What this machine can do: GPU and arch, driver, CUDA, torch, nvcc, ncu, compute-sanitizer, build cache."""

    from harness import doctor

    found, can = doctor.checks()
    marks = {True: "[green]ok[/]", False: "[yellow]missing[/]", None: ""}
    for title, rows in (("this machine", found), ("what it can do here", can)):
        table = Table(title=title, title_justify="left", show_header=False)
        for _ in range(3):
            table.add_column()
        for c in rows:
            table.add_row(c.item, escape(c.value), marks[c.ok])
        console.print(table)


if __name__ == "__main__":
    main()
