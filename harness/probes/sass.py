"""``nvfp4 probe sass``: what ptxas made of a version's wgmma loops, read from its SASS (no GPU).

gemm v23 lost 2.2-2.7x to one scope qualifier: ``mbarrier.arrive.release.cluster`` compiled to
MEMBAR.ALL.CTA + MEMBAR.ALL.GPU before every remote arrive, a GPU-wide fence per consumer warp per
K block, invisible in the CUDA source and in ``-Xptxas -v``. This compiles a version's ``CUDA_SRC``
to a cubin with its own ``CUDA_FLAGS`` (harness.contract reads both without importing the file),
disassembles it (nvdisasm) and, per kernel, finds the wgmma loops (the innermost backward-branch
spans holding HGMMA) and reports in each: its size in bytes (dual_gemm v8 lost 8% to a ~25 KB hot
loop), its HGMMA count, its instruction count and how many run on the uniform datapath (U-prefixed
opcodes: gemm v31's loop carried 29 more UMOV and 16 more UIADD3 than v30's and lost 4-8% with
nothing else changed), fences (MEMBAR) and local-memory traffic (LDL/STL: spills). A fence or a
local access inside a loop is flagged, and the command exits 1 when any is, so a script can gate
on it. Each kernel's line carries its whole size in SASS: dual_gemm v78 ran v72's path from a kernel of
158.2 KB against v72's 97.6 KB (the handoff's code compiled in, never taken) and lost 2 us on 256x3072x4096,
Nsight Compute putting 19% of its warp samples on no_instruction (instruction fetch) against v72's 7%
(session 87).

Each loop also gets its issue against its tensor work: the loop's instructions over what a scheduler
issues beside a running wgmma (ISSUE_RATE), against the tensor-pipe cycles of its HGMMA at the dense
rate. Above 1x, its instructions may pace it rather than the tensor cores, whichever warps issue them
(gemm NOTES, session 65: v91's paired loop reads 1.46x and ran ~1.58x; its split loop 1.39x and ran
~1.41x; moving 44 decode instructions a block to other warps, v94-v95, lost). It is a screen, not a
price: the count is static (a branch taken by one warpgroup counts for both) and how much of a loop
its count is varies (session 66: 14.6% fewer instructions shortened gemm v97's split loop 3.7%, 10%
fewer shortened group_gemm v66's 112-row loop 14%; uniform-datapath instructions count here but moved
gemm v96's loop the other way; studies/pipe_beside_wgmma.py has the rates by instruction class).

nvdisasm is not in every CUDA toolkit install; it is found on PATH, in ``$NVDISASM``, next to nvcc,
in the toolkit folders, or from the ``nvidia-cuda-nvdisasm`` wheel installed in this environment
(``pip install nvidia-cuda-nvdisasm``: its ``nvidia/cu13/bin/nvdisasm`` runs).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import UserError

# NOTE: ptxas issues some shifts, moves and adds as IMAD forms on the FMA pipe (IMAD.SHL.U32 for SHF.L.U32, ...), by
# its own choice per kernel, so a loop's opcodes count these forms apart from IMAD. A description, not a price: dual_gemm
# v73's slower wide loop had 24 of v72's 50 SHF.L as IMAD.SHL (session 86), but rotates that ptxas cannot turn into
# IMAD.SHL measured 0.976-1.006x across the lineages (session 87: gemm v125, group_gemm v131, dual_gemm v79).
IMAD_STANDINS = ("IMAD.SHL", "IMAD.MOV", "IMAD.IADD")
FLAGGED = ("MEMBAR", "LDL", "STL")
# NOTE: instructions a cycle a scheduler beside a running wgmma, H200 (session 65): the decode warp of
# studies/wgmma_alu_contention.py beside wgmma 0.35-0.39 (0.69-0.74 with the tensor pipe idle), its paired
# chain 0.35, ncu on gemm v74's kernel 0.35 warps issued a cycle a scheduler (session 59); a third warp a
# scheduler (gemm v78) or other warps (v95) issued no faster. Each warp of a warpgroup sits on its own
# scheduler, so a loop a warpgroup runs takes its instruction count / ISSUE_RATE cycles of issue.
ISSUE_RATE = 0.35
# NOTE: an HGMMA.64xNxK at its type's dense rate takes N / 2 cycles of an SM's tensor pipe whatever K
# (fp16/bf16 k16 at 2,048 MACs a cycle, fp8 k32 at 4,096, tf32 k8 at 1,024): 64 x 128 x 16 in 64 cycles,
# as ncu counted on gemm v74 (session 59).
_HGMMA_SHAPE = re.compile(r"HGMMA\.64x(\d+)x\d+")
_ADDRESS = re.compile(r"/\*([0-9a-f]{4,})\*/")
_FUNCTION = re.compile(r"^\s*\.text\.(\S+):")
_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_BRANCH = re.compile(r"\bBRA\b.*`\((\.L_x_\d+)\)")


@dataclass
class Loop:
    first: int            # byte address of the loop's first instruction (the branch target)
    last: int             # byte address of its backward branch
    hgmma: int = 0
    instructions: int = 0
    uniform: int = 0      # uniform-datapath instructions (opcode starting with U: UMOV, UIADD3, ...)
    tensor_cycles: int = 0  # the HGMMA's tensor-pipe cycles at the dense rate (N / 2 each)
    flagged: list[str] = field(default_factory=list)
    # base opcode (LOP3 of LOP3.LUT) -> count in the loop; IMAD's stand-ins keep their form (IMAD_STANDINS)
    opcodes: dict[str, int] = field(default_factory=dict)

    @property
    def bytes(self) -> int:
        return self.last - self.first + 16

    @property
    def issue_ratio(self) -> float | None:
        """Cycles of issue (instructions / ISSUE_RATE) over tensor cycles; None without a shape read."""
        return self.instructions / ISSUE_RATE / self.tensor_cycles if self.tensor_cycles else None


def _instructions(sass_lines: list[str]) -> tuple[dict[str, list[tuple[int, str]]], dict[str, dict[str, int]]]:
    """Per kernel (mangled name): its (address, text) instructions and its labels' addresses."""
    kernels: dict[str, list[tuple[int, str]]] = {}
    labels: dict[str, dict[str, int]] = {}
    name, pending = None, []
    for line in sass_lines:
        found = _FUNCTION.match(line)
        if found:
            name = found.group(1)
            kernels.setdefault(name, [])
            labels.setdefault(name, {})
            pending = []
            continue
        if name is None:
            continue
        label = _LABEL.match(line)
        if label:
            pending.append(label.group(1))
            continue
        address = _ADDRESS.search(line)
        if address:
            at = int(address.group(1), 16)
            for waiting in pending:
                labels[name][waiting] = at
            pending = []
            kernels[name].append((at, line[address.end():].strip().rstrip(";").strip()))
    return kernels, labels


