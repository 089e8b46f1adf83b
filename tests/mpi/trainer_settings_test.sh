#!/usr/bin/env bash
# Ranks started with different run settings (MPMD: `mpirun -np 1 trainer A :
# -np 1 trainer B`) stop at once with one line naming the setting and each
# rank's value, instead of hanging in mismatched collectives.
#   trainer_settings_test.sh MPIRUN TRAINER
source "$(dirname "$0")/trainer_common.sh" "$@"
MPI=("$MPIRUN" --oversubscribe)

# Two tiny MNIST-shaped data sets of different sizes.
make_idx "$work/big" 512 32
make_idx "$work/small" 256 32
save_mlp
base=(--program "$work/mlp.pb" --log-every 0)

# A healthy 2-rank run with the same settings everywhere still trains.
out=$(timeout 120 "${MPI[@]}" -np 1 "$TRAINER" "${base[@]}" --data "$work/big" \
      --epochs 2 : -np 1 "$TRAINER" "${base[@]}" --data "$work/big" \
      --epochs 2 2>&1) \
  || fail "healthy MPMD run failed: $out"
echo "$out" | grep -q "test accuracy" || fail "no test accuracy: $out"
echo "ok: healthy MPMD run"

# A checkpoint for the --resume case.
timeout 120 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --data "$work/big" \
  --checkpoint-dir "$work/ckpt" >/dev/null 2>&1 || fail "checkpoint run"

# expect SETTING "RANK0 FLAGS" "RANK1 FLAGS" "VALUES IN THE LINE"; a rank
# reads the big data set unless its flags name another.
expect() {
  local setting=$1 values=$4
  local -a a b
  read -r -a a <<<"$2"
  read -r -a b <<<"$3"
  [[ " $2 " == *" --data "* ]] || a+=(--data "$work/big")
  [[ " $3 " == *" --data "* ]] || b+=(--data "$work/big")
  local start rc took out
  start=$(date +%s)
  out=$(timeout 60 "${MPI[@]}" -np 1 "$TRAINER" "${base[@]}" "${a[@]}" : \
        -np 1 "$TRAINER" "${base[@]}" "${b[@]}" 2>&1)
  rc=$?
  took=$(( $(date +%s) - start ))
  [ "$rc" -ne 124 ] || fail "$setting: the job hung: $out"
  [ "$rc" -ne 0 ] || fail "$setting: ranks that differ exited 0: $out"
  [ "$took" -le 30 ] || fail "$setting: took ${took}s to come down"
  echo "$out" | grep -qF -- "error: ranks disagree on $setting: $values" \
    || fail "$setting: no line naming it and the values: $out"
  # Both ranks fail at once: each line is whole, never two interleaved.
  echo "$out" | grep "trainer" | grep -vqE \
    "^trainer: rank [01]: error: ranks disagree on [^:]*: rank 0 has .*, rank 1 has [^:]*$" \
    && fail "$setting: a malformed or interleaved error line: $out"
  echo "ok: $setting (${took}s, rc $rc)"
}

expect --epochs "--epochs 3" "--epochs 2" "rank 0 has 3, rank 1 has 2"
expect --batch-size "--batch-size 32" "" "rank 0 has 32, rank 1 has 64"
expect --train-samples "--train-samples 100" "" "rank 0 has 100, rank 1 has 0"
expect --test-samples "" "--test-samples 10" "rank 0 has 0, rank 1 has 10"
expect "--data (training samples)" "" "--data $work/small" \
  "rank 0 has 512, rank 1 has 256"
expect --check-consistency "--check-consistency 5" "" \
  "rank 0 has 5, rank 1 has 0"
expect --checkpoint-every "--checkpoint-dir $work/ck2 --checkpoint-every 3" \
  "--checkpoint-dir $work/ck2" "rank 0 has 3, rank 1 has 0"
expect --resume "--checkpoint-dir $work/ckpt --resume" \
  "--checkpoint-dir $work/ckpt" "rank 0 has yes, rank 1 has no"
expect --resume "--checkpoint-dir $work/ckpt" \
  "--checkpoint-dir $work/ckpt --resume" "rank 0 has no, rank 1 has yes"
expect --seed "--seed 1" "--seed 2" "rank 0 has 1, rank 1 has 2"
# The strategy's fields, each named by its flag and its field, in the
# field's units; a field without a flag (set by --strategy-set) is compared
# all the same.
expect "--bucket-mb (DistributedStrategy.bucket_bytes)" "--bucket-mb 0.5" "" \
  "rank 0 has 524288, rank 1 has 4194304"
expect "--no-overlap (DistributedStrategy.overlap_allreduce)" "" \
  "--no-overlap" "rank 0 has true, rank 1 has false"
expect "--sparse-dense-ratio (DistributedStrategy.sparse_dense_ratio)" \
  "--sparse-dense-ratio 0.5" "" "rank 0 has 0.5, rank 1 has 0.25"
expect "DistributedStrategy.average_gradients" \
  "--strategy-set average_gradients=false" "" \
  "rank 0 has false, rank 1 has true"

# Data of the same size that is not the same data: the same images with
# other labels on rank 1 (make_idx draws the images first)...
make_idx "$work/relabeled" 512 32 --train-labels-from 0:3
expect "--data (crc32 of training label)" "" "--data $work/relabeled" \
  "rank 0 has 0x"

# ...and, for a text model, another fortunes directory on rank 1 whose
# split sizes match (--train-samples, --test-samples): another vocabulary.
make_fortunes() {  # DIR LETTERS: three topics of 80 quotations
  /usr/bin/python3 - "$1" "$2" <<'PY' || fail "could not write $1"
import os, random, sys
d, letters = sys.argv[1], sys.argv[2]
os.makedirs(d, exist_ok=True)
rng = random.Random(1)
for topic in ("alpha", "beta", "gamma"):
    with open(os.path.join(d, topic), "w") as f:
        for _ in range(80):
            words = ("".join(rng.choice(letters) for _ in range(4))
                     for _ in range(8))
            f.write(" ".join(words) + "\n%\n")
PY
}
make_fortunes "$work/fortunes" abcdefghij
make_fortunes "$work/fortunes2" abcdefghik
saved_base=("${base[@]}")
base=(--model textcnn --log-every 0 --batch-size 8 --train-samples 64
      --test-samples 8)
expect "--data (vocabulary)" "--data $work/fortunes" \
  "--data $work/fortunes2" "rank 0 has '14 ids, crc32 0x"
base=("${saved_base[@]}")

# The rank in the error line is the communicator's, not the environment's.
out=$(timeout 60 "${MPI[@]}" \
      -np 1 env OMPI_COMM_WORLD_RANK=5 "$TRAINER" "${base[@]}" \
        --data "$work/big" --epochs 3 : \
      -np 1 env OMPI_COMM_WORLD_RANK=6 "$TRAINER" "${base[@]}" \
        --data "$work/big" --epochs 2 2>&1)
echo "$out" | grep -qE "^trainer: rank [01]: error: ranks disagree on --epochs" \
  || fail "no error line with the communicator's rank: $out"
echo "$out" | grep -qE "^trainer: rank [56]:" \
  && fail "the error line took its rank from the environment: $out"
echo "ok: error lines name the communicator's rank"
