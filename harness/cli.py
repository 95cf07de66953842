"""The ``nvfp4`` command line: list, test, run, compare, table, leaderboard."""

from __future__ import annotations

import functools
import json
import math
import sys

import click
from rich.console import Console
from rich.table import Table

from harness import config, isolation, leaderboard, roofline, runner, stats, submissions
from harness.errors import UserError
from reference import PROBLEMS
from reference.distributions import DISTS

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

STATUS_STYLE = {"PASS": "green", "FAIL": "red", "CRASH": "bold red", "TIMEOUT": "bold red", "TAMPERED": "bold red",
                "IMPLAUSIBLE": "bold red", "SKIP": "yellow"}


def clean_errors(fn):
    """Bad input is one line on stderr and exit 2, never a traceback."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except UserError as exc:
            err_console.print(f"[red]error:[/red] {exc}")
            sys.exit(2)
    return wrapper


def _dists(dist: str) -> list[str]:
    return list(DISTS) if dist == "both" else [dist]


def _status(s: str) -> str:
    return f"[{STATUS_STYLE.get(s, 'white')}]{s}[/]"


def _us(x) -> str:
    if x is None:
        return "-"
    return f"{x:,.1f}" if x >= 100 else f"{x:.2f}"


class Progress:
    """A spinner that follows the child's events (importing = compiling, checking, timing)."""

    def __init__(self, title: str, quiet: bool = False):
        self.title = title
        self.status = None if quiet else err_console.status(title)

    def __enter__(self):
        if self.status:
            self.status.__enter__()
        return self

    def __exit__(self, *exc):
        if self.status:
            self.status.__exit__(*exc)

    def __call__(self, event: dict) -> None:
        if not self.status:
            return
        kind = event.get("event")
        if kind == "phase" and event["phase"] == "import":
            self.status.update(f"{self.title}: importing {event['label']} (compiles on first use)...")
        elif kind == "phase" and event["phase"] == "imported":
            self.status.update(f"{self.title}: {event['label']} ready in {event['seconds']:.1f} s")
        elif kind == "start":
            self.status.update(f"{self.title}: {event['item']}")
        elif kind == "progress":
            self.status.update(f"{self.title}: {event.get('item') or ''} {event['stage']}...")


def common_options(fn):
    fn = click.option("--timeout", type=float, default=isolation.DEFAULT_TIMEOUT_S, show_default=True,
                      help="Seconds one shape may take before the child is killed (TIMEOUT).")(fn)
    fn = click.option("--compile-timeout", type=float, default=isolation.DEFAULT_COMPILE_TIMEOUT_S,
                      show_default=True, help="Seconds importing (compiling) a submission may take.")(fn)
    return fn


def timing_options(fn):
    fn = click.option("--budget", type=float, default=3.0, show_default=True,
                      help="Seconds of timing per shape (hard cap; the run is flagged not converged).")(fn)
    fn = click.option("--min-repeats", "min_samples", type=click.IntRange(min=1), default=10, show_default=True,
                      help="Timed calls per shape before the stopping rule may stop.")(fn)
    fn = click.option("--min-time", type=float, default=0.1, show_default=True,
                      help="Seconds of timing per shape before the stopping rule may stop.")(fn)
    fn = click.option("--target", type=float, default=1e-3, show_default=True,
                      help="Stop once the standard error is under this fraction of the mean.")(fn)
    fn = click.option("--pool", type=click.IntRange(min=1), default=8, show_default=True,
                      help="Distinct input sets per block: one timed call each, regenerated every block.")(fn)
    fn = click.option("--graph", is_flag=True,
                      help="Time CUDA-graph replays (launch overhead removed; the in-graph flush is subtracted).")(fn)
    fn = click.option("--warm", is_flag=True, help="Also time warm-L2 calls and report them beside the cold ones.")(fn)
    return fn


def _plan(budget, min_samples, min_time, target, pool, graph, warm, margin=0.01) -> runner.TimingPlan:
    if graph and warm:
        raise UserError("--graph and --warm do not combine (the graph replays with its own flush)")
    return runner.TimingPlan.from_options(budget_s=budget, min_samples=min_samples, min_time_s=min_time,
                                          target=target, pool=pool, mode="graph" if graph else "cold",
                                          warm=warm, margin=margin)


