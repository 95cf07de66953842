"""NVFP4 GEMV v21: v20 for rows up to 4096 elements, v16's shared-memory vector (fp64 sums) above.

Version: v21
Parent: v20
Change: the launcher picks the kernel by K: K <= 4096 runs v20's kernel (the vector read per warp
from L1, no shared memory); K > 4096 runs v16's kernel (the vector decoded once per CTA into 20 KB
of shared memory, KC = 16384 elements at a time; v16's plain loads, not v18's evict-first hint,
measured SAME) with v20's exact fp64 sums and rounding. Both paths give the same bits: the exact
sum rounded fp64 -> fp32 -> fp16.
Why the threshold: H200, kernel method, dirty flush, v16 -> v19: 23.6 -> 25.8 us at K = 16384
(0.92x), 42.0 -> 41.9 at K = 7168 (SAME), 17.2 -> 14.7 at K = 2048 (1.17x). The shared vector costs
a fixed start per CTA (load b, barrier, decode, barrier: ~1-2 us with only the prefetch in flight),
amortised over a row of K/2 bytes; the L1 vector costs per piece (2 more loads and ~16 decode
instructions a warp for every 16 bytes of A a lane reads, ~+15% issue). The start-up dominates at
K = 2048 (1792 CTAs, 3.4 a resident slot), the per-piece cost at 16384 (one wave of 448 CTAs, no
start-up to hide). 7168 is the crossover (SAME), so the cut sits between 2048 and 7168; 4096 is
the middle in log2 and the tests' 512x4096 L2 stays on the L1 path that v19 measured.
Arch: sm_90
Analogue: llama.cpp picks its mmvq / dmmv kernels by shape; cuBLAS's heuristics choose a GEMV
kernel per (M, N, K).
Prediction: (H200, kernel method, dirty flush) 7168x16384 L1 ~23.7 us (v16's 23.6 plus the fp64
cost, <1%), 4096x7168 L8 ~42.0 us (v16), 7168x2048 L4 ~14.8 us (v19's 14.7 plus v20's cost):
against v16 1.00x / 1.00x / ~1.16x, against v19 ~1.09x / 1.00x / 1.00x. If v20 measures slower
than v19 by more than 2% on 7168x2048 L4, the fp64 sums are issue-bound there and v21 inherits it.
Measured: NVIDIA H200, 2026-11-27, kernel method, dirty flush, one process: `compare gemv v16 v21`
23.54 -> 23.97 / 42.00 -> 42.81 / 17.09 -> 15.19 us, 0.982x [0.974, 0.991] / 0.981x [0.977, 0.985] /
1.125x [1.116, 1.133], geomean 1.027x [1.024, 1.030] FASTER; `run` kernel 23.86 / 42.91 / 15.10 us
(read floor 21.44 / 37.63 / 13.54: 89.8% / 87.7% / 89.6% of the read), gpumode 31.75 / 48.01 / 17.85
(CV 6-15% per call). The fp64 sums cost ~2% on both paths (v19 -> v20 0.988x / 0.983x / 0.969x).
--dist all PASS on tests, benchmarks and edges (3 seeds).

Exactness as v20 on both paths: every block term exact in fp32, fp64 sums exact while the sum of
|terms| is below 2^33, the exact sum rounded to fp32 then fp16 (as the reference). Any M, any K
multiple of 32 (the shared path in KC-element chunks), any L. a and b 16-byte aligned, sfa and
sfb 2-byte aligned (base and strides), checked.
"""

import torch
from torch.utils.cpp_extension import load_inline

WARPS_PER_BLOCK = 8
ROWS_PER_WARP = 2
EXTENSION_NAME = "nvfp4_gemv_v21"
FUNCTIONS = ["gemv"]
CUDA_FLAGS = ["-O3", "-gencode=arch=compute_90,code=[sm_90,compute_90]", "-std=c++17"]

