"""What does a kernel parameter's size cost per launch? (group_gemm and gemm pass a 4 KB Problem)

host_path.py put two launches of group_gemm v16 (each with a ~4 KB by-value parameter) at 15.3 µs
of cudaLaunchKernel, against 5.4 µs for gemv's one launch with a few words. This launches an
empty kernel whose parameter is a struct of 16 B ... 4 KB and prints, per size:
  host     CPU time of one launch (median over back-to-back launches, stream not synchronised)
  idle     start event, one launch, end event, from an idle device (the harness's cold mode)
Usage on a GPU machine: python3 studies/launch_params.py [--repeats 2000]
"""
import argparse
import statistics
import time

SIZES = (16, 256, 1024, 2048, 4000)

CUDA_SRC = "\n".join(
    [
        "#include <cuda_runtime.h>",
        "#include <cstdint>",
    ]
    + [
        f"struct P{n} {{ unsigned char bytes[{n}]; }};\n"
        f"__global__ void k{n}(const __grid_constant__ P{n} p) {{ if (p.bytes[threadIdx.x % {n}] == 255 && threadIdx.x > 4096) asm volatile(\"trap;\"); }}\n"
        f"void launch{n}(int64_t stream) {{ P{n} p{{}}; k{n}<<<1, 32, 0, reinterpret_cast<cudaStream_t>(stream)>>>(p); }}"
        for n in SIZES
    ]
)
CPP_SRC = "\n".join(f"void launch{n}(int64_t stream);" for n in SIZES)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2000)
    args = ap.parse_args()
    import torch
    from torch.utils.cpp_extension import load_inline

    mod = load_inline(name="nvfp4_launch_params", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC,
                      functions=[f"launch{n}" for n in SIZES], extra_cuda_cflags=["-O3"], verbose=False)
    stream = torch.cuda.current_stream().cuda_stream
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{'param bytes':>12} {'host µs':>9} {'idle µs':>9}")
    for n in SIZES:
        launch = getattr(mod, f"launch{n}")
        for _ in range(50):
            launch(stream)
        torch.cuda.synchronize()
        host = []
        for i in range(args.repeats):
            t0 = time.perf_counter()
            launch(stream)
            host.append((time.perf_counter() - t0) * 1e6)
            if i % 64 == 63:  # keep the queue short: a full queue blocks the launch
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        idle = []
        for _ in range(args.repeats // 10):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            launch(stream)
            end.record()
            end.synchronize()
            idle.append(start.elapsed_time(end) * 1e3)
        print(f"{n:>12} {statistics.median(host):9.2f} {statistics.median(idle):9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
