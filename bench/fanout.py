#!/usr/bin/env python3
"""bench/fanout.py - side-by-side watch fan-out, idle-memory and LIST benchmarks (issue 5).

Every scenario runs against the same `kwp sim --stamp --churn R` (objects padded to
--object-bytes) and is measured by `kwp load` (latency = now - the kwp.io/stamp-ns annotation
the simulator writes on every change), in the steady state: from 1 s after the last watcher
opened (`kwp load --warmup-after-open`), so neither the ramp nor the replay of events that
arrived while a watcher's initial LIST was being served counts:

  direct   watchers on the simulator itself
  kubectl  `kubectl proxy` (the real tool, no cache) in front of the simulator
  kwp      `kwp proxy` in front of the simulator

For each (scenario, watchers, rate) it records delivered events/s, latency percentiles, the
number of upstream watches the simulator saw, CPU seconds and peak RSS of every process,
and repeats --runs times (medians are reported). It also measures memory per idle watcher
(kwp proxy RSS growth with N idle watches) and LIST rv=0 latency and MB/s (1 and 32
concurrent clients) direct vs through kwp. Results: <out>/results.json, <out>/README.md
(tables) and PNG plots (gnuplot, if installed).

Loopback only; every process is started here and stopped by PID; every run is bounded.
Usage: python3 bench/fanout.py [--quick] [--out DIR] [--kwp build/kwp] [--watchers 100,1000]
"""
import argparse
import json
import math
import os
import re
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FD_SLACK = 200  # descriptors a kwp process needs besides its connections
RELEASE_S = 5   # a quiet watch gives its write buffer back after this (proxy/handlers.c)
# A proxy stopped between runs exits at once instead of serving on for --shutdown-delay (the
# environment twin: binaries older than the flag ignore it). Imported by the other scripts.
os.environ.setdefault("KWP_SHUTDOWN_DELAY", "0")


