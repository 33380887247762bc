# SPDX-License-Identifier: Apache-2.0
"""The RHEL feed (scripts/supplylib/feeds/rhel.py) over repodata written to createrepo_c's
format (data/feeds/README.md): kernel-devel of the feed's architecture, newest first, the
RPM fetched and checked against primary.xml's sha256; primary.xml checked against
repomd.xml; entities, bad XML, damaged gzip, paths outside the repository refused."""
import bz2
import gzip
import hashlib
import lzma
import os
import unittest

from feeds_test import Case, sample

from supplylib import feeds

REPOMD = sample("rhel-repomd.xml")
PRIMARY = sample("rhel-primary.xml")
RPM1, RPM2 = b"kernel-devel 427 rpm bytes", b"kernel-devel 503 rpm bytes"


def conf(url, **kw):
    c = {"type": "rhel", "name": "rocky9", "url": url + "/rocky/9/AppStream/x86_64/os",
         "arch": "x86_64"}
    c.update(kw)
    return c


class Rhel(Case):
    def serve(self, primary=None, gz=None, suffix=".gz"):
        base = "/rocky/9/AppStream/x86_64/os/"
        text = primary or PRIMARY
        for tag, body in (("RPM1", RPM1), ("RPM2", RPM2)):
            text = text.replace("@%s_SHA256@" % tag, hashlib.sha256(body).hexdigest())
            text = text.replace("@%s_SIZE@" % tag, str(len(body)))
        self.mirror.files[base + "Packages/k/kernel-devel-5.14.0-427.13.1.el9_4.x86_64.rpm"] = RPM1
        self.mirror.files[base + "Packages/k/kernel-devel-5.14.0-503.14.1.el9_5.x86_64.rpm"] = RPM2
        raw = text.encode()
        data = gz if gz is not None else gzip.compress(raw, mtime=0)
        sha = hashlib.sha256(data).hexdigest()
        md = REPOMD.replace("@PRIMARY_SHA256@", sha).replace("@PRIMARY_SIZE@", str(len(data)))
        md = md.replace("@OPEN_SHA256@", hashlib.sha256(raw).hexdigest())
        md = md.replace("@OPEN_SIZE@", str(len(raw))).replace("-primary.xml.gz",
                                                             "-primary.xml" + suffix)
        self.mirror.files[base + "repodata/repomd.xml"] = md.encode()
        self.mirror.files[base + "repodata/%s-primary.xml%s" % (sha, suffix)] = data
        return base + "repodata/%s-primary.xml%s" % (sha, suffix)

    def test_kernel_devel_newest_first(self):
        self.serve()
        images = feeds.read(conf(self.mirror.url), self.http)
        self.assertEqual([(i.os, i.kernel, i.arch) for i in images], [
            ("rhel", "5.14.0-503.14.1.el9_5.x86_64", "x86_64"),
            ("rhel", "5.14.0-427.13.1.el9_4.x86_64", "x86_64")])
        self.assertEqual([i.kernel for i in feeds.read(conf(self.mirror.url, newest=1),
                                                       self.http)],
                         ["5.14.0-503.14.1.el9_5.x86_64"])
        arm = feeds.read(conf(self.mirror.url, arch="aarch64"), self.http)
        self.assertEqual([i.kernel for i in arm], ["5.14.0-503.14.1.el9_5.aarch64"])
        paths = feeds.fetch_inputs(images[0], os.path.join(self.dir, "c"), self.http)
        with open(paths["kernel_devel_rpm"], "rb") as f:
            self.assertEqual(f.read(), RPM2)

    def test_rpm_digest_mismatch(self):
        self.serve()
        image = feeds.read(conf(self.mirror.url), self.http)[0]
        self.mirror.files["/rocky/9/AppStream/x86_64/os/Packages/k/kernel-devel-5.14.0-503.14.1"
                          ".el9_5.x86_64.rpm"] = RPM1
        self.assertIn("sha256 mismatch", self.refused(
            feeds.fetch_inputs, image, os.path.join(self.dir, "c"), self.http))

    def test_primary_against_repomd(self):
        path = self.serve()
        data = self.mirror.files[path]
        self.mirror.files[path] = data[:-1] + bytes([data[-1] ^ 1])
        self.assertIn("sha256 mismatch (repomd.xml says", self.refused(
            feeds.read, conf(self.mirror.url), self.http))

    def test_compressions(self):
        for suffix, comp in ((".xz", lzma.compress),
                             (".bz2", bz2.compress)):
            with self.subTest(suffix=suffix):
                text = PRIMARY
                for tag, body in (("RPM1", RPM1), ("RPM2", RPM2)):
                    text = text.replace("@%s_SHA256@" % tag, hashlib.sha256(body).hexdigest())
                    text = text.replace("@%s_SIZE@" % tag, str(len(body)))
                self.serve(gz=comp(text.encode()), suffix=suffix)
                self.assertEqual(len(feeds.read(conf(self.mirror.url), self.http)), 2)

    def test_plain_http_refused(self):
        """repomd.xml's signature is not checked: only https (or file://) vouches for it."""
        msg = self.refused(feeds.read, conf("http://mirror.example"), self.http)
        self.assertIn("feed rocky9: \"url\" 'http://mirror.example/rocky/9/AppStream/x86_64/os'"
                      " is plain http, and nothing this feed reads is signed: give the mirror's "
                      "https:// URL (or a file:// copy)", msg)
        self.assertEqual(self.mirror.log, [])

    def test_hostile_and_damaged(self):
        good = gzip.compress(PRIMARY.encode(), mtime=0)
        for primary, gz, want in (
                ('<?xml version="1.0"?>\n<!DOCTYPE m [<!ENTITY a "aaaa">]>\n<metadata/>', None,
                 "declares a document type or entities"),
                (PRIMARY.replace("</metadata>", "<metadata>"), None, "is not well-formed XML"),
                (None, good[:len(good) // 2], "is truncated"),
                (None, b"PK\x03\x04, not gzip", "is not valid gzip data"),
                (PRIMARY.replace('"Packages/k/kernel-devel-5.14.0-503', '"../../k/kernel-devel-'
                                 '5.14.0-503'), None, "is not a path inside the repository"),
                (PRIMARY.replace('rel="503.14.1.el9_5"/>', 'rel="503/../x"/>', 1), None,
                 "which is not a kernel release"),
                (PRIMARY.replace('<size package="@RPM2_SIZE@"', '<size package="9' + "9" * 12
                                 + '"'), None, "is not a size up to"),
                (PRIMARY.replace('<location href="Packages/k/kernel-devel-5.14.0-503',
                                 '<location xml:base="http://elsewhere/" href="Packages/k/'
                                 'kernel-devel-5.14.0-503'), None, "xml:base")):
            with self.subTest(want=want):
                self.serve(primary, gz)
                self.assertIn(want, self.refused(feeds.read, conf(self.mirror.url), self.http))

    def test_repomd_without_primary(self):
        self.serve()
        self.mirror.files["/rocky/9/AppStream/x86_64/os/repodata/repomd.xml"] = \
            b'<repomd xmlns="http://linux.duke.edu/metadata/repo"/>'
        self.assertIn("has no <data type=\"primary\">", self.refused(
            feeds.read, conf(self.mirror.url), self.http))


if __name__ == "__main__":
    unittest.main()
