#!/usr/bin/env bash
# A cluster on this machine (docs/multihost.md): N hosts, each a network namespace with its own
# hostname (UTS namespace), its own IP on a Linux bridge, its own node-local scratch and
# /dev/shm (tmpfs in its own mount namespace), while the project and campaign directories stay
# shared, as a cluster's home is. Links can be shaped with tc tbf. MPI launchers reach the hosts
# through an rsh agent that enters a host's namespaces (Open MPI: plm_rsh_agent; MPICH/Intel
# MPI hydra: -launcher-exec), so ranks on different hosts talk TCP over the bridge and ranks of
# one host share memory, as on a real cluster. Needs root (ip netns, unshare, mount, tc).
#
#   scripts/testbed.sh up N [--rate GBIT] [--ranks-per-host K] [--scratch-size SIZE]
#   scripts/testbed.sh shape GBIT|off      reshape every host link (both directions)
#   scripts/testbed.sh exec HOST CMD...    run CMD on HOST (in the current directory)
#   scripts/testbed.sh status              hosts, addresses, link rate, state directory
#   scripts/testbed.sh slurm up|down|status|crash HOST|restart HOST [options]
#                                          a multi-node Slurm on the hosts (scripts/testbed-slurm.sh)
#   scripts/testbed.sh down                remove everything `up` made (idempotent, also after a crash;
#                                          a Slurm on the hosts goes first)
#
# State: $TRAINSCALE_TESTBED_DIR (default /run/trainscale-testbed): `hosts` (one name per
# line), `hostfile` (Open MPI), `hostfile.hydra` (MPICH, Intel MPI), `agent` (the launcher
# agent), `env.sh` (source it: the MCA and hydra settings that point the launchers at the hosts),
# `rate` (the shaped rate in Gbit/s, or `off`), `ns/HOST.pid` (the process that holds a host's UTS and mount namespaces),
# `scratch` (each host's private tmpfs is mounted here; empty outside the hosts).
# Hosts are tsnode1..N (TRAINSCALE_TESTBED_PREFIX) at ${SUBNET}.11.. (TRAINSCALE_TESTBED_SUBNET,
# default 10.213.0), the bridge tsnodebr at .1 (named `tsnodehead` in /etc/hosts); /etc/hosts gets the
# names between two marker lines that `down` removes. Two test beds side by side need their own
# directory, prefix and subnet.
set -euo pipefail

STATE=${TRAINSCALE_TESTBED_DIR:-/run/trainscale-testbed}
SUBNET=${TRAINSCALE_TESTBED_SUBNET:-10.213.0}
PREFIX=${TRAINSCALE_TESTBED_PREFIX:-tsnode}
BRIDGE=${PREFIX:0:8}br
MARK_BEGIN="# trainscale-testbed $PREFIX begin"
MARK_END="# trainscale-testbed $PREFIX end"

die() { echo "testbed: $*" >&2; exit "${2:-1}"; }
usage() { sed -n '/^#   scripts/p' "$0" | sed 's/^#   /usage: /' >&2; exit 2; }
need_root() {
  [[ $(id -u) -eq 0 ]] || die "needs root (ip netns, unshare, mount, tc); run it as root or use sudo" 2
  local t
  for t in ip tc unshare nsenter mount; do command -v "$t" >/dev/null || die "'$t' is missing (Debian: iproute2, util-linux, mount)" 2; done
}

host_ip() { echo "$SUBNET.$((10 + $1))"; }
hosts() { [[ -f $STATE/hosts ]] && cat "$STATE/hosts"; return 0; }

# The agent MPI launchers call as `agent [ssh options] HOST COMMAND...`. It enters HOST's
# network, UTS and mount namespaces, changes to the caller's directory when the host has it
# (the shared file system), and runs COMMAND through sh as ssh would.
write_agent() {
  cat >"$STATE/agent" <<EOF
#!/bin/sh
# trainscale test bed launcher agent (scripts/testbed.sh): enters a host, runs a command there.
while [ \$# -gt 0 ]; do
  case "\$1" in
    -[1246AaCfgKkMNnqsTtVvXxYy]*) shift ;;
    -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;
    -[bcDEeFIiJLlmOopQRSWw]*) shift ;;
    --) shift; break ;;
    *) break ;;
  esac
done
host=\$1; shift
pid=\$(cat "$STATE/ns/\$host.pid" 2>/dev/null) && [ -d /proc/\$pid ] || { echo "testbed agent: no host '\$host' (scripts/testbed.sh status)" >&2; exit 255; }
dir=\$(pwd)
exec nsenter -t "\$pid" --net --uts --mount -- /bin/sh -c 'cd "\$1" 2>/dev/null || cd /; shift; eval "\$*"' sh "\$dir" "\$@"
EOF
  chmod 755 "$STATE/agent"
}

