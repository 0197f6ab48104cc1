#!/usr/bin/env bash
# Clean exits are never failures: 50 runs of 8 ranks under ftcomm-run, each 60 allreduces and
# then main returns, must all end with exit code 0 on every rank, no rank expelled and no member
# declared failed by the server. Its lease is 400 ms (a beat every 100 ms), five times as many
# beats as the default, so that a heartbeat crossing a member's Leave is likely somewhere in the
# 400 exits. Then a member whose communicator is never destroyed, exiting with 0, still leaves,
# and where FTCOMM_FR_DIR keeps dumps, ftcomm-fr reports members that exited with 0 as finished.
#   tests/fault/clean_exits.sh BIN_DIR [RUNS]
set -euo pipefail
bin=${1:?usage: clean_exits.sh BIN_DIR [RUNS]}
runs=${2:-50}
work=$(mktemp -d /tmp/ftcomm-clean-exits-XXXXXX)
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin/ftcomm-rendezvous" --listen 127.0.0.1:0 --port-file "$work/port" --lease-ms 400 \
  --state-dir "$work/state" 2>"$work/server.log" &
server=$!
for _ in $(seq 1 500); do [ -s "$work/port" ] && break; sleep 0.02; done
[ -s "$work/port" ] || { cat "$work/server.log"; fail "the rendezvous server did not start"; }
address=127.0.0.1:$(cat "$work/port")

all_zero="ranks 0:exit 0 1:exit 0 2:exit 0 3:exit 0 4:exit 0 5:exit 0 6:exit 0 7:exit 0"
for run in $(seq 1 "$runs"); do
  log=$work/run-$run.log
  "$bin/ftcomm-run" -np 8 --rendezvous "$address" --job "clean-$run" -- \
    "$bin/ftcomm-test-comm" --scenario short >"$log" 2>&1 || true
  grep -qF "$all_zero" "$log" || { cat "$log"; fail "run $run: not every rank exited with 0"; }
  grep -q "expelled" "$log" && { cat "$log"; fail "run $run: a rank that left was expelled"; }
  [ "$(grep -c '^RESULT rank=[0-7] OK short$' "$log")" -eq 8 ] || { cat "$log"; fail "run $run: results"; }
done
if grep -q "failed:" "$work/server.log"; then
  grep "failed:" "$work/server.log" | head
  fail "the server declared members failed that exited with 0"
fi

"$bin/ftcomm-run" -np 4 --rendezvous "$address" --job leaked -- \
  "$bin/ftcomm-test-comm" --scenario short-leaked >"$work/leaked.log" 2>&1 || true
grep -qF "ranks 0:exit 0 1:exit 0 2:exit 0 3:exit 0" "$work/leaked.log" || { cat "$work/leaked.log"; fail "leaked: exits"; }
if grep -q "job leaked .*failed:" "$work/server.log"; then
  grep "job leaked" "$work/server.log" | head
  fail "members that exited with 0 without destroying their communicator were declared failed"
fi
# Where dumps are kept, members that finished write one that says so, and ftcomm-fr reports them
# as finished rather than as crashes without a dump.
mkdir "$work/dumps"
FTCOMM_FR_DIR=$work/dumps "$bin/ftcomm-run" -np 4 --rendezvous "$address" --job dumped -- \
  "$bin/ftcomm-test-comm" --scenario short >"$work/dumped.log" 2>&1 || true
grep -qF "ranks 0:exit 0 1:exit 0 2:exit 0 3:exit 0" "$work/dumped.log" || { cat "$work/dumped.log"; fail "dumped: exits"; }
"$bin/ftcomm-fr" analyze "$work/dumps" >"$work/analyze.txt" 2>&1 || true
grep -q "finished normally: ranks 0 1 2 3 (exited with 0)" "$work/analyze.txt" \
  || { cat "$work/analyze.txt"; fail "ftcomm-fr does not say the ranks finished normally"; }
grep -q "missing dumps" "$work/analyze.txt" && { cat "$work/analyze.txt"; fail "ftcomm-fr calls clean exits missing dumps"; }
echo "clean exits: OK ($runs runs of 8 ranks)"
