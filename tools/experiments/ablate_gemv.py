"""Where does gemv's kernel time go? Time whole versions and v10 with parts removed, kernel alone.

gemv v7-v9 held 7168x16384 at 30-33 µs of kernel (2.1-2.3 TB/s, about half the copy rate) while
bytes in flight per warp, CTAs per SM and a bulk-copy ring changed. This times the gemv kernel
(torch.profiler device time, L2 flushed before every call, variants interleaved round by round)
of whole versions and of one version with parts switched off by preprocessor flags inserted into
its CUDA source, and prints each as a fraction of this GPU's measured copy rate
(harness.roofline: bytes read + written of a 1 GiB device copy):

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

Usage on a GPU machine, repo root (builds run in parallel child processes first):
    python3 tools/experiments/ablate_gemv.py [--variants v8,v10,no_vector,...] [--shapes 0,1,2]
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
STANDALONE = {"flat_read": FLAT_READ}
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

    from harness import config, roofline
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
    ceilings = roofline.ceilings(torch, device)
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
