"""Planted bug (GPU only): a correct GEMV whose CUDA copy into ``c`` stages values in shared
memory and reads a neighbour's slot without ``__syncthreads()``. The racy value only goes to a
scratch buffer, so the output is right and ``nvfp4 test`` passes it;
``nvfp4 sanitize gemv tests/planted/smem_race.py --tool racecheck`` must report the hazard.

Version: smem_race
Arch: any
Change: planted shared-memory race (a missing __syncthreads)
"""

import torch
from torch.utils.cpp_extension import load_inline

from _gemv import gemv

EXTENSION_NAME = "planted_smem_race"
CUDA_SRC = r"""
#include <cuda_fp16.h>

__global__ void copy_through_shared(const __half* src, __half* dst, float* scratch, int64_t n) {
    __shared__ float tile[128];
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? __half2float(src[i]) : 0.0f;
    // the planted bug: no __syncthreads() here; thread 31 reads what warp 1's thread 32 writes
    float neighbour = tile[(threadIdx.x + 1) % blockDim.x];
    if (i < n) {
        dst[i] = src[i];
        scratch[i] = neighbour;
    }
}

void copy_out(torch::Tensor src, torch::Tensor dst, torch::Tensor scratch, int64_t stream) {
    int64_t n = dst.numel();
    int threads = 128;
    int blocks = (int)((n + threads - 1) / threads);
    copy_through_shared<<<blocks, threads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
        reinterpret_cast<const __half*>(src.data_ptr<at::Half>()),
        reinterpret_cast<__half*>(dst.data_ptr<at::Half>()), scratch.data_ptr<float>(), n);
}
"""
CPP_SRC = "void copy_out(torch::Tensor src, torch::Tensor dst, torch::Tensor scratch, int64_t stream);"
FUNCTIONS = ["copy_out"]
CUDA_FLAGS = ["-O3", "-lineinfo"]

_ext = load_inline(name=EXTENSION_NAME, cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=FUNCTIONS,
                   extra_cuda_cflags=CUDA_FLAGS)


def custom_kernel(data):
    c = data[-1]
    result = gemv(data)
    scratch = torch.empty(c.numel(), dtype=torch.float32, device=c.device)
    _ext.copy_out(result, c, scratch, torch.cuda.current_stream().cuda_stream)
    return c
