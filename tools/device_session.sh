#!/usr/bin/env bash
# One GPU-machine session: GPU tests, then for each problem the correctness test of every version
# and the recorded table (with its plot). Everything lands under $OUT.
# Usage (device machine, repo root): bash tools/device_session.sh PROBLEM...
# Env: NVFP4_GIT_COMMIT / NVFP4_GIT_DIRTY (the copied tree has no .git), TEST_ARGS, TABLE_ARGS,
#      GPU_TESTS=0 to skip pytest -m gpu.
set -u -o pipefail
OUT="${OUT:-/tmp/nvfp4-out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NVFP4_LEADERBOARD="$OUT/leaderboard.csv" NVFP4_BUILD_DIR="${NVFP4_BUILD_DIR:-.build}" COLUMNS=200
log="$OUT/session.log"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
} 2>&1 | tee -a "$log"
rc=0
if [ "${GPU_TESTS:-1}" = 1 ]; then
  python3 -m pytest -q -m gpu tests 2>&1 | tee -a "$log" | tail -3 || rc=1
fi
for p in "$@"; do
  for f in submissions/"$p"/submission_v*.py submissions/"$p"/attic/submission_v*.py; do  # the attic's ✗ versions too
    [ -e "$f" ] || continue
    v=$(basename "$f" .py); v=${v#submission_}
    python3 -m harness test "$p" "$v" ${TEST_ARGS:-} 2>&1 | tee -a "$log" | tail -2 || rc=1
  done
done
for p in "$@"; do
  python3 -m harness table "$p" --record --plot "$OUT/$p.png" ${TABLE_ARGS:-} 2>&1 | tee -a "$log" || rc=1
done
if [ -d "$OUT/leaderboard_runs" ]; then  # the sidecars travel back as one file
  tar czf "$OUT/leaderboard_runs.tgz" -C "$OUT" leaderboard_runs && rm -rf "$OUT/leaderboard_runs"
fi
exit $rc
