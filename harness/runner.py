"""From a CLI request to verdicts: choose shapes, check the arch, drive the children, judge.

The parent owns every decision: it sends each child one command at a time (``test``; or
``prepare`` then ``block`` after ``block``), keeps the raw samples, applies the stopping rule,
drops throttled blocks (bounded), computes the statistics, and flags implausible times. In
``compare`` the two versions live in separate children and take turns block by block (A B B A
...), each block on identical, never-seen inputs; the time ratio is bootstrapped over block pairs.
Nothing in this module prints except through the ``progress`` callback.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from harness import config, isolation, machine, roofline, stats, telemetry, timing
from harness.config import Shape
from harness.errors import UserError
from harness import submissions
from harness.submissions import Submission

STATUSES_OK = ("PASS",)
NO_VERDICT = "none (CPU)"
MAX_THROTTLE_DROPS = 10  # throttled blocks dropped (and retried) per shape before keeping them, flagged


@dataclass
class TimingPlan:
    """How to time: the method (``timing.METHODS``), the flush, the stopping rule, the pool, and
    compare's equivalence margin and precision."""
    rule: stats.StopRule = field(default_factory=stats.StopRule)
    pool: int = 8
    warmup: int = 2
    method: str = timing.DEFAULT_METHOD  # the timing method (timing.METHODS)
    flush: str = "dirty"  # timing.FLUSHES
    warm: bool = False  # also time warm-cache calls (reported beside the cold ones)
    margin: float = 0.02  # SAME: the interval within ±margin of 1
    precision: float = 0.01  # compare (one process): stop once decided and the interval is within ±precision
    isolated: bool = False  # compare: each version in processes of its own, generations of them
    processes: int = 2  # isolated compare: generations of fresh child processes per shape, at least (even: balanced start order)
    max_processes: int = 8  # isolated compare: more generations, two at a time, while the verdict is AMBIGUOUS
    run_processes: int = 1  # run/table: fresh processes per shape, the budget split over them

    @classmethod
    def from_options(cls, budget_s=3.0, min_samples=10, target=1e-3, pool=8, method=timing.DEFAULT_METHOD, warm=False,
                     margin=0.02, min_time_s=0.1, max_samples=100_000, processes=2, max_processes=8,
                     flush="dirty", isolated=False, precision=0.01) -> "TimingPlan":
        return cls(stats.StopRule(min_samples=min_samples, min_time_s=min_time_s, target_rel_err=target,
                                  budget_s=budget_s, max_samples=max_samples),
                   pool=pool, method=method, flush=flush, warm=warm, margin=margin, precision=precision,
                   isolated=isolated, processes=processes, max_processes=max_processes)

    def batch(self, problem: str) -> int:
        """Calls per pair of events: GPU MODE's batch for ``gpumode``, else one."""
        return timing.gpumode_batch(problem) if self.method == "gpumode" else 1

    def pool_size(self, problem: str) -> int:
        """Input sets per block: one batch for ``gpumode`` where a batch holds several calls (the
        competition's 50 or 15 distinct inputs), else ``pool``."""
        batch = self.batch(problem)
        return batch if batch > 1 else self.pool

    def describe(self, problem: str | None = None) -> dict:
        r = self.rule
        out = {"mode": self.method, "method": self.method,  # NOTE: "mode" kept: the recorded sidecars' schema
               "flush": self.flush, "warm": self.warm, "pool": self.pool,
               "warmup": self.warmup, "min_samples": r.min_samples, "min_time_s": r.min_time_s,
               "target_rel_err": r.target_rel_err, "budget_s": r.budget_s, "max_samples": r.max_samples,
               "margin": self.margin, "precision": self.precision, "isolated": self.isolated,
               "processes": self.processes, "max_processes": self.max_processes, "run_processes": self.run_processes}
        if problem:
            out.update(batch=self.batch(problem), pool=self.pool_size(problem))
        return out


@dataclass
class ShapeResult:
    shape: Shape
    dist: str
    status: str  # PASS FAIL CRASH TIMEOUT TAMPERED IMPLAUSIBLE SKIP
    message: str = ""
    stats: list | None = None  # one summary dict per submission (``warm`` inside when timed)
    floor_us: float | None = None  # from the measured ceilings
    physical_floor_us: float | None = None  # from the datasheet peaks: below it is implausible
    samples: list | None = None  # per submission: the kept blocks of per-call µs
    telemetry: list | None = None  # per kept round: one NVML sample per submission
    ratio: dict | None = None  # compare: speedup of B over A, 95% interval, verdict
    outputs: dict | None = None  # compare: B's outputs against A's on the checked pool (outputs_compared); None: not compared
    extra: dict = field(default_factory=dict)  # seeds, throttle drops, L2 reset, flush cost
    device: dict | None = None  # the GPU this result was measured on (with --gpus, each its own)

    @property
    def ok(self) -> bool:
        return self.status in STATUSES_OK

    @property
    def read_floor_us(self) -> float | None:
        """A pure read of the shape's bytes under the same flush, on this GPU (ceilings.read_floor)."""
        floor = (self.extra or {}).get("read_floor") or {}
        return floor.get("us")


@dataclass
class JobOutcome:
    submissions: list[Submission]
    device: dict | None
    results: list[ShapeResult] = field(default_factory=list)
    refused: str | None = None  # why it did not run at all (arch), or None
    logs: list = field(default_factory=list)
    plan: TimingPlan | None = None
    geomean: dict | None = None  # per submission (and the ratio): point and 95% interval
    extra_devices: dict = field(default_factory=dict)  # with --gpus: GPU index -> its device description
    sandboxes: dict = field(default_factory=dict)  # label -> the sandbox it ran in (untrusted files)
    unsandboxed: dict = field(default_factory=dict)  # label -> why it ran outside the sandbox that exists

    @property
    def ok(self) -> bool:
        return self.refused is None and all(r.ok for r in self.results)


def local_capability() -> tuple[int, int] | None:
    import torch
    if not torch.cuda.is_available():
        return None
    return tuple(torch.cuda.get_device_capability(0))


def select_shapes(problem: str, spec: str | None, custom: tuple[str, ...], has_gpu: bool,
                  cfg: dict | None = None) -> tuple[list[Shape], str]:
    """``--shapes benchmarks|tests|N|tests:N|benchmarks:N`` and repeated ``--shape``: the custom
    shapes alone, or after the set's when both are given (one already in the set is not repeated).

    Without a GPU the default is the tests shapes (the benchmark shapes take minutes on a CPU).
    Returns the shapes and a note for the user when a default was applied.
    NOTE: both given, the set was ignored until session 51 (`test group_gemm v52 --shapes edges --shape ...`
    tested the custom shapes only).
    """
    extra = [config.parse_shape_option(problem, text, i) for i, text in enumerate(custom)]
    if extra and spec is None:
        return extra, ""
    base, note = _shape_set(problem, spec, has_gpu, cfg)
    known = {s.key for s in base}
    return base + [s for s in extra if s.key not in known], note


