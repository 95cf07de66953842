"""Would cluster multicast of A pay in dual_gemm? Build the kernel with A's or B's copies cut, time each.

Issue 6 lists TMA multicast of A (or of the B tiles) across a cluster as a step of the ladder; gemm
tried it three times (v23, v24, v28: slower) and its ablation found that halving A's copy changed
nothing there. dual_gemm's stages are more A-heavy: from v20 on a CTA holds up to 256 rows of A
(32 KB of fp16 per K block) against 2 x 2 KB of B values and 2 x 512 B of scales, so A's L2 -> SM
traffic is ~85% of a stage. This builds one dual_gemm version (v25 by default) with the producer's
copies cut and times the GEMM kernel alone (torch.profiler device time, L2 flushed before every
call, variants interleaved round by round):

  full          the version as it is (its output is checked against the reference)
  half_a_copy   the producer copies the first half of each A tile: the L2 -> SM traffic of A that a
                2-CTA multicast would leave each CTA (an upper bound on its gain: a multicast still
                writes the whole tile into each CTA's shared memory, and couples the pair's rings)
  no_a_copy     no A tile copied (the consumers read a stale slot)
  no_b_copy     neither operand's B values nor scales copied

v32-v44 (session 59, their own anchors): also no_decode (B's fragments the stage's raw words), no_mma (no wgmma:
the fragments folded into the accumulators), copies_only, compute_only, mma_only and skeleton, as ablate_gemm's;
their no_a_copy copies one 1 KB swizzle atom of each A tile (a bulk copy cannot be empty).

Only `full` computes the product; the others' outputs are garbage (finite or not: only their time
is read). Usage on a GPU machine, repo root (builds run in parallel child processes first):
    python3 studies/ablate_dual_gemm.py [--version v25] [--shapes 0,1,2,3] [--variants all]
Without CUDA it only writes the patched sources (--emit DIR), which nvcc can compile.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ablation import gemm_ablation_main, no_decode_patch, no_mma_patch, patched  # noqa: E402

FLAGS = ("ABLATE_NO_A_COPY", "ABLATE_HALF_A_COPY", "ABLATE_NO_B_COPY", "ABLATE_NO_DECODE", "ABLATE_NO_MMA")
VARIANTS = {
    "full": (),
    "half_a_copy": ("ABLATE_HALF_A_COPY",),
    "no_a_copy": ("ABLATE_NO_A_COPY",),
    "no_b_copy": ("ABLATE_NO_B_COPY",),
    # v32-v44 only (their own anchors, V44_PATCHES): the consumers' parts
    "no_decode": ("ABLATE_NO_DECODE",),
    "no_mma": ("ABLATE_NO_MMA",),
    "copies_only": ("ABLATE_NO_DECODE", "ABLATE_NO_MMA"),
    "compute_only": ("ABLATE_NO_A_COPY", "ABLATE_NO_B_COPY"),
    "mma_only": ("ABLATE_NO_A_COPY", "ABLATE_NO_B_COPY", "ABLATE_NO_DECODE"),
    "skeleton": ("ABLATE_NO_A_COPY", "ABLATE_NO_B_COPY", "ABLATE_NO_DECODE", "ABLATE_NO_MMA"),
}
V25_VARIANTS = ("full", "half_a_copy", "no_a_copy", "no_b_copy")  # what the older anchors (PATCHES) can switch

# (text in the version, replacement): must occur exactly once; the anchor is dual_gemm v21-v25's
# producer (five copies a stage counted on the full barrier).
PATCHES = [
    (
        """        mbar_arrive_expect_tx(full + 8 * s, a_bytes + 2 * B_BYTES);
        bulk_copy(st.a, a_src + kb * a_step, a_bytes, full + 8 * s);
        #pragma unroll
        for (int w = 0; w < 2; ++w) {
            bulk_copy(st.b_scales[w], d.sfb_blocked[w] + scale_tile + static_cast<int64_t>(kb) * B_SCALE_BYTES,
                      B_SCALE_BYTES, full + 8 * s);
            tensor_copy_2d(st.b_values[w], &d.b_map[w], (kb_first + kb) * (BLOCK_K / 2), n0, full + 8 * s);
        }""",
        """        {   // NOTE: the full barrier counts exactly the bytes this variant copies (0: a plain arrival).
            // Half of an A tile is n_cols x 64 bytes: a multiple of 16 for every tile height (multiples of 8).
            const uint32_t copied_a = ABLATE_NO_A_COPY ? 0u : ABLATE_HALF_A_COPY ? a_bytes / 2 : a_bytes;
            const uint32_t copied_b = ABLATE_NO_B_COPY ? 0u : 2 * B_BYTES;
            mbar_arrive_expect_tx(full + 8 * s, copied_a + copied_b);
            if (copied_a) bulk_copy(st.a, a_src + kb * a_step, copied_a, full + 8 * s);
            if (copied_b) {
                #pragma unroll
                for (int w = 0; w < 2; ++w) {
                    bulk_copy(st.b_scales[w], d.sfb_blocked[w] + scale_tile + static_cast<int64_t>(kb) * B_SCALE_BYTES,
                              B_SCALE_BYTES, full + 8 * s);
                    tensor_copy_2d(st.b_values[w], &d.b_map[w], (kb_first + kb) * (BLOCK_K / 2), n0, full + 8 * s);
                }
            }
        }""",
    ),
]


# v32-v44's producer (B's copies in copy_b, a first lap of B alone in the early launches) and consumer: their own
# anchors, with the decode and the wgmma switchable too (session 59). NOTE: a bulk copy cannot be empty, so here
# no_a_copy copies one 8-row swizzle atom (1 KB) of each A tile.
V44_PATCHES = [
    ("    const uint32_t a_bytes = static_cast<uint32_t>(n_cols) * 128;\n"
     "    const uint8_t* const a_src = d.a16 + a16_offset(d, t, kb_first, 0, 0);",
     "    const uint32_t a_bytes = ABLATE_NO_A_COPY ? 1024u : static_cast<uint32_t>(n_cols) * 128 / (ABLATE_HALF_A_COPY ? 2 : 1);\n"
     "    const uint8_t* const a_src = d.a16 + a16_offset(d, t, kb_first, 0, 0);"),
    ("        mbar_arrive_expect_tx(full + 8 * s, a_bytes + 2 * B_BYTES);\n"
     "        bulk_copy(st.a, a_src + kb * a_step, a_bytes, full + 8 * s);\n"
     "        copy_b(d, st, n0, kb_first + kb, scale_tile + static_cast<int64_t>(kb) * B_SCALE_BYTES, full + 8 * s);",
     "        mbar_arrive_expect_tx(full + 8 * s, a_bytes + (ABLATE_NO_B_COPY ? 0u : 2 * B_BYTES));\n"
     "        bulk_copy(st.a, a_src + kb * a_step, a_bytes, full + 8 * s);\n"
     "        if (!ABLATE_NO_B_COPY)\n"
     "        copy_b(d, st, n0, kb_first + kb, scale_tile + static_cast<int64_t>(kb) * B_SCALE_BYTES, full + 8 * s);"),
    ("                mbar_arrive_expect_tx(full + 8 * kb, 2 * B_BYTES);\n"
     "                copy_b(",
     "                mbar_arrive_expect_tx(full + 8 * kb, ABLATE_NO_B_COPY ? 0u : 2 * B_BYTES);\n"
     "                if (!ABLATE_NO_B_COPY) copy_b("),
    no_decode_patch("        decode_b(b, b + B_VALUE_BYTES, row, scale_row0, tig, f);", values="b"),
    no_mma_patch("                    wgmma_m64k16<kN>(acc, frag[i % 2][s], desc_sw128(desc_base + (i * STAGE_BYTES + 32 * s) / 16));",
                 "frag[i % 2]"),
]
V44_ANCHOR = "        copy_b(d, st, n0, kb_first + kb, scale_tile"  # v32-v44's producer (copy_b)


def patched_source(text: str, variant: str) -> str:
    defines = "".join(f"#define {f} {int(f in VARIANTS[variant])}\n" for f in FLAGS)
    if V44_ANCHOR in text:
        return patched(text, V44_PATCHES, defines, variant)
    if variant not in V25_VARIANTS:
        raise SystemExit(f"{variant}: this version's anchors (v21-v25's producer) switch only {', '.join(V25_VARIANTS)}")
    return patched(text, PATCHES, defines, variant)


def main() -> int:
    return gemm_ablation_main("dual_gemm", __file__, VARIANTS, patched_source, lambda v: v == "full",
                              "dual_gemm_kernel", "v25", "0,1,2,3",
                              applies=lambda text, v: V44_ANCHOR in text or v in V25_VARIANTS)


if __name__ == "__main__":
    sys.exit(main())
