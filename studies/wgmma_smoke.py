"""Does our wgmma recipe hold on the GPU? (groundwork for the swap-AB wgmma rungs of issues 5-7)

One warpgroup computes D[64][N] = A[64][64] . B[N][64]^T with wgmma.mma_async m64nNk16
f32.f16.f16: A from registers in the mma.sync m16n8k16 fragment layout, B from shared memory in
the 128-byte-swizzled K-major layout (16-byte chunk c of row n stored at chunk c ^ (n % 8), rows
of 128 bytes, 8-row groups 1024 bytes apart: SBO = 1024), the descriptor's start address moved
32 bytes per k16 step. Cases: N = 64 and 256 on small integers (exact), and A made of fp16
*subnormals* (integers x 2^-20): whether the tensor cores keep them decides if a dequantiser may
skip its x 2^14 rescale. Exact comparison with a double-precision CPU product.

Usage: python3 studies/wgmma_smoke.py [--compile-only]  (writes and builds a standalone
CUDA program with nvcc under .build/experiments/; no torch needed)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # standalone.py beside this file
import standalone  # noqa: E402


def wgmma_wrapper(n: int) -> str:
    regs = n // 2
    d = ", ".join(f"%{i}" for i in range(regs))
    a = ", ".join(f"%{regs + i}" for i in range(4))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    return f"""
