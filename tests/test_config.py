"""harness.config: the repo's shapes.yaml, validation errors (with lines), --shape parsing."""

from __future__ import annotations

import functools
import math

import pytest

from harness import config, runner
from harness.errors import UserError
from reference import PROBLEMS


@pytest.fixture(scope="module")
def cfg():
    return config.load(config.paths.REPO_ROOT / "shapes.yaml")


def test_repo_shapes_load(cfg):
    assert set(cfg) == set(PROBLEMS)
    for name in PROBLEMS:
        assert len(cfg[name].tests) == 10, name
        for i, s in enumerate(cfg[name].tests + cfg[name].benchmarks):
            assert s.problem == name and s.params["seed"] == 1111
    assert [len(cfg[p].benchmarks) for p in PROBLEMS] == [3, 3, 4, 4]
    for name in PROBLEMS:
        pc = cfg[name]
        assert len(pc.speed_of_light_b200_us) == len(pc.benchmarks)
        assert len(pc.benchmark_labels) == len(pc.benchmarks)
        assert [s.index for s in pc.tests] == list(range(10))


def _mnk(shapes, keys=("m", "n", "k", "l")):
    return [tuple(s.params[k] for k in keys) for s in shapes]


def test_benchmarks_match_gpu_mode(cfg):
    assert _mnk(cfg["gemm"].benchmarks) == [(128, 7168, 16384, 1), (128, 4096, 7168, 1), (128, 7168, 2048, 1)]
    assert _mnk(cfg["gemv"].benchmarks, ("m", "k", "l")) == [(7168, 16384, 1), (4096, 7168, 8), (7168, 2048, 4)]
    assert _mnk(cfg["dual_gemm"].benchmarks) == [(256, 4096, 7168, 1), (512, 4096, 7168, 1),
                                                  (256, 3072, 4096, 1), (512, 3072, 7168, 1)]
    g = cfg["group_gemm"].benchmarks
    assert [s.params["g"] for s in g] == [8, 8, 2, 2]
    assert g[0].params["m"] == [80, 176, 128, 72, 64, 248, 96, 160]
    assert g[0].params["n"] == [4096] * 8 and g[0].params["k"] == [7168] * 8
    assert g[1].params["m"] == [40, 76, 168, 72, 164, 148, 196, 160]
    assert g[1].params["n"] == [7168] * 8 and g[1].params["k"] == [2048] * 8
    assert (g[2].params["m"], g[2].params["n"], g[2].params["k"]) == ([192, 320], [3072] * 2, [4096] * 2)
    assert (g[3].params["m"], g[3].params["n"], g[3].params["k"]) == ([128, 384], [4096] * 2, [1536] * 2)
    assert cfg["gemm"].speed_of_light_b200_us == [8.994, 2.354, 1.333]
    assert cfg["gemm"].tests[0].params == {"m": 128, "n": 256, "k": 256, "l": 1, "seed": 1111}


def test_group_gemm_tests_k_multiple_of_256(cfg):
    for s in cfg["group_gemm"].tests:
        assert all(k % 256 == 0 for k in s.params["k"])
        assert len(s.params["m"]) == len(s.params["n"]) == len(s.params["k"]) == s.params["g"]


def test_writeups(cfg):
    assert cfg["gemm"].writeup is None and cfg["gemv"].writeup is None
    wu = cfg["group_gemm"].writeup
    assert wu.gpu == "NVIDIA B200" and cfg["group_gemm"].benchmark_labels == ["A", "B", "C", "D"]
    assert wu.version("v23")["us"] == [38.2, 25.2, 12.8, 9.1]
    assert wu.version("nope") is None
    assert len(cfg["dual_gemm"].writeup.versions) == 6


def test_labels_and_keys(cfg):
    s = cfg["gemv"].benchmarks[1]
    assert s.label == "4096x7168 L8"
    assert cfg["gemm"].benchmarks[0].label == "128x7168x16384"
    assert cfg["group_gemm"].tests[0].label == "g2 m[96,128] n128/256 k256/512"
    assert cfg["gemm"].benchmarks[0].key == '{"m":128,"n":7168,"k":16384,"l":1}'
    assert "seed" not in cfg["gemm"].benchmarks[0].generator_kwargs()


