#!/usr/bin/env bash
# test_kubectl_sim.sh - the real kubectl (TOOLCHAIN 5.1: /usr/bin/kubectl, a dispatcher that
# reads /version) against `kwp sim` on port 0. Each check compares what kubectl printed with
# what the server then holds (read back over the API with curl + jq): get/watch/label/delete,
# then `kubectl create` of every kind whose protobuf body the simulator decodes (deployment,
# service clusterip|nodeport|loadbalancer|externalname, serviceaccount, job) and the columns
# `kubectl get` prints for them, the 400/415 Status for protobuf it cannot read, and the same
# creates through a `kwp proxy` in front of the simulator.
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

write_kubeconfig "$TMP/kubeconfig" "$URL" "$NS"

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

# ---- kubectl create for the workload kinds (protobuf bodies, sim/proto.c) ------------------------
# row OUT NAME: the row of NAME in kubectl's table OUT, cells joined by "|" (cells are split on
# runs of 2+ spaces, so an empty cell disappears), an age cell as AGE.
row() {
  printf '%s\n' "$1" | awk -v name="$2" '
    $1 == name { n = split($0, c, /  +/); r = ""
                 for (i = 1; i <= n; i++) {
                   v = c[i]; if (v ~ /^[0-9]+[smhd]([0-9]+[smh])?$/) v = "AGE"
                   r = r (i > 1 ? "|" : "") v }
                 print r }'
}

# header OUT: the first line of OUT, spaces squeezed.
header() {
  printf '%s\n' "$1" | head -n 1 | tr -s ' '
}

# in_service_range IP: 10.96.0.0/12, the simulator's --service-cluster-ip-range.
in_service_range() {
  local a b c d
  IFS=. read -r a b c d <<<"$1"
  [[ "$a" == 10 && "$b" =~ ^[0-9]+$ && "$b" -ge 96 && "$b" -le 111 && "$c" =~ ^[0-9]+$ &&
    "$d" =~ ^[0-9]+$ ]]
}

out="$(kc create deployment kwp-deploy --image=nginx 2>&1)"
rc=$?
body="$(api "/apis/apps/v1/namespaces/$NS/deployments/kwp-deploy")"
got="$(kc get deployment kwp-deploy 2>&1)"
verdict "kubectl create deployment, then get: READY 0/1, kube's defaults stored" \
  "$([ "$rc" -eq 0 ] && [ "$out" = "deployment.apps/kwp-deploy created" ] &&
    [ "$(header "$got")" = "NAME READY UP-TO-DATE AVAILABLE AGE" ] &&
    [ "$(row "$got" kwp-deploy)" = "kwp-deploy|0/1|0|0|AGE" ] &&
    [ "$(printf '%s' "$body" | jq -r '[.metadata.generation, .spec.replicas,
        .spec.strategy.type, .spec.strategy.rollingUpdate.maxSurge, .spec.revisionHistoryLimit,
        .spec.progressDeadlineSeconds, .spec.template.spec.containers[0].imagePullPolicy,
        .spec.template.spec.restartPolicy] | map(tostring) | join(",")')" = \
      "1,1,RollingUpdate,25%,10,600,Always,Always" ] && echo 1)" \
  "rc=$rc output: $out" "get: $got" "server: $(printf '%s' "$body" | head -c 600)"

out="$(kc create deployment kwp-deploy2 --image=nginx:1.27 --image=busybox --replicas=3 \
  --port=80 2>&1)"
rc=$?
got="$(kc get deployment kwp-deploy2 -o wide 2>&1)"
verdict "kubectl create deployment --replicas=3 --port=80 with two images: get -o wide" \
  "$([ "$rc" -eq 0 ] && [ "$(row "$got" kwp-deploy2)" = \
    "kwp-deploy2|0/3|0|0|AGE|nginx,busybox|nginx:1.27,busybox|app=kwp-deploy2" ] &&
    [ "$(api "/apis/apps/v1/namespaces/$NS/deployments/kwp-deploy2" |
      jq -r '.spec.template.spec.containers[0].ports[0] | "\(.containerPort)/\(.protocol)"')" = \
      80/TCP ] && echo 1)" \
  "rc=$rc output: $out" "get: $got"

out="$(kc create service clusterip kwp-svc --tcp=80:8080 2>&1)"
rc=$?
got="$(kc get service kwp-svc 2>&1)"
ip="$(row "$got" kwp-svc | cut -d'|' -f3)"
body="$(api "/api/v1/namespaces/$NS/services/kwp-svc")"
verdict "kubectl create service clusterip: CLUSTER-IP in 10.96.0.0/12, single-stack IPv4" \
  "$([ "$rc" -eq 0 ] && [ "$out" = "service/kwp-svc created" ] &&
    [ "$(header "$got")" = "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE" ] &&
    [ "$(row "$got" kwp-svc)" = "kwp-svc|ClusterIP|$ip|<none>|80/TCP|AGE" ] &&
    in_service_range "$ip" &&
    [ "$(printf '%s' "$body" | jq -r '[.spec.clusterIPs[0], .spec.ipFamilies[0],
        .spec.ipFamilyPolicy, .spec.sessionAffinity, .spec.internalTrafficPolicy,
        (.spec.ports[0].targetPort | tostring)] | join(",")')" = \
      "$ip,IPv4,SingleStack,None,Cluster,8080" ] && echo 1)" \
  "rc=$rc output: $out" "get: $got" "server: $(printf '%s' "$body" | head -c 600)"

