#!/usr/bin/env bash
# Training throughput under Slurm against mpirun with a hostfile, on the
# same emulated hosts (tools/slurm.sh; its hosts are tools/hosts.sh's):
# paired rounds, each launching the same job three ways in turn (the order
# rotating each round) and reading the trainer's own samples/s:
#   srun     srun --mpi=pmix -N H --ntasks-per-node K trainer ...
#   sbatch   sbatch -N H --ntasks-per-node K (mpirun trainer ..., no hostfile)
#   hostfile tools/hosts.sh run -- -np H*K --map-by node trainer ...
# and prints each round and the median ratios srun/hostfile and
# sbatch/hostfile. Starts a cluster of its own (and tears it down).
#
#   benchmarks/slurm_throughput.sh [ROUNDS] [RANKS_PER_HOST] [-- TRAINER-ARGS]
#     default: 5 rounds, 1 rank per host, lenet on Fashion-MNIST, the first
#     8192 samples, 1 epoch, --threads 1; TRAINER=PATH another trainer
#     (its libraries in LD_LIBRARY_PATH: passed on to every rank)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TRAINER="${TRAINER:-$ROOT/build/bin/trainer}"
ROUNDS="${1:-5}"
K="${2:-1}"
shift 2 2>/dev/null || shift $#
[ "${1:-}" = "--" ] && shift
ARGS=("$@")
[ ${#ARGS[@]} -gt 0 ] || ARGS=(--model lenet --train-samples 8192 --epochs 1
                               --threads 1 --log-every 0)
base="$(mktemp -d /tmp/fluid_slurm_bench.XXXXXX)"
chmod 755 "$base"
export FLUID_SLURM_DIR="$base/cluster" FLUID_HOSTS_PREFIX="fluidb$$x"
export FLUID_HOSTS_DIR="$FLUID_SLURM_DIR/hosts"
trap '"$ROOT/tools/slurm.sh" down >/dev/null 2>&1; rm -rf "$base"' EXIT
trap 'exit 130' INT TERM
"$ROOT/tools/slurm.sh" up 2 --cpus "$((K > 2 ? K : 2))" || exit $?

# A trainer outside build/ (TRAINER=...) may bring its libraries in
# LD_LIBRARY_PATH: every launch passes it on.
XL=()
[ -n "${LD_LIBRARY_PATH:-}" ] && XL=(-x LD_LIBRARY_PATH)
rate() { sed -n 's/.* at \([0-9.]*\) samples\/s.*/\1/p' | tail -1; }
# The batch script marks its end in a file, which the launcher below waits
# for: asking Slurm (squeue) five times a second took about a tenth of a
# core (the RPC, munge's authentication, slurmctld's reply), 5% of this
# machine's two cores, from the very job being measured.
cat >"$base/job.sh" <<JOB
#!/bin/sh
mpirun ${XL[*]} "$TRAINER" ${ARGS[*]}
echo \$? >"$base/job.done"
JOB
chmod +x "$base/job.sh"
launch() {
  case "$1" in
    srun) "$ROOT/tools/slurm.sh" run -- srun --mpi=pmix -N 2 \
            --ntasks-per-node "$K" "$TRAINER" "${ARGS[@]}" 2>&1 | rate ;;
    sbatch) local id
            rm -f "$base/job.done"
            id="$("$ROOT/tools/slurm.sh" run -- sbatch --parsable -N 2 \
              --ntasks-per-node "$K" -o "$base/job.out" "$base/job.sh")"
            # The end marker, polled locally; Slurm is asked only every 5 s,
            # for a job that ended without writing it.
            local polls=0
            until [ -f "$base/job.done" ]; do
              sleep 0.2
              polls=$((polls + 1))
              if [ $((polls % 25)) -eq 0 ] && ! "$ROOT/tools/slurm.sh" run -- \
                   squeue -h -j "$id" 2>/dev/null | grep -q .; then
                break
              fi
            done
            # The allocation ends before the next launch asks for one.
            while "$ROOT/tools/slurm.sh" run -- squeue -h -j "$id" 2>/dev/null |
                  grep -q .; do sleep 0.2; done
            rate <"$base/job.out" ;;
    hostfile) OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
                "$ROOT/tools/hosts.sh" run -- -np "$((2 * K))" --map-by node \
                "${XL[@]}" "$TRAINER" "${ARGS[@]}" 2>&1 | rate ;;
  esac
}
ways=(srun sbatch hostfile)
echo "round  srun  sbatch  hostfile (samples/s; 2 hosts x $K rank(s); ${ARGS[*]})"
: >"$base/ratios"
for r in $(seq 1 "$ROUNDS"); do
  declare -A got=()
  for i in 0 1 2; do
    way="${ways[$(((i + r) % 3))]}"
    got[$way]="$(launch "$way")"
    [ -n "${got[$way]}" ] || { echo "round $r: $way printed no samples/s"; exit 1; }
  done
  echo "$r  ${got[srun]}  ${got[sbatch]}  ${got[hostfile]}"
  echo "${got[srun]} ${got[sbatch]} ${got[hostfile]}" >>"$base/ratios"
done
/usr/bin/python3 - "$base/ratios" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
for name, col in (("srun/hostfile", 0), ("sbatch+mpirun/hostfile", 1)):
    ratios = [r[col] / r[2] for r in rows]
    print("%s: median %.3f (rounds: %s)" % (
        name, statistics.median(ratios), " ".join("%.3f" % x for x in ratios)))
PY
