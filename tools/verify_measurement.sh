#!/usr/bin/env bash
# The measurement checks of issue 3 on a GPU machine, as CLI runs whose verdict lines go to
# $OUT/measurement.log: every adversarial submission on a benchmark shape, compare's SAME (a
# version against itself) and FASTER (v0 against a faster version), graph and warm modes.
# Usage (device machine, repo root): bash tools/verify_measurement.sh [PART...]; parts: adversaries
# compare modes table (default: all). Env: NVFP4_GIT_COMMIT (the copied tree has no .git).
set -u -o pipefail
OUT="${OUT:-/tmp/nvfp4-out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 COLUMNS=220 NVFP4_LEADERBOARD="$OUT/leaderboard.csv"
export NVFP4_EXTENSIONS_DIR="${NVFP4_EXTENSIONS_DIR:-$PWD/.build/torch_extensions}"
log="$OUT/measurement.log"
parts=("${@:-adversaries compare modes table}")
say() { echo "### $*" | tee -a "$log"; }
nvfp4() { python3 -m harness "$@" 2>&1 | tee -a "$log" | grep -vE "^\s*$" | tail -25; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv | tee -a "$log"
for part in ${parts[@]}; do
  case "$part" in
    adversaries)
      for adv in patches_event_timer patches_stats writes_result_channel late_thread caches_by_data_ptr \
                 caches_by_content first_call_only side_stream; do
        say "run gemm $adv (benchmarks:0)"
        nvfp4 run gemm "tests/adversarial/$adv.py" --shapes benchmarks:0 --budget 1
      done ;;
    compare)
      say "test gemv v1"; nvfp4 test gemv v1 --dist both --seeds 2
      say "compare gemv v0 v1"; nvfp4 compare gemv v0 v1 --budget 3
      say "compare gemv v1 v1"; nvfp4 compare gemv v1 v1 --budget 6
      say "compare gemm v0 v0"; nvfp4 compare gemm v0 v0 --budget 6 ;;
    modes)
      say "run gemv v1 (cold, --warm)"; nvfp4 run gemv v1 --method cold --warm --budget 2 --record
      say "run gemv v1 --graph"; nvfp4 run gemv v1 --graph --budget 2
      say "run gemm v0 --graph (not capturable)"; nvfp4 run gemm v0 --graph --shapes benchmarks:2 --budget 1 ;;
    table)
      say "table gemv --record"; nvfp4 table gemv --record --plot "$OUT/gemv.png" ;;
  esac
done
if [ -d "$OUT/leaderboard_runs" ]; then
  tar czf "$OUT/leaderboard_runs.tgz" -C "$OUT" leaderboard_runs && rm -rf "$OUT/leaderboard_runs"
fi
