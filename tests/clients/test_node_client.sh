#!/usr/bin/env bash
# test_node_client.sh - a real @kubernetes/client-node 2.0.1 informer (TOOLCHAIN 5.4; installed
# in tests/clients/node by scripts/setup.sh with `npm ci`) through `kwp proxy` in front of
# `kwp sim`, both on 127.0.0.1 port 0. tests/clients/node/informer.mjs runs the informer on
# /api/v1/namespaces/default/pods and keeps what it holds in a state file; this script makes
# the changes and compares that state with the simulator's pods ([name, uid, resourceVersion]):
#   1. after the initial list;
#   2. after creates, updates and deletes made through the proxy (delivered by the watch: no
#      new list);
#   3. after an upstream 410: creates and compactions sent to the simulator pipelined on one
#      connection, so that a create's event is compacted before the proxy's upstream watch
#      reads it (a race the test retries, up to 10 times, until kwp_relists_total moves); the
#      simulator ends that watch, kwp's re-watch gets 410 and kwp relists, ends the informer's
#      watch, answers its re-watch with 410 (kwp_too_old_total) and client-node relists (its
#      list function is called again). The pod whose event was compacted reached kwp only
#      through its relist, and the informer only through its own;
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

pass=0
fail=0
KWP_PIDS=()
KWP_NAMES=()
DRAIN_PIDS=()
INF_PID=""
TMP="$(mktemp -d "${TMPDIR:-/tmp}/kwp-node-XXXXXX")"
STATE="$TMP/informer.json"

# ok, bad, stop_pid, start_kwp, kwp_finish
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# the informer stops before the servers it talks to
kwp_before_finish() {
  if [ -n "$INF_PID" ]; then
    stop_pid "$INF_PID" 5
  fi
}
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

# The simulator's pods in $NS, as informer.mjs writes its objects: [[name, uid, rv], ...].
sim_objects() {
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
start_kwp sim sim --listen 127.0.0.1:0 --objects 10 --namespaces 2 --seed 5 --churn 0 \
  --compaction-interval 0
SIM="$URL"
start_kwp proxy proxy --upstream "$SIM" --listen 127.0.0.1:0 --resources pods \
  --history-min 5 --history-max 5 --history-window 0
PROXY="$URL"
code=""
deadline=$((SECONDS + 10))
while [ "$SECONDS" -lt "$deadline" ]; do
  code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$PROXY/readyz")"
  [ "$code" = 200 ] && break
  sleep 0.1
done
if [ "$code" = 200 ]; then
  ok "kwp sim at $SIM, kwp proxy at $PROXY ready"
else
  bad "kwp proxy /readyz 200 within 10 s" "last code $code" "$(tail -n 20 "$TMP/proxy.log")"
  exit 1
fi

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
relists0=$(metric kwp_relists_total)
too_old0=$(metric kwp_too_old_total)
lists0=$(inf .lists)
hostport="${SIM#http://}"
forced=""
for i in 1 2 3 4 5 6 7 8 9 10; do
  # Three (create, compact) pairs in one write: each is a chance that the simulator compacts
  # before its worker thread resumes the proxy's watch.
  r=""
  for j in 1 2 3; do
    body="$(pod_json "node-relist-$i-$j")"
    r+="POST /api/v1/namespaces/$NS/pods HTTP/1.1\r\nHost: $hostport\r\n"
    r+="Content-Type: application/json\r\nContent-Length: ${#body}\r\n\r\n$body"
    r+="POST /_sim/compact?revision=999999999999 HTTP/1.1\r\nHost: $hostport\r\n"
    close=""
    [ "$j" = 3 ] && close='Connection: close\r\n'
    r+="Content-Length: 0\r\n$close\r\n"
  done
  if exec 5<>"/dev/tcp/${hostport%:*}/${hostport##*:}"; then
    printf '%b' "$r" >&5
    timeout 5 cat <&5 >"$TMP/pipelined.$i"
    exec 5<&-
  fi
  if [ "$(grep -c '^HTTP/1.1 20[01]' "$TMP/pipelined.$i" 2>/dev/null)" != 6 ]; then
    bad "pipelined create + compact to the simulator" "answer: $(head -c 600 "$TMP/pipelined.$i")"
    break
  fi
  deadline=$((SECONDS + 4))
  while [ "$SECONDS" -lt "$deadline" ] && [ "$(metric kwp_relists_total)" -le "$relists0" ]; do
    sleep 0.1
  done
  if [ "$(metric kwp_relists_total)" -gt "$relists0" ]; then
    forced="$i"
    break
  fi
done
if [ -n "$forced" ] && grep -q 'code=410.*watch expired, relisting' "$TMP/proxy.log"; then
  ok "an upstream 410 made kwp relist (attempt $forced; kwp_relists_total $relists0 -> $(metric kwp_relists_total))"
else
  bad "an upstream 410 made kwp relist" "attempts: ${i}, kwp_relists_total $relists0 -> $(metric kwp_relists_total)" \
    "proxy log: $(grep -E 'reflector' "$TMP/proxy.log" | tail -n 5)"
fi
if converge 30; then
  ok "the informer converges to the simulator's pods after the relist ($(jq length <<<"$WANT") pods, incl. node-relist-*)"
else
  bad "the informer converges to the simulator's pods after the relist (30 s)" "$(diff_objects)"
fi
lists1=$(inf .lists)
too_old1=$(metric kwp_too_old_total)
if [ "$lists1" -gt "$lists0" ] && [ "$too_old1" -gt "$too_old0" ]; then
  ok "client-node relisted after kwp's 410 (lists $lists0 -> $lists1, kwp_too_old_total $too_old0 -> $too_old1)"
else
  bad "client-node relisted after kwp's 410" "lists $lists0 -> $lists1" \
    "kwp_too_old_total $too_old0 -> $too_old1" "$(diff_objects)"
fi

# ---- 4. and keeps watching afterwards ---------------------------------------------------------
deadline=$((SECONDS + 10))
while [ "$SECONDS" -lt "$deadline" ] && [ "$(metric kwp_watches_open)" -lt 1 ]; do
  sleep 0.1
done
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
