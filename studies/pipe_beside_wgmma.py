"""Which instruction classes does a running wgmma slow? Issue rate per class, alone and beside the tensor pipe.

studies/wgmma_alu_contention.py (session 65) found B's decode ~1.5x slower beside a running wgmma and read it as
"~0.35 instructions a scheduler-cycle whatever the instruction"; `nvfp4 probe sass` prices loops at that one rate.
gemm v96 (session 66) then broke the single rate: it removed the paired loop's 32 uniform-datapath instructions and
added 16 vector ones (523 -> 507), priced 1.01-1.02x faster, measured 0.996x. So the classes differ. This times,
on every SM (one CTA of two warpgroups, one warp a scheduler each), warpgroup 1 issuing one class of instruction
(32 a loop pass over 8 independent chains, operands from registers the compiler cannot see through) while
warpgroup 0 is:
  idle      nothing: the class alone, one warp a scheduler;
  same      the same class too: two warps a scheduler (the pipe's own rate where one warp's chains cannot fill it);
  wgmma RS  issuing K blocks of 4 x m64n128k16 (A from registers, B from shared memory, register accumulators;
            fence, commit, wait 0) until warpgroup 1 is done: the paired kernel's tensor work beside it;
  wgmma SS  the same with A from shared memory too (no register operand but the accumulators).
Then the frontier (a CTA of three warpgroups): warpgroups 0 and 1 keep the tensor pipe busy (each its own K blocks,
as the paired kernel's two consumers) while warpgroup 2 issues LOP3, HMUL2 or FFMA over 1, 2, 4 or 8 chains (its
offered load): the class's issue rate alone and beside, and the tensor pipe's busy share (256 cycles a K block at the
dense rate) beside it: how much ALU issue the tensor pipe leaves, and how much of the tensor pipe the issue takes.
Per class and mode: warp instructions a cycle a scheduler (warpgroup 1's warp; `same` counts both warps), and in
the wgmma modes the tensor side's cycles a K block (4 x 64 = 256 at the dense rate, one warpgroup). ptxas unrolls
each class's loop, so its counter and branch are a few instructions in hundreds.
Found (H200, session 66; studies/README.md has the figures): the integer and half-precision classes issue at ~0.48
a cycle alone and ~0.3 beside a running wgmma, which they slow; full-rate fp32 all but stops it; beside two
warpgroups of wgmma a third warp gets 0.21-0.25 a cycle and takes 7-11% of the tensor pipe.

Usage: python3 studies/pipe_beside_wgmma.py [--passes 20000] [--compile-only]
(a standalone CUDA program built with nvcc under .build/experiments/; no torch needed; check the classes' SASS with
cuobjdump -sass .build/experiments/pipe_beside_wgmma | grep -c <OPCODE>)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # standalone.py beside this file
import standalone  # noqa: E402

# (name, PTX on chain register {d} with operands {a} (the chain's own) and {b} (shared), SASS instructions a pass of 32
# PTX ones: ptxas 13.0 fuses two chained adds into one IADD3, the rest stay one to one (nvdisasm, session 66))
CLASSES = [
    ("LOP3", "lop3.b32 {d}, {d}, {a}, {b}, 0x96;", 32),
    ("IADD3", "add.u32 {d}, {d}, {a};", 16),
    ("SHF", "shf.l.wrap.b32 {d}, {d}, {a}, {b};", 32),
    ("IMAD", "mad.lo.u32 {d}, {d}, {a}, {b};", 32),
    ("PRMT", "prmt.b32 {d}, {d}, {a}, {b};", 32),
    ("HMUL2", "mul.rn.f16x2 {d}, {d}, {a};", 32),
    ("HFMA2", "fma.rn.f16x2 {d}, {d}, {a}, {b};", 32),
    ("FFMA", "fma.rn.f32 {d}, {d}, {a}, {b};", 32),
]
MODES = ["idle", "same", "wgmma RS", "wgmma SS"]
# The frontier: these classes with 1, 2, 4 or 8 independent chains (the offered load) beside two warpgroups of wgmma.
FRONTIER_CLASSES = ["LOP3", "HMUL2", "FFMA"]
FRONTIER_CHAINS = [1, 2, 4, 8]


def class_fn(index: int, ptx: str) -> str:
    # NOTE: each chain its own first operand (registers %8-%15), so the operand reuse cache does not serve every read
    # the way one shared operand would; the decode's instructions read distinct registers too.
    body = "\\n".join(ptx.format(d=f"%{c}", a=f"%{8 + c}", b="%16") for c in range(8))
    outs = ", ".join(f'"+r"(x[{c}])' for c in range(8))
    ins = ", ".join(f'"r"(a[{c}])' for c in range(8))
    return f"""
