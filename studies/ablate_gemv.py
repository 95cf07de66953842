"""Where does gemv's kernel time go? Time whole versions and v10 with parts removed, kernel alone.

gemv v7-v9 held 7168x16384 at 30-33 µs of kernel (2.1-2.3 TB/s, about half the copy rate) while
bytes in flight per warp, CTAs per SM and a bulk-copy ring changed. This times the gemv kernel
(torch.profiler device time, L2 flushed before every call, variants interleaved round by round)
of whole versions and of one version with parts switched off by preprocessor flags inserted into
its CUDA source, and prints each as a fraction of this GPU's measured copy rate
(harness.ceilings: bytes read + written of a 1 GiB device copy):

  vN            a submission as it is (its output is checked against the reference)
  (the rest patch --base: v11, the first version with every patch target)
  no_prefetch   v10 without its L2 prefetch of the rows' first batch (checked: must stay exact)
  no_vector     v10 without the vector's decode: no vector reads, no shared-memory stores, no
                barriers (the dot products read whatever shared memory holds)
  stream_only   v10's loads and loop with the dot products replaced by an XOR into the accumulator:
                the ceiling of this load pattern with no arithmetic
  stream_bare   stream_only and no_vector together
  with_l2_256   v11's loads with L2::256B added to L1::no_allocate (checked)
  l2_256_only   v11's loads with L2::256B instead of L1::no_allocate (checked)
  a_l2_256      v11 with L2::256B added to A's 16-byte loads only, not to the scale loads (checked)
  stream_values stream_bare without the scale loads: A's values alone
  stream_loads  stream_bare without the shared-memory reads of the vector: global loads alone
  stream_nopf   stream_loads without the L2 prefetch of the first batch
  flat_read     no GEMV at all: the storage of A's values and then of its scales read flat, a warp
                2 KB a step (4 x 512 B), 4 CTAs per SM in a grid stride, ld.global.nc.L1::no_allocate,
                XOR-reduced: read_pattern.py's best pure read of the same bytes, timed on this tool's
                clock (torch.profiler) instead of %globaltimer, so kernels and the read compare
  flat_read_lL_bB[_256]  flat_read with L loads a thread per step and B CTAs per SM (_256: with
                .L2::256B): (1, 8), (2, 8), (4, 8), (8, 4), (8, 2), (16, 2), (4, 4, _256), (8, 4, _256)
  bulk_read     the same storages by cp.async.bulk (TMA 1-D): one thread per CTA, 16 KB chunks into a
                6-stage ring, 2 CTAs per SM, nothing reads the staged bytes: the copy engine's read rate
  bulk_read_4k  bulk_read in 4 KB chunks, 24 stages
  rows_read     v11's order and nothing else: a CTA per 16 rows, a warp's 2 rows 4 x 512 B a batch with
                their scale pairs, XOR-reduced (32 registers, no vector, no shared memory)
  rows_values   rows_read without the scale loads
  rows_scales4  rows_read with a row's 256 scale bytes of a batch in two 4-byte loads a lane (128 B a
                warp request) instead of four 2-byte ones (64 B)
  rows_scales8  the same in one 8-byte load a lane (256 B a request)

Usage on a GPU machine, repo root (builds run in parallel child processes first):
    python3 studies/ablate_gemv.py [--variants v8,v10,no_vector,...] [--shapes 0,1,2]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # ablation.py beside this file
from ablation import kernel_us, load_all, patched, prepare  # noqa: E402

FLAGS = ("ABLATE_NO_PREFETCH", "ABLATE_NO_VECTOR", "ABLATE_STREAM_ONLY", "ABLATE_NO_SCALE_LOADS",
         "ABLATE_NO_SMEM_READS")
VARIANTS = {
    "no_prefetch": ("ABLATE_NO_PREFETCH",),
    "no_vector": ("ABLATE_NO_VECTOR",),
    "stream_only": ("ABLATE_STREAM_ONLY",),
    "stream_bare": ("ABLATE_STREAM_ONLY", "ABLATE_NO_VECTOR"),
    "stream_values": ("ABLATE_STREAM_ONLY", "ABLATE_NO_VECTOR", "ABLATE_NO_SCALE_LOADS"),
    "stream_loads": ("ABLATE_STREAM_ONLY", "ABLATE_NO_VECTOR", "ABLATE_NO_SMEM_READS"),
    "stream_nopf": ("ABLATE_STREAM_ONLY", "ABLATE_NO_VECTOR", "ABLATE_NO_SMEM_READS", "ABLATE_NO_PREFETCH"),
}
# Variants that swap one instruction's text for another (v11's load hint; at v11's first
# measurement it carried both qualifiers, and these two took one away each)
HINT = "ld.global.nc.L1::no_allocate"
REPLACEMENTS = {
    "with_l2_256": [(HINT, HINT + ".L2::256B")],
    "l2_256_only": [(HINT, "ld.global.nc.L2::256B")],
    "a_l2_256": [(HINT + ".v4.u32", HINT + ".L2::256B.v4.u32")],
}
VARIANTS.update({name: () for name in REPLACEMENTS})
EXACT = {"no_prefetch", *REPLACEMENTS}

PATCHES = [
    ("""                    const uint4 v0 = vp[0], v1 = vp[32];
                    const float s0 = vsf[off / 8], s1 = vsf[off / 8 + 1];
