#!/usr/bin/env python3
"""bench/floor.py - the machine's watch fan-out ceiling: kwp_bench_floor against kwp proxy.

For each point WATCHERSxRATE and each of --runs rounds it runs, back to back and in alternating
order (so a busy moment of the shared machine hits both sides):

  floor  build/bench/kwp_bench_floor --rate RATE: one frame built per event, one writev per
         stream per wake, no HTTP library, no cache (bench/floor.c)
  kwp    kwp proxy --threads 2 in front of kwp sim --stamp --churn RATE (100 pods of ~1 KiB),
         as bench/fanout.py starts them

and measures each with the same `kwp load --watchers N --duration 16s --ramp 5000 --warmup 1s
--warmup-after-open --pid ...`, with `--start-rv 1` for the floor (which streams from its head
whatever the rv) and without it for kwp (each watcher LISTs at rv 0 and watches from the list's
rv, before the measured window). Sides: floor-BYTES[bMS] (`--batch-ms MS`), floor-pod[bMS] (the
floor serving the kwp simulator's own pod frame, restamped: `--template`; the fair comparison,
since a client's cost per event depends on what it parses), sink-BYTES (the
floor read by `kwp_bench_floor --sink`), kwp, kwp-mhd (`--watch-direct-write=false`: every
watch through libmicrohttpd's buffers), kwpold (the binary of --kwp-old, e.g. the previous
commit's), and -wMS on a kwp side (`--watch-wake-interval MSms`). Recorded per run: delivered events/s, MB/s
read, latency percentiles, CPU seconds of the server, simulator and load generator, the load
average before and after, and the floor's own counters (frames per writev, closed streams).
Medians of the runs go to <out>/floor.md and everything to <out>/floor.json.

Loopback only; every process is started here and stopped by its PID; every run is bounded.
Usage: python3 bench/floor.py [--points 1000x100,5000x300] [--runs 3] [--sides floor,kwp]
                              [--floor-args '--threads 2'] [--pin] [--out DIR] [--replot FILE.json]
"""
import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import urllib.request
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no bench/__pycache__ from the import below
import fanout as fo  # noqa: E402  (spawn, stop, wait_ready, raise_nofile, fmt, median_of)

ROOT = fo.ROOT
DEFAULT_POINTS = "1000x100,1000x300,1000x1000,5000x100,5000x300,5000x1000,10000x100"
KEYS = ["events_per_s", "mb_per_s", "bytes_per_event", "p50_ms", "p99_ms", "p999_ms", "server_cpu_s",
        "sim_cpu_s", "load_cpu_s", "server_pct", "load_pct", "machine_busy_cores", "others_cores",
        "softirqd_cores", "opened", "per_watcher_min", "errors", "frames_per_writev", "floor_lagging",
        "floor_torn", "load1_before", "load1_after"]


