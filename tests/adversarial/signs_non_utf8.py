"""Adversarial: signs, with the key it finds in its own process, a line whose payload is not UTF-8
(and then another that is not JSON) -> TAMPERED "not UTF-8": a signed line is still checked before
it is read, never a harness exception."""

import gc
import os

from harness import channel as _channel

from _common import gemm_into

_sender = next(o for o in gc.get_objects() if type(o).__name__ == "Sender" and hasattr(o, "emit"))
for _payload in (b'{"event":"reply","status":"PASS\xff\xfe"}', b"{not json"):
    _seq = _sender._seq
    _line = f"{_seq} {_channel._mac(_sender._key, _seq, _payload)} ".encode() + _payload + b"\n"
    os.write(_sender._fd, _line)
    _sender._seq += 1


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    return gemm_into(c, a, b, sfa, sfb)
