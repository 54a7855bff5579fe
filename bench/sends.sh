#!/usr/bin/env bash
# sends.sh - system calls and CPU per delivered watch event, for kwp proxy or kwp_bench_floor.
#
#   bash bench/sends.sh kwp|sim|floor RATE WATCHERS [extra server flags...]
#
# Starts the server on loopback (kwp: `kwp sim --stamp --churn RATE` of 100 ~1 KiB pods with
# `kwp proxy` in front; sim: that simulator alone, watched directly; floor: `kwp_bench_floor
# --threads 2 --rate RATE --event-bytes 1400`),
# (kwp proxy sends through libmicrohttpd with sendto, its watch writers with sendmsg)
# then `kwp load --watchers WATCHERS [--start-rv 1] --duration 16s --warmup-after-open` (kwp:
# no --start-rv, each watcher LISTs at rv 0 first: kwp forwards rv 1 upstream), and 7 s
# in (steady state) counts the server's sendto/writev/epoll_wait/futex calls and task-clock
# (and the load's task-clock, read and epoll_wait calls)
# for 5 s with `perf stat`. Prints each count per delivered event (the load's events/s x 5 s)
# and the load's summary. KWP_BIN (default build/kwp) picks the binary; the floor is
# build/bench/kwp_bench_floor next to it. KWP_PERF_EVENTS adds perf events (comma-separated,
# e.g. uprobes made with `perf probe -x libmicrohttpd.so.12 MHD_resume_connection`);
# KWP_SENDS_JSON=FILE also writes the figures per event as JSON (bench/guard.sh); KWP_PIN=1
# puts the load alone on the last CPU and the servers on the others (taskset, as
# `bench/floor.py --pin`); KWP_PERF_RECORD=FILE also records a profile of the server over the
# same 5 s (`perf record -g -F 499`). Every process it starts is stopped by PID.
set -u
MODE=${1:?kwp or floor}; RATE=${2:?rate}; N=${3:?watchers}; shift 3
K=${KWP_BIN:-build/kwp}
export KWP_SHUTDOWN_DELAY=${KWP_SHUTDOWN_DELAY:-0} # the proxy exits at once when stopped
D=$(mktemp -d)
SRV_CPUS=() LOAD_CPUS=()
if [ "${KWP_PIN:-0}" = 1 ]; then
    NC=$(nproc)
    [ "$NC" -ge 2 ] || { echo "KWP_PIN=1 needs at least 2 CPUs" >&2; exit 2; }
    SRV_CPUS=(taskset -c "0-$((NC - 2))") LOAD_CPUS=(taskset -c "$((NC - 1))")
fi
SIM= PX=
trap 'kill ${PX:-} ${SIM:-} 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
url_of() { # url_of FILE: the "listening on" URL a server printed, waiting up to 5 s
    for _ in $(seq 50); do grep -qs listening "$1" && break; sleep 0.1; done
    grep -so 'http://[0-9.:]*' "$1" | head -1
}
if [ "$MODE" = kwp ] || [ "$MODE" = sim ]; then
    "${SRV_CPUS[@]}" "$K" sim --listen 127.0.0.1:0 --stamp --churn "$RATE" --objects 100 --object-bytes 1024 \
        --history-events 1000000 --compaction-interval 0 >"$D/sim.out" 2>"$D/sim.log" &
    SIM=$!
fi
if [ "$MODE" = sim ]; then
    PX=$SIM SIM=
    url_of "$D/sim.out" >/dev/null
    cp "$D/sim.out" "$D/p.out"
elif [ "$MODE" = kwp ]; then
    "${SRV_CPUS[@]}" "$K" proxy --upstream "$(url_of "$D/sim.out")" --listen 127.0.0.1:0 --resources pods "$@" \
        >"$D/p.out" 2>"$D/p.log" &
    PX=$!
else
    "${SRV_CPUS[@]}" "$(dirname "$K")/bench/kwp_bench_floor" --threads 2 --rate "$RATE" --event-bytes 1400 \
        --duration 60s "$@" >"$D/p.out" 2>"$D/p.log" &
    PX=$!