write_env() {
  local cidr="$SUBNET.0/24"
  cat >"$STATE/env.sh" <<EOF
# source this: MPI launchers reach the test bed's hosts (scripts/testbed.sh)
export TRAINSCALE_TESTBED_DIR=$STATE
export TRAINSCALE_TESTBED_HOSTS="$(hosts | paste -sd, -)"
export OMPI_MCA_plm_rsh_agent=$STATE/agent
export OMPI_MCA_oob_tcp_if_include=$cidr
export OMPI_MCA_btl_tcp_if_include=$cidr
export OMPI_MCA_btl=self,vader,tcp
export OMPI_MCA_pml=ob1
export HYDRA_LAUNCHER=ssh
export HYDRA_LAUNCHER_EXEC=$STATE/agent
EOF
}

add_host() {  # add_host I NAME SCRATCH_SIZE
  local i=$1 h=$2 size=$3 t
  ip netns add "$h"
  ip link add "${PREFIX:0:8}v$i" type veth peer name eth0 netns "$h"
  ip link set "${PREFIX:0:8}v$i" master "$BRIDGE" up
  ip -n "$h" addr add "$(host_ip "$i")/24" dev eth0
  ip -n "$h" link set eth0 up
  ip -n "$h" link set lo up
  # A holder process keeps the host's UTS and mount namespaces (its hostname, /sys of its network
  # namespace, private tmpfs for scratch and /dev/shm); the agent enters them through its /proc
  # entry, which every host and the machine itself can see.
  # Its own kernel boot id too: UCX (under MPICH's ch4:ucx) takes processes with one boot id for one
  # machine and would pass their messages through memory instead of the network.
  cat /proc/sys/kernel/random/uuid >"$STATE/ns/$h.boot_id"
  setsid nsenter --net="/run/netns/$h" unshare --uts --mount --propagation private /bin/sh -c \
    "hostname $h && mount -t sysfs sysfs /sys && mount -t tmpfs -o size=$size,mode=1777 tmpfs '$STATE/scratch' \
     && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && mount --bind '$STATE/ns/$h.boot_id' /proc/sys/kernel/random/boot_id \
     && echo \$\$ >'$STATE/ns/$h.pid.tmp' && exec sleep infinity" \
    </dev/null >/dev/null 2>&1 &
  for ((t = 0; t < 100; t++)); do
    [[ -s $STATE/ns/$h.pid.tmp ]] && { mv "$STATE/ns/$h.pid.tmp" "$STATE/ns/$h.pid"; return 0; }
    sleep 0.05
  done
  die "host $h did not start (unshare --uts --mount as root)"
}

shape() {  # shape GBIT|off: tbf on both ends of every host's veth (host egress and ingress)
  local rate=$1 h i=0 burst
  for h in $(hosts); do
    i=$((i + 1))
    if [[ $rate == off ]]; then
      ip netns exec "$h" tc qdisc del dev eth0 root 2>/dev/null || true
      tc qdisc del dev "${PREFIX:0:8}v$i" root 2>/dev/null || true
    else
      # A bucket of 1 ms at the rate (at least 256 KiB: veth hands tbf 64 KiB GSO segments).
      burst=$(awk -v r="$rate" 'BEGIN { b = r * 1e9 / 8 / 1000; if (b < 262144) b = 262144; printf "%d", b }')
      ip netns exec "$h" tc qdisc replace dev eth0 root tbf rate "${rate}gbit" burst "$burst" latency 20ms
      tc qdisc replace dev "${PREFIX:0:8}v$i" root tbf rate "${rate}gbit" burst "$burst" latency 20ms
    fi
  done
  echo "$rate" >"$STATE/rate"
}

