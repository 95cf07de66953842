"""gemm's earlier peer: cuBLAS bf16 writing fp32, rounded into c by a second kernel.

Version: peer-fp32
Parent: none
Change: not a version of the lineage: the peer before issue 45's fair one (`peer`), kept to report
the two side by side (`nvfp4 compare gemm peer-fp32 peer`): one batched matmul A @ B^T, bf16
operands, an fp32 output, then one elementwise kernel into c. How it works: harness/probes/peer.py.
Arch: any
"""

from harness.probes.peer import make_kernel

custom_kernel = make_kernel("gemm", "fp32")
