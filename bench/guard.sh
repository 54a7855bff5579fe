#!/usr/bin/env bash
# guard.sh - the watch path's regression record (issue 16). Not a test: nothing here passes or
# fails on a time; it records, per commit, figures a change to the watch path moves.
#
#   bash bench/guard.sh [--record] [--kwp BUILD/kwp]
#
# Measures, with the binaries of one build:
#   - kwp_bench_emit (bench/emit.c): user-space CPU per frame of the server-buffer frame writer
#     (https watches, bookmarks, initial events), no sockets; the median of 5 runs of
#     `kwp_bench_emit 2000 100 50 2 1024`;
#   - bench/sends.sh kwp at 1,000 x 100 and 5,000 x 300: system calls per delivered event
#     (sendmsg: the watch writers; sendto: libmicrohttpd), epoll_wait and futex per event, and
#     the server's and the client's CPU per event.
# Prints one JSON line; with --record it is appended to bench/results/guard.jsonl with the
# commit, the date and the load average, so that a change that doubles the system calls per
# event, or the CPU per frame, shows against the line before it. Compare lines of one machine
# only (each line names its CPU; lines before 2026-12-04 evening, which do not, are of an
# earlier machine), and rerun a surprising one: the machine is shared.
set -eu
cd "$(dirname "$0")/.."
RECORD=0
K=build/kwp
while [ $# -gt 0 ]; do
    case "$1" in
    --record) RECORD=1 ;;
    --kwp) K=$2; shift ;;
    *) echo "usage: bash bench/guard.sh [--record] [--kwp BUILD/kwp]" >&2; exit 2 ;;
    esac
    shift
done
EMIT="$(dirname "$K")/bench/kwp_bench_emit"
[ -x "$EMIT" ] || { echo "guard.sh: $EMIT not built (cmake --build build)" >&2; exit 1; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
L0=$(cut -d' ' -f1 /proc/loadavg)
for i in 1 2 3 4 5; do
    "$EMIT" 2000 100 50 2 1024 | grep -o '[0-9.]* ns CPU per frame' | cut -d' ' -f1 >>"$D/emit"
done
for p in 100:1000 300:5000; do
    KWP_BIN=$K KWP_SENDS_JSON="$D/sends-${p/:/x}.json" bash bench/sends.sh kwp "${p%%:*}" "${p##*:}" >"$D/sends-${p/:/x}.out" 2>&1
done
L1=$(cut -d' ' -f1 /proc/loadavg)
LINE=$(GUARD_TREE="$(cd "$(dirname "$K")/.." && pwd)" python3 - "$D" "$L0" "$L1" <<'PY'
import json, os, statistics, subprocess, sys, time
d = sys.argv[1]
emit = [float(x) for x in open(os.path.join(d, "emit")).read().split()]
def sends(name):
    p = os.path.join(d, "sends-%s.json" % name)
    return json.load(open(p)) if os.path.exists(p) else None
# the commit of the tree the binaries were built from (build/ sits in it), and whether its
# sources differ from that commit (bench scripts and results do not count)
tree = os.environ["GUARD_TREE"]
rev = subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"], capture_output=True,
                     text=True).stdout.strip()
dirty = subprocess.run(["git", "-C", tree, "status", "--porcelain", "--untracked-files=no", "--",
                        "cache", "proxy", "sim", "load", "cmd", "lab", "bench/emit.c", "CMakeLists.txt"],
                       capture_output=True, text=True).stdout.strip() != ""
# which machine: lines of different machines do not compare (model, clock and cores)
info = dict(l.split(":", 1) for l in open("/proc/cpuinfo") if ":" in l)
cpu = "%s, %s MHz, %d cores" % (info.get("model name\t", "?").strip(),
                                info.get("cpu MHz\t\t", "?").strip(), os.cpu_count())
print(json.dumps({"commit": rev + ("+dirty" if dirty else ""), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "cpu": cpu,
                  "load1": [float(sys.argv[2]), float(sys.argv[3])],
                  "emit_ns_per_frame": statistics.median(emit), "emit_runs": emit,
                  "sends_1000x100": sends("100x1000"), "sends_5000x300": sends("300x5000")}))
PY
)
echo "$LINE"
if [ "$RECORD" = 1 ]; then
    echo "$LINE" >>bench/results/guard.jsonl
    echo "guard.sh: appended to bench/results/guard.jsonl" >&2
fi
