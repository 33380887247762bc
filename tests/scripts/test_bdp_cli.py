# SPDX-License-Identifier: Apache-2.0
"""build-driver-package's command line (scripts/bdp/cli.py, record.py): the platform --os
chooses, or the one whose options a command line gives (the command lines of the tests,
the docs and build-fleet, parsed dry); options of two platforms refused with one line,
exit 2; the build record made from a command line."""
import os
import subprocess
import sys
import unittest

from bdp_test import SCRIPTS, Case

from bdp import cli, cos, debian, rhel, ubuntu
from bdp.common import Failure, Usage

COMMON = ["--kernel", "6.1.0-57-amd64", "--repo", "repo", "--repo-key", "repo.pem",
          "--installer", "build/nvidia-driver-installer", "--work", "work"]
SIGN = ["--sign-key", "mod.pem", "--sign-cert", "mod.crt"]

# The command lines the repository runs and documents, by where, and their platform.
LINES = [
    ("tests/packaging t_cos_headers", cos.Cos,
     ["--source", "src", "--kernel-headers", "kernel-headers.tgz"] + SIGN),
    ("tests/packaging t_toolchain", debian.Debian, ["--source", "src", "--llvm"] + SIGN),
    ("tests/packaging t_detached", cos.Cos,
     ["--source", "src", "--detached-signatures", "gpu-driver-signature.tar.gz"]),
    ("tests/packaging t_ubuntu", ubuntu.Ubuntu,
     ["--userspace-debs", "user", "--vendor-cert", "vendor.crt", "--ubuntu-modules-deb",
      "modules.deb", "--ubuntu-modules-deb", "objects.deb", "--ubuntu-modules-deb",
      "signatures.deb"]),
    ("tests/packaging t_rhel", rhel.Rhel,
     ["--source", "src", "--kernel-devel-rpm", "kernel-devel.rpm", "--os", "rhel"] + SIGN),
    ("tests/packaging t_arm64", debian.Debian,
     ["--arch", "arm64", "--headers", "linux-headers-6.1.0-57-arm64", "--source", "src",
      "--module-param", "nvidia-drm.modeset=1", "--tag", "default"] + SIGN),
    ("tests/packaging t_hostile", debian.Debian,
     ["--debs", "debs", "--prebuilt-modules", "kmod"] + SIGN),
    ("build-fleet, a COS row", cos.Cos,
     ["--os", "cos", "--arch", "x86_64", "--flavour", "proprietary", "--quiet", "--os-build",
      "18244.151.14", "--source", "src", "--kernel-headers", "kernel-headers.tgz", "--jobs",
      "2"] + SIGN),
    ("build-fleet, a Debian row", debian.Debian,
     ["--os", "debian", "--arch", "x86_64", "--flavour", "proprietary", "--quiet",
      "--source", "src"] + SIGN),
    ("tests/real, the rerun", debian.Debian,
     ["--debian", "535.261.03", "--os", "debian", "--tag", "default"] + SIGN),
    ("tests/real, the clang kernel (COS's stand-in)", cos.Cos,
     ["--debs", "debs", "--kernel-headers", "kernel-headers.tgz", "--llvm", "--flavour",
      "proprietary,open", "--patch", "open=x.patch", "--os", "cos", "--tag", "default"] + SIGN),
    ("tests/real, gcc refused for the clang kernel", cos.Cos,
     ["--debs", "debs", "--kernel-headers", "kernel-headers.tgz"] + SIGN),
    ("tests/real, arm64 (fetch-debian-kernel's headers)", debian.Debian,
     ["--arch", "arm64", "--headers", "root/usr/src/linux-headers-6.1.0-57-arm64", "--debian",
      "535.261.03", "--flavour", "proprietary,open", "--tag", "default"] + SIGN),
    ("tests/vm, vendor-sig", debian.Debian,
     ["--modules", "crc7", "--source", "src", "--prebuilt-modules", "vendor-ko",
      "--keep-signatures", "--vendor-cert", "kernel.pem"]),
    ("tests/vm, rhel", rhel.Rhel,
     ["--kernel-devel-rpm", "kernel-devel.rpm", "--os", "rhel", "--source", "src", "--tag",
      "default", "--quiet"] + SIGN),
    ("docs/platforms/cos.md", cos.Cos,
     ["--source", "/tmp/extract", "--kernel-headers", "cos/kernel-headers.tgz", "--toolchain",
      "cos/toolchain", "--toolchain-env", "cos/toolchain_env", "--llvm",
      "--detached-signatures", "cos/nvidia-drivers-535.261.03-signature.tar.gz", "--os", "cos",
      "--os-build", "18244.151.14"]),
    ("docs/platforms/ubuntu.md", ubuntu.Ubuntu,
     ["--ubuntu-modules-deb", "m.deb", "o.deb", "s.deb", "--userspace-debs", "user",
      "--vendor-cert", "canonical.pem", "--os", "ubuntu"]),
    ("docs/building-packages.md, the fleet's Ubuntu row", ubuntu.Ubuntu,
     ["--ubuntu-modules-deb", "m.deb", "o.deb", "s.deb", "--userspace-debs", "user-1",
      "--vendor-cert", "keys/canonical.pem"]),
    ("docs/platforms/rhel.md", rhel.Rhel,
     ["--kernel-devel-rpm", "kernel-devel.rpm", "--os", "rhel", "--source", "src"] + SIGN),
    ("docs/building-packages.md, keep-signatures", debian.Debian,
     ["--source", "src", "--prebuilt-modules", "vendor", "--keep-signatures", "--vendor-cert",
      "vendor.pem", "--tag", "default"]),
    ("scripts/gpu-check.sh", debian.Debian,
     ["--arch", "x86_64", "--source", "src", "--prebuilt-modules", "modules", "--tag",
      "default"] + SIGN),
    # An os-release ID no platform has: the platform its options name.
    ("an image of another os", rhel.Rhel,
     ["--os", "rocky", "--kernel-devel-rpm", "kernel-devel.rpm", "--source", "src"] + SIGN),
    ("an image of another os, no platform's options", debian.Debian,
     ["--os", "flatcar", "--source", "src"] + SIGN),
]