def _shape_set(problem: str, spec: str | None, has_gpu: bool, cfg: dict | None) -> tuple[list[Shape], str]:
    """``--shapes``: a set, SET:I, an index, or several of them comma-separated (``benchmarks:0,benchmarks:1``, the
    grammar ``sanitize`` has always taken), in order, each shape once."""
    if spec is None or "," not in spec:
        return _one_shape_set(problem, spec, has_gpu, cfg)
    shapes: list[Shape] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            raise UserError(f"--shapes {spec!r}: an empty entry between commas")
        chosen, _ = _one_shape_set(problem, part, has_gpu, cfg)
        shapes += [s for s in chosen if s.key not in {t.key for t in shapes}]
    return shapes, ""


def _one_shape_set(problem: str, spec: str | None, has_gpu: bool, cfg: dict | None) -> tuple[list[Shape], str]:
    cfg = cfg or config.load()
    pc = cfg[problem]
    default_set = "benchmarks" if has_gpu else "tests"
    note = "" if has_gpu or spec else "no GPU here: using the tests shapes (pass --shapes benchmarks to insist)"
    spec = (spec or default_set).strip()
    set_name, _, index = spec.partition(":")
    if set_name == "random":
        return _random_set(problem, spec, index, pc), note
    if set_name.isdigit() and not index:
        set_name, index = default_set, set_name
    if set_name not in config.SHAPE_SETS:
        raise UserError(f"--shapes {spec!r}: expected benchmarks, tests, edges, an index, SET:N or random:N[:SEED] "
                        "(several comma-separated)")
    shapes = getattr(pc, set_name)
    if not shapes:
        raise UserError(f"--shapes {spec!r}: {problem} has no {set_name} shapes in shapes.yaml")
    if index:
        try:
            if not index.isdigit():  # NOTE: int() took "-1", and Python's indexing then the last shape
                raise ValueError(index)
            return [shapes[int(index)]], note
        except (ValueError, IndexError):
            raise UserError(f"--shapes {spec!r}: {problem} has {len(shapes)} {set_name} shapes (0..{len(shapes) - 1})") from None
    return list(shapes), note


def _random_set(problem: str, spec: str, rest: str, pc) -> list[Shape]:
    """``random:N`` or ``random:N:SEED`` (seed 0 by default): :func:`config.random_shapes`."""
    count, _, seed = rest.partition(":")
    if not count.isdigit() or not 1 <= int(count) <= config.RANDOM_MAX or (seed and not seed.isdigit()):
        raise UserError(f"--shapes {spec!r}: expected random:N or random:N:SEED (N from 1 to {config.RANDOM_MAX}, "
                        "SEED a non-negative integer)")
    return config.random_shapes(problem, int(count), int(seed or 0), pc)


def run(subs: list[Submission], shapes: list[Shape], dists: list[str], mode: str, *,
        seeds: int = 3, plan: TimingPlan | None = None,
        timeout_s: float = isolation.DEFAULT_TIMEOUT_S, compile_timeout_s: float = isolation.DEFAULT_COMPILE_TIMEOUT_S,
        capability=None, progress: Callable[[dict], None] | None = None,
        gpus: list[int] | None = None, untrusted_all: bool = False, shared: "SharedChild | None" = None) -> JobOutcome:
    """``test`` / ``run`` (one submission) or ``compare`` (two) over shapes x dists.

    ``gpus``: local GPU indices; the (shape, dist) items are sharded across them (heaviest first,
    to the least loaded GPU), one set of children per GPU pinned there with CUDA_VISIBLE_DEVICES,
    so two timings never share a GPU. Results come back in the order of the request.
    ``shared``: ``run`` of one version in a table's process for its GPU (:class:`SharedChild`,
    which already holds the version, pinned to the one GPU of ``gpus``), left running afterwards."""
    if shared is not None and (len(subs) != 1 or mode != "run" or subs[0] not in shared.subs
                               or (gpus or [None]) != [shared.gpu]):
        raise ValueError("a shared process runs `run` of one of its own versions, on its GPU")
    plan = plan or TimingPlan()
    outcome = JobOutcome(list(subs), None, plan=plan)
    refusal = _refusal(subs, capability)
    if refusal:
        label, why = refusal
        outcome.refused = f"{label}: {why}"
        outcome.results = [ShapeResult(s, d, "SKIP", why) for s in shapes for d in dists]
        return outcome
    job = {"mode": mode, "problem": subs[0].problem, "ceilings": mode != "test"}
    items = [(s, d) for s in shapes for d in dists]
    results: list[ShapeResult | None] = [None] * len(items)
    devices: dict = {}

    described = _described(subs)
    # NOTE: a file from outside the lab's submissions/ (or any, with untrusted) runs sandboxed where a
    # tool works, in a process of its own: never imported beside another version
    untrusted = [_untrusted(s, untrusted_all) for s in subs]
    together = len(subs) == 2 and mode != "test" and not plan.isolated and not any(untrusted)
    # NOTE: the peer is cuBLAS, a yardstick of speed: its bits are its library's roundings, equal to a
    # version's only by chance, so no claim is made of them either way
    compare_outputs = mode == "compare" and not any(submissions.is_peer(s) for s in subs)
    if mode == "compare" and any(untrusted):
        # NOTE: like for like: the lab's side in the same confinement as the stranger's (the same
        # allowlisted environment and namespaces), so no difference between the two processes'
        # conditions is read as a difference between the versions
        untrusted = [True] * len(subs)

    def serve(indices: list[int], gpu: int | None) -> None:
        env = {"CUDA_VISIBLE_DEVICES": visible_device(gpu)} if gpu is not None else {}
        if shared is not None:
            shared.progress = progress
            children = [shared.seat(subs[0])]
        else:
            children = _children(job, described, untrusted, together, env, compile_timeout_s, progress)
        try:
            timed_out: dict[str, str] = {}  # shape key -> the dist that timed out
            needs_gpu = None  # why the submission cannot run on this CPU machine, once seen
            for i in indices:
                shape, dist = items[i]
                if needs_gpu or shape.key in timed_out:
                    # NOTE: a hanging kernel would cost the timeout again for every other dist of the shape,
                    # and a GPU-only file fails every shape the same way on a CPU: said once, skipped after
                    why = needs_gpu or f"not run: {timed_out[shape.key]} timed out on this shape"
                    results[i] = ShapeResult(shape, dist, "SKIP", why)
                    continue
                item = {"id": f"{shape.set_name}:{shape.index}:{dist}", "params": shape.params, "dist": dist,
                        "problem": shape.problem}
                if progress:
                    progress({"event": "start", "item": item["id"] + (f" (GPU {gpu})" if gpu is not None else "")})
                results[i] = _one_item(children, [s.label for s in subs], mode, together, shape, dist, item, seeds,
                                       plan, timeout_s, progress, compare_outputs)
                results[i].device = next((c.device for c in children if c.device), None)
                if results[i].status == "TIMEOUT":
                    timed_out[shape.key] = dist
                if capability is None and results[i].status != "PASS" and gpu_only(results[i].message):
                    needs_gpu = f"needs a GPU (first failure: {results[i].message[:160]})"
                if capability is None and results[i].ratio:
                    # NOTE: CPU times of a Python path are not comparable: no verdict is given on them
                    results[i].ratio["verdict"] = NO_VERDICT
                if gpu is not None:
                    results[i].extra["gpu_index"] = gpu
                if progress:
                    progress({"event": "done", "item": item["id"], "line": done_line(results[i], [s.label for s in subs])})
                devices.setdefault(gpu, next((c.device for c in children if c.device), None))
        except isolation.SandboxBroken as exc:
            broken.append(exc)  # raised once every GPU's children are stopped: no verdict is the submission's
        except Exception as exc:  # noqa: BLE001 - a harness fault on one GPU must not lose the others
            for i in indices:
                if results[i] is None:
                    results[i] = ShapeResult(*items[i], "FAIL", f"harness error: {type(exc).__name__}: {exc}")
        finally:
            if shared is not None:
                outcome.logs.extend(shared.logs())  # NOTE: left running for the table's next version
            else:
                _stop_children(children, outcome)

    broken: list[isolation.SandboxBroken] = []
    with isolation.reaped_on_signals():
        if gpus and len(gpus) > 1:
            from harness import sharding
            shards = sharding.shard(list(range(len(items))), gpus, cost=lambda i: _item_cost(items[i][0]))
            threads = [threading.Thread(target=serve, args=(idx, gpu), name=f"gpu-{gpu}") for gpu, idx in shards.items()]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            outcome.extra_devices = {g: d for g, d in devices.items() if d}
        else:
            serve(list(range(len(items))), gpus[0] if gpus else None)
    if broken:
        raise broken[0]
    outcome.results = [r for r in results if r is not None]
    outcome.device = next((d for d in devices.values() if d), None)
    _finish(outcome)
    return outcome