""", """#if ABLATE_NO_SMEM_READS
                    const uint4 v0 = make_uint4(off, lane, 0u, 0u), v1 = v0;
                    const float s0 = 1.f, s1 = 1.f;
                    (void)vp;
#else
                    const uint4 v0 = vp[0], v1 = vp[32];
                    const float s0 = vsf[off / 8], s1 = vsf[off / 8 + 1];
#endif
"""),
    ("""            sa[r][j] = ok ? load_once_2(sa_rows[r] + (chunk_offset + off) / 8) : 0u;
""", """#if ABLATE_NO_SCALE_LOADS
            sa[r][j] = 0u;
#else
            sa[r][j] = ok ? load_once_2(sa_rows[r] + (chunk_offset + off) / 8) : 0u;
#endif
"""),
    ("""                    if (lane * 128 < first_bytes) prefetch_l2(a_rows[r] + k0 / 2 + lane * 128);
                    if (lane * 128 < first_bytes / 8) prefetch_l2(sa_rows[r] + k0 / 16 + lane * 128);
""", """#if !ABLATE_NO_PREFETCH
                    if (lane * 128 < first_bytes) prefetch_l2(a_rows[r] + k0 / 2 + lane * 128);
                    if (lane * 128 < first_bytes / 8) prefetch_l2(sa_rows[r] + k0 / 16 + lane * 128);
#endif
"""),
    ("""                __syncthreads();  // NOTE: every warp is done with the old vector
""", """#if !ABLATE_NO_VECTOR
                __syncthreads();  // NOTE: every warp is done with the old vector
"""),
    ("""                __syncthreads();
                cached_l = l;
""", """                __syncthreads();
#endif
                cached_l = l;
"""),
    ("""                        const int d0 = block_dot(raw[r][j].x, raw[r][j].y, v0);
                        const int d1 = block_dot(raw[r][j].z, raw[r][j].w, v1);
                        acc[r] = fmaf(static_cast<float>(d0), e4m3_to_float(sa[r][j]) * s0, acc[r]);
                        acc[r] = fmaf(static_cast<float>(d1), e4m3_to_float(sa[r][j] >> 8) * s1, acc[r]);
""", """#if ABLATE_STREAM_ONLY
                        acc[r] += __int_as_float(((raw[r][j].x ^ raw[r][j].y ^ raw[r][j].z ^ raw[r][j].w ^ sa[r][j] ^
                                                   v0.x ^ v1.y) & 0x007FFFFFu) | 0x3F800000u) * (s0 + s1);
#else
                        const int d0 = block_dot(raw[r][j].x, raw[r][j].y, v0);
                        const int d1 = block_dot(raw[r][j].z, raw[r][j].w, v1);
                        acc[r] = fmaf(static_cast<float>(d0), e4m3_to_float(sa[r][j]) * s0, acc[r]);
                        acc[r] = fmaf(static_cast<float>(d1), e4m3_to_float(sa[r][j] >> 8) * s1, acc[r]);
