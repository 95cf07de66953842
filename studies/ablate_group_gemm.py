"""Where does group_gemm's GEMM kernel spend its time? Build it with parts removed and time each.

v19-v25 held shape A's GEMM kernel at 134-140 µs while instruction count, ring depth and wgmma
overlap changed one at a time; no measurement so far separates the candidates. This builds one
submission's kernel (v38 by default; v25 when written) several times, each with one part switched off by a
preprocessor flag inserted into its CUDA source, and times the GEMM kernel alone (torch.profiler
device time, L2 flushed before every call, variants interleaved round by round):

  full         the submission as it is (its output is checked against the reference)
  no_decode    B's fragments are the raw words of the stage (masked finite), no e2m1 decode
  no_mma       no wgmma: the decoded fragments are folded into the accumulators by XOR
  no_a_copy    the producer copies no A tile (the consumers read a stale slot)
  half_a_copy  the producer copies half of each A tile: the L2 -> SM traffic of A that a 2-CTA
               cluster multicast would leave each CTA
  no_b_copy    the producer copies no B bytes or scales
  copies_only  no_decode + no_mma: the ring's copies and barriers alone
  compute_only no_a_copy + no_b_copy: decode and wgmma with the barrier handshake, no loads
  a_copy_only, b_copy_only, mma_only, decode_only: one part alone; skeleton: none (the handshake)
  prefetch     not an ablation: the producer also prefetches B's bytes and scales into L2,
               ABLATE_PREFETCH_BLOCKS K blocks ahead (bulk prefetch, 4 K blocks of a row at a time);
               copies_prefetch and b_copy_prefetch: the same on copies_only and b_copy_only
  warp_release not an ablation: a consumer warp releases a stage with one arrival (lane 0 after
               __syncwarp; the empty barrier counts 8) instead of 256 single-thread arrivals
  l2_fetch     not an ablation: B's cp.async copies ask L2 for ABLATE_L2_FETCH_BYTES (values) and
               128 (scales) bytes around each access (.L2::NB prefetch size): a row's next K blocks
               come with the first miss instead of one 32-byte sector per K block
  release_fetch, skeleton_release, b_copy_fetch, mma_only_release: the combinations named
  *_plain      without B copies the producer arrives on `full` with a plain mbarrier arrive, not
               cp.async.mbarrier.arrive (which fires only once the thread's cp.asyncs are done)
  *_nosync     without wgmma, the wgmma fence / commit / wait_group go too
  no_epilogue  C is not stored (the store's condition is false at run time, so nothing is removed)
  no_b_values, no_b_scales: B's values (16-byte cp.async) or its scales (4-byte cp.async) not copied
  b_l2_resident every N tile of a group copies rows 0..127 of B (and their scales): the same bytes,
               instructions and pattern, but after the first tile they come from L2, not DRAM
  lane0        not an ablation: lane 0 of each warp alone spins on a barrier, then __syncwarp (the
               other 31 lanes issue no mbarrier instruction), with warp_release's single arrival
  test_wait    not an ablation: mbarrier waits spin on test_wait (never suspend) instead of try_wait

`full` and the variants that only add (prefetch, warp_release, l2_fetch) compute the product and
are checked against the reference; the others are diagnostics and their outputs are garbage.

v31 on copy B's values with one tensor copy per stage and its scales with one bulk copy (no cp.async
left to patch), and v38 stores C by TMA: for those versions (TMA_B_PATCHES) the variants built from
no_decode, no_mma, no_a_copy, half_a_copy, no_b_copy and no_epilogue are available (full, the four
one-part removals, copies_only, compute_only, mma_only, decode_only, a_copy_only, b_copy_only,
skeleton, no_epilogue, skeleton_no_epilogue); asking for another is an error that names them.
Usage on a GPU machine, repo root (builds run in parallel child processes first):
    python3 studies/ablate_group_gemm.py [--version v38] [--shapes 0,1] [--variants all]
On a machine without CUDA it only applies the patches and writes the patched sources (--emit DIR),
which nvcc can compile to read -Xptxas -v.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # ablation.py beside this file
from ablation import gemm_ablation_main, no_decode_patch, no_mma_patch, patched  # noqa: E402

FLAGS = ("ABLATE_NO_DECODE", "ABLATE_NO_MMA", "ABLATE_NO_A_COPY", "ABLATE_HALF_A_COPY", "ABLATE_NO_B_COPY",
         "ABLATE_B_PREFETCH", "ABLATE_WARP_RELEASE", "ABLATE_L2_FETCH", "ABLATE_PLAIN_ARRIVE",
         "ABLATE_NO_WGMMA_SYNC", "ABLATE_NO_EPILOGUE", "ABLATE_TEST_WAIT", "ABLATE_NO_B_VALUES",
         "ABLATE_NO_B_SCALES", "ABLATE_B_L2_RESIDENT", "ABLATE_LANE0_WAIT")
EXACT_FLAGS = {"ABLATE_B_PREFETCH", "ABLATE_WARP_RELEASE", "ABLATE_L2_FETCH", "ABLATE_TEST_WAIT", "ABLATE_LANE0_WAIT"}
NO_LOADS = ("ABLATE_NO_A_COPY", "ABLATE_NO_B_COPY")
NO_COMPUTE = ("ABLATE_NO_DECODE", "ABLATE_NO_MMA")
VARIANTS = {
    "full": (),
    "no_decode": ("ABLATE_NO_DECODE",),
    "no_mma": ("ABLATE_NO_MMA",),
    "no_a_copy": ("ABLATE_NO_A_COPY",),
    "half_a_copy": ("ABLATE_HALF_A_COPY",),
    "no_b_copy": ("ABLATE_NO_B_COPY",),
    "copies_only": NO_COMPUTE,
    "compute_only": NO_LOADS,
    "a_copy_only": NO_COMPUTE + ("ABLATE_NO_B_COPY",),
    "b_copy_only": NO_COMPUTE + ("ABLATE_NO_A_COPY",),
    "mma_only": NO_LOADS + ("ABLATE_NO_DECODE",),
    "decode_only": NO_LOADS + ("ABLATE_NO_MMA",),
    "skeleton": NO_LOADS + NO_COMPUTE,
    "prefetch": ("ABLATE_B_PREFETCH",),
    "copies_prefetch": NO_COMPUTE + ("ABLATE_B_PREFETCH",),
    "b_copy_prefetch": NO_COMPUTE + ("ABLATE_NO_A_COPY", "ABLATE_B_PREFETCH"),
    "warp_release": ("ABLATE_WARP_RELEASE",),
    "l2_fetch": ("ABLATE_L2_FETCH",),
    "release_fetch": ("ABLATE_WARP_RELEASE", "ABLATE_L2_FETCH"),
    "skeleton_release": NO_LOADS + NO_COMPUTE + ("ABLATE_WARP_RELEASE",),
    "b_copy_fetch": NO_COMPUTE + ("ABLATE_NO_A_COPY", "ABLATE_L2_FETCH"),
    "mma_only_release": NO_LOADS + ("ABLATE_NO_DECODE", "ABLATE_WARP_RELEASE"),
    "skeleton_plain": NO_LOADS + NO_COMPUTE + ("ABLATE_PLAIN_ARRIVE",),
    "skeleton_nosync": NO_LOADS + NO_COMPUTE + ("ABLATE_NO_WGMMA_SYNC",),
    "skeleton_bare": NO_LOADS + NO_COMPUTE + ("ABLATE_PLAIN_ARRIVE", "ABLATE_NO_WGMMA_SYNC"),
    "a_copy_plain": NO_COMPUTE + ("ABLATE_NO_B_COPY", "ABLATE_PLAIN_ARRIVE"),
    "mma_only_plain": NO_LOADS + ("ABLATE_NO_DECODE", "ABLATE_PLAIN_ARRIVE"),
    "compute_plain": NO_LOADS + ("ABLATE_PLAIN_ARRIVE",),
    "no_epilogue": ("ABLATE_NO_EPILOGUE",),
    "skeleton_no_epilogue": NO_LOADS + NO_COMPUTE + ("ABLATE_NO_EPILOGUE",),
    "test_wait": ("ABLATE_TEST_WAIT",),
    "skeleton_test_wait": NO_LOADS + NO_COMPUTE + ("ABLATE_TEST_WAIT",),
    "no_b_values": ("ABLATE_NO_B_VALUES",),
    "no_b_scales": ("ABLATE_NO_B_SCALES",),
    "b_l2_resident": ("ABLATE_B_L2_RESIDENT",),
    "lane0": ("ABLATE_LANE0_WAIT", "ABLATE_WARP_RELEASE"),
    "skeleton_lane0": NO_LOADS + NO_COMPUTE + ("ABLATE_LANE0_WAIT", "ABLATE_WARP_RELEASE"),
    "mma_only_lane0": NO_LOADS + ("ABLATE_NO_DECODE", "ABLATE_LANE0_WAIT", "ABLATE_WARP_RELEASE"),
}

# (text in the submission, replacement): each must occur exactly once. The replacements keep the
# original line under #else, so `full` compiles the submission's own code.
PATCHES = [
    ("            if (m + h < d.m) {", "            if (m + h < (ABLATE_NO_EPILOGUE ? -d.m : d.m)) {"),
    ('        "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 done, [%0], %1;\\n"',
     '        ABLATE_WAIT_INSTRUCTION'),
    ("        cp_async_arrive(full + 8 * s);",
     """#if ABLATE_PLAIN_ARRIVE && ABLATE_NO_B_COPY
        mbar_arrive(full + 8 * s);
