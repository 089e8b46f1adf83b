#!/usr/bin/env bash
# `mpirun -np 2 trainer` on a job with batch_norm and dropout (built with the
# Python package): with and without --sync-batch-norm it trains, compares the
# parameters across ranks every step (the running statistics, per rank
# between syncs, are exempt), averages the running statistics before the
# checkpoint and the evaluation, and the checkpoint holds moved statistics
# and the dropout step counter.
#   trainer_norm_test.sh MPIRUN TRAINER PYTHONPATH
source "$(dirname "$0")/trainer_common.sh" "$@"
export PYTHONPATH=$3
MPI=("$MPIRUN" --oversubscribe -np 2)

make_idx "$work/data" 512 64
/usr/bin/python3 - "$work/norm.pb" <<'PY' || fail "could not write the job"
import sys
import fluid
L = fluid.layers
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    image = L.data("image", [1, 28, 28])
    label = L.data("label", [1], dtype="int64")
    h = L.conv2d(image, 4, 5, stride=2)
    h = L.batch_norm(h, act="relu")
    h = L.dropout(L.fc(h, 32, act="relu"), 0.3)
    logits = L.fc(h, 10)
    loss = L.mean(L.softmax_with_cross_entropy(logits, label))
    acc = L.accuracy(logits, label)
    fluid.optimizer.Momentum(0.01, 0.9).minimize(loss)
fluid.io.save_job(sys.argv[1], main, startup, feeds=[image, label],
                  loss=loss, metrics=[acc])
PY

for flag in "" --sync-batch-norm; do
  ckpt="$work/ckpt$flag"
  out=$(timeout 300 "${MPI[@]}" "$TRAINER" --program "$work/norm.pb" \
        --data "$work/data" --epochs 1 --batch-size 32 \
        --check-consistency 1 --checkpoint-dir "$ckpt" $flag 2>&1)
  rc=$?
  [ "$rc" -eq 0 ] || fail "trainer $flag failed: $out"
  echo "$out" | grep -q "checkpoint saved" || fail "no checkpoint $flag: $out"
  echo "$out" | grep -q "test accuracy" || fail "no test accuracy $flag: $out"
  /usr/bin/python3 - "$work/norm.pb" "$ckpt" <<'PY' || fail "checkpoint $flag"
import sys
import numpy as np
import fluid
job = fluid.io.load_job(sys.argv[1])
scope = fluid.Scope()
fluid.io.load_persistables(None, sys.argv[2], job["main"], scope=scope)
mean, var = scope.get("batch_norm_0.w_1"), scope.get("batch_norm_0.w_2")
assert np.all(mean != 0) and np.all(var != 1), (mean, var)
steps = scope.get("dropout_0.step")[0]
assert steps == 8, steps  # 512 samples / 2 ranks / 32 per step
PY
  echo "ok: batch_norm and dropout, 2 ranks ${flag:-(per-rank statistics)}"
done
