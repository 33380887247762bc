#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The least an API server must answer for `kubectl apply --dry-run=client` to run offline:
# discovery of the kinds the manifests use, and 404 for every object (none exists yet), so
# that kubectl maps each document to its resource and reports it "created (dry run)".
# Any other request (a write) is a test failure: 405. Prints its port, then serves for at
# most LIFETIME seconds (120), in case its caller dies without stopping it.
#   discovery.py [LIFETIME]
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# group/version -> [(resource, kind, namespaced)]
RESOURCES = {
    "v1": [("configmaps", "ConfigMap", True), ("serviceaccounts", "ServiceAccount", True),
           ("namespaces", "Namespace", False)],
    "apps/v1": [("daemonsets", "DaemonSet", True)],
    "rbac.authorization.k8s.io/v1": [("clusterroles", "ClusterRole", False),
                                     ("clusterrolebindings", "ClusterRoleBinding", False),
                                     ("roles", "Role", True),
                                     ("rolebindings", "RoleBinding", True)],
    # admission-policy.yaml (t_admission_policy)
    "admissionregistration.k8s.io/v1": [
        ("validatingadmissionpolicies", "ValidatingAdmissionPolicy", False),
        ("validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", False)],
}


def resource_list(gv):
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
            "resources": [{"name": r, "singularName": "", "namespaced": ns, "kind": k,
                           "verbs": ["create", "delete", "get", "list", "patch", "update"]}
                          for r, k, ns in RESOURCES[gv]]}


def routes():
    groups = [g for g in RESOURCES if "/" in g]
    table = {
        "/api": {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []},
        "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": g.split("/")[0], "versions": [{"groupVersion": g, "version": g.split("/")[1]}],
             "preferredVersion": {"groupVersion": g, "version": g.split("/")[1]}} for g in groups]},
        "/api/v1": resource_list("v1"),
    }
    for g in groups:
        table["/apis/" + g] = resource_list(g)
    return table


class Handler(BaseHTTPRequestHandler):
    table = routes()

    def answer(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = self.path.split("?")[0]
        if path in self.table:
            self.answer(200, self.table[path])
        else:
            self.answer(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                              "reason": "NotFound", "code": 404, "message": path + " not found"})

    def refuse(self):
        self.answer(405, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                          "code": 405, "message": "a dry run must not write"})

    do_POST = do_PUT = do_PATCH = do_DELETE = refuse

    def log_message(self, fmt, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
threading.Timer(float(sys.argv[1]) if len(sys.argv) > 1 else 120, server.shutdown).start()
server.serve_forever()
