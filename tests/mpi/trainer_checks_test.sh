#!/usr/bin/env bash
# `mpirun -np 2 trainer`: what rank 0 alone checks (checkpoint directory,
# test set) ends the whole job before training, with one line; a job
# without a test program evaluates forward-only and does not hang; a corrupt
# newest checkpoint gives way to the previous one.
#   trainer_checks_test.sh MPIRUN TRAINER
source "$(dirname "$0")/trainer_common.sh" "$@"
MPI=("$MPIRUN" --oversubscribe -np 2)

# Tiny MNIST-shaped data sets: a good one, and one whose test labels go
# beyond the model's 10 classes (the training labels are fine).
make_idx "$work/good" 1024 64
make_idx "$work/badtest" 1024 64 --test-labels-from 63:42
save_mlp

# The same job without its test program (TrainingJob field 8), dropped at
# the protobuf wire level.
/usr/bin/python3 - "$work/mlp.pb" "$work/notest.pb" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
def varint(i):
    v = s = 0
    while True:
        b = data[i]; i += 1
        v |= (b & 0x7f) << s; s += 7
        if b < 0x80: return v, i
out, i, dropped = b"", 0, False
while i < len(data):
    start = i
    key, i = varint(i)
    wire = key & 7
    if wire == 0:
        _, i = varint(i)
    elif wire == 2:
        n, i = varint(i); i += n
    else:
        sys.exit("unexpected wire type %d" % wire)
    if key >> 3 == 8:
        dropped = True
    else:
        out += data[start:i]
if not dropped:
    sys.exit("the job has no test program to drop")
open(sys.argv[2], "wb").write(out)
PY
[ -f "$work/notest.pb" ] || fail "could not write the job without test"

# 1. No test program: evaluation runs forward-only on rank 0; both ranks
# finish (the training program would leave rank 0 in an allreduce).
out=$(timeout 120 "${MPI[@]}" "$TRAINER" --program "$work/notest.pb" \
      --data "$work/good" 2>&1)
rc=$?
[ "$rc" -ne 124 ] || fail "the job without a test program hung: $out"
[ "$rc" -eq 0 ] || fail "the job without a test program failed: $out"
echo "$out" | grep -q "the job has no test program: evaluating with the forward part" \
  || fail "no line about the derived test program: $out"
echo "$out" | grep -q "test accuracy" || fail "no test accuracy: $out"
echo "ok: job without a test program, 2 ranks"

# Rank 0's early checks end every rank, before training, with one line.
expect_early_failure() {
  local what=$1 want=$2; shift 2
  local start took out rc
  start=$(date +%s)
  out=$(timeout 60 "${MPI[@]}" "$TRAINER" "$@" 2>&1)
  rc=$?
  took=$(( $(date +%s) - start ))
  [ "$rc" -ne 0 ] || fail "$what: exit 0: $out"
  [ "$rc" -ne 124 ] || fail "$what: the job hung: $out"
  [ "$took" -le 30 ] || fail "$what: took ${took}s to come down"
  [ "$(echo "$out" | grep -c "trainer: rank 0: error: .*$want")" -eq 1 ] \
    || fail "$what: not one line naming rank 0 and '$want': $out"
  echo "$out" | grep -q "trainer: rank 1: error" \
    && fail "$what: rank 1 reported too: $out"
  echo "$out" | grep -q "epoch 1/1" && fail "$what: it trained first: $out"
  echo "ok: $what ended the job before training in ${took}s"
}

# 2. An unwritable checkpoint directory (its parent is a regular file).
touch "$work/file"
expect_early_failure "unwritable checkpoint directory" "is not writable" \
  --program "$work/mlp.pb" --data "$work/good" \
  --checkpoint-dir "$work/file/ckpt"

# 3. A test label beyond the model's classes.
expect_early_failure "test label out of range" "label 42 of sample 63" \
  --program "$work/mlp.pb" --data "$work/badtest"

# 4. A corrupt newest checkpoint: resume from the previous one.
ck="$work/ckpt"
out=$(timeout 120 "${MPI[@]}" "$TRAINER" --program "$work/mlp.pb" \
      --data "$work/good" --checkpoint-dir "$ck" --epochs 2 2>&1) \
  || fail "2-rank run with checkpoints failed: $out"
[ -d "$ck/ckpt-8" ] && [ -d "$ck/ckpt-16" ] || fail "no two checkpoints: $(ls "$ck")"
victim=$(find "$ck/ckpt-16" -name '*.tensor' -size +0 | sort | head -1)
/usr/bin/python3 -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[3] ^= 0x10; open(p, "wb").write(b)' "$victim"
out=$(timeout 120 "${MPI[@]}" "$TRAINER" --program "$work/mlp.pb" \
      --data "$work/good" --checkpoint-dir "$ck" --epochs 3 --resume \
      --check-consistency 4 2>&1) || fail "resume past a corrupt checkpoint failed: $out"
echo "$out" | grep -q "skipped a checkpoint: checkpoint '$ck/ckpt-16' is damaged" \
  || fail "no line saying why ckpt-16 was skipped: $out"
echo "$out" | grep -q "resumed from $ck at epoch 1, step 8 ($ck/ckpt-8)" \
  || fail "did not resume from ckpt-8: $out"
echo "$out" | grep -q "epoch 2/3" || fail "did not train epoch 2: $out"
echo "ok: 2-rank resume past a corrupt newest checkpoint"
