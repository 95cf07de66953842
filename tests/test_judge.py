"""harness.judge: the child's copy of each output, the parent's list of what must be checked, and the
judge's verdict from inputs and references of its own (CPU)."""

from __future__ import annotations

import os

import pytest
import torch

from harness import judge, worker
from reference import problem_module

PARAMS = {"m": 64, "n": 32, "k": 64, "l": 1, "seed": 7}
ITEM = {"params": PARAMS, "dist": "competition"}


def _data(mod, seed):
    return mod.generate_input(**{k: v for k, v in PARAMS.items() if k != "seed"}, seed=seed, dist="competition")


@pytest.fixture
def shared():
    fd = judge.shared_file("test-results")
    yield fd
    os.close(fd)


def _entry(sink, mod, data, result):
    sink.reserve(judge.output_bytes(result))
    entry = sink.put(result)
    entry["inputs"] = judge.fingerprint(torch, judge.input_tensors(mod, data))
    return entry


def test_a_correct_output_passes_and_a_wrong_one_fails_with_the_calls_label(shared):
    mod = problem_module("gemm")
    sink = judge.ResultSink(torch, shared)
    good = _data(mod, 7)
    bad = _data(mod, 8)
    entries = [_entry(sink, mod, good, mod.ref_kernel(good)), _entry(sink, mod, bad, mod.ref_kernel(bad) + 1)]
    calls = [{"seed": 7, "label": "seed 7", "sub": 0}, {"seed": 8, "label": "seed 8", "sub": 0}]
    reply = judge.Judge(torch, mod, shared).check(ITEM, calls, entries, "timed")
    assert reply["status"] == "FAIL" and reply["message"].startswith("seed 8: output:") and "mismatch" in reply["message"]
    assert judge.Judge(torch, mod, shared).check(ITEM, calls[:1], entries[:1], "timed")["status"] == "PASS"


def test_test_kind_measures_the_yardstick(shared):
    mod = problem_module("gemm")
    sink = judge.ResultSink(torch, shared)
    data = _data(mod, 7)
    reply = judge.Judge(torch, mod, shared).check(ITEM, [{"seed": 7, "label": "seed 7", "sub": 0}],
                                                  [_entry(sink, mod, data, mod.ref_kernel(data))], "test")
    assert reply["status"] == "PASS" and reply["message"].startswith("1 seeds pass; max error 0")
    assert reply["max_error"] == 0.0


def test_inputs_other_than_the_seeds_fail_even_with_the_matching_output(shared):
    """A changed input generator (or an input changed in place) with an output computed from it."""
    mod = problem_module("gemm")
    sink = judge.ResultSink(torch, shared)
    data = _data(mod, 7)
    data[0].view(torch.uint8).zero_()
    reply = judge.Judge(torch, mod, shared).check(ITEM, [{"seed": 7, "label": "seed 7", "sub": 0}],
                                                  [_entry(sink, mod, data, mod.ref_kernel(data))], "timed")
    assert reply["status"] == "FAIL" and "not the one generated from its seed" in reply["message"]


@pytest.mark.parametrize("tamper,text", [
    (lambda e, fd: e["parts"][0].__setitem__(2, os.fstat(fd).st_size - 256), "missing from the shared file"),
    (lambda e, fd: e["parts"][0].__setitem__(0, "object"), "cannot read"),
    (lambda e, fd: e["parts"][0].__setitem__(3, 12), "cannot read"),
    (lambda e, fd: e.update(parts=None), "not a tensor"),
    (lambda e, fd: e.update(overflow=10 ** 9), "larger than the checked calls"),
])
def test_a_malformed_description_or_a_truncated_file_is_a_fail_never_a_judge_crash(shared, tamper, text):
    mod = problem_module("gemm")
    sink = judge.ResultSink(torch, shared)
    data = _data(mod, 7)
    entry = _entry(sink, mod, data, mod.ref_kernel(data))
    tamper(entry, shared)
    reply = judge.Judge(torch, mod, shared).check(ITEM, [{"seed": 7, "label": "seed 7", "sub": 0}], [entry], "timed")
    assert reply["status"] == "FAIL" and text in reply["message"]


