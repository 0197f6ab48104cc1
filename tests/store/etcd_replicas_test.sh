#!/usr/bin/env bash
# The rendezvous without a single point of failure: 3 real etcd members and 2 ftcomm-rendezvous
# replicas sharing them (--store etcd://...), all on loopback ports, etcd's data on tmpfs. Each
# scenario runs ddp_train under ftcomm-run with 4 ranks, kills rank 2 on purpose, and while the
# job runs on, kills
#   1. the replica the members are using (SIGKILL: its etcd lease runs out, the standby takes
#      over and loads the jobs from etcd);
#   2. the etcd member that leads the etcd cluster (SIGKILL: etcd elects another).
# In both the job must end with world sizes 4>3, identical model replicas, every other rank
# exiting 0, and no member but rank 2 declared failed by either replica. Afterwards the finished
# jobs' keys are gone from etcd. Then the store over TLS (one etcd member with client
# certificates), and bad --store settings.
#   tests/store/etcd_replicas_test.sh BIN_DIR
set -euo pipefail
bin=$(cd "${1:?usage: etcd_replicas_test.sh BIN_DIR}" && pwd)
if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
  echo "SKIP: etcd is not installed (scripts/install-deps installs etcd-server and etcd-client)"
  exit 77
fi
export ETCDCTL_API=3
work=$(mktemp -d /dev/shm/ftcomm-etcd-test-XXXXXX)  # tmpfs: etcd's fsyncs cost nothing
declare -A pid_of=()
cleanup() {
  for name in "${!pid_of[@]}"; do kill -9 "${pid_of[$name]}" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
stop() {  # NAME: SIGKILL, and reap it quietly
  kill -9 "${pid_of[$1]}" 2>/dev/null || true
  wait "${pid_of[$1]}" 2>/dev/null || true
}
fail() {
  echo "FAIL: $*"
  for f in "$work"/*.log; do echo "--- $f"; tail -n 20 "$f"; done
  exit 1
}
cd "$work"

read -r -a ports <<<"$(/usr/bin/python3 -c '
import socket
socks = [socket.socket() for _ in range(9)]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))')"
client_url() { echo "127.0.0.1:${ports[$1]}"; }    # etcd member 0..2
peer_url() { echo "127.0.0.1:${ports[$(($1 + 3))]}"; }
replica_address() { echo "127.0.0.1:${ports[$(($1 + 6))]}"; }  # replica 0..1
endpoints="$(client_url 0),$(client_url 1),$(client_url 2)"
store="etcd://$endpoints"
prefix=/ftcomm-test/

# Heartbeat and election timeouts twice etcd's defaults: 3 etcd members, 2 replicas and 4 ranks
# share 2 cores here. etcd's smallest lease then is 3 s, the leader lease a takeover waits out.
start_etcd() {  # MEMBER
  local cluster="e0=http://$(peer_url 0),e1=http://$(peer_url 1),e2=http://$(peer_url 2)"
  etcd --name "e$1" --data-dir "$work/etcd$1" \
    --listen-client-urls "http://$(client_url "$1")" --advertise-client-urls "http://$(client_url "$1")" \
    --listen-peer-urls "http://$(peer_url "$1")" --initial-advertise-peer-urls "http://$(peer_url "$1")" \
    --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "ftc-$$" \
    --heartbeat-interval 200 --election-timeout 2000 --logger zap --log-level error \
    >"etcd$1.log" 2>&1 &
  pid_of[etcd$1]=$!
}
start_replica() {  # REPLICA
  "$bin/ftcomm-rendezvous" --listen "$(replica_address "$1")" --store "$store" \
    --store-prefix "$prefix" --lease-ms 4000 >>"replica$1.log" 2>&1 &
  pid_of[replica$1]=$!
}
leader_replica() {  # the replica holding the leader key: 0 or 1
  local holder
  holder=$(etcdctl --endpoints "$endpoints" get "${prefix}leader" --print-value-only 2>/dev/null)
  for r in 0 1; do [ "$holder" = "$(replica_address $r)" ] && echo $r && return; done
  echo none
}
etcd_leader() {  # the etcd member leading the cluster: 0, 1 or 2
  for m in 0 1 2; do
    etcdctl --endpoints "$(client_url $m)" endpoint status 2>/dev/null | grep -q ', true, false,' &&
      echo $m && return
  done
  echo none
}

for m in 0 1 2; do start_etcd $m; done
for _ in $(seq 1 100); do
  etcdctl --endpoints "$endpoints" endpoint health >/dev/null 2>&1 && break
  sleep 0.2
done
etcdctl --endpoints "$endpoints" endpoint health >/dev/null 2>&1 || fail "etcd did not form a cluster"
start_replica 0
for _ in $(seq 1 100); do grep -q "leading" replica0.log && break; sleep 0.1; done
grep -q "leading" replica0.log || fail "replica 0 does not lead"
start_replica 1
for _ in $(seq 1 100); do grep -q "standing by" replica1.log && break; sleep 0.1; done
grep -q "standing by; the replica serving is $(replica_address 0)" replica1.log ||
  fail "replica 1 does not stand by naming replica 0"

# ddp_train with rank 2 killed at step 7; KILL (a command) runs once rank 0 has printed step 20.
run_job() {  # JOB KILL...
  local job=$1
  shift
  "$bin/ftcomm-run" -np 4 --rendezvous "$(replica_address 1),$(replica_address 0)" --job "$job" \
    --fault rank=2,op=allreduce,seq=30,action=kill -- "$bin/ddp_train" --steps 150 --step-ms 100 \
    >"$job.out" 2>"$job.err" &
  local run=$!
  for _ in $(seq 1 600); do grep -q "^step  20 " "$job.out" 2>/dev/null && break; sleep 0.1; done
  grep -q "^step  20 " "$job.out" || fail "$job: the job did not reach step 20"
  "$@"
  local deadline=$((SECONDS + 120))
  while kill -0 "$run" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  kill -0 "$run" 2>/dev/null && { kill -9 "$run"; fail "$job: the job hung"; }
  wait "$run" || true
  grep -q "world_sizes=4>3 recoveries=1 replicas_identical=yes" "$job.out" ||
    fail "$job: $(tail -n 1 "$job.out")"
  grep -qF "ranks 0:exit 0 1:exit 0 2:signal 9 3:exit 0" "$job.err" ||
    fail "$job: rank endings: $(grep 'mpirun exited' "$job.err")"
  local declared
  declared=$(cat replica0.log replica1.log | grep "job $job epoch .*failed:" || true)
  [ "$(echo "$declared" | grep -c .)" -eq 1 ] && echo "$declared" | grep -q "(rank 2) failed" ||
    fail "$job: the replicas declared failed: $declared"
  echo "$job: OK ($(tail -n 1 "$job.out"))"
}

kill_serving_replica() {
  local r
  r=$(leader_replica)
  [ "$r" != none ] || fail "no replica holds the leader key"
  stop "replica$r"
  echo "killed replica $r (serving)"
  killed_replica=$r
}
run_job kill-replica kill_serving_replica
survivor=$((1 - killed_replica))
grep -q "leading" "replica$survivor.log" || fail "replica $survivor did not take over"
start_replica "$killed_replica"  # it stands by now

kill_etcd_leader() {
  local m
  m=$(etcd_leader)
  [ "$m" != none ] || fail "no etcd member leads"
  stop "etcd$m"
  echo "killed etcd member $m (the etcd leader)"
}
run_job kill-etcd-leader kill_etcd_leader

left=$(etcdctl --endpoints "$endpoints" get --prefix "${prefix}jobs/" --keys-only 2>&1 | grep -c . || true)
[ "$left" -eq 0 ] || fail "finished jobs left $left keys in etcd"
echo "finished jobs' keys: removed"

# Bad settings are refused with a reason.
bad() {  # PATTERN EXIT ARGS...: ftcomm-rendezvous ARGS exits EXIT, saying PATTERN
  local pattern=$1 code=$2
  shift 2
  local status=0
  timeout 60 "$bin/ftcomm-rendezvous" "$@" >bad.log 2>&1 || status=$?
  [ "$status" -eq "$code" ] || fail "ftcomm-rendezvous $*: exit $status, not $code: $(cat bad.log)"
  grep -q -- "$pattern" bad.log || fail "ftcomm-rendezvous $*: does not say '$pattern': $(cat bad.log)"
}
bad "want etcd://HOST:PORT" 2 --listen 127.0.0.1:1 --store "http://$(client_url 0)"
bad "is not HOST:PORT" 2 --listen 127.0.0.1:1 --store "etcd://$(client_url 0),nonsense"
bad "fixed --listen port" 2 --listen 127.0.0.1:0 --store "$store"
bad "exclude each other" 2 --listen 127.0.0.1:1 --store "$store" --state-dir "$work/x"
bad "etcd range" 1 --listen 127.0.0.1:1 --store "etcd://$(replica_address 0)"
echo "bad settings: refused"

# The store over TLS: one etcd member that wants client certificates from a CA of the test's.
{
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=etcd-ca" -keyout ca.key -out ca.pem
  for name in etcd replica; do
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$name" -keyout "$name.key" -out "$name.csr"
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >"$name.ext"
    openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
      -extfile "$name.ext" -out "$name.pem"
  done
} >openssl.log 2>&1 || fail "openssl"
tls_client=127.0.0.1:${ports[2]}  # member 2's ports, free again once it is stopped
stop etcd2
etcd --name tls --data-dir "$work/etcd-tls" \
  --listen-client-urls "https://$tls_client" --advertise-client-urls "https://$tls_client" \
  --listen-peer-urls "http://$(peer_url 2)" --initial-advertise-peer-urls "http://$(peer_url 2)" \
  --initial-cluster "tls=http://$(peer_url 2)" --initial-cluster-state new \
  --cert-file etcd.pem --key-file etcd.key --client-cert-auth --trusted-ca-file ca.pem \
  --logger zap --log-level error >etcd-tls.log 2>&1 &
pid_of[etcd2]=$!
bad "etcd range" 1 --listen "$(replica_address 0)" --store "etcd://$tls_client"
"$bin/ftcomm-rendezvous" --listen 127.0.0.1:${ports[8]} --store "etcd://$tls_client" \
  --store-ca ca.pem --store-cert replica.pem --store-key replica.key >replica-tls.log 2>&1 &
pid_of[replica-tls]=$!
for _ in $(seq 1 100); do grep -q "leading" replica-tls.log && break; sleep 0.1; done
grep -q "leading" replica-tls.log || fail "the replica does not lead over TLS to etcd"
out=$("$bin/ftcomm-run" -np 2 --rendezvous "127.0.0.1:${ports[8]}" --job tls-store -- \
  "$bin/ftcomm-test-comm" --scenario short 2>&1 | grep -c '^RESULT rank=[01] OK short$' || true)
[ "$out" -eq 2 ] || fail "a job over a replica with TLS to etcd: $out of 2 ranks OK"
echo "the store over TLS: OK (a plaintext replica is refused)"
echo "etcd replicas: OK"
