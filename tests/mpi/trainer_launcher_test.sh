#!/usr/bin/env bash
# When mpirun is killed, its ranks stop at once and write nothing more: no
# trainer of the job is left 3 s later, and no checkpoint is committed after
# mpirun is gone.
#   trainer_launcher_test.sh MPIRUN TRAINER
source "$(dirname "$0")/trainer_common.sh" "$@"
marker="fluid-launcher-test-$$"
ck="$work/$marker"
cleanup() {
  pkill -9 -f -- "$marker" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# A tiny data set: an epoch is two steps, so rank 0 commits a checkpoint
# every few milliseconds for as long as it runs.
make_idx "$work/data" 256 16
save_mlp

ranks() { pgrep -f -- "--checkpoint-dir $ck" | while read -r p; do
  grep -qx trainer "/proc/$p/comm" 2>/dev/null && echo "$p"; done; }

"$MPIRUN" --oversubscribe -np 2 "$TRAINER" --program "$work/mlp.pb" \
  --data "$work/data" --epochs 1000000 --log-every 0 \
  --checkpoint-dir "$ck" >"$work/job.log" 2>&1 &
launcher=$!
for _ in $(seq 300); do
  [ -f "$ck/LATEST" ] && break
  sleep 0.1
done
[ -f "$ck/LATEST" ] || fail "no checkpoint within 30 s: $(cat "$work/job.log")"
sleep 0.5
[ "$(ranks | wc -l)" -eq 2 ] || fail "expected 2 running ranks"

kill -9 "$launcher"
wait "$launcher" 2>/dev/null
# mpirun is gone (reaped): from here on nothing may be committed.
committed=$(cat "$ck/LATEST")
gone=""
for _ in $(seq 30); do
  if [ -z "$(ranks)" ]; then gone=yes; break; fi
  sleep 0.1
done
[ -n "$gone" ] || fail "ranks still running 3 s after mpirun was killed: $(ranks | tr '\n' ' ')"
sleep 1
now=$(cat "$ck/LATEST")
[ "$now" = "$committed" ] \
  || fail "a checkpoint was committed after mpirun was gone ($committed -> $now)"
echo "ok: ranks stopped with mpirun; last checkpoint $committed"
