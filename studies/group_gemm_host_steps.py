"""Where group_gemm v47's host path goes on a cache hit, step by step, on a CPU (no GPU; issue 46).

Run from the repository root: `python studies/group_gemm_host_steps.py [--calls N] [--versions v47 v50] [--no-steps]`;
`--checks` instead prints each version's message for each bad input of v47's table and when its cache rebuilds.

Two parts, each on CPU tensors made by reference.group_gemm.generate_input(device="cpu") for
benchmark shapes A (g = 8) and D (g = 2): GPU MODE's layouts and strides (3-D a, b, c; 6-D permuted
scales), 4 input sets rotating as `nvfp4 probe host` rotates them.

1. Steps: a C++ METH_O entry that does v47's hit path (group_gemm_run) up to a chosen step and
   returns: 0 nothing (the Python call of a METH_O builtin), 1 the nested lists and tuples read in
   place (items_of) with their size checks, 2 + THPVariable_Check / Unpack of the 5 tensors a group,
   3 + layout() / has_storage(), 4 + append_key (data_ptr, device, dtype, rank, sizes, strides) and
   the hash, 5 + find_plan's compare of the whole key against the stored plan's, 6 + the output list.
   The code of each step is v47's, copied here (a study, not the product's code).
2. Whole paths: each named version's CPP_SRC taken from its file, its CUDA calls faked (the device
   0, the stream null, the plan built, launched and freed by counters, tensors accepted on the CPU,
   the workspace a CPU tensor), called as the harness calls custom_kernel: through a Python function
   `def custom_kernel(data): return f(data)` and, for comparison, the builtin called directly.

Each figure is the median of N calls' perf_counter_ns in three cache states: warm (calls back to
back), L2 flushed (4 MB written before each call: the private L2 gone, L3 kept) and cold (64 MB
written before each call: L3 too). The flush is outside the timed region.
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, os.getcwd())
import torch
from torch.utils.cpp_extension import load_inline

from reference import group_gemm as problem

SHAPES = {
    "A g8": dict(m=[80, 176, 128, 72, 64, 248, 96, 160], n=[4096] * 8, k=[7168] * 8, g=8),
    "D g2": dict(m=[128, 384], n=[4096] * 2, k=[1536] * 2, g=2),
}
POOL = 4
FLUSH_BYTES = {"warm": 0, "L2 flushed": 4 << 20, "cold": 64 << 20}

STEP_NAMES = ["METH_O call, nothing done", "+ lists/tuples read in place (items_of)", "+ THPVariable_Check/Unpack",
              "+ layout()/has_storage()", "+ append_key and hash", "+ find_plan (whole-key compare, hit)",
              "+ output list"]

STEPS_SRC = r"""
#include <Python.h>
#include <vector>

static int upto = 6;
void set_upto(int level) { upto = level; }

struct Items { PyObject** item; Py_ssize_t size; };
static Items items_of(PyObject* seq, std::vector<py::object>& owners) {
    if (!PyList_Check(seq) && !PyTuple_Check(seq)) {
        PyObject* const fast = PySequence_Fast(seq, "not a sequence");
        if (fast == nullptr) throw py::error_already_set();
        owners.push_back(py::reinterpret_steal<py::object>(fast));
        seq = fast;
    }
    return {PySequence_Fast_ITEMS(seq), PySequence_Fast_GET_SIZE(seq)};
}
static int64_t append_key(std::vector<int64_t>& key, const at::Tensor& t) {
    const int64_t address = reinterpret_cast<int64_t>(t.data_ptr());
    key.push_back(address);
    const c10::Device device = t.device();
    key.push_back(static_cast<int64_t>(t.scalar_type()) | (static_cast<int64_t>(device.type()) << 8) |
                  (static_cast<int64_t>(device.index() + 1) << 16) | (static_cast<int64_t>(t.dim()) << 32));
    for (const int64_t s : t.sizes()) key.push_back(s);
    for (const int64_t s : t.strides()) key.push_back(s);
    return address;
}
static inline uint64_t hash_step(uint64_t h, uint64_t word) {
    h = (h ^ word) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 32);
}
struct Stored { std::vector<int64_t> key; uint64_t hash; };
static std::vector<Stored> stored;  // one per input set seen (at most a handful here)
static int find(const std::vector<int64_t>& key, uint64_t hash) {
    for (size_t i = 0; i < stored.size(); ++i)
        if (stored[i].hash == hash && stored[i].key == key) return static_cast<int>(i);
    return -1;
}

