"""The tamper guard: everything the harness times and checks with is bound before a submission is
imported, and verified unchanged after every piece of submission code ran.

``Guard.snapshot`` records the identity of each watched attribute (and, for Python functions, of
its code object, defaults and closure, since those can be swapped in place), every module-level
name of the modules that time (``harness.timing``: its clock, its bound references, its
constants), and the interpreter's trace, profile and monitoring hooks. ``changes`` lists what
differs. The harness also times and checks through references taken at snapshot time, so a patch
is both caught and ineffective. Threads: the interpreter's list of threads that run Python
(``threading`` and ``_thread`` alike, not the runtime's native ones: see ``thread_ids``); a call
that leaves a new one running is TAMPERED (work deferred to a thread escapes every timer).

What it cannot see (docs/methodology.md): code that patches memory through ctypes, or a hook that
removes itself before the harness looks. Verdicts on outputs do not rest on it (``harness.judge``).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import signal
import sys
import threading
import types

_current_frames = sys._current_frames  # NOTE: bound at import, before any submission can replace it

# Attributes the timing and checking rely on: (module or class path, attribute names).
_WATCHED_ATTRS = {
    "time": ("perf_counter", "perf_counter_ns", "monotonic", "sleep"),
    "os": ("write", "read", "_exit"),
    "json": ("dumps", "loads"),
    "hmac": ("new", "compare_digest"),
    "torch": ("equal", "isnan", "isinf", "isfinite", "empty", "empty_like", "where", "argmax", "cat", "zeros",
              "randint", "frombuffer", "Generator", "use_deterministic_algorithms"),
    "torch.Tensor": ("copy_", "fill_", "zero_", "clone", "to", "float", "abs", "sum", "all", "item", "view",
                     "data_ptr", "untyped_storage", "__eq__", "__sub__"),
    "torch.cuda": ("synchronize", "current_stream", "current_device", "Event", "Stream", "graph", "CUDAGraph",
                   "is_available"),
    "torch.cuda.Event": ("record", "elapsed_time", "synchronize", "query", "wait"),
    "torch.cuda.CUDAGraph": ("replay", "capture_begin", "capture_end"),
    # the kernel method's records (harness.timing.kineto_reader reads them through references taken before)
    "torch._C._autograd._KinetoEvent": ("device_type", "name", "start_ns", "end_ns", "correlation_id",
                                        "linked_correlation_id"),
    "torch._C._autograd._ProfilerResult": ("events",),
    # the harness's own tensor work runs under DisableTorchFunction (harness_work); dispatch modes are counted
    "torch._C": ("DisableTorchFunction", "_len_torch_dispatch_stack"),
    # the compiled clock (harness.clock), where the worker bound one: its functions by name
    "_nvfp4_clock": ("bind", "draw_key", "time_batches"),
}
# Modules whose every function is watched (the harness's own timing, checking and channel code).
_WATCHED_MODULES = ("harness.timing", "harness.stats", "harness.channel", "harness.guard", "harness.worker",
                    "harness.clock", "harness.judge", "harness.telemetry", "reference.checking", "reference.exact", "reference.codec",
                    "reference.distributions")
# Modules whose every module-level name is watched, constants included: a replaced clock
# (``timing._now``), bound reference (``timing._bound``) or threshold (``timing.ESCAPE_REL``) is TAMPERED.
_WATCHED_NAMESPACES = ("harness.timing", "harness.judge", "harness.worker")
# The fields of ``harness.timing``'s bound references that the timing loop calls (the others are state).
_BOUND_FIELDS = ("torch", "Event", "record", "elapsed", "synchronize", "profile", "record_function", "sleep",
                 "flush_buffer", "kineto")
_MONITORING_TOOLS = range(6)  # sys.monitoring's tool ids (Python 3.12+)
_SIGNALS = tuple(signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP})
_TIMERS = ((signal.ITIMER_REAL, "ITIMER_REAL"), (signal.ITIMER_VIRTUAL, "ITIMER_VIRTUAL"), (signal.ITIMER_PROF, "ITIMER_PROF"))
# Classes whose every callable is watched, by identity: the harness's own tensor work calls tensor
# methods by name at call time (reshape, detach, view, sum ...), and a replaced one would run the
# submission's code inside that work (``harness_work`` stops modes, not patches). New callable entries
# count too (``torch.Tensor.reshape = f`` adds one that shadows TensorBase's). The torch namespace is
# watched by name above: importing torch._dynamo, which honest calls may do, rewraps torch.manual_seed.
_WATCHED_CALLABLES = ("torch.Tensor", "torch._C.TensorBase")


def _resolve(path: str):
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(path)


def _fingerprint(obj) -> tuple:
    fn = obj.__func__ if isinstance(obj, (types.MethodType, classmethod, staticmethod)) else obj
    if isinstance(fn, types.FunctionType):
        return (id(fn), id(fn.__code__), id(fn.__defaults__), id(fn.__kwdefaults__),
                tuple(id(c.cell_contents) if _cell_set(c) else None for c in (fn.__closure__ or ())))
    return (id(obj),)


def _is_callable_entry(value) -> bool:
    """A namespace entry that runs code when used: a function, builtin, method or descriptor."""
    return callable(value) or hasattr(value, "__get__")  # descriptors: property, staticmethod, classmethod ...


def _cell_set(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


class Guard:
    def __init__(self):
        self._fingerprints: dict[str, tuple] = {}
        self._keep: list = []  # holds the watched objects alive, so ids stay unique
        self._threads: set[int] = set()
        self._hooks: dict[str, int] = {}
        self._callables: list[tuple] = []  # per _WATCHED_CALLABLES entry: path, owner, names, values, prints, keys

    @classmethod
    def snapshot(cls, extra_modules: tuple[str, ...] = ()) -> "Guard":
        guard = cls()
        for owner_path, names in _WATCHED_ATTRS.items():
            try:
                owner = _resolve(owner_path)
            except (ImportError, AttributeError):
                continue
            for name in names:
                if hasattr(owner, name):
                    guard._watch(f"{owner_path}.{name}", owner.__dict__.get(name, getattr(owner, name))
                                 if isinstance(owner, type) else getattr(owner, name))
        for mod_path in (*_WATCHED_MODULES, *extra_modules):
            try:
                mod = importlib.import_module(mod_path)
            except ImportError:
                continue
            for name, value in vars(mod).items():
                if isinstance(value, (types.FunctionType, type)) and getattr(value, "__module__", None) == mod.__name__:
                    guard._watch(f"{mod_path}.{name}", value)
                    if isinstance(value, type):
                        for attr, member in vars(value).items():
                            if isinstance(member, (types.FunctionType, staticmethod, classmethod)):
                                guard._watch(f"{mod_path}.{name}.{attr}", member)
        for mod_path in _WATCHED_NAMESPACES:
            try:
                mod = importlib.import_module(mod_path)
            except ImportError:
                continue
            for name, value in vars(mod).items():
                if not name.startswith("__"):
                    guard._watch(f"{mod_path}.{name}", value)
        bound = getattr(sys.modules.get("harness.timing"), "_bound", None)
        if bound is not None:
            for name in _BOUND_FIELDS:
                guard._watch(f"harness.timing._bound.{name}", getattr(bound, name))
        for path in _WATCHED_CALLABLES:
            try:
                owner = _resolve(path)
            except (ImportError, AttributeError):
                continue
            namespace = dict(vars(owner))
            names = [name for name, value in namespace.items() if _is_callable_entry(value)]
            values = [namespace[name] for name in names]
            prints = [_fingerprint(value) if isinstance(value, types.FunctionType) else None for value in values]
            guard._callables.append((path, owner, names, values, prints, frozenset(namespace)))
        guard._hooks = hooks()
        guard._threads = thread_ids()
        return guard

    def _watch(self, key: str, obj) -> None:
        self._fingerprints[key] = _fingerprint(obj)
        self._keep.append(obj)

    def changes(self) -> list[str]:
        """Watched names whose object (or function code/defaults/closure) is no longer the bound
        one, and interpreter hooks set or changed since the snapshot."""
        now_hooks = hooks()
        changed = [name for name in sorted(set(now_hooks) | set(self._hooks)) if now_hooks.get(name) != self._hooks.get(name)]
        for key, fp in self._fingerprints.items():
            owner_path, _, name = key.rpartition(".")
            try:
                owner = _resolve(owner_path)
                now = owner.__dict__.get(name, getattr(owner, name)) if isinstance(owner, type) else getattr(owner, name)
            except (ImportError, AttributeError):
                changed.append(key)
                continue
            if _fingerprint(now) != fp:
                changed.append(key)
        for path, owner, names, values, prints, keys in self._callables:
            now_namespace = vars(owner)
            for name, value, fp in zip(names, values, prints):
                now = now_namespace.get(name)
                if now is not value or (fp is not None and _fingerprint(now) != fp):
                    changed.append(f"{path}.{name}")
            if isinstance(owner, type) and len(now_namespace) != len(keys):
                changed += [f"{path}.{name}" for name in sorted(set(now_namespace) - keys)
                            if _is_callable_entry(now_namespace[name])]
        return changed

    def thread_ids(self) -> set[int]:
        """The process's threads now (to pass as ``since`` to :meth:`verdict`)."""
        return thread_ids()

    def new_threads(self, since: set[int] | None = None) -> list[str]:
        """Names of threads alive now that were not in ``since`` (default: the accepted baseline)."""
        before = self._threads if since is None else since
        return [_thread_name(tid) for tid in sorted(thread_ids() - before)]

    def accept_threads(self, tids: set[int] | None = None) -> None:
        """Threads the harness accepts: those alive now (after import: a compile pool, say), or ``tids`` added."""
        self._threads = thread_ids() if tids is None else self._threads | tids

    def verdict(self, since: set[int] | None = None) -> tuple[str, str] | None:
        """(status, one line) when the submission tampered with the harness or left a thread
        running that was not running at ``since`` (default: after import): TAMPERED; else None."""
        changed = self.changes()
        if changed:
            hooked = set(hooks()) | set(self._hooks)
            left_on = [name for name in changed if name in hooked]
            replaced = [name for name in changed if name not in hooked]
            said = ([f"replaced {_listed(replaced)} (bound before it was imported)"] if replaced else []) + \
                   ([f"left {_listed(left_on)} on (it would run inside the harness's own work)"] if left_on else [])
            return "TAMPERED", f"TAMPERED: the submission {' and '.join(said)}"
        threads = self.new_threads(since)
        if threads:
            return "TAMPERED", (f"TAMPERED: custom_kernel left a thread running after it returned "
                                f"({', '.join(threads[:3])}): work deferred to a thread escapes every timer")
        return None


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:  # a real-time signal between SIGRTMIN and SIGRTMAX has no name of its own
        return f"signal {signum}"


