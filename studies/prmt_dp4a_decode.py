"""Can e2m1 x e2m1 dot products skip the decode table? (issue 8: gemv's next rung)

gemv v3-v6 decode A through a 256-entry half2 table in shared memory: per byte of A one PRMT, one
LDS and one HFMA2. The LDS traffic is ~8 bytes of shared memory per byte of A (~14 µs of shared
bandwidth on 7168x16384 at 128 B/cycle/SM), next to the 15.6 µs HBM floor. The idea checked here:
e2m1 x 2 is an integer in -12..12, so a 16-element block's dot product is exact in dp4a's int32.
PRMT turns four raw nibbles into four int8 in one instruction: with the table {0,1,2,3,4,6,8,12}
in its two source registers, a nibble's low 3 bits pick the magnitude and its sign bit selects
PRMT's sign-replicate mode, which yields 0 (every table byte is positive). So
  pos = PRMT(T, nibbles)          = |a| where a >= 0, else 0
  neg = PRMT(T, nibbles ^ 0x8888) = |a| where a <  0, else 0
and sum(a x b) = dp4a(pos, b) - dp4a(neg, b), with b (the vector, x 2, int8) stored once in the
element order PRMT produces. Per 8 elements: 2 shifts, 1 XOR, 4 PRMT, 4 dp4a, no table loads.
This script emulates PRMT (PTX default mode) and dp4a bit for bit and checks the identity on
random words. No GPU needed: python3 studies/prmt_dp4a_decode.py
"""

import random
import sys

E2M1 = [0, 0.5, 1, 1.5, 2, 3, 4, 6]
T_LO = 0x03020100  # e2m1 magnitude x 2 of codes 0..3: 0, 1, 2, 3
T_HI = 0x0C080604  # codes 4..7: 4, 6, 8, 12


def e2m1(nibble: int) -> float:
    value = E2M1[nibble & 7]
    return -value if nibble & 8 else value


def prmt(a: int, b: int, c: int) -> int:
    """prmt.b32 d, a, b, c (default mode): byte i of d is byte (c's nibble i & 7) of {b, a}, or,
    when the nibble's bit 3 is set, that byte's bit 7 replicated."""
    src = [(a >> (8 * i)) & 0xFF for i in range(4)] + [(b >> (8 * i)) & 0xFF for i in range(4)]
    out = 0
    for i in range(4):
        n = (c >> (4 * i)) & 0xF
        byte = src[n & 7]
        if n & 8:
            byte = 0xFF if byte & 0x80 else 0
        out |= byte << (8 * i)
    return out


def s8(x: int) -> int:
    return x - 256 if x >= 128 else x


def dp4a(a: int, b: int, acc: int) -> int:
    """dp4a.s32.s32: acc + the dot product of a's and b's four signed bytes."""
    return acc + sum(s8((a >> (8 * i)) & 0xFF) * s8((b >> (8 * i)) & 0xFF) for i in range(4))


def packed(values: list[int]) -> int:
    return sum((v & 0xFF) << (8 * i) for i, v in enumerate(values))


def vsub4(a: int, b: int) -> int:
    """__vsub4: byte-wise a - b, each byte modulo 256 (no borrow between bytes)."""
    return packed([((a >> (8 * i)) & 0xFF) - ((b >> (8 * i)) & 0xFF) for i in range(4)])


def check_vector_decode() -> int:
    """gemv v10 decodes the vector to int8 (x 2) as vsub4(PRMT(T, w), PRMT(T, w ^ 0x8888)): every
    16-bit word, i.e. every combination of four codes."""
    for w in range(1 << 16):
        got = vsub4(prmt(T_LO, T_HI, w), prmt(T_LO, T_HI, w ^ 0x8888))
        want = packed([int(e2m1((w >> (4 * i)) & 0xF) * 2) for i in range(4)])
        if got != want:
            print(f"MISMATCH vector decode w={w:#06x}: {got:#010x} != {want:#010x}")
            return 1
    print("ok: all 65536 words: vsub4(PRMT(T, w), PRMT(T, w ^ 0x8888)) is the four codes x 2 as int8")
    return 0


def main(trials: int = 20000) -> int:
    if check_vector_decode():
        return 1
    rng = random.Random(1)
    for _ in range(trials):
        w = rng.getrandbits(32)  # 8 nibbles of A, element i at bits 4i..4i+3
        b = [rng.randint(-12, 12) for _ in range(8)]  # the vector x 2, any int8 in range
        b_lo, b_hi = packed(b[:4]), packed(b[4:])  # PRMT's order: elements 0..3 from w, 4..7 from w >> 16
        flip = w ^ 0x88888888
        pos = dp4a(prmt(T_LO, T_HI, w >> 16), b_hi, dp4a(prmt(T_LO, T_HI, w), b_lo, 0))
        neg = dp4a(prmt(T_LO, T_HI, flip >> 16), b_hi, dp4a(prmt(T_LO, T_HI, flip), b_lo, 0))
        exact = sum(e2m1((w >> (4 * i)) & 0xF) * 2 * b[i] for i in range(8))
        if pos - neg != exact:
            print(f"MISMATCH w={w:#010x} b={b}: {pos} - {neg} != {exact}")
            return 1
    print(f"ok: {trials} random words: dp4a(PRMT(T, w)) - dp4a(PRMT(T, w ^ 0x88888888)) is the exact x 4 dot product")
    return 0


if __name__ == "__main__":
    sys.exit(main())
