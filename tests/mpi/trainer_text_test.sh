#!/usr/bin/env bash
# `mpirun -np 2 trainer --model transformer|textcnn|lstm` on fortunes: a
# few steps on a few samples (seconds), the parameters compared across
# ranks every step; the loss must fall, the transformer must report its
# validation perplexity and the classifiers their test accuracy. Skipped without
# Debian's fortunes package.
#   trainer_text_test.sh MPIRUN TRAINER
source "$(dirname "$0")/trainer_common.sh" "$@"
MPI=("$MPIRUN" --oversubscribe -np 2)

if [ ! -d /usr/share/games/fortunes ]; then
  echo "skipped: Debian's 'fortunes' package is not installed"
  exit 0
fi

# The mean loss of the first and of the last progress line.
first_loss() { echo "$1" | grep -o "loss [0-9.]*" | head -1 | cut -d' ' -f2; }
last_loss() { echo "$1" | grep "^epoch" | grep -o "loss [0-9.]*" | tail -1 \
  | cut -d' ' -f2; }
falls() {
  /usr/bin/python3 -c "import sys; sys.exit(not $2 < $1)" \
    || fail "$3: the loss did not fall ($1 -> $2): $4"
}

run() {
  local model=$1 out rc
  shift
  out=$(timeout 300 "${MPI[@]}" "$TRAINER" --model "$model" --epochs 1 \
        --log-every 1 --check-consistency 1 "$@" 2>&1)
  rc=$?
  [ "$rc" -eq 0 ] || fail "$model failed: $out"
  echo "$out" | grep -q "x 2 ranks" || fail "$model: not on 2 ranks: $out"
  falls "$(first_loss "$out")" "$(last_loss "$out")" "$model" "$out"
  echo "$out"
}

out=$(run transformer --train-samples 96 --test-samples 16 --batch-size 8 \
      --lr 0.003 --warmup-steps 2 --decay-steps 12) || { echo "$out"; exit 1; }
echo "$out" | grep -q "perplexity [0-9.]* per token (16 windows of 128" \
  || fail "transformer: no validation perplexity: $out"
echo "$out" | grep -q "^epoch 1/1  step 6/6 .* perplexity" \
  || fail "transformer: no perplexity in the progress lines: $out"
echo "ok: transformer, 2 ranks, $(echo "$out" | grep "^validation")"

out=$(run textcnn --train-samples 256 --test-samples 64 --batch-size 16) \
  || { echo "$out"; exit 1; }
echo "$out" | grep -q "test accuracy [0-9.]* (64 samples)" \
  || fail "textcnn: no test accuracy: $out"
echo "ok: textcnn, 2 ranks, $(echo "$out" | grep "^test accuracy")"

out=$(run lstm --train-samples 256 --test-samples 64 --batch-size 16) \
  || { echo "$out"; exit 1; }
echo "$out" | grep -q "test accuracy [0-9.]* (64 samples)" \
  || fail "lstm: no test accuracy: $out"
echo "ok: lstm, 2 ranks, $(echo "$out" | grep "^test accuracy")"
