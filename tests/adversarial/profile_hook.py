"""Adversarial: computes correctly, and in its first call installs a sys.setprofile hook that
divides every time in the block timing's result by three as time_block returns -> TAMPERED (the
guard compares the interpreter's hooks with those set before the import)."""

import sys

from _common import gemm_into


def _hook(frame, event, arg):
    if event == "return" and frame.f_code.co_name == "time_block" and hasattr(arg, "times_us"):
        arg.times_us[:] = [t / 3 for t in arg.times_us]


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    if sys.getprofile() is None:
        sys.setprofile(_hook)
    return gemm_into(c, a, b, sfa, sfb)