#endif
"""),
]


def patched_source(text: str, variant: str) -> str:
    for old, new in REPLACEMENTS.get(variant, []):
        if old not in text:
            raise SystemExit(f"{variant}: {old!r} not in the base version")
        text = text.replace(old, new)
    defines = "".join(f"#define {f} {int(f in VARIANTS[variant])}\n" for f in FLAGS)
    return patched(text, PATCHES, defines, variant)


# flat_read: a stand-in submission whose kernel only reads the bytes a GEMV must read. Its name
# contains "gemv" so the profiler rows are picked up like a version's.
FLAT_READ = r'''"""gemv's bytes read flat, no arithmetic (ablate_gemv.py's flat_read; its output is not a GEMV).

Arch: sm_90
"""
import torch
from torch.utils.cpp_extension import load_inline

EXTENSION_NAME = "nvfp4_gemv_flat_read"
FUNCTIONS = ["flat_read"]
CUDA_FLAGS = ["-O3", "-gencode=arch=compute_90,code=[sm_90,compute_90]", "-std=c++17"]

CUDA_SRC = r"""
#include <cstdint>
#include <cuda_runtime.h>

constexpr int kThreads = 256, kLoads = 4, kBlocksPerSM = 4;

__device__ __forceinline__ uint4 load_once_16(const uint8_t* address) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(address));
    return v;
}

// NOTE: two buffers as one range: steps of a warp (2 KB) over values, then over scales; the
// bytes past a buffer's end in its last step are not read.
__global__ void __launch_bounds__(kThreads, kBlocksPerSM)
gemv_flat_read(const uint8_t* __restrict__ values, long long value_bytes, const uint8_t* __restrict__ scales,
               long long scale_bytes, uint32_t* __restrict__ sink) {
    constexpr long long kStep = 32 * 16 * kLoads;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const long long value_steps = (value_bytes + kStep - 1) / kStep, steps = value_steps + (scale_bytes + kStep - 1) / kStep;
    uint32_t acc = 0;
    for (long long w = (long long)blockIdx.x * (kThreads / 32) + warp; w < steps; w += (long long)gridDim.x * (kThreads / 32)) {
        const bool in_values = w < value_steps;
        const uint8_t* base = in_values ? values + w * kStep : scales + (w - value_steps) * kStep;
        const long long left = in_values ? value_bytes - w * kStep : scale_bytes - (w - value_steps) * kStep;
        uint4 v[kLoads];
        #pragma unroll
        for (int j = 0; j < kLoads; ++j)
            v[j] = j * 512 + lane * 16 + 16 <= left ? load_once_16(base + j * 512 + lane * 16) : make_uint4(0u, 0u, 0u, 0u);
        #pragma unroll
        for (int j = 0; j < kLoads; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
    }
    if (acc == 0x12345678u) sink[0] = acc;  // NOTE: keeps the loads live; (almost) never true
}

int launch_flat_read(const void* values, long long value_bytes, const void* scales, long long scale_bytes, void* sink,
                     int64_t stream) {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    gemv_flat_read<<<sms * kBlocksPerSM, kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
        static_cast<const uint8_t*>(values), value_bytes, static_cast<const uint8_t*>(scales), scale_bytes,
        static_cast<uint32_t*>(sink));
    return static_cast<int>(cudaGetLastError());
}
"""

CPP_SRC = r"""
#include <c10/cuda/CUDAStream.h>
int launch_flat_read(const void* values, long long value_bytes, const void* scales, long long scale_bytes, void* sink,
                     int64_t stream);