#else
        cp_async_arrive(full + 8 * s);
#endif"""),
    ("                wgmma_fence();  // NOTE: orders this thread's writes of frag (and acc) before wgmma reads them",
     "                if (!(ABLATE_NO_WGMMA_SYNC && ABLATE_NO_MMA)) wgmma_fence();"),
    ("                wgmma_commit();\n", "                if (!(ABLATE_NO_WGMMA_SYNC && ABLATE_NO_MMA)) wgmma_commit();\n"),
    ("                wgmma_wait_all_but_one();  // NOTE: block k - 1's wgmma read its A and frag: both free",
     "                if (!(ABLATE_NO_WGMMA_SYNC && ABLATE_NO_MMA)) wgmma_wait_all_but_one();"),
    ("constexpr int kEmptyArrivals = kConsumerThreads;",
     "constexpr int kEmptyArrivals = ABLATE_WARP_RELEASE ? kConsumerThreads / 32 : kConsumerThreads;"),
    ("                if (kb + slot > 0) mbar_arrive(empty + 8 * ((slot + kStages - 1) % kStages));",
     """#if ABLATE_WARP_RELEASE
                if (kb + slot > 0) {
                    __syncwarp();  // NOTE: the warp's reads of the stage happen before lane 0's release
                    if (lane == 0) mbar_arrive(empty + 8 * ((slot + kStages - 1) % kStages));
                }
#else
                if (kb + slot > 0) mbar_arrive(empty + 8 * ((slot + kStages - 1) % kStages));
#endif"""),
    ("    mbar_arrive(empty + 8 * ((num_k - 1) % kStages));  // NOTE: every block's stage is released, as in v23",
     """#if ABLATE_WARP_RELEASE
    __syncwarp();
    if (lane == 0) mbar_arrive(empty + 8 * ((num_k - 1) % kStages));
#else
    mbar_arrive(empty + 8 * ((num_k - 1) % kStages));  // NOTE: every block's stage is released, as in v23
#endif"""),
    ('            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\\n"',
     '            asm volatile(ABLATE_B_VALUES_COPY'),
    ('            asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\\n"',
     '            asm volatile(ABLATE_B_SCALES_COPY'),
    (
        "        mbar_wait(empty + 8 * s, ((kb / kStages) & 1) ^ 1);\n",
        """        mbar_wait(empty + 8 * s, ((kb / kStages) & 1) ^ 1);
#if ABLATE_B_PREFETCH
        if (kb % 4 == 0) {  // NOTE: rows of B (and their scales) into L2 ahead of the ring's copies
            const int first = kb == 0 ? 4 : kb + ABLATE_PREFETCH_BLOCKS;
            const int last = min(num_k, kb + ABLATE_PREFETCH_BLOCKS + 4);
            for (int row = tid; row < BLOCK_N; row += kCopyThreads) {
                const uint8_t* values = d.b + (n0 + row) * d.b_row;
                const uint8_t* scales = d.sfb + (n0 + row) * d.sfb_row;
                for (int p = first; p < last; p += 4) {
                    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\\n" ::"l"(values + p * (BLOCK_K / 2)),
                                 "r"(min(4, num_k - p) * (BLOCK_K / 2)) : "memory");
                    if (p % 8 == 0 || p == first)
                        asm volatile("prefetch.global.L2 [%0];\\n" ::"l"(scales + p * (BLOCK_K / 16)) : "memory");
                }
            }
        }
#endif
""",
    ),
    no_decode_patch("decode_b(b_values0 + slot * STAGE_BYTES, b_scales0 + slot * STAGE_BYTES, row, tig, f);", lead="\n"),
    no_mma_patch("wgmma_m64k16<kN>(acc, frag[slot % 3][s], desc_sw128(desc0 + (slot * STAGE_BYTES + 32 * s) / 16));",
                 "frag[slot % 3]", lead="\n"),
    (
        """            mbar_arrive_expect_tx(full + 8 * s, a_bytes);
            bulk_copy(st.a, d.a16 + a16_offset(d, t, kb, 0, 0), a_bytes, full + 8 * s);""",
        """
#if ABLATE_NO_A_COPY
            mbar_arrive(full + 8 * s);
#elif ABLATE_HALF_A_COPY
            mbar_arrive_expect_tx(full + 8 * s, a_bytes / 2);
            bulk_copy(st.a, d.a16 + a16_offset(d, t, kb, 0, 0), a_bytes / 2, full + 8 * s);
#else
            mbar_arrive_expect_tx(full + 8 * s, a_bytes);
            bulk_copy(st.a, d.a16 + a16_offset(d, t, kb, 0, 0), a_bytes, full + 8 * s);
#endif
""",
    ),
    (
        "        #pragma unroll\n        for (int i = 0; i < BLOCK_N * 2 / kCopyThreads; ++i) {",
        "#if !ABLATE_NO_B_COPY\n        #pragma unroll\n        for (int i = 0; i < BLOCK_N * 2 / kCopyThreads; ++i) {",
    ),
    (
        "                         ::\"r\"(st.b_scales + row * 4), \"l\"(d.sfb + (n0 + row) * d.sfb_row + kb * (BLOCK_K / 16)) : \"memory\");\n        }",
        "                         ::\"r\"(st.b_scales + row * 4), \"l\"(d.sfb + (n0 + row) * d.sfb_row + kb * (BLOCK_K / 16)) : \"memory\");\n        }\n#endif",
    ),
    ('"l"(d.b + (n0 + row) * d.b_row + kb * (BLOCK_K / 2) + half * 16) : "memory");',
     '"l"(d.b + ((ABLATE_B_L2_RESIDENT ? 0 : n0) + row) * d.b_row + kb * (BLOCK_K / 2) + half * 16) : "memory");'),
    ('"l"(d.sfb + (n0 + row) * d.sfb_row + kb * (BLOCK_K / 16)) : "memory");',
     '"l"(d.sfb + ((ABLATE_B_L2_RESIDENT ? 0 : n0) + row) * d.sfb_row + kb * (BLOCK_K / 16)) : "memory");'),
    ("        mbar_wait(full + 8 * slot, parity);",
     """#if ABLATE_LANE0_WAIT
        if (lane == 0) mbar_wait(full + 8 * slot, parity);
        __syncwarp();  // NOTE: lane 0's acquire, then the warp's barrier orders the other lanes' reads after it
#else
        mbar_wait(full + 8 * slot, parity);
#endif"""),
    ("        mbar_wait(empty + 8 * s, ((kb / kStages) & 1) ^ 1);\n#if ABLATE_B_PREFETCH",
     """#if ABLATE_LANE0_WAIT
        if ((tid & 31) == 0) mbar_wait(empty + 8 * s, ((kb / kStages) & 1) ^ 1);
        __syncwarp();
#else
        mbar_wait(empty + 8 * s, ((kb / kStages) & 1) ^ 1);
#endif
#if ABLATE_B_PREFETCH"""),
]