def test_env_var_selects_file(tiny_shapes):
    cfg = config.load()
    assert len(cfg["gemm"].tests) == 1 and len(cfg["gemm"].benchmarks) == 2


# ---------------------------------------------------------------------------------- errors

GOOD = {
    "gemv": "  tests:\n    - {m: 128, k: 256, l: 1, seed: 1}\n  benchmarks:\n    - {m: 128, k: 256, l: 1, seed: 1}\n",
    "gemm": "  tests:\n    - {m: 128, n: 128, k: 256, l: 1, seed: 1}\n  benchmarks:\n    - {m: 128, n: 128, k: 256, l: 1, seed: 1}\n",
    "dual_gemm": "  tests:\n    - {m: 128, n: 128, k: 256, l: 1, seed: 1}\n  benchmarks:\n    - {m: 128, n: 128, k: 256, l: 1, seed: 1}\n",
    "group_gemm": "  tests:\n    - {m: [64], n: [64], k: [256], g: 1, seed: 1}\n  benchmarks:\n    - {m: [64], n: [64], k: [256], g: 1, seed: 1}\n",
}


def yaml_with(**override) -> str:
    return "".join(f"{p}:\n{override.get(p, GOOD[p])}" for p in PROBLEMS)


def load_text(write_shapes, text):
    path = write_shapes(text)
    return config.load(path), path


def test_minimal_valid_file(write_shapes):
    cfg, _ = load_text(write_shapes, yaml_with())
    assert cfg["gemm"].tests[0].params == {"m": 128, "n": 128, "k": 256, "l": 1, "seed": 1}


def test_malformed_yaml_names_the_line(write_shapes):
    text = yaml_with().replace("    - {m: 128, n: 128, k: 256, l: 1, seed: 1}\n  benchmarks", "    - {m: 128, n: 128, k: 256, l: 1, seed: 1\n  benchmarks", 1)
    path = write_shapes(text)
    with pytest.raises(UserError) as exc:
        config.load(path)
    msg = str(exc.value)
    assert "malformed YAML" in msg and "line" in msg and str(path) in msg
    lineno = int(msg.split("line ")[1].split(":")[0].split()[0])
    bad_line = text.splitlines().index("    - {m: 128, n: 128, k: 256, l: 1, seed: 1") + 1
    assert abs(lineno - bad_line) <= 1


def test_tab_indentation_is_malformed(write_shapes):
    path = write_shapes("gemv:\n\ttests: []\n")
    with pytest.raises(UserError, match=r"malformed YAML at line 2"):
        config.load(path)


def _line_of(text: str, needle: str) -> int:
    return next(i + 1 for i, line in enumerate(text.splitlines()) if needle in line)


@pytest.mark.parametrize("shape,needle", [
    ("{m: 128, l: 1, seed: 1}", "missing k"),
    ("{m: 128, k: 256, l: 1, seed: 1, n: 4}", "unknown n"),
    ("{m: 128, k: '256', l: 1, seed: 1}", "k must be a positive integer"),
    ("{m: 128.5, k: 256, l: 1, seed: 1}", "m must be a positive integer"),
    ("{m: 0, k: 256, l: 1, seed: 1}", "m must be a positive integer"),
    ("{m: 128, k: 100, l: 1, seed: 1}", "k must be a multiple of 64"),
    ("{m: 128, k: 256, l: 1, seed: x}", "seed must be an integer"),
])
def test_bad_shape_names_file_and_line(write_shapes, shape, needle):
    text = yaml_with(gemv=f"  tests:\n    - {{m: 128, k: 256, l: 1, seed: 1}}\n    - {shape}\n"
                          "  benchmarks:\n    - {m: 128, k: 256, l: 1, seed: 1}\n")
    path = write_shapes(text)
    with pytest.raises(UserError) as exc:
        config.load(path)
    msg = str(exc.value)
    assert needle in msg
    assert f"{path}:{_line_of(text, shape)}" in msg


