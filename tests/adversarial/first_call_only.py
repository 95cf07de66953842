"""Adversarial: computes only the first call of each timed batch. It finds the harness's timing loop
on the call stack and, within one pass of that loop, returns c untouched after the first call:
the cheat that wins when a harness checks one output per batch -> FAIL: every timed call's
output is checked."""

import sys

from _common import gemm_into

_batch = [None]


def _timing_frame():
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "time_block":
            return id(frame)
        frame = frame.f_back
    return None


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    batch = _timing_frame()
    if batch is not None and batch == _batch[0]:
        return c  # a later call of the same batch: skip the work
    _batch[0] = batch
    return gemm_into(c, a, b, sfa, sfb)
