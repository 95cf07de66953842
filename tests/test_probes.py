"""harness.probes: the cuBLAS peer (a submission resolved by the label ``peer``), timeline marks,
builds with defines (ablations), the host-path probe and the SASS loop reader, and the ``probe``
click group. CPU tests everywhere; ``gpu`` tests build and run tests/data/probes/marked_gemm.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from harness import config, loader, runner, submissions
from harness.errors import UserError
from harness.probes import PEER_LABELS, PEERS_DIR, marks, peer, sass, variants
from harness.cli.probe import probe
from harness.worker import tensors_of
from reference import problem_module
from reference.distributions import DISTS

FIXTURE = Path(__file__).resolve().parent / "data" / "probes" / "marked_gemm.py"
SMALL = {"gemm": "m=64,n=128,k=256,l=2", "gemv": "m=128,k=256,l=2", "dual_gemm": "m=64,n=128,k=256,l=2",
         "group_gemm": "m=64;40,n=128;64,k=256;256,g=2"}
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


def _shape(problem: str) -> config.Shape:
    return config.parse_shape_option(problem, SMALL[problem], 0)


def _inputs(problem: str, count: int, dist: str = "competition", first_seed: int = 1) -> list:
    params = _shape(problem).generator_kwargs()
    return [problem_module(problem).generate_input(**params, seed=first_seed + i, dist=dist) for i in range(count)]


def _peer_kernel(problem: str, label: str):
    """The custom_kernel a peer label's file makes for ``problem`` (loaded as the worker loads it)."""
    return loader.import_submission(str(submissions.resolve(problem, label).path), label)


def _refill(problem: str, data_sets: list, first_seed: int, dist: str = "competition") -> None:
    """What harness.worker does before every timed block: never-seen values copied into the same tensors."""
    for data, fresh in zip(data_sets, _inputs(problem, len(data_sets), dist, first_seed)):
        for dst, src in zip(tensors_of(data), tensors_of(fresh)):
            dst.copy_(src)


def _invoke(*args: str):
    return CliRunner().invoke(probe, list(args))


# ------------------------------------------------------------------------------------------ peer
@pytest.mark.parametrize("label", PEER_LABELS)
@pytest.mark.parametrize("problem", sorted(SMALL))
def test_every_problem_resolves_each_peer_label_to_its_entry(problem, label):
    sub = submissions.resolve(problem, label)
    assert sub.label == label and sub.arch == "any" and sub.path.parent == PEERS_DIR
    assert submissions.resolve(problem, f" {label} ").path == sub.path
    assert submissions.in_lab(sub)


def test_the_fair_peer_writes_fp16_itself_where_that_passes_and_fp32_only_for_dual_gemm():
    # the choice the peer files make (harness/probes/peer.py says why), read from what they build
    chosen = {problem: _peer_kernel(problem, "peer").output for problem in SMALL}
    assert chosen == {"gemm": "fp16", "gemv": "fp16", "group_gemm": "fp16", "dual_gemm": "fp32"}
    assert {_peer_kernel(problem, "peer-fp32").output for problem in SMALL} == {"fp32"}


@pytest.mark.parametrize("dist", DISTS)
@pytest.mark.parametrize("output", peer.OUTPUTS)
@pytest.mark.parametrize("problem", sorted(SMALL))
def test_peer_output_passes_the_problems_check(problem, output, dist):
    if (problem, output) == ("dual_gemm", "fp16"):
        pytest.skip("the rejected way: test_dual_gemm_fp16_products_miss_the_tolerance")
    kernel = peer.make_kernel(problem, output)
    for data in _inputs(problem, 2, dist):
        ok, message = problem_module(problem).check(data, kernel(data))
        assert ok, message


@pytest.mark.parametrize("dist", DISTS)
def test_dual_gemm_fp16_products_miss_the_tolerance(dist):
    # why dual_gemm's peer keeps fp32 products: gate and up rounded to fp16 before silu(gate) * up
    # put elements two fp16 ulps off the reference on every distribution (CPU emulation of the roundings)
    kernel = peer.make_kernel("dual_gemm", "fp16")
    (data,) = _inputs("dual_gemm", 1, dist)
    ok, message = problem_module("dual_gemm").check(data, kernel(data))
    assert not ok and "mismatch" in message


def test_the_peer_leaves_the_callers_reduced_precision_setting_as_it_found_it():
    kernel = peer.make_kernel("gemm", "fp16")
    (data,) = _inputs("gemm", 1)
    before = torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
    try:
        for setting in (True, False):
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = setting
            kernel(data)
            assert torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction is setting
    finally:
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = before


def test_an_unknown_peer_output_is_a_clear_error():
    with pytest.raises(ValueError, match="no peer output 'bf16'; expected one of fp16, fp32"):
        peer.make_kernel("gemm", "bf16")


@pytest.mark.parametrize("problem", sorted(SMALL))
def test_peer_dequantises_an_input_once_then_only_multiplies(problem):
    kernel = peer.make_kernel(problem)
    data_sets = _inputs(problem, 3)
    for data in data_sets:
        kernel(data)
    assert kernel.memo.dequantisations == 3
    for data in data_sets * 2:
        ok, message = problem_module(problem).check(data, kernel(data))
        assert ok, message
    assert kernel.memo.dequantisations == 3


@pytest.mark.parametrize("problem", sorted(SMALL))
def test_the_refresh_after_the_mask_prepares_the_whole_pool(problem):
    # the worker's order: warm-up on the pool, then per block: refill in place, one call on the
    # scratch set (untimed), the signs masked by the parent's key, the peer's refresh (untimed),
    # the timed calls on the pool, every output checked
    from harness import judge
    mod = problem_module(problem)
    kernel = peer.make_kernel(problem)
    pool, scratch = _inputs(problem, 3), _inputs(problem, 1, first_seed=50)
    for data in pool:
        kernel(data)
    for block in range(2):
        _refill(problem, pool + scratch, first_seed=100 + 10 * block)
        kernel(scratch[0])
        judge.mask_pool_signs(torch, mod, pool, key=1234 + block)
        kernel.refresh()
        before = kernel.memo.dequantisations
        outputs = [kernel(data) for data in pool]
        assert kernel.memo.dequantisations == before, "a timed call dequantised"
        for data, out in zip(pool, outputs):
            ok, message = mod.check(data, out)
            assert ok, message


