"""Where inside its K loop does group_gemm's persistent tall kernel lose its time? Marks in the loop, v89 against v99.

Session 73: v97 and v99 (a persistent launch for B's tall tiles, attic/) ran every tile's loop ~31% more cycles than
v89's one-CTA-a-tile launch (`probe marks`, loop = first stage decoded -> K loop done: 23,569 -> 30,975 cycles a tile
at the same ~1.75 GHz), in every height range, with loops of nearly the same instructions (`probe sass --opcodes`:
a few ISETP and IMAD more a block) and not by the tile order (v98: 0.980x). So the consumers wait inside the loop, and
the question is where: in the first lap (the ring's refill at a tile's start), evenly over the blocks (each block's
copies landing later), or at the end.

This writes marks-only copies of both versions (no change to a plain build: NVFP4_MARK compiles to nothing) with two
stamps more inside the consumers' loop, right after the wait and decode of a block (consumer thread 0): when block 6
(the first of the ring's second lap, the first block the producer issued after a slot was freed) is decoded, and when
the tile's last block is. `probe marks` makes its phases from one mark to the next in id order, so the copies'
marks are renumbered in time order (GEMM start, stage 0 landed, first stage decoded, block 6 decoded, last block
decoded, K loop done, C staged, end, then the prepass's and the rest) and a tile's loop reads as its first lap,
its steady blocks (26 of B's 32) and its last block's wgmma and drain, each against v89's. Both copies stamp one row
a tile (v89: its CTA; v99: NVFP4_MARK_AT, the tile's row), so --ctas ranges are tiles in each launch's own order.
v89's ranges by group also hold the lead in its NOTES: the same height in the first wave and in later ones (168 rows:
group 164, tiles 0-55, all first wave, against group 168, tiles 336-391, late; 160 rows: group 160, tiles 56-111,
against group 148, 112-167, mostly the second wave). If a loop runs slower while every SM loops at once, v89's
first-wave loops show it, and a persistent launch pays it on every tile.

Usage (repository root, a GPU machine): python3 studies/group_gemm_loop_marks.py [--half-a | --b-heights] [--write-only]
  writes .build/experiments/group_gemm_loop_marks/{v89,v99}_loop_marks.py, then runs
  `python3 -m harness probe marks group_gemm <v89 copy> <v99 copy> --shapes benchmarks:1 --fill 'GEMM start:end'` and
  each copy alone with --ctas by height in its own tile order (--write-only: only the copies, and the commands printed).
  --half-a: copies whose producers load half of each A tile (timing only: the outputs are wrong), each version beside
  its own, then alone by height: whether the loops wait on the L2's delivery of A. --b-heights: v99 with only shape
  B's five heights' loops beside v89, alone by height, and under `profile --ncu --sass`.
The text anchors are v89's and v99's (a copy refuses a file whose anchor moved).
"""
import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / ".build" / "experiments" / "group_gemm_loop_marks"
DECODE = "decode_slot(next, next == 0 ? phase ^ 1 : phase, frag[(slot + 1) % 3]);"
# v89's consume(): the loop's block index is kb + slot; v99's consume_tile(): k, and the tile's row is `tile`.
# NOTE: written with the ids 16 and 17 (past the versions'), renumbered with the others below
STAMPS = {
    "consume(": ("if (cthread == 0 && kb + slot + 1 == 6) NVFP4_MARK(16); "
                 "if (cthread == 0 && kb + slot + 2 == num_k) NVFP4_MARK(17);"),
    "consume_tile(": ("if (cthread == 0 && k + 1 == 6) NVFP4_MARK_AT(tile, 16); "
                      "if (cthread == 0 && k + 2 == num_k) NVFP4_MARK_AT(tile, 17);"),
}
# old id -> new id: the tall tiles' marks in time order first (v89's and v99's MARK_NAMES ids)
RENUMBER = {0: 0, 9: 1, 1: 2, 16: 3, 17: 4, 2: 5, 3: 6, 4: 7, 5: 8, 6: 9, 7: 10, 8: 11, 10: 12, 11: 13, 12: 14, 13: 15}
NAMES = ["GEMM start", "stage 0 landed", "first stage's B decoded", "block 6 decoded", "last block decoded",
         "K loop done", "C staged", "end", "prepass start", "prepass stores issued", "wait returned (prepass visible)",
         "first lap's A issued", "first lap landed", "stages 0-1's A issued", "producer: tile taken",
         "producer: tile's last copy issued"]
