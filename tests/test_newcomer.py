"""A newcomer's first screen (issue 51): what a CPU machine says and refuses, the tables' 80-column
and piped forms, the options every table honours or refuses, and the docs against --help."""

from __future__ import annotations

from pathlib import Path

import pytest

from click.testing import CliRunner

from harness import cli

DATA = Path(__file__).resolve().parent / "data"


def invoke(*args, env=None):
    return CliRunner().invoke(cli.main, [str(a) for a in args], env={"COLUMNS": "200", **(env or {})})


def test_a_gpu_mode_cuda_file_without_arch_is_refused_once_on_a_cpu(monkeypatch):
    """It used to FAIL its first shape with load_inline's "CUDA_HOME environment variable is not set"
    and SKIP the other 19 with that message; now one line says it needs a GPU, nothing runs."""
    monkeypatch.setattr("harness.runner.local_capability", lambda: None)
    r = invoke("test", "gemm", DATA / "gpumode_cuda_no_arch.py")
    assert r.exit_code == 1
    assert r.stderr.strip().splitlines() == [
        "refused: gpumode_cuda_no_arch.py: compiles CUDA (load_inline) and names no Arch: needs an NVIDIA GPU; "
        "this machine has none"]
    assert "CUDA_HOME" not in r.output


def test_cpu_rows_reach_the_leaderboard_only_with_allow_cpu(monkeypatch, isolated_env):
    """run --record on a CPU wrote a gpu=cpu row that every recorded table then showed beside the
    GPUs'; now it is refused before anything runs, and --allow-cpu records it on purpose."""
    from harness import leaderboard
    monkeypatch.setattr("harness.runner.local_capability", lambda: None)
    for command in (["run", "gemm", "v0"], ["table", "gemm", "--versions", "v0"]):
        r = invoke(*command, "--shape" if command[0] == "run" else "--shapes", "m=128,n=256,k=256" if command[0] == "run"
                   else "tests", "--record")
        assert r.exit_code == 2 and r.stderr.startswith("error: --record: no GPU here"), r.output
        assert not isolated_env["leaderboard"].exists()
    r = invoke("run", "gemm", "v0", "--shape", "m=128,n=256,k=256", "--record", "--allow-cpu", "--budget", "0.2",
               "--min-repeats", "3")
    assert r.exit_code == 0, r.output
    assert [row["gpu"] for row in leaderboard.read()] == ["cpu"]


# --------------------------------------------------------------------------- docs against --help
def _command(path: list[str]):
    import click
    cmd = cli.main
    for name in path:
        if not isinstance(cmd, click.Group) or name not in cmd.commands:
            return None
        cmd = cmd.commands[name]
    return cmd


def _options(cmd) -> dict:
    """A command's options by every name; a group's include its default subcommand's (``leaderboard``
    is ``leaderboard show``)."""
    import click
    params = list(cmd.params) + (list(cmd.commands["show"].params) if isinstance(cmd, click.Group) and "show" in cmd.commands else [])
    return {opt: p for p in params if isinstance(p, click.Option) for opt in p.opts + p.secondary_opts}


def test_every_option_the_docs_name_exists_on_its_command():
    """docs/commands.md's table names each command with its options: every one must be an option of
    that command (the docs had a --mode that is --method)."""
    import re
    rows = re.findall(r"^\| `nvfp4 ([a-z ]+?)((?: [A-Z|\[].*?)?)` ?(\(`[^)]*`\))? \|", (Path(cli.__file__).parents[2]
                      / "docs" / "commands.md").read_text(), re.MULTILINE)
    assert len(rows) >= 15
    for words, usage, extra in rows:
        path = [w for w in words.split() if w]
        path = [w for w in path if _command(path[:path.index(w) + 1]) is not None]
        cmd = _command(path)
        assert cmd is not None, words
        for opt in re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])\b", usage + extra):
            assert opt in _options(cmd) or (opt == "--version" and not path), f"nvfp4 {' '.join(path)}: no option {opt}"


def test_every_default_the_docs_state_is_the_default():
    """"`--timeout S` (per shape, default 300 s)": the default named in docs/ is each command's."""
    import re
    docs = Path(cli.__file__).parents[2] / "docs"
    text = " ".join(p.read_text() for p in docs.glob("*.md"))
    stated = re.findall(r"`(--[a-z-]+)[^`]*`[^`(]*?\(([^()`]*?)default ([\w.]+)", text)
    assert len(stated) >= 4, stated
    for opt, said, default in stated:
        holders = [cmd for name, cmd in _all_commands() if opt in _options(cmd)]
        named = [cmd for name, cmd in _all_commands() if name and re.search(rf"\b{name}\b", said)]
        holders = [cmd for cmd in holders if cmd in named] if named else holders
        assert holders, f"docs name {opt}, which no command has"
        for cmd in holders:
            actual = _options(cmd)[opt].default
            same = str(actual) == default or (isinstance(actual, (int, float)) and float(actual) == float(default))
            assert same, f"{cmd.name} {opt}: docs say default {default}, --help says {actual}"