def wgmma_spans(instructions: list[tuple[int, str]], target_of) -> list[tuple[int, int]]:
    """The wgmma loops of one kernel's (address, text) instructions as (first, last) addresses, in order: the span of a
    predicated backward branch (``target_of(text)``: the address it jumps to, or None) holding HGMMA and no smaller
    such span. One rule for nvdisasm's listing (labels) and ncu's source page (addresses)."""
    hgmma_at = [at for at, text in instructions if "HGMMA" in text]
    spans = set()
    for at, text in instructions:
        start = target_of(text)
        # NOTE: only predicated branches are back-edges: ptxas puts slow paths (an mbarrier
        # wait's retry) after the function and returns into the loop with a plain BRA.
        if start is not None and text.startswith("@") and start <= at and any(start <= h <= at for h in hgmma_at):
            spans.add((start, at))
    return sorted(a for a in spans if not any(b != a and a[0] <= b[0] and b[1] <= a[1] for b in spans))


def loops_of(sass_lines: list[str]) -> dict[str, list[Loop]]:
    """Per kernel, the wgmma loops of a disassembly (``nvdisasm -c`` text) and the flagged
    instructions inside each (address and text). A loop is the span of a predicated backward branch
    (from its target label to the branch) holding HGMMA and no smaller such span: the innermost loop
    around the tensor work, whatever the decode between its HGMMA groups."""
    kernels, labels = _instructions(sass_lines)
    result = {}
    for kernel, instructions in kernels.items():
        def target_of(text: str, names=labels[kernel]) -> int | None:
            found = _BRANCH.search(text)
            return names.get(found.group(1)) if found else None
        loops = []
        for start, end in wgmma_spans(instructions, target_of):
            loop = Loop(first=start, last=end)
            for at, text in instructions:
                if start <= at <= end:
                    loop.instructions += 1
                    words = text.split()
                    opcode = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
                    base = opcode.split(".", 1)[0]
                    if base == "IMAD":
                        base = next((form for form in IMAD_STANDINS if opcode.startswith(form)), base)
                    loop.opcodes[base] = loop.opcodes.get(base, 0) + 1
                    if opcode.startswith("U"):
                        loop.uniform += 1
                    if "HGMMA" in text:
                        loop.hgmma += 1
                        shape = _HGMMA_SHAPE.search(text)
                        loop.tensor_cycles += int(shape.group(1)) // 2 if shape else 0
                    elif any(re.search(rf"\b{op}\b", text) for op in FLAGGED):
                        loop.flagged.append(f"{at:#x} {text}")
            loops.append(loop)
        result[kernel] = loops
    return result


