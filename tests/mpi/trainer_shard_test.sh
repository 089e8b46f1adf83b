#!/usr/bin/env bash
# The sharded optimizer through the trainer: each rank holds 1/N of the
# optimizer state (the trainer's memory line), and its checkpoints are the
# unsharded format: a sharded np 4 run resumes sharded on np 2 and
# unsharded on np 2, and an unsharded checkpoint resumes sharded; the same
# with --shard-overlap-gather, whose numbers (losses, checkpoints, test
# accuracy) equal those without it; with --amp bf16 or fp16 its gradients
# travel in 16 bits.
#   trainer_shard_test.sh MPIRUN TRAINER
source "$(dirname "$0")/trainer_common.sh" "$@"
MPI=("$MPIRUN" --oversubscribe)
bytes=()

make_idx "$work/data" 512 64
base=(--model mlp --optimizer adam --data "$work/data" --log-every 0
      --threads 1 --batch-size 16)

# MiB of optimizer state per rank, from the trainer's memory line.
state_mib() {
  sed -n 's/^per rank: .*optimizer state \([0-9.]*\) MiB$/\1/p' <<<"$1"
}

plain=$(timeout 300 "${MPI[@]}" -np 4 "$TRAINER" "${base[@]}" --epochs 1 \
  2>&1) || fail "unsharded np 4: $plain"
sharded=$(timeout 300 "${MPI[@]}" -np 4 "$TRAINER" "${base[@]}" --epochs 1 \
  --shard-optimizer 2 --checkpoint-dir "$work/s4" 2>&1) ||
  fail "sharded np 4: $sharded"
full=$(state_mib "$plain")
part=$(state_mib "$sharded")
[ -n "$full" ] && [ -n "$part" ] || fail "no memory line: $plain $sharded"
awk -v f="$full" -v p="$part" 'BEGIN { r = p / f; exit !(r > 0.24 && r < 0.26) }' ||
  fail "optimizer state $part MiB sharded against $full MiB: not 1/4"
echo "ok: optimizer state per rank $part MiB sharded, $full MiB unsharded"

# The sharded np 4 checkpoint resumes on np 2, sharded and not; the same
# with the gathers overlapped (an overlapped np 4 save, resumed overlapped).
timeout 300 "${MPI[@]}" -np 4 "$TRAINER" "${base[@]}" --epochs 1 \
  --shard-optimizer 2 --shard-overlap-gather --checkpoint-dir "$work/o4" \
  >/dev/null 2>&1 || fail "sharded overlapped np 4"
cp -r "$work/s4" "$work/s4b"
cp -r "$work/o4" "$work/o4b"
for run in "--shard-optimizer 2 --checkpoint-dir $work/s4" \
           "--checkpoint-dir $work/s4b" \
           "--shard-optimizer 2 --shard-overlap-gather --checkpoint-dir $work/o4" \
           "--checkpoint-dir $work/o4b"; do
  # shellcheck disable=SC2086
  out=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --epochs 2 \
    --resume $run 2>&1) || fail "resuming ($run): $out"
  grep -q "resumed from .* at epoch 1" <<<"$out" ||
    fail "did not resume ($run): $out"
  grep -q "test accuracy" <<<"$out" || fail "no accuracy ($run): $out"
done
echo "ok: a sharded np 4 checkpoint (overlapped or not) resumes on np 2," \
  "sharded and unsharded"

# An unsharded checkpoint resumes sharded, overlapped or not.
timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --epochs 1 \
  --checkpoint-dir "$work/u2" >/dev/null 2>&1 || fail "unsharded checkpoint"
cp -r "$work/u2" "$work/u2b"
for run in "--shard-optimizer 1 --checkpoint-dir $work/u2" \
           "--shard-optimizer 2 --shard-overlap-gather --checkpoint-dir $work/u2b"; do
  # shellcheck disable=SC2086
  out=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --epochs 2 \
    --resume $run 2>&1) ||
    fail "resuming sharded from an unsharded checkpoint ($run): $out"
  grep -q "resumed from .* at epoch 1" <<<"$out" ||
    fail "did not resume ($run): $out"
done
echo "ok: an unsharded checkpoint resumes sharded, overlapped or not"

# Overlapped gathers change no number: the losses of every epoch, the
# checkpoints taken mid-epoch and at each epoch's end (resumed), and the
# test accuracy equal those of the gathers waited for in the step.
numbers() {  # the progress and accuracy lines without the timings
  sed -n 's/  [0-9]* samples\/s.*//p; s/; trained .*//p' <<<"$1" |
    grep -E "^(epoch|test accuracy)"
}
logged=(--model mlp --optimizer adam --data "$work/data" --log-every 4
        --threads 1 --batch-size 16)
for og in "" "--shard-overlap-gather"; do
  dir="$work/c${og:+o}"
  # shellcheck disable=SC2086
  out=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${logged[@]}" --epochs 2 \
    --shard-optimizer 2 $og --checkpoint-every 12 \
    --checkpoint-dir "$dir" 2>&1) || fail "checkpointing run ($og): $out"
  numbers "$out" >"$work/train${og:+o}.txt"
  # shellcheck disable=SC2086
  out=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --epochs 3 \
    --shard-optimizer 2 $og --resume --checkpoint-dir "$dir" 2>&1) ||
    fail "resuming ($og): $out"
  numbers "$out" >"$work/resumed${og:+o}.txt"
done
grep -q "test accuracy" "$work/train.txt" || fail "no numbers: $(cat "$work/train.txt")"
cmp -s "$work/train.txt" "$work/traino.txt" ||
  fail "overlapped run differs: $(diff "$work/train.txt" "$work/traino.txt")"
