"""NVFP4 dual_gemm v82: every mbarrier wait carries a suspend-time hint, so a waiting thread sleeps instead of retrying

Version: v82
Parent: v81
Change: mbar_wait's and mbar_wait_cluster's try_wait.parity carry a suspend-time hint of 10 ms (kWaitTicks, CUTLASS's
0x989680): a thread waiting on a phase sleeps until the barrier unit wakes it instead of retrying at the default limit
Arch: sm_90a
Analogue: gemm v126, group_gemm v132 (the same change)
Why: dual_gemm v81 (session 87): taking one warp out of a try_wait loop beside the consumer warpgroups (v80's
sending thread, on the sub-partition of consumer warps 1 and 5 for the whole wide range) brought their K loop from
0.633 to 0.617 us a block (~2.5%) with nothing else changed. Every lineage's producer thread waits the same way for
most of its loop (the ring's free slots), on the sub-partition of consumer warps 0 and 4. Without a hint ptxas builds the
retry as a tight TRYWAIT / BRA loop; with one it builds TRYWAIT, then NANOSLEEP.SYNCS 0x989680 (the warp sleeps until
the barrier unit wakes it) and a PHASECHK test (`nvdisasm`, session 87). CUTLASS's ClusterBarrier::wait passes the same
hint.
Compile-only (nvcc 13.0, sm_90a): no spills; ptxas rescheduled some loops by 1-2 instructions (the kTailsEarly and
192-row split loops 279 / 277 against 281 / 278; the handoff kernels' as v81's or within 2).
Prediction: v81 showed one spinning warp costs the consumers' loop ~2.5%; the producer thread still waits in a retry
loop for most of every CTA's loop. If the hint's sleep removes that cost, every shape's loop runs ~1-2.5% faster:
`compare dual_gemm v81 v82` 1.01-1.025x on all four; outputs bit for bit v81's. Refuted if SAME.
Measured: not yet run
"""

import torch
from torch.utils.cpp_extension import load_inline

BLOCK_N = 64
BLOCK_M_MAX = 256
TILE_ROWS = (32, 64, 96, 128, 160, 192, 256)
BLOCK_K = 64
EXTENSION_NAME = "nvfp4_dual_gemm_v82"
# `nvfp4 probe marks`: ids 0-1 are the prepass's blocks, 2-6 the GEMM kernel's CTAs (3 and 4: v38's
# kTailsEarly launch only, its first blocks' A decoded in the ring, and the producer's griddepcontrol.wait
# returned; every other launch skips them); helper CTAs stamp only 2, 3 (4 in kTailsEarly) and 11-13.
# v43: the steps after a tile CTA's K loop (5 -> 6), each stamped by consumer thread 0: 7 its tail's flag seen
# (launches with tails), 8 every consumer's sums complete (unsplit: past store_tile's first barrier, the tail
# added; split: past the cluster barrier, every split's partial in its CTA's shared memory), 9 the halves
# exchanged (unsplit only), 10 C staged (silu x up done, the last barrier before C's stores); helpers stamp 11,
# 12, 13 as they raise their first, second and third (and later) tails' flags.
MARK_NAMES = ["prepass start", "prepass stores issued", "GEMM start", "first blocks decoded",
              "prepass visible (wait returned)", "K loop", "end", "tail flag seen", "sums complete",
              "halves exchanged (handoff: staged)", "C staged", "helper: tail 1 flag raised", "helper: tail 2 flag raised",
              "helper: tail 3+ flag raised", "handoff: wide range end"]
