#!/usr/bin/env bash
# Tensor parallelism through the trainer (--tp): `mpirun -np 2 trainer --tp
# 2` prints the per-step losses of one process with the same seed and
# batch (to the printed 4 decimals, rounding aside), np 4 --tp 2 those of
# np 2 without it (each data-parallel group reads what one rank of np 2
# reads), the parameters stay equal within each data-parallel group
# (--check-consistency 1), and a tensor-parallel checkpoint (parameters
# whole) resumes without tensor parallelism, and the other way round, also
# with the optimizer state sharded over the data-parallel ring. The
# transformer (attention split by heads) trains on fortunes when present;
# a rank killed inside the group ends the job in seconds.
#   trainer_tp_test.sh MPIRUN TRAINER
source "$(dirname "$0")/trainer_common.sh" "$@"
MPI=("$MPIRUN" --oversubscribe)

make_idx "$work/data" 256 64
base=(--model mlp --optimizer adam --data "$work/data" --log-every 1
      --threads 1 --batch-size 16 --epochs 1 --check-consistency 1)

one=$(timeout 300 "$TRAINER" "${base[@]}" 2>&1) || fail "np 1: $one"
tp2=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --tp 2 \
  --checkpoint-dir "$work/tp2" 2>&1) || fail "np 2 --tp 2: $tp2"
grep -q "1 data-parallel x 2 tensor-parallel" <<<"$tp2" ||
  fail "np 2 --tp 2: no layout in the banner: $tp2"
same_losses "$one" "$tp2" "np 2 --tp 2 against np 1"
grep -q "test accuracy" <<<"$tp2" || fail "np 2 --tp 2: not evaluated: $tp2"
echo "ok: np 2 --tp 2 prints np 1's losses; $(grep "^test accuracy" <<<"$tp2")"

dp2=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" 2>&1) ||
  fail "np 2: $dp2"
tp2dp2=$(timeout 300 "${MPI[@]}" -np 4 "$TRAINER" "${base[@]}" --tp 2 2>&1) ||
  fail "np 4 --tp 2: $tp2dp2"
same_losses "$dp2" "$tp2dp2" "np 4 --tp 2 against np 2"
echo "ok: np 4 --tp 2 prints np 2's losses"

# The tensor-parallel checkpoint resumes on one process and on np 2 without
# tensor parallelism; a plain np 2 checkpoint resumes with --tp 2.
timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" \
  --checkpoint-dir "$work/dp2" >/dev/null 2>&1 || fail "np 2 checkpoint"
cp -r "$work/tp2" "$work/tp2b"
resumes_each "-np 1 $TRAINER --checkpoint-dir $work/tp2" \
  "-np 2 $TRAINER --checkpoint-dir $work/tp2b" \
  "-np 2 $TRAINER --tp 2 --checkpoint-dir $work/dp2"
echo "ok: tensor-parallel checkpoints resume without it, and the other way"

# ZeRO on the data-parallel ring: np 4 --tp 2 --shard-optimizer Z (2: the
# optimizer state and gradients sharded; 3: the parameters' slices too)
# trained for 2 epochs prints the same second epoch as the same job resumed
# from its epoch-1 checkpoint, and as np 2 without either resumed from it.
for z in 2 3; do
  resumes_exactly 4 --tp 2 --shard-optimizer "$z"
  echo "ok: --tp 2 with --shard-optimizer $z resumes exactly, also on np 2;" \
    "$(grep "^per rank:" <<<"$full")"
done

# A rank killed inside the tensor-parallel group's collectives ends the job
# in seconds (its partner waits in a ring allreduce).
killed_rank_ends "--tp 2" --tp 2

out=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --tp 3 2>&1) &&
  fail "--tp 3 on 2 ranks was accepted: $out"
grep -q "must divide the rank count (2)" <<<"$out" ||
  fail "--tp 3 on 2 ranks: $out"
echo "ok: --tp 3 on 2 ranks is refused"

# Gradient merge: np 2 --tp 2 --gradient-merge 2 prints np 1's losses with
# the same merge.
gm1=$(timeout 300 "$TRAINER" "${base[@]}" --gradient-merge 2 2>&1) ||
  fail "np 1 --gradient-merge 2: $gm1"
gm2=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --tp 2 \
  --gradient-merge 2 2>&1) || fail "np 2 --tp 2 --gradient-merge 2: $gm2"
same_losses "$gm1" "$gm2" "np 2 --tp 2 --gradient-merge 2 against np 1"
echo "ok: --tp 2 --gradient-merge 2 prints np 1's losses"

if [ ! -d /usr/share/games/fortunes ]; then
  echo "skipped: the transformer (Debian's 'fortunes' package is missing)"
  exit 0
fi
text=(--model transformer --train-samples 24 --test-samples 8 --batch-size 4
      --epochs 1 --log-every 1 --threads 1 --lr 0.003 --warmup-steps 2
      --decay-steps 12)
lm1=$(timeout 300 "$TRAINER" "${text[@]}" 2>&1) || fail "transformer np 1: $lm1"
lm2=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${text[@]}" --tp 2 \
  --check-consistency 1 2>&1) || fail "transformer --tp 2: $lm2"
same_losses "$lm1" "$lm2" "transformer np 2 --tp 2 against np 1"
echo "ok: the transformer with --tp 2 prints np 1's losses;" \
  "$(grep "^validation" <<<"$lm2")"

# Recompute: the replays of the split layers split as they do.
lmr=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${text[@]}" --tp 2 \
  --recompute 2>&1) || fail "transformer --tp 2 --recompute: $lmr"
same_losses "$lm1" "$lmr" "transformer np 2 --tp 2 --recompute against np 1"
echo "ok: the transformer with --tp 2 --recompute prints np 1's losses;" \
  "$(grep "^memory per rank" <<<"$lmr")"
