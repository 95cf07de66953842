"""How fast can the SMs pull the GEMM kernels' A tiles out of L2? The ring without the arithmetic.

gemm's, group_gemm's and dual_gemm's GEMM kernels read A as fp16 tiles the prepass left in L2 (gemm: the whole 128-row
tile of one K block, 16 KB, once a K block per CTA), beside B's ~4.5 KB a block from HBM, through a ring of 8 stages
filled by one producer thread's bulk copies. Every CTA sweeps the same A tiles in K order at about the same time.
gemm v103 (session 68) found the rings' stages landing only just in time (waiting for a stage one to four blocks
earlier cost 7-18% of the loops), and gemm's 20 idle SMs, once filled (v35 stream-K, v40/v41 tails), ran every
block slower (NOTES): both fit a ceiling on the rate at which the SMs together draw tiles out of L2. This measures
it: one CTA an SM, a producer thread copying stage after stage (16 KB from an L2-resident A of --a-mb, optionally
--b-bytes more from a large HBM region of the CTA's own), one consumer warp that waits for each stage and frees it at
once (no decode, no wgmma). Per CTA count: the µs a stage (the slowest CTA's time over its stages) and the L2 bytes
a second of all CTAs together, the A tiles either the same for every CTA at each K block (the kernels' pattern:
`same`) or each CTA's own (`own`).

A second table (`burst`, session 69) issues eight copies on one barrier and waits once: the copy path's own time a
copy, to say whether the ring's fixed pace a stage is its handshake or the copies'.

Read against a kernel: a loop whose A tiles arrive at the `same` rate at its CTA count cannot run faster than that
rate whatever its arithmetic; gemm's split loop draws a 16 KB tile each 0.36 µs a CTA (112 CTAs, ~5 TB/s in all),
its paired loop each ~0.22 µs (~8 TB/s). The wait kinds: the kernels' try_wait, try_wait with a 20 ns suspend hint
(the first runs: the same as try_wait), and test_wait polled.

Found (H200, session 68, three runs of earlier forms of this sweep; `--blocks` 3000-4000):
- Within a run every configuration of one wait kind ran at one pace a stage, whatever the bytes (8-32 KB of A, 0-4.6
  KB of B from HBM), the stages (4-12) or the CTAs (1-132): 0.157 µs with try_wait in two runs (0.279 in one, with
  some configurations at 0.157), 0.198 with test_wait polled. That is this ring's own loop (~275 cycles a stage at
  ~1.75 GHz; ring_rate.py: ~140 rolled), not its copies. gemm v104 (two producer threads) then showed the kernels'
  producer is not their loops' pace either: the paired loop 6.94 -> 7.04 µs.
- Past that pace, the L2's bytes: every CTA drawing the same tiles (`same`), 132 CTAs took 16 KB stages at 13.8 TB/s
  and 32 KB stages at 27.6 TB/s in all without slowing (>= 209 GB/s an SM). Each CTA its own tiles of a 4 MB region
  (`own`) slowed from 100 CTAs on: 0.176 / 0.183 / 0.211 / 0.218 µs a stage at 100 / 112 / 128 / 132 CTAs, 9.3-10.0
  TB/s in all.
- So gemm's A tiles (every CTA the same K block's tile at about the same time, 5-8 TB/s) are under the same-tile
  rate: A's L2 traffic is neither the loops' pace (as the ablations' no_a_copy said) nor what slowed every block when
  the 20 idle SMs were filled (v35, v40, v41: +18% of it stays under 13.8 TB/s).

Found (H200, session 69, `--blocks 3000`; its first run printed zeros: the kernels' 1 KB of static shared memory had
made every launch over 48 KB fail, and launch errors were not checked; both fixed):
- The ring again: 0.155-0.158 µs a stage with 16 KB of A alone at 4, 8 or 12 stages and 1-132 CTAs, 0.278-0.282 with a
  second copy of 2.5 or 4.6 KB of B from HBM; test_wait 0.187-0.198 and 0.310-0.323.
- The burst: 0.141 / 0.146 µs a copy of 8 / 16 KB at one CTA (0.144-0.150 at 112-132), 0.253-0.299 with a B copy beside
  each. So the handshake is not the ring's pace: a copy is, ~0.14 µs whatever its bytes, in this program. The kernels
  are faster than that (gemm's paired loop completes its A, B and scale copies every 0.22 µs, and v74's no_a_copy
  took only 0.5 µs off the whole kernel), and gemm v107 (0.9 fewer copies a block) moved no loop: what makes this
  program's copies cost a fixed ~0.14 µs each is not found, and its figures price no kernel's copies.

Usage: python3 studies/l2_tile_rate.py [--blocks 4000] [--compile-only]
(a standalone CUDA program built with nvcc under .build/experiments/; no torch needed)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # standalone.py beside this file
import standalone  # noqa: E402

SOURCE = r"""
#include <cstdio>
#include <cstdint>
#include <algorithm>
#include <cuda_runtime.h>

