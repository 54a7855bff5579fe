#!/usr/bin/env python3
"""bench/lists.py - LIST rv=0 throughput and the proxy's store memory (issue 5).

Three measurements, each against `kwp sim --churn 0` serving pods padded to --object-bytes:

  speed   LIST ?resourceVersion=0 with 1 and 32 concurrent clients (`kwp load --lists`), side
          by side on the simulator directly, through `kubectl proxy` and through `kwp proxy`,
          every front alive at once and the runs interleaved (run 1 of every case, then run 2,
          ...), so a busy moment of the shared machine hits all sides alike. MB/s is the body
          bytes of the LISTs that completed over the load process's wall time (every LIST in
          flight at the end is drained, so no partial list is lost or counted unfinished);
          latency is send to last byte. The proxy's RSS is sampled at 20 Hz: idle before the
          run and peak during it, which shows what the requests in flight cost.
  memory  kwp proxy RSS (and malloc's in-use bytes via gdb's malloc_stats(), when gdb is
          there) once synced, against a proxy in front of an empty simulator, per
          (objects, object bytes): the store's cost over the raw JSON it holds (/metrics
          kwp_object_bytes).
  gzip    --gzip-clients concurrent LISTs with Accept-Encoding: gzip through kwp (curl
          --parallel, bodies discarded unread): the proxy's RSS growth, to show a compressed
          body is streamed through zlib's window and never copied whole.

Loopback only; every process is started here and stopped by PID; every run is bounded.
Usage: python3 bench/lists.py [--objects 10000,100000] [--object-bytes 3072] [--runs 3]
       [--memory 10000x1024,100000x3072] [--out DIR] [--quick]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

from fanout import ROOT, Bench, fmt, rss_kb, spawn, stop, wait_ready


def sim_argv(a, objects, object_bytes):
    return [a.kwp, "sim", "--listen", "127.0.0.1:0", "--churn", "0", "--objects", str(objects),
            "--object-bytes", str(object_bytes), "--compaction-interval", "0"]


def kwp_argv(a, sim_url):
    return [a.kwp, "proxy", "--upstream", sim_url, "--listen", "127.0.0.1:0", "--resources",
            "pods", "--threads", str(a.threads)]


def metric(url, name):
    req = urllib.request.Request(url + "/metrics", headers={"User-Agent": "kwp-bench"})
    with urllib.request.urlopen(req, timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + "{"):
                return int(line.rsplit(" ", 1)[1])
    return None


class RssSampler:
    """Peak RSS of one process, sampled every 50 ms in a thread until stopped."""

    def __init__(self, pid):
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, rss_kb(self.pid))
            except OSError:
                return
            self._stop.wait(0.05)

    def done(self):
        self._stop.set()
        self._t.join()
        return self.peak


def malloc_in_use(pid, log):
    """malloc's total in-use bytes of <pid> (glibc malloc_stats() through gdb, printed on the
    process's stderr, which spawn() sends to <log>); None without gdb."""
    if not shutil.which("gdb"):
        return None
    start = os.path.getsize(log)
    subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "call (void)malloc_stats()"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, check=False)
    deadline = time.time() + 5
    while time.time() < deadline:
        with open(log) as f:
            f.seek(start)
            m = re.search(r"Total \(incl\. mmap\):\s*system bytes\s*=\s*(\d+)\s*in use bytes\s*=\s*(\d+)",
                          f.read())
        if m:
            return int(m.group(2))
        time.sleep(0.1)
    return None


