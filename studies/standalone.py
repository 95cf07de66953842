"""Build and run a standalone CUDA program (no torch) under .build/experiments/: the shared tail of
wgmma_smoke.py, wgmma_rate.py and ring_rate.py. nvcc for sm_90a; ptxas's register and spill lines
are printed so a timing can be read against them."""
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / ".build" / "experiments"


def build_and_run(name: str, source: str, *, compile_only: bool = False, opt: str = "-O3") -> int:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    cu, exe = OUT_DIR / f"{name}.cu", OUT_DIR / name
    cu.write_text(source)
    cmd = ["nvcc", opt, "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas", "-v", str(cu), "-o", str(exe)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    print("\n".join(l for l in res.stderr.splitlines() if "registers" in l or "spill" in l or "error" in l or "warning" in l))
    if res.returncode != 0:
        print(res.stdout[-3000:], res.stderr[-3000:], sep="\n")
        return res.returncode
    if compile_only:
        print(f"built {exe}")
        return 0
    return subprocess.run([str(exe)]).returncode