_MARK = re.compile(r"NVFP4_MARK(_AT)?\((tile, )?(\d+)\)")


def marked(text: str, label: str) -> str:
    """``text`` with the two stamps after each consumer loop's decode of the next block, every mark renumbered in
    time order (RENUMBER) and MARK_NAMES replaced by NAMES."""
    out, pos, done = [], 0, 0
    while (at := text.find(DECODE, pos)) >= 0:
        # NOTE: the function the decode sits in is the last of STAMPS' names defined before it
        owner = max(STAMPS, key=lambda f: text.rfind(f"void {f}", 0, at))
        if text.rfind(f"void {owner}", 0, at) < 0:
            raise SystemExit(f"{label}: a decode outside consume() and consume_tile(): anchors moved")
        end = at + len(DECODE)
        out.append(text[pos:end] + "\n                    " + STAMPS[owner])
        pos, done = end, done + 1
    if not done:
        raise SystemExit(f"{label}: no `{DECODE}`: anchors moved")
    text = "".join(out) + text[pos:]
    body = text.find('CUDA_SRC = r"""')
    if body < 0:
        raise SystemExit(f"{label}: no CUDA_SRC")

    def renumber(m: re.Match) -> str:
        old = int(m.group(3))
        if old not in RENUMBER:
            raise SystemExit(f"{label}: mark id {old} has no place in RENUMBER")
        return f"NVFP4_MARK{m.group(1) or ''}({m.group(2) or ''}{RENUMBER[old]})"
    text = text[:body] + _MARK.sub(renumber, text[body:])
    start = text.find("MARK_NAMES = [")
    close = text.find("]\n", start)
    if start < 0 or close < 0:
        raise SystemExit(f"{label}: no MARK_NAMES list")
    return text[:start] + "MARK_NAMES = " + repr(NAMES) + text[close + 1:]


# NOTE: every A copy and its expected bytes come from this line in each producer of both versions
A_BYTES = "const uint32_t a_bytes = static_cast<uint32_t>(n_cols) * 128;"


def half_a(text: str, label: str) -> str:
    """``text`` whose producers copy (and expect) the first half of each A tile's bytes: the consumers' wgmma read
    the whole tile, the other half stale, so the outputs are wrong and only the timing means anything. The question
    it answers: do the loops wait on the L2's delivery of A (each group's A re-read by every column tile, 255 MB a
    call on shape B), and is that what a persistent launch, which keeps every SM looping, pays more of?"""
    if A_BYTES not in text:
        raise SystemExit(f"{label}: no `{A_BYTES}`: anchors moved")
    text = text.replace(A_BYTES, A_BYTES.replace("* 128;", "* 64;  // the study's half of A"))
    return text.replace(f'nvfp4_group_gemm_{label}_loop_marks"', f'nvfp4_group_gemm_{label}_half_a_loop_marks"')


# v99's persistent kernel runs its heights' consumer loops in sequence, one call each
HEIGHT_CALL = "    consume_height<R, {}>(problem, tile, at, next_tile, ring, ring_generic, full, empty, slot0, phase0);\n"
B_HEIGHTS = (200, 168, 160, 96, 64)  # shape B's tile heights in both launches (v89's and v99's)