class Lists(Bench):
    """fanout.Bench (its kubectl proxy front) plus the LIST, gzip and memory measurements."""

    def log(self, name):
        return os.path.join(self.tmp, name)

    def load(self, url, pids, conc, tag):
        """One `kwp load` LIST run; returns its JSON plus the wall time of the process."""
        js = self.log("load-%s.json" % tag)
        argv = [self.a.kwp, "load", "--target", url, "--resource", "pods", "--watchers", "0",
                "--duration", "%ds" % self.a.duration, "--lists", "1000", "--list-concurrency",
                str(conc), "--list-query", "resourceVersion=0", "--drain", "300s", "--json", js,
                "--quiet"]
        for pid in pids:
            argv += ["--pid", str(pid)]
        t0 = time.time()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=open(self.log("load.log"), "a"),
                       timeout=self.a.duration + 360, check=False)
        wall = time.time() - t0
        with open(js) as f:
            d = json.load(f)
        d["wall_s"] = wall
        return d

    def speed(self, objects):
        """Every scenario and concurrency for <objects>, runs interleaved; returns rows."""
        a = self.a
        sim, sim_url = spawn(sim_argv(a, objects, a.object_bytes), self.log("sim.log"), timeout=300)
        fronts = {}
        synced = {}
        rows = []
        try:
            for sc in a.scenarios.split(","):
                if sc == "direct":
                    fronts[sc] = (None, sim_url)
                elif sc == "kwp":
                    p, url = spawn(kwp_argv(a, sim_url), self.log("kwp.log"))
                    fronts[sc] = (p, url)
                    wait_ready(url, timeout=300)
                elif sc == "kubectl":
                    fronts[sc] = self.front("kubectl", sim_url)
            time.sleep(1)
            for sc, (p, _) in fronts.items():
                synced[sc] = rss_kb((p if p is not None else sim).pid)  # before any LIST
            for run in range(a.runs):
                for conc in [int(x) for x in a.concurrency.split(",")]:
                    for sc, (p, url) in fronts.items():
                        server = p if p is not None else sim
                        idle = rss_kb(server.pid)
                        sampler = RssSampler(server.pid)
                        d = self.load(url, [server.pid], conc, "%s-%d-%d-%d" % (sc, objects, conc, run))
                        peak = sampler.done()
                        l = d["list"]
                        lat = l["latency_ms"]
                        proc = d["processes"][-1] if d["processes"] else {}
                        row = {"scenario": sc, "objects": objects, "object_bytes": a.object_bytes,
                               "concurrency": conc, "run": run, "lists_ok": l["ok"],
                               "body_mb": l["bytes"] / max(1, l["ok"]) / 1e6,
                               "mb_per_s": l["bytes"] / d["wall_s"] / 1e6,
                               "load_mb_per_s": l["mb_per_s"], "wall_s": d["wall_s"],
                               "p50_ms": lat.get("p50"), "p99_ms": lat.get("p99"),
                               "mean_ms": lat.get("mean"), "errors": d["errors"]["total"],
                               "server_idle_rss_kb": idle, "server_peak_rss_kb": peak,
                               "server_growth_mb": (peak - idle) / 1024.0,
                               "server_synced_rss_kb": synced[sc],
                               "server_over_synced_mb": (peak - synced[sc]) / 1024.0,
                               "server_cpu_s": proc.get("cpu_s"), "load_cpu_s": d["processes"][0]["cpu_s"]
                               if d["processes"] else None}
                        rows.append(row)
                        print("list %-7s objects=%-6d conc=%-2d run=%d: %7.1f MB/s p50 %7.1f ms p99 %7.1f ms "
                              "lists %d errors %d server RSS %.0f -> %.0f MB"
                              % (sc, objects, conc, run, row["mb_per_s"], row["p50_ms"] or 0,
                                 row["p99_ms"] or 0, row["lists_ok"], row["errors"], idle / 1024.0,
                                 peak / 1024.0), flush=True)
            rows_gz = [self.gzip(sim_url, objects, run) for run in range(a.runs if a.gzip_clients else 0)]
        finally:
            for p, _ in fronts.values():
                stop(p)
            stop(sim)
        return rows, rows_gz

    def gzip(self, sim_url, objects, run):
        """--gzip-clients concurrent gzip'd LISTs (--gzip-rounds each) through a fresh kwp proxy
        (so its growth is measured from the synced state, not from what earlier runs left)."""
        a = self.a
        proxy, url = spawn(kwp_argv(a, sim_url), self.log("kwp-gzip.log"))
        try:
            wait_ready(url, timeout=300)
            time.sleep(1)
            return self.gzip_run(proxy, url, objects, run)
        finally:
            stop(proxy)

    def gzip_run(self, proxy, url, objects, run):
        a = self.a
        n = a.gzip_clients * a.gzip_rounds
        argv = ["curl", "-s", "--no-progress-meter", "--parallel", "--parallel-max", str(a.gzip_clients), "--parallel-immediate",
                "-H", "Accept-Encoding: gzip", "-A", "kwp-bench", "-w", "%{http_code} %{size_download} "
                "%{time_total} %header{content-encoding}\\n"]
        for _ in range(n):
            argv += ["-o", "/dev/null", url + "/api/v1/pods?resourceVersion=0"]
        idle = rss_kb(proxy.pid)
        sampler = RssSampler(proxy.pid)
        t0 = time.time()
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=600,
                             check=False).stdout
        wall = time.time() - t0
        peak = sampler.done()
        ok, sizes, encs = 0, [], set()
        for line in out.splitlines():
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[0] == "200":
                ok += 1
                sizes.append(int(parts[1]))
                encs.add(parts[3].strip() if len(parts) == 4 and parts[3].strip() else "identity")
        row = {"objects": objects, "run": run, "clients": a.gzip_clients, "requests": n, "ok": ok,
               "content_encoding": sorted(encs), "gz_body_mb": statistics.median(sizes) / 1e6 if sizes else None,
               "wall_s": wall, "idle_rss_kb": idle, "peak_rss_kb": peak, "growth_mb": (peak - idle) / 1024.0}
        print("gzip objects=%d run=%d: %d/%d ok (%s), %.1f MB compressed each, %.1f s, RSS %.0f -> %.0f MB"
              % (objects, run, ok, n, ",".join(row["content_encoding"]) or "-", row["gz_body_mb"] or 0, wall,
                 idle / 1024.0, peak / 1024.0), flush=True)
        return row

    def memory(self, objects, object_bytes, run):
        """kwp proxy RSS and malloc in-use once synced, minus the same for an empty simulator."""
        out = {"objects": objects, "object_bytes": object_bytes, "run": run}
        for label, n in (("empty", 0), ("loaded", objects)):
            sim, sim_url = spawn(sim_argv(self.a, n, object_bytes), self.log("sim.log"), timeout=300)
            proxy = None
            try:
                log = self.log("kwp-mem-%s.log" % label)
                proxy, url = spawn(kwp_argv(self.a, sim_url), log)
                wait_ready(url, timeout=300)
                time.sleep(1)
                out[label + "_rss_kb"] = rss_kb(proxy.pid)
                out[label + "_malloc_bytes"] = malloc_in_use(proxy.pid, log)
                out[label + "_json_bytes"] = metric(url, "kwp_object_bytes")
                out[label + "_objects"] = metric(url, "kwp_objects")
            finally:
                stop(proxy)
                stop(sim)
        raw = out["loaded_json_bytes"]
        out["rss_ratio"] = (out["loaded_rss_kb"] - out["empty_rss_kb"]) * 1024.0 / raw
        if out["loaded_malloc_bytes"] is not None and out["empty_malloc_bytes"] is not None:
            out["malloc_ratio"] = (out["loaded_malloc_bytes"] - out["empty_malloc_bytes"]) / raw
            out["malloc_overhead_per_object"] = (out["loaded_malloc_bytes"] - out["empty_malloc_bytes"] - raw) / objects
        else:
            out["malloc_ratio"] = out["malloc_overhead_per_object"] = None
        print("memory objects=%d bytes=%d run=%d: raw %.1f MB, RSS +%.1f MB (x%.3f), malloc x%s, %s B/object over"
              % (objects, object_bytes, run, raw / 1e6, (out["loaded_rss_kb"] - out["empty_rss_kb"]) / 1024.0,
                 out["rss_ratio"], fmt(out["malloc_ratio"], 3), fmt(out["malloc_overhead_per_object"], 0)),
              flush=True)
        return out


