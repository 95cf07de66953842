"""gemm v0's CPU arithmetic (fp32 products rounded once to fp16), then the last bit of one output
element flipped: within the check's tolerance, never v0's bits (compare says so: tests/test_cli.py)."""

import torch

E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def _dequantize(values, scales):
    lut = torch.tensor(E2M1_VALUES, dtype=torch.float32, device=values.device)
    raw = values.view(torch.uint8)
    codes = torch.stack((raw & 0x0F, raw >> 4), dim=-1).flatten(-2)
    return lut[codes.long()] * scales.view(torch.float8_e4m3fn).float().repeat_interleave(16, dim=-1)


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    for l_idx in range(c.shape[2]):
        c[:, :, l_idx] = (_dequantize(a[:, :, l_idx], sfa[:, :, l_idx])
                          @ _dequantize(b[:, :, l_idx], sfb[:, :, l_idx]).T).to(c.dtype)
    c.view(torch.int16)[0, 0, 0] ^= 1
    return c
