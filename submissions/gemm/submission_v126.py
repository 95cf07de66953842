"""NVFP4 gemm v126: every mbarrier wait carries a suspend-time hint, so a waiting thread sleeps instead of retrying

Version: v126
Parent: v122
Change: mbar_wait's try_wait.parity carries a suspend-time hint of 10 ms (kWaitTicks, CUTLASS's 0x989680): a thread
waiting on a phase sleeps until the barrier unit wakes it instead of retrying at the default limit
Arch: sm_90a
Analogue: dual_gemm v82, group_gemm v132 (the same change)
Why: dual_gemm v81 (session 87): taking one warp out of a try_wait loop beside the consumer warpgroups (v80's
sending thread, on the sub-partition of consumer warps 1 and 5 for the whole wide range) brought their K loop from
0.633 to 0.617 us a block (~2.5%) with nothing else changed. Every lineage's producer thread waits the same way for
most of its loop (the ring's free slots), on the sub-partition of consumer warps 0 and 4. Without a hint ptxas builds the
retry as a tight TRYWAIT / BRA loop; with one it builds TRYWAIT, then NANOSLEEP.SYNCS 0x989680 (the warp sleeps until
the barrier unit wakes it) and a PHASECHK test (`nvdisasm`, session 87). CUTLASS's ClusterBarrier::wait passes the same
hint.
Compile-only (nvcc 13.0, sm_90a): every wgmma loop's instruction count v122's; the retry blocks, out of line, hold the
sleep.
Prediction: if the producer's retries cost the consumers' issue, the loops run ~1-3% faster: `compare gemm v122 v126`
1.01-1.03x on every shape (most on 128x7168x16384, whose loop is longest); outputs bit for bit v122's. Refuted if
SAME: then a waiting warp costs its neighbours only beside a loop as tensor-bound as dual_gemm's, or the default limit
already sleeps as long. A wake later than the phase would show as SLOWER on 128x7168x2048 (its start waits most).
Measured: not yet run
"""

import torch
from torch.utils.cpp_extension import load_inline

BLOCK_N = 128
BLOCK_M_MAX = 128
M_STEP = 32
BLOCK_K = 64
EXTENSION_NAME = "nvfp4_gemm_v126"
# `nvfp4 probe marks`: the GEMM kernel's stamps (the prepass carries none); "B armed" and "prepass done
# (wait returned)" only on unsplit launches (the programmatic ones)
MARK_NAMES = ["start", "B armed", "prepass done (wait returned)", "first stage decoded", "K loop done", "end"]
FUNCTIONS = ["gemm_function", "launch_counts"]
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

constexpr int BLOCK_N = 128;            // rows of B (and of N) per CTA: wgmma's M, 64 per consumer warpgroup
constexpr int BLOCK_M_MAX = 128;        // rows of A (M) per CTA at most: wgmma's N (v12: 256)
constexpr int M_STEP = 32;              // tile heights (and so wgmma N) are multiples of this
constexpr int BLOCK_K = 64;             // fp16 elements per shared-memory row: one 128-byte swizzle atom
constexpr int kProducerThreads = 128;   // warpgroup 0: thread 0 issues every copy, the rest idle
constexpr int kConsumerThreads = 256;   // warpgroups 1-2: decode and wgmma, 64 rows of B each
constexpr int kThreads = kProducerThreads + kConsumerThreads;
constexpr int kProducerRegisters = 40;  // setmaxnreg: 128 x 40 + 256 x 232 <= 64K registers
constexpr int kConsumerRegisters = 232;
// NOTE: 8, not v12's 4: half-height A tiles make 21 KB stages, and the ring's depth is the loads in
// flight (6 / 8 / 10 stages measured 1.07x / 1.12x / 1.10x on 128x7168x16384).
constexpr int kStages = 8;              // ring slots: fp16 A tile (up to 128 rows) + B bytes of one K block each
// v119: the unsplit (dependent) launch's first-lap B stages issued before griddepcontrol.wait; the rest follow the
// early stages' A (group_gemm v119: a copy issued after the lap's B waited ~1.25 us to leave the producer there).
constexpr int kEarlyBStages = 2;
static_assert(kStages % 2 == 0, "consume() alternates two fragment sets with the ring's slots");
// NOTE: the tensor core adds a k16 step's products to its fp32 accumulator with truncated alignment
// and a truncated result (no round-to-nearest); over a whole K range its errors grow with the chain's
// length and magnitude and fail GPU MODE's tolerance on outputs that cancel (v34: 84 of 917,504 on
// 128x7168x16384). So wgmma sums this many K blocks (64 K, 4 k16 steps) from zero and the consumer
// adds that chunk to the fp32 accumulator by FADD. 1, not DeepGEMM's 128 K or 4 blocks: in the
// emulation (studies/emulate_gemm_accumulation.py) chunks of 1, 2 and 4 blocks all pass
// under the tensor-core model closest to the H200's measured v34 failures (worst 0.485 / - / 0.488 of
// the tolerance), but under a model one bit coarser (which overstates v34's failures 5x) only chunks
// of 1 block keep every output inside (2 and 4 blocks: one output each at 1.05 and 1.38).
constexpr int kPromoteBlocks = 4;
static_assert(kStages % kPromoteBlocks == 0, "a chunk of K blocks must start at a compile-time ring slot");
// NOTE: 15, not v8's 32: a batch's descriptor is 256 bytes with its 64-byte aligned tensor map.
constexpr int kMaxGroups = 15;          // batches per launch: keeps the kernel parameter under 4 KB
constexpr int A_TILE_BYTES = BLOCK_M_MAX * BLOCK_K * 2;
constexpr int B_ROW_STRIDE = 32;        // packed bytes per row of B per K block, dense (see decode_b's reads)
constexpr int B_VALUE_BYTES = BLOCK_N * B_ROW_STRIDE;
// NOTE: one 128-row x 64-K tile of GPU MODE's blocked ("permuted") scale layout: 512 contiguous bytes,
// row r's 4 scales at (r % 32) x 16 + (r / 32) x 4 (blocked_scale_offset); one bulk copy per stage.
constexpr int B_SCALE_BYTES = BLOCK_N * BLOCK_K / 16;
// NOTE: rounded up to 1024 bytes (21 KB) so every slot's A tile stays aligned for the 128-byte swizzle.
constexpr int STAGE_BYTES = (A_TILE_BYTES + B_VALUE_BYTES + B_SCALE_BYTES + 1023) / 1024 * 1024;
constexpr int BARRIER_BYTES = (2 * kStages + 1) * 8;  // a full and an empty mbarrier per stage, and `gather`
constexpr int SMEM_BYTES = kStages * STAGE_BYTES + BARRIER_BYTES + 1024;  // + slack to align the ring to 1024 bytes
// NOTE: split-K stages a CTA's fp32 partial at the drained ring's start and gathers its peers' parts
// of its share after it: at most (S - 1) x ceil(P / S) <= P positions, so one more partial's room.
constexpr int PARTIAL_BYTES = BLOCK_N * BLOCK_M_MAX * 4;  // 64 KB: [position j][consumer thread] float4
constexpr int POSITION_BYTES = kConsumerThreads * 16;     // one position j of every consumer thread
static_assert(2 * PARTIAL_BYTES <= kStages * STAGE_BYTES, "a partial and the gathered parts must fit the drained ring");
// NOTE: C is staged behind both (rows of 128 halves 272 bytes apart: 16 bytes of padding move each
// row four banks on, so a warp's writes to four rows at once do not collide).
constexpr int C_ROW_BYTES = BLOCK_N * 2 + 16;
constexpr int C_STAGE_OFFSET = 2 * PARTIAL_BYTES;
static_assert(C_STAGE_OFFSET + BLOCK_M_MAX * C_ROW_BYTES <= kStages * STAGE_BYTES, "the C tile must fit the drained ring");
constexpr int kDecodeThreads = 256;     // prepass: one (row, K block, half) per thread, four 16-byte chunks out
constexpr int kFullArrivals = 1;         // the producer's arrive.expect_tx: every copy of a stage counts bytes on it
constexpr int kEmptyArrivals = kConsumerThreads;
constexpr int kMaxSplits = 8;           // splits per tile at most (choose_splits)
constexpr int kMinBlocksPerSplit = 4;   // K blocks: below this the pipeline's fill and the partial tile dominate
// NOTE: hardware barrier 0 is __syncthreads'; the split-K handshake needs one that counts only the
// 256 consumer threads, the producer warps having left by then.
constexpr int kConsumerBarrier = 1;
// NOTE: v66: a paired launch (unsplit only) gives each CTA 64 rows of B and the whole M tile (up to 128
// rows of A): both consumer warpgroups decode the same 64 rows, warpgroup w the K blocks kb = w mod 2.
constexpr int PAIRED_N = 64;
constexpr int kPairedEmptyArrivals = kConsumerThreads / 2;  // one warpgroup releases each slot

struct GroupDesc {
    CUtensorMap b_map;                   // B's values: N rows x K/2 bytes, box 128 rows x 32 bytes (host-encoded)
    const uint8_t* a; const uint8_t* b; const uint8_t* sfa;
    const uint8_t* sfb_blocked;          // B's scales, blocked layout: [N / 128][K / 64][512 bytes]
    __half* c;
    uint8_t* a16;                        // workspace: A as fp16 in tiles, [M tile][K block][m_tile_rows][128 B swizzled]
    int m, n, k;
    int64_t a_row, b_row, sfa_row, c_row;
    int m_tile_rows;                     // rows per M tile: M split evenly into tiles of at most 128, a multiple of 32
    int m_tiles;
    int tile_begin;                      // first linear tile index of this group (GEMM kernel)
    int decode_begin;                    // first block index of this group (decode kernel)
};

struct Problem {
    GroupDesc groups[kMaxGroups];
    int num_groups;
    int num_tiles;
    int splits;              // S: CTAs per output tile, each over a contiguous range of K blocks (stream: the most
                             // CTAs any tile's K blocks are shared by, its partial and flag slots a tile)
    int ctas;                // the GEMM launch's CTAs: num_tiles x splits, or a stream launch's (v109)
    int stream;              // v109: 1 when the CTAs take equal runs of ring laps across the tiles (stream-K)
    int tile_n;              // rows of B per tile: BLOCK_N, or PAIRED_N for a paired launch (v66)
    float* partials;         // S > 1: [tile][split] PARTIAL_BYTES each, as the ring stages them (workspace)
    uint32_t* flags;         // S > 1: [tile][split], 1 once that partial is in `partials`; zeroed by the prepass
};
static_assert(sizeof(Problem) <= 4096, "the kernel parameter must fit in 4 KB");

// A pair (value x 2^-14 bits, e2m1_pair_bits) times its scale: value x sfa, exact in fp16.
// NOTE: two multiplies, not one by scale x 2^14: that product overflows fp16 for scales above 4.
__device__ __forceinline__ uint32_t scaled_pair(uint32_t bits, __half2 scale) {
    __half2 v = __hmul2(*reinterpret_cast<__half2*>(&bits), __float2half2_rn(16384.f));
    v = __hmul2(v, scale);
    return *reinterpret_cast<uint32_t*>(&v);
}

// One pair of B: (value x 2^-14 bits) x sfb = value x sfb x 2^-14, a single multiply (docstring; v100: no x 2^7).
__device__ __forceinline__ uint32_t scaled_pair_bits(uint32_t bits, __half2 scale) {
    const __half2 v = __hmul2(*reinterpret_cast<const __half2*>(&bits), scale);
    return *reinterpret_cast<const uint32_t*>(&v);
}

__device__ __forceinline__ __half2 scale_pair(uint32_t e4m3_bits) {
    return __half2half2(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(e4m3_bits & 0xFFu), __NV_E4M3)));
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

// D[64 x N] = A[64 x 16] (registers) . B[16 x N] (shared memory, descriptor) + (accumulate ? D : 0);
// fp16 in, fp32 accumulate; one specialisation per N = 32 ... 128: N is an immediate and the
// accumulator list has N / 2 registers. `accumulate` is wgmma's scale-d predicate.
template <int kN> __device__ __forceinline__ void wgmma_m64k16(float* d, const uint32_t* a, uint64_t desc_b, int accumulate);
template <> __device__ __forceinline__ void wgmma_m64k16<32>(float* d, const uint32_t* a, uint64_t desc_b, int accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}
template <> __device__ __forceinline__ void wgmma_m64k16<64>(float* d, const uint32_t* a, uint64_t desc_b, int accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}
template <> __device__ __forceinline__ void wgmma_m64k16<96>(float* d, const uint32_t* a, uint64_t desc_b, int accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, {%48, %49, %50, %51}, %52, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}
template <> __device__ __forceinline__ void wgmma_m64k16<128>(float* d, const uint32_t* a, uint64_t desc_b, int accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
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

// The register operand of wgmma for the four k16 steps of a K block, in the permuted K order
// (docstring): step s, registers {row gid, half j = 0}, {row gid + 8, j = 0}, {row gid, j = 1},
// {row gid + 8, j = 1}, register (j) = nibbles s and s + 4 of the row's word 2 tig + j. All 16
// elements come from scale block tig. `row` is the tile-local row of gid (consumer warp x 16 + gid).
// NOTE: the fragments hold B x 2^-14 (v100; v97's x 2^-7); the epilogue multiplies the sums by 2^14.
__device__ __forceinline__ int blocked_scale_offset(int r, int tig) { return (r % 32) * 16 + (r / 32) * 4 + tig; }
// `scale_row` is the row's place in its 128-row scale tile (v66: a paired tile's 64 rows are half of one).
// v97: dual_gemm v33's byte spread. A word's four odd nibbles and four even nibbles go, each in one word, into the
// fp16 high-byte pattern (sign at bit 7, magnitude at bits 1..3: 3 and 4 instructions), after which each of the
// word's four registers is one PRMT (bytes 0 and 2 moved up) or one AND (bytes 1 and 3 already in place): 11
// instructions a word where e2m1_pair_bits<0..3> take 15. The registers equal e2m1_pair_bits<s>(word) bit for bit
// (studies/spread_nibble_decode.py checked all 2^32 words).
__device__ __forceinline__ uint32_t odd_nibbles_spread(uint32_t word) {
    return (word & 0x80808080u) | ((word >> 3) & 0x0E0E0E0Eu);
}
__device__ __forceinline__ uint32_t even_nibbles_spread(uint32_t word) {
    return ((word << 4) & 0x80808080u) | ((word << 1) & 0x0E0E0E0Eu);
}
// NOTE: __byte_perm(x, 0, 0x2404) = bytes (0, x.b0, 0, x.b2): selector nibble 4 reads byte 0 of the zero operand.
// Nibbles s and s + 4 are bytes s / 2 and s / 2 + 2 of the spread word of s's parity.
__device__ __forceinline__ void e2m1_word_pairs(uint32_t word, uint32_t (&pairs)[4]) {
    const uint32_t even = even_nibbles_spread(word), odd = odd_nibbles_spread(word);
    pairs[0] = __byte_perm(even, 0u, 0x2404);
    pairs[1] = __byte_perm(odd, 0u, 0x2404);
    pairs[2] = even & 0xFF00FF00u;
    pairs[3] = odd & 0xFF00FF00u;
}
__device__ __forceinline__ void decode_b(const uint8_t* b_values, const uint8_t* b_scales, int row, int scale_row, int tig,
                                         uint32_t (&frag)[4][4]) {
    // NOTE: v97 (dual_gemm v33's): rows scale_row and scale_row + 8 lie in one 32-row group of the blocked tile
    // (row % 16 < 8 for every consumer thread, and scale_row - row is 0 or 64), so their scales are 128 bytes apart:
    // two byte loads, one PRMT into a pair and one cvt.rn.f16x2.e4m3x2 (exact; the low byte to the low half), where
    // v91 converted and scaled each row alone; v100 drops v97's x 2^7 (docstring: (value x 2^-14) x sfb is a multiple
    // of 2^-24 below 0.17, an fp16 either way). HMUL2 reads row i's (sc, sc) from half i.
    const uint32_t s0 = b_scales[blocked_scale_offset(scale_row, tig)];
    const uint32_t s1 = b_scales[blocked_scale_offset(scale_row + 8, tig)];
    const __half2_raw pair = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(__byte_perm(s0, s1, 0x0040)),
                                                        __NV_E4M3);
    const __half2 scales = __half2(pair);
    const __half2 sc[2] = {__low2half2(scales), __high2half2(scales)};
    #pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int r = row + 8 * i;
        const uint2 w = *reinterpret_cast<const uint2*>(b_values + r * B_ROW_STRIDE + 8 * tig);
        uint32_t px[4], py[4];
        e2m1_word_pairs(w.x, px);
        e2m1_word_pairs(w.y, py);
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            frag[s][i] = scaled_pair_bits(px[s], sc[i]);
            frag[s][2 + i] = scaled_pair_bits(py[s], sc[i]);
        }
    }
}