CUDA_SRC = r"""
#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

constexpr int kWarpsPerBlock = 8;
constexpr int kThreads = kWarpsPerBlock * 32;
constexpr int ROWS_PER_WARP = 2;
constexpr int ROWS_PER_BLOCK = kWarpsPerBlock * ROWS_PER_WARP;
constexpr int kLoadsInFlight = 4;            // 16-byte loads per lane per row before the first use
constexpr int kBatchBytes = 32 * 16 * kLoadsInFlight;  // bytes of a row one load batch covers
constexpr int kBlocksPerSM = 4;                // NOTE: 4 x 256 threads x 64 registers = the whole register file
constexpr uint32_t kTableLo = 0x03020100u;   // e2m1 magnitude x 2 of codes 0..3: 0, 1, 2, 3
constexpr uint32_t kTableHi = 0x0C080604u;   // codes 4..7: 4, 6, 8, 12
constexpr uint32_t kSignBits = 0x88888888u;  // bit 3 of each of a word's eight e2m1 codes

__device__ __forceinline__ float e4m3_to_float(uint32_t bits) {
    __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(bits & 0xFFu), __NV_E4M3);
    return __half2float(__half(h));
}

// prmt.b32 in its default mode: a selector nibble's bit 3 replicates the chosen byte's sign bit.
// NOTE: inline PTX rather than __byte_perm, whose documentation promises only 3 selector bits.
__device__ __forceinline__ uint32_t prmt(uint32_t lo, uint32_t hi, uint32_t selector) {
    uint32_t out;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(out) : "r"(lo), "r"(hi), "r"(selector));
    return out;
}

// The vector's eight codes in u (element i in nibble i) as magnitudes x 2, four int8 a word:
// lo = elements 0..3, hi = elements 4..7. With the sign bits cleared every selector nibble picks a
// table byte as is.
struct VectorMagnitudes { uint32_t lo, hi; };
__device__ __forceinline__ VectorMagnitudes vector_magnitudes(uint32_t u) {
    const uint32_t m = u & ~kSignBits;
    return {prmt(kTableLo, kTableHi, m), prmt(kTableLo, kTableHi, m >> 16)};
}

// sum over 8 elements of a x b x 4, exact: w holds A's codes, u the vector's (same elements, same
// nibbles), bm the vector's magnitudes. s = w ^ (u's sign bits) has sign(a) x sign(b) as its codes'
// signs and |a| as their magnitudes; PRMT(T, s) gives |a| where that sign is + and 0 where it is -
// (sign-replicate of a positive byte), PRMT(T, s ^ signs) the reverse, so the difference of their
// dot products with |b| is the signed sum. -0 codes give 0 in both.
__device__ __forceinline__ void dot8(uint32_t w, uint32_t u, VectorMagnitudes bm, int& pos, int& neg) {
    const uint32_t s = w ^ (u & kSignBits);
    const uint32_t f = w ^ (~u & kSignBits);  // s with every sign flipped, one LOP3
    pos = __dp4a(static_cast<int>(prmt(kTableLo, kTableHi, s)), static_cast<int>(bm.lo), pos);
    pos = __dp4a(static_cast<int>(prmt(kTableLo, kTableHi, s >> 16)), static_cast<int>(bm.hi), pos);
    neg = __dp4a(static_cast<int>(prmt(kTableLo, kTableHi, f)), static_cast<int>(bm.lo), neg);
    neg = __dp4a(static_cast<int>(prmt(kTableLo, kTableHi, f >> 16)), static_cast<int>(bm.hi), neg);
}

// One 16-element block's contribution, exact: dot is the block's sum of (2a)(2b), an integer of
// magnitude at most 16 x 144 = 2304 (12 bits); scale = sfa x sfb / 4 has at most 8 significant
// bits (two 4-bit e4m3 significands), so their fp32 product has at most 20 and is exact (every
// e4m3 scale is >= 2^-9, the product >= 2^-20, far above fp32's subnormals). The conversion to
// fp64 is exact too; only where the sums go differs from v19 (fp32 fmaf there).
__device__ __forceinline__ double block_term(int dot, float scale) {
    return static_cast<double>(static_cast<float>(dot) * scale);
}

// An L2 eviction policy that marks every line an access touches evict-first (fraction 1.0): see
// v18. A's lines are read once; consumed, they are the first victims in their set, so the dirty
// lines a zeroing flush leaves in L2 are not written back during the kernel.
__device__ __forceinline__ uint64_t evict_first_policy() {
    uint64_t policy;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    return policy;
}

// Loads of bytes read once: they take no L1 line, and their L2 line is the first to be replaced.
__device__ __forceinline__ uint4 load_once_16(const uint8_t* address, uint64_t policy) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(address), "l"(policy));
    return v;
}

__device__ __forceinline__ uint32_t load_once_2(const uint8_t* address, uint64_t policy) {
    uint16_t v;
    asm("ld.global.nc.L1::no_allocate.L2::cache_hint.u16 %0, [%1], %2;" : "=h"(v) : "l"(address), "l"(policy));
    return v;
}

// Loads of the vector, which every warp of every CTA of its batch reads: L1-allocating (after an
// SM's first touch they hit there), normal L2 priority (never chosen over A's evict-first lines).
__device__ __forceinline__ uint4 load_shared_16(const uint8_t* address) {
    return __ldg(reinterpret_cast<const uint4*>(address));
}

__device__ __forceinline__ uint32_t load_shared_2(const uint8_t* address) {
    return __ldg(reinterpret_cast<const uint16_t*>(address));
}

// One batch of a warp's loads: per row, kLoadsInFlight 16-byte pieces of A per lane (a warp's
// piece j covers bytes base + 512 j .. base + 512 j + 511 of the row) and their scale pairs.
__device__ __forceinline__ void load_batch(uint4 (&raw)[ROWS_PER_WARP][kLoadsInFlight],
                                           uint32_t (&sa)[ROWS_PER_WARP][kLoadsInFlight],
                                           const uint8_t* const (&a_rows)[ROWS_PER_WARP],
                                           const uint8_t* const (&sa_rows)[ROWS_PER_WARP],
                                           int base, int row_bytes, int lane, uint64_t policy) {
    #pragma unroll
    for (int j = 0; j < kLoadsInFlight; ++j) {
        const int off = base + (j * 32 + lane) * 16;
        #pragma unroll
        for (int r = 0; r < ROWS_PER_WARP; ++r) {
            const bool ok = off < row_bytes;
            raw[r][j] = ok ? load_once_16(a_rows[r] + off, policy) : make_uint4(0u, 0u, 0u, 0u);
            sa[r][j] = ok ? load_once_2(sa_rows[r] + off / 8, policy) : 0u;
        }
    }
}

__global__ void __launch_bounds__(kThreads, kBlocksPerSM)
gemv_kernel(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b,
            const uint8_t* __restrict__ sfa, const uint8_t* __restrict__ sfb, __half* __restrict__ c,
            int M, int K, int L,
            int64_t a_row, int64_t a_batch, int64_t b_batch, int64_t sfa_row, int64_t sfa_batch, int64_t sfb_batch,
            int64_t c_row, int64_t c_batch) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const uint64_t read_once = evict_first_policy();
    const int row_bytes = K / 2;
    const int row_blocks = (M + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;
    // NOTE: exactly one row block per CTA, batch-major (the launcher checks that the grid holds
    // them all): v18's grid-stride loop kept its counter live across the whole body and cost a
    // spill at 64 registers here
    {
        const int l = blockIdx.x / row_blocks;
        const int row0 = (blockIdx.x % row_blocks) * ROWS_PER_BLOCK + warp * ROWS_PER_WARP;
        const uint8_t* a_rows[ROWS_PER_WARP];
        const uint8_t* sa_rows[ROWS_PER_WARP];
        bool live[ROWS_PER_WARP];
        #pragma unroll
        for (int r = 0; r < ROWS_PER_WARP; ++r) {
            live[r] = row0 + r < M;
            const int row = live[r] ? row0 + r : 0;
            a_rows[r] = a + l * a_batch + row * a_row;
            sa_rows[r] = sfa + l * sfa_batch + row * sfa_row;
        }
        const uint8_t* b_vec = b + l * b_batch;  // row 0: the vector
        const uint8_t* sb_vec = sfb + l * sfb_batch;
        // NOTE: fp64 sums: every block's term is an exact fp32 (see block_term) and a multiple of
        // 2^-20, so fp64 partial sums below 2^33 are exact, in whatever order lanes and the
        // shuffle tree add them (fp32 sums of mixed-exponent terms round, see the docstring)
        double acc[ROWS_PER_WARP] = {};

        for (int base = 0; base < row_bytes; base += kBatchBytes) {
            uint4 raw[ROWS_PER_WARP][kLoadsInFlight];
            uint32_t sa[ROWS_PER_WARP][kLoadsInFlight];
            load_batch(raw, sa, a_rows, sa_rows, base, row_bytes, lane, read_once);
            #pragma unroll
            for (int j = 0; j < kLoadsInFlight; ++j) {
                const int off = base + (j * 32 + lane) * 16;
                if (off >= row_bytes) break;
                // NOTE: the vector's bytes off .. off + 15 hold the same 32 elements as A's; its
                // scale bytes off / 8, off / 8 + 1 are those of their two 16-element blocks
                const uint4 u = load_shared_16(b_vec + off);
                const uint32_t sb = load_shared_2(sb_vec + off / 8);
                // NOTE: / 4 undoes the two x 2 of the int8 magnitudes (exact, a power of two)
                const float s0 = e4m3_to_float(sb) * 0.25f, s1 = e4m3_to_float(sb >> 8) * 0.25f;
                // NOTE: word by word, both rows per word, so only one word's magnitudes are live
                int pos[ROWS_PER_WARP][2] = {}, neg[ROWS_PER_WARP][2] = {};
                const uint32_t vector_words[4] = {u.x, u.y, u.z, u.w};
                #pragma unroll
                for (int k = 0; k < 4; ++k) {
                    const VectorMagnitudes m = vector_magnitudes(vector_words[k]);
                    #pragma unroll
                    for (int r = 0; r < ROWS_PER_WARP; ++r) {
                        const uint32_t a_words[4] = {raw[r][j].x, raw[r][j].y, raw[r][j].z, raw[r][j].w};
                        dot8(a_words[k], vector_words[k], m, pos[r][k / 2], neg[r][k / 2]);
                    }
                }
                #pragma unroll
                for (int r = 0; r < ROWS_PER_WARP; ++r) {
                    acc[r] += block_term(pos[r][0] - neg[r][0], e4m3_to_float(sa[r][j]) * s0);
                    acc[r] += block_term(pos[r][1] - neg[r][1], e4m3_to_float(sa[r][j] >> 8) * s1);
                }
            }
        }
        #pragma unroll
        for (int r = 0; r < ROWS_PER_WARP; ++r) {
            #pragma unroll
            for (int offset = 16; offset > 0; offset /= 2) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], offset);
            // NOTE: the exact sum rounded as the reference rounds it (torch's float64 -> float16 goes
            // through float32): one ulp apart from a direct cvt.rn.f16.f64 where the fp32 value
            // lands on an fp16 midpoint, which on `mixed` data is a few elements in 10^4
            if (lane == 0 && live[r]) c[l * c_batch + (row0 + r) * c_row] = __float2half_rn(__double2float_rn(acc[r]));
        }
    }
}

// The shared-memory path (v16's, rows longer than kSharedVectorAboveK elements): the vector is
// decoded once per CTA into shared memory, KC elements at a time.
constexpr int kSharedVectorAboveK = 4096;
constexpr int KC = 16384;                    // vector elements decoded into shared memory at a time
static_assert(KC % 1024 == 0, "vector_byte permutes whole 1024-element groups of the vector");
constexpr int VEC_BYTES = KC;                // the vector chunk as int8 (e2m1 x 2), one byte per element
constexpr int VSF_BYTES = KC / 16 * 4;       // the vector's block scales as floats, / 4 folded in
constexpr int SMEM_BYTES = VEC_BYTES + VSF_BYTES;  // 20 KB
static_assert(SMEM_BYTES <= 48 * 1024, "above 48 KB the launcher must opt in per device");
constexpr int kVecPiecesPerThread = KC / 32 / kThreads;  // 16-byte reads of the vector chunk per thread
constexpr int kVecScalesPerThread = KC / 16 / kThreads;  // its scale bytes per thread
static_assert(KC % (32 * kThreads) == 0, "the vector chunk splits evenly into 16-byte reads per thread");

// Where vector element e (int8) lives in shared memory, in bytes. The 32 elements that pair with
// one lane's 16 bytes of A (group g = e / 32) form two 16-byte pieces q; piece q of group g goes
// to slot (g / 32) x 64 + q x 32 + g % 32, so for each q the 32 lanes of a warp (consecutive g)
// read 512 contiguous bytes: conflict-free.
__device__ __forceinline__ int vector_byte(int e) {
    const int g = e / 32, q = (e % 32) / 16;
    return ((g / 32) * 64 + q * 32 + g % 32) * 16 + e % 16;
}

// sum over 16 elements (one scale block: words w0, w1 of A, vector bytes v) of a x b x 4, exact.
// NOTE: PRMT(T, w) gives |a| for a >= 0 and 0 for a < 0 (sign-replicate of a positive byte);
// flipping the sign bits swaps the two, so the difference of the dot products is the signed sum.
__device__ __forceinline__ int block_dot(uint32_t w0, uint32_t w1, const uint4& v) {
    int pos = 0, neg = 0;
    const uint32_t words[2] = {w0, w1};
    const uint32_t vec[4] = {v.x, v.y, v.z, v.w};
    #pragma unroll
    for (int i = 0; i < 2; ++i) {
        const uint32_t w = words[i], f = w ^ 0x88888888u;
        pos = __dp4a(static_cast<int>(prmt(kTableLo, kTableHi, w)), static_cast<int>(vec[2 * i]), pos);
        pos = __dp4a(static_cast<int>(prmt(kTableLo, kTableHi, w >> 16)), static_cast<int>(vec[2 * i + 1]), pos);
        neg = __dp4a(static_cast<int>(prmt(kTableLo, kTableHi, f)), static_cast<int>(vec[2 * i]), neg);
        neg = __dp4a(static_cast<int>(prmt(kTableLo, kTableHi, f >> 16)), static_cast<int>(vec[2 * i + 1]), neg);
    }
    return pos - neg;
}

// Four e2m1 codes (the low 16 bits of w, element i in nibble i) -> their values x 2 as four int8.
// NOTE: PRMT of the magnitude table gives |a| where the code is positive and 0 where negative
// (sign-replicate of a positive byte); with the sign bits flipped, the reverse. Their byte-wise
// difference is the signed value, with no borrow since one of each pair is 0.
__device__ __forceinline__ uint32_t e2m1x4_to_int8x4(uint32_t w) {
    return __vsub4(prmt(kTableLo, kTableHi, w), prmt(kTableLo, kTableHi, w ^ 0x8888u));
}

// v16's loads of bytes read once: no L1 line, normal L2 priority (v18's evict-first hint measured SAME).
__device__ __forceinline__ uint4 load_plain_once_16(const uint8_t* address) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(address));
    return v;
}

__device__ __forceinline__ uint32_t load_plain_once_2(const uint8_t* address) {
    uint16_t v;
    asm("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(v) : "l"(address));
    return v;
}

// One batch of a warp's loads: per row, kLoadsInFlight 16-byte pieces of A per lane (a warp's
// piece j covers bytes base + 512 j .. base + 512 j + 511 of the row's chunk) and their scale pairs.
__device__ __forceinline__ void load_chunk_batch(uint4 (&raw)[ROWS_PER_WARP][kLoadsInFlight],
                                           uint32_t (&sa)[ROWS_PER_WARP][kLoadsInFlight],
                                           const uint8_t* const (&a_rows)[ROWS_PER_WARP],
                                           const uint8_t* const (&sa_rows)[ROWS_PER_WARP],
                                           int chunk_offset, int base, int chunk_bytes, int lane) {
    #pragma unroll
    for (int j = 0; j < kLoadsInFlight; ++j) {
        const int off = base + (j * 32 + lane) * 16;
        #pragma unroll
        for (int r = 0; r < ROWS_PER_WARP; ++r) {
            const bool ok = off < chunk_bytes;
            raw[r][j] = ok ? load_plain_once_16(a_rows[r] + chunk_offset + off) : make_uint4(0u, 0u, 0u, 0u);
            sa[r][j] = ok ? load_plain_once_2(sa_rows[r] + (chunk_offset + off) / 8) : 0u;
        }
    }
}

__device__ __forceinline__ void prefetch_l2(const void* address) {
    asm volatile("prefetch.global.L2 [%0];" : : "l"(address));
}

__global__ void __launch_bounds__(kThreads, kBlocksPerSM)  // v16's kernel, fp64 sums
gemv_shared_vector_kernel(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b,
            const uint8_t* __restrict__ sfa, const uint8_t* __restrict__ sfb, __half* __restrict__ c,
            int M, int K, int L,
            int64_t a_row, int64_t a_batch, int64_t b_batch, int64_t sfa_row, int64_t sfa_batch, int64_t sfb_batch,
            int64_t c_row, int64_t c_batch) {
    extern __shared__ __align__(16) uint8_t smem[];
    uint8_t* vec = smem;
    float* vsf = reinterpret_cast<float*>(smem + VEC_BYTES);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row_blocks = (M + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;
    int cached_l = -1;  // the batch whose whole vector is in shared memory (when K fits one chunk)
    // NOTE: one row block per CTA (the launch makes gridDim.x = row_blocks x L); the loop stays so
    // that a grid cut at the 2^31 - 1 CTA limit still covers every block.
    for (int work = blockIdx.x; work < row_blocks * L; work += gridDim.x) {
        const int l = work / row_blocks;
        const int row0 = (work % row_blocks) * ROWS_PER_BLOCK + warp * ROWS_PER_WARP;
        const uint8_t* a_rows[ROWS_PER_WARP];
        const uint8_t* sa_rows[ROWS_PER_WARP];
        bool live[ROWS_PER_WARP];
        #pragma unroll
        for (int r = 0; r < ROWS_PER_WARP; ++r) {
            live[r] = row0 + r < M;
            const int row = live[r] ? row0 + r : 0;
            a_rows[r] = a + l * a_batch + row * a_row;
            sa_rows[r] = sfa + l * sfa_batch + row * sfa_row;
        }
        const uint8_t* b_vec = b + l * b_batch;  // row 0: the vector
        const uint8_t* sb_vec = sfb + l * sfb_batch;
        double acc[ROWS_PER_WARP] = {};  // NOTE: exact sums, as gemv_kernel's

        for (int k0 = 0; k0 < K; k0 += KC) {
            const int kc = K - k0 < KC ? K - k0 : KC;
            const int chunk_bytes = kc / 2;
            if (!(K <= KC && l == cached_l)) {
                // NOTE: the rows' first load batch goes to L2 now, so HBM has the CTA's work during the
                // vector's decode (held in registers instead it costs spills at 64 registers)
                const int first_bytes = chunk_bytes < kBatchBytes ? chunk_bytes : kBatchBytes;
                #pragma unroll
                for (int r = 0; r < ROWS_PER_WARP; ++r) {
                    if (lane * 128 < first_bytes) prefetch_l2(a_rows[r] + k0 / 2 + lane * 128);
                    if (lane * 128 < first_bytes / 8) prefetch_l2(sa_rows[r] + k0 / 16 + lane * 128);
                }
                __syncthreads();  // NOTE: every warp is done with the old vector
                // NOTE: every read is issued before any is used: one round trip (v8: one per two bytes)
                uint4 packed[kVecPiecesPerThread];
                uint32_t scale_bytes[kVecScalesPerThread];
                #pragma unroll
                for (int i = 0; i < kVecPiecesPerThread; ++i) {
                    const int piece = threadIdx.x + i * kThreads;  // elements 32 piece .. 32 piece + 31
                    packed[i] = piece < kc / 32 ? __ldg(reinterpret_cast<const uint4*>(b_vec + k0 / 2) + piece)
                                                : make_uint4(0u, 0u, 0u, 0u);
                }
                #pragma unroll
                for (int i = 0; i < kVecScalesPerThread; ++i) {
                    const int block = threadIdx.x + i * kThreads;
                    scale_bytes[i] = block < kc / 16 ? __ldg(sb_vec + k0 / 16 + block) : 0u;
                }
                #pragma unroll
                for (int i = 0; i < kVecPiecesPerThread; ++i) {
                    const int piece = threadIdx.x + i * kThreads;
                    if (piece < kc / 32) {
                        // NOTE: see vector_byte: a piece's two halves of 16 elements are 16 contiguous bytes each
                        *reinterpret_cast<uint4*>(vec + vector_byte(32 * piece)) =
                            make_uint4(e2m1x4_to_int8x4(packed[i].x), e2m1x4_to_int8x4(packed[i].x >> 16),
                                       e2m1x4_to_int8x4(packed[i].y), e2m1x4_to_int8x4(packed[i].y >> 16));
                        *reinterpret_cast<uint4*>(vec + vector_byte(32 * piece + 16)) =
                            make_uint4(e2m1x4_to_int8x4(packed[i].z), e2m1x4_to_int8x4(packed[i].z >> 16),
                                       e2m1x4_to_int8x4(packed[i].w), e2m1x4_to_int8x4(packed[i].w >> 16));
                    }
                }
                // NOTE: / 4 undoes the two x 2 of the int8 values (exact, a power of two)
                #pragma unroll
                for (int i = 0; i < kVecScalesPerThread; ++i) {
                    const int block = threadIdx.x + i * kThreads;
                    if (block < kc / 16) vsf[block] = e4m3_to_float(scale_bytes[i]) * 0.25f;
                }
                __syncthreads();
                cached_l = l;
            }
            for (int base = 0; base < chunk_bytes; base += kBatchBytes) {
                uint4 raw[ROWS_PER_WARP][kLoadsInFlight];
                uint32_t sa[ROWS_PER_WARP][kLoadsInFlight];
                load_chunk_batch(raw, sa, a_rows, sa_rows, k0 / 2, base, chunk_bytes, lane);
                #pragma unroll
                for (int j = 0; j < kLoadsInFlight; ++j) {
                    const int off = base + (j * 32 + lane) * 16;
                    if (off >= chunk_bytes) break;
                    // NOTE: see vector_byte: the lane's two 16-byte pieces lie 512 bytes apart
                    const uint4* vp = reinterpret_cast<const uint4*>(vec) + (off / 512) * 64 + lane;
                    const uint4 v0 = vp[0], v1 = vp[32];
                    const float s0 = vsf[off / 8], s1 = vsf[off / 8 + 1];
                    #pragma unroll
                    for (int r = 0; r < ROWS_PER_WARP; ++r) {
                        const int d0 = block_dot(raw[r][j].x, raw[r][j].y, v0);
                        const int d1 = block_dot(raw[r][j].z, raw[r][j].w, v1);
                        acc[r] += block_term(d0, e4m3_to_float(sa[r][j]) * s0);
                        acc[r] += block_term(d1, e4m3_to_float(sa[r][j] >> 8) * s1);
                    }
                }
            }
        }
        #pragma unroll
        for (int r = 0; r < ROWS_PER_WARP; ++r) {
            #pragma unroll
            for (int offset = 16; offset > 0; offset /= 2) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], offset);
            if (lane == 0 && live[r]) c[l * c_batch + (row0 + r) * c_row] = __float2half_rn(__double2float_rn(acc[r]));  // NOTE: as gemv_kernel
        }
    }
}

// NOTE: a plain launcher, no torch headers: the CUDA source compiles alone with nvcc.
int launch_gemv(const void* a, const void* b, const void* sfa, const void* sfb, void* c, int M, int K, int L,
                const int64_t* strides, int64_t stream) {
    // NOTE: a CTA per row block: the hardware hands each SM a new block as one finishes. The
    // caller has checked that row blocks x L fits the grid (2^31 - 1 CTAs).
    const int64_t ctas = static_cast<int64_t>((M + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK) * L;
    if (ctas == 0) return 0;  // nothing to compute (M or L is 0); an empty grid is a launch error
    // NOTE: long rows amortise the shared vector's per-CTA decode and barriers over many pieces, and
    // there the per-piece vector loads and decode of gemv_kernel cost more (H200, kernel method:
    // v19 / v16 0.92x at K = 16384, 1.00x at 7168, 1.17x faster at 2048)
    if (K > kSharedVectorAboveK) {
        // NOTE: 20 KB of dynamic shared memory needs no opt-in (see the static_assert on SMEM_BYTES)
        gemv_shared_vector_kernel<<<static_cast<unsigned>(ctas), kThreads, SMEM_BYTES, reinterpret_cast<cudaStream_t>(stream)>>>(
            static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b), static_cast<const uint8_t*>(sfa),
            static_cast<const uint8_t*>(sfb), static_cast<__half*>(c), M, K, L,
            strides[0], strides[1], strides[2], strides[3], strides[4], strides[5], strides[6], strides[7]);
        return static_cast<int>(cudaGetLastError());
    }
    gemv_kernel<<<static_cast<unsigned>(ctas), kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
        static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b), static_cast<const uint8_t*>(sfa),
        static_cast<const uint8_t*>(sfb), static_cast<__half*>(c), M, K, L,
        strides[0], strides[1], strides[2], strides[3], strides[4], strides[5], strides[6], strides[7]);
    return static_cast<int>(cudaGetLastError());
}
"""

