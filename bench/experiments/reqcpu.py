#!/usr/bin/env python3
"""reqcpu.py - kwp proxy's CPU per small request, two binaries interleaved (issue 13: what the
per-request histogram and request-log hook cost). For each run and binary: a fresh `kwp sim
--objects 100` and `kwp proxy --resources pods` on 127.0.0.1:0, 500 warm-up requests, then N
GETs of one cached pod on one keep-alive connection; the proxy's utime + stime from
/proc/<pid>/stat over them, divided by N (resolution: one clock tick / N). Loopback only;
every process is started here and stopped by PID; every run is bounded by N.

Usage: python3 reqcpu.py BEFORE_KWP AFTER_KWP [N] [RUNS]
       e.g. reqcpu.py /tmp/base/build/kwp build/kwp 50000 5
"""
import http.client
import os
import re
import statistics
import subprocess
import sys
import time

PATH = "/api/v1/namespaces/default/pods/pod-000000?resourceVersion=0"


def start(args):
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return p, re.search(r"http://[0-9.:]+", p.stdout.readline()).group(0)


def cpu_s(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def one(kwp, n):
    sim, su = start([kwp, "sim", "--listen", "127.0.0.1:0", "--objects", "100", "--churn", "0"])
    px, pu = start([kwp, "proxy", "--listen", "127.0.0.1:0", "--upstream", su, "--resources",
                    "pods"])
    try:
        host, port = pu[7:].split(":")
        c = http.client.HTTPConnection(host, int(port), timeout=10)
        for _ in range(200):  # /readyz, at most 10 s
            c.request("GET", "/readyz")
            r = c.getresponse()
            r.read()
            if r.status == 200:
                break
            time.sleep(0.05)
        for _ in range(500):
            c.request("GET", PATH)
            c.getresponse().read()
        c0 = cpu_s(px.pid)
        for _ in range(n):
            c.request("GET", PATH)
            r = c.getresponse()
            r.read()
            assert r.status == 200, r.status
        return (cpu_s(px.pid) - c0) / n * 1e6
    finally:
        for p in (px, sim):
            p.terminate()
            p.wait(timeout=10)


def main():
    a, b = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 50000
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    res = {a: [], b: []}
    for _ in range(runs):
        for k in (a, b):
            res[k].append(one(k, n))
    for k in (a, b):
        print(f"{k}: {' '.join(f'{v:.1f}' for v in res[k])} us CPU/request, "
              f"median {statistics.median(res[k]):.1f}")
    d = [y - x for x, y in zip(res[a], res[b])]
    print(f"paired difference (after - before): median {statistics.median(d):+.1f} us")


if __name__ == "__main__":
    main()
