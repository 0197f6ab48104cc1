#!/usr/bin/env bash
# Simulated hosts, `ftcomm-run --nodes K`, with real namespaces, mpirun and UCX:
# - ranks are placed N/K per host, and each host has its own hostname, IPC namespace and /dev/shm;
# - every collective is correct at 2 x 2 and 4 x 2 (shared memory inside a host, UCX between),
#   and the collectives across hosts are node-aware, in split children too;
# - the traffic between hosts crosses the data link, not the control link;
# - the demo survives a killed rank on 2 hosts, and the hosts' dumps are gathered into one folder;
# - the steps for real hosts (ftcomm-run --hostfile) work across the simulated network;
# - ftcomm-bench-recovery measures a lost host, killed or silent;
# - bad input (--nodes not dividing -np, a shape tc refuses, an unknown FTCOMM_SOCKET_IFNAME) is a
#   clear error; a start sweeps the namespaces of a killed run; no run leaves any behind.
# Exits 77 (skipped) with ftcomm-run's reason where namespaces cannot be made.
#   tests/multinode/sim_hosts_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin=$(cd "${1:?usage: sim_hosts_test.sh BIN_DIR SOURCE_DIR}" && pwd)
src=$(cd "${2:?usage: sim_hosts_test.sh BIN_DIR SOURCE_DIR}" && pwd)
work=$(mktemp -d /tmp/ftcomm-nodes-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }

# ftcomm-run with a deadline, stdout in LOG and stderr in LOG.err (apart: mpirun forwards the
# ranks' two streams as they come, and a line of one may land inside a line of the other);
# fails the test if the run left namespaces behind.
run() {  # LOG ARGS...
  local log=$1 rc=0
  shift
  timeout 300 "$bin/ftcomm-run" "$@" >"$log" 2>"$log.err" &
  local pid=$!
  wait "$pid" || rc=$?
  local left
  left=$(ls /run/netns 2>/dev/null | grep -c "^ftc-$pid-" || true)
  [ "$left" -eq 0 ] || fail "ftcomm-run $* left $left namespaces behind"
  return "$rc"
}

rc=0
place='echo "PLACE $OMPI_COMM_WORLD_RANK $(hostname) $(readlink /proc/self/ns/ipc)'
place+=' $(stat -c %d /dev/shm) $(grep Cpus_allowed_list /proc/self/status | cut -f2)"'
run place.log --nodes 2 -np 4 -- sh -c "$place" || rc=$?
if [ "$rc" -eq 77 ]; then
  grep "no simulated hosts" place.log.err || cat place.log.err
  exit 77
fi
[ "$rc" -eq 0 ] || { cat place.log place.log.err; fail "the placement run exited $rc"; }
for r in 0 1 2 3; do
  grep -q "^PLACE $r " place.log || { cat place.log place.log.err; fail "rank $r did not run"; }
done
field() { grep "^PLACE $1 " place.log | cut -d' ' -f"$2"; }
for f in 3 4 5; do  # hostname, IPC namespace, /dev/shm's device
  [ "$(field 0 $f)" = "$(field 1 $f)" ] || fail "ranks 0 and 1 are not on one host (field $f)"
  [ "$(field 2 $f)" = "$(field 3 $f)" ] || fail "ranks 2 and 3 are not on one host (field $f)"
  [ "$(field 0 $f)" != "$(field 2 $f)" ] || fail "ranks 0 and 2 share a host (field $f)"
done
[ "$(field 0 5)" != "$(stat -c %d /dev/shm)" ] || fail "host 0 sees this machine's /dev/shm"
# Each host runs on its own share of the cores, as real hosts do: with 2 or more cores, the two
# hosts' ranks never share one (mpirun's daemons would otherwise bind both hosts' first ranks to
# core 0).
[ "$(field 0 6)" = "$(field 1 6)" ] && [ "$(field 2 6)" = "$(field 3 6)" ] ||
  { cat place.log; fail "the ranks of one host run on different cores"; }