CPP_SRC = r"""
#include <c10/cuda/CUDAStream.h>

int launch_gemv(const void* a, const void* b, const void* sfa, const void* sfb, void* c, int M, int K, int L,
                const int64_t* strides, int64_t stream);

// NOTE: takes the competition's tensors as they come (float4_e2m1fn_x2 values, float8_e4m3fn
// scales): only byte pointers and strides are read, so no dtype views are made per call.
torch::Tensor gemv(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& sfa, const torch::Tensor& sfb,
                   const torch::Tensor& c) {
    TORCH_CHECK(a.dim() == 3 && b.dim() == 3 && sfa.dim() == 3 && sfb.dim() == 3 && c.dim() == 3,
                "gemv: a, b, sfa, sfb, c must be 3-D (rows, K, L)");
    TORCH_CHECK(a.element_size() == 1 && b.element_size() == 1 && sfa.element_size() == 1 && sfb.element_size() == 1,
                "gemv: values and scales must be one byte per element (packed e2m1 pairs, e4m3)");
    TORCH_CHECK(c.scalar_type() == torch::kHalf, "gemv: c must be float16");
    const int M = a.size(0), K = a.size(1) * 2, L = a.size(2);
    TORCH_CHECK(K % 32 == 0, "gemv: K must be a multiple of 32");
    TORCH_CHECK(a.stride(1) == 1 && b.stride(1) == 1 && sfa.stride(1) == 1 && sfb.stride(1) == 1,
                "gemv: packed values and scales must be contiguous along K");
    // NOTE: A and the vector are read by 16-byte loads
    TORCH_CHECK(reinterpret_cast<uintptr_t>(a.data_ptr()) % 16 == 0 && reinterpret_cast<uintptr_t>(b.data_ptr()) % 16 == 0 &&
                    a.stride(0) % 16 == 0 && a.stride(2) % 16 == 0 && b.stride(2) % 16 == 0,
                "gemv: a and b must be 16-byte aligned (base, row and batch strides)");
    // NOTE: a lane reads its two scale blocks' bytes of sfa and sfb as one 2-byte load
    TORCH_CHECK(reinterpret_cast<uintptr_t>(sfa.data_ptr()) % 2 == 0 && reinterpret_cast<uintptr_t>(sfb.data_ptr()) % 2 == 0 &&
                    sfa.stride(0) % 2 == 0 && sfa.stride(2) % 2 == 0 && sfb.stride(2) % 2 == 0,
                "gemv: sfa and sfb must be 2-byte aligned (base, row and batch strides)");
    // NOTE: one CTA per 16-row block per batch, no grid-stride loop; any M x L that fits in memory
    // fits here (2^31 CTAs of 16 rows of at least 16 bytes would be 512 GiB of A)
    TORCH_CHECK((static_cast<int64_t>(M) + 15) / 16 * L <= INT32_MAX,
                "gemv: ceil(M / 16) x L must be at most 2^31 - 1 (one CTA per 16-row block per batch)");
    const int64_t strides[8] = {a.stride(0), a.stride(2), b.stride(2), sfa.stride(0), sfa.stride(2), sfb.stride(2),
                                c.stride(0), c.stride(2)};
    const int64_t stream = reinterpret_cast<int64_t>(c10::cuda::getCurrentCUDAStream().stream());
    const int err = launch_gemv(a.data_ptr(), b.data_ptr(), sfa.data_ptr(), sfb.data_ptr(), c.data_ptr(), M, K, L,
                                strides, stream);
    TORCH_CHECK(err == 0, "gemv_kernel launch failed with CUDA error ", err);
    return c;
}
"""

_module = load_inline(name=EXTENSION_NAME, cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=FUNCTIONS,
                      extra_cuda_cflags=CUDA_FLAGS, verbose=False)


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    return _module.gemv(a, b, sfa, sfb, c)
