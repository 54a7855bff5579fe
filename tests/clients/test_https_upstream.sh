#!/usr/bin/env bash
# test_https_upstream.sh - kwp proxy against https upstreams: `kwp sim --tls-cert-file
# --tls-key-file --token` for CA verification (--ca-file), a token from a file (--token-file),
# --insecure-skip-tls-verify and the failures a user must see (wrong CA, wrong token: not ready,
# never a crash); and `openssl s_server -Verify 1` for client certificates (--client-cert,
# --client-key). Uses openssl, curl and python3 (a free port).
set -uo pipefail
KWP_BIN="${KWP_BIN:-build/kwp}"
dir="$(mktemp -d)"
pids=()
passed=0
failed=0
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

check() { # NAME COND...
  local name="$1"
  shift
  if "$@"; then
    echo "PASS $name"
    passed=$((passed + 1))
  else
    echo "FAIL $name"
    failed=$((failed + 1))
  fi
}

# start NAME ARGS... : runs kwp, waits for its "listening on" line (5 s), sets $url
start() {
  local name="$1" i
  shift
  "$KWP_BIN" "$@" >"$dir/$name.out" 2>"$dir/$name.err" &
  pids+=($!)
  for i in $(seq 1 50); do
    url="$(sed -n 's/^listening on //p' "$dir/$name.out" | head -1)"
    [ -n "$url" ] && return 0
    sleep 0.1
  done
  echo "FAIL $name did not start"; cat "$dir/$name.err"
  exit 1
}

wait_ready() { # URL: /readyz 200 within 10 s
  local i
  for i in $(seq 1 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$1/readyz")" = 200 ] && return 0
    sleep 0.1
  done
  return 1
}

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/key.pem" -out "$dir/cert.pem" -days 2 \
  -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/other.key" -out "$dir/other.pem" -days 2 \
  -subj "/CN=other" 2>/dev/null
echo "s3cret" >"$dir/token"
echo "wrong" >"$dir/badtoken"

start sim sim --listen 127.0.0.1:0 --objects 7 --tls-cert-file "$dir/cert.pem" \
  --tls-key-file "$dir/key.pem" --token s3cret
sim="$url"
check "simulator serves https" test "${sim#https://}" != "$sim"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$dir/cert.pem" -H 'User-Agent: t' "$sim/api/v1/pods")
check "upstream without a token answers 401" test "$code" = 401

H=(-s -H 'User-Agent: t')
start good proxy --listen 127.0.0.1:0 --upstream "$sim" --ca-file "$dir/cert.pem" \
  --token-file "$dir/token" --resources pods
good="$url"
check "proxy with CA and token becomes ready" wait_ready "$good"
n=$(curl "${H[@]}" "$good/api/v1/pods?resourceVersion=0" | grep -o '"name":"pod-[0-9]*"' | wc -l)
check "LIST rv=0 through the https upstream has the 7 pods (got $n)" test "$n" = 7
code=$(curl "${H[@]}" -o /dev/null -w '%{http_code}' "$good/api/v1/namespaces/default/configmaps")
check "forwarded request carries the token (got $code)" test "$code" = 200

start insecure proxy --listen 127.0.0.1:0 --upstream "$sim" --insecure-skip-tls-verify \
  --token s3cret --resources pods
check "--insecure-skip-tls-verify connects without a CA" wait_ready "$url"

start badca proxy --listen 127.0.0.1:0 --upstream "$sim" --ca-file "$dir/other.pem" \
  --token-file "$dir/token" --resources pods
badca="$url"
sleep 2
code=$(curl -s -o /dev/null -w '%{http_code}' "$badca/readyz")
check "wrong CA: not ready (got $code)" test "$code" = 503
code=$(curl "${H[@]}" -o "$dir/badca.body" -w '%{http_code}' "$badca/version")
check "wrong CA: forwarded request gets a 503 Status (got $code)" \
  grep -q '"reason":"ServiceUnavailable"' "$dir/badca.body"

start badtok proxy --listen 127.0.0.1:0 --upstream "$sim" --ca-file "$dir/cert.pem" \
  --token-file "$dir/badtoken" --resources pods
sleep 2
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/readyz")
check "wrong token: not ready (got $code)" test "$code" = 503
code=$(curl "${H[@]}" -o /dev/null -w '%{http_code}' "$url/api/v1/namespaces")
check "wrong token: upstream's 401 is passed through (got $code)" test "$code" = 401
check "proxies still running" kill -0 "${pids[1]}" "${pids[2]}" "${pids[3]}" "${pids[4]}"

# Client certificates (--client-cert/--client-key): `openssl s_server -Verify 1` refuses any
# client without a certificate signed by the CA; with -www it answers every GET with 200.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 2 \
  -subj "/CN=kwp-test-ca" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$dir/srv.key" -out "$dir/srv.csr" -subj "/CN=127.0.0.1" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$dir/san.ext"
openssl x509 -req -in "$dir/srv.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
  -out "$dir/srv.pem" -days 2 -extfile "$dir/san.ext" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$dir/cli.key" -out "$dir/cli.csr" -subj "/CN=kwp" 2>/dev/null
openssl x509 -req -in "$dir/cli.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
  -out "$dir/cli.pem" -days 2 2>/dev/null
mtls_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
openssl s_server -accept "127.0.0.1:$mtls_port" -cert "$dir/srv.pem" -key "$dir/srv.key" \
  -CAfile "$dir/ca.pem" -Verify 1 -www -quiet >"$dir/s_server.log" 2>&1 &
pids+=($!)
for i in $(seq 1 50); do
  curl -s -o /dev/null --cacert "$dir/ca.pem" --cert "$dir/cli.pem" --key "$dir/cli.key" \
    "https://127.0.0.1:$mtls_port/" && break
  sleep 0.1
done
start mtls proxy --listen 127.0.0.1:0 --upstream "https://127.0.0.1:$mtls_port" \
  --ca-file "$dir/ca.pem" --client-cert "$dir/cli.pem" --client-key "$dir/cli.key"
code=$(curl "${H[@]}" -o /dev/null -w '%{http_code}' "$url/version")
check "client certificate accepted by a server that requires one (got $code)" test "$code" = 200
start nocert proxy --listen 127.0.0.1:0 --upstream "https://127.0.0.1:$mtls_port" \
  --ca-file "$dir/ca.pem"
code=$(curl "${H[@]}" -o "$dir/nocert.body" -w '%{http_code}' "$url/version")
check "without --client-cert the handshake fails: 503 Status (got $code)" \
  grep -q '"reason":"ServiceUnavailable"' "$dir/nocert.body"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
