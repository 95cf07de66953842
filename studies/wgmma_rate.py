"""How fast is wgmma at the narrow N our kernels use? Tensor-pipe throughput per instruction shape.

group_gemm v30 put twice the warps on the same work and ran no faster (M = 96 tiles) or slower
(M = 128), and v25's kernel with no decode and no copies still took 94 µs on shape A against
~65-73 µs of tensor work at peak rate. Both point at the tensor pipe itself at N = 64-256. This
times wgmma.mma_async m64nNk16 f32.f16.f16 alone: one CTA per SM, W warpgroups each issuing
`iters` K blocks of four k16 steps into its own accumulators (fence, 4 x wgmma, commit,
wait_group 1: our kernels' pattern), A from registers (RS, as in every swap-AB kernel here) or
from shared memory (SS), B from shared memory. Operands are non-zero fp16 patterns (no timing on
zeros). Prints TFLOP/s per (N, mode, W) and the share of the dense fp16 peak the GPU reports
(clock x SMs x 4096 FLOP per clock per SM).

Usage: python3 studies/wgmma_rate.py [--iters 4000] [--ns 160,168,...] [--compile-only]
--ns times only those N (multiples of 8, 8-256), RS and SS, two warpgroups (the submissions' consumers): whether a
height 8 mod 16 costs its N or the next multiple of 16 (group_gemm v76 against v80, session 71).
(writes and builds a standalone CUDA program with nvcc under .build/experiments/; no torch needed)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # standalone.py beside this file
import standalone  # noqa: E402
# NOTE: 512 threads leave 128 registers a thread, so four warpgroups only with N <= 128.
SHAPES = [(n, mode, w) for n in (64, 96, 128, 256) for mode in ("RS", "SS") for w in (1, 2, 4) if w < 4 or n <= 128]


def shapes_for(ns: list[int] | None) -> list[tuple[int, str, int]]:
    if not ns:
        return SHAPES
    bad = [n for n in ns if n % 8 or not 8 <= n <= 256]
    if bad:
        raise SystemExit(f"--ns: every N a multiple of 8 in 8-256 (wgmma's f16 shapes), got {bad}")
    return [(n, mode, 2) for n in ns for mode in ("RS", "SS")]


def wgmma_fn(n: int, mode: str) -> str:
    regs = n // 2
    d = ", ".join(f"%{i}" for i in range(regs))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    if mode == "RS":
        a = ", ".join(f"%{regs + i}" for i in range(4))
        return f"""
