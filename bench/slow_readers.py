#!/usr/bin/env python3
"""bench/slow_readers.py - do slow readers slow the other watchers down? (issue 14)

One `kwp sim --stamp --churn R --objects N` (pods) and one `kwp proxy --resources pods` in front
of it. Each round runs `kwp load --watchers W` (the normal watchers, steady state only:
--warmup-after-open) twice on the same proxy, in an order that alternates between rounds:

  without   nothing else on the proxy;
  with      --slow extra watches from this script, each reading 2 KB a second (receive buffer
            16 KB), so kwp must end them (--watch-max-lag / --watch-stall-timeout) and they
            reopen 1 s later (the slow readers of bench/soak.py).

Reported per mode, medians over --rounds: the normal watchers' delivered events/s and their
end-to-end p50/p99 (stamp to parse), and the ratios with/without. The slow readers start 3 s
before each "with" run, so they are behind by the time it measures.

Loopback only; every process is started here and stopped by PID; every run is bounded.
Usage: python3 bench/slow_readers.py [--watchers 1000] [--writes 100] [--slow 50] [--rounds 3]
       [--duration 20] [--out DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import types

from fanout import ROOT, raise_nofile, spawn, stop
from soak import Clients, http_get


def run_load(a, px, tmp, name):
    js = os.path.join(tmp, name + ".json")
    subprocess.run([a.kwp, "load", "--target", px, "--watchers", str(a.watchers), "--ramp", "1000",
                    "--duration", "%ds" % a.duration, "--warmup", "1s", "--warmup-after-open",
                    "--quiet", "--json", js], stdout=subprocess.DEVNULL, check=True,
                   timeout=a.duration + 60)
    with open(js) as f:
        d = json.load(f)
    w = d["watch"]
    return {"events_per_s": round(w["events_per_s"], 1), "p50_ms": round(w["latency_ms"]["p50"], 2),
            "p99_ms": round(w["latency_ms"]["p99"], 2), "errors": d["errors"]["total"],
            "relists": w["relists"], "opened": w["watchers_opened"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kwp", default=os.path.join(ROOT, "build", "kwp"))
    ap.add_argument("--watchers", type=int, default=1000)
    ap.add_argument("--writes", type=int, default=100)
    ap.add_argument("--objects", type=int, default=1000)
    ap.add_argument("--slow", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    raise_nofile()
    tmp = tempfile.mkdtemp(prefix="kwp-slow-")
    sim_p = px_p = None
    runs = []
    try:
        sim_p, sim = spawn([a.kwp, "sim", "--listen", "127.0.0.1:0", "--stamp", "--churn", str(a.writes),
                            "--objects", str(a.objects), "--compaction-interval", "0",
                            "--history-events", "1000000"], os.path.join(tmp, "sim.log"))
        px_p, px = spawn([a.kwp, "proxy", "--upstream", sim, "--listen", "127.0.0.1:0",
                          "--resources", "pods"], os.path.join(tmp, "proxy.log"), timeout=60)
        time.sleep(2)
        for rnd in range(a.rounds):
            order = ["without", "with"] if rnd % 2 == 0 else ["with", "without"]
            for mode in order:
                cl = None
                if mode == "with":
                    ns = types.SimpleNamespace(slow=a.slow)
                    cl = Clients(ns, sim, px, px_p)
                    cl.rv = json.loads(http_get(px + "/api/v1/pods?limit=1"))["metadata"]["resourceVersion"]
                    t = threading.Thread(target=cl.slow, daemon=True)
                    t.start()
                    cl.threads.append(t)
                    time.sleep(3)
                r = run_load(a, px, tmp, "r%d-%s" % (rnd, mode))
                if cl is not None:
                    cl.join()
                    r["slow_opened"] = cl.c["slow_opened"]
                    r["slow_ended_by_kwp"] = cl.c["slow_ended_by_kwp"]
                r.update({"round": rnd, "mode": mode, "loadavg": os.getloadavg()[0]})
                runs.append(r)
                print("slow_readers: %s" % json.dumps(r), flush=True)
                time.sleep(2)
    finally:
        stop(px_p)
        stop(sim_p)
    med = {}
    for mode in ("without", "with"):
        rs = [r for r in runs if r["mode"] == mode]
        med[mode] = {k: statistics.median(r[k] for r in rs) for k in ("events_per_s", "p50_ms", "p99_ms")}
    ratio = {k: round(med["with"][k] / med["without"][k], 3) if med["without"][k] else None
             for k in ("events_per_s", "p50_ms", "p99_ms")}
    res = {"params": vars(a), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "runs": runs, "medians": med, "ratio_with_over_without": ratio}
    print("slow_readers: medians %s" % json.dumps(med))
    print("slow_readers: with/without %s" % json.dumps(ratio))
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "slow_readers.json"), "w") as f:
            json.dump(res, f, indent=1)
    sys.exit(0)


if __name__ == "__main__":
    main()
