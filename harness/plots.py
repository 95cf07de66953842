"""The lab's plot: the version ladder as % of the floor (``table --plot``), measured or recorded,
beside the writeup's published ladder.

Inputs are plain data: the small dataclasses below, or dicts with the same keys (a
leaderboard.csv row's strings are accepted: "" reads as None), so nothing here needs a runner
outcome or a config object. The arithmetic (% of floor, interval bars, which points a line may
join) is in pure functions; matplotlib is imported only inside the drawing functions (and through
its object API with the Agg canvas, never pyplot's global state), so this module imports, and its
helpers run, without matplotlib.

Each drawing function writes a PNG to ``path`` and returns it as a Path; no points (or rows) to draw
raises ValueError.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, dataclass, fields
from pathlib import Path

FAILED_COLOUR = "#d62728"

# One marker per GPU (a colour-blind reader still tells the lines apart); colours from tab10 in order.
_GPU_MARKERS = ("o", "s", "^", "D", "v", "P")
_SHAPE_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


# ------------------------------------------------------------------------------------------ data
@dataclass(frozen=True)
class LadderPoint:
    """One version's figure on one benchmark shape and GPU.

    ``shape`` is the label the panel is titled with (pc.benchmark_labels: "A", "128x7168x16384"),
    ``floor_us`` the shape's floor on that GPU, ``ci95_lo_us``/``ci95_hi_us`` the mean's 95% interval
    in µs (None where unknown: no bar). ``failed`` marks a ✗ of the lineage (not faster than its
    parent, or no valid result): drawn hollow and red, and never a vertex of the ladder's line."""

    version: str
    shape: str
    gpu: str
    mean_us: float
    floor_us: float
    ci95_lo_us: float | None = None
    ci95_hi_us: float | None = None
    failed: bool = False