static PyObject* run(PyObject* data) {
    if (upto == 0) Py_RETURN_NONE;
    std::vector<py::object> owners;
    const Items top = items_of(data, owners);
    if (top.size != 4) throw std::runtime_error("4 items");
    const Items abc = items_of(top.item[0], owners), sf = items_of(top.item[1], owners), sf_perm = items_of(top.item[2], owners);
    const Py_ssize_t num_groups = abc.size;
    if (num_groups < 1 || sf.size != num_groups || sf_perm.size != num_groups) throw std::runtime_error("groups");
    static std::vector<int64_t> key;
    static std::vector<const at::Tensor*> tensors;
    static std::vector<PyObject*> outputs;
    key.clear(); tensors.clear(); outputs.clear();
    key.push_back(num_groups);
    key.push_back(0);
    uint64_t hash = hash_step(static_cast<uint64_t>(num_groups), 0);
    for (Py_ssize_t g = 0; g < num_groups; ++g) {
        PyObject* const group[3] = {abc.item[g], sf.item[g], sf_perm.item[g]};
        const Py_ssize_t expected[3] = {3, 2, 2};
        Items items[3];
        for (int i = 0; i < 3; ++i) {
            items[i] = items_of(group[i], owners);
            if (items[i].size != expected[i]) throw std::runtime_error("entry");
        }
        PyObject* const chosen[5] = {items[0].item[0], items[0].item[1], items[0].item[2], items[2].item[0], items[2].item[1]};
        if (upto >= 2) {
            for (int i = 0; i < 5; ++i) {
                if (!THPVariable_Check(chosen[i])) throw std::runtime_error("tensor");
                const at::Tensor& t = THPVariable_Unpack(chosen[i]);
                if (upto >= 3 && (t.layout() != c10::kStrided || !t.has_storage())) throw std::runtime_error("dense");
                if (upto >= 4) hash = hash_step(hash, static_cast<uint64_t>(append_key(key, t)));
                tensors.push_back(&t);
            }
        }
        outputs.push_back(chosen[2]);
    }
    if (upto >= 5) {
        if (find(key, hash) < 0) stored.push_back({key, hash});
    }
    if (upto < 6) Py_RETURN_NONE;
    PyObject* const list = PyList_New(num_groups);
    if (list == nullptr) throw py::error_already_set();
    for (Py_ssize_t g = 0; g < num_groups; ++g) { Py_INCREF(outputs[g]); PyList_SET_ITEM(list, g, outputs[g]); }
    return list;
}
static PyObject* call(PyObject*, PyObject* data) {
    try { return run(data); } catch (py::error_already_set& e) { e.restore(); }
    catch (const std::exception& e) { PyErr_SetString(PyExc_RuntimeError, e.what()); }
    return nullptr;
}
static PyMethodDef method = {"steps", call, METH_O, "v47's hit path up to a step"};
py::object steps_function() { return py::reinterpret_steal<py::object>(PyCFunction_New(&method, nullptr)); }
"""

# The CUDA-side declarations a version's CPP_SRC calls, faked for a CPU build (v46's study recipe).
FAKE_CUDA = r"""
#include <torch/extension.h>
typedef struct CUstream_st* cudaStream_t;
namespace fake_cuda {
struct Stream { cudaStream_t stream() const { return nullptr; } };
inline int current_device() { return 0; }
inline Stream getCurrentCUDAStream(int) { return {}; }
}
static long fake_builds = 0, fake_launches = 0;
static inline const char* cudaGetErrorString(int) { return "fake CUDA error"; }
typedef int cudaError_t;
void* group_gemm_build_plan(const int64_t*, int, int64_t* workspace_bytes, int* err) {
    ++fake_builds; *err = 0; *workspace_bytes = 256; return new int(0);
}
void group_gemm_free_plan(void* plan) { delete static_cast<int*>(plan); }
int group_gemm_launch(void*, void*, int64_t) { ++fake_launches; return 0; }
long fake_build_count() { return fake_builds; }
long fake_launch_count() { return fake_launches; }
"""


def cpu_build_of(version: str):
    """``version``'s CPP_SRC compiled for the CPU with the CUDA calls faked; its entry and counters."""
    path = Path("submissions/group_gemm") / f"submission_{version}.py"
    tree = ast.parse(path.read_text())
    src = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
               and any(isinstance(t, ast.Name) and t.id == "CPP_SRC" for t in node.targets))
    patches = [
        ("#include <c10/cuda/CUDAStream.h>", FAKE_CUDA),
        (re.compile(r"^(void\* group_gemm_build_plan|void group_gemm_free_plan|int group_gemm_launch)\(.*\);$", re.M), ""),
        ("c10::cuda::current_device()", "fake_cuda::current_device()"),
        ("c10::cuda::getCurrentCUDAStream(", "fake_cuda::getCurrentCUDAStream("),
        (".device(at::kCUDA, device)", ".device(at::kCPU)"),
        ("!t[i]->is_cuda() || t[i]->get_device() != device", "false"),
    ]
    for old, new in patches:
        before = src
        src = old.sub(new, src) if isinstance(old, re.Pattern) else src.replace(old, new)
        if src == before:
            raise SystemExit(f"{version}: the study's patch {old!r} matches nothing: its anchors drifted")
    name = f"host_steps_{version}_cpu"
    functions = ["group_gemm_function", "fake_build_count", "fake_launch_count"]
    module = load_inline(name=name, cpp_sources=src, functions=functions, extra_cflags=["-O3"], verbose=False)
    return module


