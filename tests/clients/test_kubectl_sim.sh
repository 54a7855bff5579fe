#!/usr/bin/env bash
# test_kubectl_sim.sh - the real kubectl (TOOLCHAIN 5.1: /usr/bin/kubectl, a dispatcher that
# reads /version) against `kwp sim` on port 0. Each check compares what kubectl printed with
# what the server then holds (read back over the API with curl + jq).
#
# Environment: KWP_BIN (default build/kwp), KUBECTL (default /usr/bin/kubectl).
# Prints PASS/FAIL lines and ends with "N passed, N failed"; exits non-zero on any failure.
# Only processes this script started are signalled, by PID.
set -uo pipefail

KWP_BIN="${KWP_BIN:-build/kwp}"
KUBECTL="${KUBECTL:-/usr/bin/kubectl}"
NS=default
SEEDED=20

WATCH_PID=""
TMP="$(mktemp -d "${TMPDIR:-/tmp}/kwp-kubectl-XXXXXX")"

# ok, bad, stop_pid, start_kwp, kwp_finish
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STOP_FIRST=(WATCH_PID) # kubectl's watch, before the simulator
trap kwp_finish EXIT

# ---- start the simulator -----------------------------------------------------------------
if [ ! -x "$KUBECTL" ]; then
  bad "kubectl present" "$KUBECTL is not executable"
  exit 1
fi
if [ ! -x "$KWP_BIN" ]; then
  bad "kwp binary present" "$KWP_BIN is not executable (set KWP_BIN)"
  exit 1
fi

start_kwp sim sim --listen 127.0.0.1:0 --objects "$SEEDED" --namespaces 3 --seed 3 --churn 0
ok "kwp sim listening on $URL"

cat >"$TMP/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: sim
  cluster: {server: "$URL"}
contexts:
- name: sim
  context: {cluster: sim, user: anon, namespace: $NS}
current-context: sim
users:
- name: anon
  user: {}
EOF

kc() {
  timeout 30 "$KUBECTL" --kubeconfig "$TMP/kubeconfig" --cache-dir "$TMP/cache" \
    --request-timeout=20s "$@"
}

# api PATH: GET over HTTP, body on stdout, status code in $TMP/code.
api() {
  curl -sS --max-time 10 -A kwp-kubectl-test -H 'Accept: application/json' \
    -o "$TMP/body" -w '%{http_code}' "$URL$1" >"$TMP/code"
  cat "$TMP/body"
}

api_post() {
  curl -sS --max-time 10 -A kwp-kubectl-test -H 'Accept: application/json' \
    -H 'Content-Type: application/json' -X POST --data "$2" \
    -o "$TMP/body" -w '%{http_code}' "$URL$1" >"$TMP/code"
  cat "$TMP/body"
}

# ---- get pods -A ---------------------------------------------------------------------------
want="$(api /api/v1/pods | jq -r '.items[] | "\(.metadata.namespace) \(.metadata.name)"' | sort)"
n_want=$(printf '%s\n' "$want" | grep -c .)
out="$(kc get pods -A 2>"$TMP/err")"
rc=$?
got="$(printf '%s\n' "$out" | tail -n +2 | awk 'NF { print $1 " " $2 }' | sort)"
header="$(printf '%s\n' "$out" | head -n 1)"
if [ "$rc" -eq 0 ] && [ "$n_want" -eq "$SEEDED" ] && [ "$got" = "$want" ] &&
  [[ "$header" == NAMESPACE*NAME* ]]; then
  ok "kubectl get pods -A lists the $SEEDED seeded pods"
else
  bad "kubectl get pods -A lists the $SEEDED seeded pods" "rc=$rc server has $n_want pods" \
    "header: $header" "kubectl stderr: $(head -c 500 "$TMP/err")" \
    "diff (server vs kubectl): $(diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") | head -n 10)"
fi

# ---- get pods -w sees a pod created through the API ---------------------------------------
watches_open() {
  api /_sim/stats | jq -r '.resources.pods.watches_open // 0'
}
n_default=$(printf '%s\n' "$want" | awk -v ns="$NS" '$1 == ns' | grep -c .)
open_before=$(watches_open)
timeout 40 "$KUBECTL" --kubeconfig "$TMP/kubeconfig" --cache-dir "$TMP/cache" \
  get pods -w >"$TMP/watch.out" 2>"$TMP/watch.err" &
WATCH_PID=$!
# Bounded wait until kubectl's watch is open on the server (it lists first, then watches).
deadline=$((SECONDS + 15))
while [ "$SECONDS" -lt "$deadline" ] && [ "$(watches_open)" -le "$open_before" ]; do
  kill -0 "$WATCH_PID" 2>/dev/null || break
  sleep 0.1
