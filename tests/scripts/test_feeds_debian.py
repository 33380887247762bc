# SPDX-License-Identifier: Apache-2.0
"""The Debian feed (scripts/supplylib/feeds/debian.py) over a recorded sample of Debian's
bookworm Packages index (data/feeds/README.md): the newest ABIs of the flavours asked,
each with the -common headers and the linux-kbuild its Depends names, the three fetched
and checked against the index's SHA256; a hostile or damaged index refused in one line."""
import hashlib
import lzma
import os
import re
import shutil
import subprocess
import unittest

from feeds_test import Case, Mirror, sample

from supplylib import feeds
from supplylib.feeds import conf as C
from supplylib.feeds import debindex

PACKAGES = sample("debian-bookworm-main-amd64.Packages")
RELEASE = sample("debian-bookworm.Release-head")


def conf(url, **kw):
    c = {"type": "debian", "name": "bookworm", "url": url, "suite": "bookworm",
         "arch": "amd64"}
    c.update(kw)
    return c


class Debian(Case):
    def serve(self, text=PACKAGES):
        return self.debian_archive("bookworm", "main", "amd64", text, RELEASE)

    def test_newest_kernels_with_what_they_depend_on(self):
        self.serve()
        images = feeds.read(conf(self.mirror.url, newest=1), self.http)
        self.assertEqual([(i.os, i.os_build, i.kernel, i.arch) for i in images],
                         [("debian", None, "6.1.0-50-amd64", "x86_64")])
        inp = images[0].inputs
        self.assertEqual(sorted(inp), ["headers_common_deb", "headers_deb", "kbuild_deb"])
        self.assertTrue(inp["headers_common_deb"].url.endswith(
            "/pool/main/l/linux/linux-headers-6.1.0-50-common_6.1.176-1_all.deb"))
        self.assertEqual(inp["headers_deb"].sha256,
                         "91a7929ce639f4199e9ff7f929236cdfdcb5511dba613af5094369e95ca241da")
        self.assertIn("linux-headers-6.1.0-50-amd64 6.1.176-1", images[0].origin)
        both = feeds.read(conf(self.mirror.url, kernel_flavours=["amd64", "cloud-amd64"]),
                          self.http)
        self.assertEqual(sorted(i.kernel for i in both), [
            "6.1.0-47-amd64", "6.1.0-47-cloud-amd64", "6.1.0-50-amd64"])

    def test_fetch_checks_digests_and_gathers_the_three(self):
        text = PACKAGES
        for name in ("linux-headers-6.1.0-50-amd64", "linux-headers-6.1.0-50-common",
                     "linux-kbuild-6.1"):
            body = ("the bytes of %s" % name).encode()
            st = re.search(r"(?ms)^Package: %s\n.*?(?=^\n|\Z)" % re.escape(name), text)
            fn = re.search(r"^Filename: (.*)$", st.group(0), re.M).group(1)
            self.mirror.files["/" + fn] = body
            new = re.sub(r"(?m)^SHA256: .*$", "SHA256: " + hashlib.sha256(
                body).hexdigest(), st.group(0))
            new = re.sub(r"(?m)^Size: .*$", "Size: %d" % len(body), new)
            text = text.replace(st.group(0), new)
        self.serve(text)
        image = [i for i in feeds.read(conf(self.mirror.url), self.http)
                 if i.kernel == "6.1.0-50-amd64"][0]
        cache = os.path.join(self.dir, "cache")
        paths = feeds.fetch_inputs(image, cache, self.http)
        self.assertEqual(sorted(os.listdir(paths["headers"])), [
            "linux-headers-6.1.0-50-amd64_6.1.176-1_amd64.deb",
            "linux-headers-6.1.0-50-common_6.1.176-1_all.deb",
            "linux-kbuild-6.1_6.1.176-1_amd64.deb"])
        with open(paths["kbuild_deb"], "rb") as f:
            self.assertEqual(f.read(), b"the bytes of linux-kbuild-6.1")
        # Fetched once: the second time from the cache, nothing asked.
        asked = len(self.mirror.log)
        feeds.fetch_inputs(image, cache, self.http)
        self.assertEqual(len(self.mirror.log), asked)
        # The mirror serves other bytes than its index says: refused, nothing kept.
        os.unlink(paths["kbuild_deb"])
        self.mirror.files["/pool/main/l/linux/linux-kbuild-6.1_6.1.176-1_amd64.deb"] = \
            b"the bytes of linux-kbuild-6.X"
        msg = self.refused(feeds.fetch_inputs, image, cache, self.http)
        self.assertIn("linux-kbuild-6.1_6.1.176-1_amd64.deb: sha256 mismatch", msg)
        self.assertFalse(os.path.exists(paths["kbuild_deb"]))

    def test_index_against_release(self):
        rel = self.serve()
        data = self.mirror.files[rel]
        self.mirror.files[rel] = data[:-1] + bytes([data[-1] ^ 1])
        self.assertIn("Packages.xz: sha256 mismatch", self.refused(
            feeds.read, conf(self.mirror.url), self.http))
        self.mirror.files[rel] = data[:len(data) // 2]
        self.assertIn("bytes, the index says", self.refused(
            feeds.read, conf(self.mirror.url), self.http))

    def test_release_refused(self):
        self.serve()
        rel = "/dists/bookworm/Release"
        text = self.mirror.files[rel].decode()
        self.mirror.files[rel] = text.replace("SHA256:\n ", "SHA256:\n xyz ").encode()
        self.assertIn("is not \"DIGEST SIZE PATH\"", self.refused(
            feeds.read, conf(self.mirror.url), self.http))
        self.mirror.files[rel] = RELEASE.encode()
        self.assertIn("Release has no SHA256 field", self.refused(
            feeds.read, conf(self.mirror.url), self.http))
        self.serve()
        self.assertIn("lists no main/binary-arm64/Packages", self.refused(
            feeds.read, conf(self.mirror.url, arch="arm64"), self.http))

    def gpg(self, home, *args):
        return subprocess.run(["gpg", "--homedir", home, "--batch", "--quiet",
                               "--pinentry-mode", "loopback", "--passphrase", ""] + list(args),
                              check=True, capture_output=True).stdout

    def key(self, name):
        """A signing key of its own (ed25519): its GnuPG home and its public keyring."""
        home = os.path.join(self.dir, "gpg-" + name)
        os.makedirs(home, mode=0o700)
        # gpg starts an agent for the home: ended before the home is removed.
        self.addCleanup(subprocess.run, ["gpgconf", "--homedir", home, "--kill", "gpg-agent"],
                        capture_output=True)
        self.gpg(home, "--quick-gen-key", "%s <%s@example.org>" % (name, name), "ed25519",
                 "sign", "never")
        ring = os.path.join(self.dir, name + ".gpg")
        with open(ring, "wb") as f:
            f.write(self.gpg(home, "--export"))
        return home, ring

    def sign(self, home):
        rel = os.path.join(self.dir, "Release")
        with open(rel, "wb") as f:
            f.write(self.mirror.files["/dists/bookworm/Release"])
        self.mirror.files["/dists/bookworm/Release.gpg"] = self.gpg(
            home, "--armor", "--detach-sign", "--output", "-", rel)

    def plain_http(self):
        """The mirror over plain http from here on."""
        self.mirror.close()
        self.mirror = Mirror(tls=False)
        self.addCleanup(self.mirror.close)

    @unittest.skipUnless(shutil.which("gpg") and shutil.which("gpgv"), "no gpg and gpgv")
    def test_release_signature(self):
        """Over plain http the Release's signature is what vouches for the archive."""
        archive, ring = self.key("archive")
        other, _ = self.key("other")
        self.plain_http()
        self.serve()
        self.sign(archive)
        c = conf(self.mirror.url, keyring=ring)
        self.assertEqual(len(feeds.read(c, self.http)), 2)
        # Debian's keyring, where installed, is the default of an http:// debian feed.
        default = C.DEBIAN_KEYRING
        self.addCleanup(setattr, C, "DEBIAN_KEYRING", default)
        C.DEBIAN_KEYRING = ring
        self.assertEqual(len(feeds.read(conf(self.mirror.url), self.http)), 2)
        # Signed by a key the keyring does not hold.
        self.sign(other)
        self.assertIn("Release: no signature by a key of %s: refused" % ring, self.refused(
            feeds.read, c, self.http))
        # Signed, then altered.
        self.sign(archive)
        rel = self.mirror.files["/dists/bookworm/Release"]
        self.mirror.files["/dists/bookworm/Release"] = rel.replace(b"Debian 12", b"Debian 99")
        self.assertIn("Release: a bad signature: refused", self.refused(feeds.read, c,
                                                                        self.http))
        self.assertIn("does not exist", self.refused(
            feeds.read, conf(self.mirror.url, keyring=ring + ".no"), self.http))

    def test_plain_http_needs_a_keyring(self):
        """A debian or ubuntu feed over plain http names a keyring (debian: Debian's own
        where installed), or is refused before anything is read; https and file:// need
        none."""
        self.plain_http()
        self.serve()
        default = C.DEBIAN_KEYRING
        self.addCleanup(setattr, C, "DEBIAN_KEYRING", default)
        C.DEBIAN_KEYRING = os.path.join(self.dir, "not-installed.gpg")
        msg = self.refused(feeds.read, conf(self.mirror.url), self.http)
        self.assertIn("is plain http and the feed names no \"keyring\": give \"keyring\": "
                      "\"%s\" (apt-get install debian-archive-keyring), or an https:// URL"
                      % C.DEBIAN_KEYRING, msg)
        ubuntu = {"type": "ubuntu", "name": "noble", "url": self.mirror.url,
                  "suites": ["noble-updates"], "arch": "amd64", "branch": "535-server"}
        msg = self.refused(feeds.read, ubuntu, self.http)
        self.assertIn("\"keyring\": \"/usr/share/keyrings/ubuntu-archive-keyring.gpg\" "
                      "(apt-get install ubuntu-keyring)", msg)
        self.assertEqual(self.mirror.log, [])
        self.assertIsNone(C.keyring(conf("file:///srv/mirror"), "file:///srv/mirror"))
        self.assertIsNone(C.keyring(conf("https://m"), "https://m"))

    def test_release_expired(self):
        self.debian_archive("bookworm", "main", "amd64", PACKAGES,
                            RELEASE + "Valid-Until: Sat, 01 Jan 2000 00:00:00 UTC\n")
        self.assertIn("expired at Sat, 01 Jan 2000 00:00:00 UTC (Valid-Until)", self.refused(
            feeds.read, conf(self.mirror.url), self.http))

    def test_truncated_and_damaged_xz(self):
        good = lzma.compress(PACKAGES.encode(), format=lzma.FORMAT_XZ)
        msg = self.refused(feeds.compressed.decompress, good[:len(good) // 2], "Packages.xz",
                           "X")
        self.assertIn("X is truncated", msg)
        msg = self.refused(feeds.compressed.decompress, b"\xfd7zXZ\x00garbage", "P.xz", "X")
        self.assertIn("X is not valid xz data", msg)
        msg = self.refused(feeds.compressed.decompress, good, "Packages.xz", "X", 1000)
        self.assertIn("decompresses to more than 1000 bytes", msg)

    def test_hostile_stanzas(self):
        for bad, want in (
                (("Filename: pool/main/l/linux/linux-headers-6.1.0-50-amd64_6.1.176-1_amd64.deb",
                  "Filename: pool/../../etc/x.deb"), "is not a path inside the archive"),
                (("Package: linux-headers-6.1.0-50-amd64",
                  "Package: linux-headers-6.1.0-50-amd64/../x"), "not a Debian package name"),
                (("SHA256: 91a7929ce639f4199e9ff7f929236cdfdcb5511dba613af5094369e95ca241da",
                  "SHA256: 91a7"), "no SHA256 of 64 hex digits"),
                (("Size: 1688232", "Size: 99999999999999"), "is not a size up to"),
                (("Package: linux-headers-6.1.0-50-amd64",
                  "Package: linux-headers-6.1.0-50-amd64\nPackage: x"), "field Package twice"),
                (("Package: linux-headers-6.1.0-50-amd64",
                  "Package: linux-headers-6.1.0-50-amd64\nnot a field"), "is not a \"Field")):
            with self.subTest(want=want):
                self.assertIn(bad[0], PACKAGES)
                self.serve(PACKAGES.replace(bad[0], bad[1], 1))
                self.assertIn(want, self.refused(feeds.read, conf(self.mirror.url), self.http))

    def test_half_published_kernel_is_noted_not_fatal(self):
        text = re.sub(r"(?ms)^Package: linux-headers-6.1.0-50-common\n.*?(?=^\n|\Z)", "",
                      PACKAGES)
        self.serve(text)
        notes = []
        images = feeds.read(conf(self.mirror.url), self.http, notes=notes)
        self.assertEqual([i.kernel for i in images], ["6.1.0-47-amd64"])
        self.assertEqual(len(notes), 1)
        self.assertIn("linux-headers-6.1.0-50-amd64 depends on linux-headers-6.1.0-50-common "
                      "(= 6.1.176-1), which the index does not have (yet)", notes[0])

    def test_config_refused(self):
        self.assertIn("no \"suite\"", self.refused(
            feeds.read, {"type": "debian", "name": "x", "url": "http://h"}, self.http))
        self.assertIn("give x86_64 or aarch64", self.refused(
            feeds.read, conf("http://h", arch="mips"), self.http))
        self.assertIn("type 'suse'", self.refused(feeds.read, {"type": "suse"}, self.http))

    def test_versions_compare_as_dpkg(self):
        for a, b in (("6.1.176-1", "6.1.170-3"), ("1.0", "1.0~rc1"), ("2:1", "1:9"),
                     ("7.0.0-14.14~24.04.3+3", "7.0.0-14.14~24.04.3"), ("1.0a", "1.0"),
                     ("1.0-2", "1.0-1.1")):
            with self.subTest(a=a, b=b):
                self.assertGreater(debindex.compare(a, b), 0)
                self.assertLess(debindex.compare(b, a), 0)
        self.assertEqual(debindex.compare("1.0-1", "1.0-1"), 0)


if __name__ == "__main__":
    unittest.main()
