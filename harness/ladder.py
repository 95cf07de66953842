"""A whole ladder timed at once (issue 49): every (version, shape, method) job of a table in one
list over the GPUs, each GPU taking the next jobs as soon as it is free.

NOTE: issue 49 measured `table` running its versions one after another, each version's shapes
sharded over ``--gpus``: the GPUs waited for a version's slowest shape before the next version
started, and all four ladders (87 versions) took over an hour on a machine lent by the minute.

How the list is served:

- The jobs are in ladder order: version by version, for each version method by method, then its
  shapes; a GPU takes a (version, method) group whole when it can. Every event method's jobs
  (``timing.EVENT_METHODS``: gpumode, cold, ...) come before any profiler method's (kernel) of the
  same problem, so each GPU's process times its event methods before it opens a profiler. NOTE:
  kineto leaves CUPTI's callbacks on every later launch of a process that opened a torch.profiler
  session; in the order version by version, method by method, `table group_gemm --versions
  v52,v53,v54 --method gpumode --method kernel` (H200, session 52, one process) read v53's gpumode D
  25.23 µs a call after a kernel-method job against 19.95 re-timed first (docs/methodology.md,
  "Event methods before the profiler", has every figure). A
  process that opened one is replaced before an event method all the same
  (``runner.SharedChild``), so an order that slips costs a process start, never a figure.
- One process per GPU for the whole ladder (``runner.SharedChild``, made by the table in
  ``per_gpu``): it imports every lab version the GPU may time once (each when built), and each shape is checked,
  warmed and timed for one version at a time, as in a process of the version's own. NOTE: with a
  process per (version, method) group, `table gemv` on one H200 (commit 414d167) spent 9-11 s
  from a group's start to its first shape's result against 1.0-1.5 s for each further shape, and
  ~1.1 s between groups: ~10 s of process cost (child and judge start, import torch, CUDA context,
  extension load, first checks) paid 14 times for gpumode alone, 28 with kernel too; the table took
  339 s, 262 of them timing. A version that fails (its import, a crash, a hang) fails its own rows:
  the process is replaced and the GPU goes on. A file from outside the lab (or ``--untrusted``) is
  still a sandboxed process of its own per piece.
- A GPU never takes more than an even share of the jobs left (``claim``): near the end a group is
  split, so the last shapes spread over every GPU instead of queueing behind one.
- Each GPU serves its jobs in a thread of its own; children are pinned with CUDA_VISIBLE_DEVICES
  (``runner.run``'s ``gpus``), so two timings never share a GPU. Every result keeps the GPU index
  it ran on; the pieces of one (version, method) are put back together in shape order
  (``runner.combined``) and judged as one (floors, geomeans).
- A version is timed only once it is built (``ready``): the table builds in the background while it
  times (``harness.build.Background``), and a free GPU takes the first group in ladder order whose
  version is built (and of the front's kind, event or profiler), waiting only when none is. NOTE:
  issue 49: `table group_gemm` (H200, session 52) waited 65 s for all 34 builds before timing v0,
  whose rows alone take ~22 s; then, waiting for the front version's own build (session 56, two
  H200s, 32 cores, 38 builds), GPU 1 sat idle until 65.7 s for v2, the 30th build to end, while 29
  others had ended by 52 s: the builds start in ladder order but do not end in it. Taking the first
  built version, GPU 1 started at 31.2 s (the first builds' end) and the table took 144 s against 187
  (another bare two-GPU machine, whose 38 builds ended at 53 s against 81: part of the gain is its own).
- ``on_piece`` hears of every finished piece at once (the table records it then: a run stopped at a
  time limit keeps what it measured).

The function that times a piece is a parameter, so the scheduling is tested on the CPU with a fake.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from typing import Callable, Collection, ContextManager, Hashable, Sequence

from harness import runner, timing
from harness.config import Shape
from harness.submissions import Submission


READY_POLL_S = 0.05  # how often a GPU waiting for a build looks again (a build takes ~20-50 s)


@dataclass(frozen=True)
class Job:
    version: int  # index into the ladder's versions
    method: str  # the timing method (a TimingPlan's)
    shape: int  # index into that version's shapes


def job_list(shape_counts: Sequence[int], methods: Sequence[str], skip: Collection[tuple[int, str]] = (),
             problems: Sequence[Hashable] | None = None) -> list[Job]:
    """Every (version, method, shape) job in ladder order (version by version, method by method),
    the event methods' jobs before the profiler methods' (the module's docstring says why): per
    problem (``problems[v]``, version ``v``'s; in order of first appearance; default one), its
    versions' event-method jobs, then their profiler-method jobs. None of the (version, method)
    groups in ``skip``."""
    problems = list(problems) if problems is not None else [None] * len(shape_counts)
    event = [m for m in methods if m not in timing.PROFILER_METHODS]
    profiler = [m for m in methods if m in timing.PROFILER_METHODS]
    jobs = []
    for problem in dict.fromkeys(problems):
        versions = [v for v, p in enumerate(problems) if p == problem]
        for kinds in (event, profiler):
            jobs += [Job(v, m, s) for v in versions for m in kinds if (v, m) not in skip
                     for s in range(shape_counts[v])]
    return jobs


def claim(pending: Sequence[Job], workers: int) -> int:
    """How many jobs from the front of ``pending`` a free GPU takes (one of ``workers``): the front
    (version, method) group whole, but never more than an even share of the jobs left, and at
    least one while any is left."""
    if not pending:
        return 0
    head = (pending[0].version, pending[0].method)
    group = next((i for i, job in enumerate(pending) if (job.version, job.method) != head), len(pending))
    share = -(-len(pending) // max(1, workers))
    return max(1, min(group, share))


def first_ready(pending: Sequence[Job], ready: Callable[[int], bool] | None) -> int | None:
    """Where a free GPU starts its claim in ``pending``: the first job whose version is ``ready``
    among those of the front job's kind (event methods, or the profiler's: a process times its event
    methods before it opens a profiler, the module's docstring says why), 0 when every version is
    ready or nothing is left, None when none of them is ready yet (the GPU waits)."""
    if not pending or ready is None:
        return 0
    profiled = pending[0].method in timing.PROFILER_METHODS
    asked: dict[int, bool] = {}
    for i, job in enumerate(pending):
        if (job.method in timing.PROFILER_METHODS) != profiled:
            break
        if asked.setdefault(job.version, ready(job.version)):
            return i
    return None


RunPiece = Callable[[Submission, list[Shape], runner.TimingPlan, Hashable], runner.JobOutcome]


def run(subs: Sequence[Submission], shapes_of: Callable[[Submission], list[Shape]],
        plans: Sequence[runner.TimingPlan], gpus: Sequence[Hashable], run_piece: RunPiece,
        on_piece: Callable[[runner.JobOutcome, int, int], None] | None = None,
        per_gpu: Callable[[Hashable], ContextManager] | None = None,
        skip: Collection[tuple[int, str]] = (), ready: Callable[[int], bool] | None = None,
        ) -> dict[tuple[int, str], runner.JobOutcome]:
    """Every version of ``subs`` on its shapes (``shapes_of``) with every plan (one per method),
    over ``gpus``.

    ``gpus``: the GPU indices to serve (``[None]``: the current device, no pinning). ``run_piece(sub,
    shapes, plan, gpu)`` times one piece and returns its outcome; ``on_piece(outcome, jobs_done,
    jobs_total)`` is told of each as it ends. Returns ``(version index, method) -> outcome`` with
    each outcome's results in the order of that version's shapes. ``per_gpu(gpu)``, a context
    manager, is entered by the GPU's thread before its first piece and left after its last (the
    table's shared process lives there: a child dies with the thread that started it). A piece that raises becomes FAIL
    results naming the harness error (the other GPUs go on); an ``on_piece`` that raises stops every
    GPU after its current piece, and the error is raised here. ``skip``: (version index, method)
    groups not to time (``table --missing``: recorded already); they get no outcome. ``ready(v)``
    (quick: asked under the ladder's lock): whether version index ``v`` may be timed now (its build
    ended); a free GPU takes the first group of a ready version (``first_ready``), waiting while
    there is none (default: all are ready)."""
    shapes = [list(shapes_of(sub)) for sub in subs]
    by_method = {plan.method: plan for plan in plans}
    pending = job_list([len(s) for s in shapes], list(by_method), skip, [sub.problem for sub in subs])
    total = len(pending)
    parts: dict[tuple[int, str], list[runner.JobOutcome]] = {}
    lock, told = threading.Lock(), threading.Lock()
    state = {"done": 0, "error": None}

    def serve(gpu: Hashable) -> None:
        with per_gpu(gpu) if per_gpu else contextlib.nullcontext():
            serve_pieces(gpu)

    def serve_pieces(gpu: Hashable) -> None:
        while True:
            with lock:
                if state["error"] is not None:
                    return
                start = first_ready(pending, ready)
                waiting = start is None
                if not waiting:
                    n = claim(pending[start:], len(gpus))
                    if n == 0:
                        return
                    piece, pending[start:start + n] = pending[start:start + n], []
            if waiting:
                time.sleep(READY_POLL_S)
                continue
            sub, method = subs[piece[0].version], piece[0].method
            piece_shapes = [shapes[piece[0].version][job.shape] for job in piece]
            try:
                outcome = run_piece(sub, piece_shapes, by_method[method], gpu)
            except Exception as exc:  # noqa: BLE001 - a harness fault on one piece must not lose the others
                outcome = runner.JobOutcome([sub], None, [runner.ShapeResult(
                    s, "competition", "FAIL", f"harness error: {type(exc).__name__}: {exc}") for s in piece_shapes],
                    plan=by_method[method])
            with told:  # NOTE: one piece told at a time, in the order of its count (a log reads 3 of 12 before 4)
                with lock:
                    parts.setdefault((piece[0].version, method), []).append(outcome)
                    state["done"] += len(piece)
                    done = state["done"]
                if on_piece:
                    try:
                        on_piece(outcome, done, total)
                    except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
                        with lock:
                            state["error"] = state["error"] or exc
                        return

    if len(gpus) == 1:
        serve(gpus[0])
    else:
        threads = [threading.Thread(target=serve, args=(gpu,), name=f"ladder-gpu-{gpu}") for gpu in gpus]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if state["error"] is not None:
        raise state["error"]
    return {key: runner.combined(pieces, shapes[key[0]]) for key, pieces in parts.items()}
