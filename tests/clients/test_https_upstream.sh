#!/usr/bin/env bash
# test_https_upstream.sh - kwp proxy against https upstreams: `kwp sim --tls-cert-file
# --tls-key-file --token` for CA verification (--ca-file), a token from a file (--token-file),
# --insecure-skip-tls-verify and the failures a user must see (wrong CA, wrong token: not ready,
# never a crash); and `openssl s_server -Verify 1` for client certificates (--client-cert,
# --client-key). Uses openssl, curl and python3 (a free port).
set -uo pipefail
KWP_BIN="${KWP_BIN:-build/kwp}"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/kwp-https-XXXXXX")"
S_SERVER_PID=""

# ok, bad, stop_pid, start_kwp, wait_ready, kwp_finish
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STOP_FIRST=(S_SERVER_PID) # openssl s_server is not kwp: its exit status is not checked
trap kwp_finish EXIT

check() { # NAME COMMAND...: PASS when COMMAND succeeds
  local name="$1"
  shift
  if "$@"; then
    ok "$name"
  else
    bad "$name"
  fi
}

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/key.pem" -out "$TMP/cert.pem" -days 2 \
  -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/other.key" -out "$TMP/other.pem" -days 2 \
  -subj "/CN=other" 2>/dev/null
echo "s3cret" >"$TMP/token"
echo "wrong" >"$TMP/badtoken"

start_kwp sim sim --listen 127.0.0.1:0 --objects 7 --tls-cert-file "$TMP/cert.pem" \
  --tls-key-file "$TMP/key.pem" --token s3cret
sim="$URL"
check "simulator serves https" test "${sim#https://}" != "$sim"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$TMP/cert.pem" -H 'User-Agent: t' "$sim/api/v1/pods")
check "upstream without a token answers 401" test "$code" = 401

H=(-s -H 'User-Agent: t')
start_kwp good proxy --listen 127.0.0.1:0 --upstream "$sim" --ca-file "$TMP/cert.pem" \
  --token-file "$TMP/token" --resources pods
good="$URL"
check "proxy with CA and token becomes ready" wait_ready "$good" 10
n=$(curl "${H[@]}" "$good/api/v1/pods?resourceVersion=0" | grep -o '"name":"pod-[0-9]*"' | wc -l)
check "LIST rv=0 through the https upstream has the 7 pods (got $n)" test "$n" = 7
code=$(curl "${H[@]}" -o /dev/null -w '%{http_code}' "$good/api/v1/namespaces/default/configmaps")
check "forwarded request carries the token (got $code)" test "$code" = 200

start_kwp insecure proxy --listen 127.0.0.1:0 --upstream "$sim" --insecure-skip-tls-verify \
  --token s3cret --resources pods
check "--insecure-skip-tls-verify connects without a CA" wait_ready "$URL" 10

start_kwp badca proxy --listen 127.0.0.1:0 --upstream "$sim" --ca-file "$TMP/other.pem" \
  --token-file "$TMP/token" --resources pods
badca="$URL"
sleep 2
code=$(curl -s -o /dev/null -w '%{http_code}' "$badca/readyz")
check "wrong CA: not ready (got $code)" test "$code" = 503
code=$(curl "${H[@]}" -o "$TMP/badca.body" -w '%{http_code}' "$badca/version")
check "wrong CA: forwarded request gets a 503 Status (got $code)" \
  grep -q '"reason":"ServiceUnavailable"' "$TMP/badca.body"

start_kwp badtok proxy --listen 127.0.0.1:0 --upstream "$sim" --ca-file "$TMP/cert.pem" \
  --token-file "$TMP/badtoken" --resources pods
sleep 2
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/readyz")
check "wrong token: not ready (got $code)" test "$code" = 503
code=$(curl "${H[@]}" -o /dev/null -w '%{http_code}' "$URL/api/v1/namespaces")
check "wrong token: upstream's 401 is passed through (got $code)" test "$code" = 401
check "proxies still running" kill -0 "${KWP_PIDS[1]}" "${KWP_PIDS[2]}" "${KWP_PIDS[3]}" "${KWP_PIDS[4]}"

# Client certificates (--client-cert/--client-key): `openssl s_server -Verify 1` refuses any
# client without a certificate signed by the CA; with -www it answers every GET with 200.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/ca.key" -out "$TMP/ca.pem" -days 2 \
  -subj "/CN=kwp-test-ca" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$TMP/srv.key" -out "$TMP/srv.csr" -subj "/CN=127.0.0.1" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$TMP/san.ext"
openssl x509 -req -in "$TMP/srv.csr" -CA "$TMP/ca.pem" -CAkey "$TMP/ca.key" -CAcreateserial \
  -out "$TMP/srv.pem" -days 2 -extfile "$TMP/san.ext" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$TMP/cli.key" -out "$TMP/cli.csr" -subj "/CN=kwp" 2>/dev/null
openssl x509 -req -in "$TMP/cli.csr" -CA "$TMP/ca.pem" -CAkey "$TMP/ca.key" -CAcreateserial \
  -out "$TMP/cli.pem" -days 2 2>/dev/null
mtls_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
openssl s_server -accept "127.0.0.1:$mtls_port" -cert "$TMP/srv.pem" -key "$TMP/srv.key" \
  -CAfile "$TMP/ca.pem" -Verify 1 -www -quiet >"$TMP/s_server.log" 2>&1 &
S_SERVER_PID=$!
for i in $(seq 1 50); do
  curl -s -o /dev/null --cacert "$TMP/ca.pem" --cert "$TMP/cli.pem" --key "$TMP/cli.key" \
    "https://127.0.0.1:$mtls_port/" && break
  sleep 0.1
done
start_kwp mtls proxy --listen 127.0.0.1:0 --upstream "https://127.0.0.1:$mtls_port" \
  --ca-file "$TMP/ca.pem" --client-cert "$TMP/cli.pem" --client-key "$TMP/cli.key"
code=$(curl "${H[@]}" -o /dev/null -w '%{http_code}' "$URL/version")
check "client certificate accepted by a server that requires one (got $code)" test "$code" = 200
start_kwp nocert proxy --listen 127.0.0.1:0 --upstream "https://127.0.0.1:$mtls_port" \
  --ca-file "$TMP/ca.pem"
code=$(curl "${H[@]}" -o "$TMP/nocert.body" -w '%{http_code}' "$URL/version")
check "without --client-cert the handshake fails: 503 Status (got $code)" \
  grep -q '"reason":"ServiceUnavailable"' "$TMP/nocert.body"