__device__ __forceinline__ void mma_{mode}_{n}(float* d, const uint32_t* a, uint64_t da, uint64_t db) {{
    asm volatile("wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {{{d}}}, {{{a}}}, %{regs + 4}, 1, 1, 1, 0;\\n"
        : {outs} : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}}"""
    return f"""
__device__ __forceinline__ void mma_{mode}_{n}(float* d, const uint32_t* a, uint64_t da, uint64_t db) {{
    asm volatile("wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {{{d}}}, %{regs}, %{regs + 1}, 1, 1, 1, 0, 0;\\n"
        : {outs} : "l"(da), "l"(db));
}}"""


def program(iters: int, shapes: list[tuple[int, str, int]] = SHAPES) -> str:
    fns = "".join(wgmma_fn(n, m) for n in sorted({s[0] for s in shapes}) for m in ("RS", "SS"))
    launches = []
    for n, mode, w in shapes:
        launches.append(f'    run("{mode}", {n}, {w}, rate_kernel<{n}, {int(mode == "RS")}, {w}>, sms, peak);')
    return r"""
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>

constexpr int kIters = """ + str(iters) + r""";
// K-major, 128-byte swizzle, SBO 1024 bytes (as the submissions' descriptors).
__device__ __forceinline__ uint64_t desc(uint32_t smem) {
    return (static_cast<uint64_t>((1024u >> 4) | (1u << 30)) << 32) | ((smem >> 4) & 0x3FFF) | (1u << 16);
}
""" + fns + r"""
template <int N, int RS>
__device__ __forceinline__ void mma(float* d, const uint32_t* a, uint64_t da, uint64_t db) {
""" + "".join(f"    if constexpr (N == {n}) {{ if constexpr (RS) mma_RS_{n}(d, a, da, db); else mma_SS_{n}(d, a, da, db); }}\n"
              for n in sorted({s[0] for s in shapes})) + r"""}

// W warpgroups, each: kIters K blocks of 4 k16 steps into its own accumulators, one K block in flight.
template <int N, int RS, int W>
__global__ void __launch_bounds__(128 * W, 1) rate_kernel(float* sink) {
    extern __shared__ __align__(1024) uint8_t smem[];
    // NOTE: B (N rows x 128 bytes) then one 64-row A tile per warpgroup; filled with fp16 0x3C00 + small
    // variations, so no operand is zero.
    const int bytes = N * 128 + W * 64 * 128;
    for (int i = threadIdx.x * 4; i < bytes; i += blockDim.x * 4)
        *reinterpret_cast<uint32_t*>(smem + i) = 0x3C003C00u | ((i >> 2) & 0x00FF00FFu);
    __syncthreads();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    const int wg = threadIdx.x / 128;
    const uint32_t a_tile = base + N * 128 + wg * 64 * 128;
    float acc[N / 2];
    #pragma unroll
    for (int i = 0; i < N / 2; ++i) acc[i] = 0.f;
    uint32_t a[4] = {0x3C003C01u + threadIdx.x, 0x3C013C00u, 0x3BFF3C00u, 0x3C003BFFu};
    for (int it = 0; it < kIters; ++it) {
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        #pragma unroll
        for (int s = 0; s < 4; ++s) mma<N, RS>(acc, a, desc(a_tile + 32 * s), desc(base + 32 * s));
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    float s = 0.f;
    #pragma unroll
    for (int i = 0; i < N / 2; ++i) s += acc[i];
    if (s == 12345.f) sink[threadIdx.x] = s;  // NOTE: keeps the accumulators live; never true in practice
}

template <typename K>
static void run(const char* mode, int n, int w, K kernel, int sms, double peak) {
    const int smem = n * 128 + w * 64 * 128 + 1024;
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    float* sink = nullptr;
    cudaMalloc(&sink, 4096);
    kernel<<<sms, 128 * w, smem>>>(sink);  // warm-up (clocks, module load)
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    cudaEventRecord(e0);
    const int reps = 3;
    for (int r = 0; r < reps; ++r) kernel<<<sms, 128 * w, smem>>>(sink);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0.f;
    cudaEventElapsedTime(&ms, e0, e1);
    const cudaError_t err = cudaGetLastError();
    const double flops = 2.0 * 64 * n * 64 * double(kIters) * w * sms * reps;
    const double tflops = flops / (ms * 1e-3) / 1e12;
    if (err != cudaSuccess) std::printf("%-3s N=%3d W=%d  error %s\n", mode, n, w, cudaGetErrorString(err));
    else std::printf("%-3s N=%3d W=%d  %7.1f TFLOP/s  %5.1f%% of peak  %6.1f cycles per wgmma per SM\n", mode, n, w, tflops,
                     100.0 * tflops / peak, (ms * 1e-3 / reps) * (peak * 1e12 / (sms * 4096.0)) / (double(kIters) * 4 * w));
    cudaFree(sink);
}

int main() {
    int dev = 0, sms = 0, clock_khz = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, dev);
    const double peak = sms * 4096.0 * clock_khz * 1e3 / 1e12;  // dense fp16 tensor FLOP/s at the reported clock
    std::printf("%s, %d SMs, %.0f MHz: dense fp16 peak %.0f TFLOP/s; %d K blocks of 4 x m64nNk16 per warpgroup\n",
                prop.name, sms, clock_khz / 1e3, peak, kIters);
""" + "\n".join(launches) + r"""
    return 0;
}
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=4000)
    ap.add_argument("--ns", type=lambda t: [int(x) for x in t.split(",") if x.strip()], default=None,
                    help="comma-separated N to time (RS and SS, two warpgroups) instead of the default set")
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    shapes = shapes_for(args.ns)
    return standalone.build_and_run("wgmma_rate", program(args.iters, shapes), compile_only=args.compile_only)


if __name__ == "__main__":
    sys.exit(main())
