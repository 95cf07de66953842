"""NVFP4 GEMV v1: one warp per output row, CUDA cores, fp32 accumulation.

Version: v1
Parent: v0
Change: one CUDA kernel for all batches: a warp per row of A reads 16 bytes per lane per step (coalesced), decodes e2m1 through a shared-memory table and e4m3 with the fp8 intrinsic, and reduces with shuffles
Arch: sm_90
Analogue: none
Measured: NVIDIA H200, mean µs, L2 flushed, each call from an idle device (nvfp4 table, commit 07f3ee2): 7168x16384 66.6, 4096x7168 L8 102.2, 7168x2048 L4 47.6; CUDA-graph replays (--graph): 48.1, 83.2, 26.2

The vector b (row 0 of its 128-row tensor) is re-read by every warp from L2; A is streamed once.
Exact: e2m1 x e2m1 products are multiples of 1/4 below 36, so the 16-element block sum is exact
in fp32, and one multiply by the two e4m3 scales' product (each exact in fp32) follows, as in
the reference. Strides come from the tensors, so any layout GPU MODE hands over works.
"""

import torch
from torch.utils.cpp_extension import load_inline

WARPS_PER_BLOCK = 8
EXTENSION_NAME = "nvfp4_gemv_v1"
CUDA_FLAGS = ["-O3", "-gencode=arch=compute_90,code=[sm_90,compute_90]", "-std=c++17"]

CUDA_SRC = r"""
#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

constexpr int kWarpsPerBlock = 8;
constexpr int BYTES_PER_LANE_STEP = 16;   // 32 e2m1 values: two 16-element scale blocks

__device__ __forceinline__ float e4m3_to_float(uint8_t bits) {
    __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(bits), __NV_E4M3);
    return __half2float(__half(h));
}

// Sum over the 8 nibble pairs of two 4-byte words: sum_i e2m1(a_i) * e2m1(b_i). Exact in fp32.
__device__ __forceinline__ float dot8(uint32_t a, uint32_t b, const float* lut) {
    float s = 0.f;
    #pragma unroll
    for (int i = 0; i < 8; ++i) {
        s = fmaf(lut[(a >> (4 * i)) & 0xF], lut[(b >> (4 * i)) & 0xF], s);
    }
    return s;
}

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
gemv_kernel(const uint8_t* __restrict__ a, const uint8_t* __restrict__ b,
            const uint8_t* __restrict__ sfa, const uint8_t* __restrict__ sfb, __half* __restrict__ c,
            int M, int K,
            int64_t a_row, int64_t a_batch, int64_t b_batch, int64_t sfa_row, int64_t sfa_batch, int64_t sfb_batch,
            int64_t c_row, int64_t c_batch) {
    __shared__ float lut[16];
    if (threadIdx.x < 16) {
        const float values[16] = {0.f, 0.5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f,
                                  -0.f, -0.5f, -1.f, -1.5f, -2.f, -3.f, -4.f, -6.f};
        lut[threadIdx.x] = values[threadIdx.x];
    }
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row = blockIdx.x * kWarpsPerBlock + warp;
    const int l = blockIdx.y;
    if (row >= M) return;
    const uint8_t* a_row_ptr = a + l * a_batch + row * a_row;
    const uint8_t* b_row_ptr = b + l * b_batch;  // row 0: the vector
    const uint8_t* sa_ptr = sfa + l * sfa_batch + row * sfa_row;
    const uint8_t* sb_ptr = sfb + l * sfb_batch;
    const int k_bytes = K / 2;
    float acc = 0.f;
    for (int off = lane * BYTES_PER_LANE_STEP; off < k_bytes; off += 32 * BYTES_PER_LANE_STEP) {
        const uint4 av = __ldg(reinterpret_cast<const uint4*>(a_row_ptr + off));
        const uint4 bv = __ldg(reinterpret_cast<const uint4*>(b_row_ptr + off));
        const int blk = off / 8;  // 8 bytes = one 16-element scale block
        const float s0 = e4m3_to_float(sa_ptr[blk]) * e4m3_to_float(sb_ptr[blk]);
        const float s1 = e4m3_to_float(sa_ptr[blk + 1]) * e4m3_to_float(sb_ptr[blk + 1]);
        acc = fmaf(dot8(av.x, bv.x, lut) + dot8(av.y, bv.y, lut), s0, acc);
        acc = fmaf(dot8(av.z, bv.z, lut) + dot8(av.w, bv.w, lut), s1, acc);
    }
    #pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
    if (lane == 0) c[l * c_batch + row * c_row] = __float2half_rn(acc);
}

// NOTE: a plain launcher, no torch headers: the CUDA source compiles alone with nvcc (fast, and on
// a machine without a GPU or a CUDA build of torch); the torch binding lives in CPP_SRC.
int launch_gemv(const void* a, const void* b, const void* sfa, const void* sfb, void* c, int M, int K, int L,
                const int64_t* strides, int64_t stream) {
    dim3 grid((M + kWarpsPerBlock - 1) / kWarpsPerBlock, L);
    gemv_kernel<<<grid, kWarpsPerBlock * 32, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
        static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b), static_cast<const uint8_t*>(sfa),
        static_cast<const uint8_t*>(sfb), static_cast<__half*>(c), M, K,
        strides[0], strides[1], strides[2], strides[3], strides[4], strides[5], strides[6], strides[7]);
    return static_cast<int>(cudaGetLastError());
}
"""

CPP_SRC = r"""
int launch_gemv(const void* a, const void* b, const void* sfa, const void* sfb, void* c, int M, int K, int L,
                const int64_t* strides, int64_t stream);

torch::Tensor gemv(torch::Tensor a, torch::Tensor b, torch::Tensor sfa, torch::Tensor sfb, torch::Tensor c,
                   int64_t stream) {
    const int M = a.size(0), K = a.size(1) * 2, L = a.size(2);
    TORCH_CHECK(K % 32 == 0, "K must be a multiple of 32");
    TORCH_CHECK(a.stride(1) == 1 && b.stride(1) == 1 && sfa.stride(1) == 1 && sfb.stride(1) == 1,
                "packed values and scales must be contiguous along K");
    const int64_t strides[8] = {a.stride(0), a.stride(2), b.stride(2), sfa.stride(0), sfa.stride(2), sfb.stride(2),
                                c.stride(0), c.stride(2)};
    const int err = launch_gemv(a.data_ptr(), b.data_ptr(), sfa.data_ptr(), sfb.data_ptr(), c.data_ptr(), M, K, L,
                                strides, stream);
    TORCH_CHECK(err == 0, "gemv_kernel launch failed with CUDA error ", err);
    return c;
}
"""

_module = load_inline(name=EXTENSION_NAME, cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=["gemv"],
                      extra_cuda_cflags=CUDA_FLAGS, verbose=False)


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    return _module.gemv(a.view(torch.uint8), b.view(torch.uint8), sfa.view(torch.uint8), sfb.view(torch.uint8), c,
                        torch.cuda.current_stream().cuda_stream)
