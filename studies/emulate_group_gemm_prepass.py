"""Emulates group_gemm's A prepass (decode_a_kernel) of v24 and v25 on the CPU, thread by thread.

Both kernels are re-implemented from their index math (blocks, group search, thread -> (row, K
piece) mapping, loads, fp16 arithmetic, PRMT, stores), vectorised over a group's threads with
numpy. fp16 multiplies use numpy float16: the product of two fp16 values is exact in float32 and
numpy rounds it once to fp16 (round to nearest even, subnormals kept), as __hmul2 does. The host's
fill_chunk (M tile choice, decode_begin, block counts) and the launch's workspace placement are
ported too.

Checks, per case: v25's workspace is byte-identical to v24's; v25 (and v24) write every byte of
the workspace exactly once; and the workspace equals a first-principles decode (fp16(a x sfa) in
the K-permuted, swizzled tile layout, zero rows past M_g).

Usage: python3 studies/emulate_group_gemm_prepass.py   (CPU only, under a minute)
"""
import numpy as np

BLOCK_N, BLOCK_M_MAX, M_STEP, BLOCK_K = 128, 256, 32, 64
K_DECODE_THREADS = 256
MAX_GROUPS = 32
SMS = 132  # H100 SXM / H200
POISON = 0xA5

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


# ------------------------------------------------------------------ device primitives
def u32(x):
    return np.asarray(x, dtype=np.uint64).astype(np.uint32) if not isinstance(x, np.ndarray) else x.astype(np.uint32)


