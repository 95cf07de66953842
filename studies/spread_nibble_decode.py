"""dual_gemm v33's B decode: per-byte nibble spread + PRMT/AND, bit for bit v32's e2m1_pair_bits<s>.

v32 built each wgmma register (nibbles s and s + 4 of a packed e2m1 word, as the high bytes of two
fp16 halves worth value x 2^-14: sign at bit 15, magnitude at bits 9..11) alone, with two shifts and
two masks. v33 spreads the word's odd nibbles and even nibbles per byte into the pattern 0x8E (sign
at bit 7, magnitude at 1..3) and takes each register from those two words with one PRMT
(__byte_perm(x, 0, 0x2404): bytes 0 and 2 up into the high bytes) or one AND (bytes 1 and 3 in
place). Each register depends on 8 bits of the word, but this checks all 2^32 words, in numpy
(210-372 s on one core of the shared 2-core CPU machine; found: identical for every word and s = 0..3).
No GPU needed: python3 studies/spread_nibble_decode.py
"""

import sys
import time

import numpy as np

U = np.uint32


def v32_pair_bits(w: np.ndarray, s: int) -> np.ndarray:
    """e2m1_pair_bits<s>(w), v32's decode_b (and every dual_gemm prepass): two shifts, two masks."""
    sign_src = w << U(12 - 4 * s)
    magnitude_src = w << U(9 - 4 * s) if s < 3 else w >> U(3)
    return (sign_src & U(0x80008000)) | (magnitude_src & U(0x0E000E00))


def byte_perm_2404(x: np.ndarray) -> np.ndarray:
    """PRMT (default mode) of (x, 0) with selector 0x2404: output bytes (0, x.b0, 0, x.b2)."""
    return ((x & U(0xFF)) << U(8)) | ((x & U(0xFF0000)) << U(8))


def v33_word_pairs(w: np.ndarray) -> list[np.ndarray]:
    """e2m1_word_pairs(w), v33's decode_b: the four registers of a word."""
    odd = (w & U(0x80808080)) | ((w >> U(3)) & U(0x0E0E0E0E))
    even = ((w << U(4)) & U(0x80808080)) | ((w << U(1)) & U(0x0E0E0E0E))
    return [byte_perm_2404(even), byte_perm_2404(odd), even & U(0xFF00FF00), odd & U(0xFF00FF00)]


def main() -> int:
    chunk = 1 << 26
    start = time.time()
    for c in range((1 << 32) // chunk):
        w = np.arange(c * chunk, (c + 1) * chunk, dtype=np.uint64).astype(np.uint32)
        pairs = v33_word_pairs(w)
        for s in range(4):
            old = v32_pair_bits(w, s)
            bad = np.nonzero(pairs[s] != old)[0]
            if bad.size:
                i = bad[0]
                print(f"MISMATCH s={s} word {int(w[i]):#010x}: v33 {int(pairs[s][i]):#010x}, v32 {int(old[i]):#010x}")
                return 1
    print(f"all 2^32 words, s = 0..3: v33's registers equal v32's ({time.time() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
