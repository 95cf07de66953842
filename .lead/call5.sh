#!/usr/bin/env bash
# session 71, call 5: probe marks' plain-build timing on the device (v76 v80, v76 v82 on B), D's host path
export NVFP4_EXTENSIONS_DIR=$PWD/.build/torch_extensions
( CUDA_VISIBLE_DEVICES=0 python3 -m harness probe marks group_gemm v76 v80 --shapes benchmarks:1 --calls 10 > $OUT/m80.txt 2>&1
  CUDA_VISIBLE_DEVICES=0 python3 -m harness probe host group_gemm v76 --shapes benchmarks:3 > $OUT/hostD.txt 2>&1 ) &
( sleep 20; CUDA_VISIBLE_DEVICES=1 python3 -m harness probe marks group_gemm v76 v82 --shapes benchmarks:1 --calls 10 > $OUT/m82.txt 2>&1 ) &
wait
for f in m80 m82 hostD; do echo "=== $f"; grep -v "^\.\.\." $OUT/$f.txt | grep -v "prepass\|deep ring\|UserWarning\|_warn_once" | tail -30; done
