#!/usr/bin/env bash
# Checkpoints load under any layout: one saved by np 4, sharding stage 2,
# bf16 resumes at np 2 without sharding in float32, at np 2 sharded in
# float32, and in one process; each resumed run records its own layout in
# its checkpoint, and a checkpoint of the other layout resumes back at np 4,
# stage 2, bf16. Resuming the same checkpoint sharded and unsharded at np 2
# (float32, where sharding changes no number) gives bitwise the same next
# checkpoint: the loaded optimizer state reaches each rank's shard intact.
# Stage 3 checkpoints cross the same layouts, and gradient merge's resume
# without it.
#   trainer_layouts_test.sh MPIRUN TRAINER
source "$(dirname "$0")/trainer_common.sh" "$@"
MPI=("$MPIRUN" --oversubscribe)

make_idx "$work/data" 512 64
base=(--model mlp --optimizer adam --data "$work/data" --log-every 0
      --threads 1 --batch-size 16)

# Resumes a copy of the checkpoint directory $1 into $2 with the remaining
# arguments (an -np and layout flags), for one more epoch; prints the log.
resume() {
  local from=$1 to=$2 np=$3
  shift 3
  cp -r "$from" "$to"
  timeout 300 "${MPI[@]}" -np "$np" "$TRAINER" "${base[@]}" --epochs 2 \
    --resume --checkpoint-dir "$to" "$@" 2>&1
}

out=$(timeout 300 "${MPI[@]}" -np 4 "$TRAINER" "${base[@]}" --epochs 1 \
  --shard-optimizer 2 --amp bf16 --checkpoint-dir "$work/a" 2>&1) ||
  fail "np 4, stage 2, bf16: $out"

for case in "u 2" "s 2 --shard-optimizer 2" "one 1"; do
  read -r name np flags <<<"$case"
  # shellcheck disable=SC2086
  out=$(resume "$work/a" "$work/$name" "$np" $flags) ||
    fail "resuming at np $np $flags: $out"
  grep -q "the checkpoint was saved under np 4, sharding stage 2, bf16" \
    <<<"$out" || fail "no saved layout at np $np $flags: $out"
  grep -q "test accuracy" <<<"$out" || fail "no accuracy: $out"
done
echo "ok: an np 4, stage 2, bf16 checkpoint resumes at np 2 (sharded or" \
  "not, float32) and in one process"

# The same checkpoint resumed sharded and unsharded: the same next one.
for f in "$work"/u/ckpt-16/*.tensor; do
  cmp -s "$f" "$work/s/ckpt-16/$(basename "$f")" ||
    fail "$(basename "$f") differs between the sharded and unsharded resumes"
done
echo "ok: resumed sharded and unsharded, the next checkpoints are identical"

# And back: the float32 np 2 checkpoint resumes at np 4, stage 2, bf16.
out=$(cp -r "$work/u" "$work/back" &&
  timeout 300 "${MPI[@]}" -np 4 "$TRAINER" "${base[@]}" --epochs 3 \
    --resume --checkpoint-dir "$work/back" --shard-optimizer 2 \
    --amp bf16 2>&1) || fail "back to np 4, stage 2, bf16: $out"
grep -q "the checkpoint was saved under np 2, float32" <<<"$out" ||
  fail "no saved layout going back: $out"
grep -q "resumed from .* at epoch 2" <<<"$out" || fail "no resume: $out"
echo "ok: and back to np 4, stage 2, bf16"

# Stage 3 (parameters sharded too): saved at np 4 in bf16, resumed at np 2
# unsharded in float32, at np 2 in stage 3, in one process, and back.
out=$(timeout 300 "${MPI[@]}" -np 4 "$TRAINER" "${base[@]}" --epochs 1 \
  --shard-optimizer 3 --amp bf16 --checkpoint-dir "$work/z" 2>&1) ||
  fail "np 4, stage 3, bf16: $out"
for case in "zu 2" "zs 2 --shard-optimizer 3" "z1 1"; do
  read -r name np flags <<<"$case"
  # shellcheck disable=SC2086
  out=$(resume "$work/z" "$work/$name" "$np" $flags) ||
    fail "resuming stage 3 at np $np $flags: $out"
  grep -q "the checkpoint was saved under np 4, sharding stage 3, bf16" \
    <<<"$out" || fail "no saved layout at np $np $flags: $out"
done
out=$(cp -r "$work/zu" "$work/zback" &&
  timeout 300 "${MPI[@]}" -np 4 "$TRAINER" "${base[@]}" --epochs 3 \
    --resume --checkpoint-dir "$work/zback" --shard-optimizer 3 \
    --amp bf16 2>&1) || fail "back to np 4, stage 3, bf16: $out"
grep -q "resumed from .* at epoch 2" <<<"$out" || fail "no resume: $out"
echo "ok: an np 4, stage 3, bf16 checkpoint resumes at np 2 (stage 3 or" \
  "unsharded, float32), in one process, and back"

# Gradient merge's checkpoints too: saved at np 2 merging 2 micro-steps,
# resumed in one process without merging.
timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --epochs 1 \
  --gradient-merge 2 --checkpoint-dir "$work/gm" >/dev/null 2>&1 ||
  fail "np 2, gradient merge 2"
out=$(resume "$work/gm" "$work/gm1" 1) || fail "resuming without merge: $out"
grep -q "the checkpoint was saved under np 2, float32, gradient merge 2" \
  <<<"$out" || fail "no saved layout with gradient merge: $out"
echo "ok: a gradient merge checkpoint resumes without it"

# fluidrun restarts a stage 3 bf16 job on fewer ranks: 4 ranks, one killed
# after step 12 (the checkpoint of step 8 is the last), go on at np 2.
FLUIDRUN="$COMMON_DIR/../../tools/fluidrun"
out=$(FLUID_TEST_KILL_AT_STEP=12 FLUID_TEST_KILL_RANK=3 timeout 300 \
  "$FLUIDRUN" --max-restarts 1 --np-on-restart 2 --min-np 2 \
  --mpirun "$MPIRUN" --oversubscribe -np 4 "$TRAINER" "${base[@]}" \
  --epochs 2 --shard-optimizer 3 --amp bf16 --checkpoint-every 4 \
  --checkpoint-dir "$work/restart" 2>&1) ||
  fail "stage 3 restarted on 2 ranks: $out"
grep -q "restart 1 of 1 on 2 rank(s)" <<<"$out" || fail "not on 2 ranks: $out"
grep -q "the checkpoint was saved under np 4, sharding stage 3, bf16" \
  <<<"$out" || fail "no saved layout on restart: $out"
grep -q "test accuracy" <<<"$out" || fail "no accuracy after restart: $out"
echo "ok: fluidrun restarts a stage 3 job on 2 of its 4 ranks"

# A sharded job's checkpoints hold what the rewrites of one rank's work
# add: fp16's loss scaling and gradient merge's accumulators and counter.
timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --epochs 1 \
  --shard-optimizer 2 --amp fp16 --gradient-merge 2 \
  --checkpoint-dir "$work/f16" >/dev/null 2>&1 ||
  fail "np 2, stage 2, fp16, gradient merge 2"
manifest=$(ls -d "$work"/f16/ckpt-* | tail -1)/manifest.pb
for name in loss_scaling num_good_steps @GRAD_MERGE_STEP@ \
            fc_0.w_0@GRAD@GRAD_MERGE; do
  grep -aqF "$name" "$manifest" || fail "the sharded checkpoint lacks $name"
done
echo "ok: a sharded fp16 gradient-merge checkpoint holds the loss scaling" \
  "and the accumulators"