def raise_nofile():
    """Soft open-file limit to the hard one, for this script and the processes it starts."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def spawn(argv, log, pattern=r"(?:listening on|Starting to serve on) (\S+)", timeout=20):
    """Starts a server, returns (proc, url) once it prints its address."""
    out = open(log, "w")
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=out, text=True)
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            if p.poll() is not None:
                raise RuntimeError("%s exited: see %s" % (argv[0], log))
            continue
        m = re.search(pattern, line)
        if m:
            url = m.group(1)
            if not url.startswith("http"):
                url = "http://" + url
            return p, url.rstrip("/")
    p.kill()
    raise RuntimeError("%s did not start within %ds" % (argv[0], timeout))


def stop(p):
    if p is None or p.poll() is not None:
        return
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def get_json(url):
    req = urllib.request.Request(url, headers={"User-Agent": "kwp-bench"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def wait_ready(url, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            req = urllib.request.Request(url + "/readyz", headers={"User-Agent": "kwp-bench"})
            with urllib.request.urlopen(req, timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            pass
        time.sleep(0.1)
    raise RuntimeError("%s not ready" % url)


def status_kb(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_kb(pid):
    return status_kb(pid, "VmRSS")


def peak_rss_kb(pid):
    return status_kb(pid, "VmHWM")


class Bench:
    def __init__(self, args):
        self.a = args
        self.tmp = tempfile.mkdtemp(prefix="kwp-bench-")

    def sim(self, churn, objects, extra=()):
        return spawn([self.a.kwp, "sim", "--listen", "127.0.0.1:0", "--stamp", "--churn", str(churn),
                      "--objects", str(objects), "--object-bytes", str(self.a.object_bytes),
                      "--history-events", "1000000", "--compaction-interval", "0"] + list(extra),
                     os.path.join(self.tmp, "sim.log"))

    def front(self, scenario, sim_url):
        """Starts what the load talks to; returns (proc or None, url)."""
        if scenario == "direct":
            return None, sim_url
        if scenario == "kwp":
            p, url = spawn([self.a.kwp, "proxy", "--upstream", sim_url, "--listen", "127.0.0.1:0",
                            "--resources", "pods", "--threads", str(self.a.threads)]
                           + self.a.proxy_args.split(),
                           os.path.join(self.tmp, "kwp.log"))
            wait_ready(url)
            return p, url
        if scenario == "kubectl":
            kc = os.path.join(self.tmp, "kubeconfig")
            with open(kc, "w") as f:
                f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: s\n  cluster: {server: %s}\n"
                        "contexts:\n- name: s\n  context: {cluster: s, user: u}\ncurrent-context: s\n"
                        "users:\n- name: u\n  user: {}\n" % sim_url)
            return spawn(["kubectl", "proxy", "--kubeconfig", kc, "--port", "0", "--address",
                          "127.0.0.1", "--cache-dir", os.path.join(self.tmp, "kc-cache")],
                         os.path.join(self.tmp, "kubectl.log"))
        raise ValueError(scenario)

    def load(self, target, pids, extra, tag):
        js = os.path.join(self.tmp, "load-%s.json" % tag)
        argv = [self.a.kwp, "load", "--target", target, "--resource", "pods", "--json", js,
                "--quiet"] + extra
        for pid in pids:
            argv += ["--pid", str(pid)]
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.tmp, "load.log"), "a"),
                       timeout=self.a.duration * 4 + 120, check=False)
        with open(js) as f:
            return json.load(f)

    def fanout_once(self, scenario, watchers, rate):
        sim, sim_url = self.sim(rate, self.a.objects)
        front = None
        try:
            front, url = self.front(scenario, sim_url)
            pids = [sim.pid] + ([front.pid] if front else [])
            # sample the upstream watch count during the run (the largest of several samples; a
            # saturated simulator may not answer: then it is recorded as unknown, not 0)
            proc = subprocess.Popen([sys.executable, "-c",
                                     "import json,sys,time,urllib.request as u\n"
                                     "best=-1\n"
                                     "time.sleep(%f)\n"
                                     "for i in range(6):\n"
                                     "  try:\n"
                                     "    r=u.Request(sys.argv[1]+'/_sim/stats',headers={'User-Agent':'b'})\n"
                                     "    best=max(best,json.load(u.urlopen(r,timeout=3))['resources']['pods']['watches_open'])\n"
                                     "  except Exception: pass\n"
                                     "  time.sleep(1)\n"
                                     "print(best)"
                                     % (2.0 + watchers / 5000.0), sim_url],
                                    stdout=subprocess.PIPE, text=True)
            d = self.load(url, pids, ["--watchers", str(watchers), "--duration", "%ds" % self.a.duration,
                                      "--ramp", "5000", "--warmup", "1s", "--warmup-after-open"],
                          "%s-%d-%d" % (scenario, watchers, rate))
            out, _ = proc.communicate(timeout=60)
            ups = int(out.strip() or -1)
            ups = ups if ups > 0 else None
        finally:
            stop(front)
            stop(sim)
        w = d["watch"]
        procs = {p["name"]: p for p in d["processes"]}
        server = procs.get("pid %d" % front.pid) if front else None
        simp = procs.get("pid %d" % sim.pid)
        return {
            "scenario": scenario, "watchers": watchers, "rate": rate,
            "opened": w["watchers_opened"], "events_per_s": w["events_per_s"],
            "p50_ms": w["latency_ms"].get("p50"), "p99_ms": w["latency_ms"].get("p99"),
            "p999_ms": w["latency_ms"].get("p999"), "max_ms": w["latency_ms"].get("max"),
            "measured_from_s": w.get("measured_from_s"),
            "per_watcher_min": w["per_watcher_events"]["min"],
            "per_watcher_max": w["per_watcher_events"]["max"],
            "errors": d["errors"]["total"], "upstream_watches": ups,
            "sim_cpu_s": simp["cpu_s"] if simp else None, "sim_rss_kb": simp["rss_max_kb"] if simp else None,
            "proxy_cpu_s": server["cpu_s"] if server else None,
            "proxy_rss_kb": server["rss_max_kb"] if server else None,
            "load_cpu_s": procs["kwp load"]["cpu_s"],
        }

    def idle_memory(self, watchers):
        """RSS growth of kwp proxy per idle watch: N watches from one or more `kwp load`
        processes (each within the open-file limit, each from its own loopback addresses),
        RSS sampled once every watch is open and quiet for longer than RELEASE_S."""
        hard = raise_nofile()
        if watchers + FD_SLACK > hard:
            return {"watchers": watchers, "opened": 0, "skipped":
                    "the open-file hard limit (%d) allows one process at most %d connections; "
                    "raise it (ulimit -Hn) to hold %d watches in one kwp proxy"
                    % (hard, hard - FD_SLACK, watchers)}
        per_load = hard - FD_SLACK
        n_loads = max(1, math.ceil(watchers / per_load))
        ramp = 5000
        ramp_s = watchers / ramp / n_loads
        hold_s = ramp_s + RELEASE_S + 6
        sim, sim_url = self.sim(0, self.a.objects)
        front, loads = None, []
        try:
            front, url = self.front("kwp", sim_url)
            time.sleep(1)
            base = rss_kb(front.pid)
            for i in range(n_loads):
                share = watchers // n_loads + (1 if i < watchers % n_loads else 0)
                js = os.path.join(self.tmp, "idle-%d-%d.json" % (watchers, i))
                # distinct source addresses per process: they share no local ports
                srcs = "127.0.%d.1-127.0.%d.%d" % (i + 1, i + 1, share // 10000 + 2)
                argv = [self.a.kwp, "load", "--target", url, "--resource", "pods", "--json", js,
                        "--quiet", "--watchers", str(share), "--ramp", str(ramp),
                        "--duration", "%ds" % math.ceil(hold_s + 6), "--source-ips", srcs]
                loads.append((subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                               stderr=open(os.path.join(self.tmp, "load.log"), "a")),
                              js))
            time.sleep(hold_s)
            samples = []
            for _ in range(3):
                samples.append(rss_kb(front.pid))
                time.sleep(1)
            for p, _ in loads:
                p.wait(timeout=hold_s + 120)
            peak = peak_rss_kb(front.pid)
        finally:
            for p, _ in loads:
                stop(p)
            stop(front)
            stop(sim)
        opened = 0
        for _, js in loads:
            with open(js) as f:
                opened += json.load(f)["watch"]["watchers_opened"]
        held = statistics.median(samples)
        return {"watchers": watchers, "opened": opened, "load_processes": n_loads,
                "base_rss_kb": base, "held_rss_kb": held, "peak_rss_kb": peak,
                "kb_per_watch": (held - base) / max(1, opened)}

    def lists(self, objects, concurrency, scenario):
        sim, sim_url = self.sim(0, objects)
        front = None
        try:
            front, url = self.front(scenario, sim_url)
            pids = [sim.pid] + ([front.pid] if front else [])
            d = self.load(url, pids, ["--watchers", "0", "--duration", "%ds" % self.a.duration,
                                      "--lists", "1000", "--list-concurrency", str(concurrency),
                                      "--list-query", "resourceVersion=0"],
                          "list-%s-%d-%d" % (scenario, objects, concurrency))
        finally:
            stop(front)
            stop(sim)
        l = d["list"]
        procs = {p["name"]: p for p in d["processes"]}
        server = procs.get("pid %d" % front.pid) if front else procs.get("pid %d" % sim.pid)
        return {"scenario": scenario, "objects": objects, "concurrency": concurrency,
                "lists_ok": l["ok"], "mb_per_s": l["mb_per_s"], "p50_ms": l["latency_ms"].get("p50"),
                "p99_ms": l["latency_ms"].get("p99"), "server_rss_kb": server["rss_max_kb"],
                "server_cpu_s": server["cpu_s"]}


def median_of(rows, keys):
    out = dict(rows[0])
    for k in keys:
        vals = [r[k] for r in rows if isinstance(r.get(k), (int, float))]
        out[k] = statistics.median(vals) if vals else None
    out["runs"] = len(rows)
    return out


def fmt(v, nd=1):
    if v is None:
        return "-"
    if isinstance(v, float):
        return ("%%.%df" % nd) % v
    return str(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kwp", default=os.path.join(ROOT, "build", "kwp"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", time.strftime("%Y-%m-%d")))
    ap.add_argument("--watchers", default="100,1000,5000,10000,20000")
    ap.add_argument("--rates", default="100")
    ap.add_argument("--scenarios", default="direct,kubectl,kwp")
    ap.add_argument("--duration", type=int, default=16,
                    help="seconds per run; measured from 1 s after every watcher is open (or from "
                         "half the run when they never all open)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--objects", type=int, default=100)
    ap.add_argument("--object-bytes", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--idle", default="1000,10000",
                    help="idle watch counts for memory per watch, e.g. 1000,20000,50000 (each needs "
                         "an open-file hard limit above it)")
    ap.add_argument("--proxy-args", default="", help="extra flags for kwp proxy, e.g. '--conn-memory 16Ki'")
    ap.add_argument("--list-objects", default="10000")
    ap.add_argument("--quick", action="store_true", help="small sizes, 1 run (a smoke test)")
    ap.add_argument("--replot", metavar="DIR", help="only rewrite README.md and plots from DIR/results.json")
    a = ap.parse_args()
    if a.replot:
        with open(os.path.join(a.replot, "results.json")) as f:
            res = json.load(f)
        p = argparse.Namespace(**res["params"])
        p.out = a.replot
        write_report(p, res, res["params"].get("argv", ""))
        return
    if a.quick:
        a.watchers, a.runs, a.duration, a.idle, a.list_objects = "100,1000", 1, 4, "1000", "2000"
    if not shutil.which("kubectl") and "kubectl" in a.scenarios:
        a.scenarios = ",".join(s for s in a.scenarios.split(",") if s != "kubectl")
    os.makedirs(a.out, exist_ok=True)
    b = Bench(a)
    res = {"machine": {"nproc": os.cpu_count()}, "params": dict(vars(a), argv=shlex.join(sys.argv[1:])),
           "fanout": [], "idle": [], "lists": []}
    keys = ["events_per_s", "p50_ms", "p99_ms", "p999_ms", "max_ms", "sim_cpu_s", "proxy_cpu_s",
            "proxy_rss_kb", "sim_rss_kb", "upstream_watches", "opened", "errors", "per_watcher_min",
            "per_watcher_max", "load_cpu_s"]
    for rate in [int(x) for x in a.rates.split(",")]:
        for n in [int(x) for x in a.watchers.split(",") if x]:
            for sc in a.scenarios.split(","):
                rows = []
                for _ in range(a.runs):
                    try:
                        rows.append(b.fanout_once(sc, n, rate))
                    except Exception as e:  # a side that does not survive is recorded as such
                        print("fanout %s N=%d rate=%d failed: %s" % (sc, n, rate, e), file=sys.stderr)
                if rows:
                    m = median_of(rows, keys)
                    m["all_runs"] = rows
                    res["fanout"].append(m)
                    print("fanout %-8s N=%-6d rate=%-5d events/s=%-9s p50=%sms p99=%sms upstream=%s"
                          % (sc, n, rate, fmt(m["events_per_s"], 0), fmt(m["p50_ms"]), fmt(m["p99_ms"]),
                             m["upstream_watches"]), flush=True)
    for n in [int(x) for x in a.idle.split(",") if x]:
        rows = [b.idle_memory(n) for _ in range(a.runs)]
        if "skipped" in rows[0]:
            res["idle"].append(rows[0])
            print("idle N=%d: skipped: %s" % (n, rows[0]["skipped"]), flush=True)
            continue
        m = median_of(rows, ["kb_per_watch", "peak_rss_kb", "held_rss_kb", "base_rss_kb", "opened"])
        m["all_runs"] = rows
        res["idle"].append(m)
        print("idle N=%d: %.1f KB per watch, %d opened" % (n, m["kb_per_watch"], m["opened"]),
              flush=True)
    for objs in [int(x) for x in a.list_objects.split(",") if x]:
        for conc in (1, 32):
            for sc in ("direct", "kwp"):
                rows = [b.lists(objs, conc, sc) for _ in range(a.runs)]
                m = median_of(rows, ["mb_per_s", "p50_ms", "p99_ms", "server_rss_kb", "lists_ok"])
                res["lists"].append(m)
                print("list %s objects=%d conc=%d: %s MB/s p50 %s ms" % (sc, objs, conc, fmt(m["mb_per_s"]),
                                                                       fmt(m["p50_ms"])), flush=True)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    write_report(a, res, shlex.join(sys.argv[1:]))
    shutil.rmtree(b.tmp, ignore_errors=True)


def write_report(a, res, argv):
    L = ["# Fan-out benchmark results", "",
         "Command: `python3 bench/fanout.py %s` on %d cores (client and servers share them). "
         "Medians of %d runs of %ds each; objects ~%d B; latency = simulator write to client parse. "
         "`opened` = watches that completed their LIST and got their WATCH answered within the run."
         % (argv, res["machine"]["nproc"], a.runs, a.duration, a.object_bytes), "",
         "## Watch fan-out", "",
         "| scenario | watchers | writes/s | opened | delivered ev/s | p50 ms | p99 ms | p99.9 ms | "
         "upstream watches | proxy CPU s | proxy peak RSS MB | sim CPU s |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["fanout"]:
        L.append("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["scenario"], r["watchers"], r["rate"], fmt(r["opened"], 0), fmt(r["events_per_s"], 0),
            fmt(r["p50_ms"]), fmt(r["p99_ms"]), fmt(r["p999_ms"]), fmt(r["upstream_watches"], 0),
            fmt(r["proxy_cpu_s"]), fmt(r["proxy_rss_kb"] / 1024 if r["proxy_rss_kb"] else None),
            fmt(r["sim_cpu_s"])))
    L += ["", "## Memory per idle watch (kwp proxy)", "",
          "RSS once every watch is open and quiet for more than %d s, minus RSS before; peak = VmHWM."
          % RELEASE_S, "",
          "| watches | opened | base RSS MB | held RSS MB | peak RSS MB | KB per watch |",
          "|---|---|---|---|---|---|"]
    for r in res["idle"]:
        if "skipped" in r:
            L.append("| %d | - | - | - | - | not run: %s |" % (r["watchers"], r["skipped"]))
            continue
        held = r.get("held_rss_kb", r["peak_rss_kb"])
        L.append("| %d | %s | %.1f | %.1f | %.1f | %.1f |" % (
            r["watchers"], fmt(r["opened"], 0), r["base_rss_kb"] / 1024, held / 1024,
            r["peak_rss_kb"] / 1024, r["kb_per_watch"]))
    L += ["", "## LIST rv=0", "", "| scenario | objects | concurrent clients | lists | MB/s | p50 ms | p99 ms | server peak RSS MB |",
          "|---|---|---|---|---|---|---|---|"]
    for r in res["lists"]:
        L.append("| %s | %d | %d | %s | %s | %s | %s | %s |" % (
            r["scenario"], r["objects"], r["concurrency"], fmt(r["lists_ok"], 0), fmt(r["mb_per_s"]),
            fmt(r["p50_ms"]), fmt(r["p99_ms"]), fmt(r["server_rss_kb"] / 1024 if r["server_rss_kb"] else None)))
    with open(os.path.join(a.out, "README.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    if shutil.which("gnuplot") and res["fanout"]:
        dat = os.path.join(a.out, "fanout.dat")
        # one series per scenario and write rate (gnuplot index), in the order they ran
        series = []
        for r in res["fanout"]:
            if (r["scenario"], r["rate"]) not in series:
                series.append((r["scenario"], r["rate"]))
        rates = {rate for _, rate in series}
        with open(dat, "w") as f:
            for sc, rate in series:
                f.write("# %s %d writes/s\n" % (sc, rate))
                for r in res["fanout"]:
                    if r["scenario"] == sc and r["rate"] == rate:
                        f.write("%d %s %s %s\n" % (r["watchers"], r["events_per_s"] or 0, r["p50_ms"] or 0,
                                                    r["p99_ms"] or 0))
                f.write("\n\n")
        logy = "set logscale y; " if len(rates) > 1 else ""
        for col, name, ylabel in ((2, "throughput", "delivered events/s"), (4, "latency_p99", "p99 latency (ms)")):
            plot = ", ".join("'%s' index %d using 1:%d with linespoints title '%s%s'"
                             % (dat, i, col, sc, " %d/s" % rate if len(rates) > 1 else "")
                             for i, (sc, rate) in enumerate(series))
            subprocess.run(["gnuplot", "-e", "set terminal pngcairo size 800,500; set output '%s';"
                            "set logscale x; %sset xlabel 'watchers'; set ylabel '%s'; set key outside right; plot %s"
                            % (os.path.join(a.out, name + ".png"), logy, ylabel, plot)], check=False)


if __name__ == "__main__":
    main()
