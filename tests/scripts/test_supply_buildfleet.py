# SPDX-License-Identifier: Apache-2.0
"""scripts/build-fleet's command line as building-packages.md and operations.md write it
(the fleet file first, the options after it, build-driver-package's after --), against a
stand-in installer whose `coverage --fleet` answers nothing served: a dry run names each build
with the arguments after --."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
TOP = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# The installer's coverage --fleet, as far as build-fleet asks it: without --json it judges
# the file (exit 0), with --json it answers every (row, version, flavour) not served (exit 3).
FAKE_INSTALLER = r'''#!/usr/bin/env python3
import json, sys
a = sys.argv[1:]
assert a[0] == "coverage", a
rows = json.load(open(a[a.index("--fleet") + 1]))["images"]
if "--json" not in a:
    sys.exit(0)
ans = [{"row": i, "request": v, "flavour": f, "served": False, "reason": "no package"}
       for i, r in enumerate(rows) for v in r["driver_versions"]
       for f in r.get("flavours", ["auto"])]
print(json.dumps({"answers": ans}))
sys.exit(3)
'''


def make_env(d):
    inst = os.path.join(d, "installer")
    with open(inst, "w") as f:
        f.write(FAKE_INSTALLER)
    os.chmod(inst, 0o755)
    key = os.path.join(d, "repo.pem")
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-out", key], check=True, capture_output=True)
    fleet = os.path.join(d, "fleet.json")
    with open(fleet, "w") as f:
        json.dump({"fleet": 1, "images": [
            {"name": "pool", "os": "debian", "kernel": "6.1.0-58-amd64",
             "driver_versions": ["535.261.03"], "build_args": ["--debian", "{version}"]}]}, f)
    os.makedirs(os.path.join(d, "repo"))
    with open(os.path.join(d, "repo", "index.json"), "w") as f:
        f.write("{}")
    return inst, key, fleet


class DocumentedOrder(unittest.TestCase):
    def test_options_after_the_fleet_file(self):
        with tempfile.TemporaryDirectory() as d:
            inst, key, fleet = make_env(d)
            # docs/building-packages.md, "A fleet": FLEET first, then the options.
            p = subprocess.run([os.path.join(TOP, "scripts/build-fleet"), fleet,
                                "--repo", os.path.join(d, "repo"), "--repo-key", key,
                                "--installer", inst, "--work", os.path.join(d, "work"),
                                "--dry-run", "--", "--sign-key", "k.pem", "--jobs", "8"],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            line = [l for l in p.stdout.splitlines() if l.startswith("pool ")]
            self.assertEqual(len(line), 1, p.stdout)
            self.assertIn("to build", line[0])
            self.assertIn("--debian 535.261.03", line[0])
            self.assertIn("--sign-key k.pem --jobs 8", line[0])

    def test_options_before_the_fleet_file(self):
        with tempfile.TemporaryDirectory() as d:
            inst, key, fleet = make_env(d)
            p = subprocess.run([os.path.join(TOP, "scripts/build-fleet"),
                                "--repo", os.path.join(d, "repo"), "--repo-key", key,
                                "--installer", inst, "--dry-run", fleet, "--", "--jobs", "8"],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("--jobs 8", p.stdout)


if __name__ == "__main__":
    unittest.main()
