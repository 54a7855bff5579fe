#!/usr/bin/env bash
# shutdown.sh - how long `kwp proxy` takes to drain its watches and exit on SIGTERM.
#
#   bash bench/shutdown.sh WATCHERS RATE [DELAY]
#
# Starts `kwp sim --churn RATE` (100 pods) and `kwp proxy --shutdown-delay DELAY` (default
# 1s) in front of it on loopback, opens WATCHERS watches with `kwp load` (client-go style,
# allowWatchBookmarks), waits until the proxy's kwp_watches_open says they are all open (60 s
# at most), then sends the proxy SIGTERM and prints: the time to exit (from the signal), the
# proxy's exit status, and its shutdown log lines (among them how long the drain of the
# watches took after the delay: "every watch ended" waited_ms=...). KWP_BIN (default
# build/kwp) picks the binary. Every process it starts is stopped by PID.
set -u
N=${1:?watchers}; RATE=${2:?rate}; DELAY=${3:-1s}
K=${KWP_BIN:-build/kwp}
D=$(mktemp -d)
SIM= PX= LOAD=
trap 'kill ${LOAD:-} ${PX:-} ${SIM:-} 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
url_of() { # url_of FILE: the "listening on" URL a server printed, waiting up to 5 s
    for _ in $(seq 50); do grep -qs listening "$1" && break; sleep 0.1; done
    grep -so 'http://[0-9.:]*' "$1" | head -1
}
"$K" sim --listen 127.0.0.1:0 --churn "$RATE" --objects 100 >"$D/sim.out" 2>"$D/sim.log" &
SIM=$!
"$K" proxy --upstream "$(url_of "$D/sim.out")" --listen 127.0.0.1:0 --resources pods \
    --shutdown-delay "$DELAY" >"$D/p.out" 2>"$D/p.log" &
PX=$!
P=$(url_of "$D/p.out")
[ -n "$P" ] || { echo "shutdown.sh: the proxy did not start" >&2; cat "$D/p.log" >&2; exit 1; }
"$K" load --target "$P" --resource pods --watchers "$N" --duration 120s >"$D/load.out" \
    2>"$D/load.log" &
LOAD=$!
open=0
for _ in $(seq 120); do
    open=$(curl -s "$P/metrics" | awk '/^kwp_watches_open/ {s += $2} END {print s + 0}')
    [ "$open" -ge "$N" ] && break
    sleep 0.5
done
echo "watches open: $open of $N, churn $RATE/s, --shutdown-delay $DELAY"
t0=$(date +%s%N)
kill -TERM "$PX"
wait "$PX"
st=$?
echo "exit status $st after $((($(date +%s%N) - t0) / 1000000)) ms"
PX=
grep -E 'src=proxy .*(signal|delay|watch|stopped)' "$D/p.log" | grep -v nofile
