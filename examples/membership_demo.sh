#!/usr/bin/env bash
# Runs membership_demo the way a user would: a rendezvous server on loopback, 4 processes under
# mpirun, one of them SIGKILLed mid-run; the survivors agree on a new epoch and finish. Exits
# non-zero unless the three survivors end in the same epoch with the same membership.
#   examples/membership_demo.sh BIN_DIR     (scripts/demo builds first, then calls this)
set -euo pipefail
bin=${1:?usage: membership_demo.sh BIN_DIR}

work=$(mktemp -d /tmp/ftcomm-demo-XXXXXX)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$bin/ftcomm-rendezvous" --listen 127.0.0.1:0 --port-file "$work/port" \
  --state-dir "$work/state" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 1 500); do [ -s "$work/port" ] && break; sleep 0.02; done
[ -s "$work/port" ] || { echo "demo: the rendezvous server did not start"; cat "$work/server.log"; exit 1; }

export FTCOMM_RENDEZVOUS="127.0.0.1:$(cat "$work/port")"
export FTCOMM_JOB="demo-$$"
echo "== rendezvous on $FTCOMM_RENDEZVOUS; 4 ranks under mpirun; world rank 2 will crash at step 4"
# --enable-recovery: without it OpenMPI 4.1 tears the whole job down when one rank dies.
mpirun --allow-run-as-root --oversubscribe --enable-recovery -np 4 \
  -x FTCOMM_RENDEZVOUS -x FTCOMM_JOB \
  "$bin/membership_demo" --steps 12 --crash-rank 2 --crash-step 4 2>&1 \
  | grep -v "PMIX ERROR: BAD-PARAM" | tee "$work/out.log" || true
echo "== what the server saw"
grep -E "failed|restored" "$work/server.log" || true

finished=$(grep -c "finished: epoch 2, rank . of 3" "$work/out.log" || true)
views=$(grep "finished:" "$work/out.log" | sed 's/.*of 3 //' | sort -u | wc -l)
if [ "$finished" -eq 3 ] && [ "$views" -eq 1 ]; then
  echo "== demo OK: 3 survivors agree on epoch 2 with the same membership"
else
  echo "== demo FAILED: expected 3 survivors in epoch 2 with one membership"
  exit 1
fi