def test_the_shared_file_cannot_shrink_and_the_judge_follows_it_as_it_grows(shared):
    """Mapped by the judge: a page cut from under the mapping would crash it (SIGBUS), so the file is
    sealed against shrinking; it grows between checks and the judge maps it again."""
    mod = problem_module("gemm")
    sink = judge.ResultSink(torch, shared)
    data = _data(mod, 7)
    calls = [{"seed": 7, "label": "seed 7", "sub": 0}]
    referee = judge.Judge(torch, mod, shared)
    assert referee.check(ITEM, calls, [_entry(sink, mod, data, mod.ref_kernel(data))], "timed")["status"] == "PASS"
    with pytest.raises(PermissionError):
        os.ftruncate(shared, 0)
    sink.reserve(4 * sink.size)  # a larger pool's outputs: the file grows
    sink.used = sink.size - judge.output_bytes(data[-1])
    entry = _entry(sink, mod, data, mod.ref_kernel(data))
    assert entry["parts"][0][2] > 1 << 20
    assert referee.check(ITEM, calls, [entry], "timed")["status"] == "PASS"
    unsealed = os.memfd_create("unsealed")
    try:
        with pytest.raises(RuntimeError, match="can shrink"):
            judge.Judge(torch, mod, unsealed).check(ITEM, calls, [entry], "timed")
    finally:
        os.close(unsealed)


def test_a_failed_pinning_leaves_no_error_for_the_next_launch(shared):
    """cudaHostRegister's failure stays CUDA's last error, which torch's next launch check would raise
    as its own: the map falls back to pageable memory and takes that error first (the fake below
    raises it once, as the runtime would)."""
    pending = ["already mapped"]
    calls = []

    class Cudart:
        def cudaHostRegister(self, ptr, size, flags):
            return 712  # cudaErrorHostMemoryAlreadyRegistered

    class Cuda:
        is_available = staticmethod(lambda: True)
        cudart = staticmethod(Cudart)
        synchronize = staticmethod(lambda: None)

    def zeros(*args, **kwargs):
        calls.append(kwargs.get("device"))
        if pending:
            raise RuntimeError(pending.pop())
        return torch.zeros(*args)

    fake = type("FakeTorch", (), {"cuda": Cuda, "zeros": staticmethod(zeros), "frombuffer": staticmethod(torch.frombuffer),
                                  "uint8": torch.uint8})
    os.ftruncate(shared, 1 << 16)
    mapped = judge.SharedMap(fake, shared, 1 << 16)
    assert not mapped.pinned and calls == ["cuda"] and not pending
    mapped.host[:4] = torch.tensor([1, 2, 3, 4], dtype=torch.uint8)
    assert os.pread(shared, 4, 0) == bytes([1, 2, 3, 4])
    mapped.close()


@pytest.mark.parametrize("problem,params", [("gemm", {"m": 64, "n": 32, "k": 64, "l": 3}), ("gemv", {"m": 64, "k": 64, "l": 2})])
def test_batched_outputs_are_rebuilt_in_the_layout_of_c(shared, problem, params):
    """c is [M, N, L] over (L, M, N) storage: not contiguous where L > 1; the output travels in
    logical order and is rebuilt with c's strides, so one value out of place still fails."""
    mod = problem_module(problem)
    item = {"params": dict(params, seed=7), "dist": "competition"}
    data = mod.generate_input(**params, seed=7, dist="competition")
    assert not mod.outputs_of(data)[0].is_contiguous()
    sink = judge.ResultSink(torch, shared)
    good = mod.ref_kernel(data)
    bad = good.clone()
    bad[1, 0, 1] += 100
    calls = [{"seed": 7, "label": "seed 7", "sub": 0}]
    referee = judge.Judge(torch, mod, shared)
    assert referee.check(item, calls, [_entry(sink, mod, data, good)], "timed")["status"] == "PASS"
    failed = referee.check(item, calls, [_entry(sink, mod, data, bad)], "timed")
    assert failed["status"] == "FAIL" and "worst at (1, 0, 1)" in failed["message"], failed


def test_fewer_results_than_calls_fail():
    reply = judge.Judge(torch, problem_module("gemm"), -1).check(ITEM, [{"seed": 7, "label": "x", "sub": 0}], [], "timed")
    assert reply["status"] == "FAIL" and "0 results for 1 calls" in reply["message"]


