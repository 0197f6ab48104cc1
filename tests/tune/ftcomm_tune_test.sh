#!/usr/bin/env bash
# ftcomm-tune end to end: it calibrates 2 ranks under the real ftcomm-run and writes a rules
# file with measured bands for 2 ranks; a job then plans with that file (every collective's
# result checked, and the agreed profile is the file's); a broken copy of the file is refused
# naming its line; bad usage is refused.
#   tests/tune/ftcomm_tune_test.sh BIN_DIR
set -euo pipefail
bin=${1:?usage: ftcomm_tune_test.sh BIN_DIR}
work=$(mktemp -d /tmp/ftcomm-tune-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Small sizes and one round keep it short on 2 oversubscribed cores; the bands are what is
# checked, not the times.
"$bin/ftcomm-run" -np 2 -- "$bin/ftcomm-tune" --out "$work/cal.rules" --name lab \
  --max-bytes 256K --rounds 1 >"$work/tune.log" 2>&1 || { cat "$work/tune.log"; fail "ftcomm-tune failed"; }
grep -q "wrote $work/cal.rules" "$work/tune.log" || fail "ftcomm-tune did not say what it wrote"
rules=$work/cal.rules
grep -q '^profile lab$' "$rules" || fail "no 'profile lab' line"
grep -q '^# Written by ftcomm-tune' "$rules" || fail "no header"
for collective in allreduce broadcast reduce allgather reduce_scatter alltoall; do
  grep -Eq "^$collective 2-2 0-" "$rules" || fail "no measured band from 0 bytes for $collective at 2 ranks"
  grep -Eq "^# $collective +bytes" "$rules" || fail "no measurements for $collective"
done
# Every size from 4K to 256K was timed for allreduce, by every way.
for size in 4K 16K 64K 256K; do
  grep -Eq "^# +$size( +[0-9.]+[* ]?){4}$" "$rules" || fail "allreduce at $size was not timed by each way"
done
# The other rank counts keep the base (generic) profile's rules, after the measured ones.
grep -Eq '^broadcast 3\+ 0-2097152 inline' "$rules" || fail "the generic rules for other rank counts are missing"

# A job plans with it: every collective's result is checked, and both ranks agree on "lab".
FTCOMM_TUNING=$rules "$bin/ftcomm-run" -np 2 -- "$bin/ftcomm-test-comm" --scenario profiled \
  >"$work/run.log" 2>&1 || { cat "$work/run.log"; fail "collectives under the calibrated profile failed"; }
[ "$(grep -cE '^RESULT rank=[01] OK .*; profile lab [0-9a-f]{16}$' "$work/run.log")" -eq 2 ] \
  || { cat "$work/run.log"; fail "the ranks did not both run under profile lab"; }

# A broken rule is refused, naming the file and line.
cp "$rules" "$work/bad.rules"
echo "allreduce 2 64K-1K inline" >>"$work/bad.rules"
line=$(wc -l <"$work/bad.rules")
if FTCOMM_TUNING=$work/bad.rules "$bin/ftcomm-run" -np 2 -- "$bin/ftcomm-test-comm" \
  --scenario collectives >"$work/bad.log" 2>&1; then
  fail "a broken rules file was accepted"
fi
grep -q "bad.rules:$line: '64K-1K' is not a byte range" "$work/bad.log" \
  || { cat "$work/bad.log"; fail "the error does not name the file and line"; }

# Bad usage and a start outside the launcher are refused with a message.
if "$bin/ftcomm-tune" --out "$work/x.rules" --max-bytes 1K >"$work/usage.log" 2>&1; then
  fail "--max-bytes 1K was accepted"
fi
grep -q "usage: ftcomm-run -np N ftcomm-tune" "$work/usage.log" || fail "no usage for bad flags"
if env -u FTCOMM_RENDEZVOUS "$bin/ftcomm-tune" --out "$work/x.rules" >"$work/env.log" 2>&1; then
  fail "ftcomm-tune ran outside the launcher"
fi
grep -q "start it with ftcomm-run" "$work/env.log" || fail "no hint to use ftcomm-run"
[ ! -e "$work/x.rules" ] || fail "a refused run wrote a file"
# --processor names the key and the profile `auto` picks, which the runs above agreed on too.
"$bin/ftcomm-tune" --processor | grep -Eq '^(no CPUID|[A-Za-z]+ family 0x[0-9a-f]+): auto picks [a-z0-9]+$' \
  || fail "--processor did not name the key and profile"
echo "ftcomm-tune: OK"
