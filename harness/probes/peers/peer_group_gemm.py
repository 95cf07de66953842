"""group_gemm's peer: cuBLAS bf16 on operands already dequantised.

Version: peer
Parent: none
Change: not a version of the lineage: the yardstick its versions are measured against (issue 39),
run beside any of them (`nvfp4 compare group_gemm peer vN`): one matmul per group. How it works, and
why the dequantisation is never timed: harness/probes/peer.py.
Arch: any
"""

from harness.probes.peer import make_kernel

custom_kernel = make_kernel("group_gemm")
