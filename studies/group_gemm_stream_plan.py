"""group_gemm v105-v107's stream launch plan, replicated in Python (CPU only, nothing to build).

Usage (repository root): python studies/group_gemm_stream_plan.py [--snap | --whole] [--slots 3]

For a few named grouped shapes: whether make_stream takes the stream launch (every group K <= 4096 and at least two
ring laps, stream tiles fewer than the 132 SMs, the model under 0.9x the v89 tiles' makespan, the positions
checked as stream_plan_holds does), and for C the CTAs' pieces and the modelled cycles a CTA (max / mean / min).
--snap starts CTAs on whole ring laps of 6 blocks (v105); without it, where the weighted share falls (v106, v107).
The replica follows the versions' C++ by hand (stream_block_cycles, stream_position, stream_plan_holds, make_stream,
and v89's chunk_max_rows / m_tiles_of for the tiles the model compares against); it was checked only against the
kernels' own outputs on the GPU (the three custom shapes below passed `test --dist all` in session 78).
Finding (session 78): on C snapped starts put 28-42 blocks in a CTA (the slowest 30,450 cycles against a mean of
26,450), unsnapped 27,160 at the slowest; either way C's 192-row tiles (2.0 shares each) run as three pieces, one of
them a single block; with kStreamSlots 2 custom 2 fails the plan's check (a tile spans more CTAs), with 3 both custom
shapes pass; D is refused by the model (28,900 against 24,300 cycles).
--whole (v108's plan: whole-share groups cut evenly, the rest streamed): C's 192-row tiles as 48 halves of 32 blocks,
the 160-row tiles streamed over 84 CTAs; the slowest CTA 26,825 cycles, two-piece CTAs 67 -> 36.
Measured (group_gemm NOTES): the stream launch as built ran C at 0.61x (v105) and 0.74x (v107) of v89's speed.
"""
import argparse, heapq

ROWS = [32, 64, 96, 128, 160, 192, 256]
CYCLES = [480, 533, 603, 722, 725, 823, 1078]  # group_gemm v74's cost table (kCostRows / kCostCycles)
LAP = 6  # TallRing's depth


def block_cycles(rows):  # stream_block_cycles (integer interpolation)
    for i in range(6):
        if rows <= ROWS[i + 1]:
            return CYCLES[i] + (rows - ROWS[i]) * (CYCLES[i + 1] - CYCLES[i]) // (ROWS[i + 1] - ROWS[i])
    return CYCLES[6]


def tile_cycles(rows, k):  # v74's tile_cycles (float interpolation, a tile's fixed 7000 cycles)
    per = CYCLES[6] * rows / ROWS[6]
    for i in range(6):
        if rows <= ROWS[i + 1]:
            per = CYCLES[i] + (rows - ROWS[i]) / (ROWS[i + 1] - ROWS[i]) * (CYCLES[i + 1] - CYCLES[i])
            break
    return 7000.0 + k // 64 * per


def makespan(costs, sms):  # dispatch_makespan
    free, end = [0.0] * sms, 0.0
    for c in costs:
        t = heapq.heappop(free) + c
        heapq.heappush(free, t)
        end = max(end, t)
    return end


