"""Adversarial: writes 2 GiB without a newline to the verdict pipe while being imported (its
descriptor is the worker's second argument), then sleeps -> TAMPERED once the unfinished line
passes channel.MAX_LINE_BYTES (1 MiB): the parent never buffers more than that."""

import os
import sys
import time

from _common import gemm_into

_event_fd = int(sys.argv[2])  # python -m harness.worker CMD_FD EVENT_FD
_chunk = b"x" * (1 << 20)
try:
    for _ in range(2048):  # 2 GiB in 1 MiB writes; the parent kills the process long before
        os.write(_event_fd, _chunk)
except OSError:
    pass
time.sleep(60)


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    return gemm_into(c, a, b, sfa, sfb)
