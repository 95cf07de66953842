"""The recorded results: ``nvfp4 leaderboard`` (show, the default; merge).

The record's schema and every rule about rows (which are comparable, which is best, what a merge
skips) are :mod:`harness.leaderboard`'s; this module reads options and prints.
"""

from __future__ import annotations

import click

from harness import leaderboard, report, runner, submissions, timing
from harness.cli import METHODS, clean_errors, emit, main, output_format, output_options, say_unreadable
from harness.cli import render
from harness.cli.render import console
from reference import PROBLEMS


class _ShowByDefault(click.Group):
    """``nvfp4 leaderboard [PROBLEM] [--method M] [--flush F]`` lists as it always has: arguments that
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
@click.option("--method", type=click.Choice(METHODS), default=timing.DEFAULT_METHOD,
              show_default=True, help="Which timing method's rows (a row is only ever compared with rows of its own method).")
@click.option("--flush", "flush_kind", type=click.Choice(timing.FLUSHES), default="dirty", show_default=True,
              help="Which flush's rows.")
@click.option("--every-hash", is_flag=True,
              help="Also the best rows of a version's older code (each code hash apart); by default only the "
                   "code its file holds now.")
@output_options
@clean_errors
def leaderboard_cmd(problem, method, flush_kind, every_hash, fmt, output_path):
    """Best recorded result per version and shape (from leaderboard.csv) of the code each version's
    file holds now; also `nvfp4 leaderboard [PROBLEM]`."""
    if problem:
        submissions.check_problem(problem)
    fmt = output_format(fmt, output_path)
    say_unreadable([problem] if problem else PROBLEMS, include_attic=True)  # NOTE: their rows count as any code's
    recorded = leaderboard.read()
    rows = leaderboard.best(recorded, problem, method, flush_kind,
                            hashes=leaderboard.current_hashes([problem] if problem else PROBLEMS), every_hash=every_hash)
    if fmt != "table":
        plan = runner.TimingPlan(method=method, flush=flush_kind)
        emit(report.document("leaderboard", problem, [leaderboard.backfill(r) for r in rows], plan=plan), fmt,
             output_path)
        if not output_path:
            return
    if not rows:
        console.print(f"no recorded {method} results ({flush_kind} flush)" + (f" for {problem}" if problem else "")
                      + " (use --record)")
        return
    render.print_leaderboard(rows, method, flush_kind, show_hash=every_hash)
    slow = leaderboard.to_retime(recorded, rows)
    if slow:
        # NOTE: wrapped by the console: the list runs long (27 group_gemm versions at the fix)
        console.print(f"note: the best rows of {len(slow)} versions ({', '.join(f'{p} {v}' for p, v in slow)}) may have "
                      "been timed in a process that had opened a profiler (docs/methodology.md): "
                      f"`nvfp4 table {problem or 'PROBLEM'} --record --missing --method {method}` times them again",
                      markup=False, highlight=False)


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