def _all_commands():
    import click
    todo = [("", cli.main)]
    while todo:
        name, cmd = todo.pop()
        yield name, cmd
        if isinstance(cmd, click.Group):
            todo += [(f"{name} {n}".strip(), c) for n, c in cmd.commands.items()]


def test_every_option_named_anywhere_in_the_docs_exists():
    import re
    docs = Path(cli.__file__).parents[2] / "docs"
    every = {opt for _, cmd in _all_commands() for opt in _options(cmd)}
    for page in [*docs.glob("*.md"), docs.parent / "README.md"]:
        spans = [span for span in re.findall(r"`([^`\n]+)`", page.read_text()) if span.startswith(("--", "nvfp4 "))]
        for opt in {opt for span in spans for opt in re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", span)}:
            assert opt in every or opt in ("--version", "--help"), f"{page.name} names {opt}, which no command has"


# ------------------------------------------------------------ the Quickstart in an 80-column terminal
REPO = Path(cli.__file__).parents[2]
QUICK = ["--shapes", "tests:0", "--budget", "0.2", "--min-repeats", "3"]  # one tests shape: < 30 s


def _in_a_terminal(args: list[str], env: dict, columns: int = 80) -> list[str]:
    """``python -m harness ARGS`` in a pseudo-terminal of ``columns`` columns: the screen's lines as
    a person reads them (colours stripped; a spinner's \\r-overwritten text dropped)."""
    import fcntl
    import os
    import pty
    import re
    import struct
    import subprocess
    import sys
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "harness", *args], stdin=slave, stdout=slave, stderr=slave, cwd=REPO,
                            env={**os.environ, **env, "COLUMNS": str(columns), "LINES": "50", "TERM": "xterm",
                                 "CUDA_VISIBLE_DEVICES": ""})  # NOTE: a newcomer's CPU machine, on a GPU one too
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "", b"".join(chunks).decode("utf-8", "replace"))
    return [line.split("\r")[-1] if line.rstrip("\r") else "" for line in text.replace("\r\n", "\n").split("\n")]


def _recorded_board(isolated_env) -> list[dict]:
    """The repo's leaderboard.csv as this test's: the recorded H200 rows a CPU table shows."""
    import shutil

    from harness import leaderboard
    from harness import submissions
    shutil.copy(REPO / "leaderboard.csv", isolated_env["leaderboard"])
    # NOTE: the table lists the main ladder; a recorded version since moved to attic/ shows with --all only
    ladder = {sub.label for sub in submissions.versions("group_gemm")}
    return [r for r in leaderboard.best(leaderboard.read(), "group_gemm", "gpumode", "dirty") if r["version"] in ladder]


def _assert_readable(lines: list[str], columns: int = 80) -> str:
    import re
    for line in lines:
        assert len(line) <= columns, f"{len(line)} columns: {line!r}"
        assert not re.search(r"(?<!\w)\d[\d,.]*…", line), f"a number cut: {line!r}"
    return "\n".join(lines)


def test_quickstart_table_reads_whole_at_80_columns(isolated_env):
    """nvfp4 table group_gemm on a CPU at 80 columns: the first lines say what a CPU can show, v0's
    CPU time is whole, and the recorded H200 figures and the writeup's B200 ones are all there."""
    import re

    from harness import config
    from harness.cli.render import fmt_us
    best = _recorded_board(isolated_env)
    screen = _assert_readable(_in_a_terminal(["table", "group_gemm", *QUICK], {"NVFP4_LEADERBOARD": str(isolated_env["leaderboard"])}))
    first = [line for line in screen.splitlines() if line.strip()][:3]
    assert any(line.startswith("no GPU here: CPU times of v0") for line in first), screen
    assert re.search(r"^v0\s.*\d\.\d+", screen, re.MULTILINE), screen  # v0's CPU time, whole
    pc = config.load()["group_gemm"]
    shown = [r for r in best if r["dist"] == "competition" and r["shape"] in {s.key for s in pc.benchmarks}]
    assert shown, "the repo records group_gemm results"
    for r in shown:
        assert fmt_us(float(r["mean_us"])) in screen, r
    analogue = pc.writeup.analogue("V7")  # v38's Analogue line names the writeup's V7
    if any(r["version"] == "v38" for r in shown):
        assert all(f"({fmt_us(us)})" in screen for us in analogue["us"]), screen


