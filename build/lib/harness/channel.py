"""The verdict channel between a child and the harness: signed JSON lines on a private pipe.

The parent makes a fresh random key per child and hands it over on the command pipe before the
submission is imported. Every event the child sends is ``SEQ MAC JSON``: a sequence number and an
HMAC-SHA256 of both under that key. The parent accepts only lines that verify and arrive in
order, so a submission that writes to the pipe (it can find the descriptor in /proc/self/fd) or
replays a line is caught: the first foreign byte turns the child's remaining work into TAMPERED.

Limit (stated, not hidden): the key lives in the child's memory, and Python code running in the
same process can in principle read any object. The channel defeats writing, forging and replaying
lines; it cannot defeat a submission that deliberately searches the harness's memory for the key.
That is why the parent, not the child, computes every statistic and verdict from raw samples.

Bytes from the child are never trusted, signed or not: a line longer than ``MAX_LINE_BYTES`` is
TAMPERED as soon as the buffer passes the bound (the parent never holds more than one bound plus
one read of the child's bytes), and so is a signed payload that is not UTF-8, not JSON, not a JSON
object or an object without a string ``"event"``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets

KEY_BYTES = 32
# NOTE: the largest genuine line is a block reply (a pool's samples, telemetry, the kernel
# method's lists): tens of KiB at most; 1 MiB leaves a wide margin and caps what a child can make
# the parent hold.
MAX_LINE_BYTES = 1 << 20


def new_key() -> bytes:
    return secrets.token_bytes(KEY_BYTES)


def _mac(key: bytes, seq: int, payload: bytes) -> str:
    return hmac.new(key, str(seq).encode() + b" " + payload, hashlib.sha256).hexdigest()


class Sender:
    """Child side: writes signed events to the write end of the verdict pipe."""

    def __init__(self, fd: int, key: bytes):
        self._fd = fd
        self._key = key
        self._seq = 0

    def emit(self, event: str, **fields) -> None:
        payload = json.dumps({"event": event, **fields}, default=str, separators=(",", ":")).encode()
        line = f"{self._seq} {_mac(self._key, self._seq, payload)} ".encode() + payload + b"\n"
        self._seq += 1
        view = memoryview(line)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]


class Tampered(Exception):
    """A line on the verdict pipe that the harness did not sign, out of order, overlong or not a
    JSON object event."""


class Receiver:
    """Parent side: splits the byte stream into lines and verifies each.

    Contract: ``feed`` returns only events that are signed with the key, in sequence, UTF-8 JSON
    objects with a string ``"event"``; anything else raises ``Tampered`` with a message that shows
    at most 80 bytes of the line, escaped (``repr``). The unfinished line kept between calls never
    exceeds ``MAX_LINE_BYTES`` (one past it is dropped as it raises)."""

    def __init__(self, key: bytes):
        self._key = key
        self._seq = 0
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[dict]:
        """Verified events in ``chunk``; raises Tampered at the first bad or overlong line."""
        self._buffer += chunk
        events = []
        start = 0
        while True:
            end = self._buffer.find(b"\n", start)
            if end < 0:
                break
            if end - start > MAX_LINE_BYTES:
                self._buffer = b""  # nothing of the overlong line is kept
                raise Tampered(_overlong(end - start))
            events.append(self._verify(self._buffer[start:end]))
            start = end + 1
        self._buffer = self._buffer[start:]
        if len(self._buffer) > MAX_LINE_BYTES:
            size, self._buffer = len(self._buffer), b""
            raise Tampered(_overlong(size, unfinished=True))
        return events

    def _verify(self, line: bytes) -> dict:
        parts = line.split(b" ", 2)
        if len(parts) != 3:
            raise Tampered(f"unsigned line on the verdict channel: {line[:80]!r}")
        seq_txt, mac, payload = parts
        try:
            seq = int(seq_txt)
        except ValueError:
            raise Tampered(f"unsigned line on the verdict channel: {line[:80]!r}") from None
        # NOTE: bytes, not text: compare_digest raises TypeError on a str with non-ASCII characters,
        # so a MAC field of b"\xff" decoded with errors="replace" was a harness exception.
        if not hmac.compare_digest(mac, _mac(self._key, seq, payload).encode()):
            raise Tampered(f"a line with a bad signature on the verdict channel: {line[:80]!r}")
        if seq != self._seq:
            raise Tampered(f"verdict channel out of order (line {seq}, expected {self._seq}): replayed or dropped")
        self._seq += 1
        return _decode(payload)

    @property
    def pending(self) -> bytes:
        return self._buffer


def _overlong(size: int, unfinished: bool = False) -> str:
    bound = f"{MAX_LINE_BYTES >> 20} MiB" if MAX_LINE_BYTES % (1 << 20) == 0 else f"{MAX_LINE_BYTES} bytes"
    seen = f"{size} bytes and no end yet" if unfinished else f"{size} bytes"
    return f"a line longer than {bound} on the verdict channel ({seen})"


def _decode(payload: bytes) -> dict:
    """The event of a signed payload; Tampered unless it is a UTF-8 JSON object with a string "event"."""
    try:
        text = payload.decode("utf-8")  # strict: json.loads(bytes) would also take UTF-16 and UTF-32
    except UnicodeDecodeError as exc:
        raise Tampered(f"a signed line that is not UTF-8 (byte {exc.start}): {payload[:80]!r}") from None
    try:
        event = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nesting deeper than the parser allows
        raise Tampered(f"a signed line that is not JSON ({type(exc).__name__}): {payload[:80]!r}") from None
    if not isinstance(event, dict):
        raise Tampered(f"a signed line that is JSON but not an object ({type(event).__name__}): {payload[:80]!r}")
    if not isinstance(event.get("event"), str):
        raise Tampered(f'a signed JSON object without a string "event": {payload[:80]!r}')
    return event