def timed(fn, pool: list, calls: int, flush: torch.Tensor | None) -> float:
    """Median ns of ``calls`` calls of fn over ``pool`` (rotating), ``flush`` written before each."""
    out = []
    for i in range(calls):
        data = pool[i % len(pool)]
        if flush is not None:
            flush.add_(1)
        t0 = time.perf_counter_ns()
        fn(data)
        out.append(time.perf_counter_ns() - t0)
    return statistics.median(out) / 1e3


def _with_group0(data, part: int, slot: int | None, value):
    """``data`` with group 0's entry of ``part`` (slot ``slot`` of it, or the whole entry) replaced."""
    parts = [list(p) for p in data]
    if slot is None:
        parts[part][0] = value
    else:
        entry = list(parts[part][0])
        entry[slot] = value
        parts[part][0] = tuple(entry)
    return tuple(parts)


def _misaligned_copy(t: torch.Tensor) -> torch.Tensor:
    """``t``'s sizes and strides, one element past a fresh buffer's start (not 16-byte aligned)."""
    buf = torch.zeros(t.untyped_storage().nbytes() + 16, dtype=torch.uint8).view(t.dtype)
    return torch.as_strided(buf, t.size(), t.stride(), storage_offset=1)


def bad_inputs(data) -> list[tuple[str, object]]:
    """v47's bad-input table, row by row, as CPU data (the device rows need a GPU)."""
    (a, b, c), _, (sfa, sfb) = data[0][0], data[1][0], data[2][0]
    return [
        ("data not a sequence", 5),
        ("data not 4 items", tuple(data)[:3]),
        ("abc not a sequence", (5,) + tuple(data)[1:]),
        ("a group's entry not (a, b, c)", _with_group0(data, 0, None, (a, b))),
        ("b not a tensor", _with_group0(data, 0, 1, "b")),
        ("c sparse", _with_group0(data, 0, 2, c.to_sparse())),
        ("a not 3-D", _with_group0(data, 0, 0, a[:, :, 0])),
        ("c float32", _with_group0(data, 0, 2, c.float())),
        ("permuted sfa made .contiguous()", _with_group0(data, 2, 0, sfa.contiguous())),
        ("permuted sfb not 16-byte aligned", _with_group0(data, 2, 1, _misaligned_copy(sfb))),
        ("group 1's permuted sfa not a tensor", _with_group1(data, 2, 0, 3.0)),
        ("group 1's c sparse", _with_group1(data, 0, 2, data[0][1][2].to_sparse())),
    ]