done
watch_up=$(watches_open)
pod='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"kwp-watch-probe","labels":{"app":"probe"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}'
api_post "/api/v1/namespaces/$NS/pods" "$pod" >/dev/null
post_code=$(cat "$TMP/code")
deadline=$((SECONDS + 10))
while [ "$SECONDS" -lt "$deadline" ] && ! grep -q kwp-watch-probe "$TMP/watch.out"; do
  kill -0 "$WATCH_PID" 2>/dev/null || break
  sleep 0.1
done
listed=$(tail -n +2 "$TMP/watch.out" | grep -vc kwp-watch-probe)
if grep -q '^kwp-watch-probe ' "$TMP/watch.out" && [ "$post_code" = 201 ] &&
  [ "$watch_up" -gt "$open_before" ] && [ "$listed" -eq "$n_default" ]; then
  ok "kubectl get pods -w lists $n_default pods, then shows a pod created through the API"
else
  bad "kubectl get pods -w shows a pod created through the API" \
    "POST code $post_code; pods watches_open before $open_before, after start $watch_up" \
    "initial rows $listed (server had $n_default in $NS)" \
    "kubectl output: $(head -c 800 "$TMP/watch.out")" "stderr: $(head -c 500 "$TMP/watch.err")"
fi
stop_pid "$WATCH_PID" 2
WATCH_PID=""

# ---- create / label / delete a configmap ----------------------------------------------------
out="$(kc create configmap kwp-cm --from-literal=a=b 2>&1)"
rc=$?
body="$(api "/api/v1/namespaces/$NS/configmaps/kwp-cm")"
code=$(cat "$TMP/code")
a=$(printf '%s' "$body" | jq -r '.data.a // empty' 2>/dev/null)
rv1=$(printf '%s' "$body" | jq -r '.metadata.resourceVersion // 0' 2>/dev/null)
if [ "$rc" -eq 0 ] && [ "$out" = "configmap/kwp-cm created" ] && [ "$code" = 200 ] &&
  [ "$a" = b ]; then
  ok "kubectl create configmap (server holds data.a=b)"
else
  bad "kubectl create configmap" "rc=$rc output: $out" "server: HTTP $code $body"
fi

out="$(kc get configmap kwp-cm -o 'jsonpath={.data.a}' 2>&1)"
if [ "$out" = b ]; then
  ok "kubectl get configmap -o jsonpath reads it back"
else
  bad "kubectl get configmap -o jsonpath reads it back" "output: $out"
fi

out="$(kc label configmap kwp-cm env=test 2>&1)"
rc=$?
body="$(api "/api/v1/namespaces/$NS/configmaps/kwp-cm")"
code=$(cat "$TMP/code")
env=$(printf '%s' "$body" | jq -r '.metadata.labels.env // empty' 2>/dev/null)
rv2=$(printf '%s' "$body" | jq -r '.metadata.resourceVersion // 0' 2>/dev/null)
a=$(printf '%s' "$body" | jq -r '.data.a // empty' 2>/dev/null)
if [ "$rc" -eq 0 ] && [ "$out" = "configmap/kwp-cm labeled" ] && [ "$code" = 200 ] &&
  [ "$env" = test ] && [ "$a" = b ] && [ "$rv2" -gt "$rv1" ]; then
  ok "kubectl label configmap (server holds env=test at a newer RV)"
else
  bad "kubectl label configmap" "rc=$rc output: $out" "server: HTTP $code $body" \
    "rv before $rv1, after $rv2"
fi

out="$(kc get configmaps -l env=test -o name 2>&1)"
if [ "$out" = "configmap/kwp-cm" ]; then
  ok "kubectl get configmaps -l env=test finds it"
else
  bad "kubectl get configmaps -l env=test finds it" "output: $out"
fi

out="$(kc delete configmap kwp-cm 2>&1)"
rc=$?
body="$(api "/api/v1/namespaces/$NS/configmaps/kwp-cm")"
code=$(cat "$TMP/code")
reason=$(printf '%s' "$body" | jq -r '.reason // empty' 2>/dev/null)
if [ "$rc" -eq 0 ] && [ "$out" = 'configmap "kwp-cm" deleted' ] && [ "$code" = 404 ] &&
  [ "$reason" = NotFound ]; then
  ok "kubectl delete configmap (server answers 404 NotFound)"
else
  bad "kubectl delete configmap" "rc=$rc output: $out" "server: HTTP $code $body"
fi

out="$(kc get configmap kwp-cm 2>&1)"
rc=$?
if [ "$rc" -ne 0 ] && [[ "$out" == *'configmaps "kwp-cm" not found'* ]]; then
  ok "kubectl get of the deleted configmap reports NotFound"
else
  bad "kubectl get of the deleted configmap reports NotFound" "rc=$rc output: $out"
fi
