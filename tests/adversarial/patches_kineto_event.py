"""Adversarial: replaces the profiler record's end_ns at import so every device record of the kernel
method lasts 1 µs, then computes correctly -> TAMPERED (the guard watches the record's methods; the
timing reads them through references taken before the import)."""

import torch

from _common import gemm_into

_event = torch._C._autograd._KinetoEvent
_event.end_ns = lambda self, _start=_event.start_ns: _start(self) + 1000


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    return gemm_into(c, a, b, sfa, sfb)