# v31+ (B's values by one tensor copy, its scales by one bulk copy, both counted in bytes on `full`
# with A's tile): the producer's three copies and the consumer's decode, wgmma and epilogue. The
# other flags' targets (cp.async, cp_async_arrive, the 2-byte C stores) are gone in these versions.
TMA_B_ANCHOR = "        tensor_copy_2d(st.b_values, &d.b_map, kb * (BLOCK_K / 2), n0, full + 8 * s);\n"
TMA_B_FLAGS = {"ABLATE_NO_DECODE", "ABLATE_NO_MMA", "ABLATE_NO_A_COPY", "ABLATE_HALF_A_COPY", "ABLATE_NO_B_COPY",
               "ABLATE_NO_EPILOGUE"}
TMA_B_PATCHES = [
    (
        """        mbar_arrive_expect_tx(full + 8 * s, a_bytes + B_SCALE_BYTES + B_VALUE_BYTES);
        bulk_copy(st.a, d.a16 + a16_offset(d, t, kb, 0, 0), a_bytes, full + 8 * s);
        bulk_copy(st.b_scales, d.sfb_blocked + (static_cast<int64_t>(n0 / BLOCK_N) * num_k + kb) * B_SCALE_BYTES,
                  B_SCALE_BYTES, full + 8 * s);
""" + TMA_B_ANCHOR,
        """        {   // NOTE: the full barrier counts exactly the bytes this variant copies (0: a plain arrival)
            const uint32_t copied_a = ABLATE_NO_A_COPY ? 0u : ABLATE_HALF_A_COPY ? a_bytes / 2 : a_bytes;
            const uint32_t copied_b = ABLATE_NO_B_COPY ? 0u : B_SCALE_BYTES + B_VALUE_BYTES;
            mbar_arrive_expect_tx(full + 8 * s, copied_a + copied_b);
            if (copied_a) bulk_copy(st.a, d.a16 + a16_offset(d, t, kb, 0, 0), copied_a, full + 8 * s);
            if (copied_b) {
                bulk_copy(st.b_scales, d.sfb_blocked + (static_cast<int64_t>(n0 / BLOCK_N) * num_k + kb) * B_SCALE_BYTES,
                          B_SCALE_BYTES, full + 8 * s);
                tensor_copy_2d(st.b_values, &d.b_map, kb * (BLOCK_K / 2), n0, full + 8 * s);
            }
        }
""",
    ),
    no_decode_patch("        decode_b(b_values0 + slot * STAGE_BYTES, b_scales0 + slot * STAGE_BYTES, row, tig, f);\n"),
    no_mma_patch("                    wgmma_m64k16<kN>(acc, frag[slot % 3][s], desc_sw128(desc0 + (slot * STAGE_BYTES + 32 * s) / 16));\n",
                 "frag[slot % 3]"),
    (
        "    named_barrier_sync(1, kConsumerThreads);\n",
        "    if (ABLATE_NO_EPILOGUE && acc[0] != 12345.f) return;  // NOTE: acc stays live: the K loop is kept\n"
        "    named_barrier_sync(1, kConsumerThreads);\n",
    ),
]

