#!/usr/bin/python3
"""Debian's python3-kubernetes (22.6.0) against kwp proxy in front of kwp sim.

Run by ../test_python_client.sh as: /usr/bin/python3 watch_client.py PROXY_URL SIM_URL
(TOOLCHAIN 5.3: only the system interpreter can import the Debian package.)

The proxy must cache pods with a fixed history of 5 events (--history-min 5 --history-max 5
--history-window 0). Every check is about what the library hands its user: list items, the
events `watch.Watch().stream` yields, the ApiException it raises. Reads of the simulator and
of the proxy's /metrics (urllib, no kubernetes code) tell what the truth is and who answered.
Prints one PASS/FAIL line per check; exit status 1 if any failed.
"""

import json
import re
import sys
import threading
import time
import urllib.request

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

PROXY, SIM = sys.argv[1].rstrip("/"), sys.argv[2].rstrip("/")
NS = "default"
HISTORY = 5  # the proxy's fixed history size, set by the shell script

failures = 0


def check(name, ok, *details):
    global failures
    if ok:
        print("PASS: " + name, flush=True)
    else:
        failures += 1
        print("FAIL: " + name, flush=True)
        for d in details:
            print("      " + str(d), flush=True)
    return ok


def http(method, url, timeout=10):
    req = urllib.request.Request(url, method=method, headers={"Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read().decode()


def sim_pods():
    """name -> resourceVersion of the pods the simulator holds in NS (the truth)."""
    body = json.loads(http("GET", SIM + "/api/v1/namespaces/%s/pods" % NS))
    return {p["metadata"]["name"]: p["metadata"]["resourceVersion"] for p in body["items"]}


def sim_stats():
    return json.loads(http("GET", SIM + "/_sim/stats"))


def metric(name):
    """The proxy's /metrics value NAME{resource="pods"} as an int (-1 when absent)."""
    text = http("GET", PROXY + "/metrics")
    m = re.search(r'^%s\{resource="pods"\} (\d+)$' % re.escape(name), text, re.M)
    return int(m.group(1)) if m else -1


def wait_for(pred, secs):
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def pod(name):
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels={"app": "kwp-py"}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")]),
    )


cfg = client.Configuration()
cfg.host = PROXY
api = client.CoreV1Api(client.ApiClient(cfg))

def list_pods():
    """LIST as a user does (typed V1PodList): (rv, {name: rv}, deserialization error or None).
    If the library cannot build its models from the answer, the same request is made raw, so
    that one such failure is reported once and the watch checks below still run."""
    try:
        lst = api.list_namespaced_pod(NS)
        return (lst.metadata.resource_version,
                {p.metadata.name: p.metadata.resource_version for p in lst.items}, None)
    except ValueError as e:
        raw = json.loads(api.list_namespaced_pod(NS, _preload_content=False).data)
        return (raw["metadata"]["resourceVersion"],
                {p["metadata"]["name"]: p["metadata"]["resourceVersion"] for p in raw["items"]},
                (e, raw))


# ---- 1. LIST through the proxy equals the simulator's state --------------------------------
list_rv, seen, err = list_pods()
check("list_namespaced_pod through kwp deserializes into V1PodList", err is None,
      "" if err is None else "%s: %s" % (type(err[0]).__name__, err[0]),
      "" if err is None else "first item's status.containerStatuses: %s"
      % json.dumps((err[1]["items"] or [{}])[0].get("status", {}).get("containerStatuses")))
truth = sim_pods()
check("list_namespaced_pod through kwp returns the simulator's %d pods (names and RVs) at rv %s"
      % (len(truth), list_rv),
      seen == truth and len(truth) > 0 and list_rv and int(list_rv) > 0,
      "kwp: %s" % sorted(seen.items()), "sim: %s" % sorted(truth.items()))

# ---- 2. watch.Watch().stream from the list RV receives every change -------------------------
WANT = 5
events, stream_err = [], []
w = watch.Watch()


def watcher():
    try:
        for ev in w.stream(api.list_namespaced_pod, NS, resource_version=list_rv,
                           timeout_seconds=30):
            o = ev["object"]
            events.append((ev["type"], o.metadata.name, o.metadata.resource_version,
                           dict(o.metadata.labels or {})))
            if len(events) >= WANT:
                w.stop()
    except Exception as e:  # reported below
        stream_err.append(repr(e))


watch_req0 = metric("kwp_watch_requests_total")
sim_watches0 = sim_stats()["resources"]["pods"]["watches"]
open0 = metric("kwp_watches_open")
t = threading.Thread(target=watcher, daemon=True)
t.start()
opened = wait_for(lambda: metric("kwp_watches_open") > open0, 10)
check("the watch is open on the proxy within 10 s", opened,
      "kwp_watches_open stayed %d" % metric("kwp_watches_open"), "stream errors: %s" % stream_err)

# Writes through the proxy (passed through to the simulator) with the same client.
a1 = api.create_namespaced_pod(NS, pod("py-a")).metadata.resource_version
b1 = api.create_namespaced_pod(NS, pod("py-b")).metadata.resource_version
a2 = api.patch_namespaced_pod("py-a", NS, {"metadata": {"labels": {"step": "1"}}}).metadata.resource_version
api.delete_namespaced_pod("py-b", NS)
a3 = api.patch_namespaced_pod("py-a", NS, {"metadata": {"labels": {"step": "2"}}}).metadata.resource_version
t.join(15)
check("the stream yields all %d changes within 15 s and ends on stop()" % WANT,
      len(events) == WANT and not t.is_alive() and not stream_err,
      "got %d events: %s" % (len(events), events), "thread alive: %s" % t.is_alive(),
      "stream errors: %s" % stream_err)

types = [(e[0], e[1]) for e in events]
want_types = [("ADDED", "py-a"), ("ADDED", "py-b"), ("MODIFIED", "py-a"), ("DELETED", "py-b"),
              ("MODIFIED", "py-a")]
check("event types and names in write order: %s" % want_types, types == want_types,
      "got %s" % types)

rvs = [int(e[2]) for e in events]
rv_ok = (len(rvs) == WANT and all(x < y for x, y in zip(rvs, rvs[1:])) and rvs[0] > int(list_rv)
         and [rvs[0], rvs[1], rvs[2], rvs[4]] == [int(a1), int(b1), int(a2), int(a3)])
check("event RVs increase past the list RV and equal the RVs the writes returned", rv_ok,
      "list rv %s, event rvs %s" % (list_rv, rvs), "write rvs a1=%s b1=%s a2=%s a3=%s" % (a1, b1, a2, a3))

labels_ok = (len(events) == WANT and events[2][3].get("step") == "1"
             and events[4][3].get("step") == "2" and events[0][3].get("step") is None)
check("MODIFIED events carry the patched labels (step=1, then step=2)", labels_ok,
      "labels: %s" % [e[3] for e in events])

# The user's view: the list, with the events applied, is the simulator's state now.
view = dict(seen)
for typ, name, rv, _ in events:
    if typ == "DELETED":
        view.pop(name, None)
    else:
        view[name] = rv
truth = sim_pods()
check("list + events = the simulator's current pods (names and RVs)", view == truth,
      "client: %s" % sorted(view.items()), "sim:    %s" % sorted(truth.items()))

sim_watches1 = sim_stats()["resources"]["pods"]["watches"]
check("the watch was served by kwp's cache (kwp watch requests +1, no new pods watch upstream)",
      metric("kwp_watch_requests_total") == watch_req0 + 1 and sim_watches1 == sim_watches0,
      "kwp_watch_requests_total %d -> %d" % (watch_req0, metric("kwp_watch_requests_total")),
      "sim pods watches %d -> %d" % (sim_watches0, sim_watches1))

# ---- 3. after compaction and with the window moved, the old RV gets the library's 410 ------
old_rv = list_rv
patch_rvs = []
for i in range(HISTORY + 3):
    r = api.patch_namespaced_pod("py-a", NS, {"metadata": {"labels": {"n": str(i)}}})
    patch_rvs.append(int(r.metadata.resource_version))
# kwp holds the last patch before the simulator compacts: its upstream watch has then taken
# every event, and a caught-up watch survives compaction. (Compacting first would race the
# simulator's stream: a watch with events still to send when they are compacted away is
# ended, kwp's re-watch gets 410 and it relists, resetting the window checked below.)
relists0 = metric("kwp_relists_total")
caught_up = wait_for(lambda: metric("kwp_resource_version") >= patch_rvs[-1], 10)
rev = sim_stats()["revision"]
compact = json.loads(http("POST", SIM + "/_sim/compact?revision=%d" % rev))
check("the simulator compacted past the old rv %s (compacted=%d)" % (old_rv, compact["compacted"]),
      compact["compacted"] >= patch_rvs[-1] > int(old_rv), "answer: %s" % compact)
boundary = metric("kwp_history_oldest_rv")
# The window holds the last HISTORY events, all patches. kube-apiserver's boundary is oldest-1
# (SEMANTICS 2.4), which kwp_history_oldest_rv reports and the 410 message names.
want_boundary = patch_rvs[-HISTORY] - 1
check("kwp's window moved past the old rv (kwp_history_oldest_rv %d, want %d)"
      % (boundary, want_boundary),
      caught_up and boundary == want_boundary and metric("kwp_history_events") == HISTORY
      and metric("kwp_relists_total") == relists0,
      "kwp_resource_version %d, want >= %d" % (metric("kwp_resource_version"), patch_rvs[-1]),
      "kwp_history_events %d, want %d" % (metric("kwp_history_events"), HISTORY),
      "kwp_relists_total %d -> %d, want no relist" % (relists0, metric("kwp_relists_total")))
want_reason = "Expired: too old resource version: %s (%d)" % (old_rv, want_boundary)


def resume(**kw):
    """Resumes a watch from old_rv as a user would; returns (events, exception)."""
    got = []
    try:
        for ev in watch.Watch().stream(api.list_namespaced_pod, NS, resource_version=old_rv, **kw):
            got.append((ev["type"], ev["object"].metadata.name if ev["type"] != "ERROR" else ev["raw_object"]))
            if len(got) > 20:
                break
    except ApiException as e:
        return got, e
    return got, None


for label, kw, retries in (("with timeout_seconds (no retry)", {"timeout_seconds": 10}, 1),
                           ("without timeout_seconds (the library retries once)", {}, 2)):
    too_old0 = metric("kwp_too_old_total")
    t0 = time.monotonic()
    got, exc = resume(**kw)
    took = time.monotonic() - t0
    too_old1 = metric("kwp_too_old_total")
    check("resuming from rv %s %s raises ApiException(410, %r) with no events"
          % (old_rv, label, want_reason),
          exc is not None and exc.status == 410 and exc.reason == want_reason and not got,
          "events yielded: %s" % got,
          "exception: %s" % ("none" if exc is None else "status=%s reason=%r" % (exc.status, exc.reason)))
    check("  ... answered by kwp %d time(s) (kwp_too_old_total +%d), in %.2f s"
          % (retries, retries, took),
          too_old1 - too_old0 == retries,
          "kwp_too_old_total %d -> %d" % (too_old0, too_old1))

# ---- 4. the recovery the library's docstring asks for: relist, then watch again ------------
relist_rv, relisted, _ = list_pods()
truth = sim_pods()
got = []
w2 = watch.Watch()


def watcher2():
    for ev in w2.stream(api.list_namespaced_pod, NS, resource_version=relist_rv,
                        timeout_seconds=20):
        got.append((ev["type"], ev["object"].metadata.name, ev["object"].metadata.resource_version))
        w2.stop()


open0 = metric("kwp_watches_open")
t = threading.Thread(target=watcher2, daemon=True)
t.start()
wait_for(lambda: metric("kwp_watches_open") > open0, 10)
c1 = api.create_namespaced_pod(NS, pod("py-c")).metadata.resource_version
t.join(10)
check("after a relist (%d pods, = simulator) a new watch from its rv %s sees ADDED py-c at rv %s"
      % (len(relisted), relist_rv, c1),
      relisted == truth and got == [("ADDED", "py-c", c1)],
      "relisted: %s" % sorted(relisted.items()), "sim: %s" % sorted(truth.items()),
      "events: %s" % got)

sys.exit(1 if failures else 0)
