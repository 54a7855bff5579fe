#!/usr/bin/env bash
# test_kubectl_proxy.sh - the real kubectl through `kwp proxy` in front of `kwp sim` (issue 3).
#
# kubectl talks to the proxy only (temp kubeconfig, fresh --cache-dir); every check then reads
# what the simulator itself holds (curl + jq on the sim's URL), so a write that the proxy
# answered but did not pass upstream fails. Both servers run on 127.0.0.1:0.
#
# Environment: KWP_BIN (default build/kwp), KUBECTL (default /usr/bin/kubectl).
# Prints PASS/FAIL lines and ends with "N passed, N failed"; exits non-zero on any failure.
# Only processes this script started are signalled, by PID.
set -uo pipefail

KWP_BIN="${KWP_BIN:-build/kwp}"
KUBECTL="${KUBECTL:-/usr/bin/kubectl}"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/kwp-kubectl-proxy-XXXXXX")"
NS=default
kwatch_pid=""

# ok, bad, stop_pid, start_sim_proxy, kwp_finish
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STOP_FIRST=(kwatch_pid) # kubectl's watch, before the servers it talks to
trap kwp_finish EXIT

# http BASE PATH [curl args...]: body on stdout, status in $TMP/status.
http() {
  local base=$1 path=$2
  shift 2
  curl -sS --max-time 15 -A kwp-kubectl-proxy-test -H 'Accept: application/json' \
    -o "$TMP/resp" -w '%{http_code}' "$@" "$base$path" >"$TMP/status"
  cat "$TMP/resp"
}

# metric NAME RESOURCE: a kwp_* series of the proxy (empty when absent).
metric() {
  http "$PROXY" /metrics | awk -v k="$1{resource=\"$2\"}" '$1 == k { print $2 }'
}

for exe in "$KUBECTL" "$KWP_BIN"; do
  if [ ! -x "$exe" ]; then
    bad "$exe is executable" "set KWP_BIN / KUBECTL"
    exit 1
  fi
done

# ---- sim, then the proxy in front of it -----------------------------------------------------
start_sim_proxy --objects 15 --namespaces 2 --seed 7 --churn 0 -- --resources pods,configmaps

cat >"$TMP/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kwp
  cluster: {server: "$PROXY"}
contexts:
- name: kwp
  context: {cluster: kwp, user: nobody, namespace: $NS}
current-context: kwp
users:
- name: nobody
  user: {}
EOF
KC=("$KUBECTL" --kubeconfig "$TMP/kubeconfig" --cache-dir "$TMP/kube-cache" --request-timeout=20s)

# ---- get pods -A ------------------------------------------------------------------------------
expected=$(http "$SIM" /api/v1/pods | jq -r '.items[] | .metadata.namespace + " " + .metadata.name' | sort)
timeout 30 "${KC[@]}" get pods -A --no-headers >"$TMP/kc.out" 2>"$TMP/kc.err"
rc=$?
listed=$(awk '{ print $1 " " $2 }' "$TMP/kc.out" | sort)
count=$(printf '%s\n' "$expected" | grep -c .)
if [ "$count" -eq 15 ] && [ "$listed" = "$expected" ]; then
  ok "kubectl get pods -A through the proxy lists the sim's $count pods"
else
  bad "kubectl get pods -A through the proxy lists the sim's pods" "rc=$rc, sim has $count" \
    "stderr: $(head -c 400 "$TMP/kc.err")" \
    "diff sim/kubectl: $(diff <(echo "$expected") <(echo "$listed") | head -n 8 | tr '\n' ' ')"
fi

# ---- get pods -w sees a pod created through the proxy ---------------------------------------
before=$(metric kwp_watches_open pods)
up_before=$(http "$SIM" /_sim/stats | jq '.resources.pods.watches')
timeout 60 "${KC[@]}" get pods -w >"$TMP/watch.out" 2>"$TMP/watch.err" &
kwatch_pid=$!
for t in $(seq 1 200); do
  [ "$(metric kwp_watches_open pods)" -gt "${before:-0}" ] 2>/dev/null && break
  kill -0 "$kwatch_pid" 2>/dev/null || break
  sleep 0.1
done
opened=$(metric kwp_watches_open pods)
pod='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"via-proxy","labels":{"app":"probe"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}'
http "$PROXY" "/api/v1/namespaces/$NS/pods" -X POST -H 'Content-Type: application/json' --data "$pod" >/dev/null
created=$(cat "$TMP/status")
for t in $(seq 1 150); do
  grep -q '^via-proxy ' "$TMP/watch.out" && break
  sleep 0.1
