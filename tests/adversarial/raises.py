"""Adversarial: raises inside custom_kernel -> FAIL 'custom_kernel raised ValueError'."""


def custom_kernel(data):
    raise ValueError("adversarial kernel refuses")
