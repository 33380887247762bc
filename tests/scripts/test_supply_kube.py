# SPDX-License-Identifier: Apache-2.0
"""scripts/supplylib/kube.py against tests/tools/kube-api.py, the API server stand-in: TLS
with the cluster's CA, the bearer token re-read when the kubelet replaces it, lists read in
pages, the API server's errors kept for the caller, and retries of 5xx within the deadline."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

sys.dont_write_bytecode = True
TOP = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "scripts"))

from supplylib import kube, nodes  # noqa: E402


class Stub:
    """kube-api.py in a directory of its own, with STATE's objects."""

    def __init__(self, state, lifetime=120):
        self.dir = tempfile.mkdtemp(prefix="test-kube-")
        d = self.dir
        subprocess.run([os.path.join(TOP, "tests/tools/kube-certs"), d, "127.0.0.1"], check=True)
        with open(os.path.join(d, "sa/token"), "w") as f:
            f.write("token-1\n")
        with open(os.path.join(d, "state.json"), "w") as f:
            json.dump(state, f)
        self.log = os.path.join(d, "requests.log")
        self.faults = os.path.join(d, "faults.json")
        self.proc = subprocess.Popen([sys.executable, os.path.join(TOP, "tests/tools/kube-api.py"),
                                      os.path.join(d, "port"), os.path.join(d, "api.pem"),
                                      os.path.join(d, "api.key"), os.path.join(d, "sa/token"),
                                      os.path.join(d, "state.json"), self.faults, self.log,
                                      str(lifetime)])
        port = os.path.join(d, "port")
        end = time.monotonic() + 300
        while not (os.path.exists(port) and os.path.getsize(port)):
            if self.proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError("the API server stand-in did not start")
            time.sleep(0.05)
        with open(port) as f:
            self.server = "https://127.0.0.1:%s" % f.read().strip()

    def client(self, **kw):
        return kube.Client(self.server, os.path.join(self.dir, "sa/token"),
                           os.path.join(self.dir, "sa/ca.crt"), "kube-system", **kw)

    def requests(self):
        """The requests served so far; none before the first (the log not yet made)."""
        try:
            with open(self.log) as f:
                return [json.loads(l) for l in f]
        except FileNotFoundError:
            return []

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, True)


def node(name):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {},
            "status": {"nodeInfo": {"kernelVersion": "6.1.0-57-amd64", "architecture": "amd64"}}}


class KubeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stub = Stub({"nodes": [node("gpu-%03d" % i) for i in range(1203)]})

    @classmethod
    def tearDownClass(cls):
        cls.stub.stop()

    def test_list_reads_every_page(self):
        items = self.stub.client().list("/api/v1/nodes")
        self.assertEqual(len(items), 1203)
        self.assertEqual(len({n["metadata"]["name"] for n in items}), 1203)
        pages = [r for r in self.stub.requests() if r["path"] == "/api/v1/nodes"]
        self.assertGreaterEqual(len(pages), 3)

    def test_page_limit_sent(self):
        """A list's page size is the caller's; the Nodes' pages are of 100 (a real Node is
        10 to 30 KiB with status.images, and a page must stay under BODY_MAX), for the
        pass's list and for the watch's."""
        def limits():
            out = [urllib.parse.parse_qs(r["query"]).get("limit")
                   for r in self.stub.requests()[before:] if r["path"] == "/api/v1/nodes"]
            return [int(x[0]) if x else None for x in out]
        c = self.stub.client()
        before = len(self.stub.requests())
        self.assertEqual(len(c.list("/api/v1/nodes", limit=7)), 1203)
        self.assertEqual(set(limits()), {7})
        self.assertEqual(len(limits()), 172)
        before = len(self.stub.requests())
        self.assertEqual(len(nodes.from_api(c)), 1203)
        self.assertEqual(limits(), [100] * 13)
        before = len(self.stub.requests())
        self.assertEqual(len(nodes.list_versioned(c)[0]), 1203)
        self.assertEqual(limits(), [100] * 13)
        self.assertLessEqual(nodes.NODE_PAGE * 30 << 10, kube.BODY_MAX)

    def test_errors_are_the_callers(self):
        c = self.stub.client()
        self.assertIsNone(c.get("/api/v1/nodes/absent", missing_ok=True))
        with self.assertRaises(kube.KubeError) as cm:
            c.get("/api/v1/nodes/absent")
        self.assertEqual(cm.exception.status, 404)
        self.assertIn("404 NotFound", str(cm.exception))
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": "l1", "namespace": "kube-system"}, "spec": {}}
        c.create("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", lease)
        with self.assertRaises(kube.KubeError) as cm:
            c.create("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", lease)
        self.assertEqual((cm.exception.status, cm.exception.reason), (409, "AlreadyExists"))

    def test_merge_patch_and_rotated_token(self):
        c = self.stub.client()
        c.get("/api/v1/nodes/gpu-000")
        with open(os.path.join(self.stub.dir, "sa/token.new"), "w") as f:
            f.write("token-2\n")
        os.rename(os.path.join(self.stub.dir, "sa/token.new"),
                  os.path.join(self.stub.dir, "sa/token"))
        got = c.patch_merge("/api/v1/nodes/gpu-001", {"metadata": {"annotations": {"a/b": "c"}}})
        self.assertEqual(got["metadata"]["annotations"], {"a/b": "c"})
        last = self.stub.requests()[-1]
        self.assertEqual((last["method"], last["content_type"], last["status"]),
                         ("PATCH", "application/merge-patch+json", 200))

    def test_5xx_retried_within_the_deadline(self):
        with open(self.stub.faults, "w") as f:
            json.dump({"faults": [{"method": "GET", "path": "/api/v1/nodes/gpu-002",
                                   "status": 503, "times": 2}]}, f)
        self.assertEqual(self.stub.client().get("/api/v1/nodes/gpu-002")["metadata"]["name"],
                         "gpu-002")
        with open(self.stub.faults, "w") as f:
            json.dump({"faults": [{"method": "GET", "path": "/api/v1/nodes/gpu-003",
                                   "status": 503, "times": 1000}]}, f)
        t0 = time.monotonic()
        with self.assertRaises(kube.KubeError) as cm:
            self.stub.client(deadline_s=1).get("/api/v1/nodes/gpu-003")
        self.assertEqual(cm.exception.status, 503)
        self.assertLess(time.monotonic() - t0, 30)


if __name__ == "__main__":
    unittest.main()