def test_group_outputs_travel_as_a_list(shared):
    mod = problem_module("group_gemm")
    item = {"params": {"m": [64, 32], "n": [128, 128], "k": [64, 64], "g": 2, "seed": 3}, "dist": "competition"}
    data = mod.generate_input(m=[64, 32], n=[128, 128], k=[64, 64], g=2, seed=3, dist="competition")
    sink = judge.ResultSink(torch, shared)
    entry = _entry(sink, mod, data, mod.ref_kernel(data))
    assert entry["listed"] and len(entry["parts"]) == 2
    reply = judge.Judge(torch, mod, shared).check(item, [{"seed": 3, "label": "seed 3", "sub": 0}], [entry], "timed")
    assert reply["status"] == "PASS", reply


def test_digests_are_equal_for_the_same_bits_and_differ_for_one_bit_a_zero_s_sign_or_a_shape(shared):
    """compare's word on B's outputs against A's (harness.runner.outputs_compared) rests on these: the
    same bits at another offset of the file digest alike; the last bit of one element (which the check's
    tolerance passes), -0.0 against +0.0 (equal as numbers) and the same bytes in another shape do not;
    a check that asks for no digests carries none."""
    mod = problem_module("gemm")
    sink = judge.ResultSink(torch, shared)
    data = _data(mod, 7)
    ref = mod.ref_kernel(data)
    last_bit = ref.clone()
    last_bit.view(torch.int16)[0, 0, 0] ^= 1
    entries = [_entry(sink, mod, data, out) for out in (ref, ref.clone(), last_bit)]
    calls = [{"seed": 7, "label": "seed 7", "sub": 0}] * 3
    reply = judge.Judge(torch, mod, shared).check(ITEM, calls, entries, "timed", digests=True)
    assert reply["status"] == "PASS", reply
    first, again, flipped = reply["digests"]
    assert first == again != flipped
    assert "digests" not in judge.Judge(torch, mod, shared).check(ITEM, calls, entries, "timed")
    # NOTE: one element rounded up and another down, both low halves of even 4-byte words: the
    # fingerprint's sums cancel (why a digest: Judge.digest); the digest sees it
    words = ref.clone()
    halves = words.view(torch.int16).view(-1)
    up = next(i for i in range(0, halves.numel(), 4) if not halves[i] & 1)
    down = next(i for i in range(0, halves.numel(), 4) if halves[i] & 1)
    halves[up] += 1
    halves[down] -= 1
    assert judge.fingerprint(torch, [words]) == judge.fingerprint(torch, [ref])
    cancelled = judge.Judge(torch, mod, shared).check(ITEM, calls[:2], entries[:1] + [_entry(sink, mod, data, words)],
                                                       "timed", digests=True)
    assert cancelled["status"] == "PASS" and cancelled["digests"][0] == first != cancelled["digests"][1]
    sink.reserve(3 * judge.ALIGN)
    zero, negative_zero, reshaped = (sink.put(t) for t in (torch.zeros(8, dtype=torch.float16),
                                                           -torch.zeros(8, dtype=torch.float16),
                                                           torch.zeros(2, 4, dtype=torch.float16)))
    digest = judge.Judge(torch, mod, shared).digest
    assert len({digest(zero), digest(negative_zero), digest(reshaped)}) == 3