done
at_sim=$(http "$SIM" "/api/v1/namespaces/$NS/pods/via-proxy" | jq -r '.metadata.name // empty')
stats=$(http "$SIM" /_sim/stats)
up_open=$(echo "$stats" | jq '.resources.pods.watches_open')
up_after=$(echo "$stats" | jq '.resources.pods.watches')
if grep -q '^via-proxy ' "$TMP/watch.out" && [ "$created" = 201 ] && [ "$at_sim" = via-proxy ] &&
  [ "$opened" -gt "${before:-0}" ] && [ "$up_open" = 1 ] && [ "$up_after" = "$up_before" ]; then
  ok "kubectl get pods -w sees a pod created through the proxy (one upstream watch)"
else
  bad "kubectl get pods -w sees a pod created through the proxy" \
    "POST through the proxy: HTTP $created; at the sim: '$at_sim'" \
    "proxy kwp_watches_open{pods} $before -> $opened; sim pods watches_open $up_open, watches $up_before -> $up_after" \
    "kubectl: $(head -c 600 "$TMP/watch.out" | tr '\n' '|')" "stderr: $(head -c 300 "$TMP/watch.err")"
fi
stop_pid "$kwatch_pid" 5
kwatch_pid=""

# ---- create / label / delete a configmap through the proxy ----------------------------------
cm_at_sim() {
  http "$SIM" "/api/v1/namespaces/$NS/configmaps/via-proxy"
}

out=$(timeout 30 "${KC[@]}" create configmap via-proxy --from-literal=k=v 2>&1)
rc=$?
obj=$(cm_at_sim)
code=$(cat "$TMP/status")
rv1=$(echo "$obj" | jq -r '.metadata.resourceVersion // 0' 2>/dev/null)
if [ "$rc" -eq 0 ] && [ "$out" = "configmap/via-proxy created" ] && [ "$code" = 200 ] &&
  [ "$(echo "$obj" | jq -r '.data.k' 2>/dev/null)" = v ]; then
  ok "kubectl create configmap through the proxy (the sim holds data.k=v)"
else
  bad "kubectl create configmap through the proxy" "rc=$rc: $out" "sim: HTTP $code $obj"
fi

out=$(timeout 30 "${KC[@]}" label configmap via-proxy tier=gold 2>&1)
rc=$?
obj=$(cm_at_sim)
code=$(cat "$TMP/status")
rv2=$(echo "$obj" | jq -r '.metadata.resourceVersion // 0' 2>/dev/null)
if [ "$rc" -eq 0 ] && [ "$out" = "configmap/via-proxy labeled" ] && [ "$code" = 200 ] &&
  [ "$(echo "$obj" | jq -r '.metadata.labels.tier' 2>/dev/null)" = gold ] && [ "$rv2" -gt "$rv1" ]; then
  ok "kubectl label configmap through the proxy (the sim holds tier=gold, rv $rv1 -> $rv2)"
else
  bad "kubectl label configmap through the proxy" "rc=$rc: $out" "sim: HTTP $code $obj"
fi

# The label is visible through the proxy's cache too (rv=0 LIST with a selector).
seen=""
for t in $(seq 1 100); do
  seen=$(http "$PROXY" "/api/v1/namespaces/$NS/configmaps?resourceVersion=0&labelSelector=tier%3Dgold" |
    jq -r '.items[].metadata.name' 2>/dev/null)
  [ "$seen" = via-proxy ] && break
  sleep 0.1
done
out=$(timeout 30 "${KC[@]}" get configmaps -l tier=gold -o name 2>&1)
if [ "$seen" = via-proxy ] && [ "$out" = "configmap/via-proxy" ]; then
  ok "the labelled configmap is found by selector (cache rv=0 and kubectl get -l)"
else
  bad "the labelled configmap is found by selector" "cache rv=0: '$seen'" "kubectl: $out"
fi

out=$(timeout 30 "${KC[@]}" delete configmap via-proxy 2>&1)
rc=$?
obj=$(cm_at_sim)
code=$(cat "$TMP/status")
if [ "$rc" -eq 0 ] && [ "$out" = 'configmap "via-proxy" deleted' ] && [ "$code" = 404 ] &&
  [ "$(echo "$obj" | jq -r '.reason' 2>/dev/null)" = NotFound ]; then
  ok "kubectl delete configmap through the proxy (the sim answers 404 NotFound)"
else
  bad "kubectl delete configmap through the proxy" "rc=$rc: $out" "sim: HTTP $code $obj"
fi
