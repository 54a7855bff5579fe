#!/usr/bin/env bash
# test_kubectl_output.sh - what the real kubectl prints through kwp (content negotiation,
# server-side printers): `get pods` (NAME READY STATUS RESTARTS AGE), `-o wide`, `-o yaml`,
# `-w` and `--watch-only`, then `get` for configmaps, secrets, services (-o wide),
# namespaces, nodes (-o wide), serviceaccounts, deployments (and -o wide), replicasets and
# jobs, first against `kwp sim`, then through `kwp proxy` in front of it (LIST forwarded,
# WATCH served from the proxy's cache, where a configmap watch is printed by the proxy).
# Pod rows are checked against the pod JSON the simulator holds (one pod is put in
# CrashLoopBackOff with 3 restarts 7 minutes ago); the other kinds against the rows
# kube-apiserver's printers make for the objects created here, AGE masked.
#
# Environment: KWP_BIN (default build/kwp), KUBECTL (default /usr/bin/kubectl).
# Prints PASS/FAIL lines and ends with "N passed, N failed"; exits non-zero on any failure.
# Only the processes this script starts are signalled, by PID.
set -uo pipefail

KWP_BIN="${KWP_BIN:-build/kwp}"
KUBECTL="${KUBECTL:-/usr/bin/kubectl}"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/kwp-kubectl-output-XXXXXX")"

# ok, bad, verdict, stop_pid, start_sim_proxy, kwp_finish
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap kwp_finish EXIT

[ -x "$KUBECTL" ] || { verdict "kubectl at $KUBECTL" 0; exit 1; }
[ -x "$KWP_BIN" ] || { verdict "kwp binary at $KWP_BIN" 0; exit 1; }

start_sim_proxy --objects 12 --namespaces 2 --seed 11 --churn 0 --resource batch/v1/jobs -- \
  --resources pods,configmaps

# sim_api METHOD PATH [BODY]: the simulator's own view (neutral User-Agent: compact JSON).
sim_api() {
  curl -sS --max-time 10 -A kwp-output-test -H 'Accept: application/json' -X "$1" \
    ${3:+-H 'Content-Type: application/json' --data "$3"} "$SIM$2"
}

kc() {
  timeout 30 "$KUBECTL" --server "$1" --cache-dir "$TMP/cache-$2" --request-timeout=20s \
    -n default "${@:3}"
}

# ---- pods ----------------------------------------------------------------------------------

# A pod printPod shows as CrashLoopBackOff, 1/2 ready, "3 (7m.. ago)".
sim_api POST /api/v1/namespaces/default/pods \
  '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"crashy"},"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}]}}' >/dev/null
fin=$(date -u -d '-7 min' +%Y-%m-%dT%H:%M:%SZ)
sim_api GET /api/v1/namespaces/default/pods/crashy | jq -c --arg f "$fin" '.status = {phase: "Running", podIP: "10.9.9.9", containerStatuses: [{name: "a", ready: true, restartCount: 0, state: {running: {startedAt: $f}}}, {name: "b", ready: false, restartCount: 3, state: {waiting: {reason: "CrashLoopBackOff"}}, lastState: {terminated: {exitCode: 1, finishedAt: $f}}}]}' >"$TMP/crashy.json"
sim_api PUT /api/v1/namespaces/default/pods/crashy/status "$(cat "$TMP/crashy.json")" >/dev/null

