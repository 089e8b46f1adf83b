#!/usr/bin/env bash
# A rank that dies or fails brings the whole `mpirun -np 2 trainer` job down
# within 30 s, non-zero, with one line naming the rank and the cause.
#   trainer_failures_test.sh MPIRUN TRAINER
source "$(dirname "$0")/trainer_common.sh" "$@"
MPI=("$MPIRUN" --oversubscribe)

# Tiny MNIST-shaped data sets: a good one, and one where half the labels are
# out of range (so the rank reading it fails in its first training steps,
# while the other rank waits in an allreduce, not at start-up).
make_idx "$work/good" 4096 64
make_idx "$work/bad" 4096 64 --train-labels-from 2048:200
save_mlp

# 1. Healthy run: both ranks train, exit 0, rank 0 reports.
out=$(timeout 120 "${MPI[@]}" -np 2 "$TRAINER" --program "$work/mlp.pb" \
      --data "$work/good" --check-consistency 10 2>&1) \
  || fail "healthy 2-rank run failed: $out"
echo "$out" | grep -q "x 2 ranks" || fail "no 2-rank banner: $out"
echo "$out" | grep -q "test accuracy" || fail "no test accuracy: $out"
echo "ok: healthy 2-rank run"

# 1b. Checkpoint on rank 0, then resume on 2 ranks: rank 0 loads, every
# rank takes its values and position.
ck="$work/ckpt-resume"
out=$(timeout 120 "${MPI[@]}" -np 2 "$TRAINER" --program "$work/mlp.pb" \
      --data "$work/good" --checkpoint-dir "$ck" 2>&1) \
  || fail "2-rank run with checkpoints failed: $out"
[ -f "$ck/LATEST" ] || fail "no checkpoint written: $out"
out=$(timeout 120 "${MPI[@]}" -np 2 "$TRAINER" --program "$work/mlp.pb" \
      --data "$work/good" --checkpoint-dir "$ck" --epochs 2 --resume \
      --check-consistency 5 2>&1) || fail "2-rank resume failed: $out"
echo "$out" | grep -q "resumed from $ck at epoch 1, step 32" \
  || fail "no resume line: $out"
echo "$out" | grep -q "epoch 1/2" && fail "resumed run repeated epoch 1: $out"
echo "$out" | grep -q "epoch 2/2" || fail "resumed run skipped epoch 2: $out"
echo "ok: 2-rank checkpoint and resume"

# 2. A rank that throws mid-training (rank 1 reads a bad label).
start=$(date +%s)
out=$(timeout 60 "${MPI[@]}" -np 1 "$TRAINER" --program "$work/mlp.pb" \
        --data "$work/good" --epochs 20 : \
      -np 1 "$TRAINER" --program "$work/mlp.pb" --data "$work/bad" \
        --epochs 20 2>&1)
rc=$?
took=$(( $(date +%s) - start ))
[ "$rc" -ne 0 ] || fail "a failing rank left the job exiting 0"
[ "$rc" -ne 124 ] || fail "the job hung after a rank failed: $out"
[ "$took" -le 30 ] || fail "took ${took}s to come down"
echo "$out" | grep -q "trainer: rank 1: error: .*label" \
  || fail "no line naming rank 1 and the cause: $out"
echo "ok: throwing rank ended the job in ${took}s (rc $rc)"

# 3. A rank killed with SIGKILL mid-training.
marker="fluid-kill-test-$$"
start=$(date +%s)
timeout 60 "${MPI[@]}" -np 2 "$TRAINER" --program "$work/mlp.pb" \
  --data "$work/good" --epochs 1000 --log-every 0 \
  --checkpoint-dir "$work/$marker" >"$work/kill.log" 2>&1 &
job=$!
victim=""
for _ in $(seq 100); do
  sleep 0.2
  victim=$(pgrep -n -f -- "--checkpoint-dir $work/$marker" | head -1)
  # Wait until the newest matching process is a trainer, not mpirun.
  if [ -n "$victim" ] && grep -q trainer "/proc/$victim/comm" 2>/dev/null; then
    break
  fi
  victim=""
done
[ -n "$victim" ] || fail "no trainer rank to kill"
sleep 2
kill -9 "$victim"
wait "$job"
rc=$?
took=$(( $(date +%s) - start ))
[ "$rc" -ne 0 ] || fail "a killed rank left the job exiting 0"
[ "$rc" -ne 124 ] || fail "the job hung after a rank was killed"
[ "$took" -le 30 ] || fail "took ${took}s to come down"
echo "ok: killed rank ended the job in ${took}s (rc $rc)"
