#!/bin/sh
# A benchmark program's command line: --help prints its usage on standard output and exits 0,
# and FLAG given "10x", which atoi read as 10, is refused with a non-zero exit status (2; mpirun
# passes on MPI_Abort's) and a message that names FLAG. Arguments: NAME FLAG COMMAND..., where
# COMMAND is the program, possibly behind mpirun and its options.
set -u
name=$1 flag=$2
shift 2
out=$("$@" --help 2>/dev/null)
status=$?
if [ "$status" -ne 0 ]; then
  echo "bench_cli: $name --help exited with $status" >&2
  exit 1
fi
case $out in
  *"usage: $name"*) ;;
  *) echo "bench_cli: $name --help printed no usage: $out" >&2; exit 1 ;;
esac
err=$("$@" "$flag" 10x 2>&1 >/dev/null)
status=$?
if [ "$status" -eq 0 ]; then
  echo "bench_cli: $name $flag 10x was taken" >&2
  exit 1
fi
case $err in
  *"$flag"*) echo "bench_cli: $name: --help and $flag 10x (exit $status) as expected" ;;
  *) echo "bench_cli: $name $flag 10x: no message that names $flag: $err" >&2; exit 1 ;;
esac
