"""What the ``nvfp4`` commands show on a terminal: rich tables, notes, progress and plots.

Nothing here measures or decides: every function takes what a command computed (an outcome,
recorded rows, a build's results) and draws it. Free text from a docstring or a failure goes
through :func:`fmt_text`, so brackets are shown rather than read as rich markup. The machine
formats (json, csv, md) are harness/report.py's.
"""

from __future__ import annotations

import math
import re
import sys
import time

from dataclasses import dataclass

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from harness import plots, roofline, runner, stats, submissions, timing

# NOTE: piped or captured (a log, CI, a remote call), rich assumes 80 columns and squeezes every
# number column to "…"; there is no terminal to fit, so the tables get the width they need.
# Piped, a note is one line however long (grep finds it whole), as the tables' piped form is (show).
console = Console(highlight=False, width=None if sys.stdout.isatty() else 240, soft_wrap=not sys.stdout.isatty())
err_console = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 240)

STATUS_STYLE = {"PASS": "green", "FAIL": "red", "CRASH": "bold red", "TIMEOUT": "bold red", "TAMPERED": "bold red",
                "IMPLAUSIBLE": "bold red", "SKIP": "yellow"}
VERDICT_STYLE = {"FASTER": "green", "SLOWER": "red", "SAME": "cyan", "AMBIGUOUS": "yellow"}

# What each timing method's figures are, for table titles and notes.
METHOD_TITLES = {"gpumode": "GPU MODE's eval: calls queued in batches after one flush",
               "kernel": "device time of the call's kernels (span), queued behind a sleep",
               "cold": "cold L2, each call from an idle device",
               "queued": "cold L2, one call queued behind the flush",
               "graph": "CUDA graph replays",
               "warm": "warm L2"}

PROCESS_SPREAD_NOTE = 0.05  # run --processes: process means further apart than this are pointed out


# ------------------------------------------------------------------------------------- cells
def fmt_status(s: str) -> str:
    return f"[{STATUS_STYLE.get(s, 'white')}]{s}[/]"


def fmt_text(s: str) -> str:
    """Free text (a docstring's change line, a failure message) as a table cell: escaped, so brackets
    such as `[rows][64]` or `[m=128]` are shown rather than read as rich markup and dropped."""
    return escape(s) if s else s


def fmt_us(x) -> str:
    if x is None:
        return "-"
    return f"{x:,.1f}" if x >= 100 else f"{x:.2f}"


def fmt_ratio(x) -> str:
    """A time over its floor: two decimals near 1, whole numbers with separators far from it
    (v0's 2,214 over the B200 floor, not 2214.19)."""
    if x is None:
        return "-"
    return f"{x:.2f}" if x < 100 else f"{x:,.0f}"


def fmt_interval(lo, hi) -> str:
    return f"[{fmt_us(lo)}, {fmt_us(hi)}]" if lo is not None and math.isfinite(lo) else "-"


def fmt_ratio_interval(lo, hi) -> str:
    """A speedup's interval; none (a single block: nan) is "-", not "[nan, nan]", which rich reads as markup."""
    return f"[{lo:.3f}, {hi:.3f}]" if lo is not None and math.isfinite(lo) and math.isfinite(hi) else "-"


def fmt_verdict(v: str) -> str:
    return f"[{VERDICT_STYLE.get(v, 'dim')}]{v}[/]"


def fmt_version(sub) -> str:
    """The version's label with its ✗ / ≈ mark, and 'attic' where it lives there."""
    return sub.label + (f" {sub.mark}" if sub.mark else "") + (" [dim]attic[/dim]" if sub.in_attic else "")


def _sig(x: float) -> str:
    """Three significant digits below 100 (0.00122, 16.2), whole numbers with separators above."""
    return f"{x:.3g}" if abs(x) < 100 else f"{x:,.0f}"


def method_title(plan) -> str:
    return f"{plan.method}: {METHOD_TITLES.get(plan.method, plan.method)}, {plan.flush} flush"


def version_ranges(labels: list[str]) -> str:
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


# ------------------------------------------------------------------------------ fitted tables
@dataclass(frozen=True)
class Col:
    """A column of a fitted table (:func:`show`). ``drop``: 0 always shown, else left out of a
    terminal too narrow for it, the highest first; ``under``: on a narrow terminal this column's
    figure is shown under that column's, dimmed in brackets, instead of beside it; ``wrap``: a text
    column with a max_width that wraps at the width it is given instead of being cut (a failure's
    message is read whole, a change line's first words are enough)."""
    name: str
    justify: str = "right"
    drop: int = 0
    under: str | None = None
    max_width: int | None = None
    wrap: bool = False


ELASTIC_MIN = 12  # a text column with a max_width (a change line) is cut to fit, never below this


def cut_at_word(cell: str, width: int) -> str:
    """A text cell (rich markup) cut to ``width`` columns at a word boundary with an ellipsis, its markup kept: never
    inside a word, and never right after a number, which would read as a number cut short (rich's own ellipsis cuts at
    a character: a change line's "K above 4096" showed as "K above 409…"). A first word longer than ``width`` is cut
    where it must be."""
    text = Text.from_markup(cell)
    if text.cell_len <= width or width < 2:
        return cell
    plain, trailing = text.plain, " ,;:("  # NOTE: what a cut line does not end in before its "…"
    end = plain.rfind(" ", 0, width)  # NOTE: the kept text and its "…" fit: end <= width - 1
    while end > 0 and plain[:end].rstrip(trailing)[-1:].isdigit():
        end = plain.rfind(" ", 0, end)
    if end <= 0:
        end = width - 1
    kept = text[:end]
    kept.plain = kept.plain.rstrip(trailing)
    kept.append("…")
    return kept.markup


def _rich_table(title: str, cols: list[Col], rows: list[dict], merged: bool, caps: dict | None = None) -> Table:
    # NOTE: no vertical rules, one space between columns and none at the edges: 80 columns hold a version, four shapes,
    # the geomean and two ratios (rich's default box spends 3 characters a column). Every column is
    # no_wrap (a wrap column aside) at a width the caller chose: rich's own squeezing cut the numbers first ("2,0…").
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 0), show_edge=False)
    shown = [c for c in cols if not (merged and c.under)]
    for c in shown:
        cap = (caps or {}).get(c.name, c.max_width)
        table.add_column(c.name, justify=c.justify, no_wrap=not c.wrap, max_width=cap,
                         overflow="fold" if c.wrap else "ellipsis")
    for row in rows:
        cells = []
        for c in shown:
            cell = row.get(c.name, "")
            cap = (caps or {}).get(c.name, c.max_width)
            if cap and not c.wrap and isinstance(cell, str):
                cell = cut_at_word(cell, cap)  # NOTE: before rich, whose ellipsis would cut inside a word or number
            below = [row.get(u.name) for u in cols if merged and u.under == c.name and row.get(u.name)]
            cells.append("\n".join([cell, *(f"[dim]({b})[/dim]" for b in below)]))
        table.add_row(*cells)
    return table


