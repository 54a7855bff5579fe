#!/usr/bin/env python3
"""bench/tiers.py - what a second tier of kwp costs (issue 13, "Replicas and tiers").

One run: `kwp sim --stamp --churn R` <- kwp proxy T1 <- kwp proxy T2 (T2's --upstream is
T1), both caching pods. Side by side in that run:

  LIST rv=0   latency of N sequential LISTs of every pod, alternating T1 and T2 (each served
              from that tier's own cache), while the simulator writes
  watch hop   two `kwp load` processes at the same time, W watchers on T1 and W on T2:
              delivery latency (now - the kwp.io/stamp-ns the simulator wrote) direct on T1
              vs through T2; the difference is what the hop adds
  CPU         CPU seconds of T1 and T2 over the load (from /proc) divided by the frames each
              wrote downstream (kwp_frames_sent_total): server CPU per delivered event; T2's
              includes its reflector (parsing T1's stream), T1's the one extra watch T2 holds

--runs fresh sets of processes; the table gives medians. Loopback only; every process is
started here and stopped by PID; every run is bounded (--duration plus setup).
Usage: python3 bench/tiers.py [--runs 3] [--watchers 100] [--rate 100] [--objects 2000]
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fanout  # noqa: E402  (spawn, stop, wait_ready)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    """utime + stime of <pid> in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def metric(url, name, res="pods"):
    req = urllib.request.Request(url + "/metrics", headers={"User-Agent": "kwp-bench"})
    with urllib.request.urlopen(req, timeout=10) as r:
        key = '%s{resource="%s"} ' % (name, res)
        for line in r.read().decode().splitlines():
            if line.startswith(key):
                return float(line[len(key):])
    raise RuntimeError("%s has no %s" % (url, key))


