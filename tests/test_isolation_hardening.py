"""harness.isolation never trusts the child's bytes (issue "Integrity under attack", item 4), on the CPU.

- deadlines: only the parent's count of submissions moves the start-up deadline, and nothing the
  child sends moves one after ``ready``;
- bounded reads: an overlong verdict-pipe line is TAMPERED; the log tail reads the file's end only;
- parse errors: a signed line that is not a JSON object event is TAMPERED, never a traceback;
- control characters: no text the child wrote leaves the isolation layer with escape sequences.

Unit tests drive ``Child._await`` through real pipes with a fake child; the adversaries of
tests/adversarial/expected.py's CHANNEL_ADVERSARIES run in real children.
"""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from adversarial.expected import CHANNEL_ADVERSARIES
from harness import channel, isolation, submissions

ADVERSARIAL = Path(__file__).resolve().parent / "adversarial"
JOB = {"mode": "test", "problem": "gemm", "ceilings": False}
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def control_characters(text: str, allowed: str = "") -> list[str]:
    """The characters of ``text`` that a terminal acts on (C0, DEL, C1, bidi overrides), less ``allowed``."""
    return [c for c in text if (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c in BIDI) and c not in allowed]


def strings_in(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *strings_in(v)]]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []


# ------------------------------------------------------------------------------ printable

@pytest.mark.parametrize("raw, shown", [
    ("\x1b]0;owned\x07title kept", "title kept"),  # OSC retitle, BEL-terminated
    ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),  # OSC hyperlink, ST-terminated
    ("\x1b[2J\x1b[1;31mred\x1b[0m", "red"),  # CSI clear screen, colours
    ("\x9b2J8-bit csi", "8-bit csi"),
    ("PASS\rFAIL", "PASS FAIL"),  # a carriage return must not print over the verdict
    ("FAIL\x08\x08\x08\x08PASS", "FAILPASS"),
    ("a\x00b\x07c\x7fd\x85e", "abcde"),
    ("\x1bc reset", " reset"),  # ESC c: full terminal reset
    ("tab\there", "tab here"),
    ("\u202eSSAP", "SSAP"),  # right-to-left override
    ("plain text, µs and ±5 % stay", "plain text, µs and ±5 % stay"),
])
def test_printable_removes_escape_sequences_and_control_characters(raw, shown):
    assert isolation.printable(raw) == shown


def test_printable_keeps_line_breaks_only_where_multiline():
    raw = "Traceback:\r\n  line 1\x1b[31m\r  line 2\n"
    assert isolation.printable(raw) == "Traceback:   line 1   line 2 "
    assert isolation.printable(raw, multiline=True) == "Traceback:\n  line 1\n  line 2\n"


def test_printable_leaves_no_control_character_in_random_hostile_text():
    rng = random.Random(4)
    alphabet = [chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)]] + list(BIDI) + list("[]0;?PX^_\\mJ ab")
    for _ in range(2000):
        raw = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 40)))
        assert not control_characters(isolation.printable(raw)), repr(raw)
        assert not control_characters(isolation.printable(raw, multiline=True), allowed="\n"), repr(raw)


def test_checked_event_cleans_every_string_and_keeps_lines_only_in_detail():
    event = isolation.checked_event({
        "event": "reply", "status": "FAIL", "message": "bad\x1b[2J\nvalue",
        "detail": "Traceback\n\x1b]0;x\x07  frame\n", "times_us": [1.5, 2.0],
        "kernel": {"name": ["k\rv", {"gpu": "\x1b[31mB200"}]}})
    assert event["message"] == "bad value" and event["detail"] == "Traceback\n  frame\n"
    assert event["times_us"] == [1.5, 2.0] and event["kernel"] == {"name": ["k v", {"gpu": "B200"}]}


@pytest.mark.parametrize("event, why", [
    ({"event": "reply", "status": 1}, "'status' is a int"),
    ({"event": "reply", "status": "FAIL", "message": ["x"]}, "'message' is a list"),
    ({"event": "reply"}, "without 'status'"),
    ({"event": "progress"}, "without 'stage'"),
    ({"event": "phase", "phase": "imported"}, "without 'seconds'"),
    ({"event": "phase", "phase": "imported", "seconds": "1"}, "'seconds' is a str"),
    ({"event": "done", "line": "v0 PASS"}, "only the harness itself sends"),
    # cleaned, this key would replace the type-checked "status" with a list
    ({"event": "reply", "status": "FAIL", "status\x07": ["PASS"]}, "key with control characters"),
])
def test_checked_event_refuses_what_a_printer_would_trip_on(event, why):
    with pytest.raises(channel.Tampered, match=why):
        isolation.checked_event(event)


