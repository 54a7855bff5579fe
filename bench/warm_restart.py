#!/usr/bin/env python3
"""bench/warm_restart.py - what `kwp proxy --state-dir` saves on a restart (issue 14).

One `kwp sim --objects N --churn R` (pods) stays up. In front of it one `kwp proxy --resources
pods --state-dir D` syncs (a cold start: nothing saved yet), then --informers client-go-style
informers attach through it: LIST rv=0, then WATCH from the list's rv, each following its last
rv on its own thread. Then, twice, the proxy gets SIGTERM (the informers' streams end, each
keeps its last rv) and starts again:

  warm   with the same --state-dir D: it loads the saved state and resumes its upstream watch;
  cold   with an empty --state-dir: it lists upstream (what every restart did before).

For each restart: the time from spawn to /readyz 200, to the "listening" line, and until every
informer is back (re-watching, after its relist if it needed one); the upstream requests it made
for pods until then plus 3 s (the sim's /_sim/stats: LIST requests = pages, WATCH requests);
and what each informer got when it re-watched from its last rv: the replay (no relist) or the
410 "too old resource version" that makes it LIST again (a downstream relist, its bytes
counted). Also: the save at SIGTERM (ms and bytes, from the proxy's log) and the load (ms).
The informers re-attach one after another from this one process, so "informers back" is
also bounded by how fast one Python client reads 50 LISTs.

Loopback only; every process is started here and stopped by PID; every wait is bounded.
Usage: python3 bench/warm_restart.py [--objects 100000] [--churn 50] [--informers 50]
       [--kwp build/kwp] [--out DIR]
"""
import argparse
import http.client
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import urllib.parse

from fanout import ROOT, get_json, spawn, stop


def now():
    return time.monotonic()


def ready_at(url, deadline):
    """Polls /readyz every 20 ms; returns when it answered 200 (monotonic) or None."""
    u = urllib.parse.urlsplit(url)
    while now() < deadline:
        try:
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=2)
            c.request("GET", "/readyz")
            code = c.getresponse().status
            c.close()
            if code == 200:
                return now()
        except OSError:
            pass
        time.sleep(0.02)
    return None


def pod_stats(sim):
    p = get_json(sim + "/_sim/stats")["resources"]["pods"]
    return p["lists"], p["watches"]


class Informer:
    """LIST rv=0 then WATCH from its rv; after a restart, re-watch from the last rv."""

    def __init__(self, url):
        self.url = url
        self.rv = None
        self.lines = 0
        self.lock = threading.Lock()
        self.thread = None

    def list(self):
        u = urllib.parse.urlsplit(self.url)
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        c.request("GET", "/api/v1/pods?resourceVersion=0")
        r = c.getresponse()
        body = r.read()
        c.close()
        if r.status != 200:
            raise RuntimeError("LIST %d" % r.status)
        # the list's own rv leads the body: no need to parse 100k objects in Python
        m = re.match(rb'\{"kind":"PodList","apiVersion":"v1","metadata":\{"resourceVersion":"(\d+)"',
                     body)
        if m is None:
            raise RuntimeError("LIST body does not start with its resourceVersion")
        self.rv = m.group(1).decode()
        self.list_bytes = len(body)

    def watch(self, url):
        """Opens the watch; returns ("replay"|"410"|"error", first line)."""
        self.url = url
        u = urllib.parse.urlsplit(url)
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        c.request("GET", "/api/v1/pods?watch=true&timeoutSeconds=600&resourceVersion=%s" % self.rv)
        r = c.getresponse()
        if r.status != 200:
            c.close()
            return "error", "HTTP %d" % r.status
        first = r.readline()
        if b'"type":"ERROR"' in first:
            c.close()
            return ("410" if b'"code":410' in first else "error"), first[:200]
        self.take(first)
        self.thread = threading.Thread(target=self.follow, args=(c, r), daemon=True)
        self.thread.start()
        return "replay", first[:200]

    def take(self, line):
        m = re.search(rb'"resourceVersion":"(\d+)"', line)
        if m:
            with self.lock:
                self.rv = m.group(1).decode()
                self.lines += 1

    def follow(self, c, r):
        try:
            while True:
                line = r.readline()
                if not line:
                    break
                self.take(line)
        except OSError:
            pass
        c.close()


