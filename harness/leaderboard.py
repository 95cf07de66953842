"""leaderboard.csv: append-only, one row per (problem, version, shape, dist) measurement,
appended under an exclusive file lock so concurrent runs never interleave or corrupt rows.

Each row names a reproducibility sidecar (``run_id``): ``<leaderboard>_runs/<run_id>.json.gz``
with the raw per-call samples, seeds, source hash, versions (torch, CUDA, driver, nvcc, harness),
GPU UUID, clocks, power limit, telemetry per block, and the timing and flush mode.
"""

from __future__ import annotations

import csv
import fcntl
import gzip
import io
import json
import secrets
from pathlib import Path

from harness import paths

COLUMNS = (
    "timestamp", "problem", "version", "file", "sha256", "code_hash", "shape_set", "shape_index", "shape", "dist",
    "status", "mean_us", "median_us", "std_us", "ci95_us", "best_us", "n", "converged",
    "floor_us", "pct_of_floor", "gpu", "sm_count", "driver", "cuda", "torch",
    "git_commit", "git_dirty", "message",
    # Added with the sidecars; older rows leave them empty.
    "run_id", "gpu_uuid", "timing_mode", "ci95_lo_us", "ci95_hi_us", "iqr_us",
    # Added with the named timing methods (harness.timing.METHODS) and flushes; older rows: dirty.
    "flush", "batch", "read_floor_us", "kernel_sum_us", "host_us",
)


def sidecar_dir(path: Path | None = None) -> Path:
    path = Path(path) if path else paths.leaderboard_path()
    return path.with_name(path.stem + "_runs")


def read_sidecar(run_id: str, path: Path | None = None) -> dict:
    with gzip.open(sidecar_dir(path) / f"{run_id}.json.gz", "rt") as f:
        return json.load(f)


def append(rows: list[dict], path: Path | None = None, sidecars: list[dict] | None = None) -> Path:
    """Appends ``rows``; with ``sidecars`` (one per row) writes each first and links it by run_id."""
    path = Path(path) if path else paths.leaderboard_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    if sidecars is not None:
        if len(sidecars) != len(rows):
            raise ValueError("one sidecar per row")
        folder = sidecar_dir(path)
        folder.mkdir(parents=True, exist_ok=True)
        rows = [dict(row) for row in rows]
        for row, side in zip(rows, sidecars):
            row["run_id"] = f"{row['problem']}-{row['version']}-{secrets.token_hex(6)}"
            with gzip.open(folder / f"{row['run_id']}.json.gz", "wt") as f:
                json.dump(side, f, default=str)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    for row in rows:
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in COLUMNS})
    with open(path, "a+", newline="") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            f.seek(0)
            header = f.readline().strip()
            if header and header != ",".join(COLUMNS):
                _upgrade_header(f, header)
            f.seek(0, 2)
            if f.tell() == 0:
                f.write(",".join(COLUMNS) + "\n")
            f.write(buf.getvalue())
            f.flush()
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    return path


def _upgrade_header(f, header: str) -> None:
    """An older file whose columns are a prefix of ours: rewrite it in place (lock held) with the
    full header, old rows padded with empty cells. Anything else is refused, never guessed."""
    old = header.split(",")
    if old != list(COLUMNS[:len(old)]):
        raise ValueError(f"{f.name}: unknown leaderboard columns; expected a prefix of {','.join(COLUMNS)}")
    f.seek(0)
    rows = list(csv.DictReader(f))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: row.get(k) or "" for k in COLUMNS})
    f.seek(0)
    f.truncate()
    f.write(buf.getvalue())


def read(path: Path | None = None) -> list[dict]:
    path = Path(path) if path else paths.leaderboard_path()
    if not path.exists():
        return []
    with open(path, newline="") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_SH)
        try:
            return list(csv.DictReader(f))
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def timing_mode(row: dict) -> str:
    """The row's timing method; rows from before the column existed were all cold mode."""
    return row.get("timing_mode") or "cold"


def flush_kind(row: dict) -> str:
    """The row's L2 flush; rows from before the column existed all zeroed (dirty)."""
    return row.get("flush") or "dirty"


def best(rows: list[dict], problem: str | None = None, mode: str = "cold", flush: str = "dirty") -> list[dict]:
    """Fastest passing row per (problem, version, shape, dist, gpu) among rows of one timing method
    and flush: a kernel or gpumode figure never stands in for a cold one, nor a clean flush's for a
    dirty one's."""
    winners: dict[tuple, dict] = {}
    for row in rows:
        if row.get("status") != "PASS" or not row.get("mean_us"):
            continue
        if (problem and row["problem"] != problem) or timing_mode(row) != mode or flush_kind(row) != flush:
            continue
        key = (row["problem"], row["version"], row["shape"], row["dist"], row["gpu"])
        if key not in winners or float(row["mean_us"]) < float(winners[key]["mean_us"]):
            winners[key] = row
    return list(winners.values())
