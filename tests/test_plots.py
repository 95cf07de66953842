"""harness.plots: the arithmetic behind the plots (% of floor, interval bars, which points a ladder
line joins, reading recorded rows) without matplotlib, and each plot written as a PNG from small
synthetic data (skipped where matplotlib is missing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness import plots
from harness.plots import LadderPoint

REPO_ROOT = Path(__file__).resolve().parent.parent
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def point(version, mean, *, shape="A", gpu="H200", floor=50.0, lo=None, hi=None, failed=False):
    return LadderPoint(version, shape, gpu, mean, floor, lo, hi, failed)


# ------------------------------------------------------------------------------- % of floor
def test_pct_of_floor_is_floor_over_mean():
    assert plots.pct_of_floor(100.0, 50.0) == pytest.approx(50.0)
    assert plots.pct_of_floor(50.0, 50.0) == pytest.approx(100.0)
    # v0's milliseconds sit near 0 on the linear axis instead of stretching it
    assert plots.pct_of_floor(4605.5, 76.3) == pytest.approx(1.657, abs=1e-3)


@pytest.mark.parametrize("mean, floor", [(0.0, 50.0), (-1.0, 50.0), (None, 50.0), (100.0, 0.0), (float("inf"), 5.0)])
def test_pct_of_floor_refuses_non_positive_times(mean, floor):
    with pytest.raises(ValueError):
        plots.pct_of_floor(mean, floor)


def test_pct_interval_maps_the_slow_end_to_the_low_percentage():
    lo_pct, hi_pct = plots.pct_interval(50.0, 90.0, 110.0)
    assert lo_pct == pytest.approx(50 / 110 * 100)
    assert hi_pct == pytest.approx(50 / 90 * 100)
    assert plots.pct_interval(50.0, 110.0, 90.0) == pytest.approx((lo_pct, hi_pct))  # either order
    assert plots.pct_interval(50.0, None, 110.0) is None
    assert plots.pct_interval(50.0, 0.0, 110.0) is None


def test_interval_bars_are_distances_from_the_point():
    below, above = plots.interval_bars([point("v1", 100.0, lo=90.0, hi=110.0), point("v2", 200.0)])
    assert below[0] == pytest.approx(50.0 - 50 / 110 * 100)
    assert above[0] == pytest.approx(50 / 90 * 100 - 50.0)
    assert (below[1], above[1]) == (0.0, 0.0)  # no interval: no bar


def test_interval_bars_never_negative_for_a_mean_outside_its_interval():
    below, above = plots.interval_bars([point("v1", 100.0, lo=101.0, hi=120.0)])
    assert below[0] > 0 and above[0] == 0.0


# ------------------------------------------------------------------------------- lines and order
def test_ladder_order_is_numeric_then_file_names():
    assert plots.ladder_order(["v10", "v2", "mine.py", "v0", "v2"]) == ["v0", "v2", "v10", "mine.py"]


def test_gpu_lines_split_by_gpu_in_ladder_order():
    lines = plots.gpu_lines([point("v10", 1, gpu="H100"), point("v2", 1, gpu="H200"), point("v9", 1, gpu="H100")])
    assert list(lines) == ["H100", "H200"]
    assert [p.version for p in lines["H100"]] == ["v9", "v10"]
    assert [p.version for p in lines["H200"]] == ["v2"]


def versions_of(segments):
    return [[p.version for p in seg] for seg in segments]


def test_line_skips_a_failed_version_and_leaves_it_off_the_line():
    pts = [point("v6", 100), point("v7", 120, failed=True), point("v8", 90)]
    assert versions_of(plots.line_segments(pts, ["v6", "v7", "v8"])) == [["v6", "v8"]]


def test_line_breaks_where_this_gpu_has_no_figure():
    # v25 was measured on another GPU only: joining v24 to v26 would draw a trend nobody measured here
    pts = [point("v24", 100), point("v26", 90)]
    assert versions_of(plots.line_segments(pts, ["v24", "v25", "v26"])) == [["v24"], ["v26"]]


def test_line_crosses_a_known_dead_end_with_no_figure():
    pts = [point("v16", 100), point("v19", 90)]
    order = ["v16", "v17", "v18", "v19"]
    assert versions_of(plots.line_segments(pts, order, failed_versions={"v17", "v18"})) == [["v16", "v19"]]
    assert versions_of(plots.line_segments(pts, order, failed_versions={"v17"})) == [["v16"], ["v19"]]


def test_line_segments_take_one_gpu_and_known_versions():
    with pytest.raises(ValueError, match="one GPU"):
        plots.line_segments([point("v1", 1, gpu="H100"), point("v2", 1, gpu="H200")], ["v1", "v2"])
    with pytest.raises(ValueError, match="v3"):
        plots.line_segments([point("v3", 1)], ["v1", "v2"])


def test_ladder_point_reads_csv_strings():
    p = plots.ladder_point({"version": "v3", "shape": "A", "gpu": "H200", "mean_us": "100.5", "floor_us": "50",
                            "ci95_lo_us": "", "ci95_hi_us": "101", "extra": "ignored"})
    assert p == LadderPoint("v3", "A", "H200", 100.5, 50.0, None, 101.0, False)
    with pytest.raises(ValueError, match="floor_us"):
        plots.ladder_point({"version": "v3", "shape": "A", "gpu": "H200", "mean_us": 1.0})


# ------------------------------------------------------------------------------- recorded rows
SHAPES = {'{"m":1}': "A", '{"m":2}': "B"}


def row(version, shape, mean, *, gpu="NVIDIA H200", status="PASS", mode="", flush="", lo="", hi="", half=""):
    return {"version": version, "shape": shape, "gpu": gpu, "status": status, "mean_us": str(mean), "floor_us": "10",
            "timing_mode": mode, "flush": flush, "ci95_lo_us": lo, "ci95_hi_us": hi, "ci95_us": half}


def test_points_from_rows_keep_the_best_passing_row_per_version_shape_and_gpu():
    rows = [row("v1", '{"m":1}', 120, lo="118", hi="122"), row("v1", '{"m":1}', 100, lo="99", hi="101"),
            row("v1", '{"m":1}', 50, status="FAIL"), row("v1", '{"m":9}', 10),
            row("v1", '{"m":1}', 90, gpu="NVIDIA H100 80GB HBM3"), row("v0", '{"m":2}', 1000, half="5")]
    pts = plots.points_from_rows(rows, SHAPES, failed_versions={"v0"})
    assert [(p.version, p.shape, p.gpu, p.mean_us) for p in pts] == [
        ("v0", "B", "NVIDIA H200", 1000.0), ("v1", "A", "NVIDIA H100 80GB HBM3", 90.0), ("v1", "A", "NVIDIA H200", 100.0)]
    assert (pts[2].ci95_lo_us, pts[2].ci95_hi_us) == (99.0, 101.0)
    assert (pts[0].ci95_lo_us, pts[0].ci95_hi_us) == (995.0, 1005.0)  # older rows: mean ± ci95_us
    assert pts[0].failed and not pts[2].failed


def test_points_from_rows_filters_gpu_mode_and_flush():
    rows = [row("v1", '{"m":1}', 100), row("v1", '{"m":1}', 80, mode="kernel"), row("v1", '{"m":1}', 70, flush="clean"),
            row("v1", '{"m":1}', 60, gpu="NVIDIA H100 80GB HBM3"), dict(row("v1", '{"m":1}', 50), dist="adversarial")]
    pts = plots.points_from_rows(rows, SHAPES, gpu="NVIDIA H200", mode="cold", flush="dirty")
    assert [p.mean_us for p in pts] == [100.0]  # a blank timing_mode is cold, a blank flush dirty; competition inputs


def test_published_from_writeup_marks_failed_notes_only():
    writeup = SimpleNamespace(gpu="NVIDIA B200", versions=[
        {"name": "V0", "us": [100.0, 200.0]},
        {"name": "V1", "us": [50.0, None], "note": "regressed vs V0"},
        {"name": "V2", "us": [40.0, 80.0], "note": "mixed: B faster, A slower"},
        {"name": "x.py", "us": [None, None], "note": "failed: no timings"}])
    pub = plots.published_from_writeup(writeup, ["A", "B"], [10.0, 20.0])
    assert [v["failed"] for v in pub["versions"]] == [False, True, False, True]
    pts, order, as_pct = plots.published_points(pub)
    assert order == ["V0", "V1", "V2"]  # a version with no figure is no column
    assert as_pct and len(pts) == 5
    assert plots.pct_of_floor(pts[0].mean_us, pts[0].floor_us) == pytest.approx(10.0)  # of the speed of light
    assert plots.published_points(dict(pub, speed_of_light_us=None))[2] is False
    assert plots.published_from_writeup(None, ["A"]) is None


# ------------------------------------------------------------------------------- no points, no matplotlib
def test_empty_inputs_raise_value_error(tmp_path):
    with pytest.raises(ValueError, match="no points"):
        plots.ladder(tmp_path / "l.png", "gemm", [])


def test_module_and_helpers_work_without_matplotlib(tmp_path):
    # NOTE: in a child process: reloading the module here would give later tests other classes
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"  # import matplotlib now raises ImportError
        "from harness import plots\n"
        "assert plots.pct_of_floor(100.0, 25.0) == 25.0\n"
        "try:\n"
        f"    plots.ladder({str(tmp_path / 'l.png')!r}, 'gemm', [plots.LadderPoint('v1', 'A', 'H200', 100.0, 50.0)])\n"
        "except ImportError as exc:\n"
        "    assert 'matplotlib' in str(exc)\n"
        "else:\n"
        "    raise SystemExit('no ImportError')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------------------------- the PNGs
def is_png(path) -> bool:
    data = path.read_bytes()
    return len(data) > 1000 and data.startswith(PNG_MAGIC)


def ladder_points():
    pts = []
    for shape, floor in (("A", 76.0), ("B", 38.0)):
        for v, mean in (("v0", 4000.0), ("v1", 900.0), ("v2", 400.0), ("v3", 450.0), ("v4", 300.0)):
            mean *= floor / 76.0
            pts.append(point(v, mean, shape=shape, floor=floor, lo=mean * 0.97, hi=mean * 1.03, failed=v == "v3"))
        pts.append(point("v6", 200.0 * floor / 76.0, shape=shape, gpu="H100", floor=floor))
        pts.append(point("v7", 180.0 * floor / 76.0, shape=shape, gpu="H100", floor=floor))
    return pts


def test_ladder_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    published = {"gpu": "NVIDIA B200", "shapes": ["A", "B"], "speed_of_light_us": [18.8, 10.7],
                 "versions": [{"name": "V0", "us": [47000.0, 24000.0]}, {"name": "V1", "us": [217.0, 208.0]},
                              {"name": "V2", "us": [230.0, None], "failed": True}, {"name": "V3", "us": [60.0, 50.0]}]}
    out = plots.ladder(tmp_path / "ladder.png", "group_gemm", ladder_points(), published,
                       lineage=["v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7"], shapes=["B", "A"])
    assert out == tmp_path / "ladder.png" and is_png(out)


def test_ladder_without_writeup_from_dicts(tmp_path):
    pytest.importorskip("matplotlib")
    pts = [{"version": v, "shape": "128x4096x7168", "gpu": "NVIDIA H200", "mean_us": str(m), "floor_us": "9.6"}
           for v, m in (("v0", "800"), ("v1", "90"), ("v2", "70"))]
    assert is_png(plots.ladder(tmp_path / "l.png", "gemm", pts, failed_versions={"v1"}, title="gemm, cold"))


def test_ladder_merges_the_lineage_with_the_points_versions(tmp_path):
    pytest.importorskip("matplotlib")
    # v7's file is gone but its recorded row still plots; v1..v6 get empty columns
    assert is_png(plots.ladder(tmp_path / "l.png", "gemm", [point("v7", 10.0), point("v0", 100.0)], lineage=["v0", "v1", "v6"]))
