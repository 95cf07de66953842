"""How fast can a kernel read gemv's matrix, by the order it reads it in? (issue 8)

gemv v10 with its arithmetic and its vector removed (ablate_gemv.py's `stream_bare`) still reads
7168x16384 at only 68% of the H100's copy rate: the load pattern itself is the ceiling. In v8-v10
each warp owns two whole rows and walks them 2 KB per row at a time, so all 7168 rows are being
read at once, each at its own place in the 58 MB matrix. This standalone program reads the same
bytes with no arithmetic in several orders and times each (cudaEvent, L2 flushed by a 256 MB
memset before every run, median of 15; also the kernel's own duration, first CTA start to last
CTA end by %globaltimer), next to a device copy of the same bytes and an empty kernel:

  linear        the matrix as one flat buffer: each warp reads 2 KB (4 x 512 B) per step, CTAs in
                grid-stride order, so the reads in flight lie in one sliding window; variants with
                8 or 16 loads per lane in flight, 2 or 8 CTAs per SM, or the L2::256B fetch hint
  warp_rows<R>  v8-v10's order: a persistent grid of 4 CTAs per SM, each warp owns R rows and
                reads 4 x 512 B of each per step, all R rows' loads in flight together
  cta_rows<R>   a CTA of 8 warps owns R consecutive rows (R x row bytes contiguous) and its warps
                read 2 KB pieces of that range side by side; one CTA per R rows, no persistence
  ... hint      the same with ld.global.nc.L1::no_allocate.L2::256B
  ... L1        the same with ld.global.nc.L1::no_allocate alone (gemv v11's loads); "a CTA per
                block": warp_rows with one CTA per 8 x R rows instead of the persistent grid

Usage: python3 studies/read_pattern.py [--rows 7168 --row-bytes 8192] [--compile-only]
(builds a standalone CUDA program with nvcc under .build/experiments/; no torch needed)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # standalone.py beside this file
import standalone  # noqa: E402


def program(rows: int, row_bytes: int, batches: int) -> str:
    return r"""
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

constexpr long long kRows = """ + str(rows) + r""", kRowBytes = """ + str(row_bytes) + r""";
constexpr int kBatches = """ + str(batches) + r""";  // matrices read back to back per run (L batches)
constexpr int kThreads = 256, kLoads = 4;  // 16-byte loads per lane per row and step

__device__ __forceinline__ void consume(uint32_t& acc, const uint4& v) { acc ^= v.x ^ v.y ^ v.z ^ v.w; }

__global__ void fill(uint4* p, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        p[i] = make_uint4(uint32_t(i * 2654435761u), uint32_t(i ^ 0x5bd1e995), uint32_t(i * 40503u), 0x9e3779b9u);
}

__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}
// stamps[0] / [1]: the first CTA's start and the last CTA's end (globaltimer, ns): the kernel's
// own duration, without the launch latency an event pair includes
__device__ unsigned long long stamps[2];
__device__ __forceinline__ void start() { if (threadIdx.x == 0) atomicMin(&stamps[0], now_ns()); }

// NOTE: every kernel ends here so the loads stay live; the condition is (almost) never true
__device__ __forceinline__ void sink(uint32_t acc, uint32_t* out) {
    if (acc == 0x12345678u) out[threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.x == 0) atomicMax(&stamps[1], now_ns());
}

// hint: 0 plain (__ldg), 1 L1::no_allocate.L2::256B, 2 L1::no_allocate
__device__ __forceinline__ uint4 load(const uint8_t* p, int hint) {
    uint4 v;
    if (hint == 2) asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                                : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    else if (hint == 1) asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                           : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    else v = __ldg(reinterpret_cast<const uint4*>(p));
    return v;
}

__global__ void empty_kernel(uint32_t* out) { start(); sink(threadIdx.x, out); }

template <int LOADS, int HINT>
__global__ void __launch_bounds__(kThreads) linear(const uint8_t* __restrict__ m, long long bytes, uint32_t* out) {
    start();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    uint32_t acc = 0;
    const long long step = 32 * 16 * LOADS;  // one warp's bytes per step
    for (long long w = (long long)blockIdx.x * (kThreads / 32) + warp; w * step < bytes; w += (long long)gridDim.x * (kThreads / 32)) {
        uint4 v[LOADS];
        #pragma unroll
        for (int j = 0; j < LOADS; ++j)
            v[j] = w * step + j * 512 < bytes ? load(m + w * step + j * 512 + lane * 16, HINT) : make_uint4(0, 0, 0, 0);
        #pragma unroll
        for (int j = 0; j < LOADS; ++j) consume(acc, v[j]);
    }
    sink(acc, out);
}

