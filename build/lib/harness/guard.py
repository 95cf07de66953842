"""The tamper guard: everything the harness times and checks with is bound before a submission is
imported, and verified unchanged after every piece of submission code ran.

``Guard.snapshot`` records the identity of each watched attribute (and, for Python functions, of
its code object, defaults and closure, since those can be swapped in place). ``changes`` lists
what differs. The harness also times and checks through references taken at snapshot time, so a
patch is both caught and ineffective. Threads: ``Guard`` remembers the live threads after import;
a call that leaves a new one running is reported (work deferred to a thread escapes every timer).
"""

from __future__ import annotations

import importlib
import threading
import types

# Attributes the timing and checking rely on: (module or class path, attribute names).
_WATCHED_ATTRS = {
    "time": ("perf_counter", "perf_counter_ns", "monotonic", "sleep"),
    "os": ("write", "read", "_exit"),
    "json": ("dumps", "loads"),
    "hmac": ("new", "compare_digest"),
    "torch": ("equal", "isnan", "isinf", "isfinite", "empty", "empty_like", "where", "argmax"),
    "torch.Tensor": ("copy_", "fill_", "zero_", "clone", "to", "float", "abs", "sum", "all", "item", "view",
                     "data_ptr", "untyped_storage", "__eq__", "__sub__"),
    "torch.cuda": ("synchronize", "current_stream", "current_device", "Event", "Stream", "graph", "CUDAGraph",
                   "is_available"),
    "torch.cuda.Event": ("record", "elapsed_time", "synchronize", "query", "wait"),
    "torch.cuda.CUDAGraph": ("replay", "capture_begin", "capture_end"),
}
# Modules whose every function is watched (the harness's own timing, checking and channel code).
_WATCHED_MODULES = ("harness.timing", "harness.stats", "harness.channel", "harness.guard", "harness.worker",
                    "harness.telemetry", "reference.checking", "reference.exact", "reference.codec",
                    "reference.distributions")


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
        guard._threads = {t.ident for t in threading.enumerate()}
        return guard

    def _watch(self, key: str, obj) -> None:
        self._fingerprints[key] = _fingerprint(obj)
        self._keep.append(obj)

    def changes(self) -> list[str]:
        """Watched names whose object (or function code/defaults/closure) is no longer the bound one."""
        changed = []
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
        return changed

    def new_threads(self) -> list[str]:
        """Threads alive now that were not alive after the submission was imported."""
        return [t.name for t in threading.enumerate() if t.ident not in self._threads and t.is_alive()]

    def accept_threads(self) -> None:
        """Threads started during import (a compile pool, say) are the baseline."""
        self._threads = {t.ident for t in threading.enumerate()}

    def verdict(self) -> tuple[str, str] | None:
        """(status, one line) when the submission tampered with the harness (TAMPERED) or left a
        thread running (FAIL), else None."""
        changed = self.changes()
        if changed:
            shown = ", ".join(changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "")
            return "TAMPERED", f"TAMPERED: the submission replaced {shown} (bound before it was imported)"
        threads = self.new_threads()
        if threads:
            return "FAIL", (f"custom_kernel left a thread running after it returned ({', '.join(threads[:3])}): "
                            "deferred work escapes the timer")
        return None