fi
PU=$(url_of "$D/p.out")
sleep 1
START="--start-rv 1" # the floor streams from its head; the sim replays its few seed revisions
[ "$MODE" = kwp ] && START= # kwp forwards rv 1 upstream (before its cache): LIST rv 0 + WATCH
"${LOAD_CPUS[@]}" "$K" load --target "$PU" --resource pods --watchers "$N" $START --duration 16s --ramp 5000 \
    --warmup 1s --warmup-after-open --quiet --json "$D/load.json" --pid "$PX" ${SIM:+--pid $SIM} \
    >"$D/load.out" 2>&1 &
LD=$!
sleep 7
perf stat -x, -o "$D/lstat" -p "$LD" -e task-clock,syscalls:sys_enter_read,syscalls:sys_enter_epoll_wait -- sleep 5 >/dev/null 2>&1 &
LP=$!
RP=
if [ -n "${KWP_PERF_RECORD:-}" ]; then # a profile of the server over the same 5 s
    perf record -q -g -F 499 -o "$KWP_PERF_RECORD" -p "$PX" -- sleep 5 >/dev/null 2>&1 &
    RP=$!
fi
perf stat -x, -o "$D/stat" -p "$PX" -e 'syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg,syscalls:sys_enter_writev' \
    -e 'syscalls:sys_enter_epoll_wait,syscalls:sys_enter_futex,task-clock' ${KWP_PERF_EVENTS:+-e $KWP_PERF_EVENTS} -- sleep 5 >/dev/null 2>&1
wait $LP
[ -n "$RP" ] && wait $RP
wait $LD
python3 - "$D/load.json" "$D/stat" "$D/lstat" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
w = d["watch"]
ev = w["events_per_s"]
lat = w["latency_ms"]
print("delivered %.0f ev/s, p50 %.1f ms, p99 %.1f ms, %d/%d watches open, %.0f bytes/event"
      % (ev, lat.get("p50") or 0, lat.get("p99") or 0, w["watchers_opened"], d["params"]["watchers"],
         w["bytes_per_s"] / ev if ev > 0 else 0))
for p in d["processes"]:
    print("  %-10s pid %-7s %.2f CPU s, RSS max %.1f MB" % (p["name"], p["pid"], p["cpu_s"] or 0,
                                                           (p.get("rss_max_kb") or 0) / 1024))
for line in open(sys.argv[2]):
    f = line.strip().split(",")
    if len(f) < 3 or not f[0].replace(".", "", 1).isdigit():
        continue
    v, name = float(f[0]), f[2]
    if name == "task-clock":
        print("  server task-clock %.0f ms = %.2f us per event" % (v, v * 1000 / (ev * 5)))
    else:
        print("  %-30s %9.0f = %.3f per event" % (name, v, v / (ev * 5)))
out = {"events_per_s": ev, "p50_ms": lat.get("p50"), "p99_ms": lat.get("p99"), "per_event": {}}
for line in open(sys.argv[2]):
    f = line.strip().split(",")
    if len(f) >= 3 and f[0].replace(".", "", 1).isdigit() and ev > 0:
        key = "server_us" if f[2] == "task-clock" else f[2].replace("syscalls:sys_enter_", "")
        out["per_event"][key] = float(f[0]) * (1000 if key == "server_us" else 1) / (ev * 5)
for line in open(sys.argv[3]):
    f = line.strip().split(",")
    if len(f) >= 3 and f[2] == "task-clock" and f[0].replace(".", "", 1).isdigit():
        print("  load task-clock %.0f ms = %.2f us per event" % (float(f[0]), float(f[0]) * 1000 / (ev * 5)))
        out["per_event"]["load_us"] = float(f[0]) * 1000 / (ev * 5) if ev > 0 else None
    elif len(f) >= 3 and f[0].isdigit() and ev > 0:
        key = "load_" + f[2].replace("syscalls:sys_enter_", "")
        print("  %-30s %9.0f = %.3f per event" % (key, float(f[0]), float(f[0]) / (ev * 5)))
        out["per_event"][key] = float(f[0]) / (ev * 5)
if os.environ.get("KWP_SENDS_JSON"):
    with open(os.environ["KWP_SENDS_JSON"], "w") as fh:
        json.dump(out, fh)
PY