// linear<4>'s order with L1::no_allocate alone (gemv v11's loads)
__global__ void __launch_bounds__(kThreads) linear_l1(const uint8_t* __restrict__ m, long long bytes, uint32_t* out) {
    start();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    uint32_t acc = 0;
    const long long step = 32 * 16 * kLoads;
    for (long long w = (long long)blockIdx.x * (kThreads / 32) + warp; w * step < bytes; w += (long long)gridDim.x * (kThreads / 32)) {
        uint4 v[kLoads];
        #pragma unroll
        for (int j = 0; j < kLoads; ++j) {
            v[j] = make_uint4(0, 0, 0, 0);
            if (w * step + j * 512 < bytes)
                asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                             : "=r"(v[j].x), "=r"(v[j].y), "=r"(v[j].z), "=r"(v[j].w) : "l"(m + w * step + j * 512 + lane * 16));
        }
        #pragma unroll
        for (int j = 0; j < kLoads; ++j) consume(acc, v[j]);
    }
    sink(acc, out);
}

template <int R, int HINT = 0>
__global__ void __launch_bounds__(kThreads) warp_rows(const uint8_t* __restrict__ m, long long rows, uint32_t* out) {
    start();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    uint32_t acc = 0;
    const long long blocks = rows / (R * (kThreads / 32));
    for (long long b = blockIdx.x; b < blocks; b += gridDim.x) {
        const uint8_t* base = m + (b * (kThreads / 32) + warp) * R * kRowBytes;
        for (int off = 0; off < kRowBytes; off += 512 * kLoads) {
            uint4 v[R][kLoads];
            #pragma unroll
            for (int j = 0; j < kLoads; ++j)
                #pragma unroll
                for (int r = 0; r < R; ++r)
                    v[r][j] = off + j * 512 < kRowBytes ? load(base + r * kRowBytes + off + j * 512 + lane * 16, HINT) : make_uint4(0, 0, 0, 0);
            #pragma unroll
            for (int j = 0; j < kLoads; ++j)
                #pragma unroll
                for (int r = 0; r < R; ++r) consume(acc, v[r][j]);
        }
    }
    sink(acc, out);
}

template <int R, int HINT = 0>
__global__ void __launch_bounds__(kThreads) cta_rows(const uint8_t* __restrict__ m, long long rows, uint32_t* out) {
    start();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    uint32_t acc = 0;
    const uint8_t* base = m + blockIdx.x * R * kRowBytes;
    for (long long off = warp * 512LL * kLoads; off < R * kRowBytes; off += 512LL * kLoads * (kThreads / 32)) {
        uint4 v[kLoads];
        #pragma unroll
        for (int j = 0; j < kLoads; ++j)
            v[j] = off + j * 512 < R * kRowBytes ? load(base + off + j * 512 + lane * 16, HINT) : make_uint4(0, 0, 0, 0);
        #pragma unroll
        for (int j = 0; j < kLoads; ++j) consume(acc, v[j]);
    }
    sink(acc, out);
}

