#!/usr/bin/env bash
# The memory plan through the trainer: --plan-memory prints it and trains
# nothing; --memory-limit refuses a job planned over it, naming its largest
# items; a run prints the planned and the measured peak, and on 2 ranks the
# two agree within 10% for mlp, lenet, resnet and transformer, unsharded and
# with the optimizer sharded (stages 1 and 2) or the parameters too (stage
# 3, and at np 4 for mlp and lenet), with recompute and with gradient
# merge.
#   trainer_memory_test.sh MPIRUN TRAINER
source "$(dirname "$0")/trainer_common.sh" "$@"
MPI=("$MPIRUN" --oversubscribe -np 2)

make_idx "$work/data" 256 32
image=(--data "$work/data" --epochs 1 --log-every 0 --threads 1
       --test-samples 32)

out=$("$TRAINER" --model mlp --batch-size 64 --plan-memory --transpile-for 2 \
  2>&1) || fail "--plan-memory: $out"
grep -q "memory plan per rank (2 ranks, batch 64 per rank)" <<<"$out" ||
  fail "--plan-memory printed no plan for 2 ranks: $out"
grep -q "communication buffers" <<<"$out" || fail "no buckets: $out"
grep -q "^training" <<<"$out" && fail "--plan-memory trained: $out"
echo "ok: --plan-memory"

out=$("$TRAINER" --model mlp "${image[@]}" --memory-limit 1M 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "--memory-limit 1M: exit $rc, not 1: $out"
grep -q "over --memory-limit 1M (1.00 MiB); the largest items: fc_" \
  <<<"$out" || fail "--memory-limit 1M: $out"
grep -q "^training" <<<"$out" && fail "--memory-limit 1M trained: $out"
out=$("$TRAINER" --model mlp "${image[@]}" --memory-limit 12Q 2>&1) &&
  fail "--memory-limit 12Q accepted: $out"
grep -q "memory-limit must be a byte count" <<<"$out" ||
  fail "--memory-limit 12Q: $out"
echo "ok: --memory-limit refuses before training, naming the largest items"

# The planned and the measured peak of a 2-rank run agree within 10%.
check() {
  local what=$1 out planned measured
  shift
  out=$(timeout 300 "${MPI[@]}" "$TRAINER" "$@" 2>&1) || fail "$what: $out"
  planned=$(sed -n 's/^memory per rank: planned peak \([0-9.]*\) MiB.*/\1/p' \
    <<<"$out")
  measured=$(sed -n 's/.*, measured peak \([0-9.]*\) MiB.*/\1/p' <<<"$out")
  [ -n "$planned" ] && [ -n "$measured" ] || fail "$what: no memory line: $out"
  awk -v p="$planned" -v m="$measured" \
    'BEGIN { r = m / p; exit !(r > 0.9 && r < 1.1) }' ||
    fail "$what: measured $measured MiB against planned $planned MiB"
  echo "ok: $what: planned $planned MiB, measured $measured MiB"
}

for stage in 0 1 2 3; do
  shard=()
  [ "$stage" -gt 0 ] && shard=(--shard-optimizer "$stage")
  check "mlp stage $stage" --model mlp "${image[@]}" --batch-size 32 \
    --train-samples 256 "${shard[@]}"
  check "lenet stage $stage" --model lenet "${image[@]}" --batch-size 32 \
    --train-samples 256 "${shard[@]}"
  check "resnet stage $stage" --model resnet "${image[@]}" --batch-size 16 \
    --train-samples 128 "${shard[@]}"
  if [ -d /usr/share/games/fortunes ]; then
    check "transformer stage $stage" --model transformer --epochs 1 \
      --log-every 0 --threads 1 --batch-size 8 --train-samples 64 \
      --test-samples 8 "${shard[@]}"
  fi
done

# Stage 3 at np 4 (a quarter of each sharded bucket per rank).
make_idx "$work/data4" 512 32
MPI=("$MPIRUN" --oversubscribe -np 4)
for model in mlp lenet; do
  check "$model stage 3 np 4" --model "$model" --data "$work/data4" --epochs 1 \
    --log-every 0 --threads 1 --test-samples 32 --batch-size 32 \
    --train-samples 512 --shard-optimizer 3
done
MPI=("$MPIRUN" --oversubscribe -np 2)

# Recompute and gradient merge: the plan reads the rewritten program (the
# activations recompute frees after the forward pass, the accumulators
# gradient merge adds) with no knowledge of either.
check "resnet recompute" --model resnet "${image[@]}" --batch-size 16 \
  --train-samples 128 --recompute auto
check "mlp gradient merge" --model mlp "${image[@]}" --batch-size 16 \
  --train-samples 256 --gradient-merge 2
check "resnet gradient merge" --model resnet "${image[@]}" --batch-size 16 \
  --train-samples 128 --gradient-merge 2
if [ -d /usr/share/games/fortunes ]; then
  check "transformer recompute" --model transformer --epochs 1 \
    --log-every 0 --threads 1 --batch-size 8 --train-samples 64 \
    --test-samples 8 --recompute auto
fi