if [ "$(nproc)" -ge 2 ]; then
  [ "$(field 0 6)" != "$(field 2 6)" ] || { cat place.log; fail "both hosts run on the same cores"; }
  # One rank per host is where mpirun binds to a core.
  run place.log --nodes 2 -np 2 -- sh -c "$place" || { cat place.log.err; fail "2 x 1 placement"; }
  [ "$(field 0 6)" != "$(field 1 6)" ] || { cat place.log; fail "2 x 1: both hosts on core $(field 0 6)"; }
fi
echo "placement: 2 ranks per host, each host with its own hostname, IPC namespace, /dev/shm and cores"

# The split form of the node-aware allreduce from 64 KiB, so that both forms run.
FTCOMM_TUNING=generic,node_aware_split_from=64K FTCOMM_FR_DIR=$work/fr-collectives \
  run collectives.log --nodes 2 -np 4 -- \
  "$bin/ftcomm-test-comm" --scenario collectives ||
  { cat collectives.log collectives.log.err; fail "the collectives run failed"; }
[ "$(grep -c '^RESULT rank=[0-3] OK' collectives.log)" -eq 4 ] ||
  { cat collectives.log collectives.log.err; fail "not every rank checked every collective"; }
# Each rank's exit-0 dump holds its last operations: the world's allreduces and broadcasts went
# node-aware.
dump=$(ls "$work"/fr-collectives/*.0.ftfr* | head -1)
"$bin/ftcomm-fr" show "$dump" >dump.txt || { cat dump.txt; fail "ftcomm-fr show $dump"; }
grep -q "all_reduce .* hierarchical" dump.txt ||
  { tail -20 dump.txt; fail "no allreduce across hosts was node-aware"; }
for op in broadcast all_gather reduce_scatter; do
  grep -q " $op .* hierarchical" dump.txt ||
    { tail -20 dump.txt; fail "no $op across hosts was node-aware"; }
done
grep -q "all_reduce .* hierarchical_split" dump.txt ||
  { tail -20 dump.txt; fail "no large allreduce across hosts took the split node-aware form"; }
echo "collectives: every one correct at 2 hosts x 2 ranks, node-aware where they span hosts"
# Split children keep their members' hosts: a child of all 4 ranks is node-aware too.
FTCOMM_FR_DIR=$work/fr-split run split.log --nodes 2 -np 4 -- \
  "$bin/ftcomm-test-comm" --scenario split ||
  { cat split.log split.log.err; fail "the split run failed"; }
[ "$(grep -c '^RESULT rank=[0-3] OK' split.log)" -eq 4 ] ||
  { cat split.log split.log.err; fail "not every rank checked its splits"; }
dump=$(ls "$work"/fr-split/*.0.ftfr* | head -1)
"$bin/ftcomm-fr" show "$dump" >split.txt || { cat split.txt; fail "ftcomm-fr show $dump"; }
grep -q " world/0 .* all_reduce .* hierarchical" split.txt ||
  { cat split.txt; fail "no allreduce of a split child across hosts was node-aware"; }
echo "split: a child across hosts is node-aware"
run collectives8.log --nodes 4 -np 8 -- "$bin/ftcomm-test-comm" --scenario collectives ||
  { cat collectives8.log collectives8.log.err; fail "the 4 x 2 collectives run failed"; }
[ "$(grep -c '^RESULT rank=[0-7] OK' collectives8.log)" -eq 8 ] ||
  { cat collectives8.log collectives8.log.err; fail "not every rank of 4 x 2 checked everything"; }
echo "collectives: every one correct at 4 hosts x 2 ranks"

# Each rank's host counts what its interfaces sent while 8 allreduces of 16 MiB ran.
counters='cat /sys/class/net/data0/statistics/tx_bytes /sys/class/net/ctl0/statistics/tx_bytes'
run traffic.log --nodes 2 -np 2 -- sh -c "set -- \$($counters); d=\$1 c=\$2;
  '$bin/ftcomm-bench' --op allreduce --min-bytes 16M --max-bytes 16M --iters 4 --rounds 2 \
    >/dev/null || exit 1
  set -- \$($counters); echo TRAFFIC \$OMPI_COMM_WORLD_RANK \$((\$1 - d)) \$((\$2 - c))" ||
  { cat traffic.log traffic.log.err; fail "the traffic run failed"; }
for r in 0 1; do
  read -r data control < <(grep "^TRAFFIC $r " traffic.log | cut -d' ' -f3-)
  # A 2-rank allreduce sends half of the buffer each way: 8 calls x 8 MiB at least.
  [ "${data:-0}" -ge $((8 * 8 * 1048576)) ] || fail "rank $r sent only ${data:-0} bytes on data0"
  [ "${control:-0}" -lt $((4 * 1048576)) ] || fail "rank $r sent $control bytes on ctl0"
  echo "traffic: rank $r sent $data bytes on the data link, $control on the control link"
done

# The demo on 2 hosts (ranks 2 and 3 share host 1); the dumps of both hosts land in one folder.
mkdir demo
(cd demo && FTCOMM_RUN_FLAGS="--nodes 2" "$src/examples/ddp_demo.sh" "$bin" >demo.log 2>&1) ||
  { cat demo/demo.log; fail "the demo failed on 2 simulated hosts"; }
grep -q "dumps of 3 of 4 ranks" demo/demo.log || { cat demo/demo.log; fail "dumps not gathered"; }
echo "demo: rank 2 killed on host 1, the job finished at world size 3; 3 dumps from 2 hosts"

# The steps for real hosts (README), on the simulated network: ftcomm-run --hostfile in the head
# namespace, its rendezvous on FTCOMM_ADVERTISE_ADDR, the data interface by FTCOMM_SOCKET_IFNAME,
# and mpirun's rsh agent entering the hosts as ssh would. The namespaces are those of a --nodes
# run that sleeps meanwhile.
"$bin/ftcomm-run" --nodes 2 -np 2 -- sleep 60 >holder.log 2>&1 &
holder=$!
for _ in $(seq 200); do [ -e "/run/netns/ftc-$holder-h1" ] && break; sleep 0.05; done
[ -e "/run/netns/ftc-$holder-h1" ] || { cat holder.log; fail "the namespaces' holder did not start"; }
printf '10.10.0.11 slots=2\n10.10.0.12 slots=2\n' >real-hosts
mkdir -p real-work
rc=0
timeout 300 ip netns exec "ftc-$holder-head" env FTCOMM_ADVERTISE_ADDR=10.20.0.1 \
  FTCOMM_SOCKET_IFNAME=data0 OMPI_MCA_oob_tcp_if_include=10.10.0.0/24 \
  OMPI_MCA_plm_rsh_agent="$bin/ftcomm-run --host-agent ftc-$holder $work/real-work" \
  OMPI_MCA_plm_rsh_no_tree_spawn=1 \
  "$bin/ftcomm-run" --hostfile real-hosts -np 4 -- "$bin/ftcomm-test-comm" --scenario collectives \
  >real.log 2>real.log.err || rc=$?
# The same hosts with one agent per host, reached through --rsh as ssh would reach them; the
# ranks fill the slots in order: 3 on the first host, 1 on the second. Each host sees a folder
# of its own at FTCOMM_FR_DIR (the host agent mounts it there), so the dumps reach the head's
# only through the agents.
printf '10.10.0.11 slots=3\n10.10.0.12 slots=3\n' >agent-hosts
mkdir -p "$work/agent-fr"
agents_rc=0
timeout 300 ip netns exec "ftc-$holder-head" env FTCOMM_ADVERTISE_ADDR=10.20.0.1 \
  FTCOMM_SOCKET_IFNAME=data0 FTCOMM_FR_DIR="$work/agent-fr" \
  "$bin/ftcomm-run" --hostfile agent-hosts -np 4 --launch agents \
  --rsh "$bin/ftcomm-run --host-agent ftc-$holder $work/real-work" \
  -- "$bin/ftcomm-test-comm" --scenario collectives >agents.log 2>agents.log.err || agents_rc=$?
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
[ "$rc" -eq 0 ] || { cat real.log real.log.err; fail "ftcomm-run --hostfile exited $rc"; }
[ "$(grep -c '^RESULT rank=[0-3] OK' real.log)" -eq 4 ] ||
  { cat real.log real.log.err; fail "--hostfile run"; }
grep -q "rendezvous 10.20.0.1:" real.log.err || { cat real.log.err; fail "rendezvous not advertised"; }
echo "real-host steps: --hostfile, FTCOMM_ADVERTISE_ADDR and FTCOMM_SOCKET_IFNAME across 2 hosts"
[ "$agents_rc" -eq 0 ] || { cat agents.log agents.log.err; fail "--launch agents exited $agents_rc"; }
[ "$(grep -c '^RESULT rank=[0-3] OK' agents.log)" -eq 4 ] ||
  { cat agents.log agents.log.err; fail "--launch agents --hostfile run"; }
grep -q "host 10.10.0.12: agent started for ranks 3..3" agents.log.err ||
  { cat agents.log.err; fail "the second host's agent did not start rank 3 alone"; }
# The ranks wrote into their hosts' own folders (3 on host 0)...
[ "$(ls "$work/real-work/fr/h0" | grep -c '\.[0-3]\.ftfr$')" -eq 3 ] ||
  { ls -la "$work/real-work/fr"/*; fail "the hosts' dump folders were not their own"; }
# ...and the agents sent all 4 to the head's.
[ "$(ls "$work/agent-fr" | grep -c '\.[0-3]\.ftfr$')" -eq 4 ] ||
  { ls -la "$work/agent-fr" "$work/real-work/fr"/*; fail "the agents did not ship the 4 dumps"; }
"$bin/ftcomm-fr" analyze "$work/agent-fr" >agents-fr.log 2>&1 || true
grep -q "finished normally: ranks 0 1 2 3" agents-fr.log || { cat agents-fr.log; fail "shipped dumps"; }
echo "real-host steps with one agent per host: --launch agents --hostfile --rsh"

# ftcomm-bench-recovery's lost hosts: each trial must end with every survivor in the new epoch.
for how in "" --silent --whole; do
  timeout 300 "$bin/ftcomm-bench-recovery" --nodes 2 --node-loss $how --ranks 4 --trials 1 \
    --lease-ms 1000 >recovery.log 2>&1 || { cat recovery.log; fail "recovery bench ${how:-kill}"; }
  grep "median" recovery.log
done

expect_error() {  # WHAT CODE PATTERN ARGS...
  local what=$1 code=$2 pattern=$3 rc=0
  shift 3
  run error.log "$@" || rc=$?
  [ "$rc" -eq "$code" ] || { cat error.log.err; fail "$what: exit $rc, not $code"; }
  grep -q -- "$pattern" error.log.err || { cat error.log.err; fail "$what does not say '$pattern'"; }
  echo "refused: $what"
}
expect_error "3 hosts for 4 ranks" 2 "does not divide" --nodes 3 -np 4 -- true
expect_error "a shape tc refuses" 2 "tc could not shape" --nodes 1 -np 1 --shape "rate banana" \
  -- true
expect_error "--shape without --nodes" 2 "add --nodes" -np 1 --shape "rate 1gbit" -- true
FTCOMM_SOCKET_IFNAME=nosuch0 run ifname.log -np 1 -- "$bin/ftcomm-test-comm" --scenario short ||
  true
grep -q "FTCOMM_SOCKET_IFNAME=nosuch0: no interface of that name" ifname.log ifname.log.err ||
  { cat ifname.log ifname.log.err; fail "an unknown FTCOMM_SOCKET_IFNAME is not named"; }
echo "refused: an unknown FTCOMM_SOCKET_IFNAME"

# A killed run's namespaces: its owner's pid is gone, so the next start deletes them.
sleep 0 &
dead=$!
wait "$dead"
ip netns add "ftc-$dead-h0"
run sweep.log --nodes 1 -np 1 -- true || { cat sweep.log.err; fail "the sweeping run failed"; }
[ ! -e "/run/netns/ftc-$dead-h0" ] || { ip netns delete "ftc-$dead-h0"; fail "not swept"; }
echo "sweep: a dead run's namespace was deleted by the next start"
echo "PASS"
