#!/usr/bin/env python3
"""bench/auth_ab.py - what delegated auth costs on a review-cache hit (issue 12).

One `kwp sim` as an authenticating apiserver (a static token file and a rule file: kwp's own
user may list/watch and create reviews, the bench user may get/list/watch pods in `default`),
seeded with --objects pods in one namespace, and two `kwp proxy` in front of it at once, the
same binary and flags but `--auth none` and `--auth delegated` (both on 127.0.0.1, where the
default would be none, so delegated is asked for explicitly). The client sends the same bearer
token to both. Four cases, each run on both proxies, interleaved over --rounds (the order of the
two sides flips every round, so a busy moment of the shared machine hits both alike):

  list        LIST /api/v1/namespaces/default/pods?resourceVersion=0 (every pod), by
              `kwp load --lists` (C, one epoll thread, keep-alive connections, --concurrency
              requests in flight, as fast as answered)
  list-one    the same LIST with fieldSelector=metadata.name=pod-000000: one pod, so the
              per-request work (and auth's share of it) is as large as it gets
  watch       WATCH ?watch=1&resourceVersion=0: a new connection per watch, read the initial
              ADDED events of every pod, close with a reset (no TIME_WAIT left behind; Python
              threads, --watch-concurrency at once)
  watch-one   the same WATCH with the fieldSelector: read the one ADDED event, close

For every run it records requests/s, the proxy's CPU seconds (utime + stime of /proc/PID/stat)
per 1,000 requests over the run, the reviews sent upstream per 1,000 requests (kwp's
kwp_auth_review_duration_seconds_count on --metrics-listen, and the simulator's
tokenreviews + subjectaccessreviews from /_sim/stats), kwp's fast/slow auth path counts and
the 1-minute load average. Cache TTLs are kwp's defaults (10 s) unless --proxy-args says
otherwise. Prints every run, then a table of medians and ratios delegated / none. With
--callgrind N it then runs each proxy under valgrind --tool=callgrind, instrumented only while
N requests of each -one case (N/5 of the others) run one after the other, and prints user-space
instructions per request and the inclusive instructions of gate_check: deterministic where the
shared machine's wall clock is not. --json FILE writes all of it. Loopback only; every process
is started here and stopped by PID; every loop is bounded by the run length or a count.

Usage: python3 bench/auth_ab.py [--kwp build/kwp] [--objects 1000] [--rounds 4]
       [--duration 5] [--concurrency 4] [--watch-concurrency 4] [--cases list,list-one,...]
       [--callgrind N] [--proxy-args '...'] [--json FILE]
"""
import argparse
import glob
import http.client
import json
import os
import shlex
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fanout import ROOT, spawn, stop, wait_ready  # noqa: E402
from fanout_ab import loadavg, proc_cpu  # noqa: E402  ((user, system) CPU s of a PID)

PROXY_TOKEN = "kwp-bench-proxy-token-5f1c0e"
USER_TOKEN = "kwp-bench-user-token-9a3b7d"
POD = "pod-000000"  # kwp sim's first seeded pod
CASES = ("list", "list-one", "watch", "watch-one")
SIDES = ("none", "delegated")

RULES = """\
allow name=proxy users=kwp-proxy verbs=get,list,watch apiGroups=* resources=*
allow name=proxy-urls users=kwp-proxy verbs=get nonResourceURLs=/*
allow name=proxy-reviews users=kwp-proxy verbs=create apiGroups=authentication.k8s.io,authorization.k8s.io resources=tokenreviews,subjectaccessreviews
allow name=readers groups=readers verbs=get,list,watch apiGroups="" resources=pods namespaces=default
"""


def http_get(url, token=None):
    headers = {"User-Agent": "kwp-bench"}
    if token:
        headers["Authorization"] = "Bearer " + token
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
        return r.read().decode()


