# SPDX-License-Identifier: Apache-2.0
"""The COS feed (scripts/supplylib/feeds/cos.py) against a stand-in of Cloud Storage's
JSON API over the cos-tools bucket's layout (data/feeds/README.md): the newest builds of
the milestones asked and of those the fleet runs, by board, each build's kernel release
read from the head of its kernel-headers.tgz; the artifacts fetched by
scripts/fetch-cos-artifacts and checked against the listing's size and MD5; hostile
listings and archives refused in one line."""
import hashlib
import io
import lzma
import os
import tarfile
import unittest

from feeds_test import Case, sample

from supplylib import feeds

OBJECTS = sample("cos-tools-objects.txt").split()
KERNELS = {"18244.151.14": "6.1.100+", "18244.151.9": "6.1.90+", "18244.85.49": "6.1.58+",
           "17800.309.24": "5.15.146+", "182440.1.1": "9.9.9+"}


def tgz(members):
    """A gzip'd tar of MEMBERS {name: bytes}, directories first as COS's are."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, body in members.items():
            ti = tarfile.TarInfo(name)
            if body is None:
                ti.type = tarfile.DIRTYPE
                tf.addfile(ti)
            else:
                ti.size = len(body)
                tf.addfile(ti, io.BytesIO(body))
    return buf.getvalue()


def headers(release, filler=0):
    d = "usr/src/linux-headers-%s/" % release
    return tgz({"usr/": None, "usr/src/": None, d: None, d + "Makefile": b"# kernel\n",
                d + "filler": os.urandom(filler)})


def toolchain():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        ti = tarfile.TarInfo("bin/clang")
        ti.size, ti.mode = 3, 0o755
        tf.addfile(ti, io.BytesIO(b"#!\n"))
    return lzma.compress(buf.getvalue())


def conf(url, **kw):
    c = {"type": "cos", "name": "gke", "url": url, "milestones": ["18244"], "newest": 2}
    c.update(kw)
    return c


class Cos(Case):
    def setUp(self):
        super().setUp()
        for name in OBJECTS:
            build = name.split("/")[0]
            if name.endswith("kernel-headers.tgz"):
                rel = KERNELS[build] if "arm64" not in name else KERNELS[build] + "arm64"
                # Big enough that the head read is a part of it.
                body = headers(rel.replace("+arm64", "-arm64+"), filler=400000)
            elif name.endswith("toolchain.tar.xz"):
                body = toolchain()
            elif name.endswith("gpu_default_version"):
                body = b"535.216.03\n"
            elif name.endswith("toolchain_env"):
                body = b"CC=x86_64-cros-linux-gnu-clang\nCXX=x86_64-cros-linux-gnu-clang++\n"
            else:
                body = b"x"
            self.mirror.files["/cos-tools/" + name] = body

    def test_newest_builds_of_the_milestones(self):
        images = feeds.read(conf(self.mirror.url, arches=["x86_64", "aarch64"]), self.http)
        self.assertEqual([(i.os, i.os_build, i.kernel, i.arch) for i in images], [
            ("cos", "18244.151.14", "6.1.100+", "x86_64"),
            ("cos", "18244.151.14", "6.1.100-arm64+", "aarch64"),
            # 18244.200.1 has no kernel-headers.tgz yet: not a build to make.
            ("cos", "18244.151.9", "6.1.90+", "x86_64")])
        inp = images[0].inputs
        self.assertEqual(inp["cos_artifacts"].url,
                         self.mirror.url + "/cos-tools/18244.151.14/lakitu")
        body = self.mirror.files["/cos-tools/18244.151.14/lakitu/kernel-headers.tgz"]
        self.assertEqual(inp["kernel_headers"].size, len(body))
        self.assertEqual(inp["kernel_headers"].md5, hashlib.md5(body).hexdigest())
        # Only the head of each archive was read.
        self.assertIn("milestone 18244", images[0].origin)

    def test_plain_http_refused(self):
        """Nothing a COS feed reads is signed: its url and sdk_url are https (or file://)."""
        self.assertIn("feed gke: \"url\" 'http://storage.googleapis.com' is plain http",
                      self.refused(feeds.read, conf("http://storage.googleapis.com"),
                                   self.http))
        self.assertIn("feed gke: \"sdk_url\" 'http://sdk.example' is plain http",
                      self.refused(feeds.read, conf(self.mirror.url,
                                                    sdk_url="http://sdk.example"), self.http))
        image = feeds.read(conf(self.mirror.url, newest=1, sdk_url=self.mirror.url + "/sdk"),
                           self.http)[0]
        self.assertEqual(image.inputs["sdk"].url, self.mirror.url + "/sdk")

    def test_milestone_of_the_builds_the_fleet_runs(self):
        images = feeds.read(conf(self.mirror.url, milestones=[], newest=1), self.http,
                            running=["17800.309.24", "18244.85.49"])
        self.assertEqual([(i.os_build, i.kernel) for i in images],
                         [("17800.309.24", "5.15.146+"), ("18244.151.14", "6.1.100+")])
        self.assertEqual(feeds.read(conf(self.mirror.url, milestones=[]), self.http), [])

    def test_fetch_runs_fetch_cos_artifacts(self):
        image = feeds.read(conf(self.mirror.url, newest=1), self.http)[0]
        cache = os.path.join(self.dir, "cache")
        paths = feeds.fetch_inputs(image, cache, self.http)
        self.assertEqual(paths["cos_artifacts"], os.path.join(cache, "cos-18244.151.14-lakitu"))
        self.assertTrue(os.path.isfile(os.path.join(paths["toolchain"], "bin/clang")))
        with open(paths["toolchain_env"]) as f:
            self.assertIn("CC=x86_64-cros-linux-gnu-clang", f.read())
        # The mirror now serves other bytes than it listed: refused.
        image.inputs["kernel_headers"].md5 = "0" * 32
        self.assertIn("the listing says", self.refused(
            feeds.fetch_inputs, image, cache, self.http))
        del self.mirror.files["/cos-tools/18244.151.14/lakitu/kernel-headers.tgz"]
        self.assertIn("fetching COS 18244.151.14's artifacts: ", self.refused(
            feeds.fetch_inputs, image, os.path.join(self.dir, "other"), self.http))

    def test_archive_that_is_no_kernel_headers(self):
        key = "/cos-tools/18244.151.14/lakitu/kernel-headers.tgz"
        for body, want in ((tgz({"etc/passwd": b"x"}), "name no usr/src/linux-headers-"),
                           (b"not gzip", "is not gzip data"),
                           (tgz({"usr/src/linux-headers-$(reboot)/": None}),
                            "which is not a kernel release")):
            with self.subTest(want=want):
                self.mirror.files[key] = body
                self.assertIn(want, self.refused(feeds.read, conf(self.mirror.url), self.http))

    def test_listing_that_is_not_one(self):
        self.mirror.faults["/storage/v1/b/cos-tools/o"] = ("status", 503)
        self.assertIn("storage/v1/b/cos-tools/o?prefix=18244.&delimiter=%2F: HTTP 503",
                      self.refused(feeds.read, conf(self.mirror.url), self.http))
        for body, want in ((b'{"prefixes": [], "nextPageToken": "again"}', "more than 100 pages"),
                           (b"<html>", "is not JSON"),
                           (b'{"items": {"name": "x"}}', "not Cloud Storage's object listing"),
                           (b'{"prefixes": [], "nextPageToken": 7}', "nextPageToken is not")):
            with self.subTest(want=want):
                self.mirror.faults["/storage/v1/b/cos-tools/o"] = ("body", body)
                self.assertIn(want, self.refused(feeds.read, conf(self.mirror.url), self.http))
        self.assertIn("\"head_bytes\" is 10", self.refused(
            feeds.read, conf(self.mirror.url, head_bytes=10), self.http))
        self.assertIn("is neither a COS milestone", self.refused(
            feeds.read, conf(self.mirror.url, milestones=["18244/../x"]), self.http))


if __name__ == "__main__":
    unittest.main()
