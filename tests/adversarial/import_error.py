"""Adversarial: raises while being imported -> FAIL 'import failed'."""

raise RuntimeError("adversarial import-time failure")


def custom_kernel(data):
    return data[-1]
