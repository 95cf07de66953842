"""Does a running wgmma slow the decode beside it? B's decode alone, beside wgmma, and in the paired chain.

gemm's paired loop (v82-v91) runs at ~0.227 µs a K block against 0.142 at the tensor rate. Its ablation (gemm NOTES,
session 59: v74, torch.profiler, L2 flushed) put the loop with no decode and no loads at ~293 cycles a block (wgmma
alone, two warpgroups alternating: 87% of the tensor rate) and with the decode but no loads at ~367: each warpgroup's
period (its own block, two CTA blocks) grew from ~586 to ~734 cycles, so its decode chain (a full-barrier test, four
shared loads, ~95 ALU instructions) takes ~650 cycles where its instructions alone, two warps a scheduler, would issue
in ~200. Either the decode is latency-bound (its chains, the loads) or something running beside it takes the
scheduler's or the register file's cycles: a wgmma with its accumulators in registers (64 a thread at N = 128) reads
and writes them through the register file of the warps that issued it while it runs.

This times, on every SM (one CTA of two warpgroups, no producer: 127 registers a thread, ptxas -v), with clock64 per
warpgroup over its own loop:
  decode x1      warpgroup 1 decodes K blocks (the paired kernel's decode_b: two 8-byte and two 1-byte shared loads,
                 16 pairs of e2m1 to fp16 x scale a thread, and 8 XORs that keep the result live) while warpgroup 0
                 idles;
  decode x2      both warpgroups decode (the paired kernel's two warps a scheduler, no wgmma);
  wgmma x1       warpgroup 0 issues K blocks of 4 x m64n128k16 (A from registers, B from shared memory, register
                 accumulators; commit, wait 0) while warpgroup 1 idles;
  wgmma x2       both warpgroups do, each its own blocks (the tensor pipe shared, as the paired loop's);
  decode | wgmma warpgroup 0 keeps issuing wgmma for longer than warpgroup 1 decodes: warpgroup 1's decode cycles
                 beside a running wgmma (its fragments' registers untouched by it), against `decode x1`;
  paired chain   both warpgroups run the paired loop's chain without loads: issue block k's wgmma from fragment set
                 k % 2, decode block k + 1 into the other set, wait for k (v91's order, no barriers, no copies).
  one in flight  (session 65) the paired chain with three fragment sets and wait_group 1: issue k, wait for k - 1,
                 decode k + 1, issue k + 1 with k still queued or running; wait_group 0 once every four blocks (gemm
                 v93's order; the promotion's wait, without its FADDs).
Then both chains again with clock stamps around each step (issue: fence to commit; decode; the waits), warpgroup 0's
cycles a block in each: the stamps cost cycles of their own, so they split a period, the rows above give its rate.
Per row: cycles a K block for each warpgroup (median over SMs), and what they say: the contention factor is
decode | wgmma against decode x1; the paired chain's period against max(decode x2, wgmma x2) and their sum.

Usage: python3 studies/wgmma_alu_contention.py [--blocks 2000] [--compile-only]
(a standalone CUDA program built with nvcc under .build/experiments/; no torch needed)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # standalone.py beside this file
import standalone  # noqa: E402

MODES = [  # (name, warpgroup 0's role, warpgroup 1's role); roles: 0 idle, 1 decode, 2 wgmma, 3 paired chain
    ("decode x1", 0, 1),
    ("decode x2", 1, 1),
    ("wgmma x1", 2, 0),
    ("wgmma x2", 2, 2),
    ("decode | wgmma", 2, 1),
    ("paired chain", 3, 3),
    ("one in flight", 4, 4),
]
# NOTE: session 65 added "one in flight" after the first run (session 65: the paired chain at 615 cycles a warpgroup
# period where wgmma x2 runs at 512, a ~100-cycle bubble each period) and the segment rows (the same two chains with
# clock stamps around each step; the stamps cost cycles of their own, so the rows without them are the rates).


def program(blocks: int) -> str:
    table = ",\n".join(f'    {{"{name}", {r0}, {r1}}}' for name, r0, r1 in MODES)
    return r"""
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

constexpr int kBlocks = """ + str(blocks) + r""";
constexpr int kN = 128;                      // wgmma N (the paired kernel's M tile)
constexpr int kBTile = kN * 128;             // the wgmma B operand: kN rows x 64 K of fp16, 128-byte swizzle
constexpr int kRing = 8;                     // decode input slots (64 rows x 32 bytes of e2m1 + 512 bytes of scales)
constexpr int kSlotBytes = 64 * 32 + 512;
constexpr int kSmem = kBTile + kRing * kSlotBytes + 1024;

