#!/usr/bin/env bash
# Full-epoch convergence on Fashion-MNIST, as the core issue states it:
# LeNet (Momentum 0.05/0.9, batch 64) must reach test accuracy >= 0.84 and
# the MLP (Momentum 0.1/0.9) >= 0.82, over the seeds given (default 1 2 3).
#   benchmarks/convergence.sh [build dir] [seeds...]
set -euo pipefail
BUILD="${1:-build}"
shift || true
SEEDS=("${@:-1 2 3}")
status=0
for model in lenet mlp; do
  want=0.84; [ "$model" = mlp ] && want=0.82
  accs=()
  for seed in ${SEEDS[@]}; do
    acc=$("$BUILD/bin/trainer" --model "$model" --seed "$seed" --log-every 0 \
          | awk '/^test accuracy/ {print $3}')
    accs+=("$acc")
    echo "$model seed $seed: test accuracy $acc"
  done
  mean=$(printf '%s\n' "${accs[@]}" | awk '{s += $1} END {printf "%.4f", s / NR}')
  verdict=$(awk -v m="$mean" -v w="$want" 'BEGIN {print (m >= w) ? "ok" : "BELOW"}')
  echo "$model: mean test accuracy $mean over ${#accs[@]} seeds (target $want): $verdict"
  [ "$verdict" = ok ] || status=1
done
exit $status
