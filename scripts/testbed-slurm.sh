#!/usr/bin/env bash
# A real multi-node Slurm cluster on the hosts of a test bed (scripts/testbed.sh): one slurmd per
# host, started inside that host's network, UTS and mount namespaces, so each node has its own
# hostname (its NodeName) and IP (its NodeAddr); slurmctld and munged run on the machine itself,
# reached by the hosts at the bridge address (PREFIXhead in /etc/hosts). Everything lives in one
# directory on the shared file system (slurm.conf, mpi.conf, the munge key and socket, state,
# spool, pid files, logs), which every host sees: the daemons and the commands inside the hosts
# (srun in a batch script) reach munged through its socket there.
# Settings: partition `tb` (default) of all hosts, no accounting (no sacct: use squeue -t all and
# scontrol show job), proctrack/linuxproc, task/none, select/cons_tres (CR_Core), SlurmUser=root,
# credentials that expire after 5 s (a requeued job runs again after ~6 s), SlurmdTimeout=10
# and MessageTimeout=5 (a lost node is DOWN "Not responding" and its jobs NODE_FAIL, reason
# NodeDown, ~15-20 s after it died: slurmctld pings every SlurmdTimeout/3 s, a ping to a dead
# slurmd retries its connection for MessageTimeout s, and the first ping round that starts
# SlurmdTimeout s after the node's last answer downs it), ReturnToService=1 (a node that
# stopped responding comes back when its slurmd registers again; one set DOWN with scontrol
# stays down until state=resume).
# Each node gets CPUs=--cpus (default: this machine's CPU count, what a slurmd sees inside its
# host): the hosts share the machine's cores, so N hosts oversubscribe them N times.
# Open MPI: srun --mpi=pmix, or mpirun inside the allocation (it starts its daemons with srun).
# MPICH (Debian's has no PMIx): srun --mpi=pmi2. Needs root and Debian's slurm-wlm and munge.
#
#   scripts/testbed-slurm.sh up [--dir DIR] [--cpus N] [--wait S] [--slurmd-timeout S] [--message-timeout S]
#                                         [--return-to-service 0|1|2]
#                                         write DIR/slurm.conf (default $TRAINSCALE_TESTBED_DIR/slurm),
#                                         start munged, slurmctld and one slurmd per host, wait (60 s at
#                                         most) until every node is idle, print `export SLURM_CONF=...`
#   scripts/testbed-slurm.sh down [--dir DIR]     stop everything `up` started (idempotent)
#   scripts/testbed-slurm.sh status [--dir DIR]   the daemons and sinfo
#   scripts/testbed-slurm.sh crash HOST [--dir DIR]    a node failure: SIGKILL to everything running on
#                                         HOST (slurmd, job steps, ranks) except the host itself
#   scripts/testbed-slurm.sh restart HOST [--dir DIR]  HOST back after a crash, as after a reboot: its
#                                         /dev/shm and the dead steps' spool sockets cleared, slurmd started
#
# Typical use:
#   scripts/testbed.sh up 2 && eval "$(scripts/testbed-slurm.sh up)" && sbatch --nodes 2 job.sh
#   scripts/testbed-slurm.sh down && scripts/testbed.sh down   # this order: the test bed's `down`
#                                                              # removes DIR with the pid files
# State in DIR: slurm.conf, mpi.conf, env.sh (source it), munge/ (key, socket, munged.log), state/,
# spool/HOST/, run/*.pid, log/ (slurmctld.log, slurmd-HOST.log, *.out).
# Made to work on the test bed: the hosts' fresh /sys lacks /sys/fs/cgroup, which slurmd needs
# even without cgroup plugins, so `up` mounts the machine's cgroup hierarchies there in each host;
# the hosts share /tmp, where the pmix plugin's per-step directories would collide, so mpi.conf
# puts them in each host's private /dev/shm (PMIxCliTmpDirBase).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TESTBED=$HERE/testbed.sh
STATE=${TRAINSCALE_TESTBED_DIR:-/run/trainscale-testbed}
DIR=$STATE/slurm
CPUS=$(nproc)
WAIT=60
SLURMD_TIMEOUT=10
MESSAGE_TIMEOUT=5
RTS=1

