"""Planted bug (GPU only): a correct GEMV whose CUDA copy into ``c`` also writes one fp16 element
past the end of ``c`` (``i <= n``). The output is right, so ``nvfp4 test`` passes it;
``nvfp4 sanitize gemv tests/planted/oob_write.py`` (memcheck) must report the invalid write.

Version: oob_write
Arch: any
Change: planted out-of-bounds global write
"""

import torch
from torch.utils.cpp_extension import load_inline

from _gemv import gemv

EXTENSION_NAME = "planted_oob_write"
CUDA_SRC = r"""
#include <cuda_fp16.h>

__global__ void copy_one_past_end(const __half* src, __half* dst, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i <= n) {  // the planted bug: i == n writes past the end of dst
        dst[i] = i < n ? src[i] : __float2half(0.0f);
    }
}

void copy_out(torch::Tensor src, torch::Tensor dst, int64_t stream) {
    int64_t n = dst.numel();
    int threads = 128;
    int blocks = (int)((n + threads) / threads);  // enough threads for index n
    copy_one_past_end<<<blocks, threads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
        reinterpret_cast<const __half*>(src.data_ptr<at::Half>()),
        reinterpret_cast<__half*>(dst.data_ptr<at::Half>()), n);
}
"""
CPP_SRC = "void copy_out(torch::Tensor src, torch::Tensor dst, int64_t stream);"
FUNCTIONS = ["copy_out"]
CUDA_FLAGS = ["-O3", "-lineinfo"]

_ext = load_inline(name=EXTENSION_NAME, cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=FUNCTIONS,
                   extra_cuda_cflags=CUDA_FLAGS)


def custom_kernel(data):
    c = data[-1]
    result = gemv(data)  # laid out like c (empty_like), so one flat copy over the storage is right
    _ext.copy_out(result, c, torch.cuda.current_stream().cuda_stream)
    return c