def list_ms(url):
    """One LIST rv=0 of every pod, read to the end: milliseconds and bytes."""
    req = urllib.request.Request(url + "/api/v1/pods?resourceVersion=0",
                                 headers={"User-Agent": "kwp-bench", "Accept": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=30) as r:
        n = len(r.read())
    return (time.perf_counter() - t0) * 1000.0, n


def wait_synced(t1, t2, timeout=30):
    """Until T2's pods rv has caught up with T1's (both moving under churn)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if metric(t2, "kwp_resource_version") >= metric(t1, "kwp_resource_version") - 1e-9:
            return
        time.sleep(0.05)
    raise RuntimeError("T2 did not catch up with T1")


def one_run(a, tmp, i):
    sim = t1 = t2 = None
    try:
        sim, sim_url = fanout.spawn(
            [a.kwp, "sim", "--listen", "127.0.0.1:0", "--stamp", "--churn", str(a.rate),
             "--objects", str(a.objects), "--object-bytes", str(a.object_bytes),
             "--compaction-interval", "0", "--history-events", "1000000"],
            os.path.join(tmp, "sim-%d.log" % i))
        t1, t1_url = fanout.spawn([a.kwp, "proxy", "--upstream", sim_url, "--listen", "127.0.0.1:0",
                                   "--resources", "pods"], os.path.join(tmp, "t1-%d.log" % i))
        fanout.wait_ready(t1_url)
        t2, t2_url = fanout.spawn([a.kwp, "proxy", "--upstream", t1_url, "--listen", "127.0.0.1:0",
                                   "--resources", "pods"], os.path.join(tmp, "t2-%d.log" % i))
        fanout.wait_ready(t2_url)
        wait_synced(t1_url, t2_url)

        lists = {"t1": [], "t2": []}
        size = 0
        for _ in range(a.lists):
            for tag, url in (("t1", t1_url), ("t2", t2_url)):
                ms, size = list_ms(url)
                lists[tag].append(ms)

        c0 = {"t1": cpu_s(t1.pid), "t2": cpu_s(t2.pid)}
        f0 = {"t1": metric(t1_url, "kwp_frames_sent_total"),
              "t2": metric(t2_url, "kwp_frames_sent_total")}
        loads = {}
        for tag, url in (("t1", t1_url), ("t2", t2_url)):
            js = os.path.join(tmp, "load-%s-%d.json" % (tag, i))
            argv = [a.kwp, "load", "--target", url, "--resource", "pods", "--json", js, "--quiet",
                    "--watchers", str(a.watchers), "--duration", "%ds" % a.duration,
                    "--ramp", "5000", "--warmup", "1s", "--warmup-after-open"]
            loads[tag] = (subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                           stderr=open(os.path.join(tmp, "load.log"), "a")), js)
        for tag, (p, _) in loads.items():
            p.wait(timeout=a.duration * 4 + 60)
        c1 = {"t1": cpu_s(t1.pid), "t2": cpu_s(t2.pid)}
        f1 = {"t1": metric(t1_url, "kwp_frames_sent_total"),
              "t2": metric(t2_url, "kwp_frames_sent_total")}
        relists = {"t1": metric(t1_url, "kwp_relists_total"),
                   "t2": metric(t2_url, "kwp_relists_total")}
        up_watches = metric(t1_url, "kwp_upstream_watch_requests_total")
    finally:
        fanout.stop(t2)
        fanout.stop(t1)
        fanout.stop(sim)
    row = {"list_bytes": size, "upstream_watches_t1": up_watches}
    for tag in ("t1", "t2"):
        with open(loads[tag][1]) as f:
            d = json.load(f)
        w = d["watch"]
        frames = f1[tag] - f0[tag]
        row[tag] = {
            "list_p50_ms": statistics.median(lists[tag]),
            "events_per_s": w["events_per_s"],
            "p50_ms": w["latency_ms"].get("p50"), "p99_ms": w["latency_ms"].get("p99"),
            "opened": w["watchers_opened"], "errors": d["errors"]["total"],
            "frames": frames, "cpu_s": c1[tag] - c0[tag],
            "us_per_frame": (c1[tag] - c0[tag]) * 1e6 / frames if frames > 0 else None,
            "relists": relists[tag],
        }
    return row


def med(rows, tag, key):
    vals = [r[tag][key] for r in rows if isinstance(r[tag].get(key), (int, float))]
    return statistics.median(vals) if vals else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kwp", default=os.path.join(ROOT, "build", "kwp"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                  time.strftime("%Y-%m-%d") + "-tiers"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--watchers", type=int, default=100, help="watchers on each tier")
    ap.add_argument("--rate", type=int, default=100, help="pod writes per second")
    ap.add_argument("--objects", type=int, default=2000)
    ap.add_argument("--object-bytes", type=int, default=1024)
    ap.add_argument("--lists", type=int, default=20, help="LIST rv=0 per tier per run")
    ap.add_argument("--duration", type=int, default=10, help="seconds of watch load per run")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="kwp-tiers-")
    rows = []
    for i in range(a.runs):
        rows.append(one_run(a, tmp, i))
        r = rows[-1]
        print("run %d: LIST p50 %.2f / %.2f ms, watch p50 %s / %s ms, us/frame %.2f / %.2f"
              % (i, r["t1"]["list_p50_ms"], r["t2"]["list_p50_ms"], r["t1"]["p50_ms"],
                 r["t2"]["p50_ms"], r["t1"]["us_per_frame"] or 0, r["t2"]["us_per_frame"] or 0),
              flush=True)
    res = {"params": dict(vars(a), argv=shlex.join(sys.argv[1:])), "runs": rows}
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    lines = [
        "| medians of %d runs (%d watchers per tier, %d writes/s, %d pods of ~%d B) | direct on T1 "
        "| through T2 |" % (a.runs, a.watchers, a.rate, a.objects, a.object_bytes),
        "|---|---|---|",
        "| LIST rv=0 of every pod (%.1f MB), p50 | %.2f ms | %.2f ms |"
        % (rows[0]["list_bytes"] / 1e6, med(rows, "t1", "list_p50_ms"), med(rows, "t2", "list_p50_ms")),
        "| watch delivery latency from the write, p50 | %.2f ms | %.2f ms |"
        % (med(rows, "t1", "p50_ms"), med(rows, "t2", "p50_ms")),
        "| watch delivery latency from the write, p99 | %.2f ms | %.2f ms |"
        % (med(rows, "t1", "p99_ms"), med(rows, "t2", "p99_ms")),
        "| events delivered per second | %.0f | %.0f |"
        % (med(rows, "t1", "events_per_s"), med(rows, "t2", "events_per_s")),
        "| server CPU per delivered event | %.2f µs | %.2f µs |"
        % (med(rows, "t1", "us_per_frame"), med(rows, "t2", "us_per_frame")),
    ]
    table = "\n".join(lines)
    with open(os.path.join(a.out, "README.md"), "w") as f:
        f.write("`python3 bench/tiers.py %s`\n\n%s\n" % (res["params"]["argv"], table))
    print(table)


if __name__ == "__main__":
    main()