def test_checked_event_refuses_deep_nesting():
    deep: dict = {"event": "device"}
    node = deep
    for _ in range(isolation.MAX_EVENT_DEPTH + 1):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(channel.Tampered, match="nested deeper"):
        isolation.checked_event(deep)


# ------------------------------------------------------------------------------ log tail

def test_log_tail_reads_only_the_end_of_a_huge_log(tmp_path):
    log = tmp_path / "child.log"
    with open(log, "wb") as f:
        f.truncate(64 << 20)  # 64 MiB, sparse: cheap to make, 64 MiB to read whole
        f.seek(0, os.SEEK_END)
        f.write(b"\n".join(f"line {i}".encode() for i in range(10)) + b"\n\x1b]0;owned\x07last \x1b[31mwords\n")
    tracemalloc.start()
    try:
        tail = isolation._tail(log)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert tail == "line 5 | line 6 | line 7 | line 8 | line 9 | last words"
    assert peak < 16 * isolation.LOG_TAIL_BYTES, f"{peak} bytes held for a 64 MiB log"


def test_log_tail_drops_the_line_the_seek_cut(tmp_path):
    log = tmp_path / "child.log"
    log.write_bytes(b"z" * (2 * isolation.LOG_TAIL_BYTES) + b"\nwhole line\n")
    assert isolation._tail(log) == "whole line"


# ------------------------------------------------------------------- deadlines (fake child)

class FakeChild:
    """A Child whose pipes the test holds: events are signed into ``event_write`` by ``emit``;
    ``proc`` is a process of its own group (``sleep``), so the kill the Child does stays there."""

    def __init__(self, compile_timeout_s: float, on_event=None):
        self.child = isolation.Child(JOB, {"label": "fake", "path": "fake.py", "source_hash": "0"},
                                     compile_timeout_s=compile_timeout_s, on_event=on_event)
        self.child.proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
        self.cmd_read, self.child._cmd_write = os.pipe()
        os.set_blocking(self.child._cmd_write, False)  # as Child.start leaves it
        self.child._event_read, self.event_write = os.pipe()
        self.child._log_path = Path(os.devnull)
        key = channel.new_key()
        self.child._receiver = channel.Receiver(key)
        self.sender = channel.Sender(self.event_write, key)
        self.stop_emitting = threading.Event()

    def emit_every(self, interval_s: float, until_s: float, *events: dict) -> threading.Thread:
        """Signs ``events`` (``{"event": kind, **fields}``) in turn every ``interval_s`` for
        ``until_s`` from one thread (a Sender's sequence is not thread-safe: one emitter only)."""
        def run():
            end = time.monotonic() + until_s
            turn = 0
            while time.monotonic() < end and not self.stop_emitting.is_set():
                fields = dict(events[turn % len(events)])
                try:
                    self.sender.emit(fields.pop("event"), **fields)
                except OSError:
                    return  # the parent closed its end
                turn += 1
                time.sleep(interval_s)
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    def close(self):
        self.stop_emitting.set()
        if self.child.proc is not None:
            self.child._kill()
        for fd in (self.cmd_read, self.event_write):
            try:
                os.close(fd)
            except OSError:
                pass


@pytest.fixture
def fake_child():
    made = []

    def make(compile_timeout_s: float = 0.6, on_event=None) -> FakeChild:
        made.append(FakeChild(compile_timeout_s, on_event))
        return made[-1]
    yield make
    for fake in made:
        fake.close()


def test_import_events_before_ready_extend_once_per_submission_only(fake_child):
    """Two submissions: the deadline may move twice, to 1 s after each of the first two import
    events (the second at 0.3 s: 1.3 s in all, against 1.0 s for one move); a stream of import
    events after those moves nothing. Before the fix every event reset it: the 4 s stream kept the
    wait alive for 5.3 s."""
    fake = fake_child(compile_timeout_s=1.0)
    t0 = time.monotonic()
    fake.sender.emit("phase", phase="import", label="first")

    def later():
        time.sleep(0.3)
        fake.sender.emit("phase", phase="import", label="second")
        fake.emit_every(0.05, 4.0, {"event": "phase", "phase": "import", "label": "hostile"})
    threading.Thread(target=later, daemon=True).start()
    with pytest.raises(isolation.ChildFailure) as caught:
        fake.child._await(("ready", "import_error"), 1.0, "while importing/compiling", since=t0,
                          import_extensions=2)
    elapsed = time.monotonic() - t0
    assert caught.value.status == "TIMEOUT" and "while importing/compiling" in caught.value.message
    assert 1.25 <= elapsed < 2.5, f"ended after {elapsed:.2f} s (bound: 0.3 s + 1 s)"
    assert fake.child.proc is None  # killed