def medians(rows, group, keys):
    out = []
    for g in sorted({tuple(r[k] for k in group) for r in rows}, key=lambda t: [str(x) for x in t]):
        rs = [r for r in rows if tuple(r[k] for k in group) == g]
        m = {k: v for k, v in zip(group, g)}
        for k in keys:
            vals = [r[k] for r in rs if isinstance(r.get(k), (int, float))]
            m[k] = statistics.median(vals) if vals else None
        m["runs"] = len(rs)
        out.append(m)
    return out


SPEED_KEYS = ["mb_per_s", "load_mb_per_s", "p50_ms", "p99_ms", "mean_ms", "lists_ok", "errors", "body_mb",
              "server_idle_rss_kb", "server_peak_rss_kb", "server_growth_mb", "server_synced_rss_kb",
              "server_over_synced_mb", "server_cpu_s"]
GZIP_KEYS = ["ok", "requests", "gz_body_mb", "wall_s", "idle_rss_kb", "peak_rss_kb", "growth_mb"]
MEM_KEYS = ["loaded_json_bytes", "empty_rss_kb", "loaded_rss_kb", "rss_ratio", "malloc_ratio",
            "malloc_overhead_per_object"]


def write_report(path, res):
    a = res["params"]
    L = ["# LIST rv=0 and store memory", "",
         "Command: `python3 bench/lists.py %s` on %d cores shared by the load generator, the simulator "
         "and the fronts (and, on this machine, other people's builds). Medians of %d runs, interleaved "
         "across the fronts; objects ~%d B; simulator --threads 1, kwp --threads %d; kubectl %s."
         % (a["argv"], res["machine"]["nproc"], a["runs"], a["object_bytes"], a["threads"],
            res["machine"].get("kubectl", "-")), "",
         "## LIST ?resourceVersion=0", "",
         "MB/s = body bytes of completed LISTs / wall time of the load process (LISTs in flight at the end "
         "drained). RSS = the serving process (simulator for direct, else the front): once synced before "
         "any LIST, and the peak during the run (20 Hz samples); peak − synced is what the LISTs in flight "
         "cost plus what earlier runs left allocated.", "",
         "| objects | clients | front | MB/s | p50 ms | p99 ms | LISTs | body MB | server RSS synced → peak MB "
         "| peak − synced MB |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["speed_median"]:
        L.append("| %d | %d | %s | %s | %s | %s | %s | %s | %s → %s | %s |" % (
            r["objects"], r["concurrency"], r["scenario"], fmt(r["mb_per_s"], 0), fmt(r["p50_ms"]),
            fmt(r["p99_ms"]), fmt(r["lists_ok"], 0), fmt(r["body_mb"]),
            fmt(r["server_synced_rss_kb"] / 1024.0 if r.get("server_synced_rss_kb") else None, 0),
            fmt(r["server_peak_rss_kb"] / 1024.0 if r["server_peak_rss_kb"] else None, 0),
            fmt(r.get("server_over_synced_mb"), 0)))
    if res["gzip_median"]:
        L += ["", "## gzip'd LISTs through kwp (a fresh proxy per run)", "",
              "| objects | concurrent clients | requests ok | compressed MB each | wall s | kwp RSS synced → peak MB |",
              "|---|---|---|---|---|---|"]
        for r in res["gzip_median"]:
            L.append("| %d | %s | %s of %s | %s | %s | %s → %s |" % (
                r["objects"], a["gzip_clients"], fmt(r["ok"], 0), fmt(r["requests"], 0), fmt(r["gz_body_mb"]),
                fmt(r["wall_s"]), fmt(r["idle_rss_kb"] / 1024.0, 0), fmt(r["peak_rss_kb"] / 1024.0, 0)))
    if res["memory_median"]:
        L += ["", "## Store memory (kwp proxy, synced, no requests)", "",
              "Ratio = (process with the objects − the same process in front of an empty simulator) / raw "
              "JSON bytes held (`kwp_object_bytes`).", "",
              "| objects | object bytes | raw JSON MB | RSS empty → loaded MB | RSS ratio | malloc in-use ratio | "
              "malloc B per object over raw |", "|---|---|---|---|---|---|---|"]
        for r in res["memory_median"]:
            L.append("| %d | %d | %s | %s → %s | %s | %s | %s |" % (
                r["objects"], r["object_bytes"], fmt(r["loaded_json_bytes"] / 1e6),
                fmt(r["empty_rss_kb"] / 1024.0), fmt(r["loaded_rss_kb"] / 1024.0), fmt(r["rss_ratio"], 3),
                fmt(r["malloc_ratio"], 3), fmt(r["malloc_overhead_per_object"], 0)))
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kwp", default=os.path.join(ROOT, "build", "kwp"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", time.strftime("%Y-%m-%d")))
    ap.add_argument("--name", default="lists", help="file stem of the results: NAME.json, NAME.md")
    ap.add_argument("--objects", default="10000,100000", help="LIST speed runs; empty = none")
    ap.add_argument("--object-bytes", type=int, default=3072)
    ap.add_argument("--scenarios", default="direct,kubectl,kwp")
    ap.add_argument("--concurrency", default="1,32")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--gzip-clients", type=int, default=32)
    ap.add_argument("--gzip-rounds", type=int, default=1)
    ap.add_argument("--memory", default="10000x1024,100000x1024,10000x3072,100000x3072",
                    help="OBJECTSxBYTES,... store memory cases; empty = none")
    ap.add_argument("--quick", action="store_true", help="small sizes, 1 run (a smoke test)")
    ap.add_argument("--replot", metavar="JSON", help="only rewrite the markdown next to JSON from it")
    a = ap.parse_args()
    if a.replot:
        with open(a.replot) as f:
            res = json.load(f)
        write_report(os.path.splitext(a.replot)[0] + ".md", res)
        return
    if a.quick:
        a.objects, a.runs, a.duration, a.memory, a.gzip_rounds = "2000", 1, 3, "2000x1024", 1
    if "kubectl" in a.scenarios and not shutil.which("kubectl"):
        a.scenarios = ",".join(s for s in a.scenarios.split(",") if s != "kubectl")
    os.makedirs(a.out, exist_ok=True)
    b = Lists(a)
    kubectl = None
    if shutil.which("kubectl"):
        kubectl = subprocess.run(["kubectl", "version", "--client", "-o", "json"], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True, check=False).stdout
        try:
            kubectl = json.loads(kubectl)["clientVersion"]["gitVersion"]
        except (ValueError, KeyError):
            kubectl = None
    res = {"machine": {"nproc": os.cpu_count(), "kubectl": kubectl, "loadavg_start": os.getloadavg()},
           "params": dict(vars(a), argv=" ".join(sys.argv[1:])), "speed": [], "gzip": [], "memory": []}
    for objs in [int(x) for x in a.objects.split(",") if x]:
        rows, rows_gz = b.speed(objs)
        res["speed"] += rows
        res["gzip"] += rows_gz
    for case in [c for c in a.memory.split(",") if c]:
        objs, nbytes = (int(x) for x in case.split("x"))
        for run in range(a.runs):
            res["memory"].append(b.memory(objs, nbytes, run))
    res["machine"]["loadavg_end"] = os.getloadavg()
    res["speed_median"] = medians(res["speed"], ["objects", "concurrency", "scenario"], SPEED_KEYS)
    res["gzip_median"] = medians(res["gzip"], ["objects"], GZIP_KEYS)
    res["memory_median"] = medians(res["memory"], ["objects", "object_bytes"], MEM_KEYS)
    with open(os.path.join(a.out, a.name + ".json"), "w") as f:
        json.dump(res, f, indent=1)
    write_report(os.path.join(a.out, a.name + ".md"), res)
    print("wrote %s.{json,md}" % os.path.join(a.out, a.name))
    shutil.rmtree(b.tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
