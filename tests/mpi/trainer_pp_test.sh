#!/usr/bin/env bash
# Pipeline parallelism through the trainer (--pp, --micro-batches,
# --schedule, --forwards-ahead): `mpirun -np 2 trainer --pp 2
# --micro-batches 4` prints the per-step losses of one process with the
# same seed and batch (to the printed 4 decimals, rounding aside), with
# either schedule and with a forward ahead; np 4 --pp 2
# those of np 2 without it (each pipeline reads what one rank of np 2
# reads), with the parameters equal within each stage's data-parallel
# group (--check-consistency 1), also with --gradient-merge 2; resnet's
# batch norms checkpoint and evaluate under --pp 2; --amp fp16
# prints one fp16 process's losses (to fp16's rounding); a pipeline's checkpoint (every stage's
# parameters) resumes without it, and a plain one with it; a rank killed
# inside the pipeline ends the job in seconds; np 4 --tp 2 --pp 2 prints
# np 1's losses and resumes exactly; the transformer runs as a pipeline of
# 4 stages and 8 micro-batches, and of 2 with recompute, and the LSTM
# (sequences crossing the cut) as 2 stages; --layout auto chooses the
# layout by the memory plan.
#   trainer_pp_test.sh MPIRUN TRAINER
source "$(dirname "$0")/trainer_common.sh" "$@"
MPI=("$MPIRUN" --oversubscribe)

make_idx "$work/data" 256 64
base=(--model mlp --optimizer adam --data "$work/data" --log-every 1
      --threads 1 --batch-size 16 --epochs 1 --check-consistency 1)

one=$(timeout 300 "$TRAINER" "${base[@]}" 2>&1) || fail "np 1: $one"
for schedule in 1F1B FThenB; do
  pp2=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --pp 2 \
    --micro-batches 4 --schedule "$schedule" --checkpoint-dir "$work/pp2" \
    2>&1) || fail "np 2 --pp 2 $schedule: $pp2"
  grep -q "pipeline of 2 stages, 4 micro-batches $schedule" <<<"$pp2" ||
    fail "np 2 --pp 2: no layout in the banner: $pp2"
  same_losses "$one" "$pp2" "np 2 --pp 2 --schedule $schedule against np 1"
  grep -q "test accuracy" <<<"$pp2" || fail "np 2 --pp 2: not evaluated: $pp2"
  echo "ok: np 2 --pp 2 --schedule $schedule prints np 1's losses;" \
    "$(grep "^test accuracy" <<<"$pp2")"
done
# One forward more before stage 0's first backward: the same losses.
ahead=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --pp 2 \
  --micro-batches 4 --forwards-ahead 1 2>&1) ||
  fail "np 2 --pp 2 --forwards-ahead 1: $ahead"
grep -q "4 micro-batches 1F1B with 1 ahead" <<<"$ahead" ||
  fail "np 2 --pp 2 --forwards-ahead 1: not in the banner: $ahead"
same_losses "$one" "$ahead" "np 2 --pp 2 --forwards-ahead 1 against np 1"
echo "ok: np 2 --pp 2 --forwards-ahead 1 prints np 1's losses"

# fp16 loss scaling: each stage checks its own gradients and the stages
# agree on the overflow flag (tests/transpiler/pipeline_test.cc checks the
# agreement), so np 2 --pp 2 --amp fp16 prints one fp16 process's losses
# up to fp16's rounding of the micro-batches' products (measured: 6e-4 on
# losses of 2.3 after 16 steps; 3e-3 allowed).
one16=$(timeout 300 "$TRAINER" "${base[@]}" --amp fp16 2>&1) ||
  fail "np 1 --amp fp16: $one16"
pp16=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --amp fp16 \
  --pp 2 --micro-batches 4 2>&1) || fail "np 2 --pp 2 --amp fp16: $pp16"
same_losses "$one16" "$pp16" "np 2 --pp 2 --amp fp16 against np 1 --amp fp16" \
  0.003
hyb16=$(timeout 300 "${MPI[@]}" -np 4 "$TRAINER" "${base[@]}" --amp fp16 \
  --tp 2 --pp 2 --micro-batches 4 2>&1) ||
  fail "np 4 --tp 2 --pp 2 --amp fp16: $hyb16"