@pytest.mark.parametrize("refreshed", [True, False])
def test_the_worker_refreshes_the_peer_alone_so_its_timed_calls_only_multiply(refreshed):
    # without the refresh (any submission: only a file of the peers' folder gets it) the first timed
    # call finds its input masked and dequantises the whole pool
    from types import SimpleNamespace

    from harness import timing, worker
    timing.bind(torch)
    path = str(submissions.resolve("gemm", "peer").path)
    made = loader.import_submission(path, "peer")
    dequantised_in_call = []

    def kernel(data):
        before = made.memo.dequantisations
        out = made(data)
        dequantised_in_call.append(made.memo.dequantisations - before)
        return out

    assert worker.peer_refresh(path, made) == made.refresh
    refresher = worker.peer_refresh(path, made) if refreshed else worker.peer_refresh(__file__, made)
    guard = SimpleNamespace(verdict=lambda since=None: None, thread_ids=set, accept_threads=lambda ids: None)
    w = worker.Worker(torch, problem_module("gemm"), kernel, guard, None, None,
                      clock=SimpleNamespace(draw_key=lambda tag, untimed: untimed() or 99), refreshers=[refresher])
    item = {"params": dict(_shape("gemm").generator_kwargs(), seed=3), "dist": "competition"}
    # NOTE: kernel, which this stand-in clock leaves to timing's Python (every event method is the clock's)
    assert w.prepare(item, 3, "kernel", 1)["status"] == "PASS"
    reply = w.block(1, "kernel", False)
    assert reply["status"] == "PASS", reply
    timed = dequantised_in_call[-len(w.pool):]
    assert (sum(timed) == 0) == refreshed, timed


def test_peer_never_multiplies_stale_operands_of_an_input_rewritten_in_place():
    kernel = peer.make_kernel("gemm")
    (data,) = _inputs("gemm", 1)
    kernel(data)
    _refill("gemm", [data], first_seed=77)
    ok, message = problem_module("gemm").check(data, kernel(data))
    assert ok, message


