#!/usr/bin/env bash
# Two emulated hosts (tools/hosts.sh): ranks on different hosts see
# different host names, the multi-rank tests pass over TCP between them, and
# nothing of ours is left afterwards. Skips (77) where namespaces cannot be
# made.
#   hosts_test.sh MPI_TESTS_BINARY TRAINER_BINARY
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
HOSTS="$HERE/../../tools/hosts.sh"
MPI_TESTS="$1"
TRAINER="$2"
export FLUID_HOSTS_PREFIX="fluidt$$" FLUID_HOSTS_DIR="$(mktemp -d)/hosts"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail() { echo "FAIL: $*"; exit 1; }
trap '"$HOSTS" down >/dev/null 2>&1; rm -rf "$(dirname "$FLUID_HOSTS_DIR")"' EXIT

# Without the privilege: one line, exit 77.
if command -v setpriv >/dev/null && [ "$(id -u)" -eq 0 ]; then
  out="$(setpriv --reuid=65534 --regid=65534 --clear-groups \
    bash "$HOSTS" up 1 2>&1)"
  rc=$?
  [ $rc -eq 77 ] || fail "an unprivileged up exited $rc, not 77"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] ||
    fail "an unprivileged up said more than one line: $out"
fi

"$HOSTS" up 2 --slots 2
rc=$?
if [ $rc -eq 77 ]; then
  echo "SKIP: emulated hosts are not available here"; exit 77
fi
[ $rc -eq 0 ] || fail "hosts.sh up exited $rc"

names="$(timeout 60 "$HOSTS" run -- -np 2 --map-by node hostname | sort | tr '\n' ' ')"
[ "$names" = "${FLUID_HOSTS_PREFIX}1 ${FLUID_HOSTS_PREFIX}2 " ] ||
  fail "ranks ran on '$names', not one per host"

timeout 300 "$HOSTS" run -- -np 4 --map-by node "$MPI_TESTS" ||
  fail "the multi-rank tests failed across 2 hosts x 2 ranks"

# The trainer names the hosts in its opening line.
data="$(dirname "$FLUID_HOSTS_DIR")/data"
/usr/bin/python3 "$HERE/make_idx.py" "$data" 256 64 || fail "test data"
log="$(timeout 300 "$HOSTS" run -- -np 2 --map-by node "$TRAINER" \
  --model mlp --data "$data" --epochs 1 --batch-size 32 2>&1)" ||
  fail "the trainer failed across 2 hosts: $log"
grep -q "2 ranks on 2 hosts x 1 rank (${FLUID_HOSTS_PREFIX}1, ${FLUID_HOSTS_PREFIX}2)" <<<"$log" ||
  fail "the opening line does not name the hosts: $log"
grep -q "the network between hosts" <<<"$log" ||
  fail "the opening line does not name the transport: $log"

# Checkpoints when only rank 0's host sees the directory: rank 0 saves,
# and on --resume loads and broadcasts.
private="$(dirname "$FLUID_HOSTS_DIR")/private"
mkdir -p "$private"
"$HOSTS" up 2 --slots 2 --private "$private" >/dev/null || fail "up --private"
seen="$(timeout 60 "$HOSTS" run -- -np 2 --map-by node sh -c \
  "touch '$private/\$(hostname)'; ls '$private' | wc -l" | sort | tr '\n' ' ')"