def load1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def cpu_ticks():
    """(busy, total, softirq threads) clock ticks: the whole machine from /proc/stat, and the
    ksoftirqd threads, which carry part of this run's own loopback receive work."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
    soft = 0
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % pid) as f:
                st = f.read()
        except (OSError, ValueError):
            continue
        if "(ksoftirqd/" in st:
            w = st.rsplit(")", 1)[1].split()
            soft += int(w[11]) + int(w[12])
    return sum(v) - idle, sum(v), soft


def machine_share(t0, t1, ours_cpu_s, wall):
    """Cores busy during a run: all, the ksoftirqd threads, and everything else (not this
    run's processes, which live about <wall> seconds, nor ksoftirqd)."""
    hz = os.sysconf("SC_CLK_TCK")
    busy = (t1[0] - t0[0]) / max(1, t1[1] - t0[1]) * (os.cpu_count() or 1)
    soft = (t1[2] - t0[2]) / hz / wall
    return {"machine_busy_cores": busy, "softirqd_cores": soft,
            "others_cores": busy - soft - ours_cpu_s / wall}


def wait_quiet(limit, max_s, window_s=5.0):
    """Waits until the machine's busy cores over one window fall below <limit> (nothing of
    ours runs then), at most <max_s> seconds. Returns (seconds waited, busy cores last seen)."""
    t0 = time.time()
    while True:
        a = cpu_ticks()
        time.sleep(window_s)
        b = cpu_ticks()
        busy = (b[0] - a[0]) / max(1, b[1] - a[1]) * (os.cpu_count() or 1)
        if busy < limit or time.time() - t0 >= max_s:
            return time.time() - t0, busy


def proc_cpu_s(pid):
    """utime + stime of <pid> in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")


def steady_pct(d, index):
    """Mean CPU % (of one core) of process <index> in kwp load's per-second series, over the
    measured window only."""
    start = d["watch"].get("measured_from_s") or 0
    vals = [s["cpu_pct"][index] for s in d["series"]
            if s["t"] > start + 0.5 and s["watches_open"] > 0 and index < len(s["cpu_pct"])]
    return statistics.mean(vals) if vals else None


def floor_counters(log):
    """The counters kwp_bench_floor prints on stderr at exit."""
    with open(log) as f:
        text = f.read()
    out = {}
    m = re.search(r"([\d.]+) frames each", text)
    out["frames_per_writev"] = float(m.group(1)) if m else None
    for key, pat in (("floor_lagging", r"lagging (\d+)"), ("floor_torn", r"torn (\d+)"),
                     ("floor_produced", r"produced (\d+)")):
        m = re.search(pat, text)
        out[key] = int(m.group(1)) if m else None
    return out


class Runner:
    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="kwp-floor-")
        # --pin: the client alone on the last CPU, every server (and the simulator) on the
        # others, so that what a server delivers is not decided by which thread the scheduler
        # puts on the client's CPU (taskset, util-linux)
        n = os.cpu_count() or 1
        if a.pin and n < 2:
            raise SystemExit("--pin needs at least 2 CPUs")
        self.client_cpus = ["taskset", "-c", str(n - 1)] if a.pin else []
        self.server_cpus = ["taskset", "-c", "0-%d" % (n - 2)] if a.pin else []

    def load(self, url, watchers, pids, tag, start_rv=True):
        """kwp load on <url>; with <start_rv> every watch starts at rv 1 and lists nothing (the
        floor streams from its head whatever the rv); without, each LISTs at rv 0 and watches
        from the list's rv, as an informer does. kwp proxy needs the latter since 75bb04b: it
        forwards a watch from before its cache began upstream (while its history is whole),
        so rv 1 would measure the simulator through the passthrough, not kwp's watch path."""
        js = os.path.join(self.tmp, "load-%s.json" % tag)
        argv = self.client_cpus + [self.a.kwp, "load", "--target", url, "--resource", "pods", "--watchers", str(watchers)]
        argv += ["--start-rv", "1"] if start_rv else []
        argv += ["--duration", "%ds" % self.a.duration, "--ramp", "5000",
                 "--warmup", "1s", "--warmup-after-open", "--quiet", "--json", js]
        for pid in pids:
            argv += ["--pid", str(pid)]
        with open(os.path.join(self.tmp, "load.log"), "a") as err:
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=err,
                           timeout=self.a.duration * 4 + 120, check=False)
        with open(js) as f:
            return json.load(f)

    def pod_template(self):
        """One MODIFIED frame of the kwp side's own simulator (same flags), with its stamp: the
        floor-pod side serves these bytes, so a client's parsing costs what it costs on kwp."""
        path = os.path.join(self.tmp, "pod-frame.json")
        if not os.path.exists(path):
            sim, url = fo.spawn([self.a.kwp, "sim", "--listen", "127.0.0.1:0", "--stamp", "--churn", "50",
                                 "--objects", "100", "--object-bytes", str(self.a.object_bytes)],
                                os.path.join(self.tmp, "template-sim.log"))
            try:
                with urllib.request.urlopen(url + "/api/v1/pods?watch=1", timeout=10) as r:
                    for _ in range(10000):
                        line = r.readline()
                        if line.startswith(b'{"type":"MODIFIED"') and b"kwp.io/stamp-ns" in line:
                            with open(path, "wb") as f:
                                f.write(line)
                            break
            finally:
                fo.stop(sim)
        return path

    def spawn_floor(self, spec, rate, log):
        """Starts kwp_bench_floor for a side's spec BYTES[bMS] (--event-bytes, --batch-ms), or
        pod[bMS]: the kwp simulator's own pod frames (--template, pod_template)."""
        m = re.fullmatch(r"(\d+|pod)(?:b(\d+))?", spec)
        size = ["--template", self.pod_template()] if m.group(1) == "pod" else ["--event-bytes", m.group(1)]
        argv = self.server_cpus + [self.a.floor, "--rate", str(rate)] + size + [
                "--duration", "%ds" % (self.a.duration * 4 + 120)] + self.a.floor_args.split()
        if m.group(2):
            argv += ["--batch-ms", m.group(2)]
        return fo.spawn(argv, log)

    def floor_side(self, spec, watchers, rate, tag):
        log = os.path.join(self.tmp, "floor-%s.log" % tag)
        p, url = self.spawn_floor(spec, rate, log)
        try:
            d = self.load(url, watchers, [p.pid], tag)
        finally:
            fo.stop(p)
        return d, p.pid, None, floor_counters(log)

    def sink_side(self, spec, watchers, rate, tag):
        """kwp_bench_floor read by its own --sink client (no parsing): no kwp load, no latency."""
        log = os.path.join(self.tmp, "floor-%s.log" % tag)
        p, url = self.spawn_floor(spec, rate, log)
        try:
            t0, c0 = time.time(), proc_cpu_s(p.pid)
            out = subprocess.run(self.client_cpus + [self.a.floor, "--sink", url, "--conns", str(watchers),
                                  "--warmup", "1s",
                                  "--duration", "%ds" % (self.a.duration - 2)], capture_output=True,
                                 text=True, timeout=self.a.duration * 4 + 120, check=True).stdout
            server_cpu, wall = proc_cpu_s(p.pid) - c0, time.time() - t0
        finally:
            fo.stop(p)
        m = re.search(r"([\d.]+) s measured: (\d+) frames/s, ([\d.]+) MB/s read, ([\d.]+) CPU s", out)
        secs, sink_cpu = float(m.group(1)), float(m.group(4))
        row = {"events_per_s": float(m.group(2)), "mb_per_s": float(m.group(3)),
               "server_cpu_s": server_cpu, "load_cpu_s": sink_cpu, "load_pct": 100 * sink_cpu / secs,
               "server_pct": 100 * server_cpu / wall, "opened": watchers, "errors": 0,
               "bytes_per_event": int(re.match(r"\d+", spec).group(0))}
        row.update(floor_counters(log))
        return row

    def kwp_side(self, spec, watchers, rate, tag):
        """kwp proxy in front of kwp sim, started as bench/fanout.py does; side kwp[-wMS] adds
        --watch-wake-interval MSms."""
        m = re.fullmatch(r"kwp(old)?(-mhd)?(?:-w(\d+))?", spec)
        if not m:
            raise ValueError("side %r: kwp[old][-mhd][-wMS]" % spec)
        if m.group(1) and not self.a.kwp_old:
            raise ValueError("side %r needs --kwp-old" % spec)
        kwp = self.a.kwp_old if m.group(1) else self.a.kwp
        wake = ["--watch-wake-interval", m.group(3) + "ms"] if m.group(3) else []
        wake += ["--watch-direct-write=false"] if m.group(2) else []
        sim, proxy = None, None
        try:
            sim, sim_url = fo.spawn(self.server_cpus + [self.a.kwp, "sim", "--listen", "127.0.0.1:0",
                                     "--stamp", "--churn", str(rate), "--objects", "100", "--object-bytes",
                                     str(self.a.object_bytes), "--history-events", "1000000",
                                     "--compaction-interval", "0"], os.path.join(self.tmp, "sim.log"))
            proxy, url = fo.spawn(self.server_cpus + [kwp, "proxy", "--upstream", sim_url, "--listen", "127.0.0.1:0",
                                   "--resources", "pods", "--threads", str(self.a.proxy_threads)]
                                  + self.a.proxy_args.split() + wake, os.path.join(self.tmp, "kwp.log"))
            fo.wait_ready(url)
            d = self.load(url, watchers, [proxy.pid, sim.pid], tag, start_rv=False)
        finally:
            fo.stop(proxy)
            fo.stop(sim)
        return d, proxy.pid, sim.pid, {}

    def once(self, side, watchers, rate, run):
        tag = "%s-%d-%d-%d" % (side, watchers, rate, run)
        waited, idle_busy = 0, None
        if self.a.wait_quiet:
            waited, idle_busy = wait_quiet(self.a.wait_quiet, self.a.wait_max)
        before = load1()
        ticks0 = cpu_ticks()
        t0 = time.time()
        if side.startswith("sink-"):
            row = {"side": side, "watchers": watchers, "rate": rate, "run": run, "load1_before": before,
                   "waited_s": waited, "busy_before_cores": idle_busy}
            row.update(self.sink_side(side[5:], watchers, rate, tag))
            row.update(machine_share(ticks0, cpu_ticks(), row["server_cpu_s"] + row["load_cpu_s"],
                                     time.time() - t0))
            row["load1_after"] = load1()
            return row
        if side.startswith("floor-"):
            d, server_pid, sim_pid, extra = self.floor_side(side[6:], watchers, rate, tag)
        else:
            d, server_pid, sim_pid, extra = self.kwp_side(side, watchers, rate, tag)
        share = machine_share(ticks0, cpu_ticks(), sum(p["cpu_s"] or 0 for p in d["processes"]),
                              time.time() - t0)
        w = d["watch"]
        procs = {p["pid"]: p for p in d["processes"]}
        load_proc = next(p for p in d["processes"] if p["name"] == "kwp load")
        row = {"side": side, "watchers": watchers, "rate": rate, "run": run, "waited_s": waited,
               "busy_before_cores": idle_busy, "opened": w["watchers_opened"],
               "events_per_s": w["events_per_s"], "mb_per_s": w["bytes_per_s"] / 1e6,
               "bytes_per_event": w["event_bytes"] / w["events"] if w["events"] else None,
               "measured_s": d.get("measured_s"),
               "p50_ms": w["latency_ms"].get("p50"), "p99_ms": w["latency_ms"].get("p99"),
               "p999_ms": w["latency_ms"].get("p999"), "max_ms": w["latency_ms"].get("max"),
               "per_watcher_min": w["per_watcher_events"]["min"], "errors": d["errors"]["total"],
               "deleted": w.get("deleted"),
               "server_cpu_s": procs.get(server_pid, {}).get("cpu_s"),
               "sim_cpu_s": procs.get(sim_pid, {}).get("cpu_s") if sim_pid else None,
               "load_cpu_s": load_proc["cpu_s"], "elapsed_s": d.get("elapsed_s"),
               "load_pct": steady_pct(d, 0), "server_pct": steady_pct(d, 1),
               "load1_before": before, "load1_after": load1()}
        row.update(share)
        row.update(extra)
        return row