def test_peer_forgets_the_least_recent_input_past_its_capacity_and_says_so():
    kernel = peer.make_kernel("gemm", memo_capacity=2)
    data_sets = _inputs("gemm", 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for data in data_sets:
            kernel(data)
    assert any("more than 2 live inputs" in str(w.message) for w in caught)
    ok, message = problem_module("gemm").check(data_sets[0], kernel(data_sets[0]))  # forgotten: dequantised again
    assert ok, message
    assert kernel.memo.dequantisations == 4


def test_peer_passes_the_harness_test_and_its_timed_blocks_on_the_cpu():
    sub = submissions.resolve("gemm", "peer")
    shapes = [_shape("gemm")]
    tested = runner.run([sub], shapes, ["competition", "general"], "test", seeds=2)
    assert [r.status for r in tested.results] == ["PASS", "PASS"], [r.message for r in tested.results]
    plan = runner.TimingPlan.from_options(budget_s=1.0, min_samples=3, min_time_s=0.0, method="cold")
    timed = runner.run([sub], shapes, ["competition"], "run", plan=plan)
    assert timed.results[0].status == "PASS", timed.results[0].message


# ----------------------------------------------------------------------------------------- marks
@needs_nvcc
def test_marks_compile_to_nothing_without_the_define_and_to_an_exported_buffer_with_it(tmp_path):
    kernel = ("__global__ void k(float* x) { if (threadIdx.x == 0) NVFP4_MARK(0); x[threadIdx.x] *= 2.0f; "
              "NVFP4_MARK(1); NVFP4_MARK_AT(blockIdx.x + 7, 2); }\n")
    (tmp_path / "k.cu").write_text(marks.MARKS_CUDA + kernel)
    found = {}
    for name, flags in (("plain", []), ("marked", ["-DNVFP4_MARKS"])):
        ptx = subprocess.run(["nvcc", "-ptx", "-arch=sm_90a", "k.cu", "-o", f"{name}.ptx", *flags], cwd=tmp_path,
                             capture_output=True, text=True)
        assert ptx.returncode == 0, ptx.stderr[-2000:]
        obj = subprocess.run(["nvcc", "-c", "-arch=sm_90a", "-Xcompiler", "-fPIC", "k.cu", "-o", f"{name}.o", *flags],
                             cwd=tmp_path, capture_output=True, text=True)
        assert obj.returncode == 0, obj.stderr[-2000:]
        symbols = subprocess.run(["nm", f"{name}.o"], cwd=tmp_path, capture_output=True, text=True).stdout
        found[name] = ((tmp_path / f"{name}.ptx").read_text().count("%globaltimer"),
                       {s for s in ("nvfp4_marks_layout", "nvfp4_marks_read", "nvfp4_marks_clear")
                        if f" T {s}" in symbols})
    assert found["plain"] == (0, set())
    assert found["marked"] == (3, {"nvfp4_marks_layout", "nvfp4_marks_read", "nvfp4_marks_clear"})


def _call(*ctas):
    """One call's Stamps from per-CTA {mark id: (ns, cycles)}."""
    ids = 1 + max(i for cta in ctas for i in cta)
    return marks.Stamps([[cta.get(i, (0, 0))[0] for i in range(ids)] for cta in ctas],
                        [[cta.get(i, (0, 0))[1] for i in range(ids)] for cta in ctas])


def test_marks_summary_times_marks_from_the_calls_first_stamp_and_phases_within_a_cta():
    calls = [_call({0: (1000, 10), 1: (3000, 50), 2: (4000, 70)},
                   {0: (2000, 5), 2: (6000, 105)}),  # CTA 1 skips mark 1: its phase runs start -> end
             _call({0: (10_000, 0), 1: (11_000, 20), 2: (13_000, 60)},
                   {0: (10_500, 0), 1: (12_500, 40), 2: (14_500, 80)})]
    summary = marks.summarise(calls, ["start", "loop", "end"])
    by_mark = {m["mark"]: m for m in summary["marks"]}
    assert by_mark["start"]["median_us"] == pytest.approx(0.25) and by_mark["start"]["max_us"] == pytest.approx(1.0)
    assert by_mark["loop"]["ctas"] == 1.5 and by_mark["end"]["max_us"] == pytest.approx(5.0)
    by_phase = {p["phase"]: p for p in summary["phases"]}
    assert set(by_phase) == {"start -> loop", "loop -> end", "start -> end"}
    assert by_phase["start -> end"]["median_us"] == pytest.approx(4.0)
    assert by_phase["start -> end"]["median_cycles"] == 100
    assert by_phase["loop -> end"]["max_us"] == pytest.approx(2.0)
    assert summary["timer_step_ns"] == 1000 and summary["calls"] == 2
    only_second = marks.summarise(calls, ["start", "loop", "end"], ctas=range(1, 2))
    # times stay relative to the whole call's first stamp, not the range's
    assert {m["mark"]: m["max_us"] for m in only_second["marks"]}["start"] == pytest.approx(1.0)


def test_marks_summary_tells_a_slow_call_from_a_straggling_cta_by_each_calls_last_cta():
    # two CTAs a call; the second always ends 2 us after the first, and the third call is 8 us slow
    calls = [_call({0: (1000, 0), 1: (11_000, 0)}, {0: (1000, 0), 1: (13_000, 0)}),
             _call({0: (1000, 0), 1: (11_000, 0)}, {0: (1000, 0), 1: (13_000, 0)}),
             _call({0: (1000, 0), 1: (11_000, 0)}, {0: (1000, 0), 1: (21_000, 0)})]
    end = {m["mark"]: m for m in marks.summarise(calls, ["start", "end"])["marks"]}["end"]
    assert end["median_us"] == pytest.approx(11.0) and end["max_us"] == pytest.approx(20.0)
    assert end["last_cta_median_us"] == pytest.approx(12.0)  # a typical call ends at 12, not at the max's 20
    first_only = {m["mark"]: m for m in marks.summarise(calls, ["start", "end"], ctas=range(0, 1))["marks"]}["end"]
    assert first_only["last_cta_median_us"] == pytest.approx(10.0)  # the range's own slowest CTA
    lines = marks.format_summary(marks.summarise(calls, ["start", "end"]))
    assert "last CTA" in lines[0] and lines[2].split()[-2] == "12.00"


def test_marks_names_extend_past_the_declared_ones_and_an_unstamped_call_is_said():
    calls = [_call({0: (5, 0), 3: (9, 0)})]
    assert marks.mark_names(["start"], calls) == ["start", "mark 1", "mark 2", "mark 3"]
    lines = marks.format_summary(marks.summarise(calls, marks.mark_names(["start"], calls)))
    assert lines[1].startswith("start") and lines[2].startswith("mark 3")
    empty = marks.summarise([marks.Stamps([[0, 0]], [[0, 0]], dropped=3)], ["a", "b"])
    assert empty["dropped"] == 3 and "never reached" in marks.format_summary(empty)[0]


def test_marks_side_by_side_pairs_marks_and_phases_by_name_and_a_missing_one_is_none():
    a = marks.summarise([_call({0: (1000, 0), 1: (5000, 0), 2: (6000, 0)})], ["start", "loop", "end"])
    b = marks.summarise([_call({0: (1000, 0), 2: (4000, 0), 3: (4500, 0)})], ["start", "loop", "end", "flag"])
    both = marks.side_by_side(a, b)
    assert [m["mark"] for m in both["marks"]] == ["start", "loop", "end", "flag"]  # A's order, then B's own
    by_mark = {m["mark"]: m for m in both["marks"]}
    assert by_mark["end"]["a_median_us"] == pytest.approx(5.0) and by_mark["end"]["b_median_us"] == pytest.approx(3.0)
    assert by_mark["end"]["delta_median_us"] == pytest.approx(-2.0)
    assert by_mark["end"]["delta_last_cta_median_us"] == pytest.approx(-2.0)
    assert by_mark["loop"]["b_median_us"] is None and by_mark["loop"]["delta_median_us"] is None
    assert by_mark["flag"]["a_median_us"] is None and by_mark["flag"]["b_median_us"] == pytest.approx(3.5)
    by_phase = {p["phase"]: p for p in both["phases"]}
    assert by_phase["loop -> end"]["b_median_us"] is None  # B skipped "loop": its phase is start -> end
    assert by_phase["start -> end"]["a_median_us"] is None
    assert by_phase["start -> end"]["b_median_us"] == pytest.approx(3.0)
    report = {"problem": "gemm", "versions": ["v1", "v2"], "device": "GPU", "calls": 1,
              "shapes": [{"shape": "s", "checks": [{"ok": True}, {"ok": False, "message": "max error 3"}],
                          "summaries": [a, b], **both,
                          "ranges": [{"ctas": "0-0", **marks.side_by_side(a, b)}]}]}
    lines = marks.format_comparison(report)
    assert lines[0].endswith("A = v1, B = v2") and lines[1].startswith("v2: WRONG OUTPUT (max error 3)")
    end_row = next(line for line in lines if line.startswith("end "))
    assert end_row.split()[1:4] == ["5.00", "3.00", "-2.00"]
    loop_row = next(line for line in lines if line.startswith("loop "))
    assert loop_row.split()[1:4] == ["4.00", "-", "-"]
    at = lines.index("CTAs 0-0:")
    assert lines[at + 1].startswith("  mark") and any(line.startswith("  end ") for line in lines[at:])


def test_marks_compare_takes_the_two_versions_calls_in_turn_on_one_input(monkeypatch, tmp_path):
    from harness.probes import common
    order, builds = [], []

    class FakeMarked:
        def __init__(self, sub, say, build="marks"):
            self.sub, self.declared = sub, ["start", "end"]
            builds.append(build)
            self.built = type("Built", (), {"kernel": staticmethod(lambda data: data)})

        def call(self, torch_, data):
            order.append(self.sub.label)
            end = 3000 if self.sub.label == "a" else 2000  # B ends 1 us sooner
            return _call({0: (1000, 0), 1: (end, 0)}, {0: (1000, 0), 1: (end + 500, 0)})

    monkeypatch.setattr(marks, "_Marked", FakeMarked)
    for name, fake in (("bound_torch", lambda: None), ("require_gpu", lambda *a: None),
                       ("refuse_unrunnable", lambda *a: None), ("inputs", lambda *a, **k: ["data"]),
                       ("check", lambda *a: {"ok": True}), ("device_name", lambda t: "GPU")):
        monkeypatch.setattr(common, name, fake)
    for label in ("a", "b"):  # one EXTENSION_NAME; CUDA_SRC from an imported name, as the probes' fixture builds it
        (tmp_path / f"{label}.py").write_text('from elsewhere import HEADER\nEXTENSION_NAME = "same"\n'
                                             'CUDA_SRC = HEADER + "int x;"\n')
    pair = [type("Sub", (), {"problem": "gemm", "label": label, "path": tmp_path / f"{label}.py"})
            for label in ("a", "b")]
    result = marks.compare(pair, [_shape("gemm")], calls=4, cta_ranges=[range(1, 2)])
    assert order == ["a", "b", "b", "a", "a", "b", "b", "a"]  # neither always right after the other's call
    assert builds == ["marks", "marks_other"]  # the second built apart: one EXTENSION_NAME would load as one module
    (entry,) = result["shapes"]
    end = {m["mark"]: m for m in entry["marks"]}["end"]
    assert end["delta_median_us"] == pytest.approx(-1.0) and end["delta_last_cta_median_us"] == pytest.approx(-1.0)
    assert entry["ranges"][0]["ctas"] == "1-1"
    assert {m["mark"]: m for m in entry["ranges"][0]["marks"]}["end"]["a_median_us"] == pytest.approx(2.5)
    assert result["versions"] == ["a", "b"] and [s["calls"] for s in entry["summaries"]] == [4, 4]


def test_marks_builds_verdict_warns_when_the_marks_builds_read_another_ratio_than_the_plain_ones():
    assert marks.builds_verdict([100.0, 99.0], [110.0, 108.0])[2] is None  # both faster, 0.8% apart
    plain, marked, warning = marks.builds_verdict([65.0, 63.7], [72.4, 70.1])  # both faster, but 1.2% apart: agree
    assert warning is None and plain == pytest.approx(0.98)
    assert "compare` decides" in marks.builds_verdict([100.0, 101.0], [100.0, 99.5])[2]  # opposite directions
    assert marks.builds_verdict([100.0, 100.0], [100.0, 96.0])[2] is not None  # 4% apart


def test_marks_compare_times_the_plain_builds_in_turn_beside_the_marks_builds(monkeypatch):
    from harness import timing
    from harness.probes import common
    timed = []

    class FakeMarked:
        def __init__(self, sub, say, build="marks"):
            self.sub, self.declared = sub, ["start", "end"]
            self.built = type("Built", (), {"kernel": staticmethod(lambda data: data)})

        def call(self, torch_, data):
            end = 3000 if self.sub.label == "a" else 2000  # the marks builds: B 1 us sooner of 2
            return _call({0: (1000, 0), 1: (end, 0)})

    def fake_block(fn, pool, method):
        timed.append(fn.__name__)
        return type("Block", (), {"kernel": {"span_us": [10.0 if fn.__name__ == "plain_a" else 10.5]}})

    def plain_a(data):
        return data

    def plain_b(data):
        return data

    monkeypatch.setattr(marks, "_Marked", FakeMarked)
    monkeypatch.setattr(marks, "_plain_kernels", lambda pair, say: ([plain_a, plain_b], None))
    monkeypatch.setattr(timing, "time_block", fake_block)
    torch_ = type("T", (), {"cuda": type("C", (), {"synchronize": staticmethod(lambda: None)})})
    for name, fake in (("bound_torch", lambda: torch_), ("require_gpu", lambda *a: None),
                       ("refuse_unrunnable", lambda *a: None), ("inputs", lambda *a, **k: ["data"]),
                       ("check", lambda *a: {"ok": True}), ("device_name", lambda t: "GPU")):
        monkeypatch.setattr(common, name, fake)
    pair = [type("Sub", (), {"problem": "gemm", "label": label, "path": None}) for label in ("a", "b")]
    result = marks.compare(pair, [_shape("gemm")], calls=2)
    assert timed == ["plain_a", "plain_b", "plain_b", "plain_a"]  # in turn, as the marks builds' calls
    (entry,) = result["shapes"]
    assert entry["builds"]["plain_us"] == [10.0, 10.5] and entry["builds"]["marks_us"] == [2.0, 1.0]
    lines = marks.format_comparison(result)
    assert any("(1.050)" in line and "(0.500)" in line for line in lines)
    assert any(line.startswith("WARNING: the marks builds' B / A (0.500) is not the plain builds' (1.050)")
               for line in lines)


def test_marks_fill_sets_the_last_end_against_the_same_work_spread_evenly_over_the_sms():
    # two SMs, three CTAs: 0 runs 0-10 us, 1 runs 0-4, then 2 runs 4-8 on the SM 1 left: 18 SM-us of work,
    # which spread over both SMs from the first start would end at 9 us; the launch ends at 10 (busy 90%)
    calls = [_call({0: (1000, 0), 1: (11_000, 0)}, {0: (1000, 0), 1: (5000, 0)}, {0: (5000, 0), 1: (9000, 0)})]
    f = marks.fill_account(calls, ["start", "end"], ("start", "end"), sms=2)
    assert f["ctas"] == 3 and f["last_end_us"] == pytest.approx(10.0) and f["even_end_us"] == pytest.approx(9.0)
    assert f["busy"] == pytest.approx(0.9)
    line = marks.format_fill(f, ("start", "end"))
    assert "10.00 µs" in line and "9.00" in line and "1.111x" in line and "90%" in line
    # a CTA with START alone is not counted; a call in which none has a span gives no account
    assert marks.fill_account([_call({0: (1000, 0)})], ["start", "end"], ("start", "end"), sms=2) is None
    assert "no CTA stamped 'start' and then 'end'" in marks.format_fill(None, ("start", "end"), "A (v1)")


def test_marks_fill_counts_a_cta_that_left_before_end_to_its_last_mark():
    # group_gemm v86's split pairs: the half that writes its partial returns after "loop" and never stamps "end".
    # Two SMs: CTA 0 runs 1-11 us to "end"; CTA 1 leaves at 7 us ("loop" its last mark; its "prepass" stamp, id 3,
    # at 0.5 us is the call's first and no part of its span); 16 SM-us evenly over two SMs from 1 us end at 9, i.e.
    # 8.5 us after the call's first stamp, the last end 10.5.
    names = ["start", "loop", "end", "prepass"]
    calls = [_call({0: (1000, 0), 1: (8000, 0), 2: (11_000, 0)}, {0: (1000, 0), 1: (7000, 0), 3: (500, 0)})]
    f = marks.fill_account(calls, names, ("start", "end"), sms=2)
    assert f["ctas"] == 2 and f["early"] == 1
    assert f["even_end_us"] == pytest.approx(8.5) and f["last_end_us"] == pytest.approx(10.5)
    assert "(1 of them left before end: their last mark stands in)" in marks.format_fill(f, ("start", "end"))
    # without the early CTA the line says nothing of it
    f = marks.fill_account([_call({0: (1000, 0), 2: (11_000, 0)})], names, ("start", "end"), sms=2)
    assert f["early"] == 0 and "left before" not in marks.format_fill(f, ("start", "end"))


def test_marks_fill_names_are_checked_before_anything_is_timed():
    assert marks.parse_fill("GEMM start:end") == ("GEMM start", "end")
    for bad in ("end", ":end", "start:", " : "):
        with pytest.raises(UserError, match="--fill"):
            marks.parse_fill(bad)
    marks.check_fill_names(("start", "mark 7"), ["start", "end"], "v1")  # declared, or an id past them
    with pytest.raises(UserError, match="'loop' is not one of v1's marks"):
        marks.check_fill_names(("loop", "end"), ["start", "end"], "v1")
    with pytest.raises(UserError):
        marks.check_fill_names(("start", "mark 16"), ["start", "end"], "v1")
    header = _invoke("marks", "--header", "--fill", "start:end")
    assert header.exit_code == 2 and "--fill" in header.stderr
    malformed = _invoke("marks", "gemm", str(FIXTURE), "--fill", "start")
    assert malformed.exit_code == 2 and "--fill" in malformed.stderr
    unknown = _invoke("marks", "gemm", str(FIXTURE), "--fill", "start:no such mark")  # refused before any build
    assert unknown.exit_code == 2 and "'no such mark' is not one of" in unknown.stderr


def test_marks_compare_gives_each_version_its_fill_and_refuses_a_mark_it_lacks(monkeypatch, tmp_path):
    from harness.probes import common

    class FakeMarked:
        def __init__(self, sub, say, build="marks"):
            self.sub, self.declared = sub, ["start", "end"]
            self.built = type("Built", (), {"kernel": staticmethod(lambda data: data)})

        def call(self, torch_, data):
            end = 9000 if self.sub.label == "a" else 5000  # B's second CTA ends 4 us sooner
            return _call({0: (1000, 0), 1: (5000, 0)}, {0: (1000, 0), 1: (end, 0)})

    monkeypatch.setattr(marks, "_Marked", FakeMarked)
    monkeypatch.setattr(marks, "_sm_count", lambda torch_: 2)
    for name, fake in (("bound_torch", lambda: None), ("require_gpu", lambda *a: None),
                       ("refuse_unrunnable", lambda *a: None), ("inputs", lambda *a, **k: ["data"]),
                       ("check", lambda *a: {"ok": True}), ("device_name", lambda t: "GPU")):
        monkeypatch.setattr(common, name, fake)
    pair = [type("Sub", (), {"problem": "gemm", "label": label, "path": tmp_path / f"{label}.py"}) for label in ("a", "b")]
    result = marks.compare(pair, [_shape("gemm")], calls=2, fill=("start", "end"))
    a, b = result["shapes"][0]["fills"]
    assert a["last_end_us"] == pytest.approx(8.0) and a["even_end_us"] == pytest.approx(6.0)  # 4 + 8 SM-us on 2 SMs
    assert b["last_end_us"] == pytest.approx(4.0) and b["busy"] == pytest.approx(1.0)
    lines = marks.format_comparison(result)
    assert any(line.startswith("fill A (a): ") for line in lines) and any(line.startswith("fill B (b): ") for line in lines)
    with pytest.raises(UserError, match="'loop' is not one of a's marks"):
        marks.compare(pair, [_shape("gemm")], calls=2, fill=("loop", "end"))


def test_cta_ranges_parse_and_a_malformed_one_is_an_error():
    assert marks.parse_cta_ranges("0-31, 32-63,64") == [range(0, 32), range(32, 64), range(64, 65)]
    for bad in ("5-2", "a-3", "1-", ""):
        with pytest.raises(UserError):
            marks.parse_cta_ranges(bad)


def test_probe_marks_prints_its_header_and_needs_a_version_otherwise():
    shown = _invoke("marks", "--header")
    assert shown.exit_code == 0 and "#define NVFP4_MARK(id) do { } while (0)" in shown.stdout
    assert _invoke("marks", "gemm").exit_code == 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal without a GPU")
def test_probe_marks_and_ablate_refuse_without_a_gpu(tmp_path):
    other = tmp_path / "marked_copy.py"
    other.write_text(FIXTURE.read_text())
    for args in (("marks", "gemm", str(FIXTURE)), ("marks", "gemm", str(FIXTURE), str(other)),
                 ("ablate", "gemm", str(FIXTURE))):
        result = _invoke(*args)
        assert result.exit_code == 2 and "needs a CUDA GPU" in result.stderr


def test_probe_marks_of_two_versions_refuses_one_file_twice_a_malformed_range_and_the_header(tmp_path):
    other = tmp_path / "marked_copy.py"
    other.write_text(FIXTURE.read_text())
    same = _invoke("marks", "gemm", str(FIXTURE), str(FIXTURE))
    assert same.exit_code == 2 and "the same file" in same.stderr
    ranges = _invoke("marks", "gemm", str(FIXTURE), str(other), "--ctas", "5-2")
    assert ranges.exit_code == 2 and "--ctas" in ranges.stderr
    header = _invoke("marks", "gemm", str(FIXTURE), str(other), "--header")
    assert header.exit_code == 2 and "--header" in header.stderr


# ------------------------------------------------------------------------- builds with defines
def test_variant_option_parses_names_and_defines_and_refuses_the_rest():
    assert variants.parse_variant("ring4=RING=4,-DNO_MMA") == variants.Variant("ring4", ("RING=4", "NO_MMA"))
    for bad in ("no_mma", "=X", "x=", "x=1BAD", "x=A B", "full=X"):
        with pytest.raises(UserError):
            variants.parse_variant(bad)


def test_ablations_are_read_from_the_file_without_running_it(tmp_path):
    path = tmp_path / "v.py"
    path.write_text('raise SystemExit("imported")\n'
                    'ABLATIONS = {"no_mma": ["NVFP4_ABLATE_NO_MMA"], "both": ["A", "B=2"]}\n'
                    "def custom_kernel(data):\n    return data\n")
    sub = submissions.load("gemm", path, "v")
    assert variants.declared_ablations(sub) == [variants.Variant("no_mma", ("NVFP4_ABLATE_NO_MMA",)),
                                                variants.Variant("both", ("A", "B=2"))]
    path.write_text("N = 3\nABLATIONS = {'x': ['A'] * N}\ndef custom_kernel(data):\n    return data\n")
    with pytest.raises(UserError, match=":2: ABLATIONS must be a literal"):
        variants.declared_ablations(submissions.load("gemm", path, "v"))


def test_a_variant_build_adds_its_defines_renames_its_extension_and_builds_apart(tmp_path, monkeypatch):
    import torch.utils.cpp_extension as cpp_extension
    seen = []

    def recording_load_inline(name, cpp_sources, cuda_sources=None, functions=None, extra_cflags=None,
                              extra_cuda_cflags=None, verbose=False):
        import os
        seen.append({"name": name, "cuda": extra_cuda_cflags, "cpp": extra_cflags,
                     "dir": os.environ["TORCH_EXTENSIONS_DIR"]})
        return type(sys)(name)

    monkeypatch.setattr(cpp_extension, "load_inline", recording_load_inline)
    path = tmp_path / "v.py"
    path.write_text("from torch.utils.cpp_extension import load_inline\n"
                    "_module = load_inline(name='ext_v9', cpp_sources='', cuda_sources='x', functions=[],\n"
                    "                      extra_cuda_cflags=['-O3'])\n"
                    "def custom_kernel(data):\n    return data\n")
    sub = submissions.load("gemm", path, "v9")
    built = variants.import_variant(sub, variants.Variant("no mma", ("NVFP4_ABLATE_NO_MMA", "RING=4")))
    plain = variants.import_variant(sub, variants.Variant(variants.FULL))
    assert seen[0]["name"] == "ext_v9_no_mma"
    assert seen[0]["cuda"] == ["-O3", "-DNVFP4_ABLATE_NO_MMA", "-DRING=4"]
    assert seen[0]["cpp"] == ["-DNVFP4_ABLATE_NO_MMA", "-DRING=4"]
    assert seen[1]["name"] == "ext_v9" and seen[1]["cuda"] == ["-O3"]
    assert seen[0]["dir"] != seen[1]["dir"]  # the variant never overwrites the plain build
    assert built.extensions and not plain.extensions and callable(built.kernel)
    assert cpp_extension.load_inline is recording_load_inline  # the wrap is undone


def test_probe_ablate_lists_declared_variants_and_refuses_unknown_or_repeated_names(tmp_path):
    listed = _invoke("ablate", "gemm", str(FIXTURE), "--list")
    assert listed.exit_code == 0 and listed.stdout.split() == ["no_sum", "-DNVFP4_ABLATE_NO_SUM"]
    unknown = _invoke("ablate", "gemm", str(FIXTURE), "--variant", "no_mma", "--list")
    assert unknown.exit_code == 2 and "no_sum" in unknown.stderr
    twice = _invoke("ablate", "gemm", str(FIXTURE), "--variant", "a=X", "--variant", "a=Y", "--list")
    assert twice.exit_code == 2 and "given twice (a)" in twice.stderr
    none = _invoke("ablate", "gemm", "v0", "--list")
    assert none.exit_code == 2 and "declares no ABLATIONS" in none.stderr
    as_json = _invoke("ablate", "gemm", str(FIXTURE), "--list", "--json")  # --json was ignored by --list
    assert as_json.exit_code == 0 and json.loads(as_json.stdout) == {
        "variants": [{"name": "no_sum", "defines": ["NVFP4_ABLATE_NO_SUM"]}]}


# ------------------------------------------------------------------------------------ host path
@pytest.mark.parametrize("version", ["v0", "peer"])
def test_probe_host_splits_a_calls_host_path_and_says_what_the_cpu_cannot_measure(version):
    result = _invoke("host", "gemm", version, "--shape", SMALL["gemm"], "--calls", "4", "--pool", "2", "--json")
    assert result.exit_code == 0, result.output
    (r,) = json.loads(result.stdout)["shapes"]
    assert r["check"]["ok"] and r["host_us"] > 0 and r["ops"] and all(op["self_us"] > 0 for op in r["ops"])
    assert r["queued_us"] > 0 and r["pool"] == 2 and r["pace_us"] > 0
    assert r["rest_us"] == pytest.approx(r["host_us"] - sum(op["self_us"] for op in r["ops"]))
    if not torch.cuda.is_available():
        assert r["device_us"] is None and r["cold_us"] is None
        text = _invoke("host", "gemm", version, "--shape", SMALL["gemm"], "--calls", "2", "--pool", "1")
        assert "no GPU here" in text.stdout and "this host's pace: one torch launch queued" in text.stdout


def test_probe_host_rotates_through_gpumode_batch_of_sets_unless_told(monkeypatch):
    # NOTE: a cache keyed by the input set cost gemm v68 ~10 µs a call with GPU MODE's 50 sets and nothing
    # with the probe's former 4 (harness.timing.queued_call_times)
    from harness import timing
    from harness.probes import host
    pools = []
    monkeypatch.setattr(host, "_ready", lambda sub, kernel, shape, pool: pools.append(pool) or ([None], {"ok": True}))
    monkeypatch.setattr(host, "_clock_figures", lambda *args: {"host_us": 1.0, "device_us": None})
    monkeypatch.setattr(host, "_profiler_figures", lambda *args: None)
    shape = config.parse_shape_option("gemm", SMALL["gemm"], 0)
    for problem, told, expected in [("gemm", None, timing.gpumode_batch("gemm")), ("gemm", 3, 3),
                                    ("group_gemm", None, timing.gpumode_batch("group_gemm"))]:
        pools.clear()
        host.measure(submissions.resolve(problem, "v0"), [shape], calls=2, pool=told)
        assert pools == [expected]
    assert timing.gpumode_batch("gemm") == 50 and timing.gpumode_batch("group_gemm") == 15


def test_probe_host_times_every_shapes_host_path_before_any_profiler_session(monkeypatch):
    # NOTE: a process that opened torch.profiler keeps CUPTI's callbacks on (harness.timing's
    # _profiler): a host path timed after one would carry them
    from harness import timing
    from harness.probes import host
    order: list[str] = []
    host_call_times = timing.host_call_times

    def timed_host(kernel, data_sets, calls):
        order.append("host")
        return host_call_times(kernel, data_sets, calls)

    monkeypatch.setattr(timing, "host_call_times", timed_host)
    monkeypatch.setattr(host, "_host_ops", lambda *args: order.append("profiler") or [])
    shapes = [config.parse_shape_option("gemm", SMALL["gemm"], 0), config.parse_shape_option("gemm", "m=64,n=128,k=256,l=1", 1)]
    results = host.measure(submissions.resolve("gemm", "v0"), shapes, calls=2, pool=1)
    assert order == ["host", "host", "profiler", "profiler"]
    assert [r["shape"] for r in results] == [s.label for s in shapes] and all(r["host_us"] > 0 for r in results)


# ----------------------------------------------------------------------------------------- SASS
def _sass(body: list[str]) -> list[str]:
    """A kernel's nvdisasm text: "L:name" lines are labels, the rest instructions, 16 bytes apart."""
    lines, n = [".text._Z6kernelv:"], 0
    for text in body:
        if text.startswith("L:"):
            lines.append(f"{text[2:]}:")
            continue
        lines.append(f"        /*{16 * n:04x}*/                   {text} ;")
        n += 1
    return lines


HGMMA = "HGMMA.64x128x16.F32 R24, gdesc[UR4], R24"


def test_sass_flags_a_fence_or_local_access_inside_a_wgmma_loop_only():
    spin = ["L:.L_x_1", "SYNCS.PHASECHK.TRANS64 P0, [UR4], R2", "@!P0 BRA `(.L_x_1)"]  # a wait loop, no HGMMA
    clean = _sass(["MEMBAR.ALL.GPU", "L:.L_x_0", *spin, "IMAD R0, R1, R2, R3", HGMMA, HGMMA,
                   "@P1 BRA `(.L_x_0)", "LDL R2, [R1+0x8]"])
    loops = sass.loops_of(clean)["_Z6kernelv"]
    assert len(loops) == 1 and loops[0].hgmma == 2 and loops[0].flagged == []  # fence and spill outside
    assert (loops[0].first, loops[0].last, loops[0].bytes) == (16, 16 * 6, 16 * 6)
    assert (loops[0].instructions, loops[0].uniform) == (6, 0)
    uniform = sass.loops_of(_sass(["L:.L_x_0", "UMOV UR4, 0x400", "@P0 UIADD3 UR5, UR4, 0x20, URZ", HGMMA,
                                   "@P1 BRA `(.L_x_0)"]))["_Z6kernelv"][0]
    assert (uniform.instructions, uniform.uniform) == (4, 2)
    fenced = sass.loops_of(_sass(["L:.L_x_0", HGMMA, "@!P1 MEMBAR.ALL.GPU", "STL [R1], R2", HGMMA,
                                  "@P1 BRA `(.L_x_0)"]))
    assert [f.split(" ", 1)[1] for f in fenced["_Z6kernelv"][0].flagged] == ["@!P1 MEMBAR.ALL.GPU", "STL [R1], R2"]
    report = sass.format_loops("gemm/v9", fenced)
    assert "FLAGGED" in report[1] and report[2:] == ["      @!P1 MEMBAR.ALL.GPU", "      STL [R1], R2"]


def test_sass_prices_a_loops_issue_against_its_tensor_work():
    # 2 HGMMA of N = 128: 128 tensor cycles; 56 instructions at ISSUE_RATE a cycle
    body = ["L:.L_x_0", HGMMA, *["IMAD R0, R1, R2, R3"] * 53, "HGMMA.64x128x16.F32 R24, R88, gdesc[UR8], R24, gsb0",
            "@P1 BRA `(.L_x_0)"]
    loop = sass.loops_of(_sass(body))["_Z6kernelv"][0]
    assert (loop.instructions, loop.tensor_cycles) == (56, 128)
    assert loop.issue_ratio == pytest.approx(56 / sass.ISSUE_RATE / 128)
    assert f"issue {56 / sass.ISSUE_RATE / 128:.2f}x tensor" in sass.format_loops("gemm/v9", {"_Z6kernelv": [loop]})[1]
    narrow = sass.loops_of(_sass(["L:.L_x_0", "HGMMA.64x64x32.F32.E4M3.E4M3 R24, gdesc[UR4], R24", "@P1 BRA `(.L_x_0)"]))
    assert narrow["_Z6kernelv"][0].tensor_cycles == 32  # N / 2 at any K: fp8's k32 runs at twice fp16's rate


def test_sass_reports_the_innermost_loop_around_the_tensor_work():
    # an out-of-line retry block after EXIT jumps back into the loop with a plain BRA: not a loop
    nested = _sass(["L:.L_x_0", "IMAD R0, R1, R2, R3", "L:.L_x_1", HGMMA, "MEMBAR.ALL.CTA", "@P1 BRA `(.L_x_1)",
                    "@P2 BRA `(.L_x_0)", "BRA `(.L_x_2)", "L:.L_x_2", "EXIT", "@!P0 BRA `(.L_x_2)", "BRA `(.L_x_1)"])
    loops = sass.loops_of(nested)["_Z6kernelv"]
    assert [(loop.first, loop.last, loop.hgmma, len(loop.flagged)) for loop in loops] == [(16, 48, 1, 1)]


def test_sass_counts_each_loops_opcodes_by_base_name():
    body = ["L:.L_x_0", HGMMA, "LOP3.LUT R0, R1, 0x8e008e00, RZ, 0xc0, !PT", "@!P0 LOP3.LUT R2, R3, 0xf, RZ, 0xc0, !PT",
            "HMUL2 R4, R4, R5.H0_H0", HGMMA, "@P1 BRA `(.L_x_0)"]
    loop = sass.loops_of(_sass(body))["_Z6kernelv"][0]
    assert loop.opcodes == {"HGMMA": 2, "LOP3": 2, "HMUL2": 1, "BRA": 1}
    report = sass.format_loops("gemm/v9", {"_Z6kernelv": [loop]}, opcodes=2)
    assert report[-1] == "      opcodes: HGMMA 2, LOP3 2"  # ties by name
    assert not any("opcodes" in line for line in sass.format_loops("gemm/v9", {"_Z6kernelv": [loop]}))


def test_sass_counts_imads_standing_in_for_shifts_and_moves_apart():
    # NOTE: the forms are ptxas's (dual_gemm v73's wide loop: IMAD.SHL.U32 where v72's had SHF.L.U32)
    body = ["L:.L_x_0", HGMMA, "IMAD.SHL.U32 R0, R1, 0x10, RZ", "@!P0 IMAD.SHL.U32 R2, R3, 0x2, RZ",
            "IMAD.MOV.U32 R4, RZ, RZ, R5", "IMAD R6, R7, R8, R9", "SHF.L.U32 R10, R11, 0x4, RZ", "@P1 BRA `(.L_x_0)"]
    loop = sass.loops_of(_sass(body))["_Z6kernelv"][0]
    assert loop.opcodes == {"HGMMA": 1, "IMAD.SHL": 2, "IMAD.MOV": 1, "IMAD": 1, "SHF": 1, "BRA": 1}


def test_sass_gives_each_kernels_whole_size_beside_its_loops():
    # NOTE: dual_gemm v78 (session 87): the same path run from a kernel of 158.2 KB against v72's 97.6 KB, 19% of its
    # warp samples stalled on instruction fetch against 7%
    listing = _sass(["IMAD R0, R1, R2, R3", "L:.L_x_0", HGMMA, "@P1 BRA `(.L_x_0)", "EXIT"]) + \
        [".text._Z5emptyv:"] + _sass(["EXIT"])[1:]
    sizes = sass.kernel_sizes(listing)
    assert sizes == {"_Z6kernelv": 4 * 16, "_Z5emptyv": 16}
    loops = sass.loops_of(listing)
    assert sass.format_loops("gemm/v9", loops, sizes={"_Z6kernelv": 2048})[0] == "gemm/v9 _Z6kernelv (2.0 KB of SASS)"
    assert sass.format_loops("gemm/v9", loops)[0] == "gemm/v9 _Z6kernelv"


def test_sass_finds_nvdisasm_from_the_pip_wheel(tmp_path, monkeypatch):
    from harness import cuda_tools
    tool = tmp_path / "nvidia" / "cu13" / "bin" / "nvdisasm"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.delenv("NVDISASM", raising=False)
    monkeypatch.setattr(cuda_tools, "find", lambda name: None)
    # NOTE: the wheel's namespace package as the import system would find it, whatever this machine has installed
    import importlib.machinery
    import importlib.util
    spec = importlib.machinery.ModuleSpec("nvidia", None, is_package=True)
    spec.submodule_search_locations = [str(tmp_path / "nvidia")]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: spec if name == "nvidia" else None)
    assert sass.find_nvdisasm() == str(tool)
    tool.chmod(0o644)  # not executable: not taken
    assert sass.find_nvdisasm() is None


