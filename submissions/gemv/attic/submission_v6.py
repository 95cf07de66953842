"""NVFP4 GEMV v6: the next batch of loads requested before the current one is consumed.

Version: v6
Parent: v5
Change: a warp's loads come in batches (2 rows x 4 x 16 bytes per lane); v5 requested a batch,
waited for it, consumed it, and only then requested the next, so each warp had memory in flight
only half of the time (Nsight Compute on v4: long_scoreboard 50% of stalls, 2.05 TB/s). Two
batches now alternate in registers: batch i + 1 is requested before batch i is consumed.
Verdict: slower
Arch: sm_90
Analogue: none
Measured: H200 (driver 580.159.04, CUDA 13.0, torch 2.11), commit b673dd5 + this file, cold mode:
49.9 / 89.2 / 34.8 us. vs v5 in one compare (4 process pairs): 0.942x [0.867, 1.021] AMBIGUOUS,
0.924x [0.895, 0.954] SLOWER, 1.037x [0.918, 1.172] AMBIGUOUS; geomean 0.967x [0.919, 1.016].
Kept for the lesson: twice the bytes requested ahead per warp, at the same two CTAs per SM, did
not make the kernel faster; bytes in flight per warp were not what limited v5 (no profile yet).

Kernel otherwise as v5: per byte of A one PRMT, one LDS (table), one HFMA2, plus ~1 for block
sums, scales and the vector; e2m1 x e2m1 half2 sums of 8 products are exact, block sums in fp32.
Any M, any K multiple of 32, any L; the vector is decoded in chunks of KC elements.
"""

import torch
from torch.utils.cpp_extension import load_inline

WARPS_PER_BLOCK = 8
ROWS_PER_WARP = 2
KC = 16384
EXTENSION_NAME = "nvfp4_gemv_v6"
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
constexpr int KC = 16384;                    // vector elements decoded into shared memory at a time
static_assert(KC / 2 % 512 == 0, "vector_slot permutes whole 512-byte groups of the packed vector");
constexpr int kLoadsInFlight = 4;            // 16-byte loads per lane per row before the first use
constexpr int LUT_BYTES = 256 * 256;         // entry e at e * 256 + lane * 4: each lane its own bank
constexpr int VEC_BYTES = KC / 2 * 4;        // one half2 per packed byte of the vector
constexpr int VSF_BYTES = KC / 16 * 4;       // the vector's block scales as floats
constexpr int SMEM_BYTES = LUT_BYTES + VEC_BYTES + VSF_BYTES;  // 100 KB: two CTAs per SM
constexpr int kBlocksPerSM = 2;

__device__ __forceinline__ float e4m3_to_float(uint32_t bits) {
    __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(bits & 0xFFu), __NV_E4M3);
    return __half2float(__half(h));
}

// Where the half2 of vector byte i lives in shared memory (in 4-byte words). The 16 half2 that
// pair with one lane's 16 bytes of A (bytes 16g..16g+15) form four 16-byte pieces q = 0..3; piece
// q of group g goes to 16-byte slot (g / 32) x 128 + q x 32 + g % 32, so that for each q the 32
// lanes of a warp (consecutive g) read 512 contiguous bytes: one wavefront per 128 bytes.
__device__ __forceinline__ int vector_slot(int i) {
    const int g = i / 16, q = (i % 16) / 4, word = i % 4;
    return ((g / 32) * 128 + q * 32 + g % 32) * 4 + word;
}

// Both e2m1 nibbles of byte e as a half2 (low nibble in the low half), exact.
__device__ __forceinline__ uint32_t table_entry(uint32_t e) {
    const uint32_t z = e * 4097u;  // the byte at bits 0..7 and 12..19
    uint32_t bits = ((z << 12) & 0x80008000u) | ((z << 9) & 0x0E000E00u);  // value x 2^-14
    __half2 v = __hmul2(*reinterpret_cast<__half2*>(&bits), __float2half2_rn(16384.f));
    return *reinterpret_cast<uint32_t*>(&v);
}

// The table address of byte `i` of `word` for this lane: byte x 256 + lane x 4, one PRMT
// (lane4 holds lane x 4 in its low byte and zeros above).
template <int i>
__device__ __forceinline__ uint32_t table_offset(uint32_t word, uint32_t lane4) {
    return __byte_perm(word, lane4, 0x5504 | (i << 4));
}

__device__ __forceinline__ __half2 lut_load(const uint8_t* lut, uint32_t offset) {
    return *reinterpret_cast<const __half2*>(lut + offset);
}

