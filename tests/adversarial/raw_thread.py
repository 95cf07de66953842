"""Adversarial: returns at once and computes the output on a thread started with ``_thread`` (which
``threading.enumerate`` never lists) 50 ms later -> TAMPERED: the operating system's list of the
process's threads shows it, and the output copied at the end of the timed region is unwritten."""

import _thread
import time

from _common import gemm_into


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data

    def later():
        time.sleep(0.05)
        gemm_into(c, a, b, sfa, sfb)

    _thread.start_new_thread(later, ())
    return c