def test_probe_sass_refuses_opcodes_below_one():
    result = _invoke("sass", "gemm", "v9", "--opcodes", "0")
    assert result.exit_code == 2 and "--opcodes" in result.output


def test_probe_sass_needs_versions_or_files():
    assert _invoke("sass").exit_code == 2
    assert _invoke("sass", "gemm").exit_code == 2


# ------------------------------------------------------------------------------------------ GPU
@pytest.mark.gpu
def test_probe_marks_times_every_cta_at_the_fixtures_marks():
    shape = "m=64,n=256,k=512,l=2"  # 2 x 64 x 2 = 256 CTAs
    result = _invoke("marks", "gemm", str(FIXTURE), "--shape", shape, "--calls", "3", "--ctas", "0-1", "--json")
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["shapes"]
    assert entry["check"]["ok"], entry["check"]
    summary = entry["summary"]
    assert [m["mark"] for m in summary["marks"]] == ["start", "K loop", "stored"]
    assert all(m["ctas"] == 256 for m in summary["marks"]) and summary["dropped"] == 0
    assert [p["phase"] for p in summary["phases"]] == ["start -> K loop", "K loop -> stored"]
    assert all(p["median_cycles"] > 0 for p in summary["phases"])
    assert [m["ctas"] for m in entry["ranges"][0]["summary"]["marks"]] == [2, 2, 2]


