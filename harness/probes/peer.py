"""The issues' peer: cuBLAS on operands already dequantised to bf16, run like any version.

Issue 39's targets are ratios against "cuBLAS bf16 on already-dequantised operands" measured in
the same run, so the peer is a submission the harness resolves by the label ``peer``
(``nvfp4 compare gemm peer v34``, ``nvfp4 run group_gemm peer``). Per problem, what it times:

- gemm: one batched matmul ``A @ B^T`` over the L batches;
- group_gemm: one matmul per group;
- dual_gemm: one batched matmul of A with ``[B1; B2]`` (both products in one GEMM), then
  ``silu(gate) * up``;
- gemv: the matrix-vector product, as a batched matmul with N = 1.

Operands are bf16 (exact: an e2m1 x e4m3 product has at most 6 significant bits, inside bf16's 8,
and its exponent range too). cuBLAS accumulates in fp32 and writes fp32 (``out_dtype``), which is
then rounded once to the problem's fp16 ``c``. NOTE: that rounding is one elementwise kernel more
than a bf16-output GEMM (an M x N fp32 read and fp16 write, ~1-3 µs on the benchmark shapes), the
price of an output that passes the problem's 1e-3 tolerance: a bf16-rounded result (2^-9 relative)
does not, so the peer would not be a valid entry of ``test``. On a CPU the operands are fp32 and the
products fp32 matmuls (a correctness path only).

Dequantisation stays outside the timed calls, by memoisation. The first call on an input (a warm-up
or checked call) dequantises it and remembers the operands, keyed by the input tensors (the tensor
objects themselves, held by weak reference) together with their autograd version counters; later
calls on the same, unchanged tensors only multiply. The harness refills its pool in place before
every timed block (``harness.worker``: never-seen values in the same tensors, so a cache keyed by
pointer alone would return stale results, and the block's output check would fail it) and then makes
one untimed call on a scratch input. So a call that finds its own input new or rewritten also
re-dequantises every remembered input that was rewritten since: the untimed scratch call refreshes the
whole pool, and the timed calls after it only multiply. A rewrite that bypasses the version counter
(a raw pointer write from an extension) is not seen, nor is a tensor's storage swapped under it
(``t.data = ...``). At most ``MAX_REMEMBERED_INPUTS`` inputs are remembered (least recently used
out): more live inputs than that (a larger ``--pool``) and some timed calls dequantise, which a
warning says. The ``graph`` method cannot time the peer (the replay multiplies the captured operands
whatever was copied into the inputs; the output check fails it).
"""

from __future__ import annotations

import warnings
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

import torch

from reference import codec

# NOTE: GPU MODE's batch is 50 inputs (gemm, dual_gemm); with the harness's scratch set, the
# repeated first set and the checked calls' inputs, 64 keeps every live input of a block.
MAX_REMEMBERED_INPUTS = 64


def _operand_dtype(device: torch.device) -> torch.dtype:
    return torch.bfloat16 if device.type == "cuda" else torch.float32


def _batched(values: torch.Tensor, scales: torch.Tensor, rows: int | None = None) -> torch.Tensor:
    """A ``[rows, K/2, L]`` operand and its ``[rows, K/16, L]`` scales -> ``[L, rows, K]``, contiguous."""
    v, s = values.permute(2, 0, 1), scales.permute(2, 0, 1)
    if rows is not None:
        v, s = v[:, :rows], s[:, :rows]
    return codec.dequantize(v, s, _operand_dtype(values.device)).contiguous()


def _matmul(a: torch.Tensor, b_t: torch.Tensor, out: torch.Tensor) -> None:
    """``out = a @ b_t`` (2-D or batched 3-D), fp32 accumulation and fp32 output."""
    mm = torch.bmm if a.dim() == 3 else torch.mm
    if a.device.type == "cuda":
        mm(a, b_t, out_dtype=torch.float32, out=out)
    else:
        mm(a, b_t, out=out)


@dataclass
class _Entry:
    sources: tuple  # weak references to the input tensors the operands came from
    versions: tuple[int, ...]  # their version counters when dequantised
    operands: tuple

    def holds(self, sources: tuple) -> bool:
        """Whether ``sources`` are the very tensors this entry was made from, none rewritten since."""
        return all(map(lambda ref, t: ref() is t, self.sources, sources)) \
            and self.versions == tuple([t._version for t in sources])


