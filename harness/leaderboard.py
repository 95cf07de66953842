"""leaderboard.csv: append-only, one row per (problem, version, shape, dist) measurement,
appended under an exclusive file lock so concurrent runs never interleave or corrupt rows.

Each row names a reproducibility sidecar (``run_id``): ``<run_id>.json.gz`` with the raw per-call
samples, seeds, source hash, versions (torch, CUDA, driver, nvcc, harness), GPU UUID, clocks,
power limit, telemetry per block, and the timing method and flush. The lab's own leaderboard.csv
stays in git; its new sidecars go to the build cache (``.build/runs/``, raw data, not the record),
and the ones recorded before that live in one archive beside it, ``leaderboard_runs.tar`` (one
tracked file instead of hundreds). Any other leaderboard file (``NVFP4_LEADERBOARD``, a device
run's export) keeps its sidecars beside it in ``<stem>_runs/``, which ``merge`` copies from.

The file is plain RFC 4180 CSV that pandas.read_csv and duckdb.read_csv load with their defaults:
one header, every line ended by "\n" alone (a quoted cell's own line breaks too), the shape's
dimensions as numeric columns beside its JSON, and throughput beside the times.

This module is the record's schema: the columns (``COLUMNS``), the ones derived from others
(``derived_columns``), a measurement's figures (``figures``, also the output documents' columns,
harness/report.py) and how a finished run becomes rows and sidecars (``outcome_rows``).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import secrets
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from harness import locking, machine, paths
from harness.errors import UserError

if TYPE_CHECKING:  # NOTE: annotations only; runner needs nothing from here, so no cycle either way
    from harness.runner import JobOutcome, ShapeResult

COLUMNS = (
    "timestamp", "problem", "version", "file", "sha256", "code_hash", "shape_set", "shape_index", "shape", "dist",
    "status", "mean_us", "median_us", "std_us", "ci95_us", "best_us", "n", "converged",
    "floor_us", "pct_of_floor", "gpu", "sm_count", "driver", "cuda", "torch",
    "git_commit", "git_dirty", "message",
    # Added with the sidecars; older rows leave them empty.
    "run_id", "gpu_uuid", "timing_mode", "ci95_lo_us", "ci95_hi_us", "iqr_us",
    # Added with the named timing methods (harness.timing.METHODS) and flushes; older rows: dirty.
    "flush", "batch", "read_floor_us", "kernel_sum_us", "host_us",
    # Added so a tool can filter and plot without parsing `shape`: its dimensions (prefixed, as `n`
    # is the sample count; a group_gemm list as "80;176;128") and TFLOP/s, TB/s of mean_us.
    # Derived from `shape` and `mean_us` (``derived_columns``), so older rows are backfilled.
    "shape_m", "shape_n", "shape_k", "shape_l", "shape_g", "tflops", "tbps",
)
SHAPE_COLUMNS = {"m": "shape_m", "n": "shape_n", "k": "shape_k", "l": "shape_l", "g": "shape_g"}
DERIVED_COLUMNS = (*SHAPE_COLUMNS.values(), "tflops", "tbps")
# What makes a row the same measurement when it has no run_id (rows from before the sidecars).
IDENTITY_COLUMNS = ("timestamp", "problem", "version", "shape", "dist", "gpu")
_SAFE_RUN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")  # it names a file: no separators, no "..", no dotfiles


# The lab's sidecars recorded before they moved to the build cache, one tar of <run_id>.json.gz
# members beside leaderboard.csv (read by read_sidecar; never written by the harness).
SIDECAR_ARCHIVE = "leaderboard_runs.tar"


def _is_lab_leaderboard(path: Path) -> bool:
    return path.resolve() == (paths.REPO_ROOT / "leaderboard.csv").resolve()


def sidecar_dir(path: Path | None = None) -> Path:
    """Where ``path``'s new sidecars go: the build cache's runs/ for the lab's own leaderboard.csv
    (raw samples are build output, not the record), ``<stem>_runs/`` beside any other file."""
    path = Path(path) if path else paths.leaderboard_path()
    if _is_lab_leaderboard(path):
        return paths.build_dir() / "runs"
    return path.with_name(path.stem + "_runs")


def read_sidecar(run_id: str, path: Path | None = None) -> dict:
    """The sidecar of ``run_id``: from ``sidecar_dir``, else from the archive beside the leaderboard;
    FileNotFoundError naming both places where neither has it."""
    path = Path(path) if path else paths.leaderboard_path()
    name = f"{run_id}.json.gz"
    loose = sidecar_dir(path) / name
    if loose.is_file():
        with gzip.open(loose, "rt") as f:
            return json.load(f)
    archive = path.with_name(SIDECAR_ARCHIVE)
    if archive.is_file():
        import tarfile
        with tarfile.open(archive) as tar:
            try:
                member = tar.extractfile(name)
            except KeyError:
                member = None
            if member is not None:
                with gzip.open(member, "rt") as f:
                    return json.load(f)
    raise FileNotFoundError(f"no sidecar {name} in {loose.parent} or {archive}")


# ------------------------------------------------------------------------------- derived columns
def format_number(x: float | None) -> str:
    """A measured figure as written to the file: 3 decimals, 4 significant digits under 1e-3, "" for None."""
    return "" if x is None else f"{x:.4g}" if abs(x) < 1e-3 else f"{x:.3f}"


def shape_columns(params: dict) -> dict:
    """``shape_m`` .. ``shape_g`` of shape ``params`` (a seed is ignored): a number as itself, a
    per-group list as its numbers joined by ";" (e.g. "80;176;128"), "" for a dimension it lacks."""
    def cell(value) -> str:
        if isinstance(value, (list, tuple)):
            return ";".join(str(int(v)) for v in value)
        return "" if value is None else str(int(value))
    return {column: cell(params.get(dim)) for dim, column in SHAPE_COLUMNS.items()}


def throughput(problem: str, params: dict, mean_us: float | None) -> dict:
    """``tflops`` and ``tbps``: the problem's flops and bytes_moved (reference, of ``params`` without
    their seed) over ``mean_us``. Both "" where there is no positive mean or the reference cannot
    size the shape (an unknown problem, a malformed shape)."""
    blank = {"tflops": "", "tbps": ""}
    if not mean_us or mean_us <= 0:
        return blank
    from reference import problem_module  # imports torch: only paid when a figure is needed
    dims = {k: v for k, v in params.items() if k != "seed"}
    try:
        mod = problem_module(problem)
        flops, moved = mod.flops(**dims), mod.bytes_moved(**dims)
    except (KeyError, TypeError, ValueError):
        return blank
    seconds = mean_us * 1e-6
    return {"tflops": format_number(flops / seconds / 1e12), "tbps": format_number(moved / seconds / 1e12)}


def derived_columns(row: dict) -> dict:
    """The DERIVED_COLUMNS of a recorded row, from its ``shape`` JSON and, for a PASS row with a
    mean, its ``mean_us``; a cell that cannot be derived is ""."""
    try:
        params = json.loads(row.get("shape") or "")
    except ValueError:
        params = None
    if not isinstance(params, dict):
        return dict.fromkeys(DERIVED_COLUMNS, "")
    try:
        out = shape_columns(params)
    except (TypeError, ValueError):
        out = dict.fromkeys(SHAPE_COLUMNS.values(), "")
    try:
        mean = float(row["mean_us"]) if row.get("status") == "PASS" and row.get("mean_us") else None
    except ValueError:
        mean = None
    out.update(throughput(row.get("problem") or "", params, mean))
    return out


def backfill(row: dict) -> dict:
    """A copy of ``row`` with its empty DERIVED_COLUMNS filled by ``derived_columns``; a cell that
    holds something keeps it (what was recorded stays as recorded)."""
    missing = [k for k in DERIVED_COLUMNS if not row.get(k)]
    if not missing:
        return dict(row)
    derived = derived_columns(row)
    return {**row, **{k: derived[k] for k in missing}}


# ----------------------------------------------------------------------- rows of a measurement
# A timed result's figures from its statistics summary (``stats.summarize``), under the same names.
STAT_COLUMNS = ("mean_us", "median_us", "std_us", "ci95_us", "best_us", "ci95_lo_us", "ci95_hi_us", "iqr_us")
# What each flush did, in words, for the sidecar (``timing.FLUSHES``).
FLUSH_DETAIL = {"dirty": "2x L2 zeroed on the timed stream (GPU MODE's clear writes too)",
                "clean": "2x L2 read by a reduction on the timed stream (clean lines)"}
_COUNT_COLUMNS = ("n", "converged")  # not figures in µs: written as they are


def figures(result: "ShapeResult", stat: dict | None) -> dict:
    """One submission's figures of a shape result, as numbers (None where there is none): the
    STAT_COLUMNS, ``n``, ``converged``, ``floor_us``, ``pct_of_floor`` (of the mean), ``read_floor_us``,
    with the kernel method ``kernel_sum_us`` and ``host_us`` (a call's host path, under the profiler), with an
    event method ``host_us`` (the host µs a call took to return: the compiled clock's issue time, by which
    ``timing.host_bound`` tells a host-bound figure). The file's row (``outcome_rows``, formatted) and an output
    document's row (``report.result_rows``) both take them from here."""
    st = stat or {}
    mean = st.get("mean_us")
    out = {k: st.get(k) for k in STAT_COLUMNS}
    out.update(n=st.get("n"), converged=st.get("converged"), floor_us=result.floor_us,
               pct_of_floor=100 * result.floor_us / mean if result.floor_us and mean else None,
               read_floor_us=result.read_floor_us)
    kernel = st.get("kernel") or {}
    if kernel:
        out.update(kernel_sum_us=kernel.get("sum_us"), host_us=kernel.get("host_us"))
    elif st.get("issue_us") is not None:
        out["host_us"] = st["issue_us"]
    return out


def outcome_rows(outcome: "JobOutcome", sub_index: int = 0) -> tuple[list[dict], list[dict]]:
    """Rows for the file and, per row, its reproducibility sidecar (raw samples and context), of
    submission ``sub_index`` of a finished run (``runner.JobOutcome``); a SKIP result has none.

    An IMPLAUSIBLE (or any failed) result is recorded as its status without times: never as a result.
    Every row names the full commit (``machine.git_state``) and its shape's dimensions as columns
    (``shape_columns``); a timed row also its figures (``figures``), TFLOP/s and TB/s (``throughput``).
    """
    sub = outcome.submissions[sub_index]
    git = machine.git_state()
    try:
        rel = str(sub.path.relative_to(paths.REPO_ROOT))
    except ValueError:
        rel = str(sub.path)
    plan = outcome.plan
    rows, sidecars = [], []
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    for r in outcome.results:
        if r.status == "SKIP":
            continue
        dev = r.device or outcome.device or {}  # NOTE: with --gpus every row names its own GPU
        tele = dev.get("telemetry") or {}
        st = r.stats[sub_index] if (r.stats and r.ok) else None
        row = {"timestamp": stamp, "problem": sub.problem, "version": sub.label, "file": rel, "sha256": sub.sha256,
               "code_hash": code_hash(sub),
               "shape_set": r.shape.set_name, "shape_index": r.shape.index, "shape": r.shape.key, "dist": r.dist,
               "status": r.status, "message": r.message[:300], "gpu": dev.get("gpu", ""),
               "gpu_uuid": tele.get("uuid", ""), "sm_count": dev.get("sm_count", ""), "driver": dev.get("driver", ""),
               "cuda": dev.get("cuda", ""), "torch": dev.get("torch", ""),
               "timing_mode": plan.method if plan else "", "flush": plan.flush if plan else "",
               "batch": plan.batch(sub.problem) if plan else "", **git, **shape_columns(r.shape.params)}
        if st:
            measured = figures(r, st)
            row.update({k: format_number(v) for k, v in measured.items() if k not in _COUNT_COLUMNS},
                       n=measured["n"], converged=str(measured["converged"]).lower())
            row.update(throughput(sub.problem, r.shape.params, st.get("mean_us")))
        rows.append(row)
        sidecars.append({
            "row": {k: row[k] for k in ("timestamp", "problem", "version", "shape", "dist", "status")},
            "source": {"file": rel, "sha256": sub.sha256, "source_hash": sub.source_hash, **git},
            "shape": r.shape.params, "seeds": r.extra.get("seeds"),
            "samples_us": r.samples[sub_index] if (r.samples and r.ok) else None,
            "stats": st, "telemetry": r.telemetry,
            "timing": dict(plan.describe(sub.problem) if plan else {},
                           flush_detail=FLUSH_DETAIL.get(plan.flush if plan else "dirty"),
                           **{k: v for k, v in r.extra.items() if k != "seeds"}),
            "environment": {"gpu": dev.get("gpu"), "gpu_telemetry": tele, "sm_count": dev.get("sm_count"),
                            "capability": dev.get("capability"), "driver": dev.get("driver"), "cuda": dev.get("cuda"),
                            "torch": dev.get("torch"), "nvcc": machine.nvcc_version(), "ceilings": dev.get("ceilings"),
                            "harness": machine.harness_version()},
        })
    return rows, sidecars


# ------------------------------------------------------------------------------------ writing
def _cell(value) -> str:
    # Every line break the file holds is "\n", a quoted cell's own too: one stray "\r" and
    # duckdb's sniffer takes the file for CRLF and refuses the "\n"-ended rows.
    return "" if value is None else str(value).replace("\r\n", "\n").replace("\r", "\n")


def _csv_text(rows: list[dict], header: bool = False) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    if header:
        writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(row.get(k)) for k in COLUMNS})
    return buf.getvalue()