// ---------------------------------------------------------------- mbarriers and bulk copies
__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Waits until the barrier's phase of the given parity has completed.
// NOTE: v126: a suspend-time hint on every wait (10 ms, CUTLASS's ClusterBarrier value): the PTX ISA lets a try_wait
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
// v91: the same barrier for the paired epilogue, whose two warpgroups run different instantiations of consume_paired
// (v82) and so reach it at different instructions.
// NOTE: barrier.sync without .aligned: bar.sync is barrier.sync.aligned, which asks every participating thread to
// execute the same barrier instruction (PTX ISA, barrier); compute-sanitizer's synccheck stopped v82-v84's paired
// launches there ("Divergent thread(s) in block", 128x7168x2048 and 64x256x576, session 64).
__device__ __forceinline__ void consumer_sync_unaligned() {
    asm volatile("barrier.sync %0, %1;\n" ::"n"(kConsumerBarrier), "n"(kConsumerThreads) : "memory");
}

// Prepass threads of one batch: one per (row of its M tiles, K block, half j); the kernel's bound
// and the host's block count (fill_chunk) both come from here.
__host__ __device__ inline int decode_threads_of(const GroupDesc& d) {
    return d.m_tiles * d.m_tile_rows * (d.k / BLOCK_K) * 2;
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
__global__ void __launch_bounds__(kDecodeThreads)
decode_a_kernel(const __grid_constant__ Problem problem) {
    // NOTE: v52 (v48's trigger): lets this launch's GEMM grid be scheduled now when it is our programmatic
    // dependent, which it is unless a stream launch (enqueue; v121-v122); before a plain (stream) launch it
    // changes nothing: that grid starts when this one has completed, as in v47. The dependent reads nothing
    // of ours (A's fp16 tiles) before its producer's griddepcontrol.wait, which returns once this whole grid
    // has completed and its writes are visible. First thing, not after the stores: v36 measured both on the
    // H100 and the later trigger was slower (0.926x against 0.957x on 128x7168x2048, by span). No dependent
    // can take an SM a block of ours still needs: the dependent grid is launched only once every block of
    // this grid has executed this (or exited), i.e. every block of ours already holds its SM.
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    // NOTE: the GEMM kernel's split-K flags start at 0 each launch. A stream launch is plain: stream order puts
    // these stores before it. v121: a split launch is our programmatic dependent; its exchanging thread reads and
    // raises flags only after its own griddepcontrol.wait (reduce_through_l2), which returns once this grid has
    // completed and its writes are visible.
    if (blockIdx.x == 0 && problem.splits > 1)
        for (int i = threadIdx.x; i < problem.num_tiles * problem.splits; i += kDecodeThreads) problem.flags[i] = 0u;
    int g = 0;
    while (g + 1 < problem.num_groups && static_cast<int>(blockIdx.x) >= problem.groups[g + 1].decode_begin) ++g;
    const GroupDesc& d = problem.groups[g];
    const int u = (blockIdx.x - d.decode_begin) * kDecodeThreads + threadIdx.x;
    if (u >= decode_threads_of(d)) return;
    const int num_kb = d.k / BLOCK_K;
    const int j = u & 1, q = u >> 3;
    const int kb = q % num_kb;
    // NOTE: m_tile_rows is a multiple of 32, so a group of 4 rows never straddles two M tiles.
    const int row = (q / num_kb) * 4 + ((u >> 1) & 3);
    const int t = row / d.m_tile_rows, r = row % d.m_tile_rows;
    uint32_t out[4][4] = {};  // out[s][t]: the pair of scale block t in chunk 2s + j
    if (row < d.m) {
        const uint8_t* src = d.a + row * d.a_row + kb * (BLOCK_K / 2);
        // NOTE: both halves j of a row load the same 32 bytes (one sector): the second 16-byte load
        // finds the sector the first brought into L1.
        const uint4 lo = *reinterpret_cast<const uint4*>(src), hi = *reinterpret_cast<const uint4*>(src + 16);
        const uint32_t w[4] = {j ? lo.y : lo.x, j ? lo.w : lo.z, j ? hi.y : hi.x, j ? hi.w : hi.z};  // words 2t + j
        const uint8_t* sf = d.sfa + row * d.sfa_row + kb * (BLOCK_K / 16);
        // NOTE: the 4 scales of a K block start at a multiple of 4 bytes whenever sfa and its row
        // stride are (a dense row holds K / 16, a multiple of 4); otherwise 4 byte loads. The test
        // is the same for every thread of a group.
        const uint32_t sc = ((reinterpret_cast<uintptr_t>(d.sfa) | static_cast<uintptr_t>(d.sfa_row)) & 3u) == 0
            ? *reinterpret_cast<const uint32_t*>(sf)
            : sf[0] | (sf[1] << 8) | (sf[2] << 16) | (static_cast<uint32_t>(sf[3]) << 24);
        __half2 scale[4];
        #pragma unroll
        for (int i = 0; i < 4; ++i) scale[i] = scale_pair(sc >> (8 * i));
        #pragma unroll
        for (int i = 0; i < 4; ++i) {
            out[0][i] = scaled_pair(e2m1_pair_bits<0>(w[i]), scale[i]);
            out[1][i] = scaled_pair(e2m1_pair_bits<1>(w[i]), scale[i]);
            out[2][i] = scaled_pair(e2m1_pair_bits<2>(w[i]), scale[i]);
            out[3][i] = scaled_pair(e2m1_pair_bits<3>(w[i]), scale[i]);
        }
    }
    #pragma unroll
    for (int s = 0; s < 4; ++s)
        *reinterpret_cast<uint4*>(d.a16 + a16_offset(d, t, kb, r, 2 * s + j)) = make_uint4(out[s][0], out[s][1], out[s][2], out[s][3]);
}

// Stage addresses of ring slot s: the A tile (1024-aligned), then B's values and scales.
struct Stage { uint32_t a, b_values, b_scales; };
__device__ __forceinline__ Stage stage_of(uint32_t ring, int s) {
    const uint32_t base = ring + s * STAGE_BYTES;
    return {base, base + A_TILE_BYTES, base + A_TILE_BYTES + B_VALUE_BYTES};
}

// Producer thread 0: fill stage kb % kStages for each of this CTA's num_k K blocks (local kb is
// the matrix's K block kb_first + kb), once the consumers freed it.
// NOTE: three copies per stage, all counted in bytes on the full barrier: A's fp16 tile, B's 128 x
// 4 scales (512 contiguous bytes of the blocked layout) and B's 128 rows x 32 bytes of values (one
// tensor copy; v8: 256 cp.async of 16 bytes over 64 threads).
// NOTE: v52: an unsplit launch is the prepass's programmatic dependent, so its first lap is v48's (B before
// griddepcontrol.wait, A after); v121: a split launch (not a stream one) is too, its lap from its first K block
// (kb_first). kDependent: that first lap (every launch's but a stream CTA's pieces, produce_stream's).
template <bool kDependent, bool kPaired>
__device__ __forceinline__ void produce(const GroupDesc& d, int t, int n0, int n_cols, int kb_first, int num_k,
                                        uint32_t ring, uint32_t full, uint32_t empty, int lap0 = 0) {
    const uint32_t a_bytes = static_cast<uint32_t>(n_cols) * 128;
    // NOTE: v66: a paired tile's 64 rows of B (the tensor map's box is 64 rows then); its scales are still
    // copied as their whole 512-byte blocked tile (the 64 rows' bytes interleave with the other half's).
    constexpr uint32_t b_value_bytes = (kPaired ? PAIRED_N : BLOCK_N) * B_ROW_STRIDE;
    const uint8_t* const b_scale_tiles = d.sfb_blocked + static_cast<int64_t>(n0 / BLOCK_N) * (d.k / BLOCK_K) * B_SCALE_BYTES;
    int kb_start = 0;  // the first K block the loop below fills (after the first lap in a dependent launch)
    if constexpr (kDependent) {
        // NOTE: v48's: the first lap's slots are free at the start (fresh barriers), and B (values and
        // scales, the inputs as the caller handed them) does not depend on the prepass: its copies go out
        // now, under the prepass, and A's (the prepass's output) after griddepcontrol.wait. Each stage's
        // expect_tx counts A's bytes too, so no stage completes, and no consumer reads a slot, before its
        // A tile has landed.
        const int first_lap = num_k < kStages ? num_k : kStages;
        // v119: only stages 0 .. kEarlyBStages - 1 of the lap's B before the wait (v48-v113: the whole lap)
        const int early_b = first_lap < kEarlyBStages ? first_lap : kEarlyBStages;
        for (int kb = 0; kb < early_b; ++kb) {
            const Stage st = stage_of(ring, kb);
            mbar_arrive_expect_tx(full + 8 * kb, a_bytes + B_SCALE_BYTES + b_value_bytes);
            bulk_copy(st.b_scales, b_scale_tiles + static_cast<int64_t>(kb_first + kb) * B_SCALE_BYTES, B_SCALE_BYTES, full + 8 * kb);
            tensor_copy_2d(st.b_values, &d.b_map, (kb_first + kb) * (BLOCK_K / 2), n0, full + 8 * kb);
        }
        NVFP4_MARK(1);
        // NOTE: waits until the prepass grid has completed and its memory operations are performed and made
        // visible to this grid (PTX ISA, griddepcontrol); without a programmatic dependency it returns at
        // once. Everything this kernel reads of the prepass's output, A's tiles, is loaded by the copies
        // after it; v121: a split kernel's exchanging thread waits too before its flags (reduce_through_l2).
        asm volatile("griddepcontrol.wait;\n" ::: "memory");
        NVFP4_MARK(2);
        // v119: the early stages' A first (their B is in flight), then the lap's other B (armed here for A and B),
        // then their A: stage 0's A copy leaves the producer behind two stages of B, not the lap's eight.
        for (int kb = 0; kb < early_b; ++kb)
            bulk_copy(stage_of(ring, kb).a, d.a16 + a16_offset(d, t, kb_first + kb, 0, 0), a_bytes, full + 8 * kb);
        for (int kb = early_b; kb < first_lap; ++kb) {
            const Stage st = stage_of(ring, kb);
            mbar_arrive_expect_tx(full + 8 * kb, a_bytes + B_SCALE_BYTES + b_value_bytes);
            bulk_copy(st.b_scales, b_scale_tiles + static_cast<int64_t>(kb_first + kb) * B_SCALE_BYTES, B_SCALE_BYTES, full + 8 * kb);
            tensor_copy_2d(st.b_values, &d.b_map, (kb_first + kb) * (BLOCK_K / 2), n0, full + 8 * kb);
        }
        for (int kb = early_b; kb < first_lap; ++kb)
            bulk_copy(stage_of(ring, kb).a, d.a16 + a16_offset(d, t, kb_first + kb, 0, 0), a_bytes, full + 8 * kb);
        kb_start = first_lap;
    }
    for (int kb = kb_start; kb < num_k; ++kb) {
        const int s = kb % kStages, kg = kb_first + kb;
        // NOTE: parity of the previous use of this slot; a fresh barrier counts as completed for parity 1.
        // v109: lap0, the ring laps a stream CTA's earlier pieces took (each piece whole laps)
        mbar_wait(empty + 8 * s, ((kb / kStages + lap0) & 1) ^ 1);
        const Stage st = stage_of(ring, s);
        mbar_arrive_expect_tx(full + 8 * s, a_bytes + B_SCALE_BYTES + b_value_bytes);
        bulk_copy(st.a, d.a16 + a16_offset(d, t, kg, 0, 0), a_bytes, full + 8 * s);
        bulk_copy(st.b_scales, b_scale_tiles + static_cast<int64_t>(kg) * B_SCALE_BYTES, B_SCALE_BYTES, full + 8 * s);
        tensor_copy_2d(st.b_values, &d.b_map, kg * (BLOCK_K / 2), n0, full + 8 * s);
    }
}

// ---------------------------------------------------------------- the split-K exchange through L2
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
// Tile rows (m) r_begin .. r_end - 1 of the staged C tile to C: 16 threads a row, 16 bytes each, so
// a warp writes two whole 256-byte rows; rows past M are not stored.
// NOTE: C's base and row stride are 16-byte aligned (the host checks), n0 a multiple of 128.
__device__ __forceinline__ void store_staged_c(const GroupDesc& d, int cthread, int m0, int n0, uint32_t c_stage,
                                               int r_begin, int r_end) {
    #pragma unroll 4
    for (int idx = r_begin * 16 + cthread; idx < r_end * 16; idx += kConsumerThreads) {
        const int r = idx / 16, chunk = idx % 16;
        if (m0 + r < d.m)
            *reinterpret_cast<uint4*>(d.c + static_cast<int64_t>(m0 + r) * d.c_row + n0 + chunk * 8) =
                ld_shared_u4(c_stage + r * C_ROW_BYTES + chunk * 16);
    }
}

// shared -> global bulk copy (bytes a multiple of 16, both addresses 16-byte aligned) in this
// thread's bulk group; bulk_store_wait waits until every such copy of the thread has been written.
__device__ __forceinline__ void bulk_store(void* dst, uint32_t src, uint32_t bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst), "r"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_store_wait() {
    asm volatile("cp.async.bulk.commit_group;\ncp.async.bulk.wait_group 0;\n" ::: "memory");
}
__device__ __forceinline__ void flag_release(uint32_t* flag) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(flag), "r"(1u) : "memory");
}
__device__ __forceinline__ uint32_t flag_acquire(const uint32_t* flag) {
    uint32_t v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(flag) : "memory");
    return v;
}