class DequantisedInputs:
    """Operands dequantised once per input, remembered per input tensors (see the module's
    docstring); ``dequantisations`` counts the inputs dequantised so far.

    NOTE: the key is the tensors' identities (``id``, checked against weak references, so a new
    tensor that reuses a dead one's id is a miss) and the hit is confirmed by their version
    counters: this check runs inside every timed call, and a key of (data_ptr, shape, dtype) per
    tensor cost ~4x as much host time (measured on a CPU host; group_gemm's 8 groups: 32 tensors)."""

    def __init__(self, prepare: Callable[[tuple], tuple], capacity: int = MAX_REMEMBERED_INPUTS):
        self._prepare = prepare  # source tensors -> operands (and the output workspace)
        self._capacity = capacity
        self._entries: OrderedDict[tuple, _Entry] = OrderedDict()
        self.dequantisations = 0
        self._warned = False

    def operands(self, sources: tuple) -> tuple:
        key = tuple(map(id, sources))
        entry = self._entries.get(key)
        if entry is not None and entry.holds(sources):
            self._entries.move_to_end(key)
            return entry.operands
        operands = self._store(key, sources)
        self._refresh_rewritten(skip=key)
        return operands

    def _made(self, sources: tuple) -> _Entry:
        self.dequantisations += 1
        return _Entry(tuple(weakref.ref(t) for t in sources), tuple(t._version for t in sources),
                      self._prepare(sources))

    def _store(self, key: tuple, sources: tuple) -> tuple:
        entry = self._entries[key] = self._made(sources)
        self._entries.move_to_end(key)
        while len(self._entries) > self._capacity:
            _, evicted = self._entries.popitem(last=False)
            if all(ref() is not None for ref in evicted.sources) and not self._warned:
                self._warned = True
                warnings.warn(f"peer: more than {self._capacity} live inputs; the least recently used is "
                              "forgotten and its next call dequantises inside the call", stacklevel=3)
        return entry.operands

    def _refresh_rewritten(self, skip: tuple) -> None:
        """Re-dequantise every remembered input rewritten in place since; forget the dead ones."""
        for key in list(self._entries):
            if key == skip:
                continue
            alive = tuple(ref() for ref in self._entries[key].sources)
            if any(t is None for t in alive):
                del self._entries[key]
            elif not self._entries[key].holds(alive):
                self._entries[key] = self._made(alive)


# ----------------------------------------------------------------------------- per problem
def _gemm_kernel(memo_capacity: int, b_rows: int | None = None):
    """gemm: ``A @ B^T`` over the L batches; gemv is the same with B's row 0 alone (``b_rows=1``)."""
    def prepare(sources):
        a, b, sfa, sfb = sources
        a_op, b_op = _batched(a, sfa), _batched(b, sfb, rows=b_rows)
        acc = torch.empty((a_op.shape[0], a_op.shape[1], b_op.shape[1]), dtype=torch.float32, device=a.device)
        return a_op, b_op.transpose(1, 2), acc  # NOTE: B^T as a view: cuBLAS reads it transposed, no copy

    memo = DequantisedInputs(prepare, memo_capacity)

    def custom_kernel(data):
        a, b, sfa, sfb, _, _, c = data
        a_op, b_t, acc = memo.operands((a, b, sfa, sfb))
        _matmul(a_op, b_t, acc)
        c.permute(2, 0, 1).copy_(acc)
        return c
    return custom_kernel, memo


def _gemv_kernel(memo_capacity: int):
    return _gemm_kernel(memo_capacity, b_rows=1)  # row 0 of b is the vector


def _dual_gemm_kernel(memo_capacity: int):
    def prepare(sources):
        a, b1, b2, sfa, sfb1, sfb2 = sources
        a_op = _batched(a, sfa)
        both = torch.cat((_batched(b1, sfb1), _batched(b2, sfb2)), dim=1)  # [L, 2N, K]: gate rows, then up rows
        acc = torch.empty((a_op.shape[0], a_op.shape[1], both.shape[1]), dtype=torch.float32, device=a.device)
        return a_op, both.transpose(1, 2), acc

    memo = DequantisedInputs(prepare, memo_capacity)

    def custom_kernel(data):
        a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
        a_op, both_t, acc = memo.operands((a, b1, b2, sfa, sfb1, sfb2))
        _matmul(a_op, both_t, acc)
        n = b1.shape[0]
        gate, up = acc[:, :, :n], acc[:, :, n:]
        torch.nn.functional.silu(gate, inplace=True)
        torch.mul(gate, up, out=c.permute(2, 0, 1))  # fp32 product, rounded once into fp16 c
        return c
    return custom_kernel, memo


def _group_gemm_kernel(memo_capacity: int):
    def prepare(sources):
        groups = []
        for a, b, sfa, sfb in zip(*(iter(sources),) * 4):
            a_op, b_op = _batched(a, sfa)[0], _batched(b, sfb)[0]
            acc = torch.empty((a_op.shape[0], b_op.shape[0]), dtype=torch.float32, device=a.device)
            groups.append((a_op, b_op.t(), acc))
        return tuple(groups)

    memo = DequantisedInputs(prepare, memo_capacity)

    def custom_kernel(data):
        abc, sf, _, _ = data
        sources = tuple(t for (a, b, _), (sfa, sfb) in zip(abc, sf) for t in (a, b, sfa, sfb))
        outputs = []
        for (a_op, b_t, acc), (_, _, c) in zip(memo.operands(sources), abc):
            _matmul(a_op, b_t, acc)
            c[:, :, 0].copy_(acc)
            outputs.append(c)
        return outputs
    return custom_kernel, memo


_KERNELS = {"gemm": _gemm_kernel, "gemv": _gemv_kernel, "dual_gemm": _dual_gemm_kernel,
            "group_gemm": _group_gemm_kernel}


def make_kernel(problem: str, memo_capacity: int = MAX_REMEMBERED_INPUTS):
    """``problem``'s peer as a ``custom_kernel(data)``; its memo is ``custom_kernel.memo`` (its
    ``dequantisations`` count says how many inputs were dequantised, for tests and diagnostics)."""
    if problem not in _KERNELS:
        raise ValueError(f"no peer for problem {problem!r}; expected one of {', '.join(_KERNELS)}")
    kernel, memo = _KERNELS[problem](memo_capacity)
    kernel.memo = memo
    return kernel
