"""Adversarial: never returns -> TIMEOUT (the process group is killed)."""

import time


def custom_kernel(data):
    time.sleep(10**6)
    return data[-1]
