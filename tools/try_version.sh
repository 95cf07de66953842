#!/usr/bin/env bash
# One device call for a new kernel version: build, correctness (both distributions, the tests and
# the edges shapes; racecheck and synccheck for versions using mbarriers), the bad inputs (a failure
# said, not stopping), compare against its parent, then the recorded runs (gpumode, then kernel).
# The checks after the build run side by side (nothing is timed until all have ended), then the sanitizers one at a
# time; a failed check stops the version after them, a failed build or timed step at once; a short summary is the
# last thing printed (and $OUT/summary.txt).
# Usage (device machine, repo root): bash tools/try_version.sh PROBLEM VERSION PARENT
# Env: NVFP4_GIT_COMMIT (required: the commit being run, which the copied tree cannot tell),
# BUDGET (run seconds, default 3; compare stops on its own: decided and precise, or 10 s a shape),
# STEPS: check (build and tests), time (compare and recorded run), record (recorded run only),
# all (default: check and time); STEP_TIMEOUT (seconds per step, default 900); DEADLINE_AT (epoch
# seconds: no step runs past it, a step that would start within 20 s of it is skipped and said);
# SHAPES (or SHAPES_<problem>, for a round of several problems): custom shapes, '|'-separated, each as `--shape` takes
# it, that reach code the lists do not: tested on every distribution and, for a version naming mbarrier, racechecked
# and synccheck'd beside the default shapes; RECORD: if-faster (default: the recorded runs only where the compare
# found the version FASTER on a shape and SLOWER on none) or always (STEPS=record always records); SANITIZE=0 skips
# racecheck and synccheck (said in the summary); SANITIZE_TIMEOUT: seconds a sanitizer run may take (default 240).
set -u -o pipefail
# NOTE: the device's copy of the tree may carry a stale .git (rows recorded there once named the
# session's first commit, dirty); every recorded row must name the commit that actually ran.
if [ -z "${NVFP4_GIT_COMMIT:-}" ]; then echo "set NVFP4_GIT_COMMIT to the commit being run (git rev-parse --short HEAD here)" >&2; exit 2; fi
problem=$1 version=$2 parent=$3
OUT="${OUT:-/tmp/nvfp4-out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 COLUMNS=200 NVFP4_LEADERBOARD="$OUT/leaderboard.csv"
export NVFP4_EXTENSIONS_DIR="${NVFP4_EXTENSIONS_DIR:-$PWD/.build/torch_extensions}"
log="$OUT/$problem-$version.log" summary="$OUT/summary.txt" t0=$(date +%s)
record="${RECORD:-if-faster}"
case "$record" in if-faster|always) ;; *) echo "RECORD must be if-faster or always, got '$record'" >&2; exit 2 ;; esac
case "${STEPS:-all}" in check|time|record|all) ;; *) echo "STEPS must be check, time, record or all, got '$STEPS'" >&2; exit 2 ;; esac
case "${SANITIZE:-1}" in 0|1) ;; *) echo "SANITIZE must be 0 or 1, got '$SANITIZE'" >&2; exit 2 ;; esac
case "${SANITIZE_TIMEOUT:-240}" in ''|*[!0-9]*|0) echo "SANITIZE_TIMEOUT must be whole seconds above 0, got '$SANITIZE_TIMEOUT'" >&2; exit 2 ;; esac
# NOTE: session 76: gemm v109-v113's stream launch runs only where a split launch leaves SMs idle: on none of the tests
# and edges shapes, and on a benchmark shape the sanitizers' defaults skip, so every check of it needed shapes of its own.
shapes_var="SHAPES_$problem"; shapes="${!shapes_var:-${SHAPES:-}}"
shape_args=()
if [ -n "$shapes" ]; then
  IFS='|' read -r -a shape_list <<< "$shapes"
  for x in "${shape_list[@]}"; do [ -n "$x" ] && shape_args+=(--shape "$x"); done