// This thread's positions j_begin .. j_end - 1 of the tile summed over the S splits in split order
// (this CTA's own part from its staged partial in the ring, the others' from `received`) and
// stored to C, kBatch positions at a time: every read of a batch before its first add.
// NOTE: kMaxS bounds S at compile time so the parts of a batch are kBatch x kMaxS registers.
template <int kN, int kMaxS, int kBatch>
__device__ __forceinline__ void sum_share(int S, int split, int cthread, int row, int tig, uint32_t ring,
                                          uint32_t received, uint32_t share_bytes, int j_begin, int j_end) {
    const uint32_t c_stage = ring + C_STAGE_OFFSET;
    #pragma unroll 1
    for (int j0 = j_begin; j0 < j_end; j0 += kBatch) {
        float4 part[kBatch][kMaxS];
        #pragma unroll
        for (int i = 0; i < kBatch; ++i) {
            const int j = j0 + i;
            const uint32_t offset = (j - j_begin) * POSITION_BYTES + cthread * 16;
            #pragma unroll
            for (int s = 0; s < kMaxS; ++s)
                if (j < j_end && s < S)
                    part[i][s] = ld_shared_f4(s == split ? ring + j * POSITION_BYTES + cthread * 16
                                                         : received + (s < split ? s : s - 1) * share_bytes + offset);
        }
        #pragma unroll
        for (int i = 0; i < kBatch; ++i) {
            const int j = j0 + i;
            if (j >= j_end) break;
            float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
            #pragma unroll
            for (int s = 0; s < kMaxS; ++s) {
                if (s < S) { sum.x += part[i][s].x; sum.y += part[i][s].y; sum.z += part[i][s].z; sum.w += part[i][s].w; }
            }
            // sum: tile rows (n) row and row + 8, columns (m) 8j + 2 tig and + 1, as acc[4j + ...]
            const uint32_t at = c_stage + (8 * j + 2 * tig) * C_ROW_BYTES + row * 2;
            st_shared_half(at, sum.x * 16384.f);  // undo B's 2^-14 (v100)
            st_shared_half(at + 16, sum.z * 16384.f);
            st_shared_half(at + C_ROW_BYTES, sum.y * 16384.f);
            st_shared_half(at + C_ROW_BYTES + 16, sum.w * 16384.f);
        }
    }
}

// Split-K, consumer threads only, S > 1. Positions j = 0 .. kN / 8 - 1 of the tile (float4
// acc[4j ..] of every consumer thread) are shared out in S contiguous ranges; split q sums range q.
// This CTA's partial goes into its drained ring as [j][cthread] float4, the ranges of its peers from
// there to `partials` (its own [tile][split] slot, same layout), and its flag is raised; the
// exchanging thread (cthread 0) then waits for each peer's flag and copies the peer's part of this
// CTA's range into the ring after the partial, all on `gather`. Every thread then sums its own
// positions in split order into the staged C tile, and the CTA stores the tile's rows of its range.
// NOTE: deadlock-free only with every CTA of the grid resident: v122's launch (enqueue's NOTE) gives that on a GPU the
// call has to itself; v44-v121's was cooperative.
template <int kN>
__device__ __forceinline__ void reduce_through_l2(const Problem& problem, const GroupDesc& d, int tile, int split, int cthread,
                                                  int m0, int n0, int row, int tig, uint32_t ring, uint32_t gather,
                                                  const float* acc) {
    constexpr int kPositions = kN / 8;
    const int S = problem.splits;
    consumer_sync();  // NOTE: every consumer warp's last wgmma has read its stage before the ring is overwritten
    #pragma unroll
    for (int j = 0; j < kPositions; ++j)
        st_shared_f4(ring + j * POSITION_BYTES + cthread * 16, acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
    // NOTE: the bulk copy below reads these bytes through the async proxy: each writer's generic
    // stores are made visible to it before the barrier that lets the copy start.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    consumer_sync();
    const int j_begin = split * kPositions / S, j_end = (split + 1) * kPositions / S;
    const uint32_t share_bytes = (j_end - j_begin) * POSITION_BYTES;
    const uint32_t received = ring + PARTIAL_BYTES;  // peer i (splits in order, this one skipped) at i x share_bytes
    if (cthread == 0) {
        // NOTE: v121: the launch is the prepass's programmatic dependent and the prepass zeroes the flags: this thread
        // waits for it (griddepcontrol.wait is per thread; the prepass is long done, so it returns at once) before
        // the partial's store and the flags. Without a programmatic dependency it returns at once too.
        asm volatile("griddepcontrol.wait;\n" ::: "memory");
        uint8_t* const mine = reinterpret_cast<uint8_t*>(problem.partials) + static_cast<int64_t>(tile * S + split) * PARTIAL_BYTES;
        if (j_begin > 0) bulk_store(mine, ring, j_begin * POSITION_BYTES);
        if (j_end < kPositions)
            bulk_store(mine + j_end * POSITION_BYTES, ring + j_end * POSITION_BYTES, (kPositions - j_end) * POSITION_BYTES);
        bulk_store_wait();
        // NOTE: the partial was written by the async proxy; the proxy fence orders those writes
        // before this thread's generic release of the flag, which a peer's acquire pairs with.
        asm volatile("fence.proxy.async.global;\n" ::: "memory");
        flag_release(problem.flags + tile * S + split);
        if (share_bytes > 0) {
            mbar_arrive_expect_tx(gather, (S - 1) * share_bytes);
            // NOTE: v65: the peers are taken in the order their flags rise, each copy issued as soon as
            // its peer's flag is seen (v52 waited for them in split order, so a peer done early waited
            // behind an earlier split's late one); the copy still lands in split order's slot
            // (sum_share adds in split order whatever the arrival).
            uint32_t waiting = ((1u << S) - 1u) & ~(1u << split);  // S <= kMaxSplits = 8
            while (waiting != 0u) {
                for (int s = 0; s < S; ++s) {
                    if (!((waiting >> s) & 1u) || flag_acquire(problem.flags + tile * S + s) == 0u) continue;
                    waiting &= ~(1u << s);
                    // NOTE: the peer's bytes, seen by this thread's acquire, are read next by the async proxy.
                    asm volatile("fence.proxy.async.global;\n" ::: "memory");
                    const uint8_t* theirs = reinterpret_cast<const uint8_t*>(problem.partials) +
                                            static_cast<int64_t>(tile * S + s) * PARTIAL_BYTES + j_begin * POSITION_BYTES;
                    bulk_copy(received + (s < split ? s : s - 1) * share_bytes, theirs, share_bytes, gather);
                }
            }
        }
    }
    if (share_bytes == 0) return;  // NOTE: more splits than positions: this CTA sums nothing
    mbar_wait(gather, 0);
    // NOTE: 16 float4 of parts per batch whatever the bound on S (64 registers; the accumulators are dead).
    if (S == 2) sum_share<kN, 2, 8>(S, split, cthread, row, tig, ring, received, share_bytes, j_begin, j_end);
    else if (S <= 4) sum_share<kN, 4, 4>(S, split, cthread, row, tig, ring, received, share_bytes, j_begin, j_end);
    else sum_share<kN, kMaxSplits, 2>(S, split, cthread, row, tig, ring, received, share_bytes, j_begin, j_end);
    consumer_sync();  // NOTE: every thread's sums are in the C tile before any row of it is stored
    store_staged_c(d, cthread, m0, n0, ring + C_STAGE_OFFSET, 8 * j_begin, 8 * j_end);
}

// ---------------------------------------------------------------- v109: stream-K over the split launch's CTAs
// A stream launch's units are ring laps (kStages K blocks each, upt a tile), U = num_tiles x upt of them in tile order;
// CTA c takes units [c U / G, (c + 1) U / G) of G = problem.ctas, so its run may end inside one tile and go on into the
// next: one piece a tile it touches, each whole laps (a piece starts at ring slot 0, and chunks of kPromoteBlocks K
// blocks start where v100's do, at multiples of 4 blocks of the matrix's K).
struct StreamRange { int u0, u1, upt; long long units; };
__device__ __forceinline__ StreamRange stream_range(const Problem& problem, int c) {
    const int upt = problem.groups[0].k / BLOCK_K / kStages;
    const long long units = static_cast<long long>(problem.num_tiles) * upt;
    return {static_cast<int>(c * units / problem.ctas), static_cast<int>((c + 1) * units / problem.ctas), upt, units};
}
// The CTA whose run holds unit x (the largest c with c U / G <= x).
__device__ __forceinline__ int stream_cta_of(const Problem& problem, long long units, long long x) {
    return static_cast<int>(((x + 1) * problem.ctas - 1) / units);
}
// A tile's group, M tile, and its first rows of A (m0) and of B (n0).
struct TileAt { int g, t, m0, n0; };
__device__ __forceinline__ TileAt tile_at(const Problem& problem, int tile) {
    int g = 0;
    while (g + 1 < problem.num_groups && tile >= problem.groups[g + 1].tile_begin) ++g;
    const GroupDesc& d = problem.groups[g];
    const int local = tile - d.tile_begin, tiles_n = d.n / BLOCK_N;
    const int t = local / tiles_n;
    return {g, t, t * d.m_tile_rows, (local % tiles_n) * BLOCK_N};
}

// Producer thread 0 of a stream CTA: every piece's copies in order through one ring (produce(), its laps counted on).
template <int kN>
__device__ __forceinline__ void produce_stream(const Problem& problem, uint32_t ring, uint32_t full, uint32_t empty) {
    const StreamRange r = stream_range(problem, blockIdx.x);
    int lap = 0;
    for (int tile = r.u0 / r.upt; tile * r.upt < r.u1; ++tile) {
        const int a = max(r.u0, tile * r.upt) - tile * r.upt, b = min(r.u1, (tile + 1) * r.upt) - tile * r.upt;
        const TileAt at = tile_at(problem, tile);
        produce<false, false>(problem.groups[at.g], at.t, at.n0, kN, a * kStages, (b - a) * kStages, ring, full, empty, lap);
        lap += b - a;
    }
}

// v110: this thread's positions j_begin .. j_end - 1 of a stream tile summed over its S partials in K order (slot 0
// first) into the staged C tile, kBatch positions at a time: every load of a batch issued before its first add.
// Consumers of a stream CTA: each piece's K loop (consume()'s, the ring's parity carried from piece to piece). A piece
// that is not its tile's first K blocks (q > 0) publishes its fp32 sums to the tile's partial slot q with a flag and
// the CTA goes on; a tile's first piece (q = 0: the owner) is the CTA's last (the host admits a stream launch only
// where no run covers a whole tile, so every tile has S >= 2 and a run ending inside a tile holds that tile's head):
// its CTA waits for the tile's other flags, adds their partials to its registers in K order and stores C.
// NOTE: a CTA waits only after its last piece, every other piece published by then, and the launch is cooperative
// (every CTA resident): no wait can close a cycle. Of a tile's other pieces, the q = 1 .. S - 2 are their CTAs' only
// or last pieces (ending with those CTAs' loops), q = S - 1 a first piece, published early.
// NOTE: a published piece goes from registers straight to L2 as [position j][consumer thread] float4 (each store
// instruction of a warp 512 contiguous bytes), since the ring is already taking the next piece.
template <int kN>
__device__ __forceinline__ void consume_stream(const Problem& problem, uint32_t ring, const uint8_t* ring_generic,
                                               uint32_t full, uint32_t empty, uint32_t gather) {
    constexpr int kPositions = kN / 8;
    const int cthread = threadIdx.x - kProducerThreads;
    const int warp = cthread / 32, lane = cthread % 32;
    const int gid = lane / 4, tig = lane % 4;
    const int row = warp * 16 + gid;
    const StreamRange r = stream_range(problem, blockIdx.x);
    uint32_t desc0 = desc_low(ring);
    asm volatile("" : "+r"(desc0));
    const uint8_t* b_values0 = ring_generic + A_TILE_BYTES;
    const uint8_t* b_scales0 = ring_generic + A_TILE_BYTES + B_VALUE_BYTES;
    auto decode_slot = [&](int slot, uint32_t parity, uint32_t (&f)[4][4]) {
        mbar_wait(full + 8 * slot, parity);
        decode_b(b_values0 + slot * STAGE_BYTES, b_scales0 + slot * STAGE_BYTES, row, row, tig, f);
    };
    const int first_tile = r.u0 / r.upt;
    uint32_t phase = 0;  // parity of the ring's current lap, carried across pieces (each whole laps)
    for (int tile = first_tile; tile * r.upt < r.u1; ++tile) {
        const int a = max(r.u0, tile * r.upt) - tile * r.upt, b = min(r.u1, (tile + 1) * r.upt) - tile * r.upt;
        const int num_k = (b - a) * kStages;
        float acc[kN / 2], chunk[kN / 2];
        #pragma unroll
        for (int i = 0; i < kN / 2; ++i) acc[i] = 0.f;
        uint32_t frag[2][4][4];
        decode_slot(0, phase, frag[0]);
        for (int kb = 0; kb < num_k; kb += kStages, phase ^= 1) {
            #pragma unroll
            for (int slot = 0; slot < kStages; ++slot) {  // NOTE: num_k is whole laps: no block past the piece's end
                wgmma_fence();
                #pragma unroll
                for (int s = 0; s < 4; ++s)
                    wgmma_m64k16<kN>(chunk, frag[slot % 2][s], desc_sw128(desc0 + (slot * STAGE_BYTES + 32 * s) / 16),
                                     s > 0 || slot % kPromoteBlocks != 0);
                wgmma_commit();
                if (kb + slot > 0) mbar_arrive(empty + 8 * ((slot + kStages - 1) % kStages));
                if (kb + slot + 1 < num_k) {
                    const int next = (slot + 1) % kStages;
                    decode_slot(next, next == 0 ? phase ^ 1 : phase, frag[(slot + 1) % 2]);
                }
                wgmma_wait_all();
                if (slot % kPromoteBlocks == kPromoteBlocks - 1) {
                    #pragma unroll
                    for (int i = 0; i < kN / 2; ++i) acc[i] += chunk[i];
                }
            }
        }
        mbar_arrive(empty + 8 * (kStages - 1));  // NOTE: the piece's last block's stage (whole laps)
        const int c_first = stream_cta_of(problem, r.units, static_cast<long long>(tile) * r.upt);
        const int q = static_cast<int>(blockIdx.x) - c_first;
        if (cthread == 0 && (tile + 1) * r.upt >= r.u1) NVFP4_MARK(4);  // the CTA's last piece
        if (q > 0) {
            float4* const mine = reinterpret_cast<float4*>(problem.partials) +
                                 static_cast<int64_t>(tile * problem.splits + q) * (PARTIAL_BYTES / 16);
            #pragma unroll
            for (int j = 0; j < kPositions; ++j)
                __stcg(mine + j * kConsumerThreads + cthread, make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]));
            consumer_sync();  // NOTE: every consumer thread's stores of the partial precede thread 0's release
            if (cthread == 0) {
                __threadfence();
                flag_release(problem.flags + tile * problem.splits + q);
            }
            continue;
        }
        // The owner: this is the CTA's last piece (see above), so the ring is drained once every consumer is here.
        const int c_last = stream_cta_of(problem, r.units, static_cast<long long>(tile + 1) * r.upt - 1);
        const int S = c_last - c_first + 1;
        // NOTE: v113: the others' partials come into the drained ring by bulk copies (one instruction each, issued as
        // each flag is seen), kRound of them a round (the C stage's room), then every thread adds its positions from
        // shared memory in K order. v112 read them with __ldcg in batches of 8 float4 (the 168 registers ptxas allots
        // under the launch bounds): 4 L2 round trips in turn where S = 3, and its last CTA ended 0.94 µs later than
        // v111's (`probe marks gemm v111 v112`, session 76).
        constexpr uint32_t kPartBytes = kPositions * POSITION_BYTES;
        constexpr int kRound = C_STAGE_OFFSET / kPartBytes;  // 2 partials a round at 128 rows, 4 at 64, 8 at 32
        const uint8_t* const parts = reinterpret_cast<const uint8_t*>(problem.partials) +
                                     static_cast<int64_t>(tile * problem.splits) * PARTIAL_BYTES;
        #pragma unroll
        for (int i = 0; i < kN / 2; ++i) acc[i] = 0.f + acc[i];  // NOTE: 0 + own first, v110's sum's start (its bits)
        consumer_sync();  // NOTE: every consumer warp's last wgmma has read its stage before copies overwrite the ring
        for (int p0 = 1, round = 0; p0 < S; p0 += kRound, ++round) {
            const int p1 = min(S, p0 + kRound);
            if (cthread == 0) {
                mbar_arrive_expect_tx(gather, static_cast<uint32_t>(p1 - p0) * kPartBytes);
                uint32_t waiting = (1u << (p1 - p0)) - 1u;  // NOTE: partials p0 + i, copied in the order their flags rise
                while (waiting != 0u) {
                    for (int i = 0; i < p1 - p0; ++i) {
                        if (!((waiting >> i) & 1u) || flag_acquire(problem.flags + tile * problem.splits + p0 + i) == 0u) continue;
                        waiting &= ~(1u << i);
                        // NOTE: the partial's bytes, seen by this thread's acquire, are read next by the async proxy.
                        asm volatile("fence.proxy.async.global;\n" ::: "memory");
                        bulk_copy(ring + i * kPartBytes, parts + static_cast<int64_t>(p0 + i) * PARTIAL_BYTES, kPartBytes, gather);
                    }
                }
            }
            mbar_wait(gather, round & 1);
            for (int p = p0; p < p1; ++p) {  // NOTE: in K order (v100's split order)
                const uint32_t base = ring + (p - p0) * kPartBytes + cthread * 16;
                #pragma unroll
                for (int j = 0; j < kPositions; ++j) {
                    const float4 v = ld_shared_f4(base + j * POSITION_BYTES);
                    acc[4 * j] += v.x; acc[4 * j + 1] += v.y; acc[4 * j + 2] += v.z; acc[4 * j + 3] += v.w;
                }
            }
            if (p1 < S) consumer_sync();  // NOTE: every thread's reads of this round before the next round's copies
        }
        // acc[4j + {0,1,2,3}]: wgmma rows (n) row and row + 8, columns (m) 8j + 2 tig and + 1 (consume()'s epilogue).
        const uint32_t c_stage = ring + C_STAGE_OFFSET;
        #pragma unroll
        for (int j = 0; j < kPositions; ++j) {
            #pragma unroll
            for (int h = 0; h < 2; ++h) {
                const uint32_t at = c_stage + (8 * j + 2 * tig + h) * C_ROW_BYTES + row * 2;
                st_shared_half(at, acc[4 * j + h] * 16384.f);  // undo B's 2^-14 (v100)
                st_shared_half(at + 16, acc[4 * j + 2 + h] * 16384.f);
            }
        }
        consumer_sync();  // NOTE: the whole C tile is staged before any row of it is stored
        const TileAt at = tile_at(problem, tile);
        store_staged_c(problem.groups[at.g], cthread, at.m0, at.n0, c_stage, 0, kN);
    }
}

