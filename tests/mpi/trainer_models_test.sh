#!/usr/bin/env bash
# `mpirun -np 2 trainer --model resnet|vgg` (built-in models with batch_norm,
# vgg also with dropout): a few steps on tiny data, the parameters compared
# across ranks every step; resnet with and without --sync-batch-norm.
#   trainer_models_test.sh MPIRUN TRAINER
source "$(dirname "$0")/trainer_common.sh" "$@"
MPI=("$MPIRUN" --oversubscribe -np 2)

make_idx "$work/data" 256 64
run() {
  local model=$1 flag=$2 out rc
  out=$(timeout 300 "${MPI[@]}" "$TRAINER" --model "$model" \
        --data "$work/data" --epochs 1 --batch-size 32 \
        --check-consistency 1 $flag 2>&1)
  rc=$?
  [ "$rc" -eq 0 ] || fail "$model $flag failed: $out"
  echo "$out" | grep -q "test accuracy" || fail "no test accuracy $flag: $out"
  echo "ok: $model, 2 ranks ${flag:-(per-rank statistics)}"
}
run resnet ""
run resnet --sync-batch-norm
run vgg ""
