"""Adversarial: finds the worker's channel Sender in its own process (the signing key is there, see
harness.channel) and signs an "import" phase event every 0.5 s for 40 s while being imported, to
keep the compile deadline moving -> TIMEOUT compile_timeout_s after the worker's own import event
(harness.isolation counts the extensions; the child's claims do not).

Measured before the fix: one such event a second kept a 5 s compile timeout alive for 52 s."""

import gc
import time

from _common import gemm_into

SECONDS = 40.0
_sender = next(o for o in gc.get_objects() if type(o).__name__ == "Sender" and hasattr(o, "emit"))
_end = time.monotonic() + SECONDS
while time.monotonic() < _end:
    _sender.emit("phase", phase="import", label="still compiling")
    time.sleep(0.5)


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    return gemm_into(c, a, b, sfa, sfb)
