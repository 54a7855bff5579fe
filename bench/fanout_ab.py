#!/usr/bin/env python3
"""bench/fanout_ab.py - two kwp proxy binaries side by side on the watch fan-out (issue 5).

For each load point (watchers x writes/s) it runs the binaries interleaved, A B A B ..., each
run against a fresh `kwp sim --stamp --churn R` (started from --sim, the same binary for both
sides, as is `kwp load`), and records for the proxy:

  cpu_per_m   proxy CPU seconds per million delivered events, over the measured seconds only
              (the per-second samples of `kwp load --pid` after --warmup)
  user_per_m  the same split into user and system time (/proc/PID/stat read at warmup + 1 s
  sys_per_m   and duration - 1 s; events: the load's per-second counts in that window)
  events_s    delivered events/s (kwp load, warmup excluded)
  p50/p99     delivery latency (simulator write to client parse)

and the 1-minute load average before each run (the machine is shared). Prints each run and the
medians per binary. Loopback only; every process is started here and stopped by PID.

Usage: python3 bench/fanout_ab.py --a OLD/kwp --b build/kwp [--points 2000x100,5000x300]
       [--runs 3] [--duration 20] [--warmup 8]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fanout  # noqa: E402  (spawn, stop, wait_ready, raise_nofile)


def proc_cpu(pid):
    """(user, system) CPU seconds of a process so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def one_run(a, kwp, watchers, rate, tag):
    sim, sim_url = fanout.spawn([a.sim, "sim", "--listen", "127.0.0.1:0", "--stamp", "--churn", str(rate),
                                 "--objects", str(a.objects), "--object-bytes", str(a.object_bytes),
                                 "--history-events", "1000000", "--compaction-interval", "0"],
                                os.path.join(a.tmp, "sim-%s.log" % tag))
    proxy = None
    try:
        proxy, url = fanout.spawn([kwp, "proxy", "--upstream", sim_url, "--listen", "127.0.0.1:0",
                                   "--resources", "pods", "--threads", str(a.threads)],
                                  os.path.join(a.tmp, "kwp-%s.log" % tag))
        fanout.wait_ready(url)
        js = os.path.join(a.tmp, "load-%s.json" % tag)
        la = loadavg()
        load = subprocess.Popen([a.sim, "load", "--target", url, "--resource", "pods", "--json", js,
                                 "--quiet", "--watchers", str(watchers), "--duration", "%ds" % a.duration,
                                 "--ramp", "5000", "--warmup", "%ds" % a.warmup, "--pid", str(proxy.pid)],
                                stdout=subprocess.DEVNULL,
                                stderr=open(os.path.join(a.tmp, "load.log"), "a"))
        # the proxy's user and system CPU over whole seconds [warmup + 1, duration - 1] of the load
        t0 = time.monotonic()
        time.sleep(a.warmup + 1)
        c0 = proc_cpu(proxy.pid)
        time.sleep(a.duration - a.warmup - 2)
        c1 = proc_cpu(proxy.pid)
        window = (a.warmup + 1, a.duration - 1, time.monotonic() - t0)
        load.wait(timeout=a.duration * 4 + 120)
    finally:
        fanout.stop(proxy)
        fanout.stop(sim)
    with open(js) as f:
        d = json.load(f)
    # processes: [kwp load, proxy]; per-second samples after the warmup
    cpu, ev, prev_t = 0.0, 0, None
    for s in d["series"]:
        t = s["t"]
        if prev_t is not None and prev_t >= a.warmup and s["cpu_pct"][1] >= 0:
            cpu += s["cpu_pct"][1] / 100.0 * (t - prev_t)
            ev += s["events"]
        prev_t = t
    # events in the /proc window: the per-second samples ending inside it, scaled to its length
    lo, hi, _ = window
    wev = [s["events"] for s in d["series"] if lo < s["t"] <= hi + 0.5]
    wev_s = sum(wev) / len(wev) if wev else 0
    span = hi - lo
    w = d["watch"]
    per_m = lambda x: x / (wev_s * span / 1e6) if wev_s else None
    return {"cpu_per_m": cpu / (ev / 1e6) if ev else None, "events_s": w["events_per_s"],
            "user_per_m": per_m(c1[0] - c0[0]), "sys_per_m": per_m(c1[1] - c0[1]),
            "p50_ms": w["latency_ms"].get("p50"), "p99_ms": w["latency_ms"].get("p99"),
            "opened": w["watchers_opened"], "errors": d["errors"]["total"],
            "error_kinds": {k: v for k, v in d["errors"]["transport"].items() if v}, "loadavg": la,
            "proxy_cpu_s": cpu}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="kwp binary A (before)")
    ap.add_argument("--b", required=True, help="kwp binary B (after)")
    ap.add_argument("--sim", help="kwp binary for the simulator and the load (default: --a)")
    ap.add_argument("--points", default="2000x100,5000x300", help="watchersxwrites_per_s,...")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=8)
    ap.add_argument("--objects", type=int, default=100)
    ap.add_argument("--object-bytes", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", help="write every run here")
    a = ap.parse_args()
    a.sim = a.sim or a.a
    a.tmp = fanout.tempfile.mkdtemp(prefix="kwp-ab-")
    fanout.raise_nofile()
    out = []
    for point in a.points.split(","):
        n, rate = (int(x) for x in point.split("x"))
        rows = {"A": [], "B": []}
        for i in range(a.runs):
            for side, kwp in (("A", a.a), ("B", a.b)):
                r = one_run(a, kwp, n, rate, "%s-%d-%d-%d" % (side, n, rate, i))
                rows[side].append(r)
                print("%dx%d %s run %d: cpu/M ev %s s (user %s, sys %s), %.0f ev/s, p50 %s ms, "
                      "p99 %s ms, opened %d, errors %d, loadavg %.2f"
                      % (n, rate, side, i + 1, fanout.fmt(r["cpu_per_m"], 3),
                         fanout.fmt(r["user_per_m"], 3), fanout.fmt(r["sys_per_m"], 3), r["events_s"],
                         fanout.fmt(r["p50_ms"]), fanout.fmt(r["p99_ms"]), r["opened"], r["errors"],
                         r["loadavg"]) + (" %s" % r["error_kinds"] if r["error_kinds"] else ""),
                      flush=True)
        for side in ("A", "B"):
            med = {k: statistics.median(r[k] for r in rows[side] if r[k] is not None)
                   for k in ("cpu_per_m", "user_per_m", "sys_per_m", "events_s", "p50_ms", "p99_ms",
                             "loadavg")}
            print("%dx%d %s median: cpu/M ev %.3f s (user %.3f, sys %.3f), %.0f ev/s, p50 %.1f ms, "
                  "p99 %.1f ms, loadavg %.2f"
                  % (n, rate, side, med["cpu_per_m"], med["user_per_m"], med["sys_per_m"],
                     med["events_s"], med["p50_ms"], med["p99_ms"], med["loadavg"]), flush=True)
        out.append({"watchers": n, "rate": rate, "runs": rows})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"a": a.a, "b": a.b, "points": out}, f, indent=1)
    fanout.shutil.rmtree(a.tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