def reviews_kwp(metrics_url):
    """Reviews kwp sent upstream so far (both kinds), from its /metrics."""
    n = 0
    fast = slow = 0
    for line in http_get(metrics_url + "/metrics").splitlines():
        if line.startswith("kwp_auth_review_duration_seconds_count{"):
            n += int(float(line.rsplit(" ", 1)[1]))
        elif line.startswith('kwp_auth_requests_total{path="fast"}'):
            fast = int(float(line.rsplit(" ", 1)[1]))
        elif line.startswith('kwp_auth_requests_total{path="slow"}'):
            slow = int(float(line.rsplit(" ", 1)[1]))
    return n, fast, slow


def reviews_sim(sim_url):
    d = json.loads(http_get(sim_url + "/_sim/stats", PROXY_TOKEN))
    return d["tokenreviews"] + d["subjectaccessreviews"]


# ---- watch starts ------------------------------------------------------------------------

class Dechunk:
    """Incremental HTTP/1.1 chunked decoder that only counts a marker in the payload."""

    def __init__(self, marker):
        self.marker, self.buf, self.left, self.count, self.tail = marker, b"", 0, 0, b""
        self.last_newline = False  # the payload ends with a newline (a whole event line)

    def feed(self, data):
        self.buf += data
        while self.buf:
            if self.left == 0:
                eol = self.buf.find(b"\r\n")
                if eol < 0:
                    return
                line = self.buf[:eol].split(b";")[0].strip()
                self.buf = self.buf[eol + 2:]
                if line == b"":
                    continue  # the CRLF after a chunk's data
                self.left = int(line, 16)
                if self.left == 0:
                    raise EOFError("the watch ended")
                continue
            take = self.buf[:self.left]
            self.buf = self.buf[len(take):]
            self.left -= len(take)
            window = self.tail + take
            self.count += window.count(self.marker)
            self.tail = window[-(len(self.marker) - 1):]
            self.last_newline = take.endswith(b"\n")


def watch_once(port, path, want):
    """Opens a watch, reads until <want> ADDED events (whole lines) arrived, closes. True on
    success."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # close with a reset: no TIME_WAIT socket per watch start, which would slow down
        # whichever side runs next and run the client out of ports (35,000 starts a run)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: kwp-bench\r\n"
                   "Accept: application/json\r\nAuthorization: Bearer %s\r\n\r\n"
                   % (path, USER_TOKEN)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            d = s.recv(65536)
            if not d or len(head) > 65536:
                return False
            head += d
        head, rest = head.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 200"):
            return False
        dc = Dechunk(b'{"type":"ADDED"')
        dc.feed(rest)
        while not (dc.count >= want and dc.last_newline):
            d = s.recv(262144)
            if not d:
                return False
            dc.feed(d)
        return True
    except (OSError, EOFError, ValueError):
        return False
    finally:
        s.close()


def watch_starts(port, path, want, conc, duration):
    """Watch starts by <conc> threads for <duration> s: (started and done, failed)."""
    ok, bad = [0] * conc, [0] * conc
    end = time.monotonic() + duration

    def worker(i):
        while time.monotonic() < end:
            if watch_once(port, path, want):
                ok[i] += 1
            else:
                bad[i] += 1
                time.sleep(0.01)  # do not spin on a failing server

    ts = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(conc)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(duration + 60)
    return sum(ok), sum(bad)


# ---- one run ----------------------------------------------------------------------------

def load_client(a, url, case, tag):
    """Runs <case>'s client against <url> for --duration; returns (completed, failed)."""
    if case.startswith("list"):
        js = os.path.join(a.tmp, "load-%s.json" % tag)
        argv = [a.kwp, "load", "--target", url, "--resource", "pods", "--namespace", "default",
                "--watchers", "0", "--duration", "%gs" % a.duration, "--lists", "1000000",
                "--list-concurrency", str(a.concurrency), "--list-query", "resourceVersion=0",
                "--token", USER_TOKEN, "--drain", "30s", "--json", js, "--quiet"]
        if case.endswith("-one"):
            argv += ["--field-selector", "metadata.name=" + POD]
        subprocess.run(argv, stdout=subprocess.DEVNULL,
                       stderr=open(os.path.join(a.tmp, "load.log"), "a"),
                       timeout=a.duration + 90, check=False)
        with open(js) as f:
            d = json.load(f)
        return d["list"]["ok"], d["errors"]["total"]
    want = 1 if case.endswith("-one") else a.objects
    return watch_starts(int(url.rsplit(":", 1)[1]), case_path(case), want, a.watch_concurrency,
                        a.duration)