@pytest.mark.gpu
def test_probe_marks_of_two_versions_sets_their_timelines_side_by_side(tmp_path):
    other = tmp_path / "marked_copy.py"
    other.write_text(FIXTURE.read_text())
    result = _invoke("marks", "gemm", str(FIXTURE), str(other), "--shape", "m=64,n=256,k=512,l=2", "--calls", "3",
                     "--ctas", "0-1", "--json")
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["shapes"]
    assert all(check["ok"] for check in entry["checks"]), entry["checks"]
    assert [m["mark"] for m in entry["marks"]] == ["start", "K loop", "stored"]
    assert all(m["a_median_us"] is not None and m["b_median_us"] is not None for m in entry["marks"])
    assert [s["calls"] for s in entry["summaries"]] == [3, 3]
    assert entry["ranges"][0]["ctas"] == "0-1" and len(entry["ranges"][0]["marks"]) == 3


@pytest.mark.gpu
def test_probe_ablate_times_the_fixture_with_its_k_loop_left_out():
    result = _invoke("ablate", "gemm", str(FIXTURE), "--shape", "m=128,n=512,k=2048,l=1", "--rounds", "2",
                     "--pool", "2", "--json")
    assert result.exit_code == 0, result.output
    rows = {row["variant"]: row for row in json.loads(result.stdout)["rows"]}
    assert rows["full"]["matches_reference"] and not rows["no_sum"]["matches_reference"]
    assert rows["no_sum"]["us"] < rows["full"]["us"] and rows["full"]["vs_full"] == 1.0


