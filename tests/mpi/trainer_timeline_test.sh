#!/usr/bin/env bash
# --timeline: a 2-rank run writes one Chrome trace (valid JSON) with both
# ranks' ops and collectives, every collective of every step, the ranks'
# clocks within 1 ms of each other (one machine), the batches loaded and
# the checkpoints saved; a job that aborts, or that the stall watchdog
# ends, still leaves a readable trace with what rank 0 had; a cut or empty
# trace is reported in one line; a path that cannot take the trace is
# refused before training.
#   trainer_timeline_test.sh MPIRUN TRAINER
source "$(dirname "$0")/trainer_common.sh" "$@"
MPI=("$MPIRUN" --oversubscribe)
REPORT="$COMMON_DIR/../../tools/timeline_report.py"

make_idx "$work/data" 512 64

# Steps trained, from rank 0's last line.
steps_of() {
  sed -n 's/.*trained \([0-9]*\) steps.*/\1/p' <<<"$1"
}

for model in lenet mlp; do
  trace="$work/$model.json"
  out=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" --model "$model" \
    --data "$work/data" --epochs 2 --batch-size 32 --log-every 0 \
    --checkpoint-dir "$work/ckpt-$model" --timeline "$trace" 2>&1) ||
    fail "$model: $out"
  grep -q "timeline written to $trace" <<<"$out" || fail "$model: $out"
  steps=$(steps_of "$out")
  [ -n "$steps" ] && [ "$steps" -gt 0 ] || fail "$model: no step count: $out"
  check=$(/usr/bin/python3 "$REPORT" "$trace" --check "$steps") ||
    fail "$model: $check"
  echo "ok: $model, $steps steps: ${check##*$'\n'}"
  ls "$work"/"$model".json.* 2>/dev/null && fail "$model: parts left behind"
  /usr/bin/python3 - "$trace" <<'EOF' || fail "$model: tracks"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
names = {(e["pid"] - 1, e.get("cat"), e["name"])
         for e in events if e["ph"] == "X"}
for rank in (0, 1):
    for want in [("data", "load batch"), ("data", "feed"), ("steps", "run"),
                 ("op", "c_wait"), ("collective", "allreduce")]:
        assert (rank,) + want in names, f"rank {rank} lacks {want}"
assert (0, "checkpoints", "save checkpoint") in names, "no checkpoint"
queued = sum(1 for e in events if e["ph"] == "b" and e["cat"] == "queued")
done = sum(1 for e in events if e["ph"] == "X" and e["cat"] == "collective")
assert queued == done, (queued, done)
EOF
done

# Without --timeline nothing is written and nothing said.
out=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" --model mlp --data "$work/data" \
  --epochs 1 --batch-size 32 --log-every 0 2>&1) || fail "plain: $out"
grep -q "timeline" <<<"$out" && fail "plain run mentions a timeline: $out"

# A job that aborts (the loss diverges on every rank at once) leaves a
# trace with the reason and both ranks' events (rank 1's merged by rank 0,
# or in a part next to the file, which timeline_report.py reads with it).
# Three tries: mpirun's SIGTERM used to end rank 0 while it waited for the
# others' parts, before it wrote (most tries).
trace="$work/aborted.json"
for try in 1 2 3; do
  out=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" --model mlp --lr 1e30 \
    --data "$work/data" --epochs 1 --batch-size 32 --log-every 1 \
    --flight-dir "$work/flight" --timeline "$trace" 2>&1) &&
    fail "diverging run succeeded: $out"
  /usr/bin/python3 - "$trace" "$(dirname "$REPORT")" <<'EOF' ||
import json, sys
sys.path.insert(0, sys.argv[2])
import timeline_report
json.load(open(sys.argv[1]))  # valid by itself
trace = timeline_report.load(sys.argv[1])
assert "error" in trace["otherData"]["note"], trace["otherData"]
ranks = timeline_report.by_rank(trace)
for rank in (0, 1):
    assert ranks.get(rank) and ranks[rank]["ops"], f"no rank {rank} ops"
EOF
    fail "aborted trace (try $try): $out"
  rm -f "$trace".rank-*.part
done
echo "ok: an aborted job's trace holds both ranks' events and the reason"

# A job the stall watchdog ends (rank 1 stopped) leaves rank 0's trace,
# readable, with the stall as its note: the watchdog writes it before it
# ends the job (it was 0 bytes).
stopped=""
trap '[ -n "$stopped" ] && kill -CONT "$stopped" 2>/dev/null && kill -KILL "$stopped" 2>/dev/null; rm -rf "$work"' EXIT
trace="$work/stalled.json"
timeout 120 "${MPI[@]}" -np 2 "$TRAINER" --model mlp --data "$work/data" \
  --epochs 1000 --batch-size 32 --log-every 4 --stall-warn 2 \
  --stall-timeout 4 --flight-dir "$work/stall-flight" --timeline "$trace" \
  >"$work/stalled.log" 2>&1 &