fi
say() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$summary"; }
limit() {  # the seconds a step may take: STEP_TIMEOUT, cut to what is left before DEADLINE_AT
  local left=$(( ${DEADLINE_AT:-9999999999} - $(date +%s) - 5 )) cap=${STEP_TIMEOUT:-900}
  echo $(( left < cap ? left : cap ))
}
attempt() {  # attempt NAME TAIL FATAL CMD...: run under the round's limits, log, say the outcome (FATAL 1: stop on failure)
  local name=$1 tail_lines=$2 fatal=$3; shift 3
  echo "### $name" >> "$log"
  # NOTE: a device call has a hard limit (600 s): a step that cannot finish before the round's deadline is
  # skipped and said, so the call returns with everything that did finish instead of being cut mid-step.
  local t; t=$(limit); if [ "$t" -lt 20 ]; then say "$name: skipped (the round's deadline)"; finish 3; fi
  # NOTE: a barrier mistake in a new kernel hangs rather than fails; the timeout turns it into a failure.
  timeout -k 10 "$t" "$@" >> "$log" 2>&1; local rc=$?
  judge "$name" "$rc" "$t" "$log" "$tail_lines" "$fatal"; local stop=$?
  if [ "$stop" -ne 0 ]; then finish "$stop"; fi
}
# judge NAME RC LIMIT OUTPUT TAIL FATAL: say a step's outcome; returns 0 (ok, or a soft failure), 1 (a fatal failure)
# or 3 (stopped by the round's deadline)
judge() {
  local name=$1 rc=$2 t=$3 output=$4 tail_lines=$5 fatal=$6
  if [ "$rc" -eq 0 ]; then say "$name: ok"; return 0; fi
  # NOTE: session 68 read a dual_gemm compare stopped by the deadline mid-build as "FAILED": its log ended
  # without an error, and only the clock said why. A timeout (124, or 137 after -k) under a limit the
  # deadline had cut below STEP_TIMEOUT is the deadline's.
  if { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } && [ "$t" -lt "${STEP_TIMEOUT:-900}" ]; then
    say "$name: stopped at the round's deadline (after its $t s)"; return 3
  fi
  say "$name: FAILED (see $log)"; tail -"$tail_lines" "$output" | tee -a "$summary"
  if [ "$fatal" = 1 ]; then return 1; fi
  return 0
}
step() { local name=$1; shift; attempt "$name" 20 1 "$@"; }  # step NAME CMD...: run, log, and stop on failure
# soft NAME CMD...: like step, but a failure is said and the steps go on (a finding, not a broken build)
soft() { local name=$1; shift; attempt "$name" 16 0 "$@"; }
# The checks (correctness only, nothing timed) run side by side: queue FATAL NAME CMD... adds one, checks runs them all
# and says each outcome in queue order, stopping (finish 1) after them if a fatal one failed.
# NOTE: session 76: one at a time they took ~110 s of a version's device call (tests 17, edges 15, custom shapes 15,
# random 14, bad inputs 8, racecheck 30, synccheck 11), the longest of them 30; the timed steps start after all end.
check_names=() check_fatal=() check_cmds=()
queue() { local fatal=$1 name=$2; shift 2; check_names+=("$name"); check_fatal+=("$fatal"); check_cmds+=("$(printf '%q ' "$@")"); }
checks() {
  [ "${#check_names[@]}" -eq 0 ] && return
  local t; t=$(limit); if [ "$t" -lt 20 ]; then say "checks: skipped (the round's deadline)"; finish 3; fi
  local i rc outcome stop=0 pids=()
  for i in "${!check_names[@]}"; do
    ( eval "timeout -k 10 $t ${check_cmds[$i]}" > "$OUT/.check-$i.log" 2>&1; echo $? > "$OUT/.check-$i.rc" ) &
    pids+=("$!")
  done
  wait "${pids[@]}"
  for i in "${!check_names[@]}"; do
    local name=${check_names[$i]}
    rc=$(cat "$OUT/.check-$i.rc" 2>/dev/null || echo 1)
    { echo "### $name"; cat "$OUT/.check-$i.log"; } >> "$log"
    judge "$name" "$rc" "$t" "$OUT/.check-$i.log" 16 "${check_fatal[$i]}"; outcome=$?
    # NOTE: the deadline's stop (3) outranks a failure's (1): the summary then says the round ran out, not that it failed
    if [ "$outcome" -eq 3 ] || { [ "$outcome" -eq 1 ] && [ "$stop" -eq 0 ]; }; then stop=$outcome; fi
    rm -f "$OUT/.check-$i.log" "$OUT/.check-$i.rc"
  done
  check_names=() check_fatal=() check_cmds=()
  [ "$stop" -ne 0 ] && finish "$stop"
  return 0
}
finish() {
  if [ -d "$OUT/leaderboard_runs" ]; then
    tar czf "$OUT/leaderboard_runs.tgz" -C "$OUT" leaderboard_runs && rm -rf "$OUT/leaderboard_runs"
  fi
  exit "$1"
}
steps="${STEPS:-all}"
if [ "$steps" != time ] && [ "$steps" != record ]; then
step "build $problem $version" python3 -m harness build "$problem" "$version"
queue 1 "test (tests shapes, both distributions)" python3 -m harness test "$problem" "$version" --dist all --seeds 2
queue 1 "test (edges shapes, both distributions)" python3 -m harness test "$problem" "$version" --shapes edges --dist all --seeds 2
# NOTE: session 71: group_gemm v76, exact on every list's shapes, failed `mixed` on a random shape (a group of K 6400:
# one fp32 chain over all of K drifts); the lists hold few K. A finding, not a broken build: said, and the steps go on.
if [ "${#shape_args[@]}" -gt 0 ]; then
queue 1 "test (SHAPES, every distribution)" python3 -m harness test "$problem" "$version" "${shape_args[@]}" --dist all --seeds 2
fi
queue 0 "test (random shapes, mixed)" python3 -m harness test "$problem" "$version" --shapes random:4 --dist mixed --seeds 2
# NOTE: a bad input that ends the process is a bug to fix, not a reason to leave the version untimed
queue 0 "bad inputs (test --bad-inputs)" python3 -m harness test "$problem" "$version" --bad-inputs
# NOTE: issue 5 asks every version that synchronises through mbarriers to be racecheck- and
# synccheck-clean on a small shape; a version naming mbarrier gets both before any timing.
src=$(python3 -c 'import sys; from harness.submissions import resolve; print(resolve(sys.argv[1], sys.argv[2]).path)' "$problem" "$version") || finish 2
checks
if [ "${SANITIZE:-1}" = 0 ]; then
  say "racecheck and synccheck: skipped (SANITIZE=0)"
