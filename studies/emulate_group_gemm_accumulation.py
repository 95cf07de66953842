"""Where group_gemm v39's sums lose precision: its wgmma accumulation emulated on the CPU.

Issue 37 found v39 with 4 of 327,680 elements outside rtol = atol = 1e-3 of the float64 reference on
benchmark A (group 0: 80 x 4096, K = 7168) on data with every e2m1 code and e4m3 scales of every
mantissa over 2^-6..2^0 drawn independently for A and B, where cuBLAS fp16 (fp32 accumulate) passed.

v39's arithmetic, read from its code: A and B are decoded to fp16 exactly (every e2m1 x e4m3 value,
and B's x 2^-7 of the scale trick, is an fp16); there is no split-K, no partial exchange and no
rescaling between K blocks; one fp32 accumulator per output runs over all of K in wgmma k16 steps
(448 at K = 7168), K permuted inside each 64-block (step s holds k = 16t + 8j + s + 4h, t < 4, j, h
< 2: all four scale blocks of the 64-block); the sum is multiplied by 2^7 (exact) and rounded once to
fp16. So the only places a rounding happens are the tensor core's accumulation into the fp32
accumulator and the final fp16 rounding (which the reference shares: it is rounded to fp16 too).

The tensor core is not an IEEE fp32 adder. Models of one k16 step, acc <- acc + sum of 16 products
(products of two fp16 are exact in float64, and so is every sum below: the terms span < 45 bits):
  rn      exact sum, rounded to nearest fp32 (an ideal fused adder; sequential FFMA is close to it)
  rz      exact sum, truncated toward zero to fp32 (normalisation by truncation)
  align3  every addend (16 products and acc) truncated toward zero to 3 bits below fp32's last bit
          of the largest addend's exponent, summed exactly, the result truncated to fp32 (Fasi et al.
          2021's A100 model; the H100 model of Khattak & Mikaitis 2025 is of this family)
Orders: `natural` (k16 steps of consecutive K, cuBLAS's), `permuted` (v39's), `natural/splitS`
(cuBLAS choosing split-K: S accumulators over K / S each, added in fp32 at the end), and
`permuted/promoteP` (the fix: each run of P K blocks accumulated by wgmma from zero, then added
into a separate fp32 accumulator with one IEEE FADD, round to nearest).

Prints, per (model, order), over all seeds: elements outside the tolerance, the worst error in
tolerances (1.0 = the edge of GPU MODE's check), and the mean signed error over the elements
(truncation shows as a bias). CPU only: the defaults (rn and rz, M = 80, N = 1024, 4 seeds) take a
few minutes on two cores; align3 builds every product and is ~10x slower (use --n 384).

`--check-v42` instead checks v42's operand order bit by bit: its decode_b (B's registers, from the
packed bytes: e2m1_pair_bits<0> of word 2s + j shifted right by 4 tig) and its prepass (A's fp16
chunks: chunk 2t + j = pairs (n, n + 4) of word 2t + j) pair every logical k of every step with the
same K, and each step holds exactly scale block s.

Usage: python3 tools/experiments/emulate_group_gemm_accumulation.py [--m 80] [--n 1024] [--k 7168]
       [--seeds 4] [--models rn,rz] [--orders natural,permuted,...]
       python3 tools/experiments/emulate_group_gemm_accumulation.py --check-v42
"""
from __future__ import annotations

import argparse

import numpy as np

E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])
RTOL = ATOL = 1e-3
BLOCK_K = 64


