#!/usr/bin/env bash
# The fault-tolerance demo: ddp_train on 4 ranks through ftcomm-run, with world rank 2 killed
# (SIGKILL, by FTCOMM_FAULT) in the middle of step 20's gradient allreduce. The survivors
# reconfigure in place and finish training; then ftcomm-fr analyze reads the flight-recorder
# dumps and names the rank that died. Exits non-zero unless the job finished with identical
# replicas at world size 3 and the analysis names rank 2.
#   examples/ddp_demo.sh BIN_DIR     (scripts/demo builds first, then calls this)
# FTCOMM_RUN_FLAGS adds flags to ftcomm-run (--tls: the rendezvous over mutual TLS).
set -euo pipefail
bin=$(cd "${1:?usage: ddp_demo.sh BIN_DIR}" && pwd)
work=$(mktemp -d /tmp/ftcomm-demo-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"

# Step k's gradient allreduce is sequence number 3+4k on the world communicator (ddp_train.cc):
# step 20's is 83.
fault="rank=2,op=allreduce,seq=83,action=kill"
read -r -a run_flags <<<"${FTCOMM_RUN_FLAGS:-}"
echo "== ftcomm-run -np 4 ${run_flags[*]} --fault $fault -- ddp_train --steps 60"
# The ranks' stdout (the training log, checked below) apart from stderr: mpirun forwards the two
# as they come, and a line of one could land inside a line of the other.
"$bin/ftcomm-run" -np 4 "${run_flags[@]}" --fault "$fault" -- "$bin/ddp_train" --steps 60 \
  2> >(grep --line-buffered -v "PMIX ERROR: BAD-PARAM" >&2) | tee out.log
echo
echo "== ftcomm-fr analyze ftcomm-fr/"
"$bin/ftcomm-fr" analyze ftcomm-fr/ | tee analysis.log || true

grep -q "FINAL .*world_sizes=4>3 .*replicas_identical=yes" out.log ||
  { echo "demo: FAILED: training did not finish at world size 3 with identical replicas"; exit 1; }
grep -q "rank 2 failed" analysis.log ||
  { echo "demo: FAILED: the analysis does not name rank 2"; exit 1; }
echo
echo "demo: OK: rank 2 died at step 20; the 3 survivors reconfigured in place, finished training"
echo "      with identical weights, and the flight recorder named the dead rank."
