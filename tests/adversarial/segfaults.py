"""Adversarial: reads address 0 -> SIGSEGV -> CRASH."""

import ctypes


def custom_kernel(data):
    ctypes.string_at(0)
    return data[-1]
