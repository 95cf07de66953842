"""What ptxas made of a version's wgmma loops, read from its SASS: no GPU needed.

gemm v23 lost 2.2-2.7x to one scope qualifier: `mbarrier.arrive.release.cluster` compiled to
MEMBAR.ALL.CTA + MEMBAR.ALL.GPU before every remote arrive, a GPU-wide fence per consumer warp per
K block, invisible in the CUDA source and in `-Xptxas -v`. This compiles a version's CUDA source
to a cubin with its own CUDA_FLAGS (harness.contract reads both, as the build does), disassembles
it (nvdisasm) and, per kernel, finds the wgmma loops (the innermost backward-branch spans holding
HGMMA) and reports in each: its size in bytes (dual_gemm v8 lost 8% to a ~25 KB hot loop), its
HGMMA count, its instruction count and how many run on the uniform datapath (U-prefixed opcodes:
gemm v31's loop carried 29 more UMOV and 16 more UIADD3 than v30's, from code compiled in before
the loop, and lost 4-8% with nothing else changed), fences (MEMBAR) and local-memory traffic
(LDL/STL: spills). A fence or a local access inside a loop is flagged; the exit status is 1
when any is found, so a script can gate on it.

nvdisasm is not part of a plain CUDA toolkit install on every machine; it is found on PATH, in
$NVDISASM, or next to nvcc. `pip download --no-deps nvidia-cuda-nvdisasm` brings a wheel whose
nvidia/cu13/bin/nvdisasm works here (unzip it; point $NVDISASM at it).

Usage (repo root, nvcc on PATH):
    python3 tools/experiments/sass_lint.py gemm v19,v23 [dual_gemm v12 ...]
    python3 tools/experiments/sass_lint.py --file path/to/variant.py
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

FLAGGED = ("MEMBAR", "LDL", "STL")
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
    flagged: list[str] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return self.last - self.first + 16


def loops_of(sass_lines: list[str]) -> dict[str, list[Loop]]:
    """Per kernel (its mangled name), the wgmma loops of a disassembly (`nvdisasm -c` text) and the
    flagged instructions inside each (address and text). A loop is the span of a predicated
    backward branch (from its target label to the branch) holding HGMMA and no smaller such span:
    the innermost loop around the tensor work, whatever the decode between its HGMMA groups."""
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
    result = {}
    for kernel, instructions in kernels.items():
        hgmma_at = [at for at, text in instructions if "HGMMA" in text]
        spans = set()
        for at, text in instructions:
            target = _BRANCH.search(text)
            # NOTE: only predicated branches are back-edges: ptxas puts slow paths (an mbarrier
            # wait's retry) after the function and returns into the loop with a plain BRA.
            if target and text.startswith("@") and target.group(1) in labels[kernel]:
                start = labels[kernel][target.group(1)]
                if start <= at and any(start <= h <= at for h in hgmma_at):
                    spans.add((start, at))
        innermost = [a for a in spans if not any(b != a and a[0] <= b[0] and b[1] <= a[1] for b in spans)]
        loops = []
        for start, end in sorted(innermost):
            loop = Loop(first=start, last=end)
            for at, text in instructions:
                if start <= at <= end:
                    loop.instructions += 1
                    words = text.split()
                    opcode = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
                    if opcode.startswith("U"):
                        loop.uniform += 1
                    if "HGMMA" in text:
                        loop.hgmma += 1
                    elif any(re.search(rf"\b{op}\b", text) for op in FLAGGED):
                        loop.flagged.append(f"{at:#x} {text}")
            loops.append(loop)
        result[kernel] = loops
    return result


def find_nvdisasm() -> str | None:
    for candidate in (os.environ.get("NVDISASM"), shutil.which("nvdisasm")):
        if candidate and Path(candidate).is_file():
            return candidate
    nvcc = shutil.which("nvcc")
    if nvcc:
        beside = Path(nvcc).resolve().parent / "nvdisasm"
        if beside.is_file():
            return str(beside)
    return None


def disassemble(source: Path, nvdisasm: str) -> list[str]:
    """The SASS of a submission's CUDA_SRC, compiled with its own CUDA_FLAGS (harness.contract reads
    both, as the build does), for sm_90a unless the flags choose an arch."""
    from harness import compile_only, contract
    c = contract.read(source)
    if not c.cuda_src:
        raise SystemExit(f"{source}: no CUDA_SRC")
    gencode, _ = compile_only.arch_flags("sm_90a", c.cuda_flags)
    with tempfile.TemporaryDirectory() as tmp:
        cu, cubin = Path(tmp) / "k.cu", Path(tmp) / "k.cubin"
        cu.write_text(c.cuda_src)
        build = subprocess.run(["nvcc", "-cubin", *gencode, *c.cuda_flags, str(cu), "-o", str(cubin)],
                               capture_output=True, text=True)
        if build.returncode != 0:
            raise SystemExit(f"{source}: nvcc failed:\n{build.stderr[-1500:]}")
        return subprocess.run([nvdisasm, "-c", str(cubin)], capture_output=True, text=True, check=True).stdout.splitlines()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("pairs", nargs="*", help="PROBLEM VERSIONS pairs, versions comma-separated")
    ap.add_argument("--file", action="append", default=[], help="a submission-like .py file (repeatable)")
    args = ap.parse_args()
    if len(args.pairs) % 2:
        raise SystemExit("give PROBLEM VERSIONS pairs, e.g. gemm v19,v23")
    nvdisasm = find_nvdisasm()
    if nvdisasm is None:
        raise SystemExit("nvdisasm not found (PATH, $NVDISASM, beside nvcc); see this tool's docstring")
    from harness.submissions import resolve
    sources = [Path(f) for f in args.file]
    for problem, versions in zip(args.pairs[::2], args.pairs[1::2]):
        sources += [resolve(problem, v).path for v in versions.split(",")]
    bad = False
    for source in sources:
        for kernel, loops in loops_of(disassemble(source, nvdisasm)).items():
            if not loops:
                continue
            print(f"{source.parent.name}/{source.name} {kernel[:60]}")
            for n, loop in enumerate(loops):
                mark = "  FLAGGED" if loop.flagged else ""
                print(f"  loop {n}: {loop.bytes / 1024:6.1f} KB, {loop.instructions:5d} instructions ({loop.uniform} uniform), "
                      f"{loop.hgmma:3d} HGMMA, {len(loop.flagged)} fence/local{mark}")
                for text in sorted(set(t.split(" ", 1)[1] for t in loop.flagged)):
                    print(f"      {text}")
                bad = bad or bool(loop.flagged)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