same_losses "$one16" "$hyb16" \
  "np 4 --tp 2 --pp 2 --amp fp16 against np 1 --amp fp16" 0.003
echo "ok: np 2 --pp 2 and np 4 --tp 2 --pp 2 with --amp fp16 print np 1" \
  "--amp fp16's losses"

dp2=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" 2>&1) ||
  fail "np 2: $dp2"
pp2dp2=$(timeout 300 "${MPI[@]}" -np 4 "$TRAINER" "${base[@]}" --pp 2 \
  --micro-batches 2 2>&1) || fail "np 4 --pp 2: $pp2dp2"
same_losses "$dp2" "$pp2dp2" "np 4 --pp 2 against np 2"
echo "ok: np 4 --pp 2 prints np 2's losses"
# Batch norm's running statistics (and gradient merge's accumulators) are
# averaged over each stage's data-parallel group before a checkpoint and
# the evaluation: a stage's are its own (over the world they mismatched).
rn=$(timeout 300 "${MPI[@]}" -np 4 "$TRAINER" --model resnet --data \
  "$work/data" --train-samples 64 --batch-size 8 --epochs 1 --threads 1 \
  --log-every 0 --pp 2 --micro-batches 2 --checkpoint-dir "$work/rn" 2>&1) ||
  fail "resnet np 4 --pp 2: $rn"
grep -q "test accuracy" <<<"$rn" || fail "resnet np 4 --pp 2: not evaluated: $rn"
echo "ok: resnet (batch norm) at np 4 --pp 2 checkpoints and evaluates"
# Gradient merge over pipelined steps: one update per 2 steps of 2
# micro-batches each, as np 2 merging 2 steps.
dp2gm=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" \
  --gradient-merge 2 2>&1) || fail "np 2 --gradient-merge 2: $dp2gm"
ppgm=$(timeout 300 "${MPI[@]}" -np 4 "$TRAINER" "${base[@]}" --pp 2 \
  --micro-batches 2 --gradient-merge 2 2>&1) ||
  fail "np 4 --pp 2 --gradient-merge 2: $ppgm"
same_losses "$dp2gm" "$ppgm" "np 4 --pp 2 --gradient-merge 2 against np 2"
echo "ok: np 4 --pp 2 --gradient-merge 2 prints np 2 --gradient-merge 2's" \
  "losses"

# The pipeline's checkpoint resumes on one process and on np 2 without
# stages; a plain np 2 checkpoint resumes with --pp 2.
timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" \
  --checkpoint-dir "$work/dp2" >/dev/null 2>&1 || fail "np 2 checkpoint"
cp -r "$work/pp2" "$work/pp2b"
resumes_each "-np 1 $TRAINER --checkpoint-dir $work/pp2" \
  "-np 2 $TRAINER --checkpoint-dir $work/pp2b" \
  "-np 2 $TRAINER --pp 2 --micro-batches 2 --checkpoint-dir $work/dp2"
echo "ok: pipeline checkpoints resume without it, and the other way"

# A pipeline resumed from its own checkpoint prints the second epoch of an
# uninterrupted run.
full=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]:0:12}" --epochs 2 \
  --pp 2 --micro-batches 4 2>&1) || fail "np 2 --pp 2, 2 epochs: $full"
timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --pp 2 \
  --micro-batches 4 --checkpoint-dir "$work/pp3" >/dev/null 2>&1 ||
  fail "np 2 --pp 2 checkpoint"
again=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]:0:12}" --epochs 2 \
  --pp 2 --micro-batches 4 --resume --checkpoint-dir "$work/pp3" 2>&1) ||
  fail "resuming --pp 2: $again"
same_losses "$(epoch2 "$full")" "$(epoch2 "$again")" \
  "resumed np 2 --pp 2 against uninterrupted"
echo "ok: --pp 2 resumes exactly"

# ZeRO on each stage's data-parallel ring: np 4 --pp 2 --shard-optimizer Z
# (2; 3: the parameters sharded too) prints np 2's losses, resumes its own
# checkpoint exactly, and np 2 without either resumes it too.
dp2e=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]:0:12}" --epochs 2 \
  2>&1) || fail "np 2, 2 epochs: $dp2e"
