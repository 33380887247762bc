# SPDX-License-Identifier: Apache-2.0
"""--imex (scripts/bdp/imex.py): the version NVIDIA's package names say, and what is
refused before anything is built: a branch without IMEX, another version, a package without
one of the programs or built for another architecture. tests/packaging's scenario imex
builds with it."""
import os
import subprocess
import unittest

from bdp_test import Case

from bdp import imex

ELF_X86 = b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + b"\x02\x00\x3e\x00" + b"\x00" * 44
ELF_ARM = b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + b"\x02\x00\xb7\x00" + b"\x00" * 44


class Names(Case):
    def test_nvidia_names(self):
        for name, want in (("nvidia-imex-570_570.172.08-1_amd64.deb", "570.172.08"),
                           ("nvidia-imex_580.65.06-1_arm64.deb", "580.65.06"),
                           ("nvidia-imex-550_550.163.01-0ubuntu1_amd64.deb", "550.163.01"),
                           ("nvidia-imex-570_570.172.08-1_amd64.tar.gz", "570.172.08"),
                           ("nvidia-imex-570_570.172.08-1_amd64", "570.172.08"),
                           ("nvidia-imex_1:580.65.06-1_amd64.deb", "580.65.06")):
            self.assertEqual(imex.version_of_name(name), want, name)

    def test_not_nvidia_names(self):
        for name in ("nvidia-imex-575_570.172.08-1_amd64.deb", "imex.deb",
                     "nvidia-imex-570_latest_amd64.deb", "nvlsm_2025.10.14-1_amd64.deb"):
            self.assertIsNone(imex.version_of_name(name), name)

    def test_control(self):
        self.write("pkg/DEBIAN/control", "Package: nvidia-imex\nVersion: 580.65.06-1\n")
        self.assertEqual(imex.control_version(self.path("pkg")), "580.65.06")
        self.assertIsNone(imex.control_version(self.path("none")))

    def test_package_version(self):
        """One reader for --imex's and --nvsdm's versions (each with its own names): the
        file name first, then a .deb's control (dpkg-deb -f), a tree's directory name, its
        DEBIAN/control."""
        from bdp import nvsdm
        self.write("deb/DEBIAN/control", "Package: libnvsdm\nVersion: 1:580.65.06-1\n"
                   "Architecture: amd64\nMaintainer: x\nDescription: x\n")
        deb = self.path("renamed.deb")
        subprocess.run(["dpkg-deb", "--root-owner-group", "-b", self.path("deb"), deb],
                       check=True, capture_output=True)
        for re_ in (imex.NAME_RE, nvsdm.NAME_RE):
            self.assertEqual(imex.package_version(deb, self.path("work"), re_), "580.65.06")
            self.assertEqual(imex.package_version(self.path("x"), self.path("deb"), re_),
                             "580.65.06")
            self.assertIsNone(imex.package_version(self.path("x"), self.path("none"), re_))
        named = self.path("nvidia-imex-570_570.172.08-1_amd64.deb")
        os.rename(deb, named)
        self.assertEqual(imex.package_version(named, self.path("work"), imex.NAME_RE),
                         "570.172.08")
        self.assertEqual(imex.package_version(named, self.path("work"), nvsdm.NAME_RE),
                         "580.65.06")
        self.assertEqual(imex.package_version(self.path("x"), self.path(
            "libnvsdm_580.82.07-1_amd64"), nvsdm.NAME_RE), "580.82.07")


class Source(Case):
    def tree(self, name, progs=("nvidia-imex", "nvidia-imex-ctl"), elf=ELF_X86):
        for p in progs:
            self.write("%s/usr/bin/%s" % (name, p), elf, "wb")
        self.write("%s/etc/nvidia-imex/config.cfg" % name, "IMEX_CMD_ENABLED=1\n")
        return self.path(name)

    def b(self, given):
        return self.record(imex=given, work=self.path("work"), arch="x86_64")

    def test_taken(self):
        d = self.tree("nvidia-imex-570_570.172.08-1_amd64")
        progs, configs, version = imex.imex_source(self.b(d), "570.172.08")
        self.assertEqual([p.split("/")[-1] for p in progs], ["nvidia-imex", "nvidia-imex-ctl"])
        self.assertEqual(sorted(configs), ["config.cfg"])
        self.assertEqual(version, "570.172.08")

    def test_branch_without_imex(self):
        d = self.tree("nvidia-imex-570_570.172.08-1_amd64")
        self.assertEqual(self.refused(imex.imex_source, self.b(d), "535.261.03"),
                         "--imex: driver 535.261.03 is of the 535 branch, which has no IMEX "
                         "(NVIDIA ships nvidia-imex from the 550 branch): leave out --imex, "
                         "or build a 550 or later driver")

    def test_other_version(self):
        d = self.tree("nvidia-imex_580.65.06-1_amd64")
        self.assertEqual(self.refused(imex.imex_source, self.b(d), "580.82.07"),
                         "%s is IMEX 580.65.06, the driver is 580.82.07: IMEX must be the "
                         "driver's own version; take nvidia-imex_580.82.07-1_amd64.deb" % d)

    def test_unknown_version(self):
        d = self.tree("imex")
        self.assertIn("the version of %s cannot be told" % d,
                      self.refused(imex.imex_source, self.b(d), "570.172.08"))

    def test_missing_program(self):
        d = self.tree("nvidia-imex-570_570.172.08-1_amd64", progs=("nvidia-imex",))
        self.assertEqual(self.refused(imex.imex_source, self.b(d), "570.172.08"),
                         "%s has no nvidia-imex-ctl (looked for usr/bin/nvidia-imex-ctl, "
                         "usr/sbin/nvidia-imex-ctl, bin/nvidia-imex-ctl): not NVIDIA's "
                         "nvidia-imex package" % d)

    def test_not_an_archive(self):
        p = self.write("nvidia-imex-570_570.172.08-1_amd64.rpm", "not a tar")
        self.assertEqual(self.refused(imex.imex_source, self.b(p), "570.172.08"),
                         "%s is neither a .deb nor a tar archive: pass NVIDIA's nvidia-imex "
                         "package (.deb), an archive of it or its directory" % p)
        self.assertIn("does not exist", self.refused(imex.imex_source, self.b(p + ".x"),
                                                     "570.172.08"))

    def test_other_machine(self):
        d = self.tree("nvidia-imex-570_570.172.08-1_arm64", elf=ELF_ARM)
        self.assertEqual(self.refused(imex.imex_source, self.b(d), "570.172.08"),
                         "%s: usr/bin/nvidia-imex is not an ELF executable for x86_64: take "
                         "the nvidia-imex package of the node's architecture (amd64)" % d)


if __name__ == "__main__":
    unittest.main()