def test_published_reads_whole_at_80_columns(isolated_env):
    from harness import config
    from harness.cli.render import fmt_us
    published = _assert_readable(_in_a_terminal(["table", "group_gemm", "--published"], {}))
    for v in config.load()["group_gemm"].writeup.versions:
        assert all(fmt_us(us) in published for us in v["us"] if us is not None), v["name"]


def test_leaderboard_reads_whole_at_80_columns(isolated_env):
    import re
    from harness.cli.render import fmt_us
    best = _recorded_board(isolated_env)
    board = _assert_readable(_in_a_terminal(["leaderboard", "group_gemm"],
                                            {"NVFP4_LEADERBOARD": str(isolated_env["leaderboard"])}))
    assert all(fmt_us(float(r["mean_us"])) in board for r in best)
    assert '{"m"' not in board and re.search(r" v42 +A ", board)  # shapes by their short names (A..D), not JSON


def test_list_is_a_line_per_version_at_80_columns():
    from harness import submissions
    listing = _assert_readable(_in_a_terminal(["list", "group_gemm"], {}))
    versions = submissions.versions("group_gemm")
    assert all(any(line.startswith(f"{s.label} ") for line in listing.splitlines()) for s in versions)
    assert len(listing.splitlines()) < len(versions) + 20  # a line per version, not a paragraph


# ---------------------------------------------------------------------- the screenshot in docs/
SCREENSHOT = REPO / "docs" / "table_group_gemm_80_columns.png"