def one_run(a, sides, case, sim, proxies, tag):
    """One run of <case> on each of <sides>: one after the other, or all at once (each with
    its own client) with --parallel. Returns a row per side."""
    before, after, res = {}, {}, {}
    la = loadavg()

    def go(side):
        proc, url, murl = proxies[side]
        before[side] = (reviews_kwp(murl), proc_cpu(proc.pid), time.monotonic(),
                        reviews_sim(sim[1]))
        res[side] = load_client(a, url, case, "%s-%s" % (tag, side))
        after[side] = (reviews_kwp(murl), proc_cpu(proc.pid), time.monotonic(),
                       reviews_sim(sim[1]))

    if a.parallel:
        ts = [threading.Thread(target=go, args=(side,), daemon=True) for side in sides]
        for t in ts:
            t.start()
        for t in ts:
            t.join(a.duration + 180)
    else:
        for side in sides:
            go(side)
    rows = []
    for side in sides:
        (r0, f0, s0), c0, t0, sim0 = before[side]
        (r1, f1, s1), c1, t1, sim1 = after[side]
        ok, bad = res[side]
        user, system = c1[0] - c0[0], c1[1] - c0[1]
        per_k = (lambda x, ok=ok: x * 1000.0 / ok if ok else None)  # noqa: E731
        # the simulator counts every proxy's reviews: in a parallel run the none side's window
        # holds the delegated side's (--auth none sends none, its kwp count says so)
        sim_d = sim1 - sim0 if side == "delegated" or not a.parallel else 0
        rows.append({"side": side, "case": case, "requests": ok, "failed": bad,
                     "wall_s": t1 - t0, "req_per_s": ok / (t1 - t0), "cpu_s": user + system,
                     "cpu_ms_per_req": per_k(user + system), "user_ms_per_req": per_k(user),
                     "sys_ms_per_req": per_k(system), "reviews_kwp": r1 - r0,
                     "reviews_sim": sim_d, "reviews_per_k_kwp": per_k(r1 - r0),
                     "reviews_per_k_sim": per_k(sim_d), "fast": f1 - f0, "slow": s1 - s0,
                     "loadavg": la, "parallel": a.parallel})
    return rows


