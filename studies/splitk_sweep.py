"""How many splits of K pay? (issues 5 and 7: group_gemm v11 / gemm v3 choose S on the host)

group_gemm v11 chose S from CTA *slots* (132 SMs x 2 resident CTAs) and came out SLOWER than v10
(0.91x geomean on an H200), while gemm v3 (the same kernel, 28-56 tiles) gained 1.5-1.9x. This
times one version's kernel with S forced to each of several values, per benchmark shape, so the
choice can rest on measurements instead of a model: the submission's source is copied with
`choose_splits` returning S (the copy only; the submission is untouched), built once per S, checked
on every timed output, and timed in the harness's cold mode (harness.timing.time_block).
Usage on a GPU machine, repo root:
    python3 studies/splitk_sweep.py --problem gemm --version v3 --splits 1,2,3,4,6,9
Prints mean µs per (S, shape) and the S the submission itself picks, last.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.getcwd())

CHOOSER = re.compile(r"static int choose_splits\(int tiles, int min_blocks, int (slots|sms)\) \{")


def forced_copy(source: str, splits: int, folder: Path, stem: str) -> Path:
    """The submission with choose_splits returning `splits` (capped so every split has a K block)."""
    if not CHOOSER.search(source):
        raise SystemExit("this version has no choose_splits(int tiles, int min_blocks, int slots) to override")
    def body(m: re.Match) -> str:  # NOTE: keeps the parameter's name: the rest of the body still uses it
        return (f"static int choose_splits(int tiles, int min_blocks, int {m.group(1)}) {{ "
                f"if (tiles > 0) return {splits} < min_blocks ? {splits} : min_blocks;")
    patched = CHOOSER.sub(body, source, count=1)
    patched = re.sub(r'EXTENSION_NAME = "([^"]+)"', lambda m: f'EXTENSION_NAME = "{m.group(1)}_s{splits}"', patched, count=1)
    path = folder / f"{stem}_s{splits}.py"
    path.write_text(patched)
    return path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", default="gemm")
    ap.add_argument("--version", default="v3")
    ap.add_argument("--splits", default="1,2,3,4,6,9")
    ap.add_argument("--blocks", type=int, default=8, help="timed blocks of --pool calls per (S, shape)")
    ap.add_argument("--pool", type=int, default=4)
    args = ap.parse_args()

    import torch

    from harness import build_cache, config, loader, timing
    from harness.submissions import resolve
    from reference import problem_module

    mod = problem_module(args.problem)
    sub = resolve(args.problem, args.version)
    os.environ["TORCH_EXTENSIONS_DIR"] = str(build_cache.root() / "experiments" / "splitk")
    timing.bind(torch)
    shapes = config.load()[args.problem].benchmarks
    source = sub.path.read_text()
    folder = Path(tempfile.mkdtemp(prefix="splitk-"))
    split_list = [int(x) for x in args.splits.split(",")]
    copies = {s: forced_copy(source, s, folder, f"{args.problem}_{args.version}") for s in split_list}
    # NOTE: one compiler per copy, all at once (each load_inline build is ~40 s of one core); the
    # timing loop below then loads them from the extensions folder.
    builds = [subprocess.Popen([sys.executable, "-c", "from harness import loader; "
                                f"loader.import_submission({str(p)!r}, 's{s}')"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for s, p in copies.items()]
    for s, proc in zip(copies, builds):
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"S={s}: build failed:\n{err.decode()[-2000:]}")
    rows = []
    for splits in split_list:
        kernel = loader.import_submission(str(copies[splits]), f"s{splits}")
        means = []
        for shape in shapes:
            params = dict(shape.params)
            base = params.pop("seed")
            times = []
            for block in range(args.blocks):
                pool = [mod.generate_input(**params, seed=base + 100 * block + i) for i in range(args.pool)]
                for data in pool:
                    for out in mod.outputs_of(data):
                        out.fill_(float("nan"))  # poison: a skipped store cannot pass
                result = timing.time_block(kernel, pool, "cold")
                for data, out in zip(pool, result.results):
                    ok, msg = mod.check(data, out)
                    if not ok:
                        raise SystemExit(f"S={splits} {shape.label}: wrong result: {msg}")
                times += result.times_us[1:] if block == 0 else result.times_us  # first call: warm-up
            means.append(statistics.mean(times))
            print(f"S={splits:2d} {shape.label:>48}: {means[-1]:8.2f} µs (n={len(times)})", flush=True)
        rows.append((splits, means))
    print(f"\n{args.problem} {args.version}, mean µs per call, cold mode, {torch.cuda.get_device_name()}")
    print("S    " + "".join(f"{s.label[:22]:>24}" for s in shapes))
    for splits, means in rows:
        print(f"{splits:<5}" + "".join(f"{m:24.2f}" for m in means))
    return 0


if __name__ == "__main__":
    sys.exit(main())
