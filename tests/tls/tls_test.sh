#!/usr/bin/env bash
# The rendezvous over TLS, with real processes and certificates made by openssl: a plaintext
# client, a client trusting another CA, and a wrong token over TLS are refused; the right CA and
# token get through; under mutual TLS a client without a certificate is refused and one with it
# gets through; and the fault-tolerance demo runs with ftcomm-run --tls.
#   tests/tls/tls_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin=$(cd "${1:?usage: tls_test.sh BIN_DIR SOURCE_DIR}" && pwd)
src=$(cd "${2:?usage: tls_test.sh BIN_DIR SOURCE_DIR}" && pwd)
work=$(mktemp -d /tmp/ftcomm-tls-test-XXXXXX)
server=""
stop_server() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  server=""
}
trap 'stop_server; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$work"

ca() {  # NAME: a self-signed CA
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$1" -keyout "$1.key" -out "$1.pem"
}
signed() {  # NAME CA EXTENSIONS: a certificate CA signs
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$1.key" -out "$1.csr"
  printf '%b' "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 2 \
    -extfile "$1.ext" -out "$1.pem"
}
{
  ca test-ca
  ca other-ca
  signed server test-ca 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n'
  signed member test-ca 'extendedKeyUsage=clientAuth\n'
} >openssl.log 2>&1 || { cat openssl.log; fail "openssl"; }
echo "tls-job secret-token" >tokens

start_server() {  # extra flags for ftcomm-rendezvous
  rm -f port
  "$bin/ftcomm-rendezvous" --listen 127.0.0.1:0 --port-file port --token-file tokens \
    --tls-cert server.pem --tls-key server.key "$@" 2>server.log &
  server=$!
  for _ in $(seq 1 500); do [ -s port ] && break; sleep 0.02; done
  [ -s port ] || { cat server.log; fail "the TLS server did not start"; }
  address=127.0.0.1:$(cat port)
}
# Two ranks under ftcomm-run against the server; the ranks' result lines, one per line. mpirun
# forwards the ranks' output beside its own and ftcomm-run's messages, so a result line may
# start inside another line; the whole output is kept in members.log for a failure's message.
members() {  # env assignments for the ranks
  env FTCOMM_CREATE_TIMEOUT_MS=4000 FTCOMM_TOKEN=secret-token "$@" \
    "$bin/ftcomm-run" -np 2 --rendezvous "$address" --job tls-job -- \
    "$bin/ftcomm-test-comm" --scenario short >members.log 2>&1 || true
  sed 's/RESULT rank=/\nRESULT rank=/g' members.log | grep '^RESULT' || true
}
failed() { echo "--- the run's whole output:"; cat members.log; fail "$@"; }
expect_refused() {  # WHAT PATTERN ENV...: both ranks fail creation, saying PATTERN
  local what=$1 pattern=$2
  shift 2
  local out
  out=$(members "$@")
  [ "$(echo "$out" | grep -c 'ERROR create')" -eq 2 ] || failed "$what was not refused: $out"
  echo "$out" | grep -q -- "$pattern" || failed "$what: the error does not say '$pattern': $out"
  echo "$out" | grep -q "OK short" && failed "$what got through: $out"
  echo "refused as expected: $what"
}
expect_ok() {
  local what=$1
  shift
  local out
  out=$(members "$@")
  [ "$(echo "$out" | grep -c 'OK short')" -eq 2 ] || failed "$what failed: $out"
}

start_server
grep -q "with TLS" server.log || fail "the server does not say it serves TLS"
expect_refused "a plaintext client" "FTCOMM_RENDEZVOUS_CA is unset" env
expect_refused "a client that trusts another CA" "trusts the CA in $work/other-ca.pem" \
  FTCOMM_RENDEZVOUS_CA="$work/other-ca.pem"
out=$(members FTCOMM_RENDEZVOUS_CA="$work/test-ca.pem" FTCOMM_TOKEN=wrong-token)
echo "$out" | grep -q "ERROR create.*PermissionDenied" || failed "a wrong token over TLS was not refused: $out"
expect_ok "the right CA and token" FTCOMM_RENDEZVOUS_CA="$work/test-ca.pem"
expect_refused "a CA file that is not PEM" "is not PEM" FTCOMM_RENDEZVOUS_CA="$work/tokens"
stop_server

start_server --tls-client-ca test-ca.pem
grep -q "with mutual TLS" server.log || fail "the server does not say it serves mutual TLS"
expect_refused "a client without a certificate under mutual TLS" "has no certificate" \
  FTCOMM_RENDEZVOUS_CA="$work/test-ca.pem"
expect_ok "a client with its certificate" FTCOMM_RENDEZVOUS_CA="$work/test-ca.pem" \
  FTCOMM_RENDEZVOUS_CERT="$work/member.pem" FTCOMM_RENDEZVOUS_KEY="$work/member.key"
stop_server

# A server that cannot read its key does not start, and says which file.
if "$bin/ftcomm-rendezvous" --listen 127.0.0.1:0 --tls-cert server.pem --tls-key missing.key \
  >bad.log 2>&1; then
  fail "a server without its key started"
fi
grep -q "missing.key" bad.log || { cat bad.log; fail "the missing key is not named"; }

# The demo with ftcomm-run --tls.
FTCOMM_RUN_FLAGS=--tls "$src/examples/ddp_demo.sh" "$bin" >demo.log 2>&1 || { cat demo.log; fail "the demo over TLS"; }
grep -q "with mutual TLS" demo.log || { cat demo.log; fail "the demo's server did not serve TLS"; }
grep -q "demo: OK" demo.log || fail "the demo over TLS did not end OK"
echo "tls: OK"
