"""The child process: imports one submission, then calls and times it on the parent's commands.

Started by :mod:`harness.isolation` as ``python -m harness.worker CMD_FD EVENT_FD RESULTS_FD
[CLOCK_KEY_FD CLOCK_RECORD_FD]``. The first line on the command pipe carries the channel key and the
job; everything the harness times and checks with is bound (``timing.bind``, the compiled clock from
the two clock descriptors, ``guard.Guard.snapshot``) before the submission is imported
(``harness.loader.import_submission``). Then one command per line, one signed reply per command
(``harness.channel``). Every call's output goes to the shared file ``RESULTS_FD``
(``harness.judge.ResultSink``) with its input set's fingerprint; the verdict on the values is the
judge's, a second process of this module started with ``judge`` in its job, which never imports a
submission (:func:`_judge_loop`). What the child checks itself can only add a FAIL:

- ``test``: N seeds of a shape, each call with poisoned outputs, uninitialised memory filled with
  NaN, inputs compared with untouched copies, the output's form.
- ``prepare``: the pool for timing: P input sets, each checked as in ``test``; a repeat of the first
  set in fresh buffers (a content-keyed cache must not hand back an earlier output); warm-up calls;
  for ``graph`` the capture.
- ``block``: every pool set refilled in place with never-seen inputs (same tensors, new values: a
  cache keyed by ``id`` or ``data_ptr`` returns stale results), outputs poisoned, an untimed call
  on a scratch set made by the compiled clock, which then draws the block's key and sends it to the
  parent (``harness.clock``), the pool's signs flipped by it (``harness.judge.mask_pool_signs``: what
  that call computed from the pool is of other inputs), one call per set timed (``timing.time_block``;
  every method but ``kernel`` by the compiled clock, whose figures go to the parent in its own signed
  record; each output copied for the judge right after its end event), then the outputs' form, the inputs'
  fingerprints, the guard and the threads. Raw samples go to the parent, which owns every statistic
  and verdict.

A CUDA error poisons the context: the reply is CRASH and the child exits; the parent starts a
fresh one for what is left.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import warnings

from harness.errors import HarnessFault
from harness.guard import harness_work
from harness.judge import fingerprint, form_problem, input_tensors, mask_pool_signs, output_bytes, tensors_of

EXIT_CUDA_ERROR = 3
CPU_POOL = 4  # input sets per block at most on a machine without a GPU (and gpumode's batch is one call there)


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return text[0] if text else type(exc).__name__


def _is_cuda_error(exc: BaseException) -> bool:
    name = type(exc).__name__
    text = str(exc)
    return name in ("AcceleratorError", "CudaError") or "CUDA error" in text or "cudaError" in text


def structure_of(obj):
    """The shape of an input's containers: per list or tuple its type and length, per tensor its
    identity, shape, dtype and storage, nested. A call that empties, extends or swaps what it was
    given changes this (group_gemm's lists emptied in place made '0 groups match' pass)."""
    import torch
    if isinstance(obj, torch.Tensor):
        return ("tensor", id(obj), tuple(obj.shape), str(obj.dtype), obj.untyped_storage().data_ptr())
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, len(obj), tuple(structure_of(x) for x in obj))
    return (type(obj).__name__, id(obj))


def _same_bits(torch, a, b) -> bool:
    """Bitwise equality (fp8 and fp4 tensors have no comparison ops; NaN == NaN here)."""
    if a.element_size() == 1:
        return torch.equal(a.view(torch.uint8), b.view(torch.uint8))
    return torch.equal(a, b) or bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())


def _storage(t) -> int:
    return t.untyped_storage().data_ptr()


def round_seed(base: int, round_index: int, slot: int) -> int:
    """The seed of pool slot ``slot`` in timing round ``round_index`` (round 0 = base + slot, the
    checked pool); identical in every child, so compared versions see identical inputs."""
    if round_index == 0:
        return base + slot
    return (base * 1_000_003 + round_index * 7_919 + slot * 104_729 + 17) % (2**31 - 1)


def retry_round(round_index: int) -> int:
    """The round whose inputs time a block again after the escape check flagged it: seeds no
    ordinary round of a run uses."""
    return round_index + 1_000_000


