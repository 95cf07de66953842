"""group_gemm's launch plans of two versions side by side, from their own C++ (CPU only: nvcc, no GPU).

Usage (repository root): python studies/group_gemm_plans.py v50 v52 [--random 20000] [--long-k] [--order]

Each version's CUDA_SRC is built for the host with a main() that feeds fill_chunk (and largest_first,
wants_deep_ring) the shapes of shapes.yaml (tests, benchmarks, edges), four custom shapes and N random
ones (g 1-12, M 1-700, N 128-8192; K 256, or with --long-k each shape's own and random 256-8192, printing each
group's k_splits: versions v86 on), with sms = 132 (an H100 SXM / H200), and
prints each chunk's ring, CTA count, workspace bytes, prepass blocks and per group m_tiles x
m_tile_rows. Each tile's wgmma N is then computed here as the kernel does (v52's deep-ring expression
min(m_tile_rows, rows left rounded up to 32), v50's rounded min(m_tile_rows, rows left) elsewhere: equal
where m_tile_rows is a multiple of 32). Prints every named shape's plans and counts the random ones
that differ; with v50 v52 also checks each change against v52's rule (a max_rows-128 deep chunk, a group
whose split is 97-112 rows, 128 -> 112).
Finding (2026-11-29, group_gemm v52): of shapes.yaml only C (g2 m[192,320]) changes (320 as 112 + 112 + 96
rows, N 112/112/96, against 128 + 128 + 64); 785 of 20000 random shapes change, all within the rule.
"""
import argparse, ast, os, random, re, subprocess, sys, tempfile
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAIN = r"""
#include <cstdio>
int main() {
    int g;
    while (scanf("%d", &g) == 1) {
        std::vector<int64_t> desc(14 * g, 0);
        for (int i = 0; i < g; ++i) {
            int64_t* p = &desc[14 * i];
            long long m, n, k;
            if (scanf("%lld %lld %lld", &m, &n, &k) != 3) return 1;
            p[6] = m; p[7] = n; p[8] = k;
            p[0] = p[1] = p[2] = p[3] = p[4] = 0x10000; p[9] = k / 2; p[10] = k / 2; p[13] = n;
        }
        const std::vector<int> order = ORDER_OF(desc.data(), g);
        for (int first = 0; first < g; first += kMaxGroups) {
            Problem pr; int tiles = 0, db = 0;
            const long long bytes = fill_chunk(desc.data(), order, first, g, 132, pr, tiles, db);
            printf("%s %d %lld %d", wants_deep_ring(pr) ? "deep" : "tall", tiles, bytes, db);
            for (int i = 0; i < pr.num_groups; ++i)
                printf(" %d:%d:%d" K_SPLITS_FORMAT, pr.groups[i].m, pr.groups[i].m_tiles, pr.groups[i].m_tile_rows K_SPLITS_ARG);
            printf(";");
        }
        printf("\n");
    }
}
"""
CUSTOM = [([330, 208], [3072] * 2), ([100, 448], [4096] * 2), ([289, 128, 97], [3072] * 3), ([330], [5120])]


