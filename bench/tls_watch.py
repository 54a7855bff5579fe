#!/usr/bin/env python3
"""bench/tls_watch.py - what an https watch costs against a plain one (issue 16): https watches
stay on libmicrohttpd's path (TLS through GnuTLS), plain ones go to the watch writers.

One `kwp sim --stamp --churn RATE --objects 100 --object-bytes 1024` and, one after another, three
`kwp proxy --resources pods` in front of it: `https` (--tls-cert-file/--tls-key-file, a
self-signed certificate made here with openssl), `http` (the watch writers) and `http-mhd`
(--watch-direct-write=false). Each gets N watches (`watch=1&resourceVersion=0`: the initial
ADDED events, then live) from this script's asyncio client (kwp load speaks no TLS), which
reads the chunked streams, counts the events after a warm-up and times each stamped one
(kwp.io/stamp-ns to the moment its line is read; DELETED events, whose object carries its last
write's stamp, are counted but not timed, as kwp load does). Keep N x RATE within what one
Python thread reads (~10k events/s here), or the client is what is measured. The proxy's CPU over the measured window
comes from /proc. Repeats --runs times in alternating order; prints medians and writes JSON.

Loopback only; every process is started here and stopped by its PID; every run is bounded.
Usage: python3 bench/tls_watch.py [--watchers 200] [--rate 100] [--runs 3] [--duration 10]
                                  [--json FILE]
"""
import argparse
import asyncio
import json
import os
import re
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fanout as fo  # noqa: E402  (spawn, stop, wait_ready)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMP = re.compile(rb'"kwp\.io/stamp-ns":"(\d+)"')
HZ = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / HZ


async def one_watch(host, port, ctx, st, stop_at):
    reader, writer = await asyncio.open_connection(host, port, ssl=ctx, limit=1 << 22)
    writer.write(b"GET /api/v1/pods?watch=1&resourceVersion=0 HTTP/1.1\r\nHost: x\r\n"
                 b"Accept: application/json\r\n\r\n")
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(head[:80])
    buf = b""
    try:
        while time.monotonic() < stop_at:
            size_line = await asyncio.wait_for(reader.readuntil(b"\r\n"), stop_at - time.monotonic())
            n = int(size_line.strip(), 16)
            if n == 0:
                break
            data = await reader.readexactly(n + 2)
            buf += data[:-2]
            now = time.time_ns()
            while True:
                i = buf.find(b"\n")
                if i < 0:
                    break
                line, buf = buf[:i], buf[i + 1:]
                if not st["measuring"]:
                    continue
                st["events"] += 1
                if line.startswith(b'{"type":"DELETED"'):
                    continue  # its object carries its last write's stamp, not this event's
                m = STAMP.search(line)
                if m:
                    st["lat"].append((now - int(m.group(1))) / 1e6)
    except (asyncio.TimeoutError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def measure(url, n, warmup, duration, pid):
    tls = url.startswith("https://")
    host, port = url.split("://")[1].split(":")
    ctx = None
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # our own self-signed certificate on loopback
    st = {"events": 0, "lat": [], "measuring": False}
    stop_at = time.monotonic() + warmup + duration + 2
    tasks = [asyncio.create_task(one_watch(host, int(port), ctx, st, stop_at)) for _ in range(n)]
    await asyncio.sleep(warmup)
    st["measuring"], c0, t0 = True, cpu_s(pid), time.monotonic()
    await asyncio.sleep(duration)
    st["measuring"], c1, t1 = False, cpu_s(pid), time.monotonic()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    lat = sorted(st["lat"])
    ev_s = st["events"] / (t1 - t0)
    return {"events_per_s": ev_s, "proxy_cpu_pct": 100 * (c1 - c0) / (t1 - t0),
            "proxy_us_per_event": (c1 - c0) * 1e6 / st["events"] if st["events"] else None,
            "p50_ms": lat[len(lat) // 2] if lat else None,
            "p99_ms": lat[int(len(lat) * 0.99)] if lat else None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kwp", default=os.path.join(ROOT, "build", "kwp"))
    ap.add_argument("--watchers", type=int, default=200)
    ap.add_argument("--rate", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="kwp-tls-")
    crt, key = os.path.join(tmp, "srv.crt"), os.path.join(tmp, "srv.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", crt, "-days", "2", "-subj", "/CN=kwp-bench",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    sides = {"https": ["--tls-cert-file", crt, "--tls-key-file", key], "http": [],
             "http-mhd": ["--watch-direct-write=false"]}
    sim, sim_url = fo.spawn([a.kwp, "sim", "--listen", "127.0.0.1:0", "--stamp", "--churn", str(a.rate),
                             "--objects", "100", "--object-bytes", "1024"], os.path.join(tmp, "sim.log"))
    rows = []
    try:
        for run in range(a.runs):
            order = list(sides) if run % 2 == 0 else list(reversed(list(sides)))
            for side in order:
                px, url = fo.spawn([a.kwp, "proxy", "--upstream", sim_url, "--listen", "127.0.0.1:0",
                                    "--resources", "pods"] + sides[side], os.path.join(tmp, "px.log"))
                try:
                    time.sleep(1.5)
                    r = asyncio.run(measure(url, a.watchers, a.warmup, a.duration, px.pid))
                finally:
                    fo.stop(px)
                r.update({"side": side, "run": run})
                rows.append(r)
                print("%-8s run %d: %8.0f ev/s  p50 %6.1f  p99 %6.1f ms  proxy %5.1f %% = %.2f us/event"
                      % (side, run, r["events_per_s"], r["p50_ms"] or 0, r["p99_ms"] or 0,
                         r["proxy_cpu_pct"], r["proxy_us_per_event"] or 0), flush=True)
    finally:
        fo.stop(sim)
        shutil.rmtree(tmp, ignore_errors=True)
    med = {}
    for side in sides:
        rs = [r for r in rows if r["side"] == side]
        med[side] = {k: statistics.median([r[k] for r in rs if r[k] is not None])
                     for k in ("events_per_s", "p50_ms", "p99_ms", "proxy_cpu_pct", "proxy_us_per_event")}
        print("median %-8s %8.0f ev/s  p50 %6.1f  p99 %6.1f ms  proxy %.2f us/event" % (
            side, med[side]["events_per_s"], med[side]["p50_ms"], med[side]["p99_ms"],
            med[side]["proxy_us_per_event"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"params": vars(a), "runs": rows, "medians": med}, f, indent=1)


if __name__ == "__main__":
    main()