__device__ __forceinline__ void class_{index}(uint32_t (&x)[8], const uint32_t (&a)[8], uint32_t b) {{
    asm volatile("{body}\\n" : {outs} : {ins}, "r"(b));
}}"""


def chain_fn(name: str, ptx: str, chains: int) -> str:
    """32 PTX instructions over `chains` chains (instruction j on chain j % chains): fewer chains, less offered load."""
    body = "\\n".join(ptx.format(d=f"%{j % chains}", a=f"%{8 + j % 8}", b="%16") for j in range(32))
    outs = ", ".join(f'"+r"(x[{c}])' for c in range(8))
    ins = ", ".join(f'"r"(a[{c}])' for c in range(8))
    return f"""
__device__ __forceinline__ void chains_{name}_{chains}(uint32_t (&x)[8], const uint32_t (&a)[8], uint32_t b) {{
    asm volatile("{body}\\n" : {outs} : {ins}, "r"(b));
}}"""


def program(passes: int) -> str:
    ptx_of = {n: (ptx, count) for n, ptx, count in CLASSES}
    fns_chains = "".join(chain_fn(n, ptx_of[n][0], c) for n in FRONTIER_CLASSES for c in FRONTIER_CHAINS)
    variants = [(n, c) for n in FRONTIER_CLASSES for c in FRONTIER_CHAINS]
    fdispatch = "\n".join(f"        case {i}: for (int p = 0; p < kPasses; ++p) chains_{n}_{c}(x, a, b); break;"
                           for i, (n, c) in enumerate(variants))
    fnames = ", ".join(f'"{n}"' for n, _ in variants)
    fchains = ", ".join(str(c) for _, c in variants)
    fcounts = ", ".join(str(ptx_of[n][1]) for n, _ in variants)
    fns = "".join(class_fn(i, ptx) for i, (_, ptx, _) in enumerate(CLASSES))
    # NOTE: one loop a class (a switch inside the loop cost a BRX and its index a pass)
    dispatch = "\n".join(f"        case {i}: for (int p = 0; p < kPasses; ++p) {{ class_{i}(x, a, b); class_{i}(x, a, b); "
                         f"class_{i}(x, a, b); class_{i}(x, a, b); }} break;" for i in range(len(CLASSES)))
    counts = ", ".join(str(n) for _, _, n in CLASSES)
    names = ", ".join(f'"{n}"' for n, _, _ in CLASSES)
    modes = ", ".join(f'"{m}"' for m in MODES)
    return r"""
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

constexpr int kPasses = """ + str(passes) + r""";
constexpr int kClasses = """ + str(len(CLASSES)) + r""";
static const char* kClassNames[] = {""" + names + r"""};
static const int kPerPass[] = {""" + counts + r"""};  // SASS instructions a pass
constexpr int kVariants = """ + str(len(variants)) + r""";
static const char* kVariantClass[] = {""" + fnames + r"""};
static const int kVariantChains[] = {""" + fchains + r"""};
static const int kVariantPerPass[] = {""" + fcounts + r"""};
static const char* kModeNames[] = {""" + modes + r"""};
constexpr int kSmem = 128 * 128 + 64 * 128 + 1024;  // B: 128 rows x 64 K fp16; A (SS): 64 rows x 64 K; 1024 align

__device__ __forceinline__ uint64_t desc(uint32_t smem) {
    return (static_cast<uint64_t>((1024u >> 4) | (1u << 30)) << 32) | ((smem >> 4) & 0x3FFF) | (1u << 16);
}
#define ACC64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
    "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, " \
    "%44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define ACC64_OUT(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), \
    "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), \
    "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), \
    "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), \
    "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), \
    "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), \
    "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), \
    "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), \
    "+f"(d[63])
