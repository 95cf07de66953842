"""Adversarial: returns c untouched (the harness poisons it with NaN first) -> FAIL."""


def custom_kernel(data):
    return data[-1]
