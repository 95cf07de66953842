"""What launch does a gemm, dual_gemm or group_gemm version's host code choose per shape? Its own C++, on the CPU.

gemm v9 onward decide tiles, split count S and M tile height on the host (fill_chunk); gemm v22 onward
stream-K: CTAs and the most pieces a tile is cut into, shown under S. This compiles a
version's CUDA source with nvcc as it is, appends a main() that calls its fill_chunk for each shape
(M, N, K; L = 1, 132 SMs unless told) with dummy 16-byte aligned pointers, and prints the choice:
tiles, M tile rows, M tiles, S, CTAs. No GPU is needed as long as the version's fill_chunk makes
no CUDA call: from v10 on it calls cudaOccupancyMaxActiveClusters, which without a GPU finds no cluster
capacity (S = 1 everywhere). `--clusters 2:66,4:32` replaces that query in the compiled copy with
the given capacities (clusters of S CTAs resident at once), so a CPU machine can follow a GPU's
choice; on a GPU machine, leave it out to see the device's own answer.

dual_gemm: the same as gemm (its descriptor has two B operands; S from its split_k).

group_gemm (v13 onward decide the M tile height per launch, v33 the ring): the same with every
group of a shape, sorted by the version's largest_first, one row per launch chunk: tiles, the
tallest M tile, and (versions with wants_deep_ring) which ring the launch takes.

Usage (repo root, nvcc on PATH):
    python3 studies/host_tiling.py gemm v11 [--sms 132] [--shapes 128x7168x2048,...] [--clusters 2:66,4:32]
    python3 studies/host_tiling.py dual_gemm v13 [the same options]
    python3 studies/host_tiling.py group_gemm v33 [--sms 132]
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

# One batch's (gemm, dual_gemm) or group's (group_gemm) descriptor as the versions' launchers read
# it, with dummy pointers: 14 int64 of a, b, sfa, sfb, c, -, m, n, k, a_row, b_row, sfa_row, -,
# c_row; dual_gemm's 18 (DUAL_DEFS below).
DESC = r'''
#include <cstdio>
#include <cstdlib>
static void host_tiling_desc(int64_t* d, int m, int n, int k) {
#if HOST_TILING_DESC_WORDS == 18  // dual_gemm (DUAL_DEFS)
    for (int p = 0; p < 8; ++p) d[p] = 4096;  // NOTE: never dereferenced on the host; aligned for the checks
    d[8] = m; d[9] = n; d[10] = k;
    d[11] = k / 2; d[12] = k / 2; d[13] = k / 2; d[14] = k / 16; d[17] = n;
#else
    for (int p = 0; p < 5; ++p) d[p] = 4096;  // NOTE: never dereferenced on the host; aligned for the checks
    d[6] = m; d[7] = n; d[8] = k;
    d[9] = k / 2; d[10] = k / 2; d[11] = k / 16; d[13] = n;
#endif
}
'''

# NOTE: gemm's and dual_gemm's launchers differ in the descriptor (dual: 18 int64 of a, b1, b2, sfa,
# sfb1, sfb2, c, -, m, n, k, a_row, b1_row, b2_row, sfa_row, -, -, c_row), the Problem type and
# where S lives; MAIN is written once with those three as macros.
GEMM_DEFS = r'''
#define HOST_TILING_DESC_WORDS 14
#define HOST_TILING_PROBLEM Problem
#define HOST_TILING_SPLITS(p) (p).splits
#define HOST_TILING_CTAS(p) ((p).num_tiles * (p).splits)
'''
# gemm v22 onward: stream-K. No S; the most pieces a tile is cut into, and the CTAs the launch runs.
GEMM_STREAM_K_DEFS = r'''
#define HOST_TILING_DESC_WORDS 14
#define HOST_TILING_PROBLEM Problem
#define HOST_TILING_SPLITS(p) (p).max_pieces
#define HOST_TILING_CTAS(p) (p).num_ctas
'''
# gemm v40 onward: helper CTAs run the split CTAs' K tails where a split launch leaves SMs idle.
GEMM_TAILS_DEFS = r'''
#define HOST_TILING_DESC_WORDS 14
#define HOST_TILING_PROBLEM Problem
#define HOST_TILING_SPLITS(p) (p).splits
#define HOST_TILING_CTAS(p) ((p).num_tiles * (p).splits + (p).helpers)
#define HOST_TILING_HELPERS(p) (p).helpers
#define HOST_TILING_PER_HELPER(p) (p).per_helper
'''
DUAL_DEFS = r'''
#define HOST_TILING_DESC_WORDS 18
#define HOST_TILING_PROBLEM Problem<kMaxGroups>
#define HOST_TILING_SPLITS(p) (p).split_k.splits
#define HOST_TILING_CTAS(p) ((p).num_tiles * (p).split_k.splits)
'''
# dual_gemm v21 onward: helper CTAs run the tiles' tails where S = 1 leaves SMs idle.
DUAL_TAILS_DEFS = r'''
#define HOST_TILING_DESC_WORDS 18
#define HOST_TILING_PROBLEM Problem<kMaxGroups>
#define HOST_TILING_SPLITS(p) (p).split_k.splits
#define HOST_TILING_CTAS(p) ((p).num_tiles * (p).split_k.splits + (p).tails.helpers)
#define HOST_TILING_HELPERS(p) (p).tails.helpers
#define HOST_TILING_PER_HELPER(p) (p).tails.per_helper
'''

MAIN = DESC + r'''
#ifndef HOST_TILING_HELPERS
#define HOST_TILING_HELPERS(p) 0
#define HOST_TILING_PER_HELPER(p) 0
#endif
int main(int argc, char** argv) {
    const int sms = atoi(argv[1]);
    // NOTE: as the version's own launcher does first: on a GPU machine the shared-memory opt-in must
    // precede the cluster-occupancy query, which otherwise finds no cluster fits (S = 1 everywhere).
    // Without a GPU it fails harmlessly.
    { int device = 0, device_sms = 0; prepare_device(device, device_sms); }
#ifdef HOST_TILING_CAPACITY
    // NOTE: the answers the split rule got (0 on a machine without a GPU unless --clusters)
    printf("#");
    for (int S = 1; S <= kMaxSplits; ++S) printf(" %d:%d", S, cluster_capacity(S));
    printf("\n");
#endif
    for (int i = 2; i + 2 < argc; i += 3) {
        const int m = atoi(argv[i]), n = atoi(argv[i + 1]), k = atoi(argv[i + 2]);
        int64_t desc[HOST_TILING_DESC_WORDS] = {};
        host_tiling_desc(desc, m, n, k);
        static HOST_TILING_PROBLEM problem;
        int decode_blocks = 0;
        const long long bytes = fill_chunk(desc, 1, 0, sms, problem, decode_blocks);
        printf("%d %d %d %lld %d %d %d %d %d %d %d\n", m, n, k, bytes, problem.num_tiles, problem.groups[0].m_tile_rows,
               problem.groups[0].m_tiles, HOST_TILING_SPLITS(problem), HOST_TILING_CTAS(problem),
               HOST_TILING_HELPERS(problem), HOST_TILING_PER_HELPER(problem));
    }
    return 0;
}
'''


MAIN_GROUP = DESC + r'''
int main(int argc, char** argv) {
    const int sms = atoi(argv[1]);
    { int device = 0, device_sms = 0; prepare_device(device, device_sms); }  // NOTE: as in MAIN
    int shape = 0;
    for (int i = 2; i < argc; ++shape) {
        const int groups = atoi(argv[i++]);
        std::vector<int64_t> desc(static_cast<size_t>(groups) * 14, 0);
        for (int g = 0; g < groups; ++g, i += 3)
            host_tiling_desc(desc.data() + g * 14, atoi(argv[i]), atoi(argv[i + 1]), atoi(argv[i + 2]));
        const std::vector<int> order = largest_first(desc.data(), groups);
        for (int first = 0; first < groups; first += kMaxGroups) {
            static Problem problem;
            int tiles = 0, decode_blocks = 0;
            const long long bytes = fill_chunk(desc.data(), order, first, groups, sms, problem, tiles, decode_blocks);
            int tallest = 0;
            for (int g = 0; g < problem.num_groups; ++g)
                if (problem.groups[g].m_tile_rows > tallest) tallest = problem.groups[g].m_tile_rows;
#ifdef HOST_TILING_RING
            const int deep = wants_deep_ring(problem) ? 1 : 0;
#else
            const int deep = -1;
#endif
            printf("%d %d %lld %d %d %d\n", shape, first, bytes, tiles, tallest, deep);
        }
    }
    return 0;
}
'''


def _distinct_shapes(problem: str, key) -> list:
    """key(params) of the problem's benchmark, tests and edges shapes, in that order, without repeats."""
    from harness import config
    entry = config.load()[problem]
    out = []
    for kind in ("benchmarks", "tests", "edges"):
        for shape in getattr(entry, kind):
            value = key(shape.params)
            if value not in out:
                out.append(value)
    return out