def test_no_event_extends_a_command_deadline(fake_child):
    """After ready (request): import phase and progress events every 50 ms for 3 s; the 0.5 s
    command deadline holds (before the fix each import event gave a fresh compile timeout, 10 s)."""
    fake = fake_child(compile_timeout_s=10.0)
    fake.emit_every(0.025, 3.0, {"event": "phase", "phase": "import", "label": "hostile"},
                    {"event": "progress", "stage": "still working"})
    t0 = time.monotonic()
    with pytest.raises(isolation.ChildFailure) as caught:
        fake.child.request({"cmd": "test"}, 0.5)
    elapsed = time.monotonic() - t0
    assert caught.value.status == "TIMEOUT" and "on this shape" in caught.value.message
    assert elapsed < 1.5, f"ended after {elapsed:.2f} s"


def test_a_child_that_stops_reading_commands_cannot_block_the_parent(fake_child):
    fake = fake_child()
    t0 = time.monotonic()
    with pytest.raises(isolation.ChildFailure, match="stopped reading its commands") as caught:
        fake.child._send({"cmd": "test", "pad": "p" * (1 << 20)}, time.monotonic() + 0.5)  # > a pipe's 64 KiB
    assert caught.value.status == "TIMEOUT" and time.monotonic() - t0 < 1.5


def test_a_child_that_closes_its_channel_and_lives_on_is_not_waited_for_past_the_deadline(fake_child, monkeypatch):
    monkeypatch.setattr(isolation, "EXIT_GRACE_S", 0.2)
    fake = fake_child()
    os.close(fake.event_write)  # the child's only write end: the parent reads EOF
    fake.event_write = -1  # closed: the number may be reused, close() must not close it again
    t0 = time.monotonic()
    with pytest.raises(isolation.ChildFailure, match="closed its verdict channel and did not exit") as caught:
        fake.child._await(("reply",), 0.5, "on this shape")
    assert caught.value.status == "CRASH" and time.monotonic() - t0 < 1.5  # was a fixed 30 s


def test_a_second_device_event_is_tampering(fake_child):
    fake = fake_child()
    fake.sender.emit("device", gpu="cpu")
    fake.sender.emit("device", gpu="NVIDIA B200")  # only submission code can send this one
    with pytest.raises(isolation.ChildFailure, match="second device event") as caught:
        fake.child._await(("reply",), 5.0, "on this shape")
    assert caught.value.status == "TAMPERED"
    assert fake.child.device in (None, {"gpu": "cpu"})  # the forged device is never taken


def test_events_reach_on_event_cleaned(fake_child):
    seen = []
    fake = fake_child(on_event=seen.append)
    fake.sender.emit("device", gpu="\x1b]0;owned\x07cpu")
    fake.sender.emit("progress", stage="\x1b[2Jbuilding\r\x1b[1Aok")
    fake.sender.emit("reply", status="FAIL", message="x\x1b[31my", detail="a\n\x1b[0mb")
    reply = fake.child._await(("reply",), 5.0, "on this shape")
    assert [e["event"] for e in seen] == ["device", "progress", "reply"]
    assert fake.child.device == {"gpu": "cpu"} and seen[1]["stage"] == "building ok"
    assert reply["message"] == "xy" and reply["detail"] == "a\nb"


# ------------------------------------------------------------------------ real children

def start_adversary(name: str, compile_timeout_s: float) -> tuple[isolation.ChildFailure, list, float, isolation.Child]:
    """Starts tests/adversarial/NAME.py in a real child; its ChildFailure, the events passed to
    on_event as (seconds since the start, event), the seconds start() took, and the child."""
    sub = submissions.resolve("gemm", str(ADVERSARIAL / f"{name}.py"))
    events: list = []
    t0 = time.monotonic()
    child = isolation.Child(JOB, {"label": sub.label, "path": str(sub.path), "source_hash": sub.source_hash},
                            compile_timeout_s=compile_timeout_s,
                            on_event=lambda e: events.append((time.monotonic() - t0, e)))
    try:
        with pytest.raises(isolation.ChildFailure) as caught:
            child.start()
    finally:
        child.stop()
    return caught.value, events, time.monotonic() - t0, child


