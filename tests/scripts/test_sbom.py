# SPDX-License-Identifier: Apache-2.0
"""Unit tests of scripts/sbom, the SPDX 2.3 SBOM of an image: the deb822 stanzas of the
image's package record, Debian's machine-readable copyright files read as SPDX licence
expressions, and the document of a small image: valid against SPDX's own JSON schema, the
same bytes from the same image, each file under the package that holds it, and an image
that disagrees with its record refused.

data/spdx-schema-2.3.json is SPDX's schema as published, unchanged: schemas/spdx-schema.json
at tag v2.3 (commit aadf3b0b8dbbabdb4d880b0fc714255fea436ff7) of
https://github.com/spdx/spdx-spec, under the Creative Commons Attribution 3.0 licence of
that repository (the SPDX project, The Linux Foundation)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import jsonschema

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.realpath(os.path.join(HERE, "..", "..", "scripts"))
sys.path.insert(0, SCRIPTS)

from sbomlib import debian, licences, spdx  # noqa: E402

SCHEMA = os.path.join(HERE, "data", "spdx-schema-2.3.json")
STANZA = """Package: libfoo1
Status: install ok installed
Section: libs
Architecture: amd64
Multi-Arch: same
Source: foo (1.2-3)
Version: 1.2-3+b1
Homepage: https://foo.example/
Description: a library
 with a long description
 .
 in paragraphs
"""
COPYRIGHT = """Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: foo

Files: *
Copyright: 2020 Someone
License: LGPL-2.1+ or GPL-2

Files: lib/compat.c
Copyright: 2001 Someone Else
License: Expat, BSD-3-clause

