"""Bad inputs for each problem (``nvfp4 test PROBLEM VERSION --bad-inputs``): a valid input set broken
the ways callers break it, each a transform of a set from ``generate_input``.

A submission must refuse each one with an exception (one line, the process alive), or handle it:
- ``same``: the values are the contract's, only their placement is not (a tensor on the CPU, scales
  in their logical order instead of GPU MODE's bytes): handled means the right result;
- ``broken``: the input breaks the contract (a dtype, a size, alignment): handled means it ran and
  returned; its output is not checked (no reference exists for it).
Either way a good call right after must still be right (the process and its CUDA context intact).

Why these: GPU MODE's callers make them. On an H200 (2026-11-28) gemm v44 and group_gemm v42 ended
the process on a permuted scale made ``.contiguous()`` or an fp32 ``c``; GPU MODE's own
``generate_input`` leaves the plain scales on the CPU in some revisions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

SAME, BROKEN = "same", "broken"


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # SAME or BROKEN
    transform: Callable  # data -> the bad data (a new structure; tensors may be shared with data)


def _replace(data: tuple, index: int, tensor) -> tuple:
    items = list(data)
    items[index] = tensor
    return tuple(items)


def _misaligned(t: torch.Tensor) -> torch.Tensor:
    """``t`` ([rows, K/2, L], packed values) copied into a view whose base and row stride are odd
    byte counts: the same values, placed where 16-byte loads and tensor maps cannot go."""
    u = t.view(torch.uint8)
    rows, width, batches = u.shape
    buf = torch.empty((batches, rows, width + 1), dtype=torch.uint8, device=u.device)
    view = buf[:, :, 1:].permute(1, 2, 0)
    view.copy_(u)
    return view.view(t.dtype)


def _tuple_cases(values: dict[str, int], plain_scales: dict[str, int], permuted: dict[str, int], out: int) -> list[Case]:
    """Cases for a problem whose data is a flat tuple of tensors (gemv, gemm, dual_gemm): ``values``,
    ``plain_scales`` and ``permuted`` name the tensors' indices, ``out`` is c's."""
    first_value, first_value_i = next(iter(values.items()))
    last_value, last_value_i = list(values.items())[-1]
    first_scale, first_scale_i = next(iter(plain_scales.items()))
    cases = [
        Case("c as float32", BROKEN, lambda d: _replace(d, out, d[out].float())),
        Case("c as bfloat16", BROKEN, lambda d: _replace(d, out, d[out].bfloat16())),
        Case(f"{first_value} on the CPU", SAME, lambda d: _replace(d, first_value_i, d[first_value_i].cpu())),
        Case(f"{first_scale} on the CPU", SAME, lambda d: _replace(d, first_scale_i, d[first_scale_i].cpu())),
    ]
    for name, i in permuted.items():
        cases.append(Case(f"{name} made .contiguous() (its logical order, not GPU MODE's bytes)", SAME,
                          lambda d, i=i: _replace(d, i, d[i].contiguous())))
    cases += [
        Case(f"{first_value} as float16 (not packed e2m1 pairs)", BROKEN,
             lambda d: _replace(d, first_value_i, d[first_value_i].view(torch.uint8).to(torch.float16))),
        Case(f"{first_scale} as float8_e5m2", BROKEN,
             lambda d: _replace(d, first_scale_i, d[first_scale_i].view(torch.uint8).view(torch.float8_e5m2))),
        Case(f"{last_value} 32 values short along K", BROKEN,
             lambda d: _replace(d, last_value_i, d[last_value_i][:, :-16, :])),
        Case(f"{first_value} misaligned (odd base and row stride)", SAME,
             lambda d: _replace(d, first_value_i, _misaligned(d[first_value_i]))),
        Case("c one row short", BROKEN, lambda d: _replace(d, out, d[out][:-1])),
        Case("one item missing from the tuple", BROKEN, lambda d: tuple(d)[:-1]),
    ]
    return cases


def _group_cases() -> list[Case]:
    """Cases for group_gemm's ``(abc, sf, sf_permuted, sizes)`` lists, each on group 0."""
    def on_group0(part: int, slot: int, fn):
        def transform(d):
            parts = [list(p) for p in d]
            item = list(parts[part][0])
            item[slot] = fn(item[slot])
            parts[part][0] = tuple(item)
            return tuple(parts)
        return transform

    def plain_scales_on_cpu(d):
        parts = [list(p) for p in d]
        parts[1] = [tuple(t.cpu() for t in pair) for pair in parts[1]]
        return tuple(parts)

    def sizes_off(d):
        parts = [list(p) for p in d]
        m, n, k, l = parts[3][0]
        parts[3][0] = (m + 1, n, k, l)
        return tuple(parts)

    return [
        Case("c of group 0 as float32", BROKEN, on_group0(0, 2, lambda t: t.float())),
        Case("plain scales on the CPU (as some revisions of GPU MODE's generate_input leave them)", SAME,
             plain_scales_on_cpu),
        Case("sfa_permuted of group 0 made .contiguous()", SAME, on_group0(2, 0, lambda t: t.contiguous())),
        Case("sfb_permuted of group 0 made .contiguous()", SAME, on_group0(2, 1, lambda t: t.contiguous())),
        Case("a of group 0 on the CPU", SAME, on_group0(0, 0, lambda t: t.cpu())),
        Case("a of group 0 misaligned (odd base and row stride)", SAME, on_group0(0, 0, _misaligned)),
        Case("b of group 0 32 values short along K", BROKEN, on_group0(0, 1, lambda t: t[:, :-16, :])),
        Case("problem_sizes of group 0 one row more than its tensors", BROKEN, sizes_off),
        Case("one list missing from the tuple", BROKEN, lambda d: tuple(d)[:-1]),
    ]


_VALUES = {"a": 0, "b": 1}
_SCALES = {"sfa": 2, "sfb": 3}
_PERMUTED = {"sfa_permuted": 4, "sfb_permuted": 5}
CASES: dict[str, Callable[[], list[Case]]] = {
    "gemv": lambda: _tuple_cases(_VALUES, _SCALES, _PERMUTED, 6),
    "gemm": lambda: _tuple_cases(_VALUES, _SCALES, _PERMUTED, 6),
    "dual_gemm": lambda: _tuple_cases({"a": 0, "b1": 1, "b2": 2}, {"sfa": 3, "sfb1": 4, "sfb2": 5},
                                      {"sfa_permuted": 6, "sfb1_permuted": 7, "sfb2_permuted": 8}, 9),
    "group_gemm": _group_cases,
}


def cases(problem: str) -> list[Case]:
    if problem not in CASES:
        raise ValueError(f"no bad inputs for {problem!r}; problems: {', '.join(CASES)}")
    return CASES[problem]()
