"""How fast do two CTAs of a cluster swap 64 KB through distributed shared memory, and by which means?

dual_gemm's split-K sum (S = 2) reads the peer's 64 KB of partials with ld.shared::cluster and
takes ~4.4 µs for it with every CTA exchanging (~15 GB/s a CTA, timeline); batching the reads
(dual v16, gemm v27) did not help, so it looked bound by the cluster network's bytes. This
standalone program times the same exchange alone, every SM busy (132 CTAs in clusters of 2, one
per SM, ~129 KB of shared memory each), by four means, each ending with every thread having summed
its 1/256 of the received bytes:

  pull, 1 in flight     each thread reads its 16 float4 of the peer's buffer one round trip at a
                        time (mapa + ld.shared::cluster.v4; a warp reads 512 contiguous bytes)
  pull, 16 in flight    the same 16 reads issued before any is used
  push, bulk copy       thread 0 pushes its buffer into the peer's receive area with four 16 KB
                        cp.async.bulk.shared::cluster copies completing on the peer's mbarrier (armed
                        before the cluster barrier); every thread waits on its own mbarrier, then
                        reads the received bytes locally
  push, st.shared::cluster  every thread stores its 16 float4 into the peer's receive area, then a
                        cluster barrier (release / acquire), then local reads
  half DSMEM, half L2   thread 0 pushes the first half as "push, bulk copy" does and bulk-stores the
                        second half to global memory, then arrives (release, cluster scope) on the
                        peer's mbarrier; every thread reads the first half locally and the peer's
                        second half from L2 (ld.global.cg): do the two paths add their rates?
  3/4 DSMEM, 1/4 L2     the same with a quarter through L2 (its round trip is two transfers)
  all through L2        the same with nothing over DSMEM: the L2 round trip on its own

Per mode: 20 launches; per launch the slowest CTA's time from the cluster barrier before the
exchange to its last thread done (%globaltimer), median over launches, as µs and as GB/s per CTA.
Usage: python3 studies/dsmem_rate.py [--kb 64] [--ctas 132] [--compile-only]
(writes and builds a standalone CUDA program with nvcc under .build/experiments/; no torch needed)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # standalone.py beside this file
import standalone  # noqa: E402

MODES = ["pull, 1 in flight", "pull, 16 in flight", "push, bulk copy", "push, st.shared::cluster", "half DSMEM, half L2",
         "3/4 DSMEM, 1/4 L2", "all through L2"]


def program(kb: int, ctas: int = 132) -> str:
    return r"""
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

constexpr int kThreads = 256;
constexpr int kBytes = """ + str(kb) + r""" * 1024;       // exchanged a CTA
constexpr int kPerThread = kBytes / 16 / kThreads;        // float4 a thread
constexpr int kChunks = 4;                                 // bulk copies a push
constexpr int kSmem = 2 * kBytes + 1024;                   // own buffer, receive area, barrier
constexpr int kCtas = """ + str(ctas) + r""", kLaunches = 20;
constexpr int kChunkBytes = kBytes / kChunks;
// NOTE: the DSMEM part of modes 4-6 (half, 3/4, none; the rest through L2) is set per mode in the kernel
static_assert(kBytes % (16 * kThreads) == 0 && kBytes % (16 * kChunks) == 0, "whole float4 a thread");

__device__ __forceinline__ unsigned long long gtime() {
    unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ uint32_t mapa(uint32_t addr, uint32_t rank) {
    uint32_t r; asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank)); return r;
}
__device__ __forceinline__ float4 ld_cluster(uint32_t addr) {
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr) : "memory");
    return v;
}
__device__ __forceinline__ float4 ld_local(uint32_t addr) {
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr) : "memory");
    return v;
}
__device__ __forceinline__ void st_cluster(uint32_t addr, float4 v) {
    asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};\n" :: "r"(addr), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory");
}
__device__ __forceinline__ float add4(float a, float4 v) { return a + v.x + v.y + v.z + v.w; }

