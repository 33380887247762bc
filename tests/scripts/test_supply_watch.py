# SPDX-License-Identifier: Apache-2.0
"""The supply pass's watch of the Nodes (scripts/supplylib/nodes.py list_versioned and
watch, cli.wait_for_ask) against tests/tools/kube-api.py's watch stream: a list's
resourceVersion, WatchEvents after it (ADDED for each Node from "0"), a node's new wants
annotation ending the wait at once, and an ask already seen not ending it."""
import json
import os
import sys
import threading
import time
import types
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_supply_kube import Stub, node  # noqa: E402

from supplylib import cli, nodes  # noqa: E402

WANTS = json.dumps({"kernel": "6.1.0-58-amd64", "arch": "x86_64", "os": "debian",
                    "os_build": None, "driver_version": "535.261.03",
                    "flavour": "proprietary", "since": "2026-12-06T18:00:00Z"})


def ask(client, name, wants=WANTS):
    client.patch_merge("/api/v1/nodes/" + name,
                       {"metadata": {"annotations": {nodes.ANN_WANTS: wants}}})


class Watch(unittest.TestCase):
    def setUp(self):
        self.stub = Stub({"nodes": [node("gpu-a"), node("gpu-b")]})
        self.client = self.stub.client()

    def tearDown(self):
        self.stub.stop()

    def watches(self):
        return [r for r in self.stub.requests() if "watch=1" in r["query"]]

    def test_events_after_the_list(self):
        items, rv = nodes.list_versioned(self.client)
        self.assertEqual(len(items), 2)
        ask(self.client, "gpu-b")
        kind, n = next(nodes.watch(self.client, rv, 30))
        self.assertEqual((kind, n["metadata"]["name"]), ("MODIFIED", "gpu-b"))
        self.assertEqual(n["metadata"]["annotations"][nodes.ANN_WANTS], WANTS)
        w = nodes.watch(self.client, "0", 30)
        self.assertEqual(sorted((k, o["metadata"]["name"]) for k, o in (next(w), next(w))),
                         [("ADDED", "gpu-a"), ("ADDED", "gpu-b")])
        w.close()

    def test_a_new_ask_ends_the_wait(self):
        p = types.SimpleNamespace(node_source=lambda: nodes.from_api(self.client),
                                  nodes_api=lambda: self.client)
        ask(self.client, "gpu-a")                  # seen by the last pass: no new ask
        seen = nodes.asks(nodes.from_api(self.client))
        got = []
        t = threading.Thread(target=lambda: got.append(cli.wait_for_ask(p, seen, 900)),
                             daemon=True)
        t0 = time.monotonic()
        t.start()
        end = time.monotonic() + 600
        while not self.watches():
            self.assertLess(time.monotonic(), end, "no watch was made")
            time.sleep(0.02)
        ask(self.client, "gpu-b")
        t.join(600)
        self.assertFalse(t.is_alive(), "the wait did not end on the ask")
        self.assertEqual(got, [{("gpu-b", WANTS)}])
        self.assertLess(time.monotonic() - t0, 600)  # the ask, not wait_for_ask's 900 s


if __name__ == "__main__":
    unittest.main()
