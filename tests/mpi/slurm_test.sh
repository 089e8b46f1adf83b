#!/usr/bin/env bash
# A Slurm cluster on 2 emulated hosts (tools/slurm.sh): LeNet trains one
# short epoch launched both ways, 2 hosts x 1 and x 2 ranks (srun
# --mpi=pmix directly; mpirun inside sbatch/salloc with no hostfile), the
# trainer's opening line naming the launcher, parameters consistent across
# ranks, the test accuracy printed; the Python path (fluid.MPIExecutor)
# under srun; fluidrun in an allocation restarting after a killed rank, and
# a job requeued by Slurm resuming from its checkpoint, both ending with
# the parameters of an uninterrupted run, to the bit; launches that cannot
# train refused in seconds with one line, by the trainer and by
# fluid.MPIExecutor (ValueError). The cluster is torn down even on
# failure, and no daemon of ours is left. Skips (77) without namespaces or
# slurm-wlm.
#   slurm_test.sh TRAINER [PYTHON_DIR]
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$HERE/../.."
SLURM="$ROOT/tools/slurm.sh"
FLUIDRUN="$ROOT/tools/fluidrun"
TRAINER="$1"
PYDIR="${2:-}"
base="$(mktemp -d /tmp/fluid_slurm_test.XXXXXX)"
chmod 755 "$base"
export FLUID_SLURM_DIR="$base/cluster" FLUID_HOSTS_PREFIX="fluidq$$x"
P="$FLUID_HOSTS_PREFIX"
fail() { echo "FAIL: $*"; exit 1; }
ours() {  # our daemons still running (zombies aside)
  ps -eo pid=,stat=,args= | awk -v d="$FLUID_SLURM_DIR" -v p="$P" \
    '$2 !~ /^Z/ && (index($0, d) || index($0, p))' | grep -v -e awk -e "ps -eo" || true
}
cleanup() {
  "$SLURM" down >/dev/null 2>&1
  rm -rf "$base"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$SLURM" up 2 --cpus 2
rc=$?
if [ $rc -eq 77 ]; then echo "SKIP: no Slurm cluster can be made here"; exit 77; fi
[ $rc -eq 0 ] || fail "slurm.sh up exited $rc"
run() { timeout "$1" "$SLURM" run -- "${@:2}"; }
# The state a job ended in (COMPLETED, FAILED, ...), waiting at most $2 s;
# polled more often than sbatch --wait does.
ended() {
  local state="" i
  for i in $(seq $(($2 * 5))); do
    state="$(run 10 scontrol -o show job "$1" 2>/dev/null | grep -o "JobState=[A-Z_]*")"
    case "$state" in
      JobState=COMPLETED|JobState=FAILED|JobState=CANCELLED|JobState=TIMEOUT|JobState=NODE_FAIL|JobState=OUT_OF_MEMORY)
        echo "${state#JobState=}"; return 0 ;;
    esac
    sleep 0.2
  done
  echo "${state#JobState=}"
}
# sbatch's script $2 with options $3...: true when it completes within $1 s.
batch() {
  local limit="$1" id
  shift
  id="$(run 30 sbatch --parsable "$@")" || return 1
  [ "$(ended "$id" "$limit")" = COMPLETED ]
}

data="$base/data"
/usr/bin/python3 "$HERE/make_idx.py" "$data" 512 200 || fail "test data"
lenet=(--model lenet --data "$data" --epochs 1 --batch-size 32 --threads 1
       --log-every 0 --check-consistency 4)