# expected_rows WIDE: NAME|READY|STATUS|RESTARTS[|IP|NODE|NOMINATED|GATES] per pod in default,
# computed from the pod JSON as printPod does for these pods (no init containers).
expected_rows() {
  sim_api GET /api/v1/namespaces/default/pods | jq -r --arg wide "$1" '.items[] |
    (.status.containerStatuses // []) as $cs |
    ([$cs[] | select(.ready and .state.running)] | length) as $ready |
    ([$cs[] | .restartCount // 0] | add // 0) as $restarts |
    (.status.phase // "") as $phase |
    ([$cs | reverse[] | (.state.waiting.reason // .state.terminated.reason // empty)] | last // $phase) as $status |
    [.metadata.name, "\($ready)/\(.spec.containers | length)", $status,
     (if $restarts > 0 then "\($restarts) (AGO)" else "0" end)]
    + (if $wide == "1" then [(.status.podIP // "<none>"), (.spec.nodeName // "<none>"),
                            (.status.nominatedNodeName // "<none>"), "<none>"] else [] end)
    | join("|")' | sort
}

# rows FILE: kubectl's pod rows as NAME|READY|... (columns are separated by 2+ spaces;
# AGE is dropped, the "(7m1s ago)" of RESTARTS is normalised to "(AGO)").
rows() {
  tail -n +2 "$1" | sed -E 's/  +/|/g; s/\([0-9a-z]+ ago\)/(AGO)/' |
    awk -F'|' -v OFS='|' '{ $5 = ""; print }' | sed -E 's/\|\|/|/; s/\|$//' | sort
}

# watches_open sim|proxy RESOURCE: watches open on that server (/_sim/stats, /metrics).
watches_open() {
  if [ "$1" = sim ]; then
    sim_api GET /_sim/stats | jq -r --arg r "$2" '.resources[$r].watches_open // 0'
  else
    curl -s "$PROXY/metrics" | awk -v r="$2" '$0 ~ "^kwp_watches_open\\{resource=\"[^\"]*" r "\"\\}" { print $2; f = 1 } END { if (!f) print 0 }'
  fi
}

# wait_watches sim|proxy RESOURCE N: until N watches of RESOURCE are open (15 s bound).
wait_watches() {
  local i
  for ((i = 0; i < 300; i++)); do
    [ "$(watches_open "$1" "$2")" -ge "$3" ] && return 0
    sleep 0.05
  done
  return 1
}

check_pods() {
  local label=$1 url=$2 out want got age_ok hdr
  # ---- get pods --------------------------------------------------------------------
  out="$TMP/$label-get.txt"
  kc "$url" "$label" get pods >"$out" 2>"$TMP/$label-get.err"
  hdr=$(head -n 1 "$out" | tr -s ' ')
  want=$(expected_rows 0)
  got=$(rows "$out")
  age_ok=$(tail -n +2 "$out" | awk '$NF !~ /^[0-9]+[smhdy]([0-9]+[smh])?$/ { bad = 1 } END { print bad ? 0 : 1 }')
  verdict "[$label] kubectl get pods: NAME READY STATUS RESTARTS AGE, rows as printPod" \
    "$([ "$hdr" = "NAME READY STATUS RESTARTS AGE" ] && [ "$got" = "$want" ] && [ "$age_ok" = 1 ] && echo 1)" \
    "header: $hdr" "diff (expected vs kubectl): $(diff <(echo "$want") <(echo "$got") | head -n 12)" \
    "stderr: $(head -c 400 "$TMP/$label-get.err")"
  got=$(grep '^crashy ' "$out" | sed -E 's/  +/|/g')
  verdict "[$label] CrashLoopBackOff pod: 1/2, CrashLoopBackOff, 3 (7m.. ago)" \
    "$(echo "$got" | grep -Eq '^crashy\|1/2\|CrashLoopBackOff\|3 \(7m[0-9]*s? ago\)\|[0-9]+s$' && echo 1)" "row: $got"

  # ---- -o wide -----------------------------------------------------------------------
  out="$TMP/$label-wide.txt"
  kc "$url" "$label" get pods -o wide >"$out" 2>&1
  hdr=$(head -n 1 "$out" | tr -s ' ')
  want=$(expected_rows 1)
  got=$(rows "$out")
  verdict "[$label] kubectl get pods -o wide: + IP NODE NOMINATED NODE READINESS GATES" \
    "$([ "$hdr" = "NAME READY STATUS RESTARTS AGE IP NODE NOMINATED NODE READINESS GATES" ] && [ "$got" = "$want" ] && echo 1)" \
    "header: $hdr" "diff: $(diff <(echo "$want") <(echo "$got") | head -n 12)"

  # ---- -o yaml (plain JSON from the server, converted by kubectl) ----------------------
  out="$TMP/$label-yaml.txt"
  kc "$url" "$label" get pods -o yaml >"$out" 2>&1
  want=$(sim_api GET /api/v1/namespaces/default/pods | jq -r '.items[] | "\(.metadata.name) \(.metadata.resourceVersion) \(.spec.nodeName // "")"' | sort)
  got=$(/usr/bin/python3 -c 'import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
assert d["kind"] == "List", d["kind"]
for i in d["items"]:
    assert i["kind"] == "Pod" and i["apiVersion"] == "v1"
    print(i["metadata"]["name"], i["metadata"]["resourceVersion"], i["spec"].get("nodeName", ""))' "$out" 2>&1 | sort)
  verdict "[$label] kubectl get pods -o yaml: every pod, kind Pod, same resourceVersions" \
    "$([ "$got" = "$want" ] && echo 1)" "diff: $(diff <(echo "$want") <(echo "$got") | head -n 12)"

  # ---- -w and --watch-only ----------------------------------------------------------------
  local probe="probe-$label" w_pid wo_pid i
  kc "$url" "$label" get pods -w >"$TMP/$label-w.txt" 2>&1 &
  w_pid=$!
  kc "$url" "$label" get pods --watch-only >"$TMP/$label-wo.txt" 2>&1 &
  wo_pid=$!
  wait_watches "$label" pods 2 # kubectl lists, then watches: wait for both watches
  sim_api POST /api/v1/namespaces/default/pods \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$probe\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}" >/dev/null
  sim_api GET "/api/v1/namespaces/default/pods/$probe" |
    jq -c '.status = {phase: "Running", containerStatuses: [{name: "c", ready: true, restartCount: 0, state: {running: {}}}]}' >"$TMP/$probe.json"
  sim_api PUT "/api/v1/namespaces/default/pods/$probe/status" "$(cat "$TMP/$probe.json")" >/dev/null
  for ((i = 0; i < 200; i++)); do
    grep -q "^$probe .*Running" "$TMP/$label-w.txt" && grep -q "^$probe .*Running" "$TMP/$label-wo.txt" && break
    sleep 0.05
  done
  stop_pid "$w_pid" 5
  stop_pid "$wo_pid" 5
  local n_list n_pods
  n_pods=$(sim_api GET /api/v1/namespaces/default/pods | jq '[.items[] | select(.metadata.name != "'"$probe"'")] | length')
  n_list=$(tail -n +2 "$TMP/$label-w.txt" | grep -vc "^$probe ")
  got=$(grep "^$probe " "$TMP/$label-w.txt" | sed -E 's/  +/|/g; s/\|[0-9]+s$//')
  verdict "[$label] kubectl get pods -w: the list, then the new pod's rows (0/1, then 1/1 Running)" \
    "$([ "$(head -n 1 "$TMP/$label-w.txt" | tr -s ' ')" = "NAME READY STATUS RESTARTS AGE" ] && [ "$n_list" = "$n_pods" ] &&
      [ "$(printf '%s\n' "$got" | head -n 1)" = "$probe|0/1|0" ] && [ "$(printf '%s\n' "$got" | tail -n 1)" = "$probe|1/1|Running|0" ] && echo 1)" \
    "initial rows $n_list (server has $n_pods)" "probe rows: $got" "output: $(head -c 900 "$TMP/$label-w.txt")"
  got=$(tail -n +2 "$TMP/$label-wo.txt" | sed -E 's/  +/|/g; s/\|[0-9]+s$//')
  verdict "[$label] kubectl get pods --watch-only: header, then only the new pod's rows" \
    "$([ "$(head -n 1 "$TMP/$label-wo.txt" | tr -s ' ')" = "NAME READY STATUS RESTARTS AGE" ] &&
      [ "$(printf '%s\n' "$got" | grep -vc "^$probe|")" = 0 ] && [ "$(printf '%s\n' "$got" | tail -n 1)" = "$probe|1/1|Running|0" ] && echo 1)" \
    "output: $(head -c 900 "$TMP/$label-wo.txt")"
  sim_api DELETE "/api/v1/namespaces/default/pods/$probe" >/dev/null
}

# ---- the other kinds: objects created with kubectl ---------------------------------------

# kubectl create sends protobuf for configmaps, secrets and namespaces (the simulator decodes
# those); the rest go in as a manifest (JSON on the wire).
kc "$SIM" setup create configmap kwp-cm --from-literal=a=1 --from-literal=b=2 >"$TMP/create.log" 2>&1
kc "$SIM" setup label configmap kwp-cm kwp-test=1 >>"$TMP/create.log" 2>&1
kc "$SIM" setup create secret generic kwp-sec --from-literal=user=u >>"$TMP/create.log" 2>&1
kc "$SIM" setup label secret kwp-sec kwp-test=1 >>"$TMP/create.log" 2>&1
kc "$SIM" setup create namespace kwp-ns >>"$TMP/create.log" 2>&1
cat >"$TMP/objects.yaml" <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: kwp-svc, labels: {kwp-test: "1"}}
spec:
  type: NodePort
  clusterIP: 10.96.0.10
  clusterIPs: [10.96.0.10]
  selector: {app: kwp-web}
  ports: [{port: 80, nodePort: 30080}, {port: 53, protocol: UDP, nodePort: 30053}]
---
apiVersion: v1
kind: Service
metadata: {name: kwp-lb, labels: {kwp-test: "1"}}
spec:
  type: LoadBalancer
  clusterIP: 10.96.0.11
  clusterIPs: [10.96.0.11]
  ports: [{port: 443, nodePort: 30443, protocol: TCP}]
---
apiVersion: v1
kind: Node
metadata:
  name: kwp-node
  labels: {kwp-test: "1", node-role.kubernetes.io/control-plane: ""}
spec: {unschedulable: true}
status:
  conditions: [{type: Ready, status: "True"}]
  addresses: [{type: InternalIP, address: 10.1.2.3}, {type: ExternalIP, address: 203.0.113.7}]
  nodeInfo: {kubeletVersion: v1.34.1, osImage: Debian GNU/Linux 12 (bookworm),
             kernelVersion: 6.1.0-28-amd64, containerRuntimeVersion: containerd://1.7.24}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: kwp-sa, labels: {kwp-test: "1"}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: kwp-web, labels: {kwp-test: "1"}}
spec:
  replicas: 3
  selector: {matchLabels: {app: kwp-web}}
  template:
    metadata: {labels: {app: kwp-web}}
    spec: {containers: [{name: web, image: "nginx:1.27"}, {name: side, image: busybox}]}
status: {replicas: 3, updatedReplicas: 3, readyReplicas: 2, availableReplicas: 2}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: kwp-rs, labels: {kwp-test: "1"}}
spec:
  replicas: 2
  selector:
    matchLabels: {app: kwp-rs}
    matchExpressions: [{key: tier, operator: In, values: [b, a]}]
  template:
    metadata: {labels: {app: kwp-rs, tier: a}}
    spec: {containers: [{name: c, image: nginx}]}
status: {replicas: 2, readyReplicas: 1}
---
apiVersion: batch/v1
kind: Job
metadata: {name: kwp-job, labels: {kwp-test: "1"}}
spec:
  completions: 2
  manualSelector: true
  selector: {matchLabels: {job: kwp-job}}
  template:
    metadata: {labels: {job: kwp-job}}
    spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}
status:
  succeeded: 1
  startTime: "2024-01-01T00:00:00Z"
  completionTime: "2024-01-01T00:01:30Z"
  conditions: [{type: Complete, status: "True"}]
EOF
kc "$SIM" setup create --validate=false -f "$TMP/objects.yaml" >>"$TMP/create.log" 2>&1
verdict "kubectl creates the objects of every kind in the simulator" \
  "$([ "$(grep -c -E ' (created|labeled)$' "$TMP/create.log")" = 12 ] && echo 1)" \
  "$(cat "$TMP/create.log")"

# table LABEL URL WANT_HEADER WANT_ROWS ARGS...: kubectl get ARGS prints WANT_HEADER (spaces
# squeezed) and WANT_ROWS (cells joined by "|", one row per line, the AGE cell as AGE).
table() {
  local label=$1 url=$2 want_hdr=$3 want_rows=$4 out hdr got
  shift 4
  out="$TMP/$label-$(echo "$*" | tr -c 'a-z0-9' '_').txt"
  kc "$url" "$label" get "$@" >"$out" 2>&1
  hdr=$(head -n 1 "$out" | tr -s ' ')
  got=$(awk -v hdr="$(head -n 1 "$out")" '
    BEGIN { n = split(hdr, h, /  +/); for (i = 1; i <= n; i++) if (h[i] == "AGE") age = i }
    NR > 1 { n = split($0, c, /  +/); row = ""
             for (i = 1; i <= n; i++) {
               v = c[i]
               if (i == age) v = v ~ /^[0-9]+[smhdy]([0-9]+[smh])?$/ ? "AGE" : "BAD-AGE:" v
               row = row (i > 1 ? "|" : "") v
             }
             print row }' "$out")
  verdict "[$label] kubectl get $*: $want_hdr" \
    "$([ "$hdr" = "$want_hdr" ] && [ "$got" = "$want_rows" ] && echo 1)" \
    "header: $hdr" "rows: $got" "expected: $want_rows" "output: $(head -c 600 "$out")"
}

check_kinds() {
  local label=$1 url=$2
  table "$label" "$url" "NAME DATA AGE" "kwp-cm|2|AGE" configmaps -l kwp-test=1
  table "$label" "$url" "NAME TYPE DATA AGE" "kwp-sec|Opaque|1|AGE" secrets -l kwp-test=1
  table "$label" "$url" "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE SELECTOR" \
    "kwp-lb|LoadBalancer|10.96.0.11|<pending>|443:30443/TCP|AGE|<none>
kwp-svc|NodePort|10.96.0.10|<none>|80:30080/TCP,53:30053/UDP|AGE|app=kwp-web" services -l kwp-test=1 -o wide
  table "$label" "$url" "NAME STATUS AGE" "kwp-ns|Active|AGE" namespaces kwp-ns
  table "$label" "$url" \
    "NAME STATUS ROLES AGE VERSION INTERNAL-IP EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME" \
    "kwp-node|Ready,SchedulingDisabled|control-plane|AGE|v1.34.1|10.1.2.3|203.0.113.7|Debian GNU/Linux 12 (bookworm)|6.1.0-28-amd64|containerd://1.7.24" \
    nodes -l kwp-test=1 -o wide
  table "$label" "$url" "NAME SECRETS AGE" "kwp-sa|0|AGE" serviceaccounts -l kwp-test=1
  table "$label" "$url" "NAME READY UP-TO-DATE AVAILABLE AGE" "kwp-web|2/3|3|2|AGE" \
    deployments -l kwp-test=1
  table "$label" "$url" "NAME READY UP-TO-DATE AVAILABLE AGE CONTAINERS IMAGES SELECTOR" \
    "kwp-web|2/3|3|2|AGE|web,side|nginx:1.27,busybox|app=kwp-web" deployments -l kwp-test=1 -o wide
  table "$label" "$url" "NAME DESIRED CURRENT READY AGE" "kwp-rs|2|2|1|AGE" replicasets -l kwp-test=1
  table "$label" "$url" "NAME STATUS COMPLETIONS DURATION AGE" "kwp-job|Complete|1/2|90s|AGE" \
    jobs -l kwp-test=1
}

check_pods sim "$SIM"
check_kinds sim "$SIM"
check_pods proxy "$PROXY"
check_kinds proxy "$PROXY"

# ---- a configmap watch printed by the proxy's cache ----------------------------------------
kc "$PROXY" proxy get configmaps -l kwp-w=1 -w >"$TMP/cm-w.txt" 2>&1 &
cm_w=$!
wait_watches proxy configmaps 1
sim_api POST /api/v1/namespaces/default/configmaps \
  '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kwp-cm-w","labels":{"kwp-w":"1"}},"data":{"k":"v"}}' >/dev/null
for ((i = 0; i < 200; i++)); do
  grep -q '^kwp-cm-w ' "$TMP/cm-w.txt" && break
  sleep 0.05
done
stop_pid "$cm_w" 5
got=$(grep '^kwp-cm-w ' "$TMP/cm-w.txt" | sed -E 's/  +/|/g')
verdict "[proxy] kubectl get configmaps -w: NAME DATA AGE, the new configmap's row from the cache" \
  "$([ "$(head -n 1 "$TMP/cm-w.txt" | tr -s ' ')" = "NAME DATA AGE" ] && echo "$got" | grep -Eq '^kwp-cm-w\|1\|[0-9]+s$' && echo 1)" \
  "output: $(head -c 600 "$TMP/cm-w.txt")"

# The watches kubectl opened through the proxy were served from its cache.
for r in pods configmaps; do
  served=$(curl -s "$PROXY/metrics" | awk -v r="$r" '$0 ~ "^kwp_frames_sent_total\\{resource=\"[^\"]*" r "\"\\}" { print $2 }' | head -n 1)
  verdict "kwp proxy served kubectl's $r Table watch frames itself (kwp_frames_sent_total > 0)" \
    "$([ "${served:-0}" != 0 ] && echo 1)" "kwp_frames_sent_total: ${served:-absent}"
done