def _record(outcome) -> str:
    rows, sidecars = runner.leaderboard_rows(outcome)
    path = leaderboard.append(rows, sidecars=sidecars)
    return f"recorded {len(rows)} rows in {path} (raw samples in {leaderboard.sidecar_dir(path)}/)"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main():
    """Check, time and record NVFP4 kernels (gemv, gemm, dual_gemm, group_gemm)."""


# ------------------------------------------------------------------------------------------ list
@main.command("list")
@click.argument("problem", required=False)
@clean_errors
def list_cmd(problem):
    """Problems, their versions (change line, arch) and shapes."""
    cfg = config.load()
    for name in [problem] if problem else PROBLEMS:
        submissions.check_problem(name)
        pc = cfg[name]
        table = Table(title=f"{name}", title_justify="left")
        table.add_column("version")
        table.add_column("arch")
        table.add_column("analogue")
        table.add_column("change")
        for sub in submissions.versions(name):
            table.add_row(sub.label, sub.arch, sub.analogue or "-", sub.change)
        console.print(table)
        console.print("  benchmarks: " + "; ".join(s.label for s in pc.benchmarks))
        console.print(f"  tests: {len(pc.tests)} shapes" + (f" (e.g. {pc.tests[0].label})" if pc.tests else ""))


# ------------------------------------------------------------------------------------------ test
@main.command("test")
@click.argument("problem")
@click.argument("version")
@click.option("--dist", type=click.Choice([*DISTS, "both"]), default="both", show_default=True)
@click.option("--seeds", type=click.IntRange(min=1), default=3, show_default=True, help="Seeds per shape.")
@click.option("--shapes", "shapes_spec", default="tests", show_default=True, help="tests, benchmarks, or an index.")
@click.option("--shape", "custom", multiple=True, help="A custom shape: JSON or m=..,n=..,k=..,l=.. (repeatable).")
@common_options
@clean_errors
def test_cmd(problem, version, dist, seeds, shapes_spec, custom, timeout, compile_timeout):
    """Correctness on the tests shapes: poisoned outputs, input mutation check, several seeds."""
    sub = submissions.resolve(problem, version)
    cap = runner.local_capability()
    shapes, _ = runner.select_shapes(problem, shapes_spec, custom, cap is not None)
    with Progress(f"test {problem} {sub.label}") as prog:
        outcome = runner.run([sub], shapes, _dists(dist), "test", seeds=seeds, timeout_s=timeout,
                             compile_timeout_s=compile_timeout, capability=cap, progress=prog)
    if outcome.refused:
        err_console.print(f"[red]refused:[/red] {outcome.refused}")
        sys.exit(1)
    table = Table(title=f"{problem} {sub.label}: correctness ({seeds} seeds per shape)", title_justify="left")
    for col in ("shape", "dist", "status", "detail"):
        table.add_column(col)
    for r in outcome.results:
        table.add_row(r.shape.label, r.dist, _status(r.status), r.message)
    console.print(table)
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
@click.option("--json", "as_json", is_flag=True, help="Print results as JSON on stdout.")
@timing_options
@common_options
@clean_errors
def run_cmd(problem, version, shapes_spec, custom, dist, record, as_json, budget, min_samples, min_time, target, pool,
            graph, warm, timeout, compile_timeout):
    """Correctness first, then timing: mean, median, IQR, 95% CI, best, % of the floor; geomean."""
    plan = _plan(budget, min_samples, min_time, target, pool, graph, warm)
    sub = submissions.resolve(problem, version)
    cap = runner.local_capability()
    shapes, note = runner.select_shapes(problem, shapes_spec, custom, cap is not None)
    if note and not as_json:
        err_console.print(f"[yellow]note:[/yellow] {note}")
    with Progress(f"run {problem} {sub.label}", quiet=as_json) as prog:
        outcome = runner.run([sub], shapes, [dist], "run", plan=plan, timeout_s=timeout,
                             compile_timeout_s=compile_timeout, capability=cap, progress=prog)
    if outcome.refused:
        err_console.print(f"[red]refused:[/red] {outcome.refused}")
        sys.exit(1)
    if as_json:
        click.echo(json.dumps(_json_outcome(outcome), indent=1))
    else:
        _print_run(problem, sub, outcome)
    if record:
        line = _record(outcome)
        if not as_json:
            console.print(line)
    sys.exit(0 if outcome.ok else 1)


