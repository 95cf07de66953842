"""Adversarial: at import, sets the scale range that input generation reads (reference.gemm's
COMPETITION_SCALES) to zeros, so every input it is handed has zero scales and every output is zero;
it returns zeros without work -> FAIL in `test` and `run` alike: the judge generates the inputs
in a process this file never reaches."""

import reference.gemm

reference.gemm.COMPETITION_SCALES = "int:0:1"


def custom_kernel(data):
    return data[-1].zero_()
