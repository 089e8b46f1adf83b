#!/usr/bin/env bash
# The cost of --timeline: samples/s of `mpirun -np 2 trainer` with and
# without it, lenet and mlp, runs interleaved (off, on, off, on, ...),
# median of RUNS (default 3) each; prints the medians and on/off.
# With BASELINE=<another trainer binary> (say, a build from before the
# timeline existed), it runs too and off/baseline says what the hooks cost
# when tracing is off.
#   benchmarks/timeline_overhead.sh [build dir]
#   env: RUNS, SAMPLES (training samples, default 16384), BATCH (64),
#        DATA (Fashion-MNIST IDX dir), BASELINE
set -euo pipefail
BUILD="${1:-build}"
RUNS="${RUNS:-3}"
SAMPLES="${SAMPLES:-16384}"
BATCH="${BATCH:-64}"
DATA="${DATA:-/usr/share/datasets/fashion-mnist}"
BASELINE="${BASELINE:-}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d /tmp/timeline_overhead.XXXXXX)
trap 'rm -rf "$work"' EXIT

# samples/s of one run: trainer binary, model, extra flags.
rate() {
  local trainer=$1 model=$2
  shift 2
  mpirun --oversubscribe -np 2 "$trainer" --model "$model" --data "$DATA" \
    --epochs 1 --train-samples "$SAMPLES" --test-samples 1000 \
    --batch-size "$BATCH" --log-every 0 --threads 1 "$@" |
    sed -n 's/.*trained [0-9]* steps at \([0-9]*\) samples\/s.*/\1/p'
}

median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
best() { printf '%s\n' "$@" | sort -n | tail -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }

for model in lenet mlp; do
  off=() on=() base=()
  for i in $(seq "$RUNS"); do
    off+=("$(rate "$BUILD/bin/trainer" "$model")")
    on+=("$(rate "$BUILD/bin/trainer" "$model" --timeline "$work/t.json")")
    [ -n "$BASELINE" ] && base+=("$(rate "$BASELINE" "$model")")
  done
  m_off=$(median "${off[@]}")
  m_on=$(median "${on[@]}")
  line="$model: off ${off[*]} (median $m_off), on ${on[*]} (median $m_on)"
  line+=", on/off $(ratio "$m_on" "$m_off") (best of each:"
  line+=" $(ratio "$(best "${on[@]}")" "$(best "${off[@]}")"))"
  if [ -n "$BASELINE" ]; then
    m_base=$(median "${base[@]}")
    line+="; baseline ${base[*]} (median $m_base), off/baseline"
    line+=" $(ratio "$m_off" "$m_base") (best of each:"
    line+=" $(ratio "$(best "${off[@]}")" "$(best "${base[@]}")"))"
  fi
  echo "$line"
done