__device__ __forceinline__ void wgmma_rs(float* d, const uint32_t* a, uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " ACC64 ", {%64, %65, %66, %67}, %68, 1, 1, 1, 0;\n"
        : ACC64_OUT(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
__device__ __forceinline__ void wgmma_ss(float* d, uint64_t da, uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " ACC64 ", %64, %65, 1, 1, 1, 0, 0;\n"
        : ACC64_OUT(d) : "l"(da), "l"(db));
}
""" + fns + fns_chains + r"""

// Warpgroup 0's tensor work: K blocks of 4 x m64n128k16 (fence, commit, wait 0) until warpgroup 1 raises `done`.
// NOTE: polled once a K block; the warpgroup agrees by a barrier reduction (bar.red.or on named barrier 1), since
// wgmma's .sync.aligned needs all four warps to stop at the same block.
template <bool kRS> __device__ __forceinline__ long long tensor_loop(float* acc, const uint32_t* frag, uint32_t base,
                                                                     volatile int* done, int bar = 1) {
    long long blocks = 0;
    #pragma unroll 1
    while (true) {
        int stop;
        asm volatile("{\n.reg .pred p, q;\nsetp.ne.s32 p, %1, 0;\nbar.red.or.pred q, %2, 128, p;\n"
                     "selp.s32 %0, 1, 0, q;\n}\n" : "=r"(stop) : "r"(*done), "r"(bar) : "memory");
        if (stop) break;
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            if (kRS) wgmma_rs(acc, frag, desc(base + 32 * s));
            else wgmma_ss(acc, desc(base + 128 * 128 + 32 * s), desc(base + 32 * s));
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        ++blocks;
    }
    return blocks;
}

// mode: 0 warpgroup 0 idle, 1 it runs the class too, 2 wgmma RS until warpgroup 1 is done, 3 wgmma SS likewise.
// out[cta * 4 + 0]: warpgroup 1's cycles, [1] warpgroup 0's cycles, [2] warpgroup 0's K blocks, [3] unused.
__global__ void __launch_bounds__(256, 1) pipe_kernel(int cls, int mode, const uint32_t* seed, long long* out,
                                                      uint32_t* sink) {
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    __shared__ volatile int done;
    for (int i = threadIdx.x * 4; i < kSmem - 1024; i += blockDim.x * 4)
        *reinterpret_cast<uint32_t*>(smem_raw + i) = 0x3C003C00u | ((i >> 2) & 0x00FF00FFu);
    if (threadIdx.x == 0) done = 0;
    __syncthreads();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
    // NOTE: operands from global memory, so ptxas cannot fold any chain; every chain starts distinct per thread.
    const uint32_t b = seed[1] | 1u;
    uint32_t x[8], a[8];
    #pragma unroll
    for (int c = 0; c < 8; ++c) { x[c] = seed[2 + c] + threadIdx.x; a[c] = (seed[0] | 1u) ^ (c << 4); }
    const long long t0 = clock64();
    long long blocks = 0;
    if (wg == 1 || mode == 1) {
        #pragma unroll 1
        switch (cls) {
""" + dispatch + r"""
        }
        if (wg == 1) {
            __syncwarp();
            if (t == 0) done = 1;
        }
    } else if (mode >= 2) {
        float acc[64];
        #pragma unroll
        for (int i = 0; i < 64; ++i) acc[i] = 0.f;
        const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
        const uint32_t frag[4] = {0x3C003C00u + t, 0x3C013C00u, 0x3BFF3C00u, 0x3C003BFFu};
        // NOTE: one loop a form, so no branch between a block's wgmmas (ptxas would fence around it).
        if (mode == 2) blocks = tensor_loop<true>(acc, frag, base, &done);
        else blocks = tensor_loop<false>(acc, frag, base, &done);
        float s = 0.f;
        #pragma unroll
        for (int i = 0; i < 64; ++i) s += acc[i];
        if (s == 12345.f) sink[threadIdx.x] = static_cast<uint32_t>(s);
    }
    const long long t1 = clock64();
    if (t == 0) {
        out[blockIdx.x * 4 + (wg == 1 ? 0 : 1)] = t1 - t0;
        if (wg == 0) out[blockIdx.x * 4 + 2] = blocks;
    }
    uint32_t y = 0;
    #pragma unroll
    for (int c = 0; c < 8; ++c) y ^= x[c];
    if (y == 0x12345u) sink[threadIdx.x] = y;  // NOTE: keeps the chains live; never true in practice
}

// The frontier: warpgroups 0 and 1 keep the tensor pipe busy (each its own K blocks, fence, 4 x m64n128k16 RS,
// commit, wait 0: wgmma x2 of wgmma_alu_contention.py, ~512 cycles a block pair, the dense rate) while warpgroup 2
// issues variant `v` (a class over 1-8 chains); `tensor` 0 leaves warpgroups 0-1 idle, `v` < 0 has warpgroup 2 sleep
// for as long as the variants run (the tensor side alone). out[cta * 4]: warpgroup 2's cycles, [1] warpgroup 0's,
// [2] K blocks of both tensor warpgroups.
__global__ void __launch_bounds__(384, 1) frontier_kernel(int v, int tensor, long long sleep_cycles,
                                                          const uint32_t* seed, long long* out, uint32_t* sink) {
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    __shared__ volatile int done;
    __shared__ unsigned long long blocks_sum;
    for (int i = threadIdx.x * 4; i < kSmem - 1024; i += blockDim.x * 4)
        *reinterpret_cast<uint32_t*>(smem_raw + i) = 0x3C003C00u | ((i >> 2) & 0x00FF00FFu);
    if (threadIdx.x == 0) { done = 0; blocks_sum = 0; }
    __syncthreads();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
    const uint32_t b = seed[1] | 1u;
    uint32_t x[8], a[8];
    #pragma unroll
    for (int c = 0; c < 8; ++c) { x[c] = seed[2 + c] + threadIdx.x; a[c] = (seed[0] | 1u) ^ (c << 4); }
    const long long t0 = clock64();
    if (wg == 2) {
        if (v < 0) {
            while (clock64() - t0 < sleep_cycles) __nanosleep(200);
        } else {
            switch (v) {
""" + fdispatch + r"""
            }
        }
        __syncwarp();
        if (t == 0) done = 1;
    } else if (tensor) {
        float acc[64];
        #pragma unroll
        for (int i = 0; i < 64; ++i) acc[i] = 0.f;
        const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
        const uint32_t frag[4] = {0x3C003C00u + t, 0x3C013C00u, 0x3BFF3C00u, 0x3C003BFFu};
        const long long blocks = tensor_loop<true>(acc, frag, base, &done, 1 + wg);
        if (t == 0) atomicAdd(&blocks_sum, static_cast<unsigned long long>(blocks));
        float s = 0.f;
        #pragma unroll
        for (int i = 0; i < 64; ++i) s += acc[i];
        if (s == 12345.f) sink[threadIdx.x] = static_cast<uint32_t>(s);
    }
    const long long t1 = clock64();
    __syncthreads();
    if (t == 0 && wg == 2) out[blockIdx.x * 4] = t1 - t0;
    if (t == 0 && wg == 0) { out[blockIdx.x * 4 + 1] = t1 - t0; out[blockIdx.x * 4 + 2] = blocks_sum; }
    uint32_t y = 0;
    #pragma unroll
    for (int c = 0; c < 8; ++c) y ^= x[c];
    if (y == 0x12345u) sink[threadIdx.x] = y;  // NOTE: keeps the chains live; never true in practice
}

static double median(std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
}

int main() {
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, dev);
    cudaFuncSetAttribute(pipe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
    long long* out = nullptr;
    uint32_t *seed = nullptr, *sink = nullptr;
    cudaMalloc(&out, sizeof(long long) * 4 * sms);
    cudaMalloc(&sink, 4096);
    cudaMalloc(&seed, 64);
    const uint32_t host_seed[10] = {0x00030005u, 0x3C013BFFu, 0x11u, 0x2233u, 0x3C003C00u, 0x3C013C01u, 0x3BFF3BFFu,
                                    0x40004000u, 0x38003800u, 0x3E003E00u};
    cudaMemcpy(seed, host_seed, sizeof(host_seed), cudaMemcpyHostToDevice);
    std::printf("%s, %d SMs; one CTA of two warpgroups an SM; %d passes of 32 PTX instructions a warp (8 chains)\n"
                "warp instructions a cycle a scheduler (median over SMs); beside wgmma: the tensor side's cycles a K\n"
                "block (4 x m64n128k16: 256 cycles at the dense rate)\n", prop.name, sms, kPasses);
    std::printf("%-7s %8s %8s %10s %8s %10s %8s\n", "class", "idle", "same", "wgmma RS", "(K blk)", "wgmma SS",
                "(K blk)");
    std::vector<long long> host(4 * sms);
    for (int cls = 0; cls < kClasses; ++cls) {
        std::printf("%-7s", kClassNames[cls]);
        for (int mode = 0; mode < 4; ++mode) {
            double rate = 0, kblk = 0;
            for (int rep = 0; rep < 2; ++rep) {  // NOTE: the first launch warms clocks and the module; the second is read
                cudaMemset(out, 0, sizeof(long long) * 4 * sms);
                pipe_kernel<<<sms, 256, kSmem>>>(cls, mode, seed, out, sink);
                const cudaError_t err = cudaDeviceSynchronize();
                if (err != cudaSuccess) { std::printf(" error %s (%s)\n", cudaGetErrorString(err), kModeNames[mode]); return 1; }
                cudaMemcpy(host.data(), out, sizeof(long long) * 4 * sms, cudaMemcpyDeviceToHost);
                std::vector<double> r, k;
                for (int c = 0; c < sms; ++c) {
                    r.push_back(double(kPerPass[cls]) * kPasses * (mode == 1 ? 2 : 1) / double(host[c * 4]));
                    if (mode >= 2 && host[c * 4 + 2] > 0) k.push_back(double(host[c * 4 + 1]) / double(host[c * 4 + 2]));
                }
                rate = median(r);
                kblk = k.empty() ? 0 : median(k);
            }
            if (mode < 2) std::printf(" %8.3f", rate);
            else std::printf(" %10.3f %8.0f", rate, kblk);
        }
        std::printf("\n");
    }
    // The frontier: tensor-busy fraction (256 cycles a K block at the dense rate) against the class's issue rate.
    cudaFuncSetAttribute(frontier_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
    auto frontier = [&](int v, int tensor, long long sleep_cycles, double* rate, double* busy, double* cyc) {
        for (int rep = 0; rep < 2; ++rep) {  // NOTE: the first launch warms; the second is read
            cudaMemset(out, 0, sizeof(long long) * 4 * sms);
            frontier_kernel<<<sms, 384, kSmem>>>(v, tensor, sleep_cycles, seed, out, sink);
            if (cudaDeviceSynchronize() != cudaSuccess) return false;
            cudaMemcpy(host.data(), out, sizeof(long long) * 4 * sms, cudaMemcpyDeviceToHost);
            std::vector<double> r, u, c;
            for (int i = 0; i < sms; ++i) {
                c.push_back(double(host[i * 4]));
                if (v >= 0) r.push_back(double(kVariantPerPass[v]) * kPasses / double(host[i * 4]));
                if (tensor) u.push_back(256.0 * double(host[i * 4 + 2]) / double(host[i * 4 + 1]));
            }
            *cyc = median(c);
            *rate = r.empty() ? 0 : median(r);
            *busy = u.empty() ? 0 : median(u);
        }
        return true;
    };
    double r0, u0, c0;
    if (!frontier(-1, 1, 4000000, &r0, &u0, &c0)) { std::printf("frontier: launch failed\n"); return 1; }
    std::printf("\nthe frontier: two warpgroups of wgmma (RS, wait 0 a block) and a third warpgroup's class over C chains\n"
                "tensor alone (third warpgroup asleep): busy %.3f of the dense rate\n", u0);
    std::printf("%-7s %6s %10s %10s %10s\n", "class", "chains", "alone", "beside", "busy");
    for (int v = 0; v < kVariants; ++v) {
        double ra, ua, ca, rb, ub, cb;
        if (!frontier(v, 0, 0, &ra, &ua, &ca) || !frontier(v, 1, 0, &rb, &ub, &cb)) {
            std::printf("frontier: launch failed\n");
            return 1;
        }
        std::printf("%-7s %6d %10.3f %10.3f %10.3f\n", kVariantClass[v], kVariantChains[v], ra, rb, ub);
    }
    std::printf("read: a class slowed beside wgmma RS but not SS is taxed by the register A operand; slowed by both, by\n"
                "the accumulators' traffic or the issue itself. `same` over `idle` says whether one warp fills the pipe. The\n"
                "frontier: a class's issue rate (alone, beside) against the tensor pipe's busy share, as its offered load grows.\n");
    cudaFree(out);
    cudaFree(seed);
    cudaFree(sink);
    return 0;
}
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passes", type=int, default=20000)
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    if args.passes < 100:
        ap.error("--passes must be at least 100 (the clock reads and the flag's poll need a long loop to vanish)")
    return standalone.build_and_run("pipe_beside_wgmma", program(args.passes), compile_only=args.compile_only)


if __name__ == "__main__":
    sys.exit(main())
