"""Where does the gemm kernel spend its K loop? Build it with parts removed and time each.

v66-v74 (the paired kernel, 128x7168x2048's launch): their own anchors (PAIRED_PATCHES); only `--shapes 2` is ablated
there, and no_a_copy copies one 1 KB swizzle atom of each A tile (a bulk copy cannot be empty).

gemm v19's timeline (v15's, H100) puts 128x7168x16384's K loop at ~0.354 µs (~620 cycles) per
K block against 512 cycles of tensor work, and its CTAs read each block's fp16 A tile (16 KB) from
L2: 112 CTAs x 16 KB every 0.354 µs is ~5 TB/s, near what an H100's L2 serves. group_gemm's
ablation (ablate_group_gemm.py) ruled A's L2 traffic out for that kernel, whose CTAs ask for it at
under half this rate. This builds one gemm version (v19 by default) several times, each with one
part switched off by a preprocessor flag, and times the GEMM kernel alone (torch.profiler device
time, L2 flushed before every call, variants interleaved round by round):

  full          the version as it is (its output is checked against the reference)
  half_a_copy   the producer copies half of each A tile: the L2 -> SM traffic of A that a 2-CTA
                cluster multicast would leave each CTA
  no_a_copy     no A tile copied (the consumers read a stale slot)
  no_b_copy     neither B's values nor its scales copied
  no_decode     B's fragments are the stage's raw words (masked finite), no e2m1 decode
  no_mma        no wgmma: the fragments are folded into the accumulators by XOR
  copies_only   no_decode + no_mma: the ring's copies and barriers alone
  compute_only  no_a_copy + no_b_copy: decode and wgmma with the barrier handshake, no loads
  mma_only      compute_only without the decode: wgmma and the handshake
  skeleton      none of the four: the handshake, the split-K sum and the epilogue
  no_epilogue   the kernel returns after its K loop: no split-K sum, no store of C

Only `full` computes the product; the others are diagnostics and their outputs are garbage.
Usage on a GPU machine, repo root (builds run in parallel child processes first):
    python3 studies/ablate_gemm.py [--version v19] [--shapes 0,1,2] [--variants all]
Without CUDA it only writes the patched sources (--emit DIR), which nvcc can compile.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ablation import gemm_ablation_main, no_decode_patch, no_mma_patch, patched  # noqa: E402

FLAGS = ("ABLATE_NO_A_COPY", "ABLATE_HALF_A_COPY", "ABLATE_NO_B_COPY", "ABLATE_NO_DECODE", "ABLATE_NO_MMA",
         "ABLATE_NO_EPILOGUE")
NO_LOADS = ("ABLATE_NO_A_COPY", "ABLATE_NO_B_COPY")
NO_COMPUTE = ("ABLATE_NO_DECODE", "ABLATE_NO_MMA")
VARIANTS = {
    "full": (),
    "half_a_copy": ("ABLATE_HALF_A_COPY",),
    "no_a_copy": ("ABLATE_NO_A_COPY",),
    "no_b_copy": ("ABLATE_NO_B_COPY",),
    "no_decode": ("ABLATE_NO_DECODE",),
    "no_mma": ("ABLATE_NO_MMA",),
    "copies_only": NO_COMPUTE,
    "compute_only": NO_LOADS,
    "mma_only": NO_LOADS + ("ABLATE_NO_DECODE",),
    "skeleton": NO_LOADS + NO_COMPUTE,
    "no_epilogue": ("ABLATE_NO_EPILOGUE",),
}

# (text in the version, replacement): each must occur exactly once; `full` compiles the version's
# own code (every flag 0). The anchors are gemm v15-v19's (v16-v18 issue their first lap's copies
# elsewhere, so they do not patch).
PATCHES = [
    (
        """        mbar_arrive_expect_tx(full + 8 * s, a_bytes + B_SCALE_BYTES + B_VALUE_BYTES);
        bulk_copy(st.a, d.a16 + a16_offset(d, t, kg, 0, 0), a_bytes, full + 8 * s);
        bulk_copy(st.b_scales, b_scale_tiles + static_cast<int64_t>(kg) * B_SCALE_BYTES, B_SCALE_BYTES, full + 8 * s);
        tensor_copy_2d(st.b_values, &d.b_map, kg * (BLOCK_K / 2), n0, full + 8 * s);""",
        """        {   // NOTE: the full barrier counts exactly the bytes this variant copies (0: a plain arrival)
            const uint32_t copied_a = ABLATE_NO_A_COPY ? 0u : ABLATE_HALF_A_COPY ? a_bytes / 2 : a_bytes;
            const uint32_t copied_b = ABLATE_NO_B_COPY ? 0u : B_SCALE_BYTES + B_VALUE_BYTES;
            mbar_arrive_expect_tx(full + 8 * s, copied_a + copied_b);
            if (copied_a) bulk_copy(st.a, d.a16 + a16_offset(d, t, kg, 0, 0), copied_a, full + 8 * s);
            if (copied_b) {
                bulk_copy(st.b_scales, b_scale_tiles + static_cast<int64_t>(kg) * B_SCALE_BYTES, B_SCALE_BYTES, full + 8 * s);
                tensor_copy_2d(st.b_values, &d.b_map, kg * (BLOCK_K / 2), n0, full + 8 * s);
            }
        }""",
    ),
    no_decode_patch("        decode_b(b_values0 + slot * STAGE_BYTES, b_scales0 + slot * STAGE_BYTES, row, tig, f);"),
    no_mma_patch("                    wgmma_m64k16<kN>(acc, frag[slot % 2][s], desc_sw128(desc0 + (slot * STAGE_BYTES + 32 * s) / 16));",
                 "frag[slot % 2]"),
]
# v66-v74's paired kernel (64 rows of B and the whole M tile a CTA, the two consumer warpgroups alternating K blocks:
# 128x7168x2048's launch; the split shapes run the other consumer, which these leave whole, so only `--shapes 2`
# means anything for them). A bulk copy cannot be empty: no_a_copy copies one 8-row swizzle atom (1 KB) of each A tile.
PAIRED_PATCHES = [
    ("    const uint32_t a_bytes = static_cast<uint32_t>(n_cols) * 128;",
     "    const uint32_t a_bytes = ABLATE_NO_A_COPY ? 1024u : static_cast<uint32_t>(n_cols) * 128 / (ABLATE_HALF_A_COPY ? 2 : 1);"),
    ("            mbar_arrive_expect_tx(full + 8 * kb, a_bytes + B_SCALE_BYTES + b_value_bytes);\n"
     "            bulk_copy(st.b_scales, b_scale_tiles + static_cast<int64_t>(kb_first + kb) * B_SCALE_BYTES, B_SCALE_BYTES, full + 8 * kb);\n"
     "            tensor_copy_2d(st.b_values, &d.b_map, (kb_first + kb) * (BLOCK_K / 2), n0, full + 8 * kb);",
     "            mbar_arrive_expect_tx(full + 8 * kb, a_bytes + (ABLATE_NO_B_COPY ? 0u : B_SCALE_BYTES + b_value_bytes));\n"
     "            if (!ABLATE_NO_B_COPY) {\n"
     "            bulk_copy(st.b_scales, b_scale_tiles + static_cast<int64_t>(kb_first + kb) * B_SCALE_BYTES, B_SCALE_BYTES, full + 8 * kb);\n"
     "            tensor_copy_2d(st.b_values, &d.b_map, (kb_first + kb) * (BLOCK_K / 2), n0, full + 8 * kb);\n"
     "            }"),
    ("        mbar_arrive_expect_tx(full + 8 * s, a_bytes + B_SCALE_BYTES + b_value_bytes);",
     "        mbar_arrive_expect_tx(full + 8 * s, a_bytes + (ABLATE_NO_B_COPY ? 0u : B_SCALE_BYTES + b_value_bytes));"),
    ("        bulk_copy(st.b_scales, b_scale_tiles + static_cast<int64_t>(kg) * B_SCALE_BYTES, B_SCALE_BYTES, full + 8 * s);\n"
     "        tensor_copy_2d(st.b_values, &d.b_map, kg * (BLOCK_K / 2), n0, full + 8 * s);",
     "        if (!ABLATE_NO_B_COPY) {\n"
     "        bulk_copy(st.b_scales, b_scale_tiles + static_cast<int64_t>(kg) * B_SCALE_BYTES, B_SCALE_BYTES, full + 8 * s);\n"
     "        tensor_copy_2d(st.b_values, &d.b_map, kg * (BLOCK_K / 2), n0, full + 8 * s);\n"
     "        }"),
    no_decode_patch("        decode_b(b_values0 + slot * STAGE_BYTES, b_scales0 + slot * STAGE_BYTES, row, scale_row, tig, f);"),
    no_mma_patch("                    wgmma_m64k16<kN>(chunk, frag[i % 2][s], desc_sw128(desc0 + (slot * STAGE_BYTES + 32 * s) / 16),\n"
                 "                                     s > 0 || i % kPromoteBlocks != 0);", "frag[i % 2]", acc="chunk"),
    ("    consumer_sync();  // NOTE: every wgmma has read its stage before the ring is overwritten\n",
     "    if (ABLATE_NO_EPILOGUE && acc[0] != 12345.f) return;  // NOTE: acc stays live: the K loop is kept\n"
     "    consumer_sync();  // NOTE: every wgmma has read its stage before the ring is overwritten\n"),
]
PAIRED_ANCHOR = "consume_paired<kN>(d, m0, n0"

# The epilogue's entry: v19-v31 branch on problem.splits inside the consumer; v32 on, the kernel is
# instantiated per split-or-not and `problem.splits > 1` occurs only in host code, which the v19
# anchor would patch (once, wrongly). The first anchor found in the consumer is used.
EPILOGUE_ANCHORS = (
    "    if constexpr (kSplit) {\n        reduce_through_l2",
    "    if (problem.splits > 1) {\n        reduce",
)
EPILOGUE_SKIP = "    if (ABLATE_NO_EPILOGUE && acc[0] != 12345.f) return;  // NOTE: acc stays live: the K loop is kept\n"


def epilogue_patch(text: str) -> tuple[str, str]:
    for anchor in EPILOGUE_ANCHORS:
        if anchor in text:
            return anchor, EPILOGUE_SKIP + anchor
    raise SystemExit("no epilogue anchor in this version: ablate_gemm.EPILOGUE_ANCHORS needs its form")


def patched_source(text: str, variant: str) -> str:
    defines = "".join(f"#define {f} {int(f in VARIANTS[variant])}\n" for f in FLAGS)
    if PAIRED_ANCHOR in text:
        return patched(text, PAIRED_PATCHES, defines, variant)
    return patched(text, PATCHES + [epilogue_patch(text)], defines, variant)


def main() -> int:
    return gemm_ablation_main("gemm", __file__, VARIANTS, patched_source, lambda v: v == "full", "gemm_kernel", "v19", "0,1,2")


if __name__ == "__main__":
    sys.exit(main())
