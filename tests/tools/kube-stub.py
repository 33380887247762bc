#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# An API server stand-in for the runbook test (t_runbooks): enough for kubectl to run
# `apply --dry-run=client` (discovery, 404 for every object) and `debug node/NAME` (the node
# exists; the pod kubectl creates is recorded). kubectl 1.32 sends the pod as protobuf
# (k8s.io/api core/v1 generated.proto), Debian 12's kubectl 1.20 as JSON; the fields the
# runbooks rely on are decoded from either and appended, as one JSON line per pod, to PODS.
# Any other write is refused (405).
# Prints its port, then serves for at most LIFETIME seconds.
#   kube-stub.py PODS [LIFETIME]
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RESOURCES = {
    "v1": [("configmaps", "ConfigMap", True), ("serviceaccounts", "ServiceAccount", True),
           ("namespaces", "Namespace", False), ("nodes", "Node", False), ("pods", "Pod", True)],
    "apps/v1": [("daemonsets", "DaemonSet", True)],
    "rbac.authorization.k8s.io/v1": [("clusterroles", "ClusterRole", False),
                                     ("clusterrolebindings", "ClusterRoleBinding", False),
                                     ("roles", "Role", True),
                                     ("rolebindings", "RoleBinding", True)],
}


def resource_list(gv):
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
            "resources": [{"name": r, "singularName": r[:-1], "namespaced": ns, "kind": k,
                           "verbs": ["create", "delete", "get", "list", "patch", "update"]}
                          for r, k, ns in RESOURCES[gv]]}


ROUTES = {
    "/api": {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []},
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        {"name": g.split("/")[0], "versions": [{"groupVersion": g, "version": g.split("/")[1]}],
         "preferredVersion": {"groupVersion": g, "version": g.split("/")[1]}}
        for g in RESOURCES if "/" in g]},
    "/api/v1": resource_list("v1"),
}
for _g in RESOURCES:
    if "/" in _g:
        ROUTES["/apis/" + _g] = resource_list(_g)


def fields(buf):
    """Protobuf wire format: [(field number, value)], value bytes or int."""
    out, i = [], 0

    def varint():
        nonlocal i
        v = shift = 0
        while True:
            b = buf[i]
            i += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return v
    while i < len(buf):
        key = varint()
        num, wt = key >> 3, key & 7
        if wt == 0:
            out.append((num, varint()))
        elif wt == 2:
            n = varint()
            out.append((num, buf[i:i + n]))
            i += n
        elif wt == 5:
            i += 4
        elif wt == 1:
            i += 8
        else:
            raise ValueError("wire type %d" % wt)
    return out


def one(fs, num, default=None):
    vals = [v for n, v in fs if n == num]
    return vals[-1] if vals else default


def many(fs, num):
    return [v for n, v in fs if n == num]


def text(b):
    return b.decode() if isinstance(b, bytes) else b


def decode_pod(raw):
    """The debug pod: k8s.io/api/core/v1 Pod{metadata=1, spec=2}."""
    assert raw[:4] == b"k8s\0", "not a Kubernetes protobuf envelope"
    unknown = fields(raw[4:])                       # runtime.Unknown{typeMeta=1, raw=2}
    pod = fields(one(unknown, 2))
    meta, spec = fields(one(pod, 1)), fields(one(pod, 2))
    labels = {}
    for e in many(meta, 11):                        # ObjectMeta.labels (map entries)
        kv = fields(e)
        labels[text(one(kv, 1))] = text(one(kv, 2, b""))
    volumes = []
    for v in many(spec, 1):                         # PodSpec.volumes: Volume{name=1, source=2}
        v = fields(v)
        src = fields(one(v, 2, b""))
        hp = one(src, 1)                            # VolumeSource.hostPath{path=1}
        volumes.append({"name": text(one(v, 1)),
                        "hostPath": text(one(fields(hp), 1)) if hp is not None else None})
    containers = []
    for c in many(spec, 2):                         # PodSpec.containers
        c = fields(c)
        sc = fields(one(c, 15, b""))                # Container.securityContext{privileged=2}
        mounts = [{"name": text(one(m, 1)), "readOnly": bool(one(m, 2, 0)),
                   "mountPath": text(one(m, 3))} for m in map(fields, many(c, 9))]
        containers.append({"name": text(one(c, 1)), "image": text(one(c, 2)),
                           "command": [text(x) for x in many(c, 3)],
                           "args": [text(x) for x in many(c, 4)],
                           "volumeMounts": mounts, "privileged": bool(one(sc, 2, 0)),
                           "stdin": bool(one(c, 16, 0)), "tty": bool(one(c, 18, 0))})
    tolerations = [{"key": text(one(t, 1, b"")), "operator": text(one(t, 2, b""))}
                   for t in map(fields, many(spec, 22))]
    return {"name": text(one(meta, 1)), "labels": labels, "nodeName": text(one(spec, 10)),
            "restartPolicy": text(one(spec, 3)), "hostNetwork": bool(one(spec, 11, 0)),
            "hostPID": bool(one(spec, 12, 0)), "hostIPC": bool(one(spec, 13, 0)),
            "tolerations": tolerations, "volumes": volumes, "containers": containers}


