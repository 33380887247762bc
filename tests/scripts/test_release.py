# SPDX-License-Identifier: Apache-2.0
"""Unit tests of scripts/release's modules: the DaemonSets rendered (every installer image
pinned, the device plugin's left, the key and its fingerprint as the installer computes it,
what cannot be rendered refused), the SBOM artifacts and the referrers tag's index in an OCI
layout (the subject, the empty config, a list the registry held kept, each digest once), and
registry credentials read as skopeo reads them."""
import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from releaselib import layout, registry, render  # noqa: E402

IMAGE = "registry.example:5000/gpu/nvidia-driver-installer@sha256:" + "b" * 64


def openssl(*args):
    return subprocess.run(["openssl", *args], check=True, capture_output=True).stdout


class Render(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        key = os.path.join(cls.tmp.name, "key.pem")
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key)
        cls.pub = openssl("pkey", "-in", key, "-pubout").decode()
        der = openssl("pkey", "-in", key, "-pubout", "-outform", "DER")
        cls.fpr = hashlib.sha256(der).hexdigest()[:16]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_trees_daemonsets(self):
        for name, n in (("daemonset-generic.yaml", 4), ("daemonset-preloaded.yaml", 4)):
            with open(os.path.join(ROOT, name)) as f:
                src = f.read()
            out, got = render.render(src, IMAGE, "release 1 (c)", self.pub, name)
            self.assertEqual(got, n, name)
            self.assertNotIn("nvidia-driver-installer:latest", out)
            self.assertNotIn("REPLACE-WITH", out)
            self.assertIn("fingerprint %s" % self.fpr, out)
            for line in self.pub.strip().split("\n"):
                self.assertIn("    " + line + "\n", out)
            # The device plugin's images as the tree has them.
            others = [x for x in src.split("\n") if "image:" in x and
                      "nvidia-driver-installer" not in x]
            self.assertTrue(others)
            for x in others:
                self.assertIn(x, out.split("\n"))

    def test_fingerprint_is_the_installers(self):
        self.assertEqual(render.key_fingerprint(self.pub)[0], self.fpr)
        with self.assertRaises(render.RenderError):
            render.key_fingerprint("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----")

    def test_image_forms(self):
        for ref in ("nvidia-driver-installer", "nvidia-driver-installer:0.25.0",
                    "old.example/x/nvidia-driver-installer@sha256:" + "a" * 64):
            for line in ("  image: %s" % ref, "  - image: %s # a note" % ref):
                out, n = render.render(line, IMAGE, "note")
                self.assertEqual((out, n), (line.split("image:")[0] + "image: %s # note" % IMAGE,
                                            1))
        for line in ("  image: nvidia-driver-installer-plugin:1", "  image: nvcr.io/x/y:1"):
            with self.assertRaisesRegex(render.RenderError, "names no nvidia-driver-installer"):
                render.render(line, IMAGE, "note")

    def test_key_without_configmap(self):
        with self.assertRaisesRegex(render.RenderError, "no ConfigMap repo.pem"):
            render.render("  image: nvidia-driver-installer:latest", IMAGE, "n", self.pub)


class Layout(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        p = self.tmp.name
        with open(os.path.join(p, "oci-layout"), "w") as f:
            f.write('{"imageLayoutVersion": "1.0.0"}')
        with open(os.path.join(p, "index.json"), "w") as f:
            f.write('{"schemaVersion": 2, "manifests": []}')
        self.lay = layout.Layout(p)
        raw = b'{"schemaVersion": 2}'
        self.lay.write(raw)
        self.subject = layout.descriptor(layout.MANIFEST, raw)

    def tearDown(self):
        self.tmp.cleanup()

    def test_artifact(self):
        d = self.lay.attach(self.subject, b'{"spdxVersion": "SPDX-2.3"}', "s.spdx.json",
                            "2023-11-14T22:13:20Z", {"k": "v"})
        m = self.lay.read_json(d["digest"])
        self.assertEqual(m["artifactType"], "application/spdx+json")
        self.assertEqual(m["subject"], self.subject)
        self.assertEqual(m["config"], {"mediaType": "application/vnd.oci.empty.v1+json",
                                       "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4f"
                                       "c21fe77e8310c060f61caaff8a", "size": 2})
        self.assertEqual(self.lay.read(m["layers"][0]["digest"]), b'{"spdxVersion": "SPDX-2.3"}')
        self.assertEqual(d["artifactType"], "application/spdx+json")
        self.assertEqual(d["annotations"], {"k": "v", "org.opencontainers.image.created":
                                            "2023-11-14T22:13:20Z"})

    def test_referrers_tag(self):
        a = self.lay.attach(self.subject, b"{}a", "a", "t")
        b = self.lay.attach(self.subject, b"{}b", "b", "t")
        held = {"schemaVersion": 2, "mediaType": layout.INDEX,
                "manifests": [{"mediaType": layout.MANIFEST, "digest": "sha256:" + "c" * 64,
                               "size": 9, "artifactType": "application/x-other"}, a]}
        tag = self.lay.referrers(self.subject["digest"], [a, b], held)
        self.assertEqual(tag, "sha256-" + self.subject["digest"][7:])
        idx = self.lay.read_json(self.lay.resolve(tag)["digest"])
        self.assertEqual([m["digest"] for m in idx["manifests"]],
                         ["sha256:" + "c" * 64, a["digest"], b["digest"]])
        self.assertEqual(idx["mediaType"], layout.INDEX)

    def test_refuses_what_is_not_a_layout(self):
        with self.assertRaises(layout.LayoutError):
            layout.Layout(os.path.join(self.tmp.name, "blobs"))
        digest = self.lay.write(b"x")
        with open(self.lay.blob_path(digest), "wb") as f:
            f.write(b"y")
        with self.assertRaisesRegex(layout.LayoutError, "does not hash"):
            self.lay.read(digest)


class Credentials(unittest.TestCase):
    def test_authfile_and_creds(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump({"auths": {
                "https://registry.example:5000/v1/": {"auth": base64.b64encode(b"u:p:q").decode()},
                "other.example": {"username": "x", "password": "y"}}}, f)
            f.flush()
            self.assertEqual(registry.credentials("registry.example:5000", "", f.name),
                             ("u", "p:q"))
            self.assertEqual(registry.credentials("other.example", "", f.name), ("x", "y"))
            self.assertIsNone(registry.credentials("registry.example", "", f.name))
        self.assertEqual(registry.credentials("h", "a:b"), ("a", "b"))
        with self.assertRaises(registry.RegistryError):
            registry.credentials("h", "nocolon")

    def test_release_creds_from_the_environment(self):
        """RELEASE_CREDS reaches skopeo as a 0600 auth file, never as --dest-creds."""
        from importlib.machinery import SourceFileLoader
        rel = SourceFileLoader("release_script",
                               os.path.join(ROOT, "scripts", "release")).load_module()
        with tempfile.TemporaryDirectory() as tmp:
            a = type("A", (), {})()
            a.tmp, a.registry, a.creds = tmp, "registry.example:5000/gpu", "u:p:q"
            a.cert_dir, a.authfile = "", rel.creds_authfile(a)
            self.assertEqual(os.stat(a.authfile).st_mode & 0o777, 0o600)
            self.assertEqual(registry.credentials("registry.example:5000", "", a.authfile),
                             ("u", "p:q"))
            self.assertNotIn("u:p:q", " ".join(rel.skopeo_dest(a)))
            a.creds = "nocolon"
            with self.assertRaises(rel.Failed):
                rel.creds_authfile(a)


if __name__ == "__main__":
    unittest.main()