__device__ __forceinline__ uint64_t desc(uint32_t smem) {
    return (static_cast<uint64_t>((1024u >> 4) | (1u << 30)) << 32) | ((smem >> 4) & 0x3FFF) | (1u << 16);
}
__device__ __forceinline__ void wgmma128(float* d, const uint32_t* a, uint64_t db) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
__device__ __forceinline__ void wait1() { asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory"); }

// The paired kernel's decode (gemm v91, decode_b): nibbles s and s + 4 of a word as a half2 worth value x 2^-14,
// times the row's scale x 2^7, for the four k16 steps of one K block, rows `row` and `row + 8`.
template <int kS> __device__ __forceinline__ uint32_t pair_bits(uint32_t w) {
    const uint32_t sign = w << (12 - 4 * kS);
    const uint32_t mag = kS < 3 ? w << (9 - 4 * kS) : w >> 3;
    return (sign & 0x80008000u) | (mag & 0x0E000E00u);
}
__device__ __forceinline__ uint32_t scaled(uint32_t bits, __half2 s) {
    const __half2 v = __hmul2(*reinterpret_cast<const __half2*>(&bits), s);
    return *reinterpret_cast<const uint32_t*>(&v);
}
__device__ __forceinline__ void decode(const uint8_t* slot, int row, int tig, uint32_t (&f)[4][4]) {
    const __half2 x128 = __float2half2_rn(128.f);
    #pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int r = row + 8 * i;
        const uint2 w = *reinterpret_cast<const uint2*>(slot + r * 32 + 8 * tig);
        const uint8_t e = slot[64 * 32 + (r % 32) * 16 + (r / 32) * 4 + tig];
        const __half2 sc = __hmul2(__half2half2(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(e), __NV_E4M3))), x128);
        f[0][i] = scaled(pair_bits<0>(w.x), sc); f[0][2 + i] = scaled(pair_bits<0>(w.y), sc);
        f[1][i] = scaled(pair_bits<1>(w.x), sc); f[1][2 + i] = scaled(pair_bits<1>(w.y), sc);
        f[2][i] = scaled(pair_bits<2>(w.x), sc); f[2][2 + i] = scaled(pair_bits<2>(w.y), sc);
        f[3][i] = scaled(pair_bits<3>(w.x), sc); f[3][2 + i] = scaled(pair_bits<3>(w.y), sc);
    }
}
// NOTE: a decode-only loop's fragments folded into one word (8 three-input XORs a block, ~8% of the decode's
// instructions), so none is dead: an empty asm keeps nothing past ptxas. The paired chain's feed wgmma instead.
__device__ __forceinline__ uint32_t fold(const uint32_t (&f)[4][4], uint32_t x) {
    #pragma unroll
    for (int s = 0; s < 4; ++s) x ^= f[s][0] ^ f[s][1] ^ f[s][2] ^ f[s][3];
    return x;
}