die() { echo "testbed-slurm: $*" >&2; exit "${2:-1}"; }
usage() { sed -n '/^#   scripts\/testbed-slurm.sh up/,/^#$/p' "$0" | sed '$d; s/^#   scripts/usage: scripts/; s/^#/   /' >&2; exit 2; }

parse() {
  while (($#)); do
    case $1 in
      --dir) DIR=${2:?--dir needs a directory}; shift 2 ;;
      --cpus) CPUS=${2:?--cpus needs a count}; shift 2 ;;
      --wait) WAIT=${2:?--wait needs seconds}; shift 2 ;;
      --slurmd-timeout) SLURMD_TIMEOUT=${2:?--slurmd-timeout needs seconds}; shift 2 ;;
      --message-timeout) MESSAGE_TIMEOUT=${2:?--message-timeout needs seconds}; shift 2 ;;
      --return-to-service) RTS=${2:?--return-to-service needs 0, 1 or 2}; shift 2 ;;
      -h|--help) usage ;;
      *) die "unknown argument '$1'" 2 ;;
    esac
  done
  [[ $CPUS =~ ^[1-9][0-9]*$ ]] || die "--cpus must be a positive integer, got '$CPUS'" 2
  [[ $WAIT =~ ^[1-9][0-9]*$ && $SLURMD_TIMEOUT =~ ^[1-9][0-9]*$ && $MESSAGE_TIMEOUT =~ ^[1-9][0-9]*$ ]] ||
    die "--wait, --slurmd-timeout and --message-timeout take seconds" 2
  [[ $RTS =~ ^[012]$ ]] || die "--return-to-service must be 0, 1 or 2, got '$RTS'" 2
  [[ $DIR == /* ]] || DIR=$(pwd)/$DIR
  CONF=$DIR/slurm.conf
}

hosts() { [[ -f $STATE/hosts ]] && cat "$STATE/hosts"; return 0; }
# A name's IPv4 address from /etc/hosts, where testbed.sh writes the hosts and the head.
addr_of() { getent ahostsv4 "$1" | awk 'NR == 1 {print $1}'; }

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
}

pid_alive() { [[ -n ${1:-} && -r /proc/$1/stat && $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }
read_pid() { [[ -s $1 ]] && tr -dc 0-9 <"$1"; return 0; }

logs() {
  local f
  for f in "$DIR"/log/slurmctld.log "$DIR"/log/slurmctld.out "$DIR"/log/slurmd-*.log "$DIR"/log/slurmd-*.out "$DIR"/munge/munged.log; do
    [[ -s $f ]] || continue
    echo "--- $f (tail)"
    tail -n 15 "$f"
  done >&2
}

write_conf() {  # write_conf HEAD_NAME HEAD_ADDR CTLD_PORT
  local h
  cat >"$CONF" <<EOF
# Written by scripts/testbed-slurm.sh: a Slurm cluster on the test bed $STATE.
ClusterName=testbed
SlurmctldHost=$1($2)
SlurmctldPort=$3
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.sock,cred_expire=5
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
TmpFS=$STATE/scratch
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=$RTS
SlurmdTimeout=$SLURMD_TIMEOUT
MessageTimeout=$MESSAGE_TIMEOUT
InactiveLimit=0
KillWait=5
SchedulerParameters=sched_interval=1
MaxArraySize=1001
EOF
  while read -r h; do
    echo "NodeName=$h NodeAddr=$(addr_of "$h") CPUs=$CPUS RealMemory=1000 State=UNKNOWN" >>"$CONF"
  done < <(hosts)
  echo "PartitionName=tb Nodes=$(hosts | paste -sd, -) Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >>"$CONF"
  # The hosts share /tmp: the pmix plugin's client directories (/tmp/spmix_appdir_UID_JOB.STEP by
  # default, the same name on every node of a step) collide there ("Cannot create directory
  # ...: File exists", the step fails to launch). /dev/shm is private to each host.
  cat >"$DIR/mpi.conf" <<EOF
# Written by scripts/testbed-slurm.sh (read by the mpi/pmix plugin next to slurm.conf)
PMIxCliTmpDirBase=/dev/shm
EOF
}

# slurmd (22.05) initialises a cgroup plugin even with proctrack/linuxproc and task/none, and a
# host's fresh sysfs on /sys has nothing on /sys/fs/cgroup ("No filesystem mounted on
# /sys/fs/cgroup", "slurmd initialization failed"). Mount there, in the host's mount namespace,
# what the machine has there: the same hierarchies (cgroup v1 controllers, or cgroup2).
mirror_cgroups() {  # mirror_cgroups HOST
  local holder mounts
  holder=$(read_pid "$STATE/ns/$1.pid")
  # (mountpoint(1) would also see the machine's mounts hidden under the host's /sys)
  [[ $(nsenter -t "$holder" --mount -- stat -fc %T /sys/fs/cgroup) == sysfs ]] || return 0
  # mount point, type, super options of every mount at or under /sys/fs/cgroup, parents first
  mounts=$(awk '$5 == "/sys/fs/cgroup" || index($5, "/sys/fs/cgroup/") == 1 {
                  for (i = 7; $i != "-"; i++) ; print $5, $(i + 1), $(i + 3) }' /proc/self/mountinfo)
  [[ -n $mounts ]] || return 0
  nsenter -t "$holder" --mount -- /bin/sh -ec '
    while read -r dir type opts; do
      mkdir -p "$dir"
      case $type in
        cgroup) case $opts in *name=*) opts="none,$opts" ;; esac
                mount -t cgroup -o "$opts" cgroup "$dir" ;;
        cgroup2) mount -t cgroup2 cgroup2 "$dir" ;;
        *) mount -t tmpfs -o mode=755 tmpfs "$dir" ;;
      esac
    done' <<<"$mounts"
}

start_slurmd() {  # start_slurmd HOST: slurmd -D inside HOST, in the background ($! is its launcher)
  (cd "$DIR" && exec setsid "$TESTBED" exec "$1" slurmd -D -f "$CONF" </dev/null >>"$DIR/log/slurmd-$1.out" 2>&1) &
}

need_host() {
  [[ -n ${1:-} ]] || usage
  grep -qx "$1" "$STATE/hosts" 2>/dev/null || die "no host '$1'; hosts: $(hosts | paste -sd' ' -)" 2
  [[ -f $CONF ]] || die "no cluster in $DIR (scripts/testbed-slurm.sh up)"
}

# A node failure: everything running in HOST (its slurmd, the slurmstepds, the job's processes)
# is killed with SIGKILL, except the process that holds the host's namespaces. slurmctld notices
# after SlurmdTimeout (the node goes DOWN, "Not responding"); `restart HOST` brings it back.
cmd_crash() {
  need_host "$1"
  local holder pids
  holder=$(read_pid "$STATE/ns/$1.pid")
  pids=$(ip netns pids "$1" 2>/dev/null | grep -vx "$holder" || true)
  [[ -n $pids ]] && kill -KILL $pids 2>/dev/null || true
  echo "testbed-slurm: killed $(wc -w <<<"$pids") processes on $1 at $(date +%T)"
}

cmd_restart() {
  need_host "$1"
  local pid t
  pid=$(read_pid "$DIR/run/slurmd-$1.pid")
  if pid_alive "$pid"; then echo "testbed-slurm: slurmd on $1 is running (pid $pid)"; return 0; fi
  rm -f "$DIR/run/slurmd-$1.pid"
  # As a reboot would: the dead steps' pmix sockets and directories in the spool (a requeued job
  # reuses the step id, and the plugin cannot make them again: "Address already in use", "File
  # exists", "task 1 launch failed") and the host's /dev/shm (the pmix client directories).
  rm -rf "$DIR/spool/$1"/stepd.* "$DIR/spool/$1"/pmix.* 2>/dev/null || true
  nsenter -t "$(read_pid "$STATE/ns/$1.pid")" --mount -- /bin/sh -c 'rm -rf /dev/shm/* /dev/shm/.[!.]* 2>/dev/null; true'
  mirror_cgroups "$1"
  start_slurmd "$1"
  for ((t = 0; t < 100; t++)); do
    [[ $(SLURM_CONF=$CONF timeout 10 sinfo -h -n "$1" -o %t 2>/dev/null) =~ ^(idle|mix|alloc)$ ]] && {
      echo "testbed-slurm: $1 back after $((t / 10)).$((t % 10)) s ($(SLURM_CONF=$CONF sinfo -h -n "$1" -o %t))"; return 0; }
    kill -0 $! 2>/dev/null || break
    sleep 0.1
  done
  tail -n 15 "$DIR/log/slurmd-$1.log" >&2
  die "slurmd on $1 did not come back (sinfo: $(SLURM_CONF=$CONF timeout 10 sinfo -h -n "$1" -o '%t %E' 2>&1))"
}

cmd_down() {
  local f pid t h left=() pids=() steps=()
  # Jobs first, while slurmctld is there to cancel them.
  if [[ -s $CONF ]] && pid_alive "$(read_pid "$DIR/run/slurmctld.pid")"; then
    # Up to 1 s for the jobs to leave the queue (their processes ended by their slurmd).
    if SLURM_CONF=$CONF timeout 10 scancel --user=root >/dev/null 2>&1; then
      for ((t = 0; t < 10; t++)); do
        [[ -z $(SLURM_CONF=$CONF timeout 5 squeue -h -o %i 2>/dev/null) ]] && break
        sleep 0.1
      done
    fi
  fi
  # The daemons by their pid files, and (should the pid files be gone: `scripts/testbed.sh down`
  # removed DIR) by this cluster's configuration file or munge socket on their command line.
  for f in "$DIR"/run/slurmd-*.pid "$DIR"/run/slurmctld.pid "$DIR"/munge/munged.pid; do
    pid=$(read_pid "$f")
    pid_alive "$pid" && pids+=("$pid")
  done
  # (one pgrep: a grep per process of the machine took a second there on a busy machine)
  for pid in $(pgrep -f -- "^[^ ]*(slurmctld|slurmd|munged) .*($CONF|$DIR/munge/munge.sock)( |$)"); do
    pids+=("$pid")
  done
  # What is left of jobs on the hosts: each slurmstepd and the processes it started.
  for h in $(hosts); do
    for pid in $(ip netns pids "$h" 2>/dev/null); do
      [[ $(cat "/proc/$pid/comm" 2>/dev/null) == slurmstepd ]] && steps+=("$pid")
    done
  done
  if ((${#steps[@]})); then
    local tree=()
    mapfile -t tree < <(ps -e -o pid=,ppid= | awk -v roots="${steps[*]}" '
      BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
      { parent[$1] = $2 }
      END { do { grew = 0; for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grew = 1 } } while (grew)
            for (p in keep) print p }')
    pids+=("${tree[@]}")
  fi
  ((${#pids[@]})) || { echo "testbed-slurm: down"; return 0; }
  # (a slurmstepd outlives SIGTERM)
  ((${#steps[@]})) && kill -KILL "${steps[@]}" 2>/dev/null || true
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for ((t = 0; t < 50; t++)); do
    left=()
    for pid in "${pids[@]}"; do
      pid_alive "$pid" && left+=("$pid")
    done
    ((${#left[@]})) || break
    sleep 0.1
  done
  ((${#left[@]})) && kill -KILL "${left[@]}" 2>/dev/null || true
  rm -f "$DIR"/run/*.pid "$DIR"/munge/munged.pid
  echo "testbed-slurm: down"
}

cmd_up() {
  [[ $(id -u) -eq 0 ]] || die "needs root (SlurmUser=root, slurmd inside the hosts' namespaces)" 2
  local t
  for t in munged slurmctld slurmd sinfo scontrol python3 getent; do
    command -v "$t" >/dev/null || die "'$t' is missing (Debian: apt-get install slurm-wlm munge)" 2
  done
  [[ -s $STATE/hosts && -x $STATE/agent ]] || die "no test bed is up in $STATE (scripts/testbed.sh up N)"
  local h first prefix head head_addr pid
  for h in $(hosts); do
    pid=$(read_pid "$STATE/ns/$h.pid")
    pid_alive "$pid" || die "host $h is not running (scripts/testbed.sh status)"
    [[ -n $(addr_of "$h") ]] || die "host $h has no address in /etc/hosts"
  done
  first=$(hosts | head -n 1)
  prefix=${first%%[0-9]*}
  head=$(hostname -s)
  head_addr=$(addr_of "${prefix}head")
  [[ -n $head_addr ]] || die "no address for ${prefix}head (the bridge) in /etc/hosts"

  cmd_down >/dev/null
  rm -rf "$DIR/state" "$DIR/spool" "$DIR/run" "$DIR/log"
  mkdir -p "$DIR/state" "$DIR/run" "$DIR/log" "$DIR/munge"
  for h in $(hosts); do mkdir -p "$DIR/spool/$h"; done
  chmod 755 "$DIR/munge"  # (munged warns when others cannot reach its socket)
  if [[ ! -s $DIR/munge/munge.key ]]; then
    (umask 077; head -c 1024 /dev/urandom >"$DIR/munge/munge.key")
  fi
  chmod 400 "$DIR/munge/munge.key"
  write_conf "$head" "$head_addr" "$(free_port)"
  cat >"$DIR/env.sh" <<EOF
# source this: the Slurm cluster on the test bed (scripts/testbed-slurm.sh)
export SLURM_CONF=$CONF
EOF

  timeout 30 munged --socket="$DIR/munge/munge.sock" --key-file="$DIR/munge/munge.key" \
    --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/munge/munged.log" --seed-file="$DIR/munge/seed" --force \
    || { logs; die "munged did not start"; }

  # slurmctld on the machine itself: it answers on every address, the hosts reach it on the bridge.
  setsid slurmctld -D -f "$CONF" </dev/null >"$DIR/log/slurmctld.out" 2>&1 &
  # One slurmd inside every host: its hostname is the NodeName, its address the NodeAddr.
  local -A started=()
  for h in $(hosts); do
    mirror_cgroups "$h" || { cmd_down >/dev/null; die "could not mount the cgroup hierarchies in host $h"; }
    start_slurmd "$h"
    started[$h]=$!
  done

  local start=$SECONDS n states bad
  n=$(hosts | wc -l)
  while :; do
    states=$(SLURM_CONF=$CONF timeout 10 sinfo -h -N -p tb -o '%N %t' 2>&1 || true)
    if [[ $(grep -c ' idle$' <<<"$states") -eq $n ]]; then break; fi
    bad=""
    [[ -s $DIR/run/slurmctld.pid ]] && ! pid_alive "$(read_pid "$DIR/run/slurmctld.pid")" && bad="slurmctld exited"
    for h in "${!started[@]}"; do
      kill -0 "${started[$h]}" 2>/dev/null || bad+="${bad:+, }slurmd on $h exited"
    done
    if ((SECONDS - start >= WAIT)) || [[ -n $bad ]]; then
      echo "testbed-slurm: the nodes did not all become idle within $WAIT s${bad:+ ($bad)}; sinfo:" >&2
      sed 's/^/  /' <<<"$states" >&2
      logs
      cmd_down >/dev/null
      die "start-up failed; logs kept in $DIR/log"
    fi
    sleep 0.1
  done
  echo "testbed-slurm: $n nodes idle after $((SECONDS - start)) s (partition tb, $CPUS CPUs each; $DIR)" >&2
  echo "export SLURM_CONF=$CONF"
}

cmd_status() {
  [[ -f $CONF ]] || { echo "testbed-slurm: no cluster in $DIR"; return 0; }
  pid_alive "$(read_pid "$DIR/run/slurmctld.pid")" || { echo "testbed-slurm: down ($DIR)"; return 0; }
  local f pid
  for f in "$DIR"/munge/munged.pid "$DIR"/run/slurmctld.pid "$DIR"/run/slurmd-*.pid; do
    [[ -e $f ]] || continue
    pid=$(read_pid "$f")
    printf '  %-22s pid %-8s %s\n' "$(basename "$f" .pid)" "$pid" "$(pid_alive "$pid" && echo running || echo gone)"
  done
  SLURM_CONF=$CONF timeout 10 sinfo -N -o '%N %P %t %c %O %E' || true
  echo "export SLURM_CONF=$CONF"
}

cmd=${1:-}
(($#)) && shift
case $cmd in
  up) parse "$@"; cmd_up ;;
  down) parse "$@"; cmd_down ;;
  status) parse "$@"; cmd_status ;;
  crash|restart) host=${1:-}; (($#)) && shift; parse "$@"; "cmd_$cmd" "$host" ;;
  *) usage ;;
esac
