#!/usr/bin/env bash
# Emulated hosts on this machine, for multi-host runs and tests: N Linux
# network namespaces, each with a host name of its own (a UTS namespace per
# process started in it), joined by a bridge, with real TCP between them.
# Addresses are private to these namespaces: no traffic leaves the machine.
#
#   tools/hosts.sh up N [--rate R] [--delay D] [--slots S] [--private DIR]
#       N hosts fluidh1..fluidhN at 10.77.0.1..N (FLUID_HOSTS_SUBNET), S
#       slots each (default 2); --rate (e.g. 1gbit, a token bucket) and
#       --delay (e.g. 1ms, netem, where the kernel has it) shape every
#       host's link; --private DIR: only host 1 sees
#       what DIR holds, the others an empty DIR of their own (as when only
#       rank 0's machine mounts a file system). Replaces hosts already up.
#   tools/hosts.sh run -- <mpirun args>
#       mpirun from host 1 across the hosts (hostfile, rsh agent and the
#       TCP interfaces set), e.g. run -- -np 4 build/bin/trainer --model mlp.
#       The emulated hosts share this machine's cores, which Open MPI cannot
#       see: its ranks would spin on them while waiting and starve the peer
#       they wait for (a 4-byte allreduce took milliseconds), so run sets
#       mpi_yield_when_idle, as Open MPI does itself when it knows a host is
#       oversubscribed. It also opens 4 TCP connections between each pair
#       of ranks (btl_tcp_links): one did not fill a shaped 1 Gbit/s link.
#       And it binds no rank to a core (--bind-to none): each host would
#       bind its first rank to core 0, the same core for every host. Its
#       out-of-band TCP keepalives (oob_tcp_keepalive_*, unless given) let
#       mpirun and the daemons notice a host cut off in about 5 s; each
#       host gives up a connection whose data goes unacknowledged after
#       about 13 s (net.ipv4.tcp_retries2=5). --hostfile: unless given.
#   tools/hosts.sh down          removes every namespace and file of ours
#   tools/hosts.sh status        lists the hosts
#
# State lives in FLUID_HOSTS_DIR (default /tmp/fluid-hosts): hostfile,
# agent. FLUID_HOSTS_PREFIX (default fluidh, must start with "fluid") names
# the namespaces, so that two sets of hosts can be up at once. Needs root; without it, or where namespaces are not allowed, it
# says so in one line and exits 77 (tests skip on 77).
set -euo pipefail

PREFIX="${FLUID_HOSTS_PREFIX:-fluidh}"
HUB="${PREFIX}-hub"
BRIDGE=fluidbr
DIR="${FLUID_HOSTS_DIR:-/tmp/fluid-hosts}"
SUBNET="${FLUID_HOSTS_SUBNET:-10.77.0}"

say() { echo "hosts.sh: $*" >&2; }

case "$PREFIX" in
  fluid[a-z0-9]*) ;;
  *) say "FLUID_HOSTS_PREFIX must start with 'fluid', got '$PREFIX'"; exit 2 ;;
esac

require_privilege() {
  if [ "$(id -u)" -ne 0 ]; then
    say "needs root to create network namespaces"; exit 77
  fi
  for tool in ip unshare; do
    command -v "$tool" >/dev/null ||
      { say "'$tool' not found (apt-get install iproute2 util-linux)"; exit 77; }
  done
  if ! ip netns add "${PREFIX}-probe" 2>/dev/null; then
    say "network namespaces are not allowed here"; exit 77
  fi
  ip netns del "${PREFIX}-probe"
}

our_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' |
    grep -E "^${PREFIX}([0-9]+|-hub|-probe)$" || true
}

down() {
  local ns
  for ns in $(our_namespaces); do
    # Processes still inside would keep the namespace's network alive.
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$DIR"
}

write_agent() {
  local private="$1"
  cat >"$DIR/agent" <<AGENT
#!/bin/sh
# rsh agent for mpirun: [options] HOST command... runs the command inside
# HOST's namespaces, under HOST's name.
while [ \$# -gt 0 ]; do
  case "\$1" in -*) shift ;; *) break ;; esac
done
host="\$1"; shift
case "\$host" in
  ${SUBNET}.*) k="\${host##*.}" ;;
  ${PREFIX}[0-9]*) k="\${host#${PREFIX}}" ;;
  *) echo "hosts.sh agent: unknown host \$host" >&2; exit 1 ;;
esac
private="${private}"
if [ -n "\$private" ] && [ "\$k" != 1 ]; then
  exec ip netns exec "${PREFIX}\$k" unshare --uts --mount --propagation private \
    /bin/sh -c "mount -t tmpfs fluid-private '\$private' && hostname ${PREFIX}\$k && \$*"
fi
exec ip netns exec "${PREFIX}\$k" unshare --uts /bin/sh -c "hostname ${PREFIX}\$k; \$*"
AGENT
  chmod +x "$DIR/agent"
}

# Shapes the egress of `dev` in namespace `ns`: a token bucket at `rate`,
# behind a netem `delay` when one is asked for.
shape() {
  local ns="$1" dev="$2" rate="$3" delay="$4" parent="root"
  if [ -n "$delay" ]; then
    if ! ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: netem \
        delay "$delay" 2>/dev/null; then
      say "--delay needs the kernel's netem qdisc, which this machine lacks"
      down; exit 77
    fi
    parent="parent 1:"
  fi
  if [ -n "$rate" ]; then
    # shellcheck disable=SC2086
    ip netns exec "$ns" tc qdisc add dev "$dev" $parent tbf rate "$rate" \
      burst 512kb latency 20ms
  fi
}

