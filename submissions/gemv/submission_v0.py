"""NVFP4 GEMV v0: torch baseline.

Version: v0
Parent: none
Change: dequantise e2m1 x e4m3 with torch ops, then one matrix-vector product per batch (native NVFP4 _scaled_mm where the GPU has it)
Arch: any
Analogue: none
Measured: NVIDIA H200, mean µs, L2 flushed, each call from an idle device (nvfp4 table, commit 07f3ee2): 7168x16384 1731.4, 4096x7168 L8 4844.8, 7168x2048 L4 1602.2 (before per-call synchronisation: 1843.3, 6189.3, 1922.1)

On Blackwell (sm_100+) this calls torch._scaled_mm on the packed fp4 operands (the vector padded
to 128 rows, as GPU MODE's reference does). Elsewhere it decodes A and the vector to fp16 (exact)
and multiplies with cuBLAS, fp32 accumulation and output, rounded once to fp16; fp32 on the CPU.
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


def _matvec(a, b, sfa, sfb):
    """One batch: A [M, K/2] times row 0 of b [128, K/2] -> fp16 [M]."""
    global _native_nvfp4
    if a.is_cuda and _native_nvfp4 is not False and torch.cuda.get_device_capability(a.device)[0] >= 10:
        try:
            out = torch._scaled_mm(a.view(torch.float4_e2m1fn_x2), b.view(torch.float4_e2m1fn_x2).T,
                                   _to_blocked(sfa), _to_blocked(sfb), out_dtype=torch.float16)
            _native_nvfp4 = True
            return out[:, 0]
        except (RuntimeError, TypeError):
            _native_nvfp4 = False
    if a.is_cuda:
        a16 = _dequantize(a, sfa, torch.float16)
        b16 = _dequantize(b[:1], sfb[:1], torch.float16)
        return torch.mm(a16, b16.T, out_dtype=torch.float32)[:, 0].to(torch.float16)
    return (_dequantize(a, sfa, torch.float32) @ _dequantize(b[0], sfb[0], torch.float32)).to(torch.float16)


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    for l_idx in range(c.shape[2]):
        c[:, 0, l_idx] = _matvec(a[:, :, l_idx], b[:, :, l_idx], sfa[:, :, l_idx], sfb[:, :, l_idx])
    return c
