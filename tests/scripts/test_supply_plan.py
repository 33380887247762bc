# SPDX-License-Identifier: Apache-2.0
"""scripts/supplylib/plan.py and targets.py: the sources' targets made one (one target, two
origins), the build order (asked, oldest ask first; running; fleet rows; feeds), each
target's build-driver-package command line (its fleet row's build_args, else its
platform's, with a feed's fetched inputs), and the feeds read through a stand-in feed module
(SPEC47 §4's interface) whose failure is noted, not the pass's."""
import dataclasses
import os
import sys
import unittest

sys.dont_write_bytecode = True
TOP = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "scripts"))

from supplylib import plan, targets  # noqa: E402
from supplylib.targets import Origin, Target  # noqa: E402

V = "535.261.03"


def T(kernel, *origins, os_="debian", build=None, flavour="proprietary"):
    return Target(os_, build, kernel, "x86_64", V, flavour, list(origins))


@dataclasses.dataclass
class Image:
    os: str
    os_build: str
    kernel: str
    arch: str
    origin: str
    inputs: dict


class FakeFeeds:
    """feeds.read and fetch_inputs as SPEC47 §4 gives them."""

    def __init__(self):
        self.fetched = []

    def read(self, conf, http, running=()):
        if conf["name"] == "broken":
            raise OSError("http://mirror/dists/bookworm/main/binary-amd64/Packages.xz: 503")
        return [Image("debian", None, "6.1.0-59-amd64", "x86_64", "bookworm Packages",
                      {"headers": {"url": "http://mirror/h.deb", "sha256": "00"}})]

    def fetch_inputs(self, image, cache, http):
        self.fetched.append(image.kernel)
        return {"headers": os.path.join(cache, "h.deb")}


class Order(unittest.TestCase):
    def test_asked_oldest_first_then_running_fleet_feeds(self):
        ts = [T("feed-1", Origin("feed", "feed f")),
              T("fleet-1", Origin("fleet", "fleet x row 0")),
              T("run-1", Origin("running", "node a runs it")),
              T("ask-new", Origin("asked", "node b asked", since="2026-12-06T18:00:00Z")),
              T("ask-old", Origin("asked", "node c asked", since="2026-12-06T17:00:00Z")),
              T("fleet-2", Origin("fleet", "fleet x row 1"))]
        self.assertEqual([t.kernel for t in plan.order(ts)],
                         ["ask-old", "ask-new", "run-1", "fleet-1", "fleet-2", "feed-1"])

    def test_merged_target_takes_its_best_origin(self):
        ts = targets.merge([T("k", Origin("feed", "feed f")), T("j", Origin("fleet", "r")),
                            T("k", Origin("running", "node a runs it"))])
        self.assertEqual(len(ts), 2)
        self.assertEqual([t.kernel for t in plan.order(ts)], ["k", "j"])
        self.assertEqual([o.kind for o in ts[0].origins], ["feed", "running"])

    def test_build_id(self):
        a = T("6.1.100+", os_="cos", build="18244.151.14")
        b = T("6.1.100+", os_="cos", build="18244.208.2")
        self.assertNotEqual(a.build_id(), b.build_id())
        self.assertRegex(a.build_id(), r"^[a-z0-9][a-z0-9-]{0,51}$")


class Args(unittest.TestCase):
    PLATFORMS = {"debian": {"build_args": ["--debian", "{version}", "--headers-debs",
                                           "{input_headers}"]}}

    def test_fleet_row_wins(self):
        t = T("6.1.0-58-amd64", Origin("fleet", "r", build_args=["--source", "/d/{version}"]))
        self.assertEqual(plan.build_args(t, self.PLATFORMS, {}), ["--source", "/d/" + V])

    def test_platform_with_inputs(self):
        t = T("6.1.0-58-amd64", Origin("feed", "feed f"))
        self.assertEqual(plan.build_args(t, self.PLATFORMS, {"headers": "/c/h.deb"}),
                         ["--debian", V, "--headers-debs", "/c/h.deb"])
        with self.assertRaises(plan.PlanError) as c:
            plan.build_args(t, self.PLATFORMS, {})
        self.assertIn("{input_headers}: no feed that names this image has an input 'headers'",
                      str(c.exception))
        with self.assertRaises(plan.PlanError) as c:
            plan.build_args(t, {"debian": {"build_args": ["{kernl}"]}}, {})
        self.assertIn("{kernl} is not one of {arch}", str(c.exception))
        self.assertIsNone(plan.build_args(T("k", os_="rhel"), self.PLATFORMS, {}))

    def test_argv(self):
        t = T("6.1.100+", os_="cos", build="18244.151.14", flavour="open")
        self.assertEqual(plan.argv("bdp", t, ["--source", "s"], "/w/stage/i", "/w/build/i",
                                   ["--jobs", "4"]),
                         ["bdp", "--kernel", "6.1.100+", "--os", "cos", "--os-build",
                          "18244.151.14", "--arch", "x86_64", "--flavour", "open", "--source",
                          "s", "--stage-to", "/w/stage/i", "--work", "/w/build/i", "--quiet",
                          "--jobs", "4"])


class Jobs(unittest.TestCase):
    def test_extra_jobs(self):
        from supplylib import passes
        self.assertIsNone(passes.extra_jobs(["--sign-key", "k"]))
        self.assertEqual(passes.extra_jobs(["--jobs", "8", "--quiet"]), 8)
        self.assertEqual(passes.extra_jobs(["--jobs=3"]), 3)


class Feeds(unittest.TestCase):
    def test_feed_targets_and_a_broken_feed(self):
        notes = []
        f = FakeFeeds()
        ts = plan.feed_targets(f, [{"name": "broken", "type": "debian"},
                                   {"name": "bookworm", "type": "debian"}], None,
                               [V, "550.163.01"], ["proprietary"], notes)
        self.assertEqual([(t.kernel, t.driver_version) for t in ts],
                         [("6.1.0-59-amd64", V), ("6.1.0-59-amd64", "550.163.01")])
        self.assertEqual(ts[0].origins[0].what, "feed bookworm")
        self.assertIsNotNone(ts[0].origins[0].image)
        self.assertEqual(len(notes), 1)
        self.assertIn("feed broken: ", notes[0])


if __name__ == "__main__":
    unittest.main()
