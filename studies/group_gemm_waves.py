"""group_gemm shape A's waves: what any launch order of v124's whole tiles can give (CPU only, nothing to build).

Usage (repository root): python studies/group_gemm_waves.py

Model: the block scheduler hands CTAs out in blockIdx order, each to the SM that frees first (v74's dispatch_makespan),
here with each kind of CTA's duration as v124 measured it on shape A (`probe marks group_gemm v124 v127 --shapes
benchmarks:0 --ctas 0-31,32-95,96-127,128-191,192-319`, session 83, 20 calls, medians of the v124 column, µs from the
CTA's start to its end; the first CTAs start 5.5 µs after the call's first stamp):
- 160-row tiles (CTAs 0-31) 59.4; 128-row tiles (96-127) 48.7;
- 248-row split pairs (32-95): the half that writes the partial ~42.5, the half that adds it 47.8;
- 176-row split halves (128-191) 36.5 (both roles, median);
- the last wave's 96- and 64-row tiles (192-319) 43.6.
Finding (session 83): v124's order models at 133.4 µs (measured: the marks builds' last CTA 126.8, so the model is ~5%
long); the best of all 8! orders of the groups models at 129.2 (3% sooner, inside the model's error); an even spread
of the same CTA-µs over 132 SMs is 113.6. The gap is granularity: 192 long CTAs (36.5-59.4 µs) and 128 short ones
(43.6) on 132 SMs, so an SM gets one long CTA or two (73-119 µs) before its short one; no order of whole tiles
closes it. What would: pieces finer than a tile where the waves end (split or streamed K), priced against the
exchange each piece costs (the 248-row adders' ~9 µs after their loops, v125's marks).
Caveat (session 84): a CTA's duration is not fixed. v128 (the 128- and 160-row tiles as K halves) measured A 1.019x
v124 and v130 (v128's groups in the order this model ranks best, the short tiles before the 128- to 176-row halves:
122.4 against v128's 125.8 µs) measured 0.970x: the same fill ratio (1.085x of an even spread) over 2.7% more
CTA-time, so the same CTAs ran longer beside other neighbours. The model ranks orders only within that error.
"""
import heapq
import itertools

SMS = 132
START = 5.5  # µs: the first CTAs' start after the call's first stamp
# (group label, CTA durations in µs in blockIdx order within the group); A's groups by tile height
GROUPS = {
    "160": [59.4] * 32,
    "248": [42.5, 47.8] * 32,  # split pairs: writer, adder side by side
    "128": [48.7] * 32,
    "176": [36.5] * 64,
    "96 (m 80)": [43.6] * 32,
    "96 (m 72)": [43.6] * 32,
    "96": [43.6] * 32,
    "64": [43.6] * 32,
}
V124_ORDER = ["160", "248", "128", "176", "96 (m 80)", "96 (m 72)", "96", "64"]


def makespan(order):
    free = [START] * SMS
    end = 0.0
    for group in order:
        for duration in GROUPS[group]:
            t = heapq.heappop(free) + duration
            heapq.heappush(free, t)
            end = max(end, t)
    return end


def main():
    print(f"v124's order {V124_ORDER}: {makespan(V124_ORDER):.1f} µs")
    best = min(itertools.permutations(GROUPS), key=makespan)
    print(f"best of {len(list(itertools.permutations(GROUPS)))} orders {list(best)}: {makespan(best):.1f} µs")
    total = sum(sum(d) for d in GROUPS.values())
    print(f"even spread: {total / SMS + START:.1f} µs ({total:.0f} CTA-µs over {SMS} SMs)")


if __name__ == "__main__":
    main()