NVDISASM_HINT = ("`pip install nvidia-cuda-nvdisasm` puts one where this finds it (or unzip that wheel and "
                 "point $NVDISASM at its nvidia/cu13/bin/nvdisasm)")


def _pip_nvdisasm() -> str | None:
    """nvdisasm from the ``nvidia-cuda-nvdisasm`` wheel installed in this environment (``nvidia/cu*/bin``), newest
    CUDA first; its namespace package is read from the import path, nothing is imported."""
    import importlib.util
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):  # NOTE: a broken or half-imported "nvidia" in sys.modules: no wheel to read
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        for tool in sorted(Path(root).glob("cu*/bin/nvdisasm"), reverse=True):
            if tool.is_file() and os.access(tool, os.X_OK):
                return str(tool)
    return None


def find_nvdisasm() -> str | None:
    """``$NVDISASM``, PATH and the toolkit folders, beside nvcc, then the pip wheel (:func:`_pip_nvdisasm`)."""
    from harness import cuda_tools
    named = os.environ.get("NVDISASM")
    if named and Path(named).is_file():
        return named
    found = cuda_tools.find("nvdisasm")
    if found:
        return found
    nvcc = cuda_tools.find("nvcc")
    beside = Path(nvcc).resolve().parent / "nvdisasm" if nvcc else None
    if beside and beside.is_file():
        return str(beside)
    return _pip_nvdisasm()


_GENCODE = re.compile(r"^(?:-gencode|--generate-code)=?arch=(\w+),code=\[?([\w,]+)\]?$")


def cubin_flags(flags: tuple[str, ...] | list[str]) -> list[str]:
    """``flags`` with every -gencode cut to one GPU code, the Hopper one (sm_90 / sm_90a) where
    there is one: ``nvcc -cubin`` refuses a build for several GPU codes ("Option '--cubin' is not
    allowed when compiling for multiple GPU code instances"), and gemv's versions, gemm v1,
    dual_gemm v1 and group_gemm v1-v2 ask for ``code=[sm_90,compute_90]``."""
    flags = list(flags)
    joined, i = [], 0
    while i < len(flags):  # "-gencode", "arch=..." as two items reads as one
        if flags[i] in ("-gencode", "--generate-code") and i + 1 < len(flags):
            joined.append(f"{flags[i]}={flags[i + 1]}")
            i += 2
        else:
            joined.append(flags[i])
            i += 1
    gencodes = [(f, *m.groups()) for f in joined if (m := _GENCODE.match(f))]
    codes = [(virtual, code) for _, virtual, listed in gencodes for code in listed.split(",") if code.startswith("sm_")]
    if not codes:
        return joined
    virtual, code = next(((v, c) for v, c in codes if c.startswith("sm_90")), codes[0])
    kept = [f for f in joined if not _GENCODE.match(f)]
    return kept + [f"-gencode=arch={virtual},code={code}"]