def build(version, tmp, long_k=False, order=False):
    path = os.path.join(ROOT, "submissions", "group_gemm", f"submission_{version}.py")
    if not os.path.exists(path):
        path = os.path.join(ROOT, "submissions", "group_gemm", "attic", f"submission_{version}.py")
    src = next(n.value.value for n in ast.parse(open(path).read()).body
               if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "CUDA_SRC")
    cu = os.path.join(tmp, f"plan_{version}.cu")
    # --long-k: each group's k_splits too (v86 on; earlier versions have no such field)
    macros = ('#define K_SPLITS_FORMAT ":%d"\n#define K_SPLITS_ARG , pr.groups[i].k_splits\n' if long_k
              else "#define K_SPLITS_FORMAT\n#define K_SPLITS_ARG\n")
    # --order: the groups in the order the call launches them (launch_order, versions v74 on), not largest first
    macros += ("#define ORDER_OF(d, g) launch_order(d, g, 132)\n" if order
               else "#define ORDER_OF(d, g) largest_first(d, g)\n")
    open(cu, "w").write(src + macros + MAIN)
    exe = os.path.join(tmp, f"plan_{version}")
    subprocess.run(["nvcc", "-O1", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17", "-o", exe, cu], check=True)
    return exe


def tiles_n(chunk):
    """Each tile's wgmma N from one chunk's printed plan."""
    ring, _, _, _, *groups = chunk.split()
    out = []
    for gdesc in groups:
        m, mt, mtr = (int(x) for x in gdesc.split(":")[:3])
        for t in range(mt):
            left = m - t * mtr
            out.append(min(mtr, (left + 31) // 32 * 32) if ring == "deep" else (min(mtr, left) + 31) // 32 * 32)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a"); ap.add_argument("b")
    ap.add_argument("--random", type=int, default=20000)
    ap.add_argument("--order", action="store_true",
                    help="chunks and groups in launch_order's order (versions v74 on), not largest first")
    ap.add_argument("--long-k", action="store_true",
                    help="feed each shape's own K (random ones 256-8192) and print k_splits (versions v86 on)")
    args = ap.parse_args()
    cfg = yaml.safe_load(open(os.path.join(ROOT, "shapes.yaml")))["group_gemm"]
    named = [(f"{kind}:{i}", s["m"], s["n"], s["k"] if args.long_k else [256] * len(s["m"]))
             for kind in ("tests", "benchmarks", "edges") for i, s in enumerate(cfg[kind])]
    named += [(f"custom:{i}", m, n, [256] * len(m)) for i, (m, n) in enumerate(CUSTOM)]
    rng = random.Random(52)
    rand = []
    for _ in range(args.random):
        g = rng.randint(1, 12)
        m, n = [rng.randint(1, 700) for _ in range(g)], [128 * rng.randint(1, 64) for _ in range(g)]
        k = [64 * rng.randint(4, 128) for _ in range(g)] if args.long_k else [256] * g
        rand.append(("random", m, n, k))
    shapes = named + rand
    text = "".join(f"{len(m)} " + " ".join(f"{x} {y} {z}" for x, y, z in zip(m, n, k)) + "\n" for _, m, n, k in shapes)
    with tempfile.TemporaryDirectory() as tmp:
        outs = [subprocess.run([build(v, tmp, args.long_k, args.order)], input=text, capture_output=True, text=True,
                               check=True).stdout.splitlines() for v in (args.a, args.b)]
    outside = 0
    for (name, m, n, _), pa, pb in zip(shapes, *outs):
        if name != "random":
            print(f"{name:12s} m={m if len(m) < 9 else f'({len(m)} groups)'} {'CHANGED' if pa != pb else 'same'}")
            if pa != pb:
                for v, p in ((args.a, pa), (args.b, pb)):
                    print(f"   {v}: {p}  N per tile {[tiles_n(c) for c in p.split(';')[:-1]]}")
        if pa != pb and (args.a, args.b) == ("v50", "v52"):
            for ca, cb in zip(pa.split(";"), pb.split(";")):
                for ga, gb in zip(ca.split()[4:], cb.split()[4:]):
                    if ga != gb:
                        mm, mt, mtr = (int(x) for x in gb.split(":")[:3])
                        split = (mm + mt - 1) // mt
                        ok = cb.split()[0] == "deep" and mtr == 112 and 96 < split <= 112 and ga.endswith(":128")
                        outside += not ok
    nr = len(named)
    print(f"random shapes: {len(rand)}, plans that differ: {sum(x != y for x, y in zip(outs[0][nr:], outs[1][nr:]))}"
          + (f"; groups changed outside v52's rule: {outside}" if (args.a, args.b) == ("v50", "v52") else ""))


if __name__ == "__main__":
    main()
