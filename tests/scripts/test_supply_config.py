# SPDX-License-Identifier: Apache-2.0
"""scripts/supplylib/config.py: supply.json read strictly, as the installer reads a fleet
file: unknown keys refused by their path and name, wrong types and placeholders refused in
one line, paths made relative to the file."""
import json
import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
TOP = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "scripts"))

from supplylib import config  # noqa: E402

GOOD = {"supply": 1, "driver_versions": ["535.261.03"], "flavours": ["proprietary", "open"],
        "platforms": {"debian": {"build_args": ["--debian", "{version}", "--headers-debs",
                                                "{input_headers}"]}},
        "feeds": [{"name": "bookworm", "type": "debian", "url": "http://deb.debian.org/debian",
                   "suite": "bookworm", "component": "main", "arch": "amd64"}],
        "fleet_files": ["fleet.json"], "kubernetes": {"namespace": "nvidia-supply"}}


class Config(unittest.TestCase):
    def refused(self, obj, words):
        with self.assertRaises(config.ConfigError) as c:
            config.parse(obj)
        self.assertIn(words, str(c.exception))
        self.assertNotIn("\n", str(c.exception))

    def test_good(self):
        c = config.parse(GOOD, "/etc/supply")
        self.assertEqual(c["fleet_files"], ["/etc/supply/fleet.json"])
        self.assertEqual(c["platforms"]["debian"]["build_args"][1], "{version}")
        self.assertEqual(c["feeds"][0]["suite"], "bookworm")

    def test_publish(self):
        c = config.parse(dict(GOOD, publish={
            "to": ["oci://europe-docker.pkg.dev/p/r/nvidia:latest"], "ca_file": "ca.pem",
            "registry_auth": ["/etc/registry/.dockerconfigjson"]}), "/etc/supply")
        self.assertEqual(c["publish"], {"to": ["oci://europe-docker.pkg.dev/p/r/nvidia:latest"],
                                        "ca_file": "/etc/supply/ca.pem",
                                        "registry_auth": ["/etc/registry/.dockerconfigjson"]})
        self.assertEqual(config.parse(GOOD)["publish"], {"to": [], "ca_file": None,
                                                         "registry_auth": []})
        self.refused(dict(GOOD, publish={"to": ["https://r.example.com/x"]}),
                     "publish.to: https://r.example.com/x: give a registry repository")
        self.refused(dict(GOOD, publish={"to": ["oci://r.example.com/X"]}),
                     "publish.to: oci://r.example.com/X: the repository name's part 'X'")
        self.refused(dict(GOOD, publish={"to": "oci://r.example.com/x"}),
                     "publish.to: a list of non-empty strings expected")
        self.refused(dict(GOOD, publish={"registry": []}), "publish: unknown key 'registry'")
        self.refused(dict(GOOD, publish={"ca_file": 1}), "publish.ca_file: a path expected")

    def test_unknown_top_key(self):
        self.refused(dict(GOOD, driver_version=["1.2.3"]), "unknown key 'driver_version'")

    def test_unknown_platform_key(self):
        self.refused(dict(GOOD, platforms={"cos": {"build_arg": []}}),
                     "platforms.cos: unknown key 'build_arg'")

    def test_format(self):
        self.refused(dict(GOOD, supply=2), "'supply' must be 1")

    def test_tag_is_no_version(self):
        self.refused(dict(GOOD, driver_versions=["default"]), "'default' is not a driver version")

    def test_flavour(self):
        self.refused(dict(GOOD, flavours=["auto"]), "'auto' is not a flavour")

    def test_placeholder(self):
        self.refused(dict(GOOD, platforms={"cos": {"build_args": ["--x", "{kernl}"]}}),
                     "'{kernl}' is not one of")

    def test_feed_type_and_name(self):
        self.refused(dict(GOOD, feeds=[{"name": "x", "type": "gentoo"}]), "type must be one of")
        self.refused(dict(GOOD, feeds=[GOOD["feeds"][0], GOOD["feeds"][0]]),
                     "a second feed named 'bookworm'")

    def test_file(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "supply.json")
            with open(p, "w") as f:
                json.dump(dict(GOOD, extra=1), f)
            with self.assertRaises(config.ConfigError) as c:
                config.load(p)
            self.assertTrue(str(c.exception).startswith(p + ": unknown key 'extra'"))
            with open(p, "w") as f:
                f.write("{")
            with self.assertRaises(config.ConfigError) as c:
                config.load(p)
            self.assertIn("not JSON", str(c.exception))


if __name__ == "__main__":
    unittest.main()
