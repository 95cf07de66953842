"""Emulates gemv v19's kernel on the CPU (issue 40), to catch index and sign mistakes before GPU time.

v19 drops v7-v18's shared-memory vector: each lane reads the vector's 16 packed bytes at the same
offset as its 16 bytes of A, and the product's sign is folded into A's codes (s = w ^ (u & 0x88888888),
f = w ^ (~u & 0x88888888)) so that the vector is decoded to magnitudes only. This re-implements,
lane by lane, what submission_v19.py's kernel does with the bytes: the batch offsets
(base + (j x 32 + lane) x 16), the 2-byte scale reads at off / 8 of sfa and sfb, dot8 by PRMT
(default mode, sign-replicate) and dp4a, fmaf per 16-element block, and the warp's shuffle-xor
reduction. PRMT and dp4a come from prmt_dp4a_decode.py (checked against their PTX definitions).
First dot8 alone against e2m1 products on every pair of codes in every nibble position; then the
output through the reference's own check, on every input distribution.

Usage: python3 tools/experiments/emulate_gemv_v19.py   (CPU only, ~1 min)
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prmt_dp4a_decode import dp4a, e2m1, prmt  # noqa: E402

from reference import codec, distributions, gemv  # noqa: E402

LOADS_IN_FLIGHT = 4
BATCH_BYTES = 32 * 16 * LOADS_IN_FLIGHT
T_LO, T_HI = 0x03020100, 0x0C080604
SIGN_BITS = 0x88888888
MASK32 = 0xFFFFFFFF


def vector_magnitudes(u: int) -> tuple[int, int]:
    m = u & ~SIGN_BITS & MASK32
    return prmt(T_LO, T_HI, m), prmt(T_LO, T_HI, m >> 16)


def dot8(w: int, u: int) -> int:
    """sum over the 8 codes of w (A) and u (the vector) of a x b x 4, as the kernel's dot8 does."""
    lo, hi = vector_magnitudes(u)
    s = w ^ (u & SIGN_BITS)
    f = w ^ (~u & SIGN_BITS & MASK32)
    pos = dp4a(prmt(T_LO, T_HI, s), lo, 0)
    pos = dp4a(prmt(T_LO, T_HI, s >> 16), hi, pos)
    neg = dp4a(prmt(T_LO, T_HI, f), lo, 0)
    neg = dp4a(prmt(T_LO, T_HI, f >> 16), hi, neg)
    return pos - neg


def check_dot8() -> int:
    """Every (a, b) code pair in every one of the 8 nibble positions, the other nibbles random."""
    rng = np.random.default_rng(40)
    bad = 0
    for position in range(8):
        for ca in range(16):
            for cb in range(16):
                w_rest, u_rest = (int(x) for x in rng.integers(0, 2**32, 2))
                clear = ~(0xF << (4 * position)) & MASK32
                w = (w_rest & clear) | (ca << (4 * position))
                u = (u_rest & clear) | (cb << (4 * position))
                want = sum(e2m1((w >> (4 * i)) & 0xF) * e2m1((u >> (4 * i)) & 0xF) * 4 for i in range(8))
                got = dot8(w, u)
                if got != want:
                    bad += 1
                    if bad <= 5:
                        print(f"dot8 w={w:08x} u={u:08x}: {got} != {want}")
    print(f"dot8: {8 * 256 - bad} / {8 * 256} code pairs exact")
    return bad


def fmaf(a, b, c) -> np.float32:
    return np.float32(float(a) * float(b) + float(c))  # one rounding (the product is exact in float64)


E4M3 = codec.decode_e4m3(codec.e4m3_from_bits(torch.arange(256, dtype=torch.uint8))).numpy().astype(np.float32)


def e4m3(byte: int) -> np.float32:
    return E4M3[byte & 0xFF]


def run(data) -> torch.Tensor:
    a, b, sfa, sfb, _, _, c = data
    u8 = torch.uint8
    A, B, SA, SB = (t.view(u8).numpy() for t in (a, b, sfa, sfb))
    M, K, L = a.shape[0], a.shape[1] * 2, a.shape[2]
    row_bytes = K // 2
    out = torch.empty_like(c)  # the strides of c, as the kernel writes into c
    for l in range(L):
        acc = np.zeros((M, 32), dtype=np.float32)
        for row in range(M):
            for base in range(0, row_bytes, BATCH_BYTES):
                for j in range(LOADS_IN_FLIGHT):
                    for lane in range(32):
                        off = base + (j * 32 + lane) * 16
                        if off >= row_bytes:
                            continue
                        raw = bytes(A[row, off:off + 16, l])
                        vec = bytes(B[0, off:off + 16, l])
                        words = [int.from_bytes(raw[4 * i:4 * i + 4], "little") for i in range(4)]
                        vwords = [int.from_bytes(vec[4 * i:4 * i + 4], "little") for i in range(4)]
                        sa = [int(SA[row, off // 8 + i, l]) for i in range(2)]
                        sb = [int(SB[0, off // 8 + i, l]) for i in range(2)]
                        s0, s1 = np.float32(e4m3(sb[0]) * np.float32(0.25)), np.float32(e4m3(sb[1]) * np.float32(0.25))
                        d0 = dot8(words[0], vwords[0]) + dot8(words[1], vwords[1])
                        d1 = dot8(words[2], vwords[2]) + dot8(words[3], vwords[3])
                        acc[row, lane] = fmaf(d0, np.float32(e4m3(sa[0]) * s0), acc[row, lane])
                        acc[row, lane] = fmaf(d1, np.float32(e4m3(sa[1]) * s1), acc[row, lane])
        for offset in (16, 8, 4, 2, 1):  # __shfl_xor_sync: every lane adds its partner's value at once
            acc = acc + acc[:, np.arange(32) ^ offset]
        out[:, 0, l] = torch.from_numpy(acc[:, 0].astype(np.float16))
    return out


def main() -> int:
    failures = check_dot8()
    # 2 x 2048 + a 512-byte tail (a partial batch: pieces past the row's end skipped), the shortest
    # K, a row block cut by M, several batches
    for shape in ({"m": 3, "k": 9216, "l": 1}, {"m": 5, "k": 32, "l": 2}, {"m": 17, "k": 1024, "l": 2}):
        for dist in distributions.DISTS:
            data = gemv.generate_input(**shape, seed=7, dist=dist, device="cpu")
            ok, msg = gemv.check(data, run(data))
            print(f"{shape} {dist}: {'ok' if ok else 'FAIL ' + msg}")
            failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
