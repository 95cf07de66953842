"""What does one turn of an mbarrier ring cost on its own? (written for the next device session)

group_gemm v25's kernel with no decode, no copies and no wgmma (ablate_group_gemm.py's `skeleton`)
still took 47.5 of 133 µs on shape A: ~340 cycles per K block per SM at the full kernel's IPC.
Neither the arrivals, try_wait, wgmma fences nor lane-level barrier instructions explained it
(group_gemm NOTES). This standalone program times the ring alone, one CTA per SM, and varies one
thing at a time, so the per-turn cost can be read off:

  producer warps (1 or 2) wait on `empty`, then arrive on `full` (one arrival per producer thread,
  as v25's cp.async arrivals, or lane 0 alone); consumer warps (4, 8 or 16) wait on `full`, run
  `work` dependent integer operations (0, 64 or 128: a stand-in for the decode chain) and arrive
  on `empty` (every thread, as v25, or lane 0 of each warp); kStages slots; the consumer loop is
  unrolled by kStages (v22-v25) or not.

Prints cycles per K block (SM clock, clock64 around each CTA's loop, the slowest CTA) per case.
Usage: python3 studies/ring_rate.py [--blocks 20000] [--compile-only]
(writes and builds a standalone CUDA program with nvcc under .build/experiments/; no torch needed)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # standalone.py beside this file
import standalone  # noqa: E402
# (consumer warps, producer warps, stages, unrolled, work, every thread arrives)
CASES = [
    (8, 2, 6, 1, 0, 1),     # v25's shape of ring, nothing in it
    (8, 2, 6, 0, 0, 1),     # not unrolled
    (8, 2, 6, 1, 0, 0),     # one arrival per warp on both barriers
    (4, 2, 6, 1, 0, 1),     # half the consumers
    (16, 2, 6, 1, 0, 1),    # twice the consumers
    (8, 1, 6, 1, 0, 1),     # one producer warp
    (8, 2, 4, 1, 0, 1),     # four stages
    (8, 2, 9, 1, 0, 1),     # nine stages
    (8, 2, 6, 1, 64, 1),    # a 64-operation chain per K block
    (8, 2, 6, 1, 128, 1),   # a 128-operation chain per K block
    (16, 2, 6, 1, 128, 1),  # the same chain on twice the warps
]


def program(blocks: int) -> str:
    launches = "\n".join(
        f"    run({c}, {p}, {s}, {u}, {w}, {a}, ring_kernel<{c}, {p}, {s}, {u}, {w}, {a}>, sms);"
        for c, p, s, u, w, a in CASES)
    return r"""
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>

constexpr int kBlocks = """ + str(blocks) + r""";

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    asm volatile("{\n.reg .pred done;\nwait_%=:\n"
                 "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra wait_%=;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}

// Consumers: warps [0, C); producers: the P warps after them. Slot s of block k: k % S.
template <int C, int P, int S, int UNROLL, int WORK, int ALL>
__global__ void __launch_bounds__(32 * (C + P), 1) ring_kernel(long long* cycles, int* sink) {
    __shared__ __align__(8) uint64_t bars[2 * S];
    const uint32_t full = static_cast<uint32_t>(__cvta_generic_to_shared(bars)), empty = full + 8 * S;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) {
        for (int s = 0; s < S; ++s) {
            mbar_init(full + 8 * s, ALL ? 32 * P : P);
            mbar_init(empty + 8 * s, ALL ? 32 * C : C);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    const long long t0 = clock64();
    if (warp >= C) {
        for (int k = 0; k < kBlocks; ++k) {
            const int s = k % S;
            mbar_wait(empty + 8 * s, ((k / S) & 1) ^ 1);
            if (ALL || lane == 0) mbar_arrive(full + 8 * s);
        }
        return;
    }
    uint32_t x = threadIdx.x * 2654435761u;
    auto body = [&](int s, uint32_t parity) {
        mbar_wait(full + 8 * s, parity);
        #pragma unroll
        for (int i = 0; i < WORK; ++i) x = x * 3u + (x >> 7);  // NOTE: one dependent chain
        if (ALL) mbar_arrive(empty + 8 * s);
        else { __syncwarp(); if (lane == 0) mbar_arrive(empty + 8 * s); }
    };
    if (UNROLL) {
        uint32_t phase = 0;
        for (int k = 0; k < kBlocks; k += S, phase ^= 1) {
            #pragma unroll
            for (int s = 0; s < S; ++s)
                if (k + s < kBlocks) body(s, phase);
        }
    } else {
        #pragma unroll 1
        for (int k = 0; k < kBlocks; ++k) body(k % S, (k / S) & 1);
    }
    const long long t1 = clock64();
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
    if (x == 12345u) sink[threadIdx.x] = x;  // NOTE: keeps the chain live
}

template <typename K>
static void run(int c, int p, int s, int u, int w, int a, K kernel, int sms) {
    long long* cycles = nullptr; int* sink = nullptr;
    cudaMalloc(&cycles, sms * sizeof(long long)); cudaMalloc(&sink, 4096);
    kernel<<<sms, 32 * (c + p)>>>(cycles, sink);  // warm-up
    kernel<<<sms, 32 * (c + p)>>>(cycles, sink);
    const cudaError_t err = cudaDeviceSynchronize();
    long long* host = new long long[sms];
    cudaMemcpy(host, cycles, sms * sizeof(long long), cudaMemcpyDeviceToHost);
    long long worst = 0;
    for (int i = 0; i < sms; ++i) worst = host[i] > worst ? host[i] : worst;
    if (err != cudaSuccess) std::printf("error %s\n", cudaGetErrorString(err));
    else std::printf("%2d consumer warps, %d producer warps, %d stages, %-8s work %3d, %-13s %7.1f cycles per K block\n",
                     c, p, s, u ? "unrolled" : "rolled", w, a ? "every thread" : "one per warp", double(worst) / kBlocks);
    delete[] host; cudaFree(cycles); cudaFree(sink);
}

int main() {
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, dev);
    std::printf("%s, %d SMs, %d K blocks per CTA, one CTA per SM\n", prop.name, sms, kBlocks);
""" + launches + r"""
    return 0;
}
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=20000)
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    return standalone.build_and_run("ring_rate", program(args.blocks), compile_only=args.compile_only)


if __name__ == "__main__":
    sys.exit(main())
