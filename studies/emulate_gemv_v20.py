"""Emulates the order and precision of gemv v19's and v20's sums on the CPU (issue 40, the `mixed` FAIL).

v19 (and v11, v16, v18: same arithmetic) adds each 16-element block's term into a per-lane fp32
accumulator (fmaf, lane = piece % 32, piece = 32 elements = blocks 2p, 2p + 1, in increasing p),
then a shuffle-xor tree (16, 8, 4, 2, 1) and __float2half_rn. v20 does the same adds in fp64 and
rounds the exact sum as the reference does, fp64 -> fp32 -> fp16. A block's term is exact in
fp32 in both (checked here on every block), so emulating the sums is all that is needed; the
lane-by-lane byte handling is emulate_gemv_v19.py's (unchanged in v20).

The harness's seeds make their data on the GPU (torch's CUDA generator), which a CPU cannot
reproduce, so this scans CPU seeds of the two shapes that failed on the H200 and reports, per
seed, the judge (reference.yardstick) for both versions.

Usage: python3 tools/experiments/emulate_gemv_v20.py [M K L FIRST_SEED LAST_SEED]   (CPU, ~3 s a seed)
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.getcwd())
from reference import exact, gemv, yardstick  # noqa: E402


def block_terms(data) -> np.ndarray:
    """[L, M, K/16] float64: each block's sum of a x b (decoded values, scales applied), checked exact in fp32."""
    a, b, sfa, sfb, _, _, c = data
    m, k, l = a.shape[0], a.shape[1] * 2, a.shape[2]
    terms = []
    for l_idx in range(l):
        t = (exact.operand(a, sfa, l_idx) * exact.operand(b, sfb, l_idx, 1)).reshape(m, k // 16, 16).sum(-1)
        if not torch.equal(t.float().double(), t):
            raise AssertionError("a block's term is not exact in fp32: the kernels' premise fails")
        terms.append(t.numpy())
    return np.stack(terms)


def kernel_sum(terms: np.ndarray, dtype) -> np.ndarray:
    """The kernel's order: per lane, blocks 2p and 2p + 1 of pieces p = lane (mod 32) in increasing
    p, in `dtype`; then the shuffle-xor tree; lane 0's value."""
    n_l, m, n_blocks = terms.shape
    acc = np.zeros((n_l, m, 32), dtype)
    t = terms.astype(dtype)
    for p in range(n_blocks // 2):
        acc[:, :, p % 32] += t[:, :, 2 * p]
        acc[:, :, p % 32] += t[:, :, 2 * p + 1]
    for offset in (16, 8, 4, 2, 1):
        acc = acc + acc[:, :, np.arange(32) ^ offset]
    return acc[:, :, 0]


def as_output(sums: np.ndarray, like: torch.Tensor) -> torch.Tensor:
    """Rounded to fp32, then to fp16 (each to nearest even, as __double2float_rn and __float2half_rn;
    for v19's fp32 sums the first step is the identity). torch's float64 -> float16, the
    reference's rounding, also goes through float32: numpy's direct astype(float16) would not."""
    out = torch.empty_like(like)
    for l_idx in range(sums.shape[0]):
        out[:, 0, l_idx] = torch.from_numpy(sums[l_idx].astype(np.float32).astype(np.float16))
    return out


def judged(data, out, ref, yard) -> tuple[bool, str]:
    ok, msg = gemv.check(data, out, ref)
    if not ok:
        return False, msg
    (ke, beyond), (ye, yard_beyond) = yardstick.errors(out, ref), yardstick.errors(yard, ref)
    ok, msg = yardstick.judge(ke, ye, beyond, yard_beyond)
    return ok, f"{msg}; beyond one ulp {beyond:.3g}"


def main() -> int:
    args = [int(x) for x in sys.argv[1:]]
    cases = [tuple(args)] if args else [(512, 4096, 2, 1139, 1143), (128, 40960, 1, 2024, 2027)]
    v20_failures = 0
    for m, k, l, first, last in cases:
        for seed in range(first, last + 1):
            data = gemv.generate_input(m=m, k=k, l=l, seed=seed, dist="mixed", device="cpu")
            ref = gemv.ref_kernel(data)
            yard = gemv.ref_kernel(data, matmul=yardstick.matmul_nt)
            terms = block_terms(data)
            exact_sums = terms.sum(-1)  # float64, exact (multiples of 2^-20 far below 2^33)
            v19_ok, v19_msg = judged(data, as_output(kernel_sum(terms, np.float32), data[-1]), ref, yard)
            v20_sums = kernel_sum(terms, np.float64)
            v20_exact = bool(np.array_equal(v20_sums, exact_sums))
            v20_ok, v20_msg = judged(data, as_output(v20_sums, data[-1]), ref, yard)
            v20_failures += (not v20_ok) + (not v20_exact)
            print(f"{m}x{k} L{l} seed {seed}: v19 {'ok' if v19_ok else 'FAIL'} ({v19_msg}) | "
                  f"v20 {'ok' if v20_ok else 'FAIL'} ({v20_msg}), fp64 sums {'exact' if v20_exact else 'NOT exact'}")
    return 1 if v20_failures else 0


if __name__ == "__main__":
    sys.exit(main())