def _number(value) -> float | None:
    """A float from a number or a CSV cell; None for None or ""."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return float(value)


def _flag(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "✗", "x")
    return bool(value)


def _coerce(cls, obj, aliases: Mapping[str, str] | None = None):
    """``obj`` as a ``cls``: returned as is when it is one, else built from a mapping's keys
    (``aliases`` maps other key names onto the field names)."""
    if isinstance(obj, cls):
        return obj
    if not isinstance(obj, Mapping):
        raise ValueError(f"expected a {cls.__name__} or a dict, got {type(obj).__name__}")
    data = dict(obj)
    for other, name in (aliases or {}).items():
        if name not in data and other in data:
            data[name] = data[other]
    names = [f.name for f in fields(cls)]
    missing = [f.name for f in fields(cls) if f.name not in data and f.default is MISSING]
    if missing:
        raise ValueError(f"{cls.__name__} needs {', '.join(missing)}; got keys {', '.join(sorted(map(str, obj)))}")
    return cls(**{n: data[n] for n in names if n in data})


def ladder_point(obj) -> LadderPoint:
    """A LadderPoint from itself or a dict of its fields (strings from a CSV are converted)."""
    p = _coerce(LadderPoint, obj)
    return LadderPoint(str(p.version), str(p.shape), str(p.gpu), _number(p.mean_us), _number(p.floor_us),
                       _number(p.ci95_lo_us), _number(p.ci95_hi_us), _flag(p.failed))


# ------------------------------------------------------------------------------- pure arithmetic
def pct_of_floor(mean_us: float, floor_us: float) -> float:
    """floor / mean x 100: 100 is the floor, higher is faster (a linear axis keeps v0's milliseconds
    near 0 instead of squashing the later versions' differences, as µs on a log axis did)."""
    if not (mean_us and mean_us > 0 and math.isfinite(mean_us)):
        raise ValueError(f"mean must be a positive time in µs, got {mean_us!r}")
    if not (floor_us and floor_us > 0 and math.isfinite(floor_us)):
        raise ValueError(f"floor must be a positive time in µs, got {floor_us!r}")
    return floor_us / mean_us * 100.0


def pct_interval(floor_us: float, ci95_lo_us: float | None, ci95_hi_us: float | None) -> tuple[float, float] | None:
    """The 95% interval of the mean, in µs, as % of floor: (floor/hi, floor/lo) x 100, the slow end
    first. None where the interval is unknown or not positive."""
    if ci95_lo_us is None or ci95_hi_us is None or ci95_lo_us <= 0 or ci95_hi_us <= 0:
        return None
    lo, hi = sorted((ci95_lo_us, ci95_hi_us))
    return floor_us / hi * 100.0, floor_us / lo * 100.0


def interval_bars(points: Iterable) -> tuple[list[float], list[float]]:
    """matplotlib's asymmetric ``yerr`` for ``points`` on the % of floor axis: (distances below,
    distances above) each point's % of floor, 0 where a point has no interval. A mean outside its
    own interval (a hand-edited row) gives 0 on that side, never a negative bar."""
    below, above = [], []
    for p in map(ladder_point, points):
        pct = pct_of_floor(p.mean_us, p.floor_us)
        span = pct_interval(p.floor_us, p.ci95_lo_us, p.ci95_hi_us)
        below.append(max(0.0, pct - span[0]) if span else 0.0)
        above.append(max(0.0, span[1] - pct) if span else 0.0)
    return below, above


def version_key(label: str) -> tuple:
    """Ladder order: v0, v1, ..., v10 by number; any other label (a file name) after them, by name."""
    m = re.fullmatch(r"[vV](\d+)", label)
    return (0, int(m.group(1)), "") if m else (1, 0, label)


def ladder_order(labels: Iterable[str]) -> list[str]:
    """The distinct ``labels`` in ladder order (version_key)."""
    return sorted(set(labels), key=version_key)


def gpu_lines(points: Iterable) -> dict[str, list[LadderPoint]]:
    """``points`` split by GPU, each GPU's in ladder order: a line is only ever drawn through one
    GPU's points (figures from different GPUs are not one series). GPUs in order of first appearance."""
    by_gpu: dict[str, list[LadderPoint]] = {}
    for p in map(ladder_point, points):
        by_gpu.setdefault(p.gpu, []).append(p)
    return {gpu: sorted(ps, key=lambda p: version_key(p.version)) for gpu, ps in by_gpu.items()}


def line_segments(points: Iterable, order: list[str], failed_versions: Iterable[str] = ()) -> list[list[LadderPoint]]:
    """The polylines one GPU's points on one shape make on the ladder ``order``.

    A segment joins kept (not failed) points only. Two kept points in a row are joined when every
    version between them in ``order`` is a known dead end (in ``failed_versions``, or failed here):
    the line then follows the lineage past an experiment that was dropped (v8's parent is v6, not
    v7 ✗), and the ✗ stands beside it as a hollow marker. Any other version between them (measured
    on another GPU only, or not at all) breaks the line: joining across it would draw a trend this
    GPU never measured. Hence the caller should pass the whole lineage as ``order``.
    Raises ValueError for points of several GPUs or shapes, or versions missing from ``order``."""
    pts = [ladder_point(p) for p in points]
    if len({(p.gpu, p.shape) for p in pts}) > 1:
        raise ValueError("line_segments takes the points of one GPU and one shape (see gpu_lines)")
    position = {v: i for i, v in enumerate(order)}
    unknown = sorted({p.version for p in pts if p.version not in position}, key=version_key)
    if unknown:
        raise ValueError(f"versions not in the ladder order: {', '.join(unknown)}")
    dead = set(failed_versions)
    dead |= {p.version for p in pts if p.failed}
    kept = sorted((p for p in pts if not p.failed and p.version not in dead), key=lambda p: position[p.version])
    segments: list[list[LadderPoint]] = []
    for p in kept:
        if segments:
            last = segments[-1][-1]
            between = order[position[last.version] + 1:position[p.version]]
            if all(v in dead for v in between):
                segments[-1].append(p)
                continue
        segments.append([p])
    return segments


# NOTE: only a note that starts so: "regressed vs V7" is the writeup's ✗, "mixed: B faster, A/C/D slower" is not
_WRITEUP_FAILED = re.compile(r"\s*(failed|regress|slight regression|slower)", re.IGNORECASE)


def published_from_writeup(writeup, shape_labels: list[str], speed_of_light_us: list[float] | None = None) -> dict | None:
    """The ``published`` argument of ladder() from a config.Writeup (``.gpu``, ``.versions`` of
    {name, us, note?}) and the benchmark labels; a version whose note starts with failed,
    regressed or slower is marked failed (the writeup's ✗). None when there is no writeup."""
    if not writeup or not writeup.versions:
        return None
    return {"gpu": writeup.gpu, "shapes": list(shape_labels), "speed_of_light_us": speed_of_light_us or None,
            "versions": [{"name": v["name"], "us": list(v["us"]),
                          "failed": bool(_WRITEUP_FAILED.match(v.get("note", "") or ""))} for v in writeup.versions]}


def published_points(published: Mapping) -> tuple[list[LadderPoint], list[str], bool]:
    """The writeup's figures as LadderPoints on its own GPU, its versions in its own order, and
    whether they are % of the speed of light (True) or µs (False: no speed of light given, the
    points' floor_us is then 1 and only mean_us means anything)."""
    sol = published.get("speed_of_light_us")
    shapes = published["shapes"]
    points, order = [], []
    for v in published["versions"]:
        figures = list(v["us"])
        if len(figures) != len(shapes):
            raise ValueError(f"published version {v['name']} has {len(figures)} figures for {len(shapes)} shapes")
        if all(x is None for x in figures):
            continue  # NOTE: a writeup version with no timing would only be an empty column
        order.append(v["name"])
        for i, us in enumerate(figures):
            if us is not None:
                points.append(LadderPoint(v["name"], shapes[i], published.get("gpu", "published"), float(us),
                                          float(sol[i]) if sol else 1.0, failed=bool(v.get("failed"))))
    return points, order, bool(sol)


def points_from_rows(rows: Iterable[Mapping], shape_labels: Mapping[str, str], *, gpu: str | None = None,
                     mode: str | None = None, flush: str | None = None, dist: str | None = "competition",
                     failed_versions: Iterable[str] = ()) -> list[LadderPoint]:
    """The best (lowest mean) passing row per version, benchmark shape and GPU of leaderboard.csv
    ``rows`` (csv.DictReader's dicts) as LadderPoints. ``shape_labels`` maps a row's ``shape`` key
    (config Shape.key) to its label; rows of other shapes are left out, as are rows of another
    ``gpu``, timing ``mode`` (a blank timing_mode is cold), ``flush`` (a blank flush is dirty) or
    input distribution ``dist`` (a row without one passes) when given. Versions in
    ``failed_versions`` come back failed. Where a row has no ci95_lo_us/ci95_hi_us (older rows), its interval is mean ± ci95_us."""
    dead = set(failed_versions)
    best: dict[tuple, Mapping] = {}
    for row in rows:
        if row.get("status") != "PASS" or not _number(row.get("mean_us")) or not _number(row.get("floor_us")):
            continue
        if row.get("shape") not in shape_labels or (gpu and row.get("gpu") != gpu):
            continue
        if (mode and (row.get("timing_mode") or "cold") != mode) or (flush and (row.get("flush") or "dirty") != flush):
            continue
        if dist and row.get("dist", dist) != dist:
            continue
        key = (row["version"], shape_labels[row["shape"]], row["gpu"])
        if key not in best or float(row["mean_us"]) < float(best[key]["mean_us"]):
            best[key] = row
    points = []
    for (version, label, gpu_name), row in best.items():
        mean = float(row["mean_us"])
        lo, hi = _number(row.get("ci95_lo_us")), _number(row.get("ci95_hi_us"))
        half = _number(row.get("ci95_us"))
        if (lo is None or hi is None) and half is not None:
            lo, hi = mean - half, mean + half
        points.append(LadderPoint(version, label, gpu_name, mean, float(row["floor_us"]), lo, hi, version in dead))
    benchmark = {label: i for i, label in enumerate(dict.fromkeys(shape_labels.values()))}
    return sorted(points, key=lambda p: (version_key(p.version), benchmark[p.shape], p.gpu))


# ------------------------------------------------------------------------------------ drawing
def _figure(width: float, height: float):
    """A matplotlib Figure on the Agg canvas (no pyplot: no global figure list, no GUI backend)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("plots need matplotlib: pip install -e '.[plot]'") from None
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path) -> Path:
    path = Path(path)
    fig.savefig(path, dpi=110)
    return path


def _draw_series(ax, points: list[LadderPoint], order: list[str], failed_versions: set[str], colour: str,
                 marker: str, label: str | None) -> None:
    """One GPU's (or the writeup's) points on one shape: kept points as filled markers joined by
    line_segments, failed ones hollow red, each with its interval bar."""
    at = {v: i for i, v in enumerate(order)}
    for n, seg in enumerate(line_segments(points, order, failed_versions)):
        ax.plot([at[p.version] for p in seg], [pct_of_floor(p.mean_us, p.floor_us) for p in seg], color=colour,
                marker=marker, markersize=4, linewidth=1.3, label=label if n == 0 else None, zorder=3)
    for failed in (False, True):
        group = [p for p in points if (p.failed or p.version in failed_versions) == failed]
        if not group:
            continue
        below, above = interval_bars(group)
        ax.errorbar([at[p.version] for p in group], [pct_of_floor(p.mean_us, p.floor_us) for p in group],
                    yerr=[below, above], fmt="none", ecolor=FAILED_COLOUR if failed else colour, elinewidth=1,
                    capsize=2, alpha=0.8, zorder=2)
        if failed:
            ax.plot([at[p.version] for p in group], [pct_of_floor(p.mean_us, p.floor_us) for p in group],
                    linestyle="none", marker=marker, markersize=6, markerfacecolor="white",
                    markeredgecolor=FAILED_COLOUR, markeredgewidth=1.4, zorder=4)


def _version_ticks(ax, order: list[str], failed_versions: set[str], show: bool, fontsize: float = 8) -> None:
    ax.set_xticks(range(len(order)))
    ax.set_xlim(-0.6, len(order) - 0.4)
    if not show:
        ax.tick_params(axis="x", labelbottom=False)
        return
    ax.set_xticklabels(order, rotation=90 if len(order) > 16 else 0, fontsize=fontsize)
    for tick, v in zip(ax.get_xticklabels(), order):
        if v in failed_versions:
            tick.set_color(FAILED_COLOUR)


def ladder(path, problem: str, points: Iterable, published: Mapping | None = None, title: str = "", *,
           failed_versions: Iterable[str] = (), lineage: Iterable[str] = (), shapes: list[str] | None = None) -> Path:
    """The version ladder of one lineage: one panel per benchmark shape, x = versions in ladder
    order, y = % of floor (floor / mean x 100) on a linear axis, the 95% interval as bars, one line
    per GPU (line_segments says which points are joined), ✗ versions (``failed_versions``, or a
    point's ``failed``) as hollow red markers with red tick labels.

    ``points``: LadderPoints or dicts of their fields. ``lineage``: the lineage's versions, each given
    a column even without a point (merged with the points' versions in ladder order); pass the whole
    lineage so that a version measured on another GPU, or not at all, leaves a gap in a line.
    ``published``: the writeup's figures (published_from_writeup's dict: gpu, shapes, versions
    [{name, us, failed}], speed_of_light_us) drawn in their own panel below, in % of that GPU's
    speed of light (µs on a log axis without one): never on our GPUs' axes.
    ``shapes``: the panels' order (pc.benchmark_labels; default: each shape's first appearance in
    ``points``); a shape with no point gets no panel."""
    pts = [ladder_point(p) for p in points]
    if not pts:
        raise ValueError(f"{problem}: no points to plot (no version has a figure on any shape)")
    dead = set(failed_versions) | {p.version for p in pts if p.failed}
    order = ladder_order([*lineage, *(p.version for p in pts)])
    present = set(p.shape for p in pts)
    shapes = [s for s in (shapes or []) if s in present] + [s for s in dict.fromkeys(p.shape for p in pts)
                                                           if s not in (shapes or [])]
    gpus = list(dict.fromkeys(p.gpu for p in pts))
    pub = published_points(published) if published else None
    if pub and not pub[0]:
        pub = None

    # NOTE: panels stacked and sharing x, so one version sits in one column all the way down; the
    # writeup's panel has its own x (its versions are not ours) and its own y (another GPU).
    rows = len(shapes) + (1 if pub else 0)
    width = max(10.0, 0.26 * len(order) + 2.5)
    fig = _figure(width, 1.45 + 2.15 * len(shapes) + (2.9 if pub else 0))
    heights = [1.0] * len(shapes) + ([1.25] if pub else [])
    grid = fig.add_gridspec(rows, 1, height_ratios=heights, hspace=0.36 if pub else 0.28)
    colours = {g: f"C{i}" for i, g in enumerate(gpus)}
    markers = {g: _GPU_MARKERS[i % len(_GPU_MARKERS)] for i, g in enumerate(gpus)}
    first = None
    for row, shape in enumerate(shapes):
        ax = fig.add_subplot(grid[row], sharex=first)
        first = first or ax
        ys = []
        floors = []
        for gpu, gpu_pts in gpu_lines(p for p in pts if p.shape == shape).items():
            _draw_series(ax, gpu_pts, order, dead, colours[gpu], markers[gpu], gpu if row == 0 else None)
            ys += [pct_of_floor(p.mean_us, p.floor_us) for p in gpu_pts]
            floors.append(f"{short_gpu(gpu)} {statistics.median(p.floor_us for p in gpu_pts):.1f} µs")
        top = max(100.0, max(ys) * 1.08)
        ax.set_ylim(0, top)
        ax.axhline(100, color="black", linewidth=0.8, linestyle=":", zorder=1)
        ax.grid(axis="y", alpha=0.3)
        ax.grid(axis="x", alpha=0.12)
        ax.set_ylabel("% of floor", fontsize=9)
        ax.set_title(f"{shape}    (floor: {', '.join(floors)})", fontsize=9, loc="left")
        _version_ticks(ax, order, dead, show=row == len(shapes) - 1)
    handles, labels = first.get_legend_handles_labels()
    handles, labels = _with_failed_key(handles, labels)
    fig.suptitle(title or f"{problem}: the version ladder, % of floor (floor / mean; higher is faster)",
                 fontsize=11, x=0.01, ha="left")
    # NOTE: the legend has its own line in the margin under the title, never over a panel's points
    fig.legend(handles, labels, loc="upper left", ncol=len(labels), fontsize=8, frameon=False,
               bbox_to_anchor=(0.5 / width, 1.0 - 0.36 / fig.get_figheight()))
    if pub:
        _published_panel(fig.add_subplot(grid[rows - 1]), published, *pub)
    # NOTE: the bottom margin fits the last panel's rotated tick labels (about 0.07 in a character)
    longest = max(len(_short_version(v)) for v in (pub[1] if pub else order))
    fig.subplots_adjust(left=0.6 / width, right=1 - 0.25 / width, top=1 - 0.95 / fig.get_figheight(),
                        bottom=(0.3 + 0.07 * longest) / fig.get_figheight())
    return _save(fig, path)


def _published_panel(ax, published: Mapping, points: list[LadderPoint], order: list[str], as_pct: bool) -> None:
    """The writeup's versions on its own GPU: one line per shape (colour = shape, unlike the panels
    above, where colour = GPU), failed versions hollow red."""
    gpu = published.get("gpu", "published")
    dead = {p.version for p in points if p.failed}
    at = {v: i for i, v in enumerate(order)}
    for i, shape in enumerate(dict.fromkeys(p.shape for p in points)):
        colour, marker = f"C{(i + 4) % 10}", _SHAPE_MARKERS[i % len(_SHAPE_MARKERS)]
        mine = [p for p in points if p.shape == shape]
        if as_pct:
            _draw_series(ax, mine, order, dead, colour, marker, shape)
            continue
        for n, seg in enumerate(line_segments(mine, order, dead)):
            ax.plot([at[p.version] for p in seg], [p.mean_us for p in seg], color=colour, marker=marker, markersize=4,
                    label=shape if n == 0 else None)
        failed = [p for p in mine if p.failed]
        ax.plot([at[p.version] for p in failed], [p.mean_us for p in failed], linestyle="none", marker=marker,
                markerfacecolor="white", markeredgecolor=FAILED_COLOUR, markersize=6)
    if as_pct:
        top = max(pct_of_floor(p.mean_us, p.floor_us) for p in points)
        ax.set_ylim(0, max(100.0, top * 1.08))
        ax.axhline(100, color="black", linewidth=0.8, linestyle=":")
        ax.set_ylabel("% of speed of light", fontsize=9)
        what = f"% of the {short_gpu(gpu)} speed of light (GPU MODE's table)"
    else:
        ax.set_yscale("log")
        ax.set_ylabel("µs (log)", fontsize=9)
        what = "µs"
    ax.set_title(f"the writeup's own versions on {gpu}, {what}: not comparable with the panels above",
                 fontsize=9, loc="left")
    ax.grid(axis="y", alpha=0.3)
    labels = [_short_version(v) for v in order]
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels(labels, rotation=90 if len(order) > 16 else 0, fontsize=8)
    ax.set_xlim(-0.6, len(order) - 0.4)
    for tick, v in zip(ax.get_xticklabels(), order):
        if v in dead:
            tick.set_color(FAILED_COLOUR)
    ax.legend(fontsize=8, loc="upper left", ncol=2, framealpha=0.85)


def _with_failed_key(handles: list, labels: list) -> tuple[list, list]:
    """The figure legend's GPU entries plus one for the hollow red ✗ marker."""
    from matplotlib.lines import Line2D

    key = Line2D([], [], linestyle="none", marker="o", markerfacecolor="white", markeredgecolor=FAILED_COLOUR,
                 markeredgewidth=1.4, markersize=6)
    return [*handles, key], [*labels, "✗ not faster than its parent (not on the line)"]


def _short_version(name: str, limit: int = 14) -> str:
    """A writeup version's tick label: side tests are file names ("submission_v5_precomp_tma.py")."""
    name = re.sub(r"^(submission_|sub_)|\.py$", "", name)
    return name if len(name) <= limit else name[:limit - 1] + "…"


def short_gpu(name: str) -> str:
    """"NVIDIA H100 80GB HBM3" -> "H100": the model, for titles and table cells."""
    m = re.search(r"\b([A-Z]+\d{2,4}[A-Za-z]*)\b", name.replace("NVIDIA", ""))
    return m.group(1) if m else name


