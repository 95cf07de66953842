"""harness.channel: signed lines pass, anything else is TAMPERED."""

from __future__ import annotations

import os

import pytest

from harness import channel


def _pipe_pair():
    r, w = os.pipe()
    key = channel.new_key()
    return channel.Sender(w, key), channel.Receiver(key), r, w


def test_signed_events_round_trip_in_order():
    sender, receiver, r, w = _pipe_pair()
    sender.emit("reply", status="PASS", times_us=[1.5, 2.5])
    sender.emit("progress", stage="x")
    data = os.read(r, 65536)
    events = receiver.feed(data[:10]) + receiver.feed(data[10:])  # split anywhere
    assert [e["event"] for e in events] == ["reply", "progress"] and events[0]["times_us"] == [1.5, 2.5]
    os.close(r)
    os.close(w)


@pytest.mark.parametrize("line", [
    b'{"event":"reply","status":"PASS"}\n',
    b'0 ' + b'0' * 64 + b' {"event":"reply","status":"PASS"}\n',
    b'garbage without spaces\n',
])
def test_foreign_lines_are_tampering(line):
    receiver = channel.Receiver(channel.new_key())
    with pytest.raises(channel.Tampered):
        receiver.feed(line)


def test_a_modified_or_replayed_line_is_tampering():
    sender, receiver, r, w = _pipe_pair()
    sender.emit("reply", status="FAIL", message="wrong")
    line = os.read(r, 65536)
    with pytest.raises(channel.Tampered):
        channel.Receiver(receiver._key).feed(line.replace(b"FAIL", b"PASS"))
    assert receiver.feed(line)[0]["status"] == "FAIL"
    with pytest.raises(channel.Tampered, match="out of order"):
        receiver.feed(line)  # the same signed line again
    os.close(r)
    os.close(w)


def test_another_key_does_not_verify():
    sender, _, r, w = _pipe_pair()
    sender.emit("reply", status="PASS")
    with pytest.raises(channel.Tampered):
        channel.Receiver(channel.new_key()).feed(os.read(r, 65536))
    os.close(r)
    os.close(w)