def assert_verdict(name: str, failure: isolation.ChildFailure) -> None:
    status, text = CHANNEL_ADVERSARIES[name]
    assert failure.status == status and text in failure.message, (failure.status, failure.message)
    assert not control_characters(failure.message), repr(failure.message)
    assert "Traceback" not in failure.message


def test_extends_deadline_times_out_one_compile_timeout_after_its_import_event():
    """NOTE: the compile timeout must cover the child's start-up (python, torch: 6-8 s on a loaded
    2-core CPU box) so that the worker's own import event arrives and the attack runs; the bound
    shown is the one that matters: one compile timeout after that event, not the attack's 40 s."""
    compile_timeout_s = 15.0
    failure, events, took, _ = start_adversary("extends_deadline", compile_timeout_s)
    assert_verdict("extends_deadline", failure)
    imports = [(t, e) for t, e in events if e["event"] == "phase" and e.get("phase") == "import"]
    genuine = [t for t, e in imports if e["label"] != "still compiling"]
    hostile = [t for t, e in imports if e["label"] == "still compiling"]
    assert genuine and len(hostile) >= 10, "the attack did not run"
    assert took < genuine[0] + compile_timeout_s + 3.0, f"took {took:.1f} s, import event at {genuine[0]:.1f} s"
    assert hostile[-1] > genuine[0] + compile_timeout_s - 1.0  # still signing when it was cut off


def test_floods_event_pipe_is_tampering_and_the_parent_holds_at_most_the_line_bound():
    tracemalloc.start()
    try:
        failure, _, took, child = start_adversary("floods_event_pipe", 120.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert_verdict("floods_event_pipe", failure)
    assert len(child._receiver.pending) <= channel.MAX_LINE_BYTES
    assert peak < 8 * channel.MAX_LINE_BYTES, f"the parent held {peak >> 20} MiB"
    assert took < 50  # the submission sleeps 60 s after its flood: it was killed, not waited for


def test_floods_log_crash_quotes_the_log_end_only_and_printable():
    tracemalloc.start()
    try:
        failure, _, _, _ = start_adversary("floods_log", 120.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert_verdict("floods_log", failure)
    assert failure.message.endswith("last words | red"), failure.message[-200:]  # \r split the line
    assert peak < 4 * isolation.LOG_TAIL_BYTES + (1 << 20), f"the parent held {peak >> 20} MiB for a 32 MiB log"


@pytest.mark.parametrize("name", ["signs_non_utf8", "escapes_terminal"])
def test_channel_adversary_verdicts(name):
    failure, events, _, _ = start_adversary(name, 120.0)
    assert_verdict(name, failure)
    for _, event in events:
        for text in strings_in(event):
            assert not control_characters(text, allowed="\n"), repr(text)
    if name == "escapes_terminal":
        (error,) = [e for _, e in events if e["event"] == "import_error"]
        assert "\n" in error["detail"] and "forged" in error["detail"]  # the traceback keeps its lines


# ------------------------------------------------------------- compare's outputs: the judge's digests
class _DigestingJudge:
    """Stands in for a child's judge process: PASS, with a digest per call where the check asks."""

    def request(self, command, timeout_s):
        digests = {"digests": [f"judged {i}" for i in range(len(command["calls"]))]} if command["digests"] else {}
        return {"status": "PASS", "message": "", **digests}


@pytest.mark.parametrize("asked", [True, False])
def test_the_outputs_digests_are_the_judges_never_the_childs(asked):
    """A child that writes `outputs` into its own prepare reply (every side "equal") is not heard: the
    parent hands on the judge's digest per checked call, with the call's seed and kernel, and only where
    the command asked for them (compare, no peer)."""
    child = isolation.Child(JOB, {"label": "fake", "path": "fake.py", "source_hash": "0"})
    child._judge = _DigestingJudge()
    command = {"cmd": "prepare", "item": {"params": {"seed": 7}, "dist": "competition"}, "pool": 2, "batch": 1,
               **({"digest_outputs": True} if asked else {})}
    forged = [{"seed": 7, "sub": 0, "digest": "equal"}]
    reply = child._judged(command, {"status": "PASS", "pool": 2, "outputs": forged}, [{}] * 3, time.monotonic() + 5)
    assert reply["status"] == "PASS"
    if asked:  # the pool's two seeds, then the first again (the repeat in fresh buffers)
        assert reply["outputs"] == [{"seed": 7, "sub": 0, "digest": "judged 0"}, {"seed": 8, "sub": 0, "digest": "judged 1"},
                                    {"seed": 7, "sub": 0, "digest": "judged 2"}]
    else:
        assert "outputs" not in reply
