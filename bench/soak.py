#!/usr/bin/env python3
"""bench/soak.py - a long run of everything at once, sampled each minute (issue 14).

One `kwp sim --stamp --churn R --objects N` (pods), one `kwp proxy --resources pods` in front
of it, and on the proxy, for --minutes (default 30):

  steady     `kwp load --watchers W` (default 5,000): reflector-style watches held all run;
  churn      connection churn from this script: --churn-rate watches opened per second (half
             with a labelSelector), each closed after 0.2-2 s (a few hundred open at most);
  lists      paged LISTs (limit=200 + continue, to the end) cycling through no selector, a
             labelSelector and fieldSelectors, one walk after another, plus `kwp load --lists`
             first pages with a labelSelector at --list-rate per second;
  slow       --slow sockets that read 2 KB per second (receive buffer 16 KB): kwp must end each
             by --watch-max-lag / --watch-stall-timeout; each reopens 1 s after it was ended;
  relists    every --relist-every seconds a forced relist: the proxy is frozen (SIGSTOP), the sim
             ends its pods watch (POST /_sim/drop-watches) and compacts past it (POST
             /_sim/compact) while writes go on, the proxy is thawed (SIGCONT): its re-watch gets
             410 and it relists, ending its watches, and every steady watcher relists from it.

Each --sample seconds (60) and at start and end: the proxy's and the sim's RSS
(/proc/PID/status VmRSS), open fds (/proc/PID/fd) and CPU seconds (/proc/PID/stat), the
loadavg, and from the proxy's /metrics the per-interval p50/p99 of
kwp_watch_event_delivery_lag_seconds (bucket-interpolated), watches open, relists and ended
watchers; also the steady watchers' end-to-end latency per interval from kwp load's per-second
series (stamp to parse; median of the per-second p50s, the largest per-second p99).

Leak check: a cold sample after --baseline-wait s of writes with no client (the history window,
75 s by default, is full by then); then a --warmup of the same load (120 s, one forced relist)
and --settle s with no client, and the baseline: what the first peak sizes once (glibc's arenas
per thread, tables sized by the most connections) is in it, so the check sees what the long
run adds. At the end every client stops, and after --settle s the proxy's fds must equal the
baseline exactly (except its idle keep-alive connections to the upstream, libcurl's cache,
counted apart), its RSS be within --rss-tolerance of the baseline, and its heap bytes in use
(kwp_heap_inuse_bytes, glibc's mallinfo2) within the tolerance or 1 MB. glibc keeps freed
memory in its per-thread arenas (kwp trims them itself after many connections closed,
kwp_malloc_trims_total); with --malloc-trim the script also attaches gdb for a
moment at the baseline and at the end, calls malloc_trim(0) in the proxy and compares the RSS
after it (both figures are recorded). Off by default: on this VM a gdb attach once broke the
interrupted syscall of the process it attached to (bench/README.md "Soak").
With --asan BUILD_DIR the sim and proxy are that build's kwp (ASAN_OPTIONS=detect_leaks=1; the
proxy and sim exit on SIGTERM, so a leak at exit is reported) and any sanitizer report in their
stderr fails the run. Exit status 1 on a leak, a sanitizer report or a process that died.

Writes <out>/soak.csv, soak.json (params, samples, checks, client counters) and soak.png.
Loopback only; every process is started here and stopped by PID; every loop is bounded in time.
Usage: python3 bench/soak.py [--minutes 30] [--watchers 5000] [--asan build-asan] [--out DIR]
"""
import argparse
import csv
import http.client
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

from fanout import ROOT, raise_nofile, rss_kb, spawn, stop

CLK_TCK = os.sysconf("SC_CLK_TCK")
SANITIZER = re.compile(r"ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:|SUMMARY: \w+Sanitizer")
LABELS = ["app=web", "tier=backend", "app in (api,cache)", "tier!=data"]
FIELDS = ["metadata.namespace=default", "status.phase=Running", "status.phase!=Running"]


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / CLK_TCK  # utime, stime (fields 14 and 15)


def tcp_table():
    """/proc/net/tcp as {(local port, remote port): (state, inode)} (loopback, IPv4)."""
    t = {}
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            w = line.split()
            t[(int(w[1].split(":")[1], 16), int(w[2].split(":")[1], 16))] = (w[3], int(w[9]))
    return t


