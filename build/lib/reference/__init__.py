"""NVFP4 reference: the codec, input generation in GPU MODE's tuple format, exact reference
kernels and correctness checks, one module per problem."""

from __future__ import annotations

import importlib

PROBLEMS = ("gemv", "gemm", "dual_gemm", "group_gemm")


def problem_module(name: str):
    if name not in PROBLEMS:
        raise KeyError(name)
    return importlib.import_module(f"reference.{name}")
