"""Adversarial: returns each output unwritten and computes it in a SIGALRM handler an interval timer
fires every 50 µs, so the work lands wherever the main thread is then, after the timed region
included -> TAMPERED: signal handlers and interval timers are hooks the guard compares."""

import signal

from _common import gemm_into

_pending = []


def _later(signum, frame):
    while _pending:
        a, b, sfa, sfb, _, _, c = _pending.pop(0)
        gemm_into(c, a, b, sfa, sfb)


signal.signal(signal.SIGALRM, _later)
signal.setitimer(signal.ITIMER_REAL, 5e-5, 5e-5)


def custom_kernel(data):
    _pending.append(data)
    return data[-1]