// Consumers: this CTA's num_k K blocks of one tile. B(kb + 1) is decoded while wgmma works on block
// kb; a stage is released once its wgmma has completed (A read) and its B was decoded (a step
// earlier), once the next block's wgmma is issued. With S > 1 the tile's CTAs exchange partials
// through L2 and each sums and stores its share of C.
template <int kN, bool kSplit>
__device__ __forceinline__ void consume(const Problem& problem, const GroupDesc& d, int tile, int split, int m0, int n0,
                                        int num_k, uint32_t ring, const uint8_t* ring_generic, uint32_t full, uint32_t empty,
                                        uint32_t gather) {
    const int cthread = threadIdx.x - kProducerThreads;
    const int warp = cthread / 32, lane = cthread % 32;
    const int gid = lane / 4, tig = lane % 4;
    const int row = warp * 16 + gid;  // tile-local row of B: consumer warps 0-3 rows 0..63, 4-7 the next 64

    // acc: the CTA's sum over its K range, added to in fp32 round-to-nearest (FADD) only. chunk: the
    // tensor core's sum over the current kPromoteBlocks K blocks, restarted from zero (scale-d = 0)
    // at each chunk's first k16 step, so its truncating additions never span more than one chunk.
    float acc[kN / 2], chunk[kN / 2];
    #pragma unroll
    for (int i = 0; i < kN / 2; ++i) acc[i] = 0.f;
    uint32_t frag[2][4][4];

    // NOTE: gemm v83's: computed once and passed through an empty asm, so the compiler keeps the finished low word
    // and adds each slot's constant to it, instead of rebuilding it from the ring's address every block (USHF,
    // ULOP3 x 2, UIADD3: a dependent chain between the warpgroups' wgmma wait and their next issue).
    uint32_t desc0 = desc_low(ring);  // slot 0's A tile; slot s is STAGE_BYTES / 16 x s further
    asm volatile("" : "+r"(desc0));
    const uint8_t* b_values0 = ring_generic + A_TILE_BYTES;
    const uint8_t* b_scales0 = ring_generic + A_TILE_BYTES + B_VALUE_BYTES;
    auto decode_slot = [&](int slot, uint32_t parity, uint32_t (&f)[4][4]) {
        mbar_wait(full + 8 * slot, parity);
        decode_b(b_values0 + slot * STAGE_BYTES, b_scales0 + slot * STAGE_BYTES, row, row, tig, f);
    };
    decode_slot(0, 0, frag[0]);
    if (cthread == 0) NVFP4_MARK(3);
    uint32_t phase = 0;  // parity of the ring's current lap
    for (int kb = 0; kb < num_k; kb += kStages, phase ^= 1) {
        #pragma unroll
        for (int slot = 0; slot < kStages; ++slot) {  // NOTE: kStages is even, so frag[slot % 2] follows k % 2
            if (kb + slot < num_k) {
                // NOTE: orders this thread's writes of frag, and its FADD reads of chunk, before wgmma
                // accesses them.
                wgmma_fence();
                // NOTE: kb is a multiple of kStages and kPromoteBlocks divides kStages, so a chunk starts
                // at a compile-time slot: the scale-d operand is an immediate.
                #pragma unroll
                for (int s = 0; s < 4; ++s)
                    wgmma_m64k16<kN>(chunk, frag[slot % 2][s], desc_sw128(desc0 + (slot * STAGE_BYTES + 32 * s) / 16),
                                     s > 0 || slot % kPromoteBlocks != 0);
                wgmma_commit();
                // NOTE: block k - 1's wgmma completed at the previous step's wait: its stage is free.
                // Released here, after k's issue, the arrive is off the path from a wait to the next issue.
                if (kb + slot > 0) mbar_arrive(empty + 8 * ((slot + kStages - 1) % kStages));
                if (kb + slot + 1 < num_k) {
                    const int next = (slot + 1) % kStages;
                    decode_slot(next, next == 0 ? phase ^ 1 : phase, frag[(slot + 1) % 2]);
                }
                wgmma_wait_all();  // NOTE: block k's wgmma read its A and frag: both free
                // A chunk's last block: its tensor-core sum joins acc, rounded to nearest.
                // NOTE: a compile-time test, so the FADDs sit in kStages / kPromoteBlocks slots of the
                // unrolled loop only (a run-time "or the CTA's last block" put them in all eight).
                if (slot % kPromoteBlocks == kPromoteBlocks - 1) {
                    #pragma unroll
                    for (int i = 0; i < kN / 2; ++i) acc[i] += chunk[i];
                }
            }
        }
    }
    // NOTE: a last chunk shorter than kPromoteBlocks ended without its FADD (its wgmma completed at the
    // loop's last wait); a full last chunk ended on slot kPromoteBlocks - 1 (mod) and was added there.
    if (num_k % kPromoteBlocks != 0) {
        #pragma unroll
        for (int i = 0; i < kN / 2; ++i) acc[i] += chunk[i];
    }
    mbar_arrive(empty + 8 * ((num_k - 1) % kStages));  // NOTE: the last block's stage
    if (cthread == 0) NVFP4_MARK(4);

    if constexpr (kSplit) {
        reduce_through_l2<kN>(problem, d, tile, split, cthread, m0, n0, row, tig, ring, gather, acc);
        return;
    }

    // acc[4j + {0,1,2,3}]: wgmma rows (n) row and row + 8, columns (m) 8j + 2 tig and + 1.
    const uint32_t c_stage = ring + C_STAGE_OFFSET;
    consumer_sync();  // NOTE: every consumer warp's last wgmma has read its stage before the C tile overwrites the ring
    #pragma unroll
    for (int j = 0; j < kN / 8; ++j) {
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
            const uint32_t at = c_stage + (8 * j + 2 * tig + h) * C_ROW_BYTES + row * 2;
            st_shared_half(at, acc[4 * j + h] * 16384.f);  // undo B's 2^-14 (v100)
            st_shared_half(at + 16, acc[4 * j + 2 + h] * 16384.f);
        }
    }
    consumer_sync();  // NOTE: the whole C tile is staged before any row of it is stored
    store_staged_c(d, cthread, m0, n0, c_stage, 0, kN);
}

// Two floats as a half2's bits, rounded to nearest: `lo` in the low half (the lower address).
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
    uint32_t bits;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(bits) : "f"(hi), "f"(lo));
    return bits;
}

// v66: a paired tile's C (kN rows of A x 64 rows of B, staged [m][n] in the drained ring) to C: 8 threads
// a row, 16 bytes each; rows past M are not stored.
__device__ __forceinline__ void store_staged_c_paired(const GroupDesc& d, int cthread, int m0, int n0, uint32_t c_stage,
                                                      int rows) {
    #pragma unroll 4
    for (int idx = cthread; idx < rows * 8; idx += kConsumerThreads) {
        const int r = idx / 8, chunk = idx % 8;
        if (m0 + r < d.m)
            *reinterpret_cast<uint4*>(d.c + static_cast<int64_t>(m0 + r) * d.c_row + n0 + chunk * 8) =
                ld_shared_u4(c_stage + r * C_ROW_BYTES + chunk * 16);
    }
}

