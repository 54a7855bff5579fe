#!/usr/bin/env python3
"""ab.py - LIST rv=0 through two kwp binaries side by side in front of one `kwp sim`, plain and
with label/field selectors (the store-memory change of 2026-11-30: bench/README.md, "Store
memory"). Runs interleaved, the order of the two flipped every run; kwp's CPU time per LIST
comes from `kwp load --pid`, which a busy shared machine disturbs far less than MB/s.
Loopback only; every process is started here and stopped by PID; every run is bounded.

Usage: python3 ab.py BEFORE_KWP AFTER_KWP OBJECTS OBJECT_BYTES RUNS DURATION [QUERIES]
       e.g. ab.py /tmp/main/build/kwp build/kwp 10000 3072 4 8s plain,label,field,label-miss
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fanout import spawn, stop, wait_ready  # noqa: E402

QUERIES = {
    "plain": "resourceVersion=0",
    "label": "resourceVersion=0&labelSelector=tier%3Dfrontend%2Capp%21%3Dzzz",
    "field": "resourceVersion=0&fieldSelector=spec.nodeName%3Dnode-13%2Cstatus.phase%3DRunning",
    "label-miss": "resourceVersion=0&labelSelector=tier%20in%20(none)",
}


def main():
    before, after, objects, obytes, runs, dur = sys.argv[1:7]
    names = sys.argv[7].split(",") if len(sys.argv) > 7 else list(QUERIES)
    tmp = tempfile.mkdtemp(prefix="kwp-ab-")
    sim, sim_url = spawn([after, "sim", "--listen", "127.0.0.1:0", "--churn", "0", "--objects",
                          objects, "--object-bytes", obytes, "--compaction-interval", "0"],
                         os.path.join(tmp, "sim.log"), timeout=300)
    fronts, res = [], {}
    try:
        for tag, binary in (("before", before), ("after", after)):
            p, url = spawn([binary, "proxy", "--upstream", sim_url, "--listen", "127.0.0.1:0",
                            "--resources", "pods", "--threads", "2"],
                           os.path.join(tmp, "kwp-%s.log" % tag))
            fronts.append((tag, p, url))
            wait_ready(url, timeout=300)
        time.sleep(1)
        for run in range(int(runs)):
            for q in names:
                for tag, p, url in (fronts if run % 2 == 0 else fronts[::-1]):
                    js = os.path.join(tmp, "%s-%s-%d.json" % (tag, q, run))
                    t0 = time.time()
                    subprocess.run([after, "load", "--target", url, "--resource", "pods",
                                    "--watchers", "0", "--duration", dur, "--lists", "1000",
                                    "--list-concurrency", "1", "--list-query", QUERIES[q],
                                    "--drain", "120s", "--json", js, "--quiet", "--pid", str(p.pid)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=400,
                                   check=False)
                    wall = time.time() - t0
                    with open(js) as f:
                        d = json.load(f)
                    lst = d["list"]
                    row = (lst["ok"], lst["bytes"] / wall / 1e6, lst["latency_ms"].get("p50"),
                           d["errors"]["total"], d["processes"][-1]["cpu_s"] * 1e3 / max(1, lst["ok"]))
                    res.setdefault((q, tag), []).append(row)
                    print("%-10s %-6s run %d: %4d lists, %7.1f MB/s, p50 %6.2f ms, errors %d, "
                          "kwp CPU %.2f ms/list" % ((q, tag, run) + row), flush=True)
    finally:
        for _, p, _ in fronts:
            stop(p)
        stop(sim)
    print("medians:")
    for (q, tag), rows in sorted(res.items()):
        print("%-10s %-6s lists %5.0f  MB/s %7.1f  p50 %6.2f ms  kwp CPU %.3f ms/list" % (
            q, tag, statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows),
            statistics.median(r[2] for r in rows), statistics.median(r[4] for r in rows)))


if __name__ == "__main__":
    main()