# Sets net.ipv4.tcp_retries2 to 5 in namespace $1, where the kernel keeps
# it per namespace (Linux 4.15 on); never this machine's own.
set_retries() {
  local sysctl=/proc/sys/net/ipv4/tcp_retries2 own
  own="$(cat "$sysctl")"
  ip netns exec "$1" sh -c "echo 5 >$sysctl" 2>/dev/null || return 0
  if [ "$(cat "$sysctl")" != "$own" ]; then
    echo "$own" >"$sysctl"
    say "this kernel has one tcp_retries2 for all namespaces: left at $own"
  fi
}

up() {
  local n="$1"; shift
  local rate="" delay="" slots=2 private=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --private)
        [ -d "$2" ] || { say "--private: '$2' is not a directory"; exit 2; }
        case "$2" in *[\'\"\\\$]*)
          say "--private: '$2' holds a quote, a backslash or a dollar"; exit 2 ;;
        esac
        private="$(cd "$2" && pwd)"; shift 2 ;;
      --rate) rate="$2"; shift 2 ;;
      --delay) delay="$2"; shift 2 ;;
      --slots) slots="$2"; shift 2 ;;
      *) say "unknown option $1"; exit 2 ;;
    esac
  done
  case "$n" in
    ''|*[!0-9]*) say "up: N must be a number of hosts, got '$n'"; exit 2 ;;
  esac
  [ "$n" -ge 1 ] && [ "$n" -le 200 ] || { say "up: N must be 1..200"; exit 2; }
  require_privilege
  down
  trap 'say "interrupted: removing the hosts"; down; exit 130' INT TERM
  trap 'say "failed: removing the hosts"; down' ERR
  mkdir -p "$DIR"
  ip netns add "$HUB"
  ip -n "$HUB" link set lo up
  ip -n "$HUB" link add "$BRIDGE" type bridge
  ip -n "$HUB" link set "$BRIDGE" up
  : >"$DIR/hostfile"
  local k ns
  for k in $(seq 1 "$n"); do
    ns="${PREFIX}$k"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # A TCP connection with data in flight to a host that went away is
    # given up after 5 retransmissions (about 13 s) rather than Linux's 15
    # (about 15 minutes): mpirun's daemon on a host cut off while it sends
    # (a rank's last lines, its abort) then ends, as the keepalives `run`
    # sets end one whose connection is idle (docs/distributed.md).
    set_retries "$ns"
    ip link add "fluidv$k" netns "$ns" type veth peer name "fluidb$k" netns "$HUB"
    ip -n "$ns" addr add "${SUBNET}.$k/24" dev "fluidv$k"
    ip -n "$ns" link set "fluidv$k" up
    ip -n "$HUB" link set "fluidb$k" master "$BRIDGE"
    ip -n "$HUB" link set "fluidb$k" up
    shape "$ns" "fluidv$k" "$rate" "$delay"
    echo "${SUBNET}.$k slots=$slots" >>"$DIR/hostfile"
  done
  write_agent "$private"
  trap - INT TERM ERR
  echo "hosts.sh: $n hosts up (${SUBNET}.1-$n, $slots slots each${rate:+, rate $rate}${delay:+, delay $delay}); hostfile $DIR/hostfile"
}

# The keepalives run adds to mpirun (name value), unless the arguments or
# the environment (OMPI_MCA_<name>) set one of them: mpirun refuses a
# parameter given twice.
KEEPALIVE=(oob_tcp_keepalive_time 2 oob_tcp_keepalive_intvl 1
           oob_tcp_keepalive_probes 3)

run() {
  [ "${1:-}" = "--" ] && shift
  [ -f "$DIR/hostfile" ] || { say "no hosts: run 'tools/hosts.sh up N' first"; exit 2; }
  local arg hostfile=(--hostfile "$DIR/hostfile") keepalive=("${KEEPALIVE[@]}")
  local i name
  for arg in "$@"; do
    case "$arg" in
      -hostfile|--hostfile|-machinefile|--machinefile|-hostfile=*|--hostfile=*|-machinefile=*|--machinefile=*)
        hostfile=() ;;
      oob_tcp_keepalive_*) keepalive=() ;;
    esac
  done
  for ((i = 0; i < ${#KEEPALIVE[@]}; i += 2)); do
    name="OMPI_MCA_${KEEPALIVE[i]}"
    [ -n "${!name:-}" ] && keepalive=()
  done
  local mca=()
  for ((i = 0; i < ${#keepalive[@]}; i += 2)); do
    mca+=(--mca "${keepalive[i]}" "${keepalive[i + 1]}")
  done
  exec ip netns exec "${PREFIX}1" unshare --uts /bin/sh -c \
    "hostname ${PREFIX}1; exec \"\$0\" \"\$@\"" \
    mpirun "${hostfile[@]}" --mca plm_rsh_agent "$DIR/agent" \
    --mca btl_tcp_if_include "${SUBNET}.0/24" \
    --mca oob_tcp_if_include "${SUBNET}.0/24" \
    --mca mpi_yield_when_idle 1 --mca btl_tcp_links 4 --bind-to none \
    "${mca[@]}" "$@"
}

status() {
  local ns
  for ns in $(our_namespaces); do
    [ "$ns" = "$HUB" ] && continue
    printf '%s %s\n' "$ns" \
      "$(ip -n "$ns" -4 -o addr show 2>/dev/null | awk '$2 != "lo" {print $4}')"
  done
}

case "${1:-}" in
  up) shift; up "$@" ;;
  run) shift; run "$@" ;;
  down) [ "$(id -u)" -eq 0 ] || { say "needs root"; exit 77; }; down ;;
  status) status ;;
  *) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
