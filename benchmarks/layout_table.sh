#!/usr/bin/env bash
# The layouts of 4 ranks on 2 emulated hosts (tools/hosts.sh: 2 slots each,
# every host's link shaped to RATE, default 1gbit) training the trainer's
# transformer with the same global batch: each layout dp x tp x pp the
# model admits, in interleaved rounds (the order rotating), reading the
# trainer's own samples/s; the planned bytes per rank of each
# (--plan-memory); then the median per layout, and what `--layout auto`
# picks under mpirun on these hosts for each --memory-limit in LIMITS.
#
#   benchmarks/layout_table.sh [ROUNDS] [-- TRAINER-ARGS]
#     default: 3 rounds; the transformer, 192 windows, a global batch of
#     GLOBAL (16) windows, 2 x pp micro-batches for a pipeline (as
#     --layout auto gives it), --threads 1.
#     RATE=1gbit, LIMITS="60M 50M 40M 30M".
# "across" in a layout's name: mpirun maps the ranks round-robin over the
# hosts (--map-by node), so that each tensor-parallel pair spans the link.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TRAINER="${TRAINER:-$ROOT/build/bin/trainer}"
ROUNDS="${1:-3}"
shift 1 2>/dev/null || shift $#
[ "${1:-}" = "--" ] && shift
GLOBAL="${GLOBAL:-16}"
RATE="${RATE:-1gbit}"
LIMITS="${LIMITS:-60M 50M 40M 30M}"
ARGS=("$@")
[ ${#ARGS[@]} -gt 0 ] || ARGS=(--model transformer --train-samples 192
                               --test-samples 4 --epochs 1 --log-every 0
                               --threads 1)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export FLUID_HOSTS_PREFIX="fluidl$$x"
export FLUID_HOSTS_DIR="$(mktemp -d /tmp/fluid_layouts.XXXXXX)"
trap '"$ROOT/tools/hosts.sh" down >/dev/null 2>&1; rm -rf "$FLUID_HOSTS_DIR"' EXIT
trap 'exit 130' INT TERM
"$ROOT/tools/hosts.sh" up 2 --slots 2 --rate "$RATE" || exit $?

# name: dp tp pp [extra mpirun args]
LAYOUTS=(
  "dp4:4:1:1"
  "tp2xdp2:2:2:1"
  "tp2xdp2-across:2:2:1:--map-by node"
  "tp4:1:4:1"
  "pp2xdp2:2:1:2"
  "tp2xpp2:1:2:2"
  "pp4:1:1:4"
)
rate() { sed -n 's/.* at \([0-9.]*\) samples\/s.*/\1/p' | tail -1; }
planned() { sed -n 's/^  total *\([0-9.]* MiB\).*/\1/p' | tail -1; }
flags_of() {  # flags_of DP TP PP: --layout auto's micro-batches (2 x pp)
  local b=$((GLOBAL / $1))
  local f=(--batch-size "$b" --tp "$2" --pp "$3")
  if [ "$3" -gt 1 ]; then
    f+=(--micro-batches $((b % (2 * $3) == 0 ? 2 * $3 : $3)))
  fi
  echo "${f[@]}"
}
declare -A RATES PLAN
for entry in "${LAYOUTS[@]}"; do
  IFS=: read -r name dp tp pp extra <<<"$entry"
  # shellcheck disable=SC2046,SC2086
  PLAN[$name]=$("$ROOT/tools/hosts.sh" run -- -np 4 $extra "$TRAINER" \
    "${ARGS[@]}" $(flags_of "$dp" "$tp" "$pp") --plan-memory 2>&1 | planned)
done
n=${#LAYOUTS[@]}
for ((round = 0; round < ROUNDS; round++)); do
  line="round $((round + 1)):"
  for ((k = 0; k < n; k++)); do
    entry="${LAYOUTS[$(((k + round) % n))]}"
    IFS=: read -r name dp tp pp extra <<<"$entry"
    # shellcheck disable=SC2046,SC2086
    r=$("$ROOT/tools/hosts.sh" run -- -np 4 $extra "$TRAINER" "${ARGS[@]}" \
      $(flags_of "$dp" "$tp" "$pp") 2>&1 | rate)
    RATES[$name]="${RATES[$name]:-} ${r:-fail}"
    line+=" $name ${r:-fail}"
  done
  echo "$line"
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo
echo "| layout (4 ranks, 2 hosts, $RATE) | planned per rank | samples/s (median of $ROUNDS) | rounds |"
echo "| --- | --- | --- | --- |"
for entry in "${LAYOUTS[@]}"; do
  IFS=: read -r name _ <<<"$entry"
  echo "| $name | ${PLAN[$name]:-?} | $(median <<<"${RATES[$name]}") |${RATES[$name]} |"
done
echo
for limit in $LIMITS; do
  # shellcheck disable=SC2086
  "$ROOT/tools/hosts.sh" run -- -np 4 "$TRAINER" "${ARGS[@]}" \
    --batch-size "$((GLOBAL / 4))" --layout auto --memory-limit "$limit" \
    --plan-memory 2>&1 | grep -E "^layout|error" | sed "s/^/--memory-limit $limit: /" |
    cut -c1-300
done
