#!/usr/bin/env bash
# One device call for several new versions: build them in parallel, then per version (one GPU
# process at a time) run tools/try_version.sh's steps; everything each version wrote goes into
# $OUT/round.tgz (the device returns at most 8 files) and the build cache into $OUT/ext.tgz.
# Usage (device machine, repo root): STEPS=check|time|record|all bash tools/device_round.sh P:V:PARENT[:STEPS] ...
# STEPS=check builds and tests only; time compares with the parent and records; record only
# records; all does check and time. A spec's own STEPS overrides the variable for that version.
# The archives are rewritten after every version, so a call stopped at its limit keeps the rest.
set -u -o pipefail
# NOTE: the device's copy of the tree may carry a stale .git (rows recorded there once named the
# session's first commit, dirty); every recorded row must name the commit that actually ran.
if [ -z "${NVFP4_GIT_COMMIT:-}" ]; then echo "set NVFP4_GIT_COMMIT to the commit being run (git rev-parse --short HEAD here)" >&2; exit 2; fi
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
tar czf "$OUT/ext.tgz" -C .build torch_extensions
for spec in "$@"; do
  IFS=: read -r p v parent steps <<< "$spec"
  STEPS="${steps:-${STEPS:-all}}" OUT="$work/$p-$v" bash tools/try_version.sh "$p" "$v" "$parent" > /dev/null 2>&1
  { echo "== $p $v (parent $parent)"; cat "$work/$p-$v/summary.txt"; } | tee -a "$work/summary.txt"
  tar czf "$OUT/round.tgz" -C "$work" . && cp "$work/summary.txt" "$OUT/summary.txt"
done
