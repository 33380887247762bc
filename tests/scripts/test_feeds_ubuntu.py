# SPDX-License-Identifier: Apache-2.0
"""The Ubuntu feed (scripts/supplylib/feeds/ubuntu.py) over a recorded sample of Ubuntu's
noble-updates restricted index (data/feeds/README.md): each kernel with Canonical's
linux-modules-nvidia-BRANCH, the objects and signatures of the versions its Depends pins,
the -open modules; a kernel whose signatures are not published yet is noted and left out;
a pin to a version the index lacks is not replaced by another version."""
import unittest

from feeds_test import Case, sample

from supplylib import feeds

PACKAGES = sample("ubuntu-noble-updates-restricted-amd64.Packages")
RELEASE = sample("ubuntu-noble-updates.Release-head")


def conf(url, **kw):
    c = {"type": "ubuntu", "name": "noble", "url": url, "suites": ["noble-updates"],
         "arch": "amd64", "branch": "535-server"}
    c.update(kw)
    return c


class Ubuntu(Case):
    def serve(self, text=PACKAGES):
        return self.debian_archive("noble-updates", "restricted", "amd64", text, RELEASE)

    def test_kernels_with_canonicals_packages(self):
        self.serve()
        notes = []
        images = feeds.read(conf(self.mirror.url), self.http, notes=notes)
        self.assertEqual([(i.os, i.kernel, i.arch) for i in images],
                         [("ubuntu", "7.0.0-14-generic", "x86_64")])
        names = {k: v.url.rsplit("/", 1)[1] for k, v in images[0].inputs.items()}
        self.assertEqual(names, {
            "modules_deb": "linux-modules-nvidia-535-server-7.0.0-14-generic_"
                           "7.0.0-14.14~24.04.3+3_amd64.deb",
            "objects_deb": "linux-objects-nvidia-535-server-7.0.0-14-generic_"
                           "7.0.0-14.14~24.04.3+3_amd64.deb",
            "signatures_deb": "linux-signatures-nvidia-7.0.0-14-generic_"
                              "7.0.0-14.14~24.04.3+3_amd64.deb",
            "modules_open_deb": "linux-modules-nvidia-535-server-open-7.0.0-14-generic_"
                                "7.0.0-14.14~24.04.3+3_amd64.deb"})
        self.assertEqual(len(notes), 1)
        self.assertIn("linux-modules-nvidia-535-server-6.17.0-40-generic depends on "
                      "linux-signatures-nvidia-6.17.0-40-generic (= 6.17.0-40.40~24.04.1), "
                      "which the index does not have (yet)", notes[0])
        # Without a list for notes, the half-published kernel is the error.
        self.assertIn("6.17.0-40-generic", self.refused(
            feeds.read, conf(self.mirror.url), self.http))

    def test_pinned_version_only(self):
        # The signatures of another build of the same kernel: the pin (=) is not met.
        self.serve(PACKAGES.replace("Version: 7.0.0-14.14~24.04.3+3\nDepends: linux-image-7.0"
                                    ".0-14-generic", "Version: 7.0.0-14.14~24.04.2\nDepends: "
                                    "linux-image-7.0.0-14-generic"))
        notes = []
        self.assertEqual(feeds.read(conf(self.mirror.url), self.http, notes=notes), [])
        self.assertTrue(any("linux-signatures-nvidia-7.0.0-14-generic (= 7.0.0-14.14~24.04.3+3)"
                            in n for n in notes), notes)

    def test_other_branch_and_flavour_filter(self):
        self.serve()
        self.assertEqual(feeds.read(conf(self.mirror.url, branch="570-server"), self.http), [])
        self.assertEqual(feeds.read(conf(self.mirror.url, kernel_flavours=["gcp"]), self.http,
                                    notes=[]), [])
        self.assertIn("not one of Canonical's NVIDIA branches", self.refused(
            feeds.read, conf(self.mirror.url, branch="../535"), self.http))

    def test_name_that_is_no_kernel_release(self):
        self.serve(PACKAGES.replace("Package: linux-modules-nvidia-535-server-7.0.0-14-generic",
                                    "Package: linux-modules-nvidia-535-server-7.0.0-14-gen..ic"))
        self.assertIn("which is not a kernel release", self.refused(
            feeds.read, conf(self.mirror.url), self.http, notes=[]))

    def test_missing_component_named(self):
        self.serve()
        self.assertIn("lists no main/binary-amd64/Packages", self.refused(
            feeds.read, conf(self.mirror.url, component="main"), self.http))


if __name__ == "__main__":
    unittest.main()
