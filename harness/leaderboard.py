"""leaderboard.csv: append-only, one row per (problem, version, shape, dist) measurement,
appended under an exclusive file lock so concurrent runs never interleave or corrupt rows."""

from __future__ import annotations

import csv
import fcntl
import io
from pathlib import Path

from harness import paths

COLUMNS = (
    "timestamp", "problem", "version", "file", "sha256", "code_hash", "shape_set", "shape_index", "shape", "dist",
    "status", "mean_us", "median_us", "std_us", "ci95_us", "best_us", "n", "converged",
    "floor_us", "pct_of_floor", "gpu", "sm_count", "driver", "cuda", "torch",
    "git_commit", "git_dirty", "message",
)


def append(rows: list[dict], path: Path | None = None) -> Path:
    path = Path(path) if path else paths.leaderboard_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    for row in rows:
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in COLUMNS})
    with open(path, "a+", newline="") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            f.seek(0, 2)
            if f.tell() == 0:
                f.write(",".join(COLUMNS) + "\n")
            f.write(buf.getvalue())
            f.flush()
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    return path


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


def best(rows: list[dict], problem: str | None = None) -> list[dict]:
    """Fastest passing row per (problem, version, shape, dist, gpu)."""
    winners: dict[tuple, dict] = {}
    for row in rows:
        if row.get("status") != "PASS" or not row.get("mean_us"):
            continue
        if problem and row["problem"] != problem:
            continue
        key = (row["problem"], row["version"], row["shape"], row["dist"], row["gpu"])
        if key not in winners or float(row["mean_us"]) < float(winners[key]["mean_us"]):
            winners[key] = row
    return list(winners.values())