def _children(job: dict, described: list[dict], untrusted: list[bool], together: bool, env: dict,
              compile_timeout_s: float, progress) -> list:
    """The worker processes of one GPU's share: one importing both versions (``together``), or
    one per version (sandboxed where ``untrusted``)."""
    if together:
        return [isolation.Child(job, described[0], compile_timeout_s=compile_timeout_s, on_event=progress,
                                extra_env=env, together=described[1:])]
    return [isolation.Child(job, d, compile_timeout_s=compile_timeout_s, on_event=progress, extra_env=env, untrusted=u)
            for d, u in zip(described, untrusted)]


@dataclass
class BadInputResult:
    case: str
    kind: str  # reference.bad_inputs.SAME or BROKEN
    outcome: str  # refused, right, wrong, ran (a broken input returned), CRASH, TIMEOUT, or the import's status
    detail: str = ""
    good: bool | None = None  # the good call right after it was right (None: the process did not get there)
    good_detail: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome in ("refused", "right", "ran") and self.good is True


def bad_inputs(sub: Submission, shape: Shape, dist: str, *, timeout_s: float = isolation.DEFAULT_TIMEOUT_S,
               compile_timeout_s: float = isolation.DEFAULT_COMPILE_TIMEOUT_S, capability=None,
               progress: Callable[[dict], None] | None = None, untrusted_all: bool = False) -> tuple[list[BadInputResult], JobOutcome]:
    """Every bad input of the problem (reference.bad_inputs) through ``sub`` on ``shape``, each in the
    version's worker process (sandboxed where ``run`` would sandbox it); a case that ends the process is
    its CRASH (or TIMEOUT), and the next case gets a fresh process. The outcome carries the refusal,
    the device and the logs as ``run``'s does."""
    from reference import bad_inputs as cases_mod
    outcome = JobOutcome([sub], None)
    refusal = _refusal([sub], capability)
    if refusal:
        outcome.refused = f"{refusal[0]}: {refusal[1]}"
        return [], outcome
    described = _described([sub])
    children = _children({"mode": "test", "problem": sub.problem, "ceilings": False}, described,
                         [_untrusted(sub, untrusted_all)], False, {}, compile_timeout_s, progress)
    child = children[0]
    item = {"id": f"{shape.set_name}:{shape.index}:{dist}", "params": shape.params, "dist": dist, "problem": shape.problem}
    results = []
    with isolation.reaped_on_signals():
        try:
            for index, case in enumerate(cases_mod.cases(sub.problem)):
                if progress:
                    progress({"event": "start", "item": case.name})
                try:
                    reply = child.request({"cmd": "bad_input", "item": item, "case": index}, timeout_s)
                except isolation.ChildFailure as exc:
                    results.append(BadInputResult(case.name, case.kind, exc.status, exc.message.removeprefix(f"{exc.status}: ")))
                    if child.import_failure is not None:
                        break  # NOTE: the version never imports: every case would say the same
                    continue
                if reply.get("status") != "PASS":
                    results.append(BadInputResult(case.name, case.kind, reply.get("status", "FAIL"), reply.get("message", "")))
                    continue
                results.append(BadInputResult(case.name, case.kind, reply["outcome"], reply.get("detail", ""),
                                              reply.get("good"), reply.get("good_detail", "")))
        finally:
            _stop_children(children, outcome)
    outcome.device = child.device
    return results, outcome


def _described(subs: list[Submission]) -> list[dict]:
    """How a child is told which files to import (harness.worker's job)."""
    return [{"label": s.label, "path": str(s.path), "source_hash": s.source_hash} for s in subs]


def _untrusted(sub: Submission, untrusted_all: bool) -> bool:
    """Whether ``sub`` runs sandboxed: any file from outside the lab, or every file with --untrusted."""
    return untrusted_all or not submissions.in_lab(sub)


def _stop_children(children: list, outcome: JobOutcome) -> None:
    """Stops them; their logs and how each was confined go into ``outcome``."""
    for c in children:
        c.stop()
        outcome.logs.extend(c.logs)
        if c.sandboxed:
            outcome.sandboxes[c.label] = c.sandboxed
        elif c.unsandboxed_why:
            outcome.unsandboxed[c.label] = c.unsandboxed_why


def shared_versions(subs: list[Submission], capability, untrusted_all: bool = False) -> list[Submission]:
    """The versions of ``subs`` a table's shared process may import (:class:`SharedChild`): the
    lab's own (a file from elsewhere keeps a sandboxed process of its own), that this machine can
    run, and never two that load an extension of one name: torch's JIT keys its versions by the
    name, so the second would be rebuilt at import (minutes of nvcc) instead of loaded from the
    build cache. A file whose extension name cannot be read runs alone, for the same reason."""
    from harness import contract
    kept, names = [], set()
    for sub in subs:
        if _untrusted(sub, untrusted_all) or _refusal([sub], capability):
            continue
        if sub.compiles_cuda:
            try:
                found = contract.read(sub.path)
            except (contract.ContractError, OSError, SyntaxError):
                continue
            if "EXTENSION_NAME" not in found.lines or found.extension_name in names:
                continue
            names.add(found.extension_name)
        kept.append(sub)
    return kept


