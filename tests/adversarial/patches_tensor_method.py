"""Adversarial: returns each output unwritten and computes it inside the harness's copy of it for the
judge (after the timed region), by replacing torch.Tensor.reshape, which that copy calls, at import
-> TAMPERED: every callable of torch, torch.Tensor and its base is watched."""

import torch

from _common import gemm_into

_pending = []
_reshape = torch._C.TensorBase.reshape


def _reshape_after_the_work(self, *shape):
    while _pending:
        a, b, sfa, sfb, _, _, c = _pending.pop(0)
        gemm_into(c, a, b, sfa, sfb)
    return _reshape(self, *shape)


torch.Tensor.reshape = _reshape_after_the_work


def custom_kernel(data):
    _pending.append(data)
    return data[-1]