cmp -s "$work/resumed.txt" "$work/resumedo.txt" ||
  fail "overlapped resume differs: $(diff "$work/resumed.txt" "$work/resumedo.txt")"
echo "ok: overlapped gathers give the same losses, checkpoints and accuracy"
# Mixed precision, sharded: the gradients are reduce-scattered in 16 bits,
# half the bytes of float32 (the trainer's last line); fp16's adds the
# found-infinite flag's int32 max-reduction, 4 bytes a step.
wire_bytes() { sed -n 's/.*allreduced \([0-9]*\) bytes.*/\1/p' <<<"$1"; }
for amp in "bf16 --grad-compression none" bf16 fp16; do
  # shellcheck disable=SC2086
  out=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --epochs 1 \
    --shard-optimizer 2 --amp $amp 2>&1) || fail "sharded --amp $amp: $out"
  bytes[${#bytes[@]}]=$(wire_bytes "$out")
done
[ -n "${bytes[0]}" ] || fail "no wire bytes: $out"
[ "$((bytes[0] / 2))" -eq "${bytes[1]}" ] ||
  fail "bf16 reduce-scatter moved ${bytes[1]} bytes, float32 ${bytes[0]}"
[ "$((bytes[0] / 2 + 16 * 4))" -eq "${bytes[2]}" ] ||
  fail "fp16 reduce-scatter moved ${bytes[2]} bytes, float32 ${bytes[0]}"
echo "ok: sharded bf16 and fp16 gradients move half the bytes" \
  "(${bytes[1]}, ${bytes[2]} against ${bytes[0]})"
# Stage 3: a rank holds a quarter of the parameters at np 4 (the memory
# line), and its checkpoint, saved in bf16, is in the full form: it resumes
# at np 2 unsharded in float32 and in one process; an unsharded np 2
# checkpoint resumes at stage 3 in bf16.
params_mib() {
  sed -n 's/^per rank: parameters \([0-9.]*\) MiB.*/\1/p' <<<"$1"
}
s3=$(timeout 300 "${MPI[@]}" -np 4 "$TRAINER" "${base[@]}" --epochs 1 \
  --shard-optimizer 3 --amp bf16 --checkpoint-dir "$work/t4" 2>&1) ||
  fail "stage 3 np 4: $s3"
grep -q "test accuracy" <<<"$s3" || fail "stage 3 did not evaluate: $s3"
awk -v f="$(params_mib "$plain")" -v p="$(params_mib "$s3")" \
  'BEGIN { r = p / f; exit !(r > 0.24 && r < 0.27) }' ||
  fail "stage 3 parameters $(params_mib "$s3") MiB against $(params_mib "$plain")"
cp -r "$work/t4" "$work/t4b"
out=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --epochs 2 \
  --resume --checkpoint-dir "$work/t4" 2>&1) || fail "stage 3 at np 2: $out"
grep -q "resumed from .* at epoch 1" <<<"$out" || fail "np 2 resume: $out"
out=$(timeout 300 "$TRAINER" "${base[@]}" --epochs 2 --resume \
  --checkpoint-dir "$work/t4b" 2>&1) || fail "stage 3 in one process: $out"
grep -q "resumed from .* at epoch 1" <<<"$out" || fail "np 1 resume: $out"
out=$(timeout 300 "${MPI[@]}" -np 4 "$TRAINER" "${base[@]}" --epochs 3 \
  --resume --shard-optimizer 3 --amp bf16 --checkpoint-dir "$work/u2b" 2>&1) ||
  fail "unsharded checkpoint at stage 3: $out"
grep -q "resumed from .* at epoch 2" <<<"$out" || fail "stage 3 resume: $out"
grep -q "test accuracy" <<<"$out" || fail "stage 3 resume: $out"
echo "ok: stage 3 holds $(params_mib "$s3") MiB of parameters per rank" \
  "(unsharded $(params_mib "$plain")); its checkpoint resumes at np 2," \
  "np 1 and back"
# Stage 3 at np 2 computes what stage 2 does (two ranks' sums have one
# order): lenet, and resnet with sync batch norm in bf16, log the same
# losses and test accuracy.
# (lenet also at stage 3 keeping every gathered bucket from the forward to
# the backward pass, sharding_configs.max_reuse_distance.)
reuse=(--strategy-set sharding_configs.max_reuse_distance=1000000000)
for model in "lenet" "resnet --sync-batch-norm --amp bf16"; do
  for stage in 2 3 3r; do
    [ "$stage" = 3r ] && [ "$model" != lenet ] && continue
    extra=()
    [ "$stage" = 3r ] && extra=("${reuse[@]}")
    # shellcheck disable=SC2086
    out=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" --model $model \
      --optimizer momentum --data "$work/data" --log-every 2 --threads 1 \
      --batch-size 16 --epochs 1 --train-samples 128 --seed 3 \
      --shard-optimizer "${stage%r}" "${extra[@]}" 2>&1) ||
      fail "$model stage $stage: $out"
    numbers "$out" >"$work/stage$stage.txt"
  done
  grep -q "test accuracy" "$work/stage3.txt" ||
    fail "$model stage 3: no numbers: $(cat "$work/stage3.txt")"
  cmp -s "$work/stage2.txt" "$work/stage3.txt" ||
    fail "$model stage 3 differs: $(diff "$work/stage2.txt" "$work/stage3.txt")"
  [ "$model" != lenet ] || cmp -s "$work/stage2.txt" "$work/stage3r.txt" ||
    fail "$model stage 3 with reuse differs: $(diff "$work/stage2.txt" \
      "$work/stage3r.txt")"
done
echo "ok: lenet and resnet (sync batch norm, bf16) train alike at stages 2" \
  "and 3 (lenet also with max_reuse_distance)"
echo "PASS: sharded optimizer through the trainer"