def fd_detail(pid):
    """What each open fd is: a path, or for a TCP socket its local and remote ports."""
    by_inode = {inode: "tcp %d->%d %s" % (lp, rp, st) for (lp, rp), (st, inode) in tcp_table().items()}
    out = []
    for fd in sorted(os.listdir("/proc/%d/fd" % pid), key=int):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        m = re.match(r"socket:\[(\d+)\]", target)
        out.append("%s %s" % (fd, by_inode.get(int(m.group(1)), target) if m else target))
    return out


def upstream_fds(detail, port):
    """How many of fd_detail()'s entries are TCP connections to <port> (the upstream)."""
    return sum(1 for d in detail if re.search(r" tcp \d+->%d " % port, d))


def malloc_trim(pid):
    """Calls malloc_trim(0) inside <pid> (gdb, attached for a moment): glibc gives the free
    pages of every arena back, so the RSS that remains is memory in use. Returns whether it ran."""
    if not shutil.which("gdb"):
        return False
    r = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "call (int)malloc_trim(0)"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, check=False)
    return r.returncode == 0


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def http_get(url, timeout=10):
    req = urllib.request.Request(url, headers={"User-Agent": "kwp-soak"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read()


def http_post(url):
    req = urllib.request.Request(url, data=b"", method="POST", headers={"User-Agent": "kwp-soak"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read()


def metrics(url):
    """The proxy's /metrics as {name{labels}: value} (the families this script reads)."""
    out = {}
    for line in http_get(url + "/metrics").decode().splitlines():
        if line.startswith("#") or not line:
            continue
        k, _, v = line.rpartition(" ")
        out[k] = float(v)
    return out


def lag_hist(m):
    """kwp_watch_event_delivery_lag_seconds as [(le seconds, cumulative count)]."""
    h = []
    for k, v in m.items():
        mm = re.match(r'kwp_watch_event_delivery_lag_seconds_bucket\{le="([^"]+)"\}', k)
        if mm:
            h.append((float("inf") if mm.group(1) == "+Inf" else float(mm.group(1)), v))
    return sorted(h)


def hist_quantile(prev, cur, q):
    """q-quantile (ms) of the events counted between two cumulative histograms, linear within a
    bucket as Prometheus' histogram_quantile; None when nothing was counted."""
    d = [(le, c - (prev[i][1] if prev else 0)) for i, (le, c) in enumerate(cur)]
    total = d[-1][1] if d else 0
    if total <= 0:
        return None
    rank = q * total
    lo_le, lo_c = 0.0, 0.0
    for le, c in d:
        if c >= rank:
            if le == float("inf"):
                return lo_le * 1000
            return (lo_le + (le - lo_le) * (rank - lo_c) / max(c - lo_c, 1e-9)) * 1000
        lo_le, lo_c = le, c
    return None


def req_line(path):
    return ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: kwp-soak\r\n\r\n" % path).encode()


class Clients:
    """The script's own clients: connection churn, paged LISTs, slow readers, forced relists."""

    def __init__(self, a, sim, px, px_proc, warmup=False):
        self.a, self.sim, self.px, self.px_proc = a, sim, px, px_proc
        self.warmup = warmup
        u = urllib.parse.urlsplit(px)
        self.addr = (u.hostname, u.port)
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.c = {"churn_opened": 0, "churn_closed": 0, "churn_errors": 0, "churn_410": 0,
                  "list_walks": 0, "list_pages": 0, "list_errors": 0, "list_items": 0,
                  "slow_opened": 0, "slow_ended_by_kwp": 0, "slow_end_s": [], "slow_errors": 0,
                  "relists_forced": 0, "relist_errors": 0}
        self.rv = "0"
        self.threads = []

    def count(self, k, n=1):
        with self.lock:
            self.c[k] += n

    def start(self):
        for fn in (self.churn, self.lists, self.slow, self.relists):
            t = threading.Thread(target=fn, daemon=True)
            t.start()
            self.threads.append(t)

    def join(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=30)

    def current_rv(self):
        body = http_get(self.px + "/api/v1/pods?limit=1")
        return json.loads(body)["metadata"]["resourceVersion"]

    def churn(self):
        """Opens --churn-rate watches per second from a recent rv, closes each after 0.2-2 s."""
        rnd = random.Random(1)
        open_ = {}  # socket -> (deadline, got_status)
        period = 1.0 / self.a.churn_rate if self.a.churn_rate > 0 else None
        next_open = time.monotonic()
        next_rv = 0.0
        while not self.stop.is_set():
            now = time.monotonic()
            if period and now >= next_open and len(open_) < 1000:
                next_open += period
                if next_open < now - 1:
                    next_open = now  # fell behind (a frozen proxy): no burst to catch up
                try:
                    if now >= next_rv:
                        self.rv = self.current_rv()
                        next_rv = now + 2
                    q = "watch=true&allowWatchBookmarks=true&resourceVersion=%s" % self.rv
                    if rnd.random() < 0.5:
                        q += "&labelSelector=" + urllib.parse.quote(rnd.choice(LABELS))
                    s = socket.create_connection(self.addr, timeout=5)
                    s.setblocking(False)
                    s.sendall(req_line("/api/v1/pods?" + q))
                    open_[s] = [now + rnd.uniform(0.2, 2.0), False]
                    self.count("churn_opened")
                except OSError:
                    self.count("churn_errors")
            for s in [s for s, v in open_.items() if v[0] <= now]:
                s.close()
                del open_[s]
                self.count("churn_closed")
            if open_:
                r, _, _ = select.select(list(open_), [], [], 0.005)
                for s in r:
                    try:
                        data = s.recv(65536)
                    except OSError:
                        data = b""
                    st = open_[s]
                    if not st[1] and data:
                        st[1] = True
                        if not data.startswith(b"HTTP/1.1 200"):
                            with self.lock:
                                k = "churn_http_" + data[9:12].decode(errors="replace")
                                self.c[k] = self.c.get(k, 0) + 1
                    if b'"code":410' in data:
                        self.count("churn_410")
                    if not data:  # ended by the server before its time: counted, closed
                        s.close()
                        del open_[s]
                        self.count("churn_closed")
            else:
                time.sleep(0.005)
        for s in open_:
            s.close()
            self.count("churn_closed")

    def lists(self):
        """Paged LIST walks (limit=200, continue), cycling through the selectors, back to back."""
        queries = [""] + ["labelSelector=" + urllib.parse.quote(x) for x in LABELS] + \
                  ["fieldSelector=" + urllib.parse.quote(x) for x in FIELDS]
        i = 0
        c = None
        while not self.stop.is_set():
            q = queries[i % len(queries)]
            i += 1
            cont = None
            try:
                if c is None:
                    c = http.client.HTTPConnection(*self.addr, timeout=30)
                for _ in range(1000):  # pages of one walk, bounded
                    path = "/api/v1/pods?limit=200" + ("&" + q if q else "")
                    if cont:
                        path += "&continue=" + urllib.parse.quote(cont)
                    c.request("GET", path, headers={"User-Agent": "kwp-soak"})
                    r = c.getresponse()
                    body = r.read()
                    if r.status != 200:
                        self.count("list_errors")
                        break
                    d = json.loads(body)
                    self.count("list_pages")
                    self.count("list_items", len(d.get("items", [])))
                    cont = d["metadata"].get("continue")
                    if not cont:
                        self.count("list_walks")
                        break
            except (OSError, http.client.HTTPException, ValueError):
                self.count("list_errors")
                if c is not None:
                    c.close()
                c = None
                self.stop.wait(1)
            self.stop.wait(self.a.list_pause)
        if c is not None:
            c.close()

    def slow(self):
        """--slow watches read 2 KB a second; each one kwp ends is reopened 1 s later."""
        socks = {}  # socket -> opened at
        pending = [time.monotonic() + i * 0.1 for i in range(self.a.slow)]  # reopen times
        while not self.stop.is_set():
            now = time.monotonic()
            for t in [t for t in pending if t <= now]:
                pending.remove(t)
                try:
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
                    s.settimeout(5)
                    s.connect(self.addr)
                    s.sendall(req_line("/api/v1/pods?watch=true&resourceVersion=%s" % self.rv))
                    s.setblocking(False)
                    socks[s] = now
                    self.count("slow_opened")
                except OSError:
                    self.count("slow_errors")
                    pending.append(now + 1)
            # kwp has ended a watch when its side of the connection is no longer ESTABLISHED
            # or no longer held by a process (inode 0: closed, the kernel still sending the
            # bytes queued): the reader itself would see the end only after those bytes
            table = tcp_table() if socks else {}
            for s in list(socks):
                try:
                    data = s.recv(2048)
                except BlockingIOError:
                    data = None
                except OSError:
                    data = b""
                srv = table.get((self.addr[1], s.getsockname()[1]))
                if data == b"" or srv is None or srv[0] != "01" or srv[1] == 0:
                    with self.lock:
                        self.c["slow_ended_by_kwp"] += 1
                        self.c["slow_end_s"].append(round(now - socks[s], 1))
                    s.close()
                    del socks[s]
                    pending.append(now + 1)
            self.stop.wait(1.0)
        for s in socks:
            s.close()

    def force_relist(self):
        """Freezes the proxy, ends and compacts past its upstream watch, thaws it; records what the
        sim answered and whether kwp relisted (kwp_relists_total 10 s later) in "relist_log"."""
        try:
            before = metrics(self.px)
            st0 = json.loads(http_get(self.sim + "/_sim/stats"))
            rev0 = st0["revision"]
            self.px_proc.send_signal(signal.SIGSTOP)
            t0 = time.time()
            try:
                dropped = http_post(self.sim + "/_sim/drop-watches?resource=pods")
                time.sleep(0.5)  # writes the proxy's watch never carries
                compacted = http_post(self.sim + "/_sim/compact?revision=18446744073709551615")
            finally:
                self.px_proc.send_signal(signal.SIGCONT)
            self.count("relists_forced")
            time.sleep(10)
            after = metrics(self.px)
            st1 = json.loads(http_get(self.sim + "/_sim/stats"))
            k_rel, k_up = 'kwp_relists_total{resource="pods"}', 'kwp_upstream_watch_requests_total{resource="pods"}'
            entry = {"t": time.strftime("%H:%M:%S", time.gmtime(t0)), "revision_before": rev0, "dropped": dropped.decode(errors="replace").strip(),
                     "compacted": compacted.decode(errors="replace").strip(),
                     "relisted": after.get(k_rel, 0) > before.get(k_rel, 0),
                     "upstream_watches": after.get(k_up, 0) - before.get(k_up, 0),
                     "sim_pods_watches": st1["resources"]["pods"]["watches"] - st0["resources"]["pods"]["watches"],
                     "sim_pods_watches_open": [st0["resources"]["pods"]["watches_open"],
                                               st1["resources"]["pods"]["watches_open"]]}
            with self.lock:
                self.c.setdefault("relist_log", []).append(entry)
        except OSError:
            self.count("relist_errors")

    def relists(self):
        """Every --relist-every s a forced relist (the warm-up: one, at half of it)."""
        every = self.a.relist_every if not self.warmup else self.a.warmup / 2
        while not self.stop.wait(every):
            self.force_relist()
            if self.warmup:
                return


class Sampler:
    def __init__(self, px, px_pid, sim_pid):
        self.px, self.px_pid, self.sim_pid = px, px_pid, sim_pid
        self.t0 = time.monotonic()
        self.rows = []
        self.prev_hist = None

    def sample(self, phase):
        procs = (rss_kb(self.px_pid), fds(self.px_pid), cpu_s(self.px_pid))  # before /metrics
        m = metrics(self.px)
        h = lag_hist(m)
        row = {
            "t_s": round(time.monotonic() - self.t0, 1),
            "phase": phase,
            "proxy_rss_mb": round(procs[0] / 1024, 1),
            "proxy_fds": procs[1],
            "proxy_cpu_s": round(procs[2], 2),
            "sim_rss_mb": round(rss_kb(self.sim_pid) / 1024, 1),
            "sim_fds": fds(self.sim_pid),
            "sim_cpu_s": round(cpu_s(self.sim_pid), 2),
            "loadavg": loadavg(),
            "watches_open": int(m.get('kwp_watches_open{resource="pods"}', 0)),
            "relists": int(m.get('kwp_relists_total{resource="pods"}', 0)),
            "terminated": int(m.get('kwp_terminated_watchers_total{resource="pods"}', 0)),
            "lag_p50_ms": None,
            "lag_p99_ms": None,
            # glibc's view (kwp_heap_*, not exported under ASan): in use grows with a leak, free
            # is what glibc's arenas keep
            "heap_inuse_mb": round(m["kwp_heap_inuse_bytes"] / 1048576, 1) if "kwp_heap_inuse_bytes" in m else None,
            "heap_free_mb": round(m["kwp_heap_free_bytes"] / 1048576, 1) if "kwp_heap_free_bytes" in m else None,
        }
        if phase in ("cold", "baseline-raw", "baseline", "end", "end-trim"):
            row["fd_detail"] = fd_detail(self.px_pid)
        if self.prev_hist is not None:
            for q, k in ((0.5, "lag_p50_ms"), (0.99, "lag_p99_ms")):
                v = hist_quantile(self.prev_hist, h, q)
                row[k] = round(v, 1) if v is not None else None
        self.prev_hist = h
        if self.rows:
            p = self.rows[-1]
            dt = row["t_s"] - p["t_s"]
            row["proxy_cpu_pct"] = round(100 * (row["proxy_cpu_s"] - p["proxy_cpu_s"]) / dt, 1) if dt else None
            row["sim_cpu_pct"] = round(100 * (row["sim_cpu_s"] - p["sim_cpu_s"]) / dt, 1) if dt else None
        else:
            row["proxy_cpu_pct"] = row["sim_cpu_pct"] = None
        self.rows.append(row)
        print("soak: %6.0fs %-8s rss %6.1f MB heap %s MB fds %5d cpu %5s%% watches %5d lag p50/p99 %s/%s ms load %.1f"
              % (row["t_s"], phase, row["proxy_rss_mb"], row["heap_inuse_mb"], row["proxy_fds"],
                 row["proxy_cpu_pct"], row["watches_open"], row["lag_p50_ms"], row["lag_p99_ms"],
                 row["loadavg"]), flush=True)
        return row


def load_latency(series, rows, t_load0):
    """Adds the steady watchers' end-to-end latency per sample interval from kwp load's series."""
    for i in range(1, len(rows)):
        lo, hi = rows[i - 1]["t_s"] - t_load0, rows[i]["t_s"] - t_load0
        sec = [s for s in series if lo < s["t"] <= hi and s.get("latency_count")]
        p50s = sorted(s["p50_ms"] for s in sec)
        rows[i]["load_p50_ms"] = round(p50s[len(p50s) // 2], 1) if p50s else None
        rows[i]["load_p99max_ms"] = round(max(s["p99_ms"] for s in sec), 1) if sec else None
        rows[i]["load_events"] = sum(s["events"] for s in series if lo < s["t"] <= hi)


def plot(out, rows):
    if not shutil.which("gnuplot"):
        print("soak: gnuplot not installed, no plot", file=sys.stderr)
        return
    dat = os.path.join(out, "soak.dat")
    with open(dat, "w") as f:
        f.write("# min rss_mb fds cpu_pct lag_p50 lag_p99 load_p50 load_p99max heap_inuse_mb\n")
        for r in rows:
            f.write("%.2f %s %s %s %s %s %s %s %s\n" % (
                r["t_s"] / 60, r["proxy_rss_mb"], r["proxy_fds"], r["proxy_cpu_pct"] or "NaN",
                r["lag_p50_ms"] if r["lag_p50_ms"] is not None else "NaN",
                r["lag_p99_ms"] if r["lag_p99_ms"] is not None else "NaN",
                r.get("load_p50_ms") if r.get("load_p50_ms") is not None else "NaN",
                r.get("load_p99max_ms") if r.get("load_p99max_ms") is not None else "NaN",
                r["heap_inuse_mb"] if r.get("heap_inuse_mb") is not None else "NaN"))
    d = "'%s'" % dat
    script = (
        "set terminal pngcairo size 900,900; set output '%s';"
        "set multiplot layout 4,1; set xlabel 'minutes'; set grid; set key outside right;"
        "set ylabel 'MB'; plot %s using 1:2 with linespoints title 'proxy RSS', %s using 1:9 with linespoints title 'heap in use';"
        "set ylabel 'fds'; plot %s using 1:3 with linespoints title 'proxy fds';"
        "set ylabel 'CPU %%'; plot %s using 1:4 with linespoints title 'proxy CPU';"
        "set ylabel 'ms'; set logscale y; plot %s using 1:5 with linespoints title 'kwp lag p50',"
        " %s using 1:6 with linespoints title 'kwp lag p99', %s using 1:7 with linespoints title 'e2e p50',"
        " %s using 1:8 with linespoints title 'e2e p99 (worst s)';"
        "unset multiplot" % (os.path.join(out, "soak.png"), d, d, d, d, d, d, d, d))
    subprocess.run(["gnuplot", "-e", script], check=False)
    os.unlink(dat)


def sanitizer_reports(path):
    with open(path, errors="replace") as f:
        text = f.read()
    return [line for line in text.splitlines() if SANITIZER.search(line)]


def warm_up(a, sim, px, px_p, smp):
    """--warmup s of the same load (steady watchers, LISTs, churn, slow readers, one forced relist
    at half of it), then --settle s with no client: the baseline is taken after it, so that what
    the first peak sizes once (glibc's arenas per thread, tables sized by the most connections)
    is in the baseline and the check sees what the long run adds."""
    secs = int(a.warmup)
    procs = [subprocess.Popen([a.kwp, "load", "--target", px, "--watchers", str(a.watchers), "--ramp", "1000",
                               "--duration", "%ds" % secs, "--quiet"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
             subprocess.Popen([a.kwp, "load", "--target", px, "--watchers", "0", "--lists", str(a.list_rate),
                               "--list-query", "limit=100&labelSelector=" + urllib.parse.quote("tier=frontend"),
                               "--duration", "%ds" % secs, "--quiet"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    cl = Clients(a, sim, px, px_p, warmup=True)
    cl.start()
    t_end = time.monotonic() + secs
    while time.monotonic() < t_end:
        time.sleep(min(1.0, max(0.0, t_end - time.monotonic())))
        if px_p.poll() is not None:
            raise RuntimeError("the proxy died in the warm-up")
    cl.join()
    for p in procs:
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    smp.sample("warmed")
    time.sleep(a.settle)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kwp", default=os.path.join(ROOT, "build", "kwp"), help="kwp load (and sim/proxy)")
    ap.add_argument("--asan", default=None, metavar="BUILD_DIR",
                    help="run the sim and proxy from BUILD_DIR/kwp (a -DKWP_SANITIZE build)")
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--watchers", type=int, default=5000)
    ap.add_argument("--objects", type=int, default=2000)
    ap.add_argument("--writes", type=int, default=50, help="sim --churn: pod writes per second")
    ap.add_argument("--churn-rate", type=float, default=50, help="watches opened (and closed) per second")
    ap.add_argument("--list-rate", type=float, default=5, help="kwp load --lists: first pages per second")
    ap.add_argument("--list-pause", type=float, default=0.2, help="seconds between paged LIST walks")
    ap.add_argument("--slow", type=int, default=5, help="slow readers")
    ap.add_argument("--relist-every", type=float, default=240, help="seconds between forced relists")
    ap.add_argument("--sample", type=float, default=60, help="seconds between samples")
    ap.add_argument("--baseline-wait", type=float, default=80, help="writes with no client before the baseline")
    ap.add_argument("--warmup", type=float, default=120,
                    help="seconds of the same load before the baseline (0: baseline before any client)")
    ap.add_argument("--settle", type=float, default=30, help="seconds after the clients stop")
    ap.add_argument("--rss-tolerance", type=float, default=0.25, help="end RSS may exceed the baseline by this fraction")
    ap.add_argument("--malloc-trim", action="store_true",
                    help="call malloc_trim(0) in the proxy with gdb before the baseline and end samples")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    raise_nofile()
    served = os.path.join(ROOT, a.asan, "kwp") if a.asan else a.kwp
    out = a.out or tempfile.mkdtemp(prefix="kwp-soak-")
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="kwp-soak-logs-")
    env_note = {}
    if a.asan:
        os.environ["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=0"
        os.environ["UBSAN_OPTIONS"] = "print_stacktrace=1"
        env_note = {"ASAN_OPTIONS": os.environ["ASAN_OPTIONS"], "UBSAN_OPTIONS": os.environ["UBSAN_OPTIONS"]}
    sim_log, px_log = os.path.join(tmp, "sim.log"), os.path.join(tmp, "proxy.log")
    duration = int(a.minutes * 60)
    sim_p = px_p = steady = lister = None
    clients = None
    checks = {}
    ok = True
    try:
        sim_p, sim = spawn([served, "sim", "--listen", "127.0.0.1:0", "--stamp", "--churn", str(a.writes),
                            "--objects", str(a.objects), "--compaction-interval", "0",
                            "--history-events", "1000000"], sim_log)
        px_p, px = spawn([served, "proxy", "--upstream", sim, "--listen", "127.0.0.1:0",
                          "--resources", "pods"], px_log, timeout=60)
        smp = Sampler(px, px_p.pid, sim_p.pid)
        print("soak: sim %s proxy %s (%s), logs in %s; baseline after %.0f s" % (sim, px, served, tmp,
                                                                                a.baseline_wait), flush=True)
        time.sleep(a.baseline_wait)
        cold = smp.sample("cold")
        if a.warmup > 0:
            warm_up(a, sim, px, px_p, smp)
        base_raw = smp.sample("baseline-raw")
        trimmed = a.malloc_trim and not a.asan and malloc_trim(px_p.pid)
        base = smp.sample("baseline") if trimmed else base_raw
        t_load0 = time.monotonic() - smp.t0
        steady = subprocess.Popen([a.kwp, "load", "--target", px, "--watchers", str(a.watchers),
                                   "--ramp", "1000", "--duration", "%ds" % duration, "--quiet",
                                   "--json", os.path.join(tmp, "steady.json")],
                                  stdout=open(os.path.join(tmp, "steady.txt"), "w"), stderr=subprocess.STDOUT)
        lister = subprocess.Popen([a.kwp, "load", "--target", px, "--watchers", "0", "--lists",
                                   str(a.list_rate), "--list-query",
                                   "limit=100&labelSelector=" + urllib.parse.quote("tier=frontend"),
                                   "--duration", "%ds" % duration, "--quiet",
                                   "--json", os.path.join(tmp, "lists.json")],
                                  stdout=open(os.path.join(tmp, "lists.txt"), "w"), stderr=subprocess.STDOUT)
        clients = Clients(a, sim, px, px_p)
        clients.start()
        t_end = time.monotonic() + duration
        next_s = time.monotonic() + a.sample
        while time.monotonic() < t_end:
            time.sleep(min(1.0, max(0.0, t_end - time.monotonic())))
            if px_p.poll() is not None or sim_p.poll() is not None:
                raise RuntimeError("a server died: see %s" % tmp)
            if time.monotonic() >= next_s:
                smp.sample("run")
                next_s += a.sample
        clients.join()
        for p in (steady, lister):
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGINT)
                p.wait(timeout=20)
        smp.sample("stopped")
        sim_port = urllib.parse.urlsplit(sim).port
        # the end: fds exactly back, RSS within the tolerance, both after the settle period
        deadline = time.monotonic() + a.settle
        while time.monotonic() < deadline:
            time.sleep(1)
        end = smp.sample("end")
        for _ in range(30):  # a connection in TIME_WAIT on the proxy's side closes within seconds
            if end["proxy_fds"] - upstream_fds(end["fd_detail"], sim_port) == \
                    base["proxy_fds"] - upstream_fds(base["fd_detail"], sim_port):
                break
            time.sleep(1)
            end = smp.sample("end")
        end_raw = end
        if trimmed and malloc_trim(px_p.pid):
            end = smp.sample("end-trim")
        peak = max(smp.rows, key=lambda r: r["proxy_rss_mb"])
        sim_port = urllib.parse.urlsplit(sim).port
        up_base, up_end = upstream_fds(base["fd_detail"], sim_port), upstream_fds(end["fd_detail"], sim_port)
        checks = {
            "fds_baseline": base["proxy_fds"], "fds_peak": max(r["proxy_fds"] for r in smp.rows),
            "fds_end": end["proxy_fds"],
            # every fd but the connections to the upstream: exactly the baseline's; those are
            # libcurl's cache of idle keep-alive connections (bounded by libcurl), counted apart
            "fds_back": end["proxy_fds"] - up_end == base["proxy_fds"] - up_base,
            "upstream_conns_baseline": up_base, "upstream_conns_end": up_end,
            "rss_baseline_mb": base["proxy_rss_mb"], "rss_peak_mb": peak["proxy_rss_mb"],
            "rss_baseline_untrimmed_mb": base_raw["proxy_rss_mb"],
            "rss_end_untrimmed_mb": end_raw["proxy_rss_mb"], "malloc_trim": trimmed,
            "rss_end_mb": end["proxy_rss_mb"], "rss_tolerance": a.rss_tolerance,
            # under ASan its allocator (quarantine, no trim) owns the RSS: LeakSanitizer decides
            "rss_back": bool(a.asan) or end["proxy_rss_mb"] <= base["proxy_rss_mb"] * (1 + a.rss_tolerance),
            "sim_fds_baseline": base["sim_fds"], "sim_fds_end": end["sim_fds"],
            # before any client: what the warm-up left behind (sized once by the peak, never grown
            # by the run: the baseline above is taken after it)
            "cold_rss_mb": cold["proxy_rss_mb"], "cold_fds": cold["proxy_fds"],
            "cold_heap_inuse_mb": cold["heap_inuse_mb"],
            "heap_inuse_baseline_mb": base["heap_inuse_mb"], "heap_inuse_end_mb": end["heap_inuse_mb"],
            "heap_inuse_peak_mb": max((r["heap_inuse_mb"] or 0) for r in smp.rows),
        }
        # the bytes in use (a leak grows them; free arena memory does not): within the tolerance
        # of the baseline, or 1 MB, whichever is larger; not exported under ASan (LeakSanitizer)
        if base["heap_inuse_mb"] is not None and end["heap_inuse_mb"] is not None:
            checks["heap_back"] = end["heap_inuse_mb"] <= max(base["heap_inuse_mb"] * (1 + a.rss_tolerance),
                                                              base["heap_inuse_mb"] + 1.0)
        else:
            checks["heap_back"] = bool(a.asan)
        if not checks["fds_back"] or up_end != up_base:
            checks["fds_detail_baseline"] = base["fd_detail"]
            checks["fds_detail_end"] = end["fd_detail"]
        with open(os.path.join(tmp, "steady.json")) as f:
            sj = json.load(f)
        load_latency(sj.get("series", []), smp.rows, t_load0)
        with open(os.path.join(tmp, "lists.json")) as f:
            lj = json.load(f)
        steady_sum = {k: sj["watch"][k] for k in ("watchers_opened", "events", "events_per_s", "relists",
                                                   "gone_410", "reconnects", "lists", "latency_ms")}
        steady_sum["errors"] = sj["errors"]
        lists_sum = {k: lj["list"][k] for k in ("requests", "ok", "missed", "latency_ms")}
        lists_sum["errors"] = lj["errors"]["total"]
        ok = checks["fds_back"] and checks["rss_back"] and checks["heap_back"]
    finally:
        if clients is not None:
            clients.join()
        for p in (steady, lister):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        stop(px_p)
        stop(sim_p)
    px_rc, sim_rc = px_p.returncode, sim_p.returncode
    reports = sanitizer_reports(px_log) + sanitizer_reports(sim_log)
    checks.update({"proxy_exit": px_rc, "sim_exit": sim_rc, "sanitizer_reports": reports[:20],
                   "sanitizer_clean": not reports})
    ok = ok and not reports and px_rc == 0 and sim_rc == 0
    res = {
        "params": {k: getattr(a, k) for k in vars(a)} | {"served_by": served, "env": env_note,
                                                       "cpus": os.cpu_count()},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "checks": checks, "ok": ok,
        "steady": steady_sum, "lists_load": lists_sum,
        "clients": clients.c if clients else {},
        "samples": smp.rows,
    }
    with open(os.path.join(out, "soak.json"), "w") as f:
        json.dump(res, f, indent=1)
    cols = ["t_s", "phase", "proxy_rss_mb", "proxy_fds", "proxy_cpu_s", "proxy_cpu_pct", "sim_rss_mb",
            "sim_fds", "sim_cpu_s", "sim_cpu_pct", "loadavg", "watches_open", "relists", "terminated",
            "lag_p50_ms", "lag_p99_ms", "load_p50_ms", "load_p99max_ms", "load_events", "heap_inuse_mb",
            "heap_free_mb"]
    with open(os.path.join(out, "soak.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in smp.rows:
            w.writerow(r)
    plot(out, smp.rows)
    print("soak: %s; checks %s" % ("OK" if ok else "FAILED", json.dumps(checks)))
    print("soak: clients %s" % json.dumps({k: v for k, v in res["clients"].items() if k != "slow_end_s"}))
    print("soak: results in %s, logs in %s" % (out, tmp))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
