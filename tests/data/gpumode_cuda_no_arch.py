"""A GPU MODE CUDA submission as people write them: load_inline at import, no docstring header
(no Arch line). On a CPU it is refused once as needing a GPU, never compiled."""

import torch
from torch.utils.cpp_extension import load_inline
from task import input_t, output_t

CUDA_SRC = r"""
__global__ void k(float* x) { x[threadIdx.x] *= 2.f; }
void launch(torch::Tensor x) { k<<<1, 32>>>(x.data_ptr<float>()); }
"""
CPP_SRC = "void launch(torch::Tensor x);"
mod = load_inline(name="gpumode_t51", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=["launch"])


def custom_kernel(data: input_t) -> output_t:
    return data[-1]