// v66: consumers of a paired tile (unsplit): 64 rows of B, wgmma N = kN (the whole M tile), the CTA's K
// blocks dealt out by parity: warpgroup w takes kb = w, w + 2, ..., i.e. ring slots w, w + 2, w + 4, w + 6 of
// every lap. Each warpgroup runs v65's chain on its own blocks (B(k + 2) decoded while wgmma works on k, its
// previous slot released after k's issue) and its own chunks of kPromoteBlocks of its blocks; after the loop
// the two sums are added (fp32, round to nearest: a + b, whose result does not depend on the order) and C is
// stored, each warpgroup summing half of the positions.
// NOTE: why (v66's docstring): at 64-row A tiles (v11's shape for this launch) every CTA decoded 128 rows
// of B for wgmma N = 64; here a CTA decodes 64 rows for N = kN, and each warpgroup's chain has two blocks'
// tensor time to hide in.
// NOTE: v82: one instantiation per warpgroup (kWg), so every ring slot the loop names, its barriers' and its A tile's
// descriptors' offsets, is a compile-time constant (v74 computed them from a run-time warpgroup index each block).
template <int kN, int kWg>
__device__ __forceinline__ void consume_paired(const GroupDesc& d, int m0, int n0, int num_k, uint32_t ring,
                                               const uint8_t* ring_generic, uint32_t full, uint32_t empty) {
    const int cthread = threadIdx.x - kProducerThreads;
    constexpr int wg = kWg;
    const int wthread = cthread % 128;
    const int lane = cthread % 32;
    const int gid = lane / 4, tig = lane % 4;
    const int row = (wthread / 32) * 16 + gid;      // tile-local row of B, 0..63, the same in both warpgroups
    const int scale_row = (n0 % BLOCK_N) + row;     // its place in the 128-row blocked scale tile
    const int mine = num_k > wg ? (num_k - wg + 1) / 2 : 0;  // this warpgroup's K blocks

    float acc[kN / 2], chunk[kN / 2];
    #pragma unroll
    for (int i = 0; i < kN / 2; ++i) acc[i] = 0.f;
    uint32_t frag[2][4][4];

    // NOTE: v83: computed once and passed through an empty asm, so the compiler keeps the finished low word and adds
    // each slot's constant to it (v82's SASS rebuilt it from the ring's address every block: R2UR, USHF, ULOP3 x 2,
    // a dependent chain between a warpgroup's wgmma wait and its next issue).
    uint32_t desc0 = desc_low(ring);
    asm volatile("" : "+r"(desc0));
    const uint8_t* b_values0 = ring_generic + A_TILE_BYTES;
    const uint8_t* b_scales0 = ring_generic + A_TILE_BYTES + B_VALUE_BYTES;
    auto decode_slot = [&](int slot, uint32_t parity, uint32_t (&f)[4][4]) {
        mbar_wait(full + 8 * slot, parity);
        decode_b(b_values0 + slot * STAGE_BYTES, b_scales0 + slot * STAGE_BYTES, row, scale_row, tig, f);
    };
    if (mine > 0) decode_slot(wg, 0, frag[0]);
    if (cthread == 0) NVFP4_MARK(3);
    uint32_t phase = 0;
    // NOTE: kStages / 2 == kPromoteBlocks, so a warpgroup's chunk is its four blocks of one lap: the
    // chunk restarts (scale-d = 0) at its first slot of a lap and joins acc at its last.
    static_assert(kStages / 2 == kPromoteBlocks, "a paired warpgroup's chunk is its blocks of one lap");
    for (int kb = 0; kb < num_k; kb += kStages, phase ^= 1) {
        #pragma unroll
        for (int i = 0; i < kStages / 2; ++i) {  // NOTE: frag[i % 2] follows this warpgroup's block count mod 2
            const int slot = 2 * i + wg;
            if (kb + slot < num_k) {
                wgmma_fence();
                #pragma unroll
                for (int s = 0; s < 4; ++s)
                    wgmma_m64k16<kN>(chunk, frag[i % 2][s], desc_sw128(desc0 + (slot * STAGE_BYTES + 32 * s) / 16),
                                     s > 0 || i % kPromoteBlocks != 0);
                wgmma_commit();
                // NOTE: this warpgroup's previous block (slot - 2) completed at its last wait: released here.
                if (kb + slot >= 2) mbar_arrive(empty + 8 * ((slot + kStages - 2) % kStages));
                if (kb + slot + 2 < num_k) {
                    const int next = (slot + 2) % kStages;
                    decode_slot(next, slot + 2 >= kStages ? phase ^ 1 : phase, frag[(i + 1) % 2]);
                }
                wgmma_wait_all();
                if (i % kPromoteBlocks == kPromoteBlocks - 1) {
                    #pragma unroll
                    for (int j = 0; j < kN / 2; ++j) acc[j] += chunk[j];
                }
            }
        }
    }
    // NOTE: a last chunk of fewer than kPromoteBlocks blocks ended without its FADD.
    if (mine % kPromoteBlocks != 0) {
        #pragma unroll
        for (int j = 0; j < kN / 2; ++j) acc[j] += chunk[j];
    }
    if (mine > 0) mbar_arrive(empty + 8 * ((wg + 2 * (mine - 1)) % kStages));  // NOTE: its last block's slot
    if (cthread == 0) NVFP4_MARK(4);

    // The two warpgroups' sums: positions j (acc[4j .. 4j + 3]) of the first half summed by warpgroup 0,
    // the second half by warpgroup 1; each writes the other's half of its own sums to the drained ring.
    constexpr int kPositions = kN / 8, kHalf = kPositions / 2;
    constexpr uint32_t kSlotBytes = 128 * 16;  // one position of every thread of a warpgroup
    consumer_sync_unaligned();  // NOTE: every wgmma has read its stage before the ring is overwritten
    #pragma unroll
    for (int j = 0; j < kPositions; ++j) {
        if ((j < kHalf) != (wg == 0))  // NOTE: the other warpgroup's half
            st_shared_f4(ring + j * kSlotBytes + wthread * 16, acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
    }
    consumer_sync_unaligned();
    // v68: the sums staged as half2 pairs by stmatrix (.trans), four 8 x 8 blocks an instruction, instead of one
    // st.shared.b16 a value (v66: 64 a thread at kN = 128, each after its own cvt).
    // NOTE: a thread's pair (acc[4j], acc[4j + 1]) is wgmma row (n) `row`, columns (m) 8j + 2 tig and + 1: the
    // 8 x 8 fragment layout of stmatrix. Transposed on the store, block (j, nb) lands as C rows (m) 8j .. 8j + 7,
    // columns (n) 16 x warp + 8 nb .. + 7: 16 contiguous bytes a row of the [m][n] staging. Lane 8i + r gives the
    // address of row r of block i = (j0 + i / 2, nb = i % 2). cvt.rn of sum x 128 (a power of two) is v66's
    // __float2half_rn of the same product: C is v66's bit for bit.
    const uint32_t c_stage = ring + C_STAGE_OFFSET;
    const int warp_in_group = wthread / 32;
    const int block_of_lane = lane / 8, row_of_lane = lane % 8;
    static_assert(kHalf % 2 == 0, "positions go to stmatrix two at a time");
    #pragma unroll
    for (int j0 = 0; j0 < kPositions; j0 += 2) {
        if ((j0 < kHalf) == (wg == 0)) {
            uint32_t packed[4];
            #pragma unroll
            for (int q = 0; q < 2; ++q) {
                const int j = j0 + q;
                const float4 other = ld_shared_f4(ring + j * kSlotBytes + wthread * 16);
                packed[2 * q] = pack_half2((acc[4 * j] + other.x) * 16384.f, (acc[4 * j + 1] + other.y) * 16384.f);
                packed[2 * q + 1] = pack_half2((acc[4 * j + 2] + other.z) * 16384.f, (acc[4 * j + 3] + other.w) * 16384.f);
            }
            const uint32_t at = c_stage + (8 * (j0 + block_of_lane / 2) + row_of_lane) * C_ROW_BYTES +
                                (16 * warp_in_group + 8 * (block_of_lane % 2)) * 2;
            asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n"
                         ::"r"(at), "r"(packed[0]), "r"(packed[1]), "r"(packed[2]), "r"(packed[3]) : "memory");
        }
    }
    consumer_sync_unaligned();  // NOTE: the whole C tile is staged before any row of it is stored
    store_staged_c_paired(d, cthread, m0, n0, c_stage, kN);
}

// NOTE: one CTA per SM; 384 threads at launch get 168 registers each, then setmaxnreg moves them
// from the producer warpgroup (40) to the consumers (232).
// NOTE: one instantiation per tile height kN (v19: one kernel switching among four consumer loops):
// every tile of a launch runs wgmma N = kN, the launch's m_tile_rows; the last M tile's rows past M
// are zeros in the prepass's tile and are not stored.
// NOTE: and one per split-or-not (v30: both epilogues in every kernel): kSplit launches have S > 1,
// the others S = 1, so an unsplit kernel never reads problem.splits.
// NOTE: v66: and one per paired-or-not (kPaired: unsplit, 64 rows of B a tile, consume_paired).
// NOTE: v111: and a stream launch (kStream, v109) its own: v110 ran it as a branch of the split kernel, and the split
// launches' code, though it never took the branch, lost 0.972x on 128x4096x7168 (`compare gemm v100 v110`, session 76).
template <int kN, bool kSplit, bool kPaired, bool kStream>
__global__ void __launch_bounds__(kThreads, 1)
gemm_kernel(const __grid_constant__ Problem problem) {
    static_assert(!(kSplit && kPaired), "a paired launch is never split");
    static_assert(!kStream || kSplit, "a stream launch is a split launch (S > 1: partials and flags)");
    extern __shared__ uint8_t smem_raw[];
    // NOTE: the 128-byte swizzle pattern repeats every 1024 bytes; the descriptor assumes tiles
    // that start on such a boundary (base offset 0).
    const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
    const uint32_t ring = (smem_base + 1023u) & ~1023u;
    const uint8_t* ring_generic = smem_raw + (ring - smem_base);  // the same bytes, for plain loads
    const uint32_t full = ring + kStages * STAGE_BYTES, empty = full + 8 * kStages, gather = empty + 8 * kStages;

    // NOTE: a tile's S CTAs are adjacent in blockIdx (its partials and flags are [tile][split]).
    const int splits = kSplit ? problem.splits : 1;
    const int tile = kSplit ? static_cast<int>(blockIdx.x) / splits : static_cast<int>(blockIdx.x);
    const int split = kSplit ? static_cast<int>(blockIdx.x) % splits : 0;
    int g = 0;
    while (g + 1 < problem.num_groups && tile >= problem.groups[g + 1].tile_begin) ++g;
    const GroupDesc& d = problem.groups[g];
    const int local = tile - d.tile_begin;
    constexpr int tile_n = kPaired ? PAIRED_N : BLOCK_N;
    const int tiles_n = d.n / tile_n;
    const int t = local / tiles_n;
    const int m0 = t * d.m_tile_rows;
    const int n0 = (local % tiles_n) * tile_n;
    constexpr int n_cols = kN;  // wgmma's N for every tile of the launch
    // This CTA's K blocks: split's share of the batch's, as even as integers allow (at least
    // kMinBlocksPerSplit once S > 1); the last split ends at the last block.
    const int blocks = d.k / BLOCK_K;
    const int kb_first = kSplit ? split * blocks / splits : 0;
    const int num_k = kSplit ? (split + 1) * blocks / splits - kb_first : blocks;

    if (threadIdx.x == 0) {
        NVFP4_MARK(0);
        if constexpr (!kStream) {
            // NOTE: v48's (v121: split launches too): B's tensor map (this launch's parameter) fetched into the TMA unit's cache while
            // the barriers are initialised, before the first copy that names it (under the prepass).
            asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&d.b_map)) : "memory");
        }
        for (int s = 0; s < kStages; ++s) {
            mbar_init(full + 8 * s, kFullArrivals);
            mbar_init(empty + 8 * s, kPaired ? kPairedEmptyArrivals : kEmptyArrivals);
        }
        mbar_init(gather, 1);  // NOTE: one arrival, the exchanging thread's expect_tx; the peers' parts count bytes
        // NOTE: makes the initialised barriers visible to the async proxy (the bulk copies' completion).
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();  // NOTE: the last CTA-wide barrier: the producer warpgroup leaves below, thread 0 after its copies

    if (threadIdx.x < kProducerThreads) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegisters));
        if (threadIdx.x == 0) {
            if constexpr (kStream) produce_stream<kN>(problem, ring, full, empty);  // v109
            else produce<true, kPaired>(d, t, n0, n_cols, kb_first, num_k, ring, full, empty);
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegisters));
    if constexpr (kPaired) {
        if (threadIdx.x < kProducerThreads + 128) consume_paired<kN, 0>(d, m0, n0, num_k, ring, ring_generic, full, empty);
        else consume_paired<kN, 1>(d, m0, n0, num_k, ring, ring_generic, full, empty);
    }
    else {
        if constexpr (kStream) consume_stream<kN>(problem, ring, ring_generic, full, empty, gather);  // v109
        else consume<kN, kSplit>(problem, d, tile, split, m0, n0, num_k, ring, ring_generic, full, empty, gather);
    }
    if (threadIdx.x == kProducerThreads) NVFP4_MARK(5);
}

// A launch's kind: which gemm_kernel instantiation runs it.
enum LaunchKind { kSplitLaunch = 0, kPairedLaunch = 1, kPlainLaunch = 2, kStreamLaunch = 3, kLaunchKinds = 4 };

static LaunchKind kind_of(const Problem& problem) {
    if (problem.stream) return kStreamLaunch;
    if (problem.splits > 1) return kSplitLaunch;
    return problem.tile_n == PAIRED_N ? kPairedLaunch : kPlainLaunch;
}

template <int kN>
static void (*kernel_of_kind(LaunchKind kind))(Problem) {
    switch (kind) {
        case kSplitLaunch: return gemm_kernel<kN, true, false, false>;
        case kPairedLaunch: return gemm_kernel<kN, false, true, false>;
        case kStreamLaunch: return gemm_kernel<kN, true, false, true>;
        default: return gemm_kernel<kN, false, false, false>;
    }
}

// The kernel for a launch whose M tiles are `rows` rows (a multiple of M_STEP up to BLOCK_M_MAX) of `kind`.
static void (*kernel_for(int rows, LaunchKind kind))(Problem) {
    switch (rows) {
        case 32: return kernel_of_kind<32>(kind);
        case 64: return kernel_of_kind<64>(kind);
        case 96: return kernel_of_kind<96>(kind);
        default: return kernel_of_kind<128>(kind);
    }
}