def _png(ansi: str, path: Path, columns: int = 80) -> tuple[int, int]:
    """A terminal's text (ANSI colours, as rich's recording exports it) drawn as a PNG, one
    DejaVu Sans Mono cell per column (matplotlib ships the font); returns the image's size."""
    from matplotlib import font_manager
    from PIL import Image, ImageDraw, ImageFont
    from rich.cells import cell_len
    from rich.console import Console
    from rich.text import Text

    regular = ImageFont.truetype(font_manager.findfont(font_manager.FontProperties(family="DejaVu Sans Mono")), 15)
    bold = ImageFont.truetype(font_manager.findfont(font_manager.FontProperties(family="DejaVu Sans Mono",
                                                                                weight="bold")), 15)
    cell, height, pad = regular.getlength("M"), 19, 12
    background, foreground = (30, 30, 30), (220, 220, 220)
    lines = ansi.rstrip("\n").split("\n")
    size = (int(columns * cell) + 2 * pad, len(lines) * height + 2 * pad)
    image = Image.new("RGB", size, background)
    draw = ImageDraw.Draw(image)
    painter = Console(color_system="truecolor", force_terminal=True, width=10**4)
    for row, line in enumerate(lines):
        x = pad
        for seg in Text.from_ansi(line).render(painter):
            style = seg.style
            color = style.color.get_truecolor().hex if style and style.color and not style.color.is_default else None
            rgb = tuple(int(color[i:i + 2], 16) for i in (1, 3, 5)) if color else foreground
            if style and style.dim:
                rgb = tuple((c + b) // 2 for c, b in zip(rgb, background))
            draw.text((x, pad + row * height), seg.text, font=bold if style and style.bold else regular, fill=rgb)
            x += cell * cell_len(seg.text)
    image.save(path)
    return size


def test_screenshot_of_the_quickstart_table_at_80_columns(tmp_path, isolated_env, monkeypatch):
    """docs/table_group_gemm_80_columns.png is this test's picture of `nvfp4 table group_gemm` (one
    tests shape, to stay quick) on a CPU in an 80-column terminal; NVFP4_WRITE_SCREENSHOT=1 writes it
    there, else it goes to a temporary folder."""
    import io
    import os

    from rich.console import Console

    from harness.cli import measure, render
    _recorded_board(isolated_env)
    screen = Console(record=True, width=80, force_terminal=True, color_system="256", file=io.StringIO(),
                     highlight=False)
    monkeypatch.setattr(render, "console", screen)
    monkeypatch.setattr(measure, "console", screen)
    monkeypatch.setattr("harness.runner.local_capability", lambda: None)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # the children too: a CPU machine's screen on a GPU one
    r = invoke("table", "group_gemm", *QUICK)
    assert r.exit_code == 0, r.output
    text = screen.export_text(clear=False)
    _assert_readable(text.splitlines())
    assert text.startswith("no GPU here: CPU times of v0") and "best recorded results" in text
    path = SCREENSHOT if os.environ.get("NVFP4_WRITE_SCREENSHOT") else tmp_path / SCREENSHOT.name
    width, height = _png(screen.export_text(styles=True), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and height > 200
    assert SCREENSHOT.exists(), "docs/ keeps the picture: NVFP4_WRITE_SCREENSHOT=1 pytest -k screenshot makes it"


# ------------------------------------------------------------------ the tables' options and forms
def test_published_and_recorded_honour_format_and_output(tmp_path, isolated_env):
    """table --published and --recorded ignored --format and -o (exit 0, no file): --recorded writes
    them, --published refuses them."""
    import csv
    _recorded_board(isolated_env)
    r = invoke("table", "group_gemm", "--published", "--format", "json")
    assert r.exit_code == 2 and r.stderr.startswith("error:") and "--published" in r.stderr
    out = tmp_path / "recorded.csv"
    r = invoke("table", "group_gemm", "--recorded", "-o", out)
    assert r.exit_code == 0 and f"wrote csv to {out}" in r.stderr
    rows = list(csv.DictReader(out.open()))
    v38 = [row for row in rows if row["version"] == "v38" and row["dist"] == "competition"]
    assert {row["writeup_version"] for row in v38} == {"V7"} and {row["shape_label"] for row in v38} == set("ABCD")
    assert "best recorded results" in r.stdout  # -o writes the file and still prints the table


def test_recorded_puts_the_writeups_figure_and_floor_ratio_beside_ours(isolated_env):
    """Issue 49 item 4: for a version whose Analogue names a writeup version, the B200 figure in the
    next column, and our time over the H200 floor beside the writeup's over the B200 speed of light."""
    from harness import config, stats
    best = _recorded_board(isolated_env)
    r = invoke("table", "group_gemm", "--recorded")  # piped: tab-separated, every column
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    header = next(line.split("\t") for line in lines if line.startswith("version\t"))
    assert header[:4] == ["version", "analogue", "A", "A B200"] and header[-3:] == ["geomean", "/floor", "B200/floor"]
    v38 = dict(zip(header, next(line.split("\t") for line in lines if line.startswith("v38"))))
    pc = config.load()["group_gemm"]
    assert v38["analogue"] == "V7" and [v38[f"{s} B200"] for s in "ABCD"] == ["58.00", "51.60", "24.70", "20.90"]
    assert float(v38["B200/floor"]) == round(stats.geomean([u / f for u, f in zip([58.0, 51.6, 24.7, 20.9],
                                                                                        pc.speed_of_light_b200_us)]), 2)
    ours = [r for r in best if r["version"] == "v38" and r["dist"] == "competition"]
    assert float(v38["/floor"]) == round(stats.geomean([float(r["mean_us"]) / float(r["floor_us"]) for r in ours]), 2)


def test_the_writeup_analogue_is_the_first_writeup_version_the_line_names():
    from harness import config
    wu = config.load()["group_gemm"].writeup
    assert wu.analogue("V7")["name"] == "V7"
    assert wu.analogue("the writeup's V1 fusion (one A tile); its V2 (TMA)")["name"] == "V1"
    assert wu.analogue("none (the writeup's V6 patches tensormaps)") is None
    assert wu.analogue("group_gemm v11") is None and wu.analogue(None) is None


def test_plot_on_a_cpu_is_refused_before_measuring(tmp_path, monkeypatch):
    """table --plot on a CPU measured for minutes, then said "no points to plot"."""
    monkeypatch.setattr("harness.runner.local_capability", lambda: None)
    monkeypatch.setattr("harness.runner.run", lambda *a, **k: (_ for _ in ()).throw(AssertionError("measured")))
    r = invoke("table", "gemv", "--plot", tmp_path / "x.png")
    assert r.exit_code == 2 and r.stderr.startswith("error: --plot draws each version's time over this GPU's floor")
    assert not (tmp_path / "x.png").exists()


def test_piped_tables_are_tab_separated_with_plain_numbers(isolated_env):
    _recorded_board(isolated_env)
    r = invoke("leaderboard", "group_gemm")
    lines = r.stdout.splitlines()
    assert lines[0].startswith("# best recorded results") and lines[1].split("\t")[:3] == ["problem", "version", "shape"]
    cells = [line.split("\t") for line in lines[2:] if line.startswith("group_gemm\t")]
    assert cells and all(len(c) == len(lines[1].split("\t")) for c in cells)
    assert all(float(c[4]) > 0 for c in cells)  # mean µs: a number awk and a spreadsheet read ("1,234.5" is not)


def test_version_names_take_any_case_and_shape_options_name_the_optional_keys():
    r = invoke("diff", "gemv", "V3")
    assert r.exit_code == 0 and "gemv: v1 -> v3" in r.stdout
    r = invoke("test", "gemm", "v0", "--shape", "m=128")
    assert r.exit_code == 2 and "needs keys m, n, k (seed, l optional); missing n, k" in r.stderr


# --------------------------------------------------------- test, run and compare: 80 columns, piped
MEASURED = {"test": ["test", "gemv", "v0", "--shapes", "tests:0"],
            "run": ["run", "gemv", "v0", *QUICK],
            "compare": ["compare", "gemv", "v0", "v0", "--shapes", "tests:0", "--budget", "0.3", "--pool", "1"]}


@pytest.mark.parametrize("command", list(MEASURED))
def test_measured_tables_read_whole_at_80_columns(command):
    """`test` printed a 96-column table at 80 (rich did not hold its detail column to the width);
    now every line fits, every figure is whole, and test's detail wraps rather than being cut."""
    import re
    screen = _assert_readable(_in_a_terminal(MEASURED[command], {}))
    flat = " ".join(screen.split())
    row = {"test": r"^128x256 +competition +PASS +3 seeds pass",
           "run": r"^128x256 +PASS +\d[\d,]*\.\d+ +\[\d[\d,]*\.\d+, \d[\d,]*\.\d+\] +\d+\*? ",
           "compare": r"^128x256 +PASS +\d[\d,]*\.\d+ +\d[\d,]*\.\d+ +\d+\.\d{3}x "}[command]
    assert re.search(row, screen, re.MULTILINE), screen
    if command == "test":  # the detail, wrapped over lines, is all there
        assert flat.count("3 seeds pass; max error 0 of the tolerance (cuBLAS fp16: 0)") == 2, screen
    if command == "compare":  # the diagnostics under the table, whole; the outputs' word in its column or under it
        assert re.search(r"128x256 by order: \d+\.\d{3}x A first, \d+\.\d{3}x B first", flat), screen
        assert re.search(r"(none \(CPU\) +|^128x256 outputs: )bit for bit v0's *$", screen, re.MULTILINE), screen


def test_measured_tables_piped_are_a_title_and_tab_separated_rows():
    """Piped, test, run and compare print a `# title` line and tab-separated rows with every column
    and plain numbers (run and compare had no piped form: a boxed table 240 columns wide)."""
    def table(args):
        r = invoke(*args)
        assert r.exit_code == 0, r.output
        lines = r.stdout.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("# "))
        header = lines[start + 1].split("\t")
        rows = [dict(zip(header, line.split("\t"))) for line in lines[start + 2:] if line.count("\t") == len(header) - 1]
        return lines[start], header, rows, lines

    title, header, rows, _ = table(MEASURED["test"])
    assert title == "# gemv v0: correctness (3 seeds per shape)" and header == ["shape", "dist", "status", "detail"]
    assert [(r["shape"], r["dist"], r["status"]) for r in rows] == [("128x256", "competition", "PASS"),
                                                                     ("128x256", "general", "PASS")]
    title, header, rows, _ = table(MEASURED["run"])
    assert title.startswith("# gemv v0: ") and {"median µs", "IQR", "best µs", "floor µs", "read µs"} <= set(header)
    (row,) = rows
    lo, hi = (float(x) for x in row["95% CI"].strip("[]").split(", "))  # no thousands separators
    assert lo <= float(row["mean µs"]) <= hi
    title, header, rows, lines = table(MEASURED["compare"])
    assert header == ["shape", "status", "v0 (A) µs", "v0 (B) µs", "speedup", "95% CI", "pairs", "verdict", "outputs"]
    (row,) = rows  # v0 against itself: both sides' times, not one column written twice
    assert float(row["v0 (A) µs"]) > 0 and float(row["v0 (B) µs"]) > 0 and row["verdict"] == "none (CPU)"
    assert row["outputs"] == "bit for bit v0's"
    assert any(line.startswith("128x256 by order: ") for line in lines)


def test_a_long_shape_is_named_short_and_spelled_out_under_the_table():
    """group_gemm's tests shapes are a paragraph each (`g2 m[96,128] n128/256 k256/512`): the table
    names them t0.., and a line under it says which is which."""
    from harness import config
    r = invoke("test", "group_gemm", "v0", "--shapes", "tests:0", "--dist", "competition")
    assert r.exit_code == 0, r.output
    assert "t0\tcompetition\tPASS\t" in r.stdout
    assert f"shapes: t0 = {config.load()['group_gemm'].tests[0].label}" in r.stdout