@pytest.mark.gpu
def test_probe_host_measures_the_device_side_on_a_gpu():
    result = _invoke("host", "gemm", str(FIXTURE), "--shape", SMALL["gemm"], "--calls", "8", "--json")
    assert result.exit_code == 0, result.output
    (r,) = json.loads(result.stdout)["shapes"]
    assert r["device_us"] > 0 and r["cold_us"] > r["device_us"] and r["events_us"] > 0
    # the probe's synchronise between calls is not the call's (the fixture's call never synchronises)
    assert "cudaDeviceSynchronize" not in {op["op"] for op in r["ops"]}, r["ops"]
    assert any(op["op"].startswith("cu") for op in r["ops"]), r["ops"]  # the call's own launch is counted


@pytest.mark.gpu
@pytest.mark.parametrize("problem", sorted(SMALL))
def test_the_fair_peer_writes_c_from_the_gemm_with_no_conversion_kernel(problem):
    """Issue 45's fair peer on a GPU: each distribution passes, and a call after the warm-up runs the
    GEMMs alone (fp16 output written into c) where it takes the fp16 way; dual_gemm's epilogue
    (silu, mul) is its problem's, not a conversion."""
    from torch.profiler import ProfilerActivity, profile
    kernel = peer.make_kernel(problem)
    for dist in DISTS:
        data_sets = [problem_module(problem).generate_input(**_shape(problem).generator_kwargs(), seed=seed, dist=dist,
                                                            device="cuda") for seed in (1, 2)]
        for data in data_sets:
            ok, message = problem_module(problem).check(data, kernel(data))
            assert ok, f"{dist}: {message}"
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        kernel(data_sets[0])
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    aten = [n for n in names if "at::native" in n]  # torch's own kernels (elementwise, copies); cuBLAS's are not
    if kernel.output == "fp16":
        assert names and not aten, names
    else:
        assert len(aten) == 2, names  # silu, then the product into c