class SharedChild:
    """One GPU's worker process for a table's ladder (:mod:`harness.ladder` says why): every version
    it may time imported once at its start, each shape then checked, warmed and timed for one
    version at a time (the ``sub`` of ``prepare`` and ``block``), exactly as in a process of the
    version's own.

    What fails is one version's, never the ladder's:

    - a version whose import fails (an error, TAMPERED, a crash or hang while importing it) is
      dropped: its shapes get that verdict, and a fresh process imports the others;
    - a crash or timeout while timing ends the process (:class:`harness.isolation.Child`'s rule:
      that shape's CRASH or TIMEOUT); the next shape, of whichever version, starts a fresh one.

    A process that has opened a torch.profiler session (a ``timing.PROFILER_METHODS`` block asked of
    it, or its reply saying so) is replaced before it is asked to prepare an event method's shape:
    CUPTI's callbacks stay on every launch of it (``harness.timing._profiler`` cites what they
    cost; the ladder orders the event methods first, so a table never pays this).

    ``built(sub)``: whether ``sub``'s build has ended well (default: all have). A process imports
    the versions built when it starts, and a later one when its first shape is asked for (the
    worker's ``import`` command: guard bound before, asked after, as at start). NOTE: issue 49's
    `table group_gemm` (H200, session 52) waited 65 s for all 34 builds before timing any version,
    although v0 was built first and its rows alone take ~22 s; a process restarted to take the
    versions built since would pay its ~6-10 s start each time a build ends after the last start.

    ``progress`` is the current piece's event printer (``run`` sets it); used from one thread,
    the GPU's, which must also stop it (a child dies with the thread that started it)."""

    def __init__(self, subs: list[Submission], gpu: int | None, compile_timeout_s: float = isolation.DEFAULT_COMPILE_TIMEOUT_S,
                 built: Callable[[Submission], bool] | None = None):
        problems = {s.problem for s in subs}
        if len(problems) != 1:
            raise ValueError(f"a shared process holds the versions of one problem, not {sorted(problems)}")
        self.subs = list(subs)
        self.gpu = gpu
        self.job = {"mode": "run", "problem": subs[0].problem, "ceilings": True}
        self.env = {"CUDA_VISIBLE_DEVICES": visible_device(gpu)} if gpu is not None else {}
        self.compile_timeout_s = compile_timeout_s
        self.built = built or (lambda sub: True)
        self.progress: Callable[[dict], None] | None = None
        self.refused: dict[str, isolation.ChildFailure] = {}  # label -> why its import failed
        self.child: isolation.Child | None = None
        self.members: list[str] = []  # the labels the running process imported, in its ``sub`` order
        self.device: dict | None = None
        self.started = 0  # processes started
        self.profiler_opened = False  # whether the running process has opened a torch.profiler session
        self._old_logs: list = []

    def seat(self, sub: Submission) -> "_Seat":
        return _Seat(self, sub)

    def logs(self) -> list:
        """The logs of every process started so far."""
        return self._old_logs + (self.child.logs if self.child else [])

    def child_for(self, sub: Submission) -> tuple[isolation.Child, int]:
        """The running process holding ``sub`` (started if none runs) and ``sub``'s index in it;
        ChildFailure where the version's import failed, or the process cannot start at all."""
        if sub.label not in self.refused and (self.child is None or not self.child.alive()):
            self._start(sub)
        if sub.label in self.refused:
            raise self.refused[sub.label]
        if sub.label not in self.members:
            self._import(sub)
        return self.child, self.members.index(sub.label)

    def _import(self, sub: Submission) -> None:
        """``sub`` imported into the running process (built after it started); ChildFailure (and the
        version refused, the process ended) where its import fails."""
        t0 = time.monotonic()
        try:
            reply = self.child.request({"cmd": "import", "submission": _described([sub])[0]}, self.compile_timeout_s)
        except isolation.ChildFailure as exc:  # a crash or hang while importing it: the version's
            self.stop()
            self.refused[sub.label] = exc
            raise
        if reply.get("status") != "PASS":
            self.stop()
            self.refused[sub.label] = isolation.ChildFailure(reply.get("status", "FAIL"), reply.get("message", ""))
            raise self.refused[sub.label]
        if reply.get("sub") != len(self.members):
            self.stop()  # NOTE: the child's count and ours disagree: no index we send could be trusted
            raise isolation.ChildFailure("FAIL", f"harness error: the shared process numbered {sub.label} "
                                         f"{reply.get('sub')!r}, not {len(self.members)}")
        self.members.append(sub.label)
        where = f"GPU {self.gpu}" if self.gpu is not None else "this machine"
        self._relay({"event": "note", "text": f"{where}: {sub.label} imported into the running process "
                     f"in {time.monotonic() - t0:.1f} s"})

    def _start(self, sub: Submission | None = None) -> None:
        """A fresh process with every version built now (and ``sub``, whose shape is asked for)."""
        self.stop()
        while True:
            members = [s for s in self.subs if s.label not in self.refused and (s.label == getattr(sub, "label", None) or self.built(s))]
            if not members:
                return
            described = _described(members)
            child = isolation.Child(self.job, described[0], together=described[1:], compile_timeout_s=self.compile_timeout_s,
                                    on_event=self._relay, extra_env=self.env)
            t0 = time.monotonic()
            self.started += 1
            try:
                child.start()
            except isolation.ChildFailure as exc:
                child.stop()
                self._old_logs.extend(child.logs)
                if child.failed_import is None:
                    raise  # before any version's code ran: the process's failure, this shape's verdict
                bad = members[child.failed_import]
                message = exc.message.removeprefix(f"{bad.label}: ")  # the row is the version's own
                self.refused[bad.label] = isolation.ChildFailure(exc.status, message)
                continue
            self.child, self.members = child, [s.label for s in members]
            self.device = child.device or self.device
            where = f"GPU {self.gpu}" if self.gpu is not None else "this machine"
            self._relay({"event": "note", "text": f"{where}: one process imported {len(members)} versions "
                         f"({', '.join(self.members)}) in {time.monotonic() - t0:.1f} s"})
            return

    def _relay(self, event: dict) -> None:
        if self.progress:
            self.progress(event)

    def stop(self) -> None:
        if self.child is not None:
            self.child.stop()
            self._old_logs.extend(self.child.logs)
            self.child, self.members = None, []
        self.profiler_opened = False

    def before(self, command: dict) -> None:
        """Stops a process that has opened a profiler before it prepares an event method's shape (the
        class's docstring says why): the next one serves it."""
        if command["cmd"] == "prepare" and command["method"] not in timing.PROFILER_METHODS and self.profiler_opened:
            where = f"GPU {self.gpu}" if self.gpu is not None else "this machine"
            self._relay({"event": "note", "text": f"{where}: a fresh process for the {command['method']} method "
                         "(the last one opened a torch.profiler session)"})
            self.stop()


class _Seat:
    """One version of a :class:`SharedChild`, used by the round loop as it uses a version's own
    :class:`harness.isolation.Child`: commands go to the shared process, ``prepare`` and ``block``
    naming the version (``sub``); ``stop`` ends the process (``run --processes``: a fresh one)."""
    sandboxed = ""
    unsandboxed_why = ""

    def __init__(self, shared: SharedChild, sub: Submission):
        self.shared, self.sub = shared, sub

    @property
    def label(self) -> str:
        return self.sub.label

    @property
    def device(self) -> dict | None:
        return self.shared.device

    def alive(self) -> bool:
        return self.shared.child is not None and self.shared.child.alive()

    def start(self) -> None:
        self.shared.child_for(self.sub)

    def stop(self) -> None:
        self.shared.stop()

    def request(self, command: dict, timeout_s: float) -> dict:
        self.shared.before(command)
        child, index = self.shared.child_for(self.sub)
        if command["cmd"] in ("prepare", "block"):
            command = dict(command, sub=index)
            if command["method"] in timing.PROFILER_METHODS:
                self.shared.profiler_opened = True  # NOTE: the parent's own count: a CPU child opens none
        reply = child.request(command, timeout_s)
        if reply.get("profiler_opened"):
            self.shared.profiler_opened = True
        return reply