[ "$seen" = "1 1 " ] || fail "host 2 sees host 1's private directory: $seen"
rm -f "$private"/*
train() {
  timeout 300 "$HOSTS" run -- -np 2 --map-by node "$TRAINER" --model mlp \
    --data "$data" --batch-size 32 --checkpoint-dir "$private/ckpt" "$@" 2>&1
}
log="$(train --epochs 1)" || fail "training with a rank-0-only directory: $log"
log="$(train --epochs 2 --resume)" || fail "resuming: $log"
grep -q "resumed from $private/ckpt at epoch 1" <<<"$log" ||
  fail "--resume did not pick up rank 0's checkpoint: $log"
grep -q "epoch 2/2" <<<"$log" || fail "the resumed run did not train: $log"

# The main job on 2 hosts x 1 rank: one epoch of LeNet on Fashion-MNIST.
FASHION=/usr/share/datasets/fashion-mnist
if [ -r "$FASHION/train-images-idx3-ubyte.gz" ]; then
  "$HOSTS" up 2 --slots 1 >/dev/null || fail "up for the main job"
  # Bytes host 1 sent over its link during one run of the main job, and
  # the run's test accuracy: "BYTES ACCURACY".
  main_job() {
    local sent tx0 tx1 log acc
    sent="/sys/class/net/fluidv1/statistics/tx_bytes"
    tx0="$(ip netns exec "${FLUID_HOSTS_PREFIX}1" cat "$sent")"
    log="$(timeout 600 "$HOSTS" run -- -np 2 --map-by node "$TRAINER" \
      --model lenet --epochs 1 --threads 1 "$@" 2>&1)" ||
      fail "the main job ($*) failed across 2 hosts: $log"
    tx1="$(ip netns exec "${FLUID_HOSTS_PREFIX}1" cat "$sent")"
    acc="$(echo "$log" | sed -n 's/^test accuracy \([0-9.]*\).*/\1/p')"
    [ -n "$acc" ] || fail "no test accuracy ($*): $log"
    echo "$((tx1 - tx0)) $acc"
  }
  r="$(main_job)" || { echo "$r"; exit 1; }
  read -r bytes acc <<<"$r"
  echo "main job across 2 hosts: test accuracy $acc, host 1 sent $bytes bytes"
  awk -v a="$acc" 'BEGIN { exit !(a >= 0.84) }' ||
    fail "test accuracy '$acc' below 0.84"

  # Compressed gradients: half the bytes on the wire, accuracy within a
  # point of the float32 run.
  for wire in bf16 fp16; do
    r="$(main_job --grad-compression "$wire")" || { echo "$r"; exit 1; }
    read -r wbytes wacc <<<"$r"
    echo "with $wire: test accuracy $wacc, host 1 sent $wbytes bytes"
    awk -v w="$wbytes" -v b="$bytes" 'BEGIN { r = w / b; exit !(r > 0.45 && r < 0.6) }' ||
      fail "$wire sent $wbytes bytes against $bytes uncompressed: not half"
    awk -v w="$wacc" -v a="$acc" 'BEGIN { d = w - a; exit !(d > -0.01 && d < 0.01) }' ||
      fail "$wire reached accuracy $wacc against $acc uncompressed"
  done

  # A rank on host 2 killed mid-epoch ends the job, naming it, in 30 s.
  out="$(dirname "$FLUID_HOSTS_DIR")/killed.log"
  "$HOSTS" run -- -np 2 --map-by node "$TRAINER" --model lenet --epochs 1 \
    --threads 1 >"$out" 2>&1 &
  job=$!
  victim=""
  for _ in $(seq 1 300); do
    for pid in $(ip netns pids "${FLUID_HOSTS_PREFIX}2" 2>/dev/null); do
      [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = trainer ] && victim=$pid
    done
    [ -n "$victim" ] && grep -q "step" "$out" && break
    sleep 0.1
  done
  [ -n "$victim" ] || fail "no trainer rank found on host 2: $(cat "$out")"
  kill -9 "$victim"
  start=$SECONDS
  for _ in $(seq 1 300); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$job" 2>/dev/null; then
    kill -9 "$job"; fail "the job still ran 30 s after rank 1 was killed"
  fi
  wait "$job" && fail "the job ended with status 0 after rank 1 was killed"
  grep -q "rank 1" "$out" || fail "the job's end does not name rank 1: $(cat "$out")"
  echo "a killed rank on host 2 ended the job in $((SECONDS - start)) s"
fi

"$HOSTS" down || fail "hosts.sh down exited $?"
left="$(ip netns list | grep -c "^${FLUID_HOSTS_PREFIX}" || true)"
[ "$left" -eq 0 ] || fail "$left namespace(s) left after down"
[ ! -e "$FLUID_HOSTS_DIR" ] || fail "$FLUID_HOSTS_DIR left after down"
echo "PASS: 2 emulated hosts: 4 ranks, the trainer's hosts line, a checkpoint only rank 0 sees; cleaned up"
