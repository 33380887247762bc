# SPDX-License-Identifier: Apache-2.0
"""scripts/supplylib/nodes.py on a NodeList as `kubectl get nodes -o json` writes it
(supply-nodes.json: GKE COS nodes with and without the installer's annotations, one asking,
Ubuntu asking for the kernel it will boot, RHEL x86_64 and arm64 nodes, one Bottlerocket
node no os-release ID is known for): the annotations win, osImage is mapped, amd64 and arm64
made x86_64 and aarch64, and what cannot be read is said."""
import os
import sys
import unittest

sys.dont_write_bytecode = True
TOP = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "scripts"))

from supplylib import nodes  # noqa: E402

SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "supply-nodes.json")
V = "535.261.03"


class Nodes(unittest.TestCase):
    def setUp(self):
        self.nodes = nodes.from_file(SAMPLE)
        self.notes = []
        self.targets = nodes.targets(self.nodes, [V], ["proprietary"], self.notes)
        self.by = {}
        for t in self.targets:
            self.by.setdefault(t.origins[0].what, []).append(t)

    def one(self, what):
        self.assertEqual(len(self.by.get(what, [])), 1, sorted(self.by))
        return self.by[what][0]

    def test_annotation_wins(self):
        t = self.one("node gke-gpu-pool-cos-1 runs it")
        self.assertEqual((t.os, t.os_build, t.kernel, t.arch), ("cos", "18244.151.14",
                                                                "6.1.100+", "x86_64"))

    def test_cos_without_annotation_is_not_limited_to_a_build(self):
        t = self.one("node gke-gpu-pool-cos-3 runs it")
        self.assertEqual((t.os, t.os_build, t.kernel), ("cos", None, "6.1.100+"))

    def test_asks(self):
        t = self.one("node gke-gpu-pool-cos-2 asked since 2026-12-06T17:30:00Z")
        self.assertEqual((t.kernel, t.flavour, t.os_build, t.driver_version),
                         ("6.1.112+", "open", "18244.208.2", V))
        u = self.one("node ubuntu-gpu-1 asked since 2026-12-06T17:10:00Z")
        self.assertEqual((u.os, u.os_build, u.kernel), ("ubuntu", None, "6.8.0-87-generic"))
        self.assertEqual(u.rank(), (0, "2026-12-06T17:10:00Z"))
        self.assertEqual(len(nodes.asks(self.nodes)), 2)

    def test_os_image_mapped(self):
        self.assertEqual(self.one("node ubuntu-gpu-1 runs it").os, "ubuntu")
        r = self.one("node rhel-gpu-1 runs it")
        self.assertEqual((r.os, r.arch, r.kernel), ("rhel", "x86_64",
                                                    "5.14.0-427.13.1.el9_4.x86_64"))
        self.assertEqual(self.one("node rhel-gh200-1 runs it").arch, "aarch64")

    def test_unknown_os_said(self):
        self.assertNotIn("node bottlerocket-1 runs it", self.by)
        self.assertTrue(any("bottlerocket-1: osImage 'Bottlerocket OS 1.20.0 (aws-k8s-1.29)'"
                            in n for n in self.notes), self.notes)

    def test_bad_annotation_said(self):
        n = {"metadata": {"name": "x", "annotations": {nodes.ANN_WANTS: "{"}},
             "status": {"nodeInfo": {"kernelVersion": "6.1.0-58-amd64", "architecture": "amd64",
                                     "osImage": "Debian GNU/Linux 12 (bookworm)"}}}
        notes = []
        ts = nodes.targets([n], [V], ["open"], notes)
        self.assertEqual([(t.os, t.kernel, t.flavour) for t in ts],
                         [("debian", "6.1.0-58-amd64", "open")])
        self.assertIn("is not a JSON object", notes[0])

    def test_not_a_node_list(self):
        with self.assertRaises(nodes.NodesError):
            nodes.from_file(os.path.join(TOP, "VERSION"))


if __name__ == "__main__":
    unittest.main()
