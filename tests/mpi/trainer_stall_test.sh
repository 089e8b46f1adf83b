#!/usr/bin/env bash
# A rank that stops (SIGSTOP: a frozen node, a hung file system) ends the
# job within seconds, non-zero, with a last line naming the rank and the
# collective the others wait in; each live rank leaves its flight recorder
# (in --flight-dir, the checkpoint directory, else the job's directory under
# $TMPDIR, never the working directory), and tools/flight_report.py names
# the rank behind. A rank that is only
# slow ends nothing. Under tensor parallelism (--tp 2) the others wait for
# a stuck rank in a ring's collective: that ring's watchdog ends the job
# the same way, naming the rank by its world rank and the ring.
#   trainer_stall_test.sh MPIRUN TRAINER
source "$(dirname "$0")/trainer_common.sh" "$@"
MPI=("$MPIRUN" --oversubscribe)
REPORT="$COMMON_DIR/../../tools/flight_report.py"
# Short limits, so that the test takes seconds (the defaults are 60 / 300).
WARN=3
TIMEOUT=8

# Stopped ranks are resumed and killed whatever happens.
stopped=()
cleanup() {
  for p in "${stopped[@]}"; do
    kill -CONT "$p" 2>/dev/null
    kill -KILL "$p" 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT

make_idx "$work/data" 4096 64
save_mlp

# The pid of rank RANK among the trainers whose command line holds MARK.
rank_pid() {
  local mark=$1 rank=$2 p
  for p in $(pgrep -f -- "$mark"); do
    grep -q trainer "/proc/$p/comm" 2>/dev/null || continue
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
      grep -qx "OMPI_COMM_WORLD_RANK=$rank" && { echo "$p"; return; }
  done
}

# Starts NP ranks in $work/NAME (their working directory $dir/cwd), stops
# rank VICTIM once training is under way, and waits for the job to end.
# Sets rc, took, out, dir, flight. The flight recorders go to $dir/flight:
# with WHERE=ckpt as the checkpoint directory, with WHERE=flight as
# --flight-dir; with WHERE=tmp, neither given, to the job's own directory
# under $TMPDIR ($dir/tmp), which the abort line names.
run_stopped() {
  local np=$1 victim=$2 name=$3 where=${4:-flight} pid="" start job
  dir="$work/$name"
  local args=(--flight-dir "$dir/flight") mark="--flight-dir $dir/flight"
  [ "$where" = ckpt ] && args=(--checkpoint-dir "$dir/flight") &&
    mark="--checkpoint-dir $dir/flight"
  # The trainer's default seed, to tell this job's ranks from others.
  [ "$where" = tmp ] && args=(--seed 1) && mark="--seed 1"
  mkdir -p "$dir/cwd" "$dir/tmp"
  start=$(date +%s)
  (cd "$dir/cwd" && TMPDIR="$dir/tmp" timeout 120 "${MPI[@]}" -x TMPDIR \
    -np "$np" "$TRAINER" --program "$work/mlp.pb" \
    --data "$work/data" --epochs 1000 --log-every 5 --stall-warn "$WARN" \
    --stall-timeout "$TIMEOUT" "${args[@]}" >"$dir/log" 2>&1) &
  job=$!
  for _ in $(seq 300); do
    sleep 0.2
    grep -q "step" "$dir/log" || continue
    pid=$(rank_pid "$mark" "$victim")
    [ -n "$pid" ] && break
  done
  [ -n "$pid" ] || { kill "$job"; fail "$name: no rank $victim to stop"; }
  sleep 1
  kill -STOP "$pid"
  stopped+=("$pid")
  start=$(date +%s)
  wait "$job"
  rc=$?
  took=$(( $(date +%s) - start ))
  out=$(cat "$dir/log")
  flight="$dir/flight"
  if [ "$where" = tmp ]; then
    flight=$(sed -n 's/^fluid: rank [0-9]*: flight recorder written to \([^ ]*\)\/flight-rank-[0-9]*\.txt .*/\1/p' <<<"$out" | head -1)
    [[ "$flight" == "$dir/tmp/fluid-flight-"* ]] \
      || fail "$name: the abort line names '$flight', not a directory of the job under \$TMPDIR: $out"
  fi
  ! ls "$dir/cwd" | grep -q flight-rank \
    || fail "$name: flight recorder files in the working directory: $(ls "$dir/cwd")"
}

# The last line the framework wrote (mpirun adds its own after it).
last_fluid_line() { grep -E "^(fluid|trainer): " <<<"$out" | tail -1; }

check_stall() {  # NAME VICTIM NP
  local name=$1 victim=$2 np=$3 line
  [ "$rc" -ne 0 ] || fail "$name: the job exited 0: $out"
  [ "$rc" -ne 124 ] || fail "$name: the job hung: $out"
  [ "$took" -le 40 ] || fail "$name: took ${took}s to end: $out"
  line=$(last_fluid_line)
  grep -Eq "stall: rank $victim holds up collective [0-9]+ \((allreduce|broadcast|allgather|barrier)" <<<"$line" \
    || fail "$name: last line does not name rank $victim and the collective: $out"
  grep -q "ending the job (--stall-timeout $TIMEOUT)" <<<"$line" \
    || fail "$name: last line does not say the job ends: $out"
  grep -q "flight recorder written to" <<<"$out" \
    || fail "$name: no line saying where the flight recorder went: $out"
  for r in $(seq 0 $((np - 1))); do
    [ "$r" -eq "$victim" ] && continue
    [ -s "$flight/flight-rank-$r.txt" ] \
      || fail "$name: no flight recorder file of live rank $r: $(ls "$flight")"
  done
  report=$(/usr/bin/python3 "$REPORT" "$flight") \
    || fail "$name: flight_report.py failed: $report"
  grep -Eq "^behind: rank $victim\b" <<<"$report" \
    || fail "$name: flight_report.py does not name rank $victim: $report"
  echo "ok: $name: rank $victim stopped, job ended in ${took}s (rc $rc): $line"
}

# 1. Rank 1 of 2 stopped: rank 0 reports it.
run_stopped 2 1 np2-rank1
check_stall np2-rank1 1 2
grep -q "stall warning: rank 1 holds up" <<<"$out" \
  || fail "np2-rank1: no warning before the end: $out"

# 2. Rank 0 of 2 stopped: rank 1 must speak.
run_stopped 2 0 np2-rank0
check_stall np2-rank0 0 2
grep -q "^fluid: rank 1: stall: rank 0 holds up" <<<"$out" \
  || fail "np2-rank0: rank 1 did not report rank 0: $out"

# 3. Rank 2 of 4 stopped; the files go next to the checkpoints.
run_stopped 4 2 np4-rank2 ckpt
check_stall np4-rank2 2 4

# 4. No --flight-dir, no --checkpoint-dir: the files go to the job's own
# directory under $TMPDIR, never the working directory.
run_stopped 2 1 np2-tmpdir tmp
check_stall np2-tmpdir 1 2

# 5. A slow rank (2 s per step, below the warning's 6 s) is not stuck: the
# job ends normally and no stall line appears.
out=$(FLUID_TEST_SLOW_STEP_RANK=1 FLUID_TEST_SLOW_STEP_SECONDS=2 \
      timeout 120 "${MPI[@]}" -np 2 "$TRAINER" --program "$work/mlp.pb" \
      --data "$work/data" --train-samples 640 --batch-size 64 \
      --stall-warn 6 --stall-timeout 10 2>&1) \
  || fail "slow rank: the job failed: $out"
grep -Eq "^fluid: rank [0-9]+: stall" <<<"$out" && fail "slow rank: a stall was reported: $out"
grep -q "test accuracy" <<<"$out" || fail "slow rank: no test accuracy: $out"
echo "ok: a rank 2 s slower per step (warn 6 s) finished without a stall line"

# 6, 7. --tp 2: rank SLOW hangs before a step (its main thread sleeps, the
# process lives), its ring partners wait in a ring's allreduce. The job ends
# non-zero within seconds of --stall-timeout, the last stall line naming
# world rank SLOW and the ring, and the speaker writes its flight recorder
# and its ring's.
tp_stall() {  # NP SLOW
  local np=$1 slow=$2 name="tp2-np$1-rank$2" start line
  dir="$work/$name"
  mkdir -p "$dir"
  start=$(date +%s)
  out=$(FLUID_TEST_SLOW_STEP_RANK=$slow FLUID_TEST_SLOW_STEP_SECONDS=100 \
        timeout 120 "${MPI[@]}" -x FLUID_TEST_SLOW_STEP_RANK \
        -x FLUID_TEST_SLOW_STEP_SECONDS -np "$np" "$TRAINER" --model mlp \
        --data "$work/data" --batch-size 16 --epochs 1 --log-every 1 \
        --threads 1 --tp 2 --stall-warn "$WARN" --stall-timeout "$TIMEOUT" \
        --flight-dir "$dir/flight" 2>&1)
  rc=$?
  took=$(( $(date +%s) - start ))
  [ "$rc" -ne 0 ] || fail "$name: the job exited 0: $out"
  [ "$rc" -ne 124 ] || fail "$name: the job hung: $out"
  [ "$took" -le $((TIMEOUT + 20)) ] || fail "$name: took ${took}s to end: $out"
  line=$(grep -E "^fluid: rank [0-9]+: stall: " <<<"$out" | tail -1)
  grep -Eq "stall: rank $slow holds up collective [0-9]+ \(allreduce[^)]*\) on ring [12] \(ranks [0-9, -]+\), in which rank [0-9]+ has waited" <<<"$line" \
    || fail "$name: the stall line does not name rank $slow and its ring: $out"
  grep -q "ending the job (--stall-timeout $TIMEOUT)" <<<"$line" \
    || fail "$name: the stall line does not say the job ends: $out"
  ls "$dir"/flight/ring-*/flight-rank-*.txt >/dev/null 2>&1 \
    || fail "$name: no ring flight recorder in $dir/flight: $out"
  echo "ok: $name: rank $slow hung, job ended in ${took}s (rc $rc): $line"
}
tp_stall 2 1
tp_stall 4 3

# 8. --pp 2 --micro-batches 4: rank 1 (stage 1) hangs before a step; stage
# 0 waits for its gradients (or for it to take its activations). The job
# ends non-zero within seconds of --stall-timeout, the stall line naming
# world rank 1, the cut's ring by its stages and the micro-batch.
start=$(date +%s)
out=$(FLUID_TEST_SLOW_STEP_RANK=1 FLUID_TEST_SLOW_STEP_SECONDS=100 \
      timeout 120 "${MPI[@]}" -x FLUID_TEST_SLOW_STEP_RANK \
      -x FLUID_TEST_SLOW_STEP_SECONDS -np 2 "$TRAINER" --model mlp \
      --data "$work/data" --batch-size 16 --epochs 1 --log-every 1 \
      --threads 1 --pp 2 --micro-batches 4 --stall-warn "$WARN" \
      --stall-timeout "$TIMEOUT" --flight-dir "$work/pp2/flight" 2>&1)
rc=$?
took=$(( $(date +%s) - start ))
[ "$rc" -ne 0 ] || fail "pp2: the job exited 0: $out"
[ "$rc" -ne 124 ] || fail "pp2: the job hung: $out"
[ "$took" -le $((TIMEOUT + 20)) ] || fail "pp2: took ${took}s to end: $out"
line=$(grep -E "^fluid: rank [0-9]+: stall: " <<<"$out" | tail -1)
grep -Eq "stall: rank 1 holds up collective [0-9]+ \(broadcast, [^)]*micro-batch [0-9]+, [^)]*\) on ring [4-7] \(pipeline stages 0 -> 1, (activations|gradients); ranks 0, 1\)" <<<"$line" \
  || fail "pp2: the stall line does not name rank 1, the stages and the micro-batch: $out"
echo "ok: pp2: rank 1 hung, job ended in ${took}s (rc $rc): $line"