@pytest.mark.parametrize("shape,needle", [
    ("{m: [64, 64], n: [64], k: [256, 256], g: 2, seed: 1}", "n must be a list of 2"),
    ("{m: [64], n: [64], k: [128], g: 1, seed: 1}", "multiple of 256"),
    ("{m: 64, n: [64], k: [256], g: 1, seed: 1}", "m must be a list"),
    ("{m: [64], n: [64], k: [256], g: 0, seed: 1}", "g must be a positive integer"),
])
def test_bad_group_shape(write_shapes, shape, needle):
    text = yaml_with(group_gemm=f"  tests:\n    - {shape}\n  benchmarks:\n    - {{m: [64], n: [64], k: [256], g: 1, seed: 1}}\n")
    path = write_shapes(text)
    with pytest.raises(UserError, match=needle):
        config.load(path)


def test_missing_problem_and_empty_set(write_shapes):
    text = "".join(f"{p}:\n{GOOD[p]}" for p in PROBLEMS if p != "dual_gemm")
    with pytest.raises(UserError, match="'dual_gemm' is missing"):
        config.load(write_shapes(text))
    text = yaml_with(gemm="  tests: []\n  benchmarks:\n    - {m: 128, n: 128, k: 256, l: 1, seed: 1}\n")
    with pytest.raises(UserError, match=r"gemm.tests must be a non-empty list"):
        config.load(write_shapes(text))
    with pytest.raises(UserError, match="top level"):
        config.load(write_shapes("- 1\n- 2\n"))
    with pytest.raises(UserError, match="must be a mapping"):
        config.load(write_shapes(yaml_with(gemm="  tests:\n    - 5\n  benchmarks:\n    - 6\n")))


def test_missing_file(tmp_path):
    with pytest.raises(UserError, match="cannot read"):
        config.load(tmp_path / "nope.yaml")


def test_writeup_and_sol_length_checked(write_shapes):
    gemm = GOOD["gemm"] + "  speed_of_light_b200_us: [1.0, 2.0]\n"
    with pytest.raises(UserError, match="speed_of_light_b200_us has 2 entries for 1 benchmarks"):
        config.load(write_shapes(yaml_with(gemm=gemm)))
    gemm = GOOD["gemm"] + ("  writeup:\n    source: x\n    gpu: B200\n    versions:\n"
                           "      - {name: V0, us: [1.0, 2.0]}\n")
    with pytest.raises(UserError, match="writeup version V0 has 2 timings for 1 benchmarks"):
        config.load(write_shapes(yaml_with(gemm=gemm)))


# ------------------------------------------------------------------------------- --shape

def test_parse_shape_kv_and_json():
    s = config.parse_shape_option("gemm", "m=128,n=256,k=256", 0)
    assert s.set_name == "custom" and s.index == 0
    assert s.params == {"m": 128, "n": 256, "k": 256, "l": 1, "seed": 1111}
    s = config.parse_shape_option("gemm", ' {"m": 64, "n": 32, "k": 512, "l": 2, "seed": 7} ', 3)
    assert s.params == {"m": 64, "n": 32, "k": 512, "l": 2, "seed": 7} and s.index == 3
    s = config.parse_shape_option("gemv", "m = 128 , k = 256, l=2", 0)
    assert s.params == {"m": 128, "k": 256, "l": 2, "seed": 1111}
    assert s.label == "128x256 L2"


def test_parse_shape_group_lists():
    s = config.parse_shape_option("group_gemm", "m=96;128,n=128,k=256,g=2", 0)
    assert s.params == {"m": [96, 128], "n": [128, 128], "k": [256, 256], "g": 2, "seed": 1111}
    s = config.parse_shape_option("group_gemm", "m=96;128,n=128;64,k=256;512,g=2,seed=5", 0)
    assert s.params == {"m": [96, 128], "n": [128, 64], "k": [256, 512], "g": 2, "seed": 5}
    s = config.parse_shape_option("group_gemm", '{"m": [8], "n": [16], "k": [256], "g": 1}', 0)
    assert s.params["m"] == [8]


@pytest.mark.parametrize("problem,text,needle", [
    ("gemm", "m=128,n=256", "missing k"),
    ("gemm", "m=128,n=256,k=100", "multiple of 64"),
    ("gemm", "m=128,n=x,k=256", "must be an integer"),
    ("gemm", "m=128,n=256,k", "key=value"),
    ("gemm", '{"m": 128,', "not valid JSON"),
    ("gemm", "m=96;128,n=256,k=256", "m must be a positive integer"),
    ("group_gemm", "m=96;128;64,n=128,k=256,g=2", "m must be a list of 2"),
    ("group_gemm", "m=96;128,n=128,k=128,g=2", "multiple of 256"),
])
def test_parse_shape_errors(problem, text, needle):
    with pytest.raises(UserError, match=needle):
        config.parse_shape_option(problem, text, 0)


