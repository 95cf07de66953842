#!/usr/bin/env bash
# One device call for several new versions: build them in parallel, then per version run
# tools/try_version.sh's steps, one version per GPU at a time (on a machine of G GPUs, G versions run
# side by side, each alone on its GPU: its timings never share one); everything each version wrote goes
# into $OUT/round.tgz (the device returns at most 8 files; the build cache into $OUT/ext.tgz with KEEP_BUILDS=1).
# Usage (device machine, repo root): STEPS=check|time|record|all bash tools/device_round.sh P:V:PARENT[:STEPS[:SANITIZE]] ...
# STEPS=check builds and tests only; time compares with the parent and records; record only
# records; all does check and time. A spec's own STEPS (empty: the variable's) and SANITIZE (0 or 1) override the
# variables for that version: `gemm:v9:v8::1 dual_gemm:v5:v4` sanitizes v9 alone where SANITIZE=0 is set.
# Env: GPUS (ids to use, default every GPU nvidia-smi lists); DEADLINE (seconds after the round starts,
# e.g. 540 in a 600 s device call: no step runs past it, and what was skipped is said); EXTRA (a file of
# harness command lines, run in order on the first GPU the versions leave free: marks, custom shapes,
# records; one command a line, arguments split as a shell splits them (quotes keep 'GEMM start:end' one argument;
# nothing is expanded or run), blank and # lines skipped;
# each line's output in extra-N.txt; rows an extra line records go to extra/leaderboard.csv, its sidecars
# beside it, so they come back in round.tgz: merge them with `nvfp4 leaderboard merge`).
# The archives are rewritten after every version, so a call stopped at its limit keeps the rest.
# try_version.sh's SHAPES_<problem> (custom shapes for its tests and sanitizers), RECORD (if-faster, the default, or
# always), SANITIZE and SANITIZE_TIMEOUT pass through to every version of the round.
set -u -o pipefail
# NOTE: the device's copy of the tree may carry a stale .git (rows recorded there once named the
# session's first commit, dirty); every recorded row must name the commit that actually ran.
if [ -z "${NVFP4_GIT_COMMIT:-}" ]; then echo "set NVFP4_GIT_COMMIT to the commit being run (git rev-parse --short HEAD here)" >&2; exit 2; fi
# NOTE: every version and parent a spec names is loaded (its file and docstring header) before anything builds:
# session 80's round built and tested a version, then lost its compare and a marks run to a parent whose Verdict line
# the harness refuses; a refusal here costs seconds, not the round.
python3 - "$@" <<'PY' || exit 2
import os
import sys
from harness import submissions
from harness.errors import UserError
bad = []
STEPS, SANITIZE = ("", "check", "time", "record", "all"), ("", "0", "1")  # NOTE: "": the default (try_version.sh's)
# NOTE: the variables and each spec's own too: try_version.sh refuses a bad STEPS or SANITIZE itself, but only at its
# version's turn, after the builds and the versions before it
if os.environ.get("STEPS", "") not in STEPS:
    bad.append(f"STEPS must be check, time, record or all, got '{os.environ['STEPS']}'")
if os.environ.get("SANITIZE", "") not in SANITIZE:
    bad.append(f"SANITIZE must be 0 or 1, got '{os.environ['SANITIZE']}'")
for spec in sys.argv[1:]:
    fields = spec.split(":")
    problem, version, parent, steps, sanitize = (fields + [""] * 4)[:5]
    if not (problem and version and parent) or len(fields) > 5:
        bad.append(f"{spec}: a spec is P:V:PARENT[:STEPS[:SANITIZE]]")
        continue
    if steps not in STEPS:
        bad.append(f"{spec}: STEPS must be check, time, record or all (or empty), got '{steps}'")
    if sanitize not in SANITIZE:
        bad.append(f"{spec}: SANITIZE must be 0 or 1 (or empty), got '{sanitize}'")
    for name in (version, parent):
        try:
            submissions.resolve(problem, name)
        except UserError as exc:
            bad.append(f"{spec}: {exc}")
for line in bad:
    print(line, file=sys.stderr)
sys.exit(2 if bad else 0)
PY
OUT="${OUT:-/tmp/nvfp4-out}"; mkdir -p "$OUT"
export NVFP4_EXTENSIONS_DIR="${NVFP4_EXTENSIONS_DIR:-$PWD/.build/torch_extensions}"
work=/tmp/nvfp4-round; rm -rf "$work"; mkdir -p "$work"
read -r -a gpus <<< "${GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader | tr '\n' ' ')}"
[ "${#gpus[@]}" -ge 1 ] || { echo "no GPU listed by nvidia-smi (set GPUS)" >&2; exit 2; }
t0=$(date +%s)
[ -n "${DEADLINE:-}" ] && export DEADLINE_AT=$(( t0 + DEADLINE ))
if [ -n "${EXTRA:-}" ] && [ ! -r "$EXTRA" ]; then echo "EXTRA: cannot read $EXTRA" >&2; exit 2; fi
declare -A building=()
for spec in "$@"; do  # NOTE: builds are CPU-bound (nvcc), so they overlap; GPU steps below do not
  IFS=: read -r p v parent _ <<< "$spec"
  # NOTE: the parent too (compare needs it; a `peer` is no build): session 68's dual_gemm compare built its parent
  # (~40 s on the device) inside its own step, after the sanitizers, and the round's deadline stopped it there.
  for x in "$v" "$parent"; do
    case "$x" in v[0-9]*) ;; *) continue ;; esac
    [ -n "${building[$p:$x]:-}" ] && continue
    building[$p:$x]=1
    python3 -m harness build "$p" "$x" > "$work/build-$p-$x.log" 2>&1 &
  done
