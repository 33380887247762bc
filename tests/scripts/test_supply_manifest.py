# SPDX-License-Identifier: Apache-2.0
"""deploy/supply.yaml and deploy/supply-watch.yaml through tests/k8s/check-supply.mjs: the
Kubernetes' own schemas (tests/k8s/kubeschema.mjs, unknown fields refused) and what the
pass and its builder Jobs need of them;
each rule seen to refuse a manifest that breaks it. (Their RBAC rules are held to the pass's
calls by test_supply_jobs, with tests/tools/rbac-check.py.)"""
import os
import subprocess
import sys
import tempfile
import unittest

import yaml

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_supply_jobs import TOP, node_modules  # noqa: E402

MANIFESTS = [os.path.join(TOP, "deploy", f) for f in ("supply.yaml", "supply-watch.yaml")]


def docs():
    out = []
    for name in MANIFESTS:
        with open(name) as f:
            out += [d for d in yaml.safe_load_all(f) if d]
    return out


def pod_of(ds, kind):
    d = next(d for d in ds if d["kind"] == kind)
    return (d["spec"]["jobTemplate"]["spec"]["template"] if kind == "CronJob"
            else d["spec"]["template"])["spec"]


class ManifestTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        node_modules()

    def check(self, ds):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            yaml.safe_dump_all(ds, f)
        try:
            return subprocess.run(["node", os.path.join(TOP, "tests/k8s/check-supply.mjs"),
                                   f.name], capture_output=True, text=True)
        finally:
            os.unlink(f.name)

    def test_manifests_pass(self):
        out = subprocess.run(["node", os.path.join(TOP, "tests/k8s/check-supply.mjs")] +
                             MANIFESTS, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("2 pass pod template(s)", out.stdout)

    def test_each_rule_refuses(self):
        def keys_writable(ds):
            for m in pod_of(ds, "CronJob")["containers"][0]["volumeMounts"]:
                if m["name"] == "keys":
                    del m["readOnly"]

        def work_elsewhere(ds):
            c = pod_of(ds, "Deployment")["containers"][0]
            c["command"] = [a.replace("--work=/var/lib/nvidia-supply/work",
                                      "--work=/var/lib/nvidia-supply/work/sub")
                            for a in c["command"]]

        def two_passes(ds):
            next(d for d in ds if d["kind"] == "CronJob")["spec"]["concurrencyPolicy"] = "Allow"

        def not_a_schedule(ds):
            next(d for d in ds if d["kind"] == "CronJob")["spec"]["schedule"] = 30

        def misspelt_field(ds):
            p = pod_of(ds, "Deployment")
            p["terminationGracePeriod"] = p.pop("terminationGracePeriodSeconds")

        def another_claim(ds):
            for v in pod_of(ds, "CronJob")["volumes"]:
                if v["name"] == "work":
                    v["persistentVolumeClaim"]["claimName"] = "nvidia-driver-repo"
        def registry_unmounted(ds):
            c = pod_of(ds, "CronJob")["containers"][0]
            c["volumeMounts"] = [m for m in c["volumeMounts"] if m["name"] != "registry"]
        cases = [(keys_writable, "keys read-only"),
                 (registry_unmounted, "publish's /etc/nvidia-supply/registry/.dockerconfigjson "
                  "on a read-only mount"),
                 (work_elsewhere, "is a volume's mount path"),
                 (two_passes, "one pass at a time"),
                 (not_a_schedule, "spec.schedule: must be string"),
                 (misspelt_field, "spec.template.spec: must NOT have additional properties: "
                  "terminationGracePeriod"),
                 (another_claim, "the claim kubernetes.cache_pvc names")]
        for mutate, words in cases:
            ds = docs()
            mutate(ds)
            out = self.check(ds)
            self.assertNotEqual(out.returncode, 0, mutate.__name__)
            self.assertIn(words, out.stderr, mutate.__name__)


if __name__ == "__main__":
    unittest.main()
