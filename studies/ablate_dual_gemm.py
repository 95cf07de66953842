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

Only `full` computes the product; the others' outputs are garbage (finite or not: only their time
is read). Usage on a GPU machine, repo root (builds run in parallel child processes first):
    python3 studies/ablate_dual_gemm.py [--version v25] [--shapes 0,1,2,3] [--variants all]
Without CUDA it only writes the patched sources (--emit DIR), which nvcc can compile.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ablation import gemm_ablation_main, patched  # noqa: E402

FLAGS = ("ABLATE_NO_A_COPY", "ABLATE_HALF_A_COPY", "ABLATE_NO_B_COPY")
VARIANTS = {
    "full": (),
    "half_a_copy": ("ABLATE_HALF_A_COPY",),
    "no_a_copy": ("ABLATE_NO_A_COPY",),
    "no_b_copy": ("ABLATE_NO_B_COPY",),
}

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


def patched_source(text: str, variant: str) -> str:
    defines = "".join(f"#define {f} {int(f in VARIANTS[variant])}\n" for f in FLAGS)
    return patched(text, PATCHES, defines, variant)


def main() -> int:
    return gemm_ablation_main("dual_gemm", __file__, VARIANTS, patched_source, lambda v: v == "full",
                              "dual_gemm_kernel", "v25", "0,1,2,3")


if __name__ == "__main__":
    sys.exit(main())