torch::Tensor flat_read(const torch::Tensor& a, const torch::Tensor& sfa, const torch::Tensor& c) {
    // NOTE: the whole storage of each, as laid out in memory (the competition's tensors are dense)
    const long long value_bytes = a.storage().nbytes(), scale_bytes = sfa.storage().nbytes();
    TORCH_CHECK(value_bytes % 16 == 0 && scale_bytes % 16 == 0, "flat_read: storages of whole 16-byte pieces");
    const int64_t stream = reinterpret_cast<int64_t>(c10::cuda::getCurrentCUDAStream().stream());
    const int err = launch_flat_read(a.storage().data(), value_bytes, sfa.storage().data(), scale_bytes,
                                     c.data_ptr(), stream);
    TORCH_CHECK(err == 0, "gemv_flat_read launch failed with CUDA error ", err);
    return c;
}
"""

_module = load_inline(name=EXTENSION_NAME, cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=FUNCTIONS,
                      extra_cuda_cflags=CUDA_FLAGS, verbose=False)


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    return _module.flat_read(a, sfa, c)
'''
# rows_read / rows_values: v11's order with nothing else (no vector, no shared memory, no prefetch,
# 32-register kernel): a CTA of 8 warps per 16 rows, a warp's 2 rows read 4 x 512 B of each per batch
# with their scale pairs (rows_read) or without (rows_values), XOR-reduced. Between flat_read and
# stream_loads: what v11's order costs apart from the rest of v11's kernel.
ROWS_READ = FLAT_READ.replace("flat_read", "rows_read").replace("read flat, no arithmetic", "read in v11's order, no arithmetic")
ROWS_READ = ROWS_READ[:ROWS_READ.index("// NOTE: two buffers as one range")] + r'''template <int kScaleBytes>  // bytes of scales a lane loads at once; 0: no scales
__global__ void __launch_bounds__(kThreads, kBlocksPerSM)
gemv_rows_read(const uint8_t* __restrict__ values, const uint8_t* __restrict__ scales, int rows, int row_bytes,
               uint32_t* __restrict__ sink) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    uint32_t acc = 0;
    const int row0 = blockIdx.x * 16 + warp * 2;
    for (int base = 0; base < row_bytes; base += 512 * kLoads) {
        uint4 v[2][kLoads];
        uint32_t sa[2][kLoads];
        #pragma unroll
        for (int j = 0; j < kLoads; ++j)
            #pragma unroll
            for (int r = 0; r < 2; ++r) {
                const int off = base + (j * 32 + lane) * 16;
                const bool ok = off < row_bytes && row0 + r < rows;
                const long long at = (long long)(row0 + r) * row_bytes + off;
                v[r][j] = ok ? load_once_16(values + at) : make_uint4(0u, 0u, 0u, 0u);
                uint16_t s = 0;
                if (kScaleBytes == 2 && ok) asm volatile("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(s) : "l"(scales + at / 8));
                sa[r][j] = s;
            }
        // NOTE: wider scale loads: a row's 256 scale bytes of the batch in 2 x 128 B (4 bytes a lane) or
        // 1 x 256 B (8 bytes a lane) warp requests instead of 4 x 64 B
        #pragma unroll
        for (int r = 0; r < 2; ++r) {
            const long long at = ((long long)(row0 + r) * row_bytes + base) / 8;
            const int left = (row_bytes - base) / 8;
            if (row0 + r >= rows) continue;
            if (kScaleBytes == 4) {
                #pragma unroll
                for (int h = 0; h < 2; ++h) {
                    uint32_t w = 0;
                    if (h * 128 + lane * 4 < left) asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(w) : "l"(scales + at + h * 128 + lane * 4));
                    sa[r][h] ^= w;
                }
            } else if (kScaleBytes == 8) {
                uint32_t w0 = 0, w1 = 0;
                if (lane * 8 < left) asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(w0), "=r"(w1) : "l"(scales + at + lane * 8));
                sa[r][0] ^= w0; sa[r][1] ^= w1;
            }
        }
        #pragma unroll
        for (int j = 0; j < kLoads; ++j)
            #pragma unroll
            for (int r = 0; r < 2; ++r) acc ^= v[r][j].x ^ v[r][j].y ^ v[r][j].z ^ v[r][j].w ^ sa[r][j];
    }
    if (acc == 0x12345678u) sink[0] = acc;  // NOTE: keeps the loads live; (almost) never true
}

int launch_rows_read(const void* values, const void* scales, int rows, int row_bytes, int scale_bytes, void* sink,
                     int64_t stream) {
    const int ctas = (rows + 15) / 16;
    auto* v = static_cast<const uint8_t*>(values);
    auto* s = static_cast<const uint8_t*>(scales);
    auto* out = static_cast<uint32_t*>(sink);
    auto* st = reinterpret_cast<cudaStream_t>(stream);
    if (scale_bytes == 2) gemv_rows_read<2><<<ctas, kThreads, 0, st>>>(v, s, rows, row_bytes, out);
    else if (scale_bytes == 4) gemv_rows_read<4><<<ctas, kThreads, 0, st>>>(v, s, rows, row_bytes, out);
    else if (scale_bytes == 8) gemv_rows_read<8><<<ctas, kThreads, 0, st>>>(v, s, rows, row_bytes, out);
    else gemv_rows_read<0><<<ctas, kThreads, 0, st>>>(v, s, rows, row_bytes, out);
    return static_cast<int>(cudaGetLastError());
}
"""

