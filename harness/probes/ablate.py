"""``nvfp4 probe ablate``: a version against itself with a stage left out, by its kernels alone.

Each variant is the version built with the defines that switch its stand-ins on
(:mod:`harness.probes.variants`: the version's own ``#if`` blocks, listed in its ``ABLATIONS`` or
given as ``--variant NAME=DEFINE,...``); ``full`` is the version as it is. What removing a stage
saves bounds what making that stage faster could save: gemm v19's K loop priced this way showed
A's L2 traffic worth nothing (multicast of A not built), group_gemm v25's showed the bare barrier
ring at a third of the kernel.

Per shape: every variant's output on one input is checked against the reference (only ``full``
must match: a stand-in computes garbage by design, and the report says which match); every variant
is called on each input of the pool; then ``rounds`` rounds in which every variant in turn times
one block of the pool by the harness's ``kernel`` method (harness.timing: per call, first device
activity to last, L2 flushed before each, the calls queued behind a device sleep), so drift (clock,
temperature) spreads over all variants alike. Reported: the median span per call and the ratio to
``full``'s.
"""

from __future__ import annotations

from harness.config import Shape
from harness.errors import UserError
from harness.probes import common, variants as variants_mod
from harness.probes.variants import FULL, Variant
from harness.submissions import Submission


def measure(sub: Submission, shapes: list[Shape], chosen: list[Variant], *, rounds: int = 4, pool: int = 8,
            jobs: int | None = None, on_progress=None) -> dict:
    torch = common.bound_torch()
    common.require_gpu(torch, "nvfp4 probe ablate (a stand-in's time is its kernels' time)")
    common.refuse_unrunnable(sub, torch)
    from harness import timing
    say = on_progress or (lambda text: None)
    every = [Variant(FULL), *chosen]
    say(f"building {len(every)} variants of {sub.problem} {sub.label} in parallel")
    failures = variants_mod.build_in_children(sub, every, jobs)
    if failures:
        raise UserError("; ".join(f"variant {v.name} ({' '.join(v.defines) or 'no defines'}) does not build: {why}"
                                  for v, why in failures))
    kernels = {v.name: variants_mod.import_variant(sub, v).kernel for v in every}
    rows = []
    for shape in shapes:
        say(f"timing {shape.label}")
        data_sets = common.inputs(sub.problem, shape, pool)
        checks = {name: common.check(sub.problem, data_sets[0], fn(data_sets[0])) for name, fn in kernels.items()}
        for fn in kernels.values():  # NOTE: first-call set-up (workspaces, tensor maps) outside the samples
            for data in data_sets:
                fn(data)
        torch.cuda.synchronize()
        spans: dict[str, list[float]] = {name: [] for name in kernels}
        for _ in range(rounds):
            for name, fn in kernels.items():
                spans[name] += timing.time_block(fn, data_sets, "kernel").kernel["span_us"]
        full = common.median(spans[FULL])
        for v in every:
            us = common.median(spans[v.name])
            rows.append({"shape": shape.label, "variant": v.name, "defines": list(v.defines), "us": us,
                         "min_us": min(spans[v.name]), "vs_full": us / full if full else None,
                         "matches_reference": checks[v.name]["ok"], "check": checks[v.name]["message"]})
    return {"problem": sub.problem, "version": sub.label, "device": common.device_name(torch), "rounds": rounds,
            "pool": pool, "rows": rows}


def format_report(r: dict) -> list[str]:
    lines = [f"{r['problem']} {r['version']} with stages left out, {r['device']}: kernel method (per call, first "
             f"device activity to last, L2 flushed), {r['rounds']} rounds x {r['pool']} calls a variant, interleaved"]
    lines.append(f"{'shape':<24} {'variant':<18} {'µs':>9} {'min':>9} {'x full':>7}  output")
    for row in r["rows"]:
        ratio = "-" if row["vs_full"] is None else f"{row['vs_full']:.3f}"
        output = "matches" if row["matches_reference"] else "differs (a stand-in)" if row["variant"] != FULL \
            else f"WRONG: {row['check']}"
        lines.append(f"{row['shape']:<24} {row['variant']:<18} {row['us']:9.2f} {row['min_us']:9.2f} {ratio:>7}  "
                     f"{output}")
    return lines