out="$(kc create service nodeport kwp-np --tcp=80:8080 2>&1)"
rc=$?
got="$(kc get service kwp-np 2>&1)"
ports="$(row "$got" kwp-np | cut -d'|' -f5)"
np="${ports#80:}"
np="${np%/TCP}"
verdict "kubectl create service nodeport: a node port in 30000-32767" \
  "$([ "$rc" -eq 0 ] && [[ "$np" =~ ^[0-9]+$ ]] && [ "$np" -ge 30000 ] && [ "$np" -le 32767 ] &&
    [ "$(row "$got" kwp-np | cut -d'|' -f2)" = NodePort ] &&
    in_service_range "$(row "$got" kwp-np | cut -d'|' -f3)" && echo 1)" \
  "rc=$rc output: $out" "get: $got"

out="$(kc create service nodeport kwp-np2 --tcp=81:8081 --node-port="$np" 2>&1)"
rc=$?
api "/api/v1/namespaces/$NS/services/kwp-np2" >/dev/null
code=$(cat "$TMP/code")
verdict "a node port already allocated is refused as kube-apiserver refuses it" \
  "$([ "$rc" -ne 0 ] && [[ "$out" == *"Service \"kwp-np2\" is invalid: spec.ports[0].nodePort: Invalid value: $np: provided port is already allocated"* ]] &&
    [ "$code" = 404 ] && echo 1)" \
  "rc=$rc output: $out" "GET afterwards: HTTP $code"

out="$(kc create service loadbalancer kwp-lb --tcp=443:https 2>&1)"
rc=$?
got="$(kc get service kwp-lb 2>&1)"
verdict "kubectl create service loadbalancer: EXTERNAL-IP <pending>, a node port" \
  "$([ "$rc" -eq 0 ] && [[ "$(row "$got" kwp-lb)" =~ ^kwp-lb\|LoadBalancer\|10\.[0-9.]+\|\<pending\>\|443:3[0-9]{4}/TCP\|AGE$ ]] &&
    echo 1)" \
  "rc=$rc output: $out" "get: $got"

out="$(kc create service externalname kwp-ext --external-name=db.example.com 2>&1)"
rc=$?
got="$(kc get service kwp-ext 2>&1)"
verdict "kubectl create service externalname: no cluster IP" \
  "$([ "$rc" -eq 0 ] && [ "$(row "$got" kwp-ext)" = \
    "kwp-ext|ExternalName|<none>|db.example.com|<none>|AGE" ] && echo 1)" \
  "rc=$rc output: $out" "get: $got"

out="$(kc create serviceaccount kwp-sa 2>&1)"
rc=$?
got="$(kc get serviceaccount kwp-sa 2>&1)"
verdict "kubectl create serviceaccount, then get: SECRETS 0" \
  "$([ "$rc" -eq 0 ] && [ "$out" = "serviceaccount/kwp-sa created" ] &&
    [ "$(header "$got")" = "NAME SECRETS AGE" ] && [ "$(row "$got" kwp-sa)" = "kwp-sa|0|AGE" ] &&
    echo 1)" \
  "rc=$rc output: $out" "get: $got"

out="$(kc create job kwp-job --image=busybox -- sh -c 'echo hi' 2>&1)"
rc=$?
body="$(api "/apis/batch/v1/namespaces/$NS/jobs/kwp-job")"
uid="$(printf '%s' "$body" | jq -r '.metadata.uid // empty' 2>/dev/null)"
got="$(kc get job kwp-job -o wide 2>&1)"
verdict "kubectl create job (served by default), then get: Running 0/1, generated selector" \
  "$([ "$rc" -eq 0 ] && [ "$out" = "job.batch/kwp-job created" ] && [ -n "$uid" ] &&
    [ "$(header "$got")" = "NAME STATUS COMPLETIONS DURATION AGE CONTAINERS IMAGES SELECTOR" ] &&
    [ "$(row "$got" kwp-job)" = \
      "kwp-job|Running|0/1|AGE|kwp-job|busybox|batch.kubernetes.io/controller-uid=$uid" ] &&
    [ "$(printf '%s' "$body" | jq -r '[.spec.template.metadata.labels["job-name"],
        .metadata.labels["batch.kubernetes.io/job-name"], .spec.backoffLimit,
        .spec.template.spec.containers[0].command[2]] | map(tostring) | join(",")')" = \
      "kwp-job,kwp-job,6,echo hi" ] && echo 1)" \
  "rc=$rc output: $out" "get: $got" "server: $(printf '%s' "$body" | head -c 600)"

