"""Adversarial: the process exits with status 0 inside custom_kernel -> CRASH (no result, no 'done')."""

import os


def custom_kernel(data):
    os._exit(0)