constexpr int kMaxSmem = 227 * 1024;

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// kWait 0: the kernels' wait (try_wait, which may suspend the thread until the phase completes or a
// system-dependent limit passes); 1: try_wait with a 20 ns suspend-time hint; 2: test_wait polled (never suspends).
template <int kWait>
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    if constexpr (kWait == 0) {
        asm volatile("{\n.reg .pred p;\nWAIT_%=:\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                     "@!p bra WAIT_%=;\n}\n" ::"r"(bar), "r"(parity) : "memory");
    } else if constexpr (kWait == 1) {
        asm volatile("{\n.reg .pred p;\nWAIT_%=:\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1, %2;\n"
                     "@!p bra WAIT_%=;\n}\n" ::"r"(bar), "r"(parity), "r"(20) : "memory");
    } else {
        asm volatile("{\n.reg .pred p;\nWAIT_%=:\n"
                     "mbarrier.test_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                     "@!p bra WAIT_%=;\n}\n" ::"r"(bar), "r"(parity) : "memory");
    }
}
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                 ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// One CTA: warp 0's lane 0 produces, warp 1 consumes. `own`: CTA c's A tile of block k is tile (k + 7c) of the A
// region, else tile k (every CTA the same tile at the same block).
template <int kStages, int kWait>
__global__ void __launch_bounds__(64, 1)
ring(const uint8_t* a, int a_tiles, int a_bytes, const uint8_t* b, long long b_region, int b_bytes, int blocks, int own,
     unsigned long long* t_start, unsigned long long* t_end) {
    extern __shared__ __align__(1024) uint8_t smem[];
    __shared__ __align__(8) uint64_t bars[2 * 12];
    const uint32_t ring_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    const uint32_t full = static_cast<uint32_t>(__cvta_generic_to_shared(bars));
    const uint32_t empty = full + 8 * kStages;
    const int stage_bytes = a_bytes + b_bytes;
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) { mbar_init(full + 8 * s, 1); mbar_init(empty + 8 * s, 1); }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        t_start[blockIdx.x] = now_ns();
        const uint8_t* my_b = b + static_cast<long long>(blockIdx.x) * b_region;
        const long long b_steps = b_bytes > 0 ? b_region / b_bytes : 1;
        for (int k = 0; k < blocks; ++k) {
            const int s = k % kStages;
            if (k >= kStages) mbar_wait<kWait>(empty + 8 * s, ((k / kStages) - 1) & 1);
            const uint32_t dst = ring_base + s * stage_bytes;
            mbar_arrive_expect_tx(full + 8 * s, stage_bytes);
            const int tile = (own ? k + 7 * static_cast<int>(blockIdx.x) : k) % a_tiles;
            bulk_copy(dst, a + static_cast<long long>(tile) * a_bytes, a_bytes, full + 8 * s);
            if (b_bytes > 0) bulk_copy(dst + a_bytes, my_b + (k % b_steps) * b_bytes, b_bytes, full + 8 * s);
        }
    } else if (threadIdx.x >= 32) {
        for (int k = 0; k < blocks; ++k) {
            const int s = k % kStages;
            mbar_wait<kWait>(full + 8 * s, (k / kStages) & 1);
            __syncwarp();
            if (threadIdx.x == 32) mbar_arrive(empty + 8 * s);
        }
        if (threadIdx.x == 32) t_end[blockIdx.x] = now_ns();
    }
}