// S for a launch of `tiles` tiles whose shortest batch has `min_blocks` K blocks: the most splits
// that keep the launch in one wave (tiles x S <= SMs; one resident CTA per SM) with at least
// kMinBlocksPerSplitWave K blocks each.
// NOTE: fitted to splitk_sweep.py on dual_gemm v3 and gemm v6 (H200): on all seven benchmark shapes
// the rule picks the measured best S or one within 4% of it.
// A second wave, or splits under ~24 blocks, cost more than the extra parallelism gave on every
// shape measured: each split pays the kernel's prologue, its fill and the finisher's read of its
// partial tile.
// NOTE: v10-v26 added one condition, all `tiles` clusters of S CTAs resident at once (a cluster
// lives inside one GPC); v30 exchanges partials through L2 and needs only every CTA resident, which
// tiles x S <= SMs gives (one CTA per SM) and the cooperative launch guaranteed (v122: no longer; enqueue's NOTE).
static int choose_splits(int tiles, int min_blocks, int sms) {
    constexpr int kMinBlocksPerSplitWave = 24;
    int best = 1;
    for (int S = 2; S <= kMaxSplits && static_cast<long>(tiles) * S <= sms && min_blocks / S >= kMinBlocksPerSplitWave; ++S)
        best = S;
    return best;
}

// v109: a split launch (S > 1) as a stream launch when that shortens its longest CTA by 8% or more: one CTA an SM,
// each an equal run of the launch's ring laps (stream_range). Only where every batch's K blocks are whole laps
// (pieces of whole laps keep v100's loop and chunking), at least three laps a CTA (kMinBlocksPerSplitWave's 24
// blocks), and no tile shared by more than kMaxSplits CTAs (its partial slots). problem.splits becomes the most CTAs
// any tile is shared by (its slots a tile), problem.ctas the SMs.
// NOTE: session 75 (`run gemm v100 --method kernel`, one process, H200): 128 x N x 16384 with 112, 126 and 132 split
// CTAs of 128 K blocks each (N 7168, 8064, 8448) took 56.26, 56.76 and 56.78 µs: the blocks hold their rate on every SM,
// so 128x7168x16384's 20 idle SMs are worth their share of the loop.
static void choose_stream(Problem& problem, int sms) {
    if (problem.splits < 2) return;
    const int blocks = problem.groups[0].k / BLOCK_K;
    for (int g = 1; g < problem.num_groups; ++g)
        if (problem.groups[g].k != problem.groups[0].k) return;
    if (blocks % kStages != 0) return;
    const int upt = blocks / kStages;
    const long long units = static_cast<long long>(problem.num_tiles) * upt, ctas = sms;
    if (units < 3 * ctas) return;
    // NOTE: v112: no run as long as a tile, so none covers one whole: every tile has S >= 2 and its head piece is its
    // CTA's last (consume_stream's owner). A split launch has tiles <= SMs / 2, so runs are about half a tile or less.
    if ((units + ctas - 1) / ctas >= upt) return;
    const long long longest = (units + ctas - 1) / ctas * kStages;  // K blocks of the longest stream CTA
    const long long split_longest = (blocks + problem.splits - 1) / problem.splits;
    if (longest * 100 > split_longest * 92) return;
    int most = 1;
    for (int tile = 0; tile < problem.num_tiles; ++tile) {
        const long long x0 = static_cast<long long>(tile) * upt, x1 = x0 + upt - 1;
        const long long c0 = ((x0 + 1) * ctas - 1) / units, c1 = ((x1 + 1) * ctas - 1) / units;
        if (c1 - c0 + 1 > most) most = static_cast<int>(c1 - c0 + 1);
    }
    if (most < 2 || most > kMaxSplits) return;  // NOTE: 1 would run the unsplit kernel, which reads no slots
    problem.splits = most;
    problem.ctas = sms;
    problem.stream = 1;
}

// Fills one chunk's Problem (up to kMaxGroups batches from `first`) with M tiles of at most
// `max_rows` rows, workspace pointers left null; returns the bytes of tiled fp16 A its batches
// need, or -2 (shape not supported).
static int64_t fill_chunk_rows(const int64_t* desc, int num_groups, int first, int sms, int max_rows, Problem& problem,
                               int& decode_blocks) {
    problem.num_groups = num_groups - first < kMaxGroups ? num_groups - first : kMaxGroups;
    int tiles = 0, min_blocks = 1 << 30;
    int64_t bytes = 0;
    decode_blocks = 0;
    for (int g = 0; g < problem.num_groups; ++g) {
        const int64_t* p = desc + (first + g) * 14;
        GroupDesc& d = problem.groups[g];
        d.a = reinterpret_cast<const uint8_t*>(p[0]);
        d.b = reinterpret_cast<const uint8_t*>(p[1]);
        d.sfa = reinterpret_cast<const uint8_t*>(p[2]);
        d.sfb_blocked = reinterpret_cast<const uint8_t*>(p[3]);
        d.c = reinterpret_cast<__half*>(p[4]);
        d.a16 = nullptr;
        d.m = static_cast<int>(p[6]);
        d.n = static_cast<int>(p[7]);
        d.k = static_cast<int>(p[8]);
        d.a_row = p[9]; d.b_row = p[10]; d.sfa_row = p[11]; d.c_row = p[13];
        if (d.n % BLOCK_N != 0 || d.k % BLOCK_K != 0 || d.m < 1 || d.k < BLOCK_K) return -2;
        // NOTE: a tensor map needs a 16-byte aligned base and row stride: B's.
        if (d.b_row % 16 != 0 || reinterpret_cast<uintptr_t>(d.b) % 16 != 0) return -2;
        if (reinterpret_cast<uintptr_t>(d.sfb_blocked) % 16 != 0) return -2;  // NOTE: bulk copies need 16-byte sources
        // NOTE: the tallest tiles (fewest decodes of B per output); group_gemm v15 shrank them to
        // 128 or 64 rows to reach the SMs, which split-K does here instead.
        d.m_tiles = (d.m + max_rows - 1) / max_rows;
        d.m_tile_rows = ((d.m + d.m_tiles - 1) / d.m_tiles + M_STEP - 1) / M_STEP * M_STEP;
        d.tile_begin = tiles;
        tiles += d.m_tiles * (d.n / BLOCK_N);
        d.decode_begin = decode_blocks;
        decode_blocks += (decode_threads_of(d) + kDecodeThreads - 1) / kDecodeThreads;
        bytes += static_cast<int64_t>(d.m_tiles) * d.m_tile_rows * d.k * 2;
        if (d.k / BLOCK_K < min_blocks) min_blocks = d.k / BLOCK_K;
    }
    // NOTE: v25 runs one wgmma N per launch (the kernel instantiation for its tile height), so its
    // batches must share one: they do, sharing M (the L batches of one A tensor).
    for (int g = 1; g < problem.num_groups; ++g)
        if (problem.groups[g].m_tile_rows != problem.groups[0].m_tile_rows) return -2;
    problem.num_tiles = tiles;
    problem.splits = choose_splits(tiles, min_blocks, sms);
    problem.ctas = tiles * problem.splits;
    problem.stream = 0;
    choose_stream(problem, sms);  // v109
    problem.tile_n = BLOCK_N;
    return bytes;
}

// v66: `problem` (unsplit, as fill_chunk_rows left it) re-laid as paired tiles of 64 rows of B; returns
// their count (the tiles' M layout is unchanged).
static int pair_tiles(Problem& problem) {
    int tiles = 0;
    for (int g = 0; g < problem.num_groups; ++g) {
        GroupDesc& d = problem.groups[g];
        d.tile_begin = tiles;
        tiles += d.m_tiles * (d.n / PAIRED_N);
    }
    problem.num_tiles = tiles;
    problem.ctas = tiles;  // v109: unsplit
    problem.tile_n = PAIRED_N;
    return tiles;
}

// Fills one chunk's Problem as fill_chunk_rows with M tiles of at most BLOCK_M_MAX rows; when that
// leaves S = 1 and idle SMs, with M tiles of a half or a quarter of the tallest (at least M_STEP
// rows), the shortest whose tile count still fits one wave. Returns as fill_chunk_rows.
// NOTE: gemm v11's change (1.165x on 128x7168x2048 over v9). Shorter tiles repeat B's decode per M
// tile but need no reduction; split-K (S > 1) keeps the tallest tiles, where it was measured to win.
// NOTE: v66: paired tiles (64 rows of B, the M tiles kept) where they fill at least as many SMs as the
// shorter M tiles would (128x7168x2048: 112 and 112), still in one wave: a CTA then decodes half the rows
// of B for twice the wgmma N, instead of all of them for half.
static int64_t fill_chunk(const int64_t* desc, int num_groups, int first, int sms, Problem& problem, int& decode_blocks) {
    const int64_t bytes = fill_chunk_rows(desc, num_groups, first, sms, BLOCK_M_MAX, problem, decode_blocks);
    if (bytes < 0 || problem.splits > 1 || problem.num_tiles >= sms) return bytes;
    Problem paired = problem;
    const int paired_tiles = pair_tiles(paired) <= sms ? paired.num_tiles : 0;
    int tallest = M_STEP;
    for (int g = 0; g < problem.num_groups; ++g)
        if (problem.groups[g].m_tile_rows > tallest) tallest = problem.groups[g].m_tile_rows;
    for (int shrink = 4; shrink >= 2; shrink /= 2) {
        const int max_rows = (tallest / shrink) / M_STEP * M_STEP;
        if (max_rows < M_STEP) continue;
        Problem shorter;
        int shorter_blocks = 0;
        const int64_t shorter_bytes = fill_chunk_rows(desc, num_groups, first, sms, max_rows, shorter, shorter_blocks);
        if (shorter_bytes < 0 || shorter.num_tiles > sms) continue;
        if (paired_tiles >= shorter.num_tiles) break;  // NOTE: the paired layout fills as many SMs (v66)
        shorter.splits = 1;
        shorter.ctas = shorter.num_tiles;  // v109
        shorter.stream = 0;
        problem = shorter;
        decode_blocks = shorter_blocks;
        return shorter_bytes;
    }
    if (paired_tiles > 0) problem = paired;
    return bytes;
}