__device__ __forceinline__ void wgmma_m64n{n}(float* d, const uint32_t* a, uint64_t desc_b) {{
    asm volatile(
        "{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 5}, 0;\\n"
        "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {{{d}}}, {{{a}}}, %{regs + 4}, p, 1, 1, 0;\\n}}\\n"
        : {outs}
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}}
"""


SOURCE = r"""
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

constexpr int M = 64, K = 64;

// NOTE: K-major, 128-byte swizzle: LBO is unused (1), SBO = 1024 bytes between 8-row groups,
// layout type 1 in bits 62..63; addresses in units of 16 bytes.
__device__ __forceinline__ uint64_t desc_sw128(const void* smem) {
    const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    return static_cast<uint64_t>((addr >> 4) & 0x3FFF) | (1ull << 16) | (static_cast<uint64_t>(1024 >> 4) << 32) |
           (1ull << 62);
}

WRAPPERS

template <int N>
__global__ void __launch_bounds__(128) smoke(const __half* A, const __half* B, float* D, int* misaligned) {
    extern __shared__ uint8_t raw[];
    __half* b_smem = reinterpret_cast<__half*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
    const int t = threadIdx.x;
    if (t == 0 && (static_cast<uint32_t>(__cvta_generic_to_shared(b_smem)) & 1023)) *misaligned = 1;
    for (int i = t; i < N * 8; i += 128) {
        const int n = i / 8, c = i % 8;
        reinterpret_cast<uint4*>(b_smem + n * K)[c ^ (n % 8)] = reinterpret_cast<const uint4*>(B + n * K)[c];
    }
    // NOTE: generic-proxy stores read next by the tensor cores (async proxy): fence, then barrier.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    const int warp = t / 32, lane = t % 32, gid = lane / 4, tig = lane % 4;
    const int r0 = warp * 16 + gid;
    uint32_t a[K / 16][4];
    #pragma unroll
    for (int ks = 0; ks < K / 16; ++ks) {
        const int k0 = ks * 16 + tig * 2;
        a[ks][0] = *reinterpret_cast<const uint32_t*>(A + r0 * K + k0);
        a[ks][1] = *reinterpret_cast<const uint32_t*>(A + (r0 + 8) * K + k0);
        a[ks][2] = *reinterpret_cast<const uint32_t*>(A + r0 * K + k0 + 8);
        a[ks][3] = *reinterpret_cast<const uint32_t*>(A + (r0 + 8) * K + k0 + 8);
    }
    float d[N / 2];
    #pragma unroll
    for (int i = 0; i < N / 2; ++i) d[i] = 0.f;
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    #pragma unroll
    for (int ks = 0; ks < K / 16; ++ks) WGMMA_N(d, a[ks], desc_sw128(b_smem + ks * 16));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    #pragma unroll
    for (int j = 0; j < N / 8; ++j) {
        const int col = 8 * j + 2 * tig;
        D[r0 * N + col] = d[4 * j];
        D[r0 * N + col + 1] = d[4 * j + 1];
        D[(r0 + 8) * N + col] = d[4 * j + 2];
        D[(r0 + 8) * N + col + 1] = d[4 * j + 3];
    }
}

template <int N>
int run(const char* name, double a_unit) {
    std::vector<__half> a(M * K), b(N * K);
    std::vector<double> ad(M * K), bd(N * K);
    srand(1234 + N);
    for (int i = 0; i < M * K; ++i) { ad[i] = ((rand() % 15) - 7) * a_unit; a[i] = __double2half(ad[i]); }
    for (int i = 0; i < N * K; ++i) { bd[i] = (rand() % 15) - 7; b[i] = __double2half(bd[i]); }
    __half *da, *db; float* dd; int* dmis;
    cudaMalloc(&da, a.size() * 2); cudaMalloc(&db, b.size() * 2); cudaMalloc(&dd, M * N * 4); cudaMalloc(&dmis, 4);
    cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice);
    cudaMemset(dd, 0xFF, M * N * 4);  // NaN: a value the kernel does not write shows up
    cudaMemset(dmis, 0, 4);
    const int smem = N * K * 2 + 1024;
    cudaFuncSetAttribute(smoke<N>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    smoke<N><<<1, 128, smem>>>(da, db, dd, dmis);
    cudaError_t err = cudaDeviceSynchronize();
    std::vector<float> d(M * N);
    int mis = 0;
    cudaMemcpy(d.data(), dd, M * N * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(&mis, dmis, 4, cudaMemcpyDeviceToHost);
    int bad = 0; double worst = 0;
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            double ref = 0;
            for (int k = 0; k < K; ++k) ref += ad[m * K + k] * bd[n * K + k];
            if (!(d[m * N + n] == ref)) { ++bad; worst = fmax(worst, fabs(d[m * N + n] - ref)); }
        }
    printf("%-28s N=%3d  %s  mismatches %d/%d (worst abs err %g)%s\n", name, N,
           err == cudaSuccess && bad == 0 ? "EXACT" : "WRONG", bad, M * N, worst,
           err != cudaSuccess ? cudaGetErrorString(err) : (mis ? "  smem not 1024-aligned" : ""));
    cudaFree(da); cudaFree(db); cudaFree(dd); cudaFree(dmis);
    return bad != 0 || err != cudaSuccess;
}

int main() {
    int fails = 0;
    fails += run<64>("small integers", 1.0);
    fails += run<256>("small integers", 1.0);
    fails += run<64>("A fp16 subnormals (x2^-20)", std::ldexp(1.0, -20));
    fails += run<256>("A fp16 subnormals (x2^-20)", std::ldexp(1.0, -20));
    return fails ? 1 : 0;
}
"""


def source() -> str:
    wrappers = "".join(wgmma_wrapper(n) for n in (64, 256))
    dispatch = "template <int N> __device__ __forceinline__ void WGMMA_N_impl(float* d, const uint32_t* a, uint64_t b);\n"
    dispatch += "".join(f"template <> __device__ __forceinline__ void WGMMA_N_impl<{n}>(float* d, const uint32_t* a, uint64_t b) "
                        f"{{ wgmma_m64n{n}(d, a, b); }}\n" for n in (64, 256))
    return SOURCE.replace("WRAPPERS", wrappers + dispatch).replace("WGMMA_N(", "WGMMA_N_impl<N>(")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    return standalone.build_and_run("wgmma_smoke", source(), compile_only=args.compile_only, opt="-O2")


if __name__ == "__main__":
    sys.exit(main())