job=$!
for _ in $(seq 300); do
  sleep 0.2
  grep -q "step" "$work/stalled.log" || continue
  for p in $(pgrep -f -- "--timeline $trace"); do
    grep -q trainer "/proc/$p/comm" 2>/dev/null || continue
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
      grep -qx "OMPI_COMM_WORLD_RANK=1" && stopped=$p
  done
  [ -n "$stopped" ] && break
done
[ -n "$stopped" ] || { kill "$job"; fail "no rank 1 to stop: $(cat "$work/stalled.log")"; }
kill -STOP "$stopped"
wait "$job" && fail "the stalled job exited 0: $(cat "$work/stalled.log")"
grep -q "ending the job (--stall-timeout 4)" "$work/stalled.log" ||
  fail "the watchdog did not end the job: $(cat "$work/stalled.log")"
report=$(/usr/bin/python3 "$REPORT" "$trace" 2>&1) ||
  fail "the stalled job's trace does not read: $report"
/usr/bin/python3 - "$trace" "$(dirname "$REPORT")" <<'EOF' ||
import json, sys
sys.path.insert(0, sys.argv[2])
import timeline_report
note = json.load(open(sys.argv[1]))["otherData"]["note"]  # valid by itself
assert note.startswith("stall: rank 1 holds up collective"), note
ranks = timeline_report.by_rank(timeline_report.load(sys.argv[1]))
assert ranks.get(0) and ranks[0]["ops"] and ranks[0]["collectives"], ranks
EOF
  fail "stalled trace: $report"
echo "ok: a job the watchdog ends leaves rank 0's trace with the stall"

# A trace cut short, empty or missing is said so in one line, no traceback.
head -c 2000 "$work/mlp.json" >"$work/cut.json"
: >"$work/empty.json"
for bad in cut empty missing; do
  out=$(/usr/bin/python3 "$REPORT" "$work/$bad.json" 2>&1) &&
    fail "timeline_report.py read the $bad file: $out"
  grep -q Traceback <<<"$out" && fail "$bad file: a traceback: $out"
  [ "$(wc -l <<<"$out")" -eq 1 ] || fail "$bad file: not one line: $out"
  grep -q "^timeline_report: error: $work/$bad.json" <<<"$out" || fail "$out"
done
echo "ok: a cut, empty or missing trace is one line, not a traceback"

# A file that cannot be written is refused before training.
out=$(timeout 300 "${MPI[@]}" -np 2 "$TRAINER" --model mlp --data "$work/data" \
  --epochs 1 --timeline /nonexistent-dir/t.json 2>&1) &&
  fail "unwritable --timeline accepted: $out"
grep -q "cannot write '/nonexistent-dir/t.json'" <<<"$out" || fail "$out"
echo "ok: an unwritable --timeline is refused"

# So is one that opens for writing but cannot take the trace, which is
# written next to it and renamed onto it (it was refused only after
# training): before the first step, on 2 ranks and on one process.
for np in 2 1; do
  launch=()
  [ "$np" -gt 1 ] && launch=("${MPI[@]}" -np "$np")
  out=$(timeout 300 "${launch[@]}" "$TRAINER" --model mlp --data "$work/data" \
    --epochs 1 --log-every 1 --timeline /proc/version 2>&1) &&
    fail "--timeline /proc/version accepted ($np process(es)): $out"
  grep -q "error: --timeline: cannot write '/proc/version'" <<<"$out" ||
    fail "$np process(es): $out"
  grep -q "step" <<<"$out" && fail "it trained first ($np process(es)): $out"
done
echo "ok: --timeline /proc/version is refused before training"

# The alignment is collective: ranks that disagree on --timeline are told
# so before it (rather than hang in it).
out=$(timeout 60 "${MPI[@]}" -np 1 "$TRAINER" --model mlp --data "$work/data" \
  --epochs 1 --timeline "$work/one.json" : -np 1 "$TRAINER" --model mlp \
  --data "$work/data" --epochs 1 2>&1) && fail "mixed --timeline ran: $out"
grep -qF "ranks disagree on --timeline: rank 0 has yes, rank 1 has no" \
  <<<"$out" || fail "mixed --timeline: $out"
echo "ok: ranks that disagree on --timeline are named"

# One process (no mpirun) traces itself as rank 0 of 1, steps numbered.
trace="$work/single.json"
out=$(timeout 300 "$TRAINER" --model mlp --data "$work/data" --epochs 1 \
  --batch-size 64 --log-every 0 --timeline "$trace" 2>&1) || fail "single: $out"
/usr/bin/python3 - "$trace" <<'EOF2' || fail "single-process trace"
import json, sys
trace = json.load(open(sys.argv[1]))
assert trace["otherData"]["ranks"] == 1
steps = {e["args"]["step"] for e in trace["traceEvents"] if e.get("cat") == "op"}
assert steps == set(range(0, 9)), steps  # 512 / 64 steps, and the probe
EOF2
echo "ok: one process traces itself"
