# What the trainer's shell tests share; each sources it first:
#   source "$(dirname "$0")/trainer_common.sh" MPIRUN TRAINER
# Sets MPIRUN and TRAINER, lets mpirun run as root, makes $work (removed at
# exit), and defines fail, make_idx (see make_idx.py), save_mlp (the
# built-in mlp's job, written to $work/mlp.pb), losses and same_losses
# (two runs' progress lines print the same losses).
set -u
MPIRUN=$1
TRAINER=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
COMMON_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d "/tmp/fluid_$(basename "$0" .sh).XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
make_idx() {
  /usr/bin/python3 "$COMMON_DIR/make_idx.py" "$@" \
    || fail "could not write the test data in $1"
}
save_mlp() {
  "$TRAINER" --model mlp --save "$work/mlp.pb" >/dev/null || fail "save"
}
# The progress lines' losses, one per line.
losses() { grep "^epoch" <<<"$1" | grep -o "loss [0-9.]*" | cut -d' ' -f2; }
# Equal to the printed precision (a last digit may round the other way),
# over 5 lines or more: same_losses OUT1 OUT2 WHAT [TOLERANCE] (absolute;
# a looser one where the runs round in different places, as fp16 does).
same_losses() {
  paste <(losses "$1") <(losses "$2") | awk -v what="$3" -v tol="${4:-0.00011}" '
    { n++; d = $1 - $2; if (d < 0) d = -d; if (d > tol) bad = bad " " $1 "/" $2 }
    END { if (n < 5 || bad != "") { print what ": " n " lines," bad; exit 1 } }' ||
    fail "$3: the losses differ: $1 ---- $2"
}
# Each "-np N TRAINER FLAGS... --checkpoint-dir DIR" run resumes its epoch-1
# checkpoint for a second epoch and evaluates; $MPI and $base as the
# caller's (the first 12 words of base: without --check-consistency).
resumes_each() {
  local run out
  for run in "$@"; do
    # shellcheck disable=SC2086
    out=$(timeout 300 "${MPI[@]}" $run "${base[@]:0:12}" --epochs 2 --resume \
      2>&1) || fail "resuming ($run): $out"
    grep -q "resumed from .* at epoch 1" <<<"$out" ||
      fail "did not resume ($run): $out"
    grep -q "test accuracy" <<<"$out" || fail "no accuracy ($run): $out"
  done
}
# The second epoch's progress lines of a 2-epoch run's output.
epoch2() { grep "^epoch 2/2" <<<"$1"; }
# An NP-rank run with FLAGS trained for 2 epochs (its parameters compared
# within their groups every step) prints the same second epoch as the same
# job resumed from its epoch-1 checkpoint, and as np 2 without FLAGS
# resumed from that checkpoint; the uninterrupted run's output is left in
# $full. $MPI, $base and $work as the caller's:
# resumes_exactly NP FLAGS...
resumes_exactly() {
  local np=$1 dir again plain
  shift
  dir=$(mktemp -d "$work/resume.XXXXXX")
  full=$(timeout 300 "${MPI[@]}" -np "$np" "$TRAINER" "${base[@]:0:12}" \
    --epochs 2 --check-consistency 1 "$@" 2>&1) || fail "np $np $*: $full"
  timeout 300 "${MPI[@]}" -np "$np" "$TRAINER" "${base[@]}" "$@" \
    --checkpoint-dir "$dir/a" >/dev/null 2>&1 || fail "np $np $* checkpoint"
  cp -r "$dir/a" "$dir/b"
  again=$(timeout 300 "${MPI[@]}" -np "$np" "$TRAINER" "${base[@]:0:12}" \
    --epochs 2 "$@" --resume --checkpoint-dir "$dir/a" 2>&1) ||
    fail "resuming np $np $*: $again"
  plain=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" "${base[@]:0:12}" \
    --epochs 2 --resume --checkpoint-dir "$dir/b" 2>&1) ||
    fail "np 2 resuming np $np $*: $plain"
  same_losses "$(epoch2 "$full")" "$(epoch2 "$again")" \
    "resumed np $np $* against uninterrupted"
  same_losses "$(epoch2 "$full")" "$(epoch2 "$plain")" \
    "np 2 resuming np $np $* against uninterrupted"
}
# Rank 1 of np 2, killed at step 3 of a run with `$base` and FLAGS, ends the
# job non-zero within 30 s (its partner waits in a collective):
# killed_rank_ends WHAT FLAGS...
killed_rank_ends() {
  local what=$1 start out rc took
  shift
  start=$(date +%s)
  out=$(FLUID_TEST_KILL_AT_STEP=3 FLUID_TEST_KILL_RANK=1 timeout 120 \
    "${MPI[@]}" -x FLUID_TEST_KILL_AT_STEP -x FLUID_TEST_KILL_RANK -np 2 \
    "$TRAINER" "${base[@]}" "$@" 2>&1)
  rc=$?
  took=$(( $(date +%s) - start ))
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] ||
    fail "a rank killed under $what: rc $rc after ${took}s: $out"
  [ "$took" -le 30 ] || fail "a rank killed under $what: ${took}s to end"
  echo "ok: a rank killed under $what ended the job in ${took}s (rc $rc)"
}