elif grep -q "mbarrier" "$src"; then
# NOTE: the sanitizers run one at a time after the other checks, each bounded by SANITIZE_TIMEOUT (default 240 s):
# session 77 ran gemm v114's four beside the tests and none had finished 471 s later (v113's racecheck took 30 s
# alone in session 76), so the round's whole deadline went to them. A sanitizer that hangs is a failure, not the round.
# NOTE: sanitize's default covers the smallest tests shape and the benchmark shape of fewest FLOPs (why: its
# _sanitize_shapes in harness/cli/devtools.py).
for tool in racecheck synccheck; do
  queue 1 "$tool (smallest tests and benchmark shapes)" python3 -m harness sanitize "$problem" "$version" --tool "$tool" \
    --timeout "${SANITIZE_TIMEOUT:-240}"
  checks
done
if [ "${#shape_args[@]}" -gt 0 ]; then
  for tool in racecheck synccheck; do
    queue 1 "$tool (SHAPES)" python3 -m harness sanitize "$problem" "$version" --tool "$tool" \
      --timeout "${SANITIZE_TIMEOUT:-240}" "${shape_args[@]}"
    checks
  done
fi
fi
fi
[ "$steps" = check ] && finish 0
if [ "$steps" != record ]; then
# NOTE: the product's one-process kernel compare decides (docs/methodology.md, step 10); its shape lines
# and geomean are read from the CSV it writes, not scraped from the table's box characters
step "compare $parent $version" python3 -m harness compare "$problem" "$parent" "$version" -o "$OUT/compare.csv"
python3 - "$OUT/compare.csv" <<'PY' | tee -a "$summary"
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    num = lambda key: float(r[key] or "nan")
    # NOTE: compare's word on B's outputs against the parent's (empty where not compared: a failed side)
    same = {"true": ", outputs bit for bit the parent's",
            "false": f", outputs differ from the parent's on {r.get('outputs_differ')} of {r.get('outputs_sets')} input sets"}
    print(f"{r['shape']}: {r['status']} {num('speedup'):.3f}x [{num('lo'):.3f}, {num('hi'):.3f}] {r['verdict']}"
          f"{same.get(r.get('outputs_equal') or '', '')}")
PY
grep -E "^geomean" "$log" | tail -1 | tee -a "$summary"
# NOTE: a version that wins nowhere goes to attic and its rows are never read; recording them cost ~40 s of device time
# a version (session 76 recorded gemm v112, SAME against its parent, on its way to attic).
if [ "$record" = if-faster ] && ! python3 - "$OUT/compare.csv" <<'PY'
import csv, sys
verdicts = [r["verdict"] for r in csv.DictReader(open(sys.argv[1]))]
sys.exit(0 if "FASTER" in verdicts and "SLOWER" not in verdicts else 1)
PY
then
  say "not recorded (RECORD=if-faster: the compare found it FASTER on no shape, or SLOWER on one)"; finish 0
fi
fi
step "run $version --record (gpumode)" python3 -m harness run "$problem" "$version" --budget "${BUDGET:-3}" --record -o "$OUT/run.csv"
python3 -c "import csv,sys; [print(f\"{r['shape']}: {r['status']} {r['mean_us']} µs\") for r in csv.DictReader(open(sys.argv[1]))]" "$OUT/run.csv" | tee -a "$summary"
# NOTE: every kernel issue's Done-when asks rows of both methods; until session 57 a version got its kernel
# rows only when a later call remembered them (its own process: the profiler's, after the event method's).
step "run $version --record (kernel)" python3 -m harness run "$problem" "$version" --method kernel --budget "${BUDGET:-3}" --record -o "$OUT/run-kernel.csv"
python3 -c "import csv,sys; [print(f\"{r['shape']}: {r['status']} {r['mean_us']} µs (kernel)\") for r in csv.DictReader(open(sys.argv[1]))]" "$OUT/run-kernel.csv" | tee -a "$summary"
finish 0
