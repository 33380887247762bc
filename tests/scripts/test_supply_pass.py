# SPDX-License-Identifier: Apache-2.0
"""scripts/supplylib/passes.py, one whole pass over stand-in tools: an installer whose
`coverage --fleet --json` serves the kernels a stand-in `make-repo publish` published, a
build-driver-package that stages (or fails for a kernel named "bad"), the Nodes of
supply-nodes.json and a stand-in feed. What is served is not built; the asks are built
first, oldest first, then the running images, then the feed's; a target nothing says how
to build is skipped; one publish for all; the report answers the asks; a second pass builds
nothing."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
TOP = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "scripts"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_supply_plan import Image  # noqa: E402  (feeds' Image, as SPEC47 §4 has it)

from supplylib import config, nodes, passes, publish  # noqa: E402
from supplylib.local import Local  # noqa: E402

SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "supply-nodes.json")
V = "535.261.03"

INSTALLER = r'''#!/usr/bin/env python3
import json, os, sys
a = sys.argv[1:]
rows = json.load(open(a[a.index("--fleet") + 1]))["images"]
if "--json" not in a:
    sys.exit(0)
repo = a[a.index("--repo") + 1][len("file://"):]
served = set(open(os.path.join(repo, "served")).read().split()) if os.path.exists(
    os.path.join(repo, "served")) else set()
ans = []
for i, r in enumerate(rows):
    key = "%s/%s/%s/%s" % (r["os"], r["kernel"], r["driver_versions"][0], r["flavours"][0])
    ok = key in served
    ans.append({"row": i, "served": ok, "driver_version": r["driver_versions"][0] if ok else None,
                "package": {"path": "packages/" + key} if ok else None,
                "reason": None if ok else "no package for kernel " + r["kernel"]})
print(json.dumps({"answers": ans}))
sys.exit(0 if all(x["served"] for x in ans) else 3)
'''
BDP = r'''#!/usr/bin/env python3
import json, os, sys
a = sys.argv[1:]
v = lambda k: a[a.index(k) + 1]
with open(os.path.join(os.path.dirname(v("--stage-to")), "..", "order"), "a") as f:
    f.write(v("--kernel") + "\n")
if "bad" in v("--kernel"):
    print("build-driver-package: no kernel headers for " + v("--kernel"))
    sys.exit(1)
json.dump({"key": "%s/%s/%s/%s" % (v("--os"), v("--kernel"), a[a.index("--debian") + 1],
                                   v("--flavour")), "argv": a},
          open(os.path.join(v("--stage-to"), "stage.json"), "w"))
'''
MAKE_REPO = r'''#!/usr/bin/env python3
import json, os, sys
a = sys.argv[1:]
if a[0] == "check-stage":       # a stage whose record names a "torn" kernel is refused
    bad = False
    for s in a[1:]:
        why = None
        if "torn" in json.load(open(os.path.join(s, "stage.json")))["key"]:
            why, bad = s + "/stage.json: a package record that make-repo stage does not write", True
        print(json.dumps({"stage": s, "refused": why}))
    sys.exit(1 if bad else 0)
assert a[0] == "publish", a
repo = a[a.index("--repo") + 1]
stages = a[a.index("--key") + 2:]
with open(os.path.join(repo, "calls"), "a") as f:
    f.write(json.dumps(a) + "\n")
if any("torn" in json.load(open(os.path.join(s, "stage.json")))["key"] for s in stages):
    sys.exit("make-repo: a package record that make-repo stage does not write")
with open(os.path.join(repo, "served"), "a") as f:
    for s in stages:
        f.write(json.load(open(os.path.join(s, "stage.json")))["key"] + "\n")
with open(os.path.join(repo, "publishes"), "a") as f:
    f.write("%d\n" % len(stages))
open(os.path.join(repo, "index.json"), "w").write("{}")
# The push, after the local publish (which stays when it fails).
if "--to" in a and os.path.exists(os.path.join(repo, "push-fails")):
    sys.exit("make-repo: the push to %s failed (nvidia-driver-installer mirror, exit 4: "
             "ERROR mirror: registry refused the credentials (exit 4)); ..."
             % a[a.index("--to") + 1])
'''


class Feeds:
    def read(self, conf, http, running=()):
        return [Image("debian", None, "6.1.0-59-amd64", "x86_64", "Packages", {"headers": "u"}),
                Image("debian", None, "6.1.0-bad-amd64", "x86_64", "Packages", {"headers": "u"})]

    def fetch_inputs(self, image, cache, http):
        return {"headers": os.path.join(cache, image.kernel)}


def tool(d, name, text):
    p = os.path.join(d, name)
    with open(p, "w") as f:
        f.write(text)
    os.chmod(p, 0o755)
    return p


class OnePass(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.d = self.tmp.name
        self.repo = os.path.join(d, "repo")
        os.makedirs(self.repo)
        # The repository already serves what rhel-gpu-1 runs.
        with open(os.path.join(self.repo, "served"), "w") as f:
            f.write("rhel/5.14.0-427.13.1.el9_4.x86_64/%s/proprietary\n" % V)
        with open(os.path.join(self.repo, "index.json"), "w") as f:
            f.write("{}")
        conf = config.parse({"supply": 1, "driver_versions": [V], "flavours": ["proprietary"],
                             "platforms": {
                                 "debian": {"build_args": ["--debian", "{version}",
                                                           "--headers-debs",
                                                           "{input_headers}"]},
                                 "ubuntu": {"build_args": ["--debian", "{version}"]},
                                 "rhel": {"build_args": ["--debian", "{version}"]}},
                             "feeds": [{"name": "bookworm", "type": "debian"}]})
        self.out = io.StringIO()
        work = os.path.join(d, "work")
        os.makedirs(work)
        self.p = passes.Pass(
            repo=self.repo, repo_key="k", pub="p", installer=tool(d, "inst", INSTALLER),
            bdp=tool(d, "bdp", BDP), make_repo=tool(d, "make-repo", MAKE_REPO), work=work,
            conf=conf, versions=[V], flavours=["proprietary"], fleet_files=[],
            node_source=lambda: nodes.from_file(SAMPLE), executor=Local(), parallel=1, jobs=1,
            extra=["--sign-key", "m.pem"], json_path=os.path.join(d, "report.json"),
            feeds_mod=Feeds(), out=self.out)

    def tearDown(self):
        self.tmp.cleanup()

    def test_pass(self):
        rc, doc = passes.run_pass(self.p)
        self.assertEqual(rc, 1, self.out.getvalue())          # the "bad" kernel failed
        with open(os.path.join(self.p.work, "order")) as f:
            order = f.read().split()
        # Asks first, oldest first (Ubuntu 17:10, the kernel it runs too; COS 17:30: the
        # COS one is open, and no platform says how to build COS: skipped, not built), then
        # what nodes run (rhel arm64; RHEL x86_64 is served), then the feed's.
        self.assertEqual(order, ["6.8.0-87-generic", "5.14.0-427.13.1.el9_4.aarch64",
                                 "6.1.0-59-amd64", "6.1.0-bad-amd64"])
        res = {(t["os"], t["kernel"], t["flavour"]): t for t in doc["targets"]}
        self.assertEqual(res[("rhel", "5.14.0-427.13.1.el9_4.x86_64", "proprietary")]["result"],
                         "served")
        self.assertEqual(res[("cos", "6.1.112+", "open")]["result"], "skipped")
        self.assertIn("platforms.cos.build_args", res[("cos", "6.1.112+", "open")]["why"])
        self.assertEqual(res[("ubuntu", "6.8.0-87-generic", "proprietary")]["result"], "built")
        bad = res[("debian", "6.1.0-bad-amd64", "proprietary")]
        self.assertEqual(bad["result"], "failed")
        self.assertIn("build-driver-package exit 1: no kernel headers for 6.1.0-bad-amd64",
                      bad["why"])
        self.assertEqual([(a["node"], a["answered"]) for a in doc["asks"]],
                         [("ubuntu-gpu-1", True), ("gke-gpu-pool-cos-2", False)])
        with open(os.path.join(self.repo, "publishes")) as f:
            self.assertEqual(f.read().split(), ["3"])         # one publish, three builds
        with open(os.path.join(self.p.work, "stage", res[("debian", "6.1.0-59-amd64",
                                                          "proprietary")]["build_id"],
                               "stage.json")) as f:
            argv = json.load(f)["argv"]
        self.assertEqual(argv[argv.index("--headers-debs") + 1],
                         os.path.join(self.p.work, "inputs", "6.1.0-59-amd64"))
        self.assertEqual(argv[-4:], ["--sign-key", "m.pem", "--jobs", "1"])
        self.assertRegex(self.out.getvalue(), r"(?m)^ubuntu 6\.8\.0-87-generic x86_64 +%s +"
                         r"proprietary +built +node ubuntu-gpu-1 asked since "
                         r"2026-12-06T17:10:00Z; node ubuntu-gpu-1 runs it +in \d+ s$" % V)
        # Again: nothing new is built, the failing one is tried again.
        os.remove(os.path.join(self.p.work, "order"))
        rc, doc = passes.run_pass(self.p)
        with open(os.path.join(self.p.work, "order")) as f:
            self.assertEqual(f.read().split(), ["6.1.0-bad-amd64"])
        self.assertEqual(doc["counts"]["served"], 4)

    def test_a_bad_stage_fails_alone(self):
        """A build whose stage make-repo would refuse is failed on its own line; the others
        are published."""
        class Torn(Feeds):
            def read(self, conf, http, running=()):
                return super().read(conf, http, running) + [
                    Image("debian", None, "6.1.0-torn-amd64", "x86_64", "Packages",
                          {"headers": "u"})]
        self.p.feeds_mod = Torn()
        rc, doc = passes.run_pass(self.p)
        self.assertEqual(rc, 1)
        res = {t["kernel"]: t for t in doc["targets"] if t["os"] != "cos"}
        torn = res["6.1.0-torn-amd64"]
        self.assertEqual(torn["result"], "failed")
        self.assertRegex(torn["why"], r"^its stage, not published: .*/stage\.json: a package "
                         r"record that make-repo stage does not write$")
        self.assertEqual(res["6.1.0-59-amd64"]["result"], "built")
        self.assertEqual(res["6.8.0-87-generic"]["result"], "built")
        self.assertIsNone(doc["publish"]["error"])
        self.assertEqual(doc["publish"]["stages"], 3)
        with open(os.path.join(self.repo, "publishes")) as f:
            self.assertEqual(f.read().split(), ["3"])
        self.assertRegex(self.out.getvalue(), r"(?m)^debian 6\.1\.0-torn-amd64 x86_64 .* failed "
                         r".* its stage, not published: ")

    def test_dry_run_builds_nothing(self):
        self.p.dry_run = True
        rc, doc = passes.run_pass(self.p)
        self.assertEqual(rc, 0)
        self.assertFalse(os.path.exists(os.path.join(self.p.work, "order")))
        self.assertEqual(doc["counts"]["to build"], 4)
        feed = [t for t in doc["targets"] if t["kernel"] == "6.1.0-59-amd64"][0]
        self.assertIn("--headers-debs <headers: the feed's, not fetched>", feed["why"])


class Push(unittest.TestCase):
    """With registries (the configuration's publish.to): the publish pushes to each, with
    the pass's installer, CA and auth files; a pass with nothing to build pushes the
    repository as it is (a push that failed is made good by the next pass); a push that
    fails is the publish's error, the builds failed with it."""

    tearDown = OnePass.tearDown

    def setUp(self):
        OnePass.setUp(self)      # the same pass, without OnePass's tests
        self.p.push = config.parse({"supply": 1, "publish": {
            "to": ["oci://r.example.com/nvidia/drivers", "oci://m.example.com/nvidia:v1"],
            "ca_file": "ca.pem", "registry_auth": ["auth.json"]}}, "/etc/supply")["publish"]
        self.p.conf["feeds"] = []
        self.p.feeds_mod = None

    def calls(self):
        with open(os.path.join(self.repo, "calls")) as f:
            return [json.loads(l) for l in f]

    def test_pushed(self):
        open(os.path.join(self.repo, "push-fails"), "w").close()
        rc, doc = passes.run_pass(self.p)
        self.assertEqual(rc, 1)
        (call,) = self.calls()
        self.assertEqual(call[:call.index("--repo")], [
            "publish", "--to", "oci://r.example.com/nvidia/drivers",
            "--to", "oci://m.example.com/nvidia:v1", "--installer", self.p.installer,
            "--ca-file", "/etc/supply/ca.pem", "--registry-auth", "/etc/supply/auth.json"])
        self.assertRegex(doc["publish"]["error"], r"^make-repo publish exit 1: make-repo: the "
                         r"push to oci://r\.example\.com/nvidia/drivers failed ")
        self.assertEqual(doc["publish"]["to"], self.p.push["to"])
        built = [t for t in doc["targets"] if t["os"] == "ubuntu"][0]
        self.assertEqual(built["result"], "failed")
        self.assertIn("the push to oci://r.example.com/nvidia/drivers failed", built["why"])
        # The next pass builds nothing (the directory serves it all) and pushes again.
        os.remove(os.path.join(self.repo, "push-fails"))
        rc, doc = passes.run_pass(self.p)
        self.assertEqual(doc["counts"]["built"], 0)
        self.assertEqual(len(self.calls()), 2)
        self.assertEqual(self.calls()[1][-2:], ["--key", "k"], "no stage: pushed as it is")
        self.assertIsNone(doc["publish"]["error"])

    def test_push_alone_in_a_new_work(self):
        """A first pass with nothing to build still pushes, and logs it: its work directory
        has no log/ yet (the executor makes it for builds)."""
        log = os.path.join(self.d, "fresh", "log", "publish.log")
        publish.publish([], self.repo, "k", self.p.make_repo, push=self.p.push,
                        installer=self.p.installer, log=log)
        self.assertEqual(len(self.calls()), 1)
        self.assertTrue(os.path.isfile(log))

    def test_no_registry_no_call(self):
        self.p.push = None
        passes.run_pass(self.p)
        passes.run_pass(self.p)
        self.assertEqual(len(self.calls()), 1, "without registries, nothing to build: no call")
        self.assertEqual(publish.push_args(None), [])


class Publish(unittest.TestCase):
    """publish.publish: make-repo's failure, a tool that cannot run and a guard (the Lease)
    lost while publishing are each one PublishError line, never a traceback of the pass."""

    def test_failures_are_one_line(self):
        class Lost(Exception):
            pass

        @contextlib.contextmanager
        def lease():
            yield
            raise Lost("lease nvidia-supply/nvidia-supply-publish lost")
        cases = [({"make_repo": "/bin/true", "guard": lease},
                  "make-repo publish under its lease: lease nvidia-supply/"),
                 ({"make_repo": "/nonexistent/make-repo"}, "cannot run /nonexistent/make-repo"),
                 ({"make_repo": "/bin/false"}, "make-repo publish exit 1")]
        for kw, words in cases:
            with self.assertRaises(publish.PublishError) as c:
                publish.publish(["/stage"], "/repo", "/key", **kw)
            self.assertIn(words, str(c.exception))
        self.assertEqual(publish.publish([], "/repo", "/key", make_repo="/bin/false"), 0.0)


if __name__ == "__main__":
    unittest.main()