def write_report(res, path):
    fmt = fo.fmt
    a = res["params"]
    floors = [s for s in a["sides"].split(",") if s.startswith("floor-")]
    ref_side = floors[0] if floors else None
    L = ["# The machine's ceiling: kwp_bench_floor against kwp proxy", "",
         "Command: `python3 bench/floor.py %s` on %d cores shared with other work; medians of %d "
         "runs of %ds (`kwp load --ramp 5000 --warmup 1s --warmup-after-open`, with `--start-rv 1` "
         "for the floor; kwp's watchers LIST at rv 0 and watch from the list's rv). "
         "Load average (1 min) from %.1f to %.1f over the runs."
         % (a["argv"], res["machine"]["nproc"], a["runs"], a["duration"],
            min(r["load1_before"] for r in res["runs"]), max(r["load1_after"] for r in res["runs"])),
         "",
         "CPU %% is of one core, averaged over the measured seconds (kwp load's samples); "
         "\"others\" is the cores busy with everything but this run's processes (/proc/stat). "
         "The last column is delivered events/s over %s's at the same point.%s" % (
             ref_side, (" Each run waited (at most %d s) for a 5 s window with fewer than %.2f cores "
                        "busy (\"busy before\" below)." % (a["wait_max"], a["wait_quiet"]))
             if a.get("wait_quiet") else ""), "",
         "| watchers | writes/s | offered ev/s | side | B/event | delivered ev/s | MB/s read | p50 ms | "
         "p99 ms | server CPU %% | server µs/event | load CPU %% | others, cores | of %s: ev/s, µs/event, p99 |"
         % ref_side,
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def us_per_event(side, w, rate):
        """Median over the runs of the server's steady CPU per delivered event (the proxy alone
        for kwp: its simulator's CPU is in the table below)."""
        v = [r["server_pct"] * 1e4 / r["events_per_s"] for r in res["runs"]
             if r["side"] == side and r["watchers"] == w and r["rate"] == rate
             and r.get("server_pct") and r.get("events_per_s")]
        return statistics.median(v) if v else None
    ref = {(m["watchers"], m["rate"]): m for m in res["medians"] if m["side"] == ref_side}
    for m in res["medians"]:
        ratio = "-"
        base = ref.get((m["watchers"], m["rate"]))
        us = us_per_event(m["side"], m["watchers"], m["rate"])
        if m["side"] != ref_side and base and base["events_per_s"]:
            bus = us_per_event(ref_side, m["watchers"], m["rate"])
            ratio = "%.0f %%, %s x, %s x" % (
                100.0 * m["events_per_s"] / base["events_per_s"],
                fmt(us / bus, 2) if us and bus else "-",
                fmt(m["p99_ms"] / base["p99_ms"], 2) if m["p99_ms"] and base.get("p99_ms") else "-")
        L.append("| %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            m["watchers"], m["rate"], m["watchers"] * m["rate"], m["side"], fmt(m["bytes_per_event"], 0),
            fmt(m["events_per_s"], 0), fmt(m["mb_per_s"], 0), fmt(m["p50_ms"]), fmt(m["p99_ms"]),
            fmt(m["server_pct"], 0), fmt(us, 2), fmt(m["load_pct"], 0), fmt(m["others_cores"], 2), ratio))
    L += ["", "Every run, in the order run:", "",
          "| watchers | writes/s | side | run | ev/s | p50 ms | p99 ms | server CPU s | sim CPU s | "
          "load CPU s | frames/writev | others, cores | busy before, cores | load avg |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["runs"]:
        L.append("| %d | %d | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f -> %.1f |" % (
            r["watchers"], r["rate"], r["side"], r["run"], fmt(r["events_per_s"], 0),
            fmt(r.get("p50_ms")), fmt(r.get("p99_ms")), fmt(r["server_cpu_s"]), fmt(r.get("sim_cpu_s")),
            fmt(r["load_cpu_s"]), fmt(r.get("frames_per_writev"), 2), fmt(r["others_cores"], 2),
            fmt(r.get("busy_before_cores"), 2), r["load1_before"], r["load1_after"]))
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kwp", default=os.path.join(ROOT, "build", "kwp"))
    ap.add_argument("--kwp-old", default="", help="the kwp binary of the kwpold side")
    ap.add_argument("--floor", default=os.path.join(ROOT, "build", "bench", "kwp_bench_floor"))
    ap.add_argument("--points", default=DEFAULT_POINTS, help="WATCHERSxRATE,...")
    ap.add_argument("--sides", default="floor-1400,kwp,floor-1024",
                    help="floor-BYTES[bMS] (kwp_bench_floor --event-bytes BYTES [--batch-ms MS], "
                         "read by kwp load), sink-BYTES[bMS] (the same, read by kwp_bench_floor "
                         "--sink: no parsing, no latency) and/or kwp; kwp's sim pods print ~1.4 KB "
                         "per event; kwp-mhd adds --watch-direct-write=false, kwpold runs --kwp-old, "
                         "-wMS adds --watch-wake-interval MSms")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=16)
    ap.add_argument("--object-bytes", type=int, default=1024, help="kwp sim --object-bytes")
    ap.add_argument("--floor-args", default="",
                    help="extra flags for kwp_bench_floor, e.g. '--threads 2'")
    ap.add_argument("--wait-quiet", type=float, default=0, metavar="CORES",
                    help="before each run, wait until the machine's busy cores over 5 s fall below "
                         "this (a shared machine), at most --wait-max seconds; 0 = do not wait")
    ap.add_argument("--wait-max", type=float, default=600)
    ap.add_argument("--proxy-threads", type=int, default=2)
    ap.add_argument("--pin", action="store_true",
                    help="the client alone on the last CPU, the servers on the others (taskset)")
    ap.add_argument("--proxy-args", default="")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", time.strftime("%Y-%m-%d")))
    ap.add_argument("--name", default="floor", help="output files <out>/<name>.{json,md}")
    ap.add_argument("--replot", metavar="FILE.json", help="only rewrite the markdown next to FILE.json")
    a = ap.parse_args()
    if a.replot:
        with open(a.replot) as f:
            res = json.load(f)
        write_report(res, os.path.splitext(a.replot)[0] + ".md")
        return
    fo.raise_nofile()
    os.makedirs(a.out, exist_ok=True)
    r = Runner(a)
    res = {"machine": {"nproc": os.cpu_count()}, "params": dict(vars(a), argv=shlex.join(sys.argv[1:])),
           "runs": [], "medians": []}
    sides = a.sides.split(",")
    for point in a.points.split(","):
        n, rate = (int(x) for x in point.split("x"))
        rows = {s: [] for s in sides}
        for run in range(a.runs):
            order = sides if run % 2 == 0 else list(reversed(sides))
            for side in order:
                try:
                    row = r.once(side, n, rate, run)
                except Exception as e:  # a side that does not survive is recorded as such
                    print("%s N=%d rate=%d run %d failed: %s" % (side, n, rate, run, e), file=sys.stderr)
                    continue
                rows[side].append(row)
                res["runs"].append(row)
                print("%-10s N=%-6d rate=%-5d run %d: %9.0f ev/s %7.0f MB/s p50 %7.1f p99 %7.1f ms "
                      "cpu server %5.1f client %5.1f  others %.2f cores" %
                      (side, n, rate, run, row["events_per_s"], row["mb_per_s"], row.get("p50_ms") or 0,
                       row.get("p99_ms") or 0, row["server_cpu_s"] or 0, row["load_cpu_s"] or 0,
                       row["others_cores"]), flush=True)
        for s in sides:
            if rows[s]:
                res["medians"].append(fo.median_of(rows[s], KEYS))
        with open(os.path.join(a.out, a.name + ".json"), "w") as f:
            json.dump(res, f, indent=1)
    write_report(res, os.path.join(a.out, a.name + ".md"))


if __name__ == "__main__":
    main()
