"""NVFP4 grouped GEMM v7: one wgmma group kept in flight across K blocks.

Version: v7
Parent: v6
Change: each K block waits only for the previous block's wgmma (wait_group 1), not its own
(wait_group 0), so the tensor cores are never drained between blocks: the next block's B decode,
its cp.async requests and the CTA barrier all overlap the running wgmma. A is requested two blocks
ahead in the four-stage ring (a stage is refilled only after every warpgroup's wgmma that read it
is known complete: the barrier after the wait of the following block).
Verdict: slower
Arch: sm_90a
Analogue: the writeup's overlap of MMA with the next stage's loads (V4-V6)
Measured: NVIDIA H200, mean µs, L2 flushed, each call from an idle device (nvfp4 run, commit 475913d): A 378.0, B 261.6, C 95.8, D 62.2; in one compare against v6 (four process pairs): 1.01x, 1.03x, 1.00x (AMBIGUOUS), 0.94x [0.90, 0.98] (SLOWER), geomean 0.99x [0.81, 1.22], AMBIGUOUS: no gain, kept for the lesson. torch.profiler, 20 calls: A 271.2 + 11.5 µs of kernels, D 20.6 + 2.5 µs, against 353-378 and 59-62 µs per call: the call, not the kernel, is most of D

Exactness as v6: a x sfa exact in fp16 (prepass), B's decode as v2 (two exact HMUL2), fp16 x fp16
products exact in fp32, fp32 accumulation. Rows past M_g are zero-filled by cp.async and not
stored. N multiple of 128, K multiple of 64, any M >= 1, any number of groups (one launch pair per
32).
"""

import torch
from torch.utils.cpp_extension import load_inline

BLOCK_N = 128
BLOCK_M = 128
BLOCK_K = 64
EXTENSION_NAME = "nvfp4_group_gemm_v7"
FUNCTIONS = ["group_gemm"]
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
constexpr int kStages = 4;              // fp16 A tiles: block kb read, kb - 1 maybe still read, kb + 1, kb + 2 landing
constexpr int kAhead = 2;               // A requested this many blocks ahead
constexpr int kMaxGroups = 32;          // keeps the kernel parameter (all descriptors) under 4 KB
constexpr int A_TILE_BYTES = BLOCK_M * BLOCK_K * 2;
constexpr int SMEM_BYTES = kStages * A_TILE_BYTES + 1024;  // + slack to align the tiles to 1024 bytes
constexpr int kDecodeThreads = 256;     // prepass: one 32-element block pair (16 bytes of A) per thread

struct GroupDesc {
    const uint8_t* a; const uint8_t* b; const uint8_t* sfa; const uint8_t* sfb; __half* c;
    __half* a16;                         // workspace: this group's A decoded, m x k fp16, row stride k
    int m, n, k;
    int64_t a_row, b_row, sfa_row, sfb_row, c_row;
    int tile_begin;                      // first linear tile index of this group (GEMM kernel)
    int decode_begin;                    // first block index of this group (decode kernel)
};

struct Problem {
    GroupDesc groups[kMaxGroups];
    int num_groups;
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
// NOTE: wgmma reads its register operands asynchronously. An empty asm that "modifies" a register
// after the wait keeps the compiler from reusing it for something else while wgmma may still read it.
__device__ __forceinline__ void keep_live(uint32_t (&frag)[4][4]) {
    #pragma unroll
    for (int s = 0; s < 4; ++s)
        #pragma unroll
        for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(frag[s][i])::"memory");
}
__device__ __forceinline__ void keep_live(float* acc, int n) {
    for (int i = 0; i < n; ++i) asm volatile("" : "+f"(acc[i])::"memory");
}

template <int kPending>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory"); }

// B's raw bytes for one K block: this thread's two fragment rows, all 32 bytes of each (the four
// lanes of a quad read the same bytes and keep a different one of every word), and their scales.
struct BRaw { uint4 lo[2], hi[2]; uint32_t scales[2]; };

__device__ __forceinline__ BRaw load_b(const GroupDesc& d, int n_row, int k0) {
    BRaw r;
    #pragma unroll
    for (int i = 0; i < 2; ++i) {
        const uint8_t* p = d.b + (n_row + 8 * i) * d.b_row + k0 / 2;
        r.lo[i] = *reinterpret_cast<const uint4*>(p);
        r.hi[i] = *reinterpret_cast<const uint4*>(p + 16);
        r.scales[i] = *reinterpret_cast<const uint32_t*>(d.sfb + (n_row + 8 * i) * d.sfb_row + k0 / 16);
    }
    return r;
}

