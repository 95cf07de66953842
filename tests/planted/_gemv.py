"""A correct NVFP4 GEMV in torch for the planted submissions to build on (not a submission)."""

import torch

E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def _dequantize(values, scales):
    lut = torch.tensor(E2M1_VALUES, dtype=torch.float32, device=values.device)
    raw = values.view(torch.uint8)
    codes = torch.stack((raw & 0x0F, raw >> 4), dim=-1).flatten(-2)
    return lut[codes.long()] * scales.view(torch.float8_e4m3fn).float().repeat_interleave(16, dim=-1)


def gemv(data):
    """c[:, 0, l] = A_l @ b_l[0] in fp32, rounded once to fp16, in a new tensor laid out like c."""
    a, b, sfa, sfb, _, _, c = data
    out = torch.empty_like(c)
    for l_idx in range(c.shape[2]):
        x = _dequantize(b[:1, :, l_idx], sfb[:1, :, l_idx])
        out[:, :, l_idx] = (_dequantize(a[:, :, l_idx], sfa[:, :, l_idx]) @ x.T).to(c.dtype)
    return out
