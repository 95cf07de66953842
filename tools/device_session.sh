#!/usr/bin/env bash
# One GPU-machine session: tests and the v0..vN table for the given problems, logs under $OUT.
# Usage (on the device machine, repo root): bash tools/device_session.sh PROBLEM... 
# Env: NVFP4_GIT_COMMIT / NVFP4_GIT_DIRTY (the tree there has no .git), TABLE_ARGS, TEST_ARGS.
set -u
export PYTHONUNBUFFERED=1 NVFP4_LEADERBOARD="${OUT:-/tmp}/leaderboard.csv" NVFP4_BUILD_DIR="${NVFP4_BUILD_DIR:-.build}"
export COLUMNS=200
log="${OUT:-/tmp}/session.log"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))"
} 2>&1 | tee -a "$log"
rc=0
for p in "$@"; do
  for f in submissions/"$p"/submission_v*.py; do
    python3 -m harness test "$p" "$(basename "$f" .py | sed 's/submission_//')" ${TEST_ARGS:-} 2>&1 | tee -a "$log" || rc=1
  done
done
for p in "$@"; do
  python3 -m harness table "$p" --record ${TABLE_ARGS:-} 2>&1 | tee -a "$log" || rc=1
done
cp -r "$NVFP4_BUILD_DIR/logs" "${OUT:-/tmp}/child-logs" 2>/dev/null
exit $rc
