"""A naive NVFP4 GEMM (one thread per output element) that carries the probes' opt-ins: timeline
marks (NVFP4_MARK at the start, after the K loop, after the store) and one ablation stand-in
(NVFP4_ABLATE_NO_SUM: the K loop left out, zeros stored). Not a lineage version: the GPU tests of
`nvfp4 probe marks` and `nvfp4 probe ablate` run it (tests/test_probes.py).

Version: marked_gemm
Arch: any
Change: test fixture for the probes
"""

from torch.utils.cpp_extension import load_inline

from harness.probes.marks import MARKS_CUDA  # a lineage version pastes the text instead (no imports on GPU MODE)

EXTENSION_NAME = "probes_marked_gemm"
FUNCTIONS = ["gemm"]
MARK_NAMES = ["start", "K loop", "stored"]
ABLATIONS = {"no_sum": ["NVFP4_ABLATE_NO_SUM"]}

CUDA_SRC = MARKS_CUDA + r"""
#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <c10/cuda/CUDAStream.h>

__constant__ float kE2M1[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
                                -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

__device__ float e4m3(uint8_t bits) {
    __nv_fp8_e4m3 x;
    x.__x = bits;
    return static_cast<float>(x);
}

// c[l][row][col] = sum over K of a[l][row][k] * b[l][col][k], each operand's 16-element blocks scaled;
// the tensors are the contiguous (L, rows, K/2), (L, rows, K/16) and (L, M, N) storages of GPU MODE's views.
__global__ void naive_gemm(const uint8_t* a, const uint8_t* b, const uint8_t* sfa, const uint8_t* sfb, __half* c,
                           int m, int n, int k) {
    if (threadIdx.x == 0) NVFP4_MARK(0);
    const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y, l = blockIdx.z;
    float acc = 0.0f;
#if !NVFP4_ABLATE_NO_SUM
    if (col < n) {
        const uint8_t* a_row = a + (static_cast<size_t>(l) * m + row) * (k / 2);
        const uint8_t* b_row = b + (static_cast<size_t>(l) * n + col) * (k / 2);
        const uint8_t* sa = sfa + (static_cast<size_t>(l) * m + row) * (k / 16);
        const uint8_t* sb = sfb + (static_cast<size_t>(l) * n + col) * (k / 16);
        for (int kb = 0; kb < k / 16; ++kb) {
            float block = 0.0f;
            for (int j = 0; j < 8; ++j) {
                const uint8_t x = a_row[kb * 8 + j], y = b_row[kb * 8 + j];
                block += kE2M1[x & 15] * kE2M1[y & 15] + kE2M1[x >> 4] * kE2M1[y >> 4];
            }
            acc += block * e4m3(sa[kb]) * e4m3(sb[kb]);
        }
    }
#endif
    if (threadIdx.x == 0) NVFP4_MARK(1);
    if (col < n) c[(static_cast<size_t>(l) * m + row) * n + col] = __float2half_rn(acc);
    if (threadIdx.x == 0) NVFP4_MARK(2);
}

torch::Tensor gemm(torch::Tensor a, torch::Tensor b, torch::Tensor sfa, torch::Tensor sfb, torch::Tensor c) {
    const int m = static_cast<int>(c.size(0)), n = static_cast<int>(c.size(1)), l = static_cast<int>(c.size(2));
    const int k = static_cast<int>(a.size(1) * 2);
    const dim3 grid((n + 127) / 128, m, l);
    naive_gemm<<<grid, 128, 0, c10::cuda::getCurrentCUDAStream()>>>(
        static_cast<const uint8_t*>(a.data_ptr()), static_cast<const uint8_t*>(b.data_ptr()),
        static_cast<const uint8_t*>(sfa.data_ptr()), static_cast<const uint8_t*>(sfb.data_ptr()),
        static_cast<__half*>(c.data_ptr()), m, n, k);
    return c;
}
"""

CPP_SRC = "torch::Tensor gemm(torch::Tensor a, torch::Tensor b, torch::Tensor sfa, torch::Tensor sfb, torch::Tensor c);"

_module = load_inline(name=EXTENSION_NAME, cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=FUNCTIONS,
                      extra_cuda_cflags=["-O3"], verbose=False)


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    return _module.gemm(a, b, sfa, sfb, c)
