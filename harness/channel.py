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
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets

KEY_BYTES = 32


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
    """A line on the verdict pipe that the harness did not sign (or out of order)."""


class Receiver:
    """Parent side: splits the byte stream into lines and verifies each."""

    def __init__(self, key: bytes):
        self._key = key
        self._seq = 0
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[dict]:
        """Verified events in ``chunk``; raises Tampered at the first bad line."""
        self._buffer += chunk
        events = []
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            events.append(self._verify(line))
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
        if not hmac.compare_digest(mac.decode(errors="replace"), _mac(self._key, seq, payload)):
            raise Tampered(f"a line with a bad signature on the verdict channel: {line[:80]!r}")
        if seq != self._seq:
            raise Tampered(f"verdict channel out of order (line {seq}, expected {self._seq}): replayed or dropped")
        self._seq += 1
        try:
            return json.loads(payload)
        except json.JSONDecodeError:
            raise Tampered("a signed line that is not JSON") from None

    @property
    def pending(self) -> bytes:
        return self._buffer
