"""Adversarial: computes_in_capture with a TorchDispatchMode, which sees every tensor operation below
torch-function handling (the harness's own copies included) -> TAMPERED: a dispatch mode left on is a
hook the guard counts."""

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from _common import gemm_into

_pending = []


class _Later(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        while _pending:
            a, b, sfa, sfb, _, _, c = _pending.pop(0)
            gemm_into(c, a, b, sfa, sfb)
        return func(*args, **(kwargs or {}))


_Later().__enter__()


def custom_kernel(data):
    _pending.append(data)
    return data[-1]
