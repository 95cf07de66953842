"""Adversarial (GPU only): computes the right answer on a side stream and returns without making
the caller's stream wait, so CUDA events on the calling stream see almost none of the work.
The harness's escape check (device-synchronised wall clock vs events) must fail it."""

import torch

E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
_side = None
_luts = {}


def _dequantize(values, scales):
    # The table is made once per device: a torch.tensor(...) copy to the GPU on every call would block
    # the host until the side stream drains, and the work would no longer escape.
    lut = _luts.get(values.device)
    if lut is None:
        lut = _luts[values.device] = torch.tensor(E2M1, dtype=torch.float16, device=values.device)
    raw = values.view(torch.uint8)
    codes = torch.stack((raw & 0x0F, raw >> 4), dim=-1).flatten(-2)
    return lut[codes.long()] * scales.view(torch.float8_e4m3fn).to(torch.float16).repeat_interleave(16, dim=-1)


def custom_kernel(data):
    global _side
    a, b, sfa, sfb, _, _, c = data
    if _side is None:
        _side = torch.cuda.Stream()
    _side.wait_stream(torch.cuda.current_stream())  # correct w.r.t. earlier work (the poisoning)...
    with torch.cuda.stream(_side):
        for l_idx in range(c.shape[2]):
            a16 = _dequantize(a[:, :, l_idx], sfa[:, :, l_idx])
            b16 = _dequantize(b[:, :, l_idx], sfb[:, :, l_idx])
            c[:, :, l_idx] = torch.mm(a16, b16.T, out_dtype=torch.float32).to(torch.float16)
    return c  # ...but the caller's stream never waits for the side stream