// sum over 8 bytes (16 elements, one scale block) of e2m1(a) x e2m1(b), exact in the half2.
__device__ __forceinline__ float block_dot(uint32_t w0, uint32_t w1, const uint4& v0, const uint4& v1,
                                          const uint8_t* lut, uint32_t lane4) {
    const uint32_t vec[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
    __half2 acc = __float2half2_rn(0.f);
    acc = __hfma2(lut_load(lut, table_offset<0>(w0, lane4)), *reinterpret_cast<const __half2*>(&vec[0]), acc);
    acc = __hfma2(lut_load(lut, table_offset<1>(w0, lane4)), *reinterpret_cast<const __half2*>(&vec[1]), acc);
    acc = __hfma2(lut_load(lut, table_offset<2>(w0, lane4)), *reinterpret_cast<const __half2*>(&vec[2]), acc);
    acc = __hfma2(lut_load(lut, table_offset<3>(w0, lane4)), *reinterpret_cast<const __half2*>(&vec[3]), acc);
    acc = __hfma2(lut_load(lut, table_offset<0>(w1, lane4)), *reinterpret_cast<const __half2*>(&vec[4]), acc);
    acc = __hfma2(lut_load(lut, table_offset<1>(w1, lane4)), *reinterpret_cast<const __half2*>(&vec[5]), acc);
    acc = __hfma2(lut_load(lut, table_offset<2>(w1, lane4)), *reinterpret_cast<const __half2*>(&vec[6]), acc);
    acc = __hfma2(lut_load(lut, table_offset<3>(w1, lane4)), *reinterpret_cast<const __half2*>(&vec[7]), acc);
    const float2 f = __half22float2(acc);  // NOTE: the two halves' sum (<= 576) may not be exact in fp16
    return f.x + f.y;
}

// One batch of a warp's loads: for each of its rows, kLoadsInFlight 16-byte pieces per lane
// (512 bytes of the row per piece across the warp) and their 2-byte scale pairs.
struct Batch {
    uint4 raw[ROWS_PER_WARP][kLoadsInFlight];
    uint32_t sa[ROWS_PER_WARP][kLoadsInFlight];
};

__device__ __forceinline__ void load_batch(Batch& b, const uint8_t* const (&a_rows)[ROWS_PER_WARP],
                                           const uint8_t* const (&sa_rows)[ROWS_PER_WARP], int k0, int base,
                                           int chunk_bytes, int lane) {
    #pragma unroll
    for (int j = 0; j < kLoadsInFlight; ++j) {
        const int off = base + (j * 32 + lane) * 16;
        #pragma unroll
        for (int r = 0; r < ROWS_PER_WARP; ++r) {
            const bool ok = off < chunk_bytes;
            b.raw[r][j] = ok ? __ldg(reinterpret_cast<const uint4*>(a_rows[r] + k0 / 2 + off)) : make_uint4(0u, 0u, 0u, 0u);
            b.sa[r][j] = ok ? __ldg(reinterpret_cast<const uint16_t*>(sa_rows[r] + (k0 / 2 + off) / 8)) : 0u;
        }
    }
}

__device__ __forceinline__ void consume_batch(const Batch& b, float (&acc)[ROWS_PER_WARP], const uint32_t* vec,
                                              const float* vsf, const uint8_t* lut, uint32_t lane4, int base,
                                              int chunk_bytes, int lane) {
    #pragma unroll
    for (int j = 0; j < kLoadsInFlight; ++j) {
        const int off = base + (j * 32 + lane) * 16;
        if (off >= chunk_bytes) break;
        // NOTE: see vector_slot: the lane's four 16-byte pieces lie 512 bytes apart
        const uint4* vp = reinterpret_cast<const uint4*>(vec) + (off / 512) * 128 + lane;
        const uint4 v0 = vp[0], v1 = vp[32], v2 = vp[64], v3 = vp[96];
        const float s0 = vsf[off / 8], s1 = vsf[off / 8 + 1];
        #pragma unroll
        for (int r = 0; r < ROWS_PER_WARP; ++r) {
            const float d0 = block_dot(b.raw[r][j].x, b.raw[r][j].y, v0, v1, lut, lane4);
            const float d1 = block_dot(b.raw[r][j].z, b.raw[r][j].w, v2, v3, lut, lane4);
            acc[r] = fmaf(d0, e4m3_to_float(b.sa[r][j]) * s0, acc[r]);
            acc[r] = fmaf(d1, e4m3_to_float(b.sa[r][j] >> 8) * s1, acc[r]);
        }
    }
}

__global__ void __launch_bounds__(kThreads, kBlocksPerSM)  // NOTE: two batches in registers must still fit two CTAs per SM (<= 128 registers)
gemv_kernel(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b,
            const uint8_t* __restrict__ sfa, const uint8_t* __restrict__ sfb, __half* __restrict__ c,
            int M, int K, int L,
            int64_t a_row, int64_t a_batch, int64_t b_batch, int64_t sfa_row, int64_t sfa_batch, int64_t sfb_batch,
            int64_t c_row, int64_t c_batch) {
    extern __shared__ __align__(16) uint8_t smem[];
    uint8_t* lut = smem;
    uint32_t* vec = reinterpret_cast<uint32_t*>(smem + LUT_BYTES);
    float* vsf = reinterpret_cast<float*>(smem + LUT_BYTES + VEC_BYTES);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const uint32_t lane4 = lane * 4;

    {   // the table: thread t builds entry t and writes its 32 per-bank copies
        const uint32_t v = table_entry(threadIdx.x);
        uint4* row = reinterpret_cast<uint4*>(lut + threadIdx.x * 256);
        #pragma unroll
        for (int i = 0; i < 8; ++i) row[i] = make_uint4(v, v, v, v);
    }

    const int row_blocks = (M + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;
    int cached_l = -1;  // the batch whose whole vector is in shared memory (when K fits one chunk)
    // NOTE: persistent: each CTA walks row blocks (batch-major) so table and vector are built once
    // per CTA, not once per 16 rows.
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
        float acc[ROWS_PER_WARP] = {};

        for (int k0 = 0; k0 < K; k0 += KC) {
            const int kc = K - k0 < KC ? K - k0 : KC;
            if (!(K <= KC && l == cached_l)) {
                __syncthreads();  // NOTE: the table is built (first pass) and every warp is done with the old vector
                for (int i = threadIdx.x; i < kc / 2; i += kThreads) {  // the vector chunk, a byte per thread-step
                    vec[vector_slot(i)] = *reinterpret_cast<const uint32_t*>(lut + b_vec[k0 / 2 + i] * 256 + lane4);
                }
                for (int i = threadIdx.x; i < kc / 16; i += kThreads) vsf[i] = e4m3_to_float(sb_vec[k0 / 16 + i]);
                __syncthreads();
                cached_l = l;
            }
            const int chunk_bytes = kc / 2;
            constexpr int STEP = 32 * 16 * kLoadsInFlight;  // bytes of a row one batch covers
            Batch even, odd;
            load_batch(even, a_rows, sa_rows, k0, 0, chunk_bytes, lane);
            // NOTE: unrolled by two so both batches stay in registers (no copies between them)
            for (int base = 0; base < chunk_bytes; base += 2 * STEP) {
                if (base + STEP < chunk_bytes) load_batch(odd, a_rows, sa_rows, k0, base + STEP, chunk_bytes, lane);
                consume_batch(even, acc, vec, vsf, lut, lane4, base, chunk_bytes, lane);
                if (base + STEP >= chunk_bytes) break;
                if (base + 2 * STEP < chunk_bytes) load_batch(even, a_rows, sa_rows, k0, base + 2 * STEP, chunk_bytes, lane);
                consume_batch(odd, acc, vec, vsf, lut, lane4, base + STEP, chunk_bytes, lane);
            }
        }
        #pragma unroll
        for (int r = 0; r < ROWS_PER_WARP; ++r) {
            #pragma unroll
            for (int offset = 16; offset > 0; offset /= 2) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], offset);
            if (lane == 0 && live[r]) c[l * c_batch + (row0 + r) * c_row] = __float2half_rn(acc[r]);
        }
    }
}

// NOTE: a plain launcher, no torch headers: the CUDA source compiles alone with nvcc.
int launch_gemv(const void* a, const void* b, const void* sfa, const void* sfb, void* c, int M, int K, int L,
                const int64_t* strides, int64_t stream) {
    int device = 0;
    cudaGetDevice(&device);
    static int sm_count[64] = {};
    if (device >= 64) return static_cast<int>(cudaErrorInvalidDevice);
    if (sm_count[device] == 0) {  // NOTE: above 48 KB a kernel must opt in, once per device
        const cudaError_t err = cudaFuncSetAttribute(gemv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
        if (err != cudaSuccess) return static_cast<int>(err);
        cudaDeviceGetAttribute(&sm_count[device], cudaDevAttrMultiProcessorCount, device);
    }
    const int work = (M + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK * L;
    const int ctas = work < sm_count[device] * kBlocksPerSM ? work : sm_count[device] * kBlocksPerSM;
    gemv_kernel<<<ctas, kThreads, SMEM_BYTES, reinterpret_cast<cudaStream_t>(stream)>>>(
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
