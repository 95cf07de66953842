"""What launch does a gemm version's host code choose per shape? Its own C++, run on the CPU.

gemm v9 onward decide tiles, split count S and M tile height on the host (fill_chunk). This compiles a
version's CUDA source with nvcc as it is, appends a main() that calls its fill_chunk for each shape
(M, N, K; L = 1, 132 SMs unless told) with dummy 16-byte aligned pointers, and prints the choice:
tiles, M tile rows, M tiles, S, CTAs. No GPU is needed as long as the version's fill_chunk makes
no CUDA call: from v10 on it calls cudaOccupancyMaxActiveClusters, which without a GPU finds no cluster
capacity (S = 1 everywhere). `--clusters 2:66,4:32` replaces that query in the compiled copy with
the given capacities (clusters of S CTAs resident at once), so a CPU machine can follow a GPU's
choice; on a GPU machine, leave it out to see the device's own answer.

Usage (repo root, nvcc on PATH):
    python3 tools/experiments/host_tiling.py gemm v11 [--sms 132] [--shapes 128x7168x2048,...] [--clusters 2:66,4:32]
Default shapes: the problem's benchmark, tests and edges shapes from shapes.yaml.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.getcwd())

MAIN = r'''
#include <cstdio>
#include <cstdlib>
int main(int argc, char** argv) {
    const int sms = atoi(argv[1]);
    // NOTE: as the version's own launcher does first: on a GPU machine the shared-memory opt-in must
    // precede the cluster-occupancy query, which otherwise finds no cluster fits (S = 1 everywhere).
    // Without a GPU it fails harmlessly.
    { int device = 0, device_sms = 0; prepare_device(device, device_sms); }
    for (int i = 2; i + 2 < argc; i += 3) {
        const int m = atoi(argv[i]), n = atoi(argv[i + 1]), k = atoi(argv[i + 2]);
        int64_t desc[14] = {};
        for (int p = 0; p < 5; ++p) desc[p] = 4096;  // NOTE: never dereferenced on the host; aligned for the checks
        desc[6] = m; desc[7] = n; desc[8] = k;
        desc[9] = k / 2; desc[10] = k / 2; desc[11] = k / 16; desc[13] = n;
        static Problem problem;
        int decode_blocks = 0;
        const long long bytes = fill_chunk(desc, 1, 0, sms, problem, decode_blocks);
        printf("%d %d %d %lld %d %d %d %d\n", m, n, k, bytes, problem.num_tiles, problem.groups[0].m_tile_rows,
               problem.groups[0].m_tiles, problem.splits);
    }
    return 0;
}
'''


def shapes_of(problem: str) -> list[tuple[int, int, int]]:
    """(M, N, K) of the problem's benchmark, tests and edges shapes, in that order, without repeats."""
    from harness import config
    entry = config.load()[problem]
    out: list[tuple[int, int, int]] = []
    for kind in ("benchmarks", "tests", "edges"):
        for shape in getattr(entry, kind):
            p = shape.params
            key = (int(p["m"]), int(p["n"]), int(p["k"]))
            if key not in out:
                out.append(key)
    return out


CLUSTER_QUERY = re.compile(r"cudaOccupancyMaxActiveClusters\(([^,()]+),[^,()]+,\s*&(\w+)\)")


def with_cluster_capacities(cuda_src: str, capacities: dict[int, int]) -> str:
    """The source with its cluster-occupancy query answered from `capacities` (S -> clusters)."""
    if not CLUSTER_QUERY.search(cuda_src):
        raise SystemExit("--clusters given, but this version asks no cudaOccupancyMaxActiveClusters")
    table = ", ".join(str(capacities.get(s, 0)) for s in range(17))
    prelude = ("#include <cuda_runtime.h>\n"
               f"static const int host_tiling_capacity[17] = {{{table}}};\n"
               "static cudaError_t host_tiling_clusters(int* clusters, unsigned size) {\n"
               "    *clusters = size < 17 ? host_tiling_capacity[size] : 0;\n"
               "    return cudaSuccess;\n"
               "}\n")
    # NOTE: the query's launch config has gridDim.x = S (one cluster): that is the size asked about.
    return prelude + CLUSTER_QUERY.sub(lambda m: f"host_tiling_clusters({m.group(1)}, {m.group(2)}.gridDim.x)", cuda_src)


def choices(source_path: Path, shapes: list[tuple[int, int, int]], sms: int,
            clusters: dict[int, int] | None = None) -> list[dict]:
    """Compile the version's CUDA source with MAIN and run it: one dict per shape."""
    text = source_path.read_text()
    found = re.search(r'CUDA_SRC = r"""(.*?)"""', text, re.S)
    if not found or "fill_chunk(" not in found.group(1):
        raise SystemExit(f"{source_path.name}: no CUDA_SRC with a fill_chunk to call")
    cuda_src = with_cluster_capacities(found.group(1), clusters) if clusters else found.group(1)
    with tempfile.TemporaryDirectory() as tmp:
        cu, exe = Path(tmp) / "host.cu", Path(tmp) / "host"
        cu.write_text(cuda_src + MAIN)
        # NOTE: code=compute_90a embeds PTX only: no ptxas pass over the kernels (~5x faster), and
        # nothing here launches them.
        build = subprocess.run(["nvcc", "-O1", "-std=c++17", "-gencode=arch=compute_90a,code=compute_90a", str(cu),
                                "-o", str(exe)], capture_output=True, text=True)
        if build.returncode != 0:
            raise SystemExit(f"nvcc failed:\n{build.stderr[-2000:]}")
        argv = [str(exe), str(sms)] + [str(v) for shape in shapes for v in shape]
        run = subprocess.run(argv, capture_output=True, text=True, check=True)
    rows = []
    for line in run.stdout.split("\n"):
        if line.strip():
            m, n, k, nbytes, tiles, rows_, m_tiles, splits = (int(v) for v in line.split())
            rows.append({"m": m, "n": n, "k": k, "bytes": nbytes, "tiles": tiles, "m_tile_rows": rows_,
                         "m_tiles": m_tiles, "splits": splits, "ctas": tiles * splits})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem", choices=("gemm",))
    ap.add_argument("version")
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--shapes", help="MxNxK,... (default: the problem's benchmark, tests and edges shapes)")
    ap.add_argument("--clusters", help="S:clusters,... answer the version's cluster-occupancy query (CPU machines)")
    args = ap.parse_args()
    clusters = ({int(a): int(b) for a, b in (item.split(":") for item in args.clusters.split(","))}
                if args.clusters else None)
    from harness.submissions import resolve
    shapes = ([tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")] if args.shapes
              else shapes_of(args.problem))
    told = f", cluster capacities {args.clusters} (given)" if clusters else ""
    print(f"{args.problem} {args.version}, {args.sms} SMs{told}: the host's launch per shape")
    print(f"{'M x N x K':>20} {'tiles':>6} {'rows':>5} {'M tiles':>8} {'S':>3} {'CTAs':>5}")
    for r in choices(resolve(args.problem, args.version).path, shapes, args.sms, clusters):
        print(f"{r['m']:>6} x {r['n']:>5} x {r['k']:>5} {r['tiles']:>6} {r['m_tile_rows']:>5} {r['m_tiles']:>8} "
              f"{r['splits']:>3} {r['ctas']:>5}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
