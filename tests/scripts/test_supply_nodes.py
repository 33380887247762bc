# SPDX-License-Identifier: Apache-2.0
"""scripts/supplylib/nodes.py on a NodeList as `kubectl get nodes -o json` writes it
(supply-nodes.json: GKE COS nodes with and without the installer's annotations, one asking,
Ubuntu asking for the kernel it runs, RHEL x86_64 and arm64 nodes, one Bottlerocket
node no os-release ID is known for): the annotations win, osImage is mapped, amd64 and arm64
made x86_64 and aarch64, and what cannot be read is said."""
import json
import os
import sys
import unittest

sys.dont_write_bytecode = True
TOP = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "scripts"))

from supplylib import nodes  # noqa: E402

SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "supply-nodes.json")
V = "535.261.03"
WANTS = {"kernel": "6.1.0-58-amd64", "arch": "x86_64", "os": "debian", "os_build": None,
         "driver_version": V, "flavour": "proprietary", "since": "2026-12-06T18:00:00Z"}
IMAGE = {"os": "debian", "os_build": None, "kernel": "6.1.0-58-amd64", "arch": "x86_64"}


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
        self.assertEqual(u.rank(), (0, nodes.since_time("2026-12-06T17:10:00Z")))
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

    def hostile(self, wants=None, image=None, kernel="6.1.0-58-amd64", versions=(V,)):
        """The targets and notes of one Debian node with these annotations."""
        ann = {}
        if wants is not None:
            ann[nodes.ANN_WANTS] = json.dumps(dict(WANTS, **wants))
        if image is not None:
            ann[nodes.ANN_IMAGE] = json.dumps(dict(IMAGE, **image))
        n = {"metadata": {"name": "evil", "annotations": ann},
             "status": {"nodeInfo": {"kernelVersion": kernel, "architecture": "amd64",
                                     "osImage": "Debian GNU/Linux 12 (bookworm)"}}}
        notes = []
        ts = nodes.targets([n], list(versions), ["proprietary"], notes)
        return [t for t in ts if t.origins[0].kind == "asked"], ts, notes

    def test_hostile_asks_dropped(self):
        for field, value in (("os_build", "--sign-key=/tmp/k"), ("kernel", "../../srv/x"),
                             ("kernel", "-x"), ("kernel", "6.1/../../x"), ("kernel", ".."),
                             ("kernel", "a" * 65), ("kernel", 5), ("os", "Debian;rm"),
                             ("os", "--repo-key"), ("arch", "sparc"), ("arch", "../x"),
                             ("flavour", "--sign-key"), ("driver_version", "535"),
                             ("driver_version", "--debian"), ("driver_version", "550.90.07"),
                             ("since", "yesterday"), ("since", None),
                             ("since", "2026-12-06 18:00:00")):
            with self.subTest(field=field, value=value):
                over = {field: value}
                if field == "kernel":   # no nodeInfo kernel to compare: the check alone
                    asked, ts, notes = self.hostile(over, image={}, kernel=None)
                else:
                    asked, ts, notes = self.hostile(over)
                self.assertEqual(asked, [])
                self.assertEqual(len(notes), 1, notes)
                self.assertIn("node evil: annotation %s: %s " % (nodes.ANN_WANTS, field),
                              notes[0])
                self.assertEqual({(t.os, t.kernel) for t in ts}, {("debian", "6.1.0-58-amd64")})
        # a version the pass was not given is said so; with no versions given, any exact one
        _, _, notes = self.hostile({"driver_version": "550.90.07"})
        self.assertIn("not one of the versions this pass builds: %s" % V, notes[0])
        asked, _, notes = self.hostile({"driver_version": "550.90.07"}, versions=())
        self.assertEqual([t.driver_version for t in asked], ["550.90.07"])

    def test_ask_for_another_kernel_than_the_node_runs(self):
        asked, _, notes = self.hostile({"kernel": "6.1.0-99-amd64"})
        self.assertEqual(asked, [])
        self.assertIn("kernel \"6.1.0-99-amd64\" refused: the node runs 6.1.0-58-amd64",
                      notes[0])
        asked, _, notes = self.hostile({})
        self.assertEqual([(t.kernel, t.os_build, t.arch) for t in asked],
                         [("6.1.0-58-amd64", None, "x86_64")])
        self.assertEqual(notes, [])

    def test_hostile_image_and_node_info(self):
        for field, value in (("kernel", "../../srv/x"), ("os_build", "--sign-key=k"),
                             ("os", "../x"), ("arch", "sparc")):
            with self.subTest(field=field, value=value):
                _, ts, notes = self.hostile(image={field: value})
                self.assertIn("annotation %s: %s " % (nodes.ANN_IMAGE, field), notes[0])
                # nodeInfo is used instead
                self.assertEqual({(t.os, t.os_build, t.kernel) for t in ts},
                                 {("debian", None, "6.1.0-58-amd64")})
        _, ts, notes = self.hostile(kernel="../../x")
        self.assertEqual(ts, [])
        self.assertIn("kernelVersion \"../../x\" refused", notes[0])

    def test_asks_ordered_by_time_not_string(self):
        a = self.hostile({"since": "2026-12-06T19:00:00+02:00"})[0][0]   # 17:00 UTC
        b = self.hostile({"since": "2026-12-06T17:30:00Z",
                          "kernel": "6.1.0-59-amd64"}, kernel="6.1.0-59-amd64")[0][0]
        c = self.hostile({"since": "2026-12-06T17:00:00.5Z",
                          "kernel": "6.1.0-60-amd64"}, kernel="6.1.0-60-amd64")[0][0]
        self.assertEqual([t.kernel for t in sorted([b, c, a], key=lambda t: t.rank())],
                         ["6.1.0-58-amd64", "6.1.0-60-amd64", "6.1.0-59-amd64"])

    def test_not_a_node_list(self):
        with self.assertRaises(nodes.NodesError):
            nodes.from_file(os.path.join(TOP, "VERSION"))


if __name__ == "__main__":
    unittest.main()