class Worker:
    """Checks and times the kernels of one process: one submission, or for ``compare`` of the
    team's own versions several, which share the pool (identical inputs) and take turns block by
    block. Commands name the kernel by its index (``sub``); ``self.kernel`` is the one in hand."""

    def __init__(self, torch, mod, kernels, guard, channel, telemetry, sink=None, clock=None, refreshers=None):
        self.torch, self.mod = torch, mod
        # the compiled clock (harness.clock): it makes the untimed call before a block, then draws the
        # key for the block's values (harness.judge.mask_pool_signs), and times every event method
        self.clock = clock
        self.tag = 0  # the block the parent asked for: every clock record of it carries this tag
        self.sink = sink  # harness.judge.ResultSink: where every call's output goes for the judge
        self.kernels = list(kernels) if isinstance(kernels, (list, tuple)) else [kernels]
        self.kernel = self.kernels[0]
        # per kernel: the harness's own peer's untimed re-dequantisation after the mask, or None
        # (``peer_refresh``: nothing a submission defines is ever called there)
        self.refreshers = list(refreshers) if refreshers else [None] * len(self.kernels)
        self.refresh = self.refreshers[0]
        self.guard, self.channel, self.telemetry = guard, channel, telemetry
        self.pool: list = []
        self.scratch = None  # an extra input set for the untimed call before each block
        self.graphs: dict[int, object] = {}
        self.graph = None
        self.item = None
        self.pool_round = 0  # the round whose seeds the pool holds (harness.worker.round_seed)
        self.flush_kind = "dirty"
        self.batch = 1
        self.results: list[dict] = []  # this command's entries for the judge, one per call (harness.judge)
        self.output_room = 0  # the most room one checked call's output took in the shared file

    def use(self, sub: int) -> None:
        if not 0 <= sub < len(self.kernels):
            raise ValueError(f"no submission #{sub} in this process ({len(self.kernels)} imported)")
        self.kernel = self.kernels[sub]
        self.refresh = self.refreshers[sub]
        self.graph = self.graphs.get(sub)

    # -- correctness ------------------------------------------------------------------------
    def _poison(self, data) -> None:
        with harness_work(self.torch):
            for c in self.mod.outputs_of(data):
                c.fill_(float("nan"))

    def _deterministic(self, on: bool) -> None:
        """Uninitialised-memory filling (torch.empty -> NaN) for correctness calls only; warn_only
        so ops without a deterministic kernel still run."""
        torch = self.torch
        torch.use_deterministic_algorithms(on, warn_only=True)
        torch.utils.deterministic.fill_uninitialized_memory = on

    def checked_call(self, data, earlier: list) -> tuple[str, str]:
        """One correctness call. ``earlier``: outputs returned for other input sets, kept alive so
        that their memory cannot be handed out again and a shared storage means a shared output.
        What this process can see (form, inputs left as they were, no shared storage) is checked
        here; the output itself goes to the judge (``self.results``), which alone says PASS."""
        torch = self.torch
        inputs = input_tensors(self.mod, data)
        snapshots = [t.clone() for t in inputs]
        shape_before = structure_of(data)
        self._poison(data)
        self._deterministic(True)
        threads = self.guard.thread_ids()
        try:
            result = self.kernel(data)
            if torch.cuda.is_available():
                torch.cuda.synchronize()
        except NotImplementedError as exc:
            # NOTE: torch cannot fill fp4 (float4_e2m1fn_x2) memory, so a submission that allocates
            # or clones an fp4 tensor trips the filling itself; repeat the call without it (outputs
            # poisoned again; inputs are still compared with the snapshot taken before the first try).
            if "fill_empty_deterministic_" not in str(exc):
                raise
            self._deterministic(False)
            self._poison(data)
            result = self.kernel(data)
            if torch.cuda.is_available():
                torch.cuda.synchronize()
        finally:
            self._deterministic(False)
        problem = self.guard.verdict(since=threads)
        if problem:
            return problem
        if structure_of(data) != shape_before:
            return "FAIL", "custom_kernel changed the structure of its input (a list emptied, resized or an item replaced)"
        for i, (t, snap) in enumerate(zip(inputs, snapshots)):
            if not _same_bits(torch, t, snap):
                return "FAIL", f"custom_kernel modified input tensor #{i} (shape {tuple(t.shape)}, {t.dtype})"
        taken = {_storage(t) for t in earlier}
        for t in tensors_of(result):
            if _storage(t) in taken:
                return "FAIL", "the output shares storage with the output of an earlier call on other inputs (cached result?)"
        problem = form_problem(self.mod, data, result)
        if problem:
            return "FAIL", problem
        earlier.extend(tensors_of(result))
        self._keep(data, result)
        return "PASS", ""

    def _keep(self, data, result) -> None:
        """The call's output into the shared file (after the call: it has synchronised), and its
        input set's fingerprint, as this command's next entry for the judge."""
        if self.sink is not None:
            self.output_room = max(self.output_room, output_bytes(result))
            self.sink.reserve(output_bytes(result))
            entry = self.sink.put(result)
            if self.torch.cuda.is_available():
                self.torch.cuda.synchronize()
        else:
            entry = {"listed": isinstance(result, (list, tuple)), "parts": None}
        entry["inputs"] = fingerprint(self.torch, input_tensors(self.mod, data))
        self.results.append(entry)

    def _begin(self) -> None:
        """A new command: its results start at the beginning of the shared file."""
        self.results = []
        if self.sink is not None:
            self.sink.reset()

    def test(self, item: dict, n_seeds: int) -> dict:
        """N seeds, each a checked call; the judge checks the outputs and measures the accuracy
        yardstick (reference.yardstick) on them."""
        self._begin()
        params, base = self._params(item)
        earlier: list = []
        for i in range(n_seeds):
            data = self._inputs(params, base + i, item["dist"])
            status, msg = self.checked_call(data, earlier)
            if status != "PASS":
                return {"status": status, "message": f"seed {base + i}: {msg}"}
            del data
        return {"status": "PASS", "message": "", "results": self.results}

    def bad_input(self, item: dict, index: int) -> dict:
        """Bad input ``index`` of the problem (reference.bad_inputs) on the shape's first seed, then a
        good call on the next seed. The outcome is the submission's own robustness, checked here, not a
        verdict the judge gives or a leaderboard records. A CUDA error is the process's end (its context
        is lost): the reply says CRASH and the parent starts a fresh process for the next case."""
        from reference import bad_inputs
        torch = self.torch
        params, base = self._params(item)
        case = bad_inputs.cases(self.mod.NAME)[index]
        reply = {"status": "PASS", "message": "", "case": case.name, "kind": case.kind}

        def call(data):
            out = self.kernel(data)
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            return out

        try:
            result = call(case.transform(self._inputs(params, base, item["dist"])))
        except Exception as exc:  # noqa: BLE001 - refusing is what a bad input should get
            if _is_cuda_error(exc):
                return {"status": "CRASH", "message": f"{case.name}: a CUDA error, the process's context is lost: "
                        f"{_one_line(exc)}"}
            reply.update(outcome="refused", detail=_one_line(exc))
        else:
            reply["outcome"] = "ran"
            if case.kind == bad_inputs.SAME:
                # NOTE: the values are the contract's, so the reference of the untouched set is the answer
                try:
                    ok, message = self.mod.check(self._inputs(params, base, item["dist"]), result)
                except Exception as exc:  # noqa: BLE001 - an output of the wrong form is a wrong answer
                    ok, message = False, _one_line(exc)
                reply.update(outcome="right" if ok else "wrong", detail="" if ok else message)
        try:
            good = call(self._inputs(params, base + 1, item["dist"]))
            ok, message = self.mod.check(self._inputs(params, base + 1, item["dist"]), good)
        except Exception as exc:  # noqa: BLE001 - the good call's failure is this case's finding
            if _is_cuda_error(exc):
                return {"status": "CRASH", "message": f"{case.name}: the good call after it hit a CUDA error: {_one_line(exc)}"}
            ok, message = False, f"raised {_one_line(exc)}"
        reply.update(good=ok, good_detail="" if ok else message)
        return reply

    def _inputs(self, params: dict, seed: int, dist: str):
        """One input set of the shape; a failure is the harness's (its generator), never the kernel's."""
        try:
            with harness_work(self.torch):
                return self.mod.generate_input(**params, seed=seed, dist=dist)
        except Exception as exc:  # noqa: BLE001 - reported as a harness error, the submission not blamed
            if _is_cuda_error(exc):
                raise  # NOTE: a device the kernel left broken fails here first: the CRASH stays the kernel's
            raise HarnessFault(f"generating the inputs of seed {seed} failed: {_one_line(exc)}") from exc

    @staticmethod
    def _params(item: dict) -> tuple[dict, int]:
        params = dict(item["params"])
        return params, params.pop("seed")

    # -- timing -----------------------------------------------------------------------------
    def prepare(self, item: dict, pool_size: int, method: str, warmup: int, flush_kind: str = "dirty",
                batch: int = 1, sub: int | None = None) -> dict:
        """The pool, checked for kernel ``sub``, or for every kernel of this process where None (a
        compare's versions share the pool); the reply's ``sub`` names the failing one.
        NOTE: a table's process holds every version of its ladder (harness.runner.SharedChild) and
        times one at a time: checking and warming the others at every shape cost seconds per shape."""
        from harness import timing
        refused = _after_profiler(method)
        if refused:
            return refused
        torch = self.torch
        self.item, self.pool, self.graphs, self.graph = item, [], {}, None
        self._begin()
        if not torch.cuda.is_available():
            # NOTE: without a GPU the times are the Python path's on a CPU, comparable with nothing; the
            # competition's 50-input batches only multiply minutes of CPU generation and calls
            pool_size, batch = min(pool_size, CPU_POOL), 1
        self.flush_kind, self.batch = flush_kind, batch
        params, base = self._params(item)
        for slot in range(pool_size):
            self.pool.append(self._inputs(params, round_seed(base, 0, slot), item["dist"]))
        self.scratch = self._inputs(params, round_seed(base, 0, pool_size), item["dist"])
        checked = list(range(len(self.kernels))) if sub is None else [sub]
        for index in checked:
            self.use(index)
            failure = self._prepare_one(index, method, warmup, base)
            if failure:
                return dict(failure, sub=index)
        self.use(checked[0])
        read_floor = None
        before = self.guard.thread_ids()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
            read_floor = self._read_floor(params)
        # NOTE: threads the harness's own floor measurement started (Triton) are accepted; one a
        # submission's warm-up call left is not (it was running before them)
        self.guard.accept_threads(self.guard.thread_ids() - before)
        problem = self.guard.verdict()
        if problem:
            return {"status": problem[0], "message": problem[1]}
        return {"status": "PASS", "message": "", "l2_reset": timing.bound().l2_status, "read_floor": read_floor,
                "flush_us": [getattr(self.graphs.get(i), "flush_us", None) for i in checked],
                "pool": pool_size, "results": self.results}

    def _read_floor(self, params: dict) -> dict:
        """A pure read of the shape's bytes under this flush (``ceilings.read_floor``, cached per GPU)."""
        from harness import ceilings
        torch = self.torch
        try:
            return ceilings.read_floor(torch, torch.cuda.get_device_name(), int(self.mod.bytes_moved(**params)),
                                       self.flush_kind)
        except Exception as exc:  # noqa: BLE001 - a floor that cannot be measured is reported, not fatal
            return {"error": f"{type(exc).__name__}: {exc}"[:300]}

    def _prepare_one(self, sub: int, method: str, warmup: int, base: int) -> dict | None:
        from harness import timing
        torch = self.torch
        earlier: list = []
        for slot, data in enumerate(self.pool):
            status, msg = self.checked_call(data, earlier)
            if status != "PASS":
                return {"status": status, "message": f"seed {round_seed(base, 0, slot)}: {msg}"}
        # The first set again in fresh buffers: a content-keyed cache would now hit.
        repeat = _clone_structure(torch, self.pool[0])
        status, msg = self.checked_call(repeat, earlier)
        if status != "PASS":
            return {"status": status, "message": f"repeat of seed {base} in fresh buffers: {msg}"}
        del repeat
        for w in range(warmup):
            for data in self.pool:
                self.kernel(data)
        if method == "graph":
            if not torch.cuda.is_available():
                return {"status": "FAIL", "message": "--graph needs a CUDA GPU"}
            try:
                self.graphs[sub] = timing.GraphCall(self.kernel, _clone_structure(torch, self.pool[0]), tensors_of,
                                                    self._poison, lambda out: _clone_structure(torch, out),
                                                    flush_kind=self.flush_kind)
            except Exception as exc:  # noqa: BLE001 - not capturable is the submission's verdict here
                if _is_cuda_error(exc) and "capture" not in str(exc).lower():
                    raise
                # NOTE: a failed capture can leave the context unusable: answer, then let a fresh child go on.
                return {"status": "FAIL", "message": f"custom_kernel cannot be captured in a CUDA graph: {_one_line(exc)}",
                        "restart": True}
        return None

    def block(self, round_index: int, method: str, warm: bool, sub: int = 0, tag: int = 0) -> dict:
        """One timed block of kernel ``sub`` on round ``round_index``'s inputs (regenerated here, so
        every kernel of a compare times identical inputs); ``tag``: the parent's name for it, carried by
        every record of the compiled clock."""
        from harness import timing
        refused = _after_profiler(method)
        if refused:
            return dict(refused, sub=sub)
        self.use(sub)
        self.tag = tag
        self._begin()
        if self.sink is not None:
            # NOTE: room for the block (and --warm's) before it starts: the file is never remapped
            # while copies into it are queued
            self.sink.reserve(2 * len(self.pool) * self.output_room)
        self.pool_round = round_index
        reply = self._timed_pass(method)
        if reply["status"] == "PASS" and warm and method == "cold":
            warm_pass = self._timed_pass("warm", refill=False)
            if warm_pass["status"] != "PASS":
                reply = warm_pass
            elif "times_us" in warm_pass:  # NOTE: no clock (a test's worker): the compiled clock's go in its record
                reply = dict(reply, warm_times_us=warm_pass["times_us"])
        if reply["status"] == "PASS":
            reply["results"] = self.results
        # NOTE: the parent replaces a process that has opened a profiler before it asks an event method
        # of it (harness.runner.SharedChild)
        return dict(reply, sub=sub, profiler_opened=timing.profiler_opened())

    def _refill(self, sets: list, round_index: int, first_slot: int = 0) -> None:
        """Never-seen inputs of round ``round_index`` into ``sets``' tensors (slot ``first_slot`` on),
        outputs poisoned."""
        params, base = self._params(self.item)
        with harness_work(self.torch):
            for slot, data in enumerate(sets, start=first_slot):
                fresh = self._inputs(params, round_seed(base, round_index, slot), self.item["dist"])
                for dst, src in zip(tensors_of(data), tensors_of(fresh)):
                    dst.copy_(src)
                del fresh
                self._poison(data)

    def _prelude(self, method: str, refill: bool):
        """The untimed work right before a block: the pool's inputs of ``pool_round``, then a call on
        the scratch set (the submission's host path warm again after the generation's work), made by
        the compiled clock, which then draws the key for the pool's values and sends it to the parent
        (``harness.clock``), then the pool's signs flipped by it (``harness.judge.mask_pool_signs``).
        NOTE: a call that finds the pool through its caller's frame (or anywhere in the process)
        can compute outputs there, untimed, only for values the block will not time. Refilling the
        pool after that call closes the same hole but leaves the first timed call of every block
        cold; so did the key step as first built, a key asked of the parent (docs/methodology.md,
        "The untimed call before each block")."""
        torch = self.torch

        def untimed():
            if method == "graph":
                self.graph.load(self.scratch)
                self.graph.replay()
            else:
                self.kernel(self.scratch)

        def prelude():
            if refill:
                self._refill(self.pool, self.pool_round)
            self._refill([self.scratch], self.pool_round, first_slot=len(self.pool))
            if not refill:
                untimed()
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
                return
            if self.clock is None:
                raise HarnessFault("no compiled clock to draw the block's key (harness.clock)")
            # NOTE: the clock makes the untimed call itself: a key drawn from inside it is refused and
            # counted, so no code of the submission's holds the key before that call has returned. It
            # then synchronises the whole device before it draws: work that call left running (another
            # stream, a kernel waiting for the masked values) ends there, or it could compute the
            # block's outputs after the mask and before the block, untimed
            key = self.clock.draw_key(self.tag, untimed)
            mask_pool_signs(torch, self.mod, self.pool, key)
            if self.refresh is not None:
                # NOTE: the peer keeps the pool's operands dequantised outside its timed calls; the
                # mask rewrote them, and without this its first timed call dequantised the whole
                # pool (group_gemm peer: 1.6-6.4 ms a call by the kernel method, H200, 2026-11-28)
                self.refresh()
            if torch.cuda.is_available():
                torch.cuda.synchronize()
        return prelude

    def _capture(self, result) -> None:
        if self.sink is not None:
            self.results.append(self.sink.put(result))
        else:
            self.results.append({"listed": isinstance(result, (list, tuple)), "parts": None})

    def _timed_pass(self, method: str, refill: bool = True) -> dict:
        """One timed pass of the pool by ``method``, and a second where the first one's figures escape;
        ``refill``: the pool's inputs made anew, by a key the clock draws, before each pass (``--warm``'s
        warm pass times the cold pass's inputs again, by design, so it and its retry refill nothing)."""
        from harness import timing
        options = dict(flush_kind=self.flush_kind, batch=self.batch, poison=self._poison, graph=self.graph,
                       telemetry=self.telemetry, prelude=self._prelude(method, refill), capture=self._capture)
        first, used = len(self.results), self.sink.used if self.sink is not None else 0
        shapes_before = [structure_of(data) for data in self.pool]
        threads = self.guard.thread_ids()
        options.update(clock=self.clock, tag=self.tag)
        block = timing.time_block(self.kernel, self.pool, method, **options)
        first_escape = None
        if block.escape and not self.guard.verdict(since=threads):
            # NOTE: work a submission leaves outside its events does so on every call, so it escapes
            # again; one stalled host moment does not. A block flagged once is timed again and only a
            # second flag fails: a single ~1 ms host stall failed whole shapes on an H100 host (gemv
            # v11: 1580 µs wall against 464 µs of events). The retry gets never-seen inputs: on the
            # same ones, a submission that memoises its outputs would be timed returning them (the warm
            # pass times the cold pass's inputs a second time by design, and its retry a third: the
            # judge checks its outputs against those inputs; a refill there drew a key the parent refused).
            first_escape = block.escape
            if refill:
                self.pool_round = retry_round(self.pool_round)
            del self.results[first:]
            if self.sink is not None:
                self.sink.used = used
            options["prelude"] = self._prelude(method, refill)
            block = timing.time_block(self.kernel, self.pool, method, **options)
        reply = {"status": "PASS", "message": "", "telemetry": block.telemetry, "l2_reset": timing.bound().l2_status}
        if method not in timing.EVENT_METHODS or self.clock is None:
            # NOTE: an event method's figures go to the parent in the compiled clock's record, never in this reply
            reply.update(times_us=block.times_us, wall_us=block.wall_us, span_us=block.span_us)
        if block.kernel:
            reply["kernel"] = block.kernel
        if first_escape:
            reply["escape_retried"] = first_escape
        problem = self.guard.verdict(since=threads)
        if problem:
            return dict(reply, status=problem[0], message=problem[1])
        if block.escape:
            message = f"{block.escape} (and in the block before, timed again: {first_escape})" if first_escape else block.escape
            return dict(reply, status="FAIL", message=message)
        if block.kernel and not all(block.kernel["activities"]):
            empty = block.kernel["activities"].index(0)
            return dict(reply, status="FAIL", message=f"timed call {empty + 1} of round {self.pool_round} launched no "
                        "device work the profiler saw (the kernel method times device work only)")
        changed = [slot for slot, data in enumerate(self.pool) if structure_of(data) != shapes_before[slot]]
        if changed:
            return dict(reply, status="FAIL", message=f"timed call {changed[0] + 1} of round {self.pool_round}: custom_kernel "
                        "changed the structure of its input (a list emptied, resized or an item replaced)")
        _, base = self._params(self.item)
        for slot, (data, result) in enumerate(zip(self.pool, block.results)):
            problem = form_problem(self.mod, data, result)
            if problem:
                seed = round_seed(base, self.pool_round, slot)
                return dict(reply, status="FAIL", message=f"timed call {slot + 1} of round {self.pool_round} ({method}, seed {seed}): {problem}")
        # NOTE: the inputs as the block left them, for the judge to compare with what it generated
        prints = [fingerprint(self.torch, input_tensors(self.mod, data)) for data in self.pool]
        for entry, print_ in zip(self.results[first:], prints):
            entry["inputs"] = print_
        return reply

    def finish(self) -> dict:
        self.pool, self.scratch, self.graph, self.graphs, self.item = [], None, None, {}, None
        if self.torch.cuda.is_available():
            self.torch.cuda.empty_cache()
        return {"status": "PASS", "message": ""}