def _json_outcome(outcome: runner.JobOutcome) -> dict:
    return {"device": outcome.device, "versions": [s.label for s in outcome.submissions],
            "results": [{"shape": r.shape.params, "label": r.shape.label, "dist": r.dist, "status": r.status,
                         "message": r.message, "stats": r.stats, "floor_us": r.floor_us,
                         "physical_floor_us": r.physical_floor_us, "ratio": r.ratio} for r in outcome.results],
            "geomean": outcome.geomean, "timing": outcome.plan.describe() if outcome.plan else None}


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


def _print_run(problem, sub, outcome: runner.JobOutcome) -> None:
    plan = outcome.plan
    mode = "CUDA graph replays" if plan and plan.mode == "graph" else "cold L2"
    table = Table(title=f"{problem} {sub.label}: {sub.change or ''} ({mode})", title_justify="left")
    cols = ["shape", "status", "mean µs", "95% CI", "median µs", "IQR", "best µs", "n"]
    if plan and plan.warm:
        cols.append("warm mean µs")
    cols += ["floor µs", "% of floor"]
    for col in cols:
        table.add_column(col, justify="left" if col in ("shape", "status") else "right")
    not_converged = []
    for r in outcome.results:
        st = r.stats[0] if r.stats else None
        if st:
            pct = f"{100 * r.floor_us / st['mean_us']:.1f}%" if r.floor_us else "-"
            n_txt = f"{st['n']}" + ("" if st["converged"] else "*")
            if not st["converged"]:
                not_converged.append(f"{r.shape.label}: {st['stop_reason']}")
            cells = [r.shape.label, _status(r.status), _us(st["mean_us"]), _interval(st["ci95_lo_us"], st["ci95_hi_us"]),
                     _us(st["median_us"]), _us(st["iqr_us"]), _us(st["best_us"]), n_txt]
            if plan and plan.warm:
                cells.append(_us(st["warm"]["mean_us"]) if st.get("warm") else "-")
            table.add_row(*cells, _us(r.floor_us), pct)
            if not r.ok and r.message:  # timed, but failed (escape, implausible): say why
                table.add_row("", f"[dim]{r.message}[/dim]", *[""] * (len(cols) - 2))
        else:
            table.add_row(r.shape.label, _status(r.status), *["-"] * (len(cols) - 4), _us(r.floor_us), "-")
            table.add_row("", f"[dim]{r.message}[/dim]", *[""] * (len(cols) - 2))
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
    console.print(f"[dim]{_device_line(outcome.device)}[/dim]")


# --------------------------------------------------------------------------------------- compare
VERDICT_STYLE = {"FASTER": "green", "SLOWER": "red", "SAME": "cyan", "AMBIGUOUS": "yellow"}


@main.command("compare")
@click.argument("problem")
@click.argument("version_a")
@click.argument("version_b")
@click.option("--shapes", "shapes_spec", default=None)
@click.option("--shape", "custom", multiple=True)
@click.option("--dist", type=click.Choice(list(DISTS)), default="competition", show_default=True)
@click.option("--margin", type=float, default=0.01, show_default=True,
              help="SAME when the whole 95% interval of the ratio is within this fraction of 1.")
@click.option("--processes", type=click.IntRange(min=1), default=3, show_default=True,
              help="Generations of fresh processes per shape (the budget is split over them).")