def json_pod(p):
    """The same fields from a pod sent as JSON (as kubectl 1.20 sends it)."""
    if p.get("kind") != "Pod":
        raise ValueError("not a Pod: %s" % p.get("kind"))
    meta, spec = p.get("metadata", {}), p.get("spec", {})
    containers = [{"name": c["name"], "image": c.get("image"), "command": c.get("command", []),
                   "args": c.get("args", []),
                   "volumeMounts": [{"name": m["name"], "readOnly": bool(m.get("readOnly")),
                                     "mountPath": m["mountPath"]}
                                    for m in c.get("volumeMounts", [])],
                   "privileged": bool((c.get("securityContext") or {}).get("privileged")),
                   "stdin": bool(c.get("stdin")), "tty": bool(c.get("tty"))}
                  for c in spec.get("containers", [])]
    return {"name": meta.get("name"), "labels": meta.get("labels", {}),
            "nodeName": spec.get("nodeName"), "restartPolicy": spec.get("restartPolicy"),
            "hostNetwork": bool(spec.get("hostNetwork")), "hostPID": bool(spec.get("hostPID")),
            "hostIPC": bool(spec.get("hostIPC")),
            "tolerations": [{"key": t.get("key", ""), "operator": t.get("operator", "")}
                            for t in spec.get("tolerations", [])],
            "volumes": [{"name": v["name"], "hostPath": (v.get("hostPath") or {}).get("path")}
                        for v in spec.get("volumes", [])],
            "containers": containers}


class Handler(BaseHTTPRequestHandler):
    def answer(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = self.path.split("?")[0]
        if path in ROUTES:
            return self.answer(200, ROUTES[path])
        if path.startswith("/api/v1/nodes/"):
            name = path.rsplit("/", 1)[1]
            return self.answer(200, {"kind": "Node", "apiVersion": "v1",
                                     "metadata": {"name": name}})
        self.answer(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                          "reason": "NotFound", "code": 404, "message": path + " not found"})

    def do_POST(self):
        path = self.path.split("?")[0]
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not (path.startswith("/api/v1/namespaces/") and path.endswith("/pods")):
            return self.refuse()
        if "protobuf" in self.headers.get("Content-Type", ""):
            pod = decode_pod(raw)
        else:
            pod = json_pod(json.loads(raw))
        pod["namespace"] = path.split("/")[4]
        with open(sys.argv[1], "a") as f:
            f.write(json.dumps(pod) + "\n")
        self.answer(201, {"kind": "Pod", "apiVersion": "v1",
                          "metadata": {"name": pod["name"], "namespace": pod["namespace"]},
                          "spec": {"containers": [{"name": c["name"], "image": c["image"]}
                                                  for c in pod["containers"]]}})

    def refuse(self):
        self.answer(405, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                          "code": 405, "message": "the stub takes only the debug pod"})

    do_PUT = do_PATCH = do_DELETE = refuse

    def log_message(self, fmt, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
threading.Timer(float(sys.argv[2]) if len(sys.argv) > 2 else 300, server.shutdown).start()
server.serve_forever()
