#!/usr/bin/env bash
# ingest.sh - the proxy's CPU per upstream event (its reflector taking events in), no watchers.
#
#   bash bench/ingest.sh [--runs N] [--rate R] [--seconds S] BIN [BIN...]
#
# For each of N rounds and each kwp binary BIN in turn (so a busy moment of the shared machine
# hits every binary): starts `build/kwp sim --stamp --churn R` (100 pods of ~1 KiB, the
# simulator of this checkout for every BIN) and `BIN proxy --resources pods` in front of it,
# lets the upstream watch settle for 3 s, then reads both processes' CPU time (utime+stime
# from /proc) over S seconds. Prints one line per run and, per binary, the median proxy and
# simulator CPU in microseconds per upstream event (R x S events). Defaults: 3 runs, 1000
# writes/s, 10 s. Loopback only; every process it starts is stopped by its PID.
set -u
RUNS=3 RATE=1000 SECS=10
while [ $# -gt 0 ]; do
    case "$1" in
    --runs) RUNS=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --seconds) SECS=$2; shift 2 ;;
    *) break ;;
    esac
done
[ $# -ge 1 ] || { sed -n 2,12p "$0"; exit 2; }
K=build/kwp
HZ=$(getconf CLK_TCK)
D=$(mktemp -d)
SIM= PX=
trap 'kill ${PX:-} ${SIM:-} 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
url_of() { # the "listening on" URL a server printed, waiting up to 5 s
    for _ in $(seq 50); do grep -qs listening "$1" && break; sleep 0.1; done
    grep -so 'http://[0-9.:]*' "$1" | head -1
}
for run in $(seq "$RUNS"); do
    for bin in "$@"; do
        "$K" sim --listen 127.0.0.1:0 --stamp --churn "$RATE" --objects 100 --object-bytes 1024 \
            --history-events 1000000 --compaction-interval 0 >"$D/sim.out" 2>"$D/sim.log" &
        SIM=$!
        "$bin" proxy --upstream "$(url_of "$D/sim.out")" --listen 127.0.0.1:0 --resources pods \
            >"$D/p.out" 2>"$D/p.log" &
        PX=$!
        url_of "$D/p.out" >/dev/null
        sleep 3
        p0=$(ticks $PX) s0=$(ticks $SIM)
        sleep "$SECS"
        p1=$(ticks $PX) s1=$(ticks $SIM)
        kill $PX $SIM 2>/dev/null
        wait $PX $SIM 2>/dev/null
        PX= SIM=
        echo "$bin $run $(( (p1 - p0) * 1000000 / HZ / (RATE * SECS) )) $(( (s1 - s0) * 1000000 / HZ / (RATE * SECS) ))" |
            tee -a "$D/runs"
    done
done
echo "median CPU per upstream event at $RATE writes/s ($RUNS runs of ${SECS}s, us): proxy, sim"
med() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
for bin in "$@"; do
    printf "  %-40s %5s %5s\n" "$bin" "$(awk -v b="$bin" '$1 == b {print $3}' "$D/runs" | med)" \
        "$(awk -v b="$bin" '$1 == b {print $4}' "$D/runs" | med)"
done
