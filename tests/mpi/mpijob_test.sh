#!/usr/bin/env bash
# Kubernetes (deploy/kubernetes): the MPIJob manifest has what Kubeflow's
# MPI Operator (v2beta1) requires and what this product needs (checked by
# deploy/kubernetes/check_mpijob.py, which also refuses broken copies of
# it, one line each); the Dockerfile builds with the README's commands and
# runs sshd; and the launcher pod's command (fluid-launch) trains LeNet on
# 2 emulated hosts (tools/hosts.sh) x 2 slots from a hostfile written as
# the operator writes it, with OMPI_MCA_orte_default_hostfile pointing at
# it (the emulated hosts' agent stands in for ssh). Skips (77) where
# namespaces cannot be made.
#   mpijob_test.sh TRAINER
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
K8S="$ROOT/deploy/kubernetes"
HOSTS="$ROOT/tools/hosts.sh"
TRAINER="$1"
base="$(mktemp -d /tmp/fluid_mpijob_test.XXXXXX)"
export FLUID_HOSTS_PREFIX="fluidk$$x" FLUID_HOSTS_DIR="$base/hosts"
P="$FLUID_HOSTS_PREFIX"
fail() { echo "FAIL: $*"; exit 1; }
trap '"$HOSTS" down >/dev/null 2>&1; rm -rf "$base"' EXIT
trap 'exit 130' INT TERM
check() { /usr/bin/python3 "$K8S/check_mpijob.py" "$@"; }

# 1. The manifest, and broken copies of it refused by name.
out="$(check "$K8S/mpijob.yaml")" || fail "the manifest: $out"
grep -q "ok: .*2 worker(s) x 2 slot(s): 4 ranks" <<<"$out" || fail "$out"
echo "$out"
broken() {  # EXPECTED PYTHON-EDIT: the edited manifest must be refused so
  /usr/bin/python3 - "$K8S/mpijob.yaml" "$base/broken.yaml" "$2" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
spec = doc["spec"]
launcher = spec["mpiReplicaSpecs"]["Launcher"]
worker = spec["mpiReplicaSpecs"]["Worker"]
exec(sys.argv[3])
yaml.safe_dump(doc, open(sys.argv[2], "w"))
PY
  local log
  log="$(check "$base/broken.yaml")" && fail "not refused ($2): $log"
  grep -q -- "$1" <<<"$log" || fail "refused ($2) without '$1': $log"
  echo "ok: refused: ${log#*: }"
}
broken "apiVersion must be kubeflow.org/v2beta1" 'doc["apiVersion"] = "kubeflow.org/v1"'
broken "Launcher.replicas must be 1" 'launcher["replicas"] = 2'
broken "spec.mpiReplicaSpecs.Worker is missing" 'del spec["mpiReplicaSpecs"]["Worker"]'
broken "a container without an image" 'del worker["template"]["spec"]["containers"][0]["image"]'
broken "slotsPerWorker must be a positive integer" 'spec["slotsPerWorker"] = 0'
broken "must be OpenMPI" 'spec["mpiImplementation"] = "Intel"'
broken "cleanPodPolicy" 'spec["runPolicy"]["cleanPodPolicy"] = "Sometimes"'
broken "sshd in the foreground" 'worker["template"]["spec"]["containers"][0]["command"] = ["sleep", "inf"]'
broken "on no volume the workers mount" 'worker["template"]["spec"]["containers"][0]["volumeMounts"] = []'
broken "requests 1 CPU(s) but runs 2 rank(s)" 'worker["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"'

# 2. The image: Debian 12, the README's build, sshd, fluid-launch.
D="$K8S/Dockerfile"
grep -q "^FROM debian:12" "$D" || fail "the image is not Debian 12"
grep -q "tools/setup.sh" "$D" || fail "the image does not build with tools/setup.sh"
grep -q "openssh-server" "$D" || fail "the image has no sshd"
grep -q "fluid-launch" "$D" || fail "the image does not install fluid-launch"
echo "ok: Dockerfile: Debian 12, tools/setup.sh, sshd, fluid-launch"

# 3. The launcher pod's command on 2 emulated hosts x 2 slots.
"$HOSTS" up 2 --slots 2 >/dev/null
rc=$?
[ $rc -eq 77 ] && { echo "SKIP: emulated hosts are not available here"; exit 77; }
[ $rc -eq 0 ] || fail "hosts.sh up exited $rc"
mkdir -p "$base/etc/mpi"
printf '%s1 slots=2\n%s2 slots=2\n' "$P" "$P" >"$base/etc/mpi/hostfile"
data="$base/data"
/usr/bin/python3 "$HERE/make_idx.py" "$data" 512 200 || fail "test data"
launch() {  # LIMIT [VAR=VALUE...]: the launcher pod: host 1, the operator's variables
  local limit="$1"
  shift
  timeout "$limit" ip netns exec "${P}1" unshare --uts /bin/sh -c "hostname ${P}1; exec \"\$0\" \"\$@\"" \
    env OMPI_MCA_orte_default_hostfile="$base/etc/mpi/hostfile" \
    OMPI_MCA_plm_rsh_agent="$FLUID_HOSTS_DIR/agent" \
    OMPI_MCA_btl_tcp_if_include=10.77.0.0/24 OMPI_MCA_oob_tcp_if_include=10.77.0.0/24 \
    OMPI_MCA_mpi_yield_when_idle=1 FLUID_HOME="$ROOT" "$@" \
    "$K8S/fluid-launch" "$TRAINER" --model lenet --data "$data" --epochs 1 \
    --batch-size 32 --threads 1 --log-every 0 --check-consistency 4
}
log="$(launch 180 2>&1)" || fail "fluid-launch: $log"
grep -q "fluid-launch: 4 rank(s) on 2 worker(s)" <<<"$log" || fail "$log"
grep -q "x 4 ranks on 2 hosts x 2 ranks (${P}1, ${P}2), launched by mpirun (Open MPI) with hostfile $base/etc/mpi/hostfile, 2 ranks per node" <<<"$log" ||
  fail "the opening line does not name the hosts and the hostfile: $log"
grep -q "^test accuracy [0-9.]*" <<<"$log" || fail "no test accuracy: $log"
echo "ok: fluid-launch on 2 hosts x 2 slots: $(echo "$log" | grep -o "^test accuracy [0-9.]*")"

log="$(launch 60 FLUID_NP=5 2>&1)" && fail "FLUID_NP=5 on 4 slots ran: $log"
[ "$(echo "$log" | wc -l)" -eq 1 ] || fail "FLUID_NP=5: more than one line: $log"
grep -q "FLUID_NP=5 ranks but .* has 4 slots (2 worker(s))" <<<"$log" || fail "$log"
echo "ok: refused: $log"

"$HOSTS" down || fail "hosts.sh down exited $?"
echo "PASS: MPIJob manifest and image checked; the launcher's command trained 2 hosts x 2 ranks from the operator's hostfile"