CPP_SRC = r"""
#include <c10/cuda/CUDAStream.h>
int launch_rows_read(const void* values, const void* scales, int rows, int row_bytes, int scale_bytes, void* sink,
                     int64_t stream);
torch::Tensor rows_read(const torch::Tensor& a, const torch::Tensor& sfa, const torch::Tensor& c, int64_t scale_bytes) {
    // NOTE: the competition's a is dense: M x L rows of K / 2 bytes, sfa M x L rows of K / 16
    const int row_bytes = a.size(1), rows = a.size(0) * a.size(2);
    TORCH_CHECK(a.storage().nbytes() == (size_t)rows * row_bytes && sfa.storage().nbytes() == (size_t)rows * row_bytes / 8,
                "rows_read: dense a and sfa");
    const int64_t stream = reinterpret_cast<int64_t>(c10::cuda::getCurrentCUDAStream().stream());
    const int err = launch_rows_read(a.storage().data(), sfa.storage().data(), rows, row_bytes, scale_bytes, c.data_ptr(), stream);
    TORCH_CHECK(err == 0, "gemv_rows_read launch failed with CUDA error ", err);
    return c;
}
"""

_module = load_inline(name=EXTENSION_NAME, cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=FUNCTIONS,
                      extra_cuda_cflags=CUDA_FLAGS, verbose=False)
SCALE_BYTES = 2  # a lane's scale load: 2 (v11), 4, 8; 0: values alone


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    return _module.rows_read(a, sfa, c, SCALE_BYTES)
'''

def _rows_read(scale_bytes: int, name: str) -> str:
    return ROWS_READ.replace("SCALE_BYTES = 2 ", f"SCALE_BYTES = {scale_bytes} ").replace("nvfp4_gemv_rows_read", f"nvfp4_gemv_{name}")


# bulk_read: the same storages by the copy engine: one thread per CTA streams 16 KB chunks by
# cp.async.bulk into a 6-stage shared-memory ring (2 CTAs per SM, 192 KB in flight per SM), waiting
# on a stage's full barrier before it refills it; nothing reads the staged bytes.
BULK_READ = FLAT_READ.replace("flat_read", "bulk_read").replace("read flat, no arithmetic", "read by bulk copies, no arithmetic")
BULK_READ = BULK_READ[:BULK_READ.index("constexpr int kThreads = 256")] + r'''constexpr int kStageBytes = 16384, kStages = 6, kBlocksPerSM = 2;
constexpr int kRingBytes = kStageBytes * kStages;

__device__ __forceinline__ void wait_parity(uint32_t barrier, uint32_t parity) {
    asm volatile("{\n .reg .pred p;\n WAIT:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT;\n}\n"
                 :: "r"(barrier), "r"(parity) : "memory");
}