def start_proxy(a, side, sim_url, procs, wrapper=(), tag=""):
    """Starts `kwp proxy --auth SIDE` (under <wrapper>, e.g. valgrind), appends it to <procs>
    (so the caller stops it), and returns (proc, url, metrics url) once it is ready."""
    log = os.path.join(a.tmp, "kwp-%s%s.log" % (side, tag))
    slow = 10 if wrapper else 1
    p, url = spawn(list(wrapper) + [a.kwp, "proxy", "--upstream", sim_url, "--token", PROXY_TOKEN,
                                    "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                                    "--auth", side, "--resources", "pods"]
                   + shlex.split(a.proxy_args), log, timeout=20 * slow)
    procs.append(p)
    wait_ready(url, timeout=30 * slow)
    murl = None
    deadline = time.time() + 10 * slow
    while murl is None and time.time() < deadline:
        with open(log) as f:
            for line in f:
                if "metrics_url=" in line:
                    murl = line.split("metrics_url=", 1)[1].split()[0]
        time.sleep(0.05)
    if murl is None:
        raise RuntimeError("no metrics_url in %s" % log)
    return p, url, murl


# ---- callgrind: instructions per request, which the shared machine does not disturb --------

def case_path(case):
    path = "/api/v1/namespaces/default/pods?"
    path += "watch=1&resourceVersion=0" if case.startswith("watch") else "resourceVersion=0"
    if case.endswith("-one"):
        path += "&fieldSelector=metadata.name%3D" + POD
    return path


def sequential(a, url, case, n):
    """<n> requests of <case> one after the other (LISTs on one keep-alive connection)."""
    host, port = url.rsplit("/", 1)[1].rsplit(":", 1)
    path, ok = case_path(case), 0
    if case.startswith("watch"):
        want = 1 if case.endswith("-one") else a.objects
        for _ in range(n):
            ok += watch_once(int(port), path, want)
        return ok
    c = http.client.HTTPConnection(host, int(port), timeout=120)
    for _ in range(n):
        c.request("GET", path, headers={"Authorization": "Bearer " + USER_TOKEN,
                                        "Accept": "application/json"})
        r = c.getresponse()
        r.read()
        ok += r.status == 200
    c.close()
    return ok


def callgrind_dump_ir(out_prefix, since):
    """(total Ir, gate_check inclusive Ir) of the newest dump written after <since>."""
    deadline = time.time() + 60
    while time.time() < deadline:
        files = [f for f in glob.glob(out_prefix + ".*") if os.path.getmtime(f) >= since]
        if files:
            break
        time.sleep(0.2)
    if not files:
        raise RuntimeError("no callgrind dump for %s" % out_prefix)
    f = max(files, key=lambda x: int(x.rsplit(".", 1)[1]))
    time.sleep(0.5)  # let the dump finish
    total = None
    with open(f) as fh:
        for line in fh:
            if line.startswith(("totals:", "summary:")):
                total = int(line.split()[1])
    ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", f],
                         capture_output=True, text=True, timeout=120).stdout
    gate = 0
    for line in ann.splitlines():
        if ":gate_check " in line:
            gate = int(line.split()[0].replace(",", ""))
    return total, gate