def _width(table: Table) -> int:
    return Measurement.get(console, console.options.update_width(10**4), table).maximum


def fitted(cols: list[Col], rows: list[dict], width: int, title: str = "") -> tuple[list[Col], bool, dict] | None:
    """The widest form of the table that fits ``width`` without cutting a number: every column,
    then the ``under`` figures merged, then the ``drop`` columns left out, highest first; text columns
    with a max_width take what is left, cut with an ellipsis. (columns, merged, widths of the text
    columns), or None when even the narrowest form does not fit."""
    levels = sorted({c.drop for c in cols if c.drop}, reverse=True)
    for level in [None, *levels]:
        kept = [c for c in cols if level is None or not c.drop or c.drop < level]
        elastic = [c for c in kept if c.max_width]
        for merged in (False, True):
            caps = {c.name: min(c.max_width, ELASTIC_MIN) for c in elastic}
            least = _width(_rich_table("", kept, rows, merged, caps))
            if least <= width:
                for c in elastic:
                    caps[c.name] = min(c.max_width, ELASTIC_MIN + (width - least) // len(elastic))
                return kept, merged, caps
    return None


NUMBER = r"-?\d{1,3}(?:,\d{3})*(?:\.\d+)?"


def plain(cell) -> str:
    """A cell's text without markup, on one line, a number or an interval without thousands
    separators (the piped form: awk and a spreadsheet read 11472.0, not "11,472.0"; a shape's
    "m[96,128]" is left alone)."""
    text = " ".join(Text.from_markup(str(cell or "")).plain.split())
    if re.fullmatch(rf"{NUMBER}|\[{NUMBER}, {NUMBER}\]", text):
        return re.sub(r"(?<=\d),(?=\d{3})", "", text)
    return text


def show(title: str, cols: list[Col], rows: list[dict], out: Console | None = None) -> list[Col]:
    """Prints a table in the form its reader needs. Piped (a file, grep, a spreadsheet): a ``# title``
    line, then tab-separated lines, a header and one per row, every column, no markup. On a
    terminal: the widest form that fits (:func:`fitted`), so every number is whole at 80 columns.
    The columns shown (a caller may say a dropped column's figures otherwise)."""
    out = out or console
    if not out.is_terminal:
        lines = [f"# {plain(title)}", "\t".join(c.name for c in cols)]
        lines += ["\t".join(plain(row.get(c.name, "")) or "-" for c in cols) for row in rows]
        # NOTE: written past rich, which would expand the tabs to spaces
        out.file.write("\n".join(lines) + "\n")
        out.file.flush()
        return cols
    kept, merged, caps = fitted(cols, rows, out.width, title) or ([c for c in cols if not c.drop], True, {})
    out.print(_rich_table(title, kept, rows, merged, caps))
    return kept


# ---------------------------------------------------------------------------------- progress
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
        if kind == "note":  # the command's own word on where it stands (a table's jobs done)
            if self.plain:
                self._line(event["text"])
            elif self.status:
                self.status.update(f"{self.title}: {event['text']}")
            return
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


class BuildProgress:
    """Builds finishing in parallel (``harness.build.build``'s ``on_done``, called from its
    threads): on a terminal one status line, n of m built and the failures so far named; elsewhere
    (a log, a remote call's output) one line per finished build, so the log shows each."""

    def __init__(self, title: str, total: int, quiet: bool = False, plain: bool | None = None):
        import threading
        self.title, self.total = title, total
        self.plain = (not quiet) and (not err_console.is_terminal if plain is None else plain)
        self.status = None if quiet or self.plain else err_console.status(f"{title}: 0 of {total} built")
        self.started = time.monotonic()
        self.done: list[str] = []
        self.failed: list[str] = []
        self._lock = threading.Lock()

    def __enter__(self):
        if self.status:
            self.status.__enter__()
        return self

    def __exit__(self, *exc):
        if self.status:
            self.status.__exit__(*exc)

    def count(self) -> str:
        text = f"{len(self.done) - len(self.failed)} of {self.total} built"
        return text + (f", {len(self.failed)} failed: {', '.join(self.failed)}" if self.failed else "")

    def __call__(self, sub, result) -> None:
        name = f"{sub.problem} {sub.label}"
        with self._lock:
            self.done.append(name)
            if not result.ok:
                self.failed.append(name)
            count = self.count()
        if self.plain:
            what = "built" if result.ok else "FAILED"
            err_console.print(f"[{time.monotonic() - self.started:6.1f} s] {self.title}: {name} {what} in "
                              f"{result.seconds:.1f} s ({count})", markup=False, highlight=False, soft_wrap=True)
        elif self.status:
            self.status.update(f"{self.title}: {count}")


# ------------------------------------------------------------------------------ common lines
def sandbox_lines(outcome) -> list[str]:
    """Where each untrusted submission ran: the sandbox, or plainly that none was available."""
    by_sandbox: dict[str, list[str]] = {}  # a compare with a stranger confines both sides alike: said once
    for label, how in (outcome.sandboxes or {}).items():
        by_sandbox.setdefault(how, []).append(label)
    lines = [f"{', '.join(labels)} ran sandboxed: {how}" for how, labels in by_sandbox.items()]
    untrusted = [s.label for s in outcome.submissions if not submissions.in_lab(s)]
    bare = [label for label in untrusted if label not in (outcome.sandboxes or {})]
    if bare:
        from harness import sandbox
        why = "; ".join(dict.fromkeys((outcome.unsandboxed or {}).get(label, "") for label in bare)) or sandbox.describe()
        lines.append(f"{', '.join(bare)}: not sandboxed: {why}")
    return lines


def device_line(dev: dict | None) -> str:
    if not dev:
        return "device: unknown"
    if dev.get("gpu") == "cpu":
        return f"device: CPU (torch {dev.get('torch')}); times are CPU times, no roofline"
    ceil = dev.get("ceilings") or {}
    ceil_txt = (f"; ceilings {ceil['bf16_tflops']:.0f} TFLOP/s bf16, {ceil['copy_tbps']:.2f} TB/s ({ceil.get('source')})"
                if ceil else "")
    return (f"device: {dev.get('gpu')} ({dev.get('sm_count')} SMs, sm_{dev.get('capability', '').replace('.', '')}), "
            f"driver {dev.get('driver') or '?'}, CUDA {dev.get('cuda')}, torch {dev.get('torch')}{ceil_txt}")


def _print_context(outcome) -> None:
    """The device line and where untrusted files ran, dimmed, under a command's table."""
    console.print(f"[dim]{device_line(outcome.device)}[/dim]")
    for line in sandbox_lines(outcome):
        console.print(f"[dim]{fmt_text(line)}[/dim]")


# -------------------------------------------------------------------------------------- list
def print_list(name: str, pc, subs: list, attic_count: int) -> None:
    """One problem's versions (with their ✗ / ≈ marks) and shapes; ``attic_count``: attic versions
    left out of ``subs`` (said in one line). A change's first sentence is cut to the terminal's
    width (piped, it is whole)."""
    cols = [Col("version", "left"), Col("arch", "left"), Col("parent", "left", drop=1),
            Col("analogue", "left", drop=2, max_width=40), Col("change (first sentence)", "left", max_width=200)]
    rows = [{"version": fmt_version(sub), "arch": sub.arch, "parent": sub.parent or "-",
             "analogue": fmt_text(sub.analogue) or "-", "change (first sentence)": fmt_text(sub.summary)} for sub in subs]
    show(name, cols, rows)
    if attic_count:
        console.print(f"  attic: {attic_count} more version(s) kept for the lesson (nvfp4 list {name} --all shows them)")
    console.print("  benchmarks: " + "; ".join(s.label for s in pc.benchmarks))
    console.print(f"  tests: {len(pc.tests)} shapes" + (f" (e.g. {pc.tests[0].label})" if pc.tests else ""))
    if pc.edges:
        console.print("  edges: " + "; ".join(s.label for s in pc.edges))


# ---------------------------------------------------------------------------------- test, run
def shape_name(shape) -> str:
    """A measured shape's name in a table: its short name (:func:`short_shape`: ``A``, ``7168x16384``,
    ``t3`` for a group_gemm tests shape, whose label is a paragraph)."""
    return short_shape(shape.problem, shape.key, shape.set_name, str(shape.index))


def print_shape_names(shapes) -> None:
    """The shapes a table names by a short name other than their label, spelled out once under it."""
    named = {shape_name(s): s.label for s in shapes if shape_name(s) != s.label}
    if named:
        console.print("shapes: " + "; ".join(f"{name} = {label}" for name, label in named.items()), soft_wrap=True)


def print_failures(results) -> None:
    """Why each failed shape failed, a line each under the table: in a cell the message would widen
    the table past 80 columns or be cut."""
    for r in results:
        if r.message and not r.ok:
            why = r.message if r.message.startswith(r.status) else f"{r.status}: {r.message}"
            console.print(f"{shape_name(r.shape)}: [{STATUS_STYLE.get(r.status, 'red')}]{fmt_text(why)}[/]", soft_wrap=True)


def print_test(problem: str, sub, seeds: int, outcome) -> None:
    cols = [Col("shape", "left"), Col("dist", "left"), Col("status", "left"),
            Col("detail", "left", max_width=200, wrap=True)]
    rows = [{"shape": shape_name(r.shape), "dist": r.dist, "status": fmt_status(r.status), "detail": fmt_text(r.message)}
            for r in outcome.results]
    show(f"{problem} {sub.label}: correctness ({seeds} seeds per shape)", cols, rows)
    print_shape_names(r.shape for r in outcome.results)
    for line in sandbox_lines(outcome):
        console.print(f"[dim]{fmt_text(line)}[/dim]")
    n_ok = sum(r.ok for r in outcome.results)
    console.print(f"{n_ok} passed, {len(outcome.results) - n_ok} failed")


BAD_INPUT_OUTCOMES = {"refused": "refused", "right": "ran, right", "ran": "ran (not checked)", "wrong": "ran, WRONG"}


def print_bad_inputs(problem: str, sub, shape, results, outcome) -> None:
    """One row per bad input (reference.bad_inputs): what the version did, and whether a good call
    right after it was still right."""
    cols = [Col("bad input", "left", max_width=60, wrap=True), Col("outcome", "left"),
            Col("message", "left", max_width=120, wrap=True), Col("good call after", "left")]
    rows = []
    for r in results:
        good = "-" if r.good is None else ("right" if r.good else f"WRONG: {r.good_detail}")
        rows.append({"bad input": r.case, "outcome": fmt_status(BAD_INPUT_OUTCOMES.get(r.outcome, r.outcome)),
                     "message": fmt_text(r.detail), "good call after": fmt_text(good)})
    show(f"{problem} {sub.label}: bad inputs on {shape_name(shape)} (each refused with one line, or handled right; "
         "the process alive)", cols, rows)
    print_shape_names([shape])
    for line in sandbox_lines(outcome):
        console.print(f"[dim]{fmt_text(line)}[/dim]")
    n_ok = sum(r.ok for r in results)
    console.print(f"{n_ok} of {len(results)} handled; a crash, a wrong result or a broken good call after fails")


def print_run(problem: str, sub, outcome) -> None:
    plan = outcome.plan
    mode = method_title(plan) if plan else "cold"
    # NOTE: the drop levels leave, on a narrow terminal, the mean, its interval, n and the floor ratios
    # (what a change is judged by); the median, IQR and best go first
    cols = [Col("shape", "left"), Col("status", "left"), Col("mean µs"), Col("95% CI"), Col("median µs", drop=3),
            Col("IQR", drop=3), Col("best µs", drop=3), Col("n")]
    if plan and plan.warm:
        cols.append(Col("warm mean µs", drop=2))
    if plan and plan.method == "kernel":
        cols += [Col("sum µs"), Col("host µs")]
    if plan and plan.method in timing.EVENT_METHODS:
        cols.append(Col("issue µs", drop=2))  # the host µs a call took to return (the compiled clock's)
    cols += [Col("floor µs", drop=1), Col("% of floor"), Col("read µs", drop=1), Col("% of read")]
    rows, not_converged = [], []
    for r in outcome.results:
        st = r.stats[0] if r.stats else None
        cells = {"shape": shape_name(r.shape), "status": fmt_status(r.status), "floor µs": fmt_us(r.floor_us)}
        if st:
            if not st["converged"]:
                not_converged.append(f"{shape_name(r.shape)}: {st['stop_reason']}")
            k = st.get("kernel") or {}
            read_us = r.read_floor_us
            cells.update({"mean µs": fmt_us(st["mean_us"]), "95% CI": fmt_interval(st["ci95_lo_us"], st["ci95_hi_us"]),
                          "median µs": fmt_us(st["median_us"]), "IQR": fmt_us(st["iqr_us"]),
                          "best µs": fmt_us(st["best_us"]), "n": f"{st['n']}" + ("" if st["converged"] else "*"),
                          "warm mean µs": fmt_us(st["warm"]["mean_us"]) if st.get("warm") else "-",
                          "sum µs": fmt_us(k.get("sum_us")), "host µs": fmt_us(k.get("host_us")),
                          "issue µs": fmt_us(st.get("issue_us")),
                          "% of floor": f"{100 * r.floor_us / st['mean_us']:.1f}%" if r.floor_us else "-",
                          "read µs": fmt_us(read_us),
                          "% of read": f"{100 * read_us / st['mean_us']:.1f}%" if read_us else "-"})
        rows.append({c.name: cells.get(c.name, "-") for c in cols})
    show(f"{problem} {sub.label}: {fmt_text(sub.summary or '')} ({mode})", cols, rows)
    print_failures(outcome.results)  # failed, or timed but failed (escape, implausible): why
    print_shape_names(r.shape for r in outcome.results)
    gm = (outcome.geomean or {}).get(sub.label)
    floors = stats.geomean([r.floor_us for r in outcome.results])
    if gm:
        console.print(f"geomean: {fmt_us(gm[0])} µs, 95% CI {fmt_interval(gm[1], gm[2])}"
                      + (f" (floor geomean {fmt_us(floors)} µs)" if floors else ""))
    else:
        console.print("geomean: - (only when every shape passes with a plausible time)")
    for line in not_converged:
        console.print(f"[dim]* did not converge: {line}[/dim]")
    on_gpu = (outcome.device or {}).get("gpu") not in (None, "cpu")  # NOTE: CPU times are host times by nature
    for r in outcome.results:
        st = r.stats[0] if r.stats else {}
        why = timing.host_bound(st.get("mean_us"), st.get("issue_us")) if on_gpu else None
        if why:
            console.print(f"[yellow]{shape_name(r.shape)}: {fmt_text(why)}[/yellow]", soft_wrap=True)
        if st.get("process_spread", 0) > PROCESS_SPREAD_NOTE:
            means = ", ".join(fmt_us(m) for m in st["process_means_us"])
            console.print(f"[yellow]processes disagree on {shape_name(r.shape)}: {means} µs "
                          f"({st['process_spread']:.0%} apart); the interval covers it[/yellow]")
    _print_context(outcome)


# ------------------------------------------------------------------------------------ compare
def time_columns(label_a: str, label_b: str) -> tuple[str, str]:
    """The two sides' time columns; a version against itself (v0 vs v0, the null check) gets A and B
    in them, or the two columns would be one."""
    if label_a == label_b:
        return f"{label_a} (A) µs", f"{label_b} (B) µs"
    return f"{label_a} µs", f"{label_b} µs"


def print_compare(problem: str, sub_a, sub_b, outcome, plan, margin: float, on_gpu: bool) -> None:
    gm = (outcome.geomean or {}).get("ratio")
    processes = {(r.ratio or {}).get("processes") for r in outcome.results}
    over = ("blocks and process generations" if plan.isolated else
            "paired blocks in one process" if processes <= {1, None} else "paired blocks, one process per version")
    count = "procs" if plan.isolated else "pairs"
    time_a, time_b = time_columns(sub_a.label, sub_b.label)
    cols = [Col("shape", "left"), Col("status", "left"), Col(time_a), Col(time_b),
            Col("speedup"), Col("95% CI"), Col(count, drop=1), Col("verdict", "left")]
    # B's outputs against A's, where they were compared (never the peer's: no claim either way); on a
    # terminal too narrow for the column, a line under the table per shape instead
    outputs = [runner.outputs_phrase(r.outputs, [sub_a.label, sub_b.label]) if r.outputs else None
               for r in outcome.results]  # NOTE: per result, not by shape name: two shapes may share a short name
    if any(outputs):
        cols.append(Col("outputs", "left", drop=2))
    rows, notes = [], []  # notes: each shape's speedup by order and by process pair, a line each under the table
    for r, phrase in zip(outcome.results, outputs):
        name = shape_name(r.shape)
        row = {"shape": name, "status": fmt_status(r.status), "outputs": fmt_text(phrase or "-")}
        if r.stats and r.ratio:
            row.update({time_a: fmt_us(r.stats[0]["mean_us"]), time_b: fmt_us(r.stats[1]["mean_us"]),
                        "speedup": f"{r.ratio['speedup']:.3f}x", "95% CI": fmt_ratio_interval(r.ratio["lo"], r.ratio["hi"]),
                        count: str(r.ratio.get("processes" if plan.isolated else "pairs", "")),
                        "verdict": fmt_verdict(r.ratio["verdict"]) if r.ok else "-"})
            orders = r.ratio.get("by_order") or {}
            if all(orders.get(k) for k in ("A", "B")):
                notes.append(f"{name} by order: {orders['A']:.3f}x A first, {orders['B']:.3f}x B first")
            for i, label in ((0, sub_a.label), (1, sub_b.label)):
                why = timing.host_bound(r.stats[i]["mean_us"], r.stats[i].get("issue_us")) if on_gpu else None
                if why:
                    notes.append(f"{name} {label}: {why}")
            gens = r.ratio.get("by_generation") or []
            if len(gens) > 1:
                notes.append(f"{name} by process pair: " + ", ".join(
                    f"{g['speedup']:.3f}x ({g['first_prepared']} prepared first)" for g in gens))
        rows.append({c.name: row.get(c.name, "-") for c in cols})
    shown = show(f"{problem}: {sub_a.label} vs {sub_b.label} (speedup = time {sub_a.label} / time {sub_b.label}, "
                 f"95% interval over {over}, SAME within ±{margin:.1%}; {method_title(plan)})", cols, rows)
    print_failures(outcome.results)
    if not any(c.name == "outputs" for c in shown):
        for r, phrase in zip(outcome.results, outputs):
            if phrase:
                console.print(f"{shape_name(r.shape)} outputs: {fmt_text(phrase)}", soft_wrap=True)
    for note in notes:
        console.print(f"[dim]{fmt_text(note)}[/dim]", soft_wrap=True)
    print_shape_names(r.shape for r in outcome.results)
    name = f"geomean speedup of {sub_b.label} over {sub_a.label}"
    if gm and not on_gpu:
        console.print(f"{name}: {gm[0]:.3f}x (CPU times: no verdict)")
    elif gm:
        console.print(f"{name}: {gm[0]:.3f}x, 95% CI [{gm[1]:.3f}, {gm[2]:.3f}]: "
                      f"{fmt_verdict(stats.verdict(gm[1], gm[2], margin))}")
    else:
        console.print(f"{name}: - (only when every shape passes)")
    _print_context(outcome)


def print_compare_recorded(problem: str, version_a: str, version_b: str, plan, rows: list[dict], geomean) -> None:
    """compare --recorded's table: one row per benchmark shape (``measure.compare_recorded``'s rows)."""
    time_a, time_b = time_columns(version_a, version_b)
    cols = [Col("shape", "left"), Col("gpu", "left"), Col(time_a), Col(time_b), Col("speedup"),
            Col("95% CI"), Col("verdict", "left")]
    table_rows, failed = [], []
    for r in rows:
        if r["status"] != "PASS":
            failed.append(f"{r['shape']}: {r['message']}")
            table_rows.append({"shape": r["shape"], "verdict": fmt_status(r["status"])})
            continue
        table_rows.append({"shape": r["shape"], "gpu": fmt_text(short_gpu(r["gpu"])), time_a: fmt_us(r["mean_a_us"]),
                           time_b: fmt_us(r["mean_b_us"]), "speedup": f"{r['speedup']:.3f}x",
                           "95% CI": fmt_ratio_interval(r["lo"], r["hi"]), "verdict": fmt_verdict(r["verdict"])})
    show(f"{problem}: {version_a} vs {version_b} from recorded runs ({plan.method}, {plan.flush} flush; "
         "speedup = time A / time B; interval from each run's blocks alone: runs of other processes "
         "and days can differ by more)", cols, [{c.name: row.get(c.name, "-") for c in cols} for row in table_rows])
    for line in failed:
        console.print(fmt_text(line), soft_wrap=True)
    if geomean:
        console.print(f"geomean speedup of {version_b} over {version_a}: {geomean[0]:.3f}x")


# -------------------------------------------------------------------------------------- table
def _mean(outcome, i):
    r = outcome.results[i]
    return r.stats[0]["mean_us"] if r.ok and r.stats else None


def short_gpu(name: str) -> str:
    """'NVIDIA H200' -> 'H200': the vendor repeats on every row of a narrow table."""
    return name.removeprefix("NVIDIA ").strip() if name else name


def print_table(problem: str, pc, shapes, outcomes, on_benchmarks: bool) -> None:
    """table's ladder: a row per version measured, a column per shape (short names: A, 7168x16384,
    or t0.. for the tests shapes), the writeup analogue's figure beside (under, on a narrow terminal),
    geomean and ratios to v0 and to the row above; then why each failed shape failed. With fewer
    versions than shapes and no room for a column per shape (a CPU: v0 on the ten tests shapes) the
    table turns: a row per shape."""
    wu = pc.writeup if on_benchmarks else None
    labels = pc.benchmark_labels if on_benchmarks else [f"{s.set_name[0]}{s.index}" for s in shapes]
    dev = next((o.device for o in outcomes if o.device), None)
    on_cpu = (dev or {}).get("gpu") == "cpu"
    plan = next((o.plan for o in outcomes if o.plan), None)
    title = f"{problem}: measured here (µs, mean, {'CPU time' if on_cpu else METHOD_TITLES[plan.method if plan else 'cold']})"
    wu_gpu = short_gpu(wu.gpu) if wu else ""
    if wu:
        title += f"; beside each, the writeup analogue on {wu.gpu}"
    measured = [o for o in outcomes if not o.refused]
    cols = [Col("version", "left"), Col("change", "left", drop=2, max_width=36)]
    for lab in labels:
        cols.append(Col(lab))
        if wu:
            cols.append(Col(f"{lab} {wu_gpu}", under=lab))
    cols += [Col("geomean"), Col("vs v0", drop=1), Col("vs prev", drop=1)]
    rows, base_gm, prev_gm, failures, means_of = [], None, None, [], {}
    for outcome in measured:
        sub = outcome.submissions[0]
        means = [_mean(outcome, i) for i in range(len(shapes))]
        means_of[sub.label] = means
        analogue = wu.analogue(sub.analogue) if wu else None
        row = {"version": fmt_version(sub), "change": fmt_text(sub.change)}
        for i, (lab, m) in enumerate(zip(labels, means)):
            row[lab] = fmt_us(m) if m is not None else f"[red]{outcome.results[i].status}[/red]"
            if analogue and analogue["us"][i] is not None:
                row[f"{lab} {wu_gpu}"] = fmt_us(analogue["us"][i])
        gm = stats.geomean(means)
        if base_gm is None and sub.label == "v0":
            base_gm = gm
        row.update({"geomean": fmt_us(gm), "vs v0": f"{base_gm / gm:.2f}x" if base_gm and gm else "-",
                    "vs prev": f"{prev_gm / gm:.2f}x" if prev_gm and gm else "-"})
        rows.append(row)
        prev_gm = gm or prev_gm
        failures += [(sub.label, lab, r) for lab, r in zip(labels, outcome.results) if not r.ok and r.message]
    turn = measured and console.is_terminal and len(measured) < len(shapes) and not fitted(cols, rows, console.width)
    if turn:
        turned = [Col("shape", "left"), Col("what", "left", drop=1, max_width=60),
                  *[Col(o.submissions[0].label) for o in measured]]
        turned_rows = [{"shape": lab, "what": s.label, **{v: fmt_us(m[i]) for v, m in means_of.items()}}
                       for i, (lab, s) in enumerate(zip(labels, shapes))]
        turned_rows.append({"shape": "geomean", **{v: fmt_us(stats.geomean(m)) for v, m in means_of.items()}})
        show(title, turned, turned_rows)
    elif measured:
        show(title, cols, rows)
    # NOTE: a cell says only the status; why (an IMPLAUSIBLE time's floor, a mismatch) is here, once
    # per version for a reason every shape shares (a build failure, a GPU-only file on a CPU)
    reasons: dict[tuple, list[str]] = {}
    for label, lab, r in failures:
        reasons.setdefault((label, r.status, r.message), []).append(lab)
    for (label, status, message), labs in reasons.items():
        why = message if message.startswith(status) else f"{status}: {message}"
        where = "every shape" if len(labs) == len(labels) > 1 else ", ".join(labs)
        console.print(f"{label} {where}: [{STATUS_STYLE.get(status, 'red')}]{fmt_text(why)}[/]", soft_wrap=True)
    if not on_benchmarks and not turn:  # NOTE: a turned table names each shape in its rows
        console.print("shapes: " + "; ".join(f"{lab} = {s.label}" for lab, s in zip(labels, shapes)))
    floors = [roofline.floor_us(problem, s.params, (dev or {}).get("ceilings")) for s in shapes]
    if any(floors):
        console.print("floor (this GPU): " + ", ".join(f"{lab} {fmt_us(f)}" for lab, f in zip(labels, floors)))
    if on_benchmarks and pc.speed_of_light_b200_us:
        console.print("GPU MODE speed of light (B200, fp4 tensor cores): "
                      + ", ".join(f"{lab} {fmt_us(v)}" for lab, v in zip(labels, pc.speed_of_light_b200_us)))
    console.print(f"[dim]{device_line(dev)}[/dim]")


def print_cpu_preamble(problem: str, subs: list, shapes_note: str | None) -> None:
    """table's first lines on a machine without a GPU: what it can show here and what it cannot."""
    from harness import machine
    runnable = [s.label for s in subs if machine.arch_refusal(s.arch, None) is None]
    gpu_only = [s.label for s in subs if s.label not in runnable]
    console.print(f"[bold]no GPU here:[/bold] CPU times of {version_ranges(runnable) or 'no version'} "
                  f"({'the versions that need' if len(runnable) > 1 else 'the one version that needs'} no GPU)"
                  + (f" on {shapes_note}" if shapes_note else "") + ", comparable with nothing.")
    if gpu_only:
        console.print(f"{len(gpu_only)} versions need an NVIDIA GPU ({version_ranges(gpu_only)}): after the CPU "
                      f"times, their best recorded results (leaderboard.csv) beside the writeup's figures, as "
                      f"nvfp4 table {problem} --recorded prints them.")
    console.print()


def print_not_run(outcomes) -> None:
    """The versions a table could not run here, one line per reason (not one per version: on a CPU
    41 versions share one reason)."""
    reasons: dict[str, list[str]] = {}
    for o in outcomes:
        label = o.submissions[0].label
        reasons.setdefault(o.refused.removeprefix(f"{label}: "), []).append(label)
    for why, labels in reasons.items():
        console.print(f"[yellow]not run here ({len(labels)}):[/yellow] {fmt_text(why)}: {version_ranges(labels)}")


def print_recorded(problem: str, pc, rows: list[dict], mode: str, flush: str, here: str | None) -> None:
    """table --recorded: the best recorded mean per version and benchmark shape (``rows``:
    ``leaderboard.best``'s), the GPU after each figure where several appear; beside each figure the
    writeup analogue's (the version's Analogue line names it), and the two ladders' distance from
    their floors: our time over this GPU's floor beside the writeup's B200 time over GPU MODE's B200
    speed of light (geomeans over the shapes; 1.0 = at the floor). ``here``: this machine's GPU."""
    cpu = [r for r in rows if r["gpu"] == "cpu"]
    rows = [r for r in rows if r["gpu"] != "cpu"]  # NOTE: CPU times compare with no GPU's (run --allow-cpu)
    gpus = sorted({r["gpu"] for r in rows})
    wu = pc.writeup
    wu_gpu = short_gpu(wu.gpu) if wu else ""
    keys = {s.key: lab for s, lab in zip(pc.benchmarks, pc.benchmark_labels)}
    sol = pc.speed_of_light_b200_us
    title = (f"{problem}: best recorded results (µs, mean, {mode}: {METHOD_TITLES.get(mode, mode)}, {flush} flush"
             + ("; GPU after each figure where they differ" if len(gpus) > 1 else f"; {', '.join(gpus)}")
             + (f"; beside each, the writeup analogue on {wu.gpu}" if wu else "") + ")")
    cols = [Col("version", "left")] + ([Col("analogue", "left", drop=1)] if wu else [])
    for lab in pc.benchmark_labels:
        cols.append(Col(lab))
        if wu:
            cols.append(Col(f"{lab} {wu_gpu}", under=lab))
    cols.append(Col("geomean"))
    cols.append(Col("/floor"))
    if wu and sol:
        cols.append(Col(f"{wu_gpu}/floor", under="/floor"))
    by_version: dict = {}
    for r in rows:
        if r["dist"] == "competition" and r["shape"] in keys:
            by_version.setdefault(r["version"], {}).setdefault(keys[r["shape"]], []).append(r)
    subs = {s.label: s for s in submissions.versions(problem, include_attic=True)}
    table_rows = []
    for v in sorted(by_version, key=lambda v: int(v[1:]) if v[1:].isdigit() else 10**6):
        row = {"version": fmt_version(subs[v]) if v in subs else v}
        fastest, ratios = [], []
        for lab in pc.benchmark_labels:
            found = sorted(by_version[v].get(lab, []), key=lambda r: float(r["mean_us"]))
            row[lab] = "; ".join(fmt_us(float(r["mean_us"])) + (f" [dim]({short_gpu(r['gpu'])})[/dim]" if len(gpus) > 1 else "")
                                 for r in found) or "-"
            fastest.append(float(found[0]["mean_us"]) if found else None)
            ratios.append(float(found[0]["mean_us"]) / float(found[0]["floor_us"]) if found and found[0].get("floor_us")
                          else None)
        analogue = wu.analogue(subs[v].analogue) if wu and v in subs else None
        if analogue:
            for i, lab in enumerate(pc.benchmark_labels):
                if analogue["us"][i] is not None:
                    row[f"{lab} {wu_gpu}"] = fmt_us(analogue["us"][i])
            row["analogue"] = fmt_text(analogue["name"])
            wu_ratios = [u / f for u, f in zip(analogue["us"], sol or []) if u is not None and f]
            if wu_ratios and len(wu_ratios) == len(pc.benchmark_labels):
                row[f"{wu_gpu}/floor"] = fmt_ratio(stats.geomean(wu_ratios))
        row["geomean"] = fmt_us(stats.geomean(fastest))
        gm_ratio = stats.geomean(ratios)
        row["/floor"] = fmt_ratio(gm_ratio)
        table_rows.append(row)
    show(title, cols, table_rows)
    console.print("/floor: the geomean over the shapes of our time over the floor of the GPU it ran on"
                  + (f"; {wu_gpu}/floor: the writeup analogue's {wu.gpu} time over GPU MODE's B200 speed of light "
                     "(1.0 = at the floor)" if wu and sol else " (1.0 = at the floor)"))
    console.print(f"recorded on: {', '.join(gpus)}" + (f"; this machine: {here}" if here else ""))
    if cpu:
        console.print(f"[dim]{len(cpu)} CPU rows left out (CPU times compare with no GPU's)[/dim]")
    if here and any(g != here for g in gpus):
        console.print(f"[yellow]note:[/yellow] results from a GPU other than this {here} are not comparable with a run here")


def print_published(pc) -> None:
    if not pc.writeup:
        console.print(f"{pc.name}: no writeup table is published for this problem")
        if pc.speed_of_light_b200_us:
            console.print("GPU MODE speed of light (B200): "
                          + ", ".join(f"{lab} {fmt_us(v)}" for lab, v in zip(pc.benchmark_labels, pc.speed_of_light_b200_us)))
        return
    wu = pc.writeup
    cols = [Col("version", "left"), Col("change", "left", drop=2, max_width=60),
            *[Col(lab) for lab in pc.benchmark_labels], Col("geomean"), Col("note", "left", drop=1, max_width=40)]
    rows = [{"version": fmt_text(v["name"]), "change": fmt_text(v.get("change", "")),
             **{lab: fmt_us(x) for lab, x in zip(pc.benchmark_labels, v["us"])},
             "geomean": fmt_us(stats.geomean(v["us"])), "note": fmt_text(v.get("note", ""))} for v in wu.versions]
    show(f"{pc.name}: the writeup's table as published ({wu.gpu}, µs) — {wu.source}", cols, rows)


def short_shape(problem: str, key: str, shape_set: str = "", index: str = "", cfg=None) -> str:
    """A recorded shape's short name: a benchmark's label (``A``, ``7168x16384``), ``t3`` for a tests
    shape of group_gemm (its full label is a paragraph), else the shape's label."""
    import json

    from harness import config
    cfg = cfg or config.load_unchanged()
    pc = cfg.get(problem)
    if pc:
        for shape, label in zip(pc.benchmarks, pc.benchmark_labels):
            if shape.key == key:
                return label
    if problem == "group_gemm" and shape_set and str(index).isdigit():
        return f"{shape_set[0]}{index}"
    try:
        return config.shape_label(problem, json.loads(key))
    except (ValueError, KeyError, TypeError):
        return key


def print_leaderboard(rows: list[dict], mode: str, flush: str, show_hash: bool = False) -> None:
    """leaderboard show: the best recorded rows (backfilled), by problem, version number, shape, dist;
    shapes by their short names, the GPU without its vendor; ``show_hash``: each version's code hash
    beside it (rows of older code are shown too)."""
    from harness import config, leaderboard

    cfg = config.load()
    cols = [Col("problem", "left", drop=1), Col("version", "left"), Col("shape", "left"), Col("dist", "left", drop=3),
            Col("mean µs"), Col("TFLOP/s", drop=2), Col("TB/s", drop=2), Col("% of floor"), Col("gpu", "left"),
            Col("commit", "left", drop=4), Col("when", "left", drop=5)]

    def order(r):
        m = r["version"].lstrip("v")
        return (r["problem"], int(m) if m.isdigit() else 10**6, r["shape"], r["dist"])

    table_rows = []
    for r in sorted(map(leaderboard.backfill, rows), key=order):  # backfill: a file not yet normalised
        # The file keeps the full commit; 12 digits name it here without widening the table.
        commit = r["git_commit"][:12] + ("+dirty" if r.get("git_dirty") == "true" else "")
        version = r["version"] + (f" ({r.get('code_hash', '')[:8] or '?'})" if show_hash else "")
        table_rows.append({"problem": r["problem"], "version": version,
                           "shape": short_shape(r["problem"], r["shape"], r.get("shape_set", ""), r.get("shape_index", ""), cfg),
                           "dist": r["dist"], "mean µs": fmt_us(float(r["mean_us"])), "TFLOP/s": r.get("tflops") or "-",
                           "TB/s": r.get("tbps") or "-",
                           "% of floor": f"{float(r['pct_of_floor']):.1f}%" if r.get("pct_of_floor") else "-",
                           "gpu": short_gpu(r["gpu"]), "commit": commit, "when": r["timestamp"]})
    show(f"best recorded results ({mode}: {METHOD_TITLES[mode]}, {flush} flush)", cols, table_rows)


# -------------------------------------------------------------------------------------- plots
def require_matplotlib() -> None:
    """--plot needs matplotlib: said before anything is measured, not after."""
    from harness.errors import UserError
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UserError("--plot needs matplotlib: pip install -e '.[plot]'") from None


def _slower_versions(problem: str) -> set[str]:
    """The lineage's ✗ versions (Verdict: slower), drawn apart on a ladder."""
    return {s.label for s in submissions.versions(problem, include_attic=True) if s.verdict == "slower"}


def _published(pc):
    return plots.published_from_writeup(pc.writeup, pc.benchmark_labels, pc.speed_of_light_b200_us)


def _draw(call) -> None:
    """A plot; what it cannot draw (no points, no matplotlib) is one clear error."""
    from harness.errors import UserError
    try:
        call()
    except (ValueError, ImportError) as exc:
        raise UserError(f"--plot: {exc}") from None


def plot_measured(problem: str, pc, shapes, outcomes, on_benchmarks: bool, path) -> None:
    """The ladder measured here: % of floor per version and shape (harness/plots.py)."""
    labels = pc.benchmark_labels if on_benchmarks else [s.label for s in shapes]
    failed = _slower_versions(problem)
    points = [plots.LadderPoint(o.submissions[0].label, lab, (r.device or o.device or {}).get("gpu", "this GPU"),
                                r.stats[0]["mean_us"], r.floor_us, r.stats[0].get("ci95_lo_us"),
                                r.stats[0].get("ci95_hi_us"), o.submissions[0].label in failed)
              for o in outcomes if not o.refused
              for lab, r in zip(labels, o.results) if r.ok and r.stats and r.floor_us]
    _draw(lambda: plots.ladder(path, problem, points, _published(pc) if on_benchmarks else None,
                               title=f"{problem}: the version ladder measured here, % of floor",
                               failed_versions=failed, lineage=[o.submissions[0].label for o in outcomes],
                               shapes=labels))


def plot_recorded(problem: str, pc, rows: list[dict], path, mode: str = timing.DEFAULT_METHOD) -> None:
    """The ladder of the best recorded rows, one line per GPU, never joined across GPUs. The whole
    lineage, attic included: a ✗ version is drawn as a hollow marker the line passes by."""
    failed = _slower_versions(problem)
    keys = {s.key: lab for s, lab in zip(pc.benchmarks, pc.benchmark_labels)}
    lineage = [s.label for s in submissions.versions(problem, include_attic=True)]
    shown = [r for r in rows if r["version"] in lineage]  # NOTE: rows of a deleted version have no place on it
    _draw(lambda: plots.ladder(path, problem, plots.points_from_rows(shown, keys, failed_versions=failed), _published(pc),
                               title=f"{problem}: best recorded, {METHOD_TITLES.get(mode, mode)}: % of floor",
                               failed_versions=failed, lineage=lineage, shapes=pc.benchmark_labels))


# ----------------------------------------------------------------------------------- build
def _bytes(n: int) -> str:
    return f"{n:,}"


def print_full_builds(subs, results, several: bool) -> None:
    table = Table(title="build (imported in a child; --compile-only gives ptxas's registers and spills)",
                  title_justify="left")
    for col in (["problem"] if several else []) + ["version", "status", "time"]:
        table.add_column(col, justify="right" if col == "time" else "left")
    for sub, r in zip(subs, results):
        status = "[bold red]FAIL[/]" if r.status == "FAIL" else "[green]OK[/]"
        table.add_row(*([sub.problem] if several else []), sub.label, status, f"{r.seconds:.1f} s")
    console.print(table)


def print_compile_only(subs, results, several: bool) -> None:
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
    for sub, r in zip(subs, results):
        for k in r.kernels:
            if k.wgmma_serialized:
                console.print(f"[bold yellow]WARNING[/] {sub.label} {escape(k.name)}: ptxas serialises every wgmma "
                              f"({escape(k.wgmma_serialized)}); its tensor work runs one instruction at a time")


# ------------------------------------------------------------------------- sanitize, profile
def print_sanitize(problem: str, sub, tool: str, shape, dist: str, report, log: str) -> None:
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


def print_torch_profile(problem: str, sub, shape, dist: str, res: dict, top: int) -> None:
    n = res["calls"]
    unit = "GPU kernels" if res["on_gpu"] else "CPU operators (self time; no GPU here)"
    table = Table(title=f"{problem} {sub.label} on {shape.label} ({dist}): {unit}, {n} calls", title_justify="left")
    for col in ("name", "calls", "total µs", "µs per custom_kernel", "share"):
        table.add_column(col, justify="left" if col == "name" else "right")
    total = sum(r["total_us"] for r in res["rows"]) or 1.0
    for r in res["rows"][:top]:
        table.add_row(escape(r["name"][:100]), str(r["calls"]), fmt_us(r["total_us"]), fmt_us(r["total_us"] / n),
                      f"{100 * r['total_us'] / total:.1f}%")
    console.print(table)
    console.print(f"sum: {fmt_us(total / n)} µs per custom_kernel call"
                  + (f" ({len(res['rows']) - top} more rows)" if len(res["rows"]) > top else ""))
    if not res["check"]["ok"]:
        console.print(f"[red]the output is wrong:[/red] {escape(res['check']['message'])}")
    console.print(f"[dim]{device_line(res['device'])}[/dim]")


def print_ncu(problem: str, sub, shape, res: dict, sass: int = 0) -> None:
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
                      fmt_us(k.duration_us), f"{gbps:,.0f}", occ, units)
    console.print(table)
    ceil = s.get("ceilings")
    line = f"per custom_kernel call: {fmt_us(s['duration_us'])} µs"
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
    for k in sorted(res.get("sampled", []), key=lambda k: -k.samples):
        if not k.samples:
            continue
        reasons = k.reasons()
        stalled = sum(reasons.values())
        console.print(f"{escape(k.name[:100])}: {k.samples:,} warp samples, stalled in {stalled:,}: " + ", ".join(
            f"{r} {100 * n / k.samples:.0f}%" for r, n in list(reasons.items())[:6]))
        loops = k.loops
        sampled = [loop for loop in loops if loop.samples]
        if sampled:
            table = Table(show_header=True, box=None, pad_edge=False)
            for col in ("wgmma loop", "instructions", "HGMMA", "samples", "% of kernel", "issued %",
                        "stalled on (share of the loop's samples)"):
                table.add_column(col, justify="left" if col in ("wgmma loop", "HGMMA") or col.startswith("stalled") else "right")
            for loop in sampled:
                stalled = sum(loop.reasons.values())
                table.add_row(f"{loop.first}-{loop.last}", f"{loop.instructions:,}", loop.shape, f"{loop.samples:,}",
                              f"{100 * loop.samples / k.samples:.1f}",
                              f"{100 * (loop.samples - stalled) / loop.samples:.0f}",
                              ", ".join(f"{r} {100 * n / loop.samples:.0f}%" for r, n in list(loop.reasons.items())[:4]))
            console.print(table)
            inside = sum(loop.samples for loop in loops)
            console.print(f"outside the wgmma loops: {k.samples - inside:,} samples ({100 * (k.samples - inside) / k.samples:.0f}%)"
                          + (f"; {len(loops) - len(sampled)} more loops without a sample" if len(loops) > len(sampled) else ""))
        table = Table(show_header=True, box=None, pad_edge=False)
        for col in ("address", "samples", "% of kernel", "stalled on (share of the line's samples)", "instruction"):
            table.add_column(col, justify="right" if col in ("samples", "% of kernel") else "left")
        for line in k.top(sass):
            top = sorted(line.reasons.items(), key=lambda kv: -kv[1])[:3]
            table.add_row(line.address, f"{line.samples:,}", f"{100 * line.samples / k.samples:.1f}",
                          ", ".join(f"{r} {100 * n / line.samples:.0f}%" for r, n in top), escape(line.source[:70]))
        console.print(table)
    if "source_csv" in res:
        console.print(f"[dim]instructions' samples: {res['source_csv']}[/dim]")
    if not res["check"]["ok"]:
        console.print(f"[red]the output is wrong:[/red] {escape(res['check']['message'])}")
    console.print(f"[dim]report: {res['report']} (open with ncu-ui or ncu --import)[/dim]")
    console.print(f"[dim]{device_line(res['device'])}[/dim]")