// The register operand of wgmma for the four k16 steps of a K block, in mma.sync's A-fragment
// layout: step s, registers {row gid, k 2t..2t+1}, {row gid+8, same k}, {row gid, k 2t+8..2t+9},
// {row gid+8, k 2t+8..}: the byte t of words 2s and 2s+1 of each row's 32 bytes. Step s is exactly
// the row's scale block s.
__device__ __forceinline__ void decode_b(const BRaw& r, int tig, uint32_t (&frag)[4][4]) {
    #pragma unroll
    for (int i = 0; i < 2; ++i) {
        const uint32_t w[8] = {r.lo[i].x, r.lo[i].y, r.lo[i].z, r.lo[i].w, r.hi[i].x, r.hi[i].y, r.hi[i].z, r.hi[i].w};
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            const __half2 sc = scale_pair(r.scales[i] >> (8 * s));
            frag[s][i] = scaled_pair((w[2 * s] >> (8 * tig)) & 0xFFu, sc);
            frag[s][2 + i] = scaled_pair((w[2 * s + 1] >> (8 * tig)) & 0xFFu, sc);
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

// One K block: wait for its A stage, issue wgmma on `frag_now`, then wait only for block kb - 1's
// wgmma; meanwhile request A for block kb + kAhead, decode B for block kb + 1 into `frag_next`
// (free: kb - 1 read it) and request B's bytes for kb + 2.
// NOTE: two fragment arrays passed in swapped order by an unrolled caller, so both stay in registers.
__device__ __forceinline__ void main_loop_step(const GroupDesc& d, uint32_t a_tiles, float* acc,
                                               uint32_t (&frag_now)[4][4], uint32_t (&frag_next)[4][4],
                                               BRaw& b_pending, int kb, int num_k, int m0, int n_row, int tig) {
    cp_async_wait<kAhead - 1>();  // NOTE: this thread's copies of block kb have landed
    // NOTE: cp.async writes are generic-proxy; wgmma reads through the async proxy.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    // NOTE: every thread's copies of block kb are visible, and every warpgroup has waited for
    // block kb - 2's wgmma (previous step), so its stage may be refilled below.
    __syncthreads();
    const uint32_t stage = a_tiles + (kb % kStages) * A_TILE_BYTES;
    wgmma_fence();  // NOTE: orders this thread's writes of frag_now before wgmma reads them
    #pragma unroll
    for (int s = 0; s < 4; ++s) wgmma_m64n128k16(acc, frag_now[s], desc_sw128(stage + 32 * s));  // k16 step = 32 bytes
    wgmma_commit();
    wgmma_wait<1>();  // NOTE: block kb - 1's wgmma are done: frag_next is free; block kb's keep running
    keep_live(frag_next);  // NOTE: the values block kb - 1 read stay in their registers until here
    // NOTE: stage (kb + kAhead) % kStages == (kb - 2) % kStages; an empty group is still committed
    // so that the wait count above always means "block kb has landed".
    if (kb + kAhead < num_k) load_a_stage(d, m0, (kb + kAhead) * BLOCK_K, a_tiles + ((kb + kAhead) % kStages) * A_TILE_BYTES);
    cp_async_commit();
    if (kb + 1 < num_k) {
        const BRaw b_now = b_pending;
        if (kb + 2 < num_k) b_pending = load_b(d, n_row, (kb + 2) * BLOCK_K);
        decode_b(b_now, tig, frag_next);
    }
}

__global__ void __launch_bounds__(kThreads, 1)
group_gemm_kernel(const __grid_constant__ Problem problem) {
    extern __shared__ uint8_t smem_raw[];
    // NOTE: the 128-byte swizzle pattern repeats every 1024 bytes; the descriptor assumes tiles
    // that start on such a boundary (base offset 0).
    const uint32_t a_tiles = (static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw)) + 1023u) & ~1023u;

    const int tile = blockIdx.x;
    int g = 0;
    while (g + 1 < problem.num_groups && tile >= problem.groups[g + 1].tile_begin) ++g;
    const GroupDesc& d = problem.groups[g];
    const int local = tile - d.tile_begin;
    const int tiles_n = d.n / BLOCK_N;
    const int m0 = (local / tiles_n) * BLOCK_M;
    const int n0 = (local % tiles_n) * BLOCK_N;

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int gid = lane / 4, tig = lane % 4;
    const int n_row = n0 + warp * 16 + gid;  // warps 0-3: warpgroup 0, rows n0..n0+63; 4-7: the next 64

    float acc[BLOCK_M / 2];
    #pragma unroll
    for (int i = 0; i < BLOCK_M / 2; ++i) acc[i] = 0.f;

    const int num_k = d.k / BLOCK_K;
    #pragma unroll
    for (int s = 0; s < kAhead; ++s) {  // A for blocks 0 .. kAhead - 1, one commit group each
        if (s < num_k) load_a_stage(d, m0, s * BLOCK_K, a_tiles + s * A_TILE_BYTES);
        cp_async_commit();
    }
    BRaw b_pending = load_b(d, n_row, 0);
    uint32_t frag_even[4][4], frag_odd[4][4];
    decode_b(b_pending, tig, frag_even);
    if (num_k > 1) b_pending = load_b(d, n_row, BLOCK_K);
    for (int kb = 0; kb < num_k; kb += 2) {
        main_loop_step(d, a_tiles, acc, frag_even, frag_odd, b_pending, kb, num_k, m0, n_row, tig);
        if (kb + 1 < num_k) main_loop_step(d, a_tiles, acc, frag_odd, frag_even, b_pending, kb + 1, num_k, m0, n_row, tig);
    }
    wgmma_wait<0>();  // NOTE: the last block's wgmma write acc
    keep_live(acc, BLOCK_M / 2);

    // acc[4j + {0,1,2,3}]: wgmma rows (n) n_row and n_row + 8, columns (m) 8j + 2 tig and + 1.
    #pragma unroll
    for (int j = 0; j < BLOCK_M / 8; ++j) {
        const int m = m0 + 8 * j + 2 * tig;
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
            if (m + h < d.m) {
                d.c[(m + h) * d.c_row + n_row] = __float2half_rn(acc[4 * j + h]);
                d.c[(m + h) * d.c_row + n_row + 8] = __float2half_rn(acc[4 * j + 2 + h]);
            }
        }
    }
}

