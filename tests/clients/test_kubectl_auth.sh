#!/usr/bin/env bash
# test_kubectl_auth.sh - the real kubectl (TOOLCHAIN 5.1) through `kwp proxy --auth delegated`
# serving https (--tls-cert-file/--tls-key-file) with client certificates (--client-ca-file),
# in front of `kwp sim` as an authenticating apiserver (static tokens, the rule file). Two
# kubeconfig users: alice with a token and dave with a client certificate (O=viewers). Their
# allowed reads (get pods, get pods -w for a bounded time, get configmaps) print the objects
# the simulator holds; their denied ones print exactly what kubectl prints for
# kube-apiserver's 403, `Error from server (Forbidden): pods is forbidden: User "bob" cannot
# list resource "pods" in API group "" in the namespace "default"`; a token nobody holds and a
# certificate from another CA print kubectl's 401 line, `error: You must be logged in to the
# server (Unauthorized)` (with its discovery cached; without, kubectl's discovery-401 text).
# (kubectl with no credential at all against an https server prompts
# for a username before it sends anything, as it does with kube-apiserver, so "nobody" here
# is a credential kwp cannot authenticate.)
#
# Certificates come from the openssl CLI in a mktemp directory. Every kubectl runs under
# `timeout` with --request-timeout. Environment: KWP_BIN (default build/kwp), KUBECTL (default
# /usr/bin/kubectl). Prints PASS/FAIL lines and "N passed, N failed"; exits non-zero on any
# failure. Only processes this script started are signalled, by PID.
set -uo pipefail

KWP_BIN="${KWP_BIN:-build/kwp}"
KUBECTL="${KUBECTL:-/usr/bin/kubectl}"
NS=default
WATCH_PID=""
TMP="$(mktemp -d "${TMPDIR:-/tmp}/kwp-kubectl-auth-XXXXXX")"

# ok, bad, verdict, need_exec, stop_pid, start_kwp, wait_ready, kwp_finish
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STOP_FIRST=(WATCH_PID) # kubectl's watch, before the servers
trap kwp_finish EXIT

need_exec kubectl "$KUBECTL"
need_exec "kwp binary (KWP_BIN)" "$KWP_BIN"

# ---- certificates: a CA, the proxy's serving certificate, dave's; mallory's from another CA --
pki() {
  cd "$TMP" &&
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
      -subj /CN=kwp-test-ca &&
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >server.ext &&
    printf 'extendedKeyUsage=clientAuth\n' >client.ext &&
    openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1 &&
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem \
      -days 2 -extfile server.ext &&
    openssl req -newkey rsa:2048 -nodes -keyout dave.key -out dave.csr -subj /O=viewers/CN=dave &&
    openssl x509 -req -in dave.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out dave.pem \
      -days 2 -extfile client.ext &&
    openssl req -x509 -newkey rsa:2048 -nodes -keyout mallory.key -out mallory.pem -days 2 \
      -subj /O=system:masters/CN=mallory
}
if (pki) >"$TMP/openssl.log" 2>&1; then
  ok "openssl made the CA, the serving certificate and two client certificates"
else
  bad "openssl made the certificates" "$(tail -n 5 "$TMP/openssl.log")"
  exit 1
fi