# ---- protobuf the simulator cannot read: a Status, and the simulator stays up ------------------
DATA="$(cd "$(dirname "${BASH_SOURCE[0]}")/../data" && pwd)"
head -c 120 "$DATA/kubectl-create-deployment.pb" >"$TMP/cut.pb"
curl -sS --max-time 10 -H 'Content-Type: application/vnd.kubernetes.protobuf' \
  --data-binary @"$TMP/cut.pb" -o "$TMP/body" -w '%{http_code}' \
  "$URL/apis/apps/v1/namespaces/$NS/deployments" >"$TMP/code"
code=$(cat "$TMP/code")
reason="$(jq -r '.reason // empty' "$TMP/body" 2>/dev/null)"
msg="$(jq -r '.message // empty' "$TMP/body" 2>/dev/null)"
verdict "a truncated protobuf deployment gets 400 BadRequest with the decoder's reason" \
  "$([ "$code" = 400 ] && [ "$reason" = BadRequest ] &&
    [[ "$msg" == "the body of the request could not be decoded: "* ]] && echo 1)" \
  "HTTP $code: $(head -c 400 "$TMP/body")"

# "k8s\0" + Unknown{typeMeta{apiVersion "apps/v1", kind "StatefulSet"}}
printf 'k8s\000\012\026\012\007apps/v1\022\013StatefulSet' >"$TMP/sts.pb"
curl -sS --max-time 10 -H 'Content-Type: application/vnd.kubernetes.protobuf' \
  --data-binary @"$TMP/sts.pb" -o "$TMP/body" -w '%{http_code}' \
  "$URL/apis/apps/v1/namespaces/$NS/deployments" >"$TMP/code"
code=$(cat "$TMP/code")
verdict "a protobuf kind without a decoder gets 415 UnsupportedMediaType" \
  "$([ "$code" = 415 ] && [ "$(jq -r .reason "$TMP/body" 2>/dev/null)" = UnsupportedMediaType ] &&
    [ "$(jq -r .message "$TMP/body")" = \
      'no protobuf decoder for apiVersion "apps/v1" kind "StatefulSet"' ] && echo 1)" \
  "HTTP $code: $(head -c 400 "$TMP/body")"

# ---- the same through kwp proxy (creates pass upstream, gets come from its cache) --------------
SIM_URL="$URL"
start_kwp proxy proxy --listen 127.0.0.1:0 --upstream "$SIM_URL" \
  --resources services,apps/v1/deployments,batch/v1/jobs
PROXY_URL="$URL"
if wait_ready "$PROXY_URL" 30; then
  ok "kwp proxy in front of the simulator is ready"
else
  bad "kwp proxy /readyz 200 within 30 s" "last code $READY_CODE" "$(tail -n 20 "$TMP/proxy.log")"
fi
sed "s#server: \"$SIM_URL\"#server: \"$PROXY_URL\"#" "$TMP/kubeconfig" >"$TMP/kubeconfig-proxy"
kp() {
  timeout 30 "$KUBECTL" --kubeconfig "$TMP/kubeconfig-proxy" --cache-dir "$TMP/cache-proxy" \
    --request-timeout=20s "$@"
}
out="$(kp create deployment kwp-via-proxy --image=nginx 2>&1)"
rc=$?
out2="$(kp create service clusterip kwp-svc-proxy --tcp=80 2>&1)"
rc2=$?
sim_ip="$(api "/api/v1/namespaces/$NS/services/kwp-svc-proxy" | jq -r '.spec.clusterIP // empty')"
deadline=$((SECONDS + 10))
while :; do # the proxy's cache sees the objects once the simulator's watch events arrive
  got="$(kp get deployment kwp-via-proxy 2>&1)"
  got2="$(kp get service kwp-svc-proxy 2>&1)"
  [ "$(row "$got" kwp-via-proxy)" = "kwp-via-proxy|0/1|0|0|AGE" ] &&
    [ -n "$(row "$got2" kwp-svc-proxy)" ] && break
  [ "$SECONDS" -ge "$deadline" ] && break
  sleep 0.2
done
verdict "kubectl create deployment and service through kwp proxy, get from its cache" \
  "$([ "$rc" -eq 0 ] && [ "$out" = "deployment.apps/kwp-via-proxy created" ] && [ "$rc2" -eq 0 ] &&
    [ "$(row "$got" kwp-via-proxy)" = "kwp-via-proxy|0/1|0|0|AGE" ] && in_service_range "$sim_ip" &&
    [ "$(row "$got2" kwp-svc-proxy)" = "kwp-svc-proxy|ClusterIP|$sim_ip|<none>|80/TCP|AGE" ] &&
    echo 1)" \
  "rc=$rc output: $out" "rc=$rc2 output: $out2" "get: $got" "get: $got2" "simulator IP: $sim_ip"