// NOTE: a plain launcher (no torch headers, so the file compiles alone with nvcc). ``desc`` holds
// per group: a, b, sfa, sfb, c, a16 pointers, then m, n, k, a_row, b_row, sfa_row, sfb_row, c_row.
// More than kMaxGroups groups: one launch pair per chunk of kMaxGroups (the parameter space is 4 KB).
int launch_group_gemm(const int64_t* desc, int num_groups, int64_t stream_handle) {
    if (num_groups < 1) return -1;
    const cudaStream_t stream = reinterpret_cast<cudaStream_t>(stream_handle);
    int device = 0;
    cudaGetDevice(&device);
    static bool smem_opted_in[64] = {};
    if (device >= 64) return static_cast<int>(cudaErrorInvalidDevice);
    if (!smem_opted_in[device]) {  // NOTE: above 48 KB a kernel must opt in, once per device
        const cudaError_t err = cudaFuncSetAttribute(group_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
        if (err != cudaSuccess) return static_cast<int>(err);
        smem_opted_in[device] = true;
    }
    for (int first = 0; first < num_groups; first += kMaxGroups) {
        Problem problem;
        problem.num_groups = num_groups - first < kMaxGroups ? num_groups - first : kMaxGroups;
        int tiles = 0, decode_blocks = 0;
        for (int g = 0; g < problem.num_groups; ++g) {
            const int64_t* p = desc + (first + g) * 14;
            GroupDesc& d = problem.groups[g];
            d.a = reinterpret_cast<const uint8_t*>(p[0]);
            d.b = reinterpret_cast<const uint8_t*>(p[1]);
            d.sfa = reinterpret_cast<const uint8_t*>(p[2]);
            d.sfb = reinterpret_cast<const uint8_t*>(p[3]);
            d.c = reinterpret_cast<__half*>(p[4]);
            d.a16 = reinterpret_cast<__half*>(p[5]);
            d.m = static_cast<int>(p[6]);
            d.n = static_cast<int>(p[7]);
            d.k = static_cast<int>(p[8]);
            d.a_row = p[9]; d.b_row = p[10]; d.sfa_row = p[11]; d.sfb_row = p[12]; d.c_row = p[13];
            if (d.n % BLOCK_N != 0 || d.k % BLOCK_K != 0 || d.m < 1) return -2;
            d.tile_begin = tiles;
            tiles += ((d.m + BLOCK_M - 1) / BLOCK_M) * (d.n / BLOCK_N);
            d.decode_begin = decode_blocks;
            decode_blocks += (d.m * (d.k / 32) + kDecodeThreads - 1) / kDecodeThreads;
        }
        decode_a_kernel<<<decode_blocks, kDecodeThreads, 0, stream>>>(problem);
        group_gemm_kernel<<<tiles, kThreads, SMEM_BYTES, stream>>>(problem);
        const cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) return static_cast<int>(err);
    }
    return 0;
}
"""

CPP_SRC = r"""
#include <c10/cuda/CUDAStream.h>

