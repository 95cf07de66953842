"""Sharding (version, shape) jobs across the local GPUs: one child per GPU, never two timings on
one GPU. Pure functions; the CLI's ``--gpus`` wires them to the runner."""

from __future__ import annotations

from typing import Callable, Hashable, Sequence, TypeVar

from harness.errors import UserError

Job = TypeVar("Job")


def parse_gpus(spec: str, available: int) -> list[int]:
    """``--gpus 0,1,3`` (or ``all``) -> device indices, checked against the ``available`` count."""
    text = spec.strip()
    if text == "all":
        if available < 1:
            raise UserError("--gpus all: this machine has no GPU")
        return list(range(available))
    gpus = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit():
            raise UserError(f"--gpus {spec!r}: expected comma-separated GPU indices like 0,1 or 'all'")
        index = int(part)
        if index >= available:
            raise UserError(f"--gpus {spec!r}: GPU {index} does not exist (this machine has {available})")
        if index in gpus:
            raise UserError(f"--gpus {spec!r}: GPU {index} is listed twice (two timings would share it)")
        gpus.append(index)
    return gpus


def shard(jobs: Sequence[Job], gpus: Sequence[Hashable],
          cost: Callable[[Job], float] | None = None) -> dict[Hashable, list[Job]]:
    """Every job on exactly one GPU, each GPU's jobs kept in their given order.

    Without ``cost`` the jobs are dealt round-robin; with it, each job (most expensive first)
    goes to the GPU with the least work so far (ties to the earlier GPU), so one long shape does
    not leave the other GPUs idle. Deterministic: the same input always gives the same shards.
    GPUs left without a job are absent from the result.
    """
    if not gpus:
        raise UserError("no GPU to run on")
    if len(set(gpus)) != len(gpus):
        raise UserError(f"GPU listed twice in {list(gpus)}")
    placed: dict[Hashable, list[int]] = {g: [] for g in gpus}
    if cost is None:
        for i in range(len(jobs)):
            placed[gpus[i % len(gpus)]].append(i)
    else:
        load = {g: 0.0 for g in gpus}
        for i in sorted(range(len(jobs)), key=lambda i: (-cost(jobs[i]), i)):
            g = min(gpus, key=lambda g: (load[g], gpus.index(g)))
            placed[g].append(i)
            load[g] += cost(jobs[i])
    return {g: [jobs[i] for i in sorted(idx)] for g, idx in placed.items() if idx}


def one_model(names: dict[int, str]) -> None:
    """Refuses ``--gpus`` of more than one GPU model (``names``: index -> device name): a table's
    rows are compared with each other, its floors are one model's, and every recorded row names its
    GPU, so one table is timed on one model."""
    models: dict[str, list[int]] = {}
    for gpu, name in names.items():
        models.setdefault(name, []).append(gpu)
    if len(models) > 1:
        listed = "; ".join(f"{name} ({', '.join(f'GPU {g}' for g in gpus)})" for name, gpus in models.items())
        raise UserError(f"--gpus mixes GPU models: {listed}; one table is timed on one model: list GPUs of one model")
