#!/bin/sh
# ftcomm-bench --fresh-inputs: a run at 2 ranks gives one row whose results agree with OpenMPI's
# (--check) and whose times are positive, and --rewrite-inputs with it is refused. Arguments:
# ftcomm-bench's path, then mpirun and its options (without -np).
set -u
bench=$1
shift
fail() {
  echo "bench_fresh: $*" >&2
  exit 1
}
out=$("$@" -np 2 "$bench" --op allgather --min-bytes 64K --max-bytes 64K --iters 20 --rounds 1 \
  --compare mpi --fresh-inputs --check --json 2>/dev/null) || fail "the run exited with $?"
row=$(printf '%s\n' "$out" | grep '^{') || fail "no row: $out"
case $row in *'"check":"ok"'*) ;; *) fail "results differ from OpenMPI's: $row" ;; esac
for column in ftcomm mpi; do
  us=$(printf '%s\n' "$row" | sed -n "s/.*\"${column}_us\":\([0-9.]*\).*/\1/p")
  [ -n "$us" ] || fail "no ${column}_us in $row"
  awk -v us="$us" 'BEGIN { exit !(us > 0) }' || fail "${column}_us is $us"
done
if err=$("$@" -np 1 "$bench" --op allgather --rewrite-inputs --fresh-inputs 2>&1 >/dev/null); then
  fail "--rewrite-inputs with --fresh-inputs was taken"
fi
case $err in *"--fresh-inputs"*) ;; *) fail "no message that names --fresh-inputs: $err" ;; esac
echo "bench_fresh: a checked row with positive times; --rewrite-inputs with it refused"