cmd_up() {
  local n="" rate=off per=1 size=2g
  while (($#)); do
    case $1 in
      --rate) rate=${2:?--rate needs a value in Gbit/s}; shift 2 ;;
      --ranks-per-host) per=${2:?--ranks-per-host needs a count}; shift 2 ;;
      --scratch-size) size=${2:?--scratch-size needs a size such as 2g}; shift 2 ;;
      -h|--help) usage ;;
      *) [[ -z $n ]] || usage; n=$1; shift ;;
    esac
  done
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 64)) || die "up: the host count must be 1..64, got '${n}'" 2
  [[ $per =~ ^[0-9]+$ ]] && ((per >= 1)) || die "up: --ranks-per-host must be an integer >= 1, got '$per'" 2
  [[ $rate == off || $rate =~ ^[0-9]+([.][0-9]+)?$ ]] || die "up: --rate must be Gbit/s (e.g. 1, 10, 25) or off, got '$rate'" 2
  need_root
  cmd_down >/dev/null
  mkdir -p "$STATE/ns" "$STATE/scratch"
  ip link add "$BRIDGE" type bridge
  ip addr add "$SUBNET.1/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  local i
  : >"$STATE/hosts"
  for ((i = 1; i <= n; i++)); do
    add_host "$i" "$PREFIX$i" "$size"
    echo "$PREFIX$i" >>"$STATE/hosts"
  done
  {
    echo "$MARK_BEGIN"
    echo "$SUBNET.1 ${PREFIX}head"
    for ((i = 1; i <= n; i++)); do echo "$(host_ip "$i") $PREFIX$i"; done
    echo "$MARK_END"
  } >>/etc/hosts
  hosts | sed "s/\$/ slots=$per/" >"$STATE/hostfile"
  hosts | sed "s/\$/:$per/" >"$STATE/hostfile.hydra"
  write_agent
  write_env
  shape "$rate"
  cmd_status
}

cmd_down() {
  [[ $(id -u) -eq 0 ]] || die "down needs root" 2
  local h f
  # A Slurm cluster on the hosts (scripts/testbed-slurm.sh) first: its daemons hold the hosts.
  [[ -d $STATE/slurm ]] && "$(dirname "$0")/testbed-slurm.sh" down >/dev/null 2>&1 || true
  for h in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX[0-9]*$" || true); do
    # Anything still running on the host (a crashed test's ranks, a slurmd) goes first.
    ip netns pids "$h" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "$h" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  # A host's veth outlives its namespace's name while the kernel still holds the namespace (the
  # sockets of ranks killed mid-transfer); deleting our end removes the pair.
  for f in $(ip -o link show 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | grep -E "^${PREFIX:0:8}v[0-9]+$" || true); do
    ip link del "$f" 2>/dev/null || true
  done
  for f in "$STATE"/ns/*.pid; do [[ -f $f ]] && kill -KILL "$(cat "$f")" 2>/dev/null || true; done
  # Whatever is still mounted under the state directory (an older or interrupted `up`), deepest first.
  for f in $(awk -v d="$STATE" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo | sort -r); do
    umount -l "$f" 2>/dev/null || true
  done
  if [[ -f /etc/hosts ]] && grep -qF "$MARK_BEGIN" /etc/hosts; then
    # Rewritten in place: /etc/hosts may be a bind mount that cannot be replaced by a rename.
    local kept
    kept=$(sed "/^$MARK_BEGIN\$/,/^$MARK_END\$/d" /etc/hosts)
    printf '%s\n' "$kept" >/etc/hosts
  fi
  rm -rf "$STATE"
  echo "testbed: down"
}

cmd_exec() {
  (($# >= 2)) || usage
  local h=$1
  shift
  [[ -x $STATE/agent ]] || die "no test bed is up (scripts/testbed.sh up N)"
  grep -qx "$h" "$STATE/hosts" || die "no host '$h'; hosts: $(hosts | paste -sd' ' -)" 2
  local q="" a
  for a in "$@"; do q+=" $(printf '%q' "$a")"; done
  exec "$STATE/agent" "$h" "$q"
}

cmd_status() {
  [[ -f $STATE/hosts ]] || { echo "testbed: down"; return 0; }
  local i=0 h
  echo "testbed: $(hosts | wc -l) hosts, links $(cat "$STATE/rate" 2>/dev/null || echo off)$( [[ $(cat "$STATE/rate" 2>/dev/null) == off ]] || echo ' Gbit/s'), state $STATE"
  for h in $(hosts); do
    i=$((i + 1))
    echo "  $h $(host_ip "$i") scratch $STATE/scratch (private tmpfs)"
  done
  echo "  source $STATE/env.sh   # launchers: mpirun --hostfile $STATE/hostfile | mpiexec -f $STATE/hostfile.hydra"
}

case ${1:-} in
  up) shift; cmd_up "$@" ;;
  down) cmd_down ;;
  shape) [[ $# -eq 2 ]] || usage; need_root; [[ -f $STATE/hosts ]] || die "no test bed is up"
         [[ $2 == off || $2 =~ ^[0-9]+([.][0-9]+)?$ ]] || die "shape: a rate in Gbit/s or off, got '$2'" 2
         shape "$2"; cmd_status ;;
  exec) shift; cmd_exec "$@" ;;
  status) cmd_status ;;
  slurm) shift; exec "$(dirname "$0")/testbed-slurm.sh" "$@" ;;
  *) usage ;;
esac
