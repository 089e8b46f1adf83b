#!/usr/bin/env bash
# Two emulated hosts (tools/hosts.sh): ranks on different hosts see
# different host names, the multi-rank tests pass over TCP between them, and
# nothing of ours is left afterwards. Skips (77) where namespaces cannot be
# made.
#   hosts_test.sh MPI_TESTS_BINARY
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
HOSTS="$HERE/../../tools/hosts.sh"
MPI_TESTS="$1"
export FLUID_HOSTS_PREFIX="fluidt$$" FLUID_HOSTS_DIR="$(mktemp -d)/hosts"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail() { echo "FAIL: $*"; exit 1; }
trap '"$HOSTS" down >/dev/null 2>&1' EXIT

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

"$HOSTS" down || fail "hosts.sh down exited $?"
left="$(ip netns list | grep -c "^${FLUID_HOSTS_PREFIX}" || true)"
[ "$left" -eq 0 ] || fail "$left namespace(s) left after down"
[ ! -e "$FLUID_HOSTS_DIR" ] || fail "$FLUID_HOSTS_DIR left after down"
echo "PASS: 2 emulated hosts, 4 ranks, cleaned up"