template <int kMode>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kThreads, 1)
exchange(unsigned long long* stamps, float* out, float4* scratch) {
    constexpr int kDsmemBytes = kMode == 4 ? kBytes / 2 : kMode == 5 ? 3 * kBytes / 4 : 0;  // modes 4-6: pushed over DSMEM
    extern __shared__ __align__(1024) uint8_t smem[];
    const uint32_t mine = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    const uint32_t recv = mine + kBytes, bar = mine + 2 * kBytes;
    uint32_t rank; asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    const uint32_t peer = rank ^ 1u;
    const int t = threadIdx.x;
    for (int i = t; i < kBytes / 16; i += kThreads)
        *reinterpret_cast<float4*>(smem + 16 * i) = make_float4(i, rank, 1.f, 2.f);
    if (t == 0) {
        // NOTE: modes 4-6 count two arrivals: the local expect_tx (the DSMEM half's bytes) and the peer's release
        // once its L2 half is written
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(kMode >= 4 ? 2 : 1) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        // NOTE: armed before the cluster barrier, so the peer's bytes can only land on an armed phase.
        if (kMode == 2 || kMode >= 4)
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(kMode == 2 ? kBytes : kDsmemBytes) : "memory");
    }
    // NOTE: the fills are generic-proxy writes that the bulk copy (async proxy) reads.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    cluster_sync();
    const unsigned long long t0 = gtime();
    float acc = 0.f;
    if (kMode == 0) {
        #pragma unroll 1
        for (int i = 0; i < kPerThread; ++i) acc = add4(acc, ld_cluster(mapa(mine + 16 * (i * kThreads + t), peer)));
    } else if (kMode == 1) {
        float4 v[kPerThread];
        #pragma unroll
        for (int i = 0; i < kPerThread; ++i) v[i] = ld_cluster(mapa(mine + 16 * (i * kThreads + t), peer));
        #pragma unroll
        for (int i = 0; i < kPerThread; ++i) acc = add4(acc, v[i]);
    } else if (kMode >= 4) {
        if (t == 0) {
            const uint32_t dst = mapa(recv, peer), remote_bar = mapa(bar, peer);
            for (int c = 0; c < kDsmemBytes / kChunkBytes; ++c)
                asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                             :: "r"(dst + c * kChunkBytes), "r"(mine + c * kChunkBytes), "r"(kChunkBytes), "r"(remote_bar) : "memory");
            float4* const mine_global = scratch + static_cast<size_t>(blockIdx.x) * (kBytes / 16);
            for (int c = kDsmemBytes / kChunkBytes; c < kBytes / kChunkBytes; ++c)
                asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n"
                             :: "l"(reinterpret_cast<uint8_t*>(mine_global) + c * kChunkBytes), "r"(mine + c * kChunkBytes), "r"(kChunkBytes) : "memory");
            asm volatile("cp.async.bulk.commit_group;\ncp.async.bulk.wait_group 0;\n" ::: "memory");
            // NOTE: the bulk stores are the async proxy's; the peer reads them through the generic proxy
            asm volatile("fence.proxy.async.global;\n" ::: "memory");
            asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" :: "r"(remote_bar) : "memory");
        }
        asm volatile("{\n.reg .pred done;\nwait_%=:\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], 0;\n@!done bra wait_%=;\n}\n"
                     :: "r"(bar) : "memory");
        const float4* const theirs = scratch + static_cast<size_t>(blockIdx.x ^ 1u) * (kBytes / 16);
        float4 v[kPerThread];
        #pragma unroll
        for (int i = 0; i < kPerThread; ++i) {
            const int index = i * kThreads + t;
            v[i] = 16 * index < kDsmemBytes ? ld_local(recv + 16 * index) : __ldcg(theirs + index);
        }
        #pragma unroll
        for (int i = 0; i < kPerThread; ++i) acc = add4(acc, v[i]);
    } else {
        if (kMode == 2) {
            if (t == 0) {
                const uint32_t dst = mapa(recv, peer), remote_bar = mapa(bar, peer);
                for (int c = 0; c < kChunks; ++c)
                    asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                                 :: "r"(dst + c * (kBytes / kChunks)), "r"(mine + c * (kBytes / kChunks)), "r"(kBytes / kChunks), "r"(remote_bar) : "memory");
            }
            asm volatile("{\n.reg .pred done;\nwait_%=:\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], 0;\n@!done bra wait_%=;\n}\n"
                         :: "r"(bar) : "memory");
        } else {
            #pragma unroll
            for (int i = 0; i < kPerThread; ++i)
                st_cluster(mapa(recv + 16 * (i * kThreads + t), peer), ld_local(mine + 16 * (i * kThreads + t)));
            cluster_sync();
        }
        #pragma unroll
        for (int i = 0; i < kPerThread; ++i) acc = add4(acc, ld_local(recv + 16 * (i * kThreads + t)));
    }
    __syncthreads();
    if (t == 0) { stamps[2 * blockIdx.x] = t0; stamps[2 * blockIdx.x + 1] = gtime(); }
    out[blockIdx.x * kThreads + t] = acc;
    cluster_sync();  // NOTE: no CTA leaves while its peer may still read or write its shared memory
}