__global__ void __launch_bounds__(32, kBlocksPerSM)
gemv_bulk_read(const uint8_t* __restrict__ values, long long value_bytes, const uint8_t* __restrict__ scales,
               long long scale_bytes, uint32_t* __restrict__ sink) {
    extern __shared__ __align__(128) uint8_t ring[];
    __shared__ __align__(8) uint64_t full[kStages];
    if (threadIdx.x != 0) return;
    const uint32_t ring_at = static_cast<uint32_t>(__cvta_generic_to_shared(ring));
    const uint32_t full_at = static_cast<uint32_t>(__cvta_generic_to_shared(full));
    for (int s = 0; s < kStages; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(full_at + 8 * s));
    // NOTE: the barriers' initialisation must be visible to the async proxy before a copy completes on them
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    const long long value_chunks = (value_bytes + kStageBytes - 1) / kStageBytes;
    const long long chunks = value_chunks + (scale_bytes + kStageBytes - 1) / kStageBytes;
    long long issued = 0;
    for (long long c = blockIdx.x; c < chunks; c += gridDim.x, ++issued) {
        const int s = static_cast<int>(issued % kStages);
        if (issued >= kStages) wait_parity(full_at + 8 * s, static_cast<uint32_t>((issued / kStages - 1) & 1));
        const bool in_values = c < value_chunks;
        const long long at = (in_values ? c : c - value_chunks) * kStageBytes;
        const long long left = (in_values ? value_bytes : scale_bytes) - at;
        const uint32_t bytes = static_cast<uint32_t>(left < kStageBytes ? left : kStageBytes);
        const uint8_t* src = (in_values ? values : scales) + at;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(full_at + 8 * s), "r"(bytes) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(ring_at + s * kStageBytes), "l"(src), "r"(bytes), "r"(full_at + 8 * s) : "memory");
    }
    // NOTE: every copy lands before the CTA ends: wait on the last use of each stage
    for (long long i = issued - kStages < 0 ? 0 : issued - kStages; i < issued; ++i)
        wait_parity(full_at + 8 * static_cast<int>(i % kStages), static_cast<uint32_t>((i / kStages) & 1));
    if (ring[0] == 0x5A && ring[kRingBytes - 1] == 0xA5 && value_bytes == 3) sink[0] = 1;  // NOTE: (almost) never true
}

