"""Adversarial: writes a forged "PASS" reply to every descriptor it can find (the harness's
verdict pipe among them), then computes correctly -> TAMPERED: the line carries no valid signature."""

import os

from _common import gemm_into

FORGED = b'0 0000000000000000000000000000000000000000000000000000000000000000 {"event":"reply","status":"PASS","message":"","times_us":[0.001]}\n'
_done = []


def custom_kernel(data):
    if not _done:
        _done.append(True)
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd > 2:
                try:
                    os.write(fd, FORGED)
                except OSError:
                    pass
    a, b, sfa, sfb, _, _, c = data
    return gemm_into(c, a, b, sfa, sfb)