FUNCTIONS = ["dual_gemm", "launch_counts"]
CUDA_FLAGS = ["-O3", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17"]

CUDA_SRC = r"""
// ---- nvfp4 timeline marks (harness/probes/marks.py; `nvfp4 probe marks`) ---------------------
// NVFP4_MARK(id) stamps %globaltimer and clock64 for this CTA at mark `id` (0 <= id < 16); call it
// from one thread. Without -DNVFP4_MARKS (every build but the probe's) it compiles to nothing.
#ifdef NVFP4_MARKS
#include <cuda_runtime.h>
#ifndef NVFP4_MARKS_MAX_CTAS
#define NVFP4_MARKS_MAX_CTAS 4096
#endif
#define NVFP4_MARKS_MAX_IDS 16
__device__ unsigned long long nvfp4_marks_ns[NVFP4_MARKS_MAX_CTAS * NVFP4_MARKS_MAX_IDS];
__device__ long long nvfp4_marks_clock[NVFP4_MARKS_MAX_CTAS * NVFP4_MARKS_MAX_IDS];
__device__ unsigned int nvfp4_marks_dropped;  // stamps of CTAs or ids past the buffer
__device__ __forceinline__ void nvfp4_mark(int id) {
    const unsigned int cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    if (cta >= NVFP4_MARKS_MAX_CTAS || id < 0 || id >= NVFP4_MARKS_MAX_IDS) {
        atomicAdd(&nvfp4_marks_dropped, 1u);
        return;
    }
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns) :: "memory");
    const long long cycles = clock64();
    nvfp4_marks_ns[cta * NVFP4_MARKS_MAX_IDS + id] = ns;
    nvfp4_marks_clock[cta * NVFP4_MARKS_MAX_IDS + id] = cycles;
}
#define NVFP4_MARK(id) nvfp4_mark(id)
extern "C" __attribute__((visibility("default"))) int nvfp4_marks_layout(int* ctas, int* ids) {
    *ctas = NVFP4_MARKS_MAX_CTAS;
    *ids = NVFP4_MARKS_MAX_IDS;
    return 0;
}
extern "C" __attribute__((visibility("default"))) int nvfp4_marks_read(void* ns, void* cycles, void* dropped) {
    cudaError_t err = cudaDeviceSynchronize();
    if (err == cudaSuccess) err = cudaMemcpyFromSymbol(ns, nvfp4_marks_ns, sizeof(nvfp4_marks_ns));
    if (err == cudaSuccess) err = cudaMemcpyFromSymbol(cycles, nvfp4_marks_clock, sizeof(nvfp4_marks_clock));
    if (err == cudaSuccess) err = cudaMemcpyFromSymbol(dropped, nvfp4_marks_dropped, sizeof(unsigned int));
    return static_cast<int>(err);
}
extern "C" __attribute__((visibility("default"))) int nvfp4_marks_clear() {
    void* p = nullptr;
    cudaError_t err = cudaGetSymbolAddress(&p, nvfp4_marks_ns);
    if (err == cudaSuccess) err = cudaMemset(p, 0, sizeof(nvfp4_marks_ns));
    if (err == cudaSuccess) err = cudaGetSymbolAddress(&p, nvfp4_marks_clock);
    if (err == cudaSuccess) err = cudaMemset(p, 0, sizeof(nvfp4_marks_clock));
    if (err == cudaSuccess) err = cudaGetSymbolAddress(&p, nvfp4_marks_dropped);
    if (err == cudaSuccess) err = cudaMemset(p, 0, sizeof(unsigned int));
    if (err == cudaSuccess) err = cudaDeviceSynchronize();
    return static_cast<int>(err);
}
#else
#define NVFP4_MARK(id) do { } while (0)
#endif
// ---- end of nvfp4 timeline marks --------------------------------------------------------------
#include <cstdint>
#include <cuda.h>            // CUtensorMap and its enums (header only: no -lcuda)
#include <cudaTypedefs.h>    // PFN_cuTensorMapEncodeTiled
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <vector>

constexpr int BLOCK_N = 64;             // rows of B1 and B2 (and of N) per CTA: wgmma's M, one consumer warpgroup per operand
constexpr int BLOCK_M_MAX = 256;        // rows of A (M) per CTA at most: wgmma's N (one accumulator of N / 2 a thread)
// NOTE: the wgmma N the consumer is instantiated for; an M tile's height is always one of them, so a
// tile's wgmma N (its rows, rounded up to the next of them) never reaches past its own rows.
constexpr int kTileRows[] = {32, 64, 96, 128, 160, 192, 256};
constexpr int kNumTileRows = sizeof(kTileRows) / sizeof(kTileRows[0]);
static_assert(kTileRows[kNumTileRows - 1] == BLOCK_M_MAX, "the tallest tile is BLOCK_M_MAX rows");
// The smallest height of kTileRows holding `rows` rows (rows <= BLOCK_M_MAX).
// NOTE: spelled out, not a loop over kTileRows: a host constexpr array is not visible to device code.
__host__ __device__ constexpr int tile_rows_at_least(int rows) {
    return rows <= 32 ? 32 : rows <= 64 ? 64 : rows <= 96 ? 96 : rows <= 128 ? 128 : rows <= 160 ? 160 : rows <= 192 ? 192 : 256;
}
static_assert(tile_rows_at_least(kTileRows[0]) == kTileRows[0] && tile_rows_at_least(kTileRows[1]) == kTileRows[1] &&
              tile_rows_at_least(kTileRows[2]) == kTileRows[2] && tile_rows_at_least(kTileRows[3]) == kTileRows[3] &&
              tile_rows_at_least(kTileRows[4]) == kTileRows[4] && tile_rows_at_least(kTileRows[5]) == kTileRows[5] &&
              tile_rows_at_least(kTileRows[6]) == kTileRows[6] && tile_rows_at_least(kTileRows[3] + 1) == kTileRows[4] &&
              tile_rows_at_least(kTileRows[4] + 1) == kTileRows[5] && tile_rows_at_least(kTileRows[5] + 1) == kTileRows[6],
              "tile_rows_at_least must round up to kTileRows' heights");
constexpr int BLOCK_K = 64;             // fp16 elements per shared-memory row: one 128-byte swizzle atom
constexpr int kProducerThreads = 128;   // warpgroup 0: thread 0 issues every copy, the rest idle
constexpr int kConsumerThreads = 256;   // warpgroups 1-2: decode and wgmma, the same 64 rows of B1 (gate), B2 (up)
constexpr int kOperandThreads = 128;    // one consumer warpgroup per operand
constexpr int kThreads = kProducerThreads + kConsumerThreads;
constexpr int kProducerRegisters = 40;  // setmaxnreg: 128 x 40 + 256 x 232 <= 64K registers
constexpr int kConsumerRegisters = 232;
constexpr int kStages = 6;              // ring slots: fp16 A tile (up to 256 rows) + B1's and B2's bytes of one K block
constexpr int kHalf = 2;                // slots per pass of the consumer loop (v9: half the ring; here two of six)
static_assert(kHalf % 2 == 0 && kStages % kHalf == 0, "consume() alternates two fragment sets with the ring's slots");
// NOTE: 7, not v5's 8: each batch's descriptor now carries two 128-byte tensor maps (512 bytes
// with their 64-byte alignment), and 8 of them would pass the 4 KB parameter bound below.
constexpr int kMaxGroups = 7;           // batches per launch (a larger kernel parameter costs launch time)
constexpr int A_TILE_BYTES = BLOCK_M_MAX * BLOCK_K * 2;
constexpr int B_ROW_STRIDE = 32;        // packed bytes per row of B per K block, dense (see decode_b's reads)
constexpr int B_VALUE_BYTES = BLOCK_N * B_ROW_STRIDE;
// NOTE: one 128-row x 64-K tile of GPU MODE's blocked ("permuted") scale layout: 512 contiguous bytes,
// row r's 4 scales at (r % 32) x 16 + (r / 32) x 4 (blocked_scale_offset); one bulk copy per stage.
// A 64-row N tile is half of such a tile, its rows interleaved with the other half's in every 16
// bytes, so the stage takes the whole 512 bytes and reads its half (scale_row0).
constexpr int kScaleTileRows = 128;
constexpr int B_SCALE_BYTES = kScaleTileRows * BLOCK_K / 16;
constexpr int B_BYTES = B_VALUE_BYTES + B_SCALE_BYTES;  // one B operand's share of a stage
// NOTE: 32 KB of A + 2 x 2.5 KB of B = 37 KB, a multiple of 1024 bytes, so every slot's A tile
// stays aligned for the 128-byte swizzle. 6 slots: 223 KB with the barriers and the alignment
// slack, of the 227 KB a CTA may have.
constexpr int STAGE_BYTES = (A_TILE_BYTES + 2 * B_BYTES + 1023) / 1024 * 1024;
// a full and an empty mbarrier per stage, then v73's four for the S = 2 handoff (staged, ready, received 1 and 2)
constexpr int kHandoffBarriers = 4;
constexpr int BARRIER_BYTES = (2 * kStages + kHandoffBarriers) * 8;
constexpr int SMEM_BYTES = kStages * STAGE_BYTES + BARRIER_BYTES + 1024;  // + slack to align the ring to 1024 bytes
static_assert(SMEM_BYTES <= 227 * 1024, "the ring must fit a CTA's dynamic shared memory");
static_assert(2 * BLOCK_N * BLOCK_M_MAX * 4 <= kStages * STAGE_BYTES, "a CTA's two fp32 partial tiles must fit the drained ring");
// NOTE: C is staged in the drained ring behind the split's two partials (which the cluster's peers
// read until the last cluster barrier) in rows of 64 halves 144 bytes apart: 16 bytes of padding
// move each row four banks on, so a warp's 2-byte writes to four rows at once do not collide.
constexpr int C_ROW_BYTES = BLOCK_N * 2 + 16;
constexpr int C_STAGE_OFFSET = 2 * BLOCK_N * BLOCK_M_MAX * 4;
static_assert(C_STAGE_OFFSET + BLOCK_M_MAX * C_ROW_BYTES <= kStages * STAGE_BYTES, "the C tile must fit the drained ring");
constexpr int kDecodeThreads = 256;     // prepass: one (row, K block, half) per thread, four 16-byte chunks out
constexpr int kFullArrivals = 1;         // the producer's arrive.expect_tx: every copy of a stage counts bytes on it
constexpr int kEmptyArrivals = kConsumerThreads;  // every consumer thread, once its wgmma has read the slot
constexpr int kMaxSplits = 8;           // a tile's splits form one cluster: 8 is the portable cluster size
constexpr int kMinBlocksPerSplit = 4;   // K blocks: below this the pipeline's fill and the partial tile dominate
// NOTE: a tail shorter than this moves too little of the tile's time to pay for the partial's
// round trip through L2 (128 KB out and back for a 256-row tile: ~3 us of the tile CTA's, timeline).
constexpr int kMinTailBlocks = 12;
// NOTE: what a tail costs a helper beyond its blocks, in K blocks: storing the 128 KB partial from
// registers and raising the flag took ~3.3 us a tail on 512x3072x7168 (H100 timeline, call S2:
// helpers ended 62.1 us after the start for 84 blocks in three tails, the tile CTAs' 84 blocks 52.3),
// about five blocks of its ~0.62 us. Balancing with it puts the helpers' end at the tile CTAs'.
constexpr int kTailCostBlocks = 5;
// NOTE: the host's launch costs (launch_cost) in K blocks of a 256-row tile: a block of R rows costs
// (kBlockCostFixedRows + R) / (kBlockCostFixedRows + 256) of one, B's decode and the handshake being
// the fixed part (H100, call T2: 0.43 µs a 128-row block against 0.62 for 256 rows).
constexpr int kBlockCostFixedRows = 160;
// NOTE: the split-K sum at S = 2 with 256-row tiles: the partials shared, summed across the cluster,
// silu x up staged and stored, 4.6 µs after the K loop since v25 (H200 timeline, call X5,
// 256x4096x7168: 1.25 + 2.98 + 0.38), eight 256-row blocks of 0.602 µs (v24's 10 were the H100's
// 6.2 µs before v25). It moves (S - 1) / S of a partial of R rows, so it scales as 2 (S - 1) / S x
// R / 256 of that.
constexpr int kSplitCostBlocks = 8;
// NOTE: v32 prices every launch's work after its K loop (v24 priced only the split's, NOTES' caveat
// on v24): the unsplit epilogue (the exchange, silu x up staged, C stored) took 4.0 µs at 256 rows
// (X5, 512x4096x7168: 0.29 + 3.01 + 0.70), seven blocks, and a tile CTA's read and add of its tail's
// partial 2.94 µs at 256 rows (X5, 512x3072x7168), five blocks; both scale as R / 256 (at 128 rows
// X5 measured 1.7 and 1.38 µs against 2.1 and 1.5 so scaled).
constexpr int kEpilogueCostBlocks = 7;
constexpr int kTailMergeCostBlocks = 5;
// NOTE: hardware barrier 0 is __syncthreads'; the split-K handshake needs one that counts only the
// 256 consumer threads, the producer warps having left by then.
constexpr int kConsumerBarrier = 1;

struct GroupDesc {                       // one batch l
    CUtensorMap b_map[2];                // B1's and B2's values: N rows x K/2 bytes, box 64 rows x 32 bytes (host-encoded)
    const uint8_t* a; const uint8_t* b[2]; const uint8_t* sfa; const uint8_t* sfb_blocked[2]; __half* c;
    uint8_t* a16;                        // workspace: fp16 A tiles, [M tile][K block][m_tile_rows][128 B swizzled]
    int m, n, k;
    int64_t a_row, b_row[2], sfa_row, c_row;  // NOTE: sfb_blocked: [N / 128][K / 64][512 bytes] per operand
    int m_tile_rows;                     // rows per M tile: M split evenly into tiles of at most 128, one of kTileRows
    int m_tiles;
    int tile_begin;                      // first linear tile index of this group (GEMM kernel)
    int decode_begin;                    // first block index of this group (decode kernel)
};

struct SplitK {
    int splits;              // S: CTAs per output tile (one cluster), each over a contiguous range of K blocks
};

// Tails (launches that leave SMs idle): tile t's CTA (v32: or its S split CTAs) runs its first K blocks,
// and helper CTA t % helpers (blockIdx num_tiles + t % helpers; v32's split launches: blockIdx
// t % helpers, the helpers first) runs the last tail_blocks_of() of them, the tails
// of tiles h, h + helpers, ... in turn, each summed into a partial in `partials` and announced by
// the tile's flag; the tile's CTA adds it to its accumulators before the epilogue (v32: the split
// CTAs add it in the cluster's sum, each its share of the positions).
struct Tails {
    int helpers;             // 0: no tails (every tile's CTA runs all its K blocks)
    int per_helper;          // c: tails a helper runs at most; a tail is 1 / (c + 1) of its tile's K blocks
    uint32_t* flags;         // [tile]: 1 once the tile's tail partial is in `partials`; zeroed by the prepass
    float* partials;         // [tile][operand][j][thread of the warpgroup] float4: the tail's sums, fragment order
};
// K blocks of a tile's tail: an even number (a helper's ring position stays even from tail to tail,
// as the consumer's two-slot passes need) such that c tails and their costs take a helper about as
// long as the rest takes each of the tile's S CTAs: c (t + cost) = (blocks - t) / S, so
// t = (blocks - S c cost) / (S c + 1); S = 1 (v21's tails) gives v25's c (t + cost) = blocks - t.
// v32: with S = 2 (a split launch with helpers) the tile's two CTAs share the blocks before the tail.
// v52: v44's balance (v50-v51 took a lead of 6 blocks off it at S = 1 for the fold; v52 folds only tails whose
// helper finishes them before its last, which need none).
constexpr int kFoldPieces = 4;           // v50: the partial's positions in four pieces, one added after a block's wait
__host__ __device__ constexpr int tail_blocks_of(int blocks, int per_helper, int splits) {
    return ((blocks - splits * per_helper * kTailCostBlocks) / (splits * per_helper + 1)) & ~1;
}

// the GEMM kernel's instantiations; kSplitTails (v32): a split launch (S = 2) whose helpers run each
// tile's tail, instantiated for 256-row tiles only (kernel_of_mode); kTailsEarly (v38): kTails with
// 256-row tiles, the prepass's programmatic dependent (helpers first, each CTA's first kEarlyBlocks of A
// decoded by the CTA itself; dual_gemm_kernel), instantiated for 256-row tiles only.
enum Mode { kUnsplit = 0, kSplit = 1, kTails = 2, kSplitTails = 3, kTailsEarly = 4 };
// v80: the host's launch modes of the S = 2 handoff (v73): kSplit's and kSplitTails' launches run by the kernels of
// their own (dual_gemm_kernel's kHandoff), which the host picks only where handoff_of is on for every batch
enum HandoffMode { kSplitHandoff = 5, kSplitTailsHandoff = 6 };
// NOTE: v38: the K blocks whose A a kTailsEarly CTA decodes itself (its first run's first blocks), so its
// first wgmma waits for no prepass store. 2: 256 rows x 2 halves x 2 = 1,024 lines, at most 3 a thread of
// 384 (every load in flight at once, 27 registers of the 168 at launch); the SASS decodes a line in ~135
// instructions, so a sub-partition's 3 warps issue ~8 lines' ~1,100 in ~0.6 us. Block 2 (A from the
// prepass) is then needed ~2 x 0.616 us after block 0 starts (~5.7 us after the call's first stamp), when
// the prepass's grid has completed (v32: its stores issued at 2.34 us, the GEMM's start 2.66 us later
// with the grid boundary) and a bulk copy from L2 has landed (~4.8-5.4 us). 3 blocks cost ~0.3 us more
// decode before the first wgmma for a margin not needed by that arithmetic; 1 would leave block 1 racing it.
// v39: none (v38: 2, whose decode under the prepass took 3.04 us, H200 marks)
constexpr int kEarlyBlocks = 0;

static_assert(kEarlyBlocks <= kStages, "the early blocks take the ring's first lap only (fresh slots)");
// NOTE: v63: produce_dependent issues the first lap's first stages itself (B before the wait, A after), so no CTA may
// also decode early blocks into those slots.
static_assert(kEarlyBlocks == 0, "v63: a dependent CTA's first stages are produce_dependent's");

// NOTE: the kernels are instantiated for kGroups = 1 (every benchmark: L = 1) and kMaxGroups. The
// premise of that split (a ~4 KB parameter adds several us per launch) was later refuted by
// tools/experiments/launch_params.py (16 B to 4 KB: 5.5-5.7 us of CPU each, group_gemm NOTES, v20);
// the two instantiations stay because removing them is a change of its own.
template <int kGroups>
struct Problem {
    GroupDesc groups[kGroups];
    int num_groups;
    int num_tiles;
    SplitK split_k;
    Tails tails;
};
static_assert(sizeof(Problem<kMaxGroups>) <= 4096, "the kernel parameter must fit in 4 KB");

// A pair (value x 2^-14 bits, e2m1_pair_bits) times its scale: value x sfa, exact in fp16.
// NOTE: two multiplies, not one by scale x 2^14: that product overflows fp16 for scales above 4.
__device__ __forceinline__ uint32_t scaled_pair(uint32_t bits, __half2 scale) {
    __half2 v = __hmul2(*reinterpret_cast<__half2*>(&bits), __float2half2_rn(16384.f));
    v = __hmul2(v, scale);
    return *reinterpret_cast<uint32_t*>(&v);
}

// One pair of B: (value x 2^-14 bits) x sfb x 2^7 = value x sfb x 2^-7, a single multiply (docstring).
__device__ __forceinline__ uint32_t scaled_pair_bits(uint32_t bits, __half2 scale_x128) {
    const __half2 v = __hmul2(*reinterpret_cast<const __half2*>(&bits), scale_x128);
    return *reinterpret_cast<const uint32_t*>(&v);
}

__device__ __forceinline__ __half2 scale_pair(uint32_t e4m3_bits) {
    const __nv_fp8_storage_t bits = static_cast<__nv_fp8_storage_t>(e4m3_bits & 0xFFu);
    return __half2half2(__half(__nv_cvt_fp8_to_halfraw(bits, __NV_E4M3)));
}

// Shared-memory operand descriptor: K-major, 128-byte swizzle (layout type 1 in bits 62..63);
// LBO unused (1); SBO = 1024 bytes between 8-row groups; addresses in units of 16 bytes.
constexpr uint32_t kDescHigh = (1024u >> 4) | (1u << 30);  // bits 32..63: SBO and the swizzle mode
__device__ __forceinline__ uint32_t desc_low(uint32_t smem_addr) { return ((smem_addr >> 4) & 0x3FFF) | (1u << 16); }
// NOTE: a descriptor's low word plus an offset in 16-byte units stays a valid low word: shared
// addresses are below 2^18 bytes, so the 14-bit field never carries into the LBO bits.
__device__ __forceinline__ uint64_t desc_sw128(uint32_t low) {
    return (static_cast<uint64_t>(kDescHigh) << 32) | low;
}

// D[64 x N] += A[64 x 16] (registers) . B[16 x N] (shared memory, descriptor); fp16 in, fp32
// accumulate; one specialisation per N = 32 ... 128: N is an immediate and the accumulator list
// has N / 2 registers.
template <int kN> __device__ __forceinline__ void wgmma_m64k16(float* d, const uint32_t* a, uint64_t desc_b);
template <> __device__ __forceinline__ void wgmma_m64k16<32>(float* d, const uint32_t* a, uint64_t desc_b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
        "}, {%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
template <> __device__ __forceinline__ void wgmma_m64k16<64>(float* d, const uint32_t* a, uint64_t desc_b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
template <> __device__ __forceinline__ void wgmma_m64k16<96>(float* d, const uint32_t* a, uint64_t desc_b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
        "}, {%48, %49, %50, %51}, %52, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
template <> __device__ __forceinline__ void wgmma_m64k16<128>(float* d, const uint32_t* a, uint64_t desc_b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

template <> __device__ __forceinline__ void wgmma_m64k16<160>(float* d, const uint32_t* a, uint64_t desc_b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %85, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n160k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
        "}, {%80, %81, %82, %83}, %84, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
template <> __device__ __forceinline__ void wgmma_m64k16<192>(float* d, const uint32_t* a, uint64_t desc_b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %101, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
        "}, {%96, %97, %98, %99}, %100, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
template <> __device__ __forceinline__ void wgmma_m64k16<256>(float* d, const uint32_t* a, uint64_t desc_b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, {%128, %129, %130, %131}, %132, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }

// Nibbles s and s + 4 of `word` (16 bits apart) as a half2 worth value x 2^-14: the sign bits
// (4s + 3, 4s + 19) move to 15 and 31, the magnitudes (4s..4s + 2, 4s + 16..) to 9..11 and 25..27,
// where they read as fp16's two low exponent bits and top mantissa bit.
template <int kS> __device__ __forceinline__ uint32_t e2m1_pair_bits(uint32_t word) {
    const uint32_t sign_src = word << (12 - 4 * kS);
    const uint32_t magnitude_src = kS < 3 ? word << (9 - 4 * kS) : word >> 3;
    return (sign_src & 0x80008000u) | (magnitude_src & 0x0E000E00u);
}

// The register operand of wgmma for the four k16 steps of a K block of one B operand, in the
// permuted K order (docstring): step s, registers {row gid, half j = 0}, {row gid + 8, j = 0},
// {row gid, j = 1}, {row gid + 8, j = 1}, register (j) = nibbles s and s + 4 of the row's word
// 2 tig + j. All 16 elements come from scale block tig. `row` is the tile-local row of gid
// (the warp's index in its warpgroup x 16 + gid); `scale_row0` the tile's first row within the
// 128-row scale tile (0 or 64).
// NOTE: the fragments hold B x 2^-7 (scale trick); the epilogue multiplies the sums by 2^7.
__device__ __forceinline__ int blocked_scale_offset(int r, int tig) { return (r % 32) * 16 + (r / 32) * 4 + tig; }
__device__ __forceinline__ void decode_b(const uint8_t* b_values, const uint8_t* b_scales, int row, int scale_row0,
                                         int tig, uint32_t (&frag)[4][4]) {
    const __half2 x128 = __float2half2_rn(128.f);
    #pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int r = row + 8 * i;
        const uint2 w = *reinterpret_cast<const uint2*>(b_values + r * B_ROW_STRIDE + 8 * tig);
        const __half2 sc = __hmul2(scale_pair(b_scales[blocked_scale_offset(scale_row0 + r, tig)]), x128);  // exact: at most 57344
        frag[0][i] = scaled_pair_bits(e2m1_pair_bits<0>(w.x), sc);
        frag[0][2 + i] = scaled_pair_bits(e2m1_pair_bits<0>(w.y), sc);
        frag[1][i] = scaled_pair_bits(e2m1_pair_bits<1>(w.x), sc);
        frag[1][2 + i] = scaled_pair_bits(e2m1_pair_bits<1>(w.y), sc);
        frag[2][i] = scaled_pair_bits(e2m1_pair_bits<2>(w.x), sc);
        frag[2][2 + i] = scaled_pair_bits(e2m1_pair_bits<2>(w.y), sc);
        frag[3][i] = scaled_pair_bits(e2m1_pair_bits<3>(w.x), sc);
        frag[3][2 + i] = scaled_pair_bits(e2m1_pair_bits<3>(w.y), sc);
    }
}

// silu(gate) x up in fp32 from the scaled sums (both hold the product x 2^-7, see decode_b).
// NOTE: x / (1 + exp(-x)), the formula of torch's silu (reference/dual_gemm.py's), with a reciprocal
// and a multiply (v43: __fdividef, within 2 ulp) instead of the IEEE division, whose slow-path
// branch kept v21's epilogue from overlapping one element's latency with the next's (128 a
// thread took ~8 us). Where 1 + exp(-x) passes 2^126 (x < -87) the quotient is 0; silu there is
// below 1e-36 in magnitude and any product with up (|up| < 2^40) rounds to 0 in fp16 as well.
// v44: exp(-g) by one ex2.approx.ftz of gate_scaled x (-128 log2 e) (v43's expf, v39's: ~8 instructions of range
// reduction around its MUFU.EX2, SASS), and 1 / (1 + exp(-g)) by rcp.approx.ftz, the MUFU.RCP that __fdividef
// multiplies by (v39's SASS: the FSETP and two predicated FMULs rescale denominators above 2^126 first).
// NOTE: exactness: 128 is a power of two, so gate_scaled x (-128 x fp32(log2 e)) rounds as v39's g x fp32(log2 e)
// did; this is __expf's computation, whose error CUDA bounds by 2 + floor(|1.173 g|) ulp (the rounded argument's
// share grows with |g|): at most 104 ulp = 1.2e-5 relative where it matters (|g| <= 87; beyond, 1 + e is 1 or the
// quotient 0), and silu's relative error is at most e's. Under 3% of fp16's half ulp (4.9e-4), so C moves by at
// most one fp16 ulp, where the exact value lies that close to a rounding boundary. The denominator 1 + e >= 1: .ftz flushes only a quotient below 2^-126
// (1 + e above 2^126, g < -87), where v43's value times up was below fp16's smallest subnormal as well, and
// rcp(inf) = 0 as __fdividef's. (g x r) x u: v43's order.
__device__ __forceinline__ float silu_times(float gate_scaled, float up_scaled) {
    constexpr float kMinus128Log2e = -128.f * 1.44269504088896340736f;  // exact: 128 x fp32(log2 e)
    const float g = gate_scaled * 128.f, u = up_scaled * 128.f;
    float e, r;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(e) : "f"(gate_scaled * kMinus128Log2e));
    asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(1.f + e));
    return g * r * u;
}

// ---------------------------------------------------------------- mbarriers and bulk copies
__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;\n"
                 ::"r"(bar), "r"(bytes) : "memory");
}
// Waits until the barrier's phase of the given parity has completed.
// NOTE: v82: a suspend-time hint on every wait (10 ms, CUTLASS's ClusterBarrier value): the PTX ISA lets a try_wait
// suspend its thread until the phase completes or the hint's time elapses, so a waiting thread (the producer most of the
// loop, waiting for free slots) sleeps instead of retrying at the default limit. dual_gemm v81 (session 87): one more
// warp in a try_wait loop beside the consumers cost their loop ~2.5%.
constexpr uint32_t kWaitTicks = 0x989680;
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    asm volatile(
        "{\n.reg .pred done;\nwait_%=:\n"
        "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 done, [%0], %1, %2;\n"
        "@!done bra wait_%=;\n}\n" ::"r"(bar), "r"(parity), "r"(kWaitTicks) : "memory");
}
// global -> shared bulk copy (bytes a multiple of 16, both addresses 16-byte aligned), counted on `bar`.
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                 ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
// global -> shared 2-D tensor copy of the box at (x, y) (x: bytes along K/2, y: rows) described by
// `map`, counted on `bar`.
// NOTE: `map` is the kernel parameter's own copy (param space, generic address), which the TMA
// unit reads directly: no fence.proxy.tensormap is needed for a map that never lives in global memory.
__device__ __forceinline__ void tensor_copy_2d(uint32_t dst, const CUtensorMap* map, int x, int y, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar) : "memory");
}

// Byte offset of (tile t, K block kb, row r, 16-byte chunk c) in a group's tiled fp16 A.
__device__ __forceinline__ int64_t a16_offset(const GroupDesc& d, int t, int kb, int r, int c) {
    return ((static_cast<int64_t>(t) * (d.k / BLOCK_K) + kb) * d.m_tile_rows + r) * 128 + ((c ^ (r % 8)) * 16);
}

// NOTE: a bar.sync over the consumer warpgroups only (see kConsumerBarrier); "memory" keeps the
// compiler from moving shared or global accesses across it.
__device__ __forceinline__ void consumer_sync() {
    asm volatile("bar.sync %0, %1;\n" ::"n"(kConsumerBarrier), "n"(kConsumerThreads) : "memory");
}

// Prepass threads of one batch: one per (row of its M tiles, K block, half j); the kernel's bound
// and the host's block count (fill_chunk) both come from here.
__host__ __device__ inline int decode_threads_of(const GroupDesc& d) {
    return d.m_tiles * d.m_tile_rows * (d.k / BLOCK_K) * 2;
}

// One line of A: row `row`'s 32 bytes of e2m1 pairs of K block kb and their 4 scales (row < d.m).
// v38: the prepass's loads, shared with the GEMM kernel's early decode (decode_early_a), so a line's
// fp16 bytes are the same in the ring whichever of them decoded it.
struct ALine { uint4 lo, hi; uint32_t scales; };
__device__ __forceinline__ ALine load_a_line(const GroupDesc& d, int row, int kb) {
    const uint8_t* src = d.a + row * d.a_row + kb * (BLOCK_K / 2);
    // NOTE: both halves j of a row load the same 32 bytes (one sector): the second 16-byte load
    // finds the sector the first brought into L1.
    ALine line;
    line.lo = *reinterpret_cast<const uint4*>(src);
    line.hi = *reinterpret_cast<const uint4*>(src + 16);
    const uint8_t* sf = d.sfa + row * d.sfa_row + kb * (BLOCK_K / 16);
    // NOTE: the 4 scales of a K block start at a multiple of 4 bytes whenever sfa and its row
    // stride are (a dense row holds K / 16, a multiple of 4); otherwise 4 byte loads. The test
    // is the same for every thread of a group.
    line.scales = ((reinterpret_cast<uintptr_t>(d.sfa) | static_cast<uintptr_t>(d.sfa_row)) & 3u) == 0
        ? *reinterpret_cast<const uint32_t*>(sf)
        : sf[0] | (sf[1] << 8) | (sf[2] << 16) | (static_cast<uint32_t>(sf[3]) << 24);
    return line;
}
// Half j of a line in fp16 (exact a x sfa): out[s][t] = the pair of scale block t in chunk 2s + j.
__device__ __forceinline__ void decode_a_line(const ALine& line, int j, uint32_t (&out)[4][4]) {
    const uint32_t w[4] = {j ? line.lo.y : line.lo.x, j ? line.lo.w : line.lo.z,
                           j ? line.hi.y : line.hi.x, j ? line.hi.w : line.hi.z};  // words 2t + j
    __half2 scale[4];
    #pragma unroll
    for (int i = 0; i < 4; ++i) scale[i] = scale_pair(line.scales >> (8 * i));
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
        out[0][i] = scaled_pair(e2m1_pair_bits<0>(w[i]), scale[i]);
        out[1][i] = scaled_pair(e2m1_pair_bits<1>(w[i]), scale[i]);
        out[2][i] = scaled_pair(e2m1_pair_bits<2>(w[i]), scale[i]);
        out[3][i] = scaled_pair(e2m1_pair_bits<3>(w[i]), scale[i]);
    }
}

// Prepass: every batch's A decoded to fp16 (exact a x sfa) in the tiled, swizzled layout and the
// permuted K order; the rows of the last tile past M written as zeros. Thread (row, kb, j) writes
// the row's chunks 2s + j (s = 0..3) of K block kb, whole: chunk 2s + j holds, for t = 0..3, the
// pair (k = 16t + 8j + s, k + 4) = nibbles s and s + 4 of the row's word 2t + j, scale block t
// (decode_b's pattern for B).
// NOTE: thread u: j = bit 0, row within a group of 4 = bits 1..2, then (row group, K block) with the
// K block fastest. A warp is 4 rows x 4 K blocks x 2 halves: each store instruction writes, per
// (row, K block), chunks 2s and 2s + 1, which the swizzle (c ^ r % 8) keeps an aligned 32-byte pair:
// 16 full sectors. Its loads read 128 contiguous bytes of each row's A and 16 of its scales.
// v38: kTrigger (the prepass of a kTailsEarly launch) lets the GEMM kernel, its programmatic dependent,
// be launched at once: griddepcontrol.launch_dependents is the block's first instruction (v31's place:
// the dependent grid is scheduled once every block of this one has issued it or exited, and none of
// these blocks waits on anything, so every one of them finishes). It orders none of this grid's stores:
// the GEMM kernel's griddepcontrol.wait does (it returns once this grid has completed, its writes visible).
template <int kGroups, bool kTrigger>
__global__ void __launch_bounds__(kDecodeThreads)
decode_a_kernel(const __grid_constant__ Problem<kGroups> problem) {
    if constexpr (kTrigger) asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    if (threadIdx.x == 0) NVFP4_MARK(0);
    // NOTE: the GEMM kernel's tail flags start at 0 each launch; stream order puts these stores
    // before it (no epoch to carry between calls; gemm v30's rule). v38: in a kTailsEarly (v64: or kSplitTails)
    // launch, before every read and write of a flag by the GEMM kernel too: each is behind a griddepcontrol.wait.
    if (blockIdx.x == 0 && problem.tails.helpers > 0)
        for (int i = threadIdx.x; i < problem.num_tiles; i += kDecodeThreads) problem.tails.flags[i] = 0u;
    int g = 0;
    while (g + 1 < problem.num_groups && static_cast<int>(blockIdx.x) >= problem.groups[g + 1].decode_begin) ++g;
    const GroupDesc& d = problem.groups[g];
    const int u = (blockIdx.x - d.decode_begin) * kDecodeThreads + threadIdx.x;
    if (u >= decode_threads_of(d)) return;
    const int num_kb = d.k / BLOCK_K;
    const int j = u & 1, q = u >> 3;
    const int kb = q % num_kb;
    // NOTE: m_tile_rows is a multiple of 8 (kTileRows), so a group of 4 rows never straddles two M tiles.
    const int row = (q / num_kb) * 4 + ((u >> 1) & 3);
    const int t = row / d.m_tile_rows, r = row % d.m_tile_rows;
    uint32_t out[4][4] = {};  // out[s][t]: the pair of scale block t in chunk 2s + j
    if (row < d.m) decode_a_line(load_a_line(d, row, kb), j, out);
    #pragma unroll
    for (int s = 0; s < 4; ++s)
        *reinterpret_cast<uint4*>(d.a16 + a16_offset(d, t, kb, r, 2 * s + j)) = make_uint4(out[s][0], out[s][1], out[s][2], out[s][3]);
    if (threadIdx.x == 0) NVFP4_MARK(1);  // NOTE: thread 0 of every block has work (the grid is rounded up from it)
}

// Stage addresses of ring slot s: the A tile (1024-aligned), then B1's values and scales, then B2's.
struct Stage { uint32_t a, b_values[2], b_scales[2]; };
__device__ __forceinline__ Stage stage_of(uint32_t ring, int s) {
    const uint32_t base = ring + s * STAGE_BYTES;
    return {base, {base + A_TILE_BYTES, base + A_TILE_BYTES + B_BYTES},
            {base + A_TILE_BYTES + B_VALUE_BYTES, base + A_TILE_BYTES + B_BYTES + B_VALUE_BYTES}};
}

// Producer thread 0: fill ring position pos + kb (slot (pos + kb) % kStages) for each of num_k K
// blocks (local kb is the matrix's K block kb_first + kb), once the consumers freed it; `pos`
// counts the blocks this CTA's ring took before (a helper's earlier tails), 0 for a first run.
// NOTE: five copies per stage, all counted in bytes on the full barrier: A's fp16 tile, then per
// operand the 128 x 4 scales of the blocked tile holding its 64 rows (512 contiguous bytes) and its
// 64 rows x 32 bytes of values (one tensor copy).
// Stage st's B1 and B2 bytes of K block kb (the matrix's) for rows n0 .. n0 + 63, counted on `bar`: per
// operand the blocked scale tile at byte `scale_offset` of sfb_blocked[w] and one tensor copy of the values.
// v38: produce()'s copies, shared with a kTailsEarly CTA's first blocks (dual_gemm_kernel).
__device__ __forceinline__ void copy_b(const GroupDesc& d, const Stage& st, int n0, int kb, int64_t scale_offset,
                                       uint32_t bar) {
    #pragma unroll
    for (int w = 0; w < 2; ++w) {
        bulk_copy(st.b_scales[w], d.sfb_blocked[w] + scale_offset, B_SCALE_BYTES, bar);
        tensor_copy_2d(st.b_values[w], &d.b_map[w], kb * (BLOCK_K / 2), n0, bar);
    }
}
// Byte offset of the blocked scale tile of (rows n0 / 128, K block kb) in an operand's sfb_blocked; the
// next K block's is B_SCALE_BYTES further.
__device__ __forceinline__ int64_t scale_tile_of(const GroupDesc& d, int n0, int kb) {
    return (static_cast<int64_t>(n0 / kScaleTileRows) * (d.k / BLOCK_K) + kb) * B_SCALE_BYTES;
}

// v73: A's n_cols rows from `src` (one K block's tile, from its row a_first_row) to the slot's tile at `dst`; `swap`:
// the rows' two halves exchanged in the slot (the S = 2 handoff's split 1, whose own rows then come first).
// NOTE: halves of 128 rows keep each row's 128-byte swizzle phase (r % 8), so the slot's tile is a valid operand.
__device__ __forceinline__ void copy_a(uint32_t dst, const uint8_t* src, int n_cols, bool swap, uint32_t bar) {
    const uint32_t bytes = static_cast<uint32_t>(n_cols) * 128;
    if (swap) {
        bulk_copy(dst, src + bytes / 2, bytes / 2, bar);
        bulk_copy(dst + bytes / 2, src, bytes / 2, bar);
    } else {
        bulk_copy(dst, src, bytes, bar);
    }
}
// v73: a_first_row > 0: n_cols rows of A's tile from that row (the handoff's narrowed blocks); swap: copy_a's.
__device__ __forceinline__ void produce(const GroupDesc& d, int t, int n0, int n_cols, int kb_first, int num_k,
                                        int pos, uint32_t ring, uint32_t full, uint32_t empty, int a_first_row = 0,
                                        bool swap = false) {
    const uint32_t a_bytes = static_cast<uint32_t>(n_cols) * 128;
    const uint8_t* const a_src = d.a16 + a16_offset(d, t, kb_first, a_first_row, 0);
    const int64_t a_step = static_cast<int64_t>(d.m_tile_rows) * 128;  // from one K block's tile to the next
    const int64_t scale_tile = scale_tile_of(d, n0, kb_first);
    for (int kb = 0; kb < num_k; ++kb) {
        const int s = (pos + kb) % kStages;
        // NOTE: parity of the previous use of this slot; a fresh barrier counts as completed for parity 1.
        mbar_wait(empty + 8 * s, (((pos + kb) / kStages) & 1) ^ 1);
        const Stage st = stage_of(ring, s);
        mbar_arrive_expect_tx(full + 8 * s, a_bytes + 2 * B_BYTES);
        copy_a(st.a, a_src + kb * a_step, n_cols, swap, full + 8 * s);
        copy_b(d, st, n0, kb_first + kb, scale_tile + static_cast<int64_t>(kb) * B_SCALE_BYTES, full + 8 * s);
    }
}

// v38: griddepcontrol.wait: in a kTailsEarly launch (the prepass's programmatic dependent), returns once the
// prepass grid has completed and its writes (the fp16 A tiles, the zeroed tail flags) are visible to this
// grid; every read of them and every write of a flag comes after one.
__device__ __forceinline__ void wait_for_prepass() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

// v63: the stages of a dependent launch's first run whose B goes out before griddepcontrol.wait (group_gemm v119's
// count: two; v41 issued the whole lap's six and measured SAME, its A copies then queued behind six stages of B).
constexpr int kEarlyBStages = 2;
// v63: produce() for a dependent CTA's first run (fresh slots from ring position 0): stages 0 .. kEarlyBStages - 1
// armed for A and B and their B issued (the caller's inputs, which nothing in the call writes), then the wait for the
// prepass (its fp16 A tiles), their A, then produce() from there. NOTE: group_gemm v89's marks (session 80): a copy
// issued after a lap of B from DRAM left the producer ~1.25 us after the wait; here A's first copies follow two stages.
__device__ __forceinline__ void produce_dependent(const GroupDesc& d, int t, int n0, int n_cols, int kb_first, int num_k,
                                                  uint32_t ring, uint32_t full, uint32_t empty, bool swap = false) {
    const uint32_t a_bytes = static_cast<uint32_t>(n_cols) * 128;
    const int early = num_k < kEarlyBStages ? num_k : kEarlyBStages;
    const int64_t scale_tile = scale_tile_of(d, n0, kb_first);
    for (int kb = 0; kb < early; ++kb) {  // NOTE: fresh slots: no empty wait (produce()'s parity rule passes anyway)
        mbar_arrive_expect_tx(full + 8 * kb, a_bytes + 2 * B_BYTES);
        copy_b(d, stage_of(ring, kb), n0, kb_first + kb, scale_tile + static_cast<int64_t>(kb) * B_SCALE_BYTES, full + 8 * kb);
    }
    wait_for_prepass();
    NVFP4_MARK(4);
    const uint8_t* const a_src = d.a16 + a16_offset(d, t, kb_first, 0, 0);
    const int64_t a_step = static_cast<int64_t>(d.m_tile_rows) * 128;
    for (int kb = 0; kb < early; ++kb) copy_a(stage_of(ring, kb).a, a_src + kb * a_step, n_cols, swap, full + 8 * kb);
    produce(d, t, n0, n_cols, kb_first + early, num_k - early, early, ring, full, empty, 0, swap);
}

// ---------------------------------------------------------------- the cluster's split-K sum
// A tile's tail flag (tails through L2, below; v32's split launches with helpers read it in the sum).
__device__ __forceinline__ void flag_release(uint32_t* flag) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(flag), "r"(1u) : "memory");
}
__device__ __forceinline__ uint32_t flag_acquire(const uint32_t* flag) {
    uint32_t v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(flag) : "memory");
    return v;
}
// NOTE: release/acquire: the shared-memory writes before the barrier are visible to every thread
// of the cluster after it. Threads that have exited (the producer warpgroup) count as arrived.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// v72: the same barrier in its two halves, for work between this CTA's arrival and its wait.
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release;\n" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory"); }
__device__ __forceinline__ void st_shared_f4(uint32_t addr, float x, float y, float z, float w) {
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "f"(x), "f"(y), "f"(z), "f"(w) : "memory");
}
__device__ __forceinline__ float4 ld_shared_f4(uint32_t addr) {
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr) : "memory");
    return v;
}
__device__ __forceinline__ void st_shared_half(uint32_t addr, float value) {
    const __half h = __float2half_rn(value);
    asm volatile("st.shared.b16 [%0], %1;\n" ::"r"(addr), "h"(__half_as_ushort(h)) : "memory");
}
__device__ __forceinline__ uint4 ld_shared_u4(uint32_t addr) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr) : "memory");
    return v;
}
__device__ __forceinline__ void st_shared_u4(uint32_t addr, uint32_t x, uint32_t y, uint32_t z, uint32_t w) {
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(x), "r"(y), "r"(z), "r"(w) : "memory");
}
// Tile rows (m) r_begin .. r_end - 1 of the staged C tile to C: 8 threads a row, 16 bytes each, so
// a warp writes four whole 128-byte rows; rows past M are not stored.
// NOTE: C's base and row stride are 16-byte aligned (the host checks), n0 a multiple of 64.
__device__ __forceinline__ void store_staged_c(const GroupDesc& d, int cthread, int m0, int n0, uint32_t c_stage,
                                               int r_begin, int r_end) {
    constexpr int kChunks = BLOCK_N * 2 / 16;  // 16-byte pieces per C row of the tile
    #pragma unroll 4
    for (int idx = r_begin * kChunks + cthread; idx < r_end * kChunks; idx += kConsumerThreads) {
        const int r = idx / kChunks, chunk = idx % kChunks;
        if (m0 + r < d.m)
            *reinterpret_cast<uint4*>(d.c + static_cast<int64_t>(m0 + r) * d.c_row + n0 + chunk * 8) =
                ld_shared_u4(c_stage + r * C_ROW_BYTES + chunk * 16);
    }
}
// The float4 at this CTA's shared address `addr`, read from the CTA of cluster rank `rank`.
__device__ __forceinline__ float4 ld_cluster_f4(uint32_t addr, uint32_t rank) {
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(addr), "r"(rank));
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(remote) : "memory");
    return v;
}
// One product's float4 at `addr` summed over the cluster's S CTAs in split order: ((0 + p_0) + p_1) + ...
// `rank` is this CTA's: its own part is read from its shared memory directly.
// NOTE: v22 read its own part through mapa and ld.shared::cluster like the peers' (S6 timeline: the
// sum step took 4.67 us for 128 KB of such reads a CTA at S = 2); a plain ld.shared keeps the
// local half off the cluster's path.
__device__ __forceinline__ float4 cluster_sum(uint32_t addr, int S, int rank) {
    float4 part[kMaxSplits];
    #pragma unroll
    for (int s = 0; s < kMaxSplits; ++s)  // NOTE: all S reads issued before the first add
        if (s < S) part[s] = s == rank ? ld_shared_f4(addr) : ld_cluster_f4(addr, s);
    float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
    #pragma unroll
    for (int s = 0; s < kMaxSplits; ++s) {
        if (s < S) { sum.x += part[s].x; sum.y += part[s].y; sum.z += part[s].z; sum.w += part[s].w; }
    }
    return sum;
}

// ((0 + first) + second), componentwise: cluster_sum's order for S = 2.
__device__ __forceinline__ float4 add_in_order(float4 first, float4 second) {
    float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
    sum.x += first.x; sum.y += first.y; sum.z += first.z; sum.w += first.w;
    sum.x += second.x; sum.y += second.y; sum.z += second.z; sum.w += second.w;
    return sum;
}

// v72: reduce_in_cluster's S = 2 exchange, in phases for split kSplit's consumer thread u of warpgroup kOperand (0:
// gate, 1: up): (1) stage_peer_share: the peer's share of this thread's partial into the drained ring (only the peer
// reads it), then the CTA's arrival on the cluster barrier; the tail's loads (kWithTail); (2) stage_other_positions:
// the own share's positions that the other warpgroup sums (j = own begin + (1 - kOperand) + 2i), a consumer barrier,
// the cluster barrier's wait; (3) sum_own_positions: the peer's partials of this thread's positions (j = own begin +
// kOperand + 2i) pulled, both operands, and summed with this thread's own operand from its registers and the other's
// from the ring. v68 staged all 128 KB (kN = 256) before arriving and read both own operands back from shared memory:
// here 64 KB is staged before the arrival and 32 KB after it. Sums in v68's order, ((0 + split 0) + split 1) + tail,
// so outputs are bit for bit.
// NOTE: acc is indexed by compile-time positions only (kSplit and kOperand are template arguments): a run-time
// index would put the accumulators in local memory. The barriers stay in reduce_in_cluster, one instruction for
// both warpgroups (synccheck flagged the first build, whose warpgroups reached bar.sync in different instantiations).
template <int kN, int kSplit, int kOperand>
__device__ __forceinline__ void stage_peer_share(int u, uint32_t ring, const float* acc) {
    constexpr uint32_t kUpOffset = kN / 8 * kOperandThreads * 16;
    constexpr int kShare = kN / 16, kPeerBegin = (kSplit ^ 1) * kShare;
    #pragma unroll
    for (int q = 0; q < kShare; ++q) {
        const int j = kPeerBegin + q;
        st_shared_f4(ring + kOperand * kUpOffset + (j * kOperandThreads + u) * 16, acc[4 * j], acc[4 * j + 1],
                     acc[4 * j + 2], acc[4 * j + 3]);
    }
}
template <int kN, int kSplit, int kOperand>
__device__ __forceinline__ void stage_other_positions(int u, uint32_t ring, const float* acc) {
    constexpr uint32_t kUpOffset = kN / 8 * kOperandThreads * 16;
    constexpr int kOwnBegin = kSplit * (kN / 16);
    #pragma unroll
    for (int i = 0; i < kN / 32; ++i) {
        const int j = kOwnBegin + (kOperand ^ 1) + 2 * i;
        st_shared_f4(ring + kOperand * kUpOffset + (j * kOperandThreads + u) * 16, acc[4 * j], acc[4 * j + 1],
                     acc[4 * j + 2], acc[4 * j + 3]);
    }
}
template <int kN, bool kWithTail, int kSplit, int kOperand>
__device__ __forceinline__ void sum_own_positions(int u, uint32_t ring, const float* acc, const float4* tail_g,
                                                  const float4* tail_up) {
    constexpr uint32_t kUpOffset = kN / 8 * kOperandThreads * 16;
    constexpr int kOwnBegin = kSplit * (kN / 16), kPositions = kN / 32;
    const uint32_t other = ring + (kOperand ^ 1) * kUpOffset;
    const int v_warp = u / 32, v_lane = u % 32;
    const int v_row = v_warp * 16 + v_lane / 4, v_tig = v_lane % 4;
    float4 peer_g[kPositions], peer_up[kPositions];
    #pragma unroll
    for (int i = 0; i < kPositions; ++i) {  // NOTE: every read of the peer issued before the first add (v68's)
        const uint32_t addr = ring + ((kOwnBegin + kOperand + 2 * i) * kOperandThreads + u) * 16;
        peer_g[i] = ld_cluster_f4(addr, kSplit ^ 1);
        peer_up[i] = ld_cluster_f4(addr + kUpOffset, kSplit ^ 1);
    }
    #pragma unroll
    for (int i = 0; i < kPositions; ++i) {
        const int j = kOwnBegin + kOperand + 2 * i;
        const float4 held = make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
        const float4 staged = ld_shared_f4(other + (j * kOperandThreads + u) * 16);
        const float4 own_g = kOperand == 0 ? held : staged, own_up = kOperand == 0 ? staged : held;
        float4 g = kSplit == 0 ? add_in_order(own_g, peer_g[i]) : add_in_order(peer_g[i], own_g);
        float4 up = kSplit == 0 ? add_in_order(own_up, peer_up[i]) : add_in_order(peer_up[i], own_up);
        if constexpr (kWithTail) {
            g.x += tail_g[i].x; g.y += tail_g[i].y; g.z += tail_g[i].z; g.w += tail_g[i].w;
            up.x += tail_up[i].x; up.y += tail_up[i].y; up.z += tail_up[i].z; up.w += tail_up[i].w;
        }
        const uint32_t at = ring + C_STAGE_OFFSET + (8 * j + 2 * v_tig) * C_ROW_BYTES + v_row * 2;
        st_shared_half(at, silu_times(g.x, up.x));
        st_shared_half(at + 16, silu_times(g.z, up.z));
        st_shared_half(at + C_ROW_BYTES, silu_times(g.y, up.y));
        st_shared_half(at + C_ROW_BYTES + 16, silu_times(g.w, up.w));
    }
}
// v72: one of the four (split, operand) instantiations of a phase, chosen by warp-uniform values.
#define V72_DISPATCH(call_0_0, call_0_1, call_1_0, call_1_1) \
    do {                                                       \
        if (split == 0) { if (operand == 0) call_0_0; else call_0_1; } \
        else { if (operand == 0) call_1_0; else call_1_1; }    \
    } while (0)

// Split-K, consumer threads only, S > 1: this CTA's partials go into its own drained ring, gate
// (warpgroup 0's) then up (warpgroup 1's), each as float4 [j][thread of the warpgroup]; after the
// cluster barrier the consumer threads sum the positions (j, u) with j in this CTA's share of the
// columns (split's 1/S of the kN / 8) over all S CTAs, both products at once, apply silu x up to
// the full sums, stage them as fp16 C rows behind the partials and, after a barrier over the
// consumers, store the share's rows with 16-byte stores. `cthread` is the consumer index, 0..255.
// NOTE: every CTA of the cluster has the same layout, so a position's address is the same number
// in every CTA's shared window; mapa turns it into rank s's.
// v32, kWithTail (kSplitTails, S = 2 only): the tile's tail, run by a helper CTA, is added last, after
// the S splits, from its partial in L2 (`tail`: the tile's [operand][j][thread u] float4s, as
// tail_partial_at lays them out), once `flag` says it is there; each CTA reads only the positions of
// its share, before the cluster barrier (the peer's reads come after it).
template <int kN, bool kWithTail>
__device__ __forceinline__ void reduce_in_cluster(const GroupDesc& d, int S, int split, int cthread, int m0, int n0,
                                                  uint32_t ring, const float* acc, const float* tail,
                                                  const uint32_t* flag) {
    constexpr uint32_t kUpOffset = kN / 8 * kOperandThreads * 16;  // bytes of one product's partial
    const int operand = cthread / kOperandThreads, u = cthread % kOperandThreads;
    consumer_sync();  // NOTE: every consumer warp's last wgmma has read its stage before the ring is overwritten
    if (S == 2) {  // v72: the pair's exchange in phases (stage_peer_share, stage_other_positions, sum_own_positions)
        V72_DISPATCH((stage_peer_share<kN, 0, 0>(u, ring, acc)), (stage_peer_share<kN, 0, 1>(u, ring, acc)),
                     (stage_peer_share<kN, 1, 0>(u, ring, acc)), (stage_peer_share<kN, 1, 1>(u, ring, acc)));
        cluster_arrive();  // NOTE: release: the peer's share of this CTA's partials is in shared memory
        constexpr int kPositions = kN / 32;
        const int own_begin = split * (kN / 16);
        float4 tail_g[kWithTail ? kPositions : 1], tail_up[kWithTail ? kPositions : 1];
        if constexpr (kWithTail) {
            // NOTE: v32: each thread acquires the helper's gpu-scope release itself, so its loads are ordered after
            // its own acquire and their L2 round trip overlaps the barrier's wait. v64: kSplitTails is the prepass's
            // programmatic dependent and the prepass zeroes the flag, so each thread waits for it first
            // (griddepcontrol.wait is per thread; the prepass is long done here) and never sees the previous call's 1.
            wait_for_prepass();
            while (flag_acquire(flag) == 0u) {
            }
            __syncwarp();  // NOTE: the spin's lanes leave it apart; the aligned barriers below need the warp whole
            if (cthread == 0) NVFP4_MARK(7);
            #pragma unroll
            for (int i = 0; i < kPositions; ++i) {
                const int j = own_begin + operand + 2 * i;
                tail_g[i] = __ldcg(reinterpret_cast<const float4*>(tail + (j * kOperandThreads + u) * 4));
                tail_up[i] = __ldcg(reinterpret_cast<const float4*>(tail + ((kN / 8 + j) * kOperandThreads + u) * 4));
            }
        }
        V72_DISPATCH((stage_other_positions<kN, 0, 0>(u, ring, acc)), (stage_other_positions<kN, 0, 1>(u, ring, acc)),
                     (stage_other_positions<kN, 1, 0>(u, ring, acc)), (stage_other_positions<kN, 1, 1>(u, ring, acc)));
        consumer_sync();  // NOTE: the other warpgroup's operand of each thread's positions is in the ring
        cluster_wait();   // NOTE: acquire: the peer's share of its partials is in its shared memory
        if (cthread == 0) NVFP4_MARK(8);
        V72_DISPATCH((sum_own_positions<kN, kWithTail, 0, 0>(u, ring, acc, tail_g, tail_up)),
                     (sum_own_positions<kN, kWithTail, 0, 1>(u, ring, acc, tail_g, tail_up)),
                     (sum_own_positions<kN, kWithTail, 1, 0>(u, ring, acc, tail_g, tail_up)),
                     (sum_own_positions<kN, kWithTail, 1, 1>(u, ring, acc, tail_g, tail_up)));
        consumer_sync();  // NOTE: every thread's results are in the C rows before any of them is stored
        if (cthread == 0) NVFP4_MARK(10);
        store_staged_c(d, cthread, m0, n0, ring + C_STAGE_OFFSET, 8 * split * (kN / 8) / 2, 8 * (split + 1) * (kN / 8) / 2);
        cluster_sync();  // NOTE: no CTA leaves, taking its shared memory with it, while a peer may still read it
        return;
    }
    // v72: S > 2 from here (S = 2 returned above); no tail: the host gives a split launch helpers only at S = 2
    // (choose_split_tails).
    #pragma unroll
    for (int j = 0; j < kN / 8; ++j)
        st_shared_f4(ring + operand * kUpOffset + (j * kOperandThreads + u) * 16,
                     acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
    const int j_begin = split * (kN / 8) / S, j_end = (split + 1) * (kN / 8) / S;
    cluster_sync();  // NOTE: every split's partials are in its CTA's shared memory before any is read
    if (cthread == 0) NVFP4_MARK(8);
    // NOTE: position (j, v) was written by thread v of each warpgroup: its fragment rows and columns
    const int v_warp = u / 32, v_lane = u % 32;
    const int v_row = v_warp * 16 + v_lane / 4, v_tig = v_lane % 4;
    #pragma unroll 1
    for (int j = j_begin + operand; j < j_end; j += 2) {
        const uint32_t addr = ring + (j * kOperandThreads + u) * 16;
        const float4 g = cluster_sum(addr, S, split), up = cluster_sum(addr + kUpOffset, S, split);
        // g, up: tile rows (n) v_row and v_row + 8, columns (m) 8j + 2 v_tig and + 1
        const uint32_t at = ring + C_STAGE_OFFSET + (8 * j + 2 * v_tig) * C_ROW_BYTES + v_row * 2;
        st_shared_half(at, silu_times(g.x, up.x));
        st_shared_half(at + 16, silu_times(g.z, up.z));
        st_shared_half(at + C_ROW_BYTES, silu_times(g.y, up.y));
        st_shared_half(at + C_ROW_BYTES + 16, silu_times(g.w, up.w));
    }
    consumer_sync();  // NOTE: every thread's results are in the C rows before any of them is stored
    if (cthread == 0) NVFP4_MARK(10);
    store_staged_c(d, cthread, m0, n0, ring + C_STAGE_OFFSET, 8 * j_begin, 8 * j_end);
    cluster_sync();  // NOTE: no CTA leaves, taking its shared memory with it, while a peer may still read it
}

// ---------------------------------------------------------------- v73: the S = 2 handoff
// The tile's B blocks (all but a tail's) in three ranges: [0, y0) run by split 0 over all kN rows of A, [y1, B) by
// split 1 over all rows, and [y0, y1) by both, narrowed: each over its own share of the rows only (split 0 the tile's
// first half, split 1 the second). Rows of the first half then sum split 0's [0, y1) and split 1's [y1, B); rows of
// the second split 0's [0, y0) and split 1's [y0, B). Each CTA's partial of the peer's rows is final once its wide
// range ends, so it leaves during the narrowed blocks instead of after the loop (v72: ~1.0 us of barrier wait and
// ~2.2 of pull after it). Both wide ranges are even (the consumer's two-slot passes start on even ring positions) and
// at least 2 blocks; otherwise (and for kN != 256) v72's exchange runs.
// NOTE: split 1's producer puts the tile's second half of rows first in every slot (copy_a's swap), so for both CTAs
// the own share is the slot's first half and acc[0 .. kN / 4 - 1] (positions j < kN / 16), the peer's the second
// half and the rest: the narrowed blocks are one instantiation (wgmma N = kN / 2 on the first half), and no
// accumulator is indexed by the split. (The first build indexed by split: ptxas serialised every wgmma of the kernel
// for registers, C7511, and the wide loop ran 30% slower.)
constexpr int kHandoffBlocks = 2;  // d: the narrowed range is ~2d blocks around the middle
struct Handoff { bool on; int y0, y1; };
__host__ __device__ constexpr Handoff handoff_of(int blocks) {
    const int mid = blocks / 2;
    const int wide0 = (mid - kHandoffBlocks) & ~1, wide1 = (blocks - mid - kHandoffBlocks) & ~1;
    return {mid - kHandoffBlocks >= 2 && blocks - mid - kHandoffBlocks >= 2, wide0, blocks - wide1};
}
// NOTE: where the handoff's bytes live. In the narrowed blocks a CTA's producer fills only the first half of each
// slot's A tile (its own rows): the second half of every slot ("free") holds, once the wide range's last wgmma has
// read it, the CTA's partial of the peer's rows (pieces 0-3 of 16 KB in slots 0-3: gate positions 0-7 and 8-15 of the
// peer's share, then up's) and what the peer sends (its gate pieces into slots 4-5, then its up pieces into slots
// 0-1, once this CTA's own pieces 0-1 have left). After the loop the first ("loaded") halves are free too: the other
// warpgroup's operand in slots 0-1, the C rows in slots 2-3.
template <int kN> __device__ __forceinline__ uint32_t handoff_free(uint32_t ring, int slot) {
    return ring + slot * STAGE_BYTES + kN / 2 * 128;
}
template <int kN> __device__ __forceinline__ uint32_t handoff_loaded(uint32_t ring, int slot) {
    return ring + slot * STAGE_BYTES;
}
static_assert(6 <= kStages, "the handoff's pieces take six slots' free halves");
// v81: handoff_of's narrowed range is at most 2 d + 2 blocks; the producer thread sends only after its last copy
static_assert(2 * kHandoffBlocks + 2 <= kStages, "the narrowed range's copies are out before the wide range ends");
static_assert(8 * kOperandThreads * 16 <= BLOCK_M_MAX / 2 * 128, "a piece (8 positions of a warpgroup) fits a half slot");
static_assert(64 * C_ROW_BYTES <= BLOCK_M_MAX / 2 * 128, "64 staged C rows fit a half slot");
constexpr uint32_t kPieceBytes = 8 * kOperandThreads * 16;

__device__ __forceinline__ void cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed;\n" ::: "memory"); }
// An mbarrier of the CTA of cluster rank `rank`, arrived on with release at cluster scope.
__device__ __forceinline__ void mbar_arrive_remote(uint32_t bar, uint32_t rank) {
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(bar), "r"(rank));
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}
__device__ __forceinline__ void mbar_wait_cluster(uint32_t bar, uint32_t parity) {
    asm volatile(
        "{\n.reg .pred done;\nwait_%=:\n"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1, %2;\n"
        "@!done bra wait_%=;\n}\n" ::"r"(bar), "r"(parity), "r"(kWaitTicks) : "memory");
}
// This CTA's shared bytes [src, src + bytes) to `dst` in the CTA of rank `rank`, counted on that CTA's barrier `bar`
// (dst and bar given as this CTA's numbers: the layouts are the same).
__device__ __forceinline__ void bulk_copy_to_peer(uint32_t dst, uint32_t src, uint32_t bytes, uint32_t bar, uint32_t rank) {
    uint32_t remote_dst, remote_bar;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote_dst) : "r"(dst), "r"(rank));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote_bar) : "r"(bar), "r"(rank));
    asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                 ::"r"(remote_dst), "r"(src), "r"(bytes), "r"(remote_bar) : "memory");
}

// Consumers, after the wide range: this thread's partial of the peer's rows (positions kN / 16 + q) into pieces
// operand x 2 + q / 8, then fenced for the bulk copies (async proxy) and counted on `staged`.
template <int kN>
__device__ __forceinline__ void handoff_stage(int u, int operand, uint32_t ring, const float* acc, uint32_t staged) {
    constexpr int kShare = kN / 16;
    #pragma unroll
    for (int q = 0; q < kShare; ++q) {
        const int j = kShare + q;
        st_shared_f4(handoff_free<kN>(ring, operand * 2 + q / 8) + ((q % 8) * kOperandThreads + u) * 16,
                     acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // NOTE: generic writes before the copies read them
    mbar_arrive(staged);
}
// One thread of the producer warpgroup (not the producer's: it may still wait for slots): the handoff's two rounds.
// (1) once this CTA's pieces are staged, tell the peer its gate pieces may land here (slots 4-5: free since the wide
// range ended), wait for the peer's word, send pieces 0-1 (gate) to its slots 4-5; (2) once the peer's gate pieces
// have landed here (so its pieces 0-1 have left it), send pieces 2-3 (up) into its slots 0-1.
template <int kN>
__device__ __forceinline__ void handoff_send(int split, uint32_t ring, uint32_t staged, uint32_t ready,
                                             uint32_t received1, uint32_t received2) {
    const uint32_t peer = split ^ 1;
    cluster_wait();  // NOTE: phase 0 (arrived at the start): the peer's barriers are initialised
    mbar_wait(staged, 0);
    mbar_arrive_remote(ready, peer);
    mbar_wait_cluster(ready, 0);
    #pragma unroll
    for (int q = 0; q < 2; ++q)
        bulk_copy_to_peer(handoff_free<kN>(ring, 4 + q), handoff_free<kN>(ring, q), kPieceBytes, received1, peer);
    mbar_wait(received1, 0);
    #pragma unroll
    for (int q = 0; q < 2; ++q)
        bulk_copy_to_peer(handoff_free<kN>(ring, q), handoff_free<kN>(ring, 2 + q), kPieceBytes, received2, peer);
}
// Consumers, after the narrowed range: the own share's positions (j < kN / 16) finished as v72's (the gate warpgroup j
// even, the up odd), the peer's partial of them read locally from the pieces it sent; C rows staged in the loaded
// halves of slots 2-3 and stored; then the cluster barrier (no CTA leaves while its bytes may still be read by the
// peer's copy). Each position's sum is (own + peer) + tail: for two terms (0 + a) + b = (0 + b) + a exactly, so
// v72's split order is kept without indexing by the split.
// NOTE: acc indexed by compile-time positions only (kOperand a template argument, v72's rule); the barriers stay in
// handoff_finish, one instruction for both warpgroups (v72's synccheck lesson).
template <int kN, int kOperand>
__device__ __forceinline__ void handoff_stage_other(int u, uint32_t ring, const float* acc) {
    #pragma unroll
    for (int i = 0; i < kN / 32; ++i) {  // the other warpgroup's positions of this operand: loaded half of slot kOperand
        const int j = (kOperand ^ 1) + 2 * i;
        st_shared_f4(handoff_loaded<kN>(ring, kOperand) + (i * kOperandThreads + u) * 16, acc[4 * j], acc[4 * j + 1],
                     acc[4 * j + 2], acc[4 * j + 3]);
    }
}
template <int kN, bool kWithTail, int kOperand>
__device__ __forceinline__ void handoff_sum(int u, uint32_t ring, const float* acc, const float4* tail_g,
                                            const float4* tail_up) {
    const int v_warp = u / 32, v_lane = u % 32;
    const int v_row = v_warp * 16 + v_lane / 4, v_tig = v_lane % 4;
    #pragma unroll
    for (int i = 0; i < kN / 32; ++i) {
        const int j = kOperand + 2 * i;
        const uint32_t at_piece = ((j % 8) * kOperandThreads + u) * 16;
        const float4 peer_g = ld_shared_f4(handoff_free<kN>(ring, 4 + j / 8) + at_piece);
        const float4 peer_up = ld_shared_f4(handoff_free<kN>(ring, j / 8) + at_piece);
        const float4 staged = ld_shared_f4(handoff_loaded<kN>(ring, kOperand ^ 1) + (i * kOperandThreads + u) * 16);
        const float4 held = make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
        const float4 own_g = kOperand == 0 ? held : staged, own_up = kOperand == 0 ? staged : held;
        float4 g = add_in_order(own_g, peer_g), up = add_in_order(own_up, peer_up);
        if constexpr (kWithTail) {
            g.x += tail_g[i].x; g.y += tail_g[i].y; g.z += tail_g[i].z; g.w += tail_g[i].w;
            up.x += tail_up[i].x; up.y += tail_up[i].y; up.z += tail_up[i].z; up.w += tail_up[i].w;
        }
        const int r = 8 * j + 2 * v_tig;  // the share's C row; r + 1 in the same 64
        const uint32_t at = handoff_loaded<kN>(ring, 2 + r / 64) + (r % 64) * C_ROW_BYTES + v_row * 2;
        st_shared_half(at, silu_times(g.x, up.x));
        st_shared_half(at + 16, silu_times(g.z, up.z));
        st_shared_half(at + C_ROW_BYTES, silu_times(g.y, up.y));
        st_shared_half(at + C_ROW_BYTES + 16, silu_times(g.w, up.w));
    }
}
template <int kN, bool kWithTail>
__device__ __forceinline__ void handoff_finish(const GroupDesc& d, int split, int cthread, int m0, int n0, uint32_t ring,
                                               const float* acc, const float* tail, const uint32_t* flag,
                                               uint32_t received1, uint32_t received2) {
    constexpr int kPositions = kN / 32;
    const int operand = cthread / kOperandThreads, u = cthread % kOperandThreads;
    consumer_sync();  // NOTE: every consumer warp's last wgmma has read its stage before the loaded halves are written
    float4 tail_g[kWithTail ? kPositions : 1], tail_up[kWithTail ? kPositions : 1];
    if constexpr (kWithTail) {
        wait_for_prepass();  // NOTE: v64's: the prepass zeroes the flag
        while (flag_acquire(flag) == 0u) {
        }
        __syncwarp();  // NOTE: the spin's lanes leave it apart; the aligned barriers below need the warp whole
        if (cthread == 0) NVFP4_MARK(7);
        #pragma unroll
        for (int i = 0; i < kPositions; ++i) {
            // NOTE: the helper's partial is laid out by the tile's own positions: this share's j is the tile's
            // split x kN / 16 + j (split 1's halves are swapped in its slots only)
            const int j = split * (kN / 16) + operand + 2 * i;
            tail_g[i] = __ldcg(reinterpret_cast<const float4*>(tail + (j * kOperandThreads + u) * 4));
            tail_up[i] = __ldcg(reinterpret_cast<const float4*>(tail + ((kN / 8 + j) * kOperandThreads + u) * 4));
        }
    }
    if (operand == 0) handoff_stage_other<kN, 0>(u, ring, acc);
    else handoff_stage_other<kN, 1>(u, ring, acc);
    mbar_wait(received1, 0);
    mbar_wait(received2, 0);
    consumer_sync();  // NOTE: the other warpgroup's operand is staged
    if (cthread == 0) NVFP4_MARK(8);
    if (operand == 0) handoff_sum<kN, kWithTail, 0>(u, ring, acc, tail_g, tail_up);
    else handoff_sum<kN, kWithTail, 1>(u, ring, acc, tail_g, tail_up);
    consumer_sync();  // NOTE: every thread's results are in the C rows before any of them is stored
    if (cthread == 0) NVFP4_MARK(10);
    constexpr int kChunks = BLOCK_N * 2 / 16;
    const int row0 = m0 + split * (kN / 2);
    #pragma unroll 4
    for (int idx = cthread; idx < kN / 2 * kChunks; idx += kConsumerThreads) {
        const int r = idx / kChunks, chunk = idx % kChunks;
        if (row0 + r < d.m)
            *reinterpret_cast<uint4*>(d.c + static_cast<int64_t>(row0 + r) * d.c_row + n0 + chunk * 8) =
                ld_shared_u4(handoff_loaded<kN>(ring, 2 + r / 64) + (r % 64) * C_ROW_BYTES + chunk * 16);
    }
    cluster_wait();  // NOTE: phase 0 (arrived at the start)
    cluster_sync();  // NOTE: no CTA leaves while the peer's copy of its up pieces may still read its shared memory
}

// v50: a tile CTA's tail folded into its K loop (kTails, kTailsEarly): this thread's float4 positions of the
// tile's tail partial (`part`: tail_partial_at's, position j at j x kOperandThreads x 4 floats), the tile's
// flag, and the loop's block after whose wait piece 0 is added (`begin` >= 1; piece q after block begin + q's).
struct Fold { const float* part; const uint32_t* flag; int begin; };

// v50: a fold's work after the wait of the K loop's block begin + p (every consumer thread): piece p (if
// 0 <= p < kFoldPieces) added into acc from `pending`, then piece p + 1's loads issued into `pending`, to land
// under the next block's wgmma. A thread's sum of a position is its blocks up to begin + q, then + the tail,
// then its later blocks: a fixed order (fp32, round to nearest).
// v51: the flag is acquired a block earlier and before that block's wait (fold_acquire), under its wgmma.
// NOTE: acc is indexed through a compile-time piece (the `pp == p` branches): a run-time index would put
// the accumulators in local memory.
template <int kN>
__device__ __forceinline__ void fold_step(int p, const Fold& fold, float (&acc)[kN / 2],
                                          float4 (&pending)[kN / 8 / kFoldPieces]) {
    constexpr int kPer = kN / 8 / kFoldPieces;
    if (p >= 0 && p < kFoldPieces) {
        #pragma unroll
        for (int pp = 0; pp < kFoldPieces; ++pp) {
            if (pp == p) {
                #pragma unroll
                for (int q = 0; q < kPer; ++q) {
                    const int j = pp * kPer + q;
                    acc[4 * j] += pending[q].x; acc[4 * j + 1] += pending[q].y;
                    acc[4 * j + 2] += pending[q].z; acc[4 * j + 3] += pending[q].w;
                }
            }
        }
    }
    if (p >= -1 && p < kFoldPieces - 1) {
        #pragma unroll
        for (int q = 0; q < kPer; ++q)
            pending[q] = __ldcg(reinterpret_cast<const float4*>(fold.part + ((p + 1) * kPer + q) * kOperandThreads * 4));
    }
}

// v51: the tile's flag acquired by each consumer thread itself (its loads are then ordered after its own acquire,
// as reduce_in_cluster's), during block begin - 2, after the next block's decode and before the wait: the round
// trip runs under that block's wgmma.
template <bool kDependent>
__device__ __forceinline__ void fold_acquire(const Fold& fold) {
    // NOTE: kTailsEarly: not before griddepcontrol.wait (the prepass zeroes the flag), as v38-v44's add_tail did
    if constexpr (kDependent) wait_for_prepass();
    while (flag_acquire(fold.flag) == 0u) {
    }
    if (threadIdx.x == kProducerThreads) NVFP4_MARK(7);
}

template <bool kValue> struct Folding { static constexpr bool value = kValue; };

// The K loop of the consumers: num_k K blocks from ring position pos (even: the two-slot passes
// start on an even slot), summed into acc; warpgroup 0 the gate (B1), warpgroup 1 the up (B2), the
// same 64 rows of N. A warpgroup decodes its operand's block kb + 1 while wgmma works on block kb;
// a stage is released once its wgmma has completed (A read) and its B was decoded (a step earlier).
// v50: kFold (a tile CTA of a launch with tails): the tail folded in after blocks fold.begin - 1 .. (fold_step);
// v51: its flag acquired during block fold.begin - 2 (fold_acquire).
// v73: kPart 0 or 1: wgmma N = kN / 2 over the A tile's first or second half of rows only, into that half's
// accumulators (the S = 2 handoff's narrowed blocks); -1 (every other caller): the whole tile.
template <int kN, bool kFold = false, bool kDependent = false, int kPart = -1>
__device__ __forceinline__ void mma_blocks(float (&acc)[kN / 2], int num_k, int pos, int n0, uint32_t ring,
                                           const uint8_t* ring_generic, uint32_t full, uint32_t empty,
                                           const Fold fold = Fold{nullptr, nullptr, 0}) {
    static_assert((kN / 8) % kFoldPieces == 0, "a fold's pieces split the positions evenly");
    static_assert(kHalf == 2 && kFoldPieces % kHalf == 0, "the fold's loop is whole passes");
    float4 pending[kN / 8 / kFoldPieces];  // NOTE: v50: the fold's next piece, loaded a block ahead
    const int cthread = threadIdx.x - kProducerThreads;
    const int operand = cthread / kOperandThreads;  // 0: gate (B1), 1: up (B2)
    const int warp = (cthread % kOperandThreads) / 32, lane = cthread % 32;
    const int gid = lane / 4, tig = lane % 4;
    const int row = warp * 16 + gid;  // tile-local row of B: the warpgroup's warps 0-3 rows 0..63
    const int scale_row0 = n0 % kScaleTileRows;  // NOTE: 0 or 64: which half of the blocked scale tile
    uint32_t frag[2][4][4];  // [buffer][k16 step][register]

    const uint32_t desc0 = desc_low(ring);  // slot 0's A tile; slot s is STAGE_BYTES / 16 x s further
    const uint8_t* const b0 = ring_generic + A_TILE_BYTES + operand * B_BYTES;  // slot 0's bytes of this operand
    auto decode_slot = [&](int slot, uint32_t parity, uint32_t (&f)[4][4]) {
        mbar_wait(full + 8 * slot, parity);
        const uint8_t* b = b0 + slot * STAGE_BYTES;
        decode_b(b, b + B_VALUE_BYTES, row, scale_row0, tig, f);
    };
    decode_slot(pos % kStages, (pos / kStages) & 1, frag[0]);
    // NOTE: one pass covers kHalf slots from `base` (v9's structure with two slots a pass: the ring's
    // six slots are three passes), so frag[i % 2] follows k % 2.
    // v51: a pass with folding (kFold, blocks fold.begin - 2 .. fold.begin + kFoldPieces - 1) adds the fold's
    // steps; the others are v44's passes, so `pending` is live only inside the fold's own loop below.
    auto pass = [&](int kb, auto folding) {
        constexpr bool kFolding = decltype(folding)::value;
        const int base = (pos + kb) % kStages;
        const uint32_t phase = ((pos + kb) / kStages) & 1;  // parity of the ring's current lap
        const uint32_t desc_base = desc0 + base * (STAGE_BYTES / 16);
        #pragma unroll
        for (int i = 0; i < kHalf; ++i) {
            if (kb + i < num_k) {
                wgmma_fence();  // NOTE: orders this thread's writes of frag (and acc) before wgmma reads them
                constexpr int kWidth = kPart < 0 ? kN : kN / 2;
                constexpr int kAccBegin = kPart > 0 ? kN / 4 : 0;             // the half's first accumulator
                constexpr uint32_t kRowsOffset = kPart > 0 ? kN / 2 * 128 : 0;  // bytes to the half's first row
                #pragma unroll
                for (int s = 0; s < 4; ++s)
                    wgmma_m64k16<kWidth>(acc + kAccBegin, frag[i % 2][s],
                                         desc_sw128(desc_base + (kRowsOffset + i * STAGE_BYTES + 32 * s) / 16));
                wgmma_commit();
                if (kb + i + 1 < num_k) {
                    const int next = base + i + 1;  // NOTE: kStages after the last slot: slot 0 of the next lap
                    decode_slot(next % kStages, next == kStages ? phase ^ 1 : phase, frag[(i + 1) % 2]);
                }
                if constexpr (kFolding) {
                    if (kb + i == fold.begin - 2) fold_acquire<kDependent>(fold);
                }
                wgmma_wait_all();  // NOTE: block k's wgmma read its A and frag: both free
                mbar_arrive(empty + 8 * (base + i));
                if constexpr (kFolding) fold_step<kN>(kb + i - fold.begin, fold, acc, pending);
            }
        }
    };
    if constexpr (kFold) {
        // NOTE: fold.begin is even and >= 2 (the caller's), so the three loops' passes start on even blocks.
        const int lo = fold.begin - 2, hi = fold.begin + kFoldPieces;
        int kb = 0;
        for (; kb < lo; kb += kHalf) pass(kb, Folding<false>{});
        for (; kb < hi; kb += kHalf) pass(kb, Folding<true>{});
        for (; kb < num_k; kb += kHalf) pass(kb, Folding<false>{});
    } else {
        for (int kb = 0; kb < num_k; kb += kHalf) pass(kb, Folding<false>{});
    }
}

// The unsplit epilogue, consumer threads: the tile's positions are finished half by each
// warpgroup (the gate's j < kN / 16, the up's the rest); each hands the other its sums of the
// other's half as float4 in fragment order through the drained ring, stages silu x up as fp16 C
// rows for its own half and, after a barrier, every consumer thread stores whole rows with 16-byte
// stores. (v21: the up warpgroup handed over all its sums and the gate warpgroup alone finished.)
// acc[4j + {0,1,2,3}]: wgmma rows (n) row and row + 8, columns (m) 8j + 2 tig and + 1; thread u
// of each warpgroup holds the same positions of its product.
template <int kN>
__device__ __forceinline__ void store_tile(const GroupDesc& d, int m0, int n0, uint32_t ring, const float (&acc)[kN / 2]) {
    const int cthread = threadIdx.x - kProducerThreads;
    const int operand = cthread / kOperandThreads;
    const int u = cthread % kOperandThreads, lane = cthread % 32;
    const int row = (u / 32) * 16 + lane / 4, tig = lane % 4;
    constexpr int kHalfJ = kN / 16;  // positions j < kHalfJ: the gate warpgroup's to finish
    // NOTE: position j's float4s sit at [j][thread u] from the ring's start whichever warpgroup
    // wrote them (the halves do not overlap); C is staged at C_STAGE_OFFSET.
    const uint32_t c_stage = ring + C_STAGE_OFFSET;
    consumer_sync();  // NOTE: every consumer warp's last wgmma has read its stage before the ring is overwritten
    if (cthread == 0) NVFP4_MARK(8);
    #pragma unroll
    for (int j = 0; j < kN / 8; ++j)
        if ((j < kHalfJ) != (operand == 0))  // NOTE: the other warpgroup's half
            st_shared_f4(ring + (j * kOperandThreads + u) * 16, acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
    consumer_sync();  // NOTE: both halves' sums are in shared memory before either warpgroup reads them
    if (cthread == 0) NVFP4_MARK(9);
    #pragma unroll
    for (int j = 0; j < kN / 8; ++j) {
        if ((j < kHalfJ) == (operand == 0)) {  // NOTE: this warpgroup's half
            const float4 other = ld_shared_f4(ring + (j * kOperandThreads + u) * 16);
            const float4 mine = make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
            const float4 gate = operand == 0 ? mine : other, up = operand == 0 ? other : mine;
            const uint32_t at = c_stage + (8 * j + 2 * tig) * C_ROW_BYTES + row * 2;
            st_shared_half(at, silu_times(gate.x, up.x));
            st_shared_half(at + C_ROW_BYTES, silu_times(gate.y, up.y));
            st_shared_half(at + 16, silu_times(gate.z, up.z));
            st_shared_half(at + C_ROW_BYTES + 16, silu_times(gate.w, up.w));
        }
    }
    consumer_sync();  // NOTE: the whole C tile is staged before any row of it is stored (rows past M are not)
    if (cthread == 0) NVFP4_MARK(10);
    store_staged_c(d, cthread, m0, n0, c_stage, 0, kN);
}

// Where tile `tile` of a launch lies: its batch, M tile, first row of M and of N, and K blocks.
struct TilePlace { int g, t, m0, n0, blocks; };
template <int kGroups>
__device__ __forceinline__ TilePlace place_of(const Problem<kGroups>& problem, int tile) {
    int g = 0;
    while (g + 1 < problem.num_groups && tile >= problem.groups[g + 1].tile_begin) ++g;
    const GroupDesc& d = problem.groups[g];
    const int local = tile - d.tile_begin;
    const int tiles_n = d.n / BLOCK_N;
    const int t = local / tiles_n;
    return {g, t, t * d.m_tile_rows, (local % tiles_n) * BLOCK_N, d.k / BLOCK_K};
}

// ---------------------------------------------------------------- tails through L2
// This thread's float4 j of its operand's part of `tile`'s tail partial: [operand][j][thread u],
// so a warp's 32 threads touch 512 contiguous bytes per j, written and read in the same order.
template <int kN>
__device__ __forceinline__ float* tail_partial_at(const Tails& tails, int tile, int cthread) {
    const int operand = cthread / kOperandThreads, u = cthread % kOperandThreads;
    return tails.partials + static_cast<int64_t>(tile) * (2 * kN / 8 * kOperandThreads * 4) +
           (operand * (kN / 8) * kOperandThreads + u) * 4;
}

// A helper CTA's consumers: the tails of tiles h, h + helpers, ... in turn, each from a zeroed
// accumulator; its sums go from registers to the tile's partial, then the tile's flag is raised.
// `splits`: the CTAs of each tile (1, or v32's 2 of a split launch with helpers: tail_blocks_of).
// v38: kDependent (kTailsEarly): the flag is raised only after griddepcontrol.wait, so the prepass's zeroing
// of it comes first (a 1 overwritten by a late 0 would leave the tile CTA waiting for ever).
template <int kGroups, int kN, bool kDependent>
__device__ __forceinline__ void consume_tails(const Problem<kGroups>& problem, int helper, int splits, uint32_t ring,
                                              const uint8_t* ring_generic, uint32_t full, uint32_t empty) {
    const Tails& tails = problem.tails;
    const int cthread = threadIdx.x - kProducerThreads;
    int pos = 0;
    for (int i = 0; i < tails.per_helper; ++i) {
        const int tile = helper + i * tails.helpers;
        if (tile >= problem.num_tiles) break;
        const TilePlace p = place_of(problem, tile);
        const int tail = tail_blocks_of(p.blocks, tails.per_helper, splits);
        float acc[kN / 2];
        #pragma unroll
        for (int v = 0; v < kN / 2; ++v) acc[v] = 0.f;
        mma_blocks<kN>(acc, tail, pos, p.n0, ring, ring_generic, full, empty);
        pos += tail;
        float* const part = tail_partial_at<kN>(tails, tile, cthread);
        #pragma unroll
        for (int j = 0; j < kN / 8; ++j)
            *reinterpret_cast<float4*>(part + j * kOperandThreads * 4) =
                make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
        // NOTE: CUTLASS's generic-barrier pattern: the CTA barrier orders every consumer thread's
        // stores before thread 0's gpu-scope release, which carries them (cumulativity) to the tile
        // CTA's acquire.
        consumer_sync();
        if (cthread == 0) {
            if constexpr (kDependent) wait_for_prepass();
            flag_release(tails.flags + tile);
            NVFP4_MARK(i < 2 ? 11 + i : 13);
        }
    }
}

// A tile CTA in a launch with tails: waits for its tail's flag, then adds the tail's partial to
// its accumulators (its first blocks' sums + the tail's: a fixed order). v52: the tiles a helper serves last.
// v38: kDependent (kTailsEarly): the flag is read only after griddepcontrol.wait (not the previous call's 1
// before this call's prepass zeroed it).
template <int kN, bool kDependent>
__device__ __forceinline__ void add_tail(const Tails& tails, int tile, float (&acc)[kN / 2]) {
    const int cthread = threadIdx.x - kProducerThreads;
    if (cthread == 0) {
        if constexpr (kDependent) wait_for_prepass();
        while (flag_acquire(tails.flags + tile) == 0u) {
        }
        NVFP4_MARK(7);
    }
    consumer_sync();  // NOTE: pairs with thread 0's acquire: the partial is visible to every consumer thread after it
    const float* const part = tail_partial_at<kN>(tails, tile, cthread);
    constexpr int kBatch = 8;  // NOTE: float4 loads in flight before the adds (32 registers; the fragments are dead)
    #pragma unroll
    for (int j0 = 0; j0 < kN / 8; j0 += kBatch) {
        float4 v[kBatch];
        #pragma unroll
        for (int j = 0; j < kBatch; ++j)
            if (j0 + j < kN / 8) v[j] = __ldcg(reinterpret_cast<const float4*>(part + (j0 + j) * kOperandThreads * 4));
        #pragma unroll
        for (int j = 0; j < kBatch; ++j) {
            if (j0 + j < kN / 8) {
                acc[4 * (j0 + j)] += v[j].x; acc[4 * (j0 + j) + 1] += v[j].y;
                acc[4 * (j0 + j) + 2] += v[j].z; acc[4 * (j0 + j) + 3] += v[j].w;
            }
        }
    }
}

// v38: a kTailsEarly CTA's first `count` (<= kEarlyBlocks) K blocks of A, K blocks kb0 .. of M tile t,
// decoded by all kThreads threads into ring slots 0 .. count - 1: the bytes the producer's bulk copy of
// the prepass's tile would have put there (a16_offset less the tile's base: row r at r x 128, chunk c at
// (c ^ r % 8) x 16), rows past M as zeros, by the prepass's own load_a_line and decode_a_line. Line i of
// a thread is task threadIdx.x + i x kThreads: half j fastest, then the row, then the block, so a warp's
// loads cover 16 rows' 32 bytes; every load is issued before the first decode.
// NOTE: ordinary stores that wgmma (the async proxy) reads next: each writing thread fences here, before
// the CTA barrier the caller puts between these stores and the consumers' first wgmma.
template <int kN>
__device__ __forceinline__ void decode_early_a(const GroupDesc& d, int t, int kb0, int count, uint32_t ring) {
    constexpr int kLines = kEarlyBlocks * kN * 2;
    constexpr int kPerThread = (kLines + kThreads - 1) / kThreads;
    ALine line[kPerThread];
    #pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
        const int task = threadIdx.x + i * kThreads;
        const int r = (task >> 1) % kN, f = task / (2 * kN);
        const int row = t * d.m_tile_rows + r;
        if (f < count && row < d.m) line[i] = load_a_line(d, row, kb0 + f);
    }
    #pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
        const int task = threadIdx.x + i * kThreads;
        const int j = task & 1, r = (task >> 1) % kN, f = task / (2 * kN);
        if (f < count) {  // NOTE: then task < kLines (count <= kEarlyBlocks)
            uint32_t out[4][4] = {};  // NOTE: zeros for rows past M, as the prepass writes them
            if (t * d.m_tile_rows + r < d.m) decode_a_line(line[i], j, out);
            const uint32_t at = ring + f * STAGE_BYTES + r * 128;
            #pragma unroll
            for (int s = 0; s < 4; ++s)
                st_shared_u4(at + (((2 * s + j) ^ (r % 8)) * 16), out[s][0], out[s][1], out[s][2], out[s][3]);
        }
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// NOTE: one CTA per SM; 384 threads at launch get 168 registers each, then setmaxnreg moves them
// from the producer warpgroup (40) to the consumers (232).
// NOTE: one instantiation per tile height kN (v13: one kernel switching among five consumer
// loops): every tile of a launch runs wgmma N = kN, the launch's m_tile_rows; the last M tile's
// rows past M are zeros in the prepass's tile and are not stored.
// NOTE: and one per mode (v14: both epilogues in every kernel): kSplit launches have S > 1, the
// others S = 1, so an unsplit kernel never reads the split count; kTails launches add helper CTAs.
// NOTE: v32's kSplitTails: a kSplit launch (S = 2) with helper CTAs FIRST in blockIdx (0 .. helpers - 1,
// a multiple of S, so a tile's S CTAs stay one cluster and the split stays the cluster rank), then the
// tiles' CTAs. No cooperative launch (its pairing with a cluster launch is not relied on): a split CTA
// waits only for a helper of a lower blockIdx, which the in-order dispatch of a one-wave launch (the
// host checks every cluster fits at once) has placed before it.
// NOTE: v38's kTailsEarly: kTails with the helpers first in blockIdx (kSplitTails' order and argument: a
// tile CTA waits only for a helper of a lower blockIdx, placed before it), launched as the prepass's
// programmatic dependent without the cooperative attribute (whose launch would need every CTA placeable
// at once: v37's cooperative dependent started only after its prepass). The CTA starts while the prepass
// may still run: barriers, B's first kEarlyBlocks stages, and their A decoded by the CTA itself (inputs
// nothing in the call writes), then griddepcontrol.wait before anything the prepass writes is touched
// (the producer's first bulk copy of fp16 A; the tail flags: consume_tails, fold_step).
template <int kGroups, int kN, int kMode, bool kHandoff = false>
__global__ void __launch_bounds__(kThreads, 1)
dual_gemm_kernel(const __grid_constant__ Problem<kGroups> problem) {
    extern __shared__ uint8_t smem_raw[];
    // NOTE: the 128-byte swizzle pattern repeats every 1024 bytes; the descriptor assumes tiles
    // that start on such a boundary (base offset 0).
    const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
    const uint32_t ring = (smem_base + 1023u) & ~1023u;
    const uint8_t* ring_generic = smem_raw + (ring - smem_base);  // the same bytes, for plain loads
    const uint32_t full = ring + kStages * STAGE_BYTES, empty = full + 8 * kStages;
    // v73: the S = 2 handoff's barriers: the consumers' pieces staged, the peer's word that its free halves may be
    // written, the peer's gate pieces and its up pieces landed here (each counting 32 KB)
    const uint32_t staged = empty + 8 * kStages, ready = staged + 8, received1 = staged + 16, received2 = staged + 24;
    constexpr int n_cols = kN;  // wgmma's N for every tile of the launch
    if (threadIdx.x == 0) NVFP4_MARK(2);

    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            mbar_init(full + 8 * s, kFullArrivals);
            mbar_init(empty + 8 * s, kEmptyArrivals);
        }
        if constexpr (kHandoff) {
            mbar_init(staged, kConsumerThreads);
            mbar_init(ready, 1);
            mbar_init(received1, 1);
            mbar_init(received2, 1);
        }
        // NOTE: makes the initialised barriers visible to the async proxy (the bulk copies' completion).
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        if constexpr (kHandoff) {
            // NOTE: v73: the received barriers expect the peer's bytes from the start (its copies come after the
            // cluster barrier's phase 0, which follows this)
            mbar_arrive_expect_tx(received1, 2 * 8 * kOperandThreads * 16);
            mbar_arrive_expect_tx(received2, 2 * 8 * kOperandThreads * 16);
        }
    }
    __syncthreads();  // NOTE: the producer warpgroup leaves below, thread 0 after its copies

    constexpr bool kHelpers = kMode == kTails || kMode == kSplitTails || kMode == kTailsEarly;
    constexpr bool kHelpersFirst = kMode == kSplitTails || kMode == kTailsEarly;
    // the prepass's programmatic dependent (v64: the split launches too, kSplit and kSplitTails; v66: every launch
    // but kTails, whose cooperative attribute the helpers' flags need)
    constexpr bool kDependent = kMode == kTailsEarly || kMode == kSplit || kMode == kSplitTails || kMode == kUnsplit;
    constexpr bool kSplits = kMode == kSplit || kMode == kSplitTails;
    // v65: the first lap split around the wait (produce_dependent, v63) in the split launches only: v63 measured it
    // 0.979x on kTailsEarly's 512x3072x7168, v64 1.022x on the split clusters' 256x4096x7168
    constexpr bool kSplitLap = kSplits;
    // NOTE: the tiles' CTAs per tile: S for split launches, 1 otherwise (tail_blocks_of's balance)
    const int splits = kSplits ? problem.split_k.splits : 1;
    // v38: the blocks at the start of this CTA's first run (a tile CTA's first blocks, a helper's first
    // tail's) whose A it decoded itself, their B issued first; 0 in every other mode.
    int early = 0;
    if constexpr (kDependent) {
        const bool helper = static_cast<int>(blockIdx.x) < problem.tails.helpers;
        // NOTE: helper h < helpers <= num_tiles: its first tail is tile h's. v64: a split launch's tile has S CTAs.
        const int tile = helper ? static_cast<int>(blockIdx.x)
                                : (static_cast<int>(blockIdx.x) - problem.tails.helpers) / splits;
        const TilePlace p = place_of(problem, tile);
        const int tail = tail_blocks_of(p.blocks, problem.tails.per_helper, splits);
        const int kb0 = helper ? p.blocks - tail : 0, run = helper ? tail : p.blocks - tail;
        early = run < kEarlyBlocks ? run : kEarlyBlocks;
        const GroupDesc& d = problem.groups[p.g];
        if (threadIdx.x == 0) {
            // NOTE: the maps are kernel parameters: fetched into the TMA unit's cache while the CTA decodes.
            #pragma unroll
            for (int w = 0; w < 2; ++w)
                asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&d.b_map[w])) : "memory");
            // NOTE: fresh slots (the ring's first lap): no empty barrier to wait for. A stage expects B's
            // bytes only; its A is in the ring before the barrier below, which every consumer passes
            // before its first wait on a full barrier.
            const int64_t scale_tile = scale_tile_of(d, p.n0, kb0);
            for (int kb = 0; kb < early; ++kb) {
                mbar_arrive_expect_tx(full + 8 * kb, 2 * B_BYTES);
                copy_b(d, stage_of(ring, kb), p.n0, kb0 + kb, scale_tile + static_cast<int64_t>(kb) * B_SCALE_BYTES,
                       full + 8 * kb);
            }
        }
        if constexpr (kEarlyBlocks > 0) decode_early_a<kN>(d, p.t, kb0, early, ring);
        __syncthreads();  // NOTE: the early blocks' A, fenced by every writer, before any consumer's wgmma reads it
        if (threadIdx.x == 0) NVFP4_MARK(3);
    }
    if constexpr (kHelpers) {
        const int first_helper = kHelpersFirst ? 0 : problem.num_tiles;  // v32: helpers first in kSplitTails (v38: kTailsEarly)
        const bool is_helper = kHelpersFirst ? static_cast<int>(blockIdx.x) < problem.tails.helpers
                                             : static_cast<int>(blockIdx.x) >= problem.num_tiles;
        if (is_helper) {  // a helper: tails of tiles h, h + helpers, ...
            const Tails& tails = problem.tails;
            const int helper = static_cast<int>(blockIdx.x) - first_helper;
            if (threadIdx.x < kProducerThreads) {
                asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegisters));
                if (threadIdx.x != 0) return;
                // v65: kTailsEarly's helper waits first (v52's); v68: kSplitTails' too (v66's marks on 256x3072x4096: with
                // the split lap its flags rose 1.4-1.7 us later than v52's, the last after the tile CTAs' loops)
                if constexpr (kDependent) {
                    wait_for_prepass();
                    NVFP4_MARK(4);
                }
                int pos = 0;
                for (int i = 0; i < tails.per_helper; ++i) {
                    const int tile = helper + i * tails.helpers;
                    if (tile >= problem.num_tiles) break;
                    const TilePlace p = place_of(problem, tile);
                    const int tail = tail_blocks_of(p.blocks, tails.per_helper, splits);
                    produce(problem.groups[p.g], p.t, p.n0, n_cols, p.blocks - tail, tail, pos, ring, full, empty);
                    pos += tail;
                }
                return;
            }
            asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegisters));
            consume_tails<kGroups, kN, kDependent>(problem, helper, splits, ring, ring_generic, full, empty);
            return;
        }
    }

    // NOTE: a tile's S CTAs are adjacent in blockIdx and form one cluster of S along x, so the
    // split is also the CTA's rank in its cluster (reduce_in_cluster's mapa targets); in kSplitTails
    // the helpers before them are a multiple of S.
    const int cta = static_cast<int>(blockIdx.x) - (kHelpersFirst ? problem.tails.helpers : 0);
    const int tile = cta / splits;
    const int split = cta % splits;
    const TilePlace p = place_of(problem, tile);
    const GroupDesc& d = problem.groups[p.g];
    // This CTA's K blocks: split's share of the batch's, as even as integers allow (at least
    // kMinBlocksPerSplit once S > 1); the last split ends at the last block. With tails, all but
    // the tail's, shared by the S splits (v32) or run by the one tile CTA.
    const int blocks = kHelpers ? p.blocks - tail_blocks_of(p.blocks, problem.tails.per_helper, splits) : p.blocks;
    const int kb_first = split * blocks / splits;
    const int num_k = (split + 1) * blocks / splits - kb_first;
    // v73: the S = 2 handoff (handoff_of) at kN = 256; every thread of both CTAs arrives on the cluster barrier's phase
    // 0 (the handoff's barriers initialised), waited for before the first remote access (handoff_send) and the last
    // barrier (handoff_finish)
    // v80: only the kHandoff kernels (kSplit and kSplitTails at kN = 256), which the host launches only where handoff_of
    // is on: they never run v72's exchange, and the other kernels carry none of the handoff's code
    static_assert(!kHandoff || (kSplits && kN == 256), "the handoff is the S = 2 split launches' at 256-row tiles");
    const Handoff handoff = kHandoff ? handoff_of(blocks) : Handoff{false, 0, 0};
    const int wide = split == 0 ? handoff.y0 : blocks - handoff.y1;  // the wide range's blocks (kHandoff)
    if constexpr (kHandoff) cluster_arrive_relaxed();

    if (threadIdx.x < kProducerThreads) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegisters));
        if (threadIdx.x == 0) {
            // v63: a dependent CTA's first lap split around the wait (produce_dependent); v65: the split launches' only,
            // kTailsEarly's producer waits first and issues its lap after (v52's)
            if constexpr (kSplitLap) {
                if constexpr (kHandoff) {  // v73: the wide range (split 1's halves swapped), then the narrowed one (own rows)
                    produce_dependent(d, p.t, p.n0, n_cols, split == 0 ? 0 : handoff.y1, wide, ring, full, empty, split == 1);
                    produce(d, p.t, p.n0, n_cols / 2, handoff.y0, handoff.y1 - handoff.y0, wide, ring, full, empty,
                            split * (n_cols / 2));
                    // NOTE: v81: the rounds by this thread once its last copy is issued. That copy (ring position
                    // wide + narrowed - 1) waited for position wide + narrowed - 1 - kStages to be read, at latest the
                    // wide range's last block (narrowed <= kStages, asserted at handoff_of), so the thread is here
                    // before the pieces are staged. v80 ran the rounds on thread 32: a warp alive beside consumer
                    // warps 1 and 5 through the whole wide range, in a try_wait loop.
                    handoff_send<kN>(split, ring, staged, ready, received1, received2);
                } else {
                    produce_dependent(d, p.t, p.n0, n_cols, kb_first, num_k, ring, full, empty);
                }
            } else {
                if constexpr (kDependent) {
                    wait_for_prepass();
                    NVFP4_MARK(4);
                }
                produce(d, p.t, p.n0, n_cols, kb_first, num_k, 0, ring, full, empty);
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegisters));
    float acc[kN / 2];  // A.B1^T (warpgroup 0) or A.B2^T (warpgroup 1), x 2^-7
    #pragma unroll
    for (int i = 0; i < kN / 2; ++i) acc[i] = 0.f;
    if constexpr (kMode == kTails || kMode == kTailsEarly) {
        // v50: the tail folded into the loop from block `begin` on: helper tile % helpers runs this tile's tail as
        // its (tile / helpers)-th. v51: `begin` from v50's marks: the acquire (block begin - 2) after
        // (i + 1) (t + kTailCostBlocks - 1) + 6 of this loop's blocks; v44's marks (t = 24) put the helpers' first
        // and second flags at 32.8 and 59.9 blocks at the latest, the acquires at 34 and 62. begin even (the fold's
        // loop is whole passes). v52: only where the helper runs a later tail after this one (i < c - 1) and the
        // window ends within the loop; the tiles it serves last read their tails after the loop (add_tail).
        const int i = tile / problem.tails.helpers;
        const int t = tail_blocks_of(p.blocks, problem.tails.per_helper, 1);
        const int begin = ((i + 1) * (t + kTailCostBlocks - 1) + 8) & ~1;
        if (i < problem.tails.per_helper - 1 && begin + kFoldPieces <= num_k) {
            mma_blocks<kN, true, kDependent>(acc, num_k, 0, p.n0, ring, ring_generic, full, empty,
                                             Fold{tail_partial_at<kN>(problem.tails, tile, threadIdx.x - kProducerThreads),
                                                  problem.tails.flags + tile, begin});
        } else {
            mma_blocks<kN>(acc, num_k, 0, p.n0, ring, ring_generic, full, empty);
            add_tail<kN, kDependent>(problem.tails, tile, acc);
        }
    } else {
        // NOTE: v77: the handoff's wide range through this one call site: v73 called mma_blocks for it from a call site
        // of its own, whose inlined loop ptxas built otherwise (24 of v72's SHF.L as IMAD.SHL, 277 instructions against
        // 285) and ran ~4% slower a block (v73's marks)
        mma_blocks<kN>(acc, kHandoff ? wide : num_k, 0, p.n0, ring, ring_generic, full, empty);
    }
    if constexpr (kHandoff) {
        {  // v73: after the wide range, the peer's rows staged, the narrowed range, this share finished
            if (threadIdx.x == kProducerThreads) NVFP4_MARK(14);
            const int cthread = threadIdx.x - kProducerThreads;
            const int operand = cthread / kOperandThreads, u = cthread % kOperandThreads;
            consumer_sync();  // NOTE: both warpgroups' last wide wgmma has read its slot before the free halves are written
            handoff_stage<kN>(u, operand, ring, acc, staged);
            if (cthread == 0) NVFP4_MARK(9);
            mma_blocks<kN, false, false, 0>(acc, handoff.y1 - handoff.y0, wide, p.n0, ring, ring_generic, full, empty);
            if (threadIdx.x == kProducerThreads) NVFP4_MARK(5);
            constexpr bool kWithTail = kMode == kSplitTails;
            const float* tail = kWithTail ? tail_partial_at<kN>(problem.tails, tile, 0) : nullptr;
            const uint32_t* flag = kWithTail ? problem.tails.flags + tile : nullptr;
            handoff_finish<kN, kWithTail>(d, split, cthread, p.m0, p.n0, ring, acc, tail, flag, received1, received2);
            if (threadIdx.x == kProducerThreads) NVFP4_MARK(6);
            return;
        }
    }
    if (threadIdx.x == kProducerThreads) NVFP4_MARK(5);
    if constexpr (kSplits) {
        const int cthread = threadIdx.x - kProducerThreads;
        if constexpr (kMode == kSplitTails)
            reduce_in_cluster<kN, true>(d, splits, split, cthread, p.m0, p.n0, ring, acc,
                                        tail_partial_at<kN>(problem.tails, tile, 0), problem.tails.flags + tile);
        else
            reduce_in_cluster<kN, false>(d, splits, split, cthread, p.m0, p.n0, ring, acc, nullptr, nullptr);
        if (threadIdx.x == kProducerThreads) NVFP4_MARK(6);
        return;
    }
    store_tile<kN>(d, p.m0, p.n0, ring, acc);
    if (threadIdx.x == kProducerThreads) NVFP4_MARK(6);
}

// S for a launch of `tiles` tiles whose shortest batch has `min_blocks` K blocks: the most splits
// that keep the launch in one wave (tiles x S <= SMs; one resident CTA per SM) with at least
// kMinBlocksPerSplitWave K blocks each.
// NOTE: fitted to splitk_sweep.py on dual_gemm v3 and gemm v6 (H200): on all seven benchmark shapes
// the rule picks the measured best S or one within 4% of it.
// A second wave, or splits under ~24 blocks, cost more than the extra parallelism gave on every
// shape measured: each split pays the kernel's prologue, its fill and the finisher's read of its
// partial tile.
// NOTE: v7 adds one condition: all `tiles` clusters of S CTAs resident at once (clusters live
// inside one GPC, so S x clusters can fall short of the SM count); cluster_capacity(S) says how many.
static int cluster_capacity(int S);
static int choose_splits(int tiles, int min_blocks, int sms) {
    constexpr int kMinBlocksPerSplitWave = 24;
    int best = 1;
    for (int S = 2; S <= kMaxSplits && static_cast<long>(tiles) * S <= sms && min_blocks / S >= kMinBlocksPerSplitWave; ++S)
        if (tiles <= cluster_capacity(S)) best = S;
    return best;
}

constexpr int kDescWords = 18;  // per batch on the host: 8 pointer slots, m, n, k, 7 row strides

// Fills one chunk's Problem (up to kMaxGroups batches from `first`) with M tiles of at most
// `max_rows` rows (one of kTileRows), workspace pointers left null; returns the bytes of tiled fp16
// A its batches need, or -2 (shape not supported).
static int64_t fill_chunk_rows(const int64_t* desc, int num_groups, int first, int sms, int max_rows,
                               Problem<kMaxGroups>& problem, int& decode_blocks) {
    problem.num_groups = num_groups - first < kMaxGroups ? num_groups - first : kMaxGroups;
    int tiles = 0, min_blocks = 1 << 30;
    int64_t bytes = 0;
    decode_blocks = 0;
    for (int g = 0; g < problem.num_groups; ++g) {
        const int64_t* p = desc + static_cast<int64_t>(first + g) * kDescWords;
        GroupDesc& d = problem.groups[g];
        d.a = reinterpret_cast<const uint8_t*>(p[0]);
        d.b[0] = reinterpret_cast<const uint8_t*>(p[1]);
        d.b[1] = reinterpret_cast<const uint8_t*>(p[2]);
        d.sfa = reinterpret_cast<const uint8_t*>(p[3]);
        d.sfb_blocked[0] = reinterpret_cast<const uint8_t*>(p[4]);
        d.sfb_blocked[1] = reinterpret_cast<const uint8_t*>(p[5]);
        d.c = reinterpret_cast<__half*>(p[6]);
        d.a16 = nullptr;  // NOTE: desc slot 7 (v2's a16 pointer) is not read: the launcher places the tiles
        d.m = static_cast<int>(p[8]);
        d.n = static_cast<int>(p[9]);
        d.k = static_cast<int>(p[10]);
        d.a_row = p[11]; d.b_row[0] = p[12]; d.b_row[1] = p[13]; d.sfa_row = p[14]; d.c_row = p[17];
        // NOTE: N a multiple of 128, not only of BLOCK_N: the blocked scales come in 128-row tiles.
        if (d.n % kScaleTileRows != 0 || d.k % BLOCK_K != 0 || d.m < 1 || d.k < BLOCK_K) return -2;
        // NOTE: a tensor map needs a 16-byte aligned base and row stride: B1's and B2's; the prepass reads A's rows 16 bytes and sfa's 2 bytes at a time; the bulk
        // copies of the blocked scales need 16-byte sources.
        for (int w = 0; w < 2; ++w) {
            if (d.b_row[w] % 16 != 0 || reinterpret_cast<uintptr_t>(d.b[w]) % 16 != 0) return -2;
            if (reinterpret_cast<uintptr_t>(d.sfb_blocked[w]) % 16 != 0) return -2;
        }
        if (d.a_row % 16 != 0 || reinterpret_cast<uintptr_t>(d.a) % 16 != 0) return -2;
        if (d.sfa_row % 2 != 0 || reinterpret_cast<uintptr_t>(d.sfa) % 2 != 0) return -2;
        // NOTE: at most max_rows (BLOCK_M_MAX: wgmma's largest N, 128 accumulator registers a
        // thread); M split evenly, each tile one of kTileRows' heights (<= max_rows).
        d.m_tiles = (d.m + max_rows - 1) / max_rows;
        d.m_tile_rows = tile_rows_at_least((d.m + d.m_tiles - 1) / d.m_tiles);
        d.tile_begin = tiles;
        tiles += d.m_tiles * (d.n / BLOCK_N);
        d.decode_begin = decode_blocks;
        decode_blocks += (decode_threads_of(d) + kDecodeThreads - 1) / kDecodeThreads;
        bytes += static_cast<int64_t>(d.m_tiles) * d.m_tile_rows * d.k * 2;
        if (d.k / BLOCK_K < min_blocks) min_blocks = d.k / BLOCK_K;
    }
    // NOTE: v14 runs one wgmma N per launch (the kernel instantiation for its tile height), so its
    // batches must share one: they do whenever they share M, as the L batches of one A tensor do.
    for (int g = 1; g < problem.num_groups; ++g)
        if (problem.groups[g].m_tile_rows != problem.groups[0].m_tile_rows) return -2;
    problem.num_tiles = tiles;
    problem.split_k.splits = choose_splits(tiles, min_blocks, sms);
    problem.tails = Tails{0, 0, nullptr, nullptr};
    return bytes;
}

// Tails for an S = 1 launch of `tiles` tiles (their shortest batch `min_blocks` K blocks) that
// leaves SMs idle: c = the fewest tails per helper that the idle SMs can hold, helpers = tiles / c
// rounded up; none (helpers 0) when a tail would be shorter than kMinTailBlocks.
// NOTE: the tile CTAs then run c / (c + 1) of their blocks and each helper c tails of 1 / (c + 1):
// 512x3072x7168 (96 tiles, 36 idle SMs) takes c = 3, 32 helpers, tails of 28 of 112 blocks, so the
// launch's longest CTA runs 84 blocks instead of 112.
static Tails choose_tails(int tiles, int min_blocks, int sms) {
    Tails tails{0, 0, nullptr, nullptr};
    if (tiles >= sms) return tails;
    const int per_helper = (tiles + (sms - tiles) - 1) / (sms - tiles);
    if (tail_blocks_of(min_blocks, per_helper, 1) < kMinTailBlocks) return tails;
    tails.per_helper = per_helper;
    tails.helpers = (tiles + per_helper - 1) / per_helper;
    return tails;
}

// v32: helpers for a split launch (S CTAs a tile) that leaves SMs idle: c = the fewest tails per
// helper that fits the idle SMs with the helpers a multiple of S (whole clusters, helpers first:
// dual_gemm_kernel), every cluster resident at once; none where the kernel has no such instantiation
// (S = 2 and 256-row tiles only: reduce_in_cluster adds the tail in its S = 2 sum) or a tail would be
// under kMinSplitTailBlocks. Whether the launch pays is launch_cost's call (fill_chunk).
// NOTE: 256x3072x4096 (48 tiles x S = 2 on 96 SMs, 36 idle): c = 2, 24 helpers, tails of 8 of 64
// blocks, so each split CTA runs 28 blocks instead of 32 and a helper 2 x 8.
constexpr int kMinSplitTailBlocks = 4;  // NOTE: below this a tail moves under 2 blocks off each split CTA
static Tails choose_split_tails(int tiles, int S, int rows, int min_blocks, int sms) {
    Tails tails{0, 0, nullptr, nullptr};
    const int idle = sms - tiles * S;
    if (S != 2 || rows != BLOCK_M_MAX || idle < S) return tails;
    for (int per_helper = (tiles + idle - 1) / idle; per_helper <= tiles; ++per_helper) {
        const int helpers = ((tiles + per_helper - 1) / per_helper + S - 1) / S * S;
        if (helpers > idle) continue;
        if (tail_blocks_of(min_blocks, per_helper, S) < kMinSplitTailBlocks) return tails;
        if ((tiles * S + helpers) / S > cluster_capacity(S)) return tails;
        tails.per_helper = per_helper;
        tails.helpers = helpers;
        return tails;
    }
    return tails;
}

// The longest CTA of a single-wave launch in K blocks of a 256-row tile (kBlockCostFixedRows): its
// K loop (with tails, the longer of a tile CTA's blocks before its tail and a helper's tails with
// their cost: tail_blocks_of balances the two), then what follows the loop: the split-K sum (S > 1,
// its epilogue included), or the unsplit epilogue; with tails, the tail's merge (v32: every
// candidate's after-loop work priced, from the H200 timelines; v24 priced the split's only).
// NOTE: with S > 1 and helpers (v32) each split CTA merges its 1 / S of the tail's partial inside the
// sum, its reads issued before the cluster barrier: priced as 1 / S of a tile CTA's merge, as if not
// overlapped at all (an upper bound until a timeline measures it).
static double launch_cost(const Problem<kMaxGroups>& problem) {
    int blocks = 0;
    for (int g = 0; g < problem.num_groups; ++g)
        if (problem.groups[g].k / BLOCK_K > blocks) blocks = problem.groups[g].k / BLOCK_K;
    const int rows = problem.groups[0].m_tile_rows;
    const double per_block = static_cast<double>(kBlockCostFixedRows + rows) / (kBlockCostFixedRows + BLOCK_M_MAX);
    const double height = static_cast<double>(rows) / BLOCK_M_MAX;  // after-loop costs scale with the rows
    const int S = problem.split_k.splits;
    int loop = blocks;
    double merge = 0.0;
    if (problem.tails.helpers > 0) {
        const int c = problem.tails.per_helper, t = tail_blocks_of(blocks, c, S);
        const int own = (blocks - t + S - 1) / S, helper = c * (t + kTailCostBlocks);
        loop = own > helper ? own : helper;
        // NOTE: v52: at S = 1 the tiles a helper serves last still merge after their loops (the others fold)
        merge = kTailMergeCostBlocks * height / S;
    } else {
        loop = (blocks + S - 1) / S;
    }
    const double after = S > 1 ? kSplitCostBlocks * 2.0 * (S - 1) / S * height : kEpilogueCostBlocks * height;
    return loop * per_block + after + merge;
}

// Fills one chunk's Problem as fill_chunk_rows with M tiles of at most BLOCK_M_MAX rows. When that
// launch leaves SMs idle, the unsplit alternative (S = 1): the shortest tiles of kTileRows whose
// tile count still fits one wave (tallest first, stopping at the first that does not fit), with
// tails where SMs stay idle; it replaces a split-K launch only if launch_cost says it is shorter.
// Returns as fill_chunk_rows.
// NOTE: gemm v11's change (halves and quarters of the tile there, 1.165x on 128x7168x2048), with
// every instantiated height a candidate (v19: 512x3072x7168 got 120 tiles of 104 rows; here its 96 tiles of 256
// rows are already the most that fit, a shorter height adding a third M tile per column).
// Shorter tiles decode B once more per extra M tile but need no reduction; v24 weighs that against
// the split's sum (v23 kept split-K whenever S > 1: 256x3072x4096 then ran on 96 SMs).
static int64_t fill_chunk(const int64_t* desc, int num_groups, int first, int sms, Problem<kMaxGroups>& problem,
                          int& decode_blocks) {
    const int64_t bytes = fill_chunk_rows(desc, num_groups, first, sms, BLOCK_M_MAX, problem, decode_blocks);
    if (bytes < 0 || problem.num_tiles * problem.split_k.splits >= sms) return bytes;
    if (problem.split_k.splits > 1) {  // v32: the split launch with helpers on its idle SMs, if that is shorter
        int min_blocks = 1 << 30;
        for (int g = 0; g < problem.num_groups; ++g)
            if (problem.groups[g].k / BLOCK_K < min_blocks) min_blocks = problem.groups[g].k / BLOCK_K;
        Problem<kMaxGroups> split_tails = problem;
        split_tails.tails = choose_split_tails(problem.num_tiles, problem.split_k.splits, problem.groups[0].m_tile_rows,
                                               min_blocks, sms);
        if (split_tails.tails.helpers > 0 && launch_cost(split_tails) < launch_cost(problem)) problem = split_tails;
    }
    Problem<kMaxGroups> unsplit = problem;
    unsplit.split_k.splits = 1;
    unsplit.tails = Tails{0, 0, nullptr, nullptr};
    int unsplit_blocks = decode_blocks;
    int64_t unsplit_bytes = bytes;
    if (unsplit.num_tiles < sms) {
        for (int i = kNumTileRows - 2; i >= 0; --i) {
            Problem<kMaxGroups> shorter;
            int shorter_blocks = 0;
            const int64_t shorter_bytes = fill_chunk_rows(desc, num_groups, first, sms, kTileRows[i], shorter, shorter_blocks);
            if (shorter_bytes < 0 || shorter.num_tiles > sms) break;
            shorter.split_k.splits = 1;
            unsplit = shorter;
            unsplit_blocks = shorter_blocks;
            unsplit_bytes = shorter_bytes;
        }
        int min_blocks = 1 << 30;
        for (int g = 0; g < unsplit.num_groups; ++g)
            if (unsplit.groups[g].k / BLOCK_K < min_blocks) min_blocks = unsplit.groups[g].k / BLOCK_K;
        unsplit.tails = choose_tails(unsplit.num_tiles, min_blocks, sms);
    }
    if (problem.split_k.splits > 1 && launch_cost(problem) <= launch_cost(unsplit)) return bytes;
    problem = unsplit;
    decode_blocks = unsplit_blocks;
    return unsplit_bytes;
}

// Bytes of a launch's tail partials (fp32, both products, a whole tile's positions per tile) and flags.
static int64_t tail_partial_bytes(const Problem<kMaxGroups>& problem) {
    return problem.tails.helpers > 0 ? static_cast<int64_t>(problem.num_tiles) * 2 * problem.groups[0].m_tile_rows * BLOCK_N * 4 : 0;
}
static int64_t tail_flag_bytes(const Problem<kMaxGroups>& problem) {
    return problem.tails.helpers > 0 ? (static_cast<int64_t>(problem.num_tiles) * 4 + 255) / 256 * 256 : 0;
}

// The kernel for a launch of kGroups batches whose tiles are `rows` rows (one of kTileRows), in
// mode `mode` (kUnsplit, kSplit: S > 1, kTails: helpers > 0).
// NOTE: kSplitTails exists for 256-row tiles only (choose_split_tails picks it for no other height);
// any other height returns null, which prepare_device skips and launch_chunk refuses.
// NOTE: v38: kTailsEarly exists for 256-row tiles only and takes every 256-row kTails launch (mode_of), so
// kTails has no 256-row instantiation (if constexpr: none is compiled).
template <int kGroups, int kN>
static void (*kernel_of_mode(int mode))(Problem<kGroups>) {
    if constexpr (kN == BLOCK_M_MAX) {
        return mode == kSplit ? dual_gemm_kernel<kGroups, kN, kSplit>
             : mode == kSplitTails ? dual_gemm_kernel<kGroups, kN, kSplitTails>
             : mode == kSplitHandoff ? dual_gemm_kernel<kGroups, kN, kSplit, true>
             : mode == kSplitTailsHandoff ? dual_gemm_kernel<kGroups, kN, kSplitTails, true>
             : mode == kTailsEarly ? dual_gemm_kernel<kGroups, kN, kTailsEarly>
             : mode == kUnsplit ? dual_gemm_kernel<kGroups, kN, kUnsplit> : nullptr;
    } else {
        return mode == kSplit ? dual_gemm_kernel<kGroups, kN, kSplit>
             : mode == kTails ? dual_gemm_kernel<kGroups, kN, kTails>
             : mode == kUnsplit ? dual_gemm_kernel<kGroups, kN, kUnsplit> : nullptr;
    }
}
template <int kGroups>
static void (*kernel_for(int rows, int mode))(Problem<kGroups>) {
    switch (rows) {
        case 32: return kernel_of_mode<kGroups, 32>(mode);
        case 64: return kernel_of_mode<kGroups, 64>(mode);
        case 96: return kernel_of_mode<kGroups, 96>(mode);
        case 128: return kernel_of_mode<kGroups, 128>(mode);
        case 160: return kernel_of_mode<kGroups, 160>(mode);
        case 192: return kernel_of_mode<kGroups, 192>(mode);
        default: return kernel_of_mode<kGroups, 256>(mode);
    }
}
// NOTE: v38: an unsplit launch with tails of 256-row tiles (512x3072x7168 among the benchmarks) is kTailsEarly.
static int mode_of(const Problem<kMaxGroups>& problem) {
    const bool helpers = problem.tails.helpers > 0;
    if (problem.split_k.splits > 1) {
        // v80: the handoff's kernels where every batch's split CTAs run it (the blocks they share: the kernel's
        // `blocks`, a tail's taken off); a kHandoff kernel never checks
        bool handoff = problem.split_k.splits == 2 && problem.groups[0].m_tile_rows == BLOCK_M_MAX;
        for (int g = 0; handoff && g < problem.num_groups; ++g) {
            const int all = problem.groups[g].k / BLOCK_K;
            const int blocks = helpers ? all - tail_blocks_of(all, problem.tails.per_helper, 2) : all;
            handoff = handoff_of(blocks).on;
        }
        if (handoff) return helpers ? kSplitTailsHandoff : kSplitHandoff;
        return helpers ? kSplitTails : kSplit;
    }
    if (!helpers) return kUnsplit;
    return problem.groups[0].m_tile_rows == BLOCK_M_MAX ? kTailsEarly : kTails;
}

static int prepare_device(int& device, int& sms) {
    cudaGetDevice(&device);
    static bool smem_opted_in[64] = {};
    static int sm_count[64] = {};
    if (device >= 64) return static_cast<int>(cudaErrorInvalidDevice);
    if (!smem_opted_in[device]) {  // NOTE: above 48 KB a kernel must opt in, once per device and instantiation
        for (int i = 0; i < kNumTileRows; ++i) {
            for (const int mode : {static_cast<int>(kUnsplit), static_cast<int>(kSplit), static_cast<int>(kTails),
                                   static_cast<int>(kSplitTails), static_cast<int>(kTailsEarly),
                                   static_cast<int>(kSplitHandoff), static_cast<int>(kSplitTailsHandoff)}) {
                // NOTE: kSplitTails and kTailsEarly below 256 rows, kTails at 256
                if (kernel_for<1>(kTileRows[i], mode) == nullptr) continue;
                cudaError_t err = cudaFuncSetAttribute(kernel_for<1>(kTileRows[i], mode),
                                                       cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
                if (err != cudaSuccess) return static_cast<int>(err);
                err = cudaFuncSetAttribute(kernel_for<kMaxGroups>(kTileRows[i], mode),
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
                if (err != cudaSuccess) return static_cast<int>(err);
            }
        }
        cudaDeviceGetAttribute(&sm_count[device], cudaDevAttrMultiProcessorCount, device);
        smem_opted_in[device] = true;
    }
    sms = sm_count[device] > 0 ? sm_count[device] : 1;
    return 0;
}

// Clusters of S CTAs of the GEMM kernel the current device holds at once (0 if it cannot say),
// asked once per device and S (both instantiations have the same threads and shared memory).
static int cluster_capacity(int S) {
    static int capacity[64][kMaxSplits + 1] = {};
    static bool asked[64][kMaxSplits + 1] = {};
    int device = 0;
    cudaGetDevice(&device);
    if (device >= 64 || S < 1 || S > kMaxSplits) return 0;
    if (!asked[device][S]) {
        cudaLaunchConfig_t config = {};
        cudaLaunchAttribute attribute;
        attribute.id = cudaLaunchAttributeClusterDimension;
        attribute.val.clusterDim.x = S;
        attribute.val.clusterDim.y = 1;
        attribute.val.clusterDim.z = 1;
        config.gridDim = dim3(S, 1, 1);
        config.blockDim = dim3(kThreads, 1, 1);
        config.dynamicSmemBytes = SMEM_BYTES;
        config.attrs = &attribute;
        config.numAttrs = 1;
        int clusters = 0;
        // NOTE: every instantiation has the same threads and shared memory: one answers for all.
        void (*const any_kernel)(Problem<1>) = kernel_for<1>(BLOCK_M_MAX, kSplit);
        if (cudaOccupancyMaxActiveClusters(&clusters, any_kernel, &config) != cudaSuccess) {
            cudaGetLastError();  // NOTE: a refused query must not surface as the next launch's error
            clusters = 0;
        }
        capacity[device][S] = clusters;
        asked[device][S] = true;
    }
    return capacity[device][S];
}

// B1's and B2's tensor maps of every batch of a chunk: N rows x K/2 bytes at the batch's row
// stride, copied as boxes of 64 rows x 32 bytes (one K block) that land densely, row r at r x 32.
// Returns 0, or -3 (no driver entry point) / -4 (the driver refused a map).
// NOTE: the entry point is fetched once through the runtime, so the extension links no libcuda.
static int encode_b_maps(Problem<kMaxGroups>& problem) {
    static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
    if (encode == nullptr) {
        void* fn = nullptr;
        cudaDriverEntryPointQueryResult found;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
                cudaSuccess || found != cudaDriverEntryPointSuccess || fn == nullptr)
            return -3;
        encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
    }
    for (int g = 0; g < problem.num_groups; ++g) {
        GroupDesc& d = problem.groups[g];
        for (int w = 0; w < 2; ++w) {
            const cuuint64_t dims[2] = {static_cast<cuuint64_t>(d.k / 2), static_cast<cuuint64_t>(d.n)};
            const cuuint64_t strides[1] = {static_cast<cuuint64_t>(d.b_row[w])};  // bytes from row to row
            const cuuint32_t box[2] = {BLOCK_K / 2, BLOCK_N};
            const cuuint32_t element_strides[2] = {1, 1};
            const CUresult r = encode(&d.b_map[w], CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<uint8_t*>(d.b[w]), dims,
                                      strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
            if (r != CUDA_SUCCESS) return -4;
        }
    }
    return 0;
}

// One chunk's kernel pair with a parameter of kGroups batches (chunk.num_groups <= kGroups).
template <int kGroups>
static cudaError_t launch_chunk(const Problem<kMaxGroups>& chunk, int decode_blocks, cudaStream_t stream) {
    Problem<kGroups> problem{};
    for (int g = 0; g < chunk.num_groups && g < kGroups; ++g) problem.groups[g] = chunk.groups[g];
    problem.num_groups = chunk.num_groups;
    problem.num_tiles = chunk.num_tiles;
    problem.split_k = chunk.split_k;
    problem.tails = chunk.tails;
    const int mode = mode_of(chunk);
    // v64: the split launches are programmatic dependents too (their prepass triggers them); v66: the unsplit too
    if (mode != kTails)
        decode_a_kernel<kGroups, true><<<decode_blocks, kDecodeThreads, 0, stream>>>(problem);
    else decode_a_kernel<kGroups, false><<<decode_blocks, kDecodeThreads, 0, stream>>>(problem);
    const cudaError_t err = cudaGetLastError();  // NOTE: the prepass's launch error, if any
    if (err != cudaSuccess) return err;
    void (*const kernel)(Problem<kGroups>) = kernel_for<kGroups>(problem.groups[0].m_tile_rows, mode);
    if (kernel == nullptr) return cudaErrorInvalidDeviceFunction;  // NOTE: the host rule never asks for one
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attributes[2];
    cudaLaunchAttribute& attribute = attributes[0];
    int num_attributes = 1;
    if (mode == kTails) {
        // NOTE: a tile CTA waits for its helper's flag: the cooperative launch guarantees every CTA
        // is resident (tiles + helpers <= SMs, one CTA per SM).
        attribute.id = cudaLaunchAttributeCooperative;
        attribute.val.cooperative = 1;
    } else if (mode == kTailsEarly) {
        // NOTE: v38: a programmatic dependent of the prepass just launched (captured: a programmatic edge in
        // the plan's graph, v31's). The prepass is a plain launch, so it starts after everything earlier on
        // the stream (the previous call's GEMM kernel included), and this grid once every prepass block has
        // issued its trigger; griddepcontrol.wait orders what the kernel reads of the prepass's writes. Not
        // cooperative: the helpers come first in blockIdx (dual_gemm_kernel), and v37's cooperative
        // dependent was not placed until its prepass had ended.
        attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attribute.val.programmaticStreamSerializationAllowed = 1;
    } else {
        // NOTE: a tile's S CTAs, adjacent in x, one cluster; kSplitTails (v32) too, its helpers in clusters of
        // their own before the tiles' (dual_gemm_kernel: why no cooperative attribute there)
        attribute.id = cudaLaunchAttributeClusterDimension;
        attribute.val.clusterDim.x = problem.split_k.splits;
        attribute.val.clusterDim.y = 1;
        attribute.val.clusterDim.z = 1;
        // v64: and the prepass's programmatic dependent (kTailsEarly's attribute beside the cluster's): each split
        // CTA's first two stages of B go out under the prepass (produce_dependent), A's after griddepcontrol.wait;
        // v66: an unsplit launch's too (clusters of one), its producer waiting first (kTailsEarly's, v52)
        attributes[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attributes[1].val.programmaticStreamSerializationAllowed = 1;
        num_attributes = 2;
    }
    config.gridDim = dim3(problem.num_tiles * problem.split_k.splits + problem.tails.helpers, 1, 1);
    config.blockDim = dim3(kThreads, 1, 1);
    config.dynamicSmemBytes = SMEM_BYTES;
    config.stream = stream;
    config.attrs = attributes;
    config.numAttrs = num_attributes;
    return cudaLaunchKernelEx(&config, kernel, problem);
}

// v30: a launch plan, built once per input set (the cache in CPP_SRC keys it by everything it depends
// on: every pointer, size, stride, dtype and the device) and launched on every call: each chunk's
// Problem by value (B1's and B2's tensor maps encoded, tiles, splits and tails chosen), the
// workspace's layout (v25's), and from the plan's second call a CUDA graph of its launches, so a call
// is one graph launch on the host (gemm v47's machinery, group_gemm v45's measured gain).
// NOTE: a plain launcher (no torch headers, so the file compiles alone with nvcc). ``desc`` holds
// per batch (v2's 18 words): a, b1, b2, sfa, blocked sfb1, blocked sfb2, c pointers, an unused slot,
// then m, n, k and the row strides of a, b1, b2, sfa, two unused slots, c. More than kMaxGroups
// batches: one launch pair per chunk (the parameter space is 4 KB), in stream order.
struct ChunkLaunch {
    Problem<kMaxGroups> problem;         // a16, partials and flags point into the plan's `workspace`
    int64_t a16_offset[kMaxGroups];      // each batch's tiled fp16 A, bytes from the workspace's start
    int decode_blocks;
};
struct LaunchPlan {
    std::vector<ChunkLaunch> chunks;
    // The workspace (v25's layout): every chunk's tiled fp16 A, each chunk from a 256-byte boundary;
    // then one region of tail partials and one of tail flags sized for the largest chunk with tails
    // (chunks run in stream order, and each chunk's prepass zeroes the flags its GEMM kernel uses;
    // split-K needs none: its partials stay on chip).
    int64_t workspace_bytes, partial_offset, flag_offset;
    const void* workspace;               // the workspace the Problems point into now (null: none yet)
    int calls;                           // calls outside a capture so far (up to 2): the graph is built on the second
    bool graph_refused;                  // a build failed: plain launches from then on, no retry per call
    cudaGraphExec_t exec;                // null until built; its nodes point into `exec_workspace`
    const void* exec_workspace;
};

// A new plan for ``desc`` (delete with dual_gemm_free_plan), or null with *err: -1 no batches, -2 shape
// not supported, -3 no cuTensorMapEncodeTiled, -4 the driver refused a tensor map, > 0 a CUDA error.
void* dual_gemm_build_plan(const int64_t* desc, int num_groups, int64_t* workspace_bytes, int* err) {
    *err = 0;
    if (num_groups < 1) { *err = -1; return nullptr; }
    int device = 0, sms = 0;
    *err = prepare_device(device, sms);
    if (*err != 0) return nullptr;
    LaunchPlan* plan = new LaunchPlan();
    int64_t next = 0, partial_bytes = 0, flag_bytes = 0;
    for (int first = 0; first < num_groups; first += kMaxGroups) {
        ChunkLaunch chunk;
        const int64_t bytes = fill_chunk(desc, num_groups, first, sms, chunk.problem, chunk.decode_blocks);
        *err = bytes < 0 ? -2 : encode_b_maps(chunk.problem);
        if (*err != 0) { delete plan; return nullptr; }
        for (int g = 0; g < chunk.problem.num_groups; ++g) {
            const GroupDesc& d = chunk.problem.groups[g];
            chunk.a16_offset[g] = next;
            next += static_cast<int64_t>(d.m_tiles) * d.m_tile_rows * d.k * 2;
        }
        next = (next + 255) / 256 * 256;
        if (tail_partial_bytes(chunk.problem) > partial_bytes) partial_bytes = tail_partial_bytes(chunk.problem);
        if (tail_flag_bytes(chunk.problem) > flag_bytes) flag_bytes = tail_flag_bytes(chunk.problem);
        plan->chunks.push_back(chunk);
    }
    plan->partial_offset = next;
    plan->flag_offset = next + partial_bytes;
    plan->workspace_bytes = next + partial_bytes + flag_bytes;
    plan->workspace = nullptr;
    plan->calls = 0;
    plan->graph_refused = false;
    plan->exec = nullptr;
    plan->exec_workspace = nullptr;
    *workspace_bytes = plan->workspace_bytes;
    return plan;
}

// NOTE: an exec with launches still queued or running is freed by the runtime once they complete
// (cudaGraphExecDestroy's documented rule), so a plan may be evicted with its work in flight.
void dual_gemm_free_plan(void* handle) {
    LaunchPlan* plan = static_cast<LaunchPlan*>(handle);
    if (plan->exec != nullptr) cudaGraphExecDestroy(plan->exec);
    delete plan;
}

// Ways the plans' work went out since the module loaded: graph launches, plain launch pairs (a plan's
// first call, a stream under capture, a graph that could not be built), graphs built, builds refused.
static int64_t call_paths[4] = {0, 0, 0, 0};
void dual_gemm_launch_counts(int64_t* out) {
    for (int i = 0; i < 4; ++i) out[i] = call_paths[i];
}

// The plan's launches on ``stream``, v25's: per chunk the prepass, then the GEMM kernel (clustered
// when split, cooperative with tails). Returns 0 or a CUDA error.
static int enqueue(const LaunchPlan& plan, cudaStream_t stream) {
    for (const ChunkLaunch& chunk : plan.chunks) {
        const cudaError_t err = chunk.problem.num_groups == 1 ? launch_chunk<1>(chunk.problem, chunk.decode_blocks, stream)
                                                              : launch_chunk<kMaxGroups>(chunk.problem, chunk.decode_blocks, stream);
        if (err != cudaSuccess) return static_cast<int>(err);
    }
    return 0;
}

// The plan's graph: enqueue() recorded by a stream capture on a stream of this extension's own, then
// instantiated. Returns 0, or a CUDA error with no exec made (the error cleared).
// NOTE: captured, not assembled node by node, so the graph holds exactly v25's launches: the cluster
// dimension of a split GEMM kernel and the cooperative attribute of a tails one become its node's
// (v25 ran under torch's capture, `run --graph`, with the same launches). Thread-local capture mode:
// another thread's unrelated CUDA calls neither break this capture nor are refused because of it.
static int build_graph(LaunchPlan& plan, int device) {
    static cudaStream_t capture_streams[64] = {};
    if (device < 0 || device >= 64) return static_cast<int>(cudaErrorInvalidDevice);
    if (capture_streams[device] == nullptr) {
        const cudaError_t err = cudaStreamCreateWithFlags(&capture_streams[device], cudaStreamNonBlocking);
        if (err != cudaSuccess) {
            capture_streams[device] = nullptr;
            cudaGetLastError();
            return static_cast<int>(err);
        }
    }
    const cudaStream_t stream = capture_streams[device];
    cudaError_t err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (err != cudaSuccess) {
        cudaGetLastError();
        return static_cast<int>(err);
    }
    const int status = enqueue(plan, stream);
    cudaGraph_t graph = nullptr;
    err = cudaStreamEndCapture(stream, &graph);  // NOTE: always, so the stream leaves capture mode
    if (status == 0 && err == cudaSuccess && graph != nullptr) err = cudaGraphInstantiate(&plan.exec, graph, 0);
    if (graph != nullptr) cudaGraphDestroy(graph);  // NOTE: the exec is independent of the graph it came from
    if (status != 0 || err != cudaSuccess || plan.exec == nullptr) {
        plan.exec = nullptr;
        cudaGetLastError();
        return status != 0 ? status : err != cudaSuccess ? static_cast<int>(err) : static_cast<int>(cudaErrorUnknown);
    }
    plan.exec_workspace = plan.workspace;
    return 0;
}

// The plan's work on ``stream_handle`` with ``workspace`` (at least the plan's workspace_bytes, 256-byte
// aligned), on the current device ``device``: one graph launch, or v25's launches. Returns 0 or a CUDA error.
// NOTE: a launch copies its parameter (the Problem) when it is called, and an exec holds its own
// copies, so the plan's Problems may change as soon as this returns, whatever the device is running.
// NOTE: plain launches where a graph would not pay or not be safe: a plan's first call (an input set
// called once, as `test`'s seeds and GPU MODE's checking clones are, costs no instantiation), and a
// stream under capture (the caller's capture records the launches, as v25's; an exec launched into
// or instantiated during a capture would tie this plan to the caller's graph). A graph the runtime
// would not build (e.g. refused while another thread captures in global mode) falls back to them too.
int dual_gemm_launch(void* handle, void* workspace, int64_t stream_handle, int device) {
    LaunchPlan& plan = *static_cast<LaunchPlan*>(handle);
    const cudaStream_t stream = reinterpret_cast<cudaStream_t>(stream_handle);
    if (plan.workspace != workspace) {  // NOTE: a first call, another stream's workspace, or a grown one
        uint8_t* const base = static_cast<uint8_t*>(workspace);
        for (ChunkLaunch& chunk : plan.chunks) {
            for (int g = 0; g < chunk.problem.num_groups; ++g) chunk.problem.groups[g].a16 = base + chunk.a16_offset[g];
            // NOTE: v25's rule: a launch without tails carries null tail pointers (its prepass zeroes no flags)
            const bool tails = chunk.problem.tails.helpers > 0;
            chunk.problem.tails.partials = tails ? reinterpret_cast<float*>(base + plan.partial_offset) : nullptr;
            chunk.problem.tails.flags = tails ? reinterpret_cast<uint32_t*>(base + plan.flag_offset) : nullptr;
        }
        plan.workspace = workspace;
    }
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    cudaError_t err = cudaStreamIsCapturing(stream, &capture);
    if (err != cudaSuccess) {
        cudaGetLastError();
        return static_cast<int>(err);
    }
    if (capture == cudaStreamCaptureStatusNone && plan.calls < 2) ++plan.calls;
    if (capture == cudaStreamCaptureStatusNone && plan.calls >= 2 && !plan.graph_refused) {
        if (plan.exec != nullptr && plan.exec_workspace != plan.workspace) {
            // NOTE: rebuilt, not re-pointed: the workspace changes only on a plan's first call on a
            // stream or when a larger plan grows it; queued launches of the old exec complete first.
            cudaGraphExecDestroy(plan.exec);
            plan.exec = nullptr;
        }
        if (plan.exec == nullptr) {
            const bool built = build_graph(plan, device) == 0;
            plan.graph_refused = !built;
            ++call_paths[built ? 2 : 3];
        }
        if (plan.exec != nullptr) {
            err = cudaGraphLaunch(plan.exec, stream);
            if (err != cudaSuccess) {
                cudaGetLastError();
                return static_cast<int>(err);
            }
            ++call_paths[0];
            return static_cast<int>(cudaGetLastError());
        }
    }
    ++call_paths[1];
    return enqueue(plan, stream);
}
"""

CPP_SRC = r"""
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cstdarg>
#include <cstdio>
#include <list>

void* dual_gemm_build_plan(const int64_t* desc, int num_groups, int64_t* workspace_bytes, int* err);
void dual_gemm_free_plan(void* plan);
int dual_gemm_launch(void* plan, void* workspace, int64_t stream_handle, int device);
void dual_gemm_launch_counts(int64_t* out);

// v30: every error a caller can cause is raised through CPython (PyErr_SetString), its message formatted
// by vsnprintf; nothing here builds a c10::Error or writes into a C++ stream (gemm v47's reading of gemm
// v44's SIGSEGV on the H200: a TORCH_CHECK streaming integers through c10::str ended the process; v25's
// check_blocked_scales and workspace message streamed integers the same way).
[[noreturn]] static void raise_error(PyObject* type, const char* format, ...) {
    char message[768];
    va_list args;
    va_start(args, format);
    std::vsnprintf(message, sizeof(message), format, args);
    va_end(args);
    PyErr_SetString(type, message);
    throw py::error_already_set();
}

// "(d0, d1, ...)" of sizes or strides into `out`, for messages.
static const char* dims_text(c10::IntArrayRef dims, char (&out)[160]) {
    int used = std::snprintf(out, sizeof(out), "(");
    for (size_t i = 0; i < dims.size() && used < static_cast<int>(sizeof(out)); ++i)
        used += std::snprintf(out + used, sizeof(out) - used, i ? ", %lld" : "%lld", static_cast<long long>(dims[i]));
    if (used < static_cast<int>(sizeof(out))) std::snprintf(out + used, sizeof(out) - used, ")");
    return out;
}

// A tensor's device for messages: "cpu", "cuda:0", ...
static const char* device_text(const at::Tensor& t, char (&out)[32]) {
    if (t.is_cuda()) std::snprintf(out, sizeof(out), "cuda:%d", static_cast<int>(t.get_device()));
    else if (t.is_cpu()) std::snprintf(out, sizeof(out), "cpu");
    else if (t.is_meta()) std::snprintf(out, sizeof(out), "meta");
    else std::snprintf(out, sizeof(out), "a device other than CUDA");
    return out;
}

// The seven tensors a call reads or writes, their places in the data tuple, and their names in messages.
// NOTE: data[4], data[5] (the plain sfb1, sfb2) and data[6] (the permuted sfa) are not read: B's scales
// come from the permuted (blocked) ones, A's from the plain sfa (v25's choice).
constexpr int kTensors = 7;
constexpr int kDataItems = 10;
enum { kA, kB1, kB2, kSfa, kSfb1Blocked, kSfb2Blocked, kC };
static const int kDataIndex[kTensors] = {0, 1, 2, 3, 7, 8, 9};
static const char* const kTensorNames[kTensors] = {"a", "b1", "b2", "sfa", "sfb1_permuted", "sfb2_permuted", "c"};

static bool is_value_dtype(const at::Tensor& t) {
    const auto s = t.scalar_type();
    return s == at::kByte || s == at::kChar || s == c10::ScalarType::Float4_e2m1fn_x2;
}
static bool is_scale_dtype(const at::Tensor& t) {
    const auto s = t.scalar_type();
    return s == at::kByte || s == c10::ScalarType::Float8_e4m3fn;
}
static bool aligned16(const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; }

// The blocked ("permuted") scale tensor of an N x K operand with L batches, as GPU MODE hands it
// over: a (32, 4, N / 128, 4, K / 64, L) view of contiguous (L, N / 128, K / 64, 32, 4, 4) bytes, so
// the scales of one 128-row x 64-K tile are 512 contiguous bytes. Anything else is refused, not guessed:
// the same sizes contiguous in their logical order (`.contiguous()`) hold the same scales at other
// bytes, and the kernel would read them as the wrong rows' scales.
static void check_blocked_scales(const at::Tensor& s, const char* name, int64_t n, int64_t k, int64_t l) {
    char got[160];
    if (!(s.dim() == 6 && s.size(0) == 32 && s.size(1) == 4 && s.size(2) == n / 128 && s.size(3) == 4 &&
          s.size(4) == k / 64 && s.size(5) == l))
        raise_error(PyExc_ValueError, "dual_gemm: %s must have sizes (32, 4, N/128, 4, K/64, L) = (32, 4, %lld, 4, %lld, "
                    "%lld), got %s", name, static_cast<long long>(n / 128), static_cast<long long>(k / 64),
                    static_cast<long long>(l), dims_text(s.sizes(), got));
    const int64_t tile_stride = (k / 64) * 512, batch_stride = (n / 128) * tile_stride;
    const bool ok = s.stride(0) == 16 && s.stride(1) == 4 && s.stride(3) == 1 && s.stride(4) == 512 &&
                    (n / 128 == 1 || s.stride(2) == tile_stride) && (l == 1 || s.stride(5) == batch_stride);
    if (!ok)
        raise_error(PyExc_ValueError, "dual_gemm: %s must be GPU MODE's bytes, a permute(3, 4, 1, 5, 2, 0) view of "
                    "contiguous (L, N/128, K/64, 32, 4, 4) with strides (16, 4, %lld, 1, 512, %lld), got strides %s (a "
                    ".contiguous() copy holds the scales in another order)", name, static_cast<long long>(tile_stride),
                    static_cast<long long>(batch_stride), dims_text(s.strides(), got));
    if (!aligned16(s)) raise_error(PyExc_ValueError, "dual_gemm: %s must start 16-byte aligned (512-byte tiles)", name);
}

// Refuses what the kernels cannot run (ValueError, one line each; the table in the docstring) and writes
// the L batches' launcher words (dual_gemm_build_plan's ``desc``, v25's 18 a batch). Runs on a cache miss
// only: the key holds everything these checks read, so a hit passed them when its plan was built. The
// tensors are known to be dense CUDA tensors with storage (dual_gemm() checks that on every call).
// NOTE: every check runs before anything is read on the device: a wrong pointer, size or stride handed to the
// kernels is an illegal address (a CUDA error that poisons the process's context) or a silently wrong C.
static std::vector<int64_t> describe(const at::Tensor* const* t) {
    const at::Tensor &a = *t[kA], &b1 = *t[kB1], &b2 = *t[kB2], &sfa = *t[kSfa], &sfb1 = *t[kSfb1Blocked],
                     &sfb2 = *t[kSfb2Blocked], &c = *t[kC];
    char g0[160], g1[160], g2[160], g3[160], g4[160];
    for (int i = 0; i < kTensors; ++i) {
        if (t[i]->get_device() != c.get_device()) {
            char d[kTensors][32];
            raise_error(PyExc_ValueError, "dual_gemm: a, b1, b2, sfa, sfb1_permuted, sfb2_permuted and c must be on one "
                        "device (got %s, %s, %s, %s, %s, %s, %s)", device_text(a, d[0]), device_text(b1, d[1]),
                        device_text(b2, d[2]), device_text(sfa, d[3]), device_text(sfb1, d[4]), device_text(sfb2, d[5]),
                        device_text(c, d[6]));
        }
    }
    if (a.dim() != 3 || b1.dim() != 3 || b2.dim() != 3 || sfa.dim() != 3 || c.dim() != 3)
        raise_error(PyExc_ValueError, "dual_gemm: a, b1, b2, sfa, c must be 3-D (rows, K or N, L); got %d-D, %d-D, %d-D, "
                    "%d-D, %d-D", static_cast<int>(a.dim()), static_cast<int>(b1.dim()), static_cast<int>(b2.dim()),
                    static_cast<int>(sfa.dim()), static_cast<int>(c.dim()));
    if (!is_value_dtype(a) || !is_value_dtype(b1) || !is_value_dtype(b2))
        raise_error(PyExc_ValueError, "dual_gemm: a, b1 and b2 must hold packed e2m1 pairs (float4_e2m1fn_x2, uint8 or "
                    "int8), got %s, %s and %s", c10::toString(a.scalar_type()), c10::toString(b1.scalar_type()),
                    c10::toString(b2.scalar_type()));
    if (!is_scale_dtype(sfa) || !is_scale_dtype(sfb1) || !is_scale_dtype(sfb2))
        raise_error(PyExc_ValueError, "dual_gemm: sfa, sfb1_permuted and sfb2_permuted must be e4m3 scales (float8_e4m3fn "
                    "or uint8 bits), got %s, %s and %s", c10::toString(sfa.scalar_type()), c10::toString(sfb1.scalar_type()),
                    c10::toString(sfb2.scalar_type()));
    if (c.scalar_type() != at::kHalf)
        raise_error(PyExc_ValueError, "dual_gemm: c must be float16, got %s", c10::toString(c.scalar_type()));
    const int64_t M = a.size(0), N = b1.size(0), K = a.size(1) * 2, L = a.size(2);
    // NOTE: below 2^31 each: the launcher and the kernels hold M, N, K in int.
    if (!(M >= 1 && L >= 1 && N >= 128 && N % 128 == 0 && K >= 64 && K % 64 == 0) || M >= (1ll << 31) ||
        N >= (1ll << 31) || K >= (1ll << 31) || L >= (1ll << 31))
        raise_error(PyExc_ValueError, "dual_gemm: needs M >= 1, L >= 1, N a multiple of 128 and K a multiple of 64 (each "
                    "below 2^31); got M=%lld N=%lld K=%lld L=%lld", static_cast<long long>(M), static_cast<long long>(N),
                    static_cast<long long>(K), static_cast<long long>(L));
    for (const at::Tensor* b : {&b1, &b2}) {
        if (b->size(0) != N || b->size(1) != K / 2 || b->size(2) != L)
            raise_error(PyExc_ValueError, "dual_gemm: b1 and b2 must be N x K/2 x L = %lld x %lld x %lld (N from b1, K and L "
                        "from a), got %s and %s", static_cast<long long>(N), static_cast<long long>(K / 2),
                        static_cast<long long>(L), dims_text(b1.sizes(), g0), dims_text(b2.sizes(), g1));
    }
    if (sfa.size(0) != M || sfa.size(1) != K / 16 || sfa.size(2) != L)
        raise_error(PyExc_ValueError, "dual_gemm: sfa must be M x K/16 x L = %lld x %lld x %lld, got %s",
                    static_cast<long long>(M), static_cast<long long>(K / 16), static_cast<long long>(L),
                    dims_text(sfa.sizes(), g0));
    if (c.size(0) != M || c.size(1) != N || c.size(2) != L)
        raise_error(PyExc_ValueError, "dual_gemm: c must be M x N x L = %lld x %lld x %lld, got %s", static_cast<long long>(M),
                    static_cast<long long>(N), static_cast<long long>(L), dims_text(c.sizes(), g0));
    if (a.stride(1) != 1 || b1.stride(1) != 1 || b2.stride(1) != 1 || sfa.stride(1) != 1 || c.stride(1) != 1)
        raise_error(PyExc_ValueError, "dual_gemm: a, b1, b2, sfa and c must be contiguous along their second dimension "
                    "(strides %s, %s, %s, %s, %s)", dims_text(a.strides(), g0), dims_text(b1.strides(), g1),
                    dims_text(b2.strides(), g2), dims_text(sfa.strides(), g3), dims_text(c.strides(), g4));
    // NOTE: the prepass reads A's rows 16 bytes at a time and B's tensor maps need a 16-byte base and
    // row stride; rows must not overlap (a row stride under a row's length would hand the kernel
    // another row's bytes as this one's).
    for (int i : {kA, kB1, kB2}) {
        const at::Tensor& x = *t[i];
        if (!(aligned16(x) && x.stride(0) % 16 == 0 && x.stride(0) >= K / 2 && (L == 1 || x.stride(2) % 16 == 0)))
            raise_error(PyExc_ValueError, "dual_gemm: %s must start 16-byte aligned with row and batch strides multiples of "
                        "16 bytes, rows not overlapping (strides %s)", kTensorNames[i], dims_text(x.strides(), g0));
    }
    // NOTE: v25's rule for sfa (fill_chunk_rows): an even base and row stride.
    if (!(reinterpret_cast<uintptr_t>(sfa.data_ptr()) % 2 == 0 && sfa.stride(0) % 2 == 0 && sfa.stride(0) >= K / 16 &&
          (L == 1 || sfa.stride(2) % 2 == 0)))
        raise_error(PyExc_ValueError, "dual_gemm: sfa must start 2-byte aligned with even row and batch strides, rows not "
                    "overlapping (strides %s, K/16 = %lld)", dims_text(sfa.strides(), g0), static_cast<long long>(K / 16));
    // NOTE: C is written in 16-byte pieces of whole rows (the staged epilogue).
    if (!(aligned16(c) && c.stride(0) % 8 == 0 && c.stride(0) >= N && (L == 1 || c.stride(2) % 8 == 0)))
        raise_error(PyExc_ValueError, "dual_gemm: c must start 16-byte aligned with row and batch strides multiples of 8 "
                    "elements, rows not overlapping (strides %s)", dims_text(c.strides(), g0));
    check_blocked_scales(sfb1, "sfb1_permuted", N, K, L);
    check_blocked_scales(sfb2, "sfb2_permuted", N, K, L);
    constexpr int kWords = 18;
    std::vector<int64_t> desc(static_cast<size_t>(L) * kWords);
    for (int64_t l = 0; l < L; ++l) {
        int64_t* d = desc.data() + l * kWords;
        for (int i : {kA, kB1, kB2, kSfa})
            d[i] = reinterpret_cast<int64_t>(static_cast<const uint8_t*>(t[i]->data_ptr()) + l * t[i]->stride(2));
        d[4] = reinterpret_cast<int64_t>(static_cast<const uint8_t*>(sfb1.data_ptr()) + l * sfb1.stride(5));
        d[5] = reinterpret_cast<int64_t>(static_cast<const uint8_t*>(sfb2.data_ptr()) + l * sfb2.stride(5));
        d[6] = reinterpret_cast<int64_t>(static_cast<at::Half*>(c.data_ptr()) + l * c.stride(2));
        d[7] = 0;  // NOTE: v2's a16 slot, unused: the plan places the tiled fp16 A in the workspace
        d[8] = M; d[9] = N; d[10] = K;
        d[11] = a.stride(0); d[12] = b1.stride(0); d[13] = b2.stride(0); d[14] = sfa.stride(0);
        d[15] = 0; d[16] = 0; d[17] = c.stride(0);
    }
    return desc;
}

// The cache key's words for one tensor: its address, (dtype, device, rank), then every size and stride.
// NOTE: a plan depends on nothing else of a tensor (B1's and B2's tensor maps on their address, sizes and
// row stride; the tiles, splits and tails on M, N, K, L and the device; every check on all of it), so two
// calls with equal keys get equal plans whatever the tensors hold, and a tensor freed and its memory handed
// to another input set with the same layout is the same plan again, rightly. Values are never read on the host.
static void append_key(std::vector<int64_t>& key, const at::Tensor& t) {
    key.push_back(reinterpret_cast<int64_t>(t.data_ptr()));
    const c10::Device device = t.device();
    key.push_back(static_cast<int64_t>(t.scalar_type()) | (static_cast<int64_t>(device.type()) << 8) |
                  (static_cast<int64_t>(device.index() + 1) << 16) | (static_cast<int64_t>(t.dim()) << 32));
    for (const int64_t s : t.sizes()) key.push_back(s);
    for (const int64_t s : t.strides()) key.push_back(s);
}

// The plans, most recently used first, at most kCachedPlans.
// NOTE: 128 holds the harness's gpumode pool (50 sets a batch, a scratch set, the fresh-buffer repeat) and
// GPU MODE's rotation with room: past it a rotation would miss on every call. A plan is ~4.2 KB a chunk of
// 7 batches plus its key (68 words at L = 1) and, once called twice, a graph exec (two kernel nodes).
// NOTE: the cache and the workspaces are never destroyed (allocated with new): at exit, torch's allocator
// may be gone before static destructors would run. The GIL serialises every call.
constexpr size_t kCachedPlans = 128;
struct CachedPlan {
    std::vector<int64_t> key;
    void* plan;
    int64_t workspace_bytes;
};
static std::list<CachedPlan>* const plans = new std::list<CachedPlan>();

// One workspace per (device, stream), grown as plans need, shared by every plan on that stream.
// NOTE: shared, not one per plan: the calls on a stream run in its order, so one buffer serves all, and the
// prepass rewrites the same bytes each call, as v25's per-call allocation did (the caching allocator handed
// v25 the same block every call). A grown workspace's old block goes back to the caching allocator on its
// own stream, which hands it out again only to work queued after ours; a plan rebuilds its graph when the
// workspace it was last given changes (dual_gemm_launch).
struct Workspace {
    int device;
    cudaStream_t stream;
    at::Tensor bytes;
};
constexpr size_t kWorkspaces = 8;  // streams remembered; the oldest is released past this
static std::vector<Workspace>* const workspaces = new std::vector<Workspace>();

static void* workspace_for(int device, cudaStream_t stream, int64_t bytes) {
    const auto options = at::TensorOptions().dtype(at::kByte).device(at::kCUDA, static_cast<c10::DeviceIndex>(device));
    for (Workspace& w : *workspaces) {
        if (w.device == device && w.stream == stream) {
            if (w.bytes.numel() < bytes) w.bytes = at::empty({bytes}, options);
            return w.bytes.data_ptr();
        }
    }
    if (workspaces->size() >= kWorkspaces) workspaces->erase(workspaces->begin());
    workspaces->push_back({device, stream, at::empty({bytes}, options)});
    return workspaces->back().bytes.data_ptr();
}

// NOTE: the competition's data as it comes, (a, b1, b2, sfa, sfb1, sfb2, sfa_permuted, sfb1_permuted,
// sfb2_permuted, c): a (M, K/2, L), b1 and b2 (N, K/2, L), sfa (M, K/16, L) of one-byte elements, the
// permuted sfb1 and sfb2 in GPU MODE's blocked layout (check_blocked_scales), c (M, N, L) fp16; batch l is
// the launcher's group l. A call: the tuple's tensors read in place (no pybind conversion), the key built,
// a plan found or built (the checks), the launch on c's device and its current stream. Returns c.
py::object dual_gemm(py::handle data) {
    PyObject* const seq = data.ptr();
    if (!(PyTuple_Check(seq) || PyList_Check(seq)) || PySequence_Fast_GET_SIZE(seq) != kDataItems)
        raise_error(PyExc_ValueError, "dual_gemm: data must be (a, b1, b2, sfa, sfb1, sfb2, sfa_permuted, sfb1_permuted, "
                    "sfb2_permuted, c)");
    const at::Tensor* t[kTensors];
    for (int i = 0; i < kTensors; ++i) {
        PyObject* const item = PySequence_Fast_GET_ITEM(seq, kDataIndex[i]);
        if (!THPVariable_Check(item))
            raise_error(PyExc_TypeError, "dual_gemm: a, b1, b2, sfa, sfb1_permuted, sfb2_permuted and c must be torch "
                        "tensors (%s is %s)", kTensorNames[i], Py_TYPE(item)->tp_name);
        t[i] = &THPVariable_Unpack(item);
        // NOTE: before data_ptr(), which throws for tensors without storage (sparse, nested)
        if (t[i]->layout() != c10::kStrided || !t[i]->has_storage())
            raise_error(PyExc_ValueError, "dual_gemm: %s must be a dense (strided) tensor with storage", kTensorNames[i]);
    }
    for (int i = 0; i < kTensors; ++i) {
        if (!t[i]->is_cuda()) {
            char d[kTensors][32];
            raise_error(PyExc_ValueError, "dual_gemm: a, b1, b2, sfa, sfb1_permuted, sfb2_permuted and c must be CUDA "
                        "tensors (got %s, %s, %s, %s, %s, %s, %s)", device_text(*t[kA], d[0]), device_text(*t[kB1], d[1]),
                        device_text(*t[kB2], d[2]), device_text(*t[kSfa], d[3]), device_text(*t[kSfb1Blocked], d[4]),
                        device_text(*t[kSfb2Blocked], d[5]), device_text(*t[kC], d[6]));
        }
    }
    static std::vector<int64_t> key;  // NOTE: reused across calls (the GIL serialises them): no allocation
    key.clear();
    for (int i = 0; i < kTensors; ++i) append_key(key, *t[i]);
    // NOTE: the launch goes to c's device and its current stream; the plan's tiles, splits and tensor
    // maps are built there too (the SM count, the cluster capacity, the driver's maps), and c's device
    // is in the key.
    const int device = t[kC]->get_device();
    const c10::cuda::CUDAGuard device_guard(static_cast<c10::DeviceIndex>(device));
    auto hit = plans->begin();
    while (hit != plans->end() && hit->key != key) ++hit;
    if (hit != plans->end()) {
        plans->splice(plans->begin(), *plans, hit);  // NOTE: most recently used first
    } else {
        const std::vector<int64_t> desc = describe(t);
        int64_t bytes = 0;
        int err = 0;
        void* const plan = dual_gemm_build_plan(desc.data(), static_cast<int>(desc.size() / 18), &bytes, &err);
        if (plan == nullptr)
            raise_error(PyExc_RuntimeError, "dual_gemm: no launch plan (%d: %s)", err,
                        err == -3 ? "no cuTensorMapEncodeTiled in this driver" : err == -4 ? "the driver refused B's tensor map"
                        : err > 0 ? cudaGetErrorString(static_cast<cudaError_t>(err)) : "shape not supported");
        plans->push_front({key, plan, bytes});
        if (plans->size() > kCachedPlans) {
            dual_gemm_free_plan(plans->back().plan);
            plans->pop_back();
        }
    }
    const CachedPlan& entry = plans->front();
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
    void* const workspace = workspace_for(device, stream, entry.workspace_bytes);
    const int err = dual_gemm_launch(entry.plan, workspace, reinterpret_cast<int64_t>(stream), device);
    if (err != 0)
        raise_error(PyExc_RuntimeError, "dual_gemm: launch failed: %s", cudaGetErrorString(static_cast<cudaError_t>(err)));
    return py::reinterpret_borrow<py::object>(PySequence_Fast_GET_ITEM(seq, kDataIndex[kC]));
}

// (graph launches, plain launch pairs, graphs built, graph builds refused) since the module loaded: which
// way a run's calls went (a plan's first call and a captured stream's calls are plain by design).
py::tuple launch_counts() {
    int64_t counts[4];
    dual_gemm_launch_counts(counts);
    return py::make_tuple(counts[0], counts[1], counts[2], counts[3]);
}
"""

_module = load_inline(name=EXTENSION_NAME, cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=FUNCTIONS,
                      extra_cuda_cflags=CUDA_FLAGS, verbose=False)


def custom_kernel(data):
    # NOTE: every check is in dual_gemm() (C++), the tuple read there in place: the Python path GPU MODE's
    # batch loop times is this one call.
    return _module.dual_gemm(data)