int launch_group_gemm(const int64_t* desc, int num_groups, int64_t stream_handle);

// NOTE: abc is the competition's list of (a, b, c) per group and sf its list of (sfa, sfb); pybind
// converts both sequences to vectors of tensor handles (no copies of data) and only pointers,
// sizes and strides are read, so any value dtypes of one byte work without views.
void group_gemm(const std::vector<std::vector<torch::Tensor>>& abc, const std::vector<std::vector<torch::Tensor>>& sf) {
    const int num_groups = static_cast<int>(abc.size());
    TORCH_CHECK(num_groups >= 1 && sf.size() == abc.size(), "group_gemm: one (a, b, c) and one (sfa, sfb) per group");
    std::vector<int64_t> desc(static_cast<size_t>(num_groups) * 14);
    int64_t workspace_elements = 0;
    for (int g = 0; g < num_groups; ++g) {
        TORCH_CHECK(abc[g].size() == 3 && sf[g].size() == 2, "group_gemm: group ", g, " must be (a, b, c) and (sfa, sfb)");
        const torch::Tensor &a = abc[g][0], &b = abc[g][1], &c = abc[g][2], &sfa = sf[g][0], &sfb = sf[g][1];
        TORCH_CHECK(a.element_size() == 1 && b.element_size() == 1 && sfa.element_size() == 1 && sfb.element_size() == 1,
                    "group_gemm: values and scales must be one byte per element (group ", g, ")");
        TORCH_CHECK(c.scalar_type() == torch::kHalf && c.dim() >= 2, "group_gemm: c must be float16 (group ", g, ")");
        TORCH_CHECK(a.stride(1) == 1 && b.stride(1) == 1 && sfa.stride(1) == 1 && sfb.stride(1) == 1 && c.stride(1) == 1,
                    "group_gemm: rows must be contiguous (group ", g, ")");
        int64_t* d = desc.data() + g * 14;
        d[0] = reinterpret_cast<int64_t>(a.data_ptr());
        d[1] = reinterpret_cast<int64_t>(b.data_ptr());
        d[2] = reinterpret_cast<int64_t>(sfa.data_ptr());
        d[3] = reinterpret_cast<int64_t>(sfb.data_ptr());
        d[4] = reinterpret_cast<int64_t>(c.data_ptr());
        d[5] = workspace_elements;  // an offset until the workspace exists (below)
        d[6] = c.size(0); d[7] = c.size(1); d[8] = a.size(1) * 2;
        d[9] = a.stride(0); d[10] = b.stride(0); d[11] = sfa.stride(0); d[12] = sfb.stride(0); d[13] = c.stride(0);
        workspace_elements += d[6] * d[8];
    }
    // NOTE: from the caching allocator on the current stream: reused, not cudaMalloc'd, per call,
    // and not handed to another stream's work while these kernels may still read it.
    const torch::Tensor workspace = torch::empty({workspace_elements}, abc[0][2].options());
    const int64_t base = reinterpret_cast<int64_t>(workspace.data_ptr());
    for (int g = 0; g < num_groups; ++g) desc[g * 14 + 5] = base + desc[g * 14 + 5] * 2;
    const int64_t stream = reinterpret_cast<int64_t>(c10::cuda::getCurrentCUDAStream().stream());
    const int err = launch_group_gemm(desc.data(), num_groups, stream);
    TORCH_CHECK(err == 0, "group_gemm: launch failed (", err, "): N must be a multiple of 128, K of 64, M at least 1");
}
"""

_module = load_inline(name=EXTENSION_NAME, cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=FUNCTIONS,
                      extra_cuda_cflags=CUDA_FLAGS, verbose=False)


def custom_kernel(data):
    abc, sf, _, _ = data
    _module.group_gemm(abc, sf)
    return [c for _, _, c in abc]