def compile_cubin(source: Path, arch: str, nvcc: str, cubin: Path) -> None:
    """``source``'s CUDA_SRC compiled to one cubin with its own CUDA_FLAGS, for ``arch`` unless the
    flags choose one (as compile-only does), the Hopper code where they choose several."""
    from harness import compile_only, contract
    c = contract.read(source)
    if not c.compiles_cuda:
        raise UserError(f"{source}: no CUDA_SRC to compile")
    gencode, _ = compile_only.arch_flags(arch if arch.startswith("sm_") else "sm_90a", c.cuda_flags)
    cu = cubin.with_suffix(".cu")
    cu.write_text(c.cuda_src)
    build = subprocess.run([nvcc, "-cubin", *cubin_flags([*gencode, *c.cuda_flags]), str(cu), "-o", str(cubin)],
                           capture_output=True, text=True)
    if build.returncode != 0:
        raise UserError(f"{source}: nvcc failed: {' | '.join(build.stderr.strip().splitlines()[-4:])}")


def disassemble(source: Path, arch: str, nvcc: str, nvdisasm: str) -> list[str]:
    """The SASS of a submission's CUDA_SRC (:func:`compile_cubin`), as nvdisasm lists it."""
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        compile_cubin(source, arch, nvcc, cubin)
        listing = subprocess.run([nvdisasm, "-c", str(cubin)], capture_output=True, text=True)
        if listing.returncode != 0:
            raise UserError(f"nvdisasm failed on {source}: {listing.stderr.strip()[-300:]}")
        return listing.stdout.splitlines()


def kernel_sizes(sass_lines: list[str]) -> dict[str, int]:
    """Per kernel (mangled name) of a disassembly, its code's bytes: its last instruction's offset and that
    instruction's 16."""
    kernels, _ = _instructions(sass_lines)
    return {name: (found[-1][0] + 16 if found else 0) for name, found in kernels.items()}


def format_loops(title: str, loops_by_kernel: dict[str, list[Loop]], opcodes: int = 0,
                 sizes: dict[str, int] | None = None) -> list[str]:
    """One line a loop; with ``opcodes`` > 0 also its that many most frequent opcodes (base names, counts in one
    pass of the loop's body: divide by the K blocks it holds, e.g. HGMMA / 4 for k16 steps of a 64-wide block);
    with ``sizes`` (:func:`kernel_sizes`) each kernel's line also gives its whole code's size."""
    lines = []
    for kernel, loops in loops_by_kernel.items():
        if not loops:
            continue
        size = f" ({sizes[kernel] / 1024:.1f} KB of SASS)" if sizes and kernel in sizes else ""
        lines.append(f"{title} {kernel[:60]}{size}")
        for n, loop in enumerate(loops):
            mark = "  FLAGGED" if loop.flagged else ""
            ratio = loop.issue_ratio
            issue = f", issue {ratio:.2f}x tensor" if ratio is not None else ""
            lines.append(f"  loop {n}: {loop.bytes / 1024:6.1f} KB, {loop.instructions:5d} instructions "
                         f"({loop.uniform} uniform), {loop.hgmma:3d} HGMMA{issue}, {len(loop.flagged)} fence/local{mark}")
            lines += [f"      {text}" for text in sorted({t.split(" ", 1)[1] for t in loop.flagged})]
            if opcodes > 0:
                top = sorted(loop.opcodes.items(), key=lambda item: (-item[1], item[0]))[:opcodes]
                lines.append("      opcodes: " + ", ".join(f"{name} {count}" for name, count in top))
    return lines or [f"{title}: no wgmma loop found"]