// role: 0 idle, 1 decode `blocks` K blocks, 2 issue `blocks` K blocks of wgmma, 3 the paired chain over `blocks`,
// 4 the paired chain with one wgmma group in flight; `seg`: clock stamps around the chains' steps into `segments`.
// cycles[cta * 2 + wg]: the warpgroup's loop in clock64 cycles (its first thread's).
__global__ void __launch_bounds__(256, 1) contention_kernel(int role0, int role1, int blocks0, int blocks1, bool seg,
                                                            long long* cycles, long long* segments, float* sink) {
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    uint8_t* smem = smem_raw;
    for (int i = threadIdx.x * 4; i < kSmem - 1024; i += blockDim.x * 4)
        *reinterpret_cast<uint32_t*>(smem + i) = i < kBTile ? (0x3C003C00u | ((i >> 2) & 0x00FF00FFu))
                                                            : (0x39B1C2D3u * (i + 1)) & 0x77777777u ^ 0x08800880u;
    __syncthreads();
    // NOTE: the scale bytes as finite e4m3 near 1 (0x38 = 1.0 .. 0x3F), so no product overflows fp16.
    for (int i = threadIdx.x; i < kRing * 512; i += blockDim.x)
        smem[kBTile + (i / 512) * kSlotBytes + 64 * 32 + i % 512] = 0x38 + (i & 7);
    __syncthreads();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
    const int role = wg == 0 ? role0 : role1, blocks = wg == 0 ? blocks0 : blocks1;
    const int row = (t / 32) * 16 + (t % 32) / 4, tig = t % 4;
    const uint32_t b_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    const uint8_t* ring = smem + kBTile;
    float acc[kN / 2];
    #pragma unroll
    for (int i = 0; i < kN / 2; ++i) acc[i] = 0.f;
    uint32_t f[2][4][4];
    #pragma unroll
    for (int s = 0; s < 4; ++s) { f[0][s][0] = f[1][s][0] = 0x3C003C00u + t; f[0][s][1] = f[1][s][1] = 0x3C013C00u;
                                  f[0][s][2] = f[1][s][2] = 0x3BFF3C00u; f[0][s][3] = f[1][s][3] = 0x3C003BFFu; }
    uint32_t g[3][4][4];  // NOTE: role 4's three fragment sets
    #pragma unroll
    for (int q = 0; q < 3; ++q)
        #pragma unroll
        for (int s = 0; s < 4; ++s)
            #pragma unroll
            for (int r = 0; r < 4; ++r) g[q][s][r] = f[0][s][r] ^ q;
    long long seg_issue = 0, seg_decode = 0, seg_wait = 0;
    uint32_t folded = 0;
    const long long t0 = clock64();
    // NOTE: no loop is unrolled: each K block's decode is one chain, as once a block in the kernel (unrolled, the
    // compiler would overlap the blocks' decodes, which the kernel's chain never does).
    if (role == 1) {
        #pragma unroll 1
        for (int k = 0; k < blocks; ++k) {
            decode(ring + (k % kRing) * kSlotBytes, row, tig, f[0]);
            folded = fold(f[0], folded);
        }
    } else if (role == 2) {
        #pragma unroll 1
        for (int k = 0; k < blocks; ++k) {
            fence();
            #pragma unroll
            for (int s = 0; s < 4; ++s) wgmma128(acc, f[0][s], desc(b_base + 32 * s));
            commit();
            wait0();
        }
    } else if (role == 3) {
        decode(ring, row, tig, f[0]);
        #pragma unroll 1
        for (int k = 0; k < blocks; k += 2) {
            #pragma unroll
            for (int h = 0; h < 2; ++h) {  // NOTE: h is block k + h's fragment set, a compile-time index
                const long long a = seg ? clock64() : 0;
                fence();
                #pragma unroll
                for (int s = 0; s < 4; ++s) wgmma128(acc, f[h][s], desc(b_base + 32 * s));
                commit();
                const long long b = seg ? clock64() : 0;
                decode(ring + ((k + h + 1) % kRing) * kSlotBytes, row, tig, f[1 - h]);
                const long long c = seg ? clock64() : 0;
                wait0();
                if (seg) { seg_issue += b - a; seg_decode += c - b; seg_wait += clock64() - c; }
            }
        }
    } else if (role == 4) {
        // The paired chain with one wgmma group kept in flight: three fragment sets (block i of a 4-block lap in set
        // {0, 1, 2, 1}[i]), wait_group 1 after each issue (the warpgroup's previous block done: its set is free), the
        // next block decoded, issued without waiting for this one; wait_group 0 once a lap (the kernel's promotion).
        decode(ring, row, tig, g[0]);
        #pragma unroll 1
        for (int k = 0; k < blocks; k += 4) {
            #pragma unroll
            for (int h = 0; h < 4; ++h) {
                constexpr int kSet[5] = {0, 1, 2, 1, 0};
                const long long a = seg ? clock64() : 0;
                fence();
                #pragma unroll
                for (int s = 0; s < 4; ++s) wgmma128(acc, g[kSet[h]][s], desc(b_base + 32 * s));
                commit();
                const long long b = seg ? clock64() : 0;
                wait1();
                const long long c = seg ? clock64() : 0;
                decode(ring + ((k + h + 1) % kRing) * kSlotBytes, row, tig, g[kSet[h + 1]]);
                const long long d = seg ? clock64() : 0;
                if (h == 3) wait0();
                if (seg) { seg_issue += b - a; seg_wait += c - b; seg_decode += d - c; seg_wait += clock64() - d; }
            }
        }
    }
    const long long t1 = clock64();
    if (t == 0) cycles[blockIdx.x * 2 + wg] = role == 0 ? 0 : t1 - t0;
    if (t == 0 && seg) {
        segments[(blockIdx.x * 2 + wg) * 3 + 0] = seg_issue;
        segments[(blockIdx.x * 2 + wg) * 3 + 1] = seg_decode;
        segments[(blockIdx.x * 2 + wg) * 3 + 2] = seg_wait;
    }
    float s = 0.f;
    #pragma unroll
    for (int i = 0; i < kN / 2; ++i) s += acc[i];
    uint32_t x = folded;
    #pragma unroll
    for (int q = 0; q < 4; ++q) x ^= f[0][q][0] ^ f[1][q][3] ^ g[0][q][1] ^ g[1][q][2] ^ g[2][q][0];
    if (s == 12345.f || x == 0x12345u) sink[threadIdx.x] = s + x;  // NOTE: keeps the work live; never true in practice
}

struct Mode { const char* name; int role0, role1; };
static const Mode kModes[] = {
""" + table + r"""
};

