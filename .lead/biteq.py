"""Outputs of two versions on the same inputs, compared bit for bit (session 67, scratch)."""
import sys, torch
from harness import config, submissions, loader
from harness.config import problem_module
problem, va, vb = sys.argv[1:4]
sets = sys.argv[4].split(",") if len(sys.argv) > 4 else ["tests", "benchmarks"]
cfg = config.load()[problem]
mod = problem_module(problem)
ka = loader.import_submission(submissions.resolve(problem, va).path, va)
kb = loader.import_submission(submissions.resolve(problem, vb).path, vb)
def outs(o):
    return [t.clone() for t in (o if isinstance(o, (list, tuple)) else [o])]
bad = 0; n = 0
for set_name in sets:
    for shape in getattr(cfg, set_name):
        for dist in ("competition", "general", "realistic", "mixed"):
            for seed in (4242,):
                data = mod.generate_input(**shape.generator_kwargs(), seed=seed, dist=dist)
                oa = outs(ka(data)); torch.cuda.synchronize()
                data = mod.generate_input(**shape.generator_kwargs(), seed=seed, dist=dist)
                ob = outs(kb(data)); torch.cuda.synchronize()
                n += 1
                diff = [int((x.view(torch.int16) != y.view(torch.int16)).sum()) for x, y in zip(oa, ob)]
                if any(diff):
                    bad += 1
                    print(f"DIFF {set_name}:{shape.index} {shape.label} {dist} seed {seed}: {diff} of {[x.numel() for x in oa]}")
print(f"{problem} {va} vs {vb}: {n - bad} of {n} inputs bit for bit equal")