// The copies without the ring: thread 0 issues kBatch copies (each into its own stage buffer) counted on one
// barrier, waits for all of them, and repeats `rounds` times: one handshake a batch, so the time a copy is the
// copy path's own (bytes, per-operation cost), against ring()'s handshake a stage.
template <int kBatch>
__global__ void __launch_bounds__(32, 1)
burst(const uint8_t* a, int a_tiles, int a_bytes, const uint8_t* b, long long b_region, int b_bytes, int rounds,
      unsigned long long* t_start, unsigned long long* t_end) {
    extern __shared__ __align__(1024) uint8_t smem[];
    __shared__ __align__(8) uint64_t bar_storage;
    const uint32_t ring_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    const uint32_t bar = static_cast<uint32_t>(__cvta_generic_to_shared(&bar_storage));
    if (threadIdx.x != 0) return;
    mbar_init(bar, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    const int stage_bytes = a_bytes + b_bytes;
    const uint8_t* my_b = b + static_cast<long long>(blockIdx.x) * b_region;
    const long long b_steps = b_bytes > 0 ? b_region / b_bytes : 1;
    t_start[blockIdx.x] = now_ns();
    for (int r = 0; r < rounds; ++r) {
        mbar_arrive_expect_tx(bar, kBatch * stage_bytes);
        for (int i = 0; i < kBatch; ++i) {
            const int k = r * kBatch + i;
            const uint32_t dst = ring_base + i * stage_bytes;
            bulk_copy(dst, a + static_cast<long long>(k % a_tiles) * a_bytes, a_bytes, bar);
            if (b_bytes > 0) bulk_copy(dst + a_bytes, my_b + (k % b_steps) * b_bytes, b_bytes, bar);
        }
        mbar_wait<0>(bar, r & 1);
    }
    t_end[blockIdx.x] = now_ns();
}

// The CTAs' stamps: the span from the first start to the last end (s) and the slowest CTA's own time (ns).
struct Span { double span_s, worst_ns; };
static Span span_of(int ctas, const unsigned long long* t0, const unsigned long long* t1, unsigned long long* h0,
                    unsigned long long* h1) {
    cudaMemcpy(h0, t0, ctas * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
    cudaMemcpy(h1, t1, ctas * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
    unsigned long long first = h0[0], last = h1[0], worst = 0;
    for (int i = 0; i < ctas; ++i) {
        first = h0[i] < first ? h0[i] : first;
        last = h1[i] > last ? h1[i] : last;
        worst = h1[i] - h0[i] > worst ? h1[i] - h0[i] : worst;
    }
    return {double(last - first) * 1e-9, double(worst)};
}

// NOTE: a kernel's static shared memory (the barriers, padded to the dynamic buffer's 1024-byte alignment) comes
// out of the same 227 KB: asking for all of it as dynamic fails, and every launch above 48 KB then failed with it
// (session 69's first run printed zeros: launch errors are not returned by cudaDeviceSynchronize).
template <typename Kernel> static int opt_in(Kernel kernel) {
    cudaFuncAttributes attr;
    cudaFuncGetAttributes(&attr, kernel);
    const int dynamic = kMaxSmem - static_cast<int>(attr.sharedSizeBytes);
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, dynamic);
    return dynamic;
}
static bool launched(const char* what) {  // a launch's own error, then the run's
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess) err = cudaDeviceSynchronize();
    if (err != cudaSuccess) std::printf("error (%s): %s\n", what, cudaGetErrorString(err));
    return err == cudaSuccess;
}

int main(int argc, char** argv) {
    const int blocks = argc > 1 ? atoi(argv[1]) : 4000;
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, dev);
    const long long b_region = 4ll << 20;  // NOTE: 4 MB a CTA, 528 MB for 132: B's bytes come from HBM, not L2
    uint8_t *a = nullptr, *b = nullptr;
    unsigned long long *t0 = nullptr, *t1 = nullptr;
    cudaMalloc(&a, 4 << 20);
    cudaMalloc(&b, b_region * sms);
    cudaMemset(a, 1, 4 << 20);
    cudaMemset(b, 2, b_region * sms);
    cudaMalloc(&t0, sms * sizeof(unsigned long long));
    cudaMalloc(&t1, sms * sizeof(unsigned long long));
    unsigned long long* h0 = new unsigned long long[sms];
    unsigned long long* h1 = new unsigned long long[sms];
    std::printf("%s, %d SMs, %d blocks a CTA, A tiles from L2 (a 4 MB region), B from HBM (4 MB a CTA), one CTA an SM\n",
                prop.name, sms, blocks);
    std::printf("%-9s %-6s %-7s %-8s %-6s %-6s %10s %10s %12s\n", "wait", "stages", "A KB", "B bytes", "tiles", "CTAs",
                "us/stage", "A TB/s", "all TB/s");
    // The configurations session 68 ran: {wait, stages, A KB, B bytes, own, CTAs}.
    struct Config { int wait, stages, a_kb, b_bytes, own, ctas; };
    Config configs[256];
    int n = 0;
    const int ctas_list[] = {1, 16, 66, 112, 132};
    for (int wait : {0, 2})
        for (int stages : {4, 8, 12})
            for (int b_bytes : {0, 2560, 4608})
                for (int ctas : ctas_list) configs[n++] = {wait, stages, 16, b_bytes, 0, ctas};
    for (int a_kb : {8, 32}) configs[n++] = {0, 8, a_kb, 0, 0, 132};   // the tile's size
    for (int ctas : {66, 100, 112, 128, 132}) configs[n++] = {0, 8, 16, 0, 1, ctas};  // each CTA its own tiles
    const char* const wait_names[] = {"try_wait", "try_20ns", "test_wait"};
    int ring_max = kMaxSmem;
#define OPT_IN(S, W) ring_max = std::min(ring_max, opt_in(ring<S, W>))
    OPT_IN(4, 0); OPT_IN(4, 1); OPT_IN(4, 2); OPT_IN(8, 0); OPT_IN(8, 1); OPT_IN(8, 2);
    OPT_IN(12, 0); OPT_IN(12, 1); OPT_IN(12, 2);
    for (int i = 0; i < n; ++i) {
        const int wait = configs[i].wait, stages = configs[i].stages, a_kb = configs[i].a_kb;
        const int b_bytes = configs[i].b_bytes, own = configs[i].own, ctas = configs[i].ctas;
        const int a_bytes = a_kb * 1024;
        const int smem = stages * (a_bytes + b_bytes);
        if (ctas > sms || smem > ring_max) continue;
        const int a_tiles = (4 << 20) / a_bytes;
        for (int rep = 0; rep < 2; ++rep) {  // NOTE: the first launch warms L2 with A and the code
#define LAUNCH(S, W) ring<S, W><<<ctas, 64, smem>>>(a, a_tiles, a_bytes, b, b_region, b_bytes, blocks, own, t0, t1)
            if (stages == 4) { if (wait == 0) LAUNCH(4, 0); if (wait == 1) LAUNCH(4, 1); if (wait == 2) LAUNCH(4, 2); }
            if (stages == 8) { if (wait == 0) LAUNCH(8, 0); if (wait == 1) LAUNCH(8, 1); if (wait == 2) LAUNCH(8, 2); }
            if (stages == 12) { if (wait == 0) LAUNCH(12, 0); if (wait == 1) LAUNCH(12, 1); if (wait == 2) LAUNCH(12, 2); }
        }
        if (!launched("ring")) return 1;
        const Span sp = span_of(ctas, t0, t1, h0, h1);
        const double span_s = sp.span_s, worst = sp.worst_ns;
        const double a_total = double(ctas) * blocks * a_bytes, all_total = double(ctas) * blocks * (a_bytes + b_bytes);
        std::printf("%-9s %-6d %-7d %-8d %-6s %-6d %10.3f %10.2f %12.2f\n", wait_names[wait], stages, a_kb, b_bytes,
                    own ? "own" : "same", ctas,
                    worst * 1e-3 / blocks, a_total / span_s * 1e-12, all_total / span_s * 1e-12);
    }
    // The copy path alone (burst): 8 copies a handshake, the A tiles the same for every CTA.
    std::printf("\n%-9s %-6s %-7s %-8s %-6s %10s %10s %12s\n", "burst", "batch", "A KB", "B bytes", "CTAs", "us/copy",
                "A TB/s", "all TB/s");
    const int burst_max = opt_in(burst<8>);
    for (int a_kb : {8, 16}) for (int b_bytes : {0, 4608}) for (int ctas : {1, 112, 132}) {
        const int a_bytes = a_kb * 1024, smem = 8 * (a_bytes + b_bytes);
        if (ctas > sms || smem > burst_max) continue;
        const int rounds = blocks / 8 > 0 ? blocks / 8 : 1;
        for (int rep = 0; rep < 2; ++rep)
            burst<8><<<ctas, 32, smem>>>(a, (4 << 20) / a_bytes, a_bytes, b, b_region, b_bytes, rounds, t0, t1);
        if (!launched("burst")) return 1;
        const Span sp = span_of(ctas, t0, t1, h0, h1);
        const double span_s = sp.span_s, worst = sp.worst_ns, copies = double(rounds) * 8;
        std::printf("%-9s %-6d %-7d %-8d %-6d %10.3f %10.2f %12.2f\n", "burst", 8, a_kb, b_bytes, ctas,
                    worst * 1e-3 / copies, ctas * copies * a_bytes / span_s * 1e-12,
                    ctas * copies * (a_bytes + b_bytes) / span_s * 1e-12);
    }
    return 0;
}
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=4000)
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    if args.blocks < 1:
        ap.error("--blocks must be at least 1")
    code = standalone.build_and_run("l2_tile_rate", SOURCE, compile_only=True)
    if code != 0 or args.compile_only:
        return code
    import subprocess
    return subprocess.run([str(standalone.OUT_DIR / "l2_tile_rate"), str(args.blocks)]).returncode


if __name__ == "__main__":
    sys.exit(main())
