#!/bin/sh
# A benchmark program's command line: --help prints its usage on standard output and exits 0,
# and FLAG given "10x", which atoi read as 10, is refused with a non-zero exit status (2; mpirun
# passes on MPI_Abort's) and a message that names FLAG. Arguments: NAME FLAG COMMAND..., where
# COMMAND is the program, possibly behind mpirun and its options.
set -u
name=$1 flag=$2
shift 2
fail() {
  echo "bench_cli: $name $*" >&2
  exit 1
}
out=$("$@" --help 2>/dev/null) || fail "--help exited with $?"
case $out in *"usage: $name"*) ;; *) fail "--help printed no usage: $out" ;; esac
if err=$("$@" "$flag" 10x 2>&1 >/dev/null); then fail "$flag 10x was taken"; fi
case $err in *"$flag"*) ;; *) fail "$flag 10x: no message that names $flag: $err" ;; esac
echo "bench_cli: $name: --help, and $flag 10x refused"