Files: debian/*
Copyright: 2022 A Debian Developer
License: GPL-2+ with OpenSSL exception

License: GPL-2+ with OpenSSL exception
 This program is free software, with the OpenSSL exception.
"""


def write(path, data, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(data)


class Stanza(unittest.TestCase):
    def test_fields_and_continuations(self):
        st = debian.parse_stanza(STANZA)
        self.assertEqual(st["Package"], "libfoo1")
        self.assertEqual(st["Source"], "foo (1.2-3)")
        self.assertEqual(st["Description"], "a library\nwith a long description\n.\nin paragraphs")

    def test_malformed(self):
        for bad in (" leading continuation\n", "no colon here\n", "two words: x\n"):
            with self.assertRaises(ValueError, msg=bad):
                debian.parse_stanza(bad)


class Licences(unittest.TestCase):
    def test_short_names(self):
        for dep5, want in (("GPL-2", "GPL-2.0-only"), ("GPL-2+", "GPL-2.0-or-later"),
                           ("LGPL-2.1+", "LGPL-2.1-or-later"), ("lgpl-3", "LGPL-3.0-only"),
                           ("Expat", "MIT"), ("BSD-3-clause", "BSD-3-Clause"),
                           ("Apache-2.0", "Apache-2.0"), ("MPL-2.0", "MPL-2.0"),
                           ("GFDL-1.3+", "GFDL-1.3-or-later"), ("MPL-2.0+", None),
                           ("public-domain", None), ("GPL", None)):
            self.assertEqual(licences.spdx_id(dep5), want, dep5)

    def test_machine_readable(self):
        expr, refs = licences.declared("libfoo1", COPYRIGHT)
        ref = "LicenseRef-libfoo1-GPL-2-with-OpenSSL-exception"
        self.assertEqual(expr, "(LGPL-2.1-or-later OR GPL-2.0-only) AND (MIT AND BSD-3-Clause)"
                         " AND " + ref)
        self.assertEqual(refs, {ref: ("GPL-2+ with OpenSSL exception",
                                      "This program is free software, with the OpenSSL "
                                      "exception.")})

    def test_not_machine_readable(self):
        for text in ("This is the Debian package of foo.\n\nCopyright 2001 Someone\n",
                     "Format: http://example.org/other\n\nFiles: *\nLicense: GPL-2\n",
                     ""):
            self.assertEqual(licences.declared("foo", text), ("NOASSERTION", {}))


class Document(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = os.path.join(self.tmp.name, "rootfs")
        r = self.root
        write(r + "/usr/bin/nvidia-driver-installer", b"\x7fELF installer", "wb")
        write(r + "/usr/share/doc/nvidia-driver-installer/design.md", "# Design\n")
        write(r + "/usr/lib/x86_64-linux-gnu/libarchive.so.13", b"\x7fELF ours", "wb")
        write(r + "/usr/lib/x86_64-linux-gnu/libfoo.so.1", b"\x7fELF foo", "wb")
        os.symlink("libfoo.so.1", r + "/usr/lib/x86_64-linux-gnu/libfoo.so.1.2")
        write(r + "/etc/passwd", "root:x:0:0:root:/root:/usr/sbin/nologin\n")
        # Merged /usr, and a package that ships its file under /lib.
        os.symlink("usr/lib", r + "/lib")
        write(r + "/usr/lib/x86_64-linux-gnu/libbar.so.2", b"\x7fELF bar", "wb")
        write(r + "/var/lib/dpkg/status.d/libbar2", STANZA.replace("libfoo1", "libbar2"))
        write(r + "/var/lib/dpkg/status.d/libbar2.md5sums", "%s  lib/x86_64-linux-gnu/libbar.so.2\n"
              % debian.md5_file(r + "/usr/lib/x86_64-linux-gnu/libbar.so.2"))
        write(r + "/var/lib/dpkg/status.d/libfoo1", STANZA)
        write(r + "/usr/share/doc/libfoo1/copyright", COPYRIGHT)
        md5 = debian.md5_file(r + "/usr/lib/x86_64-linux-gnu/libfoo.so.1")
        write(r + "/var/lib/dpkg/status.d/libfoo1.md5sums",
              "%s  usr/lib/x86_64-linux-gnu/libfoo.so.1\n" % md5)

    def tearDown(self):
        self.tmp.cleanup()

    def doc(self, when=1700000000):
        return spdx.document(self.root, debian.read_packages(self.root),
                             "nvidia-driver-installer", "0.25.0", "abc1234", "amd64",
                             "registry.example/ndi/nvidia-driver-installer@sha256:" + "a" * 64,
                             "debian-12", created=when)

    def test_valid_against_spdx_schema(self):
        with open(SCHEMA) as f:
            schema = json.load(f)
        doc = json.loads(spdx.dumps(self.doc()))
        jsonschema.Draft7Validator(schema).validate(doc)
        # and the schema is not one that takes anything
        doc["packages"][0]["primaryPackagePurpose"] = "IMAGE"
        with self.assertRaises(jsonschema.ValidationError):
            jsonschema.Draft7Validator(schema).validate(doc)

    def test_what_it_says(self):
        doc = self.doc()
        by_id = {p["SPDXID"]: p for p in doc["packages"]}
        names = {f["SPDXID"]: f["fileName"] for f in doc["files"]}
        rels = {(r["spdxElementId"], r["relationshipType"], r["relatedSpdxElement"])
                for r in doc["relationships"]}
        image = [p for p in doc["packages"] if p["primaryPackagePurpose"] == "CONTAINER"][0]
        self.assertIn(("SPDXRef-DOCUMENT", "DESCRIBES", image["SPDXID"]), rels)
        self.assertEqual(image["externalRefs"][0]["referenceLocator"],
                         "pkg:oci/nvidia-driver-installer@sha256%3A" + "a" * 64 +
                         "?arch=amd64&repository_url=registry.example%2Fndi%2F"
                         "nvidia-driver-installer")
        foo = [p for p in doc["packages"] if p["name"] == "libfoo1"][0]
        self.assertEqual(foo["versionInfo"], "1.2-3+b1")
        self.assertEqual(foo["externalRefs"][0]["referenceLocator"],
                         "pkg:deb/debian/libfoo1@1.2-3%2Bb1?arch=amd64&distro=debian-12"
                         "&upstream=foo%401.2-3")
        self.assertEqual(foo["downloadLocation"], "https://snapshot.debian.org/package/foo/1.2-3/")
        self.assertTrue(foo["licenseDeclared"].startswith("(LGPL-2.1-or-later OR GPL-2.0-only)"))
        own = [p for p in doc["packages"] if p["primaryPackagePurpose"] == "APPLICATION"][0]
        self.assertEqual(own["sourceInfo"], "built from commit abc1234 of nvidia-driver-installer")
        # The image CONTAINS every file; a package CONTAINS those it holds.
        holder = {}
        for a, t, b in sorted(rels):
            if t == "CONTAINS" and b in names:
                self.assertIn((image["SPDXID"], "CONTAINS", b), rels)
                if a != image["SPDXID"]:
                    self.assertNotIn(names[b], holder)
                    holder[names[b]] = by_id[a]["name"]
        holder.update({n: "image" for n in names.values() if n not in holder})
        self.assertEqual(holder, {
            "./usr/lib/x86_64-linux-gnu/libfoo.so.1": "libfoo1",
            "./usr/lib/x86_64-linux-gnu/libbar.so.2": "libbar2",
            "./var/lib/dpkg/status.d/libbar2": "image",
            "./var/lib/dpkg/status.d/libbar2.md5sums": "image",
            "./usr/bin/nvidia-driver-installer": "nvidia-driver-installer",
            "./usr/lib/x86_64-linux-gnu/libarchive.so.13": "nvidia-driver-installer",
            "./usr/share/doc/nvidia-driver-installer/design.md": "nvidia-driver-installer",
            "./usr/share/doc/libfoo1/copyright": "image",
            "./var/lib/dpkg/status.d/libfoo1": "image",
            "./var/lib/dpkg/status.d/libfoo1.md5sums": "image",
            "./etc/passwd": "image"})
        for f in doc["files"]:
            self.assertEqual([c["algorithm"] for c in f["checksums"]], ["SHA1", "SHA256"])

    def test_reproducible(self):
        a, b = spdx.dumps(self.doc()), spdx.dumps(self.doc())
        self.assertEqual(a, b)
        c = self.doc(when=1700000001)
        self.assertEqual(c["creationInfo"]["created"], "2023-11-14T22:13:21Z")
        self.assertEqual(c["documentNamespace"], json.loads(a)["documentNamespace"])
        write(self.root + "/etc/group", "root:x:0:\n")
        self.assertNotEqual(self.doc()["documentNamespace"], json.loads(a)["documentNamespace"])

    def test_record_leading_out(self):
        os.unlink(self.root + "/lib")
        os.symlink("/usr/lib", self.root + "/lib")  # the host's, not the image's
        with self.assertRaisesRegex(debian.RootfsError, "libbar2.md5sums names"):
            debian.read_packages(self.root)

    def test_image_disagrees_with_record(self):
        write(self.root + "/usr/lib/x86_64-linux-gnu/libfoo.so.1", b"\x7fELF changed", "wb")
        with self.assertRaisesRegex(debian.RootfsError, "libfoo.so.1 differs from package libfoo1"):
            debian.read_packages(self.root)
        os.unlink(self.root + "/usr/lib/x86_64-linux-gnu/libfoo.so.1")
        with self.assertRaisesRegex(debian.RootfsError, "which the image lacks"):
            debian.read_packages(self.root)

    def run_cli(self, *args):
        env = dict(os.environ, SOURCE_DATE_EPOCH="1700000000")
        return subprocess.run([sys.executable, os.path.join(SCRIPTS, "sbom"), *args],
                              capture_output=True, text=True, env=env)

    def test_cli(self):
        out = os.path.join(self.tmp.name, "sbom.json")
        p = self.run_cli(self.root, "--version", "0.25.0", "--commit", "abc1234", "--arch",
                         "amd64", "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            self.assertEqual(json.load(f)["creationInfo"]["created"], "2023-11-14T22:13:20Z")
        p = self.run_cli(self.root, "--version", "0.25.0", "--commit", "c", "--arch", "amd64",
                         "--image-ref", "Registry/x:latest")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--image-ref", p.stderr)
        write(self.root + "/var/lib/dpkg/status.d/libfoo1", STANZA.replace("Version", "V"))
        p = self.run_cli(self.root, "--version", "0.25.0", "--commit", "c", "--arch", "amd64")
        self.assertEqual(p.returncode, 1)
        self.assertIn("no Version field", p.stderr)


if __name__ == "__main__":
    unittest.main()
