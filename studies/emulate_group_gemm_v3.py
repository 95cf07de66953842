"""Emulates group_gemm v3's data movement on the CPU (issue 5), to catch index mistakes before GPU time.

Re-implements, thread by thread, what submission_v3.py's kernel does with the bytes: store_a's
swizzled 16-byte chunks, decode_b's register fragments, and the epilogue's accumulator mapping.
The hardware's side follows the PTX documentation: wgmma's register A operand uses mma.sync's
m16n8k16 A-fragment layout, warp w of the warpgroup holding rows 16w..16w+15; its accumulators use
the C layout, repeated per 8 columns; the 128-byte swizzle XORs address bits 4-6 with bits 7-9 of
a 1024-aligned tile; the descriptor's start address moves 32 bytes per k16 step. The result is
compared exactly with the reference. This checks the kernel's indexing *given* those layouts;
`wgmma_smoke.py` checks the layouts on the GPU.

Usage: python3 studies/emulate_group_gemm_v3.py   (CPU only, a few seconds)
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.getcwd())
from reference import codec, group_gemm  # noqa: E402

BLOCK_N, BLOCK_M, BLOCK_K = 128, 128, 64


def half_pair(byte: int, scale: float) -> tuple[float, float]:
    """scaled_pair: both nibbles of a byte, low nibble first, times the block scale (exact in fp16)."""
    lut = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    vals = []
    for nib in (byte & 0xF, byte >> 4):
        v = lut[nib & 7] * (-1.0 if nib & 8 else 1.0)
        vals.append(float(np.float16(v) * np.float16(scale)))
    return vals[0], vals[1]


def run_group(a_bytes, sfa, b_bytes, sfb, m, n, k):
    c = np.full((m, n), np.nan)
    tiles_m, tiles_n = -(-m // BLOCK_M), n // BLOCK_N
    for tm in range(tiles_m):
        for tn in range(tiles_n):
            m0, n0 = tm * BLOCK_M, tn * BLOCK_N
            acc = np.zeros((256, BLOCK_M // 2))  # per thread, as the kernel's acc[]
            for k0 in range(0, k, BLOCK_K):
                # store_a: thread t decodes row t/2, half t%2 into chunks (first_chunk + w) ^ (row % 8)
                tile = np.zeros(BLOCK_M * BLOCK_K)  # fp16 elements, tile-relative
                for t in range(256):
                    row, half = t // 2, t % 2
                    kk = k0 + half * 32
                    if m0 + row >= m:
                        vals = [0.0] * 32
                    else:
                        raw = a_bytes[m0 + row, kk // 2: kk // 2 + 16]
                        s0, s1 = sfa[m0 + row, kk // 16], sfa[m0 + row, kk // 16 + 1]
                        vals = []
                        for i, byte in enumerate(raw):
                            vals += half_pair(int(byte), s0 if i < 8 else s1)
                    for w in range(4):
                        chunk = (half * 4 + w) ^ (row % 8)
                        tile[row * 64 + chunk * 8: row * 64 + chunk * 8 + 8] = vals[w * 8: w * 8 + 8]
                # load_b + decode_b: per thread, frag[s][0..3]
                frags = {}
                for t in range(256):
                    warp, lane = t // 32, t % 32
                    gid, tig = lane // 4, lane % 4
                    n_row = n0 + warp * 16 + gid
                    words = [b_bytes[n_row + 8 * i, k0 // 2: k0 // 2 + 32] for i in range(2)]
                    sc = [sfb[n_row + 8 * i, k0 // 16: k0 // 16 + 4] for i in range(2)]
                    f = [[None] * 4 for _ in range(4)]
                    for i in range(2):
                        for s in range(4):
                            # byte tig of word 2s and of word 2s + 1 (bytes 8s + tig and 8s + 4 + tig)
                            f[s][i] = half_pair(int(words[i][8 * s + tig]), sc[i][s])
                            f[s][2 + i] = half_pair(int(words[i][8 * s + 4 + tig]), sc[i][s])
                    frags[t] = f
                # wgmma, per warpgroup and k16 step: A (64 x 16) from the fragments, B (16 x 128) from the tile
                for wg in range(2):
                    for s in range(4):
                        A = np.full((64, 16), np.nan)
                        for t in range(wg * 128, wg * 128 + 128):
                            w, lane = (t // 32) % 4, t % 32
                            gid, tig = lane // 4, lane % 4
                            f = frags[t][s]
                            A[16 * w + gid, 2 * tig: 2 * tig + 2] = f[0]
                            A[16 * w + gid + 8, 2 * tig: 2 * tig + 2] = f[1]
                            A[16 * w + gid, 2 * tig + 8: 2 * tig + 10] = f[2]
                            A[16 * w + gid + 8, 2 * tig + 8: 2 * tig + 10] = f[3]
                        B = np.zeros((16, BLOCK_M))
                        for col in range(BLOCK_M):  # wgmma's N index: a tile row
                            for kk in range(16):
                                addr = 32 * s + 128 * col + 2 * kk  # bytes from the tile start (1024-aligned)
                                phys = (addr & ~0x70) | ((((addr >> 4) & 7) ^ ((addr >> 7) & 7)) << 4)
                                B[kk, col] = tile[phys // 2]
                        assert not np.isnan(A).any()
                        D = A @ B  # 64 x 128
                        for t in range(wg * 128, wg * 128 + 128):
                            w, lane = (t // 32) % 4, t % 32
                            gid, tig = lane // 4, lane % 4
                            for j in range(BLOCK_M // 8):
                                acc[t, 4 * j + 0] += D[16 * w + gid, 8 * j + 2 * tig]
                                acc[t, 4 * j + 1] += D[16 * w + gid, 8 * j + 2 * tig + 1]
                                acc[t, 4 * j + 2] += D[16 * w + gid + 8, 8 * j + 2 * tig]
                                acc[t, 4 * j + 3] += D[16 * w + gid + 8, 8 * j + 2 * tig + 1]
            # epilogue
            for t in range(256):
                warp, lane = t // 32, t % 32
                gid, tig = lane // 4, lane % 4
                n_row = n0 + warp * 16 + gid
                for j in range(BLOCK_M // 8):
                    mm = m0 + 8 * j + 2 * tig
                    for h in range(2):
                        if mm + h < m:
                            c[mm + h, n_row] = acc[t, 4 * j + h]
                            c[mm + h, n_row + 8] = acc[t, 4 * j + 2 + h]
    return c


def main() -> int:
    data = group_gemm.generate_input(m=[80, 130], n=[128, 256], k=[128, 256], g=2, seed=7, dist="general", device="cpu")
    ref = group_gemm.ref_kernel(data)
    ok = True
    for gi, ((a, b, _), (sfa, sfb)) in enumerate(zip(data[0], data[1])):
        m, n, k = a.shape[0], b.shape[0], a.shape[1] * 2
        a_bytes = a[:, :, 0].view(torch.uint8).numpy()
        b_bytes = b[:, :, 0].view(torch.uint8).numpy()
        sa = codec.decode_e4m3(sfa[:, :, 0]).numpy()
        sb = codec.decode_e4m3(sfb[:, :, 0]).numpy()
        got = run_group(a_bytes, sa, b_bytes, sb, m, n, k)
        want = ref[gi][:, :, 0].double().numpy()
        exact = np.array_equal(got.astype(np.float16), want.astype(np.float16))
        print(f"group {gi}: m={m} n={n} k={k}: {'EXACT' if exact else 'MISMATCH'}"
              + ("" if exact else f" ({np.sum(got.astype(np.float16) != want.astype(np.float16))} elements)"))
        ok &= exact
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
