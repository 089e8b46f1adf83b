#!/usr/bin/env bash
# tools/fluidrun restarts a failed job from its newest checkpoint: a rank
# killed in epoch 2 of 3 costs a restart, not the run (same accuracy as an
# uninterrupted run); a checkpoint taken on 4 ranks resumes on 2 at the same
# sample; --max-restarts 0 fails with mpirun's own status; a job without
# --checkpoint-dir is refused, one without a checkpoint yet starts over; a
# launch that cannot start is retried on half the ranks.
#   trainer_restart_test.sh MPIRUN TRAINER
source "$(dirname "$0")/trainer_common.sh" "$@"
FLUIDRUN="$COMMON_DIR/../../tools/fluidrun"
MPI=(--oversubscribe)

# Real images learn (an accuracy to compare); random ones where absent.
data=/usr/share/datasets/fashion-mnist
if [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  data="$work/data"
  make_idx "$data" 1024 500
fi
# 1024 samples, a global batch of 64: 16 steps per epoch, a checkpoint
# every 5 steps.
job=(--model lenet --data "$data" --train-samples 1024 --test-samples 500
     --log-every 0 --checkpoint-every 5)
accuracy() { echo "$1" | sed -n 's/^test accuracy \([0-9.]*\).*/\1/p'; }
within_a_point() {
  /usr/bin/python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(a - b) > 0.01)' "$1" "$2"
}

# 1. The uninterrupted run: 2 ranks x 32, 3 epochs.
out=$(timeout 300 "$MPIRUN" "${MPI[@]}" -np 2 "$TRAINER" "${job[@]}" \
      --batch-size 32 --epochs 3 --checkpoint-dir "$work/whole" 2>&1) \
  || fail "uninterrupted run failed: $out"
acc0=$(accuracy "$out")
[ -n "$acc0" ] || fail "no test accuracy: $out"
echo "ok: uninterrupted run, test accuracy $acc0"

# 2. Rank 1 killed after step 23 (epoch 2): one restart, from step 20.
start=$(date +%s)
out=$(FLUID_TEST_KILL_AT_STEP=23 FLUID_TEST_KILL_RANK=1 timeout 300 \
      "$FLUIDRUN" --max-restarts 1 --mpirun "$MPIRUN" "${MPI[@]}" -np 2 \
      "$TRAINER" "${job[@]}" --batch-size 32 --epochs 3 --checkpoint-dir "$work/killed" \
      2>&1) || fail "the restarted job failed: $out"
echo "$out" | grep -q "fluidrun: attempt 1 failed with exit status [1-9][0-9]* .*restart 1 of 1 on 2 rank(s) with --resume from $work/killed (newest checkpoint: ckpt-20)" \
  || fail "no line for the restart: $out"
echo "$out" | grep -q "fluidrun: attempt 2 resumed from step 20" \
  || fail "no line for the step resumed from: $out"
echo "$out" | grep -q "fluidrun: attempt 2 continues at epoch 2 at sample 256 of 1024, step 20" \
  || fail "no line for the sample resumed from: $out"
echo "$out" | grep -q "epoch 2/3  step 16/16" || fail "epoch 2 not finished: $out"
[ "$(echo "$out" | grep -c "^epoch 1/3")" -eq 1 ] \
  || fail "epoch 1 trained again: $out"
acc=$(accuracy "$out")
within_a_point "$acc" "$acc0" \
  || fail "accuracy $acc after the restart, $acc0 without: $out"
echo "ok: killed in epoch 2, restarted from step 20 in $(( $(date +%s) - start ))s, accuracy $acc (uninterrupted $acc0)"

# 3. 4 ranks x 16 killed after step 23; restarted on 2 ranks (x 32, the
# same global batch) at the sample the checkpoint recorded.
out=$(FLUID_TEST_KILL_AT_STEP=23 FLUID_TEST_KILL_RANK=3 timeout 300 \
      "$FLUIDRUN" --max-restarts 1 --np-on-restart 2 --min-np 2 \
      --mpirun "$MPIRUN" "${MPI[@]}" -np 4 "$TRAINER" "${job[@]}" \
      --batch-size 16 --epochs 3 \
      --checkpoint-dir "$work/shrunk" 2>&1) \
  || fail "the job restarted on 2 ranks failed: $out"
echo "$out" | grep -q "checkpoint saved to $work/shrunk (epoch 2 at sample 256, step 20)" \
  || fail "4 ranks saved no checkpoint at sample 256: $out"
echo "$out" | grep -q "restart 1 of 1 on 2 rank(s)" || fail "not on 2 ranks: $out"
echo "$out" | grep -q "resuming on 2 rank(s), the checkpoint was taken on 4: batch 32 per rank keeps its global batch of 64" \
  || fail "no line about the batch per rank: $out"