def _listed(names: list[str]) -> str:
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def harness_work(torch):
    """A context for the harness's own tensor work in a child (copies of outputs for the judge,
    fingerprints, flushes, refills, masks): torch-function modes and subclass handlers off, so none a
    submission left on runs its code there.
    NOTE: a TorchFunctionMode entered at import that computed each call's output inside the harness's
    copy of it, after the timed region, read 2.6 µs a call where the honest v0 takes 55 ms (gemm, CPU,
    tests/adversarial/computes_in_capture.py). Modes stay on inside the submission's own calls
    (``torch.set_default_device`` is one). Dispatch modes, which this does not stop, are a hook
    (``hooks``): one left on is TAMPERED. A torch without the switch (a test's stand-in) gets none:
    removing it from a real one is a change the guard reports."""
    switch = getattr(getattr(torch, "_C", None), "DisableTorchFunction", None)
    return switch() if switch is not None else contextlib.nullcontext()


def hooks() -> dict[str, int]:
    """The identity of every trace, profile and monitoring hook set now, by name: a hook runs code
    at every call and return of the harness's own functions (and can rewrite what they return);
    and how many torch dispatch modes are on (each sees every tensor operation, the harness's too)."""
    found = {"sys.settrace": sys.gettrace(), "sys.setprofile": sys.getprofile(),
             "threading.settrace": getattr(threading, "_trace_hook", None),
             "threading.setprofile": getattr(threading, "_profile_hook", None)}
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        for tool in _MONITORING_TOOLS:
            found[f"sys.monitoring tool {tool}"] = monitoring.get_tool(tool)
    out = {name: id(hook) for name, hook in found.items() if hook is not None}
    # NOTE: each of these runs code at moments the harness does not choose (a collection, a signal), its
    # own work after the timed region included
    if gc.callbacks:
        out["gc.callbacks"] = hash(tuple(map(id, gc.callbacks)))
    for signum in _SIGNALS:
        handler = signal.getsignal(signum)
        if callable(handler):
            out[f"a handler of {_signal_name(signum)}"] = id(handler)
    for timer, name in _TIMERS:
        if signal.getitimer(timer) != (0.0, 0.0):
            out[f"an interval timer ({name})"] = 1
    torch = sys.modules.get("torch")
    depth = getattr(getattr(torch, "_C", None), "_len_torch_dispatch_stack", None)
    if depth is not None and depth() > 0:
        out["a torch dispatch mode"] = depth()
    return out


def thread_ids() -> set[int]:
    """The identities of this process's threads that run Python (``sys._current_frames``: one
    started with ``threading`` or ``_thread`` is there, whether it holds the GIL or waits in C).
    NOTE: native threads without a Python thread state are not counted: CUDA's event handler,
    CUPTI's and kineto's buffers, OpenMP's pool and the driver's own start lazily, on a first
    profiler session, a first parallel CPU op or a first graph, inside an honest call, so counting
    them would call honest runs TAMPERED on a GPU. Work a native thread defers past a call's return
    is caught where the verdict is made: each output is copied at the end of its timed region
    (harness.judge), and device work outside the region is the escape check's (harness.timing)."""
    return set(_current_frames())


def _thread_name(ident: int) -> str:
    for t in threading.enumerate():
        if t.ident == ident:
            return t.name
    return f"a Python thread started with _thread ({ident})"