hosts_line() {  # the opening line's hosts for $1 ranks per host
  local r="rank"; [ "$1" -gt 1 ] && r="ranks"
  echo "x $((2 * $1)) ranks on 2 hosts x $1 $r (${P}1, ${P}2), launched by $2 in Slurm job [0-9]*, $1 $r per node"
}
check_trained() {  # LOG RANKS_PER_HOST LAUNCHER WHAT
  local want
  want="$(hosts_line "$2" "$3")"
  grep -q "$want" <<<"$1" ||
    fail "$4: the opening line does not name the hosts and the launcher (wanted /$want/): $(grep "ranks on" <<<"$1" | cat -A)
$1"
  grep -q "^test accuracy [0-9.]*" <<<"$1" || fail "$4: no test accuracy: $1"
  grep -qi "inconsistent\|differ" <<<"$1" && fail "$4: parameters differ: $1"
  echo "[$SECONDS s] ok: $4: $(echo "$1" | grep -o "^test accuracy [0-9.]*")"
}

# 1. srun --mpi=pmix, the trainer launched directly: 2 x 1, 2 x 2.
for k in 1 2; do
  log="$(run 120 srun --mpi=pmix --kill-on-bad-exit=1 -N 2 \
    --ntasks-per-node "$k" "$TRAINER" "${lenet[@]}" 2>&1)" ||
    fail "srun --mpi=pmix 2 x $k: $log"
  check_trained "$log" "$k" "srun --mpi=pmix" "srun --mpi=pmix, 2 hosts x $k"
done

# 2. mpirun inside the allocation, no hostfile: sbatch 2 x 1, salloc 2 x 2.
cat >"$base/mpirun.sh" <<JOB
#!/bin/sh
exec mpirun "$TRAINER" ${lenet[*]}
JOB
chmod +x "$base/mpirun.sh"
batch 120 -N 2 --ntasks-per-node 1 -o "$base/sbatch.out" "$base/mpirun.sh" || fail "sbatch + mpirun: $(cat "$base/sbatch.out")"
check_trained "$(cat "$base/sbatch.out")" 1 "mpirun (Open MPI)" \
  "sbatch + mpirun, 2 hosts x 1"
log="$(run 120 salloc -N 2 --ntasks-per-node 2 mpirun "$TRAINER" \
  "${lenet[@]}" 2>&1)" || fail "salloc + mpirun: $log"
check_trained "$log" 2 "mpirun (Open MPI)" "salloc + mpirun, 2 hosts x 2"

# 3. Python: fluid.MPIExecutor under srun --mpi=pmix.
FASHION=/usr/share/datasets/fashion-mnist
if [ -n "$PYDIR" ] && [ -r "$FASHION/train-images-idx3-ubyte.gz" ]; then
  log="$(PYTHONPATH="$PYDIR" run 120 srun --mpi=pmix --kill-on-bad-exit=1 \
    -N 2 --ntasks-per-node 1 /usr/bin/python3 \
    "$ROOT/examples/recognize_digits_conv_dist.py" --steps 5 2>&1)" ||
    fail "Python under srun: $log"
  grep -q "trained 5 steps on 2 rank(s)" <<<"$log" ||
    fail "Python under srun did not train on 2 ranks: $log"
  echo "[$SECONDS s] ok: Python (fluid.MPIExecutor) under srun --mpi=pmix, 2 ranks"
else
  echo "not run: the Python example (needs PYTHON_DIR and $FASHION)"
fi

# 4. Launches that cannot train end in seconds, with one line.
refused() {  # WHAT EXPECTED-LINE COMMAND...
  local what="$1" line="$2" start=$SECONDS log
  shift 2
  log="$(run 60 "$@" 2>&1)" && fail "$what was not refused: $log"
  [ $((SECONDS - start)) -le 20 ] ||
    fail "$what took $((SECONDS - start)) s to be refused: $log"
  grep -q -- "$line" <<<"$log" || fail "$what: no line '$line': $log"
  echo "[$SECONDS s] ok: $what refused in $((SECONDS - start)) s: $(echo "$log" | grep -m1 -- "$line")"
}
refused "srun without a PMI" \
  "error: srun started 2 tasks with no PMI" \
  srun --mpi=none --kill-on-bad-exit=1 -N 2 --ntasks-per-node 1 "$TRAINER" "${lenet[@]}"
