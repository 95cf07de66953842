"""Adversarial: returns each output unwritten and computes it the next time anything in its process
calls torch (the harness's copy of the output for the judge, after the timed region), through a
TorchFunctionMode entered at import -> FAIL: the harness's own tensor work runs with torch-function
modes and subclasses off, so that copy reads the output as the timed call left it."""

import torch
from torch.overrides import TorchFunctionMode

from _common import gemm_into

_pending = []


class _Later(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        while _pending:
            a, b, sfa, sfb, _, _, c = _pending.pop(0)
            gemm_into(c, a, b, sfa, sfb)
        return func(*args, **(kwargs or {}))


_Later().__enter__()


def custom_kernel(data):
    _pending.append(data)
    return data[-1]