done
wait
echo "[$(( $(date +%s) - t0 )) s] builds done; ${#gpus[@]} GPU(s): ${gpus[*]}"
# NOTE: the build cache as ext.tgz only when asked (KEEP_BUILDS=1): the whole cache is over the 16 MiB a returned file
# may have, so every round of sessions 66-68 compressed it on the device's clock and got it back as "left out".
[ "${KEEP_BUILDS:-0}" = 1 ] && tar czf "$OUT/ext.tgz" -C .build torch_extensions
one() {  # one SPEC GPU: the version's steps alone on that GPU
  local p v parent steps sanitize
  IFS=: read -r p v parent steps sanitize <<< "$1"
  CUDA_VISIBLE_DEVICES="$2" STEPS="${steps:-${STEPS:-all}}" SANITIZE="${sanitize:-${SANITIZE:-1}}" OUT="$work/$p-$v" \
    bash tools/try_version.sh "$p" "$v" "$parent" > /dev/null 2>&1
  { echo "== $p $v (parent $parent, GPU $2, $(( $(date +%s) - t0 )) s)"; cat "$work/$p-$v/summary.txt"; } > "$work/$p-$v.done"
  # NOTE: rewritten as each version ends (under a lock: versions end concurrently), so a call stopped
  # at its limit still returns every finished version.
  flock "$work/.lock" tar czf "$OUT/round.tgz" -C "$work" --exclude=gpus.fifo --exclude=.lock .
}
extras() {  # extras GPU: EXTRA's lines in order, alone on that GPU
  local n=0 line left
  local -a args
  # NOTE: without this, an extra line's --record wrote to the device's copy of leaderboard.csv, which
  # never comes back (session 57 lost four kernel-method records that way).
  mkdir -p "$work/extra"; export NVFP4_LEADERBOARD="$work/extra/leaderboard.csv"
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in ''|'#'*) continue ;; esac
    n=$(( n + 1 ))
    # NOTE: shlex, not `read -a`: a mark name has a space (--fill 'GEMM start:end'), and a line that does not
    # split (an unclosed quote) is reported and skipped rather than run in pieces.
    if ! mapfile -t args < <(python3 -c 'import shlex, sys; print("\n".join(shlex.split(sys.argv[1])))' "$line" 2>/dev/null) \
        || [ "${#args[@]}" -eq 0 ]; then
      echo "extra $n ($line): skipped (its arguments do not split: an unclosed quote?)" >> "$work/extra.txt"; continue
    fi
    left=$(( ${DEADLINE_AT:-9999999999} - $(date +%s) - 5 ))
    if [ "$left" -lt 20 ]; then echo "extra $n ($line): skipped (the round's deadline)" >> "$work/extra.txt"; continue; fi
    CUDA_VISIBLE_DEVICES="$1" timeout -k 10 "$(( left < 900 ? left : 900 ))" python3 -m harness "${args[@]}" \
      > "$work/extra-$n.txt" 2>&1
    echo "extra $n ($line): rc $? at $(( $(date +%s) - t0 )) s, GPU $1" >> "$work/extra.txt"
    flock "$work/.lock" tar czf "$OUT/round.tgz" -C "$work" --exclude=gpus.fifo --exclude=.lock .
  done < "$EXTRA"
}
# NOTE: a FIFO of free GPU ids: a version takes one, gives it back when done, so G run at a time; the EXTRA lines
# are one more job behind the versions, on the first GPU a version leaves free (at once where there are fewer
# versions than GPUs: session 68's first call ran ~220 s of extras on GPU 0 after its versions while GPU 1 idled).
# Every job has its GPU alone; they share the host's cores, as versions side by side always have.
fifo="$work/gpus.fifo"; mkfifo "$fifo"; exec 3<> "$fifo"; rm -f "$fifo"
for g in "${gpus[@]}"; do echo "$g" >&3; done
for spec in "$@"; do
  read -r g <&3
  ( one "$spec" "$g"; echo "$g" >&3 ) &
done
if [ -n "${EXTRA:-}" ]; then
  read -r g <&3
  ( extras "$g"; echo "$g" >&3 ) &
fi
wait
for spec in "$@"; do IFS=: read -r p v _ <<< "$spec"; cat "$work/$p-$v.done" 2>/dev/null; done | tee "$work/summary.txt"
[ -f "$work/extra.txt" ] && tee -a "$work/summary.txt" < "$work/extra.txt"
cp "$work/summary.txt" "$OUT/summary.txt"; flock "$work/.lock" tar czf "$OUT/round.tgz" -C "$work" --exclude=gpus.fifo --exclude=.lock .