refused "srun --mpi=pmi2" "has no PMI-2 client" \
  srun --mpi=pmi2 --kill-on-bad-exit=1 -N 2 --ntasks-per-node 1 "$TRAINER" "${lenet[@]}"
# The Python path refuses them too, before MPI starts: fluid.MPIExecutor
# raises ValueError with the trainer's message.
if [ -n "$PYDIR" ]; then
  cat >"$base/refused.py" <<'PY'
import fluid
exe = fluid.MPIExecutor(fluid.CPUPlace())
print("trained on", exe.world_size, "rank(s)")
PY
  PYTHONPATH="$PYDIR" refused "Python under srun without a PMI" \
    "ValueError: srun started 2 tasks with no PMI" \
    srun --mpi=none --kill-on-bad-exit=1 -N 2 --ntasks-per-node 1 \
    /usr/bin/python3 "$base/refused.py"
  # Each task's output goes to its own file, written by its node's
  # slurmstepd: srun may stop forwarding a task's lines when the step is
  # killed, and the refusal then reads cut off.
  start=$SECONDS
  PYTHONPATH="$PYDIR" run 60 srun --mpi=pmi2 --kill-on-bad-exit=1 -N 2 \
    --ntasks-per-node 1 -o "$base/pmi2-%t.out" \
    /usr/bin/python3 "$base/refused.py" >/dev/null 2>&1 &&
    fail "Python under srun --mpi=pmi2 was not refused"
  [ $((SECONDS - start)) -le 20 ] ||
    fail "Python under srun --mpi=pmi2 took $((SECONDS - start)) s"
  log="$(cat "$base"/pmi2-*.out)"
  line="fluid: rank [01]: uncaught ValueError: srun --mpi=pmi2 started 2 task(s), but this Open MPI has no PMI-2 client"
  grep -q -- "$line" <<<"$log" ||
    fail "Python under srun --mpi=pmi2: no line '$line': $log"
  echo "[$SECONDS s] ok: Python under srun --mpi=pmi2 refused in" \
    "$((SECONDS - start)) s: $(grep -m1 -- "$line" <<<"$log")"
else
  echo "not run: Python's refusals (needs PYTHON_DIR)"
fi
cat >"$base/over.sh" <<JOB
#!/bin/sh
exec mpirun -np 4 --oversubscribe "$TRAINER" ${lenet[*]}
JOB
chmod +x "$base/over.sh"
start=$SECONDS
batch 60 -N 2 --ntasks-per-node 1 -o "$base/over.out" "$base/over.sh" && fail "4 ranks on 2 allotted CPUs ran: $(cat "$base/over.out")"
grep -q "put 2 ranks on this node but Slurm job [0-9]* was allotted 1 CPU(s) there" \
  "$base/over.out" || fail "no line for more ranks than CPUs: $(cat "$base/over.out")"
[ $((SECONDS - start)) -le 30 ] || fail "more ranks than CPUs took $((SECONDS - start)) s"
echo "[$SECONDS s] ok: more ranks than allotted CPUs refused in $((SECONDS - start)) s"
refused "more tasks per node than CPUs" "More processors requested than permitted" \
  srun --mpi=pmix -N 2 --ntasks-per-node 3 "$TRAINER" "${lenet[@]}"
refused "a node the cluster lacks" "Node count specification invalid" \
  srun --mpi=pmix -N 3 --ntasks-per-node 1 "$TRAINER" "${lenet[@]}"

# 5. fluidrun in an allocation and a requeued job: 2 epochs of 8 steps, a
# checkpoint every 4; each ends with the uninterrupted run's parameters.
long=(--model lenet --data "$data" --epochs 2 --batch-size 32 --threads 1
      --log-every 0 --checkpoint-every 4)
