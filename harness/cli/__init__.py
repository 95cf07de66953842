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
import math
import os
import sys
from pathlib import Path

import click
from rich.markup import escape

from harness import isolation, report, runner, timing
from harness.cli.render import err_console
from harness.errors import UserError


def say_unreadable(problems, include_attic: bool) -> None:
    """A warning for each file of these lineages that cannot be loaded as a version (left out of the
    listing, table or records being shown: harness.submissions.versions)."""
    from harness import submissions
    for problem in problems:
        for label, why in submissions.unreadable(problem, include_attic).items():
            err_console.print(f"[yellow]warning:[/yellow] {problem} {label} left out (it cannot be loaded): {escape(why)}",
                              soft_wrap=True)


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


class Number(click.ParamType):
    """Every numeric option's type: a finite number (``int`` or ``float``) in a range, checked when the
    command line is parsed. NOTE: click's FloatRange lets nan and inf through (nan compares false with
    every bound): ``--timeout nan`` reached the runner as "harness error: ValueError" and ``--budget nan``
    never stopped, so one type for all, with no second way to spell a number."""

    def __init__(self, kind: type = float, min: float | None = None, max: float | None = None,
                 min_open: bool = False, what: str = ""):
        self.kind, self.min, self.max, self.min_open, self.what = kind, min, max, min_open, what
        self.name = "integer" if kind is int else "number"

    def bounds(self) -> str:
        """The range in words, as --help and the error show it."""
        parts = []
        if self.min is not None:
            parts.append(f"{'>' if self.min_open else '>='} {self.min:g}")
        if self.max is not None:
            parts.append(f"<= {self.max:g}")
        return " and ".join(parts)

    def get_metavar(self, param, ctx=None):  # NOTE: click 8.2 passes ctx, 8.1 does not
        return self.name.upper()

    def convert(self, value, param, ctx):
        if isinstance(value, self.kind) and not isinstance(value, bool):
            number = value
        else:
            try:
                number = self.kind(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not {'an integer' if self.kind is int else 'a number'}", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        low_ok = self.min is None or (number > self.min if self.min_open else number >= self.min)
        if not low_ok or (self.max is not None and number > self.max):
            self.fail(f"{value!r}: must be {self.bounds()}" + (f" ({self.what})" if self.what else ""), param, ctx)
        return number


SECONDS = Number(float, min=0, min_open=True, what="seconds")
COUNT = Number(int, min=1)


class Lab(click.Group):
    """The ``nvfp4`` group: a usage error (a bad value, an unknown option, a missing argument) is one
    line on stderr and exit 2, like a UserError, rather than click's three-line usage block."""

    def invoke(self, ctx):
        from harness import paths
        why = paths.checkout_conflict()  # NOTE: after --version and --help, which change nothing
        if why:
            err_console.print(f"[red]error:[/red] {escape(why)}", soft_wrap=True)
            sys.exit(2)
        return super().invoke(ctx)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as exc:
            hint = f" (see: {exc.ctx.command_path} -h)" if isinstance(exc, click.UsageError) and exc.ctx else ""
            err_console.print(f"[red]error:[/red] {escape(exc.format_message())}{escape(hint)}", soft_wrap=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            err_console.print("aborted")
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


# ----------------------------------------------------------------------------- shared options
def common_options(fn):
    fn = click.option("--untrusted", is_flag=True,
                      help="Run every submission in the sandbox (harness/sandbox.py); automatic for a file outside "
                           "the lab's submissions/.")(fn)
    fn = click.option("--timeout", type=SECONDS, default=isolation.DEFAULT_TIMEOUT_S, show_default=True,
                      help="Seconds one shape may take before the child is killed (TIMEOUT).")(fn)
    fn = click.option("--compile-timeout", type=SECONDS, default=isolation.DEFAULT_COMPILE_TIMEOUT_S,
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


# The methods a user can ask for (and a recorded row can hold): timing.METHODS less "warm", which is
# a pass beside cold's (--warm), never a method of its own.
METHODS = tuple(m for m in timing.METHODS if m != "warm")


def timing_options(method: str = timing.DEFAULT_METHOD, budget: float = 3.0, several_methods: bool = False,
                   compare: bool = False, target: float = 1e-3):
    """The timing options of run, table and compare; ``method``, ``budget`` and ``target`` are the
    command's defaults; ``several_methods``: --method may be repeated (a tuple of methods, table's). ``compare``
    leaves out what compare would ignore: --min-repeats and --target (it stops by its verdict and
    --precision) and --warm (its verdict is on the method's times alone)."""
    def decorate(fn):
        fn = click.option("--budget", type=SECONDS, default=budget, show_default=True,
                          help="Seconds of timing per shape (hard cap; the run is flagged not converged).")(fn)
        if not compare:
            fn = click.option("--min-repeats", "min_samples", type=COUNT, default=10, show_default=True,
                              help="Samples per shape before the stopping rule may stop.")(fn)
            fn = click.option("--target", type=Number(float, min=0, min_open=True, max=1, what="a fraction of the mean"),
                              default=target, show_default=True,
                              help="Stop once the standard error is under this fraction of the mean.")(fn)
        fn = click.option("--min-time", type=Number(float, min=0, what="seconds"), default=0.1, show_default=True,
                          help="Seconds of timing per shape before the stopping rule may stop.")(fn)
        fn = click.option("--pool", type=COUNT, default=8, show_default=True,
                          help="Distinct input sets per block, regenerated every block (gpumode: the competition's "
                               "batch, 50 or 15, where it has one, so --pool is refused there).")(fn)
        fn = click.option("--method", type=click.Choice(METHODS), multiple=several_methods,
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
        if not compare:
            fn = click.option("--warm", is_flag=True, help="With --method cold: also time warm-L2 calls beside the cold ones.")(fn)
        return fn
    return decorate


def timing_plan(budget, min_samples, min_time, target, pool, graph, warm, margin=runner.TimingPlan.margin,
                queued=False, method=timing.DEFAULT_METHOD, flush_kind="dirty",
                default_method=timing.DEFAULT_METHOD) -> runner.TimingPlan:
    """The TimingPlan of timing_options' values; shorthands and methods that do not combine are refused.
    ``min_samples`` and ``target`` None: the stop rule's defaults (compare has no such options)."""
    shorthands = [name for name, on in (("graph", graph), ("queued", queued)) if on]
    if len(shorthands) > 1:
        raise UserError("--graph and --queued do not combine: choose one timing method")
    if shorthands:
        if method not in (default_method, shorthands[0]):
            raise UserError(f"--{shorthands[0]} and --method {method} do not combine: choose one timing method")
        method = shorthands[0]
    if warm and method != "cold":
        raise UserError(f"--warm times warm calls beside cold-method ones; it does not combine with --method {method}")
    rule = {k: v for k, v in (("min_samples", min_samples), ("target", target)) if v is not None}
    return runner.TimingPlan.from_options(budget_s=budget, min_time_s=min_time, pool=pool, method=method,
                                          flush=flush_kind, warm=warm, margin=margin, **rule)


def refuse_batched_pool(plans: list[runner.TimingPlan], problems: list[str]) -> None:
    """--pool where every method and problem times GPU MODE's batches (gpumode on gemm, dual_gemm,
    group_gemm): a block there is the competition's batch of distinct input sets
    (``TimingPlan.pool_size``), so the pool asked for would be dropped (`run gemm v3 --pool 2` timed 50)."""
    if problems and all(p.batch(name) > 1 for p in plans for name in problems):
        batches = ", ".join(f"{name}'s {plans[0].batch(name)}" for name in problems)
        refuse(("pool",), f"with the gpumode method on {', '.join(problems)}: a block is the competition's batch of "
                          f"distinct input sets ({batches}); another --method takes --pool")


def run_processes_option(fn):
    return click.option("--processes", "run_processes", type=COUNT, default=runner.TimingPlan.run_processes,
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


def given(*names: str) -> list[str]:
    """The options among ``names`` (parameter names) that the user set on the command line, as
    their flags (``--output``), in the command's order."""
    ctx = click.get_current_context()
    from click.core import ParameterSource
    flags = []
    for param in ctx.command.params:
        if param.name in names and ctx.get_parameter_source(param.name) not in (None, ParameterSource.DEFAULT):
            flags.append(max(param.opts, key=len) if isinstance(param, click.Option) else param.human_readable_name)
    return flags


def refuse(names: tuple[str, ...] | list[str], why: str) -> None:
    """A UserError naming the options among ``names`` the user set, which have no effect ``why``
    (e.g. "with --recorded: it measures nothing"): an option shown in --help and then silently
    ignored is a result the user believes and did not get."""
    flags = given(*names)
    if flags:
        names = flags[0] if len(flags) == 1 else f"{', '.join(flags[:-1])} and {flags[-1]}"
        raise UserError(f"{names} {'has' if len(flags) == 1 else 'have'} no effect {why}")


def writable_file(path: str, option: str) -> Path:
    """``path`` checked before minutes of measuring: not a folder, its folder there and writable."""
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        raise UserError(f"{option} {path}: is a folder; name a file")
    if not folder.is_dir():
        raise UserError(f"{option} {path}: no folder {folder}")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UserError(f"{option} {path}: not writable")
    return target


def output_format(fmt: str | None, output_path: str | None) -> str:
    """The machine format asked for (``table`` when none): ``--format``, else ``-o``'s extension;
    ``-o``'s file is checked here, before anything runs."""
    if output_path and fmt == "table":
        # NOTE: the table goes to the terminal whatever -o says, so -o's file was never written
        # (`list --format table -o x.json` exited 0 with no x.json)
        raise UserError(f"-o {output_path} writes json, csv or md, and --format table prints to the terminal only: "
                        "give --format json|csv|md, or leave out -o")
    ext = output_path.rsplit(".", 1)[-1].lower() if output_path and "." in output_path else ""
    if fmt and ext in ("json", "csv", "md") and ext != fmt:
        # NOTE: --format wins, so `--format csv -o out.json` wrote CSV into a file named .json
        raise UserError(f"-o {output_path} names a {ext} file and --format says {fmt}: make them agree")
    if output_path:
        writable_file(output_path, "-o")
    if fmt:
        return fmt
    if output_path:
        if ext in ("json", "csv", "md"):
            return ext
        raise UserError(f"-o {output_path}: say --format json|csv|md (the extension does not name one)")
    return "table"


def emit(doc: dict, fmt: str, output_path: str | None) -> None:
    """Writes a machine format's document (nothing for ``table``) to stdout or ``output_path``."""
    if fmt != "table":
        try:
            report.emit(doc, fmt, output_path)
        except OSError as exc:
            raise UserError(f"-o {output_path}: cannot write it ({exc.strerror or exc})") from None
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


@click.group(cls=Lab, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=lambda ctx, _p, v: (click.echo(_version_text()), ctx.exit()) if v and not ctx.resilient_parsing else None,
              help="The package version and the git commit, then exit.")
def main():
    """Check, time and record NVFP4 kernels (gemv, gemm, dual_gemm, group_gemm)."""


# NOTE: imported last, for their side effect: each module registers its commands on ``main`` with
# the options above, which therefore exist by the time these imports run.
from harness.cli import measure, records, devtools, probe  # noqa: E402,F401
