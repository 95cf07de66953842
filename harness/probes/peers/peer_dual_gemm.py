"""dual_gemm's peer: cuBLAS on operands already dequantised, fp32 products, then the epilogue.

Version: peer
Parent: none
Change: not a version of the lineage: the yardstick its versions are measured against (issues 39,
45), run beside any of them (`nvfp4 compare dual_gemm peer vN`): one batched matmul of A with [B1;
B2] writing fp32, then silu(gate) * up rounded once into c. The fp16-output way the other problems'
peers take misses the tolerance here (gate and up rounded before the epilogue), so this is the same
as `peer-fp32`. How it works: harness/probes/peer.py.
Arch: any
"""

from harness.probes.peer import make_kernel

custom_kernel = make_kernel("dual_gemm")