int main() {
    int dev = 0, sms = 0, clock_khz = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, dev);
    cudaFuncSetAttribute(contention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
    long long* cycles = nullptr;
    float* sink = nullptr;
    cudaMalloc(&cycles, sizeof(long long) * 2 * sms);
    cudaMalloc(&sink, 4096);
    std::printf("%s, %d SMs, %d MHz reported; one CTA of 2 warpgroups an SM; %d K blocks (64 K: 4 x m64n128k16, or a\n"
                "64-row x 64-K decode a warpgroup); cycles a K block, median over SMs (clock64 over the warpgroup's loop)\n",
                prop.name, sms, clock_khz / 1000, kBlocks);
    std::printf("%-16s %16s %16s\n", "mode", "warpgroup 0", "warpgroup 1");
    long long* segments = nullptr;
    cudaMalloc(&segments, sizeof(long long) * 6 * sms);
    for (const Mode& m : kModes) {
        // NOTE: beside a decode, the wgmma warpgroup runs 3x the blocks, so the decode ends while wgmma still runs.
        const int b0 = m.role0 == 2 && m.role1 == 1 ? 3 * kBlocks : kBlocks;
        double med[2] = {0, 0};
        for (int rep = 0; rep < 2; ++rep) {  // NOTE: the first launch warms clocks and the module; the second is read
            cudaMemset(cycles, 0, sizeof(long long) * 2 * sms);
            contention_kernel<<<sms, 256, kSmem>>>(m.role0, m.role1, b0, kBlocks, false, cycles, segments, sink);
            const cudaError_t err = cudaDeviceSynchronize();
            if (err != cudaSuccess) { std::printf("%-16s error %s\n", m.name, cudaGetErrorString(err)); return 1; }
            std::vector<long long> host(2 * sms);
            cudaMemcpy(host.data(), cycles, sizeof(long long) * 2 * sms, cudaMemcpyDeviceToHost);
            for (int w = 0; w < 2; ++w) {
                std::vector<long long> v;
                for (int c = 0; c < sms; ++c) v.push_back(host[c * 2 + w]);
                std::nth_element(v.begin(), v.begin() + sms / 2, v.end());
                med[w] = double(v[sms / 2]) / (w == 0 ? b0 : kBlocks);
            }
        }
        std::printf("%-16s %16.1f %16.1f\n", m.name, (m.role0 ? med[0] : 0.0), (m.role1 ? med[1] : 0.0));
    }
    // The two chains again with a clock stamp around each step: cycles a block in issue (fence to commit), decode and
    // the waits, warpgroup 0, median over SMs (the stamps add their own cycles: read the split, not the sum).
    std::printf("%-16s %10s %10s %10s %10s\n", "segments", "issue", "decode", "wait", "period");
    for (int role : {3, 4}) {
        cudaMemset(segments, 0, sizeof(long long) * 6 * sms);
        contention_kernel<<<sms, 256, kSmem>>>(role, role, kBlocks, kBlocks, true, cycles, segments, sink);
        if (cudaDeviceSynchronize() != cudaSuccess) { std::printf("segments: launch failed\n"); return 1; }
        std::vector<long long> host(6 * sms), cyc(2 * sms);
        cudaMemcpy(host.data(), segments, sizeof(long long) * 6 * sms, cudaMemcpyDeviceToHost);
        cudaMemcpy(cyc.data(), cycles, sizeof(long long) * 2 * sms, cudaMemcpyDeviceToHost);
        double med[4];
        for (int q = 0; q < 4; ++q) {
            std::vector<long long> v;
            for (int c = 0; c < sms; ++c) v.push_back(q < 3 ? host[c * 6 + q] : cyc[c * 2]);
            std::nth_element(v.begin(), v.begin() + sms / 2, v.end());
            med[q] = double(v[sms / 2]) / kBlocks;
        }
        std::printf("%-16s %10.1f %10.1f %10.1f %10.1f\n", role == 3 ? "paired chain" : "one in flight", med[0], med[1],
                    med[2], med[3]);
    }
    cudaFree(segments);
    std::printf("read: the contention factor is decode | wgmma's warpgroup 1 over decode x1's; the paired chain's\n"
                "cycles a block against max and sum of decode x2 and wgmma x2 (each warpgroup's own blocks)\n");
    cudaFree(cycles);
    cudaFree(sink);
    return 0;
}
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=2000)
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    if args.blocks < 4 or args.blocks % 4:
        ap.error("--blocks must be a multiple of 4 (the one-in-flight chain takes a lap of four blocks at a time)")
    return standalone.build_and_run("wgmma_alu_contention", program(args.blocks), compile_only=args.compile_only)


if __name__ == "__main__":
    sys.exit(main())
