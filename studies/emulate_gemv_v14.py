"""Emulates gemv v14's kernel on the CPU (issue 8), to catch staging mistakes before GPU time.

v14 moves each warp's next load batch into a 4.5 KB shared-memory stage by cp.async while the
current batch is computed, and after a row block's last batch requests the first batch of the
CTA's next row block (possibly another batch l). This re-implements, in the kernel's program
order, what each warp writes into and reads from its stage: issue_batch's copies (16-byte pieces
of A, 4-byte scale words, rows past M and pieces past the chunk skipped, so the stage keeps stale
bytes there), the copy into registers, the next request, and v7-v11's arithmetic
(emulate_gemv_v7.py: block_dot by PRMT and dp4a, fmaf per block, the shuffle reduction). A copy is
applied when it is issued: the kernel reads a stage only after cp.async.wait_all, so any read that
comes before its batch's request in program order, or a request that overwrites a batch before it
was read, gives a wrong answer here. The stage starts as random bytes, as shared memory does. A
small grid (--sms) forces several row blocks per CTA. The output goes through the reference's check.

Usage: python3 studies/emulate_gemv_v14.py   (CPU only, under a minute)
"""
import os
import random
import sys

import numpy as np
import torch

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emulate_gemv_v7 import block_dot, e2m1_x2, e4m3, fmaf, vector_byte  # noqa: E402

from reference import gemv  # noqa: E402

KC = 16384
WARPS, ROWS_PER_WARP, PIECES = 8, 2, 4
ROWS_PER_BLOCK = WARPS * ROWS_PER_WARP
BATCH = 32 * 16 * PIECES  # bytes of a row per batch
STAGE_A = ROWS_PER_WARP * BATCH
STAGE = STAGE_A + STAGE_A // 8


def run(data, ctas_per_grid: int) -> torch.Tensor:
    a, b, sfa, sfb, _, _, c = data
    u8 = torch.uint8
    A, B, SA, SB = (t.view(u8).numpy() for t in (a, b, sfa, sfb))
    M, K, L = a.shape[0], a.shape[1] * 2, a.shape[2]
    row_blocks = (M + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK
    work_items = row_blocks * L
    grid = min(work_items, ctas_per_grid)
    first_chunk_bytes = min(K, KC) // 2
    out = torch.full_like(c, float("nan"))
    rng = random.Random(3)

    def vector(l, k0, kc):
        vec = bytearray(rng.getrandbits(8) for _ in range(KC))  # NOTE: stale shared memory past kc
        for i in range(kc // 2):
            byte = int(B[0, k0 // 2 + i, l])
            vec[vector_byte(2 * i)] = e2m1_x2(byte & 0xF)
            vec[vector_byte(2 * i) + 1] = e2m1_x2(byte >> 4)
        vsf = [np.float32(e4m3(int(SB[0, k0 // 16 + i, l])) * np.float32(0.25)) for i in range(kc // 16)]
        return vec, vsf

    for cta in range(grid):
        for warp in range(WARPS):
            stage = bytearray(rng.getrandbits(8) for _ in range(STAGE))

            def issue(work, chunk_offset, base, chunk_bytes):
                l, row0 = work // row_blocks, (work % row_blocks) * ROWS_PER_BLOCK + warp * ROWS_PER_WARP
                live_rows = M - row0
                for lane in range(32):
                    for j in range(PIECES):
                        off = base + (j * 32 + lane) * 16
                        for r in range(ROWS_PER_WARP):
                            if off < chunk_bytes and r < live_rows:
                                dst = r * BATCH + (j * 32 + lane) * 16
                                stage[dst:dst + 16] = bytes(A[row0 + r, chunk_offset + off:chunk_offset + off + 16, l])
                    scale_bytes = min(chunk_bytes - base, BATCH) // 8
                    for i in range(2):
                        word = i * 32 + lane
                        if word * 4 < scale_bytes:
                            for r in range(ROWS_PER_WARP):
                                if r < live_rows:
                                    dst = STAGE_A + r * (BATCH // 8) + word * 4
                                    src = (chunk_offset + base) // 8 + word * 4
                                    stage[dst:dst + 4] = bytes(SA[row0 + r, src:src + 4, l])

            issue(cta, 0, 0, first_chunk_bytes)
            for work in range(cta, work_items, grid):
                l, row0 = work // row_blocks, (work % row_blocks) * ROWS_PER_BLOCK + warp * ROWS_PER_WARP
                acc = np.zeros((ROWS_PER_WARP, 32), dtype=np.float32)
                for k0 in range(0, K, KC):
                    kc = min(KC, K - k0)
                    chunk_bytes = kc // 2
                    if k0 > 0:
                        issue(work, k0 // 2, 0, chunk_bytes)
                    vec, vsf = vector(l, k0, kc)
                    for base in range(0, chunk_bytes, BATCH):
                        regs = [[bytes(stage[r * BATCH + (j * 32 + lane) * 16:][:16]) for j in range(PIECES)
                                 for lane in range(32)] for r in range(ROWS_PER_WARP)]
                        sas = [[bytes(stage[STAGE_A + r * (BATCH // 8) + (j * 32 + lane) * 2:][:2]) for j in range(PIECES)
                                for lane in range(32)] for r in range(ROWS_PER_WARP)]
                        if base + BATCH < chunk_bytes:
                            issue(work, k0 // 2, base + BATCH, chunk_bytes)
                        elif k0 + KC >= K and work + grid < work_items:
                            issue(work + grid, 0, 0, first_chunk_bytes)
                        for j in range(PIECES):
                            for lane in range(32):
                                off = base + (j * 32 + lane) * 16
                                if off >= chunk_bytes:
                                    continue
                                vp = ((off // 512) * 64 + lane) * 16
                                v0, v1 = bytes(vec[vp:vp + 16]), bytes(vec[vp + 512:vp + 528])
                                s0, s1 = vsf[off // 8], vsf[off // 8 + 1]
                                for r in range(ROWS_PER_WARP):
                                    raw, sa = regs[r][j * 32 + lane], sas[r][j * 32 + lane]
                                    words = [int.from_bytes(raw[4 * i:4 * i + 4], "little") for i in range(4)]
                                    d0, d1 = block_dot(words[0], words[1], v0), block_dot(words[2], words[3], v1)
                                    acc[r, lane] = fmaf(d0, np.float32(e4m3(sa[0]) * s0), acc[r, lane])
                                    acc[r, lane] = fmaf(d1, np.float32(e4m3(sa[1]) * s1), acc[r, lane])
                for offset in (16, 8, 4, 2, 1):
                    acc = acc + acc[:, np.arange(32) ^ offset]
                for r in range(ROWS_PER_WARP):
                    if row0 + r < M:
                        out[row0 + r, 0, l] = float(acc[r, 0].astype(np.float16))
    return out


def main() -> int:
    failures = 0
    cases = (({"m": 40, "k": 1024, "l": 3}, 2),    # row blocks of two batches l per CTA, rows past M
             ({"m": 5, "k": 64, "l": 2}, 1),       # one CTA, partial batch, 3 dead rows per warp
             ({"m": 16, "k": 7168, "l": 1}, 1),    # two batches per row, the second partial
             ({"m": 3, "k": 17408, "l": 2}, 1))    # two chunks of the vector
    for shape, ctas in cases:
        for dist in ("competition", "general"):
            data = gemv.generate_input(**shape, seed=7, dist=dist, device="cpu")
            ok, msg = gemv.check(data, run(data, ctas))
            print(f"{shape} on {ctas} CTA(s), {dist}: {'ok' if ok else 'FAIL ' + msg}", flush=True)
            failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