PREFETCH_BLOCKS = int(os.environ.get("ABLATE_PREFETCH_BLOCKS", "16"))
L2_FETCH_BYTES = int(os.environ.get("ABLATE_L2_FETCH_BYTES", "256"))


def patched_source(text: str, variant: str) -> str:
    defines = "".join(f"#define {f} {int(f in VARIANTS[variant])}\n" for f in FLAGS)
    if TMA_B_ANCHOR in text:
        if not set(VARIANTS[variant]) <= TMA_B_FLAGS:
            usable = ", ".join(v for v, flags in VARIANTS.items() if set(flags) <= TMA_B_FLAGS)
            raise SystemExit(f"variant {variant!r} patches cp.async copies this version no longer has "
                             f"(B by tensor copy, v31+); its variants: {usable}")
        return patched(text, TMA_B_PATCHES, defines, variant)
    defines += f"#define ABLATE_PREFETCH_BLOCKS {PREFETCH_BLOCKS}\n"
    defines += ('#define ABLATE_WAIT_INSTRUCTION "mbarrier.%s.parity.acquire.cta.shared::cta.b64 done, [%%0], %%1;\\n"\n'
                % ("test_wait" if "ABLATE_TEST_WAIT" in VARIANTS[variant] else "try_wait"))
    fetch = "ABLATE_L2_FETCH" in VARIANTS[variant]
    defines += ('#define ABLATE_B_VALUES_COPY "cp.async.cg.shared.global%s [%%0], [%%1], 16;\\n"\n'
                % (f".L2::{L2_FETCH_BYTES}B" if fetch else ""))
    defines += ('#define ABLATE_B_SCALES_COPY "cp.async.ca.shared.global%s [%%0], [%%1], 4;\\n"\n'
                % (".L2::128B" if fetch else ""))
    if "ABLATE_NO_B_VALUES" in VARIANTS[variant]:  # NOTE: an empty asm keeps the operands, emits nothing
        defines += '#undef ABLATE_B_VALUES_COPY\n#define ABLATE_B_VALUES_COPY ""\n'
    if "ABLATE_NO_B_SCALES" in VARIANTS[variant]:
        defines += '#undef ABLATE_B_SCALES_COPY\n#define ABLATE_B_SCALES_COPY ""\n'
    return patched(text, PATCHES, defines, variant)


def main() -> int:
    # NOTE: variants that only add (prefetch, release, fetch size) must stay exact
    return gemm_ablation_main("group_gemm", __file__, VARIANTS, patched_source, lambda v: set(VARIANTS[v]) <= EXACT_FLAGS,
                              "group_gemm_kernel", "v38", "0,1",
                              lambda text, v: TMA_B_ANCHOR not in text or set(VARIANTS[v]) <= TMA_B_FLAGS)


if __name__ == "__main__":
    sys.exit(main())