def test_a_full_sink_says_so_instead_of_growing(shared):
    sink = judge.ResultSink(torch, shared)
    sink.reserve(1024)
    first = sink.put(torch.zeros(sink.size // 2, dtype=torch.uint8))
    assert first["parts"] and sink.put(torch.zeros(sink.size, dtype=torch.uint8)).get("overflow") == sink.size


def test_expected_calls_come_from_the_command():
    base = PARAMS["seed"]
    test = judge.expected_calls({"cmd": "test", "seeds": 2}, ITEM, 0, 1, {})
    assert [c["seed"] for c in test] == [base, base + 1]
    prepare = judge.expected_calls({"cmd": "prepare"}, ITEM, 3, 2, {})
    assert [c["seed"] for c in prepare] == [base, base + 1, base + 2, base] * 2 and prepare[-1]["sub"] == 1
    assert "repeat of seed" in prepare[3]["label"]
    one = judge.expected_calls({"cmd": "prepare", "sub": 1}, ITEM, 3, 2, {})  # a table's shared process: one version
    assert [c["seed"] for c in one] == [base, base + 1, base + 2, base] and all(c["sub"] == 1 for c in one)
    block = judge.expected_calls({"cmd": "block", "round": 4, "method": "cold", "warm": True, "sub": 1}, ITEM, 2, 2, {})
    assert [c["seed"] for c in block] == [worker.round_seed(base, 4, s) for s in (0, 1)] * 2
    assert "(warm," in block[-1]["label"] and all(c["sub"] == 1 for c in block)
    retried = judge.expected_calls({"cmd": "block", "round": 4, "method": "kernel"}, ITEM, 1, 1, {"escape_retried": "x"})
    assert retried[0]["seed"] == worker.round_seed(base, worker.retry_round(4), 0)


def test_form_problems_are_named_as_the_reference_names_them():
    mod = problem_module("gemm")
    data = _data(mod, 7)
    assert judge.form_problem(mod, data, data[-1]) is None
    assert "shape" in judge.form_problem(mod, data, data[-1][:3])
    assert "plain torch.Tensor" in judge.form_problem(mod, data, [data[-1]])
    group = problem_module("group_gemm")
    gdata = group.generate_input(m=[64, 64], n=[128, 128], k=[64, 64], g=2, seed=3, dist="competition")
    outs = group.outputs_of(gdata)
    assert judge.form_problem(group, gdata, outs) is None
    assert "expected 2 (one per group)" in judge.form_problem(group, gdata, outs[:1])
    assert "shares memory with another group" in judge.form_problem(group, gdata, [outs[0], outs[0]])


def _rewrites(raw: torch.Tensor) -> dict:
    """Rewrites of a uint8 tensor the fingerprint must see, by name."""
    def edit(fn):
        out = raw.clone()
        fn(out.view(-1))
        return out

    def swap(flat, i, j):
        flat[i], flat[j] = int(flat[j]), int(flat[i])
    return {
        "zeroed": torch.zeros_like(raw),
        "one value's sign flipped": edit(lambda f: f.__setitem__(5, int(f[5]) ^ 0x08)),
        "a high nibble's sign flipped": edit(lambda f: f.__setitem__(6, int(f[6]) ^ 0x80)),
        "a byte's halves swapped": edit(lambda f: f.__setitem__(9, ((int(f[9]) & 0xF) << 4) | (int(f[9]) >> 4))),
        "neighbouring bytes swapped": edit(lambda f: swap(f, 2, 3)),
        "bytes two apart swapped": edit(lambda f: swap(f, 2, 4)),
        "bytes four apart swapped": edit(lambda f: swap(f, 1, 5)),
        "a word's value moved to the next word": edit(lambda f: (swap(f, 0, 4), swap(f, 1, 5), swap(f, 2, 6), swap(f, 3, 7))),
        "every byte + 8 (e4m3 scales doubled)": raw + 8,
    }


@pytest.mark.parametrize("size", [64, 66, 63])  # as 4-byte words, as byte pairs, an odd count
def test_fingerprint_sees_each_rewrite_and_equals_for_identical_bytes(size):
    gen = torch.Generator().manual_seed(size)
    raw = torch.randint(0, 120, (size,), dtype=torch.uint8, generator=gen) | 0x11  # nibbles all differ from their pair
    raw[9] = 0x3C
    before = judge.fingerprint(torch, [raw])
    assert judge.fingerprint(torch, [raw.clone()]) == before
    for name, rewritten in _rewrites(raw).items():
        if size % 8 and name in ("bytes two apart swapped", "bytes four apart swapped", "a word's value moved to the next word"):
            continue  # summed by byte parity where words do not fit: a move by an even count of bytes is not seen
        assert judge.fingerprint(torch, [rewritten]) != before, name


@pytest.mark.parametrize("problem", ["gemm", "group_gemm"])
def test_fingerprint_of_generated_inputs_is_identical_for_the_same_seed_and_sees_a_zeroed_scale(problem):
    """Permuted scales ([32, 4, M/128, 4, K/64, L] views) are read where they lie, not copied."""
    mod = problem_module(problem)
    params = ({"m": [64, 32], "n": [128, 128], "k": [64, 64], "g": 2} if problem == "group_gemm"
              else {"m": 64, "n": 32, "k": 64, "l": 2})
    first, again = (judge.input_tensors(mod, mod.generate_input(**params, seed=7)) for _ in range(2))
    before = judge.fingerprint(torch, first)
    assert judge.fingerprint(torch, again) == before
    permuted = next(t for t in again if t.dim() == 6)
    permuted.view(torch.uint8)[0, 0, 0, 0, 0, -1] = 0
    assert judge.fingerprint(torch, again) != before


def test_fingerprint_tells_layouts_apart_and_reads_strided_slices():
    values = torch.arange(48, dtype=torch.uint8).view(6, 8)
    assert judge.fingerprint(torch, [values]) != judge.fingerprint(torch, [values.t().contiguous().t()])
    base = torch.arange(96, dtype=torch.uint8).view(12, 8)
    strided = base[::2]  # rows with gaps between them: read in logical order
    before = judge.fingerprint(torch, [strided])
    assert judge.fingerprint(torch, [base.clone()[::2]]) == before
    base[1, 1] += 1  # a gap's byte
    assert judge.fingerprint(torch, [strided]) == before
    base[2, 1] += 1  # a byte of the slice
    assert judge.fingerprint(torch, [strided]) != before
    # sums, then dimensions, shape, strides, offset: no bytes; 6 bytes as byte pairs; 8 as two words
    assert judge.fingerprint(torch, [torch.zeros(0, 4), torch.ones(3, dtype=torch.float16)]) == \
        [0, 0, 2, 0, 4, 4, 1, 0] + [0, 3 * 0x3C, 1, 3, 1, 0]
    assert judge.fingerprint(torch, [torch.ones(4, dtype=torch.float16)]) == [0x3C003C00, 0x3C003C00, 1, 4, 1, 0]


def test_fingerprint_reads_back_once():
    """One reduction a tensor into one result (no copy of a permuted scale tensor), one host read
    for the set (a sync on a GPU)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not func.is_view:
                self.names.append(func.__name__)
            return func(*args, **(kwargs or {}))

    mod = problem_module("group_gemm")
    tensors = judge.input_tensors(mod, mod.generate_input(m=[64, 32], n=[128, 128], k=[64, 64], g=2, seed=7))
    reads = []
    real_tolist = torch.Tensor.tolist
    try:
        torch.Tensor.tolist = lambda t: reads.append(t.numel()) or real_tolist(t)
        with Ops() as ops:
            judge.fingerprint(torch, tensors)
    finally:
        torch.Tensor.tolist = real_tolist
    assert reads == [2 * len(tensors)]
    assert ops.names == ["zeros.default"] + ["sum.IntList_out"] * len(tensors)


def test_a_block_that_reports_more_time_than_the_parent_saw_is_refused():
    from harness.isolation import _beyond_wall
    assert _beyond_wall({"times_us": [10.0, 12.0]}, 2, 100.0) is None
    assert "reported 2000 µs" in _beyond_wall({"times_us": [20.0]}, 100, 1000.0)  # one batch of 100 calls
    assert _beyond_wall({"times_us": [10.0], "warm_times_us": [50.0]}, 1, 55.0)  # --warm's calls ran in it too
    assert "not a list" in _beyond_wall({"times_us": "fast"}, 1, 55.0)


@pytest.mark.parametrize("problem", ["gemm", "group_gemm"])
def test_a_key_flips_only_e2m1_signs_and_the_same_key_gives_the_same_values(problem):
    """harness.judge.mask_pool_signs: the child masks its pool at once, the judge one set at a time; the bits must agree."""
    mod = problem_module(problem)
    params = ({"m": [64, 32], "n": [128, 128], "k": [64, 64], "g": 2} if problem == "group_gemm"
              else {k: v for k, v in PARAMS.items() if k != "seed"})

    def fresh():
        return mod.generate_input(**params, seed=7, dist="competition")

    def raw(data):
        return [t.reshape(-1).contiguous().view(torch.uint8).clone() for t in judge.tensors_of(data)]

    plain, masked, again, other = fresh(), fresh(), fresh(), fresh()
    judge.mask_pool_signs(torch, mod, [masked], 11)
    judge.mask_pool_signs(torch, mod, [again], 11)
    judge.mask_pool_signs(torch, mod, [other], 12)
    flipped = 0
    for p, m, a, o, t in zip(raw(plain), raw(masked), raw(again), raw(other), judge.tensors_of(plain)):
        assert torch.equal(m, a)
        diff = p ^ m
        if t.dtype == torch.float4_e2m1fn_x2:
            assert not (diff & 0x77).any()  # magnitudes as generated
            flipped += int((diff != 0).sum())
            assert not torch.equal(m, o)
        else:
            assert not diff.any()  # scales and outputs untouched
    assert flipped > 0
    judge.mask_pool_signs(torch, mod, [again], 11)
    assert all(torch.equal(p, a) for p, a in zip(raw(plain), raw(again)))
    pool = [fresh(), mod.generate_input(**params, seed=8, dist="competition")]
    alone = mod.generate_input(**params, seed=8, dist="competition")
    judge.mask_pool_signs(torch, mod, pool, 11)
    judge.mask_pool_signs(torch, mod, [alone], 11)
    assert all(torch.equal(x, y) for x, y in zip(raw(pool[0]), raw(masked)))
    assert all(torch.equal(x, y) for x, y in zip(raw(pool[1]), raw(alone)))


def test_a_block_is_judged_against_the_inputs_its_key_decided(shared):
    """An output of the inputs as generated (computed before the key was known) fails; the masked one passes."""
    mod = problem_module("gemm")
    sink = judge.ResultSink(torch, shared)
    data = _data(mod, 7)
    judge.mask_pool_signs(torch, mod, [data], 5)
    unmasked = _data(mod, 7)
    calls = judge.expected_calls({"cmd": "block", "round": 0, "method": "cold"}, ITEM, 1, 1, {}, key=5)
    assert calls[0]["key"] == 5
    right = judge.Judge(torch, mod, shared).check(ITEM, calls, [_entry(sink, mod, data, mod.ref_kernel(data))], "timed")
    assert right["status"] == "PASS"
    stale = _entry(sink, mod, data, mod.ref_kernel(unmasked))
    wrong = judge.Judge(torch, mod, shared).check(ITEM, calls, [stale], "timed")
    assert wrong["status"] == "FAIL" and "mismatch" in wrong["message"]


@pytest.mark.parametrize("kind", ["list", "tensor"])
def test_a_subclass_output_is_refused_without_running_its_code(shared, kind):
    """The copy for the judge runs after the timed region: a list or tensor subclass's own code
    (its __iter__, its __torch_function__) must not run there, and the verdict says why."""
    mod = problem_module("gemm")
    sink = judge.ResultSink(torch, shared)
    data = _data(mod, 7)
    ran = []

    class Outputs(list):
        def __iter__(self):
            ran.append("__iter__")
            return super().__iter__()

    class Output(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            ran.append(func)
            return super().__torch_function__(func, types, args, kwargs or {})

    result = Outputs([mod.ref_kernel(data)]) if kind == "list" else mod.ref_kernel(data).as_subclass(Output)
    ran.clear()
    entry = _entry(sink, mod, data, result)
    assert ran == [] and entry["parts"] is None
    reply = judge.Judge(torch, mod, shared).check(ITEM, [{"seed": 7, "label": "seed 7", "sub": 0}], [entry], "timed")
    assert reply["status"] == "FAIL" and "a subclass; return plain tensors" in reply["message"], reply


def test_the_mask_runs_no_torch_function_mode_a_submission_left_on():
    """A TorchFunctionMode sees tensor attribute reads too: mask_pool_signs must touch the pool only with
    modes off, or a mode left on by a submission runs its code between the refill and the mask."""
    from torch.overrides import TorchFunctionMode
    mod = problem_module("gemm")
    data = mod.generate_input(**{k: v for k, v in PARAMS.items() if k != "seed"}, seed=7, dist="competition")
    seen = []

    class Spy(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    with Spy():
        judge.mask_pool_signs(torch, mod, [data], 11)
    assert seen == []
