"""NVFP4 dual GEMM v0: torch baseline.

Version: v0
Parent: none
Change: two dequantise-then-matmul products in fp32 (native NVFP4 _scaled_mm where the GPU has it), silu and product in fp32
Arch: any
Analogue: V0
Measured: NVIDIA H200, mean µs, L2 flushed: 256x4096x7168 1242.1, 512x4096x7168 1253.9, 256x3072x4096 828.4, 512x3072x7168 1035.5

C = silu(A @ B1^T) * (A @ B2^T). On Blackwell (sm_100+) both products are torch._scaled_mm calls
with fp32 output, as the writeup's V0 does. Elsewhere the operands are decoded to fp16 (exact) and
multiplied by cuBLAS with fp32 accumulation and fp32 output; fp32 on the CPU.
"""

import torch

E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
SF_VEC_SIZE = 16

_native_nvfp4 = None  # decided on first use: does this GPU run NVFP4 _scaled_mm?


def _dequantize(values, scales, dtype):
    lut = torch.tensor(E2M1_VALUES, dtype=dtype, device=values.device)
    raw = values.view(torch.uint8)
    codes = torch.stack((raw & 0x0F, raw >> 4), dim=-1).flatten(-2)
    scale = scales.view(torch.float8_e4m3fn).to(dtype).repeat_interleave(SF_VEC_SIZE, dim=-1)
    return lut[codes.long()] * scale


def _to_blocked(sf):
    rows, cols = sf.shape
    rb, cb = (rows + 127) // 128, (cols + 3) // 4
    padded = torch.zeros((rb * 128, cb * 4), dtype=torch.uint8, device=sf.device)
    padded[:rows, :cols] = sf.view(torch.uint8)
    tiles = padded.view(rb, 128, cb, 4).permute(0, 2, 1, 3).reshape(-1, 4, 32, 4).transpose(1, 2)
    return tiles.reshape(-1).view(torch.float8_e4m3fn)


def _matmul_nt_fp32(a, b, sfa, sfb, a_dequantized=None):
    """One batch: [M, K/2] x [N, K/2] packed operands -> fp32 [M, N]."""
    global _native_nvfp4
    if a.is_cuda and _native_nvfp4 is not False and torch.cuda.get_device_capability(a.device)[0] >= 10:
        try:
            out = torch._scaled_mm(a.view(torch.float4_e2m1fn_x2), b.view(torch.float4_e2m1fn_x2).T,
                                   _to_blocked(sfa), _to_blocked(sfb), out_dtype=torch.float32)
            _native_nvfp4 = True
            return out
        except (RuntimeError, TypeError):
            _native_nvfp4 = False
    if a.is_cuda:
        return torch.mm(_dequantize(a, sfa, torch.float16), _dequantize(b, sfb, torch.float16).T,
                        out_dtype=torch.float32)
    return _dequantize(a, sfa, torch.float32) @ _dequantize(b, sfb, torch.float32).T


def custom_kernel(data):
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
    for l_idx in range(c.shape[2]):
        h1 = _matmul_nt_fp32(a[:, :, l_idx], b1[:, :, l_idx], sfa[:, :, l_idx], sfb1[:, :, l_idx])
        h2 = _matmul_nt_fp32(a[:, :, l_idx], b2[:, :, l_idx], sfa[:, :, l_idx], sfb2[:, :, l_idx])
        c[:, :, l_idx] = (torch.nn.functional.silu(h1) * h2).to(torch.float16)
    return c
