#!/usr/bin/env bash
# sizing.sh - kwp proxy's resident memory per cached object, for sizing its requests and limits
# (README "Deploying"). For each object count N: `kwp sim --objects N --churn 0` (pods of about
# --object-bytes each; 0 = the simulator's own ~1.2 KB pods), then `kwp proxy --resources pods`
# in front of it; once /readyz answers 200 and the cache holds N pods, the proxy's VmRSS (from
# /proc) and its kwp_objects / kwp_object_bytes metrics are printed, one line per N, then the
# cost per object between the smallest and the largest N.
#
# With --churn R the simulator writes R pods a second and the reading is taken --settle seconds
# after the cache is ready, so the history holds events too (kwp_history_events is printed);
# --proxy-args adds flags to the proxy (e.g. "--history-window 0 --history-min 20000
# --history-max 20000" for a history of exactly 20,000 events).
#
# With --relist N, each run then forces N relists, one after the other (the simulator compacts and drops its watches,
# so the proxy's re-watch gets 410) and prints the peak RSS (VmHWM) once it has synced again: a
# relist holds the new list beside the old one until it replaces it.
#
# Usage: bash bench/sizing.sh [--kwp build/kwp] [--object-bytes 0] [--counts 0,10000,100000]
#                             [--churn 0] [--settle 0] [--proxy-args "..."] [--relist N]
# Only the processes it starts are signalled, by PID; everything listens on 127.0.0.1 port 0.
set -uo pipefail

KWP=build/kwp
OBJECT_BYTES=0
COUNTS=0,10000,100000
CHURN=0
SETTLE=0
PROXY_ARGS=""
RELIST=0
while [ $# -gt 0 ]; do
  case "$1" in
    --kwp) KWP="$2"; shift 2 ;;
    --object-bytes) OBJECT_BYTES="$2"; shift 2 ;;
    --counts) COUNTS="$2"; shift 2 ;;
    --churn) CHURN="$2"; shift 2 ;;
    --settle) SETTLE="$2"; shift 2 ;;
    --proxy-args) PROXY_ARGS="$2"; shift 2 ;;
    --relist) RELIST="$2"; shift 2 ;;
    *) echo "usage: $0 [--kwp PATH] [--object-bytes N] [--counts N,N,...] [--churn R]" \
         "[--settle S] [--proxy-args ARGS] [--relist N]" >&2; exit 2 ;;
  esac
done
TMP="$(mktemp -d "${TMPDIR:-/tmp}/kwp-sizing-XXXXXX")"
SIM_PID=""
PROXY_PID=""

stop() {
  local pid
  for pid in "$PROXY_PID" "$SIM_PID"; do
    [ -n "$pid" ] || continue
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  PROXY_PID=""
  SIM_PID=""
}
trap 'stop; rm -rf "$TMP"' EXIT

# url_of FILE SECONDS: the URL of a "listening on URL" line in FILE, waiting up to SECONDS.
url_of() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    if grep -q '^listening on ' "$1" 2>/dev/null; then
      sed -n 's/^listening on //p' "$1" | head -n 1
      return 0
    fi
    sleep 0.1
  done
  return 1
}

metric() { # metric URL NAME: the pods sample of NAME
  curl -s --max-time 5 "$1/metrics" | awk -v m="$2{resource=\"pods\"}" '$1 == m {print $2}'
}

printf '%-8s %-10s %-12s %-17s %-14s\n' objects rss_kib kwp_objects kwp_object_bytes \
  kwp_history_events
first_n="" first_rss="" last_n="" last_rss="" first_bytes="" last_bytes=""
IFS=, read -r -a counts <<<"$COUNTS"
for n in "${counts[@]}"; do
  "$KWP" sim --listen 127.0.0.1:0 --objects "$n" --namespaces 10 --churn "$CHURN" \
    --object-bytes "$OBJECT_BYTES" >"$TMP/sim.out" 2>"$TMP/sim.log" &
  SIM_PID=$!
  sim_url="$(url_of "$TMP/sim.out" 300)" || { echo "sim did not start: $(tail -3 "$TMP/sim.log")"; exit 1; }
  # shellcheck disable=SC2086 # PROXY_ARGS is a list of flags
  "$KWP" proxy --listen 127.0.0.1:0 --upstream "$sim_url" --resources pods $PROXY_ARGS \
    >"$TMP/proxy.out" 2>"$TMP/proxy.log" &
  PROXY_PID=$!
  url="$(url_of "$TMP/proxy.out" 30)" || { echo "proxy did not start: $(tail -3 "$TMP/proxy.log")"; exit 1; }
  for ((i = 0; i < 1200; i++)); do
    code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url/readyz")"
    have="$(metric "$url" kwp_objects)"
    [ "$code" = 200 ] && [ "${have:-0}" -ge "$((n * 9 / 10))" ] && break
    sleep 0.1
  done
  sleep "$((2 + SETTLE))" # let the initial list's buffers go back (and the history fill)
  rss="$(awk '/^VmRSS:/ {print $2}' "/proc/$PROXY_PID/status")"
  bytes="$(metric "$url" kwp_object_bytes)"
  printf '%-8s %-10s %-12s %-17s %-14s\n' "$n" "$rss" "$(metric "$url" kwp_objects)" "$bytes" \
    "$(metric "$url" kwp_history_events)"
  for ((k = 0; k < RELIST; k++)); do
    relists="$(metric "$url" kwp_relists_total)"
    # the proxy frozen while its watch ends and a write is compacted away: its re-watch is 410
    kill -STOP "$PROXY_PID"
    curl -s -o /dev/null --max-time 10 -X POST "$sim_url/_sim/drop-watches"
    curl -s -o /dev/null --max-time 10 -H 'Content-Type: application/json' -X POST \
      --data '{"metadata":{"generateName":"sizing-relist-"},"spec":{"containers":[{"name":"c","image":"x"}]}}' \
      "$sim_url/api/v1/namespaces/default/pods"
    rev="$(curl -s --max-time 10 "$sim_url/_sim/stats" | jq -r .revision)"
    curl -s -o /dev/null --max-time 10 -X POST "$sim_url/_sim/compact?revision=$rev"
    kill -CONT "$PROXY_PID"
    for ((i = 0; i < 1200; i++)); do
      [ "$(metric "$url" kwp_relists_total)" -gt "$relists" ] &&
        [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url/readyz")" = 200 ] && break
      sleep 0.1
    done
    sleep 2
    printf '%-8s after a relist: peak RSS %s KiB, RSS %s KiB, relists %s\n' "$n" \
      "$(awk '/^VmHWM:/ {print $2}' "/proc/$PROXY_PID/status")" \
      "$(awk '/^VmRSS:/ {print $2}' "/proc/$PROXY_PID/status")" "$(metric "$url" kwp_relists_total)"
  done
  if [ -z "$first_n" ]; then first_n=$n first_rss=$rss first_bytes=$bytes; fi
  last_n=$n last_rss=$rss last_bytes=$bytes
  stop
done
if [ -n "$first_n" ] && [ "$last_n" != "$first_n" ]; then
  awk -v n0="$first_n" -v r0="$first_rss" -v n1="$last_n" -v r1="$last_rss" \
    -v b0="$first_bytes" -v b1="$last_bytes" 'BEGIN {
      printf "per object: %.0f bytes of RSS (%.0f bytes of object JSON) between %d and %d objects\n",
        (r1 - r0) * 1024 / (n1 - n0), (b1 - b0) / (n1 - n0), n0, n1 }'
fi