def check_writable(path: Path | None = None) -> Path:
    """Raises UserError (one line) where ``append`` would fail: the file's header is not a prefix of
    COLUMNS, or the file, its folder or its sidecars' folder cannot be written. Called before
    measuring: a --record that fails after minutes of timing loses them."""
    path = Path(path) if path else paths.leaderboard_path()
    if path.is_dir():
        raise UserError(f"{path}: the leaderboard is a folder")
    if path.exists():
        try:
            with open(path, newline="", encoding="utf-8") as f:
                header = f.readline().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"{path}: cannot read the leaderboard ({exc})") from None
        if header and not _known_header(header):
            raise UserError(_unknown_header(path))
        if not os.access(path, os.W_OK):
            raise UserError(f"{path}: the leaderboard is not writable")
    for folder in (path.parent, sidecar_dir(path)):
        existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
        if existing is None or not existing.is_dir() or not os.access(existing, os.W_OK):
            raise UserError(f"{path}: cannot write {folder} ({existing or folder} is not a writable folder)")
    return path


def append(rows: list[dict], path: Path | None = None, sidecars: list[dict] | None = None) -> Path:
    """Appends ``rows`` (missing columns empty, unknown keys ignored, every line ended by "\n");
    with ``sidecars`` (one per row) writes each and links it by run_id. A file with an older
    header (a prefix of COLUMNS) is upgraded first (``_upgrade_header``); one with an unknown
    header raises ValueError before anything is written (no sidecar is left without its row)."""
    path = Path(path) if path else paths.leaderboard_path()
    if sidecars is not None and len(sidecars) != len(rows):
        raise ValueError("one sidecar per row")
    path.parent.mkdir(parents=True, exist_ok=True)
    with locking.open_locked(path, "a+", newline="", encoding="utf-8") as f:
        f.seek(0)
        header = f.readline().strip()
        if header and header != ",".join(COLUMNS):
            _upgrade_header(f, header)
        if sidecars is not None:
            rows = _write_sidecars(rows, sidecars, sidecar_dir(path))
        f.seek(0, 2)
        if f.tell() == 0:
            f.write(",".join(COLUMNS) + "\n")
        f.write(_csv_text(rows))
        f.flush()
    return path