for zs in 2 3; do
  zf=(--pp 2 --micro-batches 2 --shard-optimizer "$zs")
  resumes_exactly 4 "${zf[@]}"
  same_losses "$dp2e" "$full" "np 4 ${zf[*]} against np 2"
  echo "ok: np 4 ${zf[*]} prints np 2's losses and resumes exactly;" \
    "$(grep "^per rank:" <<<"$full")"
done

# Hybrid: np 4 --tp 2 --pp 2 (tensor parallelism inside each stage) prints
# np 1's losses; its checkpoint resumes the same second epoch as one
# process resumed from it.
hyb=$(timeout 300 "${MPI[@]}" -np 4 "$TRAINER" "${base[@]}" --tp 2 --pp 2 \
  --micro-batches 4 --checkpoint-dir "$work/hyb" 2>&1) ||
  fail "np 4 --tp 2 --pp 2: $hyb"
same_losses "$one" "$hyb" "np 4 --tp 2 --pp 2 against np 1"
cp -r "$work/hyb" "$work/hyb1"
solo=$(timeout 300 "$TRAINER" "${base[@]:0:12}" --epochs 2 --resume \
  --checkpoint-dir "$work/hyb1" 2>&1) || fail "np 1 resuming the hybrid: $solo"
again=$(timeout 300 "${MPI[@]}" -np 4 "$TRAINER" "${base[@]:0:12}" --epochs 2 \
  --tp 2 --pp 2 --micro-batches 4 --resume --checkpoint-dir "$work/hyb" \
  2>&1) || fail "resuming np 4 --tp 2 --pp 2: $again"
same_losses "$(epoch2 "$solo")" "$(epoch2 "$again")" \
  "resumed np 4 --tp 2 --pp 2 against np 1 resumed"
echo "ok: np 4 --tp 2 --pp 2 prints np 1's losses and resumes exactly"

# All three with ZeRO: np 8 --tp 2 --pp 2 --shard-optimizer Z (each
# stage's slices sharded over their data-parallel ring of 2; 3: the
# parameters' slices too) prints np 2's losses and resumes its own
# checkpoint exactly, also on np 2 without any of them.
for zs in 2 3; do
  hz=(--tp 2 --pp 2 --micro-batches 2 --shard-optimizer "$zs")
  resumes_exactly 8 "${hz[@]}"
  grep -q "2 data-parallel x 2 tensor-parallel" <<<"$full" ||
    fail "np 8 ${hz[*]}: the banner's layout: $full"
  same_losses "$dp2e" "$full" "np 8 ${hz[*]} against np 2"
  echo "ok: np 8 ${hz[*]} prints np 2's losses and resumes exactly, also on" \
    "np 2"
done

# A rank killed inside the pipeline ends the job in seconds (its
# neighbour waits in a receive).
killed_rank_ends "--pp 2" --pp 2 --micro-batches 4

out=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --pp 3 2>&1) &&
  fail "--pp 3 on 2 ranks was accepted: $out"
grep -q "must divide the rank count (2)" <<<"$out" ||
  fail "--pp 3 on 2 ranks: $out"
out=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --pp 2 \
  --micro-batches 3 2>&1) && fail "batch 16 in 3 micro-batches: $out"
grep -q "batch-size 16 is not a multiple of --micro-batches 3" <<<"$out" ||
  fail "batch 16 in 3 micro-batches: $out"
echo "ok: --pp 3 on 2 ranks and 3 micro-batches of 16 are refused"

if [ ! -d /usr/share/games/fortunes ]; then
  echo "skipped: the transformer (Debian's 'fortunes' package is missing)"
  exit 0
fi
text=(--model transformer --train-samples 48 --test-samples 8 --batch-size 8
      --epochs 1 --log-every 1 --threads 1 --lr 0.003 --warmup-steps 2
      --decay-steps 12)
lm1=$(timeout 300 "$TRAINER" "${text[@]}" 2>&1) || fail "transformer np 1: $lm1"
lm4=$(timeout 300 "${MPI[@]}" -np 4 "$TRAINER" "${text[@]}" --pp 4 \
  --micro-batches 8 2>&1) || fail "transformer --pp 4: $lm4"
