"""The ``nvfp4`` command line: the click group ``main`` and the options its commands share.

The commands live by what they are for:

- :mod:`harness.cli.measure`: list, test, run, compare, table (checking and timing versions);
- :mod:`harness.cli.records`: leaderboard (show, merge: the recorded results);
- :mod:`harness.cli.devtools`: new, export, build, sanitize, profile, diff, ceilings, doctor;
- :mod:`harness.cli.render`: the tables, notes, progress and plots they print (no decisions).

A command turns its options into a request, calls the harness (runner, leaderboard, build, ...)
and hands the result to render or to harness/report.py (``--format json|csv|md``); bad input is a
UserError, one line on stderr and exit 2 (:func:`clean_errors`).
"""

from __future__ import annotations

import functools
import sys

import click
from rich.markup import escape

from harness import isolation, report, runner, timing
from harness.cli.render import err_console
from harness.errors import UserError


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


# ----------------------------------------------------------------------------- shared options
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


def gpu_indices(spec: str | None) -> list[int] | None:
    """--gpus as local GPU indices (None: not given)."""
    if spec is None:
        return None
    import torch
    from harness import sharding
    return sharding.parse_gpus(spec, torch.cuda.device_count() if torch.cuda.is_available() else 0)


CLI_METHODS = ("gpumode", "kernel", "cold", "queued", "graph")


def timing_options(method: str = timing.DEFAULT_METHOD, budget: float = 3.0, several_methods: bool = False):
    """The timing options of run, table and compare; ``method`` and ``budget`` are the command's
    defaults; ``several_methods``: --method may be repeated (a tuple of methods, table's)."""
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
        fn = click.option("--method", type=click.Choice(CLI_METHODS), multiple=several_methods,
                          default=(method,) if several_methods else method, show_default=True,
                          help="gpumode: the competition's eval (batch, flush, stop rule); kernel: device time of the "
                               "call's kernels (CUPTI), host apart; cold: each call from an idle device, launch "
                               "included; queued: one call per event pair behind the flush; graph: CUDA-graph replays."
                               + (" Repeat it to time every version with each." if several_methods else ""))(fn)
        fn = click.option("--flush", "flush_kind", type=click.Choice(timing.FLUSHES), default="dirty", show_default=True,
                          help="How L2 is emptied before timed work: dirty = zeroing (GPU MODE's), clean = a read "
                               "sweep that leaves clean lines (no write-backs charged to the kernel).")(fn)
        fn = click.option("--graph", is_flag=True, help="Shorthand for --method graph.")(fn)
        fn = click.option("--queued", is_flag=True, help="Shorthand for --method queued.")(fn)
        fn = click.option("--warm", is_flag=True, help="With --method cold: also time warm-L2 calls beside the cold ones.")(fn)
        return fn
    return decorate


def timing_plan(budget, min_samples, min_time, target, pool, graph, warm, margin=runner.TimingPlan.margin,
                queued=False, method=timing.DEFAULT_METHOD, flush_kind="dirty",
                default_method=timing.DEFAULT_METHOD) -> runner.TimingPlan:
    """The TimingPlan of timing_options' values; shorthands and methods that do not combine are refused."""
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


def run_processes_option(fn):
    return click.option("--processes", "run_processes", type=click.IntRange(min=1), default=runner.TimingPlan.run_processes,
                        show_default=True,
                        help="Fresh processes per shape (the budget split over them); the mean's interval then "
                             "covers the spread between processes, and a spread over 5% is reported.")(fn)


def output_options(fn):
    fn = click.option("--format", "fmt", type=click.Choice(report.FORMATS), default=None,
                      help="table (default on a terminal), or json / csv / md: one schema for every command "
                           "(harness/report.py), nothing else on stdout.")(fn)
    fn = click.option("-o", "--output", "output_path", type=click.Path(dir_okay=False), default=None,
                      help="Write the json / csv / md output to this file (format from --format, else the "
                           "file's extension); the table still prints.")(fn)
    return fn


def output_format(fmt: str | None, output_path: str | None) -> str:
    """The machine format asked for (``table`` when none): ``--format``, else ``-o``'s extension."""
    if fmt:
        return fmt
    if output_path:
        ext = output_path.rsplit(".", 1)[-1].lower() if "." in output_path else ""
        if ext in ("json", "csv", "md"):
            return ext
        raise UserError(f"-o {output_path}: say --format json|csv|md (the extension does not name one)")
    return "table"


def emit(doc: dict, fmt: str, output_path: str | None) -> None:
    """Writes a machine format's document (nothing for ``table``) to stdout or ``output_path``."""
    if fmt != "table":
        report.emit(doc, fmt, output_path)
        if output_path:
            err_console.print(f"wrote {fmt} to {output_path}")


# ------------------------------------------------------------------------------------- the group
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


# NOTE: imported last, for their side effect: each module registers its commands on ``main`` with
# the options above, which therefore exist by the time these imports run.
from harness.cli import measure, records, devtools, probe  # noqa: E402,F401
