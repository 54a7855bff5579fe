#!/usr/bin/env bash
# test_node_client.sh - a real @kubernetes/client-node 2.0.1 informer (TOOLCHAIN 5.4; installed
# in tests/clients/node by scripts/setup.sh with `npm ci`) through `kwp proxy` in front of
# `kwp sim`, both on 127.0.0.1 port 0. tests/clients/node/informer.mjs runs the informer on
# /api/v1/namespaces/default/pods and keeps what it holds in a state file; this script makes
# the changes and compares that state with the simulator's pods ([name, uid, resourceVersion]):
#   1. after the initial list;
#   2. after creates, updates and deletes made through the proxy (delivered by the watch: no
#      new list);
#   3. after an upstream 410, made deterministic: kwp is frozen (SIGSTOP), the simulator ends
#      its pods watch (POST /_sim/drop-watches), takes creates, a patch and a delete that
#      kwp's stream never carries and compacts past them (POST /_sim/compact); kwp is thawed
#      (SIGCONT), its re-watch gets 410 and it relists once (kwp_relists_total, the
#      simulator's pods lists +1 and watches +2 in /_sim/stats, kwp_upstream_events_total
#      unchanged), ends the informer's watch, answers its re-watch with 410
#      (kwp_too_old_total +1) and client-node relists once (its list function is called
#      again). The frozen window's writes reach the informer only through that relist;
#   4. after more changes once the informer watches again.
#
# Environment: KWP_BIN (default build/kwp), NODE (default node). Prints PASS/FAIL lines and
# ends with "N passed, N failed"; exits non-zero on any failure. Only processes this script
# started are signalled, by PID.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KWP_BIN="${KWP_BIN:-build/kwp}"
NODE="${NODE:-node}"
NS=default

INF_PID=""
FROZEN_PID="" # kwp proxy while SIGSTOPped (section 3): thawed at exit
TMP="$(mktemp -d "${TMPDIR:-/tmp}/kwp-node-XXXXXX")"
STATE="$TMP/informer.json"

# ok, bad, stop_pid, start_sim_proxy, kwp_finish
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# a proxy left frozen (SIGSTOP) by a failed section 3 is thawed before anything stops; the
# informer stops before the servers it talks to
kwp_before_finish() {
  if [ -n "$FROZEN_PID" ]; then
    kill -CONT "$FROZEN_PID"
  fi
}
STOP_FIRST=(INF_PID)
trap kwp_finish EXIT