def _refusal(subs: list[Submission], capability) -> tuple[str, str] | None:
    """(label, why) of the first submission this machine cannot run, or None."""
    for sub in subs:
        why = machine.arch_refusal(sub.arch, capability)
        if not why and capability is None and "arch" not in sub.header and sub.compiles_cuda:
            # NOTE: a GPU MODE CUDA file has no Arch line; on a CPU it failed on load_inline's
            # "CUDA_HOME environment variable is not set", once per shape
            why = "compiles CUDA (load_inline) and names no Arch: needs an NVIDIA GPU; this machine has none"
        if why:
            return sub.label, why
    return None


def _one_item(children, labels: list[str], mode: str, together: bool, shape, dist, item, seeds: int,
              plan: TimingPlan, timeout_s, progress, compare_outputs: bool = False) -> ShapeResult:
    """One (shape, dist) by the command: checked (test), timed (run), or two versions timed against
    each other (compare: in one process, paired between two, or over process generations;
    ``compare_outputs``: and their outputs compared)."""
    if mode == "test":
        return _test_item(children[0], shape, dist, item, seeds, timeout_s)
    if together:
        return _measure_paired([(children[0], 0), (children[0], 1)], labels, shape, dist, item, plan, timeout_s, progress,
                               compare_outputs)
    if mode == "compare" and plan.isolated:
        return _measure_isolated(children, shape, dist, item, plan, timeout_s, progress, compare_outputs)
    if mode == "compare":
        return _measure_paired([(children[0], 0), (children[1], 0)], labels, shape, dist, item, plan, timeout_s, progress,
                               compare_outputs)
    return _measure_run(children[0], shape, dist, item, plan, timeout_s, progress)


# What a submission says when it needs CUDA that a CPU machine lacks (torch's and the driver's words).
_GPU_ONLY = ("Torch not compiled with CUDA", "Found no NVIDIA driver", "no CUDA GPUs are available", "CUDA_HOME",
             "cuda_runtime", "libcuda", "CUDA driver", "device='cuda'", "cudaGetDevice", "No CUDA")


def gpu_only(message: str) -> bool:
    """Whether a failure on a CPU machine says the submission needs a GPU (then its other shapes are
    skipped with that reason instead of failing one by one)."""
    return any(marker.lower() in (message or "").lower() for marker in _GPU_ONLY)


def done_line(result: ShapeResult, labels: list[str]) -> str:
    """One line for a finished shape: status, mean µs per submission, and compare's verdict."""
    parts = [f"{result.shape.label} {result.dist}: {result.status}"]
    for label, st in zip(labels, result.stats or []):
        if st and st.get("mean_us") is not None:
            parts.append(f"{label} {st['mean_us']:.2f} µs")
    if result.ratio:
        r = result.ratio
        parts.append(f"{r['speedup']:.3f}x [{r['lo']:.3f}, {r['hi']:.3f}] {r['verdict']}")
    if result.outputs:
        parts.append(f"outputs: {outputs_phrase(result.outputs, labels)}")
    if result.message and not result.ok:
        parts.append(result.message)
    return ", ".join(parts)


def outputs_compared(a: list[dict], b: list[dict]) -> dict | None:
    """Whether B's outputs were A's bit for bit, from the judge's digests of each side's checked calls
    (``judge.Judge.digest``; the same seeds, so the same input sets, on both sides): an input set's
    outputs are equal when every output either side gave for it has one digest (the repeat in fresh
    buffers and every process generation's pool included). ``input_sets`` compared, how many
    ``differ``, and the sides ("A", "B") whose own outputs changed from call to call on one input set
    (``varies``: then a difference may be that side's alone); None where no input set has both sides'."""
    by_seed: list[dict] = [{}, {}]
    for seen, entries in zip(by_seed, (a, b)):
        for entry in entries:
            seen.setdefault(entry["seed"], set()).add(entry["digest"])
    seeds = by_seed[0].keys() & by_seed[1].keys()
    if not seeds:
        return None
    return {"input_sets": len(seeds), "differ": sum(len(by_seed[0][s] | by_seed[1][s]) > 1 for s in seeds),
            "varies": [side for side, seen in zip("AB", by_seed) if any(len(seen[s]) > 1 for s in seeds)]}


def outputs_phrase(outputs: dict, labels: list[str]) -> str:
    """:func:`outputs_compared`'s finding in words, B's outputs against A's (``labels``: A's, B's)."""
    if not outputs["differ"]:
        return f"bit for bit {labels[0]}'s"
    text = f"differ from {labels[0]}'s on {outputs['differ']} of {outputs['input_sets']} input sets"
    varies = [labels["AB".index(side)] + "'s" for side in outputs["varies"]]
    return text + (f" ({' and '.join(varies)} own outputs change from call to call on one input)" if varies else "")


def visible_device(gpu: int) -> str:
    """The CUDA_VISIBLE_DEVICES entry for local index ``gpu`` (honours an inherited list)."""
    import os
    inherited = [x.strip() for x in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if x.strip()]
    return inherited[gpu] if inherited and gpu < len(inherited) else str(gpu)


def _item_cost(shape: Shape) -> float:
    """Relative time of a shape: its floor with round ceilings (only the order matters)."""
    return roofline.floor_us(shape.problem, shape.params, {"bf16_tflops": 800.0, "copy_tbps": 4.0}) or 1.0


def _test_item(child, shape, dist, item, seeds, timeout_s) -> ShapeResult:
    try:
        reply = child.request({"cmd": "test", "item": item, "seeds": seeds}, timeout_s)
    except isolation.ChildFailure as exc:
        return ShapeResult(shape, dist, exc.status, exc.message)
    return ShapeResult(shape, dist, reply["status"], reply.get("message", ""))