def b_heights(text: str) -> str:
    """v99 (marked) with the consumer loops of B's heights only: correct on shape B alone. Session 74's `profile --ncu
    --sass` put all of v99's excess warp samples over v89 on B in instruction fetch (no_inst), ~40% of it in the chain
    of height checks a CTA falls through between its loops (17 loops of ~10.5 KB, the checks ~1,400 instructions
    apart); five loops make that chain and the binary a third as long. Faster than v89 here would make a persistent
    launch worth specialising by height; as slow, the fetch is the loops' own."""
    for rows in range(256, 0, -8):
        call = HEIGHT_CALL.format(rows)
        if rows not in B_HEIGHTS and call in text:
            text = text.replace(call, "")
    kept = sum(HEIGHT_CALL.format(rows) in text for rows in B_HEIGHTS)
    if kept != len(B_HEIGHTS):
        raise SystemExit(f"v99: {kept} of B's {len(B_HEIGHTS)} height calls found: anchors moved")
    return text.replace('nvfp4_group_gemm_v99_loop_marks"', 'nvfp4_group_gemm_v99_b_heights_loop_marks"')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write-only", action="store_true", help="write the copies and print the command")
    parser.add_argument("--b-heights", action="store_true",
                        help="also a copy of v99 with the consumer loops of shape B's five heights only, beside v89")
    parser.add_argument("--half-a", action="store_true",
                        help="also copies that load half of each A tile (wrong outputs: timing only), each beside its own")
    args = parser.parse_args()
    if args.half_a and args.b_heights:
        parser.error("--half-a and --b-heights are two studies: one at a time")
    OUT.mkdir(parents=True, exist_ok=True)
    sources = {"v89": ROOT / "submissions/group_gemm/submission_v89.py",
               "v99": ROOT / "submissions/group_gemm/attic/submission_v99.py"}
    copies = []
    for label, path in sources.items():
        text = marked(path.read_text(), label)
        # NOTE: an extension name of its own, so the copy never shares the version's build
        name = f'EXTENSION_NAME = "nvfp4_group_gemm_{label}"'
        if name not in text:
            raise SystemExit(f"{label}: no `{name}`: anchors moved")
        text = text.replace(name, f'EXTENSION_NAME = "nvfp4_group_gemm_{label}_loop_marks"')
        copy = OUT / f"{label}_loop_marks.py"
        copy.write_text(text)
        copies.append(str(copy))
        if args.b_heights and label == "v99":
            copy = OUT / "v99_b_heights_loop_marks.py"
            copy.write_text(b_heights(text))
            copies.append(str(copy))
        if args.half_a:
            copy = OUT / f"{label}_half_a_loop_marks.py"
            copy.write_text(half_a(text, label))
            copies.append(str(copy))
    probe = [sys.executable, "-m", "harness", "probe", "marks", "group_gemm"]
    # NOTE: shape B's tiles by height in each launch's own order (56 column blocks a group's M tile): v89's is
    # launch_order's (groups of 164 / 160 / 148 / 196 / 76 / 72 / 168 / 40 rows), v99's tall_segments' (200, 168 x 2,
    # 160 x 2, 96 x 2, 64 rows); --ctas of a side-by-side are the same indices in both, so each runs alone for these.
    v89_order = "0-55,56-111,112-167,168-223,224-279,280-335,336-391,392-447"
    v99_order = "0-55,56-167,168-279,280-391,392-447"
    if args.b_heights:  # v89 beside v99 cut to B's heights, then the cut copy alone by height and under ncu --sass
        v89, v99, v99_cut = copies
        commands = [
            [*probe, v89, v99_cut, "--shapes", "benchmarks:1", "--fill", "GEMM start:end"],
            [*probe, v99_cut, "--shapes", "benchmarks:1", "--ctas", v99_order],
            [sys.executable, "-m", "harness", "profile", "group_gemm", v99_cut, "--shape", "1", "--ncu", "--sass", "20"],
        ]
    elif args.half_a:  # each version beside its half-A copy, then the copies alone by height
        v89, v89_half, v99, v99_half = copies
        commands = [
            [*probe, v89, v89_half, "--shapes", "benchmarks:1", "--fill", "GEMM start:end"],
            [*probe, v99, v99_half, "--shapes", "benchmarks:1", "--fill", "GEMM start:end"],
            [*probe, v89_half, "--shapes", "benchmarks:1", "--ctas", v89_order],
            [*probe, v99_half, "--shapes", "benchmarks:1", "--ctas", v99_order],
        ]
    else:
        commands = [
            [*probe, *copies, "--shapes", "benchmarks:1", "--fill", "GEMM start:end"],
            [*probe, copies[0], "--shapes", "benchmarks:1", "--ctas", v89_order],
            [*probe, copies[1], "--shapes", "benchmarks:1", "--ctas", v99_order],
        ]
    for command in commands:
        print(" ".join(command), flush=True)
        if not args.write_only:
            done = subprocess.run(command, cwd=ROOT, env=dict(os.environ, COLUMNS="200"))
            if done.returncode:
                sys.exit(done.returncode)


if __name__ == "__main__":
    main()
