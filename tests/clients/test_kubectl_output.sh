#!/usr/bin/env bash
# test_kubectl_output.sh - what the real kubectl prints through kwp (issue 4, content
# negotiation): `get pods` (server-side Table: NAME READY STATUS RESTARTS AGE), `-o wide`,
# `-o yaml`, `-w` and `--watch-only`, first against `kwp sim`, then through `kwp proxy` in
# front of it (LIST forwarded, WATCH served from the proxy's cache). Each row is checked
# against the pod JSON the simulator holds: READY, STATUS and RESTARTS as printPod computes
# them for these pods (one is put in CrashLoopBackOff with 3 restarts 7 minutes ago).
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

start_sim_proxy --objects 12 --namespaces 2 --seed 11 --churn 0 -- --resources pods

# sim_api METHOD PATH [BODY]: the simulator's own view (neutral User-Agent: compact JSON).
sim_api() {
  curl -sS --max-time 10 -A kwp-output-test -H 'Accept: application/json' -X "$1" \
    ${3:+-H 'Content-Type: application/json' --data "$3"} "$SIM$2"
}

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

# rows FILE: kubectl's table rows as NAME|READY|... (columns are separated by 2+ spaces;
# AGE is dropped, the "(7m1s ago)" of RESTARTS is normalised to "(AGO)").
rows() {
  tail -n +2 "$1" | sed -E 's/  +/|/g; s/\([0-9a-z]+ ago\)/(AGO)/' |
    awk -F'|' -v OFS='|' '{ $5 = ""; print }' | sed -E 's/\|\|/|/; s/\|$//' | sort
}

# watches_open sim|proxy: pod watches open on that server (/_sim/stats, /metrics).
watches_open() {
  if [ "$1" = sim ]; then
    sim_api GET /_sim/stats | jq -r '.resources.pods.watches_open // 0'
  else
    curl -s "$PROXY/metrics" | awk '/^kwp_watches_open\{resource="[^"]*pods"\}/ { print $2; f = 1 } END { if (!f) print 0 }'
  fi
}

kc() {
  timeout 30 "$KUBECTL" --server "$1" --cache-dir "$TMP/cache-$2" --request-timeout=20s \
    -n default "${@:3}"
}

check_target() {
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
  for ((i = 0; i < 300; i++)); do # kubectl lists, then watches: wait for both watches
    [ "$(watches_open "$label")" -ge 2 ] && break
    sleep 0.05
  done
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

check_target sim "$SIM"
check_target proxy "$PROXY"

# The watches kubectl opened through the proxy were served from its cache.
served=$(curl -s "$PROXY/metrics" | awk '/^kwp_frames_sent_total\{resource="[^"]*pods"\}/ { print $2 }' | head -n 1)
verdict "kwp proxy served kubectl's Table watch frames itself (kwp_frames_sent_total > 0)" \
  "$([ "${served:-0}" != 0 ] && echo 1)" "kwp_frames_sent_total: ${served:-absent}"