def test_yaml_booleans_are_not_integers():
    with pytest.raises(UserError, match="not booleans"):
        config.validate_shape("gemm", {"m": True, "n": 256, "k": 256, "l": 1, "seed": 1}, "here")


def test_edges_are_optional_and_validated(write_shapes):
    cfg, _ = load_text(write_shapes, yaml_with())
    assert cfg["gemm"].edges == []
    with pytest.raises(UserError, match="no edges shapes"):
        runner.select_shapes("gemm", "edges", (), True)
    gemm = GOOD["gemm"] + "  edges:\n    - {m: 256, n: 256, k: 512, l: 3, seed: 7}\n"
    cfg, _ = load_text(write_shapes, yaml_with(gemm=gemm))
    (edge,) = cfg["gemm"].edges
    assert edge.set_name == "edges" and edge.params["l"] == 3
    assert runner.select_shapes("gemm", "edges:0", (), True)[0] == [edge]
    bad = GOOD["gemm"] + "  edges:\n    - {m: 256, n: 256, k: 100, l: 1}\n"
    with pytest.raises(UserError, match="multiple of 64"):
        load_text(write_shapes, yaml_with(gemm=bad))


def test_repo_edges_cover_the_issue_contracts(cfg):
    gemv = [s.params for s in cfg["gemv"].edges]
    assert any(p["m"] % 128 for p in gemv) and any(p["k"] > 16384 for p in gemv)
    group = [s.params for s in cfg["group_gemm"].edges]
    assert any(p["g"] > 32 for p in group) and any(min(p["m"]) == 1 for p in group)


def test_shapes_take_several_entries_comma_separated():
    """``--shapes benchmarks:1,benchmarks:0`` picks both, in order, each once (sanitize's grammar, now every
    command's: session 70's `probe marks --shapes benchmarks:0,benchmarks:1` was refused as a bad index)."""
    tests = config.load()["gemm"].tests
    chosen, _ = runner.select_shapes("gemm", "tests:1, tests:0,tests:1", (), False)
    assert [s.key for s in chosen] == [tests[1].key, tests[0].key]
    with pytest.raises(UserError, match=r"--shapes 'tests:1,,tests:0': an empty entry"):
        runner.select_shapes("gemm", "tests:1,,tests:0", (), False)
    with pytest.raises(UserError, match=r"--shapes 'tests:99': gemm has 10 tests shapes"):
        runner.select_shapes("gemm", "tests:0,tests:99", (), False)


def test_random_shapes_are_reproducible_and_inside_the_lists_envelope():
    cfg = config.load()
    for problem in ("gemv", "gemm", "dual_gemm", "group_gemm"):
        first, _ = runner.select_shapes(problem, "random:6:3", (), True)
        again, _ = runner.select_shapes(problem, "random:6:3", (), True)
        other, _ = runner.select_shapes(problem, "random:6:4", (), True)
        assert [s.params for s in first] == [s.params for s in again]  # the same draw on any machine
        assert [s.params for s in first] != [s.params for s in other]
        assert all(s.set_name == "random" for s in first) and len(first) == 6
        listed = [s.params for s in (*cfg[problem].tests, *cfg[problem].benchmarks)]
        keys = ("m", "n", "k") if problem == "group_gemm" else [k for k in first[0].params if k != "seed"]
        for key in keys:
            values = [v for p in listed for v in (p[key] if problem == "group_gemm" else [p.get(key, 1)])]
            step = functools.reduce(math.gcd, values)
            drawn = [v for s in first for v in (s.params[key] if problem == "group_gemm" else [s.params[key]])]
            assert all(v % step == 0 and min(values) <= v <= max(values) for v in drawn), (problem, key, drawn)


@pytest.mark.parametrize("spec", ["random:0", "random:65", "random:x", "random:3:-1", "random:", "random:3:1.5"])
def test_random_shapes_refuse_a_bad_count_or_seed(spec):
    with pytest.raises(UserError, match=r"expected random:N or random:N:SEED \(N from 1 to 64"):
        runner.select_shapes("gemm", spec, (), True)
