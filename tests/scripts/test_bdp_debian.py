# SPDX-License-Identifier: Apache-2.0
"""Debian's packages of the driver (scripts/bdp/debian.py, fetch): the packages --debian
VERSION needs, taken from the work directory when there, else asked of apt (a stand-in
here, which records what it is asked: nothing reaches a network), the architecture's own
directory for --arch arm64, a package Debian does not have named."""
import os
import unittest

from bdp_test import Case

from bdp import debian
from bdp.record import Flavour

V = "535.261.03"


class FakeApt:
    """apt with Debian's versions VERSIONS {package: [version]}; downloads are files."""
    made = []

    def __init__(self, work, mirror, suite, arch):
        self.arch = arch
        self.asked = []
        FakeApt.made.append(self)

    def update(self):
        self.asked.append("update")

    def versions(self, pkg):
        return self.VERSIONS.get(pkg, [])

    def download(self, spec, dest):
        self.asked.append(spec)
        name, _, version = spec.partition("=")
        open(os.path.join(dest, "%s_%s_%s.deb" % (name, version or "1.0", self.arch)),
             "w").close()


class Fetch(Case):
    def setUp(self):
        super().setUp()
        FakeApt.made = []
        FakeApt.VERSIONS = {p: [V + "-1"] for p in debian.DEBIAN_REQUIRED + [
            "nvidia-kernel-source", "nvidia-open-kernel-source", "libnvidia-cfg1"]}
        FakeApt.VERSIONS["nvidia-persistenced"] = ["535.54.03-1"]
        real, debian.Apt = debian.Apt, FakeApt
        self.addCleanup(setattr, debian, "Apt", real)

    def b(self, arch="x86_64", flavours=("proprietary",), caps=("compute", "utility")):
        return self.record(work=self.path("work"), arch=arch, debian_mirror="http://mirror",
                           debian_suite="bookworm", flavours=[Flavour(f) for f in flavours],
                           capabilities=list(caps))

    def test_fetched_once(self):
        dest = debian.fetch(self.b(flavours=("proprietary", "open")), V)
        self.assertEqual(dest, self.path("work/debs"))
        apt = FakeApt.made[0]
        self.assertEqual(apt.arch, "amd64")
        self.assertEqual(apt.asked, ["update", "nvidia-kernel-source=%s-1" % V,
                                     "nvidia-open-kernel-source=%s-1" % V,
                                     "libcuda1=%s-1" % V, "libnvidia-ml1=%s-1" % V,
                                     "nvidia-smi=%s-1" % V, "libnvidia-cfg1=%s-1" % V,
                                     "nvidia-persistenced"])
        self.assertIn("  nvidia-detect: not packaged for %s, skipped\n" % V, self.out.getvalue())
        # Optional packages Debian lacks are asked for again; with every package there,
        # nothing is.
        self.assertEqual(debian.fetch(self.b(flavours=("proprietary", "open")), V), dest)
        self.assertEqual(len(FakeApt.made), 2)
        for name in os.listdir(dest):
            os.remove(os.path.join(dest, name))
        for p in debian.DEBIAN_REQUIRED + debian.DEBIAN_OPTIONAL + ["nvidia-kernel-source"]:
            open(os.path.join(dest, "%s_%s-1_amd64.deb" % (p, V)), "w").close()
        open(os.path.join(dest, "nvidia-persistenced_535.54.03-1_amd64.deb"), "w").close()
        self.assertEqual(debian.fetch(self.b(), V), dest)
        self.assertEqual(len(FakeApt.made), 2, "apt asked although every package is there")

    def test_capabilities_fetched_only_when_asked(self):
        for c in ("video", "graphics"):
            for p in debian.DEBIAN_CAPABILITY[c]:
                FakeApt.VERSIONS[p] = [V + "-1"]
        FakeApt.VERSIONS["libnvoptix1"] = []     # an optional one Debian lacks: skipped
        dest = debian.fetch(self.b(), V)
        self.assertFalse([n for n in os.listdir(dest) if "nvcuvid" in n or "glx" in n])
        debian.fetch(self.b(caps=("compute", "utility", "video", "graphics")), V)
        asked = FakeApt.made[-1].asked
        for p in ("libnvcuvid1", "libnvidia-encode1", "libglx-nvidia0", "libegl-nvidia0",
                  "nvidia-vulkan-common", "nvidia-egl-common", "libnvidia-glcore",
                  "libnvidia-eglcore", "libnvidia-rtcore", "libgles-nvidia2"):
            self.assertIn("%s=%s-1" % (p, V), asked)
        self.assertNotIn("libnvoptix1=%s-1" % V, asked)
        self.assertIn("  libnvoptix1: not packaged for %s, skipped\n" % V, self.out.getvalue())

    def test_capability_required_package_missing(self):
        for p in debian.DEBIAN_CAPABILITY["graphics"]:
            FakeApt.VERSIONS[p] = [V + "-1"]
        FakeApt.VERSIONS["libglx-nvidia0"] = ["535.309.01-0+deb12u1"]
        self.assertEqual(self.refused(debian.fetch, self.b(caps=("compute", "graphics")), V),
                         "Debian has no libglx-nvidia0 535.261.03 (versions there: "
                         "535.309.01-0+deb12u1); check the version and that non-free is "
                         "reachable")

    def test_arm64(self):
        dest = debian.fetch(self.b(arch="aarch64"), V)
        self.assertEqual(dest, self.path("work/debs-aarch64"))
        self.assertEqual(FakeApt.made[0].arch, "arm64")
        self.assertIn("nvidia-smi_%s-1_arm64.deb" % V, os.listdir(dest))

    def test_version_debian_has_not(self):
        self.assertEqual(self.refused(debian.fetch, self.b(), "535.1.1"),
                         "Debian has no nvidia-kernel-source 535.1.1 (versions there: %s-1); "
                         "check the version and that non-free is reachable" % V)


if __name__ == "__main__":
    unittest.main()