static int prepare_device(int& device, int& sms) {
    cudaGetDevice(&device);
    static bool smem_opted_in[64] = {};
    static int sm_count[64] = {};
    if (device >= 64) return static_cast<int>(cudaErrorInvalidDevice);
    if (!smem_opted_in[device]) {  // NOTE: above 48 KB a kernel must opt in, once per device
        for (int rows = M_STEP; rows <= BLOCK_M_MAX; rows += M_STEP) {
            for (int kind = 0; kind < kLaunchKinds; ++kind) {
                const cudaError_t err = cudaFuncSetAttribute(kernel_for(rows, static_cast<LaunchKind>(kind)),
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

// B's tensor map of every batch of a chunk: N rows x K/2 bytes at the batch's row stride, copied
// as boxes of 128 rows x 32 bytes (one K block) that land densely, row r at r x 32. Returns 0, or
// -3 (no driver entry point) / -4 (the driver refused a map).
// NOTE: the entry point is fetched once through the runtime, so the extension links no libcuda.
static int encode_b_maps(Problem& problem) {
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
        const cuuint64_t dims[2] = {static_cast<cuuint64_t>(d.k / 2), static_cast<cuuint64_t>(d.n)};
        const cuuint64_t strides[1] = {static_cast<cuuint64_t>(d.b_row)};  // bytes from row to row
        const cuuint32_t box[2] = {BLOCK_K / 2, static_cast<cuuint32_t>(problem.tile_n)};
        const cuuint32_t element_strides[2] = {1, 1};
        const CUresult r = encode(&d.b_map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<uint8_t*>(d.b), dims, strides,
                                  box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                  CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        if (r != CUDA_SUCCESS) return -4;
    }
    return 0;
}

// v47: a launch plan, built once per input set (the cache in CPP_SRC keys it by everything it depends
// on: every pointer, shape, stride, dtype and the device) and launched on every call: each chunk's
// Problem by value (B's tensor maps encoded, tiles counted, splits chosen), the workspace's layout, and
// from the plan's second call a CUDA graph of its launches, so a call is one graph launch on the host.
// NOTE: a plain launcher (no torch headers, so the file compiles alone with nvcc). ``desc`` holds
// per batch: a, b, sfa, blocked sfb, c pointers, an unused slot, then m, n, k, a_row, b_row,
// sfa_row, an unused slot, c_row. More than kMaxGroups batches: one launch pair per chunk (the
// parameter space is 4 KB), in stream order.
struct ChunkLaunch {
    Problem problem;                     // a16, partials and flags point into the plan's `workspace`
    int64_t a16_offset[kMaxGroups];      // each batch's tiled fp16 A, bytes from the workspace's start
    int decode_blocks;
};
struct LaunchPlan {
    std::vector<ChunkLaunch> chunks;
    // The workspace (v44's layout): every chunk's tiled fp16 A, each chunk from a 256-byte boundary;
    // then, if any chunk splits K, one region of partials and one of flags sized for the largest such
    // chunk (chunks run in stream order, and each chunk's prepass zeroes the flags its GEMM kernel uses).
    int64_t workspace_bytes, partial_offset, flag_offset;
    const void* workspace;               // the workspace the Problems point into now (null: none yet)
    int calls;                           // calls outside a capture so far (up to 2): the graph is built on the second
    bool graph_refused;                  // a build failed: plain launches from then on, no retry per call
    cudaGraphExec_t exec;                // null until built; its nodes point into `exec_workspace`
    const void* exec_workspace;
};

// A new plan for ``desc`` (delete with gemm_free_plan), or null with *err: -1 no batches, -2 shape not
// supported, -3 no cuTensorMapEncodeTiled, -4 the driver refused a tensor map, > 0 a CUDA error.
void* gemm_build_plan(const int64_t* desc, int num_groups, int64_t* workspace_bytes, int* err) {
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
        if (chunk.problem.splits > 1) {
            const int64_t ctas = static_cast<int64_t>(chunk.problem.num_tiles) * chunk.problem.splits;
            if (ctas * PARTIAL_BYTES > partial_bytes) partial_bytes = ctas * PARTIAL_BYTES;
            if ((ctas * 4 + 255) / 256 * 256 > flag_bytes) flag_bytes = (ctas * 4 + 255) / 256 * 256;
        }
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
void gemm_free_plan(void* handle) {
    LaunchPlan* plan = static_cast<LaunchPlan*>(handle);
    if (plan->exec != nullptr) cudaGraphExecDestroy(plan->exec);
    delete plan;
}

// Ways the plans' work went out since the module loaded: graph launches, plain launch pairs (a plan's
// first call, a stream under capture, a graph that could not be built), graphs built, builds refused.
static int64_t call_paths[4] = {0, 0, 0, 0};
void gemm_launch_counts(int64_t* out) {
    for (int i = 0; i < 4; ++i) out[i] = call_paths[i];
}

// The plan's launches on ``stream``: per chunk the prepass, then the GEMM kernel: stream, v44's cooperative
// launch; otherwise the prepass's programmatic dependent (v52; v122: split too). Returns 0 or a CUDA error.
static int enqueue(const LaunchPlan& plan, cudaStream_t stream) {
    for (const ChunkLaunch& chunk : plan.chunks) {
        const Problem& problem = chunk.problem;
        decode_a_kernel<<<chunk.decode_blocks, kDecodeThreads, 0, stream>>>(problem);
        cudaLaunchConfig_t config = {};
        cudaLaunchAttribute attribute;
        if (problem.stream) {
            // NOTE: a stream CTA waits for other CTAs' flags: the cooperative launch guarantees all are resident.
            attribute.id = cudaLaunchAttributeCooperative;
            attribute.val.cooperative = 1;
        } else {
            // NOTE: v52: programmatic stream serialization (v48's): this grid may be scheduled once every
            // prepass block has executed griddepcontrol.launch_dependents, not when the prepass ends; only the
            // producer's griddepcontrol.wait orders its reads of the prepass's output (A's tiles). The prepass
            // is a plain launch, so it still starts after everything queued before it (the previous call's
            // GEMM included, whose workspace it rewrites). Under a stream capture (build_graph's, or a
            // caller's) the attribute becomes a programmatic edge between the two kernel nodes (CUDA 12.3+).
            // v48 on 128x7168x2048 (H200): the wait returned 0.07 us after B was armed, 1.071x over v47.
            // v122: a split launch too, and not cooperative (v121 was both and read SAME: dual_gemm v37 found a
            // cooperative dependent is not placed until its prepass has ended).
            // NOTE: a split CTA waits for its S - 1 peers' flags, so they must all be resident together. The launch is
            // tiles x S <= SMs CTAs of one an SM (choose_splits; the ring's shared memory), dispatched in blockIdx
            // order as SMs free up; nothing they wait on waits on them (the prepass's blocks run to their end), so
            // every peer is placed once the prepass has left its SMs. The cooperative attribute guaranteed that on a
            // GPU shared with other work too; this launch assumes the call has the GPU's SMs (as GPU MODE's eval does).
            attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
            attribute.val.programmaticStreamSerializationAllowed = 1;
        }
        config.gridDim = dim3(problem.ctas, 1, 1);  // v109: a stream launch's CTAs are not tiles x splits
        config.blockDim = dim3(kThreads, 1, 1);
        config.dynamicSmemBytes = SMEM_BYTES;
        config.stream = stream;
        config.attrs = &attribute;
        config.numAttrs = 1;
        cudaError_t err = cudaGetLastError();  // NOTE: the prepass's launch error, if any
        if (err == cudaSuccess)
            err = cudaLaunchKernelEx(&config, kernel_for(problem.groups[0].m_tile_rows, kind_of(problem)), problem);
        if (err != cudaSuccess) return static_cast<int>(err);
    }
    return 0;
}

// The plan's graph: enqueue() recorded by a stream capture on a stream of this extension's own, then
// instantiated. Returns 0, or a CUDA error with no exec made (the error cleared).
// NOTE: captured, not assembled node by node, so the graph holds exactly enqueue()'s launches: the
// cooperative attribute of a stream GEMM kernel becomes its node's (v30-v46 ran under torch's
// capture, `run --graph`, with the same launches), and an unsplit one's programmatic stream
// serialization a programmatic edge from the prepass's node (v48's; CUDA 12.3+; a runtime that refuses it
// fails the build, and the plan falls back to plain launches: launch_counts()'s fourth count). Thread-local capture mode: another thread's
// unrelated CUDA calls neither break this capture nor are refused because of it.
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
// aligned), on the current device ``device``: one graph launch, or v44's launches. Returns 0 or a CUDA error.
// NOTE: a launch copies its parameter (the Problem) when it is called, and an exec holds its own
// copies, so the plan's Problems may change as soon as this returns, whatever the device is running.
// NOTE: plain launches where a graph would not pay or not be safe: a plan's first call (an input set
// called once, as `test`'s seeds and GPU MODE's checking clones are, costs no instantiation), and a
// stream under capture (the caller's capture records the launches, as v44's; an exec launched into
// or instantiated during a capture would tie this plan to the caller's graph). A graph the runtime
// would not build (e.g. refused while another thread captures in global mode) falls back to them too.
int gemm_launch(void* handle, void* workspace, int64_t stream_handle, int device) {
    LaunchPlan& plan = *static_cast<LaunchPlan*>(handle);
    const cudaStream_t stream = reinterpret_cast<cudaStream_t>(stream_handle);
    if (plan.workspace != workspace) {  // NOTE: a first call, another stream's workspace, or a grown one
        uint8_t* const base = static_cast<uint8_t*>(workspace);
        for (ChunkLaunch& chunk : plan.chunks) {
            for (int g = 0; g < chunk.problem.num_groups; ++g) chunk.problem.groups[g].a16 = base + chunk.a16_offset[g];
            chunk.problem.partials = reinterpret_cast<float*>(base + plan.partial_offset);
            chunk.problem.flags = reinterpret_cast<uint32_t*>(base + plan.flag_offset);
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
#include <algorithm>

void* gemm_build_plan(const int64_t* desc, int num_groups, int64_t* workspace_bytes, int* err);
void gemm_free_plan(void* plan);
int gemm_launch(void* plan, void* workspace, int64_t stream_handle, int device);
void gemm_launch_counts(int64_t* out);

// v47: every error a caller can cause is raised through CPython (PyErr_SetString), its message formatted
// by vsnprintf; nothing here builds a c10::Error or writes into a C++ stream.
// NOTE: v43 and v44 ended the process (SIGSEGV, H200, torch 2.11) on the permuted sfa made contiguous, where
// v44's only failing check is check_blocked_scales's TORCH_CHECK, whose message streams integers
// (n / 128, k / 64, the sizes) through c10::str's std::ostringstream; v44's checks that raised cleanly on the
// same machine (an fp32 or bf16 c, a on the CPU) stream only text (a ScalarType's name, a Device). group_gemm
// v42 crashed the same way on "... (group ", g, ")", and its v43 (messages by vsnprintf) raised every such case
// cleanly there. A CPU build of torch 2.13 raises all of them cleanly: the fault is that machine's, read from
// the pattern, not reproduced here; the cure is to hand no integer to a C++ stream on any path a caller reaches.
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

// The six tensors a call reads or writes, their places in the data tuple, and their names in messages.
constexpr int kTensors = 6;
enum { kA, kB, kSfa, kSfaBlocked, kSfbBlocked, kC };
static const int kDataIndex[kTensors] = {0, 1, 2, 4, 5, 6};  // NOTE: data[3], the plain sfb, is not read
static const char* const kTensorNames[kTensors] = {"a", "b", "sfa", "sfa_permuted", "sfb_permuted", "c"};

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
// the same sizes contiguous in their logical order (`sfb_permuted.contiguous()`) hold the same scales
// at other bytes, and the kernel would read them as the wrong rows' scales.
static void check_blocked_scales(const at::Tensor& s, const char* name, int64_t n, int64_t k, int64_t l) {
    char got[160];
    if (!(s.dim() == 6 && s.size(0) == 32 && s.size(1) == 4 && s.size(2) == n / 128 && s.size(3) == 4 &&
          s.size(4) == k / 64 && s.size(5) == l))
        raise_error(PyExc_ValueError, "gemm: %s must have sizes (32, 4, ceil(rows/128), 4, K/64, L) = (32, 4, %lld, 4, %lld, "
                    "%lld), got %s", name, static_cast<long long>(n / 128), static_cast<long long>(k / 64),
                    static_cast<long long>(l), dims_text(s.sizes(), got));
    const int64_t tile_stride = (k / 64) * 512, batch_stride = (n / 128) * tile_stride;
    const bool ok = s.stride(0) == 16 && s.stride(1) == 4 && s.stride(3) == 1 && s.stride(4) == 512 &&
                    (n / 128 == 1 || s.stride(2) == tile_stride) && (l == 1 || s.stride(5) == batch_stride);
    if (!ok)
        raise_error(PyExc_ValueError, "gemm: %s must be GPU MODE's bytes, a permute(3, 4, 1, 5, 2, 0) view of contiguous "
                    "(L, ceil(rows/128), K/64, 32, 4, 4) with strides (16, 4, %lld, 1, 512, %lld), got strides %s (a "
                    ".contiguous() copy holds the scales in another order)", name, static_cast<long long>(tile_stride),
                    static_cast<long long>(batch_stride), dims_text(s.strides(), got));
    if (!aligned16(s)) raise_error(PyExc_ValueError, "gemm: %s must start 16-byte aligned (512-byte tiles)", name);
}

// Refuses what the kernels cannot run (ValueError, one line each; the table in the docstring), v44's checks in
// v44's order, and writes the L batches' launcher words (gemm_build_plan's ``desc``). Runs on a cache miss
// only: the key holds everything these checks read, so a hit passed them when its plan was built. The
// tensors are known to be dense CUDA tensors with storage (gemm() checks that on every call).
// NOTE: every check runs before anything is read on the device: a wrong pointer, size or stride handed to the
// kernels is an illegal address (a CUDA error that poisons the process's context) or a silently wrong C.
static std::vector<int64_t> describe(const at::Tensor* const* t) {
    const at::Tensor &a = *t[kA], &b = *t[kB], &sfa = *t[kSfa], &sfa_blocked = *t[kSfaBlocked],
                     &sfb_blocked = *t[kSfbBlocked], &c = *t[kC];
    char g0[160], g1[160], g2[160], g3[160];
    for (int i = 0; i < kTensors; ++i) {
        if (t[i]->get_device() != c.get_device()) {
            char d[kTensors][32];
            raise_error(PyExc_ValueError, "gemm: a, b, sfa, sfa_permuted, sfb_permuted and c must be on one device (got %s, "
                        "%s, %s, %s, %s, %s)", device_text(a, d[0]), device_text(b, d[1]), device_text(sfa, d[2]),
                        device_text(sfa_blocked, d[3]), device_text(sfb_blocked, d[4]), device_text(c, d[5]));
        }
    }
    if (a.dim() != 3 || b.dim() != 3 || sfa.dim() != 3 || c.dim() != 3)
        raise_error(PyExc_ValueError, "gemm: a, b, sfa, c must be 3-D (rows, K or N, L); got %d-D, %d-D, %d-D, %d-D",
                    static_cast<int>(a.dim()), static_cast<int>(b.dim()), static_cast<int>(sfa.dim()), static_cast<int>(c.dim()));
    if (!is_value_dtype(a) || !is_value_dtype(b))
        raise_error(PyExc_ValueError, "gemm: a and b must hold packed e2m1 pairs (float4_e2m1fn_x2, uint8 or int8), got %s "
                    "and %s", c10::toString(a.scalar_type()), c10::toString(b.scalar_type()));
    if (!is_scale_dtype(sfa) || !is_scale_dtype(sfa_blocked) || !is_scale_dtype(sfb_blocked))
        raise_error(PyExc_ValueError, "gemm: sfa, sfa_permuted and sfb_permuted must be e4m3 scales (float8_e4m3fn or uint8 "
                    "bits), got %s, %s and %s", c10::toString(sfa.scalar_type()), c10::toString(sfa_blocked.scalar_type()),
                    c10::toString(sfb_blocked.scalar_type()));
    if (c.scalar_type() != at::kHalf)
        raise_error(PyExc_ValueError, "gemm: c must be float16, got %s", c10::toString(c.scalar_type()));
    const int64_t M = a.size(0), N = b.size(0), K = a.size(1) * 2, L = a.size(2);
    // NOTE: below 2^31 each: the launcher and the kernels hold M, N, K in int (v44 did not say so).
    if (!(M >= 1 && L >= 1 && N >= 128 && N % 128 == 0 && K >= 64 && K % 64 == 0) || M >= (1ll << 31) ||
        N >= (1ll << 31) || K >= (1ll << 31) || L >= (1ll << 31))
        raise_error(PyExc_ValueError, "gemm: needs M >= 1, L >= 1, N a multiple of 128 and K a multiple of 64 (each below "
                    "2^31); got M=%lld N=%lld K=%lld L=%lld", static_cast<long long>(M), static_cast<long long>(N),
                    static_cast<long long>(K), static_cast<long long>(L));
    if (b.size(1) != K / 2 || b.size(2) != L)
        raise_error(PyExc_ValueError, "gemm: b must be N x K/2 x L = %lld x %lld x %lld (K and L from a), got %s",
                    static_cast<long long>(N), static_cast<long long>(K / 2), static_cast<long long>(L), dims_text(b.sizes(), g0));
    if (sfa.size(0) != M || sfa.size(1) != K / 16 || sfa.size(2) != L)
        raise_error(PyExc_ValueError, "gemm: sfa must be M x K/16 x L = %lld x %lld x %lld, got %s", static_cast<long long>(M),
                    static_cast<long long>(K / 16), static_cast<long long>(L), dims_text(sfa.sizes(), g0));
    if (c.size(0) != M || c.size(1) != N || c.size(2) != L)
        raise_error(PyExc_ValueError, "gemm: c must be M x N x L = %lld x %lld x %lld, got %s", static_cast<long long>(M),
                    static_cast<long long>(N), static_cast<long long>(L), dims_text(c.sizes(), g0));
    if (a.stride(1) != 1 || b.stride(1) != 1 || sfa.stride(1) != 1 || c.stride(1) != 1)
        raise_error(PyExc_ValueError, "gemm: a, b, sfa and c must be contiguous along their second dimension (strides %s, %s, "
                    "%s, %s)", dims_text(a.strides(), g0), dims_text(b.strides(), g1), dims_text(sfa.strides(), g2),
                    dims_text(c.strides(), g3));
    // NOTE: the prepass reads A's rows 16 bytes at a time and B's tensor map needs a 16-byte base and
    // row stride; rows must not overlap (a row stride under a row's length would hand the kernel
    // another row's bytes as this one's).
    if (!(aligned16(a) && a.stride(0) % 16 == 0 && a.stride(0) >= K / 2 && (L == 1 || a.stride(2) % 16 == 0)))
        raise_error(PyExc_ValueError, "gemm: a must start 16-byte aligned with row and batch strides multiples of 16 bytes, "
                    "rows not overlapping (strides %s)", dims_text(a.strides(), g0));
    if (!(aligned16(b) && b.stride(0) % 16 == 0 && b.stride(0) >= K / 2 && (L == 1 || b.stride(2) % 16 == 0)))
        raise_error(PyExc_ValueError, "gemm: b must start 16-byte aligned with row and batch strides multiples of 16 bytes, "
                    "rows not overlapping (strides %s)", dims_text(b.strides(), g0));
    if (sfa.stride(0) < K / 16)
        raise_error(PyExc_ValueError, "gemm: sfa's rows must not overlap (row stride %lld < K/16 = %lld)",
                    static_cast<long long>(sfa.stride(0)), static_cast<long long>(K / 16));
    // NOTE: C is written in 16-byte pieces of whole rows (the staged epilogue).
    if (!(aligned16(c) && c.stride(0) % 8 == 0 && c.stride(0) >= N && (L == 1 || c.stride(2) % 8 == 0)))
        raise_error(PyExc_ValueError, "gemm: c must start 16-byte aligned with row and batch strides multiples of 8 elements, "
                    "rows not overlapping (strides %s)", dims_text(c.strides(), g0));
    check_blocked_scales(sfb_blocked, "sfb_permuted", N, K, L);
    check_blocked_scales(sfa_blocked, "sfa_permuted", (M + 127) / 128 * 128, K, L);
    std::vector<int64_t> desc(static_cast<size_t>(L) * 14);
    const auto* a0 = static_cast<const uint8_t*>(a.data_ptr());
    const auto* b0 = static_cast<const uint8_t*>(b.data_ptr());
    const auto* sfa0 = static_cast<const uint8_t*>(sfa.data_ptr());
    const auto* sfb0 = static_cast<const uint8_t*>(sfb_blocked.data_ptr());
    auto* c0 = static_cast<at::Half*>(c.data_ptr());
    for (int64_t l = 0; l < L; ++l) {
        int64_t* d = desc.data() + l * 14;
        d[0] = reinterpret_cast<int64_t>(a0 + l * a.stride(2));
        d[1] = reinterpret_cast<int64_t>(b0 + l * b.stride(2));
        d[2] = reinterpret_cast<int64_t>(sfa0 + l * sfa.stride(2));
        d[3] = reinterpret_cast<int64_t>(sfb0 + l * sfb_blocked.stride(5));
        d[4] = reinterpret_cast<int64_t>(c0 + l * c.stride(2));
        d[5] = 0;
        d[6] = M; d[7] = N; d[8] = K;
        d[9] = a.stride(0); d[10] = b.stride(0); d[11] = sfa.stride(0); d[12] = 0; d[13] = c.stride(0);
    }
    return desc;
}

// The cache key's words for one tensor: its address, (dtype, device, rank), then every size and stride.
// NOTE: a plan depends on nothing else of a tensor (B's tensor maps on its address, sizes and row stride;
// the tiles and splits on M, N, K, L and the device; every check on all of it), so two calls with equal keys
// get equal plans whatever the tensors hold, and a tensor freed and its memory handed to another input set
// with the same layout is the same plan again, rightly. Values are never read on the host.
static void append_key(std::vector<int64_t>& key, const at::Tensor& t) {
    key.push_back(reinterpret_cast<int64_t>(t.data_ptr()));
    const c10::Device device = t.device();
    key.push_back(static_cast<int64_t>(t.scalar_type()) | (static_cast<int64_t>(device.type()) << 8) |
                  (static_cast<int64_t>(device.index() + 1) << 16) | (static_cast<int64_t>(t.dim()) << 32));
    for (const int64_t s : t.sizes()) key.push_back(s);
    for (const int64_t s : t.strides()) key.push_back(s);
}

// One step of the index's hash: a multiply by the golden ratio's 64-bit odd constant, then the high half
// folded into the low (the index takes the low bits, and addresses differ in high ones).
static inline uint64_t hash_step(uint64_t h, uint64_t word) {
    h = (h ^ word) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 32);
}

// The plans, at most kCachedPlans; past that the least recently used is evicted.
// NOTE: 128 holds the harness's gpumode pool (50 sets a batch, a scratch set, the fresh-buffer repeat) and
// GPU MODE's rotation of 50 with room: past it a rotation would miss on every call. A plan is ~4.3 KB a chunk
// of 15 batches plus its key and, once called twice, a graph exec (two kernel nodes).
// v72: a fixed array found through an open-addressing index by a hash of the six addresses and the device
// (v47-v68 walked an MRU list comparing whole keys: with GPU MODE's rotation the plan wanted is the least
// recently used, ~50 nodes deep, each node and its key a separate heap block; 16-19 µs a call on an H200
// host, session 58). A hit reads one or two slots, then compares the one candidate's whole key: the hash
// only picks where to look, equal keys alone decide, so a collision costs a compare, never a wrong plan.
// NOTE: the cache and the workspaces are never destroyed (allocated with new): at exit, torch's allocator
// may be gone before static destructors would run. The GIL serialises every call.
constexpr int kCachedPlans = 128;
constexpr int kIndexSlots = 512;  // a power of two, 4x the plans: at most a quarter full, short probes
struct CachedPlan {
    std::vector<int64_t> key;
    uint64_t hash;
    void* plan;                   // null: an unused entry
    int64_t workspace_bytes;
    uint64_t last_used;           // the call count at its last use: the smallest is evicted first
};
static CachedPlan* const plans = new CachedPlan[kCachedPlans]();
// NOTE: filled with -1 here: new int16_t[n] alone leaves the slots indeterminate, and find_plan, which
// stops only at a -1, reads them on the first call, before any rebuild_plan_index.
static int16_t* const plan_index = [] {
    int16_t* const slots = new int16_t[kIndexSlots];  // an entry of plans per slot, -1: empty
    std::fill(slots, slots + kIndexSlots, static_cast<int16_t>(-1));
    return slots;
}();
static uint64_t calls = 0;

// The index rebuilt from the plans in use: after an insertion or an eviction (a miss; removing one slot
// from an open-addressing run would need tombstones or a shift, and 512 slots are a few hundred ns).
static void rebuild_plan_index() {
    for (int s = 0; s < kIndexSlots; ++s) plan_index[s] = -1;
    for (int e = 0; e < kCachedPlans; ++e) {
        if (plans[e].plan == nullptr) continue;
        int s = static_cast<int>(plans[e].hash & (kIndexSlots - 1));
        while (plan_index[s] >= 0) s = (s + 1) & (kIndexSlots - 1);
        plan_index[s] = static_cast<int16_t>(e);
    }
}

// The entry whose key equals ``key`` (its addresses' hash ``hash``), or -1.
// NOTE: ends at an empty slot: at most 128 of the 512 slots are ever filled.
static int find_plan(uint64_t hash, const std::vector<int64_t>& key) {
    for (int s = static_cast<int>(hash & (kIndexSlots - 1)); plan_index[s] >= 0; s = (s + 1) & (kIndexSlots - 1)) {
        const CachedPlan& p = plans[plan_index[s]];
        if (p.hash == hash && p.key == key) return plan_index[s];
    }
    return -1;
}

// The entry a new plan goes into: an unused one, else the least recently used, its plan freed.
static int free_entry() {
    int chosen = 0;
    for (int e = 0; e < kCachedPlans; ++e) {
        if (plans[e].plan == nullptr) return e;
        if (plans[e].last_used < plans[chosen].last_used) chosen = e;
    }
    gemm_free_plan(plans[chosen].plan);
    plans[chosen].plan = nullptr;
    rebuild_plan_index();
    return chosen;
}

// One workspace per (device, stream), grown as plans need, shared by every plan on that stream.
// NOTE: shared, not one per plan: the calls on a stream run in its order, so one buffer serves all, and the
// prepass rewrites the same bytes each call, as v44's per-call allocation did (the caching allocator handed
// v44 the same block every call). A grown workspace's old block goes back to the caching allocator on its
// own stream, which hands it out again only to work queued after ours; a plan rebuilds its graph when the
// workspace it was last given changes (gemm_launch).
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

// NOTE: the competition's data as it comes, (a, b, sfa, sfb, sfa_permuted, sfb_permuted, c): a (M, K/2, L),
// b (N, K/2, L), sfa (M, K/16, L) of one-byte elements, the permuted scales in GPU MODE's blocked layout
// (check_blocked_scales), c (M, N, L) fp16; batch l is the launcher's group l. B's scales come from
// sfb_permuted, A's from the plain sfa; the permuted sfa is checked, not read, and the plain sfb is neither.
// A call: the tuple's tensors read in place (no pybind conversion), the key built, a plan found or built
// (the checks), the launch on c's device and its current stream. Returns c.
py::object gemm(py::handle data) {
    PyObject* const seq = data.ptr();
    if (!(PyTuple_Check(seq) || PyList_Check(seq)) || PySequence_Fast_GET_SIZE(seq) != 7)
        raise_error(PyExc_ValueError, "gemm: data must be (a, b, sfa, sfb, sfa_permuted, sfb_permuted, c)");
    const at::Tensor* t[kTensors];
    for (int i = 0; i < kTensors; ++i) {
        PyObject* const item = PySequence_Fast_GET_ITEM(seq, kDataIndex[i]);
        if (!THPVariable_Check(item))
            raise_error(PyExc_TypeError, "gemm: a, b, sfa, sfa_permuted, sfb_permuted and c must be torch tensors (%s is %s)",
                        kTensorNames[i], Py_TYPE(item)->tp_name);
        t[i] = &THPVariable_Unpack(item);
        // NOTE: before data_ptr(), which throws for tensors without storage (sparse, nested)
        if (t[i]->layout() != c10::kStrided || !t[i]->has_storage())
            raise_error(PyExc_ValueError, "gemm: %s must be a dense (strided) tensor with storage", kTensorNames[i]);
    }
    for (int i = 0; i < kTensors; ++i) {
        if (!t[i]->is_cuda()) {
            char d[kTensors][32];
            raise_error(PyExc_ValueError, "gemm: a, b, sfa, sfa_permuted, sfb_permuted and c must be CUDA tensors (got %s, %s, "
                        "%s, %s, %s, %s)", device_text(*t[kA], d[0]), device_text(*t[kB], d[1]), device_text(*t[kSfa], d[2]),
                        device_text(*t[kSfaBlocked], d[3]), device_text(*t[kSfbBlocked], d[4]), device_text(*t[kC], d[5]));
        }
    }
    static std::vector<int64_t> key;  // NOTE: reused across calls (the GIL serialises them): no allocation
    key.clear();
    for (int i = 0; i < kTensors; ++i) append_key(key, *t[i]);
    // NOTE: the launch goes to c's device and its current stream (v44's guard); the plan's tiles, splits and
    // tensor maps are built there too (the SM count, the driver's maps), and c's device is in the key.
    const int device = t[kC]->get_device();
    uint64_t hash = hash_step(kTensors, static_cast<uint64_t>(device));
    for (int i = 0; i < kTensors; ++i) hash = hash_step(hash, reinterpret_cast<uint64_t>(t[i]->data_ptr()));
    const c10::cuda::CUDAGuard device_guard(static_cast<c10::DeviceIndex>(device));
    ++calls;
    int entry = find_plan(hash, key);
    if (entry < 0) {
        const std::vector<int64_t> desc = describe(t);
        int64_t bytes = 0;
        int err = 0;
        void* const plan = gemm_build_plan(desc.data(), static_cast<int>(desc.size() / 14), &bytes, &err);
        if (plan == nullptr)
            raise_error(PyExc_RuntimeError, "gemm: no launch plan (%d: %s)", err,
                        err == -3 ? "no cuTensorMapEncodeTiled in this driver" : err == -4 ? "the driver refused B's tensor map"
                        : err > 0 ? cudaGetErrorString(static_cast<cudaError_t>(err)) : "shape not supported");
        entry = free_entry();
        CachedPlan& slot = plans[entry];
        slot.key = key;
        slot.hash = hash;
        slot.plan = plan;
        slot.workspace_bytes = bytes;
        rebuild_plan_index();
    }
    CachedPlan& hit = plans[entry];
    hit.last_used = calls;
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
    void* const workspace = workspace_for(device, stream, hit.workspace_bytes);
    const int err = gemm_launch(hit.plan, workspace, reinterpret_cast<int64_t>(stream), device);
    if (err != 0)
        raise_error(PyExc_RuntimeError, "gemm: launch failed: %s", cudaGetErrorString(static_cast<cudaError_t>(err)));
    return py::reinterpret_borrow<py::object>(PySequence_Fast_GET_ITEM(seq, kDataIndex[kC]));
}

// v74: the call's entry is a CPython function (METH_O: one argument, no argument tuple, no pybind dispatch),
// which custom_kernel calls with GPU MODE's data as it comes. An error leaves it as a Python exception set and a
// null return, never as a C++ exception: raise_error's (already set), torch's (c10::Error, e.g. the workspace's
// allocation: its message without the C++ backtrace), any other.
static PyObject* gemm_call(PyObject*, PyObject* data) {
    try {
        return gemm(py::handle(data)).release().ptr();
    } catch (py::error_already_set& e) {
        e.restore();
    } catch (const c10::Error& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
    } catch (const std::exception& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (...) {
        PyErr_SetString(PyExc_RuntimeError, "gemm: an unknown C++ exception");
    }
    return nullptr;
}

static PyMethodDef gemm_method = {"gemm", gemm_call, METH_O,
                                  "gemm(data): GPU MODE's NVFP4 GEMM on (a, b, sfa, sfb, sfa_permuted, sfb_permuted, c); returns c"};

// The entry as a Python callable (made once, at import).
py::object gemm_function() {
    PyObject* const f = PyCFunction_New(&gemm_method, nullptr);
    if (f == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(f);
}

// (graph launches, plain launch pairs, graphs built, graph builds refused) since the module loaded: which
// way a run's calls went (a plan's first call and a captured stream's calls are plain by design).
py::tuple launch_counts() {
    int64_t counts[4];
    gemm_launch_counts(counts);
    return py::make_tuple(counts[0], counts[1], counts[2], counts[3]);
}
"""

_module = load_inline(name=EXTENSION_NAME, cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=FUNCTIONS,
                      extra_cuda_cflags=CUDA_FLAGS, verbose=False)

_gemm = _module.gemm_function()  # v74: the METH_O entry, made once


def custom_kernel(data):
    # NOTE: every check is in gemm() (C++), the tuple read there in place: the Python path GPU MODE's batch
    # loop times is this one call of a METH_O builtin.
    return _gemm(data)