def test_sass_cuts_a_multi_arch_gencode_to_the_hopper_cubin():
    """gemv's ``code=[sm_90,compute_90]`` made ``nvcc -cubin`` refuse ("not allowed when compiling
    for multiple GPU code instances"): the probe keeps one GPU code, the sm_90 one."""
    assert sass.cubin_flags(["-O3", "-gencode=arch=compute_90,code=[sm_90,compute_90]"]) == \
        ["-O3", "-gencode=arch=compute_90,code=sm_90"]
    assert sass.cubin_flags(["-gencode", "arch=compute_100a,code=[sm_100a,compute_100a]",
                             "-gencode=arch=compute_90a,code=sm_90a"]) == ["-gencode=arch=compute_90a,code=sm_90a"]
    assert sass.cubin_flags(["-O3", "-std=c++17"]) == ["-O3", "-std=c++17"]


@needs_nvcc
def test_sass_compiles_a_multi_arch_version_to_one_cubin(tmp_path):
    source = tmp_path / "multi.py"
    source.write_text('CUDA_SRC = r"""\n__global__ void twice(float* x) { x[threadIdx.x] *= 2.f; }\n"""\n'
                      'CUDA_FLAGS = ["-O3", "-gencode=arch=compute_90,code=[sm_90,compute_90]"]\n\n\n'
                      'def custom_kernel(data):\n    return data\n')
    cubin = tmp_path / "k.cubin"
    sass.compile_cubin(source, "sm_90", shutil.which("nvcc"), cubin)
    assert cubin.read_bytes()[:4] == b"\x7fELF"  # one ELF cubin, not a fatbin


