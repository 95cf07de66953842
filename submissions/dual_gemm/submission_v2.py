"""NVFP4 dual GEMM v2: the GEMM lineage's v4 kernel pair with two B operands and a fused gate.

Version: v2
Parent: v1
Change: v1's mma.sync on 64x64 tiles, both operands decoded in every tile, becomes gemm v4's
design: swap-AB wgmma m64n128k16 (sm_90a) with A decoded once per call by a prepass into exact
fp16, copied by cp.async into a 4-stage ring of 128-byte-swizzled tiles and shared by both
products; B1's and B2's bytes through the same ring, decoded straight into two register operands
(one HMUL2 a pair, B x 2^-7), two fp32 accumulators per thread (64 + 64 registers, one CTA per
SM), silu(gate) x up in fp32 in registers and one rounding to fp16. Split-K (gemm v4's fitted
chooser) where the tiles leave SMs idle: 256x4096 has 64 tiles of 128 x 128 for 132 SMs; a split
tile's last CTA sums both products' partials in split order before the gate.
Arch: sm_90a
Analogue: the writeup's V1 fusion (one A tile for both products) on Hopper's wgmma; its V2 (TMA
pipeline) in cp.async form
Measured: H200 (driver 580.159.04, CUDA 13.0, torch 2.11), cold mode, mean us, commit b95be9b: 138.6
/ 168.3 / 101.5 / 209.4. vs v1 in one compare: geomean 1.655x [1.376, 1.985] FASTER, every shape
FASTER (1.87x, 2.03x, 1.43x, 1.38x).

Exactness: a x sfa exact in fp16 (prepass), B1 and B2 x 2^-7 exact in fp16 (one HMUL2 by scale x
2^7), fp16 x fp16 products exact in fp32, fp32 accumulation, partials added in a fixed order, x 2^7
before silu; silu (x / (1 + exp(-x)), expf) and the product in fp32, then one rounding to fp16.
Any M >= 1 (rows past M zero-filled, not stored), N multiple of 128, K multiple of 64, any L.
"""

import torch
from torch.utils.cpp_extension import load_inline

