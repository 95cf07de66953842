"""Adversarial: installs a TorchFunctionMode at import so that any comparison in its process says
"no element is off"; returns an unwritten output -> FAIL in `test` and `run` alike: the comparison
runs in the judge, which never imports a submission. (Patching torch.Tensor.__gt__ as well would be
TAMPERED: every tensor method is watched, patches_tensor_method.)"""

import torch
from torch.overrides import TorchFunctionMode


class _NothingIsOff(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in (torch.Tensor.__gt__, torch.gt, torch.isnan, torch.Tensor.__xor__, torch.Tensor.__ne__):
            return torch.zeros_like(out, dtype=torch.bool)
        return out


_NothingIsOff().__enter__()


def custom_kernel(data):
    return data[-1]