def restart(a, sim, state_dir, log, informers, label):
    """Starts the proxy, measures, re-attaches the informers; returns (proc, url, result)."""
    l0, w0 = pod_stats(sim)
    t0 = now()
    p, url = spawn([a.kwp, "proxy", "--upstream", sim, "--listen", "127.0.0.1:0", "--resources",
                    "pods", "--state-dir", state_dir], log, timeout=120)
    t_listen = now()
    t_ready = ready_at(url, t0 + 120)
    if t_ready is None:
        stop(p)
        raise RuntimeError("%s: proxy not ready in 120 s (see %s)" % (label, log))
    outcomes = {"replay": 0, "410": 0, "error": 0}
    relisted = 0
    relist_bytes = 0
    for inf in informers:
        if inf.rv is None:
            inf.url = url
            inf.list()
            how, _ = inf.watch(url)
        else:
            how, _ = inf.watch(url)
            if how == "410":
                inf.url = url
                inf.list()  # the informer's relist
                relisted += 1
                relist_bytes += inf.list_bytes
                inf.watch(url)
        outcomes[how] += 1
    t_back = now()
    time.sleep(3)
    l1, w1 = pod_stats(sim)
    with open(log) as f:
        text = f.read()
    m = re.search(r'objects=(\d+) events=(\d+) bytes=(\d+) ms=(\d+) msg="loaded saved state', text)
    res = {
        "restart": label,
        "listening_s": round(t_listen - t0, 3),
        "ready_s": round(t_ready - t0, 3),
        "informers_back_s": round(t_back - t0, 3),
        "upstream_lists": l1 - l0,
        "upstream_watches": w1 - w0,
        "informers": len(informers),
        "informer_replays": outcomes["replay"],
        "informer_410s": outcomes["410"],
        "informer_errors": outcomes["error"],
        "downstream_relists": relisted,
        "downstream_relist_mb": round(relist_bytes / 1e6, 1),
        "load_ms": int(m.group(4)) if m else None,
        "loaded_objects": int(m.group(1)) if m else None,
        "loaded_events": int(m.group(2)) if m else None,
    }
    return p, url, res


def save_figures(log):
    with open(log) as f:
        text = f.read()
    m = re.findall(r'objects=(\d+) events=(\d+) ms=(\d+) msg="state saved"', text)
    return {"objects": int(m[-1][0]), "events": int(m[-1][1]), "ms": int(m[-1][2])} if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kwp", default=os.path.join(ROOT, "build", "kwp"))
    ap.add_argument("--objects", type=int, default=100000)
    ap.add_argument("--churn", type=int, default=50)
    ap.add_argument("--informers", type=int, default=50)
    ap.add_argument("--out", default=None, help="write results.json and README.md here")
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix="kwp-warm-bench-")
    warm_dir = os.path.join(work, "state")
    cold_dir = os.path.join(work, "empty")
    os.mkdir(warm_dir)
    os.mkdir(cold_dir)
    sim_p = px = None
    results = []
    try:
        t0 = now()
        sim_p, sim = spawn([a.kwp, "sim", "--listen", "127.0.0.1:0", "--objects", str(a.objects),
                            "--churn", str(a.churn), "--compaction-interval", "0"],
                           os.path.join(work, "sim.log"), timeout=300)
        print("sim: %d pods seeded in %.1f s" % (a.objects, now() - t0), file=sys.stderr)
        informers = [Informer(None) for _ in range(a.informers)]
        px, url, first = restart(a, sim, warm_dir, os.path.join(work, "proxy-0.log"), informers,
                                 "first start (cold, empty state dir)")
        results.append(first)
        time.sleep(2)
        for i, (label, d) in enumerate((("warm (same state dir)", warm_dir),
                                        ("cold (empty state dir)", cold_dir))):
            log_prev = os.path.join(work, "proxy-%d.log" % i)
            stop(px)
            saved = save_figures(log_prev)
            size = os.path.getsize(os.path.join(warm_dir, "core_v1_pods.kwpstate"))
            px, url, res = restart(a, sim, d, os.path.join(work, "proxy-%d.log" % (i + 1)),
                                   informers, label)
            res["saved_before"] = dict(saved or {}, bytes=size)
            results.append(res)
            print(json.dumps(res), file=sys.stderr)
            time.sleep(2)
            if d == cold_dir:
                shutil.rmtree(cold_dir)
                os.mkdir(cold_dir)
    finally:
        stop(px)
        stop(sim_p)
    report = {"objects": a.objects, "churn": a.churn, "informers": a.informers,
              "results": results}
    print(json.dumps(report, indent=1))
    rows = ["| restart | listening s | ready s | informers back s | upstream LISTs (pages) | "
            "upstream WATCHes | informers replayed | informer 410s (relists) | relisted MB | "
            "load ms |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results[1:]:
        rows.append("| %s | %.2f | %.2f | %.2f | %d | %d | %d/%d | %d | %.1f | %s |" % (
            r["restart"], r["listening_s"], r["ready_s"], r["informers_back_s"],
            r["upstream_lists"],
            r["upstream_watches"], r["informer_replays"], r["informers"], r["informer_410s"],
            r["downstream_relist_mb"],
            r["load_ms"] if r["load_ms"] is not None else "-"))
    print("\n".join(rows))
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "results.json"), "w") as f:
            json.dump(report, f, indent=1)
        with open(os.path.join(a.out, "table.md"), "w") as f:
            f.write("\n".join(rows) + "\n")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