def shl(x, n):
    return ((x.astype(np.uint64) << np.uint64(n)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def shr(x, n):
    return (x.astype(np.uint32) >> np.uint32(n)).astype(np.uint32)


def e4m3_to_half_bits(byte):
    """__nv_cvt_fp8_to_halfraw(byte, E4M3): exact (no NaN codes are generated here)."""
    byte = byte.astype(np.uint32) & 0xFF
    assert not np.any((byte & 0x7F) == 0x7F), "NaN scales are not emulated"
    sign = (byte >> 7).astype(np.float64)
    e = ((byte >> 3) & 0xF).astype(np.int64)
    m = (byte & 7).astype(np.float64)
    val = np.where(e == 0, m * 2.0 ** -9, (1 + m / 8) * np.exp2(e.astype(np.float64) - 7))
    val = np.where(sign == 1, -val, val)
    h = val.astype(np.float16)
    assert np.all(h.astype(np.float64) == val)  # exact
    return h.view(np.uint16).astype(np.uint32)


def scale_pair(e4m3_bits):
    """scale_pair: the e4m3 scale (bits & 0xFF) converted to fp16, in both halves."""
    h = e4m3_to_half_bits(u32(e4m3_bits) & 0xFF)
    return h | (h << 16)


def hmul2(a, b):
    """__hmul2 on two half2 bit patterns (uint32 arrays)."""
    a, b = np.broadcast_arrays(u32(a), u32(b))
    out = np.zeros(a.shape, np.uint32)
    for sh in (0, 16):
        x = ((a >> sh) & 0xFFFF).astype(np.uint16).view(np.float16)
        y = ((b >> sh) & 0xFFFF).astype(np.uint16).view(np.float16)
        with np.errstate(over="raise", invalid="raise"):
            p = (x * y).astype(np.float16)
        out |= p.view(np.uint16).astype(np.uint32) << sh
    return out


H2_16384 = np.uint32(0x74007400)  # __float2half2_rn(16384.f)


def byte_perm(x, y, s):
    """__byte_perm(x, y, s) for selectors 0..7 (no sign replication)."""
    x, y = u32(x), u32(y)
    both = x.astype(np.uint64) | (y.astype(np.uint64) << np.uint64(32))
    out = np.zeros(x.shape, np.uint32)
    for i in range(4):
        sel = (s >> (4 * i)) & 0x7
        b = ((both >> np.uint64(8 * sel)) & np.uint64(0xFF)).astype(np.uint32)
        out |= b << (8 * i)
    return out


def load_u32(buf, addr):
    """Little-endian 32-bit loads at byte offsets addr (array)."""
    return (buf[addr].astype(np.uint32) | (buf[addr + 1].astype(np.uint32) << 8)
            | (buf[addr + 2].astype(np.uint32) << 16) | (buf[addr + 3].astype(np.uint32) << 24))


def load_u16(buf, addr):
    return buf[addr].astype(np.uint32) | (buf[addr + 1].astype(np.uint32) << 8)


def store(ws, cover, addr, words):
    """Stores len(words) little-endian 32-bit words at byte offsets addr (per thread)."""
    for i, w in enumerate(words):
        for b in range(4):
            idx = addr + 4 * i + b
            ws[idx] = ((w >> (8 * b)) & 0xFF).astype(np.uint8)
            np.add.at(cover, idx, 1)


# ------------------------------------------------------------------ host: fill_chunk
class Group:
    pass


def fill_chunk(groups, version):
    """Port of fill_chunk for one chunk (<= 32 groups, already in largest-first order)."""
    max_rows = BLOCK_M_MAX
    while max_rows > 64:
        tiles_at = sum((g.m + max_rows - 1) // max_rows * (g.n // BLOCK_N) for g in groups)
        if tiles_at * 10 >= SMS * 9:
            break
        max_rows //= 2
    bytes_, decode_blocks = 0, 0
    out = []
    for g in groups:
        d = Group()
        d.__dict__.update(g.__dict__)
        assert d.n % BLOCK_N == 0 and d.k % BLOCK_K == 0 and d.m >= 1 and d.k >= BLOCK_K
        d.m_tiles = (d.m + max_rows - 1) // max_rows
        d.m_tile_rows = ((d.m + d.m_tiles - 1) // d.m_tiles + M_STEP - 1) // M_STEP * M_STEP
        d.decode_begin = decode_blocks
        if version == 24:
            decode_blocks += (d.m_tiles * d.m_tile_rows * (d.k // 32) + K_DECODE_THREADS - 1) // K_DECODE_THREADS
        else:
            decode_blocks += (decode_threads_of(d) + K_DECODE_THREADS - 1) // K_DECODE_THREADS
        bytes_ += d.m_tiles * d.m_tile_rows * d.k * 2
        out.append(d)
    # launch_group_gemm: a16 of each group consecutive in the workspace
    nxt = 0
    for d in out:
        d.a16 = nxt
        nxt += d.m_tiles * d.m_tile_rows * d.k * 2
    total = (nxt + 255) // 256 * 256
    return out, decode_blocks, bytes_, total, max_rows


def decode_threads_of(d):
    return d.m_tiles * d.m_tile_rows * (d.k // BLOCK_K) * 2


def a16_offset(d, t, kb, r, c):
    return ((t.astype(np.int64) * (d.k // BLOCK_K) + kb) * d.m_tile_rows + r) * 128 + ((c ^ (r % 8)) * 16)


def group_of_block(groups, block):
    g = 0
    while g + 1 < len(groups) and block >= groups[g + 1].decode_begin:
        g += 1
    return g


def threads_by_group(groups, decode_blocks):
    """Per group: the (blockIdx.x, threadIdx.x) of the threads the group search assigns it."""
    blocks = [[] for _ in groups]
    for b in range(decode_blocks):
        blocks[group_of_block(groups, b)].append(b)
    tid = np.arange(K_DECODE_THREADS, dtype=np.int64)
    return [(np.repeat(np.array(bs, np.int64), K_DECODE_THREADS), np.tile(tid, len(bs))) for bs in blocks]


# ------------------------------------------------------------------ v24's decode_a_kernel
def run_v24(groups, decode_blocks, ws, cover):
    for d, (bid, tid) in zip(groups, threads_by_group(groups, decode_blocks)):
        pieces_per_row = d.k // 32
        piece = (bid - d.decode_begin) * K_DECODE_THREADS + tid
        keep = piece < d.m_tiles * d.m_tile_rows * pieces_per_row
        piece = piece[keep]
        row, kk = piece // pieces_per_row, (piece % pieces_per_row) * 32
        t, r, kb, t0 = row // d.m_tile_rows, row % d.m_tile_rows, kk // BLOCK_K, (kk % BLOCK_K) // 16
        n = len(piece)
        pairs = [np.zeros(n, np.uint32) for _ in range(16)]
        live = row < d.m
        if live.any():
            rl, kl = row[live], kk[live]
            a_addr = d.a_off + rl * d.a_row + kl // 2
            words = [load_u32(d.abuf, a_addr + 4 * w) for w in range(4)]
            sc = load_u16(d.sbuf, d.sfa_off + rl * d.sfa_row + kl // 16)
            s0, s1 = scale_pair(sc), scale_pair(sc >> 8)
            for w in range(4):
                s = s0 if w < 2 else s1
                for b in range(4):
                    byte = (words[w] >> (8 * b)) & 0xFF
                    z = (byte * 4097).astype(np.uint32)
                    bits = (shl(z, 12) & 0x80008000) | (shl(z, 9) & 0x0E000E00)
                    v = hmul2(hmul2(bits, H2_16384), s)
                    pairs[4 * w + b][live] = v

        def half_sel(e):
            return 0x32 if e % 2 else 0x10

        for s in range(4):
            for j in range(2):
                e0 = 8 * j + s
                e1, e2 = e0 + 4, 16 + e0
                e3 = e2 + 4
                lo = byte_perm(pairs[e0 // 2], pairs[e1 // 2], half_sel(e0) | ((half_sel(e1) + 0x44) << 8))
                hi = byte_perm(pairs[e2 // 2], pairs[e3 // 2], half_sel(e2) | ((half_sel(e3) + 0x44) << 8))
                addr = d.a16 + a16_offset(d, t, kb, r, 2 * s + j) + 4 * t0
                store(ws, cover, addr, [lo, hi])


# ------------------------------------------------------------------ v25's decode_a_kernel
def e2m1_pair_bits(word, s):
    sign_src = shl(word, 12 - 4 * s)
    mag_src = shl(word, 9 - 4 * s) if s < 3 else shr(word, 3)
    return (sign_src & 0x80008000) | (mag_src & 0x0E000E00)


def run_v25(groups, decode_blocks, ws, cover, lane_log=None):
    for gi, (d, (bid, tid)) in enumerate(zip(groups, threads_by_group(groups, decode_blocks))):
        u = (bid - d.decode_begin) * K_DECODE_THREADS + tid
        keep = u < decode_threads_of(d)
        u = u[keep]
        num_kb = d.k // BLOCK_K
        j, q = u & 1, u >> 3
        kb = q % num_kb
        row = (q // num_kb) * 4 + ((u >> 1) & 3)
        t, r = row // d.m_tile_rows, row % d.m_tile_rows
        n = len(u)
        out = [[np.zeros(n, np.uint32) for _ in range(4)] for _ in range(4)]
        live = row < d.m
        if live.any():
            rl, kbl, jl = row[live], kb[live], j[live]
            src = d.a_off + rl * d.a_row + kbl * (BLOCK_K // 2)
            lo = [load_u32(d.abuf, src + 4 * i) for i in range(4)]
            hi = [load_u32(d.abuf, src + 16 + 4 * i) for i in range(4)]
            odd = jl == 1
            w = [np.where(odd, lo[1], lo[0]), np.where(odd, lo[3], lo[2]),
                 np.where(odd, hi[1], hi[0]), np.where(odd, hi[3], hi[2])]
            sf = d.sfa_off + rl * d.sfa_row + kbl * (BLOCK_K // 16)
            if ((d.sfa_addr | d.sfa_row) & 3) == 0:
                assert np.all((d.sfa_addr - d.sfa_off + sf) % 4 == 0)  # the 4-byte load is aligned
                sc = load_u32(d.sbuf, sf)
            else:
                sc = (d.sbuf[sf].astype(np.uint32) | (d.sbuf[sf + 1].astype(np.uint32) << 8)
                      | (d.sbuf[sf + 2].astype(np.uint32) << 16) | (d.sbuf[sf + 3].astype(np.uint32) << 24))
            scale = [scale_pair(sc >> (8 * i)) for i in range(4)]
            for i in range(4):
                for s in range(4):
                    out[s][i][live] = hmul2(hmul2(e2m1_pair_bits(w[i], s), H2_16384), scale[i])
        for s in range(4):
            addr = d.a16 + a16_offset(d, t, kb, r, 2 * s + j)
            store(ws, cover, addr, out[s])
            if lane_log is not None and gi == 0:
                lane_log.append((u, addr))


# ------------------------------------------------------------------ first principles
def reference_workspace(groups, total):
    ws = np.zeros(total, np.uint8)
    inv = np.zeros(64, np.int64)  # position p in a K block -> k
    for s in range(4):
        for j in range(2):
            for tt in range(4):
                for h in range(2):
                    inv[16 * s + 8 * j + 2 * tt + h] = 16 * tt + 8 * j + s + 4 * h
    for d in groups:
        rows = d.m_tiles * d.m_tile_rows
        kidx = np.arange(d.k)
        vals = np.zeros((rows, d.k), np.float16)
        a = d.abuf[d.a_off + np.arange(d.m)[:, None] * d.a_row + kidx[None, :] // 2]
        nib = np.where(kidx[None, :] % 2 == 0, a & 0xF, a >> 4)
        v = np.array(E2M1)[nib & 7] * np.where(nib & 8, -1.0, 1.0)
        sfb = d.sbuf[d.sfa_off + np.arange(d.m)[:, None] * d.sfa_row + kidx[None, :] // 16]
        sc = e4m3_to_half_bits(sfb.ravel()).astype(np.uint16).view(np.float16).reshape(sfb.shape).astype(np.float64)
        prod = v * sc
        vals[: d.m] = prod.astype(np.float16)
        assert np.all(vals[: d.m].astype(np.float64) == prod)  # a x sfa is exact in fp16
        num_kb = d.k // 64
        for row in range(rows):
            t, r = row // d.m_tile_rows, row % d.m_tile_rows
            for kb in range(num_kb):
                perm = vals[row, kb * 64 + inv].view(np.uint16).astype("<u2").tobytes()
                base = d.a16 + ((t * num_kb + kb) * d.m_tile_rows + r) * 128
                for c in range(8):
                    off = base + (c ^ (r % 8)) * 16
                    ws[off: off + 16] = np.frombuffer(perm[16 * c: 16 * c + 16], np.uint8)
    return ws


# ------------------------------------------------------------------ cases
def make_groups(rng, ms, ns, ks, a_pad=0, sf_pad=0, sf_misalign=0):
    groups = []
    for m, n, k in zip(ms, ns, ks):
        g = Group()
        g.m, g.n, g.k = m, n, k
        g.a_row = k // 2 + a_pad
        g.sfa_row = k // 16 + sf_pad
        g.abuf = rng.integers(0, 256, size=m * g.a_row, dtype=np.uint8)
        g.a_off = 0
        # every non-NaN e4m3 code, then the extremes forced in: 0, min subnormal, max subnormal,
        # min normal, 448 (0x7E) and their negatives
        codes = np.array([c for c in range(256) if (c & 0x7F) != 0x7F], np.uint8)
        g.sfa_off = sf_misalign
        g.sbuf = rng.choice(codes, size=sf_misalign + m * g.sfa_row + 8)
        special = np.array([0x00, 0x01, 0x07, 0x08, 0x7E, 0x80, 0x81, 0xFE], np.uint8)
        g.sbuf[sf_misalign: sf_misalign + min(len(special), m * g.sfa_row)] = special[: m * g.sfa_row]
        g.sfa_addr = 0x7F0000000000 + sf_misalign  # a 256-aligned allocation plus the offset
        groups.append(g)
    return groups


def largest_first(groups):
    return sorted(groups, key=lambda g: -g.m)  # stable, as std::stable_sort with '>'


def run_case(name, groups, check_ref=True, lanes=False):
    order = largest_first(groups)
    assert len(order) <= MAX_GROUPS
    g24, blocks24, bytes24, total24, max_rows = fill_chunk(order, 24)
    g25, blocks25, bytes25, total25, _ = fill_chunk(order, 25)
    assert (bytes24, total24) == (bytes25, total25)
    ws24 = np.full(total24, POISON, np.uint8)
    ws25 = np.full(total25, POISON, np.uint8)
    cov24 = np.zeros(total24, np.int64)
    cov25 = np.zeros(total25, np.int64)
    run_v24(g24, blocks24, ws24, cov24)
    log = [] if lanes else None
    run_v25(g25, blocks25, ws25, cov25, log)
    used = bytes24  # bytes past it are the 256-byte round-up: nobody writes them
    assert np.all(cov25[:used] == 1), f"v25 coverage: min {cov25[:used].min()} max {cov25[:used].max()}"
    assert np.all(cov25[used:] == 0)
    assert np.all(cov24[:used] == 1), f"v24 coverage: min {cov24[:used].min()} max {cov24[:used].max()}"
    assert np.array_equal(ws24, ws25), f"{name}: workspaces differ at {np.flatnonzero(ws24 != ws25)[:8]}"
    ref_ok = "skipped"
    if check_ref:
        ref = reference_workspace(g25, total25)
        assert np.array_equal(ws25[:used], ref[:used]), f"{name}: differs from the first-principles decode"
        ref_ok = "ok"
    mtr = [d.m_tile_rows for d in g25]
    print(f"{name:44s} tiles<= {max_rows:3d} rows, m_tile_rows {mtr}, {used:>10,d} B, "
          f"blocks v24 {blocks24} v25 {blocks25}: identical, each byte once, reference {ref_ok}")
    return log, g25


def store_coalescing(log):
    """Bytes, 32-byte sectors and 128-byte lines per warp store instruction (first full warps)."""
    stats = set()
    for u, addr in log:
        for w0 in range(0, min(len(u), 32 * 64), 32):
            a = addr[w0: w0 + 32]
            if len(a) < 32:
                continue
            sectors = {x // 32 for x in a}
            lines = {x // 128 for x in a}
            full = all(sum(1 for x in a if x // 32 == s) == 2 for s in sectors)
            stats.add((32 * 16, len(sectors), len(lines), full))
    return stats


def main():
    rng = np.random.default_rng(1234)
    ms = [1, 5, 40, 72, 248, 257]
    for k in (64, 128, 7168):
        for n in (128, 4096):
            run_case(f"M {ms}, N {n}, K {k}", make_groups(rng, ms, [n] * 6, [k] * 6))
    # mixed K per group; padded rows; scale rows padded to a multiple of 4; misaligned scales
    run_case("mixed K 64/128/192/7168, N 256", make_groups(rng, [257, 40, 5, 1, 72], [256] * 5, [64, 7168, 192, 128, 7168]))
    run_case("padded A and scale rows (+16 B, +4 B)", make_groups(rng, [72, 257, 5], [4096] * 3, [128, 320, 7168], a_pad=16, sf_pad=4))
    run_case("scale rows +2 B (byte-load path)", make_groups(rng, [40, 248, 1], [4096] * 3, [64, 448, 7168], sf_pad=2))
    run_case("scales at +2 B (byte-load path)", make_groups(rng, [257, 72], [128] * 2, [128, 7168], sf_misalign=2))
    # the benchmark shapes A and B
    log, _ = run_case("benchmark A (8 groups, M sum 1024, K 7168)",
                      make_groups(rng, [80, 176, 128, 72, 64, 248, 96, 160], [4096] * 8, [7168] * 8), lanes=True)
    run_case("benchmark B (8 groups, K 2048)",
             make_groups(rng, [40, 76, 168, 72, 164, 148, 196, 160], [7168] * 8, [2048] * 8))
    # all 16 e2m1 codes present (random bytes)
    g = make_groups(rng, [5], [128], [64])[0]
    assert len(set((g.abuf & 0xF).tolist()) | set((g.abuf >> 4).tolist())) == 16
    print("v25 warp store instructions (benchmark A, group 0, first 64 warps): "
          "(bytes, 32-B sectors, 128-B lines, every sector fully written) =", sorted(store_coalescing(log)))
    print("ALL OK")


if __name__ == "__main__":
    main()
