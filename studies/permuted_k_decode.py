"""CPU check of group_gemm v16's K permutation and nibble-pair decode, bit for bit.

v16 lets each consumer thread decode one whole 16-element scale block of a B row per K block
(one 8-byte shared load, one scale) by permuting K inside every 64-wide K block, the same way
for both operands: fragment position p = 16s + 8j + 2t + h (wgmma k16 step s, register half j,
thread-in-group t, element h of a register pair) holds actual k = 16t + 8j + s + 4h. A register
pair is then nibbles s and s + 4 of the 32-bit word 2t + j, 16 bits apart, which shifts and
masks place straight into a half2: value x 2^-14 (e2m1's 2-bit exponent and 1-bit mantissa
land as fp16's low exponent bits and top mantissa bit).
Checks: (1) the map is a bijection of 0..63; (2) every register pair shares one scale block;
(3) the decode equals e2m1 x 2^-14 for all 256 values of a pair's two nibbles (with random
bits in the other nibbles), for each of the four shifts; (4) a whole K block's dot product through the
permuted layouts equals the plain one for random data. Exits non-zero on any mismatch.
"""
import random
import struct
import sys

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def e2m1(nibble: int) -> float:
    v = E2M1[nibble & 7]
    return -v if nibble & 8 else v


def actual_k(p: int) -> int:
    s, q = divmod(p, 16)
    j, r = divmod(q, 8)
    t, h = divmod(r, 2)
    return 16 * t + 8 * j + s + 4 * h


def half_bits_to_float(bits: int) -> float:
    return struct.unpack("<e", struct.pack("<H", bits & 0xFFFF))[0]


def decode_pair(word: int, s: int) -> tuple[float, float]:
    """The kernel's ops: sign bits (4s+3, 4s+19) to 15 and 31, magnitudes (4s..4s+2, +16) to 9..11 and 25..27."""
    sign_src = (word << (12 - 4 * s)) & 0xFFFFFFFF
    mag_src = ((word << (9 - 4 * s)) if s < 3 else (word >> 3)) & 0xFFFFFFFF
    bits = (sign_src & 0x80008000) | (mag_src & 0x0E000E00)
    return half_bits_to_float(bits), half_bits_to_float(bits >> 16)


def main() -> int:
    failures = 0
    perm = [actual_k(p) for p in range(64)]
    if sorted(perm) != list(range(64)):
        print("not a bijection"); failures += 1
    for p in range(0, 64, 2):
        if perm[p] // 16 != perm[p + 1] // 16:
            print(f"pair at position {p} spans two scale blocks"); failures += 1
    for s in range(4):
        for lo in range(16):
            for hi in range(16):
                word = (lo << (4 * s)) | (hi << (4 * s + 16))
                # NOTE: garbage in the other nibbles must not leak into the pair.
                word |= random.getrandbits(32) & ~((0xF << (4 * s)) | (0xF << (4 * s + 16))) & 0xFFFFFFFF
                got = decode_pair(word, s)
                want = (e2m1(lo) * 2.0 ** -14, e2m1(hi) * 2.0 ** -14)
                if got != want:
                    print(f"decode s={s} lo={lo} hi={hi}: {got} != {want}"); failures += 1
    rng = random.Random(1)
    for _ in range(200):
        a = [rng.uniform(-3, 3) for _ in range(64)]
        b_bytes = [rng.getrandbits(8) for _ in range(32)]
        b = [e2m1(b_bytes[k // 2] >> (4 * (k % 2))) for k in range(64)]  # low nibble first, as packed
        plain = sum(x * y for x, y in zip(a, b))
        words = [int.from_bytes(bytes(b_bytes[4 * w:4 * w + 4]), "little") for w in range(8)]
        permuted = 0.0
        for p in range(0, 64, 2):
            s, q = divmod(p, 16)
            j, r = divmod(q, 8)
            t = r // 2
            lo, hi = decode_pair(words[2 * t + j], s)
            permuted += a[perm[p]] * lo * 2.0 ** 14 + a[perm[p + 1]] * hi * 2.0 ** 14
        if abs(plain - permuted) > 1e-9 * max(1.0, abs(plain)):
            print(f"dot product {permuted} != {plain}"); failures += 1
            break
    print("permuted K decode:", "FAIL" if failures else "ok (bijection, scale blocks, 4 x 256 nibble pairs, 200 dot products)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
