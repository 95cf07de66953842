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


# ------------------------------------------------------------------ bounded and parsed (issue item 4)

def _signed(key: bytes, seq: int, payload: bytes) -> bytes:
    """A line signed exactly as Sender signs one, for payloads Sender would never write."""
    return f"{seq} {channel._mac(key, seq, payload)} ".encode() + payload + b"\n"


def test_an_unfinished_line_past_the_bound_is_tampering_and_never_buffered_beyond_it():
    receiver = channel.Receiver(channel.new_key())
    chunk = b"x" * 65536  # what the parent reads per turn (isolation.Child._await)
    fed = 0
    with pytest.raises(channel.Tampered, match="longer than 1 MiB .*no end yet"):
        while fed < 64 * channel.MAX_LINE_BYTES:  # 64 MiB offered; the receiver must stop at 1 MiB
            receiver.feed(chunk)
            fed += len(chunk)
            assert len(receiver.pending) <= channel.MAX_LINE_BYTES
    assert fed <= channel.MAX_LINE_BYTES


def test_a_signed_line_over_the_bound_is_tampering_and_one_at_the_bound_passes():
    key = channel.new_key()
    head = len(_signed(key, 0, b'{"event":"progress","stage":""}')) - 1  # the line without its newline
    fitting = _signed(key, 0, b'{"event":"progress","stage":"' + b"s" * (channel.MAX_LINE_BYTES - head) + b'"}')
    assert len(fitting) - 1 == channel.MAX_LINE_BYTES
    assert channel.Receiver(key).feed(fitting)[0]["event"] == "progress"
    over = _signed(key, 0, b'{"event":"progress","stage":"' + b"s" * (channel.MAX_LINE_BYTES - head + 1) + b'"}')
    with pytest.raises(channel.Tampered, match="longer than 1 MiB"):
        channel.Receiver(key).feed(over)


@pytest.mark.parametrize("payload, why", [
    (b'{"event":"reply","status":"PASS\xff"}', "not UTF-8"),
    ('{"event":"reply","status":"PASS"}'.encode("utf-16"), "not UTF-8"),  # json.loads(bytes) took it
    (b'{"event":"reply",', "not JSON"),
    (b"[" * 100_000 + b"]" * 100_000, "not JSON"),  # RecursionError in the parser
    (b'["event","reply"]', "not an object"),
    (b'"reply"', "not an object"),
    (b'{"status":"PASS"}', 'without a string "event"'),
    (b'{"event":["reply"]}', 'without a string "event"'),
])
def test_a_signed_line_that_is_not_a_json_object_event_is_tampering(payload, why):
    key = channel.new_key()
    with pytest.raises(channel.Tampered, match=why) as caught:
        channel.Receiver(key).feed(_signed(key, 0, payload))
    assert len(str(caught.value)) < 300  # the line is quoted, shortened and escaped, never whole


def test_a_non_ascii_signature_field_is_tampering_not_a_type_error():
    # NOTE: hmac.compare_digest raised TypeError on the decoded str: a harness exception
    with pytest.raises(channel.Tampered, match="bad signature"):
        channel.Receiver(channel.new_key()).feed(b'0 \xff\xfe {"event":"reply","status":"PASS"}\n')