def callgrind_runs(a, cases, sim_url, procs):
    """Per case and side: the proxy under callgrind, instrumented only while --callgrind N
    requests run one after the other; user-space instructions per request."""
    rows = []
    for side in SIDES:
        prefix = os.path.join(a.tmp, "callgrind-%s.out" % side)
        wrapper = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                   "--callgrind-out-file=" + prefix]
        p, url, _ = start_proxy(a, side, sim_url, procs, wrapper, "-callgrind")
        for case in cases:
            n = a.callgrind if case.endswith("-one") else max(1, a.callgrind // 5)
            sequential(a, url, case, 20)  # warm: caches filled, pools grown
            subprocess.run(["callgrind_control", "-z", str(p.pid)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=60, check=False)
            subprocess.run(["callgrind_control", "-i", "on", str(p.pid)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60,
                           check=False)
            ok = sequential(a, url, case, n)
            time.sleep(0.3)  # the last request's completion
            subprocess.run(["callgrind_control", "-i", "off", str(p.pid)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60,
                           check=False)
            since = time.time() - 1
            subprocess.run(["callgrind_control", "-d", str(p.pid)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=60, check=False)
            total, gate = callgrind_dump_ir(prefix, since)
            r = {"side": side, "case": case, "requests": ok, "ir_per_req": total / ok if ok else None,
                 "gate_ir_per_req": gate / ok if ok else None}
            rows.append(r)
            print("callgrind %-9s %-9s %d requests: %s Ir/request, gate_check %s Ir/request"
                  % (case, side, ok, fmt(r["ir_per_req"], 0), fmt(r["gate_ir_per_req"], 0)),
                  flush=True)
        stop(p)
    return rows


def med(rows, key):
    v = [r[key] for r in rows if r[key] is not None]
    return statistics.median(v) if v else None


def fmt(v, nd=1):
    if v is None:
        return "-"
    return "{:,.{}f}".format(v, nd)


def print_runs_table(cases, runs):
    """Medians per case and side, the ratios delegated / none; returns the summary rows."""
    summary = []
    print("\n| case | none: req/s, CPU µs per request | delegated: req/s, CPU µs per request | "
          "delegated / none: req/s, CPU | reviews per 1,000 requests (kwp / sim) |")
    print("|---|---|---|---|---|")
    keys = ("req_per_s", "cpu_ms_per_req", "user_ms_per_req", "sys_ms_per_req",
            "reviews_per_k_kwp", "reviews_per_k_sim", "loadavg")
    for case in cases:
        m = {s: [r for r in runs if r["case"] == case and r["side"] == s] for s in SIDES}
        row = {"case": case}
        for s in SIDES:
            row[s] = {k: med(m[s], k) for k in keys}
        n, d = row["none"], row["delegated"]
        row["rate_ratio"] = d["req_per_s"] / n["req_per_s"] if n["req_per_s"] else None
        row["cpu_ratio"] = (d["cpu_ms_per_req"] / n["cpu_ms_per_req"]
                            if n["cpu_ms_per_req"] and d["cpu_ms_per_req"] else None)
        # per-round ratios (the two sides of a round ran back to back)
        row["cpu_ratio_rounds"] = [
            dr["cpu_ms_per_req"] / nr["cpu_ms_per_req"]
            for nr, dr in zip(m["none"], m["delegated"])
            if nr["cpu_ms_per_req"] and dr["cpu_ms_per_req"]]
        summary.append(row)
        us = lambda v: v * 1000 if v is not None else None  # noqa: E731
        print("| %s | %s, %s | %s, %s | %s, %s | %s / %s |"
              % (case, fmt(n["req_per_s"], 0), fmt(us(n["cpu_ms_per_req"])),
                 fmt(d["req_per_s"], 0), fmt(us(d["cpu_ms_per_req"])),
                 fmt(row["rate_ratio"], 3), fmt(row["cpu_ratio"], 3),
                 fmt(d["reviews_per_k_kwp"], 2), fmt(d["reviews_per_k_sim"], 2)))
    print("\nloadavg (1 min) at the runs' starts: %.2f-%.2f; CPU ratio per round: %s"
          % (min(r["loadavg"] for r in runs), max(r["loadavg"] for r in runs),
             "; ".join("%s %s" % (row["case"], ", ".join("%.3f" % x for x in row["cpu_ratio_rounds"]))
                       for row in summary)))
    return summary


def print_callgrind_table(cases, rows):
    out = []
    print("\n| case (callgrind, user space) | none: Ir per request | delegated: Ir per request | "
          "delegated / none | of which gate_check |")
    print("|---|---|---|---|---|")
    for case in cases:
        n = next(r for r in rows if r["case"] == case and r["side"] == "none")
        d = next(r for r in rows if r["case"] == case and r["side"] == "delegated")
        ratio = d["ir_per_req"] / n["ir_per_req"] if n["ir_per_req"] and d["ir_per_req"] else None
        out.append({"case": case, "none": n, "delegated": d, "ratio": ratio})
        print("| %s | %s | %s | %s | %s |" % (case, fmt(n["ir_per_req"], 0), fmt(d["ir_per_req"], 0),
                                              fmt(ratio, 3), fmt(d["gate_ir_per_req"], 0)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kwp", default=os.path.join(ROOT, "build", "kwp"),
                    help="kwp binary (sim, both proxies and the load)")
    ap.add_argument("--objects", type=int, default=1000, help="pods, all in namespace default")
    ap.add_argument("--rounds", type=int, default=4,
                    help="wall-clock rounds, the order of the sides flipped every round (use an "
                         "even number: the second run of a pair tends to be slower); 0: "
                         "callgrind only")
    ap.add_argument("--duration", type=float, default=5, help="seconds per run")
    ap.add_argument("--concurrency", type=int, default=4, help="LISTs in flight")
    ap.add_argument("--watch-concurrency", type=int, default=4, help="watch-start threads")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated, of " + ", ".join(CASES))
    ap.add_argument("--callgrind", type=int, default=0, metavar="N",
                    help="also run each proxy under valgrind --tool=callgrind for N sequential "
                         "requests per -one case (N/5 for the others): instructions per request")
    ap.add_argument("--parallel", action="store_true",
                    help="run the two sides of a round at the same time, each with its own "
                         "client, so that both see the same moment of a shared machine")
    ap.add_argument("--proxy-args", default="", help="more flags for both kwp proxy")
    ap.add_argument("--json", help="write every run and the medians here")
    a = ap.parse_args()
    cases = [c for c in a.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            ap.error("unknown case %r (known: %s)" % (c, ", ".join(CASES)))
    if not 0 <= a.rounds <= 50 or not 0 < a.duration <= 120 or not 0 <= a.callgrind <= 100000:
        ap.error("--rounds 0..50, --duration (0, 120], --callgrind 0..100000")
    if a.rounds == 0 and a.callgrind == 0:
        ap.error("nothing to do: --rounds 0 without --callgrind")
    a.tmp = tempfile.mkdtemp(prefix="kwp-auth-ab-")
    with open(os.path.join(a.tmp, "tokens.csv"), "w") as f:
        f.write("%s,kwp-proxy,uid-kwp-proxy\n" % PROXY_TOKEN)
        f.write('%s,bench-user,uid-bench,"readers,devs"\n' % USER_TOKEN)
    with open(os.path.join(a.tmp, "rules"), "w") as f:
        f.write(RULES)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    procs, proxies, runs, cg_rows = [], {}, [], []
    print("auth_ab: %s, %d pods, %d rounds x %gs, LIST concurrency %d, watch threads %d, "
          "loadavg %.2f" % (a.kwp, a.objects, a.rounds, a.duration, a.concurrency,
                            a.watch_concurrency, loadavg()), flush=True)
    try:
        sim, sim_url = spawn([a.kwp, "sim", "--listen", "127.0.0.1:0", "--objects", str(a.objects),
                              "--namespaces", "1", "--churn", "0", "--compaction-interval", "0",
                              "--token-auth-file", os.path.join(a.tmp, "tokens.csv"),
                              "--authorization-rules", os.path.join(a.tmp, "rules")],
                             os.path.join(a.tmp, "sim.log"))
        procs.append(sim)
        sim = (sim, sim_url)
        if a.rounds > 0:
            for side in SIDES:
                proxies[side] = start_proxy(a, side, sim_url, procs)
            for side in SIDES:  # synced, and the delegated one's cache warm for the first run
                http_get(proxies[side][1] + case_path("list"), USER_TOKEN)
        for rnd in range(a.rounds):
            for case in cases:
                order = SIDES if rnd % 2 == 0 else SIDES[::-1]
                for r in one_run(a, order, case, sim, proxies, "%s-%d" % (case, rnd)):
                    side = r["side"]
                    r["round"] = rnd
                    runs.append(r)
                    print("round %d %-9s %-9s %9s req/s  cpu %s µs/req (user %s sys %s)  "
                          "reviews/1k kwp %s sim %s  fast %d slow %d  failed %d  loadavg %.2f"
                          % (rnd + 1, case, side, fmt(r["req_per_s"]),
                             fmt(r["cpu_ms_per_req"] * 1000 if r["cpu_ms_per_req"] else None),
                             fmt(r["user_ms_per_req"] * 1000 if r["user_ms_per_req"] else None),
                             fmt(r["sys_ms_per_req"] * 1000 if r["sys_ms_per_req"] else None),
                             fmt(r["reviews_per_k_kwp"], 2), fmt(r["reviews_per_k_sim"], 2),
                             r["fast"], r["slow"], r["failed"], r["loadavg"]), flush=True)
        for side in list(proxies):
            stop(proxies.pop(side)[0])
        if a.callgrind > 0:
            cg_rows = callgrind_runs(a, cases, sim_url, procs)
    finally:
        for p in reversed(procs):
            stop(p)
    summary = print_runs_table(cases, runs) if runs else []
    cg_summary = print_callgrind_table(cases, cg_rows) if cg_rows else []
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"started": started, "kwp": a.kwp, "objects": a.objects, "rounds": a.rounds,
                       "duration_s": a.duration, "concurrency": a.concurrency,
                       "watch_concurrency": a.watch_concurrency, "proxy_args": a.proxy_args,
                       "callgrind_requests": a.callgrind, "runs": runs, "summary": summary,
                       "callgrind": cg_rows, "callgrind_summary": cg_summary}, f, indent=1)
    shutil.rmtree(a.tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
