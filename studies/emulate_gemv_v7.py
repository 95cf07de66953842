"""Emulates gemv v7's kernel on the CPU (issue 8), to catch index mistakes before GPU time.

Re-implements, lane by lane, what submission_v7.py's kernel does with the bytes: the int8 vector
written through vector_byte, each lane's 16-byte loads of A and 2-byte loads of its scales, the
two 16-byte vector pieces it reads at (off / 512) x 64 + lane (and + 32) uint4s, block_dot by
PRMT (default mode, sign-replicate) and dp4a, fmaf per block, and the warp's shuffle-xor
reduction. PRMT and dp4a come from prmt_dp4a_decode.py (checked against their PTX definitions).
The output goes through the reference's own check. This checks the kernel's indexing and
arithmetic, not its timing or the hardware.

Usage: python3 studies/emulate_gemv_v7.py   (CPU only, seconds)
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prmt_dp4a_decode import dp4a, prmt  # noqa: E402

from reference import codec, gemv  # noqa: E402

KC = 16384
LOADS_IN_FLIGHT = 4
T_LO, T_HI = 0x03020100, 0x0C080604


def vector_byte(e: int) -> int:
    g, q = e // 32, (e % 32) // 16
    return ((g // 32) * 64 + q * 32 + g % 32) * 16 + e % 16


def e2m1_x2(nibble: int) -> int:
    magnitude = ((T_HI if nibble & 4 else T_LO) >> (8 * (nibble & 3))) & 0xFF
    return (0x100 - magnitude) & 0xFF if nibble & 8 else magnitude


def block_dot(w0: int, w1: int, v: bytes) -> int:
    vec = [int.from_bytes(v[4 * i:4 * i + 4], "little") for i in range(4)]
    pos = neg = 0
    for i, w in enumerate((w0, w1)):
        f = w ^ 0x88888888
        pos = dp4a(prmt(T_LO, T_HI, w), vec[2 * i], pos)
        pos = dp4a(prmt(T_LO, T_HI, w >> 16), vec[2 * i + 1], pos)
        neg = dp4a(prmt(T_LO, T_HI, f), vec[2 * i], neg)
        neg = dp4a(prmt(T_LO, T_HI, f >> 16), vec[2 * i + 1], neg)
    return pos - neg


def fmaf(a, b, c) -> np.float32:
    return np.float32(float(a) * float(b) + float(c))  # one rounding (the product is exact in float64)


E4M3 = codec.decode_e4m3(codec.e4m3_from_bits(torch.arange(256, dtype=torch.uint8))).numpy().astype(np.float32)


def e4m3(byte: int) -> np.float32:
    return E4M3[byte]


def run(data) -> torch.Tensor:
    a, b, sfa, sfb, _, _, c = data
    u8 = torch.uint8
    A, B, SA, SB = (t.view(u8).numpy() for t in (a, b, sfa, sfb))
    M, K, L = a.shape[0], a.shape[1] * 2, a.shape[2]
    out = torch.empty_like(c)  # the strides of c, as the kernel writes into c
    for l in range(L):
        acc = np.zeros((M, 32), dtype=np.float32)
        for k0 in range(0, K, KC):
            kc = min(KC, K - k0)
            vec = bytearray(KC)
            for i in range(kc // 2):
                byte = int(B[0, k0 // 2 + i, l])
                vec[vector_byte(2 * i)] = e2m1_x2(byte & 0xF)
                vec[vector_byte(2 * i) + 1] = e2m1_x2(byte >> 4)
            vsf = [np.float32(e4m3(int(SB[0, k0 // 16 + i, l])) * np.float32(0.25)) for i in range(kc // 16)]
            chunk_bytes = kc // 2
            for row in range(M):
                for base in range(0, chunk_bytes, 32 * 16 * LOADS_IN_FLIGHT):
                    for j in range(LOADS_IN_FLIGHT):
                        for lane in range(32):
                            off = base + (j * 32 + lane) * 16
                            if off >= chunk_bytes:
                                continue
                            raw = bytes(A[row, k0 // 2 + off:k0 // 2 + off + 16, l])
                            words = [int.from_bytes(raw[4 * i:4 * i + 4], "little") for i in range(4)]
                            sa = [int(SA[row, (k0 // 2 + off) // 8 + i, l]) for i in range(2)]
                            vp = ((off // 512) * 64 + lane) * 16
                            v0, v1 = bytes(vec[vp:vp + 16]), bytes(vec[vp + 512:vp + 528])
                            s0, s1 = vsf[off // 8], vsf[off // 8 + 1]
                            d0, d1 = block_dot(words[0], words[1], v0), block_dot(words[2], words[3], v1)
                            acc[row, lane] = fmaf(d0, np.float32(e4m3(sa[0]) * s0), acc[row, lane])
                            acc[row, lane] = fmaf(d1, np.float32(e4m3(sa[1]) * s1), acc[row, lane])
        for offset in (16, 8, 4, 2, 1):  # __shfl_xor_sync: every lane adds its partner's value at once
            acc = acc + acc[:, np.arange(32) ^ offset]
        out[:, 0, l] = torch.from_numpy(acc[:, 0].astype(np.float16))
    return out


def main() -> int:
    failures = 0
    for shape in ({"m": 16, "k": 1024, "l": 2}, {"m": 5, "k": 64, "l": 1}, {"m": 3, "k": 17408, "l": 1}):
        for dist in ("competition", "general"):
            data = gemv.generate_input(**shape, seed=7, dist=dist, device="cpu")
            ok, msg = gemv.check(data, run(data))
            print(f"{shape} {dist}: {'ok' if ok else 'FAIL ' + msg}")
            failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