template <int kMode>
static void run(const char* name, unsigned long long* d_stamps, float* d_out, float4* d_scratch) {
    cudaFuncSetAttribute(exchange<kMode>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
    std::vector<double> slowest, median;
    std::vector<unsigned long long> h(2 * kCtas);
    for (int l = 0; l < kLaunches + 2; ++l) {
        // NOTE: zeroed before every launch, so a read of the L2 part ahead of its writes shows as "DATA WRONG"
        // (every launch writes the same values)
        if (kMode >= 4) cudaMemset(d_scratch, 0, static_cast<size_t>(kCtas) * kBytes);
        exchange<kMode><<<kCtas, kThreads, kSmem>>>(d_stamps, d_out, d_scratch);
        cudaError_t err = cudaDeviceSynchronize();
        if (err != cudaSuccess) { printf("%-26s launch failed: %s\n", name, cudaGetErrorString(err)); return; }
        if (l < 2) continue;  // NOTE: warm-up launches
        cudaMemcpy(h.data(), d_stamps, h.size() * 8, cudaMemcpyDeviceToHost);
        std::vector<double> us(kCtas);
        for (int c = 0; c < kCtas; ++c) us[c] = (h[2 * c + 1] - h[2 * c]) / 1e3;
        std::sort(us.begin(), us.end());
        slowest.push_back(us.back());
        median.push_back(us[kCtas / 2]);
    }
    std::sort(slowest.begin(), slowest.end());
    std::sort(median.begin(), median.end());
    // NOTE: every thread summed the peer's float4 (i, rank, 1, 2) at indices i x kThreads + t: exact in fp32
    std::vector<float> o(kCtas * kThreads);
    cudaMemcpy(o.data(), d_out, o.size() * 4, cudaMemcpyDeviceToHost);
    bool ok = true;
    for (int c = 0; c < kCtas; ++c)
        for (int t = 0; t < kThreads; ++t) {
            double want = 0;
            for (int i = 0; i < kPerThread; ++i) want += (i * kThreads + t) + ((c % 2) ^ 1) + 3.0;
            ok = ok && o[c * kThreads + t] == static_cast<float>(want);
        }
    const double s = slowest[slowest.size() / 2], m = median[median.size() / 2];
    printf("%-26s %8.2f %8.2f   %7.1f %7.1f   %s\n", name, m, s, kBytes / (m * 1e3), kCtas * kBytes / (s * 1e6),
           ok ? "data ok" : "DATA WRONG");
}

int main() {
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    printf("%s, %d SMs: %d CTAs in clusters of 2, %d KB exchanged a CTA; median of %d launches\n", prop.name,
           prop.multiProcessorCount, kCtas, kBytes / 1024, kLaunches);
    printf("%-26s %8s %8s   %7s %7s\n", "mode", "CTA us", "slowest", "GB/s/CTA", "TB/s all");
    unsigned long long* d_stamps; float* d_out;
    cudaMalloc(&d_stamps, 2 * kCtas * 8);
    float4* d_scratch;
    cudaMalloc(&d_out, kCtas * kThreads * 4);
    cudaMalloc(&d_scratch, static_cast<size_t>(kCtas) * kBytes);
    run<0>("pull, 1 in flight", d_stamps, d_out, d_scratch);
    run<1>("pull, 16 in flight", d_stamps, d_out, d_scratch);
    run<2>("push, bulk copy", d_stamps, d_out, d_scratch);
    run<3>("push, st.shared::cluster", d_stamps, d_out, d_scratch);
    run<4>("half DSMEM, half L2", d_stamps, d_out, d_scratch);
    run<5>("3/4 DSMEM, 1/4 L2", d_stamps, d_out, d_scratch);
    run<6>("all through L2", d_stamps, d_out, d_scratch);
    return 0;
}
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kb", type=int, default=64, help="KB exchanged a CTA (a multiple of 4)")
    ap.add_argument("--ctas", type=int, default=132,
                    help="CTAs exchanging, an even number from 2 to 132 (one an SM; the rest of the SMs idle): "
                         "whether the rate a CTA is its own link's or the whole network's")
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    if args.kb < 4 or args.kb % 4:
        ap.error(f"--kb must be a positive multiple of 4, got {args.kb}")
    if not 2 <= args.ctas <= 132 or args.ctas % 2:
        ap.error(f"--ctas must be an even number from 2 to 132, got {args.ctas}")
    return standalone.build_and_run(f"dsmem_rate_{args.kb}_{args.ctas}", program(args.kb, args.ctas),
                                    compile_only=args.compile_only)


if __name__ == "__main__":
    sys.exit(main())
