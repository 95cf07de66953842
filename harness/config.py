"""shapes.yaml: per problem the GPU MODE tests and benchmarks lists, the B200 speed-of-light
table and the writeup's published per-version timings. Validated on load; errors name the line."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
import os
import re
from pathlib import Path

import yaml

from harness import paths
from harness.errors import UserError
from reference import PROBLEMS, problem_module

SHAPE_SETS = ("tests", "benchmarks", "edges")
OPTIONAL_SETS = ("edges",)  # ours, not GPU MODE's: the "correct for any ..." contracts of the issues


@dataclass(frozen=True)
class Shape:
    problem: str
    set_name: str  # tests | benchmarks | edges | custom
    index: int
    params: dict  # the problem's SHAPE_KEYS plus seed

    @property
    def label(self) -> str:
        return shape_label(self.problem, self.params)

    @property
    def key(self) -> str:
        """Stable identity for the leaderboard: the shape without its seed, as compact JSON."""
        return json.dumps({k: v for k, v in self.params.items() if k != "seed"}, separators=(",", ":"))

    def generator_kwargs(self) -> dict:
        return {k: v for k, v in self.params.items() if k != "seed"}


def shape_label(problem: str, params: dict) -> str:
    if problem == "group_gemm":
        ms = params["m"]
        n, k = params["n"], params["k"]
        n_txt = str(n[0]) if len(set(n)) == 1 else "/".join(map(str, n))
        k_txt = str(k[0]) if len(set(k)) == 1 else "/".join(map(str, k))
        return f"g{params['g']} m[{','.join(map(str, ms))}] n{n_txt} k{k_txt}"
    keys = problem_module(problem).SHAPE_KEYS
    return "x".join(str(params[k]) for k in keys if k != "l") + (f" L{params['l']}" if params.get("l", 1) != 1 else "")


@dataclass
class Writeup:
    source: str
    gpu: str
    shapes: list[str]
    versions: list[dict]  # {name, change, us: [...], note?}

    def version(self, name: str) -> dict | None:
        for v in self.versions:
            if v["name"].lower() == name.lower():
                return v
        return None

    def analogue(self, text: str | None) -> dict | None:
        """The writeup version a docstring's Analogue line names: its first ``V<n>`` token that is a
        version of this writeup ("the writeup's V1 fusion ...; its V2" -> V1). A lab version
        (``group_gemm v11``, lower case) or a line starting "none" names none."""
        if not text or text.strip().lower().startswith("none"):
            return None
        for token in re.findall(r"\bV\d+\b", text):
            found = self.version(token)
            if found:
                return found
        return None


@dataclass
class ProblemConfig:
    name: str
    tests: list[Shape]
    benchmarks: list[Shape]
    speed_of_light_b200_us: list[float]
    writeup: Writeup | None = None
    benchmark_labels: list[str] = field(default_factory=list)
    edges: list[Shape] = field(default_factory=list)


def _line_of(node_map: dict, key) -> str:
    mark = node_map.get(key)
    return f" (line {mark + 1})" if mark is not None else ""


class _LineLoader(yaml.SafeLoader):
    """Records the line of every mapping key of a problem so errors can point at it."""


def _construct_mapping(loader, node, deep=False):
    mapping = yaml.SafeLoader.construct_mapping(loader, node, deep=deep)
    lines = {}
    for key_node, _ in node.value:
        lines[key_node.value] = key_node.start_mark.line
    mapping["__lines__"] = lines
    mapping["__line__"] = node.start_mark.line
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _strip(obj):
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in ("__lines__", "__line__")}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


# NOTE: torch's generators take 64 bits, and the harness adds offsets to a shape's seed (one per seed
# tested, per pool slot): a 24-digit seed failed inside input generation, blamed on the kernel.
MAX_SEED = 2**62


def validate_shape(problem: str, params: dict, where: str) -> dict:
    """Check one shape's keys and values; returns the plain dict (seed defaulted to 1111)."""
    mod = problem_module(problem)
    params = dict(_strip(params))
    bools = [k for k, v in params.items() if isinstance(v, bool) or (isinstance(v, list) and any(isinstance(x, bool) for x in v))]
    if bools:  # YAML reads yes/no/true as booleans, which Python would take for 1 and 0
        raise UserError(f"{where}: {', '.join(bools)} must be integers, not booleans")
    params.setdefault("seed", 1111)
    if problem != "group_gemm":
        params.setdefault("l", 1)
    missing = [k for k in mod.SHAPE_KEYS if k not in params]
    unknown = [k for k in params if k not in mod.SHAPE_KEYS and k != "seed"]
    if missing or unknown:
        optional = ["seed"] + (["l"] if problem != "group_gemm" else [])
        raise UserError(f"{where}: {problem} shape needs keys "
                        f"{', '.join(k for k in mod.SHAPE_KEYS if k not in optional)} ({', '.join(optional)} optional)"
                        + (f"; missing {', '.join(missing)}" if missing else "")
                        + (f"; unknown {', '.join(unknown)}" if unknown else ""))
    if problem == "group_gemm":
        g = params["g"]
        if not isinstance(g, int) or g < 1:
            raise UserError(f"{where}: g must be a positive integer, got {g!r}")
        for key in ("m", "n", "k"):
            vals = params[key]
            if not isinstance(vals, list) or len(vals) != g or not all(isinstance(v, int) and v > 0 for v in vals):
                raise UserError(f"{where}: {key} must be a list of {g} positive integers, got {vals!r}")
        if any(k % 256 for k in params["k"]):
            raise UserError(f"{where}: every k must be a multiple of 256, got {params['k']}")
    else:
        for key in mod.SHAPE_KEYS:
            v = params[key]
            if not isinstance(v, int) or v < 1:
                raise UserError(f"{where}: {key} must be a positive integer, got {v!r}")
        if params["k"] % 64:
            raise UserError(f"{where}: k must be a multiple of 64, got {params['k']}")
    if not isinstance(params["seed"], int) or not 0 <= params["seed"] <= MAX_SEED:
        raise UserError(f"{where}: seed must be an integer from 0 to 2**62, got {params['seed']!r}")
    return params