BLOCK_N = 128
BLOCK_M = 128
BLOCK_K = 64
EXTENSION_NAME = "nvfp4_dual_gemm_v2"
FUNCTIONS = ["dual_gemm"]
CUDA_FLAGS = ["-O3", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17"]

CUDA_SRC = r"""
#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

constexpr int BLOCK_N = 128;            // rows of B (and of N) per CTA: wgmma's M, 64 per consumer warpgroup
constexpr int BLOCK_M = 128;            // rows of A (M_g) per CTA: wgmma's N
constexpr int BLOCK_K = 64;             // fp16 elements per shared-memory row: one 128-byte swizzle atom
constexpr int kThreads = 256;           // two warpgroups
constexpr int kStages = 4;              // ring slots: fp16 A tile + B1's and B2's bytes of one K block each
constexpr int kMaxGroups = 24;          // keeps the kernel parameter (all descriptors) under 4 KB
constexpr int A_TILE_BYTES = BLOCK_M * BLOCK_K * 2;
constexpr int B_VALUE_BYTES = BLOCK_N * BLOCK_K / 2;    // 32 packed bytes per row of B
constexpr int B_SCALE_BYTES = BLOCK_N * BLOCK_K / 16;   // 4 e4m3 scales per row of B
constexpr int B_BYTES = B_VALUE_BYTES + B_SCALE_BYTES;  // one B operand's share of a stage
// NOTE: rounded up to 1024 bytes (26 KB) so every slot's A tile stays aligned for the 128-byte swizzle.
constexpr int STAGE_BYTES = (A_TILE_BYTES + 2 * B_BYTES + 1023) / 1024 * 1024;
constexpr int SMEM_BYTES = kStages * STAGE_BYTES + 1024;  // + slack to align the ring to 1024 bytes
constexpr int kDecodeThreads = 256;     // prepass: one 32-element block pair (16 bytes of A) per thread
constexpr int kMaxSplits = 16;
constexpr int kDescWords = 18;          // per batch on the host: 8 pointers, m, n, k, 7 row strides
constexpr int kMinBlocksPerSplit = 4;   // K blocks: below this the pipeline's fill and the partial tile dominate
constexpr int TILE_FLOATS = BLOCK_N * BLOCK_M;  // one product's fp32 partial tile (64 KB); a CTA writes two

struct GroupDesc {                       // one batch l
    const uint8_t* a; const uint8_t* b[2]; const uint8_t* sfa; const uint8_t* sfb[2]; __half* c;
    __half* a16;                         // workspace: this batch's A decoded, m x k fp16, row stride k
    int m, n, k;
    int64_t a_row, b_row[2], sfa_row, sfb_row[2], c_row;
    int tile_begin;                      // first linear tile index of this group (GEMM kernel)
    int decode_begin;                    // first block index of this group (decode kernel)
};

struct Problem {
    GroupDesc groups[kMaxGroups];
    int num_groups;
    int num_tiles;
    int splits;              // S: CTAs per output tile, each over a contiguous range of K blocks
    float* partials;         // S > 1: two fp32 tiles per CTA (gate, up), each float4 [16][kThreads]
    int* arrivals;           // S > 1: per tile, CTAs done with their partial (zeroed by the prepass)
};

// The two e2m1 nibbles of a byte as a half2 (low nibble in the low half) worth value x 2^-14.
// NOTE: z holds the byte at bits 0..7 and again at 12..19, so one shift puts both sign bits
// (3 and 7) at 15 and 31, and another both magnitudes (bits 2..0 and 6..4) at 11..9 and 27..25.
__device__ __forceinline__ uint32_t e2m1x2_to_half2_bits(uint32_t byte) {
    const uint32_t z = byte * 4097u;
    return ((z << 12) & 0x80008000u) | ((z << 9) & 0x0E000E00u);
}

// NOTE: two multiplies, not one by scale x 2^14: that product overflows fp16 for scales above 4.
__device__ __forceinline__ uint32_t scaled_pair(uint32_t byte, __half2 scale) {
    uint32_t bits = e2m1x2_to_half2_bits(byte);
    __half2 v = __hmul2(*reinterpret_cast<__half2*>(&bits), __float2half2_rn(16384.f));
    v = __hmul2(v, scale);
    return *reinterpret_cast<uint32_t*>(&v);
}

// One pair of B: value x sfb x 2^-7 with a single multiply (scale_x128 = sfb x 2^7, see the docstring).
__device__ __forceinline__ uint32_t scaled_pair_x2m7(uint32_t byte, __half2 scale_x128) {
    uint32_t bits = e2m1x2_to_half2_bits(byte);
    const __half2 v = __hmul2(*reinterpret_cast<__half2*>(&bits), scale_x128);
    return *reinterpret_cast<const uint32_t*>(&v);
}

// Byte `selector` of `word` in the low byte, zeros above: one PRMT (selector 0..3; 4 names a zero byte).
__device__ __forceinline__ uint32_t byte_of(uint32_t word, uint32_t selector) {
    uint32_t out;
    asm("prmt.b32 %0, %1, 0, %2;" : "=r"(out) : "r"(word), "r"(selector));
    return out;
}

__device__ __forceinline__ __half2 scale_pair(uint32_t e4m3_bits) {
    return __half2half2(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(e4m3_bits & 0xFFu), __NV_E4M3)));
}

// Shared-memory operand descriptor: K-major, 128-byte swizzle (layout type 1 in bits 62..63);
// LBO unused (1); SBO = 1024 bytes between 8-row groups; addresses in units of 16 bytes.
__device__ __forceinline__ uint64_t desc_sw128(uint32_t smem_addr) {
    return static_cast<uint64_t>((smem_addr >> 4) & 0x3FFF) | (1ull << 16) | (static_cast<uint64_t>(1024 >> 4) << 32) |
           (1ull << 62);
}

// D[64 x 128] += A[64 x 16] (registers) . B[16 x 128] (shared memory, descriptor); fp16 in, fp32 accumulate.
__device__ __forceinline__ void wgmma_m64n128k16(float* d, const uint32_t* a, uint64_t desc_b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
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

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }

// B's bytes for one K block in a stage: row r's 32 bytes as two 16-byte chunks, chunk h stored at
// h ^ ((r / 4) % 2), then the rows' 4 scale bytes each.
// NOTE: the XOR spreads the 8 rows one warp-wide read touches (gid 0..7, 32 bytes apart) over all
// 32 banks; without it rows r and r + 4 share banks (2-way conflicts).
__device__ __forceinline__ uint32_t b_chunk_offset(int row, int half) { return row * 32 + ((half ^ ((row / 4) % 2)) * 16); }

__device__ __forceinline__ void load_b_stage(const GroupDesc& d, int which, int n0, int k0, uint32_t b_values, uint32_t b_scales) {
    {   // values: BLOCK_N rows x 2 chunks = 256 copies, one per thread
        const int row = threadIdx.x / 2, half = threadIdx.x % 2;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n"
                     ::"r"(b_values + b_chunk_offset(row, half)), "l"(d.b[which] + (n0 + row) * d.b_row[which] + k0 / 2 + half * 16) : "memory");
    }
    if (threadIdx.x < BLOCK_N) {  // scales: 4 bytes per row
        const int row = threadIdx.x;
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n"
                     ::"r"(b_scales + row * 4), "l"(d.sfb[which] + (n0 + row) * d.sfb_row[which] + k0 / 16) : "memory");
    }
}

// The register operand of wgmma for the four k16 steps of a K block, in mma.sync's A-fragment
// layout: step s, registers {row gid, k 2t..2t+1}, {row gid+8, same k}, {row gid, k 2t+8..2t+9},
// {row gid+8, k 2t+8..}: the byte t of words 2s and 2s+1 of each row's 32 bytes. Step s is exactly
// the row's scale block s. `row` is the CTA-local row of gid (warp x 16 + gid).
// NOTE: the fragments hold B x 2^-7 (scale trick); the epilogue multiplies the sums by 2^7.
// `selector` is PRMT's selector for byte tig: 0x4440 + tig.
__device__ __forceinline__ void decode_b(const uint8_t* b_values, const uint8_t* b_scales, int row, uint32_t selector,
                                         uint32_t (&frag)[4][4]) {
    const __half2 x128 = __float2half2_rn(128.f);
    #pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int r = row + 8 * i;
        const uint4 lo = *reinterpret_cast<const uint4*>(b_values + b_chunk_offset(r, 0));
        const uint4 hi = *reinterpret_cast<const uint4*>(b_values + b_chunk_offset(r, 1));
        const uint32_t scales = *reinterpret_cast<const uint32_t*>(b_scales + r * 4);
        const uint32_t w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            const __half2 sc = __hmul2(scale_pair(scales >> (8 * s)), x128);  // exact: at most 57344
            frag[s][i] = scaled_pair_x2m7(byte_of(w[2 * s], selector), sc);
            frag[s][2 + i] = scaled_pair_x2m7(byte_of(w[2 * s + 1], selector), sc);
        }
    }
}

// 16-byte asynchronous copy global -> shared; src_bytes = 0 writes zeros (rows past M_g).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, uint32_t src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory"); }

// Prepass: every group's A decoded to fp16 (exact a x sfa), 32 elements per thread.
__global__ void __launch_bounds__(kDecodeThreads)
decode_a_kernel(const __grid_constant__ Problem problem) {
    if (problem.splits > 1 && blockIdx.x == 0) {
        // NOTE: the GEMM kernel that follows on this stream counts arrivals from zero.
        for (int t = threadIdx.x; t < problem.num_tiles; t += kDecodeThreads) problem.arrivals[t] = 0;
    }
    int g = 0;
    while (g + 1 < problem.num_groups && static_cast<int>(blockIdx.x) >= problem.groups[g + 1].decode_begin) ++g;
    const GroupDesc& d = problem.groups[g];
    const int pieces_per_row = d.k / 32;
    const int piece = (blockIdx.x - d.decode_begin) * kDecodeThreads + threadIdx.x;
    if (piece >= d.m * pieces_per_row) return;
    const int row = piece / pieces_per_row, kk = (piece % pieces_per_row) * 32;
    const uint4 v = *reinterpret_cast<const uint4*>(d.a + row * d.a_row + kk / 2);
    const uint32_t sc = *reinterpret_cast<const uint16_t*>(d.sfa + row * d.sfa_row + kk / 16);
    const uint32_t words[4] = {v.x, v.y, v.z, v.w};
    const __half2 s0 = scale_pair(sc), s1 = scale_pair(sc >> 8);
    uint4* dst = reinterpret_cast<uint4*>(d.a16 + static_cast<int64_t>(row) * d.k + kk);
    #pragma unroll
    for (int w = 0; w < 4; ++w) {
        const __half2 s = w < 2 ? s0 : s1;  // bytes 0..7: the first 16 elements, 8..15: the next 16
        dst[w] = make_uint4(scaled_pair(words[w] & 0xFFu, s), scaled_pair((words[w] >> 8) & 0xFFu, s),
                            scaled_pair((words[w] >> 16) & 0xFFu, s), scaled_pair(words[w] >> 24, s));
    }
}

// One K block of fp16 A (BLOCK_M rows x 128 bytes) into a swizzled stage: row r's 16-byte chunk c
// goes to chunk c ^ (r % 8), the layout the descriptor's 128-byte swizzle reads; 4 chunks per thread.
__device__ __forceinline__ void load_a_stage(const GroupDesc& d, int m0, int k0, uint32_t stage) {
    #pragma unroll
    for (int i = 0; i < BLOCK_M * 8 / kThreads; ++i) {
        const int idx = i * kThreads + threadIdx.x, row = idx / 8, chunk = idx % 8;
        const bool live = m0 + row < d.m;
        // NOTE: a dead row still names a valid address (the group's first row); 0 bytes are read.
        const __half* src = d.a16 + static_cast<int64_t>(live ? m0 + row : 0) * d.k + k0 + chunk * 8;
        cp_async_16(stage + row * 128 + ((chunk ^ (row % 8)) * 16), src, live ? 16u : 0u);
    }
}

// Stage addresses of block kb's ring slot: the A tile (1024-aligned), then B1's values and scales,
// then B2's.
struct Stage { uint32_t a, b_values[2], b_scales[2]; };
__device__ __forceinline__ Stage stage_of(uint32_t ring, int kb) {
    const uint32_t base = ring + (kb % kStages) * STAGE_BYTES;
    return {base, {base + A_TILE_BYTES, base + A_TILE_BYTES + B_BYTES},
            {base + A_TILE_BYTES + B_VALUE_BYTES, base + A_TILE_BYTES + B_BYTES + B_VALUE_BYTES}};
}

// Local block kb (its ring slot) is K block kb_first + kb of the matrix.
__device__ __forceinline__ void load_stage(const GroupDesc& d, int m0, int n0, int kb, int kb_first, uint32_t ring) {
    const Stage st = stage_of(ring, kb);
    load_a_stage(d, m0, (kb_first + kb) * BLOCK_K, st.a);
    load_b_stage(d, 0, n0, (kb_first + kb) * BLOCK_K, st.b_values[0], st.b_scales[0]);
    load_b_stage(d, 1, n0, (kb_first + kb) * BLOCK_K, st.b_values[1], st.b_scales[1]);
}

// Both operands' fragments of one K block, from a stage.
__device__ __forceinline__ void decode_both(uint32_t ring, const uint8_t* ring_generic, int kb, int row, uint32_t selector,
                                            uint32_t (&frag)[2][4][4]) {
    const Stage st = stage_of(ring, kb);
    #pragma unroll
    for (int w = 0; w < 2; ++w)
        decode_b(ring_generic + (st.b_values[w] - ring), ring_generic + (st.b_scales[w] - ring), row, selector, frag[w]);
}

// silu(gate) x up in fp32 from the scaled sums (both hold the product x 2^-7, see decode_b).
__device__ __forceinline__ float silu_times(float gate_scaled, float up_scaled) {
    const float g = gate_scaled * 128.f, u = up_scaled * 128.f;
    return g / (1.f + expf(-g)) * u;
}

// One K block: block kb + 1's copies have landed (so its B1, B2 can be decoded), wgmma on
// `frag_now` and block kb's A for both products; meanwhile request block kb + kStages - 1 and
// decode block kb + 1 into `frag_next`.
// NOTE: two fragment arrays passed in swapped order by an unrolled caller, so both stay in registers.
__device__ __forceinline__ void main_loop_step(const GroupDesc& d, uint32_t ring, const uint8_t* ring_generic,
                                               float* gate, float* up, uint32_t (&frag_now)[2][4][4], uint32_t (&frag_next)[2][4][4],
                                               int kb, int num_k, int kb_first, int m0, int n0, int row, uint32_t selector) {
    // NOTE: groups committed so far: blocks 0 .. kb + kStages - 2; at most kStages - 3 pending
    // means this thread's copies of blocks kb and kb + 1 have landed.
    cp_async_wait<kStages - 3>();
    // NOTE: cp.async writes are generic-proxy; wgmma reads A through the async proxy.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();  // NOTE: every thread's copies are visible; every warpgroup finished block kb - 1
    const uint32_t stage_a = stage_of(ring, kb).a;
    wgmma_fence();  // NOTE: orders this thread's writes of frag_now (and acc) before wgmma reads them
    #pragma unroll
    for (int s = 0; s < 4; ++s) wgmma_m64n128k16(gate, frag_now[0][s], desc_sw128(stage_a + 32 * s));  // k16 step = 32 bytes
    #pragma unroll
    for (int s = 0; s < 4; ++s) wgmma_m64n128k16(up, frag_now[1][s], desc_sw128(stage_a + 32 * s));  // the same A tile
    wgmma_commit();
    // NOTE: the slot refilled here held block kb - 1: its A was read by block kb - 1's wgmma (waited
    // for before the barrier above), its B decoded during step kb - 2. An empty group is still
    // committed so the wait count holds.
    if (kb + kStages - 1 < num_k) load_stage(d, m0, n0, kb + kStages - 1, kb_first, ring);
    cp_async_commit();
    if (kb + 1 < num_k) decode_both(ring, ring_generic, kb + 1, row, selector, frag_next);
    wgmma_wait_all();  // NOTE: frees frag_now for block kb + 2
}

// Split-K: writes this CTA's two partial tiles, counts them in, and returns false unless this CTA
// is the tile's last; the last one leaves in gate and up the sums of all S partials, in split order.
// NOTE: partial layout float4 [product][j][thread], so each of a warp's stores is 512 contiguous bytes.
__device__ __forceinline__ bool sum_partials(const Problem& problem, int tile, int split, float* gate, float* up) {
    __shared__ int is_last;
    const int S = problem.splits;
    float* const accs[2] = {gate, up};
    #pragma unroll
    for (int w = 0; w < 2; ++w) {
        float4* mine = reinterpret_cast<float4*>(problem.partials + (static_cast<int64_t>(tile * S + split) * 2 + w) * TILE_FLOATS);
        const float* acc = accs[w];
        #pragma unroll
        for (int j = 0; j < BLOCK_M / 8; ++j)
            mine[j * kThreads + threadIdx.x] = make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
    }
    __threadfence();  // NOTE: this thread's partial is visible device-wide before the count below
    __syncthreads();
    if (threadIdx.x == 0) is_last = atomicAdd(problem.arrivals + tile, 1) == S - 1;
    __syncthreads();
    if (!is_last) return false;
    __threadfence();  // NOTE: acquire side: the other CTAs' partials are read after their counts
    #pragma unroll
    for (int w = 0; w < 2; ++w) {
        float* acc = accs[w];
        #pragma unroll
        for (int j = 0; j < BLOCK_M / 8; ++j) {
            float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
            for (int s = 0; s < S; ++s) {
                // NOTE: L2 reads (ld.cg): the partials were written by other SMs.
                const float4 p = s == split ? make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3])
                                            : __ldcg(reinterpret_cast<const float4*>(problem.partials + (static_cast<int64_t>(tile * S + s) * 2 + w) * TILE_FLOATS) + j * kThreads + threadIdx.x);
                sum.x += p.x; sum.y += p.y; sum.z += p.z; sum.w += p.w;
            }
            acc[4 * j] = sum.x; acc[4 * j + 1] = sum.y; acc[4 * j + 2] = sum.z; acc[4 * j + 3] = sum.w;
        }
    }
    return true;
}

// NOTE: one CTA per SM: two accumulators (128 registers) and two fragment sets in flight.
__global__ void __launch_bounds__(kThreads, 1)
group_gemm_kernel(const __grid_constant__ Problem problem) {
    extern __shared__ uint8_t smem_raw[];
    // NOTE: the 128-byte swizzle pattern repeats every 1024 bytes; the descriptor assumes tiles
    // that start on such a boundary (base offset 0).
    const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
    const uint32_t ring = (smem_base + 1023u) & ~1023u;
    const uint8_t* ring_generic = smem_raw + (ring - smem_base);  // the same bytes, for plain loads

    const int tile = blockIdx.x / problem.splits, split = blockIdx.x % problem.splits;
    int g = 0;
    while (g + 1 < problem.num_groups && tile >= problem.groups[g + 1].tile_begin) ++g;
    const GroupDesc& d = problem.groups[g];
    const int local = tile - d.tile_begin;
    const int tiles_n = d.n / BLOCK_N;
    const int m0 = (local / tiles_n) * BLOCK_M;
    const int n0 = (local % tiles_n) * BLOCK_N;

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int gid = lane / 4, tig = lane % 4;
    const int row = warp * 16 + gid;  // CTA-local row of B; warps 0-3: warpgroup 0, rows 0..63; 4-7: the next 64
    const int n_row = n0 + row;
    const uint32_t selector = 0x4440u + static_cast<uint32_t>(tig);

    float gate[BLOCK_M / 2], up[BLOCK_M / 2];  // A.B1^T and A.B2^T
    #pragma unroll
    for (int i = 0; i < BLOCK_M / 2; ++i) gate[i] = up[i] = 0.f;

    // This CTA's K blocks: split's share of the group's, as even as integers allow (at least one).
    const int blocks = d.k / BLOCK_K;
    const int kb_first = split * blocks / problem.splits;
    const int num_k = (split + 1) * blocks / problem.splits - kb_first;
    #pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {  // blocks 0 .. kStages - 2, one commit group each
        if (s < num_k) load_stage(d, m0, n0, s, kb_first, ring);
        cp_async_commit();
    }
    uint32_t frag_even[2][4][4], frag_odd[2][4][4];
    cp_async_wait<kStages - 2>();  // NOTE: block 0 has landed (this thread's copies)
    __syncthreads();
    decode_both(ring, ring_generic, 0, row, selector, frag_even);
    for (int kb = 0; kb < num_k; kb += 2) {
        main_loop_step(d, ring, ring_generic, gate, up, frag_even, frag_odd, kb, num_k, kb_first, m0, n0, row, selector);
        if (kb + 1 < num_k) main_loop_step(d, ring, ring_generic, gate, up, frag_odd, frag_even, kb + 1, num_k, kb_first, m0, n0, row, selector);
    }

    if (problem.splits > 1 && !sum_partials(problem, tile, split, gate, up)) return;  // another CTA finishes this tile

    // gate/up[4j + {0,1,2,3}]: wgmma rows (n) n_row and n_row + 8, columns (m) 8j + 2 tig and + 1.
    #pragma unroll
    for (int j = 0; j < BLOCK_M / 8; ++j) {
        const int m = m0 + 8 * j + 2 * tig;
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
            if (m + h < d.m) {
                d.c[(m + h) * d.c_row + n_row] = __float2half_rn(silu_times(gate[4 * j + h], up[4 * j + h]));
                d.c[(m + h) * d.c_row + n_row + 8] = __float2half_rn(silu_times(gate[4 * j + 2 + h], up[4 * j + 2 + h]));
            }
        }
    }
}

// SMs of the device and resident GEMM CTAs per SM, once per device (after the shared-memory opt-in).
struct DeviceSlots { int sms, per_sm; };
static DeviceSlots device_slots(int device) {
    static DeviceSlots cache[64] = {};
    if (cache[device].sms == 0) {
        int sms = 0, per_sm = 0;
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, group_gemm_kernel, kThreads, SMEM_BYTES);
        cache[device] = {sms > 0 ? sms : 1, per_sm > 0 ? per_sm : 1};
    }
    return cache[device];
}

// S for a launch of `tiles` tiles whose shortest group has `min_blocks` K blocks: the least
// estimated time, in K blocks of one CTA alone on an SM. Each SM gets L = ceil(tiles x S / SMs)
// CTAs of min_blocks / S blocks plus 6 + (S - 1) of overhead; resident pairs run at 1.09x one CTA's
// rate. NOTE: constants fitted on an H200 (NOTES.md, v3's sweep); no split once the tiles alone
// give every SM as many CTAs as can be resident, where splitting only adds overhead.
static int choose_splits(int tiles, int min_blocks, DeviceSlots slots) {
    if (tiles >= slots.sms * slots.per_sm) return 1;
    constexpr double kPairRate = 1.09, kOverheadBlocks = 6.0;
    int best = 1;
    double best_time = 1e30;
    for (int S = 1; S <= kMaxSplits && (S == 1 || min_blocks / S >= kMinBlocksPerSplit); ++S) {
        const long per_sm = (static_cast<long>(tiles) * S + slots.sms - 1) / slots.sms;
        const double cta = static_cast<double>(min_blocks) / S + kOverheadBlocks + (S - 1);
        const double time = slots.per_sm >= 2 ? (per_sm / 2) * 2.0 * cta / kPairRate + (per_sm % 2) * cta : per_sm * cta;
        if (time < best_time - 1e-9) { best_time = time; best = S; }
    }
    return best;
}

// Fills one chunk's Problem (up to kMaxGroups groups from `first`) except the workspace pointers;
// returns 0 or -2 (shape not supported).
static int fill_chunk(const int64_t* desc, int num_groups, int first, DeviceSlots slots, Problem& problem, int& decode_blocks) {
    problem.num_groups = num_groups - first < kMaxGroups ? num_groups - first : kMaxGroups;
    int tiles = 0, min_blocks = 1 << 30;
    decode_blocks = 0;
    for (int g = 0; g < problem.num_groups; ++g) {
        const int64_t* p = desc + (first + g) * kDescWords;
        GroupDesc& d = problem.groups[g];
        d.a = reinterpret_cast<const uint8_t*>(p[0]);
        d.b[0] = reinterpret_cast<const uint8_t*>(p[1]);
        d.b[1] = reinterpret_cast<const uint8_t*>(p[2]);
        d.sfa = reinterpret_cast<const uint8_t*>(p[3]);
        d.sfb[0] = reinterpret_cast<const uint8_t*>(p[4]);
        d.sfb[1] = reinterpret_cast<const uint8_t*>(p[5]);
        d.c = reinterpret_cast<__half*>(p[6]);
        d.a16 = reinterpret_cast<__half*>(p[7]);
        d.m = static_cast<int>(p[8]);
        d.n = static_cast<int>(p[9]);
        d.k = static_cast<int>(p[10]);
        d.a_row = p[11]; d.b_row[0] = p[12]; d.b_row[1] = p[13]; d.sfa_row = p[14]; d.sfb_row[0] = p[15];
        d.sfb_row[1] = p[16]; d.c_row = p[17];
        if (d.n % BLOCK_N != 0 || d.k % BLOCK_K != 0 || d.m < 1 || d.k < BLOCK_K) return -2;
        d.tile_begin = tiles;
        tiles += ((d.m + BLOCK_M - 1) / BLOCK_M) * (d.n / BLOCK_N);
        d.decode_begin = decode_blocks;
        decode_blocks += (d.m * (d.k / 32) + kDecodeThreads - 1) / kDecodeThreads;
        if (d.k / BLOCK_K < min_blocks) min_blocks = d.k / BLOCK_K;
    }
    problem.num_tiles = tiles;
    problem.splits = choose_splits(tiles, min_blocks, slots);
    problem.partials = nullptr;
    problem.arrivals = nullptr;
    return 0;
}

static int prepare_device(int& device) {
    cudaGetDevice(&device);
    static bool smem_opted_in[64] = {};
    if (device >= 64) return static_cast<int>(cudaErrorInvalidDevice);
    if (!smem_opted_in[device]) {  // NOTE: above 48 KB a kernel must opt in, once per device
        const cudaError_t err = cudaFuncSetAttribute(group_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
        if (err != cudaSuccess) return static_cast<int>(err);
        smem_opted_in[device] = true;
    }
    return 0;
}

// Bytes of split-K workspace the launch needs (the largest chunk's partial tiles and counters),
// or a negative error. ``desc`` as for launch_group_gemm (the a16 pointers are not read).
int64_t group_gemm_splitk_bytes(const int64_t* desc, int num_groups) {
    int device = 0;
    const int err = prepare_device(device);
    if (err != 0) return -err;
    const DeviceSlots slots = device_slots(device);
    int64_t need = 0;
    for (int first = 0; first < num_groups; first += kMaxGroups) {
        Problem problem;
        int decode_blocks = 0;
        if (fill_chunk(desc, num_groups, first, slots, problem, decode_blocks) != 0) return -2;
        if (problem.splits > 1) {
            const int64_t bytes = static_cast<int64_t>(problem.num_tiles) * problem.splits * 2 * TILE_FLOATS * 4 +
                                  static_cast<int64_t>(problem.num_tiles) * 4;
            if (bytes > need) need = bytes;
        }
    }
    return need;
}

// NOTE: a plain launcher (no torch headers, so the file compiles alone with nvcc). ``desc`` holds
// per batch: a, b1, b2, sfa, sfb1, sfb2, c, a16 pointers, then m, n, k and the row strides of a,
// b1, b2, sfa, sfb1, sfb2, c.
// ``splitk`` (16-byte aligned, group_gemm_splitk_bytes long) holds the partial tiles, then the
// counters. More than kMaxGroups groups: one launch pair per chunk (the parameter space is 4 KB),
// in stream order, so chunks share the split-K workspace.
int launch_group_gemm(const int64_t* desc, int num_groups, void* splitk, int64_t stream_handle) {
    if (num_groups < 1) return -1;
    const cudaStream_t stream = reinterpret_cast<cudaStream_t>(stream_handle);
    int device = 0;
    const int err0 = prepare_device(device);
    if (err0 != 0) return err0;
    const DeviceSlots slots = device_slots(device);
    for (int first = 0; first < num_groups; first += kMaxGroups) {
        Problem problem;
        int decode_blocks = 0;
        if (fill_chunk(desc, num_groups, first, slots, problem, decode_blocks) != 0) return -2;
        if (problem.splits > 1) {
            if (splitk == nullptr) return -3;
            problem.partials = static_cast<float*>(splitk);
            problem.arrivals = reinterpret_cast<int*>(problem.partials + static_cast<int64_t>(problem.num_tiles) * problem.splits * 2 * TILE_FLOATS);
        }
        decode_a_kernel<<<decode_blocks, kDecodeThreads, 0, stream>>>(problem);
        group_gemm_kernel<<<problem.num_tiles * problem.splits, kThreads, SMEM_BYTES, stream>>>(problem);
        const cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) return static_cast<int>(err);
    }
    return 0;
}
"""

CPP_SRC = r"""
#include <c10/cuda/CUDAStream.h>

int64_t group_gemm_splitk_bytes(const int64_t* desc, int num_groups);
int launch_group_gemm(const int64_t* desc, int num_groups, void* splitk, int64_t stream_handle);

// NOTE: the competition's tensors as they come: a (M, K/2, L), b1 and b2 (N, K/2, L), sfa (M, K/16,
// L), sfb1 and sfb2 (N, K/16, L) of one-byte elements and c (M, N, L) fp16, all views with stride 1
// along their second dimension; batch l is group l of the kernel (its pointers offset by l strides).
torch::Tensor dual_gemm(const torch::Tensor& a, const torch::Tensor& b1, const torch::Tensor& b2, const torch::Tensor& sfa,
                        const torch::Tensor& sfb1, const torch::Tensor& sfb2, const torch::Tensor& c) {
    const torch::Tensor* bytes[6] = {&a, &b1, &b2, &sfa, &sfb1, &sfb2};
    for (const torch::Tensor* t : bytes) {
        TORCH_CHECK(t->dim() == 3 && t->element_size() == 1 && t->stride(1) == 1,
                    "dual_gemm: values and scales must be 3-D, one byte per element, contiguous along dimension 1");
    }
    TORCH_CHECK(c.dim() == 3 && c.scalar_type() == torch::kHalf && c.stride(1) == 1, "dual_gemm: c must be float16 (M, N, L)");
    const int64_t M = a.size(0), N = b1.size(0), K = a.size(1) * 2, L = a.size(2);
    TORCH_CHECK(b2.size(0) == N && c.size(0) == M && c.size(1) == N && c.size(2) == L, "dual_gemm: c must be M x N x L, b1 and b2 N rows");
    constexpr int kWords = 18;
    std::vector<int64_t> desc(static_cast<size_t>(L) * kWords);
    for (int64_t l = 0; l < L; ++l) {
        int64_t* d = desc.data() + l * kWords;
        for (int i = 0; i < 6; ++i)
            d[i] = reinterpret_cast<int64_t>(static_cast<const uint8_t*>(bytes[i]->data_ptr()) + l * bytes[i]->stride(2));
        d[6] = reinterpret_cast<int64_t>(static_cast<at::Half*>(c.data_ptr()) + l * c.stride(2));
        d[8] = M; d[9] = N; d[10] = K;
        d[11] = a.stride(0); d[12] = b1.stride(0); d[13] = b2.stride(0); d[14] = sfa.stride(0);
        d[15] = sfb1.stride(0); d[16] = sfb2.stride(0); d[17] = c.stride(0);
    }
    const int64_t splitk_bytes = group_gemm_splitk_bytes(desc.data(), static_cast<int>(L));
    TORCH_CHECK(splitk_bytes >= 0, "dual_gemm: unsupported shape or device (", splitk_bytes, "): N must be a multiple of 128, K of 64, M at least 1");
    // NOTE: one allocation from the caching allocator on the current stream (reused per call): the
    // fp16 A of every batch, then the split-K partials and counters at a 256-byte boundary.
    const int64_t a16_bytes = (L * M * K * 2 + 255) / 256 * 256;
    const torch::Tensor workspace = torch::empty({a16_bytes + splitk_bytes}, c.options().dtype(torch::kUInt8));
    auto* w0 = static_cast<uint8_t*>(workspace.data_ptr());
    for (int64_t l = 0; l < L; ++l) desc[l * kWords + 7] = reinterpret_cast<int64_t>(w0 + l * M * K * 2);
    void* splitk = splitk_bytes > 0 ? static_cast<void*>(w0 + a16_bytes) : nullptr;
    const int64_t stream = reinterpret_cast<int64_t>(c10::cuda::getCurrentCUDAStream().stream());
    const int err = launch_group_gemm(desc.data(), static_cast<int>(L), splitk, stream);
    TORCH_CHECK(err == 0, "dual_gemm: launch failed (", err, "): N must be a multiple of 128, K of 64, M at least 1");
    return c;
}
"""

_module = load_inline(name=EXTENSION_NAME, cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=FUNCTIONS,
                      extra_cuda_cflags=CUDA_FLAGS, verbose=False)


def custom_kernel(data):
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
    return _module.dual_gemm(a, b1, b2, sfa, sfb1, sfb2, c)