def print_loop_comparison(a, b, res_a: dict, res_b: dict, calls: int) -> None:
    """Two versions' profiled calls by wgmma loop (profile.loop_time), B's time over A's per loop."""
    from harness import profile
    try:
        times = [profile.loop_time(res["sampled"], res["kernels"]) for res in (res_a, res_b)]
    except ValueError as exc:
        console.print(f"[yellow]no loop comparison: {escape(str(exc))}[/yellow]")
        return
    table = Table(title=f"by wgmma loop, µs of a call (each kernel's time split by its warp samples): "
                        f"A = {a.label}, B = {b.label}", title_justify="left")
    for col in ("loop (HGMMA)", "A µs", "B µs", "B - A", "B / A"):
        table.add_column(col, justify="left" if col.startswith("loop") else "right")
    shapes = sorted({s for t in times for s in t if s != profile.OUTSIDE_LOOPS},
                    key=lambda s: [int(x) for x in s.split("x")]) + [profile.OUTSIDE_LOOPS]
    for shape in shapes:
        ta, tb = (t.get(shape, 0.0) / calls for t in times)
        table.add_row(shape, fmt_us(ta), fmt_us(tb), f"{tb - ta:+.2f}", f"{tb / ta:.3f}" if ta else "-")
    total_a, total_b = (sum(t.values()) / calls for t in times)
    table.add_row("all kernels", fmt_us(total_a), fmt_us(total_b), f"{total_b - total_a:+.2f}",
                  f"{total_b / total_a:.3f}" if total_a else "-")
    console.print(table)
    console.print("[dim]ncu's replays, one process each: a ranking of where two versions differ, not a timing "
                  "(compare times them)[/dim]")