# ---- the simulator: users and rules (sim/rbac.h) ---------------------------------------------
cat >"$TMP/tokens.csv" <<'EOF'
tok-alice,alice,1001
tok-bob,bob,1002
tok-admin,admin,1000,"system:masters"
tok-proxy,kwp-proxy,999
EOF
cat >"$TMP/rules" <<'EOF'
allow name=system:discovery groups=system:authenticated verbs=get nonResourceURLs=/api,/api/*,/apis,/apis/*,/version,/openapi,/openapi/*
allow name=alice-reads users=alice verbs=get,list,watch apiGroups="" resources=pods,configmaps namespaces=default
allow name=viewers-read groups=viewers verbs=get,list,watch apiGroups="" resources=pods,configmaps namespaces=default
allow name=kwp-reads users=kwp-proxy verbs=get,list,watch apiGroups=* resources=*
allow name=kwp-discovery users=kwp-proxy verbs=get nonResourceURLs=*
allow name=system:auth-delegator users=kwp-proxy verbs=create apiGroups=authentication.k8s.io,authorization.k8s.io resources=tokenreviews,subjectaccessreviews
allow name=kwp-impersonates users=kwp-proxy verbs=impersonate apiGroups=* resources=*
EOF

start_kwp sim sim --listen 127.0.0.1:0 --objects 12 --namespaces 3 --seed 5 --churn 0 \
  --token-auth-file "$TMP/tokens.csv" --authorization-rules "$TMP/rules"
SIM="$URL"
start_kwp proxy proxy --listen 127.0.0.1:0 --upstream "$SIM" --token tok-proxy \
  --auth delegated --tls-cert-file "$TMP/server.pem" --tls-key-file "$TMP/server.key" \
  --client-ca-file "$TMP/ca.pem" --resources pods,configmaps
PROXY="$URL"
if [ "${PROXY#https://}" != "$PROXY" ] && wait_ready "$PROXY" 30 --cacert "$TMP/ca.pem"; then
  ok "kwp sim at $SIM, kwp proxy --auth delegated at $PROXY ready"
else
  bad "kwp proxy https /readyz 200 within 30 s" "URL $PROXY, last code $READY_CODE" \
    "$(tail -n 20 "$TMP/proxy.log")"
  exit 1
fi

cat >"$TMP/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kwp
  cluster: {server: "$PROXY", certificate-authority: "$TMP/ca.pem"}
contexts:
- {name: alice, context: {cluster: kwp, user: alice, namespace: $NS}}
- {name: bob, context: {cluster: kwp, user: bob, namespace: $NS}}
- {name: dave, context: {cluster: kwp, user: dave, namespace: $NS}}
- {name: mallory, context: {cluster: kwp, user: mallory, namespace: $NS}}
- {name: stranger, context: {cluster: kwp, user: stranger, namespace: $NS}}
current-context: alice
users:
- {name: alice, user: {token: tok-alice}}
- {name: bob, user: {token: tok-bob}}
- {name: dave, user: {client-certificate: "$TMP/dave.pem", client-key: "$TMP/dave.key"}}
- {name: mallory, user: {client-certificate: "$TMP/mallory.pem", client-key: "$TMP/mallory.key"}}
- {name: stranger, user: {token: tok-nobody-holds-this}}
EOF

# kc CONTEXT ARGS...: kubectl as CONTEXT, 30 s bound, stdin closed.
kc() {
  local ctx="$1"
  shift
  timeout 30 "$KUBECTL" --kubeconfig "$TMP/kubeconfig" --context "$ctx" \
    --cache-dir "$TMP/cache-$ctx" --request-timeout=20s "$@" </dev/null
}

# sim_names PATH: the sorted names of the list at PATH on the simulator (read as admin).
sim_names() {
  curl -sS --max-time 10 -H 'Authorization: Bearer tok-admin' -H 'Accept: application/json' \
    "$SIM$1" | jq -r '.items[].metadata.name' | sort
}

# rows OUT: the NAME column of kubectl's table OUT, sorted.
rows() {
  printf '%s\n' "$1" | tail -n +2 | awk 'NF { print $1 }' | sort
}

forbidden() { # USER VERB RESOURCE WHERE [NAME]: kubectl's line for kube-apiserver's 403
  local subject="$3"
  [ -n "${5:-}" ] && subject="$3 \"$5\""
  printf 'Error from server (Forbidden): %s is forbidden: User "%s" cannot %s resource "%s" in API group "" %s' \
    "$subject" "$1" "$2" "$3" "$4"
}

# watch_until COMMAND...: polls COMMAND until it succeeds, at most 15 s, while the watch runs.
watch_until() {
  local deadline=$((SECONDS + 15))
  while [ "$SECONDS" -lt "$deadline" ] && ! "$@"; do
    kill -0 "$WATCH_PID" 2>/dev/null || break
    sleep 0.1
  done
}

# watch_listed: kubectl's watch of $who printed a row per pod.
watch_listed() {
  [ "$(tail -n +2 "$TMP/watch-$who.out" | grep -c .)" -ge "$n_pods" ]
}

UNAUTHORIZED='error: You must be logged in to the server (Unauthorized)'

pods_want="$(sim_names "/api/v1/namespaces/$NS/pods")"
cms_want="$(sim_names "/api/v1/namespaces/$NS/configmaps")"
n_pods=$(printf '%s\n' "$pods_want" | grep -c .)
n_cms=$(printf '%s\n' "$cms_want" | grep -c .)
verdict "the simulator holds pods and configmaps in $NS ($n_pods, $n_cms)" \
  "$([ "$n_pods" -gt 0 ] && [ "$n_cms" -gt 0 ] && echo 1)" "pods: $pods_want" "cms: $cms_want"

# ---- allowed reads: alice (token) and dave (client certificate) ------------------------------
for who in alice dave; do
  out="$(kc "$who" get pods 2>"$TMP/err")"
  rc=$?
  verdict "kubectl get pods as $who: the $n_pods pods of $NS" \
    "$([ "$rc" -eq 0 ] && [[ "$(printf '%s\n' "$out" | head -n 1)" == NAME*READY*STATUS* ]] &&
      [ "$(rows "$out")" = "$pods_want" ] && echo 1)" \
    "rc=$rc stderr: $(head -c 400 "$TMP/err")" "output: $(printf '%s' "$out" | head -c 600)"

  out="$(kc "$who" get configmaps 2>"$TMP/err")"
  rc=$?
  verdict "kubectl get configmaps as $who: the $n_cms configmaps of $NS" \
    "$([ "$rc" -eq 0 ] && [[ "$(printf '%s\n' "$out" | head -n 1)" == NAME*DATA*AGE* ]] &&
      [ "$(rows "$out")" = "$cms_want" ] && echo 1)" \
    "rc=$rc stderr: $(head -c 400 "$TMP/err")" "output: $(printf '%s' "$out" | head -c 600)"

  # get pods -w: the listed pods, then a pod created on the simulator, within bounded waits
  timeout 40 "$KUBECTL" --kubeconfig "$TMP/kubeconfig" --context "$who" \
    --cache-dir "$TMP/cache-$who" get pods -w </dev/null >"$TMP/watch-$who.out" \
    2>"$TMP/watch-$who.err" &
  WATCH_PID=$!
  watch_until watch_listed
  # kubectl lists first, then watches from the list's resourceVersion: a pod created now is
  # an event on the watch (or, if the watch is not open yet, newer than the list: still sent)
  probe="watch-probe-$who"
  code=$(curl -sS --max-time 10 -o "$TMP/post.out" -w '%{http_code}' \
    -H 'Authorization: Bearer tok-admin' -H 'Content-Type: application/json' -X POST \
    --data "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$probe\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}" \
    "$SIM/api/v1/namespaces/$NS/pods")
  watch_until grep -q "^$probe " "$TMP/watch-$who.out"
  listed="$(tail -n +2 "$TMP/watch-$who.out" | awk 'NF { print $1 }' | grep -v "^$probe\$" | sort)"
  verdict "kubectl get pods -w as $who: lists the pods, then shows one created meanwhile" \
    "$([ "$code" = 201 ] && grep -q "^$probe " "$TMP/watch-$who.out" &&
      [ "$listed" = "$pods_want" ] && echo 1)" \
    "POST $code: $(head -c 300 "$TMP/post.out")" \
    "watch output: $(head -c 800 "$TMP/watch-$who.out")" \
    "stderr: $(head -c 400 "$TMP/watch-$who.err")"
  stop_pid "$WATCH_PID" 2
  WATCH_PID=""
  pods_want="$(sim_names "/api/v1/namespaces/$NS/pods")"
  n_pods=$(printf '%s\n' "$pods_want" | grep -c .)
done

# ---- denied: kube-apiserver's 403 as kubectl prints it ---------------------------------------
check_denied() { # NAME WANT CONTEXT ARGS...
  local name="$1" want="$2" out rc
  shift 2
  out="$(kc "$@" 2>&1)"
  rc=$?
  verdict "$name" "$([ "$rc" -eq 1 ] && [ "$out" = "$want" ] && echo 1)" \
    "rc=$rc output: $(printf '%s' "$out" | head -c 600)" "want: $want"
}

check_denied "kubectl get pods as bob: Forbidden in namespace $NS" \
  "$(forbidden bob list pods "in the namespace \"$NS\"")" bob get pods
check_denied "kubectl get pods -w as bob: Forbidden (the watch starts with a list)" \
  "$(forbidden bob list pods "in the namespace \"$NS\"")" bob get pods -w
check_denied "kubectl get configmaps as bob: Forbidden" \
  "$(forbidden bob list configmaps "in the namespace \"$NS\"")" bob get configmaps
check_denied "kubectl get pods -n ns-1 as alice: Forbidden outside her namespace" \
  "$(forbidden alice list pods 'in the namespace "ns-1"')" alice get pods -n ns-1
check_denied "kubectl get pods -A as alice: Forbidden at the cluster scope" \
  "$(forbidden alice list pods 'at the cluster scope')" alice get pods -A
check_denied "kubectl get pod NAME -n ns-1 as alice: the named 403" \
  "$(forbidden alice get pods 'in the namespace "ns-1"' some-pod)" alice get pod some-pod -n ns-1
check_denied "kubectl get pods -n ns-1 as dave (certificate): Forbidden" \
  "$(forbidden dave list pods 'in the namespace "ns-1"')" dave get pods -n ns-1
check_denied "kubectl get nodes as dave (certificate): Forbidden at the cluster scope" \
  "$(forbidden dave list nodes 'at the cluster scope')" dave get nodes

# ---- not authenticated: kubectl's 401 lines -------------------------------------------------
# kubectl prints the message of the 401 Status ("Unauthorized") when its discovery is cached,
# as after any earlier authorized run; with no cache the discovery request fails first and
# kubectl 1.32 prints what it prints for kube-apiserver then (client-go's generic text for a
# 401 on discovery), after its memcache.go error lines.
for who in stranger mallory; do
  rm -rf "$TMP/cache-$who"
  cp -r "$TMP/cache-alice" "$TMP/cache-$who"
done
check_denied "kubectl with a token nobody holds (discovery cached): Unauthorized" \
  "$UNAUTHORIZED" stranger get pods
check_denied "kubectl with a certificate of another CA (O=system:masters): Unauthorized" \
  "$UNAUTHORIZED" mallory get pods -w
rm -rf "$TMP/cache-stranger"
out="$(kc stranger get pods 2>&1)"
rc=$?
others="$(printf '%s\n' "$out" | sed '$d' | grep -vc 'memcache.go:[0-9]*\] "Unhandled Error" err="couldn.t get current server API group list: the server has asked for the client to provide credentials"')"
verdict "kubectl with a token nobody holds (no discovery cache): the credentials error" \
  "$([ "$rc" -eq 1 ] && [ "$(printf '%s\n' "$out" | tail -n 1)" = \
    'error: You must be logged in to the server (the server has asked for the client to provide credentials)' ] &&
    [ "$others" -eq 0 ] && echo 1)" \
  "rc=$rc output: $(printf '%s' "$out" | tail -c 600)"