def test_probe_host_sets_two_versions_host_paths_side_by_side_with_an_interval():
    result = _invoke("host", "gemm", "v0", "peer", "--shape", SMALL["gemm"], "--calls", "8", "--rounds", "2",
                     "--pool", "2", "--json")
    assert result.exit_code == 0, result.output
    (r,) = json.loads(result.stdout)["shapes"]
    assert r["versions"] == ["v0", "peer"] and r["rounds"] == 2 and r["calls_per_round"] == 4
    assert all(check["ok"] for check in r["checks"]) and all(us > 0 for us in r["host_us"])
    assert r["lo"] <= r["speedup"] <= r["hi"] and r["verdict"] in ("FASTER", "SLOWER", "SAME", "AMBIGUOUS")
    assert all(us > 0 for us in r["queued_us"]) and r["queued_lo"] <= r["queued_speedup"] <= r["queued_hi"]
    assert r["queued_verdict"] in ("FASTER", "SLOWER", "SAME", "AMBIGUOUS") and r["pool"] == 2
    assert 0 < r["pace_range_us"][0] <= r["pace_us"] <= r["pace_range_us"][1]
    text = _invoke("host", "gemm", "v0", "peer", "--shape", SMALL["gemm"], "--calls", "4", "--rounds", "2", "--pool", "1")
    assert text.exit_code == 0 and "peer over v0: idle" in text.stdout and "queued" in text.stdout
    assert "taken in turn" in text.stdout and "this host's pace: one torch launch queued" in text.stdout


@pytest.mark.parametrize("args,message", [
    (("v0", "--rounds", "4"), "--rounds splits the calls of two versions taken in turn: name a second version"),
    (("v0", "v0"), "v0 and v0 are the same file: name two versions"),
    (("v0", "peer", "--calls", "6", "--rounds", "4"), "the interval needs at least 2 rounds of at least 2 calls each"),
])
def test_probe_host_refuses_what_two_versions_would_ignore_or_cannot_measure(args, message):
    result = _invoke("host", "gemm", *args, "--shape", SMALL["gemm"])
    assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.output