same_losses "$lm1" "$lm4" "transformer np 4 --pp 4 --micro-batches 8 against np 1"
echo "ok: the transformer as 4 stages of 8 micro-batches prints np 1's losses;" \
  "$(grep "^validation" <<<"$lm4")"
# Recompute inside the stages (each block replayed in its micro-batch's
# backward, dropout's masks drawn again) prints the same losses.
lmr=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${text[@]}" --pp 2 \
  --micro-batches 4 --recompute auto 2>&1) ||
  fail "transformer --pp 2 --recompute auto: $lmr"
same_losses "$lm1" "$lmr" "transformer np 2 --pp 2 --recompute auto against np 1"
echo "ok: the transformer at --pp 2 --recompute auto prints np 1's losses;" \
  "$(grep "^memory per rank" <<<"$lmr")"

# --layout auto picks the first layout whose plan fits --memory-limit, the
# global batch that of data parallelism over every rank: the transformer's
# activations dominate (tensor parallelism of a doubled batch needs more),
# so pipelines fit it; the MLP's parameters dominate, so tensor parallelism
# fits it, and np 2 then trains np 2's global batch of 32 as one group.
# (34304K, 33.5 MiB: between pp 4's plan, 33.07 MiB, and pp 2 x dp 2's,
# 34.08.)
auto() {  # auto LIMIT: the layout line of --plan-memory for 4 ranks
  timeout 300 "$TRAINER" "${text[@]}" --layout auto --memory-limit "$1" \
    --transpile-for 4 --plan-memory 2>&1 | grep -E "^layout|error"
}
for want in "1G:tp 1 x pp 1 x dp 4" "50M:tp 1 x pp 2 x dp 2" \
    "34304K:tp 1 x pp 4 x dp 1"; do
  grep -q "^layout: ${want#*:}, batch" <<<"$(auto "${want%%:*}")" ||
    fail "--layout auto at ${want%%:*}: $(auto "${want%%:*}")"
done
grep -q "no layout of 4 rank(s) (4 per host) fits --memory-limit 1M" \
  <<<"$(auto 1M)" || fail "--layout auto, 1M: $(auto 1M)"
out=$(timeout 300 "$TRAINER" "${text[@]}" --layout auto 2>&1) &&
  fail "--layout auto without --memory-limit was accepted: $out"
grep -q "give it" <<<"$out" || fail "--layout auto without a limit: $out"
out=$(timeout 300 "$TRAINER" "${text[@]}" --layout auto --memory-limit 20M \
  --tp 2 2>&1) && fail "--layout auto with --tp was accepted: $out"
grep -q "chooses --tp and --pp itself" <<<"$out" ||
  fail "--layout auto with --tp: $out"
fit=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]}" --layout auto \
  --memory-limit 6M 2>&1) || fail "np 2 --layout auto: $fit"
grep -q "^layout: tp 2 x pp 1 x dp 1, batch 32 per data-parallel group" \
  <<<"$fit" || fail "np 2 --layout auto at 6M: $fit"
# (The tensor-parallel group reads the global batch of 32: np 1's at 32.)
one32=$(timeout 300 "$TRAINER" "${base[@]:0:10}" --batch-size 32 --epochs 1 \
  2>&1) || fail "np 1 at batch 32: $one32"
same_losses "$one32" "$fit" "mlp np 2 --layout auto (tp 2) against np 1 at 32"
echo "ok: --layout auto picks by the memory plan: pipelines for the" \
  "transformer, tp 2 for the mlp (np 2 prints np 1's losses at batch 32)"

# The LSTM classifier: a batch of sequences (LoD) crosses the cut, its
# offsets travel with it.
seq=(--model lstm --train-samples 64 --test-samples 16 --batch-size 8
     --epochs 1 --log-every 1 --threads 1)
ls1=$(timeout 300 "$TRAINER" "${seq[@]}" 2>&1) || fail "lstm np 1: $ls1"
ls2=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${seq[@]}" --pp 2 \
  --micro-batches 2 2>&1) || fail "lstm --pp 2: $ls2"
same_losses "$ls1" "$ls2" "lstm np 2 --pp 2 against np 1"
echo "ok: the LSTM (sequences crossing the cut) with --pp 2 prints np 1's losses"