def _after_profiler(method: str) -> dict | None:
    """The refusal of an event method in a process that has opened a torch.profiler session, or None:
    its figures would carry CUPTI's callbacks on every launch (``harness.timing._profiler``
    says what they cost). The parent never asks it (a fresh process serves it); this is the check that
    a path which forgets cannot record slow figures in silence."""
    from harness import timing
    if method in timing.PROFILER_METHODS or not timing.profiler_opened():
        return None
    return {"status": "FAIL", "message": f"harness error: the {method} method asked of a process that has opened a "
            "torch.profiler session (CUPTI's callbacks slow every later launch here); it needs a fresh process"}


def _clone_structure(torch, obj):
    if isinstance(obj, torch.Tensor):
        return obj.clone()
    if isinstance(obj, tuple):
        return tuple(_clone_structure(torch, x) for x in obj)
    if isinstance(obj, list):
        return [_clone_structure(torch, x) for x in obj]
    return obj


def _import_one(loader, guard, channel, sub: dict, index: int, kernels: list, refreshers: list) -> dict | None:
    """Imports one submission into this process (``kernels``/``refreshers`` gain its entries); None,
    or the import_error event's fields: its import raised, or it changed what the guard watches."""
    channel.emit("phase", phase="import", label=sub["label"])
    try:
        kernel = loader.import_submission(sub["path"], sub["label"], source_hash=sub["source_hash"],
                                          on_progress=lambda text: channel.emit("progress", stage=text))
        refresher = peer_refresh(sub["path"], kernel)
    except BaseException as exc:  # noqa: BLE001 - any import failure is the submission's
        return {"label": sub["label"], "sub": index, "message": _one_line(exc), "detail": traceback.format_exc(limit=5)}
    if guard.changes():
        status, message = guard.verdict()
        return {"label": sub["label"], "sub": index, "status": status, "message": message}
    kernels.append(kernel)
    refreshers.append(refresher)
    return None