def _write_sidecars(rows: list[dict], sidecars: list[dict], folder: Path) -> list[dict]:
    """Each row's sidecar written into ``folder`` under a fresh run_id; the rows, with it."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for row, side in zip(rows, sidecars):
        row = dict(row, run_id=f"{row['problem']}-{row['version']}-{secrets.token_hex(6)}")
        with gzip.open(folder / f"{row['run_id']}.json.gz", "wt") as f:
            json.dump(side, f, default=str)
        out.append(row)
    return out


def _upgrade_header(f, header: str) -> None:
    """An older file whose columns are a prefix of ours: rewrite it in place (lock held) with the
    full header, old rows padded and backfilled (``_rewrite``). Anything else is refused, never guessed."""
    if not _known_header(header):
        raise ValueError(_unknown_header(f.name))
    _rewrite(f, _rows_of(f))


def _known_header(header: str) -> bool:
    """True for our header or an older one (a prefix of COLUMNS): the only files we rewrite."""
    names = header.split(",")
    return names == list(COLUMNS[:len(names)])


def _unknown_header(where) -> str:
    return f"{where}: unknown leaderboard columns; expected a prefix of {','.join(COLUMNS)}"


def _rows_of(f) -> list[dict]:
    f.seek(0)
    return list(csv.DictReader(f))


def _rewrite(f, rows: list[dict]) -> None:
    """Replaces the content of ``f`` (opened with newline="", exclusive lock held) by the current
    header and ``rows``, backfilled, in order, every line ended by "\n".

    In place rather than by rename: other writers wait on a lock of this very file."""
    text = _csv_text([backfill(row) for row in rows], header=True)
    f.seek(0)
    f.truncate()
    f.write(text)
    f.flush()


def normalise(path: Path | None = None) -> int:
    """Rewrites the leaderboard in place, under the lock: the current header, "\n" line ends
    only, DERIVED_COLUMNS backfilled; the same rows in the same order, recorded cells unchanged
    (bar "\r" line breaks inside them). Returns the number of rows; a missing file stays missing.
    Raises ValueError where the header is not a prefix of COLUMNS."""
    path = Path(path) if path else paths.leaderboard_path()
    if not path.exists():
        return 0
    with locking.open_locked(path, "r+", newline="", encoding="utf-8") as f:
        header = f.readline().strip()
        if header and not _known_header(header):
            raise ValueError(_unknown_header(path))
        rows = _rows_of(f)
        _rewrite(f, rows)
        return len(rows)


# ------------------------------------------------------------------------------------- merging
class MergeResult(NamedTuple):
    path: Path  # the leaderboard merged into
    added: int  # rows appended
    skipped: int  # rows already there (or twice in the sources)
    sidecars: int  # sidecars copied


def row_identity(row: dict) -> tuple:
    """What makes two rows one measurement: the run_id, or without one (rows from before the
    sidecars) timestamp, problem, version, shape, dist and gpu."""
    if row.get("run_id"):
        return ("run_id", row["run_id"])
    return ("row", *(row.get(k) or "" for k in IDENTITY_COLUMNS))


def _read_source(source: Path) -> list[dict]:
    """The rows of another machine's leaderboard, checked: raises UserError (one line) where the
    file is missing or unreadable, its header names a column we do not know or lacks one that
    identifies a row, a row's cell count differs from the header's, or a run_id is no file name."""
    if not source.exists():
        raise UserError(f"{source}: no such leaderboard file")
    if not source.is_file():
        raise UserError(f"{source}: not a file (give the leaderboard's .csv)")
    try:
        with open(source, newline="", encoding="utf-8") as f:
            records = csv.reader(f)
            header = next(records, [])
            if not header:
                raise UserError(f"{source}: empty, no header")
            unknown = [c for c in header if c not in COLUMNS]
            if unknown or len(set(header)) != len(header):
                raise UserError(f"{source}: unknown leaderboard columns {','.join(unknown) or '(repeated)'}; "
                                f"expected some of {','.join(COLUMNS)}")
            lacking = [c for c in IDENTITY_COLUMNS if c not in header]
            if lacking:
                raise UserError(f"{source}: not a leaderboard, no {','.join(lacking)} column")
            rows = []
            for record in records:
                if not record:  # a blank line, as csv.DictReader skips it
                    continue
                if len(record) != len(header):
                    raise UserError(f"{source}: line {records.line_num} has {len(record)} cells, "
                                    f"the header {len(header)}")
                row = dict(zip(header, record))
                if row.get("run_id") and not _SAFE_RUN_ID.fullmatch(row["run_id"]):
                    raise UserError(f"{source}: line {records.line_num}: run_id {row['run_id']!r} is not a file name")
                rows.append(row)
            return rows
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise UserError(f"{source}: cannot read it as a leaderboard ({exc})") from exc


def merge(sources: list[Path | str], path: Path | None = None) -> MergeResult:
    """Folds the rows of other leaderboards (another machine's, possibly with an older header) into
    ``path`` (default: this lab's leaderboard), under its exclusive lock.

    A row already there (``row_identity``), or earlier in the sources, is skipped; the rest are
    appended in their order, DERIVED_COLUMNS backfilled, recorded cells as they were. Each row's
    sidecar in the source's ``<stem>_runs/`` is copied beside ``path`` where that one lacks it.
    Every source is checked before anything is written: bad input raises UserError and writes nothing.
    A target that needs it (an older header, a "\r") is rewritten whole, as ``normalise`` would."""
    path = Path(path) if path else paths.leaderboard_path()
    # Read before taking the lock: a source that is the target itself would otherwise wait on our own lock.
    incoming = [(Path(source), _read_source(Path(source))) for source in sources]
    path.parent.mkdir(parents=True, exist_ok=True)
    with locking.open_locked(path, "a+", newline="", encoding="utf-8") as f:
        f.seek(0)
        text = f.read()
        header = text.split("\n", 1)[0].strip()
        if header and not _known_header(header):
            raise UserError(_unknown_header(path))
        existing = list(csv.DictReader(io.StringIO(text, newline="")))
        seen = {row_identity(row) for row in existing}
        added, skipped, copied = [], 0, 0
        for source, rows in incoming:
            for row in rows:
                identity = row_identity(row)
                if identity in seen:
                    skipped += 1
                else:
                    seen.add(identity)
                    added.append(backfill(row))
                copied += _copy_sidecar(row.get("run_id"), source, path)
        if header and (header != ",".join(COLUMNS) or "\r" in text):
            _rewrite(f, existing + added)
        elif added or not header:
            f.seek(0, 2)
            f.write(("" if header else ",".join(COLUMNS) + "\n") + _csv_text(added))
            f.flush()
        return MergeResult(path, len(added), skipped, copied)


def _copy_sidecar(run_id: str | None, source: Path, path: Path) -> int:
    """Copies ``source``'s sidecar of ``run_id`` beside ``path`` where there is one and ``path``
    lacks it; returns 1 if it copied, else 0. An existing sidecar is never overwritten."""
    if not run_id:
        return 0
    name = f"{run_id}.json.gz"
    there, here = sidecar_dir(source) / name, sidecar_dir(path) / name
    if not there.is_file() or here.exists():
        return 0
    here.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(there, here)
    return 1


# ------------------------------------------------------------------------------------- reading
def read(path: Path | None = None) -> list[dict]:
    path = Path(path) if path else paths.leaderboard_path()
    if not path.exists():
        return []
    with locking.open_locked(path, "r", shared=True, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def method_of(row: dict) -> str:
    """The row's timing method (its ``timing_mode`` column, named before the methods were: the
    file's schema keeps the name); rows from before the column existed were all cold."""
    return row.get("timing_mode") or "cold"


def flush_kind(row: dict) -> str:
    """The row's L2 flush; rows from before the column existed all zeroed (dirty)."""
    return row.get("flush") or "dirty"


def code_hash(sub) -> str:
    """The ``code_hash`` column's value for submission ``sub``: what ties a row to the code it measured."""
    return sub.source_hash[:16]


def current_hashes(problems) -> dict[tuple[str, str], str]:
    """(problem, version) -> the code_hash its file has now, for every version of ``problems`` (the
    attic's included): what ``best`` keys a version's rows by."""
    from harness import submissions  # NOTE: here, not at the top: submissions is not needed to read rows
    return {(s.problem, s.label): code_hash(s) for p in problems for s in submissions.versions(p, include_attic=True)}


def of_code(row: dict, code_hash: str | None) -> bool:
    """Whether ``row`` measured the code whose hash is ``code_hash`` (None: any code). NOTE: a row
    with no code_hash (recorded before the column) cannot be told apart: it counts."""
    return code_hash is None or not row.get("code_hash") or row["code_hash"] == code_hash


# NOTE: until this commit time (375779e) a `table` timing several methods ran each version's kernel-method
# job between the next version's event-method jobs, in one process per GPU, and kineto leaves CUPTI's
# callbacks on in a process that opened a profiler: group_gemm v53/v54's gpumode rows read up to +5 µs a call
# (docs/methodology.md, "Event methods before the profiler"). Rows recorded from then on were timed by code
# that never times an event method in such a process.
PROFILER_ORDER_FIXED = "2026-11-29T08:20:13+0000"
_STAMP = "%Y-%m-%dT%H:%M:%S%z"


def timed_after_profiler(rows: list[dict]) -> list[dict]:
    """The rows of ``rows`` that may have been timed in a process that had opened a torch.profiler
    session: an event method's row recorded before ``PROFILER_ORDER_FIXED`` and after a kernel-method
    row of the same problem, GPU (``gpu_uuid``) and commit (``git_commit``). A row does not name its
    process, so this is the widest reading (a separate earlier run at that commit on that GPU counts
    too): what it flags is timed again by ``table --missing``, never trusted in error."""
    from datetime import datetime

    def when(row):
        try:
            return datetime.strptime(row.get("timestamp") or "", _STAMP)
        except ValueError:
            return None

    fixed = datetime.strptime(PROFILER_ORDER_FIXED, _STAMP)
    first_kernel: dict[tuple, object] = {}
    for row in rows:
        at = when(row)
        if method_of(row) == "kernel" and at is not None and row.get("gpu_uuid") and row.get("git_commit"):
            key = (row.get("problem"), row["gpu_uuid"], row["git_commit"])
            first_kernel[key] = min(first_kernel.get(key, at), at)
    out = []
    for row in rows:
        at, kernel_at = when(row), first_kernel.get((row.get("problem"), row.get("gpu_uuid"), row.get("git_commit")))
        if method_of(row) != "kernel" and at is not None and kernel_at is not None and kernel_at < at < fixed:
            out.append(row)
    return out


def to_retime(recorded: list[dict], best_rows: list[dict]) -> list[tuple[str, str]]:
    """(problem, version) of every best row (``best``'s, of ``recorded``) that may have been timed after
    a profiler in its process (``timed_after_profiler``) while no other row stands for its shape: a
    passing row of the same code, method, flush, GPU model and distribution not under that suspicion
    (``recorded_already``). Those are what `table --record --missing` times again, so what `nvfp4
    leaderboard` names. NOTE: a suspect row that is the best although a clean row of its shape exists
    beat that row: the profiler only adds time, so it is not named (session 53's fresh group_gemm table
    re-timed every version, and 25 versions' old, faster rows stayed the best)."""
    suspect = suspect_ids(recorded)
    return sorted({(row["problem"], row["version"]) for row in best_rows if id(row) in suspect
                   and not recorded_already(recorded, row["problem"], row["version"], row.get("code_hash") or "",
                                            method_of(row), flush_kind(row), row.get("gpu"), [row["shape"]],
                                            row.get("dist"), suspect)})


def suspect_ids(rows: list[dict]) -> set[int]:
    """``id`` of each row of ``rows`` that ``timed_after_profiler`` names: worked out once per read of
    the leaderboard and handed to each ``recorded_already`` (it parses every row's timestamp)."""
    return {id(row) for row in timed_after_profiler(rows)}


def recorded_already(rows: list[dict], problem: str, version: str, code_hash: str, method: str, flush: str,
                     gpu: str, shapes: list[str], dist: str, suspect: set[int] | None = None) -> bool:
    """Whether ``rows`` hold a passing row of this version's code (``code_hash``, a row without one
    does not count: it cannot be told apart) with this method and flush on this GPU model, for
    every shape key in ``shapes`` and the distribution ``dist`` (a table times the competition's):
    what ``table --missing`` skips. A row maybe timed after a profiler in its process
    (``timed_after_profiler``) does not count either: --missing times it again. ``suspect``:
    ``suspect_ids(rows)`` where the caller asks of the same rows many times."""
    if suspect is None:
        suspect = suspect_ids(rows)
    seen = {row["shape"] for row in rows
            if id(row) not in suspect
            and row.get("status") == "PASS" and row.get("mean_us") and row.get("problem") == problem
            and row.get("version") == version and row.get("code_hash") == code_hash
            and method_of(row) == method and flush_kind(row) == flush and row.get("gpu") == gpu
            and row.get("dist") == dist}
    return bool(shapes) and all(shape in seen for shape in shapes)


def best(rows: list[dict], problem: str | None = None, method: str = "cold", flush: str = "dirty",
         hashes: dict[tuple[str, str], str] | None = None, every_hash: bool = False) -> list[dict]:
    """Fastest passing row per (problem, version, code_hash, shape, dist, gpu) among rows of one
    timing method and flush: a kernel or gpumode figure never stands in for a cold one, nor a clean
    flush's for a dirty one's.

    Only each version's current code counts (an edited version's old figures are not its figures):
    the code_hash ``hashes`` gives for it (``current_hashes``), else, for a version no file has now,
    the code_hash of its latest row; a row without one (recorded before the column) is kept.
    ``every_hash``: older code's rows too, each hash apart."""
    kept = [row for row in rows
            if row.get("status") == "PASS" and row.get("mean_us")
            and not (problem and row["problem"] != problem)
            and method_of(row) == method and flush_kind(row) == flush]
    if not every_hash:
        current = dict(hashes or {})
        for row in sorted(rows, key=lambda r: r.get("timestamp") or ""):
            name = (row.get("problem"), row.get("version"))
            if (hashes is None or name not in hashes) and row.get("code_hash"):
                current[name] = row["code_hash"]  # NOTE: sorted by time, so the latest row's hash stays
        kept = [row for row in kept if of_code(row, current.get((row["problem"], row["version"])))]
    winners: dict[tuple, dict] = {}
    for row in kept:
        key = (row["problem"], row["version"], row.get("code_hash", ""), row["shape"], row["dist"], row["gpu"])
        if key not in winners or float(row["mean_us"]) < float(winners[key]["mean_us"]):
            winners[key] = row
    return list(winners.values())
