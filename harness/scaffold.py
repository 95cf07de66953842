"""Starting a version and handing one to the competition: text transformations of submission files.

``new_version``: a lineage file copied from its parent with a fresh docstring (the story of a
version is its own, so the parent's is not carried over) and its extension renamed, so both can
be imported into one process (compare) and built side by side. ``export``: the file with GPU MODE's
``#!POPCORN`` header lines, as its submission CLI takes it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from harness import paths, submissions
from harness.errors import UserError

# GPU MODE's leaderboard names for the problems (reference-kernels, problems/nvidia).
LEADERBOARDS = {"gemv": "nvfp4_gemv", "gemm": "nvfp4_gemm", "dual_gemm": "nvfp4_dual_gemm",
                "group_gemm": "nvfp4_group_gemm"}
# The NVIDIA GPUs a #!POPCORN gpu line may name, with their compute capability (what an Arch runs on).
POPCORN_GPUS = {"B200": (10, 0), "H100": (9, 0), "A100": (8, 0), "L4": (8, 9), "T4": (7, 5)}


def new_version(problem: str, version: str, parent: str, change: str) -> tuple[Path, str]:
    """(path, text) of version ``version`` of ``problem`` started from ``parent``; refuses an existing
    file, a label that is not vN, and a parent outside the lineage. A CUDA version whose parent does
    not carry the timeline marks gets them (``harness.probes.marks.MARKS_CUDA`` at the top of its
    ``CUDA_SRC``: ``NVFP4_MARK(id)``, nothing in a normal build), so every new version can be probed."""
    submissions.check_problem(problem)
    if not re.fullmatch(r"v\d+", version):
        raise UserError(f"{version!r}: a new version is named vN")
    target = paths.submissions_dir() / problem / f"submission_{version}.py"
    taken = target if target.exists() else paths.submissions_dir() / problem / submissions.ATTIC / target.name
    if taken.exists():  # NOTE: the attic's numbers too: a number names one version, wherever it lives
        raise UserError(f"{taken} exists: choose another number (nothing was written)")
    source = submissions.resolve(problem, parent)
    if not submissions.in_lab(source) or not re.fullmatch(r"v\d+", source.label):  # a lineage file, not the peer
        raise UserError(f"--from {parent}: start from a version of the lineage (vM)")
    text = source.path.read_text()
    tree = ast.parse(text)
    doc = ast.get_docstring(tree, clean=False)
    body_start = 0
    if doc is not None and tree.body and isinstance(tree.body[0], ast.Expr):
        lines = text.splitlines(keepends=True)
        body_start = sum(len(line) for line in lines[:tree.body[0].end_lineno])
    title = f"NVFP4 {problem} {version}: {change}"
    header = (f'"""{title}\n\nVersion: {version}\nParent: {source.label}\nChange: {change}\n'
              f"Arch: {source.arch}\nAnalogue: none\nPrediction: TODO: what should move, by how much, and why\n"
              f'Measured: not yet run\n"""')
    code = text[body_start:]
    code = re.sub(rf'^(EXTENSION_NAME\s*=\s*"[^"\n]*?)_?{re.escape(source.label)}"', rf'\g<1>_{version}"', code,
                  count=1, flags=re.MULTILINE)
    code = with_marks(code)
    # NOTE: the parent's code starts right after its docstring's closing line; a parent with no blank
    # line there gave `"""import torch` (seen making gemv v21)
    return target, header + "\n\n" + code.lstrip("\n")


def export(sub: submissions.Submission, gpu: str) -> str:
    """The submission's text with ``#!POPCORN leaderboard <name>`` and ``#!POPCORN gpu <gpu>`` first
    (lines the file already has are replaced, not doubled)."""
    board = LEADERBOARDS.get(sub.problem)
    if board is None:
        raise UserError(f"no GPU MODE leaderboard is known for {sub.problem}")
    if gpu not in POPCORN_GPUS:
        raise UserError(f"--gpu {gpu}: not a GPU MODE GPU name; expected one of {', '.join(POPCORN_GPUS)}")
    lines = [line for line in sub.path.read_text().splitlines(keepends=True) if not line.startswith("#!POPCORN")]
    return f"#!POPCORN leaderboard {board}\n#!POPCORN gpu {gpu}\n" + "".join(lines)


def export_warning(sub: submissions.Submission, gpu: str) -> str | None:
    """Why the exported file cannot run on ``gpu`` (its Arch), or None: a Hopper-only version
    (sm_90a) sent to the B200 leaderboard fails there, after the queue."""
    from harness import machine
    cap = POPCORN_GPUS[gpu]
    why = machine.arch_refusal(sub.arch, cap)
    return f"{sub.label} (Arch {sub.arch}) cannot run on {gpu} (sm_{cap[0]}{cap[1]}): {why}" if why else None


def with_marks(code: str) -> str:
    """``code`` with the timeline-marks header pasted at the top of its ``CUDA_SRC = r\"\"\"`` literal,
    unless it defines NVFP4_MARK already or has no such literal (a torch-only version)."""
    from harness.probes.marks import MARKS_CUDA
    if "define NVFP4_MARK" in code:
        return code
    return re.sub(r'^(CUDA_SRC\s*=\s*r""")\n?', lambda m: m.group(1) + "\n" + MARKS_CUDA.lstrip("\n"), code,
                  count=1, flags=re.MULTILINE)