def group_shapes_of() -> list[list[tuple[int, int, int]]]:
    """Each group_gemm shape of shapes.yaml (benchmarks, tests, edges) as its groups' (M, N, K)."""
    return _distinct_shapes("group_gemm", lambda p: [(int(m), int(n), int(k)) for m, n, k in zip(p["m"], p["n"], p["k"])])


def _run_host(cuda_src: str, main_src: str, argv: list[str], defines: list[str] = ()) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        cu, exe = Path(tmp) / "host.cu", Path(tmp) / "host"
        cu.write_text(cuda_src + main_src)
        # NOTE: code=compute_90a embeds PTX only: no ptxas pass over the kernels (~5x faster), and
        # nothing here launches them.
        build = subprocess.run(["nvcc", "-O1", "-std=c++17", "-gencode=arch=compute_90a,code=compute_90a",
                                *[f"-D{d}" for d in defines], str(cu), "-o", str(exe)], capture_output=True, text=True)
        if build.returncode != 0:
            raise SystemExit(f"nvcc failed:\n{build.stderr[-2000:]}")
        return subprocess.run([str(exe), *argv], capture_output=True, text=True, check=True).stdout


def _cuda_src(source_path: Path, entry: str) -> str:
    found = re.search(r'CUDA_SRC = r"""(.*?)"""', source_path.read_text(), re.S)
    if not found or entry not in found.group(1):
        raise SystemExit(f"{source_path.name}: no CUDA_SRC with a {entry} to call")
    return found.group(1)