# req METHOD URL [JSON [CONTENT_TYPE]]: body on stdout, status code in $TMP/code.
req() {
  local args=(-sS --max-time 10 -X "$1" -H 'Accept: application/json' -o "$TMP/body"
    -w '%{http_code}')
  if [ $# -ge 3 ]; then
    args+=(-H "Content-Type: ${4:-application/json}" --data "$3")
  fi
  curl "${args[@]}" "$2" >"$TMP/code" 2>>"$TMP/curl.err"
  cat "$TMP/body"
}

metric() { # metric NAME: the proxy's NAME{resource="pods"} (-1 when absent)
  curl -s --max-time 5 "$PROXY/metrics" |
    awk -v m="$1{resource=\"pods\"}" '$1 == m { v = $2 } END { print (v == "" ? -1 : v) }'
}

sim_reads() { # how many LISTs sim_objects made on the simulator
  wc -l <"$TMP/sim-lists" 2>/dev/null || echo 0
}

sim_stat() { # sim_stat FIELD: the simulator's /_sim/stats resources.pods.FIELD (-1 when absent)
  curl -s --max-time 5 "$SIM/_sim/stats" | jq -r ".resources.pods.$1 // -1"
}

# wait_metric SECONDS NAME OP VALUE, wait_sim SECONDS FIELD OP VALUE: wait (bounded) until
# `[ metric NAME OP VALUE ]` (or sim_stat FIELD) holds; status 0 if it does.
wait_metric() { wait_cond "$1" metric "${@:2}"; }
wait_sim() { wait_cond "$1" sim_stat "${@:2}"; }
wait_cond() {
  local deadline=$((SECONDS + $1)) get="$2" name="$3" op="$4" want="$5"
  while ! [ "$("$get" "$name")" "$op" "$want" ]; do
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 0.1
  done
}

# The simulator's pods in $NS, as informer.mjs writes its objects: [[name, uid, rv], ...].
# Each call is one LIST on the simulator, counted in $TMP/sim-lists (a line each) so that its
# pods "lists" counter can be accounted for exactly.
sim_objects() {
  echo >>"$TMP/sim-lists"
  curl -s --max-time 5 "$SIM/api/v1/namespaces/$NS/pods" |
    jq -c '[.items[] | [.metadata.name, .metadata.uid, .metadata.resourceVersion]] | sort'
}

inf() { jq -c "$1" "$STATE" 2>/dev/null; }

# converge SECONDS: waits until the informer holds exactly the simulator's pods. Sets WANT/GOT.
converge() {
  local deadline=$((SECONDS + $1))
  while :; do
    WANT="$(sim_objects)"
    GOT="$(inf .objects)"
    [ -n "$WANT" ] && [ "$GOT" = "$WANT" ] && return 0
    [ "$SECONDS" -ge "$deadline" ] && return 1
    kill -0 "$INF_PID" 2>/dev/null || return 1
    sleep 0.1
  done
}

diff_objects() {
  echo "informer: $(inf '{lists,connects,adds,updates,deletes,errors,rv}')"
  echo "only in sim:      $(jq -nc --argjson a "${WANT:-[]}" --argjson b "${GOT:-[]}" '$a - $b')"
  echo "only in informer: $(jq -nc --argjson a "${WANT:-[]}" --argjson b "${GOT:-[]}" '$b - $a')"
}

pod_json() {
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","labels":{"app":"kwp-node"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}' "$1"
}

# ---- prerequisites and processes -------------------------------------------------------------
if [ ! -x "$KWP_BIN" ]; then
  bad "kwp binary present" "$KWP_BIN is not executable (set KWP_BIN)"
  exit 1
fi
# shellcheck disable=SC2016 # JavaScript, not shell
if ! ver="$(cd "$HERE/node" && "$NODE" --input-type=module -e '
    import * as fs from "node:fs";
    await import("@kubernetes/client-node");
    const v = (p) => JSON.parse(fs.readFileSync(`node_modules/${p}/package.json`)).version;
    console.log(process.version, v("@kubernetes/client-node"), v("undici"));' 2>&1)"; then
  bad "@kubernetes/client-node installed in tests/clients/node (scripts/setup.sh runs npm ci there)" \
    "$(printf '%s' "$ver" | head -n 3)"
  exit 1
fi
ok "node, @kubernetes/client-node, undici: $ver"

t0=$SECONDS
start_sim_proxy --objects 10 --namespaces 2 --seed 5 --churn 0 --compaction-interval 0 -- \
  --resources pods --history-min 5 --history-max 5 --history-window 0

# ---- 1. initial list -------------------------------------------------------------------------
(cd "$HERE/node" && exec "$NODE" informer.mjs "$PROXY" "$STATE" 200) \
  >"$TMP/informer.out" 2>"$TMP/informer.err" &
INF_PID=$!
deadline=$((SECONDS + 15))
while [ "$SECONDS" -lt "$deadline" ] && [ "$(metric kwp_watches_open)" -lt 1 ]; do
  kill -0 "$INF_PID" 2>/dev/null || break
  sleep 0.1
done
if converge 10 && [ "$(inf .lists)" = 1 ] && [ "$(metric kwp_watches_open)" = 1 ]; then
  ok "the informer lists the simulator's $(jq length <<<"$WANT") pods and watches through kwp"
else
  bad "the informer lists the simulator's pods and watches through kwp" \
    "kwp_watches_open $(metric kwp_watches_open)" "$(diff_objects)" \
    "informer stderr: $(tail -c 1000 "$TMP/informer.err")"
  exit 1
fi

# ---- 2. creates, updates, deletes through the proxy ------------------------------------------
mapfile -t seeded < <(jq -r '.[][0]' <<<"$WANT")
lists0=$(inf .lists)
adds0=$(inf .adds)
upd0=$(inf .updates)
del0=$(inf .deletes)
codes=""
P="$PROXY/api/v1/namespaces/$NS/pods"
for n in node-a node-b node-c; do
  req POST "$P" "$(pod_json "$n")" >/dev/null
  codes+="$(cat "$TMP/code") "
done
req PATCH "$P/node-a" '{"metadata":{"labels":{"step":"1"}}}' application/merge-patch+json >/dev/null
codes+="$(cat "$TMP/code") "
req PATCH "$P/${seeded[0]}" '{"metadata":{"labels":{"touched":"yes"}}}' \
  application/strategic-merge-patch+json >/dev/null
codes+="$(cat "$TMP/code") "
req DELETE "$P/node-b" >/dev/null
codes+="$(cat "$TMP/code") "
req DELETE "$P/${seeded[1]}" >/dev/null
codes+="$(cat "$TMP/code")"
if [ "$codes" = "201 201 201 200 200 200 200" ]; then
  ok "3 creates, 2 patches, 2 deletes through kwp answered 201/200"
else
  bad "3 creates, 2 patches, 2 deletes through kwp answered 201/200" "codes: $codes" \
    "last body: $(head -c 500 "$TMP/body")"
fi
if converge 10; then
  ok "the informer converges to the simulator's pods after creates, updates and deletes"
else
  bad "the informer converges to the simulator's pods after creates, updates and deletes" \
    "$(diff_objects)"
fi
d_add=$(($(inf .adds) - adds0))
d_upd=$(($(inf .updates) - upd0))
d_del=$(($(inf .deletes) - del0))
if [ "$(inf .lists)" = "$lists0" ] && [ "$d_add" = 3 ] && [ "$d_upd" = 2 ] && [ "$d_del" = 2 ]; then
  ok "... through its watch: +3 add, +2 update, +2 delete callbacks, no new list"
else
  bad "... through its watch: +3 add, +2 update, +2 delete callbacks, no new list" \
    "callbacks +$d_add add, +$d_upd update, +$d_del delete; lists $lists0 -> $(inf .lists)" \
    "$(diff_objects)"
fi

# ---- 3. an upstream 410 makes kwp relist, and the informer relist -----------------------------
# Deterministic: kwp is frozen (SIGSTOP) so it cannot re-watch; the simulator ends its pods
# watch (POST /_sim/drop-watches), takes writes kwp's stream never carries and compacts past
# them; kwp is thawed (SIGCONT), re-watches from its last rv and gets 410.
wait_metric 10 kwp_upstream_watches_open -eq 1
wait_sim 10 watches_open -eq 1
krv0=$(metric kwp_resource_version)
relists0=$(metric kwp_relists_total)
too_old0=$(metric kwp_too_old_total)
up_events0=$(metric kwp_upstream_events_total)
up_watches0=$(metric kwp_upstream_watch_requests_total)
up_lists0=$(metric kwp_upstream_list_requests_total)
forwarded0=$(metric kwp_forwarded_total)
sim_lists0=$(($(sim_stat lists) - $(sim_reads)))
sim_watches0=$(sim_stat watches)
lists0=$(inf .lists)
PROXY_PID="${KWP_PIDS[1]}"
rev=0
compacted=""

kill -STOP "$PROXY_PID"
FROZEN_PID="$PROXY_PID"
dropped="$(req POST "$SIM/_sim/drop-watches?resource=pods")"
codes="$(cat "$TMP/code") "
if wait_sim 5 watches_open -eq 0; then
  S="$SIM/api/v1/namespaces/$NS/pods"
  for n in node-relist-1 node-relist-2 node-relist-3; do
    req POST "$S" "$(pod_json "$n")" >/dev/null
    codes+="$(cat "$TMP/code") "
  done
  req PATCH "$S/node-a" '{"metadata":{"labels":{"step":"frozen"}}}' \
    application/merge-patch+json >/dev/null
  codes+="$(cat "$TMP/code") "
  req DELETE "$S/${seeded[2]}" >/dev/null
  codes+="$(cat "$TMP/code") "
  rev="$(curl -s --max-time 5 "$SIM/_sim/stats" | jq -r .revision)"
  compacted="$(req POST "$SIM/_sim/compact?revision=$rev" | jq -r .compacted)"
  codes+="$(cat "$TMP/code")"
fi
# kwp started no watch while frozen: the one it has at SIGCONT is the ended one.
sim_watches_frozen=$(sim_stat watches)
sim_open_frozen=$(sim_stat watches_open)
kill -CONT "$PROXY_PID"
FROZEN_PID=""
if [ "$codes" = "200 201 201 201 200 200 200" ] && [ "$dropped" = '{"resources":1}' ] &&
  [ "$compacted" = "$rev" ] && [ "$rev" -gt "$krv0" ] &&
  [ "$sim_watches_frozen" = "$sim_watches0" ] && [ "$sim_open_frozen" = 0 ]; then
  ok "kwp frozen; the simulator ended its watch, took 3 creates, a patch, a delete and compacted to $rev (kwp at $krv0)"
else
  bad "kwp frozen; the simulator ended its watch, took 3 creates, a patch, a delete and compacted past kwp's rv" \
    "codes (drop, 3 creates, patch, delete, compact): $codes; drop-watches answer: $dropped" \
    "compacted '$compacted' at revision $rev, kwp rv $krv0" \
    "simulator pods watches $sim_watches0 -> $sim_watches_frozen, watches_open $sim_open_frozen" \
    "(while kwp is frozen: no new watch, none open)"
fi

wait_metric 15 kwp_relists_total -gt "$relists0"
wait_metric 10 kwp_upstream_watches_open -eq 1
relists1=$(metric kwp_relists_total)
up_lists1=$(metric kwp_upstream_list_requests_total)
up_watches1=$(metric kwp_upstream_watch_requests_total)
sim_watches1=$(sim_stat watches)
if [ "$relists1" = $((relists0 + 1)) ] && [ "$up_lists1" = $((up_lists0 + 1)) ] &&
  [ "$up_watches1" = $((up_watches0 + 2)) ] && [ "$sim_watches1" = $((sim_watches0 + 2)) ] &&
  grep -q 'code=410 .*watch expired, relisting' "$TMP/proxy.log"; then
  ok "kwp's re-watch got 410 and kwp relisted once (kwp_relists_total $relists0 -> $relists1, simulator pods watches $sim_watches0 -> $sim_watches1: the 410, then the new watch)"
else
  bad "kwp's re-watch got 410 and kwp relisted once" \
    "kwp_relists_total $relists0 -> $relists1, kwp_upstream_list_requests_total $up_lists0 -> $up_lists1 (want +1 each)" \
    "kwp_upstream_watch_requests_total $up_watches0 -> $up_watches1, simulator pods watches $sim_watches0 -> $sim_watches1 (want +2: the 410, then the new watch)" \
    "proxy log: $(grep -E 'reflector' "$TMP/proxy.log" | tail -n 5)"
fi
up_events1=$(metric kwp_upstream_events_total)
if [ "$up_events1" = "$up_events0" ]; then
  ok "the frozen window's writes reached kwp only through its relist (kwp_upstream_events_total stays $up_events0)"
else
  bad "the frozen window's writes reached kwp only through its relist" \
    "kwp_upstream_events_total $up_events0 -> $up_events1"
fi
if converge 15; then
  ok "the informer converges to the simulator's pods after the relist ($(jq length <<<"$WANT") pods: names, uids, resourceVersions)"
else
  bad "the informer converges to the simulator's pods after the relist (15 s)" "$(diff_objects)"
fi
lists1=$(inf .lists)
too_old1=$(metric kwp_too_old_total)
forwarded1=$(metric kwp_forwarded_total)
sim_lists1=$(($(sim_stat lists) - $(sim_reads)))
if [ "$lists1" = $((lists0 + 1)) ] && [ "$too_old1" = $((too_old0 + 1)) ] &&
  [ "$forwarded1" = $((forwarded0 + 1)) ] && [ "$sim_lists1" = $((sim_lists0 + 2)) ]; then
  ok "client-node relisted once after kwp's 410 (lists $lists0 -> $lists1, kwp_too_old_total $too_old0 -> $too_old1; simulator pods lists not made by this script +2: kwp's relist and the informer's consistent LIST, forwarded)"
else
  bad "client-node relisted once after kwp's 410" "lists $lists0 -> $lists1 (want +1)" \
    "kwp_too_old_total $too_old0 -> $too_old1 (want +1)" \
    "kwp_forwarded_total $forwarded0 -> $forwarded1 (want +1: client-node's LIST has no resourceVersion, a consistent read kwp forwards)" \
    "simulator pods lists not made by this script $sim_lists0 -> $sim_lists1 (want +2: kwp's relist, the forwarded LIST)" "$(diff_objects)"
fi

# ---- 4. and keeps watching afterwards ---------------------------------------------------------
wait_metric 10 kwp_watches_open -ge 1
lists1=$(inf .lists)
req POST "$P" "$(pod_json node-after)" >/dev/null
codes="$(cat "$TMP/code") "
req PATCH "$P/node-a" '{"metadata":{"labels":{"step":"2"}}}' application/merge-patch+json >/dev/null
codes+="$(cat "$TMP/code") "
req DELETE "$P/node-c" >/dev/null
codes+="$(cat "$TMP/code")"
if [ "$codes" = "201 200 200" ] && converge 10 && [ "$(inf .lists)" = "$lists1" ]; then
  ok "after the relist the informer's watch delivers a create, a patch and a delete (no new list)"
else
  bad "after the relist the informer's watch delivers a create, a patch and a delete (no new list)" \
    "codes: $codes; lists $lists1 -> $(inf .lists); kwp_watches_open $(metric kwp_watches_open)" \
    "$(diff_objects)"
fi

echo "informer: $(inf '{lists,connects,adds,updates,deletes,errors}')"
echo "client part took $((SECONDS - t0)) s"