echo "$out" | grep -q "^resume position: epoch 2 at sample 256 of 1024, step 20; global batch 64 (32 per rank x 2 rank(s))" \
  || fail "not resumed at sample 256 on 2 ranks: $out"
echo "$out" | grep -q "trained 48 steps" || fail "not 48 steps in all: $out"
acc=$(accuracy "$out")
within_a_point "$acc" "$acc0" \
  || fail "accuracy $acc after 4 -> 2 ranks, $acc0 on 2 throughout: $out"
echo "ok: checkpoint of 4 ranks resumed on 2 at sample 256, accuracy $acc"

# 4. --max-restarts 0: mpirun's own exit status, no restart.
short=(--model lenet --data "$data" --train-samples 256 --test-samples 100
       --log-every 0 --batch-size 32)
FLUID_TEST_KILL_AT_STEP=1 timeout 120 "$MPIRUN" "${MPI[@]}" -np 2 \
  "$TRAINER" "${short[@]}" --checkpoint-dir "$work/plain" >/dev/null 2>&1
want=$?
[ "$want" -ne 0 ] && [ "$want" -ne 124 ] || fail "plain mpirun: status $want"
out=$(FLUID_TEST_KILL_AT_STEP=1 timeout 120 "$FLUIDRUN" --max-restarts 0 \
      --mpirun "$MPIRUN" "${MPI[@]}" -np 2 "$TRAINER" "${short[@]}" \
      --checkpoint-dir "$work/zero" 2>&1)
rc=$?
[ "$rc" -eq "$want" ] || fail "--max-restarts 0: status $rc, mpirun's is $want: $out"
echo "$out" | grep -q "fluidrun: .*restart" && fail "it restarted: $out"
echo "ok: --max-restarts 0 fails with mpirun's status $rc"

# 5. No --checkpoint-dir: refused before anything runs.
out=$("$FLUIDRUN" --max-restarts 1 --mpirun "$MPIRUN" "${MPI[@]}" -np 2 \
      "$TRAINER" "${short[@]}" 2>&1)
rc=$?
[ "$rc" -eq 2 ] || fail "without --checkpoint-dir: status $rc: $out"
echo "$out" | grep -q "^fluidrun: error: --max-restarts 1 needs the trainer's --checkpoint-dir" \
  || fail "no clear refusal: $out"
echo "$out" | grep -q "training" && fail "it launched: $out"
echo "ok: refused without --checkpoint-dir"

# 6. Killed before the first checkpoint: the restart starts over. The
# first attempt is given --resume too (a batch script that always passes
# it) and says only that it starts from the beginning: it loses nothing.
out=$(FLUID_TEST_KILL_AT_STEP=2 timeout 120 "$FLUIDRUN" --max-restarts 1 \
      --mpirun "$MPIRUN" "${MPI[@]}" -np 2 "$TRAINER" "${short[@]}" \
      --checkpoint-dir "$work/early" --resume 2>&1) \
  || fail "restart without a checkpoint failed: $out"
echo "$out" | grep -q "no checkpoint visible here yet" || fail "$out"
echo "$out" | grep -qx "fluidrun: attempt 1: no checkpoint yet, starting from the beginning" \
  || fail "no line saying the first attempt starts from the beginning: $out"
echo "$out" | grep -q "attempt 1 .*starts over" \
  && fail "the first attempt is said to start over: $out"
echo "$out" | grep -q "fluidrun: attempt 2 found no checkpoint yet: training starts over" \
  || fail "no line saying it starts over: $out"
echo "$out" | grep -q "test accuracy" || fail "did not finish: $out"
echo "ok: no checkpoint yet: the restart trains from scratch"

# 7. A launch that fails before training (a stand-in for mpirun that cannot
# place 4 ranks) is retried on half as many, not fewer than --min-np.
cat >"$work/mpirun4" <<EOF
#!/usr/bin/env bash
for a in "\$@"; do [ "\$a" = 4 ] && { echo "not enough slots" >&2; exit 1; }; done
exec "$MPIRUN" "\$@"
EOF
chmod +x "$work/mpirun4"
out=$(timeout 120 "$FLUIDRUN" --max-restarts 2 --min-np 2 --mpirun \
      "$work/mpirun4" "${MPI[@]}" -np 4 "$TRAINER" "${short[@]}" \
      --checkpoint-dir "$work/halved" 2>&1) \
  || fail "the halved launch failed: $out"
echo "$out" | grep -q "fluidrun: the attempt ended before training started: trying 2 rank(s) (--min-np 2)" \
  || fail "no halving: $out"
echo "$out" | grep -q "batch 32 per rank x 2 ranks" || fail "not 2 ranks: $out"
echo "ok: a launch that could not start was retried on 2 ranks"
