#!/usr/bin/env bash
# session 71, call 3: the height question (wgmma rate by N; v76 against v80 on B by group) and the figures
export NVFP4_EXTENSIONS_DIR=$PWD/.build/torch_extensions
export NVFP4_GIT_COMMIT=${NVFP4_GIT_COMMIT:?}
(
  CUDA_VISIBLE_DEVICES=0 python3 -m harness probe marks group_gemm v76 v80 --shapes benchmarks:1 --calls 20 --ctas 0-55,56-111,168-223,336-391,392-447 > $OUT/marks_b.txt 2>&1
  CUDA_VISIBLE_DEVICES=0 python3 -m harness probe host group_gemm v76 > $OUT/host.txt 2>&1
) &
(
  CUDA_VISIBLE_DEVICES=1 python3 studies/wgmma_rate.py --ns 96,104,112,120,128,160,168,176,184,192,200,208,216,224,232,240,248,256 > $OUT/wgmma.txt 2>&1
  CUDA_VISIBLE_DEVICES=1 python3 -m harness compare group_gemm peer v76 > $OUT/peer.txt 2>&1
) &
wait
for f in wgmma marks_b host peer; do echo "=== $f"; grep -v "^\[\|^\.\.\." $OUT/$f.txt | grep -v "ptxas\|bytes stack" | tail -60; done