@timing_options
@common_options
@clean_errors
def compare_cmd(problem, version_a, version_b, shapes_spec, custom, dist, margin, processes, budget, min_samples,
                min_time, target, pool, graph, warm, timeout, compile_timeout):
    """A and B in separate processes, taking turns block by block on identical inputs; verdicts
    FASTER / SLOWER / SAME / AMBIGUOUS from a paired bootstrap of the time ratio."""
    plan = _plan(budget, min_samples, min_time, target, pool, graph, warm, margin)
    plan.processes = processes
    sub_a = submissions.resolve(problem, version_a)
    sub_b = submissions.resolve(problem, version_b)
    cap = runner.local_capability()
    shapes, note = runner.select_shapes(problem, shapes_spec, custom, cap is not None)
    if note:
        err_console.print(f"[yellow]note:[/yellow] {note}")
    with Progress(f"compare {problem} {sub_a.label} vs {sub_b.label}") as prog:
        outcome = runner.run([sub_a, sub_b], shapes, [dist], "compare", plan=plan, timeout_s=timeout,
                             compile_timeout_s=compile_timeout, capability=cap, progress=prog)
    if outcome.refused:
        err_console.print(f"[red]refused:[/red] {outcome.refused}")
        sys.exit(1)
    table = Table(title=f"{problem}: {sub_a.label} vs {sub_b.label} (speedup = time {sub_a.label} / time {sub_b.label}, "
                        f"paired block bootstrap over {processes} process generation(s), SAME within ±{margin:.1%})",
                  title_justify="left")
    for col in ("shape", "status", f"{sub_a.label} µs", f"{sub_b.label} µs", "speedup", "95% CI", "verdict"):
        table.add_column(col)
    for r in outcome.results:
        if r.stats and r.ratio:
            v = r.ratio["verdict"]
            table.add_row(r.shape.label, _status(r.status), _us(r.stats[0]["mean_us"]), _us(r.stats[1]["mean_us"]),
                          f"{r.ratio['speedup']:.3f}x", f"[{r.ratio['lo']:.3f}, {r.ratio['hi']:.3f}]",
                          f"[{VERDICT_STYLE[v]}]{v}[/]" if r.ok else r.message)
        else:
            table.add_row(r.shape.label, _status(r.status), "-", "-", "-", "-", r.message)
    console.print(table)
    gm = (outcome.geomean or {}).get("ratio")
    if gm:
        v = stats.verdict(gm[1], gm[2], margin)
        console.print(f"geomean speedup of {sub_b.label} over {sub_a.label}: {gm[0]:.3f}x, 95% CI [{gm[1]:.3f}, {gm[2]:.3f}]: "
                      f"[{VERDICT_STYLE[v]}]{v}[/]")
    else:
        console.print(f"geomean speedup of {sub_b.label} over {sub_a.label}: - (only when every shape passes)")
    console.print(f"[dim]{_device_line(outcome.device)}[/dim]")
    sys.exit(0 if outcome.ok else 1)


