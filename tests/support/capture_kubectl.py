#!/usr/bin/python3
"""capture_kubectl.py - record the request bodies real kubectl sends on `kubectl create`.

Serves just enough discovery on 127.0.0.1:<ephemeral port> for kubectl (the dispatcher reads
/version first, then /api, /apis, /api/v1, /apis/apps/v1, /apis/batch/v1), runs each
`kubectl create ...` command against it with a fresh --cache-dir, and saves every POST body
verbatim as <outdir>/kubectl-create-<capture name>.pb (or .json when kubectl sent JSON), plus
<outdir>/kubectl-create.txt with the method, path,
Content-Type and size of each capture. POSTs are answered 201 with a JSON echo of the object so
kubectl exits 0. The server lives at most --lifetime seconds; each kubectl at most 30 s.

Only the standard library is used; run it with Debian's interpreter (TOOLCHAIN.md 5.3):
    /usr/bin/python3 tests/support/capture_kubectl.py --outdir tests/data
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SERVER_VERSION = {
    "major": "1", "minor": "32", "gitVersion": "v1.32.4",
    "gitCommit": "59526cd4867447956156ae3a602fcbac10a2c335", "gitTreeState": "clean",
    "buildDate": "2025-04-22T16:02:27Z", "goVersion": "go1.23.6", "compiler": "gc",
    "platform": "linux/amd64",
}

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def resource(name, singular, kind, namespaced, short=None):
    r = {"name": name, "singularName": singular, "namespaced": namespaced, "kind": kind,
         "verbs": VERBS}
    if short:
        r["shortNames"] = short
    return r


API_V1 = {
    "kind": "APIResourceList", "groupVersion": "v1",
    "resources": [
        resource("configmaps", "configmap", "ConfigMap", True, ["cm"]),
        resource("namespaces", "namespace", "Namespace", False, ["ns"]),
        resource("pods", "pod", "Pod", True, ["po"]),
        resource("secrets", "secret", "Secret", True),
        resource("serviceaccounts", "serviceaccount", "ServiceAccount", True, ["sa"]),
        resource("services", "service", "Service", True, ["svc"]),
    ],
}

APPS_V1 = {
    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1",
    "resources": [resource("deployments", "deployment", "Deployment", True, ["deploy"])],
}

BATCH_V1 = {
    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "batch/v1",
    "resources": [resource("jobs", "job", "Job", True)],
}


def group(name):
    gv = {"groupVersion": f"{name}/v1", "version": "v1"}
    return {"name": name, "versions": [gv], "preferredVersion": gv}


DISCOVERY = {
    "/version": SERVER_VERSION,
    "/api": {"kind": "APIVersions", "versions": ["v1"],
             "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                             "serverAddress": "127.0.0.1:6443"}]},
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": [group("apps"),
                                                                      group("batch")]},
    "/api/v1": API_V1,
    "/apis/apps/v1": APPS_V1,
    "/apis/batch/v1": BATCH_V1,
}

# (capture name, command): the body lands in kubectl-create-<capture name>.pb
COMMANDS = [
    ("configmap", ["create", "configmap", "cm1", "--from-literal=a=b", "--from-literal=c=d"]),
    ("secret", ["create", "secret", "generic", "s1", "--from-literal=k=v"]),
    ("namespace", ["create", "namespace", "ns1"]),
    ("deployment", ["create", "deployment", "d1", "--image=nginx"]),
    ("deployment-full", ["create", "deployment", "d2", "--image=nginx:1.27",
                         "--image=busybox", "--replicas=3", "--port=80"]),
    ("service-clusterip", ["create", "service", "clusterip", "s1", "--tcp=80:8080",
                           "--tcp=443"]),
    ("service-headless", ["create", "service", "clusterip", "s5", "--clusterip=None"]),
    ("service-nodeport", ["create", "service", "nodeport", "s2", "--tcp=80:8080",
                          "--node-port=30080"]),
    ("service-loadbalancer", ["create", "service", "loadbalancer", "s3", "--tcp=443:https"]),
    ("service-externalname", ["create", "service", "externalname", "s4",
                              "--external-name=db.example.com", "--tcp=5432"]),
    ("serviceaccount", ["create", "serviceaccount", "sa1"]),
    ("job", ["create", "job", "j1", "--image=busybox"]),
    ("job-command", ["create", "job", "j2", "--image=busybox", "--", "sh", "-c", "echo hi"]),
]

KIND = {"configmaps": "ConfigMap", "secrets": "Secret", "namespaces": "Namespace",
        "deployments": "Deployment", "services": "Service", "serviceaccounts": "ServiceAccount",
        "jobs": "Job"}
API_VERSION = {"deployments": "apps/v1", "jobs": "batch/v1"}


class Recorder:
    def __init__(self):
        self.lock = threading.Lock()
        self.posts = []   # (path, content_type, user_agent, body)
        self.requests = []


REC = Recorder()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # keep stdout for the summary
        pass

    def _send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        with REC.lock:
            REC.requests.append(("GET", self.path, "Accept: " + self.headers.get("Accept", "")))
        if path in DISCOVERY:
            self._send_json(200, DISCOVERY[path])
        else:
            self._send_json(404, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                  "status": "Failure", "message": "not found",
                                  "reason": "NotFound", "code": 404})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        if n < 0 or n > 1 << 20:
            self._send_json(413, {})
            return
        body = self.rfile.read(n)
        ctype = self.headers.get("Content-Type", "")
        with REC.lock:
            REC.requests.append(("POST", self.path, f"Content-Type: {ctype}; Accept: "
                                 f"{self.headers.get('Accept', '')}"))
            REC.posts.append((self.path, ctype, self.headers.get("User-Agent", ""), body))
        plural = self.path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        # Echo something kubectl can print: "<singular>/<name> created".
        name = "x"
        obj = {"kind": KIND.get(plural, "Unknown"), "apiVersion": API_VERSION.get(plural, "v1"),
               "metadata": {"name": name, "uid": "00000000-0000-0000-0000-000000000001",
                            "resourceVersion": "1",
                            "creationTimestamp": "2025-01-01T00:00:00Z"}}
        if plural != "namespaces":
            obj["metadata"]["namespace"] = "default"
        self._send_json(201, obj)


def write_kubeconfig(d, port):
    p = os.path.join(d, "kc.yaml")
    with open(p, "w") as f:
        f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: http://127.0.0.1:{port}
contexts:
- name: local
  context: {{cluster: local, user: anon, namespace: default}}
current-context: local
users:
- name: anon
  user: {{}}
""")
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--outdir", required=True)
    ap.add_argument("--kubectl", default="/usr/bin/kubectl")
    ap.add_argument("--lifetime", type=float, default=120.0)
    args = ap.parse_args()

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    port = srv.server_address[1]
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    # Bounded lifetime even if a kubectl hangs on something unexpected.
    killer = threading.Timer(args.lifetime, srv.shutdown)
    killer.daemon = True
    killer.start()

    os.makedirs(args.outdir, exist_ok=True)
    summary = []
    rc = 0
    with tempfile.TemporaryDirectory() as tmp:
        kc = write_kubeconfig(tmp, port)
        for capture, cmd in COMMANDS:
            cache = tempfile.mkdtemp(dir=tmp)
            before = len(REC.posts)
            full = [args.kubectl, "--kubeconfig", kc, "--server", f"http://127.0.0.1:{port}",
                    "--cache-dir", cache] + cmd
            p = subprocess.run(full, capture_output=True, text=True, timeout=30)
            print(f"$ kubectl {' '.join(cmd)} -> rc={p.returncode} "
                  f"out={p.stdout.strip()!r} err={p.stderr.strip()[:300]!r}")
            if p.returncode != 0:
                rc = 1
            new = REC.posts[before:]
            if len(new) != 1:
                print(f"expected one POST for {capture}, got {len(new)}", file=sys.stderr)
                rc = 1
                continue
            path, ctype, agent, body = new[0]
            ext = "pb" if "protobuf" in ctype else "json"
            out = os.path.join(args.outdir, f"kubectl-create-{capture}.{ext}")
            with open(out, "wb") as f:
                f.write(body)
            summary.append(f"POST {path} Content-Type: {ctype} bytes: {len(body)} "
                           f"User-Agent: {agent} -> {os.path.basename(out)}")
    srv.shutdown()
    killer.cancel()

    with open(os.path.join(args.outdir, "kubectl-create.txt"), "w") as f:
        f.write(f"# Captured by tests/support/capture_kubectl.py: {args.kubectl} (a dispatcher that "
                "picks kubectl.1.32 for a server claiming v1.32.4; see the User-Agent)\n")
        for line in summary:
            f.write(line + "\n")
        f.write("# all requests:\n")
        for m, p, h in REC.requests:
            f.write(f"# {m} {p} [{h}]\n")
    print("\n".join(summary))
    return rc


if __name__ == "__main__":
    sys.exit(main())