def v89_tiles(groups, sms):  # chunk_max_rows, chunk_is_tall, m_tiles_of (K <= 4096): (rows, k, count) a tile row
    max_rows = 256
    while max_rows > 64 and sum(-(-m // max_rows) * (n // 128) for m, n, k in groups) * 10 < sms * 9:
        max_rows //= 2
    tall = any(-(-m // -(-m // max_rows)) > 128 for m, n, k in groups)
    out = []
    for m, n, k in groups:
        m_tiles = -(-m // max_rows)
        split = -(-m // m_tiles)
        rows = ((split + 7) // 8 * 8 if split > 160 else (split + 31) // 32 * 32) if tall else (split + 31) // 32 * 32
        if not tall and max_rows == 128 and 96 < split <= 112:
            rows = 112
        out += [(min(rows, (m - t * rows + 31) // 32 * 32), k, n // 128) for t in range(m_tiles)]
    return out


def plan(groups, sms=132, snap=False, slots=3, whole=False):
    """(positions, pieces a CTA, groups in the chunk's order) or (None, why)."""
    if any(k > 4096 or k // 64 < 2 * LAP for m, n, k in groups):
        return None, "K"
    # NOTE: the chunk's groups in launch_order's order: largest M first (stable); its search, which runs only where v89's
    # tiles outnumber the SMs, is not replicated (such a chunk is said so below)
    groups = sorted(groups, key=lambda g: -g[0])
    if sum(count for r, k, count in v89_tiles(groups, sms)) > sms:
        print("  (v89's tiles outnumber the SMs: launch_order may search another order, not replicated)")
    now = [tile_cycles(r, k) for r, k, count in v89_tiles(groups, sms) for _ in range(count)]
    gs, tiles, total, tallest = [], 0, 0, 0
    for m, n, k in groups:
        m_tiles = -(-m // 256)
        rows = (-(-m // m_tiles) + 31) // 32 * 32
        g = dict(blocks=k // 64, cost=block_cycles(rows), begin=tiles, tiles=m_tiles * (n // 128), rows=rows)
        gs.append(g)
        tiles += g["tiles"]
        total += g["tiles"] * g["blocks"] * g["cost"]
        tallest = max(tallest, rows)
    if tiles >= sms:
        return None, "tiles"
    modelled = total / sms + 7000 + 2 * (1000 + 16 * tallest)
    if modelled >= 0.9 * makespan(now, sms):
        return None, "model %.0f against %.0f cycles" % (modelled, makespan(now, sms))

    # v108 (--whole): groups whose tiles each cost within 4% of a whole number q of shares get q CTAs a tile, the tile cut
    # into q equal pieces, and come first in the plan's order; the others are streamed over the CTAs left
    for g in gs:
        w = g["cost"] * g["blocks"] * sms
        q = (2 * w + total) // (2 * total)
        g["q"] = q if whole and 1 <= q <= 1 + slots and abs(w - q * total) * 25 <= q * total else 0
    ordered = [g for g in gs if g["q"]] + [g for g in gs if not g["q"]]
    at = 0
    for g in ordered:
        g["order"] = at
        at += g["tiles"]

    def position(c):  # stream_position
        dedicated, streamed = 0, total
        for g in ordered:
            if not g["q"]:
                continue
            if c < dedicated + g["tiles"] * g["q"]:
                i, piece = divmod(c - dedicated, g["q"])
                return (g["order"] + i, piece * g["blocks"] // g["q"])
            dedicated += g["tiles"] * g["q"]
            streamed -= g["tiles"] * g["blocks"] * g["cost"]
        left = sms - dedicated
        if left <= 0 or c >= sms:
            return (tiles, 0)
        target, done = streamed * (c - dedicated) // left, 0
        for g in ordered:
            if g["q"]:
                continue
            tile_cost = g["cost"] * g["blocks"]
            span = g["tiles"] * tile_cost
            if target < done + span:
                local = (target - done) // tile_cost
                b = -(-(target - done - local * tile_cost) // g["cost"])
                if snap:
                    b = max(g["blocks"] - LAP * ((g["blocks"] - b + LAP // 2) // LAP), 0)
                return (g["order"] + local + 1, 0) if b >= g["blocks"] else (g["order"] + local, b)
            done += span
        return (tiles, 0)

    def group_of(order):
        return [g for g in ordered if g["order"] <= order][-1]

    starts = [position(c) for c in range(sms + 1)]
    if starts[0] != (0, 0) or starts[-1] != (tiles, 0):
        return None, "ends"
    inside, pieces = [0] * tiles, []
    for c in range(sms):
        at, end = starts[c], starts[c + 1]
        if not at < end:
            return None, "order at CTA %d" % c
        mine = []
        while at < end:
            stop = end[1] if end[0] == at[0] else group_of(at[0])["blocks"]
            mine.append((at[0], at[1], stop - at[1]))
            at = (at[0] + 1, 0)
        if len(mine) > 2 or (len(mine) == 2 and starts[c][1] == 0):
            return None, "pieces at CTA %d" % c
        if starts[c][1] > 0:
            inside[starts[c][0]] += 1
            if inside[starts[c][0]] > slots:
                return None, "more than %d CTAs start inside tile %d" % (slots, starts[c][0])
        pieces.append(mine)
    return (starts, pieces, ordered), "stream (groups in the chunk's order: M %s)" % [m for m, n, k in groups]


SHAPES = {
    "C": [(192, 3072, 4096), (320, 3072, 4096)],
    "D": [(128, 4096, 1536), (384, 4096, 1536)],
    "custom 1": [(200, 2048, 3072), (330, 3072, 4096)],
    "custom 2": [(40, 1024, 4096), (256, 2048, 2048), (300, 1536, 3072)],
    "one group": [(600, 1024, 3072)],
}

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--snap", action="store_true", help="v105's starts on whole ring laps")
    parser.add_argument("--slots", type=int, default=3, help="kStreamSlots (v105-v108: 3)")
    parser.add_argument("--whole", action="store_true", help="v108's whole-share groups cut evenly, the rest streamed")
    args = parser.parse_args()
    for name, groups in SHAPES.items():
        result, why = plan(groups, snap=args.snap, slots=args.slots, whole=args.whole)
        print(f"{name}: {why}")
        if result and name == "C":
            starts, pieces, gs = result
            for kind, ctas in (("one piece", [c for c, m in enumerate(pieces) if len(m) == 1]),
                               ("two pieces", [c for c, m in enumerate(pieces) if len(m) == 2])):
                print(f"  {kind}: {len(ctas)} CTAs, e.g.", "; ".join(f"{c} {pieces[c]}" for c in ctas[:3] + ctas[-3:]))
            cost = [sum(p[2] * [g for g in gs if g["order"] <= p[0]][-1]["cost"] for p in mine) for mine in pieces]
            blocks = [sum(p[2] for p in mine) for mine in pieces]
            print(f"  cycles a CTA: max {max(cost)}, mean {sum(cost) / len(cost):.0f}, min {min(cost)};"
                  f" blocks a CTA {min(blocks)}-{max(blocks)}; two-piece CTAs {sum(len(m) == 2 for m in pieces)}")