def load_unchanged() -> dict[str, ProblemConfig]:
    """``load()`` of the lab's shapes.yaml, parsed once per version of the file: for readers that
    name many shapes one at a time (a table's rows), where a parse each (~90 ms on the 2-core CI
    machine) cost seconds a table. Read-only: callers must not change what it returns."""
    path = paths.shapes_path()
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        stamp = None  # load() says why it cannot read it
    return _parsed(str(path), stamp)


@functools.lru_cache(maxsize=4)
def _parsed(path: str, stamp: int | None) -> dict[str, ProblemConfig]:
    return load(Path(path))


def load(path: Path | None = None) -> dict[str, ProblemConfig]:
    path = Path(path) if path else paths.shapes_path()
    try:
        text = path.read_text()
    except OSError as exc:
        hint = f" ({paths.missing_root_hint()})" if not path.exists() and "NVFP4_SHAPES" not in os.environ else ""
        raise UserError(f"cannot read {path}: {exc.strerror}{hint}") from None
    try:
        raw = yaml.load(text, Loader=_LineLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f" at line {mark.line + 1}" if mark else ""
        raise UserError(f"{path}: malformed YAML{line}: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: malformed YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise UserError(f"{path}: expected a mapping of problems at the top level")
    lines = raw.get("__lines__", {})
    configs = {}
    for name in PROBLEMS:
        if name not in raw:
            raise UserError(f"{path}: problem {name!r} is missing")
        entry = raw[name]
        where = f"{path}:{_line_of(lines, name).strip(' ()').replace('line ', '') or '?'}"
        if not isinstance(entry, dict):
            raise UserError(f"{where}: {name} must be a mapping with tests and benchmarks")
        sets = {}
        for set_name in SHAPE_SETS:
            items = entry.get(set_name)
            if set_name in OPTIONAL_SETS and items is None:
                sets[set_name] = []
                continue
            if not isinstance(items, list) or not items:
                raise UserError(f"{path}{_line_of(entry.get('__lines__', {}), set_name) or f' ({name})'}: "
                                f"{name}.{set_name} must be a non-empty list of shapes")
            shapes = []
            for i, item in enumerate(items):
                item_line = item.get("__line__") if isinstance(item, dict) else None
                loc = f"{path}:{item_line + 1}" if item_line is not None else f"{path} ({name}.{set_name}[{i}])"
                if not isinstance(item, dict):
                    raise UserError(f"{loc}: {name}.{set_name}[{i}] must be a mapping, got {item!r}")
                shapes.append(Shape(name, set_name, i, validate_shape(name, item, loc)))
            sets[set_name] = shapes
        sol = _strip(entry.get("speed_of_light_b200_us") or [])
        if sol and len(sol) != len(sets["benchmarks"]):
            raise UserError(f"{path}: {name}.speed_of_light_b200_us has {len(sol)} entries for "
                            f"{len(sets['benchmarks'])} benchmarks")
        writeup = None
        if entry.get("writeup"):
            w = _strip(entry["writeup"])
            for v in w.get("versions", []):
                if len(v.get("us", [])) != len(sets["benchmarks"]):
                    raise UserError(f"{path}: {name} writeup version {v.get('name')} has "
                                    f"{len(v.get('us', []))} timings for {len(sets['benchmarks'])} benchmarks")
            writeup = Writeup(w.get("source", ""), w.get("gpu", ""), w.get("shapes", []), w.get("versions", []))
        labels = writeup.shapes if writeup and writeup.shapes else [s.label for s in sets["benchmarks"]]
        configs[name] = ProblemConfig(name, sets["tests"], sets["benchmarks"], sol, writeup, labels, sets["edges"])
    return configs


RANDOM_MAX = 64  # shapes one ``random:N`` entry may draw


def random_shapes(problem: str, count: int, seed: int, pc: "ProblemConfig") -> list[Shape]:
    """``count`` shapes drawn (``random.Random(seed)``: the same list for the same seed on any machine) inside the
    envelope of the problem's GPU MODE lists, tests and benchmarks together: each size uniform over the multiples of
    the greatest common divisor of that size's listed values between their least and greatest (group_gemm: the
    group count so, then each group's m, n and k alike), each with a data seed of its own. Inside the envelope, so
    a version that passes the lists should take them (their sizes' steps are the lists' own); off the lists, so a
    change tuned to the listed shapes shows there (session 70: a group launch order 4.5% slower on one such shape)."""
    import math
    import random
    rng = random.Random(seed)
    listed = [s.params for s in (*pc.tests, *pc.benchmarks)]
    if not listed:
        raise UserError(f"--shapes random: {problem} has no tests or benchmarks shapes to draw around")

    def draw(values: list[int]) -> int:
        step = functools.reduce(math.gcd, values)
        return step * rng.randint(min(values) // step, max(values) // step)

    shapes = []
    for i in range(count):
        if problem == "group_gemm":
            g = draw([p["g"] for p in listed])
            params = {key: [draw([v for p in listed for v in p[key]]) for _ in range(g)] for key in ("m", "n", "k")}
            params["g"] = g
        else:
            keys = problem_module(problem).SHAPE_KEYS
            params = {key: draw([p.get(key, 1) for p in listed]) for key in keys}
        params["seed"] = rng.randrange(2**31)
        shapes.append(Shape(problem, "random", i, validate_shape(problem, params, f"--shapes random (shape {i})")))
    return shapes


def parse_shape_option(problem: str, text: str, index: int) -> Shape:
    """``--shape`` value: JSON (``{"m": 128, ...}``) or ``m=128,n=256,k=256`` (lists as ``m=96;128``)."""
    text = text.strip()
    if text.startswith("{"):
        try:
            params = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserError(f"--shape {text!r}: not valid JSON ({exc.msg})") from None
    else:
        params = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            if "=" not in part:
                raise UserError(f"--shape {text!r}: expected key=value pairs, got {part!r}")
            key, value = (s.strip() for s in part.split("=", 1))
            try:
                params[key] = [int(v) for v in value.split(";")] if ";" in value else int(value)
            except ValueError:
                raise UserError(f"--shape {text!r}: {key} must be an integer (or ;-separated integers)") from None
        if problem == "group_gemm":
            g = params.get("g")
            for key in ("m", "n", "k"):
                if isinstance(params.get(key), int) and isinstance(g, int):
                    params[key] = [params[key]] * g
    return Shape(problem, "custom", index, validate_shape(problem, params, f"--shape {text!r}"))
