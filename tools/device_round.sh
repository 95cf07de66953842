#!/usr/bin/env bash
# One device call for several new versions: build them in parallel, then per version (one GPU
# process at a time) run tools/try_version.sh's steps; everything each version wrote goes into
# $OUT/round.tgz (the device returns at most 8 files) and the build cache into $OUT/ext.tgz.
# Usage (device machine, repo root): STEPS=check|time|all bash tools/device_round.sh P:V:PARENT ...
# STEPS=check builds and tests only; time compares with the parent and records; all does both.
set -u -o pipefail
OUT="${OUT:-/tmp/nvfp4-out}"; mkdir -p "$OUT"
export NVFP4_EXTENSIONS_DIR="${NVFP4_EXTENSIONS_DIR:-$PWD/.build/torch_extensions}"
work=/tmp/nvfp4-round; rm -rf "$work"; mkdir -p "$work"
t0=$(date +%s)
for spec in "$@"; do  # NOTE: builds are CPU-bound (nvcc), so they overlap; GPU steps below do not
  IFS=: read -r p v _ <<< "$spec"
  python3 -m harness build "$p" "$v" > "$work/build-$p-$v.log" 2>&1 &
done
wait
echo "[$(( $(date +%s) - t0 )) s] builds done"
for spec in "$@"; do
  IFS=: read -r p v parent <<< "$spec"
  OUT="$work/$p-$v" bash tools/try_version.sh "$p" "$v" "$parent" > /dev/null 2>&1
  echo "== $p $v (parent $parent)"; cat "$work/$p-$v/summary.txt"
done | tee "$work/summary.txt"
tar czf "$OUT/round.tgz" -C "$work" .
tar czf "$OUT/ext.tgz" -C .build torch_extensions
cp "$work/summary.txt" "$OUT/summary.txt"