int main() {
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, dev);
    const long long bytes = kRows * kRowBytes;
    uint8_t *m = nullptr, *dst = nullptr, *scratch = nullptr; uint32_t* out = nullptr;
    const long long scratch_bytes = 256LL << 20;
    // NOTE: row patterns read whole 512-byte pieces, past the last row's end
    if (cudaMalloc(&m, bytes + 4096) != cudaSuccess || cudaMalloc(&dst, bytes) != cudaSuccess ||
        cudaMalloc(&scratch, scratch_bytes) != cudaSuccess || cudaMalloc(&out, 4096) != cudaSuccess) {
        std::printf("cudaMalloc failed\n");
        return 1;
    }
    fill<<<4 * sms, 256>>>(reinterpret_cast<uint4*>(m), bytes / 16);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    std::printf("%s, %d SMs: %lld rows x %lld bytes = %.1f MB per matrix, %d matrices per run\n", prop.name, sms, kRows,
                kRowBytes, bytes / 1e6, kBatches);
    float kernel_us = 0;  // the in-kernel duration of the median run (globaltimer)
    auto time_us = [&](auto launch) {
        std::vector<std::pair<float, float>> t;
        for (int rep = 0; rep < 17; ++rep) {
            cudaMemsetAsync(scratch, rep, scratch_bytes);  // NOTE: evicts the matrix from L2 (50 MB)
            const unsigned long long init[2] = {~0ULL, 0ULL};
            cudaMemcpyToSymbolAsync(stamps, init, sizeof(init));
            cudaEventRecord(e0);
            for (int l = 0; l < kBatches; ++l) launch();
            cudaEventRecord(e1);
            cudaEventSynchronize(e1);
            float ms = 0; cudaEventElapsedTime(&ms, e0, e1);
            unsigned long long got[2];
            cudaMemcpyFromSymbol(got, stamps, sizeof(got));
            if (rep >= 2) t.push_back({ms * 1000.f, got[1] > got[0] ? (got[1] - got[0]) / 1000.f : 0.f});
        }
        std::sort(t.begin(), t.end());
        const cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) std::printf("error %s\n", cudaGetErrorString(err));
        kernel_us = t[t.size() / 2].second;
        return t[t.size() / 2].first;
    };
    const float copy = time_us([&] { cudaMemcpyAsync(dst, m, bytes, cudaMemcpyDeviceToDevice); });
    const double copy_rate = 2.0 * bytes * kBatches / copy / 1e6;  // TB/s, bytes read + written
    std::printf("%-16s %9.1f us events  %6.2f TB/s (read + written)\n", "device copy", copy, copy_rate);
    const float empty = time_us([&] { empty_kernel<<<4 * sms, kThreads>>>(out); });
    std::printf("%-16s %9.1f us events  %9.1f us in the kernel\n", "empty kernel", empty, kernel_us);
    auto report = [&](const char* name, float us) {
        const double rate = double(bytes) * kBatches / us / 1e6, kernel_rate = double(bytes) * kBatches / kernel_us / 1e6;
        std::printf("%-34s %9.1f us events  %9.1f us in the kernel  read %5.2f / %5.2f TB/s: %4.0f%% / %4.0f%% of the copy rate\n",
                    name, us, kernel_us, rate, kernel_rate, 100.0 * rate / copy_rate, 100.0 * kernel_rate / copy_rate);
    };
    const int persistent = 4 * sms;
    report("linear", time_us([&] { linear<4, 0><<<persistent, kThreads>>>(m, bytes, out); }));
    report("linear x4", time_us([&] { linear<4, 0><<<4 * persistent, kThreads>>>(m, bytes, out); }));
    report("linear 8 loads", time_us([&] { linear<8, 0><<<persistent, kThreads>>>(m, bytes, out); }));
    report("linear 16 loads", time_us([&] { linear<16, 0><<<persistent, kThreads>>>(m, bytes, out); }));
    report("linear 2/SM", time_us([&] { linear<8, 0><<<2 * sms, kThreads>>>(m, bytes, out); }));
    report("linear 8/SM", time_us([&] { linear<4, 0><<<8 * sms, kThreads>>>(m, bytes, out); }));
    report("linear L2::256B", time_us([&] { linear<4, 1><<<persistent, kThreads>>>(m, bytes, out); }));
    auto warp_grid = [&](int r) { long long b = kRows / (r * 8); return int(b < persistent ? b : persistent); };
    report("warp_rows<1>", time_us([&] { warp_rows<1><<<warp_grid(1), kThreads>>>(m, kRows, out); }));
    report("warp_rows<2>", time_us([&] { warp_rows<2><<<warp_grid(2), kThreads>>>(m, kRows, out); }));
    report("warp_rows<4>", time_us([&] { warp_rows<4><<<warp_grid(4), kThreads>>>(m, kRows, out); }));
    report("cta_rows<1>", time_us([&] { cta_rows<1><<<int(kRows), kThreads>>>(m, kRows, out); }));
    report("cta_rows<4>", time_us([&] { cta_rows<4><<<int(kRows / 4), kThreads>>>(m, kRows, out); }));
    report("cta_rows<16>", time_us([&] { cta_rows<16><<<int(kRows / 16), kThreads>>>(m, kRows, out); }));
    report("warp_rows<2> hint", time_us([&] { warp_rows<2, 1><<<warp_grid(2), kThreads>>>(m, kRows, out); }));
    report("cta_rows<16> hint", time_us([&] { cta_rows<16, 1><<<int(kRows / 16), kThreads>>>(m, kRows, out); }));
    report("linear L1 hint", time_us([&] { linear_l1<<<persistent, kThreads>>>(m, bytes, out); }));
    report("warp_rows<2> L1", time_us([&] { warp_rows<2, 2><<<warp_grid(2), kThreads>>>(m, kRows, out); }));
    report("warp_rows<2> L1, a CTA per block", time_us([&] { warp_rows<2, 2><<<int(kRows / 16), kThreads>>>(m, kRows, out); }));
    report("cta_rows<16> L1", time_us([&] { cta_rows<16, 2><<<int(kRows / 16), kThreads>>>(m, kRows, out); }));
    return 0;
}
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=7168)
    ap.add_argument("--row-bytes", type=int, default=8192)
    ap.add_argument("--batches", type=int, default=1, help="L: rows x L distinct rows, one launch")
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    if args.rows % 64 or args.row_bytes % 16:
        raise SystemExit("--rows must be a multiple of 64 and --row-bytes of 16")
    name = f"read_pattern_{args.rows}x{args.row_bytes}x{args.batches}"
    # NOTE: L batches are L x rows distinct rows read by one launch. program()'s kBatches relaunches on
    # the same buffer, whose later launches find it in L2 and whose span takes in the gaps between
    # launches: a 7168x2048 L4 figure taken that way (15.7 µs) was wrong on both counts.
    return standalone.build_and_run(name, program(args.rows * args.batches, args.row_bytes, 1), compile_only=args.compile_only)


if __name__ == "__main__":
    sys.exit(main())