def choose(argv):
    return cli.parse_args(COMMON + argv, "doc")[1]


class Platform(unittest.TestCase):
    def test_command_lines(self):
        for where, platform, argv in LINES:
            with self.subTest(where):
                self.assertIs(choose(argv), platform)

    def test_ubuntu_modules_deb_forms(self):
        # Several files after one option (a fleet row repeats no argument), or repeated.
        for argv in (["--ubuntu-modules-deb", "m.deb", "o.deb", "s.deb"],
                     ["--ubuntu-modules-deb", "m.deb", "--ubuntu-modules-deb", "o.deb", "s.deb"]):
            with self.subTest(argv):
                args = cli.parse_args(COMMON + argv + ["--userspace-debs", "u"], "doc")[0]
                self.assertEqual(args.ubuntu_modules_deb, ["m.deb", "o.deb", "s.deb"])

    def test_two_platforms(self):
        with self.assertRaises(Usage) as cm:
            choose(["--source", "src", "--kernel-devel-rpm", "k.rpm", "--kernel-headers",
                    "h.tgz"] + SIGN)
        self.assertEqual(str(cm.exception),
                         "--kernel-headers (cos) and --kernel-devel-rpm (rhel) are options of "
                         "two platforms: build for one, naming it with --os cos or --os rhel")

    def test_another_platforms_option(self):
        with self.assertRaises(Usage) as cm:
            choose(["--os", "cos", "--source", "src", "--kernel-devel-rpm", "k.rpm"] + SIGN)
        self.assertEqual(str(cm.exception),
                         "--kernel-devel-rpm is an option of --os rhel, not of --os cos: leave "
                         "it out, or build for --os rhel")

    def test_ubuntu_with_detached_signatures(self):
        with self.assertRaises(Usage):
            choose(["--userspace-debs", "user", "--ubuntu-modules-deb", "m.deb",
                    "--detached-signatures", "sig.tgz", "--vendor-cert", "c.pem"])

    def test_command_says_one_line(self):
        p = subprocess.run([sys.executable, os.path.join(SCRIPTS, "build-driver-package")] +
                           COMMON + ["--os", "debian", "--source", "src", "--toolchain", "tc"],
                           capture_output=True, text=True)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (
            2, "", "build-driver-package: --toolchain is an option of --os cos, not of --os "
            "debian: leave it out, or build for --os cos (try --help)\n"))


class Record(Case):
    def parse(self, argv):
        return cli.parse(["--kernel", "6.1.0-57-amd64", "--repo", self.path("repo"),
                          "--repo-key", self.key, "--installer", "/bin/true", "--work",
                          self.path("work"), "--source", self.path("src"), "--sign-key",
                          self.key, "--sign-cert", self.key] + argv, "doc")

    def setUp(self):
        super().setUp()
        self.key = self.write("key.pem", "a key\n")

    def test_flavours(self):
        b = self.parse(["--flavour", "both", "--prebuilt-modules", "open=o",
                        "--prebuilt-modules", "proprietary=p", "--patch", "open=x.patch",
                        "--module-param", "nvidia.NVreg_X=1", "--pci-ids", "open=ids", "--os",
                        "cos", "--arch", "amd64"])
        self.assertIsInstance(b.platform, cos.Cos)
        self.assertEqual((b.arch, b.os, b.work, b.installer),
                         ("x86_64", "cos", self.path("work"), "/bin/true"))
        self.assertEqual([(f.name, f.prebuilt, f.patches, f.params, f.pci_ids)
                          for f in b.flavours],
                         [("proprietary", "p", [], ["nvidia.NVreg_X=1"], None),
                          ("open", "o", ["x.patch"], ["nvidia.NVreg_X=1"], "ids")])
        self.assertTrue(b.prebuilt)

    def test_flavour_not_built(self):
        with self.assertRaises(Failure) as cm:
            self.parse(["--patch", "open=x.patch"])
        self.assertEqual(str(cm.exception),
                         "--patch open=x.patch: the open flavour is not built (--flavour "
                         "proprietary)")

    def test_detached_signatures_one_flavour(self):
        with self.assertRaises(Failure) as cm:
            self.parse(["--flavour", "both", "--detached-signatures", "sig.tgz"])
        self.assertIn("bring one flavour's modules", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
