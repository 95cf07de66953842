"""From a CLI request to verdicts: choose shapes, check the arch, run children, shape results.

The CLI (presentation) and the tests both go through here; nothing in this module prints except
through the ``progress`` callback.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from harness import config, isolation, machine, roofline
from harness.config import Shape
from harness.errors import UserError
from harness.submissions import Submission

STATUSES_OK = ("PASS",)


@dataclass
class ShapeResult:
    shape: Shape
    dist: str
    status: str  # PASS FAIL CRASH TIMEOUT SKIP
    message: str = ""
    stats: list | None = None  # one stats dict per submission timed in the job
    floor_us: float | None = None

    @property
    def ok(self) -> bool:
        return self.status in STATUSES_OK


@dataclass
class JobOutcome:
    submissions: list[Submission]
    device: dict | None
    results: list[ShapeResult] = field(default_factory=list)
    refused: str | None = None  # why it did not run at all (arch), or None
    logs: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.refused is None and all(r.ok for r in self.results)


def local_capability() -> tuple[int, int] | None:
    import torch
    if not torch.cuda.is_available():
        return None
    return tuple(torch.cuda.get_device_capability(0))


def select_shapes(problem: str, spec: str | None, custom: tuple[str, ...], has_gpu: bool,
                  cfg: dict | None = None) -> tuple[list[Shape], str]:
    """``--shapes benchmarks|tests|N|tests:N|benchmarks:N`` and repeated ``--shape``.

    Without a GPU the default is the tests shapes (the benchmark shapes take minutes on a CPU).
    Returns the shapes and a note for the user when a default was applied.
    """
    if custom:
        return [config.parse_shape_option(problem, text, i) for i, text in enumerate(custom)], ""
    cfg = cfg or config.load()
    pc = cfg[problem]
    default_set = "benchmarks" if has_gpu else "tests"
    note = "" if has_gpu or spec else "no GPU here: using the tests shapes (pass --shapes benchmarks to insist)"
    spec = (spec or default_set).strip()
    set_name, _, index = spec.partition(":")
    if set_name.isdigit() and not index:
        set_name, index = default_set, set_name
    if set_name not in config.SHAPE_SETS:
        raise UserError(f"--shapes {spec!r}: expected benchmarks, tests, an index, or tests:N / benchmarks:N")
    shapes = getattr(pc, set_name)
    if index:
        try:
            i = int(index)
            return [shapes[i]], note
        except (ValueError, IndexError):
            raise UserError(f"--shapes {spec!r}: {problem} has {len(shapes)} {set_name} shapes (0..{len(shapes) - 1})") from None
    return list(shapes), note


def run(subs: list[Submission], shapes: list[Shape], dists: list[str], mode: str, *,
        seeds: int = 3, timing: dict | None = None, pool: int = 4,
        timeout_s: float = isolation.DEFAULT_TIMEOUT_S, compile_timeout_s: float = isolation.DEFAULT_COMPILE_TIMEOUT_S,
        capability=None, progress: Callable[[dict], None] | None = None) -> JobOutcome:
    """One child job (restarted after crashes) over shapes x dists for ``subs`` (1, or 2 to compare)."""
    outcome = JobOutcome(list(subs), None)
    for sub in subs:
        why = machine.arch_refusal(sub.arch, capability)
        if why:
            outcome.refused = f"{sub.label}: {why}"
            outcome.results = [ShapeResult(s, d, "SKIP", why) for s in shapes for d in dists]
            return outcome
    items = []
    for s in shapes:
        for d in dists:
            items.append({"id": f"{s.set_name}:{s.index}:{d}", "params": s.params, "dist": d})
    job = {"mode": mode, "problem": subs[0].problem, "seeds": seeds, "pool": pool,
           "timing": timing or {}, "labels": [s.label for s in subs],
           "submissions": [{"label": s.label, "path": str(s.path), "source_hash": s.source_hash} for s in subs]}
    report = isolation.run_job(job, items, timeout_s=timeout_s, compile_timeout_s=compile_timeout_s,
                               on_event=progress)
    outcome.device = report.device
    outcome.logs = report.logs
    figures = (report.device or {}).get("ceilings")
    for s in shapes:
        for d in dists:
            r = report.results.get(f"{s.set_name}:{s.index}:{d}", {"status": "FAIL", "message": "no result"})
            outcome.results.append(ShapeResult(s, d, r["status"], r.get("message", ""), r.get("stats"),
                                               roofline.floor_us(s.problem, s.params, figures)))
    return outcome


def leaderboard_rows(outcome: JobOutcome, sub_index: int = 0) -> list[dict]:
    sub = outcome.submissions[sub_index]
    dev = outcome.device or {}
    git = machine.git_state()
    try:
        rel = str(sub.path.relative_to(config.paths.REPO_ROOT))
    except ValueError:
        rel = str(sub.path)
    rows = []
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    for r in outcome.results:
        if r.status == "SKIP":
            continue
        st = (r.stats or [None] * len(outcome.submissions))[sub_index] if r.stats else None
        row = {"timestamp": stamp, "problem": sub.problem, "version": sub.label, "file": rel, "sha256": sub.sha256,
               "code_hash": sub.source_hash[:16],
               "shape_set": r.shape.set_name, "shape_index": r.shape.index, "shape": r.shape.key, "dist": r.dist,
               "status": r.status, "message": r.message[:300], "gpu": dev.get("gpu", ""),
               "sm_count": dev.get("sm_count", ""), "driver": dev.get("driver", ""), "cuda": dev.get("cuda", ""),
               "torch": dev.get("torch", ""), **git}
        if st:
            row.update({k: _fmt(st.get(k)) for k in ("mean_us", "median_us", "std_us", "ci95_us", "best_us")})
            row.update(n=st["n"], converged=str(st["converged"]).lower())
            if r.floor_us:
                row.update(floor_us=_fmt(r.floor_us), pct_of_floor=_fmt(100 * r.floor_us / st["mean_us"]))
        rows.append(row)
    return rows


def _fmt(x):
    return "" if x is None else f"{x:.4g}" if abs(x) < 1e-3 else f"{x:.3f}"