job() {  # NAME PRELUDE [LAUNCH]: a batch script running LAUNCH mpirun trainer
  cat >"$base/$1.sh" <<JOB
#!/bin/sh
$2
exec ${3:-} mpirun "$TRAINER" ${long[*]} --checkpoint-dir "$base/$1"
JOB
  chmod +x "$base/$1.sh"
}
same_params() {  # the final checkpoints of runs $1 and $2, tensor by tensor
  local a="$base/$1/ckpt-16" b="$base/$2/ckpt-16" f n=0
  [ -d "$a" ] && [ -d "$b" ] || fail "no final checkpoint ckpt-16 in $1 or $2"
  for f in "$a"/*.tensor; do
    cmp -s "$f" "$b/$(basename "$f")" || fail "$2 ends with $(basename "$f") unlike $1"
    n=$((n + 1))
  done
  [ "$n" -gt 0 ] || fail "no tensors in $a"
  echo "$n"
}
job whole ":"
batch 120 -N 2 --ntasks-per-node 1 -o "$base/whole.out" "$base/whole.sh" || fail "the uninterrupted run: $(cat "$base/whole.out")"

job killed "export FLUID_TEST_KILL_AT_STEP=6 FLUID_TEST_KILL_RANK=1" \
  "$FLUIDRUN --max-restarts 1"
batch 180 -N 2 --ntasks-per-node 1 -o "$base/killed.out" "$base/killed.sh" || fail "fluidrun in an allocation: $(cat "$base/killed.out")"
grep -q "fluidrun: attempt 2 resumed from step 4" "$base/killed.out" ||
  fail "fluidrun did not resume from step 4: $(cat "$base/killed.out")"
n="$(same_params whole killed)" || { echo "$n"; exit 1; }
echo "[$SECONDS s] ok: a rank killed at step 6 under fluidrun in an allocation: resumed from step 4, $n tensors equal to the uninterrupted run's"

# Requeued: the first run's rank 0 is slowed so that the requeue lands
# mid-run; the script always passes --resume (from scratch when empty).
job requeued '[ "${SLURM_RESTART_COUNT:-0}" = 0 ] &&
  export FLUID_TEST_SLOW_STEP_RANK=0 FLUID_TEST_SLOW_STEP_SECONDS=0.3'
sed -i 's/--checkpoint-dir/--resume --checkpoint-dir/' "$base/requeued.sh"
id="$(run 30 sbatch --parsable --requeue --open-mode=append -N 2 \
  --ntasks-per-node 1 -o "$base/requeued.out" "$base/requeued.sh")" ||
  fail "sbatch --requeue: $id"
for _ in $(seq 300); do [ -f "$base/requeued/LATEST" ] && break; sleep 0.1; done
[ -f "$base/requeued/LATEST" ] || fail "no checkpoint before the requeue: $(cat "$base/requeued.out")"
run 30 scontrol requeue "$id" || fail "scontrol requeue $id"
state="$(ended "$id" 180)"
[ "$state" = COMPLETED ] || fail "the requeued job ended $state: $(cat "$base/requeued.out")"
step="$(sed -n "s|^resumed from $base/requeued at epoch [0-9]*, step \([0-9]*\).*|\1|p" "$base/requeued.out")"
[ -n "$step" ] && [ "$step" -gt 0 ] && [ "$step" -lt 16 ] ||
  fail "the requeued job did not resume mid-run from its checkpoint (step '$step'): $(cat "$base/requeued.out")"
n="$(same_params whole requeued)" || { echo "$n"; exit 1; }
echo "[$SECONDS s] ok: requeued by Slurm: $(grep -o "resumed from [^(]*" "$base/requeued.out" | head -1), $n tensors equal to the uninterrupted run's"

"$SLURM" down || fail "slurm.sh down exited $?"
left="$(ours)"
[ -z "$left" ] || fail "left running after down: $left"
[ "$(ip netns list | grep -c "^$P")" -eq 0 ] || fail "namespaces left after down"
echo "PASS: Slurm on 2 emulated hosts: srun --mpi=pmix and mpirun in sbatch/salloc (x1, x2), Python, refusals, fluidrun and requeue resumed to the bit; torn down"