int launch_bulk_read(const void* values, long long value_bytes, const void* scales, long long scale_bytes, void* sink,
                     int64_t stream) {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    const cudaError_t err = cudaFuncSetAttribute(gemv_bulk_read, cudaFuncAttributeMaxDynamicSharedMemorySize, kRingBytes);
    if (err != cudaSuccess) return static_cast<int>(err);
    gemv_bulk_read<<<sms * kBlocksPerSM, 32, kRingBytes, reinterpret_cast<cudaStream_t>(stream)>>>(
        static_cast<const uint8_t*>(values), value_bytes, static_cast<const uint8_t*>(scales), scale_bytes,
        static_cast<uint32_t*>(sink));
    return static_cast<int>(cudaGetLastError());
}
"""
''' + BULK_READ[BULK_READ.index("\nCPP_SRC = r"):]
BULK_READ_4K = BULK_READ.replace("kStageBytes = 16384, kStages = 6", "kStageBytes = 4096, kStages = 24").replace(
    "nvfp4_gemv_bulk_read", "nvfp4_gemv_bulk_read_4k")


def _flat_read(loads: int, blocks_per_sm: int, l2_256: bool = False) -> str:
    """flat_read with another number of 16-byte loads in flight a thread, CTAs per SM or an L2 hint."""
    name = f"flat_read_l{loads}_b{blocks_per_sm}" + ("_256" if l2_256 else "")
    text = FLAT_READ.replace("kLoads = 4, kBlocksPerSM = 4", f"kLoads = {loads}, kBlocksPerSM = {blocks_per_sm}")
    if l2_256:
        text = text.replace("ld.global.nc.L1::no_allocate.v4", "ld.global.nc.L1::no_allocate.L2::256B.v4")
    return text.replace("flat_read", name).replace(f"{name}; its output", "flat_read's sweep; its output")


# NOTE: the sweep asks whether flat_read's 4 loads x 4 CTAs was a poor choice of read, not a
# property of the bytes: 32-128 KB in flight per SM, with and without the 256-byte L2 fetch.
FLAT_READ_SWEEP = {f"flat_read_l{l}_b{b}" + ("_256" if h else ""): _flat_read(l, b, h)
                   for l, b, h in ((1, 8, False), (2, 8, False), (4, 8, False), (8, 4, False), (8, 2, False),
                                   (16, 2, False), (4, 4, True), (8, 4, True))}
STANDALONE = {**FLAT_READ_SWEEP, "flat_read": FLAT_READ, "bulk_read": BULK_READ, "bulk_read_4k": BULK_READ_4K, "rows_read": ROWS_READ, "rows_values": _rows_read(0, "rows_values"),
              "rows_scales4": _rows_read(4, "rows_scales4"), "rows_scales8": _rows_read(8, "rows_scales8")}
PATCHED = tuple(VARIANTS)  # the variants made by patching --base
VARIANTS.update({name: () for name in STANDALONE})


def variant_path(variant: str, base: str, folder: Path) -> Path:
    from harness.submissions import resolve
    if variant not in VARIANTS:
        return resolve("gemv", variant).path
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"submission_{base}_{variant}.py"
    text = STANDALONE[variant] if variant in STANDALONE else patched_source(resolve("gemv", base).path.read_text(), variant)
    path.write_text(text)
    return path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="v11", help="the version the variants patch (v11 or later)")
    ap.add_argument("--variants", default="v10,v11,with_l2_256,l2_256_only,stream_only,stream_bare")
    ap.add_argument("--shapes", default="0,1,2", help="benchmark shape indices, comma-separated")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=10, help="calls per variant per round")
    ap.add_argument("--emit", help="write the patched sources here and stop (no CUDA needed)")
    ap.add_argument("--build-only", action="store_true")
    args = ap.parse_args()

    from harness import ceilings as ceilings_mod, config
    from reference import problem_module

    variants = args.variants.split(",")
    folder = Path(args.emit) if args.emit else Path("/tmp/nvfp4-ablate") / "gemv"
    paths = {v: variant_path(v, args.base, folder) for v in variants}
    done = prepare(paths, emit=bool(args.emit), build_only=args.build_only,
                   child_args=lambda v: [__file__, "--base", args.base, "--variants", v, "--build-only"])
    if done is not None:
        return done

    import torch
    kernels = load_all(torch, paths)
    mod = problem_module("gemv")
    device = torch.cuda.get_device_name()
    ceilings = ceilings_mod.of_gpu(torch, device)
    table = []
    for shape in (int(s) for s in args.shapes.split(",")):
        params = dict(config.load()["gemv"].benchmarks[shape].params)
        seed = params.pop("seed")
        data = mod.generate_input(**params, seed=seed + 7, dist="competition")
        checks = []
        for v in variants:
            if v not in VARIANTS or v in EXACT:
                ok, msg = mod.check(data, kernels[v](data))
                checks.append(f"{v} {'ok' if ok else 'FAILED: ' + msg}")
        torch.cuda.synchronize()
        samples = {v: [] for v in variants}
        for _ in range(args.rounds):
            for v in variants:
                samples[v] += kernel_us(torch, kernels[v], data, args.calls, {"gemv": "gemv"})["gemv"]
        floor = mod.bytes_moved(**params) / (ceilings["copy_tbps"] * 1e12) * 1e6
        for v in variants:
            mean = statistics.fmean(samples[v]) if samples[v] else float("nan")
            table.append((shape, params, v, mean, min(samples[v], default=float("nan")), floor / mean))
        print(f"shape {shape} {params}: checks: {'; '.join(checks)}", flush=True)
    print(f"\ngemv kernels, {device}, torch.profiler device time, L2 flushed before each call, "
          f"{args.rounds} rounds x {args.calls} calls; copy rate {ceilings['copy_tbps']:.2f} TB/s "
          f"({ceilings.get('source')})")
    print(f"{'shape':<16} {'variant':<12} {'kernel µs':>9} {'(min)':>7} {'of copy rate':>12}")
    for shape, params, v, mean, lo, frac in table:
        name = "x".join(str(params[k]) for k in ("m", "k", "l"))
        print(f"{name:<16} {v:<12} {mean:9.1f} {lo:7.1f} {frac:11.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