# ------------------------------------------------------------------------ diff, ceilings, doctor
def print_diff(problem: str, a, b, d, show_docstring: bool) -> None:
    from rich.text import Text

    table = Table(title=f"{problem}: {a.label} -> {b.label}", title_justify="left", show_header=True)
    table.add_column("")
    table.add_column(a.label)
    table.add_column(b.label)
    for key in ("parent", "change", "verdict", "arch", "analogue"):
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


def print_ceilings(gpu: str, used: dict | None, measured: list[dict]) -> None:
    table = Table(title=f"ceilings, {gpu}", title_justify="left")
    for col in ("figures", "bf16 TFLOP/s", "copy TB/s", "vs used"):
        table.add_column(col, justify="left" if col == "figures" else "right")
    if used:
        table.add_row(f"used by runs ({used['source']})", f"{used['bf16_tflops']:.1f}", f"{used['copy_tbps']:.3f}", "")
    for i, m in enumerate(measured):
        vs = (f"{m['bf16_tflops'] / used['bf16_tflops']:.3f}x / {m['copy_tbps'] / used['copy_tbps']:.3f}x" if used else "")
        table.add_row(f"measured now ({i + 1} of {len(measured)})", f"{m['bf16_tflops']:.1f}", f"{m['copy_tbps']:.3f}", vs)
    console.print(table)
    if used is None:
        console.print("no figures for this model yet: the first run measures and caches them")
    elif used["source"] != "reference":
        console.print("not in ceilings.REFERENCE: floors on this model follow whichever measurement was cached first")


def print_doctor(found: list, can: list) -> None:
    marks = {True: "[green]ok[/]", False: "[yellow]missing[/]", None: ""}
    for title, rows in (("this machine", found), ("what it can do here", can)):
        table = Table(title=title, title_justify="left", show_header=False)
        for _ in range(3):
            table.add_column()
        for c in rows:
            table.add_row(c.item, escape(c.value), marks[c.ok])
        console.print(table)
