"""What the in-process probes share: torch with the harness's timing bound, the inputs of a shape,
and the refusal of a version this machine cannot run.

The probes run the team's own versions in the command's process (unlike ``run`` and ``compare``,
whose children check every timed output against never-seen inputs): they measure where time goes,
they never decide which version is faster, and they record nothing.
"""

from __future__ import annotations

import statistics

from harness import machine
from harness.config import Shape
from harness.errors import UserError
from harness.submissions import Submission


def bound_torch():
    """torch, with harness.timing bound (before any submission is imported, as the worker does)."""
    import torch

    from harness import timing
    timing.bind(torch)
    return torch


def refuse_unrunnable(sub: Submission, torch) -> None:
    capability = tuple(torch.cuda.get_device_capability(0)) if torch.cuda.is_available() else None
    why = machine.arch_refusal(sub.arch, capability)
    if why:
        raise UserError(f"{sub.problem} {sub.label}: {why}")


def require_gpu(torch, what: str) -> None:
    if not torch.cuda.is_available():
        raise UserError(f"{what} needs a CUDA GPU (torch.cuda.is_available() is False here)")


def inputs(problem: str, shape: Shape, count: int, dist: str = "competition", seed_offset: int = 0) -> list:
    """``count`` distinct input sets of ``shape`` (seeds from the shape's own), on the default device."""
    from reference import problem_module
    mod = problem_module(problem)
    params = dict(shape.params)
    seed = params.pop("seed", 1111)
    return [mod.generate_input(**params, seed=seed + seed_offset + i, dist=dist) for i in range(count)]


def check(problem: str, data, output) -> dict:
    from reference import problem_module
    ok, message = problem_module(problem).check(data, output)
    return {"ok": bool(ok), "message": message}


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def device_name(torch) -> str:
    return torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU (no CUDA)"