def group_choices(source_path: Path, shapes: list[list[tuple[int, int, int]]], sms: int) -> list[dict]:
    """One dict per launch chunk of each shape: shape index, first group, bytes, tiles, tallest tile, ring."""
    cuda_src = _cuda_src(source_path, "fill_chunk(")
    defines = ["HOST_TILING_RING"] if "wants_deep_ring(" in cuda_src else []
    argv = [str(sms)] + [str(v) for groups in shapes for v in [len(groups), *[x for g in groups for x in g]]]
    rows = []
    for line in _run_host(cuda_src, MAIN_GROUP, argv, defines).split("\n"):
        if line.strip():
            shape, first, nbytes, tiles, tallest, deep = (int(v) for v in line.split())
            rows.append({"shape": shape, "first": first, "bytes": nbytes, "tiles": tiles, "tallest": tallest,
                         "ring": {1: "deep", 0: "tall", -1: "-"}[deep]})
    return rows


def shapes_of(problem: str) -> list[tuple[int, int, int]]:
    """(M, N, K) of the problem's benchmark, tests and edges shapes, in that order, without repeats."""
    return _distinct_shapes(problem, lambda p: (int(p["m"]), int(p["n"]), int(p["k"])))


# NOTE: the kernel argument may be a call (gemm v25+: kernel_for(BLOCK_M_MAX)), one level deep.
CLUSTER_QUERY = re.compile(r"cudaOccupancyMaxActiveClusters\(([^,()]+),\s*[^,()]+(?:\([^()]*\))?,\s*&(\w+)\)")


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
            clusters: dict[int, int] | None = None, problem: str = "gemm") -> list[dict]:
    """Compile the version's CUDA source (gemm or dual_gemm) with MAIN and run it: one dict per shape."""
    cuda_src = _cuda_src(source_path, "fill_chunk(")
    if clusters:
        cuda_src = with_cluster_capacities(cuda_src, clusters)
    stream_k = problem == "gemm" and "int num_ctas;" in cuda_src
    tails = problem == "dual_gemm" and "struct Tails {" in cuda_src
    gemm_tails = problem == "gemm" and "int tail_blocks;" in cuda_src
    defs = (GEMM_STREAM_K_DEFS if stream_k else DUAL_TAILS_DEFS if tails else GEMM_TAILS_DEFS if gemm_tails
            else {"gemm": GEMM_DEFS, "dual_gemm": DUAL_DEFS}[problem])
    defines = ["HOST_TILING_CAPACITY"] if "static int cluster_capacity(int S) {" in cuda_src else []
    stdout = _run_host(cuda_src, defs + MAIN, [str(sms)] + [str(v) for shape in shapes for v in shape], defines)
    rows = []
    for line in stdout.split("\n"):
        if line.startswith("#"):
            print(f"cluster capacity (S:clusters resident at once):{line[1:]}")
        elif line.strip():
            m, n, k, nbytes, tiles, rows_, m_tiles, splits, ctas, helpers, per_helper = (int(v) for v in line.split())
            # NOTE: for stream-K versions `splits` is the most pieces a tile is cut into (1: none);
            # helpers (dual_gemm v21+, gemm v40+) run per_helper tails each
            rows.append({"m": m, "n": n, "k": k, "bytes": nbytes, "tiles": tiles, "m_tile_rows": rows_,
                         "m_tiles": m_tiles, "splits": splits, "ctas": ctas, "stream_k": stream_k,
                         "helpers": helpers, "per_helper": per_helper})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem", choices=("gemm", "dual_gemm", "group_gemm"))
    ap.add_argument("version")
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--shapes", help="MxNxK,... (default: the problem's benchmark, tests and edges shapes)")
    ap.add_argument("--clusters", help="S:clusters,... answer the version's cluster-occupancy query (CPU machines)")
    args = ap.parse_args()
    clusters = ({int(a): int(b) for a, b in (item.split(":") for item in args.clusters.split(","))}
                if args.clusters else None)
    from harness.submissions import resolve
    if args.problem == "group_gemm":
        if args.shapes or clusters:
            raise SystemExit("group_gemm: --shapes and --clusters are not supported (shapes.yaml's shapes are used)")
        shapes = group_shapes_of()
        print(f"group_gemm {args.version}, {args.sms} SMs: the host's launch per chunk")
        print(f"{'shape (groups: M)':>44} {'chunk':>5} {'tiles':>6} {'tallest':>7} {'ring':>5}")
        for r in group_choices(resolve(args.problem, args.version).path, shapes, args.sms):
            label = f"{len(shapes[r['shape']])}: " + ",".join(str(g[0]) for g in shapes[r['shape']])
            print(f"{label[:44]:>44} {r['first']:>5} {r['tiles']:>6} {r['tallest']:>7} {r['ring']:>5}")
        return 0
    shapes = ([tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")] if args.shapes
              else shapes_of(args.problem))
    told = f", cluster capacities {args.clusters} (given)" if clusters else ""
    print(f"{args.problem} {args.version}, {args.sms} SMs{told}: the host's launch per shape")
    print(f"{'M x N x K':>20} {'tiles':>6} {'rows':>5} {'M tiles':>8} {'S':>3} {'CTAs':>5} {'helpers':>8}"
          "   (stream-K versions: S = most pieces of a tile; helpers x tails each)")
    for r in choices(resolve(args.problem, args.version).path, shapes, args.sms, clusters, args.problem):
        helpers = f"{r['helpers']} x {r['per_helper']}" if r["helpers"] else "-"
        print(f"{r['m']:>6} x {r['n']:>5} x {r['k']:>5} {r['tiles']:>6} {r['m_tile_rows']:>5} {r['m_tiles']:>8} "
              f"{r['splits']:>3} {r['ctas']:>5} {helpers:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