def _judge_loop(judge, commands, channel) -> int:
    """The judge process: no submission is imported here; one ``check`` per command."""
    channel.emit("ready", label="judge", seconds=0.0)
    while True:
        cmd = _read_line(commands)
        if cmd is None or cmd["cmd"] == "exit":
            return 0
        try:
            reply = judge.check(cmd["item"], cmd["calls"], cmd["results"], cmd["kind"], bool(cmd.get("digests")))
        except Exception as exc:  # noqa: BLE001 - the child's description of its outputs can be anything
            reply = {"status": "FAIL", "message": f"harness error: the judge could not check the outputs: {_one_line(exc)}",
                     "detail": traceback.format_exc(limit=5)}
        channel.emit("reply", **reply)


def peer_refresh(path: str, kernel):
    """The re-dequantisation the harness's own peer (``harness.probes.peer``) makes after a block's
    signs are masked, untimed, or None: only a file of the peers' folder gets that call, so no
    submission's code ever runs between the mask and its block."""
    from pathlib import Path

    from harness.probes import PEERS_DIR
    if Path(path).resolve().parent != PEERS_DIR:
        return None
    return getattr(kernel, "refresh", None)


def _bind_clock(spec: dict | None, fds: tuple[int, int] | None, timing):
    """The compiled clock (``harness.clock``) bound, or None where the parent passed none (the judge).
    The parent says whether it times with CUDA (``spec["cuda"]``), never this process: a clock that
    cannot bind as told is the harness's error, and this process ends with it in one line."""
    if spec is None or fds is None:
        return None
    import functools

    from harness import clock as clock_mod
    b = timing.bound()
    if spec["cuda"] and not b.torch.cuda.is_available():
        raise SystemExit("harness error: the parent times with CUDA and this process sees no GPU (CUDA_VISIBLE_DEVICES?)")
    flush = b.flush_buffer
    try:
        clock = clock_mod.load(spec["library"])
        clock.bind(fds[0], fds[1], clock_mod.batch_loop, bool(spec["cuda"]),
                   flush.data_ptr() if flush is not None else 0,
                   flush.numel() * flush.element_size() if flush is not None else 0,
                   functools.partial(timing.flush, "clean") if flush is not None else None)
    except Exception as exc:  # noqa: BLE001 - any failure here is the harness's, before a submission ran
        raise SystemExit(f"harness error: the compiled clock could not bind ({'CUDA' if spec['cuda'] else 'host clock'}): "
                         f"{_one_line(exc)}") from None
    return clock


