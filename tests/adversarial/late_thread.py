"""Adversarial: returns at once and computes the output on a thread 50 ms later, outside any timed
window -> FAIL (a thread left running after the call; the output is still poisoned)."""

import threading
import time

from _common import gemm_into


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data

    def later():
        time.sleep(0.05)
        gemm_into(c, a, b, sfa, sfb)

    threading.Thread(target=later, name="late-writer", daemon=True).start()
    return c