# ----------------------------------------------------------------------------------------- table
@main.command("table")
@click.argument("problem")
@click.option("--versions", default=None, help="Comma-separated versions (default: the whole lineage).")
@click.option("--shapes", "shapes_spec", default=None, help="benchmarks (default on a GPU) or tests.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None, help="Write the ladder plot (PNG).")
@click.option("--record", is_flag=True, help="Append every measured row to leaderboard.csv.")
@click.option("--published", is_flag=True, help="Print the writeup's table as published, measure nothing.")
@click.option("--recorded", is_flag=True, help="Print the best recorded results (leaderboard.csv), measure nothing.")
@timing_options
@common_options
@clean_errors
def table_cmd(problem, versions, shapes_spec, plot_path, record, published, recorded, budget, min_samples, min_time,
              target, pool, graph, warm, timeout, compile_timeout):
    """Every version x benchmark shape measured here, beside the writeup analogue's B200 figures."""
    plan = _plan(budget, min_samples, min_time, target, pool, graph, warm)
    submissions.check_problem(problem)
    cfg = config.load()
    pc = cfg[problem]
    if published:
        _print_published(pc)
        return
    if recorded:
        _print_recorded(problem, pc)
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
        with Progress(f"table {problem} {sub.label}") as prog:
            outcome = runner.run([sub], shapes, ["competition"], "run", plan=plan, timeout_s=timeout,
                                 compile_timeout_s=compile_timeout, capability=cap, progress=prog)
        outcomes.append(outcome)
        if record and not outcome.refused:
            _record(outcome)
    _flag_speedups(outcomes)
    _print_table(problem, pc, shapes, outcomes, on_benchmarks)
    _note_recorded_gpus(problem, outcomes)
    if plot_path:
        _plot(problem, pc, shapes, outcomes, on_benchmarks, plot_path)
        console.print(f"plot written to {plot_path}")
    skipped = [o for o in outcomes if o.refused]
    if skipped:
        console.print(f"[yellow]{len(skipped)} version(s) not run here:[/yellow] "
                      + "; ".join(o.refused for o in skipped))
    failed = [o for o in outcomes if not o.refused and not o.ok]
    sys.exit(1 if failed else 0)


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
    if not here:
        return
    rows = [r for r in leaderboard.read() if r["problem"] == problem and r.get("status") == "PASS"]
    for o in outcomes:
        sub = o.submissions[0]
        gpus = sorted({r["gpu"] for r in rows if r["version"] == sub.label and r.get("code_hash") == sub.source_hash[:16]})
        others = [g for g in gpus if g != here]
        if others:
            console.print(f"[yellow]note:[/yellow] {sub.label}'s recorded results come from {', '.join(others)}"
                          + (f" as well as {here}" if here in gpus else f", not this {here}") + ": compare within one GPU")


def _print_recorded(problem, pc) -> None:
    rows = leaderboard.best(leaderboard.read(), problem)
    if not rows:
        console.print(f"no recorded results for {problem} (use --record)")
        return
    cap = runner.local_capability()
    here = None
    if cap is not None:
        import torch
        here = torch.cuda.get_device_name(0)
    gpus = sorted({r["gpu"] for r in rows})
    keys = {(s.key) : lab for s, lab in zip(pc.benchmarks, pc.benchmark_labels)}
    table = Table(title=f"{problem}: best recorded results (µs, mean; GPU after each figure where they differ)",
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


def _mean(outcome, i):
    r = outcome.results[i]
    return r.stats[0]["mean_us"] if r.ok and r.stats else None


def _print_table(problem, pc, shapes, outcomes, on_benchmarks) -> None:
    wu = pc.writeup if on_benchmarks else None
    labels = pc.benchmark_labels if on_benchmarks else [f"{s.set_name[0]}{s.index}" for s in shapes]
    dev = next((o.device for o in outcomes if o.device), None)
    on_cpu = (dev or {}).get("gpu") == "cpu"
    title = f"{problem}: measured here (µs, mean, {'CPU time' if on_cpu else 'L2 flushed'})"
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
            table.add_row(sub.label, sub.change, *(["skip"] * len(shapes)), "-", "-", "-")
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
        table.add_row(sub.label, sub.change, *cells, _us(gm), vs0, vsp)
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
        table.add_row(v["name"], v.get("change", ""), *[_us(x) for x in v["us"]], _us(roofline.geomean(v["us"])),
                      v.get("note", ""))
    console.print(table)


def _plot(problem, pc, shapes, outcomes, on_benchmarks, path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError("--plot needs matplotlib (pip install matplotlib)") from None
    labels = pc.benchmark_labels if on_benchmarks else [s.label for s in shapes]
    fig, ax = plt.subplots(figsize=(10, 5))
    ran = [o for o in outcomes if not o.refused]
    xs = [o.submissions[0].label for o in ran]
    for i, lab in enumerate(labels):
        ys = [_mean(o, i) for o in ran]
        line, = ax.plot(xs, [y if y is not None else float("nan") for y in ys], marker="o", label=f"{lab} (here)")
        if on_benchmarks and pc.writeup:
            pub = [(o.submissions[0].label, pc.writeup.version(o.submissions[0].analogue or ""))
                   for o in ran]
            pts = [(x, v["us"][i]) for x, v in pub if v and v["us"][i] is not None]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle="--", marker="x", color=line.get_color(), alpha=0.6,
                        label=f"{lab} (writeup {pc.writeup.gpu})")
    ax.set_yscale("log")
    ax.set_ylabel("µs (log)")
    ax.set_title(f"{problem}: the version ladder")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


# ----------------------------------------------------------------------------------- leaderboard
@main.command("leaderboard")
@click.argument("problem", required=False)
@clean_errors
def leaderboard_cmd(problem):
    """Best recorded result per version and shape (from leaderboard.csv)."""
    if problem:
        submissions.check_problem(problem)
    rows = leaderboard.best(leaderboard.read(), problem)
    if not rows:
        console.print("no recorded results" + (f" for {problem}" if problem else "") + " (use --record)")
        return
    table = Table(title="best recorded results", title_justify="left")
    for col in ("problem", "version", "shape", "dist", "mean µs", "% of floor", "gpu", "commit", "when"):
        table.add_column(col)

    def order(r):
        m = r["version"].lstrip("v")
        return (r["problem"], int(m) if m.isdigit() else 10**6, r["shape"], r["dist"])

    for r in sorted(rows, key=order):
        commit = r["git_commit"] + ("+dirty" if r.get("git_dirty") == "true" else "")
        pct = f"{float(r['pct_of_floor']):.1f}%" if r.get("pct_of_floor") else "-"
        table.add_row(r["problem"], r["version"], r["shape"], r["dist"], _us(float(r["mean_us"])), pct, r["gpu"],
                      commit, r["timestamp"])
    console.print(table)


if __name__ == "__main__":
    main()
