"""group_gemm's peer: cuBLAS on operands already dequantised, writing the fp16 output itself.

Version: peer
Parent: none
Change: not a version of the lineage: the yardstick its versions are measured against (issues 39,
45), run beside any of them (`nvfp4 compare group_gemm peer vN`): one matmul per group, fp16
operands, fp32 sums, the GEMM writing c. How it works, and why the dequantisation is never timed:
harness/probes/peer.py.
Arch: any
"""

from harness.probes.peer import make_kernel

custom_kernel = make_kernel("group_gemm")