def _together(calls: list[Callable[[], None]]) -> None:
    """Runs the calls in threads and waits for all (child processes start and stop in parallel)."""
    threads = [threading.Thread(target=call) for call in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _start_together(children, order) -> tuple[int, str, str] | None:
    """Starts the children that are not running, at the same time: a start is mostly the torch
    import and the CUDA context, seconds that compare pays again for every generation of processes.
    The first failure in ``order``, as (index, status, message)."""
    idle = [i for i in order if not children[i].alive()]
    if len(idle) < 2:
        return None
    failures: dict[int, isolation.ChildFailure] = {}
    launched = []
    for i in idle:  # NOTE: launched on this thread, only the waits in threads (Child.launch says why)
        try:
            children[i].launch()
            launched.append(i)
        except isolation.ChildFailure as exc:
            failures[i] = exc

    def ready(i: int) -> None:
        try:
            children[i].await_ready()
        except isolation.ChildFailure as exc:
            failures[i] = exc

    _together([lambda i=i: ready(i) for i in launched])
    first = next((i for i in order if i in failures), None)
    return None if first is None else (first, failures[first].status, failures[first].message)


def _prepare(children, order, item, plan, timeout_s, progress, extra, outputs: list | None = None) -> tuple[int, str, str] | None:
    """``prepare`` on each child in ``order`` (the children start together where they are not
    running); (index, status, message) on failure. ``outputs``: per child, a list the judge's digests
    of its checked outputs join (:func:`outputs_compared`); None: none asked for."""
    command = _prepare_command(item, plan, digest_outputs=outputs is not None)
    failure = _start_together(children, order)
    if failure:
        return failure
    for i in order:
        if progress:
            progress({"event": "progress", "item": item["id"], "stage": f"checking {children[i].label}"})
        try:
            reply = children[i].request(command, timeout_s)
        except isolation.ChildFailure as exc:
            return i, exc.status, exc.message
        if reply["status"] != "PASS":
            return i, reply["status"], reply.get("message", "")
        extra.setdefault(children[i].label, []).append({"l2_reset": reply.get("l2_reset"),
                                                        "graph_flush_us": reply.get("flush_us")})
        if reply.get("read_floor"):
            extra["read_floor"] = reply["read_floor"]
        if outputs is not None:
            outputs[i].extend(reply.get("outputs") or [])
    return None


def _prepare_command(item: dict, plan: TimingPlan, digest_outputs: bool = False) -> dict:
    """``digest_outputs``: the judge digests every checked output too (``isolation.Child._judged``), for
    compare's word on B's outputs against A's."""
    problem = item["problem"]
    command = {"cmd": "prepare", "item": item, "pool": plan.pool_size(problem), "method": plan.method,
               "warmup": plan.warmup, "flush": plan.flush, "batch": plan.batch(problem)}
    return dict(command, digest_outputs=True) if digest_outputs else command


def _kernel_extra(replies: list[dict]) -> dict | None:
    """The kernel method's by-products of a shape's kept blocks: summed durations and host µs per
    call (means), device records outside every call."""
    parts = [r["kernel"] for r in replies if r.get("kernel")]
    if not parts:
        return None
    sums = [x for p in parts for x in p["sum_us"]]
    hosts = [x for p in parts for x in p["host_us"]]
    return {"sum_us": sum(sums) / len(sums), "host_us": sum(hosts) / len(hosts),
            "activities_per_call": max(a for p in parts for a in p["activities"]),
            "stray_activities": sum(p["stray_activities"] for p in parts)}


def _issue_mean(replies: list[dict]) -> float | None:
    """The host µs a call took to return over a shape's kept blocks (the compiled clock's issue time, mean
    over batches), or None where the method has none (kernel; a block timed without the clock)."""
    issues = [x for r in replies for x in (r.get("issue_us") or [])]
    return sum(issues) / len(issues) if issues else None


def _measure_paired(sides: list[tuple], labels: list[str], shape, dist, item, plan: TimingPlan, timeout_s,
                    progress, compare_outputs: bool = False) -> ShapeResult:
    """compare of two versions, each prepared once: rounds of one block each, A B then B A, every
    block on never-seen inputs (identical for both: the seeds are the round's); the speedup from the
    paired blocks (``stats.paired_ratio_interval``). Stops once the verdict is decided and the
    interval lies within ±``plan.precision`` of its point (at least ``min_rounds``), or at the budget.

    ``sides``: (child, index of the kernel in it) for A and B: the team's own versions imported into
    one process (the same child twice: one pool), or a file from outside the lab in a (sandboxed)
    process of its own, kept alive across the rounds and shapes. NOTE: a stranger's compare made a
    fresh pair of processes per sample generation (compare --isolated), 166 s for one gemv shape on
    an H200, 104 s on a CPU; two processes prepared once cost their start once per command.
    ``compare_outputs``: B's outputs compared with A's on the checked pool (:func:`outputs_compared`)."""
    result = ShapeResult(shape, dist, "PASS")
    given = [[], []] if compare_outputs else None  # per side: the judge's digests of its checked outputs
    min_rounds = 6  # three order-balanced units (stats.order_balanced): a t quantile of 4.3, not 12.7
    children = list(dict.fromkeys(child for child, _ in sides))

    def fail(status: str, message: str, sub: int | None = None) -> ShapeResult:
        result.status = status
        result.message = (f"{labels[sub]}: " if sub is not None else "") + message
        return result

    if len(children) == 1:
        child = children[0]
        try:
            if not child.alive():
                child.start()
            if progress:
                progress({"event": "progress", "item": item["id"], "stage": "checking " + " and ".join(labels)})
            reply = child.request(_prepare_command(item, plan, digest_outputs=compare_outputs), timeout_s)
        except isolation.ChildFailure as exc:
            return fail(exc.status, exc.message)
        if reply["status"] != "PASS":
            return fail(reply["status"], reply.get("message", ""), reply.get("sub"))
        read_floor = reply.get("read_floor")
        if given is not None:
            for side, (_, index) in zip(given, sides):
                side.extend(entry for entry in reply.get("outputs") or [] if entry.get("sub") == index)
    else:
        prepared: dict = {}
        failure = _prepare(children, [0, 1], item, plan, timeout_s, progress, prepared, given)
        if failure:
            return _failed(result, labels, failure)
        read_floor = prepared.get("read_floor")
    rounds = _Rounds(2)
    a_first: list[bool] = []  # per kept round: whether A's block ran first
    decision = None
    while True:
        replies, failure = rounds.run_one([child for child, _ in sides], plan, timeout_s,
                                          subs=[index for _, index in sides], warm=False)
        if failure:
            return fail(failure[1], failure[2], failure[0])
        if not rounds.keep(replies, 0):
            continue
        a_first.append(rounds.count % 2 == 1)  # run_one's order: A first in odd rounds
        blocks = rounds.blocks
        n = len(blocks[0])
        if progress and n % 5 == 0:
            progress({"event": "progress", "item": item["id"], "stage": f"timing: {n} block pairs"})
        if n >= min_rounds and rounds.timed_s >= plan.rule.min_time_s:
            point, lo, hi = stats.paired_ratio_interval(*stats.order_balanced(blocks[0], blocks[1], a_first))
            verdict = stats.verdict(lo, hi, plan.margin)
            precise = max(point - lo, hi - point) <= plan.precision * point
            if verdict != "AMBIGUOUS" and precise:
                decision = (True, f"decided after {n} block pairs ({rounds.timed_s:.1f} s)")
                break
        # NOTE: never before a pair in each order: one pair has no interval (the ratio read NaN)
        if (rounds.timed_s >= plan.rule.budget_s and n >= 2) or rounds.count >= plan.rule.max_samples:
            decision = (False, f"time budget of {plan.rule.budget_s:g} s spent after {n} block pairs")
            break
    blocks, kept, tele_log = rounds.blocks, rounds.replies, rounds.telemetry
    _finish_children(children, timeout_s)
    converged, reason = decision
    result.stats = []
    for i in (0, 1):
        summary = stats.summarize(blocks[i], converged, reason)
        summary["throttled_blocks_kept"] = sum(1 for t in tele_log if t["throttled"])
        extra_kernel = _kernel_extra(kept[i])
        if extra_kernel:
            summary["kernel"] = extra_kernel
        issue = _issue_mean(kept[i])
        if issue is not None:
            summary["issue_us"] = issue
        result.stats.append(summary)
    result.samples = blocks
    result.telemetry = tele_log
    result.extra = {"rounds": rounds.count, "throttle_drops": rounds.dropped, "together": len(children) == 1, "read_floor": read_floor,
                    "seeds": {"base": item["params"]["seed"], "rule": "round 0: base+slot; round r: worker.round_seed"}}
    point, lo, hi = stats.paired_ratio_interval(*stats.order_balanced(blocks[0], blocks[1], a_first))
    # NOTE: kept so that an order effect shows: the rounds' ratios by which version went first, averaged
    # geometrically as every ratio here is (an arithmetic mean of ratios printed 1.377x and 2.591x by
    # order for identical code under a 0.932x headline: one slow block's ratio outweighed the rest)
    by_order = {first: [stats.ratio_interval([blocks[0][i]], [blocks[1][i]])[0]
                        for i in range(len(blocks[0])) if a_first[i] == (first == "A")] for first in ("A", "B")}
    result.ratio = {"speedup": point, "lo": lo, "hi": hi, "verdict": stats.verdict(lo, hi, plan.margin),
                    "processes": len(children), "pairs": len(blocks[0]), "decided": converged,
                    "by_order": {k: stats.geomean(v) for k, v in by_order.items()}}
    result.outputs = outputs_compared(*given) if given is not None else None
    return result


@dataclass
class _Rounds:
    """The timing rounds of one shape, the one round loop of run, compare and isolated compare: per
    side, in the sides' order, the kept blocks and their replies; the generation of every kept round."""
    children: int
    blocks: list = field(init=False)  # per child: the kept blocks of per-call µs
    replies: list = field(init=False)  # per child: the kept blocks' replies (kernel by-products)
    warm_blocks: list = field(init=False)  # per child: --warm's blocks
    generations: list[int] = field(default_factory=list)  # the process generation of every kept round
    telemetry: list = field(default_factory=list)  # per kept round: one NVML sample per child
    dropped: int = 0  # throttled rounds dropped (and retried)
    count: int = 0  # rounds run, dropped ones included
    timed_s: float = 0.0  # seconds spent in timing rounds (starting children and checking are not counted)

    def __post_init__(self):
        self.blocks = [[] for _ in range(self.children)]
        self.replies = [[] for _ in range(self.children)]
        self.warm_blocks = [[] for _ in range(self.children)]

    def run_one(self, children, plan: TimingPlan, timeout_s, subs: list[int] | None = None,
                warm: bool | None = None) -> tuple[dict[int, dict] | None, tuple | None]:
        """One block from every child, the first child first in odd rounds and last in even ones (A B,
        B A, ...: neither version always goes first). (replies by child, None), or (None, (index,
        status, message)) for the first child that failed. ``subs``: the kernel each child times
        (a one-process compare asks one child for both; default 0); ``warm``: default ``plan.warm``."""
        self.count += 1
        order = list(range(len(children)))
        if self.count % 2 == 0:
            order.reverse()
        replies = {}
        t0 = time.monotonic()
        for i in order:
            try:
                reply = children[i].request({"cmd": "block", "round": self.count, "method": plan.method,
                                             "warm": plan.warm if warm is None else warm,
                                             "sub": 0 if subs is None else subs[i]}, timeout_s)
            except isolation.ChildFailure as exc:
                return None, (i, exc.status, exc.message)
            if reply["status"] != "PASS":
                return None, (i, reply["status"], reply.get("message", ""))
            replies[i] = reply
        self.timed_s += time.monotonic() - t0
        return replies, None

    def keep(self, replies: dict[int, dict], generation: int) -> bool:
        """Keeps the round's blocks, unless a child's GPU was throttled and fewer than
        MAX_THROTTLE_DROPS rounds were dropped so far (then it is dropped: False). Past that bound a
        throttled round is kept, flagged in its telemetry entry."""
        samples = [replies[i].get("telemetry") for i in range(self.children)]
        throttled = any(telemetry.is_throttled(s) for s in samples)
        if throttled and self.dropped < MAX_THROTTLE_DROPS:
            self.dropped += 1
            return False
        self.telemetry.append({"round": self.count, "generation": generation, "throttled": throttled,
                               "samples": samples})
        for i in range(self.children):
            self.blocks[i].append(replies[i]["times_us"])
            self.replies[i].append(replies[i])
            if "warm_times_us" in replies[i]:
                self.warm_blocks[i].append(replies[i]["warm_times_us"])
        self.generations.append(generation)
        return True

    def report_progress(self, progress, item) -> None:
        if progress and self.count % 5 == 0:
            calls = sum(len(b) for b in self.blocks[0])
            progress({"event": "progress", "item": item["id"], "stage": f"timing: {calls} calls"})


def _start_generation(children, generation: int, item, plan, timeout_s, progress, extra,
                      outputs: list | None = None) -> tuple | None:
    """Fresh processes for ``generation`` (the previous generation's stopped first), prepared in
    alternating order: the first child first in even generations, the other first in odd ones
    (``outputs``: as :func:`_prepare`'s). (index, status, message) of the first failure, or None."""
    order = list(range(len(children)))
    if generation % 2 == 1:
        order.reverse()
    if generation > 0:
        _together([child.stop for child in children])
        if progress:
            progress({"event": "progress", "item": item["id"], "stage": f"process generation {generation + 1}"})
    return _prepare(children, order, item, plan, timeout_s, progress, extra, outputs)


def _failed(result: ShapeResult, labels: list[str], failure: tuple) -> ShapeResult:
    """``result`` with the failure's status and message; in a compare, the message names the side."""
    index, status, message = failure
    result.status = status
    result.message = (f"{labels[index]}: " if len(labels) > 1 else "") + message
    return result


def _finish_children(children, timeout_s) -> None:
    for child in children:
        try:
            child.request({"cmd": "finish"}, timeout_s)
        except isolation.ChildFailure:
            pass  # the samples are in; a child that dies while freeing memory is restarted next shape


def _fill_timed(result: ShapeResult, rounds: _Rounds, decision: tuple[bool, str], item, extra: dict,
                per_process: bool) -> None:
    """The shape's statistics per child from the kept rounds (``per_process``: the interval over
    the process generations, run --processes), its samples, telemetry and timing by-products."""
    converged, reason = decision
    result.stats = []
    for i in range(rounds.children):
        summary = stats.summarize(rounds.blocks[i], converged, reason,
                                  groups=rounds.generations if per_process else None)
        if rounds.warm_blocks[i]:
            summary["warm"] = stats.summarize(rounds.warm_blocks[i], converged, reason)
        summary["throttled_blocks_kept"] = sum(1 for t in rounds.telemetry if t["throttled"])
        extra_kernel = _kernel_extra(rounds.replies[i])
        if extra_kernel:
            summary["kernel"] = extra_kernel
        issue = _issue_mean(rounds.replies[i])
        if issue is not None:
            summary["issue_us"] = issue
        result.stats.append(summary)
    result.samples = rounds.blocks
    result.telemetry = rounds.telemetry
    read_floor = extra.pop("read_floor", None)
    result.extra = {"rounds": rounds.count, "throttle_drops": rounds.dropped, "children": extra,
                    "generations": rounds.generations, "read_floor": read_floor,
                    "seeds": {"base": item["params"]["seed"], "rule": "round 0: base+slot; round r: worker.round_seed"}}


def _measure_run(child, shape, dist, item, plan: TimingPlan, timeout_s, progress) -> ShapeResult:
    """``run``'s timing of one shape: rounds until the stopping rule is satisfied, in
    ``plan.run_processes`` fresh processes one after another, each with the rule and its share of
    the budget. Converged only if every process converged; with several, the mean's interval
    covers the spread between them (``stats.summarize`` over the generations)."""
    result = ShapeResult(shape, dist, "PASS")
    processes = max(1, plan.run_processes)
    rule = dataclasses.replace(plan.rule, budget_s=plan.rule.budget_s / processes)
    rounds = _Rounds(1)
    extra: dict = {}
    unconverged: list[str] = []
    decision = None
    for generation in range(processes):
        failure = _start_generation([child], generation, item, plan, timeout_s, progress, extra)
        if failure:
            return _failed(result, [child.label], failure)
        start_s, start_kept = rounds.timed_s, len(rounds.generations)
        while True:
            replies, failure = rounds.run_one([child], plan, timeout_s)
            if failure:
                return _failed(result, [child.label], failure)
            if not rounds.keep(replies, generation):
                continue
            rounds.report_progress(progress, item)
            kept = rounds.blocks[0][start_kept:]
            decision = rule.decide([t for b in kept for t in b], rounds.timed_s - start_s, len(kept))
            if decision:
                if not decision[0]:
                    unconverged.append(decision[1])
                break
    if unconverged:
        decision = (False, unconverged[0] + (f" (in {len(unconverged)} of {processes} processes)" if processes > 1 else ""))
    _finish_children([child], timeout_s)
    _fill_timed(result, rounds, decision or (False, "stopped"), item, extra, per_process=True)
    return result


def _measure_isolated(children, shape, dist, item, plan: TimingPlan, timeout_s, progress,
                      compare_outputs: bool = False) -> ShapeResult:
    """``compare --isolated``'s timing of one shape: generations of fresh process pairs (started
    together, prepared in alternating order), each timing for ``budget / processes`` seconds; after
    ``plan.processes`` generations, two more at a time while the verdict is AMBIGUOUS, up to
    ``plan.max_processes``. Two processes of identical code differ by 1-2% (measured), so the
    generations are the independent samples of the compare: their spread enters the interval
    (bootstrap and Student-t over generations) instead of the verdict. ``compare_outputs``: B's outputs
    compared with A's on every generation's checked pool (:func:`outputs_compared`)."""
    result = ShapeResult(shape, dist, "PASS")
    given = [[], []] if compare_outputs else None  # per side: the judge's digests of its checked outputs
    labels = [c.label for c in children]
    min_generations = max(1, plan.processes)
    max_generations = max(min_generations, plan.max_processes)
    generation_budget = plan.rule.budget_s / min_generations
    rounds = _Rounds(len(children))
    extra: dict = {}
    decision = None
    generation = 0
    while generation < max_generations:
        failure = _start_generation(children, generation, item, plan, timeout_s, progress, extra, given)
        if failure:
            return _failed(result, labels, failure)
        start_s, kept = rounds.timed_s, 0
        while True:
            replies, failure = rounds.run_one(children, plan, timeout_s)
            if failure:
                return _failed(result, labels, failure)
            if not rounds.keep(replies, generation):
                continue
            kept += 1
            rounds.report_progress(progress, item)
            if kept >= 2 and rounds.timed_s - start_s >= generation_budget:
                break
        generation += 1
        # NOTE: a verdict is read after the minimum, then after every second generation (an even
        # count keeps the prepared-first order balanced), or at the last one allowed.
        if generation >= min_generations and ((generation - min_generations) % 2 == 0 or generation == max_generations):
            _, lo, hi = stats.ratio_interval(rounds.blocks[0], rounds.blocks[1], groups=rounds.generations)
            if stats.verdict(lo, hi, plan.margin) != "AMBIGUOUS":
                decision = (True, f"decided after {generation} process generation(s)")
                break
    if decision is None:
        decision = (False, f"still AMBIGUOUS after {generation} process generation(s) (--max-processes)")
    _finish_children(children, timeout_s)
    _fill_timed(result, rounds, decision, item, extra, per_process=False)
    blocks, groups = rounds.blocks, rounds.generations
    point, lo, hi = stats.ratio_interval(blocks[0], blocks[1], groups=groups)
    by_generation = []
    for gen in sorted(set(groups)):
        ga = [b for b, g in zip(blocks[0], groups) if g == gen]
        gb = [b for b, g in zip(blocks[1], groups) if g == gen]
        by_generation.append({"generation": gen, "first_prepared": "B" if gen % 2 else "A",
                              "speedup": stats.ratio_interval(ga, gb)[0], "rounds": len(ga)})
    result.ratio = {"speedup": point, "lo": lo, "hi": hi, "verdict": stats.verdict(lo, hi, plan.margin),
                    "processes": len(by_generation), "by_generation": by_generation}
    result.outputs = outputs_compared(*given) if given is not None else None
    return result


def combined(parts: list[JobOutcome], shapes: list[Shape]) -> JobOutcome:
    """One outcome from outcomes of the same submissions on disjoint shapes (a ladder's pieces,
    each maybe on its own GPU: harness.ladder), results in the order of ``shapes`` and judged as
    one (floors, plausibility, geomeans) on the first part's device."""
    first = parts[0]
    order = {shape.key: i for i, shape in enumerate(shapes)}
    outcome = JobOutcome(first.submissions, next((p.device for p in parts if p.device), None), plan=first.plan,
                         refused=next((p.refused for p in parts if p.refused), None))
    outcome.results = sorted((r for p in parts for r in p.results), key=lambda r: order.get(r.shape.key, len(order)))
    for p in parts:
        outcome.logs.extend(p.logs)
        outcome.extra_devices.update(p.extra_devices)
        outcome.sandboxes.update(p.sandboxes)
        outcome.unsandboxed.update(p.unsandboxed)
    on = {r.extra["gpu_index"]: r.device for r in outcome.results if r.extra.get("gpu_index") is not None and r.device}
    if len(on) > 1:
        outcome.extra_devices.update(on)
    if len(parts) > 1:
        _finish(outcome)
    else:
        outcome.geomean = first.geomean
    return outcome


def _finish(outcome: JobOutcome) -> None:
    """Floors, plausibility, and the geomeans with their intervals."""
    dev = outcome.device or {}
    figures = dev.get("ceilings")
    for r in outcome.results:
        r.floor_us = roofline.floor_us(r.shape.problem, r.shape.params, figures)
        r.physical_floor_us = roofline.physical_floor_us(r.shape.problem, r.shape.params, dev.get("gpu", ""), figures)
        if r.ok and r.stats:
            for sub, st in zip(outcome.submissions, r.stats):
                why = roofline.plausibility(st["mean_us"], r.physical_floor_us)
                if why:
                    r.status, r.message = "IMPLAUSIBLE", (f"{sub.label}: " if len(r.stats) > 1 else "") + why
                    break
    timed = [r for r in outcome.results if r.stats]
    if not timed:
        return
    outcome.geomean = {}
    complete = all(r.ok for r in outcome.results)
    for i, sub in enumerate(outcome.submissions):
        gm = stats.geomean_interval([r.samples[i] for r in timed]) if complete else None
        outcome.geomean[sub.label] = gm
    if len(outcome.submissions) == 2:
        outcome.geomean["ratio"] = (stats.geomean_ratio_interval(
            [(r.samples[0], r.samples[1], r.extra.get("generations")) for r in timed]) if complete else None)
