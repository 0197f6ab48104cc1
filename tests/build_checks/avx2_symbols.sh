#!/bin/sh
# Fails when the object of comm/algorithms/reduction_avx2.cc defines a global symbol other than
# its two kernels: an inline function of a shared header emitted there out of line (a weak
# symbol) could be the copy the linker keeps for the whole program, AVX2 instructions included,
# and crash a processor without them. Arguments: the algorithm library's object files (ctest
# passes $<TARGET_OBJECTS:ftcomm_algorithms>, possibly as one ;-separated argument).
set -eu
object=$(for a in "$@"; do printf '%s\n' "$a" | tr ';' '\n'; done | grep 'reduction_avx2\.cc\.o$' || true)
if [ -z "$object" ] || [ ! -f "$object" ]; then
  echo "avx2_symbols: no reduction_avx2.cc object among the arguments" >&2
  exit 1
fi
defined=$(nm --defined-only --extern-only "$object" | awk '{print $NF}' | sort)
expected=$(printf '%s\n' \
  _ZN6ftcomm10algorithms7kernels10divideAvx2ENS_8DataTypeEPvmi \
  _ZN6ftcomm10algorithms7kernels10reduceAvx2ENS_8DataTypeENS_8ReduceOpEPvPKvS6_mNS1_6StoresE | sort)
if [ "$defined" != "$expected" ]; then
  echo "avx2_symbols: $object defines other global symbols than its two kernels:" >&2
  printf '%s\n' "$defined" | grep -vxF "$expected" | c++filt >&2 || true
  exit 1
fi
echo "avx2_symbols: $object defines only reduceAvx2 and divideAvx2"
