"""The compiled clock (harness/clock.cpp, harness/clock.py): its HMAC against hashlib, its records as the
parent reads them, the parent's check of a block's records (pure), and a whole run through it on a CPU."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import channel, clock
from harness.timing import ESCAPE_ABS_US

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CXX") or "g++") is None and shutil.which("c++") is None,
                                reason="no C++ compiler (g++): the compiled clock cannot be built here")
REPO = Path(__file__).resolve().parent.parent
ADVERSARIAL = REPO / "tests" / "adversarial"


@pytest.fixture(scope="session")
def library(clock_dir) -> Path:
    """The clock built once per test process (conftest's NVFP4_CLOCK_DIR is set per test, so it is named here)."""
    old = os.environ.get("NVFP4_CLOCK_DIR")
    os.environ["NVFP4_CLOCK_DIR"] = str(clock_dir)
    try:
        return clock.library()
    finally:
        if old is None:
            os.environ.pop("NVFP4_CLOCK_DIR", None)
        else:
            os.environ["NVFP4_CLOCK_DIR"] = old


def test_sha256_and_hmac_equal_hashlib_on_a_few_hundred_cases(library):
    module = clock.load(library)
    rng = random.Random(48)
    # lengths around SHA-256's 64-byte blocks and its 55/56-byte padding edge, then random ones
    lengths = [0, 1, 31, 32, 33, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000]
    lengths += [rng.randrange(0, 3000) for _ in range(300)]
    for n in lengths:
        msg = rng.randbytes(n)
        key = rng.randbytes(rng.choice([0, 1, 32, 63, 64, 65, 200]))
        assert module.sha256(msg) == hashlib.sha256(msg).digest(), n
        assert module.hmac_sha256(key, msg) == hmac.new(key, msg, hashlib.sha256).digest(), (len(key), n)


# -- the clock in a process of its own (it binds once per process) ----------------------------------
SCENARIO = r"""
import json, os, sys
sys.path.insert(0, {repo!r})
from harness import clock
module = clock.load({library!r})
key = os.urandom(32)
key_read, key_write = os.pipe()
os.write(key_write, key)
os.close(key_write)
out_read, out_write = os.pipe()
os.set_blocking(out_read, False)
where = module.bind(key_read, out_write, clock.batch_loop, False)
closed = False
try:
    os.fstat(key_read)
except OSError:
    closed = True
said = {{"where": where, "key_fd_closed": closed, "key": key.hex()}}
flushes = []
{body}
print(json.dumps(said))
sys.stdout.flush()
lines = b""
try:
    while True:
        lines += os.read(out_read, 65536)
except BlockingIOError:
    pass
sys.stdout.write(lines.decode())
"""


def _scenario(library: Path, body: str) -> tuple[dict, bytes, list[bytes]]:
    """What a script around a freshly bound clock said, the clock's key and its record lines."""
    code = SCENARIO.format(repo=str(REPO), library=str(library), body=textwrap.dedent(body))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    first, _, rest = proc.stdout.partition("\n")
    said = json.loads(first)
    return said, bytes.fromhex(said["key"]), [line.encode() + b"\n" for line in rest.splitlines()]


def test_a_block_through_the_clock_gives_the_parent_signed_records_it_accepts(library):
    said, key, lines = _scenario(library, """
        import time
        order = []
        def untimed():
            order.append("untimed")
        k = module.draw_key(7, untimed)
        order.append("key")
        def fn(x):
            time.sleep(0.002)
            return x * 2
        results, figures, sampled = module.time_batches(fn, [[1, 2, 3], [4, 5]], "none", order.append, 0, 7,
                                                        lambda: "sampled")
        said.update(order=order, drawn=k, results=results, figures=figures, sampled=sampled, state=module.state())
    """)
    assert said["key_fd_closed"] and "host clock" in said["where"]
    assert said["order"] == ["untimed", "key", 2, 4, 6, 8, 10]  # the captures follow the calls, in order
    assert said["results"] == [2, 4, 6, 8, 10] and said["sampled"] == "sampled"
    assert "key" not in said["state"]  # the key is never handed to Python
    records = channel.Receiver(key).feed(b"".join(lines))  # Python's hmac verifies C's
    assert [(r["event"], r.get("method")) for r in records] == [("key", None), ("clock", "gpumode")]
    assert records[0]["key"] == said["drawn"] and 0 <= said["drawn"] < 2 ** 63
    got = clock.read_block(records, tag=7, method="gpumode", calls=[3, 2], wall_us=1e9)
    assert got.key == said["drawn"] and got.times_us == records[1]["times_us"] == said["figures"]["times_us"]
    assert all(2000 <= t < 50_000 for t in got.times_us), got.times_us  # calls of 2 ms, timed on the host clock
    assert got.span_us <= got.wall_us + 1 and got.escape_retried is None


def test_every_per_call_method_runs_its_steps_in_the_python_loops_order_and_signs_its_figures(library):
    """cold, queued, warm and graph through the clock on the host clock: per call the steps
    timing.time_block's Python loop makes (warm: the untimed call and the poison first; graph: the load,
    the replay, the output's copy), the captures after each, one record a pass with the method, whose
    times are the calls' (2 ms each) and which the parent accepts (graph's less the flush's replay time,
    --warm's warm pass after the cold one without a key)."""
    said, key, lines = _scenario(library, """
        import time
        log = []
        def fn(x):
            log.append(["call", x])
            time.sleep(0.002)
            return x * 2
        capture = lambda r: log.append(["capture", r])
        poison = lambda d: log.append(["poison", d])
        def replay():
            log.append(["replay"])
            time.sleep(0.002)
        steps = (lambda d: log.append(["load", d]), replay, lambda: "copy")
        got = {}
        for tag, method in enumerate(["cold", "queued", "warm", "graph"], start=1):
            log.clear()
            module.draw_key(tag)
            results, figures, _ = module.time_batches(fn, [[1], [2]], "none", capture, 0, tag, None, method,
                                                      poison, steps if method == "graph" else None)
            got[method] = {"log": list(log), "results": results, "times": figures["times_us"]}
        module.draw_key(5)
        module.time_batches(fn, [[1], [2]], "none", capture, 0, 5, None, "cold")
        module.time_batches(fn, [[1], [2]], "none", capture, 0, 5, None, "warm", poison)
        said.update(got=got)
    """)
    got = said["got"]
    per_call = [["call", 1], ["capture", 2], ["call", 2], ["capture", 4]]
    assert got["cold"]["log"] == got["queued"]["log"] == per_call
    assert got["warm"]["log"] == [["call", 1], ["poison", 1], *per_call[:2], ["call", 2], ["poison", 2], *per_call[2:]]
    assert got["graph"]["log"] == [["load", 1], ["replay"], ["capture", "copy"], ["load", 2], ["replay"],
                                   ["capture", "copy"]]
    assert all(g["results"] == ([2, 4] if m != "graph" else ["copy", "copy"]) for m, g in got.items())
    records = channel.Receiver(key).feed(b"".join(lines))
    for tag, method in enumerate(["cold", "queued", "warm", "graph"], start=1):
        mine = [r for r in records if r["tag"] == tag]
        assert [(r["event"], r.get("method")) for r in mine] == [("key", None), ("clock", method)]
        assert mine[1]["calls"] == [1, 1] and mine[1]["times_us"] == got[method]["times"]
        block = clock.read_block(mine, tag=tag, method=method, calls=[1, 1], wall_us=1e9, flush_us=500.0)
        assert all(2000 <= t < 50_000 for t in mine[1]["times_us"]), mine[1]  # calls of 2 ms, on the host clock
        assert block.times_us == [t - (500.0 if method == "graph" else 0.0) for t in mine[1]["times_us"]]
    both = clock.read_block([r for r in records if r["tag"] == 5], tag=5, method="cold", calls=[1, 1], wall_us=1e9,
                            warm=True)
    assert len(both.times_us) == len(both.warm_times_us) == 2 and all(t >= 2000 for t in both.warm_times_us)


def test_the_loop_refuses_what_no_method_times(library):
    said, _, lines = _scenario(library, """
        caught = []
        for args in ((lambda x: x, [[1, 2]], "none", print, 0, 1, None, "cold"),  # a per-call method, two calls
                     (lambda x: x, [[1]], "none", print, 0, 1, None, "hot"),
                     (None, [[1]], "none", print, 0, 1, None, "graph", None, None)):  # no load, replay, copy
            try:
                module.time_batches(*args)
            except (ValueError, TypeError) as exc:
                caught.append(str(exc))
        said.update(caught=caught)
    """)
    assert ["one call a batch" in said["caught"][0], "unknown method" in said["caught"][1],
            "three callables" in said["caught"][2]] == [True] * 3
    assert lines == []  # nothing timed, nothing recorded


def test_a_forged_and_a_replayed_record_are_refused_by_the_parents_receiver(library):
    _, key, lines = _scenario(library, "module.draw_key(1)\nmodule.draw_key(1)")
    forged = lines[0].replace(b'"tag":1', b'"tag":2')
    with pytest.raises(channel.Tampered, match="bad signature"):
        channel.Receiver(key).feed(forged)
    replay = channel.Receiver(key)
    replay.feed(lines[0])
    with pytest.raises(channel.Tampered, match="out of order"):
        replay.feed(lines[0])
    with pytest.raises(channel.Tampered, match="bad signature"):  # signed under another key
        channel.Receiver(os.urandom(32)).feed(lines[0])


def test_clock_calls_made_from_inside_its_calls_are_refused_and_carried_by_every_later_record(library):
    said, key, lines = _scenario(library, """
        caught = []
        def nested_key():
            try:
                module.draw_key(3)
            except RuntimeError as exc:
                caught.append(str(exc))
        def nested_loop(x):
            try:
                module.time_batches(lambda y: y, [[0]], "none", lambda r: None, 0, 3)
            except RuntimeError as exc:
                caught.append(str(exc))
            return x
        module.draw_key(3, nested_key)
        module.time_batches(nested_loop, [[1]], "none", lambda r: None, 0, 3)
        r, w = os.pipe()
        os.write(w, os.urandom(32))
        try:
            module.bind(r, w, clock.batch_loop, False)
        except RuntimeError as exc:
            caught.append(str(exc))
        module.draw_key(4)
        said.update(caught=caught)
    """)
    assert len(said["caught"]) == 3 and all("refused" in c for c in said["caught"])
    records = channel.Receiver(key).feed(b"".join(lines))
    assert [(r["event"], r["tag"], r["refused"]) for r in records] == [("key", 3, 1), ("clock", 3, 2), ("key", 4, 3)]
    with pytest.raises(clock.Refused, match="refused"):
        clock.read_block(records[:2], tag=3, method="gpumode", calls=[1], wall_us=1e9)


def test_the_loop_counts_the_calls_and_runs_the_code_bound_at_start(library):
    said, key, lines = _scenario(library, """
        import harness.clock
        harness.clock.batch_loop.__code__ = (lambda fn, group, results: None).__code__  # rebinding changes nothing
        results, figures, _ = module.time_batches(lambda x: x, [[1, 2]], "none", lambda r: None, 0, 5)
        said.update(results=results)
        def pops(x):
            import sys
            frame = sys._getframe(1)
            frame.f_locals["results"].clear() if "results" in frame.f_locals else None
            return x
        try:
            module.time_batches(pops, [[1, 2]], "none", lambda r: None, 0, 6)
        except RuntimeError as exc:
            said["short"] = str(exc)
    """)
    assert said["results"] == [1, 2]
    assert "left" in said["short"]  # a batch of 2 calls that left fewer results
    records = channel.Receiver(key).feed(b"".join(lines))
    assert records[-1]["error"] == "the loop raised"


# -- the parent's check of a block's records (pure) ---------------------------------------------------
def _key(tag=9, key=123, refused=0):
    return {"event": "key", "tag": tag, "key": key, "refused": refused}


def _loop(tag=9, calls=(2, 1), times=(5.0, 6.0), span=(20.0, 10.0), wall=(30.0, 15.0), refused=0, error=None,
          method="gpumode", issue=None):
    issue = [4.0 * c for c in calls] if issue is None else issue
    return {"event": "clock", "tag": tag, "method": method, "calls": list(calls), "times_us": list(times),
            "span_us": list(span), "wall_us": list(wall), "issue_us": list(issue), "refused": refused, "error": error}


def _read(records, method="gpumode", wall_us=1e6, retried=False, **kwargs):
    return clock.read_block(records, tag=9, method=method, calls=[2, 1], wall_us=wall_us, retried=retried, **kwargs)


# a per-call method's pass over three input sets, and the --warm pass after it
def _call(method="cold", **kwargs):
    return _loop(method=method, **{"calls": (1, 1, 1), "times": (5.0, 6.0, 7.0), "span": (9.0, 9.0, 9.0),
                                   "wall": (10.0, 10.0, 10.0), **kwargs})


def _read_calls(records, method="cold", warm=False, flush_us=None):
    return clock.read_block(records, tag=9, method=method, calls=[1, 1, 1], wall_us=1e6, warm=warm, flush_us=flush_us)


def test_the_parent_takes_the_key_and_the_figures_of_an_honest_blocks_records():
    got = _read([_key(), _loop()])
    assert (got.key, got.times_us, got.wall_us, got.span_us) == (123, [5.0, 6.0], 45.0, 30.0)
    # a batch's issue time (the host µs its calls took to return) comes back per call
    assert _read([_key(), _loop(issue=(9.0, 2.0))]).issue_us == [4.5, 2.0]
    assert _read([_key(key=1), _key(key=2)], method="kernel", retried=True).key == 2


@pytest.mark.parametrize("method", ["cold", "queued", "graph"])
def test_the_parent_takes_a_per_call_methods_figures_from_its_record(method):
    got = _read_calls([_key(key=77), _call(method)], method, flush_us=2.0)
    # graph: the replays' event times less the flush's own replay time, as the Python loop subtracted it
    expected = [3.0, 4.0, 5.0] if method == "graph" else [5.0, 6.0, 7.0]
    assert (got.key, got.times_us, got.wall_us, got.span_us, got.warm_times_us) == (77, expected, 30.0, 27.0, None)


def test_the_parent_takes_the_warm_pass_after_the_cold_one_without_a_key_of_its_own():
    got = _read_calls([_key(key=5), _call(), _call("warm", times=(1.0, 2.0, 3.0))], warm=True)
    assert (got.key, got.times_us, got.warm_times_us) == (5, [5.0, 6.0, 7.0], [1.0, 2.0, 3.0])
    late = ESCAPE_ABS_US * 4
    escaping = _call("warm", wall=(late, late, late))
    retried = _read_calls([_key(), _call(), escaping, _call("warm", times=(1.0, 2.0, 3.0))], warm=True)
    assert retried.warm_times_us == [1.0, 2.0, 3.0] and retried.escape is None and retried.escape_retried is None
    twice = _read_calls([_key(), _call(), escaping, escaping], warm=True)
    assert twice.escape and "timed again" in twice.escape


@pytest.mark.parametrize("records, warm, why", [
    ([_key(), _call("queued")], False, "of method 'queued' where the block times cold"),  # another method's loop
    ([_key(), dict(_call(), method=None)], False, "of method 'None'"),
    ([_key(), _call(calls=(2, 1), times=(5.0, 6.0), span=(9.0, 9.0), wall=(10.0, 10.0))], False, "batches of"),
    ([_key(), _call(times=(5.0, 6.0))], False, "one non-negative number a batch"),
    ([_key()], False, "not a key then the loop"),  # the loop's record missing
    ([_key(), _call()], True, "then the warm loop"),  # the warm pass's missing
    ([_key(), _call(), _key(), _call("warm")], True, "then the warm loop"),  # a key the warm pass never draws
    ([_key(), _call(), _call("warm")], False, "records after the block's last pass"),  # a warm pass not asked for
    ([_key(), _call(), _call("warm"), _call("warm")], True, "records after the block's last pass"),
    ([_key(), _call(), _call("cold")], True, "of method 'cold' where the block times warm"),
])
def test_the_parent_refuses_per_call_records_that_are_not_the_block_it_asked_for(records, warm, why):
    with pytest.raises(clock.Refused, match=why):
        _read_calls(records, warm=warm)


@pytest.mark.parametrize("flush_us", [None, -1.0, "2.0", float("nan")])
def test_a_graph_block_needs_its_flushs_replay_time_from_the_prepare(flush_us):
    with pytest.raises(clock.Refused, match="flush replay time"):
        _read_calls([_key(), _call("graph")], "graph", flush_us=flush_us)


@pytest.mark.parametrize("records, why", [
    ([], "none"),  # missing
    ([_key()], "not a key then the loop"),  # the loop's record missing
    ([_loop()], "not a key then the loop"),
    ([_loop(), _key()], "not a key then the loop"),  # out of order
    ([_key(), _key(), _loop()], "not a key then the loop"),  # an extra key
    ([_key(), _loop(), _loop()], "records after the block's last pass"),  # an extra loop
    ([_key(tag=8), _loop()], "for block 8"),  # another block's (replayed)
    ([_key(), _loop(tag=10)], "for block 10"),
    ([_key(), _loop(calls=(1, 1))], "batches of"),  # wrong counts
    ([_key(), _loop(times=(5.0,))], "one non-negative number a batch"),
    ([_key(), _loop(times=(5.0, -1.0))], "one non-negative number a batch"),
    ([_key(), _loop(times=(5.0, None))], "one non-negative number a batch"),
    ([_key(), _loop(issue=(5.0,))], "one non-negative number a batch"),  # an issue time missing
    ([_key(), _loop(issue=(5.0, -1.0))], "one non-negative number a batch"),
    ([_key(refused=1), _loop(refused=1)], "refused"),
    ([_key(), _loop(error="the call raised")], "says the block failed"),
    ([_key(key=-1), _loop()], "63-bit"),
    ([_key(key="1"), _loop()], "63-bit"),
    ([{"event": "reply", "tag": 9, "refused": 0}], "unknown kind"),
])
def test_the_parent_refuses_records_that_are_not_one_honest_block(records, why):
    with pytest.raises(clock.Refused, match=why):
        _read(records)


def test_a_span_beyond_the_parents_own_wall_clock_is_refused():
    with pytest.raises(clock.Refused, match="by the parent's clock"):
        _read([_key(), _loop()], wall_us=29.0)


def test_keys_other_than_one_a_timed_pass_are_refused_for_the_method_the_clock_does_not_time():
    for records, retried in (([], False), ([_key(), _key()], False), ([_key()], True), ([_key(), _loop()], False)):
        with pytest.raises(clock.Refused, match="keys"):
            _read(records, method="kernel", retried=retried)


def test_a_second_pass_is_accepted_exactly_where_the_first_ones_figures_escape():
    late = ESCAPE_ABS_US * 4
    escaping = _loop(wall=(late, late), span=(20.0, 10.0))
    got = _read([_key(key=1), escaping, _key(key=2), _loop()])
    assert got.key == 2 and got.escape_retried and got.escape is None and got.times_us == [5.0, 6.0]
    twice = _read([_key(key=1), escaping, _key(key=2), escaping])
    assert twice.escape and twice.escape_retried
    with pytest.raises(clock.Refused, match="not timed again"):
        _read([_key(), escaping])
    with pytest.raises(clock.Refused, match="did not escape"):
        _read([_key(), _loop(), _key(), _loop()])


def test_no_compiler_is_one_clear_line(monkeypatch, tmp_path):
    from harness.errors import UserError
    monkeypatch.setenv("NVFP4_CLOCK_DIR", str(tmp_path))
    monkeypatch.setenv("CXX", "")
    monkeypatch.setattr(clock.shutil, "which", lambda name: None)
    with pytest.raises(UserError, match="needs a C\\+\\+ compiler"):
        clock.library()


# -- a whole run through the clock, on this CPU --------------------------------------------------------
@pytest.mark.parametrize("problem, options, records", [
    ("gemv", [], ["key", "clock(gpumode)"]),
    ("gemm", [], ["key", "clock(gpumode)"]),
    ("gemv", ["--method", "cold", "--warm"], ["key", "clock(cold)", "clock(warm)"]),
    ("gemv", ["--method", "queued"], ["key", "clock(queued)"]),
])
def test_a_run_times_every_event_method_from_the_clocks_records(problem, options, records, monkeypatch):
    """The parent's figures are the records' (a spy on its check), and no block reply of the child's
    carries a time. (graph runs on a GPU only: its prepare refuses a machine without CUDA.)"""
    from harness import isolation
    from harness.cli import main
    seen, replies = [], []
    real_read, real_await = clock.read_block, isolation.Child._await

    def spy(block_records, **kwargs):
        got = real_read(block_records, **kwargs)
        seen.append(([r["event"] if r["event"] == "key" else f"clock({r['method']})" for r in block_records], got))
        return got

    def replies_spy(self, kinds, *args, **kwargs):
        event = real_await(self, kinds, *args, **kwargs)
        if self._command == "block" and not self.is_judge:
            replies.append(event)
        return event

    monkeypatch.setattr(clock, "read_block", spy)
    monkeypatch.setattr(isolation.Child, "_await", replies_spy)
    r = CliRunner().invoke(main, ["run", problem, "v0", "--shapes", "tests:0", "--budget", "0.3", "--json", *options],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert seen and all(kinds == records and got.times_us for kinds, got in seen), [kinds for kinds, _ in seen]
    assert all(got.issue_us and len(got.issue_us) == len(got.times_us) for _, got in seen)
    assert all((got.warm_times_us is not None) == ("--warm" in options) for _, got in seen)
    assert replies and not [k for e in replies for k in ("times_us", "warm_times_us", "wall_us", "span_us") if k in e]
    report = json.loads(r.stdout)
    assert report["rows"][0]["status"] == "PASS"
    assert bool(report["results"][0]["stats"][0].get("warm")) == ("--warm" in options)
    if not options:
        t = CliRunner().invoke(main, ["test", problem, "v0", "--shapes", "tests:0"], catch_exceptions=False)
        assert t.exit_code == 0, t.output


def test_the_runtime_signatures_the_clock_calls_through_are_the_cuda_headers(tmp_path):
    """nvcc with <cuda_runtime_api.h>: the static_asserts of -DCLOCK_CUDA_HEADERS check every entry point
    the clock resolves by dlsym (a wrong signature would be undefined behaviour on a GPU, silent here)."""
    import sysconfig

    from harness.compile_only import find_nvcc
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("no nvcc here")
    cmd = [nvcc, "-x", "cu", "-std=c++17", "-c", "-Xcompiler", "-fPIC", "-DCLOCK_CUDA_HEADERS",
           f"-I{sysconfig.get_paths()['include']}", str(clock.SOURCE), "-o", str(tmp_path / "clock.o")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