def _read_line(stream) -> dict | None:
    line = stream.readline()
    return json.loads(line) if line else None


def main(argv: list[str]) -> int:
    cmd_fd, event_fd = int(argv[0]), int(argv[1])
    results_fd = int(argv[2]) if len(argv) > 2 else None  # the shared file of outputs (harness.judge)
    clock_fds = (int(argv[3]), int(argv[4])) if len(argv) > 4 else None  # the compiled clock's key and records
    commands = os.fdopen(cmd_fd, "r")
    hello = _read_line(commands)
    from harness import channel as channel_mod
    channel = channel_mod.Sender(event_fd, bytes.fromhex(hello["key"]))
    job = hello["job"]
    del hello
    for root in (job["repo_root"], job.get("code_root", job["repo_root"])):
        if root not in sys.path:
            sys.path.insert(0, root)
    warnings.filterwarnings("ignore", message=".*deterministic.*")

    import torch

    from harness import ceilings, guard as guard_mod, judge as judge_mod, loader, machine, telemetry as tele_mod, timing
    from reference import problem_module

    mod = problem_module(job["problem"])
    if job.get("judge"):
        return _judge_loop(judge_mod.Judge(torch, mod, results_fd), commands, channel)
    info = machine.device_info(torch)
    telemetry = None
    if torch.cuda.is_available():
        timing.bind(torch)
        telemetry = tele_mod.Telemetry(torch)
        info["telemetry"] = telemetry.static if telemetry.available else {"error": telemetry.error}
        if job.get("ceilings"):
            channel.emit("progress", stage="measuring ceilings")
            info["ceilings"] = ceilings.of_gpu(torch, info["gpu"])
    else:
        timing.bind(torch)
    clock = _bind_clock(job.get("clock"), clock_fds, timing)
    sink = judge_mod.ResultSink(torch, results_fd) if results_fd is not None else None
    guard = guard_mod.Guard.snapshot((mod.__name__,))

    # NOTE: ``together`` (compare of the team's own versions) imports every submission into this one
    # process; a submission named alone, or any file from outside the lab, gets a process of its own.
    subs = [job["submission"], *job.get("together", [])]
    channel.emit("device", **info)
    kernels, refreshers = [], []
    t0 = time.perf_counter()
    for index, sub in enumerate(subs):
        failure = _import_one(loader, guard, channel, sub, index, kernels, refreshers)
        if failure:
            channel.emit("import_error", **failure)
            return 1
    guard.accept_threads()
    channel.emit("ready", label=subs[0]["label"], seconds=time.perf_counter() - t0)

    worker = Worker(torch, mod, kernels, guard, channel, telemetry, sink, clock=clock, refreshers=refreshers)
    while True:
        cmd = _read_line(commands)
        if cmd is None or cmd["cmd"] == "exit":
            return 0
        try:
            if cmd["cmd"] == "import":
                # NOTE: a table's shared process takes a version built after it started (issue 49: the
                # table times while the rest build). As at start: the guard and clock were bound before
                # this import, the guard is asked right after it, and only the threads it started are
                # accepted; a failed import ends the process (its code ran here), the parent goes on
                # with a fresh one without it (harness.runner.SharedChild)
                before = guard.thread_ids()
                failure = _import_one(loader, guard, channel, cmd["submission"], len(worker.kernels), worker.kernels,
                                      worker.refreshers)
                if failure:
                    status = failure.get("status", "FAIL")
                    reply = {"status": status, "message": failure["message"] if status == "TAMPERED"
                             else f"import failed: {failure['message']}", "restart": True}
                else:
                    guard.accept_threads(guard.thread_ids() - before)
                    reply = {"status": "PASS", "sub": len(worker.kernels) - 1}
            elif cmd["cmd"] == "test":
                reply = worker.test(cmd["item"], cmd["seeds"])
            elif cmd["cmd"] == "prepare":
                reply = worker.prepare(cmd["item"], cmd["pool"], cmd["method"], cmd["warmup"],
                                       cmd.get("flush", "dirty"), cmd.get("batch", 1), cmd.get("sub"))
            elif cmd["cmd"] == "block":
                reply = worker.block(cmd["round"], cmd["method"], cmd["warm"], cmd.get("sub", 0), cmd.get("tag", 0))
            elif cmd["cmd"] == "bad_input":
                reply = worker.bad_input(cmd["item"], cmd["case"])
            elif cmd["cmd"] == "finish":
                reply = worker.finish()
            else:
                reply = {"status": "FAIL", "message": f"unknown command {cmd['cmd']!r}"}
        except HarnessFault as exc:
            reply = {"status": "FAIL", "message": f"harness error: {exc}", "detail": traceback.format_exc(limit=5)}
        except Exception as exc:  # noqa: BLE001 - reported as the item's verdict
            if _is_cuda_error(exc):
                channel.emit("reply", status="CRASH", message=_one_line(exc))
                return EXIT_CUDA_ERROR
            reply = {"status": "FAIL", "message": f"custom_kernel raised {_one_line(exc)}",
                     "detail": traceback.format_exc(limit=5)}
        channel.emit("reply", **reply)
        if reply.get("restart"):
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