def cache_cases(data) -> list[tuple[str, object, bool]]:
    """(what changed, the call's data, whether a plan must be built): run in this order on one cache."""
    (a, b, c) = data[0][1]
    moved_b = b.clone()  # another buffer, same sizes and strides
    restrided_c = torch.as_strided(c, c.size(), (c.stride(0), c.stride(1), c.stride(2) + 1))  # L's stride only
    return [
        ("first call", data, True),
        ("same data again", data, False),
        ("group 1's b replaced by a copy elsewhere", _with_group1(data, 0, 1, moved_b), True),
        ("the original again", data, False),
        ("group 1's c the same bytes by another stride", _with_group1(data, 0, 2, restrided_c), True),
        ("group 1's b .set_() to the copy's storage (same object)", "set_", True),
        ("group 1's b's storage resized in place (its data pointer moves)", "resize", True),
    ]


def _with_group1(data, part: int, slot: int, value):
    parts = [list(p) for p in data]
    entry = list(parts[part][1])
    entry[slot] = value
    parts[part][1] = tuple(entry)
    return tuple(parts)


def checks(versions: list[str]) -> int:
    """Each bad input's message and each cache case's build count, per version, as a table."""
    results = {}
    for version in versions:
        module = cpu_build_of(version)
        fn = module.group_gemm_function()
        data = problem.generate_input(**SHAPES["D g2"], seed=7, device="cpu")
        fn(data)
        rows = []
        for name, bad in bad_inputs(data):
            try:
                fn(bad)
                rows.append((name, "accepted"))
            except Exception as exc:  # noqa: BLE001 - the message is the finding
                rows.append((name, f"{type(exc).__name__}: {exc}"))
        data = problem.generate_input(**SHAPES["A g8"], seed=8, device="cpu")
        b1 = data[0][1][1]
        for name, call_data, must_build in cache_cases(data):
            if call_data == "set_":
                b1.set_(b1.clone().untyped_storage(), 0, b1.size(), b1.stride())
                call_data = data
            elif call_data == "resize":
                b1.untyped_storage().resize_(b1.untyped_storage().nbytes() + 4096)
                call_data = data
            before = module.fake_build_count()
            out = fn(call_data)
            built = module.fake_build_count() - before
            ok = (built == 1) == must_build and [id(t) for t in out] == [id(e[2]) for e in call_data[0]]
            rows.append((f"cache: {name}", f"built {built}{'' if ok else ' (WRONG)'}"))
        results[version] = rows
    print("| case | " + " | ".join(versions) + " |")
    print("|---" * (1 + len(versions)) + "|")
    for i, (name, _) in enumerate(results[versions[0]]):
        print(f"| {name} | " + " | ".join(results[v][i][1] for v in versions) + " |")
    same = all(results[v] == results[versions[0]] for v in versions)
    print("identical across versions" if same else "THE VERSIONS DIFFER")
    return 0 if same else 1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--versions", nargs="*", default=["v47"])
    ap.add_argument("--no-steps", action="store_true", help="the whole paths only")
    ap.add_argument("--checks", action="store_true",
                    help="instead of timing: each version's message for each bad input, and when its cache rebuilds")
    args = ap.parse_args()
    torch.set_num_threads(1)
    pools = {label: [problem.generate_input(**p, seed=1111 + i, device="cpu") for i in range(POOL)]
             for label, p in SHAPES.items()}
    flushes = {mode: (torch.zeros(n // 4, dtype=torch.int32) if n else None) for mode, n in FLUSH_BYTES.items()}

    if args.checks:
        return checks(args.versions)
    if not args.no_steps:
        steps_table(pools, flushes, args.calls)
    whole_paths_table(pools, flushes, args.calls, args.versions)
    return 0


def steps_table(pools: dict, flushes: dict, calls: int) -> None:
    steps = load_inline(name="host_steps_v47_mirror", cpp_sources=STEPS_SRC, functions=["steps_function", "set_upto"],
                        extra_cflags=["-O3"], verbose=False)
    entry = steps.steps_function()
    print("| step (v47's hit path, µs a call, median) | " + " | ".join(f"{s} {m}" for s in SHAPES for m in FLUSH_BYTES) + " |")
    print("|---" * (1 + len(SHAPES) * len(FLUSH_BYTES)) + "|")
    for level, name in enumerate(STEP_NAMES):
        steps.set_upto(level)
        for pool in pools.values():  # fills the stored keys before timing
            for data in pool:
                entry(data)
        row = [timed(entry, pool, calls, flushes[m]) for pool in pools.values() for m in FLUSH_BYTES]
        print(f"| {level} {name} | " + " | ".join(f"{x:.2f}" for x in row) + " |")



def whole_paths_table(pools: dict, flushes: dict, calls: int, versions: list[str], rounds: int = 5) -> None:
    """Each version's whole path, the versions interleaved round by round (this CPU is shared: drift
    and neighbours' load fall on every version alike); the median of the rounds' medians."""
    entries = {}
    for version in versions:
        module = cpu_build_of(version)
        builtin = module.group_gemm_function()

        def custom_kernel(data, _f=builtin):
            return _f(data)

        for pool in pools.values():
            for data in pool:
                out = custom_kernel(data)
                assert [id(t) for t in out] == [id(c) for _, _, c in data[0]], "the outputs are not the c tensors"
        entries[f"{version} through a Python custom_kernel"] = (module, custom_kernel)
        entries[f"{version} builtin called directly"] = (module, builtin)
    builds = {label: module.fake_build_count() for label, (module, _) in entries.items()}
    figures = {label: [] for label in entries}
    for pool in pools.values():
        for mode in FLUSH_BYTES:
            per_round = {label: [] for label in entries}
            for _ in range(rounds):
                for label, (_, fn) in entries.items():
                    per_round[label].append(timed(fn, pool, calls, flushes[mode]))
            for label in entries:
                figures[label].append(statistics.median(per_round[label]))
    for label, (module, _) in entries.items():
        if module.fake_build_count() != builds[label]:
            raise SystemExit(f"{label}: a timed call built a plan (a miss): the cache is not hitting")
    print()
    print("| whole path (CUDA faked, µs a call) | " + " | ".join(f"{s} {m}" for s in SHAPES for m in FLUSH_BYTES) + " |")
    print("|---" * (1 + len(SHAPES) * len(FLUSH_BYTES)) + "|")
    for label, row in figures.items():
        print(f"| {label} | " + " | ".join(f"{x:.2f}" for x in row) + " |")


def _with_group0(data, part: int, slot: int | None, value):
    """``data`` with group 0's entry of ``part`` (slot ``slot`` of it, or the whole entry) replaced."""
    parts = [list(p) for p in data]
    if slot is None:
        parts[part][0] = value
    else:
        entry = list(parts[part][0])
        entry[slot] = value
        parts[part][0] = tuple(entry)
    return tuple(parts)


def _misaligned_copy(t: torch.Tensor) -> torch.Tensor:
    """``t``'s sizes and strides, one element past a fresh buffer's start (not 16-byte aligned)."""
    buf = torch.zeros(t.untyped_storage().nbytes() + 16, dtype=torch.uint8).view(t.dtype)
    return torch.as_strided(buf, t.size(), t.stride(), storage_offset=1)


def bad_inputs(data) -> list[tuple[str, object]]:
    """v47's bad-input table, row by row, as CPU data (the device rows need a GPU)."""
    (a, b, c), _, (sfa, sfb) = data[0][0], data[1][0], data[2][0]
    return [
        ("data not a sequence", 5),
        ("data not 4 items", tuple(data)[:3]),
        ("abc not a sequence", (5,) + tuple(data)[1:]),
        ("a group's entry not (a, b, c)", _with_group0(data, 0, None, (a, b))),
        ("b not a tensor", _with_group0(data, 0, 1, "b")),
        ("c sparse", _with_group0(data, 0, 2, c.to_sparse())),
        ("a not 3-D", _with_group0(data, 0, 0, a[:, :, 0])),
        ("c float32", _with_group0(data, 0, 2, c.float())),
        ("permuted sfa made .contiguous()", _with_group0(data, 2, 0, sfa.contiguous())),
        ("permuted sfb not 16-byte aligned", _with_group0(data, 2, 1, _misaligned_copy(sfb))),
        ("group 1's permuted sfa not a tensor", _with_group1(data, 2, 0, 3.0)),
        ("group 1's c sparse", _with_group1(data, 0, 2, data[0][1][2].to_sparse())),
    ]


def cache_cases(data) -> list[tuple[str, object, bool]]:
    """(what changed, the call's data, whether a plan must be built): run in this order on one cache."""
    (a, b, c) = data[0][1]
    moved_b = b.clone()  # another buffer, same sizes and strides
    restrided_c = torch.as_strided(c, c.size(), (c.stride(0), c.stride(1), c.stride(2) + 1))  # L's stride only
    return [
        ("first call", data, True),
        ("same data again", data, False),
        ("group 1's b replaced by a copy elsewhere", _with_group1(data, 0, 1, moved_b), True),
        ("the original again", data, False),
        ("group 1's c the same bytes by another stride", _with_group1(data, 0, 2, restrided_c), True),
        ("group 1's b .set_() to the copy's storage (same object)", "set_", True),
        ("group 1's b's storage resized in place (its data pointer moves)", "resize", True),
    ]


def _with_group1(data, part: int, slot: int, value):
    parts = [list(p) for p in data]
    entry = list(parts[part][1])
    entry[slot] = value
    parts[part][1] = tuple(entry)
    return tuple(parts)


def checks(versions: list[str]) -> int:
    """Each bad input's message and each cache case's build count, per version, as a table."""
    results = {}
    for version in versions:
        module = cpu_build_of(version)
        fn = module.group_gemm_function()
        data = problem.generate_input(**SHAPES["D g2"], seed=7, device="cpu")
        fn(data)
        rows = []
        for name, bad in bad_inputs(data):
            try:
                fn(bad)
                rows.append((name, "accepted"))
            except Exception as exc:  # noqa: BLE001 - the message is the finding
                rows.append((name, f"{type(exc).__name__}: {exc}"))
        data = problem.generate_input(**SHAPES["A g8"], seed=8, device="cpu")
        b1 = data[0][1][1]
        for name, call_data, must_build in cache_cases(data):
            if call_data == "set_":
                b1.set_(b1.clone().untyped_storage(), 0, b1.size(), b1.stride())
                call_data = data
            elif call_data == "resize":
                b1.untyped_storage().resize_(b1.untyped_storage().nbytes() + 4096)
                call_data = data
            before = module.fake_build_count()
            out = fn(call_data)
            built = module.fake_build_count() - before
            ok = (built == 1) == must_build and [id(t) for t in out] == [id(e[2]) for e in call_data[0]]
            rows.append((f"cache: {name}", f"built {built}{'' if ok else ' (WRONG)'}"))
        results[version] = rows
    print("| case | " + " | ".join(versions) + " |")
    print("|---" * (1 + len(versions)) + "|")
    for i, (name, _) in enumerate(results[versions[0]]):
        print(f"| {name} | " + " | ".join(results[v][i][1] for v in versions) + " |")
    same = all(results[v] == results[versions[0]] for v in versions)
    print("identical across versions" if same else "THE VERSIONS DIFFER")
    return 0 if same else 1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--versions", nargs="*", default=["v47"])
    ap.add_argument("--no-steps", action="store_true", help="the whole paths only")
    ap.add_argument("--checks", action="store_true",
                    help="instead of timing: each version's message for each bad input, and when its cache rebuilds")
    args = ap.parse_args()
    torch.set_num_threads(1)
    pools = {label: [problem.generate_input(**p, seed=1111 + i, device="cpu") for i in range(POOL)]
             for label, p in SHAPES.items()}
    flushes = {mode: (torch.zeros(n // 4, dtype=torch.int32) if n else None) for mode, n in FLUSH_BYTES.items()}

    if args.checks:
        return checks(args.versions)
    if not args.no_steps:
        steps_table(pools, flushes, args.calls)
    whole_paths_table(pools, flushes, args.calls, args.versions)
    return 0


def steps_table(pools: dict, flushes: dict, calls: int) -> None:
    steps = load_inline(name="host_steps_v47_mirror", cpp_sources=STEPS_SRC, functions=["steps_function", "set_upto"],
                        extra_cflags=["-O3"], verbose=False)
    entry = steps.steps_function()
    print("| step (v47's hit path, µs a call, median) | " + " | ".join(f"{s} {m}" for s in SHAPES for m in FLUSH_BYTES) + " |")
    print("|---" * (1 + len(SHAPES) * len(FLUSH_BYTES)) + "|")
    for level, name in enumerate(STEP_NAMES):
        steps.set_upto(level)
        for pool in pools.values():  # fills the stored keys before timing
            for data in pool:
                entry(data)
        row = [timed(entry, pool, calls, flushes[m]) for pool in pools.values() for m in FLUSH_BYTES]
        print(f"| {level} {name} | " + " | ".join(f"{x:.2f}" for x in row) + " |")



def whole_paths_table(pools: dict, flushes: dict, calls: int, versions: list[str]) -> None:
    print()
    print("| whole path (CUDA faked, µs a call) | " + " | ".join(f"{s} {m}" for s in SHAPES for m in FLUSH_BYTES) + " |")
    print("|---" * (1 + len(SHAPES) * len(FLUSH_BYTES)) + "|")
    for version in versions:
        module = cpu_build_of(version)
        builtin = module.group_gemm_function()

        def custom_kernel(data, _f=builtin):
            return _f(data)

        for pool in pools.values():
            for data in pool:
                out = custom_kernel(data)
                assert [id(t) for t in out] == [id(c) for _, _, c in data[0]], "the outputs are not the c tensors"
        builds = module.fake_build_count()
        for label, fn in ((f"{version} through a Python custom_kernel", custom_kernel), (f"{version} builtin called directly", builtin)):
            row = [timed(fn, pool, calls, flushes[m]) for pool in pools.values() for m in FLUSH_BYTES]
            print(f"| {label} | " + " | ".join(f"{x:.2f}" for x in row) + " |")
        if module.fake_build_count() != builds:
            raise SystemExit(f"{version}: a timed call built a plan (a miss): the cache is not hitting")


if __name__ == "__main__":
    sys.exit(main())