def operand(rng: np.random.Generator, rows: int, k: int) -> np.ndarray:
    """rows x K dequantised values (exact in float64 and in fp16): every e2m1 code uniformly, one
    e4m3 scale per 16 K with a uniform binade in 2^-6..2^0 and a uniform mantissa, drawn
    independently per (row, scale block): the data of issue 37's finding."""
    codes = rng.integers(0, 16, size=(rows, k))
    binade = rng.integers(-6, 1, size=(rows, k // 16))
    mantissa = rng.integers(0, 8, size=(rows, k // 16))
    scale = (1.0 + mantissa / 8.0) * np.exp2(binade.astype(np.float64))
    values = E2M1[codes] * np.repeat(scale, 16, axis=1)
    assert np.array_equal(values.astype(np.float16).astype(np.float64), values)
    return values


def k16_steps(k: int, order: str) -> list[np.ndarray]:
    """The K indices of each wgmma k16 step, in issue order."""
    steps = []
    for kb in range(0, k, BLOCK_K):
        for s in range(4):
            if order == "natural":
                steps.append(kb + 16 * s + np.arange(16))
            else:  # v39: step s, logical position p = 8 j + 2 tig + h holds k = 16 tig + 8 j + s + 4 h
                steps.append(np.array([kb + 16 * tig + 8 * j + s + 4 * h
                                       for j in range(2) for tig in range(4) for h in range(2)]))
    return steps


def to_fp32_rz(x: np.ndarray) -> np.ndarray:
    f = x.astype(np.float32)
    over = np.abs(f.astype(np.float64)) > np.abs(x)
    f[over] = np.nextafter(f[over], np.float32(0))
    return f


def truncate_to_grid(x: np.ndarray, quantum: np.ndarray) -> np.ndarray:
    """x truncated toward zero to a multiple of quantum (sign-magnitude, as an aligner shifts)."""
    return np.trunc(x / quantum) * quantum


def step(acc: np.ndarray, a_step: np.ndarray, b_step: np.ndarray, model: str) -> np.ndarray:
    """acc (M x N float32) + the 16 products of one k16 step, by `model`."""
    if model in ("rn", "rz"):
        exact = acc.astype(np.float64) + a_step @ b_step.T  # exact: every partial sum fits 53 bits
        return exact.astype(np.float32) if model == "rn" else to_fp32_rz(exact)
    # align3: addends aligned to the largest one's exponent with 3 extra bits, truncated
    prods = a_step[:, None, :] * b_step[None, :, :]  # M x N x 16, exact
    addends = np.concatenate([prods, acc.astype(np.float64)[:, :, None]], axis=2)
    biggest = np.abs(addends).max(axis=2)
    _, exp = np.frexp(np.where(biggest > 0, biggest, 1.0))  # biggest in [2^(exp-1), 2^exp)
    quantum = np.exp2((exp - 1 - 23 - 3).astype(np.float64))[:, :, None]
    return to_fp32_rz(truncate_to_grid(addends, quantum).sum(axis=2))


def accumulate(a: np.ndarray, b: np.ndarray, order: str, model: str) -> np.ndarray:
    """The fp32 result of one tile's K loop under `order` (see the docstring)."""
    base, _, variant = order.partition("/")
    steps = k16_steps(a.shape[1], base)
    m, n = a.shape[0], b.shape[0]
    if variant.startswith("split"):
        parts = int(variant[5:])
        per = len(steps) // parts
        total = np.zeros((m, n), np.float32)
        for p in range(parts):
            acc = np.zeros((m, n), np.float32)
            for ks in steps[p * per:(p + 1) * per]:
                acc = step(acc, a[:, ks], b[:, ks], model)
            total = total + acc  # fp32 FADD, round to nearest
        return total
    if variant.startswith("promote"):
        blocks_per = int(variant[7:])
        total = np.zeros((m, n), np.float32)
        acc = np.zeros((m, n), np.float32)
        for i, ks in enumerate(steps):
            acc = step(acc, a[:, ks], b[:, ks], model)
            if (i + 1) % (4 * blocks_per) == 0 or i + 1 == len(steps):
                total = total + acc  # FADD, round to nearest
                acc = np.zeros((m, n), np.float32)
        return total
    acc = np.zeros((m, n), np.float32)
    for ks in steps:
        acc = step(acc, a[:, ks], b[:, ks], model)
    return acc


def error_in_tolerances(out32: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """As the harness judges: both rounded to the output's fp16, |out - ref| / (atol + rtol |ref|)."""
    ref = exact.astype(np.float16).astype(np.float64)
    out = out32.astype(np.float16).astype(np.float64)
    return np.abs(out - ref) / (ATOL + RTOL * np.abs(ref))


def e2m1_pair_bits0(word: np.ndarray) -> np.ndarray:
    """The kernels' e2m1_pair_bits<0>: nibbles 0 and 4 (bits 0..3, 16..19) as an fp16 pair x 2^-14."""
    word = word.astype(np.uint32)
    return ((word << np.uint32(12)) & np.uint32(0x80008000)) | ((word << np.uint32(9)) & np.uint32(0x0E000E00))


def halves(bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo = (bits & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16).astype(np.float64)
    hi = (bits >> np.uint32(16)).astype(np.uint16).view(np.float16).astype(np.float64)
    return lo, hi


def check_v42_order(trials: int = 200) -> None:
    """v42's B registers and A chunks, built from random packed rows, meet on the same K (see the
    module docstring); values compared as x 2^-14 fp16 (scales left out: one per step by construction)."""
    rng = np.random.default_rng(7)
    for _ in range(trials):
        row = rng.integers(0, 256, size=32, dtype=np.uint8)  # one row's K block: K = 2 byte + nibble
        words = row.view("<u4")  # word w: K = 8w .. 8w + 7, nibble n at bits 4n
        natural = E2M1[np.stack([row & 15, row >> 4], axis=1).reshape(-1)] * 2.0 ** -14
        for s in range(4):
            for tig in range(4):
                for j in range(2):
                    lo, hi = halves(e2m1_pair_bits0(np.array([words[2 * s + j] >> np.uint32(4 * tig)])))
                    for h, v in enumerate((lo[0], hi[0])):
                        k = 8 * j + 2 * tig + h  # logical k of the wgmma step
                        kk = 16 * s + 8 * j + tig + 4 * h
                        assert kk // 16 == s, "a step must hold one scale block"
                        assert v == natural[kk] or (v == 0 and natural[kk] == 0), (s, tig, j, h)
                        # A's side: chunk 2s + j (byte offset 32 s + 16 j of the row), element k % 8
                        c = 2 * s + j
                        n, hh = (k % 8) // 2, (k % 8) % 2
                        a_lo, a_hi = halves(e2m1_pair_bits0(np.array([words[c] >> np.uint32(4 * n)])))
                        assert (a_lo[0], a_hi[0])[hh] == v or ((a_lo[0], a_hi[0])[hh] == 0 and v == 0)
                        assert 8 * c + n + 4 * hh == kk
    print(f"v42 order: {trials} random rows, every (step, tig, j, h) pairs B and A on the same K, "
          "each step within one scale block: OK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--m", type=int, default=80)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--k", type=int, default=7168)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--models", default="rn,rz", help="rn, rz, align3")
    ap.add_argument("--orders", default="natural,permuted,natural/split2,natural/split4,permuted/promote1,permuted/promote4")
    ap.add_argument("--check-v42", action="store_true", help="check v42's operand order bit by bit, then exit")
    args = ap.parse_args()
    if args.check_v42:
        check_v42_order()
        return
    models, orders = args.models.split(","), args.orders.split(",")
    stats = {(mo, o): [0, 0.0, [], 0] for mo in models for o in orders}
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        a, b = operand(rng, args.m, args.k), operand(rng, args.n, args.k)
        exact = a @ b.T  # exact in float64 (multiples of 2^-20 far below 2^33)
        for mo in models:
            for o in orders:
                out = accumulate(a, b, o, mo)
                err = error_in_tolerances(out, exact)
                st = stats[(mo, o)]
                st[0] += int((err > 1.0).sum())
                st[1] = max(st[1], float(err.max()))
                st[2].append(float((out.astype(np.float64) - exact).mean()))
                st[3] += err.size
    print(f"M={args.m} N={args.n} K={args.k}, {args.seeds} seeds ({args.seeds * args.m * args.n} elements per row)")
    print(f"{'model':7} {'order':20} {'outside':>8} {'worst (tol)':>12} {'mean signed err':>16}")
    for (mo, o), (bad, worst, bias, _) in stats.items():
        print(f"{mo:7} {o:20} {bad:8d} {worst:12.3f} {np.mean(bias):16.3e}")


if __name__ == "__main__":
    main()
